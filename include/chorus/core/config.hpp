// Feature and portability macros shared by every layer.
#pragma once

#if defined(__CUDACC__)
#define CHORUS_HOST_DEVICE __host__ __device__
#define CHORUS_DEVICE __device__
#else
#define CHORUS_HOST_DEVICE
#define CHORUS_DEVICE
#endif

// Optional backends announce themselves through these; a plain C++17 compiler sees all zero.
#if defined(__CUDACC__) || defined(CHORUS_WITH_CUDA)
#define CHORUS_HAS_CUDA 1
#else
#define CHORUS_HAS_CUDA 0
#endif

#if defined(CHORUS_WITH_NCCL)
#define CHORUS_HAS_NCCL 1
#else
#define CHORUS_HAS_NCCL 0
#endif

#if defined(CHORUS_WITH_MPI)
#define CHORUS_HAS_MPI 1
#else
#define CHORUS_HAS_MPI 0
#endif

#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 1
#define CHORUS_VERSION_PATCH 0
