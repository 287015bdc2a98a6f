// The multi-process CUDA communicator's bootstrap and per-rank launch, on the CPU twin: 1-5 ranks, one host
// thread each (host::Team), each with its own memory, finding its peers' through records exchanged over the
// host communicator (cuda/ipc_bootstrap.hpp), then each running ONLY ITS OWN blocks of the kernel bodies.
// Every rank's result must equal, bit for bit, the host backend's run of the schedule the kernel implements
// (made by the same rank thread on the same host communicator), for every all_reduce kernel and the other
// collectives, over repeated calls. Then the refusals: every rank gets the chorus::Error, nobody hangs, and
// every opened handle is closed again.
#include <catch2/catch.hpp>

#include <iterator>

#include <chorus/cuda/twin/ipc_twin.hpp>

#include "collective_checks.hpp"

#include <atomic>
#include <string>
#include <thread>

namespace test_twin_ipc {

using namespace collective_checks;
using chorus::Error;
using chorus::ErrorCode;
using chorus::cuda::IpcHandle;
using chorus::cuda::IpcRecord;
using chorus::cuda::IpcStage;
using chorus::cuda::make_ipc_record;
using chorus::cuda::validate_records;
using chorus::cuda::twin::IpcOptions;
using chorus::cuda::twin::IpcRank;
using chorus::cuda::twin::IpcRegistry;
using chorus::cuda::twin::RegistryOpener;

namespace {

constexpr auto kHangLimit = std::chrono::seconds(240);

// Small buffers so the larger counts take several staging rounds and many FIFO slot reuses. Rank r's GPU
// "keeps" 3 - r % 2 blocks resident: the ranks must agree on the minimum.
IpcOptions small_options(int rank) {
  IpcOptions options;
  options.blocks = 3 - rank % 2;
  options.lanes = 2;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  return options;
}

// What each rank saw: its outputs from the IPC twin and from the host backend, or the error it got.
struct RankOutcome {
  std::vector<std::vector<unsigned char>> twin;
  std::vector<std::vector<unsigned char>> host;
  int blocks = 0;
  bool failed = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

template <class Fn>
std::vector<RankOutcome> run_ranks(int n, Fn&& body) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(n));
  chorus::host::Team team(n);
  harness::run(team, [&](chorus::host::Comm& host) {
    RankOutcome& mine = outcomes[static_cast<std::size_t>(host.rank())];
    try {
      body(host, mine);
    } catch (const Error& e) {
      mine.failed = true;
      mine.code = e.code();
      mine.message = e.what();
    }
  }, kHangLimit);
  return outcomes;
}

template <class T>
std::vector<unsigned char> bytes_of_span(const T* data, std::size_t count) {
  return bytes_of(std::vector<T>(data, data + count));
}

void require_all_failed(const std::vector<RankOutcome>& outcomes, const std::string& needle) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    REQUIRE(outcomes[r].failed);
    REQUIRE(outcomes[r].message.find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("IPC twin: every all_reduce kernel, each rank launching only its own blocks, equals the host schedule bit for bit") {
  const std::size_t counts[] = {0, 1, 7, 1000, 3001};
  for (int n = 1; n <= 5; ++n) {
    IpcRegistry registry;
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
      mine.blocks = rank.blocks();
      for (int repeat = 0; repeat < 2; ++repeat) {
        for (KernelAlgorithm algorithm : kKernelAlgorithms) {
          for (std::size_t count : counts) {
            const auto input = order_sensitive<float>(host.rank(), count, static_cast<std::uint32_t>(count) + 1u);
            std::vector<float> out(count, harness::sentinel<float>()), expected(count);
            rank.all_reduce(input.data(), out.data(), count, ReduceOp::sum, algorithm);
            host.all_reduce(input.data(), expected.data(), count, ReduceOp::sum, schedule_of(algorithm));
            mine.twin.push_back(bytes_of(out));
            mine.host.push_back(bytes_of(expected));
          }
        }
      }
      host.barrier();  // no peer still reads this rank's memory when it is freed
    });
    for (int r = 0; r < n; ++r) {
      const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << " rank " << r << ": " << got.message);
      REQUIRE_FALSE(got.failed);
      REQUIRE(got.blocks == (n == 1 ? 3 : 2));
      constexpr std::size_t kinds = std::size(kKernelAlgorithms);
      REQUIRE(got.twin.size() == 2 * kinds * 5);
      for (std::size_t i = 0; i < got.twin.size(); ++i) {
        INFO("call " << i << " (repeat " << i / (kinds * 5) << ", " << to_string(kKernelAlgorithms[(i / 5) % kinds]) << ", count "
                     << counts[i % 5] << ")");
        REQUIRE(first_difference(got.twin[i], got.host[i]) == -1);
        REQUIRE(got.twin[i] == outcomes[0].twin[i]);  // every rank holds the same bits
      }
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC twin: the other collectives, in place and not, each rank its own blocks, equal the host schedules") {
  const std::size_t counts[] = {1, 13, 700};
  for (int n = 1; n <= 5; ++n) {
    IpcRegistry registry;
    std::vector<Call> calls;
    for (const Pair& pair : kPairs) {
      for (std::size_t count : counts) {
        calls.push_back(Call{pair.collective, pair.algorithm, count, ReduceOp::sum, n - 1, false});
        calls.push_back(Call{pair.collective, pair.algorithm, count, ReduceOp::max, 0, true});
      }
    }
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      const int r = host.rank();
      auto rank = IpcRank<>::create(host, registry, small_options(r));
      for (const Call& c : calls) {
        const std::size_t sends = chorus::send_count(c.collective, c.count, n);
        const std::size_t recvs = chorus::recv_count(c.collective, c.count, n);
        const auto input = order_sensitive<float>(r, sends, static_cast<std::uint32_t>(c.count));
        const chorus::InPlaceBuffer place = chorus::in_place_buffer(c.collective, r, n, c.count);
        std::vector<float> buffer(c.in_place ? place.buffer_count : sends, harness::sentinel<float>());
        std::copy(input.begin(), input.end(), buffer.begin() + static_cast<std::ptrdiff_t>(c.in_place ? place.send_offset : 0));
        std::vector<float> separate(recvs, harness::sentinel<float>()), expected(recvs);
        const float* send = buffer.data() + (c.in_place ? place.send_offset : 0);
        float* recv = c.in_place ? buffer.data() + place.recv_offset : separate.data();
        rank.collective<float>(c.collective, send, recv, c.count, c.op, c.root, c.algorithm);
        host_call<float>(host, c, input.data(), expected.data());
        const bool skip = chorus::traits(c.collective).recv_on_root_only && r != c.root;
        mine.twin.push_back(skip ? std::vector<unsigned char>{} : bytes_of_span(recv, recvs));
        mine.host.push_back(skip ? std::vector<unsigned char>{} : bytes_of(expected));
        // reduce leaves a non-root's separate output alone
        if (skip && !c.in_place && separate != std::vector<float>(recvs, harness::sentinel<float>())) mine.message = "non-root written";
      }
      host.barrier();
    });
    for (int r = 0; r < n; ++r) {
      const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << " rank " << r << ": " << got.message);
      REQUIRE_FALSE(got.failed);
      REQUIRE(got.message.empty());
      REQUIRE(got.twin.size() == calls.size());
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& c = calls[i];
        INFO(chorus::to_string(c.collective) << " " << to_string(c.algorithm) << " count " << c.count << " root " << c.root
                                             << " in place " << c.in_place);
        REQUIRE(first_difference(got.twin[i], got.host[i]) == -1);
      }
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC records: validate_records names the call, the rank and the bad value") {
  const char* call = "cuda::IpcComm::create";
  const auto records = [](int n) {
    std::vector<IpcRecord> all;
    for (int r = 0; r < n; ++r) {
      IpcRecord record = make_ipc_record(IpcStage::memory, r, n, ("0000:0" + std::to_string(r) + ":00.0").c_str(), 2);
      record.layout = chorus::cuda::kernel::make_layout(4096, 2048, 64, 2, 2);
      all.push_back(record);
    }
    return all;
  };
  const auto message = [&](const std::vector<IpcRecord>& all) -> std::string {
    try {
      validate_records(all, call);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  REQUIRE(message(records(4)).empty());
  auto bad = records(4);
  bad[2].magic = 7;
  CHECK(message(bad).find("on rank 2: its record has magic 7") != std::string::npos);
  bad = records(4);
  bad[1].version = 2;
  CHECK(message(bad).find("chorus::cuda::IpcComm::create on rank 1: record version 2, expected 1") != std::string::npos);
  bad = records(4);
  bad[3].rank = 1;
  CHECK(message(bad).find("on rank 3: the record at position 3 says rank 1") != std::string::npos);
  bad = records(4);
  bad[2].nranks = 5;
  CHECK(message(bad).find("on rank 2: nranks 5, but 4 ranks") != std::string::npos);
  bad = records(3);
  bad[2].layout.fifo_depth = 3;
  CHECK(message(bad).find("on rank 2: scratch layout") != std::string::npos);
  bad = records(3);
  bad[1].layout.staging_bytes += 256;
  CHECK(message(bad).find("on rank 1: scratch layout") != std::string::npos);
  bad = records(3);
  bad[1].blocks = 1;
  CHECK(message(bad).find("on rank 1: blocks 1, rank 0 2") != std::string::npos);
  bad = records(3);
  bad[0].blocks = 0;
  CHECK(message(bad).find("on rank 0: blocks 0 not in 1..") != std::string::npos);
  bad = records(4);
  std::strcpy(bad[3].bus_id, "0000:01:00.0");
  CHECK(message(bad).find("on rank 3: GPU 0000:01:00.0 is also rank 1's") != std::string::npos);
  CHECK(message(bad).find("virtual_ranks") != std::string::npos);
  bad = records(3);
  bad[1].stage = IpcStage::hello;
  CHECK(message(bad).find("on rank 1: is at bootstrap stage 1, rank 0 at 2") != std::string::npos);
  bad = records(3);
  bad[2].failed = 1;
  CHECK(message(bad).find("on rank 2: failed before this exchange") != std::string::npos);
  CHECK(message(records(9)).find("ranks must be 1..8, got 9") != std::string::npos);
  CHECK(message({}).find("ranks must be 1..8, got 0") != std::string::npos);
  // A bus id that fills its field without a terminator is still compared, not read past.
  bad = records(2);
  std::memset(bad[0].bus_id, 'x', sizeof(bad[0].bus_id));
  std::memset(bad[1].bus_id, 'x', sizeof(bad[1].bus_id));
  CHECK(message(bad).find("on rank 1: GPU xxxx") != std::string::npos);

  // Blocks: the minimum of the hello records.
  std::vector<IpcRecord> hello;
  const int limits[] = {5, 3, 4};
  for (int r = 0; r < 3; ++r) hello.push_back(make_ipc_record(IpcStage::hello, r, 3, ("bus" + std::to_string(r)).c_str(), limits[r]));
  REQUIRE(message(hello).empty());
  REQUIRE(chorus::cuda::agreed_blocks(hello) == 3);
}

TEST_CASE("IPC twin: a record one rank got wrong refuses the bootstrap on every rank, nobody hangs, nothing stays open") {
  SECTION("a wrong version on one rank (hello exchange)") {
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcRecord hello = make_ipc_record(IpcStage::hello, host.rank(), host.size(), ("bus" + std::to_string(host.rank())).c_str(), 2);
      if (host.rank() == 1) hello.version = 2;
      chorus::cuda::ipc_agree_blocks(host, hello, "cuda::IpcComm::create");
    });
    require_all_failed(outcomes, "chorus::cuda::IpcComm::create on rank 1: record version 2, expected 1");
  }
  SECTION("a wrong version on one rank (memory exchange)") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(4, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcRecord mine = make_ipc_record(IpcStage::memory, host.rank(), host.size(), ("bus" + std::to_string(host.rank())).c_str(), 2);
      if (host.rank() == 3) mine.version = 9;
      chorus::cuda::kernel::Signals signals{};
      chorus::cuda::IpcLocalMemory local{nullptr, &signals, nullptr, nullptr, 0, 0};
      chorus::cuda::IpcPeerMemory<RegistryOpener> peers(host, mine, local, RegistryOpener{&registry}, "cuda::IpcComm::create");
    });
    require_all_failed(outcomes, "on rank 3: record version 9, expected 1");
    REQUIRE(registry.open_count() == 0);
  }
  SECTION("two ranks on one GPU") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(4, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 0 || host.rank() == 2) options.bus_id = "0000:3b:00.0";
      IpcRank<>::create(host, registry, options);
    });
    require_all_failed(outcomes, "on rank 2: GPU 0000:3b:00.0 is also rank 0's; one GPU per rank (for several ranks on one GPU use "
                                 "cuda::Team::virtual_ranks)");
    REQUIRE(registry.open_count() == 0);
  }
  SECTION("a layout that differs on one rank") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 2) options.fifo_slot_bytes = 128;
      IpcRank<>::create(host, registry, options);
    });
    require_all_failed(outcomes, "on rank 2: scratch layout of");
    REQUIRE(registry.open_count() == 0);
  }
  SECTION("bad options on one rank: that rank's own error, its peers released") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 1) options.lanes = 0;
      IpcRank<>::create(host, registry, options);
    });
    REQUIRE(outcomes[1].message.find("IpcRank::create on rank 1: lanes must be 1..64, got 0") != std::string::npos);
    for (int r : {0, 2}) {
      INFO(outcomes[static_cast<std::size_t>(r)].message);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].code == ErrorCode::peer_failed);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].message.find("on rank 1: failed before this exchange") != std::string::npos);
    }
    REQUIRE(registry.open_count() == 0);
  }
}

// An opener that fails on one rank after it has opened some of its peers' memory.
struct FailingOpener {
  IpcRegistry* registry;
  int failing_rank;
  int rank;
  int opened = 0;
  void* open(const IpcHandle& handle, int peer) {
    if (rank == failing_rank && ++opened == 3) {
      throw chorus::make_error(ErrorCode::internal, "test::FailingOpener", peer, "injected: cudaIpcOpenMemHandle failed");
    }
    return registry->open(handle, peer);
  }
  void close(void* pointer) const noexcept { registry->close(pointer); }
};

TEST_CASE("IPC twin: a rank that fails to open a peer's memory releases every rank, and every open is closed") {
  for (int n : {3, 5}) {
    IpcRegistry registry;
    const int failing = n - 1;
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcRank<FailingOpener>::create(host, registry, small_options(host.rank()), FailingOpener{&registry, failing, host.rank()});
    });
    for (int r = 0; r < n; ++r) {
      const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << " rank " << r << ": " << got.message);
      REQUIRE(got.failed);
      if (r == failing) {
        REQUIRE(got.message.find("injected: cudaIpcOpenMemHandle failed") != std::string::npos);
      } else {
        REQUIRE(got.code == ErrorCode::peer_failed);
        REQUIRE(got.message.find("rank " + std::to_string(failing) + " failed to check or open the peers' memory") != std::string::npos);
      }
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC twin: a rank that skips a call leaves its peers a timeout error, not a hang") {
  harness::ScopedEnv short_timeout("CHORUS_TIMEOUT_MS", "300");
  IpcRegistry registry;
  const int n = 3;
  std::atomic<int> finished{0};
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
    std::vector<float> in(100, 1.0f), out(100);
    rank.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::one_shot);
    mine.twin.push_back(bytes_of(out));
    if (host.rank() != 1) {
      try {
        rank.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::ring);
      } catch (const Error& e) {
        mine.message = e.what();
        mine.code = e.code();
      }
      try {  // a timed-out rank refuses further calls
        rank.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::ring);
      } catch (const Error& e) {
        mine.host.push_back(bytes_of(std::vector<char>(e.what(), e.what() + std::strlen(e.what()))));
      }
      finished.fetch_add(1);
    } else {
      // Not host.barrier(): its wait is bounded by the same short timeout. Rank 1's memory must outlive
      // its peers' timed-out calls, which still write into it.
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (finished.load() < n - 1 && std::chrono::steady_clock::now() < limit) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  });
  for (int r : {0, 2}) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE(got.code == ErrorCode::timeout);
    REQUIRE(got.message.find("IpcRank::all_reduce on rank " + std::to_string(r) + ": ring block") != std::string::npos);
    REQUIRE(got.host.size() == 1);
    const std::string refused(got.host[0].begin(), got.host[0].end());
    REQUIRE(refused.find("an earlier call timed out") != std::string::npos);
  }
  for (int r = 0; r < n; ++r) REQUIRE(outcomes[static_cast<std::size_t>(r)].twin[0] == bytes_of(std::vector<float>(100, 3.0f)));
  REQUIRE(registry.open_count() == 0);
}

TEST_CASE("IPC twin: a rank refuses bad buffers before launching, naming the call, the rank and the value") {
  IpcRegistry registry;
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
    std::vector<float> buffer(8);
    const auto refusal = [&](auto&& call) {
      try {
        call();
      } catch (const Error& e) {
        mine.host.push_back(bytes_of(std::vector<char>(e.what(), e.what() + std::strlen(e.what()))));
      }
    };
    refusal([&] { rank.all_reduce<float>(nullptr, buffer.data(), 8, ReduceOp::sum, KernelAlgorithm::ring); });
    refusal([&] { rank.collective<float>(Collective::broadcast, buffer.data(), buffer.data(), 8, ReduceOp::sum, 2, KernelAlgorithm::one_shot); });
    refusal([&] { rank.collective<float>(Collective::all_to_all, buffer.data(), buffer.data(), 4, ReduceOp::sum, 0, KernelAlgorithm::ring); });
    host.barrier();
  });
  for (int r = 0; r < 2; ++r) {
    const auto& got = outcomes[static_cast<std::size_t>(r)].host;
    REQUIRE(got.size() == 3);
    const std::string null_input(got[0].begin(), got[0].end()), root(got[1].begin(), got[1].end()),
        kernel(got[2].begin(), got[2].end());
    CHECK(null_input.find("IpcRank::all_reduce on rank " + std::to_string(r) + ": null buffer with count 8 (the input)") !=
          std::string::npos);
    CHECK(root.find("root 2 is not a rank of 2") != std::string::npos);
    CHECK(kernel.find("no ring kernel for all_to_all") != std::string::npos);
  }
}

}  // namespace test_twin_ipc
