// nvcc must compile every CPU-tier header (and the CUDA topology reader and <chorus/cuda.hpp>) in a .cu unit with device
// code beside it, and the host backend must still run there. Needs no GPU: no kernel is launched.
#include <chorus/chorus.hpp>
#include <chorus/core/config.hpp>

#if !CHORUS_HAS_CUDA
#error "nvcc should set CHORUS_HAS_CUDA"
#endif
#include <chorus/topo/cuda_reader.hpp>
// chorus's own GPU backend and the kernels' CPU twin, in the same unit as everything else.
#include <chorus/cuda.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

// half and bfloat16 convert on the device with the same code as on the host.
__global__ void touch(chorus::half* h, chorus::bfloat16* b) { h[0] = chorus::half(float(b[0]) + 1.0f); }

int main() {
  chorus::host::Team team(2);
  int sums[2] = {0, 0};
  team.run([&](chorus::host::Comm& comm) {
    int value = 1;
    comm.all_reduce(&value, &sums[comm.rank()], 1, chorus::ReduceOp::sum);
  });
  return sums[0] == 2 && sums[1] == 2 ? 0 : 1;
}
