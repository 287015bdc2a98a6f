// MSCCL's XML algorithms in chorus: the program model (msccl/program.hpp) and parse_msccl
// (msccl/parse.hpp). See docs/msccl.md.
#pragma once

#include "msccl/parse.hpp"
#include "msccl/program.hpp"
