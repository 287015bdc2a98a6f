// NCCL's header, or a clear stop. Every header under nccl/ includes this instead of <nccl.h>, so a
// build without NCCL's include path fails with what to do, not a bare "file not found". The CUDA
// runtime comes first, through its own guard (cuda/runtime_header.hpp), since <nccl.h> needs it.
#pragma once

#include "../cuda/runtime_header.hpp"

#if !__has_include(<nccl.h>)
#error "chorus: <chorus/nccl.hpp> needs NCCL: add -I<nccl>/include (CUDA's prefix when NCCL came with the toolkit, plus -isystem <cuda>/include/cccl for CUDA 13) and link -lnccl -lcudart, or use the Meson dependency chorus_nccl_dep"
#else
#include <nccl.h>
#if NCCL_VERSION_CODE < 21800
#error "chorus: the NCCL wrapper needs NCCL 2.18 or newer (ncclCommSplit; nonblocking communicators and ncclCommFinalize came in 2.14)"
#endif
#endif
