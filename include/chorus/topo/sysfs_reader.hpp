// Reads the local machine from Linux sysfs, the way NCCL's own detection does (graph/xml.cc):
// every NVIDIA GPU (PCI class 0x0302xx, or 0x0300xx with vendor 0x10de) and every RDMA NIC
// (class 0x0207xx, or a network function with an infiniband/ directory) is followed from
// /sys/bus/pci/devices/<busid> through its real path /sys/devices/pciDDDD:BB/<root port>/
// <switch up>/<switch down>/.../<busid> up to its host bridge and NUMA node. As in NCCL, a PCIe
// switch is represented by its upstream port: the root port and each downstream port are skipped.
// NUMA nodes (CPUs) come from /sys/devices/system/node, the CPU model from /proc/cpuinfo.
//
// The root is injectable, so tests build small fake trees (directories, attribute files and
// relative symlinks) in a temporary directory. sysfs gives no GPU generation and no NVLinks:
// read_nvml() adds those where the driver is present.
#pragma once

#include <string>

#include "../core/config.hpp"
#include "busid.hpp"
#include "cpuset.hpp"
#include "text_file.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// The machine under `root` ("" or "/" for this one). Throws chorus::Error when `root` has no
// sysfs at all, or when a file read is larger than kMaxTopologyFileBytes (no real attribute or
// cpuinfo is); devices whose files are unreadable are skipped, as NCCL does.
CHORUS_FUNC Topology read_sysfs(const std::string& root = "/");

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "sysfs_reader_inl.hpp"
#endif
