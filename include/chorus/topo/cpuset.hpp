// CPU sets in the two spellings the kernel uses: a list ("0-19,40-59", nvidia-smi's CPU Affinity
// column and sysfs cpulist files) and a mask ("000fffff,000fffff", sysfs local_cpus and NCCL's
// affinity attribute: 32-bit hex words, most significant first).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// CPU numbers above this are rejected: no machine has them, and a fuzzed "0-999999999" must not
// allocate gigabytes.
constexpr int kMaxCpuId = 16383;

// Parses "0-19,40-59" (spaces around items allowed). nullopt when it is not a CPU list.
CHORUS_FUNC std::optional<std::vector<bool>> parse_cpulist(std::string_view text);

// Parses "000fffff,000fffff" (a trailing newline is fine). nullopt when it is not a mask.
CHORUS_FUNC std::optional<std::vector<bool>> parse_cpumask(std::string_view text);

CHORUS_FUNC std::string to_cpumask(const std::vector<bool>& cpus);
CHORUS_FUNC std::string to_cpulist(const std::vector<bool>& cpus);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "cpuset_inl.hpp"
#endif
