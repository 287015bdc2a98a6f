// The protocol state machines on the CPU twin: counters across the 32-bit wrap, FIFO slots reused
// thousands of times, LL lines never read torn, a rank that skips a call (every wait bounded, the record
// names who waited for whom), and bad arguments.
#include <catch2/catch.hpp>

#include "twin_checks.hpp"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace test_twin_protocols {

using namespace twin_checks;
using chorus::ErrorCode;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;

namespace {

Options options_with(int blocks, std::size_t slot, int depth) {
  Options options;
  options.blocks = blocks;
  options.threads = 2;
  options.staging_bytes = 4096;
  options.ll_bytes = 1024;
  options.fifo_slot_bytes = slot;
  options.fifo_depth = depth;
  return options;
}

std::vector<int> order_of(int n) {
  std::vector<int> order;
  for (int r = 0; r < n; ++r) order.push_back(r);
  return order;
}


}  // namespace

TEST_CASE("counters that wrap around 2^32 mid-call keep every protocol correct") {
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    Team team(4, options_with(2, 32, 2));
    team.advance_counters_to(0xfffffffcu);  // a few steps short of the wrap
    // The counters really are there (g++ 12 at -O2 once dropped the whole fill, and every wrap test
    // then passed far from the wrap).
    REQUIRE(team.counters(3, 1).barrier_epoch == 0xfffffffcu);
    REQUIRE(team.counters(0, 0).ll_epoch == 0xfffffffcu);
    REQUIRE(team.counters(2, 0).fifo_received == 0xfffffffcu);
    REQUIRE(team.tree_counters(1, 1).sent[1][2] == 0xfffffffcu);
    REQUIRE(team.p2p_counters(3, 1).received[3] == 0xfffffffcu);
    for (int call = 0; call < 3; ++call) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < 4; ++r) inputs.push_back(order_sensitive<float>(r, 600, static_cast<std::uint32_t>(call)));
      const Outputs got = run_both(team, order_of(4), inputs, ReduceOp::sum, algorithm, call == 1);
      for (int r = 0; r < 4; ++r) {
        INFO(to_string(algorithm) << " call " << call << " rank " << r);
        REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
      }
    }
    // The counters of the algorithm's protocol did cross the wrap.
    const auto& counters = team.counters(0, 0);
    switch (algorithm) {
      case KernelAlgorithm::one_shot:
      case KernelAlgorithm::two_shot: CHECK(counters.barrier_epoch < 0x1000u); break;
      case KernelAlgorithm::ll_one_shot: CHECK(counters.ll_epoch < 0x1000u); break;
      case KernelAlgorithm::ring: CHECK(counters.fifo_sent < 0x1000u); break;
      case KernelAlgorithm::tree: CHECK(team.tree_counters(0, 0).sent[0][0] < 0x1000u); break;  // rank 0: tree 0's root
      case KernelAlgorithm::pairwise: break;  // all_to_all only: test_twin_p2p checks its counters
    }
  }
}

TEST_CASE("a FIFO of 16-byte slots is reused for every step and stays correct") {
  for (int depth : {2, 4, 8}) {
    Team team(5, options_with(2, 16, depth));
    std::vector<std::vector<std::int64_t>> inputs;
    for (int r = 0; r < 5; ++r) inputs.push_back(harness::inputs<std::int64_t>(ReduceOp::sum, r, 1500));
    const Outputs got = run_both(team, order_of(5), inputs, ReduceOp::sum, KernelAlgorithm::ring, false);
    for (int r = 0; r < 5; ++r) {
      INFO("depth " << depth << " rank " << r);
      REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
    }
    // 1500 int64 in 16-byte slots: hundreds of steps through each of depth slots.
    CHECK(team.counters(0, 0).fifo_sent > 300u);
  }
}

TEST_CASE("an LL reader never sees a flag with another call's data") {
  // One writer publishes lines whose data is a function of the flag; the reader waits for each flag and
  // checks the data that came with it. An 8-byte word is one store, so the two can never disagree.
  chorus::cuda::twin::LaneGroup group(1);
  const std::uint32_t not_aborted = 0;
  const chorus::cuda::twin::HostBlock block(0, 1, 0, group, std::chrono::steady_clock::now() + std::chrono::seconds(60), &not_aborted);
  std::uint64_t line = 0;
  constexpr std::uint32_t kCalls = 20000;
  std::atomic<std::uint32_t> read_up_to{0};
  std::thread writer([&] {
    std::uint32_t flag = 0;
    for (std::uint32_t call = 0; call < kCalls; ++call) {
      flag = chorus::cuda::kernel::next_ll_flag(flag);
      while (read_up_to.load(std::memory_order_acquire) < call) std::this_thread::yield();  // one slot, reused
      block.store_line(&line, chorus::cuda::kernel::ll_line(flag * 2654435761u, flag));
    }
  });
  std::uint32_t flag = 0, torn = 0, waited = 0;
  for (std::uint32_t call = 0; call < kCalls; ++call) {
    flag = chorus::cuda::kernel::next_ll_flag(flag);
    std::uint64_t seen = block.load_line(&line);
    while (chorus::cuda::kernel::ll_flag(seen) != flag) {
      ++waited;
      std::this_thread::yield();
      seen = block.load_line(&line);
    }
    if (chorus::cuda::kernel::ll_data(seen) != flag * 2654435761u) ++torn;
    read_up_to.store(call + 1, std::memory_order_release);
  }
  writer.join();
  CHECK(torn == 0);
  CHECK(waited > 0);  // the reader really did race the writer
}

TEST_CASE("a rank that skips a call: the others time out with a record, nobody hangs") {
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    std::vector<std::vector<float>> in(4, std::vector<float>(256, 1.0f)), out(4, std::vector<float>(256));
    std::vector<const float*> in_ptr;
    std::vector<float*> out_ptr;
    for (int r = 0; r < 4; ++r) {
      in_ptr.push_back(in[static_cast<std::size_t>(r)].data());
      out_ptr.push_back(out[static_cast<std::size_t>(r)].data());
    }
    std::string message;
    ErrorCode code = ErrorCode::internal;
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Team> team;
    with_timeout_ms("300", [&] {
      team = std::make_unique<Team>(4, options_with(1, 64, 2));
      team->all_reduce_with<float>(in_ptr, out_ptr, 256, ReduceOp::sum, algorithm, {}, {true, true, false, true});
      try {
        team->synchronize();  // the call only enqueued the launch: its timeout shows here
      } catch (const chorus::Error& e) {
        message = e.what();
        code = e.code();
      }
    });
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(to_string(algorithm) << ": " << message);
    CHECK(code == ErrorCode::timeout);
    CHECK(message.find("waited 300 ms for rank") != std::string::npos);
    CHECK(message.find(to_string(algorithm)) != std::string::npos);
    CHECK(took < std::chrono::seconds(30));
    // Everyone waits on the absent rank 2 (LL and barriers directly; the ring through its neighbours).
    if (algorithm != KernelAlgorithm::ring) CHECK(message.find("for rank 2") != std::string::npos);
    // A team whose call timed out refuses further calls instead of running on inconsistent counters.
    try {
      team->all_reduce_with<float>(in_ptr, out_ptr, 256, ReduceOp::sum, algorithm);
      FAIL("a broken team ran a call");
    } catch (const chorus::Error& e) {
      CHECK(e.code() == ErrorCode::peer_failed);
    }
  }
}

// A line that last carried flag 2 some 2^32 rounds ago, never overwritten since (the calls in between
// were smaller): planted in every line of every rank's LL buffer, with data no rank sends.
void plant_stale_lines(Team& team, std::uint32_t flag) {
  for (int r = 0; r < team.size(); ++r) {
    auto* lines = reinterpret_cast<std::uint64_t*>(team.scratch(r) + team.layout().ll_offset());
    for (std::size_t i = 0; i < team.layout().ll_bytes / sizeof(std::uint64_t); ++i) {
      lines[i] = chorus::cuda::kernel::ll_line(0x7f7f7f7fu, flag);
    }
  }
}

TEST_CASE("LL buffers are cleared when the flag wraps, so a stale line with the new flag is never read") {
  const std::uint32_t after_wrap = chorus::cuda::kernel::next_ll_flag(0xffffffffu);
  {
    Team team(4, options_with(1, 64, 2));
    team.advance_counters_to(0xffffffffu);  // the next LL round's flag wraps
    plant_stale_lines(team, after_wrap);
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < 4; ++r) inputs.push_back(order_sensitive<float>(r, 40, 7u));  // 40 lines: 3 rounds
    const Outputs got = run_both(team, order_of(4), inputs, ReduceOp::sum, KernelAlgorithm::ll_one_shot, false);
    for (int r = 0; r < 4; ++r) {
      INFO("rank " << r);
      REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
    }
    CHECK(team.counters(0, 0).ll_epoch == after_wrap + 2);
  }
  {
    // A rank that skips the wrapping call: the stale lines would let the others finish with its "data";
    // they must time out instead.
    std::vector<std::vector<float>> in(4, std::vector<float>(8, 1.0f)), out(4, std::vector<float>(8));
    std::vector<const float*> in_ptr;
    std::vector<float*> out_ptr;
    for (int r = 0; r < 4; ++r) {
      in_ptr.push_back(in[static_cast<std::size_t>(r)].data());
      out_ptr.push_back(out[static_cast<std::size_t>(r)].data());
    }
    ErrorCode code = ErrorCode::internal;
    with_timeout_ms("300", [&] {
      Team team(4, options_with(1, 64, 2));
      team.advance_counters_to(0xffffffffu);
      plant_stale_lines(team, after_wrap);
      team.all_reduce_with<float>(in_ptr, out_ptr, 8, ReduceOp::sum, KernelAlgorithm::ll_one_shot, {}, {true, true, true, false});
      try {
        team.synchronize();
      } catch (const chorus::Error& e) {
        code = e.code();
      }
    });
    CHECK(code == ErrorCode::timeout);
  }
}

TEST_CASE("bad arguments are refused with the call, the rank and the value") {
  const auto refused = [](auto&& fn, const std::string& text) {
    try {
      fn();
    } catch (const chorus::Error& e) {
      INFO(e.what());
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
      return;
    }
    FAIL("no error for " << text);
  };
  refused([] { Team(0); }, "ranks must be 1..8, got 0");
  refused([] { Team(9); }, "ranks must be 1..8, got 9");
  refused([] { Options o; o.blocks = 33; Team(2, o); }, "threads must be 1..64 and blocks 1..32, got 4 and 33");
  refused([] { Options o; o.threads = 0; Team(2, o); }, "threads must be 1..64 and blocks 1..32, got 0 and 2");
  refused([] { Options o; o.fifo_depth = 1; Team(2, o); }, "a power-of-two number of slots, at least 2, of 16 bytes or more, got 1 of");
  refused([] { Options o; o.fifo_depth = 3; Team(2, o); }, "a power-of-two number of slots, at least 2, of 16 bytes or more, got 3 of");
  refused([] { Options o; o.staging_bytes = 256; Team(8, o); }, "staging_bytes 256 or ll_bytes 16384 too small for 8 ranks");
  refused([] { Options o; o.ll_bytes = 64; Team(8, o); }, "or ll_bytes 64 too small");
  refused([] { Options o; o.ring_orders = {{0, 0, 1}}; Team(3, o); }, "ring_orders[0] must be a permutation of 0..2: entry 1 is 0 (repeated)");
  Team team(2);
  std::vector<float> a(4), b(4);
  refused([&] { team.all_reduce<float>({a.data()}, {b.data()}, 4, ReduceOp::sum, Algorithm::ring); },
          "one input and one output per rank (2), got 1 and 1");
  refused([&] { team.all_reduce<float>({a.data(), nullptr}, {b.data(), b.data()}, 4, ReduceOp::sum, Algorithm::ring); },
          "on rank 1: null buffer with count 4");
  refused([&] { team.all_reduce<float>({a.data(), a.data()}, {b.data(), b.data()}, SIZE_MAX / 2, ReduceOp::sum, Algorithm::ring); },
          "overflows the byte size");
}

}  // namespace test_twin_protocols
