// Umbrella for the benchmark layer: bandwidth formulas, size sweeps, the result table, timing,
// statistics and the exact correctness check shared by chorus-bench and the tests.
#pragma once

#include "bench/bandwidth.hpp"
#include "bench/call.hpp"
#include "bench/check.hpp"
#include "bench/names.hpp"
#include "bench/sizes.hpp"
#include "bench/stats.hpp"
#include "bench/table.hpp"
#include "bench/timing.hpp"
