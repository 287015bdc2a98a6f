// MSCCL's XML algorithms in chorus: the program model (msccl/program.hpp), parse_msccl
// (msccl/parse.hpp), verify_msccl (msccl/verify.hpp), export of chorus's schedules
// (msccl/from_schedule.hpp, msccl/write.hpp: to_msccl_xml) and running imported programs as chorus
// schedules (msccl/to_schedule.hpp). See docs/msccl.md.
#pragma once

#include "msccl/from_schedule.hpp"
#include "msccl/parse.hpp"
#include "msccl/program.hpp"
#include "msccl/to_schedule.hpp"
#include "msccl/verify.hpp"
#include "msccl/write.hpp"
