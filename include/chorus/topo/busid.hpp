// PCI bus ids ("0000:07:00.0"): the key every source uses to name a device.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// Normalises a bus id to NCCL's form "dddd:bb:dd.f" in lower case. NVML prints an 8-digit domain
// ("00000000:07:00.0"); that is accepted and shortened when it fits. nullopt if it is not a bus id.
CHORUS_FUNC std::optional<std::string> normalize_busid(std::string_view text);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "busid_inl.hpp"
#endif
