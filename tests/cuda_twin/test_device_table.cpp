// docs/communicator.md's rows for the device communicators agree with the code: the memory and completion
// columns with memory_space_v / completes_on_return_v, and the "takes Algorithm on" column with the one
// Algorithm-to-kernel mapping (kernel_for_call) every device communicator uses. The twin's types are the
// GPU's templates over another Device, so their traits are the GPU's too.
#include <catch2/catch.hpp>

#include <chorus/core/memory_space.hpp>
#include <chorus/cuda/kernel_choice.hpp>
#include <chorus/cuda/twin/ipc_twin.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

#include "support/communicator_table.hpp"

#include <map>
#include <set>
#include <sstream>
#include <string>

namespace test_device_table {

using chorus::Algorithm;
using chorus::Collective;
using chorus::MemorySpace;
using support::table_row;

// "as cuda::RankComm" refers to another row's cell.
std::string algorithms_of(const std::string& name) {
  const std::string cell = table_row(name).algorithms;
  const std::string as = "as ";
  if (cell.compare(0, as.size(), as) == 0) return algorithms_of("chorus::" + cell.substr(as.size()));
  return cell;
}

// "all_reduce one_shot, ring; all_gather and reduce_scatter ring, direct" -> collective -> algorithms.
std::map<Collective, std::set<Algorithm>> parse_algorithms(const std::string& cell) {
  std::map<Collective, std::set<Algorithm>> taken;
  std::stringstream segments(cell);
  std::string segment;
  while (std::getline(segments, segment, ';')) {
    std::stringstream words(segment);
    std::string word;
    std::vector<Collective> collectives;
    while (words >> word) {
      if (word == "and") continue;
      bool is_collective = false;
      for (int c = 0; c < chorus::kCollectiveCount; ++c) {
        if (word == chorus::to_string(static_cast<Collective>(c))) {
          collectives.push_back(static_cast<Collective>(c));
          is_collective = true;
        }
      }
      if (is_collective) continue;
      if (!word.empty() && word.back() == ',') word.pop_back();
      bool known = false;
      for (int a = 0; a < chorus::kAlgorithmCount; ++a) {
        if (word == chorus::to_string(static_cast<Algorithm>(a))) {
          for (Collective c : collectives) taken[c].insert(static_cast<Algorithm>(a));
          known = true;
        }
      }
      if (!known) FAIL("not a collective or an algorithm in '" << cell << "': " << word);
    }
  }
  return taken;
}

// What the code takes: every Algorithm but automatic that maps to a kernel.
std::map<Collective, std::set<Algorithm>> taken_by_code() {
  std::map<Collective, std::set<Algorithm>> taken;
  for (int c = 0; c < chorus::kCollectiveCount; ++c) {
    for (int a = 1; a < chorus::kAlgorithmCount; ++a) {
      try {
        chorus::cuda::kernel_for_call(static_cast<Collective>(c), static_cast<Algorithm>(a), 1024, 4);
        taken[static_cast<Collective>(c)].insert(static_cast<Algorithm>(a));
      } catch (const chorus::Error&) {
      }
    }
  }
  return taken;
}

TEST_CASE("the twin's per-rank view: its row's memory and completion are its traits") {
  using View = chorus::cuda::twin::RankComm;
  CHECK(table_row("chorus::cuda::twin::RankComm").memory == chorus::memory_space_v<View>);
  CHECK(table_row("chorus::cuda::twin::RankComm").completes_on_return == chorus::completes_on_return_v<View>);
  CHECK(chorus::memory_space_v<View> == MemorySpace::device);
  // cuda::RankComm is the same template over CudaDevice: its row must say the same.
  CHECK(table_row("chorus::cuda::RankComm").memory == chorus::memory_space_v<View>);
  CHECK(table_row("chorus::cuda::RankComm").completes_on_return == chorus::completes_on_return_v<View>);
}

TEST_CASE("the twin's IPC communicator: its row's memory and completion are its traits, and IpcComm's") {
  using Ipc = chorus::cuda::twin::IpcRank;
  for (const char* name : {"chorus::cuda::twin::IpcRank", "chorus::cuda::IpcComm"}) {
    INFO(name);
    CHECK(table_row(name).memory == chorus::memory_space_v<Ipc>);
    CHECK(table_row(name).completes_on_return == chorus::completes_on_return_v<Ipc>);
  }
  CHECK(chorus::memory_space_v<Ipc::View> == MemorySpace::device);
}

TEST_CASE("the device rows' Algorithm column is the mapping the code runs") {
  const auto code = taken_by_code();
  for (const char* name : {"chorus::cuda::RankComm", "chorus::cuda::twin::RankComm", "chorus::cuda::IpcComm", "chorus::cuda::twin::IpcRank"}) {
    INFO(name << ": " << algorithms_of(name));
    CHECK(parse_algorithms(algorithms_of(name)) == code);
  }
}

}  // namespace test_device_table
