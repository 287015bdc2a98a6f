// nccl::Group: ncclGroupStart in the constructor, ncclGroupEnd in end() or the destructor. Inside a
// group, NCCL only records calls and launches them together at the end: one thread driving several
// GPUs (every communicator from init_all), several send/recv fused into one exchange, a split or init
// of several communicators at once. Groups nest; only the outermost end launches.
//
//   {
//     chorus::nccl::Group group;
//     for (std::size_t i = 0; i < comms.size(); ++i) comms[i].on(streams[i]).all_reduce(x[i], x[i], n, chorus::ReduceOp::sum);
//     group.end();  // throws chorus::Error if NCCL refused the group
//   }
//
// With nonblocking communicators (all of chorus's) ncclGroupEnd may return ncclInProgress; end() then
// waits, bounded, for every communicator used in the group, and learns the rank and size of those the
// group created. Call end() to see errors: the destructor only makes sure the group is closed on every
// path, and reports nothing (a failure still shows at the next wait, through ncclCommGetAsyncError).
#pragma once

#include "nccl_header.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "check.hpp"
#include "handle.hpp"
#include "library.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {
namespace detail {

// This thread's open groups: their depth and the communicators used inside them.
template <class Api>
struct GroupState {
  int depth = 0;
  std::vector<std::shared_ptr<Handle<Api>>> members;
  // Scratch that calls inside the group still need: NCCL enqueues their kernels only at the outermost
  // ncclGroupEnd, so a stream-ordered free before that would free it under them.
  std::vector<std::pair<void*, cudaStream_t>> scratch;

  static GroupState& here() {
    thread_local GroupState state;
    return state;
  }

  void join(const std::shared_ptr<Handle<Api>>& handle) {
    if (std::find(members.begin(), members.end(), handle) == members.end()) members.push_back(handle);
  }
};

// cudaFreeAsync of a call's scratch, once NCCL's kernels that read it are on the stream.
template <class Api>
cudaError_t free_after_launch(void* data, cudaStream_t stream) {
  GroupState<Api>& state = GroupState<Api>::here();
  if (state.depth == 0) return Api::free_async(data, stream);
  state.scratch.emplace_back(data, stream);
  return cudaSuccess;
}

template <class Api>
void group_start(const char* call, RankName rank) {
  const ncclResult_t result = Api::group_start();
  if (result != ncclSuccess) throw nccl_error(result, call, rank, "ncclGroupStart", Api::last_error(nullptr));
  ++GroupState<Api>::here().depth;
}

// Closes one level; at the outermost, settles every member (ncclInProgress) and forgets them.
template <class Api>
void group_end(const char* call, RankName rank) {
  GroupState<Api>& state = GroupState<Api>::here();
  const ncclResult_t result = Api::group_end();
  --state.depth;
  if (state.depth > 0) {
    if (result != ncclSuccess && result != ncclInProgress) {
      throw nccl_error(result, call, rank, "ncclGroupEnd", Api::last_error(nullptr));
    }
    return;
  }
  std::vector<std::shared_ptr<Handle<Api>>> members;
  members.swap(state.members);
  std::vector<std::pair<void*, cudaStream_t>> scratch;
  scratch.swap(state.scratch);
  // The scratch is freed once the group's work is on the streams: after the members are settled, since
  // with ncclInProgress NCCL may still be enqueueing it (or after they are aborted).
  auto free_scratch = [&] {
    for (auto& [data, stream] : scratch) Api::free_async(data, stream);
  };
  if (result != ncclSuccess && result != ncclInProgress) {
    // NCCL may have launched part of the group: the communicators are in an unknown state.
    for (auto& member : members) {
      member->abort(error_code_of(result), chorus::detail::concat("ncclGroupEnd failed in ", call));
      member->record_deferred(call);  // forgets the mark: an aborted communicator has nothing to wait for
    }
    free_scratch();
    throw nccl_error(result, call, rank, "ncclGroupEnd", Api::last_error(nullptr));
  }
  // Every member is settled even when one fails, so none is left with NCCL still busy on it; then each
  // marks the end of its calls in the group on their stream, for wait() (handle.hpp).
  std::exception_ptr first;
  for (auto& member : members) {
    try {
      member->settle(call, "ncclGroupEnd");
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  free_scratch();
  for (auto& member : members) {
    try {
      member->record_deferred(call);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace detail

template <class Api>
class BasicGroup {
 public:
  BasicGroup() { detail::group_start<Api>("nccl::Group", kNoRank); }
  BasicGroup(const BasicGroup&) = delete;
  BasicGroup& operator=(const BasicGroup&) = delete;
  ~BasicGroup() {
    if (open_) {
      try {
        detail::group_end<Api>("nccl::Group", kNoRank);
      } catch (...) {  // end() reports; here the group only has to close
      }
    }
  }

  void end() {
    if (!open_) return;
    open_ = false;
    detail::group_end<Api>("nccl::Group::end", kNoRank);
  }

 private:
  static constexpr int kNoRank = -1;  // a group spans communicators; its members' errors name their ranks
  bool open_ = true;
};

using Group = BasicGroup<Library>;

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
