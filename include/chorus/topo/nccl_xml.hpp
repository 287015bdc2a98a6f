// NCCL's topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), read and written.
//
// Shape: <system version="1"> > <cpu numaid affinity arch vendor familyid modelid> > <pci busid
// class vendor device subsystem_vendor subsystem_device link_speed link_width> > nested <pci>
// (switches) > <pci> of a GPU > <gpu dev sm rank gdr> > <nvlink target count tclass>; NICs are
// <pci> > <nic> > <net name dev speed port guid maxconn gdr ...>, or <nic> straight under <cpu>.
//
// Reading accepts what real files contain: comments, placeholder switches (busid ffff:ff:..,
// empty link_speed), link_speed as "16 GT/s" or "16.0 GT/s PCIe", nvlink targets that are
// NVSwitches (tclass 0x068000, or a bus id not in the file, which NCCL also takes for an NVSwitch)
// merged into one NVSwitch node as NCCL does, NVLinks listed from both ends, and files without
// <gpu> elements where a GPU is just a <pci> of class 0x0302xx (numbered in bus id order).
// Unknown elements are skipped (newer NCCL adds some); known ones in the wrong place, missing or
// malformed attributes are errors naming the line and the element.
//
// Writing emits every attribute NCCL's loader requires, so the file works as NCCL_TOPO_FILE.
// One addition: host_bridge="k" on a top-level <pci> when a NUMA node has several PCIe host
// bridges, which nvidia-smi distinguishes (NODE) and NCCL ignores. Reading the written file back
// gives the same Topology (same_machine()).
#pragma once

#include <string>
#include <string_view>

#include "../core/config.hpp"
#include "busid.hpp"
#include "text_file.hpp"
#include "topology.hpp"
#include "xml.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// Far beyond any machine (a DGX H100 file has ~60 elements); keeps path tables bounded.
constexpr int kMaxXmlNodes = 4096;
CHORUS_FUNC Topology read_nccl_xml(std::string_view text);

CHORUS_FUNC Topology read_nccl_xml_file(const std::string& path);

// The topology as an NCCL topology file.
CHORUS_FUNC std::string write_nccl_xml(const Topology& topo);

CHORUS_FUNC void write_nccl_xml_file(const Topology& topo, const std::string& path);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "nccl_xml_inl.hpp"
#endif
