// Creating NCCL communicators: init_rank (one rank, a unique id shared beforehand), init_all (every
// listed GPU of this process, one thread) and split. All are nonblocking (handle.hpp): each returns once
// NCCL has finished, bounded by CHORUS_TIMEOUT_MS, or, inside an open nccl::Group, returns at once and
// finishes at the group's end (several communicators created from one thread must be, as NCCL requires).
// A creation that fails or times out aborts what it made.
#pragma once

#include "nccl_header.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "check.hpp"
#include "group.hpp"
#include "handle.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl::detail {

template <class Api>
using HandlePtr = std::shared_ptr<Handle<Api>>;

// Settles `handle` now, or leaves it to the open group's end.
template <class Api>
void finish(const HandlePtr<Api>& handle, const char* call, const char* function) {
  GroupState<Api>& group = GroupState<Api>::here();
  if (group.depth > 0) {
    group.join(handle);
  } else {
    handle->settle(call, function);
  }
}

template <class Api>
HandlePtr<Api> init_rank(int nranks, const ncclUniqueId& id, int rank) {
  if (nranks < 1) throw make_error(ErrorCode::invalid_argument, "nccl::init_rank", rank, "nranks ", nranks, " is not positive");
  if (rank < 0 || rank >= nranks) {
    throw make_error(ErrorCode::invalid_argument, "nccl::init_rank", rank, "rank ", rank, " is not a rank of ", nranks);
  }
  ncclConfig_t config = nonblocking_config();
  auto handle = std::make_shared<Handle<Api>>(RankName(rank));
  const ncclResult_t result = Api::comm_init_rank_config(handle->slot(), nranks, id, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    const std::string text = Api::last_error(handle->raw());
    handle->abort(error_code_of(result), "ncclCommInitRankConfig failed");  // no-op when NCCL made nothing
    throw nccl_error(result, "nccl::init_rank", rank, "ncclCommInitRankConfig", text);
  }
  finish<Api>(handle, "nccl::init_rank", "ncclCommInitRankConfig");
  return handle;
}

// ncclCommInitAll's documented equivalent (a unique id, then ncclCommInitRank per device in one group),
// spelled out because ncclCommInitAll takes no config and so makes blocking communicators.
template <class Api>
std::vector<HandlePtr<Api>> init_all(const std::vector<int>& devices) {
  const char* call = "nccl::init_all";
  if (devices.empty()) throw make_error(ErrorCode::invalid_argument, call, 0, "no devices given");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0) throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(i), "device ", devices[i], " is negative");
    if (std::count(devices.begin(), devices.end(), devices[i]) > 1) {
      throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(i), "device ", devices[i],
                       " is listed twice (NCCL allows one rank per GPU in a communicator)");
    }
  }
  if (GroupState<Api>::here().depth > 0) {
    throw make_error(ErrorCode::invalid_argument, call, 0, "called inside an open nccl::Group; init_all makes its own group");
  }
  ncclUniqueId id;
  const ncclResult_t got = Api::get_unique_id(&id);
  if (got != ncclSuccess) throw nccl_error(got, call, 0, "ncclGetUniqueId", Api::last_error(nullptr));
  // The caller's device is switched only to make a communicator on another one, and restored only if it
  // was switched: cudaSetDevice makes a context on the device it selects (DeviceScope, handle.hpp).
  int saved_device = 0;
  cuda::check_cuda(Api::get_device(&saved_device), call, 0, "cudaGetDevice");
  int current = saved_device;
  auto restore = [&] {
    if (current != saved_device) Api::set_device(saved_device);
  };

  const int n = static_cast<int>(devices.size());
  std::vector<HandlePtr<Api>> handles;
  try {
    group_start<Api>(call, 0);
    try {
      for (int i = 0; i < n; ++i) {
        const int device = devices[static_cast<std::size_t>(i)];
        if (device != current) {
          cuda::check_cuda(Api::set_device(device), call, i, "cudaSetDevice");
          current = device;
        }
        ncclConfig_t config = nonblocking_config();
        handles.push_back(std::make_shared<Handle<Api>>(RankName(i)));
        GroupState<Api>::here().join(handles.back());
        const ncclResult_t result = Api::comm_init_rank_config(handles.back()->slot(), n, id, i, &config);
        if (result != ncclSuccess && result != ncclInProgress) {
          throw nccl_error(result, call, i, "ncclCommInitRankConfig", Api::last_error(handles.back()->raw()));
        }
      }
    } catch (...) {
      // Launching the rest would only wait for ranks that will never come: forget them, close the group.
      GroupState<Api>& group = GroupState<Api>::here();
      group.members.clear();
      --group.depth;
      Api::group_end();
      throw;
    }
    group_end<Api>(call, 0);  // settles every new communicator
  } catch (...) {
    for (auto& handle : handles) handle->abort(ErrorCode::internal, "nccl::init_all failed");
    restore();
    throw;
  }
  restore();
  return handles;
}

// ncclCommSplit; a negative colour takes part (split is collective) and gets a null communicator. The
// split runs as a background job of the parent's, which writes the new communicator into the child's
// slot when it ends (even a null one), so the child handle lives until the parent has settled.
template <class Api>
HandlePtr<Api> split(const HandlePtr<Api>& parent_handle, int color, int key) {
  Handle<Api>& parent = *parent_handle;
  const char* call = "split";
  parent.note(call);
  const RankName team(-1, parent.name().team_rank >= 0 ? parent.name().team_rank : parent.rank());
  auto child = std::make_shared<Handle<Api>>(team);
  // The child inherits the parent's config (nonblocking) when none is given.
  const ncclResult_t result = Api::comm_split(parent.raw(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, child->slot(), nullptr);
  if (result != ncclSuccess && result != ncclInProgress) {
    throw nccl_error(result, call, parent.name(), "ncclCommSplit", Api::last_error(parent.raw()));
  }
  GroupState<Api>& group = GroupState<Api>::here();
  if (group.depth > 0) {
    group.join(parent_handle);  // settled first: its job fills the child's slot
    group.join(child);
    return color < 0 ? nullptr : child;
  }
  parent.settle(call, "ncclCommSplit");  // even after ncclSuccess: the job may still be running
  if (color < 0) return nullptr;
  if (child->raw() == nullptr) {
    throw make_error(ErrorCode::internal, call, parent.name(), "ncclCommSplit finished without a communicator for colour ",
                     color);
  }
  child->settle(call, "ncclCommSplit");
  return child;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl::detail
