// Reads a whole (small) text file for the readers, with an error that names the reader and path.
// Every reader's file reads go through here, so one cap protects them all.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "../core/config.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// Topology files are kilobytes; anything past this is not one, and reading it would only hurt
// (a sysfs or /proc entry that links to /dev/zero never ends: uncapped, it grows one string until
// allocation fails).
constexpr std::size_t kMaxTopologyFileBytes = std::size_t{64} << 20;

CHORUS_FUNC std::string read_text_file(const std::string& path, const char* call);

// The same, but nullopt when the file cannot be opened or read (sysfs skips such entries, as
// NCCL does). A file past the cap still throws: that is never one to skip quietly.
CHORUS_FUNC std::optional<std::string> read_text_file_if_readable(const std::string& path, const char* call);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "text_file_inl.hpp"
#endif
