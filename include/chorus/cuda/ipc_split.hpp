// split(colour, key) of a multi-process CUDA communicator (cuda::IpcComm, its twin twin::IpcRank):
// which parent ranks form each new communicator, and the bootstrap Channel (cuda/ipc_bootstrap.hpp) the
// new one's memory exchange runs over. Plain C++17.
//
// Why over the parent's own kernels: an IpcComm does not keep the host communicator it was created over
// (that may be gone, or be a type the IpcComm cannot name), and its ranks already share memory, so the
// split's records (colour, key; then the new scratch and signals handles) travel through the parent's
// device all_gather, staged in device memory, and its failures through a device all_reduce(min). Every
// parent rank takes part in every exchange, a colour < 0 too, so the exchanges stay collective; a failure
// on any parent rank fails the split on every parent rank.
//
// The Parent supplies, as collectives over all its ranks (blocking, bounded):
//   std::vector<unsigned char> gather_for_split(const void* mine, std::size_t bytes);  // rank order
//   int first_failed_for_split(bool failed);                                           // lowest, or -1
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "ipc_record.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// What each parent rank says in a split's first exchange.
struct IpcSplitEntry {
  std::int32_t color;
  std::int32_t key;
};

// One parent rank's place after a split: the parent ranks of its colour in new-rank order (ordered by
// key, ties by parent rank, as NCCL and MPI), and its new rank. A colour < 0: no members, rank -1.
struct IpcSplitPlan {
  std::vector<int> members;
  int rank = -1;
};

inline IpcSplitPlan plan_ipc_split(const std::vector<IpcSplitEntry>& entries, int parent_rank) {
  IpcSplitPlan plan;
  const std::int32_t colour = entries.at(static_cast<std::size_t>(parent_rank)).color;
  if (colour < 0) return plan;
  std::vector<std::pair<std::int32_t, int>> keyed;  // (key, parent rank)
  for (int r = 0; r < static_cast<int>(entries.size()); ++r) {
    if (entries[static_cast<std::size_t>(r)].color == colour) keyed.emplace_back(entries[static_cast<std::size_t>(r)].key, r);
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& entry : keyed) {
    if (entry.second == parent_rank) plan.rank = static_cast<int>(plan.members.size());
    plan.members.push_back(entry.second);
  }
  return plan;
}

// Every parent rank's entry, through the parent's all_gather.
template <class Parent>
std::vector<IpcSplitEntry> exchange_split_entries(Parent& parent, int color, int key) {
  IpcSplitEntry mine{color, key};
  const std::vector<unsigned char> bytes = parent.gather_for_split(&mine, sizeof(mine));
  std::vector<IpcSplitEntry> entries(bytes.size() / sizeof(IpcSplitEntry));
  std::memcpy(static_cast<void*>(entries.data()), bytes.data(), entries.size() * sizeof(IpcSplitEntry));
  return entries;
}

// The bootstrap Channel of a split: the parent's all_gather of every parent rank's memory record, of
// which this member keeps its colour's, in new-rank order; failures agreed over the whole parent (so
// errors name parent ranks).
template <class Parent>
class IpcSplitChannel {
 public:
  IpcSplitChannel(Parent& parent, IpcSplitPlan plan) : parent_(&parent), plan_(std::move(plan)) {}

  int rank() const { return plan_.rank; }
  std::vector<IpcRecord> exchange(const IpcRecord& mine) {
    const std::vector<unsigned char> bytes = parent_->gather_for_split(&mine, sizeof(mine));
    std::vector<IpcRecord> members;
    for (int r : plan_.members) {
      IpcRecord record;
      std::memcpy(&record, bytes.data() + static_cast<std::size_t>(r) * sizeof(IpcRecord), sizeof(IpcRecord));
      members.push_back(record);
    }
    return members;
  }
  int first_failed(bool failed) { return parent_->first_failed_for_split(failed); }
  std::string rank_name(int rank) const { return "parent rank " + std::to_string(rank); }

  // A colour < 0 takes part in both exchanges with a blank record; it fails too if any parent rank did.
  void stand_aside(const char* call, int parent_rank) {
    exchange(make_ipc_record(IpcStage::memory, -1, 0, "", 0));
    const int failed = first_failed(false);
    if (failed >= 0) {
      throw make_error(ErrorCode::peer_failed, call, parent_rank, rank_name(failed), " failed to split (its own error says why)");
    }
  }

 private:
  Parent* parent_;
  IpcSplitPlan plan_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
