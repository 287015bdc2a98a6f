// Helpers for the mpi suite: every check runs in each process (one rank each) and the outcome is
// made collective with MPI on MPI_COMM_WORLD directly, never through the communicator under test.
#pragma once

#include <chorus/core/error.hpp>
#include <chorus/mpi/mpi_header.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace mpi_harness {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// What one rank's attempt ended with.
struct Outcome {
  bool threw = false;
  chorus::ErrorCode code = chorus::ErrorCode::internal;
  std::string message;
};

template <class Fn>
Outcome attempt(Fn&& fn) {
  Outcome outcome;
  try {
    fn();
  } catch (const chorus::Error& e) {
    outcome.threw = true;
    outcome.code = e.code();
    outcome.message = e.what();
  }
  return outcome;
}

// Every rank's failure strings, joined on every rank (so every process asserts the same thing).
inline std::vector<std::string> gather_strings(const std::vector<std::string>& mine) {
  std::string joined;
  for (const std::string& s : mine) joined += s + "\n";
  int length = static_cast<int>(joined.size());
  std::vector<int> lengths(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(joined.data(), length, MPI_CHAR, &all[0], lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\n') {
      lines.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return lines;
}

// Lines up the processes at the end of a test case, however it ends (a failed REQUIRE included), so
// one test's stragglers never meet the next test's calls.
struct Settle {
  Settle() = default;
  Settle(const Settle&) = delete;
  Settle& operator=(const Settle&) = delete;
  ~Settle() { MPI_Barrier(MPI_COMM_WORLD); }
};

}  // namespace mpi_harness
