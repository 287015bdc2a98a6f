// The parallel-training building blocks, generic over every communicator (is_communicator_v):
// the device mesh, data parallelism (gradient buckets with overlap, no_sync, sampler, local SGD,
// linear LR scaling, ZeRO-1), tensor parallelism (column/row-parallel linear layers, the MLP,
// sequence parallelism, vocab-parallel cross-entropy, per-rank RNG seeds) and pipeline
// parallelism (schedules as data, their simulator, and an executor). Needs no GPU toolchain and
// no MPI. What copies or computes with the CPU takes host-memory communicators only
// (require_host_memory, core/memory_space.hpp); DeviceGradientReducer is the data-parallel reducer for
// device communicators (gradients in GPU memory, a comm stream); MeshComms, the sampler,
// average_parameters and LocalSgd never touch the buffers and take any.
#pragma once

#include "parallel/mesh.hpp"
#include "parallel/mesh_comms.hpp"

#include "parallel/param_view.hpp"
#include "parallel/broadcast_parameters.hpp"
#include "parallel/bucket_plan.hpp"
#include "parallel/gradient_reducer.hpp"
#include "parallel/device_gradient_reducer.hpp"
#include "parallel/distributed_sampler.hpp"
#include "parallel/linear_scaling_lr.hpp"
#include "parallel/local_sgd.hpp"
#include "parallel/sgd.hpp"
#include "parallel/adam.hpp"
#include "parallel/zero_redundancy_optimizer.hpp"

#include "parallel/host_gemm.hpp"
#include "parallel/tensor_parallel_mappings.hpp"
#include "parallel/column_parallel_linear.hpp"
#include "parallel/row_parallel_linear.hpp"
#include "parallel/parallel_mlp.hpp"
#include "parallel/vocab_parallel_cross_entropy.hpp"
#include "parallel/rng_seeds.hpp"

#include "parallel/pipeline_schedule.hpp"
#include "parallel/pipeline_simulator.hpp"
#include "parallel/pipeline_communication.hpp"
#include "parallel/pipeline_executor.hpp"
#include "parallel/pipeline_printer.hpp"
