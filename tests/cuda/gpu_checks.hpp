// What the GPU test programs share. They are plain programs, not Catch2 suites, so nvcc compiles one unit
// each with nothing else; a failed expectation is counted and printed rather than thrown, so one run on a
// GPU machine reports every failure at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpu_checks {

inline int failures = 0;

inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

// A CUDA call the test itself makes (allocation, copy): nothing can be checked after it fails.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// The number of visible GPUs; exits 77 (meson: skipped) when there is none.
inline int gpus_or_skip() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU visible: skipped\n");
    std::exit(77);
  }
  return devices;
}

// The program's exit status, after a summary line.
inline int summary() {
  std::printf("%s: %d failure(s)\n", failures == 0 ? "PASSED" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace gpu_checks
