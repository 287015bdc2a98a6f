// Example 02: code written once for any communicator.
//
// A data-parallel step averages gradients across ranks. Written as a template over the
// communicator, and constrained on chorus::is_communicator_v, the same function runs on host
// threads today and on MPI processes or GPUs when those backends arrive: every backend's Comm has
// the same members with the same meaning (docs/communicator.md).
//
// Two ways to call a collective:
//   typed         comm.all_reduce(float*, float*, count, op)     the element type comes from T
//   type-erased   comm.all_reduce(void*, void*, count, DataType, op)
//                 for code that learns the type at run time: a gradient bucket holding tensors of
//                 different types, a benchmark's -d flag.
// And the algorithm can be forced on any collective, or left to the backend (automatic).
#include <chorus/core/communicator.hpp>
#include <chorus/host.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

namespace {

// A bucket of gradients whose element type is known only at run time.
struct Bucket {
  chorus::DataType type;
  std::vector<unsigned char> bytes;
  std::size_t count() const { return bytes.size() / chorus::size_of(type); }
};

template <class Comm, class = std::enable_if_t<chorus::is_communicator_v<Comm>>>
void average(Comm& comm, std::vector<float>& grad, Bucket& bucket) {
  comm.all_reduce(grad.data(), grad.data(), grad.size(), chorus::ReduceOp::avg);  // typed
  comm.all_reduce(bucket.bytes.data(), bucket.bytes.data(), bucket.count(), bucket.type,  // type-erased,
                  chorus::ReduceOp::avg, chorus::Algorithm::ring);                       // ring forced
}

}  // namespace

int main() {
  static_assert(chorus::is_communicator_v<chorus::host::Comm>, "the host backend keeps the contract");
  constexpr int kRanks = 4;
  chorus::host::Team team(kRanks);
  std::vector<float> first_grad(kRanks);
  std::vector<std::int64_t> first_bucket(kRanks);
  team.run([&](chorus::host::Comm& comm) {
    const int r = comm.rank();
    std::vector<float> grad(3, static_cast<float>(r));  // rank r holds r: the average is 1.5
    Bucket bucket{chorus::DataType::int64, std::vector<unsigned char>(5 * sizeof(std::int64_t))};
    std::vector<std::int64_t> values(5, 10 * (r + 1));  // 10, 20, 30, 40: the average is 25
    std::copy_n(reinterpret_cast<const unsigned char*>(values.data()), bucket.bytes.size(), bucket.bytes.data());
    average(comm, grad, bucket);
    first_grad[static_cast<std::size_t>(r)] = grad[0];
    auto* first = reinterpret_cast<unsigned char*>(&first_bucket[static_cast<std::size_t>(r)]);
    std::copy_n(bucket.bytes.data(), sizeof(std::int64_t), first);
  });
  bool ok = true;
  for (int r = 0; r < kRanks; ++r) {
    std::printf("rank %d: float gradient average %.2f, int64 bucket average %lld\n", r,
                static_cast<double>(first_grad[static_cast<std::size_t>(r)]),
                static_cast<long long>(first_bucket[static_cast<std::size_t>(r)]));
    ok = ok && first_grad[static_cast<std::size_t>(r)] == 1.5f && first_bucket[static_cast<std::size_t>(r)] == 25;
  }
  std::printf(ok ? "every rank holds the averages\n" : "WRONG: some rank holds something else\n");
  return ok ? 0 : 1;
}
