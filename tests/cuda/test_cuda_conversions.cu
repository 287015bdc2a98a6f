// chorus::half and chorus::bfloat16 on a GPU convert with the hardware's instructions (cvt.rn.f16.f32,
// cvt.f32.f16, cvt.rn.bf16.f32) and on the host in software; both round to nearest even, so every bit
// must agree. This compares them on every input class that matters: every 16-bit pattern widened (NaNs
// included), and narrowed: every finite half's and bfloat16's value, the midpoint to the next (a tie) and
// the floats on either side of it, both signs, plus infinities, float subnormals, values past the largest
// finite half, and NaNs with payloads. Plain main, as test_cuda_team; exits 77 when no GPU is visible.
#include <chorus/core/bfloat16.hpp>
#include <chorus/core/half.hpp>

#include "gpu_checks.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using gpu_checks::check;
using gpu_checks::expect;

__global__ void widen(const std::uint16_t* bits, float* half_out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    half_out[i] = static_cast<float>(chorus::half::from_bits(bits[i]));
  }
}

__global__ void narrow(const float* in, std::uint16_t* half_out, std::uint16_t* bf16_out, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    half_out[i] = chorus::half(in[i]).bits;
    bf16_out[i] = chorus::bfloat16(in[i]).bits;
  }
}

float from_bits32(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// The floats that round to each half and each bfloat16 in every way (value, tie, either side), both signs.
std::vector<float> narrowing_inputs() {
  std::vector<float> out;
  const auto add = [&](float f) {
    out.push_back(f);
    out.push_back(-f);
  };
  for (std::uint16_t bits = 0; bits < 0x7c00; ++bits) {
    const double low = chorus::half::to_float(bits);
    const double high = bits == 0x7bff ? 65536.0 : chorus::half::to_float(static_cast<std::uint16_t>(bits + 1));
    const float mid = static_cast<float>((low + high) / 2);
    for (float f : {static_cast<float>(low), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) add(f);
  }
  for (std::uint32_t bits = 0; bits < 0x7f80; ++bits) {
    const float mid = from_bits32((bits << 16) | 0x8000u);
    for (float f : {from_bits32(bits << 16), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) add(f);
  }
  for (std::uint32_t bits : {0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7fa00000u, 0x00000001u, 0x007fffffu,
                             0x477fefffu, 0x477ff000u, 0x477fffffu, 0x7f7fffffu}) {
    add(from_bits32(bits));
  }
  return out;
}

}  // namespace

int main() {
  gpu_checks::gpus_or_skip();
  // Widening every 16-bit pattern.
  std::vector<std::uint16_t> patterns(65536);
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<std::uint16_t>(i);
  std::uint16_t* d_patterns = nullptr;
  float* d_wide = nullptr;
  check(cudaMalloc(&d_patterns, patterns.size() * 2), "cudaMalloc");
  check(cudaMalloc(&d_wide, patterns.size() * 4), "cudaMalloc");
  check(cudaMemcpy(d_patterns, patterns.data(), patterns.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  widen<<<64, 256>>>(d_patterns, d_wide, patterns.size());
  check(cudaGetLastError(), "widen launch");
  std::vector<float> wide(patterns.size());
  check(cudaMemcpy(wide.data(), d_wide, wide.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  int widen_wrong = 0;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const std::uint32_t want = bits_of(chorus::half::to_float(patterns[i]));
    if (bits_of(wide[i]) != want && widen_wrong++ < 5) {
      std::printf("half 0x%04zx widened: GPU 0x%08x, host 0x%08x\n", i, bits_of(wide[i]), want);
    }
  }
  expect(widen_wrong == 0, "half widening: " + std::to_string(widen_wrong) + " of 65536 patterns differ");
  // Narrowing.
  const std::vector<float> inputs = narrowing_inputs();
  float* d_in = nullptr;
  std::uint16_t *d_half = nullptr, *d_bf16 = nullptr;
  check(cudaMalloc(&d_in, inputs.size() * 4), "cudaMalloc");
  check(cudaMalloc(&d_half, inputs.size() * 2), "cudaMalloc");
  check(cudaMalloc(&d_bf16, inputs.size() * 2), "cudaMalloc");
  check(cudaMemcpy(d_in, inputs.data(), inputs.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  narrow<<<256, 256>>>(d_in, d_half, d_bf16, inputs.size());
  check(cudaGetLastError(), "narrow launch");
  std::vector<std::uint16_t> halves(inputs.size()), bf16s(inputs.size());
  check(cudaMemcpy(halves.data(), d_half, halves.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(bf16s.data(), d_bf16, bf16s.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  int half_wrong = 0, bf16_wrong = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::uint16_t want_half = chorus::half(inputs[i]).bits, want_bf16 = chorus::bfloat16(inputs[i]).bits;
    if (halves[i] != want_half && half_wrong++ < 5) {
      std::printf("float 0x%08x to half: GPU 0x%04x, host 0x%04x\n", bits_of(inputs[i]), halves[i], want_half);
    }
    if (bf16s[i] != want_bf16 && bf16_wrong++ < 5) {
      std::printf("float 0x%08x to bfloat16: GPU 0x%04x, host 0x%04x\n", bits_of(inputs[i]), bf16s[i], want_bf16);
    }
  }
  std::printf("compared %zu widenings and %zu narrowings per type\n", patterns.size(), inputs.size());
  expect(half_wrong == 0, "half narrowing: " + std::to_string(half_wrong) + " inputs differ");
  expect(bf16_wrong == 0, "bfloat16 narrowing: " + std::to_string(bf16_wrong) + " inputs differ");
  cudaFree(d_patterns);
  cudaFree(d_wide);
  cudaFree(d_in);
  cudaFree(d_half);
  cudaFree(d_bf16);
  return gpu_checks::summary();
}
