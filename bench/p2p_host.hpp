// chorus-p2p's host measurements for one ordered pair of CPUs (source a, destination b), two ways:
//   raw:    two threads pinned to a and b, plain memcpy between their buffers, atomics for the
//           rendezvous and the latency flag: what the hardware gives;
//   chorus: a host::Team whose rank threads are pinned to a and b, moving the same bytes with
//           Comm::send / Comm::recv: what a chorus user gets (the difference is chorus's cost).
// Memory placement (both ways): each thread allocates and first-touches its own buffers, so Linux's
// first-touch policy puts the source buffer on a's NUMA node and the landing buffer on b's. Who runs the
// copy: in "read" mode the destination CPU copies out of the source's buffer (what Comm::recv does);
// in "write" mode the source CPU copies into the destination's buffer (raw only). Bytes are checked
// after every timed figure; a wrong byte is an error, not a number.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <chorus/bench/stats.hpp>
#include <chorus/core/env.hpp>
#include <chorus/core/error.hpp>
#include <chorus/host.hpp>
#include <chorus/runtime/wait.hpp>

#include "cpu_binding.hpp"

namespace p2p {

using Clock = std::chrono::steady_clock;

struct Settings {
  std::size_t bytes = 32u << 20;  // per copy
  int iters = 4;                  // copies per timed sample
  int repeats = 21;               // samples; the median is reported (many short samples: robust to preemption)
  int latency_iters = 200;        // round trips per latency sample
  bool write = false;             // raw only: the source CPU copies (default: the destination does)
};

// One ordered pair's figures; an empty optional was not measured.
struct PairFigures {
  std::optional<double> uni_gbps;    // bytes / time, 1e9 bytes per GB
  std::optional<double> bi_gbps;     // both directions' bytes / the slower direction's time
  std::optional<double> latency_us;  // round trip / 2
};

using cpu_binding::allowed_cpus;
using cpu_binding::pin_current_thread;

// A buffer the calling thread allocates and first-touches (so it lives on that thread's NUMA node),
// filled with a pattern that names its owner, so a copy from the wrong place cannot pass the check.
inline std::unique_ptr<unsigned char[]> owned_buffer(std::size_t bytes, int owner) {
  std::unique_ptr<unsigned char[]> buffer(new unsigned char[bytes == 0 ? 1 : bytes]);
  for (std::size_t i = 0; i < bytes; ++i) buffer[i] = static_cast<unsigned char>((i * 131 + owner * 17 + 1) & 0xff);
  return buffer;
}

inline double gbps(std::size_t bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

namespace detail {

// What the two threads of a raw pair share. Every wait is bounded by CHORUS_TIMEOUT_MS and gives up
// at once when the other thread has failed.
struct RawPair {
  alignas(64) std::atomic<std::uint64_t> arrived{0};
  alignas(64) std::atomic<std::uint64_t> ping{0};
  alignas(64) std::atomic<std::uint64_t> pong{0};
  alignas(64) std::atomic<int> finished{0};
  alignas(64) std::atomic<bool> failed{false};
  std::atomic<int> first_failure{-1};  // the side whose error explains the run; the other's is a consequence
  int cpu[2] = {-1, -1};
  const unsigned char* own[2] = {nullptr, nullptr};  // each side's source data
  unsigned char* landing[2] = {nullptr, nullptr};    // each side's destination buffer
  std::exception_ptr error[2];

  template <class Ready>
  void wait(int side, const char* what, Ready&& ready) {
    chorus::runtime::wait_until(
        chorus::env::timeout_ms(), chorus::runtime::WaitPolicy::yields(2), ready,
        [&] {
          if (failed.load(std::memory_order_acquire)) {
            throw chorus::Error(chorus::ErrorCode::peer_failed,
                                chorus::detail::concat("the thread on CPU ", cpu[1 - side], " failed"));
          }
        },
        [&]() -> long {
          throw chorus::Error(chorus::ErrorCode::timeout,
                              chorus::detail::concat("the thread on CPU ", cpu[side], " waited ", chorus::env::timeout_ms(),
                                                     " ms ", what, " (CHORUS_TIMEOUT_MS)"));
        });
  }

  // Both sides arrive `round` times in lock step.
  void barrier(int side, std::uint64_t round) {
    arrived.fetch_add(1, std::memory_order_acq_rel);
    wait(side, "for the other thread at a barrier", [&] { return arrived.load(std::memory_order_acquire) >= 2 * round; });
  }
};

inline void check_delivery(const unsigned char* source, const unsigned char* landing, std::size_t bytes, int from,
                           int to) {
  if (bytes > 0 && std::memcmp(source, landing, bytes) != 0) {
    throw chorus::Error(chorus::ErrorCode::internal,
                        chorus::detail::concat("the copy from CPU ", from, " to CPU ", to,
                                               " delivered wrong bytes"));
  }
}

}  // namespace detail

// Runs side 0 on CPU a and side 1 on CPU b; each allocates its buffers in place, then body(side, pair).
template <class Body>
void run_raw_pair(int a, int b, const Settings& s, Body&& body) {
  detail::RawPair pair;
  pair.cpu[0] = a;
  pair.cpu[1] = b;
  std::atomic<int> ready{0};
  auto side_main = [&](int side) {
    std::unique_ptr<unsigned char[]> own, landing;
    try {
      pin_current_thread(side == 0 ? a : b);
      own = owned_buffer(s.bytes, side == 0 ? a : b);
      landing = owned_buffer(s.bytes, -1);
      pair.own[side] = own.get();
      pair.landing[side] = landing.get();
      ready.fetch_add(1, std::memory_order_acq_rel);
      pair.wait(side, "for the other thread's buffers", [&] { return ready.load(std::memory_order_acquire) == 2; });
      body(side, pair);
      // Neither frees its buffers while the other may still copy from them.
      pair.finished.fetch_add(1, std::memory_order_acq_rel);
      pair.wait(side, "for the other thread to finish", [&] { return pair.finished.load(std::memory_order_acquire) == 2; });
    } catch (...) {
      pair.error[side] = std::current_exception();
      int none = -1;
      pair.first_failure.compare_exchange_strong(none, side);
      pair.failed.store(true, std::memory_order_release);
    }
  };
  std::thread source(side_main, 0);  // both sides on threads of their own: the caller's affinity stays as it was
  std::thread destination(side_main, 1);
  source.join();
  destination.join();
  if (pair.first_failure >= 0) std::rethrow_exception(pair.error[pair.first_failure]);
}

inline PairFigures measure_raw(int a, int b, const Settings& s) {
  PairFigures figures;
  const std::size_t moved = s.bytes * static_cast<std::size_t>(s.iters);
  if (a == b) {  // the diagonal: a local copy on one CPU, between two buffers it owns
    std::vector<double> samples;
    std::thread local([&] {
      pin_current_thread(a);
      auto own = owned_buffer(s.bytes, a);
      auto landing = owned_buffer(s.bytes, -1);
      for (int r = 0; r < s.repeats; ++r) {
        const auto start = Clock::now();
        for (int i = 0; i < s.iters; ++i) std::memcpy(landing.get(), own.get(), s.bytes);
        samples.push_back(gbps(moved, seconds_since(start)));
      }
      detail::check_delivery(own.get(), landing.get(), s.bytes, a, a);
    });
    local.join();
    figures.uni_gbps = chorus::bench::median(samples);
    return figures;
  }
  std::vector<double> uni, bi, latency;
  std::vector<double> side_seconds[2];
  run_raw_pair(a, b, s, [&](int side, detail::RawPair& pair) {
    std::uint64_t round = 0;
    const bool copies_uni = s.write ? side == 0 : side == 1;  // side 0 is the source
    for (int r = 0; r < s.repeats; ++r) {  // unidirectional: a's data into b's landing buffer
      pair.barrier(side, ++round);
      if (copies_uni) {
        const auto start = Clock::now();
        for (int i = 0; i < s.iters; ++i) std::memcpy(pair.landing[1], pair.own[0], s.bytes);
        uni.push_back(gbps(moved, seconds_since(start)));
      }
    }
    pair.barrier(side, ++round);
    if (side == 1) detail::check_delivery(pair.own[0], pair.landing[1], s.bytes, a, b);
    // Bidirectional: each side moves one direction at once. In read mode side 1 pulls 0 -> 1 and
    // side 0 pulls 1 -> 0; in write mode each pushes its own data.
    const int from = s.write ? side : 1 - side;
    const int to = 1 - from;
    for (int r = 0; r < s.repeats; ++r) {
      pair.barrier(side, ++round);
      const auto start = Clock::now();
      for (int i = 0; i < s.iters; ++i) std::memcpy(pair.landing[to], pair.own[from], s.bytes);
      side_seconds[side].push_back(seconds_since(start));
    }
    pair.barrier(side, ++round);
    detail::check_delivery(pair.own[from], pair.landing[to], s.bytes, from == 0 ? a : b, to == 0 ? a : b);
    // Latency: side 0 raises `ping` to k, side 1 answers with `pong` = k.
    std::uint64_t k = 0;
    for (int r = 0; r < s.repeats; ++r) {
      pair.barrier(side, ++round);
      const auto start = Clock::now();
      for (int i = 0; i < s.latency_iters; ++i) {
        ++k;
        if (side == 0) {
          pair.ping.store(k, std::memory_order_release);
          pair.wait(side, "for pong", [&] { return pair.pong.load(std::memory_order_acquire) == k; });
        } else {
          pair.wait(side, "for ping", [&] { return pair.ping.load(std::memory_order_acquire) == k; });
          pair.pong.store(k, std::memory_order_release);
        }
      }
      if (side == 0) latency.push_back(seconds_since(start) / s.latency_iters / 2 * 1e6);
    }
  });
  for (int r = 0; r < s.repeats; ++r) {
    bi.push_back(gbps(2 * moved, std::max(side_seconds[0][r], side_seconds[1][r])));
  }
  figures.uni_gbps = chorus::bench::median(uni);
  figures.bi_gbps = chorus::bench::median(bi);
  figures.latency_us = chorus::bench::median(latency);
  return figures;
}

// The same figures through chorus: Comm::recv copies out of the sender's buffer on the receiver's
// thread (read mode). Bidirectional needs two senders at once, and sends are synchronous, so that
// team has four ranks: 0 (CPU a) sends to 3 (CPU b) while 2 (CPU b) sends to 1 (CPU a); a sender
// waits in chorus's bounded wait, which yields its CPU to the receiver beside it. The diagonal
// (a rank sending to itself) is not measured.
inline PairFigures measure_chorus(int a, int b, const Settings& s) {
  PairFigures figures;
  if (a == b) return figures;
  const std::size_t moved = s.bytes * static_cast<std::size_t>(s.iters);
  std::vector<double> uni, latency, receiver_seconds[4];
  chorus::host::Team pair(2);
  pair.run([&](chorus::host::Comm& comm) {
    const int rank = comm.rank();
    pin_current_thread(rank == 0 ? a : b);
    auto own = owned_buffer(s.bytes, rank == 0 ? a : b);
    auto landing = owned_buffer(s.bytes, -1);
    for (int r = 0; r < s.repeats; ++r) {
      comm.barrier();
      if (rank == 0) {
        for (int i = 0; i < s.iters; ++i) comm.send(own.get(), s.bytes, 1);
      } else {
        const auto start = Clock::now();
        for (int i = 0; i < s.iters; ++i) comm.recv(landing.get(), s.bytes, 0);
        uni.push_back(gbps(moved, seconds_since(start)));
      }
    }
    if (rank == 1) detail::check_delivery(owned_buffer(s.bytes, a).get(), landing.get(), s.bytes, a, b);
    unsigned char token = 0;
    for (int r = 0; r < s.repeats; ++r) {
      comm.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < s.latency_iters; ++i) {
        if (rank == 0) {
          comm.send(&token, 1, 1);
          comm.recv(&token, 1, 1);
        } else {
          comm.recv(&token, 1, 0);
          comm.send(&token, 1, 0);
        }
      }
      if (rank == 0) latency.push_back(seconds_since(start) / s.latency_iters / 2 * 1e6);
    }
  });
  chorus::host::Team both_ways(4);
  both_ways.run([&](chorus::host::Comm& comm) {
    const int rank = comm.rank();
    const int cpu = rank < 2 ? a : b;
    pin_current_thread(cpu);
    const bool sender = rank % 2 == 0;
    const int peer = 3 - rank;  // 0 <-> 3, 1 <-> 2
    auto own = owned_buffer(s.bytes, cpu);
    auto landing = owned_buffer(s.bytes, -1);
    for (int r = 0; r < s.repeats; ++r) {
      comm.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < s.iters; ++i) {
        if (sender) {
          comm.send(own.get(), s.bytes, peer);
        } else {
          comm.recv(landing.get(), s.bytes, peer);
        }
      }
      receiver_seconds[rank].push_back(seconds_since(start));
    }
    const int source_cpu = rank < 2 ? b : a;
    if (!sender) detail::check_delivery(owned_buffer(s.bytes, source_cpu).get(), landing.get(), s.bytes, source_cpu, cpu);
  });
  std::vector<double> bi;
  for (int r = 0; r < s.repeats; ++r) bi.push_back(gbps(2 * moved, std::max(receiver_seconds[1][r], receiver_seconds[3][r])));
  figures.uni_gbps = chorus::bench::median(uni);
  figures.bi_gbps = chorus::bench::median(bi);
  figures.latency_us = chorus::bench::median(latency);
  return figures;
}

}  // namespace p2p
