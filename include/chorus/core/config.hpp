// Feature and portability macros shared by every layer.
#pragma once

#if defined(__CUDACC__)
#define CHORUS_HOST_DEVICE __host__ __device__
#define CHORUS_DEVICE __device__
#else
#define CHORUS_HOST_DEVICE
#define CHORUS_DEVICE
#endif

// On its own line before a __host__ __device__ function template that is also instantiated with host-only
// types (the CUDA kernels' bodies run on the CPU twin's Block): nvcc then checks the calls per
// instantiation instead of warning that a host-device template calls host functions.
#if defined(__CUDACC__)
#define CHORUS_HOST_DEVICE_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define CHORUS_HOST_DEVICE_TEMPLATE
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

// The version, in one place for the headers (meson.build's project version must match: tests/core/test_version).
// CHORUS_VERSION is one integer for comparisons (major*10000 + minor*100 + patch: 0.1.0 is 100);
// CHORUS_VERSION_STRING is "major.minor.patch", what the tools print.
#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 1
#define CHORUS_VERSION_PATCH 0
#define CHORUS_VERSION (CHORUS_VERSION_MAJOR * 10000 + CHORUS_VERSION_MINOR * 100 + CHORUS_VERSION_PATCH)
#define CHORUS_STRINGIZE_(x) #x
#define CHORUS_STRINGIZE(x) CHORUS_STRINGIZE_(x)
#define CHORUS_VERSION_STRING \
  CHORUS_STRINGIZE(CHORUS_VERSION_MAJOR) "." CHORUS_STRINGIZE(CHORUS_VERSION_MINOR) "." CHORUS_STRINGIZE(CHORUS_VERSION_PATCH)

// Header-only (the default) or compiled mode, as fmt, spdlog and Asio offer. Header-only: every
// function is defined in the headers (`inline`) and compiled again in each translation unit that
// uses it. Compiled (`-DCHORUS_COMPILED_LIB`, which the Meson dependency `chorus_lib_dep` and the
// pkg-config package `chorus-lib` add, with libchorus to link): the heavy non-template entry points
// (host::Comm's collectives, the schedule generators) are declared in the headers and defined once,
// in libchorus. Templates stay in the headers either way; results are identical.
//   CHORUS_FUNC            marks such a function: `inline` header-only, plain in compiled mode
//   CHORUS_DEFINE_BODIES   1 where their bodies are compiled: header-only, or inside libchorus
#if defined(CHORUS_COMPILED_LIB)
#define CHORUS_FUNC
#if defined(CHORUS_BUILDING_LIB)
#define CHORUS_DEFINE_BODIES 1
#else
#define CHORUS_DEFINE_BODIES 0
#endif
#else
#define CHORUS_FUNC inline
#define CHORUS_DEFINE_BODIES 1
#endif
