// A synthetic machine of any size for the ring search's scaling test and its measurement
// (bench/topo_search_scale.cpp): `gpus` PCIe GPUs, half on each of two sockets, four under each
// switch. The shape of the issue-7 report (800 PCIe GPUs), grown to the 4096 devices the XML
// reader accepts.
#pragma once

#include <chorus/topo/nvsmi_reader.hpp>
#include <chorus/topo/topology.hpp>

#include <cstdio>

namespace fixtures {

inline chorus::topo::Topology pcie_farm(int gpus) {
  using namespace chorus::topo;
  Topology topo;
  CpuInfo cpu0 = representative_cpu(CpuFamily::amd);
  CpuInfo cpu1 = cpu0;
  cpu1.numa = 1;
  const int cpus[2] = {topo.add_cpu(cpu0), topo.add_cpu(cpu1)};
  int bus = 1;
  const auto pci = [&bus](bool bridge) {
    PciInfo info;
    char id[16];
    std::snprintf(id, sizeof id, "%04x:%02x:00.0", (bus >> 8) & 0xffff, bus & 0xff);
    ++bus;
    info.busid = id;
    info.class_code = bridge ? "0x060400" : "0x030200";
    info.vendor = bridge ? "" : "0x10de";
    info.link_gts = 16.0;
    info.link_width = 16;
    return info;
  };
  int parent = -1;
  for (int g = 0; g < gpus; ++g) {
    const int socket = g < gpus / 2 ? 0 : 1;
    if (g % 4 == 0 || g == gpus / 2) parent = topo.add_pci_switch(cpus[socket], pci(true), (g / 4) % 4);
    topo.add_gpu(parent, pci(false), g, 80, (g / 4) % 4);
  }
  validate(topo, "pcie_farm");
  return topo;
}

}  // namespace fixtures
