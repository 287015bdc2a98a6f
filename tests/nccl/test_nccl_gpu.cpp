// Every collective of nccl::Comm on every visible GPU (one communicator per GPU from init_all, driven
// from this thread inside nccl::Group), checked against a CPU reference built from chorus's own element
// operations. Exits 77 (skipped) where cudaGetDeviceCount fails or finds no GPU; with one GPU it runs
// as a one-rank communicator.
//
// Data are small integers, so every sum, product, minimum and maximum is exact in all ten types and
// NCCL's reduction order cannot change a bit; only avg on floating types is compared with a tolerance
// (NCCL multiplies by 1/size before summing).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <chorus/bootstrap/exchange.hpp>
#include <chorus/host.hpp>
#include <chorus/nccl.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

using chorus::DataType;
using chorus::ReduceOp;
namespace nccl = chorus::nccl;

namespace {

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

struct Ranks {
  std::vector<int> devices;
  std::vector<nccl::Comm> comms;
  std::vector<cudaStream_t> streams;

  explicit Ranks(int count) {
    for (int d = 0; d < count; ++d) devices.push_back(d);
    comms = nccl::Comm::init_all(devices);
    for (int d : devices) {
      cuda_ok(cudaSetDevice(d), "cudaSetDevice");
      cudaStream_t s = nullptr;
      cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      streams.push_back(s);
    }
  }
  ~Ranks() {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      cudaSetDevice(devices[i]);
      cudaStreamDestroy(streams[i]);
    }
  }
  int size() const { return static_cast<int>(devices.size()); }

  // fn(rank, view) for every rank inside one group (one thread drives every GPU), then a bounded wait.
  template <class Fn>
  void each(Fn&& fn) {
    {
      nccl::Group group;
      for (int r = 0; r < size(); ++r) fn(r, comms[static_cast<std::size_t>(r)].on(streams[static_cast<std::size_t>(r)]));
      group.end();
    }
    for (int r = 0; r < size(); ++r) comms[static_cast<std::size_t>(r)].wait(streams[static_cast<std::size_t>(r)]);
  }
};

Ranks* g_ranks = nullptr;

// Device memory on one GPU, filled from and read back to host vectors.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t count) : device_(device), count_(count) {
    cuda_ok(cudaSetDevice(device), "cudaSetDevice");
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&data_), (count == 0 ? 1 : count) * sizeof(T)), "cudaMalloc");
    cuda_ok(cudaMemset(data_, 0xEE, (count == 0 ? 1 : count) * sizeof(T)), "cudaMemset");  // garbage, not zeros
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    cudaSetDevice(device_);
    cudaFree(data_);
  }
  T* get() const { return data_; }
  void put(const std::vector<T>& host) {
    cuda_ok(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  std::vector<T> take() const {
    std::vector<T> host(count_);
    cuda_ok(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return host;
  }

 private:
  int device_;
  std::size_t count_;
  T* data_ = nullptr;
};

template <class T>
using Buffers = std::vector<std::unique_ptr<DeviceBuffer<T>>>;

template <class T>
Buffers<T> buffers(std::size_t count) {
  Buffers<T> out;
  for (int d : g_ranks->devices) out.push_back(std::make_unique<DeviceBuffer<T>>(d, count));
  return out;
}

template <class T>
T value(int v) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(v);
  } else if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(v);
  } else {
    return T(static_cast<float>(v));  // chorus::half, chorus::bfloat16
  }
}

template <class T>
double as_double(T x) {
  if constexpr (std::is_arithmetic<T>::value) {
    return static_cast<double>(x);
  } else {
    return static_cast<double>(static_cast<float>(x));
  }
}

// Rank r's element i for an op: small integers whose reduction is exact in every type (products of 1s
// and 2s stay <= 2^8, sums <= 8 * 12).
int input(ReduceOp op, int r, std::size_t i) {
  const int k = static_cast<int>(i % 97);
  switch (op) {
    case ReduceOp::prod: return 1 + ((r + k) % 5 == 0 ? 1 : 0);
    case ReduceOp::max:
    case ReduceOp::min: return (r * 7 + k * 3) % 11;
    default: return 1 + (r + k) % 12;
  }
}

template <class T>
std::vector<T> inputs(ReduceOp op, int r, std::size_t count) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = value<T>(input(op, r, i));
  return v;
}

// The reduction over every rank of element i, folded in rank order by chorus's combine.
template <class T>
T reference(ReduceOp op, std::size_t i, int ranks) {
  T acc = value<T>(input(op, 0, i));
  for (int r = 1; r < ranks; ++r) acc = chorus::combine(op, acc, value<T>(input(op, r, i)));
  return op == ReduceOp::avg ? chorus::divide_by(acc, ranks) : acc;
}

// The unit roundoff of T's arithmetic (half 2^-11, bfloat16 2^-8, float 2^-24, double 2^-53).
template <class T>
double unit_roundoff() {
  if constexpr (std::is_same<T, chorus::half>::value) return std::ldexp(1.0, -11);
  if constexpr (std::is_same<T, chorus::bfloat16>::value) return std::ldexp(1.0, -8);
  if constexpr (std::is_same<T, float>::value) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, -53);
}

// avg on floating types: NCCL rounds each input times 1/n, then up to n - 1 partial sums (a ring rounds
// at every hop in half and bfloat16), so allow 2 (n + 1) roundings of the (positive) result.
template <class T>
bool same(T got, T want, ReduceOp op) {
  if (op == ReduceOp::avg && !std::is_integral<T>::value) {
    const double tolerance = 2.0 * (g_ranks->size() + 1) * unit_roundoff<T>();
    return std::fabs(as_double(got) - as_double(want)) <= tolerance * std::fabs(as_double(want));
  }
  return as_double(got) == as_double(want);
}

// Index of the first wrong element, or -1.
template <class T, class Want>
long first_wrong(const std::vector<T>& got, Want&& want, ReduceOp op = ReduceOp::sum) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!same(got[i], want(i), op)) {
      std::printf("first wrong element %zu of %zu: got %.17g, want %.17g\n", i, got.size(), as_double(got[i]), as_double(want(i)));
      return static_cast<long>(i);
    }
  }
  return -1;
}

constexpr std::size_t kCounts[] = {1, 7, 1000, 65537};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};

template <class T>
void check_all_reduce(bool in_place) {
  const int n = g_ranks->size();
  for (std::size_t count : kCounts) {
    for (ReduceOp op : kOps) {
      auto send = buffers<T>(count);
      auto recv = buffers<T>(count);
      for (int r = 0; r < n; ++r) send[static_cast<std::size_t>(r)]->put(inputs<T>(op, r, count));
      g_ranks->each([&](int r, nccl::Comm::View view) {
        T* s = send[static_cast<std::size_t>(r)]->get();
        view.all_reduce(s, in_place ? s : recv[static_cast<std::size_t>(r)]->get(), count, op);
      });
      for (int r = 0; r < n; ++r) {
        const auto got = (in_place ? send : recv)[static_cast<std::size_t>(r)]->take();
        INFO(chorus::to_string(chorus::data_type_v<T>) << " " << chorus::to_string(op) << " count " << count << " rank " << r
                                                       << (in_place ? " in place" : ""));
        CHECK(first_wrong(got, [&](std::size_t i) { return reference<T>(op, i, n); }, op) == -1);
      }
    }
  }
}

}  // namespace

TEST_CASE("all_reduce: every type and op, out of place and in place", "[gpu][nccl]") {
  check_all_reduce<std::int8_t>(false);
  check_all_reduce<std::uint8_t>(true);
  check_all_reduce<std::int32_t>(false);
  check_all_reduce<std::uint32_t>(true);
  check_all_reduce<std::int64_t>(false);
  check_all_reduce<std::uint64_t>(true);
  check_all_reduce<chorus::half>(false);
  check_all_reduce<chorus::half>(true);
  check_all_reduce<float>(false);
  check_all_reduce<float>(true);
  check_all_reduce<double>(false);
  check_all_reduce<chorus::bfloat16>(false);
  check_all_reduce<chorus::bfloat16>(true);
}

TEST_CASE("broadcast and reduce from every root", "[gpu][nccl]") {
  const int n = g_ranks->size();
  const std::size_t count = 4099;
  for (int root = 0; root < n; ++root) {
    auto send = buffers<float>(count);
    auto recv = buffers<float>(count);
    for (int r = 0; r < n; ++r) send[static_cast<std::size_t>(r)]->put(inputs<float>(ReduceOp::sum, r, count));
    g_ranks->each([&](int r, nccl::Comm::View view) {
      view.broadcast(send[static_cast<std::size_t>(r)]->get(), recv[static_cast<std::size_t>(r)]->get(), count, root);
    });
    for (int r = 0; r < n; ++r) {
      INFO("broadcast root " << root << " rank " << r);
      CHECK(first_wrong(recv[static_cast<std::size_t>(r)]->take(), [&](std::size_t i) { return value<float>(input(ReduceOp::sum, root, i)); }) == -1);
    }
    auto out = buffers<std::int32_t>(count);
    auto in = buffers<std::int32_t>(count);
    for (int r = 0; r < n; ++r) in[static_cast<std::size_t>(r)]->put(inputs<std::int32_t>(ReduceOp::max, r, count));
    g_ranks->each([&](int r, nccl::Comm::View view) {
      // Off the root, recv is ignored: pass null there, as the contract allows.
      view.reduce(in[static_cast<std::size_t>(r)]->get(), r == root ? out[static_cast<std::size_t>(r)]->get() : nullptr, count,
                  ReduceOp::max, root);
    });
    INFO("reduce root " << root);
    CHECK(first_wrong(out[static_cast<std::size_t>(root)]->take(),
                      [&](std::size_t i) { return reference<std::int32_t>(ReduceOp::max, i, n); }) == -1);
  }
}

TEST_CASE("all_gather and reduce_scatter, out of place and in place", "[gpu][nccl]") {
  const int n = g_ranks->size();
  const std::size_t count = 1031;
  const std::size_t whole = count * static_cast<std::size_t>(n);
  for (bool in_place : {false, true}) {
    // all_gather: rank r's block is r*1000 + i; in place it already sits at its block of the output.
    auto send = buffers<std::int64_t>(count);
    auto recv = buffers<std::int64_t>(whole);
    for (int r = 0; r < n; ++r) {
      std::vector<std::int64_t> mine(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = r * 100000 + static_cast<std::int64_t>(i);
      if (in_place) {
        std::vector<std::int64_t> all(whole, -1);
        std::copy(mine.begin(), mine.end(), all.begin() + static_cast<long>(count) * r);
        recv[static_cast<std::size_t>(r)]->put(all);
      } else {
        send[static_cast<std::size_t>(r)]->put(mine);
      }
    }
    g_ranks->each([&](int r, nccl::Comm::View view) {
      std::int64_t* out = recv[static_cast<std::size_t>(r)]->get();
      view.all_gather(in_place ? out + count * static_cast<std::size_t>(r) : send[static_cast<std::size_t>(r)]->get(), out, count);
    });
    for (int r = 0; r < n; ++r) {
      INFO("all_gather rank " << r << (in_place ? " in place" : ""));
      CHECK(first_wrong(recv[static_cast<std::size_t>(r)]->take(), [&](std::size_t i) {
              return static_cast<std::int64_t>(i / count) * 100000 + static_cast<std::int64_t>(i % count);
            }) == -1);
    }

    // reduce_scatter: rank r gets block r of the sum; in place its block sits inside its input.
    auto input_all = buffers<float>(whole);
    auto output = buffers<float>(count);
    for (int r = 0; r < n; ++r) input_all[static_cast<std::size_t>(r)]->put(inputs<float>(ReduceOp::sum, r, whole));
    g_ranks->each([&](int r, nccl::Comm::View view) {
      float* in = input_all[static_cast<std::size_t>(r)]->get();
      view.reduce_scatter(in, in_place ? in + count * static_cast<std::size_t>(r) : output[static_cast<std::size_t>(r)]->get(), count,
                          ReduceOp::sum);
    });
    for (int r = 0; r < n; ++r) {
      std::vector<float> got = in_place ? input_all[static_cast<std::size_t>(r)]->take() : output[static_cast<std::size_t>(r)]->take();
      if (in_place) got = std::vector<float>(got.begin() + static_cast<long>(count) * r, got.begin() + static_cast<long>(count) * (r + 1));
      INFO("reduce_scatter rank " << r << (in_place ? " in place" : ""));
      CHECK(first_wrong(got, [&](std::size_t i) { return reference<float>(ReduceOp::sum, count * static_cast<std::size_t>(r) + i, n); }) == -1);
    }
  }
}

TEST_CASE("all_to_all, out of place and in place", "[gpu][nccl]") {
  const int n = g_ranks->size();
  const std::size_t count = 333;
  const std::size_t whole = count * static_cast<std::size_t>(n);
  for (bool in_place : {false, true}) {
    auto send = buffers<std::uint32_t>(whole);
    auto recv = buffers<std::uint32_t>(whole);
    // Rank r's block p (for peer p) holds r*1e6 + p*1e3 + i.
    for (int r = 0; r < n; ++r) {
      std::vector<std::uint32_t> v(whole);
      for (std::size_t j = 0; j < whole; ++j) v[j] = static_cast<std::uint32_t>(r * 1000000 + static_cast<int>(j / count) * 1000 + static_cast<int>(j % count));
      send[static_cast<std::size_t>(r)]->put(v);
    }
    g_ranks->each([&](int r, nccl::Comm::View view) {
      std::uint32_t* s = send[static_cast<std::size_t>(r)]->get();
      view.all_to_all(s, in_place ? s : recv[static_cast<std::size_t>(r)]->get(), count);
    });
    for (int r = 0; r < n; ++r) {
      INFO("all_to_all rank " << r << (in_place ? " in place" : ""));
      const auto got = (in_place ? send : recv)[static_cast<std::size_t>(r)]->take();
      // Block p of rank r's output is block r of rank p's input.
      CHECK(first_wrong(got, [&](std::size_t j) {
              return static_cast<std::uint32_t>(static_cast<int>(j / count) * 1000000 + r * 1000 + static_cast<int>(j % count));
            }) == -1);
    }
  }
}

TEST_CASE("send and recv around a ring, barrier, and the type-erased forms", "[gpu][nccl]") {
  const int n = g_ranks->size();
  if (n < 2) {
    WARN("send/recv need two GPUs; one visible");
  } else {
    const std::size_t count = 777;
    auto out = buffers<double>(count);
    auto in = buffers<double>(count);
    for (int r = 0; r < n; ++r) out[static_cast<std::size_t>(r)]->put(inputs<double>(ReduceOp::sum, r, count));
    g_ranks->each([&](int r, nccl::Comm::View view) {
      view.send(out[static_cast<std::size_t>(r)]->get(), count, (r + 1) % n);
      view.recv(static_cast<void*>(in[static_cast<std::size_t>(r)]->get()), count, DataType::float64, (r + n - 1) % n);
    });
    for (int r = 0; r < n; ++r) {
      INFO("recv on rank " << r);
      CHECK(first_wrong(in[static_cast<std::size_t>(r)]->take(), [&](std::size_t i) { return value<double>(input(ReduceOp::sum, (r + n - 1) % n, i)); }) == -1);
    }
  }
  g_ranks->each([](int, nccl::Comm::View view) { view.barrier(); });
  auto x = buffers<chorus::bfloat16>(100);
  for (int r = 0; r < n; ++r) x[static_cast<std::size_t>(r)]->put(inputs<chorus::bfloat16>(ReduceOp::sum, r, 100));
  g_ranks->each([&](int r, nccl::Comm::View view) {
    void* p = x[static_cast<std::size_t>(r)]->get();
    view.all_reduce(p, p, 100, DataType::bfloat16, ReduceOp::sum);
  });
  for (int r = 0; r < n; ++r) {
    CHECK(first_wrong(x[static_cast<std::size_t>(r)]->take(), [&](std::size_t i) { return reference<chorus::bfloat16>(ReduceOp::sum, i, n); }) == -1);
  }
}

TEST_CASE("split by parity: each part reduces over its own ranks", "[gpu][nccl]") {
  const int n = g_ranks->size();
  std::vector<nccl::Comm> parts(static_cast<std::size_t>(n));
  {
    nccl::Group group;  // one thread splits every communicator: NCCL needs them in one group
    for (int r = 0; r < n; ++r) parts[static_cast<std::size_t>(r)] = g_ranks->comms[static_cast<std::size_t>(r)].split(r == n - 1 && n > 2 ? -1 : r % 2, r);
    group.end();
  }
  auto x = buffers<std::int32_t>(64);
  for (int r = 0; r < n; ++r) x[static_cast<std::size_t>(r)]->put(std::vector<std::int32_t>(64, r + 1));
  {
    nccl::Group group;
    for (int r = 0; r < n; ++r) {
      auto& part = parts[static_cast<std::size_t>(r)];
      if (!part) continue;
      std::int32_t* p = x[static_cast<std::size_t>(r)]->get();
      part.on(g_ranks->streams[static_cast<std::size_t>(r)]).all_reduce(p, p, 64, ReduceOp::sum);
    }
    group.end();
  }
  for (int r = 0; r < n; ++r) {
    auto& part = parts[static_cast<std::size_t>(r)];
    if (!part) {
      CHECK(part.size() == 0);
      continue;
    }
    part.wait(g_ranks->streams[static_cast<std::size_t>(r)]);
    std::int32_t want = 0;
    int members = 0;
    for (int q = 0; q < n; ++q) {
      const bool excluded = q == n - 1 && n > 2;
      if (!excluded && q % 2 == r % 2) {
        want += q + 1;
        ++members;
      }
    }
    INFO("rank " << r);
    CHECK(part.size() == members);
    CHECK(x[static_cast<std::size_t>(r)]->take() == std::vector<std::int32_t>(64, want));
  }
}

TEST_CASE("bad arguments on a real communicator fail before NCCL", "[gpu][nccl]") {
  auto& comm = g_ranks->comms[0];
  float* p = nullptr;
  CHECK_THROWS_WITH(comm.on(g_ranks->streams[0]).all_reduce(p, p, 8, ReduceOp::sum), Catch::Contains("send buffer is null"));
  CHECK_THROWS_WITH(comm.on(g_ranks->streams[0]).all_reduce(p, p, 0, ReduceOp::sum, chorus::Algorithm::tree),
                    Catch::Contains("NCCL chooses its own algorithm"));
}

TEST_CASE("init_rank on host::Team threads, one per GPU, the id sent with broadcast_object", "[gpu][nccl]") {
  const int n = g_ranks->size();
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::vector<std::int64_t>> results(static_cast<std::size_t>(n));
  chorus::host::Team team(n);
  team.run([&](chorus::host::Comm& host) {
    const auto r = static_cast<std::size_t>(host.rank());
    try {
      cuda_ok(cudaSetDevice(g_ranks->devices[r]), "cudaSetDevice");
      ncclUniqueId id{};
      if (host.rank() == 0) id = nccl::Comm::unique_id();
      chorus::bootstrap::broadcast_object(host, id);
      nccl::Comm comm = nccl::Comm::init_rank(host.size(), id, host.rank());
      DeviceBuffer<std::int64_t> x(g_ranks->devices[r], 1000);
      x.put(std::vector<std::int64_t>(1000, host.rank() + 1));
      auto view = comm.on(g_ranks->streams[r]);
      view.all_reduce(x.get(), x.get(), 1000, ReduceOp::sum);
      view.barrier();
      view.wait();
      results[r] = x.take();
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
  });
  for (int r = 0; r < n; ++r) {
    INFO("thread rank " << r);
    CHECK(errors[static_cast<std::size_t>(r)].empty());
    CHECK(results[static_cast<std::size_t>(r)] == std::vector<std::int64_t>(1000, static_cast<std::int64_t>(n) * (n + 1) / 2));
  }
}

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("skipped: no GPU visible (cudaGetDeviceCount: %s, %d devices)\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "no error", devices);
    return 77;
  }
  int result = 1;
  try {
    Ranks ranks(devices);
    g_ranks = &ranks;
    int version = 0;
    ncclGetVersion(&version);
    std::printf("NCCL test on %d GPU(s), NCCL %d\n", devices, version);
    result = Catch::Session().run(argc, argv);
    g_ranks = nullptr;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_nccl_gpu: %s\n", e.what());
    return 1;
  }
  return result;
}
