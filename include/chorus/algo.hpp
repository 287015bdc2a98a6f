// Umbrella for the schedule layer: patterns, the verifier and the printer.
#pragma once

#include "algo/build.hpp"
#include "algo/chunking.hpp"
#include "algo/printer.hpp"
#include "algo/schedule.hpp"
#include "algo/verifier.hpp"
