// chorus-topo: shows a machine's GPU topology the way chorus sees it. The GPU/NIC matrix in
// nvidia-smi's tokens, each pair's bandwidth and NCCL path type, the best rings (channels) with
// their bottleneck bandwidth, and the double binary trees built on the best ring.
//
// Sources: the local machine by default (sysfs + NVML, + CUDA peer queries in CUDA builds), or
// --nvsmi FILE (`nvidia-smi topo -m` output), --nccl-xml FILE (NCCL_TOPO_FILE format), --sysfs ROOT
// (a copied or fake /sys tree). --json prints exactly one JSON object instead of text;
// --dump-xml FILE writes the topology as NCCL XML. Exit status: 0, or 2 with
// "chorus-topo: error: ..." on a usage error or input that cannot be read.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <chorus/topo.hpp>
#if defined(CHORUS_WITH_CUDA)
#include <chorus/topo/cuda_reader.hpp>
#endif

namespace {

namespace topo = chorus::topo;
using nlohmann::json;

struct Config {
  std::string nvsmi;
  std::string nccl_xml;
  std::string sysfs;
  std::string dump_xml;
  std::string nvml_library = "libnvidia-ml.so.1";
  bool as_json = false;
  int sm = 0;
  int pcie_generation = 0;
  std::string cpu;
  int max_channels = 32;
};

chorus::Error usage_error(const std::string& message) {
  return chorus::Error(chorus::ErrorCode::invalid_argument, message);
}

topo::CpuFamily parse_cpu(const std::string& name) {
  static const std::map<std::string, topo::CpuFamily> kNames = {
      {"broadwell", topo::CpuFamily::intel_broadwell},
      {"skylake", topo::CpuFamily::intel_skylake},
      {"sapphire-rapids", topo::CpuFamily::intel_sapphire_rapids},
      {"emerald-rapids", topo::CpuFamily::intel_emerald_rapids},
      {"amd", topo::CpuFamily::amd},
      {"zhaoxin", topo::CpuFamily::zhaoxin},
      {"power9", topo::CpuFamily::power9},
      {"arm", topo::CpuFamily::arm}};
  if (name.empty()) return topo::CpuFamily::unknown;
  const auto it = kNames.find(name);
  if (it == kNames.end()) {
    throw usage_error("--cpu " + name + " is not one of broadwell, skylake, sapphire-rapids, emerald-rapids, amd, "
                      "zhaoxin, power9, arm");
  }
  return it->second;
}

struct Loaded {
  topo::Topology topology;
  std::vector<std::string> notes;
};

Loaded load(const Config& config) {
  Loaded out;
  if (!config.nvsmi.empty()) {
    topo::NvsmiOptions options;
    options.sm = config.sm;
    options.pcie_generation = config.pcie_generation;
    options.cpu = parse_cpu(config.cpu);
    // Where the matrix overrules the affinity columns the reader says so; show it with the notes.
    out.topology = topo::read_nvsmi_file(config.nvsmi, options, &out.notes);
  } else if (!config.nccl_xml.empty()) {
    out.topology = topo::read_nccl_xml_file(config.nccl_xml);
  } else if (!config.sysfs.empty()) {
    // A copied or fake tree is not this machine, so this machine's NVML is not asked about it.
    out.topology = topo::read_sysfs(config.sysfs);
  } else {
    topo::DetectOptions options;
    options.nvml_library = config.nvml_library;
    out.topology = topo::detect(options, &out.notes);
#if defined(CHORUS_TOPO_HAS_CUDA_READER)
    const topo::CudaPeers peers = topo::read_cuda_peers();
    if (peers.available) {
      topo::apply_cuda(out.topology, peers);
      out.topology.source += " + CUDA";
    } else {
      out.notes.push_back("CUDA: " + peers.reason);
    }
#endif
  }
  return out;
}

// Everything both outputs show, computed once.
struct Report {
  const topo::Topology& topology;
  topo::PathMatrix paths;
  topo::RingPlan plan;
  std::vector<std::vector<int>> distinct_rings;  // in channel order, repeats removed
  std::array<topo::Tree, 2> trees;
  std::vector<std::string> names;

  Report(const topo::Topology& t, int max_channels)
      : topology(t), paths(t), plan(search(t, paths, max_channels)), names(topo::device_names(t, paths)) {
    for (const topo::Ring& ring : plan.rings) {
      if (std::find(distinct_rings.begin(), distinct_rings.end(), ring.order) == distinct_rings.end()) {
        distinct_rings.push_back(ring.order);
      }
    }
    trees = topo::double_binary_tree(plan.rings.empty() ? std::vector<int>{} : plan.rings.front().order);
  }

  static topo::RingPlan search(const topo::Topology& t, const topo::PathMatrix& p, int max_channels) {
    topo::RingSearchOptions options;
    options.max_channels = max_channels;
    return topo::search_rings(t, p, options);
  }
  double ring_bandwidth() const { return plan.rings.empty() ? 0.0 : plan.rings.front().bottleneck_GBps; }
};

std::string cpulist_of(const topo::CpuInfo& cpu) {
  const auto mask = topo::parse_cpumask(cpu.affinity);
  return mask ? topo::to_cpulist(*mask) : std::string();
}

json numa_layout(const Report& r) {
  json out = json::array();
  std::vector<int> cpus = r.topology.cpu_nodes();
  std::sort(cpus.begin(), cpus.end(),
            [&](int a, int b) { return r.topology.nodes[a].cpu.numa < r.topology.nodes[b].cpu.numa; });
  for (int cpu : cpus) {
    const topo::CpuInfo& info = r.topology.nodes[cpu].cpu;
    json gpus = json::array(), nics = json::array();
    for (int g = 0; g < r.paths.gpu_count(); ++g) {
      if (r.topology.cpu_of(r.paths.gpu_node(g)) == cpu) gpus.push_back(g);
    }
    for (int k = 0; k < r.paths.nic_count(); ++k) {
      if (r.topology.cpu_of(r.paths.nic_node(k)) == cpu) nics.push_back(r.names[r.paths.gpu_count() + k]);
    }
    out.push_back({{"numa", info.numa},
                   {"cpus", cpulist_of(info)},
                   {"cpu_family", topo::to_string(info.family())},
                   {"gpus", gpus},
                   {"nics", nics}});
  }
  return out;
}

json to_json(const Report& r, const std::vector<std::string>& notes) {
  const int n = r.paths.gpu_count();
  json links = json::array(), bandwidth = json::array(), types = json::array(), nic_links = json::array();
  for (int a = 0; a < n; ++a) {
    json link_row = json::array(), bw_row = json::array(), type_row = json::array(), nic_row = json::array();
    for (int b = 0; b < n; ++b) {
      const topo::Path& path = r.paths.gpu(a, b);
      link_row.push_back(path.token.text());
      bw_row.push_back(path.bw_GBps);
      type_row.push_back(topo::to_string(path.type));
    }
    for (int k = 0; k < r.paths.nic_count(); ++k) nic_row.push_back(r.paths.gpu_nic(a, k).token.text());
    links.push_back(link_row);
    bandwidth.push_back(bw_row);
    types.push_back(type_row);
    nic_links.push_back(nic_row);
  }
  json trees = json::array();
  if (n > 0) {
    for (const topo::Tree& tree : r.trees) {
      trees.push_back({{"root", tree.root},
                       {"parent", tree.parent},
                       {"bottleneck_GBps", topo::tree_bottleneck(r.paths, tree)}});
    }
  }
  json nics = json::array();
  for (int k = 0; k < r.paths.nic_count(); ++k) nics.push_back(r.names[n + k]);
  return {{"source", r.topology.source},
          {"gpus", n},
          {"nics", nics},
          {"numa_nodes", numa_layout(r)},
          {"links", links},
          {"bandwidth_GBps", bandwidth},
          {"nccl_path_types", types},
          {"gpu_nic_links", nic_links},
          {"rings", r.distinct_rings},
          {"ring_bandwidth_GBps", r.ring_bandwidth()},
          {"channels", r.plan.rings.size()},
          {"channel_GBps", r.plan.channel_GBps},
          {"exact_search", r.plan.exact},
          {"trees", trees},
          {"notes", notes}};
}

// Columns padded to the widest cell, like nvidia-smi's output once tabs are expanded.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += row[c] + std::string(width[c] - row[c].size() + 2, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << "  " << line << "\n";
  }
}

void print_text(const Report& r, const std::vector<std::string>& notes) {
  const int n = r.paths.gpu_count();
  const int d = r.paths.device_count();
  std::cout << "chorus-topo: " << r.topology.source << "\n";
  std::cout << n << (n == 1 ? " GPU, " : " GPUs, ") << r.topology.cpu_nodes().size() << " NUMA node(s), "
            << r.paths.nic_count() << " NIC(s)\n";
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  std::cout << "\nCPU / NUMA layout:\n";
  for (const auto& numa : numa_layout(r)) {
    std::string line = "  NUMA " + std::to_string(numa["numa"].get<int>()) + ": CPUs " +
                       (numa["cpus"].get<std::string>().empty() ? "?" : numa["cpus"].get<std::string>()) + " (" +
                       numa["cpu_family"].get<std::string>() + ")";
    if (!numa["gpus"].empty()) {
      line += "  GPUs";
      for (int g : numa["gpus"]) line += " " + std::to_string(g);
    }
    if (!numa["nics"].empty()) {
      line += "  NICs";
      for (const auto& nic : numa["nics"]) line += " " + nic.get<std::string>();
    }
    std::cout << line << "\n";
  }
  if (n == 0) {
    std::cout << "\nNo GPU found: nothing to connect, no rings to search.\n";
    return;
  }
  std::cout << "\nGPU topology (nvidia-smi tokens):\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({""});
  for (int c = 0; c < d; ++c) rows[0].push_back(r.names[c]);
  for (int a = 0; a < d; ++a) {
    rows.push_back({r.names[a]});
    for (int b = 0; b < d; ++b) rows.back().push_back(r.paths.device(a, b).token.text());
  }
  print_table(rows);
  std::cout << "\n  X = self, NV# = # bonded NVLinks, PIX = at most one PCIe switch, PXB = several PCIe switches,\n"
               "  PHB = through a PCIe host bridge, NODE = between host bridges of one NUMA node,\n"
               "  SYS = across the CPU socket interconnect\n";
  std::cout << "\nPath bandwidth in GB/s and NCCL path type:\n";
  rows.assign(1, {""});
  for (int c = 0; c < n; ++c) rows[0].push_back(r.names[c]);
  for (int a = 0; a < n; ++a) {
    rows.push_back({r.names[a]});
    for (int b = 0; b < n; ++b) {
      const topo::Path& path = r.paths.gpu(a, b);
      rows.back().push_back(a == b ? "-" : topo::format_GBps(path.bw_GBps) + " " + topo::to_string(path.type));
    }
  }
  print_table(rows);
  std::cout << "\nRings: " << r.plan.rings.size() << " channel(s) at " << topo::format_GBps(r.plan.channel_GBps)
            << " GB/s each ("
            << (r.plan.exact          ? "exact search"
                : r.plan.budget_spent ? "heuristic search, stopped at its work budget"
                                      : "heuristic search")
            << ")\n";
  for (std::size_t i = 0; i < r.distinct_rings.size(); ++i) {
    const auto hops = topo::ring_hops(r.paths, r.distinct_rings[i]);
    const double bottleneck = hops.empty() ? topo::kLocalGBps : *std::min_element(hops.begin(), hops.end());
    const auto copies = std::count_if(r.plan.rings.begin(), r.plan.rings.end(),
                                      [&](const topo::Ring& ring) { return ring.order == r.distinct_rings[i]; });
    std::cout << "  ring " << i << ": " << topo::ring_text(r.distinct_rings[i]) << "   bottleneck "
              << topo::format_GBps(bottleneck) << " GB/s" << (copies > 1 ? "  x" + std::to_string(copies) : "")
              << "\n";
  }
  std::cout << "\nDouble binary trees on ring 0 (parent of each GPU, - for the root):\n";
  for (int t = 0; t < 2; ++t) {
    std::string line = "  tree " + std::to_string(t) + ": root " + std::to_string(r.trees[t].root) + ", parents";
    for (int p : r.trees[t].parent) line += " " + (p < 0 ? std::string("-") : std::to_string(p));
    std::cout << line << "   bottleneck " << topo::format_GBps(topo::tree_bottleneck(r.paths, r.trees[t]))
              << " GB/s\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  CLI::App app{"chorus-topo: GPU topology, path classes, best rings and trees"};
  auto* nvsmi = app.add_option("--nvsmi", config.nvsmi, "read `nvidia-smi topo -m` output from FILE");
  auto* xml = app.add_option("--nccl-xml", config.nccl_xml, "read an NCCL topology XML file");
  auto* sysfs = app.add_option("--sysfs", config.sysfs, "read a sysfs tree under ROOT instead of /");
  nvsmi->excludes(xml)->excludes(sysfs);
  xml->excludes(sysfs);
  app.add_flag("--json", config.as_json, "print one JSON object instead of text");
  app.add_option("--dump-xml", config.dump_xml, "write the topology as NCCL XML to FILE");
  app.add_option("--sm", config.sm, "GPU compute capability for --nvsmi (e.g. 80); default: guess")
      ->check(CLI::Range(10, 200));
  app.add_option("--pcie-gen", config.pcie_generation, "PCIe generation for --nvsmi; default: typical for the GPU")
      ->check(CLI::Range(1, 6));
  app.add_option("--cpu", config.cpu,
                 "CPU family for --nvsmi: broadwell, skylake, sapphire-rapids, emerald-rapids, amd, zhaoxin, power9, "
                 "arm");
  app.add_option("--channels", config.max_channels, "most channels (rings) to search for")->check(CLI::Range(1, 64));
  app.add_option("--nvml-library", config.nvml_library, "NVML library to load when detecting this machine");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "chorus-topo: error: " << e.what() << "\n";
    return 2;
  }
  try {
    if (config.nvsmi.empty() && (config.sm != 0 || config.pcie_generation != 0 || !config.cpu.empty())) {
      throw usage_error("--sm, --pcie-gen and --cpu describe the hardware behind --nvsmi text only");
    }
    const Loaded loaded = load(config);
    const Report report(loaded.topology, config.max_channels);
    if (!config.dump_xml.empty()) topo::write_nccl_xml_file(loaded.topology, config.dump_xml);
    if (config.as_json) {
      std::cout << to_json(report, loaded.notes).dump(2) << "\n";
    } else {
      print_text(report, loaded.notes);
      if (!config.dump_xml.empty()) std::cout << "\nNCCL XML written to " << config.dump_xml << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "chorus-topo: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
