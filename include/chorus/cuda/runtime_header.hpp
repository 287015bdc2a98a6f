// The CUDA runtime's header, or a clear stop. Host code under cuda/ and nccl/ includes this instead of
// <cuda_runtime.h> so a build without the toolkit's include path fails with what to do, not a bare
// "file not found". Device code (.cuh) is compiled by nvcc, which always has it.
#pragma once

#if !defined(__CUDACC__) && !__has_include(<cuda_runtime.h>)
#error "chorus: <chorus/cuda/...> and <chorus/nccl/...> need the CUDA runtime: add -I<cuda>/include (and -isystem <cuda>/include/cccl for CUDA 13) and link -lcudart, or, in chorus's own build, the Meson dependency chorus_nccl_dep"
#endif

#include <cuda_runtime.h>
