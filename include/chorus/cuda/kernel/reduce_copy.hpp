// The one data-moving primitive of the kernels: k sources folded element-wise, in the order given, into
// m destinations (k = 1 is a copy). A block's lanes stride over the span; when every pointer has the same
// misalignment the body moves 16-byte packs (one vector load per source, one vector store per
// destination) with a scalar head and tail around it.
//
// Each element is folded exactly as the host backend folds it (chorus::combine: half and bfloat16
// widen to float and round after every step), so a kernel and the schedule it implements give the same
// bits; `divide_ranks` > 0 finishes avg with the host's divide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../core/config.hpp"
#include "../../core/reduce_op.hpp"
#include "partition.hpp"
#include "rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

inline constexpr int kMaxSources = kMaxRanks + 1;
inline constexpr int kMaxDestinations = kMaxRanks + 1;

template <class T>
struct alignas(kPackBytes) Pack {
  static constexpr std::size_t kElements = kPackBytes / sizeof(T);
  T value[kElements];
};

template <class T>
CHORUS_HOST_DEVICE inline Pack<T> load_pack(const T* address) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Pack<T>*>(address);  // one 128-bit load
#else
  Pack<T> pack;
  std::memcpy(static_cast<void*>(&pack), address, sizeof(pack));
  return pack;
#endif
}

template <class T>
CHORUS_HOST_DEVICE inline void store_pack(T* address, const Pack<T>& pack) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Pack<T>*>(address) = pack;  // one 128-bit store
#else
  std::memcpy(static_cast<void*>(address), &pack, sizeof(pack));
#endif
}

template <class T>
struct ReduceCopyArgs {
  const T* sources[kMaxSources];
  int source_count;
  T* destinations[kMaxDestinations];
  int destination_count;
  ReduceOp op;
  int divide_ranks;  // > 0: divide the folded value by it (avg's last pass)
};

template <class T>
CHORUS_HOST_DEVICE inline T fold_element(const ReduceCopyArgs<T>& args, std::size_t i) {
  T acc = args.sources[0][i];
  for (int k = 1; k < args.source_count; ++k) acc = combine(args.op, acc, args.sources[k][i]);
  if (args.divide_ranks > 0) acc = divide_by(acc, args.divide_ranks);
  return acc;
}

template <class T>
CHORUS_HOST_DEVICE inline bool same_misalignment(const ReduceCopyArgs<T>& args) {
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(args.sources[0]) % kPackBytes;
  bool same = true;
  for (int k = 1; k < args.source_count; ++k) same &= reinterpret_cast<std::uintptr_t>(args.sources[k]) % kPackBytes == first;
  for (int d = 0; d < args.destination_count; ++d) {
    same &= reinterpret_cast<std::uintptr_t>(args.destinations[d]) % kPackBytes == first;
  }
  return same;
}

// Elements [0, count) of every pointer in `args`; this lane's share: every lanes()-th element or pack.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline void reduce_copy(const Block& block, const ReduceCopyArgs<T>& args, std::size_t count) {
  const std::size_t lane = static_cast<std::size_t>(block.lane());
  const std::size_t lanes = static_cast<std::size_t>(block.lanes());
  const PackSplit split = pack_split(reinterpret_cast<std::uintptr_t>(args.sources[0]), same_misalignment(args),
                                     count, sizeof(T));
  for (std::size_t i = lane; i < split.head; i += lanes) {
    const T value = fold_element(args, i);
    for (int d = 0; d < args.destination_count; ++d) args.destinations[d][i] = value;
  }
  constexpr std::size_t per_pack = Pack<T>::kElements;
  for (std::size_t p = lane; p < split.packs; p += lanes) {
    const std::size_t first = split.head + p * per_pack;
    Pack<T> acc = load_pack(args.sources[0] + first);
    for (int k = 1; k < args.source_count; ++k) {
      const Pack<T> next = load_pack(args.sources[k] + first);
      for (std::size_t e = 0; e < per_pack; ++e) acc.value[e] = combine(args.op, acc.value[e], next.value[e]);
    }
    if (args.divide_ranks > 0) {
      for (std::size_t e = 0; e < per_pack; ++e) acc.value[e] = divide_by(acc.value[e], args.divide_ranks);
    }
    for (int d = 0; d < args.destination_count; ++d) store_pack(args.destinations[d] + first, acc);
  }
  const std::size_t tail_start = split.head + split.packs * per_pack;
  for (std::size_t i = tail_start + lane; i < count; i += lanes) {
    const T value = fold_element(args, i);
    for (int d = 0; d < args.destination_count; ++d) args.destinations[d][i] = value;
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
