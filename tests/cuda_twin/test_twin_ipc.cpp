// The multi-process CUDA communicator, BasicIpcComm (cuda/basic_ipc_comm.hpp), on the CPU twin: 1-5 ranks,
// one host thread each (host::Team), each with a twin device of its own (its own memory, its own stream
// workers), finding its peers' memory through records exchanged over the host communicator
// (cuda/ipc_bootstrap.hpp), then each launching ONLY ITS OWN blocks of the kernel bodies. Calls return
// before their kernels ran, as on a GPU: every result is read after wait(). Every rank's result must equal,
// bit for bit, the host backend's run of the schedule the kernel implements, for every all_reduce kernel
// and the other collectives, over repeated calls. Then the refusals: every rank gets the chorus::Error,
// nobody hangs, and every opened handle is closed again. Then the rest of the communicator contract
// (ipc_calls.hpp, ipc_p2p.hpp, ipc_split.hpp): barrier, send/recv alone and in group(), split, a send whose
// recv never comes, a failure in the bootstrap, null communicators. Last, the driver's own promises (issue
// 21): one communicator's work on several streams runs in order; teardown waits for its own kernel; abort()
// releases every rank's spinning kernel; host waits refuse a stream being captured and leave the
// communicator usable.
#include <catch2/catch.hpp>

#include <iterator>

#include <chorus/cuda/twin/ipc_twin.hpp>

#include "collective_checks.hpp"
#include "support/generic_checks.hpp"

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
using chorus::cuda::TwinDevice;
using chorus::cuda::make_ipc_record;
using chorus::cuda::validate_records;
using chorus::cuda::twin::IpcOptions;
using chorus::cuda::twin::IpcRank;

namespace {

constexpr auto kHangLimit = std::chrono::seconds(240);

// Opens not yet closed in the twin's process-wide IPC registry.
int open_count() { return TwinDevice::ipc_registry().open_count(); }

// Small buffers so the larger counts take several staging rounds and many FIFO slot reuses. Rank r's GPU
// "keeps" 3 - r % 2 blocks resident: the ranks must agree on the minimum.
IpcOptions small_options(int rank) {
  IpcOptions options;
  options.blocks = 3 - rank % 2;
  options.threads = 2;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  return options;
}

// Rank r of a test, on twin device r (a GPU of its own).
IpcRank create(chorus::host::Comm& host, IpcOptions options, TwinDevice::Stream stream = nullptr) {
  return IpcRank::create(host, host.rank(), std::move(options), stream);
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

std::vector<unsigned char> bytes_of_text(const std::string& text) { return bytes_of(std::vector<char>(text.begin(), text.end())); }
std::string text_of(const std::vector<unsigned char>& bytes) { return std::string(bytes.begin(), bytes.end()); }

void require_all_failed(const std::vector<RankOutcome>& outcomes, const std::string& needle) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    REQUIRE(outcomes[r].failed);
    REQUIRE(outcomes[r].message.find(needle) != std::string::npos);
  }
}

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

TEST_CASE("IPC twin: every all_reduce kernel, each rank launching only its own blocks, equals the host schedule bit for bit") {
  const std::size_t counts[] = {0, 1, 7, 1000, 3001};
  for (int n = 1; n <= 5; ++n) {
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      auto rank = create(host, small_options(host.rank()));
      mine.blocks = rank.blocks();
      for (int repeat = 0; repeat < 2; ++repeat) {
        for (KernelAlgorithm algorithm : kKernelAlgorithms) {
          // Every count's call queued at once, read after one wait().
          std::vector<std::vector<float>> inputs, outputs;
          for (std::size_t count : counts) {
            inputs.push_back(order_sensitive<float>(host.rank(), count, static_cast<std::uint32_t>(count) + 1u));
            outputs.emplace_back(count, harness::sentinel<float>());
            rank.all_reduce_with(inputs.back().data(), outputs.back().data(), count, ReduceOp::sum, algorithm);
          }
          rank.wait();
          for (std::size_t i = 0; i < std::size(counts); ++i) {
            std::vector<float> expected(counts[i]);
            host.all_reduce(inputs[i].data(), expected.data(), counts[i], ReduceOp::sum, schedule_of(algorithm));
            mine.twin.push_back(bytes_of(outputs[i]));
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
    REQUIRE(open_count() == 0);
  }
}

TEST_CASE("IPC twin: the other collectives, in place and not, each rank its own blocks, equal the host schedules") {
  const std::size_t counts[] = {1, 13, 700};
  for (int n = 1; n <= 5; ++n) {
    std::vector<Call> calls;
    for (const Pair& pair : kPairs) {
      for (std::size_t count : counts) {
        calls.push_back(Call{pair.collective, pair.algorithm, count, ReduceOp::sum, n - 1, false});
        calls.push_back(Call{pair.collective, pair.algorithm, count, ReduceOp::max, 0, true});
      }
    }
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      const int r = host.rank();
      auto rank = create(host, small_options(r));
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
        rank.collective_with<float>(c.collective, send, recv, c.count, c.op, c.root, c.algorithm);
        rank.wait();
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
    REQUIRE(open_count() == 0);
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
    const auto outcomes = run_ranks(4, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcRecord mine = make_ipc_record(IpcStage::memory, host.rank(), host.size(), ("bus" + std::to_string(host.rank())).c_str(), 2);
      if (host.rank() == 3) mine.version = 9;
      chorus::cuda::kernel::Signals signals{};
      chorus::cuda::IpcLocalMemory local{nullptr, &signals, nullptr, nullptr, 0, 0};
      const TwinDevice device(host.rank());
      chorus::cuda::IpcPeerMemory<chorus::cuda::IpcDeviceOpener<TwinDevice>> peers(host, mine, local, {device, nullptr, "test"},
                                                                                   "cuda::IpcComm::create");
    });
    require_all_failed(outcomes, "on rank 3: record version 9, expected 1");
    REQUIRE(open_count() == 0);
  }
  SECTION("two ranks on one GPU") {
    const auto outcomes = run_ranks(4, [&](chorus::host::Comm& host, RankOutcome&) {
      const int device = host.rank() == 2 ? 0 : host.rank();  // rank 2 on rank 0's twin device
      IpcRank::create(host, device, small_options(host.rank()));
    });
    require_all_failed(outcomes, "on rank 2: GPU twin:0 is also rank 0's; one GPU per rank (for several ranks on one GPU use "
                                 "cuda::Team::virtual_ranks)");
    REQUIRE(open_count() == 0);
  }
  SECTION("a layout that differs on one rank") {
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 2) options.fifo_slot_bytes = 128;
      create(host, options);
    });
    require_all_failed(outcomes, "on rank 2: scratch layout of");
    REQUIRE(open_count() == 0);
  }
  SECTION("bad options on one rank: that rank's own error, its peers released") {
    const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 1) options.threads = 0;
      create(host, options);
    });
    INFO(outcomes[1].message);
    REQUIRE(outcomes[1].message.find("cuda::twin::IpcComm::create on rank 1: threads must be 1..64") != std::string::npos);
    for (int r : {0, 2}) {
      INFO(outcomes[static_cast<std::size_t>(r)].message);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].code == ErrorCode::peer_failed);
      REQUIRE(outcomes[static_cast<std::size_t>(r)].message.find("on rank 1: failed before this exchange") != std::string::npos);
    }
    REQUIRE(open_count() == 0);
  }
  SECTION("options IpcComm does not take (crossovers, ring orders) on one rank") {
    const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome&) {
      IpcOptions options = small_options(host.rank());
      if (host.rank() == 1) options.ring_orders = {{1, 0}};
      create(host, options);
    });
    REQUIRE(outcomes[1].message.find("ring_orders is not taken by IpcComm") != std::string::npos);
    REQUIRE(outcomes[0].code == ErrorCode::peer_failed);
    REQUIRE(open_count() == 0);
  }
}

TEST_CASE("IPC twin: a rank that fails to open a peer's memory releases every rank, and every open is closed") {
  for (int n : {3, 5}) {
    const int failing = n - 1;
    TwinDevice::fail_ipc_open(failing, 3);  // its third open (the second peer's scratch) fails
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome&) { create(host, small_options(host.rank())); });
    TwinDevice::fail_ipc_open(failing, 0);
    for (int r = 0; r < n; ++r) {
      const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << " rank " << r << ": " << got.message);
      REQUIRE(got.failed);
      if (r == failing) {
        REQUIRE(got.message.find("injected: TwinDevice::fail_ipc_open") != std::string::npos);
      } else {
        REQUIRE(got.code == ErrorCode::peer_failed);
        REQUIRE(got.message.find("rank " + std::to_string(failing) + " failed to check, open or publish the peers' memory") != std::string::npos);
      }
    }
    REQUIRE(open_count() == 0);
  }
}

// A MemoryOpener whose publish step (on a GPU: copying the view to device memory, the bootstrap's last step
// that can fail) fails on one rank, after every open succeeded.
struct FailingPublisher {
  int failing_rank;
  int rank;
  void* open(const IpcHandle& handle, int peer) const { return TwinDevice::ipc_registry().open(handle, peer); }
  void close(void* pointer) const noexcept { TwinDevice::ipc_registry().close(pointer); }
  void publish(const chorus::cuda::kernel::RankView&) const {
    if (rank == failing_rank) throw chorus::make_error(ErrorCode::internal, "test::FailingPublisher", rank, "injected: cudaMemcpy of the view failed");
  }
};

TEST_CASE("IPC twin: a failure in the bootstrap's last step (publishing the view) fails it on every rank, every open closed") {
  const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome&) {
    const TwinDevice device(host.rank());
    IpcRecord mine = make_ipc_record(IpcStage::memory, host.rank(), host.size(), device.bus_id("test", host.rank()).c_str(), 1);
    mine.layout = chorus::cuda::kernel::make_layout(4096, 2048, 64, 2, 1);
    void* scratch = device.allocate(mine.layout.total_bytes(), "test", host.rank());
    void* signals = device.allocate(sizeof(chorus::cuda::kernel::Signals), "test", host.rank());
    mine.scratch = device.ipc_export(scratch, "test", host.rank());
    mine.signals = device.ipc_export(signals, "test", host.rank());
    const chorus::cuda::IpcLocalMemory local{static_cast<unsigned char*>(scratch), static_cast<chorus::cuda::kernel::Signals*>(signals),
                                             nullptr, nullptr, 0, 0};
    const std::string error = failure_of([&] {
      chorus::cuda::IpcPeerMemory<FailingPublisher> peers(host, mine, local, FailingPublisher{1, host.rank()}, "cuda::IpcComm::create");
    });
    host.barrier();  // every rank is done with the others' memory
    device.free(scratch);
    device.free(signals);
    if (!error.empty()) throw Error(ErrorCode::peer_failed, error);
  });
  REQUIRE(outcomes[1].message.find("injected: cudaMemcpy of the view failed") != std::string::npos);
  for (int r : {0, 2}) {
    INFO(outcomes[static_cast<std::size_t>(r)].message);
    REQUIRE(outcomes[static_cast<std::size_t>(r)].message.find("rank 1 failed to check, open or publish the peers' memory") !=
            std::string::npos);
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: a rank that skips a call leaves its peers a timeout error from wait(), not a hang") {
  const support::ScopedEnv short_kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "300");
  const int n = 3;
  std::atomic<int> finished{0};
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    std::vector<float> in(100, 1.0f), out(100);
    rank.all_reduce_with(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::one_shot);
    rank.wait();
    mine.twin.push_back(bytes_of(out));
    if (host.rank() != 1) {
      rank.all_reduce_with(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::ring);  // enqueued: returns
      try {
        rank.wait();
      } catch (const Error& e) {
        mine.message = e.what();
        mine.code = e.code();
      }
      // a timed-out rank refuses further calls
      mine.host.push_back(bytes_of_text(failure_of([&] { rank.all_reduce_with(in.data(), out.data(), in.size(), ReduceOp::sum, KernelAlgorithm::ring); })));
      finished.fetch_add(1);
    } else {
      // Not host.barrier(): rank 1's memory must outlive its peers' timed-out calls, which still write into it.
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
    REQUIRE(got.message.find("cuda::twin::IpcComm::all_reduce on rank " + std::to_string(r) + ": ring block") != std::string::npos);
    REQUIRE(got.message.find("waited 300 ms for rank") != std::string::npos);
    REQUIRE(got.host.size() == 1);
    REQUIRE(text_of(got.host[0]).find("an earlier call failed") != std::string::npos);
  }
  for (int r = 0; r < n; ++r) REQUIRE(outcomes[static_cast<std::size_t>(r)].twin[0] == bytes_of(std::vector<float>(100, 3.0f)));
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: a rank refuses bad arguments before launching, naming the call, the rank and the value") {
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    std::vector<float> buffer(8);
    const auto note = [&](const std::function<void()>& call) { mine.host.push_back(bytes_of_text(failure_of(call))); };
    note([&] { rank.all_reduce_with<float>(nullptr, buffer.data(), 8, ReduceOp::sum, KernelAlgorithm::ring); });
    note([&] { rank.collective_with<float>(Collective::broadcast, buffer.data(), buffer.data(), 8, ReduceOp::sum, 2, KernelAlgorithm::one_shot); });
    note([&] { rank.collective_with<float>(Collective::all_to_all, buffer.data(), buffer.data(), 4, ReduceOp::sum, 0, KernelAlgorithm::ring); });
    // The contract's forms go through the runtime's check (runtime/call_check.hpp), as host::Comm's do.
    note([&] { rank.all_reduce(buffer.data(), buffer.data() + 1, 4, ReduceOp::sum); });
    note([&] { rank.all_reduce(buffer.data(), buffer.data(), 8, static_cast<ReduceOp>(9)); });
    note([&] { rank.broadcast(buffer.data(), buffer.data(), 8, 0, chorus::Algorithm::ring); });
    note([&] { rank.all_reduce(buffer.data(), buffer.data(), 8, ReduceOp::sum, chorus::Algorithm::halving_doubling); });
    rank.barrier();  // nothing was launched: the ranks are still in step
    host.barrier();
  });
  for (int r = 0; r < 2; ++r) {
    const auto& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.host.size() == 7);
    const std::string on = " on rank " + std::to_string(r) + ": ";
    CHECK(text_of(got.host[0]).find("cuda::twin::IpcComm::all_reduce" + on + "null buffer with count 8 (the input)") != std::string::npos);
    CHECK(text_of(got.host[1]).find("root 2 is not a rank of 2") != std::string::npos);
    CHECK(text_of(got.host[2]).find("no ring kernel for all_to_all") != std::string::npos);
    CHECK(text_of(got.host[3]).find("cuda::twin::IpcComm::all_reduce" + on + "send buffer [") != std::string::npos);
    CHECK(text_of(got.host[3]).find("without being the in-place arrangement") != std::string::npos);
    CHECK(text_of(got.host[4]).find("cuda::twin::IpcComm::all_reduce" + on + "reduce op 9 is not a chorus::ReduceOp") != std::string::npos);
    CHECK(text_of(got.host[5]).find("cuda::twin::IpcComm::broadcast" + on + "algorithm ring does not implement broadcast") != std::string::npos);
    CHECK(text_of(got.host[6]).find("halving_doubling has no CUDA kernel") != std::string::npos);
  }
  REQUIRE(open_count() == 0);
}

// ---- The communicator contract: barrier, send/recv, split, null communicators ----

TEST_CASE("IPC twin: barrier returns on no rank before every rank has reached it") {
  for (int n : {2, 4}) {
    std::atomic<int> arrived{0};
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      auto rank = create(host, small_options(host.rank()));
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
    REQUIRE(open_count() == 0);
  }
}

TEST_CASE("IPC twin: the contract's collective forms (typed, type-erased, an Algorithm) give the sums") {
  const int n = 3;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    std::vector<double> in(300, static_cast<double>(host.rank() + 1)), sum(300), max(300), gathered(3 * 5);
    rank.all_reduce(in.data(), sum.data(), in.size(), ReduceOp::sum);
    rank.all_reduce(static_cast<const void*>(in.data()), max.data(), in.size(), chorus::DataType::float64, ReduceOp::max,
                    chorus::Algorithm::ring);
    rank.all_gather(in.data(), gathered.data(), 5);
    rank.wait();
    mine.twin.push_back(bytes_of(sum));
    mine.twin.push_back(bytes_of(max));
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
    const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
      const int r = host.rank();
      auto rank = create(host, small_options(r));
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      for (int message = 0; message < 2; ++message) {
        for (std::size_t count : kP2pCounts) {
          const auto out = message_of(r, message, count);
          std::vector<float> in(count, harness::sentinel<float>());
          rank.group([&] {
            rank.send(out.data(), count, next);
            rank.recv(in.data(), count, prev);
          });
          rank.wait();
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
    REQUIRE(open_count() == 0);
  }
}

TEST_CASE("IPC twin: send/recv pipeline, several messages per pair matched in call order, types may differ") {
  const int n = 4;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    auto rank = create(host, small_options(r));
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
        rank.wait();
        mine.twin.push_back(bytes_of(in));
        mine.host.push_back(bytes_of(message_of(r - 1, message, count)));
      }
      if (r < n - 1) {
        const auto out = message_of(r, message, count);
        rank.send(out.data(), count, r + 1);
        rank.wait();  // `out` is read until the send has run
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
      rank.wait();
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
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: a send that fits the FIFO completes alone; one whose recv never comes times out naming the wait") {
  const support::ScopedEnv short_kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "300");
  std::atomic<int> stage{0};
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    const auto until = [&](int value) {  // not host.barrier(): the peer may be in a timed-out call
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (stage.load() < value && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    const auto small = message_of(0, 0, 7), large = message_of(0, 1, 1000);
    if (host.rank() == 0) {
      rank.send(small.data(), small.size(), 1);  // fits the FIFO: completes before rank 1 receives
      rank.wait();
      stage.store(1);
      rank.send(large.data(), large.size(), 1);  // never received: enqueued, the timeout comes from wait()
      mine.message = failure_of([&] { rank.wait(); });
      mine.twin.push_back(bytes_of_text(failure_of([&] { rank.send(small.data(), small.size(), 1); })));
      stage.store(2);
    } else {
      until(1);
      std::vector<float> in(7);
      rank.recv(in.data(), in.size(), 0);
      rank.wait();
      mine.twin.push_back(bytes_of(in));
      until(2);  // this rank's memory must outlive the sender's timed-out call
    }
  });
  const RankOutcome& sender = outcomes[0];
  INFO(sender.message);
  REQUIRE_FALSE(sender.failed);
  REQUIRE(sender.message.find("cuda::twin::IpcComm::send on rank 0: p2p block") != std::string::npos);
  REQUIRE(sender.message.find("waited 300 ms for rank 1 (p2p FIFO: free slot at the receiver") != std::string::npos);
  REQUIRE(text_of(sender.twin[0]).find("an earlier call failed") != std::string::npos);
  REQUIRE_FALSE(outcomes[1].failed);
  REQUIRE(outcomes[1].twin[0] == bytes_of(message_of(0, 0, 7)));
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: split into two colours, keys reversing the order, collectives on each; colour -1 gets a null communicator") {
  const int n = 5;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    auto rank = create(host, small_options(r));
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
      half.wait();
      mine.twin.push_back(bytes_of(who));
      mine.twin.push_back(bytes_of(sum));
      half.barrier();
    }
    // The parent still works after the split.
    std::vector<int> in{1}, out{0};
    rank.all_reduce(in.data(), out.data(), 1, ReduceOp::sum);
    rank.wait();
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
      REQUIRE(got.message.find("cuda::twin::IpcComm::barrier: called on a null communicator") != std::string::npos);
      REQUIRE(got.message.find("|-1") != std::string::npos);
      continue;
    }
    const int new_rank = r < 2 ? 1 : 0;  // keys -r: rank 2 before 0, 3 before 1
    REQUIRE(got.blocks == new_rank * 10 + 2);
    const std::vector<std::int32_t> order = r % 2 == 0 ? std::vector<std::int32_t>{2, 0} : std::vector<std::int32_t>{3, 1};
    REQUIRE(got.twin[0] == bytes_of(order));
    REQUIRE(got.twin[1] == bytes_of(std::vector<float>{r % 2 == 0 ? 4.0f : 6.0f}));
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: a member that fails to open its new peers' memory fails the split on every parent rank; the parent survives") {
  const auto outcomes = run_ranks(3, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    if (host.rank() == 2) TwinDevice::fail_ipc_open(2, 1);  // its first open in the split fails
    mine.message = failure_of([&] { rank.split(host.rank() == 1 ? -1 : 0, 0); });
    if (host.rank() == 2) TwinDevice::fail_ipc_open(2, 0);
    mine.blocks = rank.size();  // the parent survives a failed split
    rank.barrier();
    host.barrier();
  });
  REQUIRE(outcomes[2].message.find("injected: TwinDevice::fail_ipc_open") != std::string::npos);
  REQUIRE(outcomes[0].message.find("cuda::twin::IpcComm::split on rank 0: parent rank 2 failed to check, open or publish") !=
          std::string::npos);
  REQUIRE(outcomes[1].message.find("cuda::twin::IpcComm::split on rank 1: parent rank 2 failed to split") != std::string::npos);
  for (const RankOutcome& got : outcomes) {
    INFO(got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.blocks == 3);
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: bad send/recv/group arguments and null communicators are chorus::Error naming the call, rank and value") {
  const auto outcomes = run_ranks(2, [&](chorus::host::Comm& host, RankOutcome& mine) {
    auto rank = create(host, small_options(host.rank()));
    const int r = host.rank();
    std::vector<float> buffer(8);
    const auto note = [&](const std::function<void()>& call) { mine.host.push_back(bytes_of_text(failure_of(call))); };
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
    IpcRank moved = std::move(rank);
    note([&] { rank.barrier(); });
    note([&] { rank.send(buffer.data(), 8, 1 - r); });
    note([&] { rank.split(0, 0); });
    note([&] { rank.wait(); });
    note([&] { rank.abort(); });
    mine.blocks = rank.size() * 100 + rank.rank();
    moved.barrier();  // the group refusals above left nothing queued: the ranks are still in step
    host.barrier();
  });
  for (int r = 0; r < 2; ++r) {
    const RankOutcome& outcome = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << outcome.message);
    REQUIRE_FALSE(outcome.failed);
    std::vector<std::string> got;
    for (const auto& bytes : outcome.host) got.push_back(text_of(bytes));
    REQUIRE(got.size() == 13);
    const std::string on = " on rank " + std::to_string(r) + ": ";
    CHECK(got[0].find("cuda::twin::IpcComm::send" + on + "data buffer is null with count 8") != std::string::npos);
    CHECK(got[1].find("cuda::twin::IpcComm::recv" + on + "peer 2 is not a rank of this 2-rank communicator") != std::string::npos);
    CHECK(got[2].find("recv" + on + "peer -1 is not a rank") != std::string::npos);
    CHECK(got[3].find("send" + on + "peer " + std::to_string(r) + " is this rank itself") != std::string::npos);
    CHECK(got[4].find("send" + on + "count " + std::to_string(SIZE_MAX / 2)) != std::string::npos);
    CHECK(got[5].find("send" + on + "data type 99 is not a chorus::DataType") != std::string::npos);
    CHECK(got[6].find("cuda::twin::IpcComm::barrier" + on + "only send and recv may be called inside group()") != std::string::npos);
    CHECK(got[7].find("send" + on + "this would be send number 9 of one group()") != std::string::npos);
    for (int i : {8, 9, 10, 11, 12}) CHECK(got[static_cast<std::size_t>(i)].find(": called on a null communicator (moved from") != std::string::npos);
    CHECK(got[8].find("IpcComm::barrier") != std::string::npos);
    CHECK(got[11].find("IpcComm::wait") != std::string::npos);
    CHECK(outcome.blocks == -1);
  }
  REQUIRE(open_count() == 0);
}

// ---- The driver's own promises (issue 21, items 1, 2, 5, 6) ----

namespace {

// One call of the two-stream test: its buffers (kept until wait()) and what its output must hold.
struct Pending {
  std::string what;
  std::vector<std::int32_t> in, out, expected;
};

// Rank `rank`'s element i of call `call`: exact in any order of summation.
std::int32_t value_of(int rank, int call, std::size_t i) { return rank * 1000 + call * 100 + static_cast<std::int32_t>(i % 89); }

}  // namespace

TEST_CASE("IPC twin: calls on two streams and the communicator's own, no user synchronisation, run in the order made (issue 21 item 1)") {
  // Without the communicator's order event the streams' kernels of one rank run at once, sharing barrier
  // epochs, FIFO counters and staging, and wait() covers only the last stream: wrong data or a timeout,
  // which a short kernel timeout keeps quick.
  const support::ScopedEnv kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "5000");
  const int n = 4;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    chorus::cuda::twin::Stream s1, s2;  // declared first: they outlive the communicator
    auto comm = create(host, small_options(r));
    std::vector<std::unique_ptr<Pending>> calls;
    // A call's buffers: `sends` inputs of this rank, `recvs` outputs (sentinel-filled).
    const auto add = [&](const std::string& what, int id, std::size_t sends, std::size_t recvs) -> Pending& {
      calls.push_back(std::make_unique<Pending>());
      Pending& p = *calls.back();
      p.what = what;
      for (std::size_t i = 0; i < sends; ++i) p.in.push_back(value_of(r, id, i));
      p.out.assign(recvs, -7);
      p.expected.assign(recvs, 0);
      return p;
    };
    const auto summed = [&](Pending& p, int id, std::size_t offset) {
      for (std::size_t i = 0; i < p.expected.size(); ++i) {
        for (int k = 0; k < n; ++k) p.expected[i] += value_of(k, id, offset + i);
      }
    };
    for (int round = 0; round < 3; ++round) {
      const int base = round * 10;
      {
        Pending& p = add("s1 ring all_reduce 3001", base + 0, 3001, 3001);
        summed(p, base + 0, 0);
        comm.on(&s1).all_reduce(p.in.data(), p.out.data(), p.in.size(), ReduceOp::sum, chorus::Algorithm::ring);
      }
      {
        Pending& p = add("s2 automatic (LL) all_reduce 7", base + 1, 7, 7);
        summed(p, base + 1, 0);
        comm.on(&s2).all_reduce(p.in.data(), p.out.data(), p.in.size(), ReduceOp::sum);
      }
      {
        Pending& p = add("own stream direct all_gather 13", base + 2, 13, 13 * n);
        for (int k = 0; k < n; ++k) {
          for (std::size_t i = 0; i < 13; ++i) p.expected[static_cast<std::size_t>(k) * 13 + i] = value_of(k, base + 2, i);
        }
        comm.all_gather(p.in.data(), p.out.data(), 13, chorus::Algorithm::direct);
      }
      {
        Pending& p = add("s1 two_shot all_reduce 1000", base + 3, 1000, 1000);
        summed(p, base + 3, 0);
        comm.on(&s1).all_reduce(p.in.data(), p.out.data(), p.in.size(), ReduceOp::sum, chorus::Algorithm::two_shot);
      }
      {
        Pending& p = add("s2 ring all_gather 300", base + 4, 300, 300 * n);
        for (int k = 0; k < n; ++k) {
          for (std::size_t i = 0; i < 300; ++i) p.expected[static_cast<std::size_t>(k) * 300 + i] = value_of(k, base + 4, i);
        }
        comm.on(&s2).all_gather(p.in.data(), p.out.data(), 300, chorus::Algorithm::ring);
      }
      {
        Pending& p = add("s1 direct reduce_scatter 200", base + 5, 200 * n, 200);
        summed(p, base + 5, static_cast<std::size_t>(r) * 200);
        comm.on(&s1).reduce_scatter(p.in.data(), p.out.data(), 200, ReduceOp::sum, chorus::Algorithm::direct);
      }
      {
        const int root = round % n;
        Pending& p = add("s2 chain broadcast 500", base + 6, 500, 500);
        for (std::size_t i = 0; i < 500; ++i) p.expected[i] = value_of(root, base + 6, i);
        comm.on(&s2).broadcast(p.in.data(), p.out.data(), 500, root, chorus::Algorithm::chain);
      }
      {
        // A send on s1 and a recv on s2, larger than the FIFO (each waits for its partner): even ranks send
        // first, odd ranks receive first.
        const int partner = r ^ 1;
        Pending& p = add("send on s1, recv on s2, 1000", base + 7, 1000, 1000);
        for (std::size_t i = 0; i < 1000; ++i) p.expected[i] = value_of(partner, base + 7, i);
        if (r % 2 == 0) {
          comm.on(&s1).send(p.in.data(), p.in.size(), partner);
          comm.on(&s2).recv(p.out.data(), p.out.size(), partner);
        } else {
          comm.on(&s2).recv(p.out.data(), p.out.size(), partner);
          comm.on(&s1).send(p.in.data(), p.in.size(), partner);
        }
      }
      {
        Pending& p = add("s2 one_shot all_reduce 2000", base + 8, 2000, 2000);
        summed(p, base + 8, 0);
        comm.on(&s2).all_reduce(p.in.data(), p.out.data(), p.in.size(), ReduceOp::sum, chorus::Algorithm::one_shot);
      }
      {
        Pending& p = add("own stream tree all_reduce 100", base + 9, 100, 100);
        summed(p, base + 9, 0);
        comm.all_reduce(p.in.data(), p.out.data(), p.in.size(), ReduceOp::sum, chorus::Algorithm::tree);
      }
    }
    comm.wait();  // the only synchronisation: then every result may be read
    for (const auto& p : calls) {
      if (p->out != p->expected) mine.message += p->what + " wrong; ";
      mine.twin.push_back(bytes_of(p->out));
      mine.host.push_back(bytes_of(p->expected));
    }
    {  // a stream the caller destroys once waited for: later waits do not look at it (ASan would see them)
      chorus::cuda::twin::Stream s3;
      std::vector<std::int32_t> one{r}, total{0};
      comm.on(&s3).all_reduce(one.data(), total.data(), 1, ReduceOp::sum);
      comm.wait();
      if (total[0] != n * (n - 1) / 2) mine.message += "s3 all_reduce wrong; ";
    }
    comm.wait();
    host.barrier();
  });
  for (int r = 0; r < n; ++r) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.message.empty());
    REQUIRE(got.twin.size() == 30);
    for (std::size_t i = 0; i < got.twin.size(); ++i) REQUIRE(first_difference(got.twin[i], got.host[i]) == -1);
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: destroying a communicator whose kernel still runs waits for it before closing and freeing (issue 21 item 2)") {
  const support::ScopedEnv kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "20000");
  const int n = 3;
  std::vector<long> freed_before;
  for (int r = 0; r < n; ++r) freed_before.push_back(TwinDevice::freed_while_running(r));
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    std::vector<std::int32_t> in(1000, r + 1), out(1000, -1);
    {
      auto comm = create(host, small_options(r));
      host.barrier();  // every rank has its communicator
      if (r == 0) {
        comm.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, chorus::Algorithm::ring);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its kernel runs, waiting for the late peers
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        comm.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, chorus::Algorithm::ring);
        comm.wait();
        host.barrier();  // rank 0 is out of its destructor: no kernel reads this rank's memory any more
      }
    }  // rank 0: no wait() before the destructor
    if (r == 0) host.barrier();
    mine.twin.push_back(bytes_of(out));  // rank 0 too: the destructor waited for the call
  });
  for (int r = 0; r < n; ++r) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(TwinDevice::freed_while_running(r) == freed_before[static_cast<std::size_t>(r)]);
    REQUIRE(got.twin[0] == bytes_of(std::vector<std::int32_t>(1000, 6)));
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: abort() on one rank releases every rank's spinning kernel; wait() says which rank aborted (issue 21 item 5)") {
  // A kernel timeout far longer than the test may take: only the abort can end the waits in time.
  const support::ScopedEnv kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "60000");
  const int n = 4;  // rank 1 never calls; rank 3 aborts; ranks 0 and 2 wait
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    auto comm = create(host, small_options(r));
    std::vector<float> in(1000, 1.0f), out(1000);
    if (r == 0 || r == 2) {
      comm.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum, chorus::Algorithm::ring);
      const auto start = std::chrono::steady_clock::now();
      try {
        comm.wait();
        mine.message = "wait() returned";
      } catch (const Error& e) {
        mine.code = e.code();
        mine.message = e.what();
      }
      mine.blocks = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
      mine.host.push_back(bytes_of_text(failure_of([&] { comm.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum); })));
    } else if (r == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others' kernels are spinning by now
      comm.abort();
      mine.host.push_back(bytes_of_text(failure_of([&] { comm.barrier(); })));
      try {
        comm.wait();
      } catch (const Error& e) {
        mine.code = e.code();
        mine.message = e.what();
      }
    }
    host.barrier();
  });
  for (int r : {0, 2}) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message << " after " << got.blocks << " ms");
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.code == ErrorCode::peer_failed);
    REQUIRE(got.message.find("cuda::twin::IpcComm::all_reduce on rank " + std::to_string(r) + ": rank 3 aborted the communicator") !=
            std::string::npos);
    REQUIRE(got.blocks < 20000);  // the kernel timeout is 60000 ms
    REQUIRE(text_of(got.host[0]).find("an earlier call failed") != std::string::npos);
  }
  const RankOutcome& aborter = outcomes[3];
  INFO(aborter.message);
  REQUIRE(aborter.code == ErrorCode::peer_failed);
  REQUIRE(aborter.message.find("rank 3 aborted the communicator") != std::string::npos);
  REQUIRE(text_of(aborter.host[0]).find("cuda::twin::IpcComm::barrier on rank 3: this communicator was aborted") != std::string::npos);
  REQUIRE(open_count() == 0);
}

TEST_CASE("IPC twin: wait(), barrier() and split() during stream capture are refused; the communicator stays usable (issue 21 item 6)") {
  const support::ScopedEnv kernel_timeout("CHORUS_KERNEL_TIMEOUT_MS", "3000");
  const int n = 2;
  const auto outcomes = run_ranks(n, [&](chorus::host::Comm& host, RankOutcome& mine) {
    const int r = host.rank();
    chorus::cuda::twin::Stream stream;  // the communicator's own stream, declared first: it outlives it
    auto comm = create(host, small_options(r), &stream);
    std::vector<std::int32_t> in(100, r + 1), out(100, 0), again(100, 0);
    comm.all_reduce(in.data(), out.data(), in.size(), ReduceOp::sum);
    stream.begin_capture();
    const auto note = [&](const std::function<void()>& call) { mine.host.push_back(bytes_of_text(failure_of(call))); };
    note([&] { comm.wait(); });
    note([&] { comm.barrier(); });
    note([&] { comm.on(&stream).barrier(); });
    note([&] { comm.split(0, r); });
    mine.blocks = static_cast<int>(stream.end_capture().nodes.size());  // nothing was captured
    comm.wait();  // after the capture: the call made before it has run
    mine.twin.push_back(bytes_of(out));
    comm.barrier();
    comm.all_reduce(in.data(), again.data(), in.size(), ReduceOp::sum, chorus::Algorithm::ring);
    comm.wait();
    mine.twin.push_back(bytes_of(again));
    auto same = comm.split(0, r);
    same.barrier();
    mine.message = std::to_string(same.size());
    host.barrier();
  });
  for (int r = 0; r < n; ++r) {
    const RankOutcome& got = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << got.message);
    REQUIRE_FALSE(got.failed);
    REQUIRE(got.host.size() == 4);
    const std::string on = " on rank " + std::to_string(r) + ": the stream is being captured into a graph";
    CHECK(text_of(got.host[0]).find("cuda::twin::IpcComm::wait" + on) != std::string::npos);
    CHECK(text_of(got.host[1]).find("cuda::twin::IpcComm::barrier" + on) != std::string::npos);
    CHECK(text_of(got.host[2]).find("cuda::twin::IpcComm::barrier" + on) != std::string::npos);
    CHECK(text_of(got.host[3]).find("cuda::twin::IpcComm::split" + on) != std::string::npos);
    REQUIRE(got.blocks == 0);
    REQUIRE(got.twin[0] == bytes_of(std::vector<std::int32_t>(100, 3)));
    REQUIRE(got.twin[1] == bytes_of(std::vector<std::int32_t>(100, 3)));
    REQUIRE(got.message == "2");
  }
  REQUIRE(open_count() == 0);
}

TEST_CASE("the IPC twin passes the generic communicator checks, one host thread per rank") {
  for (int n : {1, 2, 3}) {
    const auto outcomes = run_ranks(n, [](chorus::host::Comm& host, RankOutcome& mine) {
      auto comm = create(host, small_options(host.rank()));
      for (const std::string& failure : generic::generic_checks(comm)) mine.host.push_back(bytes_of_text(failure));
    });
    for (int r = 0; r < n; ++r) {
      const RankOutcome& o = outcomes[static_cast<std::size_t>(r)];
      INFO("ranks " << n << ", rank " << r << ": " << o.message << (o.host.empty() ? "" : text_of(o.host.front())));
      CHECK_FALSE(o.failed);
      CHECK(o.host.empty());
    }
  }
}

}  // namespace test_twin_ipc
