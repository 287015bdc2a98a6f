// What one shared-memory communicator's segment holds, and where. One segment per communicator,
// mapped by every rank at the same size; nothing in it is a pointer (each process maps it at its own
// address), only offsets from the segment's start.
//
//   Header          magic, version, rank count, FIFO geometry, how many ranks have mapped it, the
//                   first failure's report (rank, code, text), written once by whoever fails first
//   RankControl[n]  per rank: pid, the last call it posted and that call's descriptor (two slots,
//                   by sequence parity), whether it left cleanly
//   FifoControl[n(n-1)]  per ordered pair (sender, receiver): slots released (tail, by the receiver),
//                   on a cache line of its own
//   slots           per ordered pair, `slots` slots of a cache line (SlotHeader, and a piece of up to
//                   24 bytes) + `slot_bytes` payload
//
// Sizes: with the defaults (4 slots of 256 KiB per pair) 2 ranks map 2 MiB, 4 ranks 12 MiB, 8 ranks
// 56 MiB, plus a few KiB of control; docs/shm.md has the table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "../runtime/wire_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

inline constexpr std::uint64_t kMagic = 0x73756d6f6863ULL;  // "chorus" backwards, little-endian
inline constexpr std::uint32_t kLayoutVersion = 1;
inline constexpr std::size_t kLine = 64;
inline constexpr std::size_t kReportBytes = 1536;

inline constexpr std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

struct alignas(kLine) Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t ranks;
  std::uint64_t slot_bytes;
  std::uint32_t slots;
  std::int32_t creator_pid;
  std::uint64_t creator_pid_namespace;  // pid_namespace() of the creator (segment.hpp)
  std::atomic<std::int32_t> mapped;     // ranks that have mapped the segment and written their pid
  std::atomic<std::int32_t> ready;      // 1: every rank has mapped it and the name is unlinked
  // The first failure: `failed` goes 0 -> 1 by one compare-exchange, the winner writes the report
  // and sets `reported`; the others read it once `reported` is 1.
  std::atomic<std::int32_t> failed;
  std::atomic<std::int32_t> reported;
  std::int32_t failed_rank;
  std::int32_t failed_code;
  char report[kReportBytes];
};

struct alignas(kLine) RankControl {
  std::atomic<std::int32_t> pid;
  std::uint64_t pid_namespace;          // inode of /proc/self/ns/pid: pids compare only within one
  std::atomic<std::int32_t> left;       // 1: destroyed its communicator normally
  std::atomic<std::uint64_t> posted;    // sequence of the last call whose descriptor is in calls[]
  runtime::WireCall calls[2];           // calls[sequence % 2]
};

// A pair's one shared counter: slots released by the receiver (the sender reads it only when its ring
// looks full). Slots announce themselves (SlotHeader::serial), so there is no head counter to poll.
struct alignas(kLine) FifoControl {
  std::atomic<std::uint64_t> tail;
};

// What a slot carries besides its bytes.
enum class SlotKind : std::uint32_t { collective = 1, message = 2 };

// A slot: this header, then its payload. A piece of up to kInlineBytes travels in the header's own cache
// line (a small call moves one line from sender to receiver); larger pieces start on the next line, so
// the loops that copy and reduce them read aligned lines.
struct SlotHeader {
  // The slot's number in its FIFO's stream, plus one, stored last (release): the receiver waiting for
  // message k polls this word of slot k % slots until it reads k + 1. No head counter to poll.
  std::atomic<std::uint64_t> serial;
  std::uint64_t sequence;  // the collective's call number, or the pair's message number
  std::uint64_t bytes;     // the whole message's bytes (a message larger than a slot spans several)
  std::uint64_t offset;    // where this slot's piece starts in the message
  SlotKind kind;
  std::uint32_t piece_bytes;
};
inline constexpr std::size_t kInlineBytes = kLine - sizeof(SlotHeader);
static_assert(kInlineBytes == 24, "a slot's header leaves 24 bytes of its line for a small piece");

// Offsets of everything in a segment of `ranks` ranks with `slots` slots of `slot_bytes` per pair.
struct Layout {
  int ranks = 0;
  std::size_t slot_bytes = 0;
  std::uint32_t slots = 0;
  std::size_t rank_control = 0;  // offset of RankControl[0]
  std::size_t fifo_control = 0;  // offset of FifoControl[0]
  std::size_t slot_data = 0;     // offset of the first pair's first slot
  std::size_t slot_stride = 0;   // SlotHeader + payload, rounded up to a line
  std::size_t total = 0;

  Layout(int ranks_in, std::size_t slot_bytes_in, std::uint32_t slots_in)
      : ranks(ranks_in), slot_bytes(round_up(slot_bytes_in, kLine)), slots(slots_in) {
    const auto n = static_cast<std::size_t>(ranks);
    rank_control = round_up(sizeof(Header), kLine);
    fifo_control = rank_control + n * sizeof(RankControl);
    slot_data = round_up(fifo_control + pairs() * sizeof(FifoControl), 4096);
    slot_stride = kLine + slot_bytes;
    total = round_up(slot_data + pairs() * slots * slot_stride, 4096);
  }

  std::size_t pairs() const { return static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks - 1); }

  // Index of the FIFO from `sender` to `receiver` (sender != receiver).
  std::size_t pair(int sender, int receiver) const {
    return static_cast<std::size_t>(sender) * static_cast<std::size_t>(ranks - 1) +
           static_cast<std::size_t>(receiver < sender ? receiver : receiver - 1);
  }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
