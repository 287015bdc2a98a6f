// The multi-process CUDA communicator's bootstrap and per-rank launch, on the CPU twin: 1-5 ranks, one host
// thread each (host::Team), each with its own memory, finding its peers' through records exchanged over the
// host communicator (cuda/ipc_bootstrap.hpp), then each running ONLY ITS OWN blocks of the kernel bodies.
// Every rank's result must equal, bit for bit, the host backend's run of the schedule the kernel implements
// (made by the same rank thread on the same host communicator), for every all_reduce kernel and the other
// collectives, over repeated calls. Then the refusals: every rank gets the chorus::Error, nobody hangs, and
// every opened handle is closed again. Then the rest of the communicator contract, which twin::IpcRank
// shares with cuda::IpcComm (ipc_calls.hpp, ipc_p2p.hpp, ipc_split.hpp): barrier, send/recv alone and in
// group(), split, a send whose recv never comes, a failure in the bootstrap's last step, null communicators.
#include <catch2/catch.hpp>

#include <iterator>

#include <chorus/cuda/twin/ipc_twin.hpp>

#include "collective_checks.hpp"

#include <atomic>
#include <functional>
#include <memory>
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
  void publish(const chorus::cuda::kernel::RankView&) const {}
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
        REQUIRE(got.message.find("rank " + std::to_string(failing) + " failed to check, open or publish the peers' memory") != std::string::npos);
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

// ---- The communicator contract: barrier, send/recv, split, null communicators ----

static_assert(chorus::check_communicator<IpcRank<>>(), "the IPC twin must satisfy the communicator contract");

namespace {

// What one rank thread saw, as text: Catch2 asserts on the main thread only.
std::string failure_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Rank r's message number `message` of `count` floats: every element says who sent it, which and where.
std::vector<float> message_of(int rank, int message, std::size_t count) {
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank * 100000 + message * 10000) + static_cast<float>(i % 5000);
  return data;
}

// small_options hold 2 blocks x 2 slots x 64 bytes per pair: 64 floats fill the FIFO; 1000 and 333 do not fit.
const std::size_t kP2pCounts[] = {0, 1, 7, 64, 333, 1000};

}  // namespace

TEST_CASE("IPC twin: barrier returns on no rank before every rank has reached it") {
  for (int n : {2, 4}) {
    IpcRegistry registry;
    std::atomic<int> arrived{0};
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
      for (int round = 1; round <= 2; ++round) {
        // The last rank arrives late: a barrier that returned early would see fewer arrivals.
        if (host.rank() == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        arrived.fetch_add(1);
        rank.barrier();
        if (arrived.load() < round * n) mine.message = "left barrier " + std::to_string(round) + " before every rank arrived";
        rank.barrier();  // nobody starts the next round's count before every rank checked this one
      }
      host.barrier();
    });
    for (const RankOutcome& got : outcomes) {
      INFO(got.message);
      REQUIRE_FALSE(got.failed);
      REQUIRE(got.message.empty());
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC twin: the contract's collective forms (typed, type-erased, an Algorithm) give the sums") {
  IpcRegistry registry;
  const int n = 3;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
    std::vector<double> in(300, static_cast<double>(host.rank() + 1)), out(300), gathered(3 * 5);
    rank.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum);
    mine.twin.push_back(bytes_of(out));
    rank.all_reduce(static_cast<const void*>(in.data()), out.data(), in.size(), chorus::DataType::float64, ReduceOp::max,
                    chorus::Algorithm::ring);
    mine.twin.push_back(bytes_of(out));
    rank.all_gather(in.data(), gathered.data(), 5);
    mine.twin.push_back(bytes_of(gathered));
    host.barrier();
  });
  std::vector<double> gathered;
  for (int r = 0; r < n; ++r) gathered.insert(gathered.end(), 5, static_cast<double>(r + 1));
  for (const RankOutcome& got : outcomes) {
    INFO(got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.twin[0] == bytes_of(std::vector<double>(300, 6.0)));
    REQUIRE(got.twin[1] == bytes_of(std::vector<double>(300, 3.0)));
    REQUIRE(got.twin[2] == bytes_of(gathered));
  }
}

TEST_CASE("IPC twin: send/recv ring exchange inside group(), every rank sending and receiving at once") {
  for (int n : {2, 3, 5}) {
    IpcRegistry registry;
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      const int r = host.rank();
      auto rank = IpcRank<>::create(host, registry, small_options(r));
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      for (int message = 0; message < 2; ++message) {
        for (std::size_t count : kP2pCounts) {
          const auto out = message_of(r, message, count);
          std::vector<float> in(count, harness::sentinel<float>());
          rank.group([&] {
            rank.send(out.data(), count, next);
            rank.recv(in.data(), count, prev);
          });
          mine.twin.push_back(bytes_of(in));
          mine.host.push_back(bytes_of(message_of(prev, message, count)));
        }
      }
      host.barrier();
    });
    for (int r = 0; r < n; ++r) {
      const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << " rank " << r << ": " << got.message);
      REQUIRE_FALSE(got.failed);
      REQUIRE(got.twin.size() == 2 * std::size(kP2pCounts));
      for (std::size_t i = 0; i < got.twin.size(); ++i) {
        INFO("message " << i / std::size(kP2pCounts) << " count " << kP2pCounts[i % std::size(kP2pCounts)]);
        REQUIRE(first_difference(got.twin[i], got.host[i]) == -1);
      }
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC twin: send/recv pipeline, several messages per pair matched in call order, types may differ") {
  const int n = 4;
  IpcRegistry registry;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    auto rank = IpcRank<>::create(host, registry, small_options(r));
    // Stage r receives from r - 1 and sends to r + 1, one call at a time (no group): each send of a
    // message that does not fit the FIFO waits for its recv, so the stages run as a pipeline.
    for (int message = 0; message < 3; ++message) {
      const std::size_t count = kP2pCounts[(static_cast<std::size_t>(message) * 2 + 1) % std::size(kP2pCounts)];
      if (r > 0) {
        std::vector<float> in(count, harness::sentinel<float>());
        if (message == 1) {  // received as bytes, sent as floats: a pair matches by bytes
          rank.recv(static_cast<void*>(in.data()), count * sizeof(float), chorus::DataType::uint8, r - 1);
        } else {
          rank.recv(in.data(), count, r - 1);
        }
        mine.twin.push_back(bytes_of(in));
        mine.host.push_back(bytes_of(message_of(r - 1, message, count)));
      }
      if (r < n - 1) {
        const auto out = message_of(r, message, count);
        rank.send(out.data(), count, r + 1);
      }
    }
    // Several messages on one pair inside one group: matched in call order at both ends.
    if (r < 2) {
      const int peer = 1 - r;
      std::vector<std::vector<float>> out, in;
      for (int message = 0; message < 3; ++message) {
        out.push_back(message_of(r, 10 + message, kP2pCounts[static_cast<std::size_t>(message) + 2]));
        in.emplace_back(kP2pCounts[static_cast<std::size_t>(message) + 2], harness::sentinel<float>());
      }
      rank.group([&] {
        for (int message = 0; message < 3; ++message) {
          rank.send(out[static_cast<std::size_t>(message)].data(), out[static_cast<std::size_t>(message)].size(), peer);
          rank.recv(in[static_cast<std::size_t>(message)].data(), in[static_cast<std::size_t>(message)].size(), peer);
        }
      });
      for (int message = 0; message < 3; ++message) {
        mine.twin.push_back(bytes_of(in[static_cast<std::size_t>(message)]));
        mine.host.push_back(bytes_of(message_of(peer, 10 + message, kP2pCounts[static_cast<std::size_t>(message) + 2])));
      }
    }
    host.barrier();
  });
  for (int r = 0; r < n; ++r) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.twin.size() == (r > 0 ? 3u : 0u) + (r < 2 ? 3u : 0u));
    for (std::size_t i = 0; i < got.twin.size(); ++i) {
      INFO("message " << i);
      REQUIRE(first_difference(got.twin[i], got.host[i]) == -1);
    }
  }
  REQUIRE(registry.open_count() == 0);
}

TEST_CASE("IPC twin: a send that fits the FIFO completes alone; one whose recv never comes times out naming the wait") {
  harness::ScopedEnv short_timeout("CHORUS_TIMEOUT_MS", "300");
  IpcRegistry registry;
  std::atomic<int> stage{0};
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
    const auto until = [&](int value) {  // not host.barrier(): bounded by the same short timeout
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (stage.load() < value && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    const auto small = message_of(0, 0, 7), large = message_of(0, 1, 1000);
    if (host.rank() == 0) {
      rank.send(small.data(), small.size(), 1);  // fits the FIFO: returns before rank 1 receives
      stage.store(1);
      mine.message = failure_of([&] { rank.send(large.data(), large.size(), 1); });  // never received
      mine.host.push_back(bytes_of(std::vector<char>(mine.message.begin(), mine.message.end())));
      const std::string refused = failure_of([&] { rank.send(small.data(), small.size(), 1); });
      mine.twin.push_back(bytes_of(std::vector<char>(refused.begin(), refused.end())));
      stage.store(2);
    } else {
      until(1);
      std::vector<float> in(7);
      rank.recv(in.data(), in.size(), 0);
      mine.twin.push_back(bytes_of(in));
      until(2);  // this rank's memory must outlive the sender's timed-out call
    }
  });
  const RankOutcome& sender = outcomes[0];
  INFO(sender.message);
  REQUIRE_FALSE(sender.failed);
  REQUIRE(sender.message.find("cuda::twin::IpcRank::send on rank 0: p2p block") != std::string::npos);
  REQUIRE(sender.message.find("waited 300 ms for rank 1 (p2p FIFO: free slot at the receiver") != std::string::npos);
  const std::string refused(sender.twin[0].begin(), sender.twin[0].end());
  REQUIRE(refused.find("an earlier call timed out") != std::string::npos);
  REQUIRE_FALSE(outcomes[1].failed);
  REQUIRE(outcomes[1].twin[0] == bytes_of(message_of(0, 0, 7)));
  REQUIRE(registry.open_count() == 0);
}

TEST_CASE("IPC twin: split into two colours, keys reversing the order, collectives on each; colour -1 gets a null communicator") {
  const int n = 5;
  IpcRegistry registry;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    auto rank = IpcRank<>::create(host, registry, small_options(r));
    const int colour = r == 4 ? -1 : r % 2;  // {0, 2} and {1, 3}; rank 4 stands aside
    auto half = rank.split(colour, -r);        // a larger parent rank comes first
    if (colour < 0) {
      mine.blocks = half.size();
      mine.message = failure_of([&] { half.barrier(); }) + "|" + std::to_string(half.rank());
    } else {
      mine.blocks = half.rank() * 10 + half.size();
      std::vector<std::int32_t> who(2, -1), mine_only{r};
      half.all_gather(mine_only.data(), who.data(), 1);  // parent ranks in the new order
      std::vector<float> sum(1);
      const float one = static_cast<float>(r + 1);
      half.all_reduce(&one, sum.data(), 1, ReduceOp::sum);
      mine.twin.push_back(bytes_of(who));
      mine.twin.push_back(bytes_of(sum));
      half.barrier();
    }
    // The parent still works after the split.
    std::vector<int> in{1}, out{0};
    rank.all_reduce(in.data(), out.data(), 1, ReduceOp::sum);
    mine.host.push_back(bytes_of(out));
    host.barrier();
  });
  for (int r = 0; r < n; ++r) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.host[0] == bytes_of(std::vector<int>{n}));
    if (r == 4) {
      REQUIRE(got.blocks == 0);
      REQUIRE(got.message.find("cuda::twin::IpcRank::barrier: called on a null communicator") != std::string::npos);
      REQUIRE(got.message.find("|-1") != std::string::npos);
      continue;
    }
    const int new_rank = r < 2 ? 1 : 0;  // keys -r: rank 2 before 0, 3 before 1
    REQUIRE(got.blocks == new_rank * 10 + 2);
    const std::vector<std::int32_t> order = r % 2 == 0 ? std::vector<std::int32_t>{2, 0} : std::vector<std::int32_t>{3, 1};
    REQUIRE(got.twin[0] == bytes_of(order));
    REQUIRE(got.twin[1] == bytes_of(std::vector<float>{r % 2 == 0 ? 4.0f : 6.0f}));
  }
  REQUIRE(registry.open_count() == 0);
}

// An opener whose publish step (on a GPU: copying the view to device memory, the bootstrap's last step
// that can fail) fails on one rank, at its `failing_publish`-th publish.
struct FailingPublisher {
  IpcRegistry* registry;
  int failing_rank;
  int rank;
  int failing_publish;
  std::shared_ptr<int> published = std::make_shared<int>(0);
  void* open(const IpcHandle& handle, int peer) { return registry->open(handle, peer); }
  void close(void* pointer) const noexcept { registry->close(pointer); }
  void publish(const chorus::cuda::kernel::RankView&) {
    if (rank == failing_rank && ++*published == failing_publish) {
      throw chorus::make_error(ErrorCode::internal, "test::FailingPublisher", rank, "injected: cudaMemcpy of the view failed");
    }
  }
};

TEST_CASE("IPC twin: a failure in the bootstrap's last step (publishing the view) fails create and split on every rank") {
  SECTION("create") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcRank<FailingPublisher>::create(host, registry, small_options(host.rank()), FailingPublisher{&registry, 1, host.rank(), 1});
    });
    REQUIRE(outcomes[1].message.find("injected: cudaMemcpy of the view failed") != std::string::npos);
    for (int r : {0, 2}) {
      INFO(outcomes[static_cast<std::size_t>(r)].message);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].code == ErrorCode::peer_failed);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].message.find("rank 1 failed to check, open or publish the peers' memory") !=
              std::string::npos);
    }
    REQUIRE(registry.open_count() == 0);
  }
  SECTION("split, a colour -1 rank too") {
    IpcRegistry registry;
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome& mine) {
      auto rank = IpcRank<FailingPublisher>::create(host, registry, small_options(host.rank()),
                                                    FailingPublisher{&registry, 2, host.rank(), 2});
      mine.message = failure_of([&] { rank.split(host.rank() == 1 ? -1 : 0, 0); });
      mine.blocks = rank.size();  // the parent survives a failed split
      rank.barrier();
      host.barrier();
    });
    REQUIRE(outcomes[2].message.find("injected: cudaMemcpy of the view failed") != std::string::npos);
    REQUIRE(outcomes[0].message.find("cuda::twin::IpcRank::split on rank 0: parent rank 2 failed to check, open or publish") !=
            std::string::npos);
    REQUIRE(outcomes[1].message.find("cuda::twin::IpcRank::split on rank 1: parent rank 2 failed to split") != std::string::npos);
    for (const RankOutcome& got : outcomes) {
      INFO(got.message);
      REQUIRE_FALSE(got.failed);
      REQUIRE(got.blocks == 3);
    }
    REQUIRE(registry.open_count() == 0);
  }
}

TEST_CASE("IPC twin: bad send/recv/group arguments and null communicators are chorus::Error naming the call, rank and value") {
  IpcRegistry registry;
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = IpcRank<>::create(host, registry, small_options(host.rank()));
    const int r = host.rank();
    std::vector<float> buffer(8);
    const auto note = [&](const std::function<void()>& call) {
      const std::string text = failure_of(call);
      mine.host.push_back(bytes_of(std::vector<char>(text.begin(), text.end())));
    };
    note([&] { rank.send<float>(nullptr, 8, 1 - r); });
    note([&] { rank.recv(buffer.data(), 8, 2); });
    note([&] { rank.recv(buffer.data(), 8, -1); });
    note([&] { rank.send(buffer.data(), 8, r); });
    note([&] { rank.send(buffer.data(), SIZE_MAX / 2, 1 - r); });
    note([&] { rank.send(static_cast<const void*>(buffer.data()), 8, static_cast<chorus::DataType>(99), 1 - r); });
    note([&] { rank.group([&] { rank.barrier(); }); });
    note([&] {
      rank.group([&] {
        for (int i = 0; i <= chorus::cuda::kernel::kMaxRanks; ++i) rank.send(buffer.data(), 1, 1 - r);
      });
    });
    IpcRank<> moved = std::move(rank);
    note([&] { rank.barrier(); });
    note([&] { rank.send(buffer.data(), 8, 1 - r); });
    note([&] { rank.split(0, 0); });
    mine.blocks = rank.size() * 100 + rank.rank();
    moved.barrier();  // the group refusals above left nothing queued: the ranks are still in step
    host.barrier();
  });
  for (int r = 0; r < 2; ++r) {
    const RankOutcome& outcome = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << outcome.message);
    REQUIRE_FALSE(outcome.failed);
    std::vector<std::string> got;
    for (const auto& bytes : outcome.host) got.emplace_back(bytes.begin(), bytes.end());
    REQUIRE(got.size() == 11);
    const std::string on = " on rank " + std::to_string(r) + ": ";
    CHECK(got[0].find("cuda::twin::IpcRank::send" + on + "data buffer is null with count 8") != std::string::npos);
    CHECK(got[1].find("cuda::twin::IpcRank::recv" + on + "peer 2 is not a rank of this 2-rank communicator") != std::string::npos);
    CHECK(got[2].find("recv" + on + "peer -1 is not a rank") != std::string::npos);
    CHECK(got[3].find("send" + on + "peer " + std::to_string(r) + " is this rank itself") != std::string::npos);
    CHECK(got[4].find("send" + on + "count " + std::to_string(SIZE_MAX / 2)) != std::string::npos);
    CHECK(got[5].find("send" + on + "data type 99 is not a chorus::DataType") != std::string::npos);
    CHECK(got[6].find("cuda::twin::IpcRank::barrier" + on + "only send and recv may be called inside group()") != std::string::npos);
    CHECK(got[7].find("send" + on + "this would be send number 9 of one group()") != std::string::npos);
    for (int i : {8, 9, 10}) CHECK(got[static_cast<std::size_t>(i)].find(": called on a null communicator (moved from") != std::string::npos);
    CHECK(got[8].find("IpcRank::barrier") != std::string::npos);
    CHECK(outcome.blocks == -1);
  }
  REQUIRE(registry.open_count() == 0);
}

}  // namespace test_twin_ipc
