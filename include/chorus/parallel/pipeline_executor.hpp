// run_pipeline: one training step of a pipeline schedule over a communicator whose ranks are the
// pipeline's stages (rank r runs stage r's list). The caller's callbacks compute; the executor
// moves tensors: after F the activation goes to the next virtual stage, after B or I the input
// gradient goes to the previous one, in the deadlock-free order of with_communication().
//
// Every boundary carries one tensor of `tensor_size` floats, fixed in advance, as in Megatron
// (which exchanges shapes only with variable_seq_lengths). Callbacks, for chunk c, microbatch mb:
//   forward(c, mb, input, output)          input is null on the first virtual stage (the caller
//                                          feeds its data), output null on the last (the caller
//                                          computes the loss there and keeps it)
//   backward(c, mb, output_grad, input_grad)  output_grad null on the last virtual stage (the
//                                          caller starts from its loss), input_grad null on the first
//   backward_input / backward_weight       instead of backward, for zero-bubble schedules (I, W)
// The callbacks keep whatever they need between F and B (their activations), and accumulate their
// weight gradients; run_pipeline does not scale them (divide the loss by m for the mean, as
// Megatron does). A callback that throws stops this rank; its peers are released by the
// communicator's own failure handling (host::Comm) or by its timeout.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "pipeline_communication.hpp"
#include "pipeline_schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct PipelineStageFunctions {
  std::function<void(int chunk, int microbatch, const float* input, float* output)> forward;
  std::function<void(int chunk, int microbatch, const float* output_grad, float* input_grad)> backward;
  std::function<void(int chunk, int microbatch, const float* output_grad, float* input_grad)> backward_input;
  std::function<void(int chunk, int microbatch)> backward_weight;
};

// `schedule` may hold compute actions only (run_pipeline adds the transfers) or come with its
// transfers (with_communication(), or the caller's own, which verify_pipeline_communication checks
// first). Every rank must pass the same schedule and tensor_size.
template <class Comm>
void run_pipeline(Comm& comm, const PipelineSchedule& schedule, std::size_t tensor_size,
                  const PipelineStageFunctions& functions) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::run_pipeline needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // the boundary tensors are host vectors handed to the callbacks
  const char* call = "parallel::run_pipeline";
  const int rank = comm.rank();
  if (comm.size() != schedule.stages) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "the schedule has ", schedule.stages,
                     " stages but the communicator has ", comm.size(), " ranks (one rank per stage)");
  }
  if (tensor_size == 0 && schedule.virtual_stages() > 1) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "tensor_size = 0: stages must pass a tensor");
  }
  if (!functions.forward) throw make_error(ErrorCode::invalid_argument, call, rank, "no forward function");
  if (schedule.splits_backward() ? !(functions.backward_input && functions.backward_weight) : !functions.backward) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "a ", to_string(schedule.kind), " schedule needs ",
                     schedule.splits_backward() ? "backward_input and backward_weight functions" : "a backward function");
  }
  // A list with transfers already in it is checked first: a bad one would otherwise hang or mix up tensors.
  const bool given = has_communication(schedule);
  if (given) verify_pipeline_communication(schedule);
  const PipelineSchedule plan = given ? schedule : with_communication(schedule);

  using Key = std::pair<int, int>;  // (chunk, microbatch)
  using Tensor = std::vector<float>;
  // Tensors that arrived (or were handed over by this rank's previous chunk), and those waiting to go.
  std::map<Key, Tensor> inputs, output_grads, to_send_forward, to_send_backward;
  const int last = plan.virtual_stages() - 1;
  auto take = [&](std::map<Key, Tensor>& from, Key key, const PipelineAction& a) {
    auto it = from.find(key);
    if (it == from.end()) {
      throw make_error(ErrorCode::internal, call, rank, "no tensor for ", to_string(a, plan.chunks > 1),
                       ": the schedule does not deliver it first");
    }
    Tensor t = std::move(it->second);
    from.erase(it);
    return t;
  };

  for (const PipelineAction& a : plan.actions[static_cast<std::size_t>(rank)]) {
    const Key key{a.chunk, a.microbatch};
    const int vs = plan.virtual_stage(rank, a.chunk);
    switch (a.op) {
      case PipelineOp::recv_activation:
      case PipelineOp::recv_gradient: {
        Tensor& t = (a.op == PipelineOp::recv_activation ? inputs : output_grads)[key];
        t.resize(tensor_size);
        comm.recv(t.data(), tensor_size, a.peer);
        break;
      }
      case PipelineOp::send_activation:
        comm.send(take(to_send_forward, key, a).data(), tensor_size, a.peer);
        break;
      case PipelineOp::send_gradient:
        comm.send(take(to_send_backward, key, a).data(), tensor_size, a.peer);
        break;
      case PipelineOp::forward: {
        Tensor in = vs > 0 ? take(inputs, key, a) : Tensor();
        Tensor out(vs < last ? tensor_size : 0);
        functions.forward(a.chunk, a.microbatch, vs > 0 ? in.data() : nullptr, vs < last ? out.data() : nullptr);
        if (vs == last) break;
        if (plan.rank_of(vs + 1) == rank) {
          inputs[{a.chunk + 1, a.microbatch}] = std::move(out);
        } else {
          to_send_forward[key] = std::move(out);
        }
        break;
      }
      case PipelineOp::backward:
      case PipelineOp::backward_input: {
        Tensor grad = vs < last ? take(output_grads, key, a) : Tensor();
        Tensor in_grad(vs > 0 ? tensor_size : 0);
        const auto& fn = a.op == PipelineOp::backward ? functions.backward : functions.backward_input;
        fn(a.chunk, a.microbatch, vs < last ? grad.data() : nullptr, vs > 0 ? in_grad.data() : nullptr);
        if (vs == 0) break;
        if (plan.rank_of(vs - 1) == rank) {
          output_grads[{a.chunk - 1, a.microbatch}] = std::move(in_grad);
        } else {
          to_send_backward[key] = std::move(in_grad);
        }
        break;
      }
      case PipelineOp::backward_weight:
        functions.backward_weight(a.chunk, a.microbatch);
        break;
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
