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

// The ABI tag: every chorus name lives in an inline namespace named after the exact version and the mode,
// chorus::v0_1_0 header-only and chorus::v0_1_0_lib compiled, so code still writes chorus::host::Comm while
// the linker sees chorus::v0_1_0_lib::host::Comm. A unit compiled against one version's headers and linked
// with a libchorus of another, or a header-only unit mixed with compiled-mode units in one program, then
// fails to link (undefined reference to chorus::v..._lib::...) instead of silently breaking the one
// definition rule. The whole version, patch included, because 0.x promises no ABI between releases; the
// mode because a header-only unit's inline definitions and libchorus's must not stand in for each other.
// docs/abi.md says more.
#define CHORUS_ABI_TAG_PASTE_(major, minor, patch, mode) v##major##_##minor##_##patch##mode
#define CHORUS_ABI_TAG_EXPAND_(major, minor, patch, mode) CHORUS_ABI_TAG_PASTE_(major, minor, patch, mode)
#if defined(CHORUS_COMPILED_LIB)
#define CHORUS_ABI_TAG_MODE_ _lib
#else
#define CHORUS_ABI_TAG_MODE_
#endif
#define CHORUS_ABI_TAG \
  CHORUS_ABI_TAG_EXPAND_(CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH, CHORUS_ABI_TAG_MODE_)
#define CHORUS_ABI_TAG_STRING CHORUS_STRINGIZE(CHORUS_ABI_TAG)
// Opens and closes namespace chorus with the tag inside; nested library namespaces go inside it
// (`CHORUS_NAMESPACE_BEGIN namespace host { ... }  CHORUS_NAMESPACE_END`). C++17 has no
// `namespace chorus::inline v0`, hence the macros (the spelling fmt and nlohmann/json use).
#define CHORUS_NAMESPACE_BEGIN \
  namespace chorus {           \
  inline namespace CHORUS_ABI_TAG {
#define CHORUS_NAMESPACE_END \
  }                          \
  }
