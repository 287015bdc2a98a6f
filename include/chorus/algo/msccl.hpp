// MSCCL's XML algorithms in chorus: the program model (msccl/program.hpp) and parse_msccl
// (msccl/parse.hpp) and verify_msccl (msccl/verify.hpp). See docs/msccl.md.
#pragma once

#include "msccl/parse.hpp"
#include "msccl/program.hpp"
#include "msccl/verify.hpp"
