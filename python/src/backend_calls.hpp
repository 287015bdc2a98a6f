// The bodies of chorus_torch::Backend's calls (declared in backend.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace chorus_torch {

namespace detail {

inline void check_tensor(const char* call, const at::Tensor& t) {
  if (!t.defined()) refuse(call, "a tensor is undefined");
  if (!t.device().is_cpu()) {
    refuse(call, "a tensor is on " + t.device().str() +
                     ": the chorus backend takes CPU tensors; give CUDA tensors to the nccl backend "
                     "(init_process_group(\"cpu:chorus,cuda:nccl\"))");
  }
  if (t.layout() != at::kStrided) refuse(call, "sparse and other non-strided tensors are not supported");
}

inline void check_tensors(const char* call, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) check_tensor(call, t);
}

// The one tensor of a call that takes a list of one (torch's multi-device form is gone from chorus).
inline const at::Tensor& single(const char* call, const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1) refuse(call, "takes one tensor per call, got " + std::to_string(tensors.size()));
  check_tensor(call, tensors[0]);
  return tensors[0];
}

// Every tensor of `list` like `like` (dtype and element count), `count` of them.
inline void check_like(const char* call, const std::vector<at::Tensor>& list, std::size_t count, const at::Tensor& like) {
  if (list.size() != count) {
    refuse(call, "needs " + std::to_string(count) + " tensors in the list, got " + std::to_string(list.size()));
  }
  for (const at::Tensor& t : list) {
    check_tensor(call, t);
    if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel()) {
      refuse(call, "the list's tensors must match the input's dtype and element count (" +
                       std::string(c10::toString(like.scalar_type())) + ", " + std::to_string(like.numel()) + ")");
    }
  }
}

// gather's outputs or scatter's inputs: one list of `size` tensors like `like` on the root, none elsewhere.
inline std::vector<at::Tensor> root_list(const char* call, const char* side, const std::vector<std::vector<at::Tensor>>& lists,
                                         int rank, int root, int size, const at::Tensor& like) {
  if (rank != root) {
    if (!lists.empty() && !lists[0].empty()) {
      refuse(call, "only the root (rank " + std::to_string(root) + ") passes an " + side + " list");
    }
    return {};
  }
  if (lists.size() != 1) refuse(call, "the root takes one " + std::string(side) + " list, got " + std::to_string(lists.size()));
  check_like(call, lists[0], static_cast<std::size_t>(size), like);
  return lists[0];
}

inline void check_root(const char* call, std::int64_t root, int size) {
  if (root < 0 || root >= size) refuse(call, "root " + std::to_string(root) + " is not a rank of this group of " + std::to_string(size));
}

// A contiguous tensor with `t`'s values (t itself when it already is), copied back by write_back().
struct Dense {
  at::Tensor original;
  at::Tensor dense;
  void write_back() const {
    if (!dense.is_same(original)) original.copy_(dense);
  }
};
inline Dense dense(const at::Tensor& t) { return {t, t.is_contiguous() ? t : t.contiguous()}; }

inline std::vector<Dense> dense_all(const std::vector<at::Tensor>& list) {
  std::vector<Dense> out;
  for (const at::Tensor& t : list) out.push_back(dense(t));
  return out;
}

// Without links (the mpi transport), point-to-point within a coalesced batch runs on the group's
// worker in one order every rank agrees on: pairs in increasing (lower rank, higher rank), and within
// a pair the lower rank sends first. chorus's send is synchronous; with this order the earliest
// unfinished exchange always has both ends at it, so a batch in which every rank both sends and
// receives (a ring shift) cannot deadlock.
template <class Queued>
void order_point_to_point(std::vector<Queued>& batch, int me) {
  auto key = [me](const Queued& q) {
    const int low = std::min(me, q.peer);
    const int high = std::max(me, q.peer);
    const bool first = (me == low) == q.sends;
    return std::make_tuple(low, high, first ? 0 : 1);
  };
  auto begin = batch.begin();
  while (begin != batch.end()) {
    if (begin->peer < 0) {
      ++begin;
      continue;
    }
    auto end = begin;
    while (end != batch.end() && end->peer >= 0) ++end;
    std::stable_sort(begin, end, [&](const Queued& a, const Queued& b) { return key(a) < key(b); });
    begin = end;
  }
}

}  // namespace detail

inline void Backend::note_failure(const chorus::Error& e) {
  switch (e.code()) {
    case chorus::ErrorCode::timeout: error_type_ = static_cast<int>(c10d::ErrorType::TIMEOUT); break;
    case chorus::ErrorCode::peer_failed: error_type_ = static_cast<int>(c10d::ErrorType::REMOTE_ERROR); break;
    case chorus::ErrorCode::mismatch:
    case chorus::ErrorCode::internal: error_type_ = static_cast<int>(c10d::ErrorType::COMM_ERROR); break;
    default: break;  // a refused argument leaves the communicator usable
  }
}

inline WorkPtr Backend::submit(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                               std::chrono::milliseconds timeout, bool async, Body body) {
  {
    std::lock_guard<std::mutex> lock(lifetime_);
    // title is torch's profiling name, "chorus:<call>"
    if (closed_) refuse(title + std::strlen("chorus:"), "the process group was shut down or aborted");
  }
  auto work = c10::make_intrusive<Work>(rank_, type, title, std::move(outputs));
  const long ms = clamp_timeout(timeout == c10d::kUnsetTimeout ? timeout_.load() : timeout);
  Worker::Job job = [this, work, ms, body = std::move(body)] {
    run_and_complete(*work, "", [&] {
      comm_->set_timeout_ms(ms);
      body(*comm_);
    });
  };
  {
    std::lock_guard<std::mutex> lock(batch_mutex_);
    if (coalescing_) {
      batch_.push_back({std::move(job), work});
      return work;
    }
  }
  if (async) {
    worker_.post(std::move(job));
  } else {
    worker_.run_here(job);
  }
  return work;
}

template <class Fn>
void Backend::run_and_complete(Work& work, const std::string& context, Fn&& fn) {
  std::exception_ptr error;
  try {
    fn();
  } catch (const chorus::Error& e) {
    note_failure(e);
    error = backend_error(context + e.what());
  } catch (const c10::Error& e) {
    error = backend_error("chorus: " + context + e.what_without_backtrace());
  } catch (const std::exception& e) {
    error = backend_error("chorus: " + context + e.what());
  }
  work.complete(error);
}

inline Link& Backend::link(int peer, bool sends) {
  std::unique_ptr<Link>& made = links_[{peer, sends}];
  if (!made) made = std::make_unique<Link>(make_link_, peer, sends);
  return *made;
}

// A send or recv: on its peer's link when the transport has links, else on the group's worker.
inline WorkPtr Backend::submit_p2p(c10d::OpType type, const char* title, std::vector<at::Tensor> tensors, int peer,
                                   bool sends, PeerBody body) {
  const char* call = title + std::strlen("chorus:");
  if (peer == rank_) refuse(call, "rank " + std::to_string(rank_) + " names itself as the peer");
  // Held to the end: abort() and shutdown() stop the links, so none may be added or posted to meanwhile.
  std::lock_guard<std::mutex> lock(lifetime_);
  if (closed_) refuse(call, "the process group was shut down or aborted");
  auto work = c10::make_intrusive<Work>(rank_, type, title, std::move(tensors));
  const long ms = clamp_timeout(timeout_.load());
  Link* on = make_link_ ? &link(peer, sends) : nullptr;
  Worker::Job job;
  if (on != nullptr) {
    const std::string context = std::string(call) + (sends ? " to" : " from") + " rank " + std::to_string(peer) +
                                " on rank " + std::to_string(rank_) + ", over their link (" + on->legend(rank_) + "): ";
    job = [this, work, ms, on, context, body = std::move(body)] {
      run_and_complete(*work, context, [&] {
        Comm& comm = on->comm(ms);
        comm.set_timeout_ms(ms);
        body(comm, on->peer_in_link());
      });
    };
  } else {
    job = [this, work, ms, peer, body = std::move(body)] {
      run_and_complete(*work, "", [&] {
        comm_->set_timeout_ms(ms);
        body(*comm_, peer);
      });
    };
  }
  {
    std::lock_guard<std::mutex> batch_lock(batch_mutex_);
    if (coalescing_) {
      batch_.push_back({std::move(job), work, peer, sends, on});
      return work;
    }
  }
  if (on != nullptr) {
    on->post(std::move(job));
  } else {
    worker_.post(std::move(job));
  }
  return work;
}

inline Backend::Body Backend::in_order(std::vector<Body> bodies) {
  return [bodies = std::move(bodies)](Comm& comm) {
    for (const Body& body : bodies) body(comm);
  };
}

inline WorkPtr Backend::endCoalescing() {
  std::vector<Queued> batch;
  {
    std::lock_guard<std::mutex> lock(batch_mutex_);
    coalescing_ = false;
    batch.swap(batch_);
  }
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::COALESCED, "chorus:coalesced", std::vector<at::Tensor>{});
  const bool linked = std::any_of(batch.begin(), batch.end(), [](const Queued& q) { return q.link != nullptr; });
  if (linked) return end_linked_batch(work, std::move(batch));
  const int me = rank_;
  Worker::Job job = [work, me, batch = std::move(batch)]() mutable {
    detail::order_point_to_point(batch, me);
    std::exception_ptr first;
    for (Queued& q : batch) {
      q.job();
      if (!first) first = q.work->exception();
    }
    work->complete(first);
  };
  worker_.post(std::move(job));
  return work;
}

// A batch with sends and receives on links: each runs on its link, the collectives in order on the
// worker; the batch's Work completes when all have run, with the first failure in the batch's order.
inline WorkPtr Backend::end_linked_batch(c10::intrusive_ptr<Work> work, std::vector<Queued> batch) {
  struct Parts {
    std::vector<Queued> batch;
    std::atomic<std::size_t> left{0};
    c10::intrusive_ptr<Work> work;
    void done_one() {
      if (--left != 0) return;
      std::exception_ptr first;
      for (const Queued& q : batch) {
        if (!first) first = q.work->exception();
      }
      work->complete(first);
    }
  };
  auto parts = std::make_shared<Parts>();
  parts->batch = std::move(batch);
  parts->work = work;
  std::vector<std::size_t> collectives;
  for (std::size_t i = 0; i < parts->batch.size(); ++i) {
    if (parts->batch[i].link == nullptr) collectives.push_back(i);
  }
  parts->left = parts->batch.size() - collectives.size() + (collectives.empty() ? 0 : 1);
  std::lock_guard<std::mutex> lock(lifetime_);
  if (closed_) refuse("coalesced", "the process group was shut down or aborted");
  for (Queued& q : parts->batch) {
    if (q.link != nullptr) q.link->post([parts, &q] { q.job(); parts->done_one(); });
  }
  if (!collectives.empty()) {
    worker_.post([parts, collectives] {
      for (const std::size_t i : collectives) parts->batch[i].job();
      parts->done_one();
    });
  }
  return work;
}

inline WorkPtr Backend::broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = detail::single("broadcast", tensors);
  detail::check_root("broadcast", opts.rootRank, size_);
  const detail::Dense d = detail::dense(t);
  const int root = static_cast<int>(opts.rootRank);
  return submit(c10d::OpType::BROADCAST, "chorus:broadcast", tensors, opts.timeout, opts.asyncOp, [d, root](Comm& comm) {
    comm.broadcast(d.dense.data_ptr(), d.dense.data_ptr(), bytes_of(d.dense), chorus::DataType::uint8, root);
    d.write_back();
  });
}

inline WorkPtr Backend::allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = detail::single("allreduce", tensors);
  const Reduction plan = plan_reduction("allreduce", t.scalar_type(), opts.reduceOp);
  const detail::Dense d = detail::dense(t);
  const chorus::Algorithm algorithm = algorithm_;
  return submit(c10d::OpType::ALLREDUCE, "chorus:all_reduce", tensors, opts.timeout, opts.asyncOp,
                [d, plan, algorithm](Comm& comm) {
                  at::Tensor dense = d.dense;
                  all_reduce_tensor(comm, dense, plan, algorithm);
                  d.write_back();
                });
}

// One call per tensor, in order (the bits are those of separate allreduce calls).
inline WorkPtr Backend::allreduce_coalesced(std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  detail::check_tensors("allreduce_coalesced", tensors);
  std::vector<Reduction> plans;
  for (const at::Tensor& t : tensors) plans.push_back(plan_reduction("allreduce_coalesced", t.scalar_type(), opts.reduceOp));
  const std::vector<detail::Dense> ds = detail::dense_all(tensors);
  const chorus::Algorithm algorithm = algorithm_;
  return submit(c10d::OpType::ALLREDUCE_COALESCED, "chorus:all_reduce_coalesced", tensors, opts.timeout, opts.asyncOp,
                [ds, plans, algorithm](Comm& comm) {
                  for (std::size_t i = 0; i < ds.size(); ++i) {
                    at::Tensor dense = ds[i].dense;
                    all_reduce_tensor(comm, dense, plans[i], algorithm);
                    ds[i].write_back();
                  }
                });
}

inline WorkPtr Backend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  const at::Tensor& t = detail::single("reduce", tensors);
  detail::check_root("reduce", opts.rootRank, size_);
  const Reduction plan = plan_reduction("reduce", t.scalar_type(), opts.reduceOp);
  const detail::Dense d = detail::dense(t);
  const int root = static_cast<int>(opts.rootRank);
  return submit(c10d::OpType::REDUCE, "chorus:reduce", tensors, opts.timeout, opts.asyncOp, [d, plan, root](Comm& comm) {
    at::Tensor dense = d.dense;
    reduce_tensor(comm, dense, plan, root);
    if (comm.rank() == root || plan.kind == Reduction::Kind::fold) d.write_back();
  });
}

inline WorkPtr Backend::allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                  const c10d::AllgatherOptions& opts) {
  const at::Tensor& in = detail::single("allgather", inputs);
  if (outputs.size() != 1) refuse("allgather", "takes one output list per call, got " + std::to_string(outputs.size()));
  detail::check_like("allgather", outputs[0], static_cast<std::size_t>(size_), in);
  const at::Tensor src = in.contiguous();
  const std::vector<at::Tensor> parts = outputs[0];
  return submit(c10d::OpType::ALLGATHER, "chorus:all_gather", parts, opts.timeout, opts.asyncOp, [src, parts](Comm& comm) {
    at::Tensor all = at::empty({comm.size(), src.numel()}, src.options());
    all_gather_bytes(comm, src.data_ptr(), all.data_ptr(), bytes_of(src));
    // copy_ writes through any strides, so the list may hold views.
    for (int r = 0; r < comm.size(); ++r) {
      at::Tensor part = parts[static_cast<std::size_t>(r)];
      part.copy_(all[r].view(part.sizes()));
    }
  });
}

// The body of one all_gather_into_tensor, checked here.
inline Backend::Body Backend::all_gather_body(const char* call, const at::Tensor& output, const at::Tensor& input) const {
  detail::check_tensor(call, output);
  detail::check_tensor(call, input);
  if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * size_) {
    refuse(call, "the output must hold group size (" + std::to_string(size_) + ") x the input's " +
                     std::to_string(input.numel()) + " elements of its dtype; it holds " + std::to_string(output.numel()));
  }
  const detail::Dense out = detail::dense(output);
  // FSDP2 gathers in place (its input is the output's block for this rank): the alias is kept.
  const at::Tensor in = input.contiguous();
  return [out, in](Comm& comm) {
    all_gather_bytes(comm, in.data_ptr(), out.dense.data_ptr(), bytes_of(in));
    out.write_back();
  };
}

inline WorkPtr Backend::all_gather_single(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  return submit(c10d::OpType::_ALLGATHER_BASE, "chorus:all_gather_into_tensor", {output}, opts.timeout, opts.asyncOp,
                all_gather_body("all_gather_into_tensor", output, input));
}

// One call per pair, in order, as one Work.
inline WorkPtr Backend::all_gather_single_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                    const c10d::AllgatherOptions& opts) {
  const char* call = "all_gather_into_tensor_coalesced";
  if (outputs.size() != inputs.size()) refuse(call, "needs as many outputs as inputs");
  std::vector<Body> bodies;
  for (std::size_t i = 0; i < inputs.size(); ++i) bodies.push_back(all_gather_body(call, outputs[i], inputs[i]));
  return submit(c10d::OpType::COALESCED, "chorus:all_gather_into_tensor_coalesced", outputs, opts.timeout, opts.asyncOp,
                in_order(std::move(bodies)));
}

inline WorkPtr Backend::gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                               const c10d::GatherOptions& opts) {
  const at::Tensor& in = detail::single("gather", inputs);
  detail::check_root("gather", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  const std::vector<at::Tensor> parts = detail::root_list("gather", "output", outputs, rank_, root, size_, in);
  const at::Tensor src = in.contiguous();
  return submit(c10d::OpType::GATHER, "chorus:gather", parts, opts.timeout, opts.asyncOp, [src, parts, root](Comm& comm) {
    const std::vector<detail::Dense> ds = detail::dense_all(parts);
    std::vector<void*> into;
    for (const detail::Dense& d : ds) into.push_back(d.dense.data_ptr());
    gather_bytes(comm, src.data_ptr(), into, bytes_of(src), root);
    for (const detail::Dense& d : ds) d.write_back();
  });
}

inline WorkPtr Backend::scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                const c10d::ScatterOptions& opts) {
  const at::Tensor& out = detail::single("scatter", outputs);
  detail::check_root("scatter", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> parts;
  for (const at::Tensor& t : detail::root_list("scatter", "input", inputs, rank_, root, size_, out)) parts.push_back(t.contiguous());
  const detail::Dense d = detail::dense(out);
  return submit(c10d::OpType::SCATTER, "chorus:scatter", outputs, opts.timeout, opts.asyncOp, [d, parts, root](Comm& comm) {
    std::vector<const void*> from;
    for (const at::Tensor& t : parts) from.push_back(t.data_ptr());
    scatter_bytes(comm, from, d.dense.data_ptr(), bytes_of(d.dense), root);
    d.write_back();
  });
}

inline WorkPtr Backend::reduce_scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                       const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = detail::single("reduce_scatter", outputs);
  if (inputs.size() != 1) refuse("reduce_scatter", "takes one input list per call, got " + std::to_string(inputs.size()));
  detail::check_like("reduce_scatter", inputs[0], static_cast<std::size_t>(size_), out);
  const Reduction plan = plan_reduction("reduce_scatter", out.scalar_type(), opts.reduceOp);
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : inputs[0]) flat.push_back(t.reshape({-1}));
  const at::Tensor all = at::cat(flat);
  const detail::Dense d = detail::dense(out);
  return submit(c10d::OpType::REDUCE_SCATTER, "chorus:reduce_scatter", outputs, opts.timeout, opts.asyncOp,
                [d, all, plan](Comm& comm) {
                  at::Tensor dense = d.dense;
                  reduce_scatter_tensor(comm, dense, all, plan);
                  d.write_back();
                });
}

// The body of one reduce_scatter_tensor, checked here.
inline Backend::Body Backend::reduce_scatter_body(const char* call, const at::Tensor& output, const at::Tensor& input,
                                                  const c10d::ReduceOp& op) const {
  detail::check_tensor(call, output);
  detail::check_tensor(call, input);
  if (output.scalar_type() != input.scalar_type() || input.numel() != output.numel() * size_) {
    refuse(call, "the input must hold group size (" + std::to_string(size_) + ") x the output's " +
                     std::to_string(output.numel()) + " elements of its dtype; it holds " + std::to_string(input.numel()));
  }
  const Reduction plan = plan_reduction(call, output.scalar_type(), op);
  const detail::Dense d = detail::dense(output);
  // A premultiplied sum scales its input: it works on a copy, never on the caller's tensor.
  const at::Tensor in = plan.kind == Reduction::Kind::direct ? input.contiguous() : input.contiguous().clone();
  return [d, in, plan](Comm& comm) {
    at::Tensor dense = d.dense;
    reduce_scatter_tensor(comm, dense, in, plan);
    d.write_back();
  };
}

inline WorkPtr Backend::reduce_scatter_single(at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return submit(c10d::OpType::_REDUCE_SCATTER_BASE, "chorus:reduce_scatter_tensor", {output}, opts.timeout, opts.asyncOp,
                reduce_scatter_body("reduce_scatter_tensor", output, input, opts.reduceOp));
}

inline WorkPtr Backend::reduce_scatter_single_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                        const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor_coalesced";
  if (outputs.size() != inputs.size()) refuse(call, "needs as many outputs as inputs");
  std::vector<Body> bodies;
  for (std::size_t i = 0; i < inputs.size(); ++i) bodies.push_back(reduce_scatter_body(call, outputs[i], inputs[i], opts.reduceOp));
  return submit(c10d::OpType::COALESCED, "chorus:reduce_scatter_tensor_coalesced", outputs, opts.timeout, opts.asyncOp,
                in_order(std::move(bodies)));
}

inline WorkPtr Backend::all_to_all_single(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                          std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all_single";
  detail::check_tensor(call, output);
  detail::check_tensor(call, input);
  if (output.scalar_type() != input.scalar_type()) refuse(call, "input and output dtypes differ");
  const auto n = static_cast<std::size_t>(size_);
  // Splits count rows of dim 0; no splits: equal blocks.
  auto byte_splits = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::size_t row_bytes = rows == 0 ? 0 : bytes_of(t) / static_cast<std::size_t>(rows);
    std::vector<std::size_t> bytes(n);
    if (splits.empty()) {
      if (rows % size_ != 0) refuse(call, std::string(which) + " has " + std::to_string(rows) + " rows, not a multiple of the group size " + std::to_string(size_) + " (pass split sizes)");
      std::fill(bytes.begin(), bytes.end(), static_cast<std::size_t>(rows / size_) * row_bytes);
      return bytes;
    }
    if (splits.size() != n) refuse(call, std::string(which) + " split sizes: " + std::to_string(splits.size()) + " given for " + std::to_string(size_) + " ranks");
    std::int64_t total = 0;
    for (std::size_t p = 0; p < n; ++p) {
      if (splits[p] < 0) refuse(call, std::string(which) + " split size " + std::to_string(splits[p]) + " is negative");
      total += splits[p];
      bytes[p] = static_cast<std::size_t>(splits[p]) * row_bytes;
    }
    if (total != rows) refuse(call, std::string(which) + " split sizes add up to " + std::to_string(total) + ", the tensor has " + std::to_string(rows) + " rows");
    return bytes;
  };
  const std::vector<std::size_t> send_bytes = byte_splits(input, input_splits, "the input");
  const std::vector<std::size_t> recv_bytes = byte_splits(output, output_splits, "the output");
  if (input_splits.empty() && output_splits.empty() && bytes_of(input) != bytes_of(output)) {
    refuse(call, "without split sizes the input and the output must be the same size (" + std::to_string(input.numel()) +
                     " and " + std::to_string(output.numel()) + " elements)");
  }
  const at::Tensor in = input.contiguous();
  const detail::Dense out = detail::dense(output);
  const bool even = input_splits.empty() && output_splits.empty();
  return submit(c10d::OpType::ALLTOALL_BASE, "chorus:all_to_all_single", {output}, opts.timeout, opts.asyncOp,
                [in, out, send_bytes, recv_bytes, even](Comm& comm) {
                  if (even) {
                    comm.all_to_all(in.data_ptr(), out.dense.data_ptr(), send_bytes[0], chorus::DataType::uint8);
                  } else {
                    Blocks blocks{{}, send_bytes, {}, recv_bytes};
                    std::size_t at_send = 0;
                    std::size_t at_recv = 0;
                    for (std::size_t p = 0; p < send_bytes.size(); ++p) {
                      blocks.send.push_back(static_cast<const std::byte*>(in.data_ptr()) + at_send);
                      blocks.recv.push_back(static_cast<std::byte*>(out.dense.data_ptr()) + at_recv);
                      at_send += send_bytes[p];
                      at_recv += recv_bytes[p];
                    }
                    all_to_all_blocks(comm, blocks);
                  }
                  out.write_back();
                });
}

inline WorkPtr Backend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                 const c10d::AllToAllOptions& opts) {
  const auto n = static_cast<std::size_t>(size_);
  if (outputs.size() != n || inputs.size() != n) refuse("all_to_all", "needs one input and one output tensor per rank");
  detail::check_tensors("all_to_all", outputs);
  detail::check_tensors("all_to_all", inputs);
  std::vector<at::Tensor> ins;
  for (const at::Tensor& t : inputs) ins.push_back(t.contiguous());
  const std::vector<detail::Dense> outs = detail::dense_all(outputs);
  return submit(c10d::OpType::ALLTOALL, "chorus:all_to_all", outputs, opts.timeout, opts.asyncOp, [ins, outs](Comm& comm) {
    Blocks blocks;
    for (std::size_t p = 0; p < ins.size(); ++p) {
      blocks.send.push_back(static_cast<const std::byte*>(ins[p].data_ptr()));
      blocks.send_bytes.push_back(bytes_of(ins[p]));
      blocks.recv.push_back(static_cast<std::byte*>(outs[p].dense.data_ptr()));
      blocks.recv_bytes.push_back(bytes_of(outs[p].dense));
    }
    all_to_all_blocks(comm, blocks);
    for (const detail::Dense& d : outs) d.write_back();
  });
}

// Messages between two ranks match in the order they were issued; torch's tag is not matched.
inline WorkPtr Backend::send(std::vector<at::Tensor>& tensors, int peer, int /*tag*/) {
  const at::Tensor& t = detail::single("send", tensors);
  detail::check_root("send", peer, size_);
  const at::Tensor src = t.contiguous();
  return submit_p2p(c10d::OpType::SEND, "chorus:send", tensors, peer, true, [src](Comm& comm, int to) {
    comm.send(src.data_ptr(), bytes_of(src), chorus::DataType::uint8, to);
  });
}

inline WorkPtr Backend::recv(std::vector<at::Tensor>& tensors, int peer, int /*tag*/) {
  const at::Tensor& t = detail::single("recv", tensors);
  detail::check_root("recv", peer, size_);
  const detail::Dense d = detail::dense(t);
  return submit_p2p(c10d::OpType::RECV, "chorus:recv", tensors, peer, false, [d](Comm& comm, int from) {
    comm.recv(d.dense.data_ptr(), bytes_of(d.dense), chorus::DataType::uint8, from);
    d.write_back();
  });
}

inline WorkPtr Backend::recvAnysource(std::vector<at::Tensor>& /*tensors*/, int /*tag*/) {
  refuse("recv", "receiving from any source is not supported: name the source rank");
}

inline WorkPtr Backend::barrier(const c10d::BarrierOptions& opts) {
  return submit(c10d::OpType::BARRIER, "chorus:barrier", {}, opts.timeout, opts.asyncOp, [](Comm& comm) { comm.barrier(); });
}

}  // namespace chorus_torch
