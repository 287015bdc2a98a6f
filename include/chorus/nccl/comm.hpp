// chorus::nccl::Comm: RAII over an ncclComm_t, presenting NCCL through chorus's communicator contract on
// a stream (comm.on(stream), view.hpp). Ways to make one:
//   Comm::init_all({0, 1, 2, 3})          one communicator per listed GPU of this process (one thread
//                                         drives them all: call them inside an nccl::Group)
//   Comm::init_rank(nranks, id, rank)     one rank of a communicator spanning processes or threads; the
//                                         unique id comes from rank 0 (Comm::unique_id()) over any host
//                                         communicator: chorus::bootstrap::broadcast_object(host, id)
//   comm.split(color, key)                ncclCommSplit; a negative colour gets a null Comm
// The destructor finalizes (ncclCommFinalize, bounded) and destroys the communicator, and aborts it
// instead when finalizing fails or times out; abort() does so at once (another rank failed, or the
// program is giving up). A Comm is movable, not copyable; views share it, and it lives until the last
// view is gone. Like an ncclComm_t, it is used by one thread at a time.
#pragma once

#include "nccl_header.hpp"

#include <memory>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/validate.hpp"
#include "create.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "view.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {

template <class Api>
class BasicComm {
 public:
  using View = BasicView<Api>;

  BasicComm() = default;  // a null communicator
  BasicComm(BasicComm&&) noexcept = default;
  BasicComm& operator=(BasicComm&&) noexcept = default;
  BasicComm(const BasicComm&) = delete;
  BasicComm& operator=(const BasicComm&) = delete;
  ~BasicComm() = default;

  // The id rank 0 makes and every rank of init_rank needs (128 opaque bytes; send it as an object).
  static ncclUniqueId unique_id() {
    ncclUniqueId id;
    const ncclResult_t result = Api::get_unique_id(&id);
    if (result != ncclSuccess) throw nccl_error(result, "nccl::unique_id", 0, "ncclGetUniqueId", Api::last_error(nullptr));
    return id;
  }

  // The calling thread's current CUDA device must be this rank's GPU.
  static BasicComm init_rank(int nranks, const ncclUniqueId& id, int rank) {
    return BasicComm(detail::init_rank<Api>(nranks, id, rank));
  }

  static std::vector<BasicComm> init_all(const std::vector<int>& devices) {
    std::vector<BasicComm> comms;
    for (auto& handle : detail::init_all<Api>(devices)) comms.push_back(BasicComm(std::move(handle)));
    return comms;
  }

  int rank() const { return handle_ ? handle_->rank() : -1; }
  int size() const { return handle_ ? handle_->size() : 0; }
  int device() const { return handle_ ? handle_->device() : -1; }
  explicit operator bool() const { return handle_ != nullptr; }
  // For NCCL calls chorus does not wrap; the Comm still owns it.
  ncclComm_t raw() const { return handle_ ? handle_->raw() : nullptr; }

  // This communicator's calls, enqueued on `stream` (the legacy default stream when omitted).
  View on(cudaStream_t stream = nullptr) const {
    runtime::check_comm("on", handle_ != nullptr);
    return View(handle_, stream);
  }

  BasicComm split(int color, int key) { return BasicComm(on().split(color, key)); }

  // Until this communicator's work is done (see View::wait; `stream` is checked for capture).
  void wait(cudaStream_t stream) const { on(stream).wait(); }

  // ncclCommAbort: stops this rank's NCCL work now; its peers see ncclRemoteError. Later calls throw.
  void abort() {
    runtime::check_comm("abort", handle_ != nullptr);
    handle_->abort(ErrorCode::invalid_argument, "nccl::Comm::abort() was called");
  }

 private:
  explicit BasicComm(std::shared_ptr<detail::Handle<Api>> handle) : handle_(std::move(handle)) {}
  explicit BasicComm(const View& view) : handle_(view.handle_) {}

  std::shared_ptr<detail::Handle<Api>> handle_;
};

using Comm = BasicComm<Library>;
static_assert(check_communicator<Comm::View>(), "chorus::nccl::Comm::View must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
