// What each rank of a multi-process CUDA communicator publishes to its peers (through a host
// communicator's all_gather) before any kernel runs, and the checks every rank applies to all of them.
// Plain C++17, no CUDA header: a memory handle is an opaque 64-byte array, as cudaIpcMemHandle_t is, so
// the CPU twin (cuda/twin/ipc_twin.hpp) publishes and checks the very same records.
//
// Two exchanges of this record (cuda/ipc_bootstrap.hpp):
//   hello:  magic, version, rank, nranks, bus id, and the most blocks this rank's GPU can keep resident.
//           Refuses a wrong version or two ranks on one GPU before anything is allocated, and agrees on
//           blocks = the minimum over ranks; the scratch layout depends on blocks (the FIFO is per block),
//           so it cannot be sized, nor its memory allocated and exported, before this.
//   memory: the same, plus the agreed blocks, the layout sized from it, and the handles of the scratch
//           and signals just allocated.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

inline constexpr std::uint32_t kIpcRecordMagic = 0x43485243u;  // "CHRC"
inline constexpr std::uint32_t kIpcRecordVersion = 1;           // bump when IpcRecord or RankView changes

// An exported allocation: cudaIpcMemHandle_t's bytes on a GPU; the twin's own token on the CPU.
struct IpcHandle {
  unsigned char bytes[64];
};
static_assert(sizeof(IpcHandle) == 64, "cudaIpcMemHandle_t is 64 bytes");

enum class IpcStage : std::uint32_t { hello = 1, memory = 2 };

struct IpcRecord {
  std::uint32_t magic;
  std::uint32_t version;
  IpcStage stage;
  std::int32_t rank;
  std::int32_t nranks;
  std::int32_t failed;  // nonzero: this rank could not prepare its part (it throws its own error)
  char bus_id[32];      // cudaDeviceGetPCIBusId, e.g. "0000:3b:00.0"
  std::int32_t blocks;  // hello: this rank's most resident blocks; memory: the agreed blocks
  kernel::ScratchLayout layout;  // memory stage only (zero at hello)
  IpcHandle scratch;             // memory stage only
  IpcHandle signals;             // memory stage only
};

// A record with the fixed fields filled and everything else zero (so padding bytes are defined too).
inline IpcRecord make_ipc_record(IpcStage stage, int rank, int nranks, const char* bus_id, int blocks) {
  IpcRecord record;
  std::memset(&record, 0, sizeof(record));
  record.magic = kIpcRecordMagic;
  record.version = kIpcRecordVersion;
  record.stage = stage;
  record.rank = rank;
  record.nranks = nranks;
  record.blocks = blocks;
  for (std::size_t i = 0; i + 1 < sizeof(record.bus_id) && bus_id[i] != '\0'; ++i) record.bus_id[i] = bus_id[i];
  return record;
}

inline bool same_layout(const kernel::ScratchLayout& a, const kernel::ScratchLayout& b) {
  return a.staging_bytes == b.staging_bytes && a.result_bytes == b.result_bytes && a.ll_bytes == b.ll_bytes &&
         a.fifo_bytes == b.fifo_bytes && a.fifo_slot_bytes == b.fifo_slot_bytes && a.fifo_depth == b.fifo_depth &&
         a.tree_bytes == b.tree_bytes && a.p2p_bytes == b.p2p_bytes && a.p2p_sources == b.p2p_sources;
}

namespace ipc_detail {
// A bus id as text even if a peer sent one without a terminator.
inline std::string bus_id_of(const IpcRecord& record) {
  std::size_t length = 0;
  while (length < sizeof(record.bus_id) && record.bus_id[length] != '\0') ++length;
  return std::string(record.bus_id, length);
}
}  // namespace ipc_detail

// Every record, in rank order as all_gather returned them. Identical on every rank, so every rank refuses
// the same way; the error names the rank whose record is wrong and the bad value.
inline void validate_records(const std::vector<IpcRecord>& records, const char* call) {
  const int n = static_cast<int>(records.size());
  if (n < 1 || n > kernel::kMaxRanks) {
    throw Error(ErrorCode::invalid_argument,
                detail::concat("chorus::", call, ": ranks must be 1..", kernel::kMaxRanks, ", got ", n));
  }
  for (int r = 0; r < n; ++r) {
    const IpcRecord& record = records[static_cast<std::size_t>(r)];
    if (record.magic != kIpcRecordMagic) {
      throw make_error(ErrorCode::mismatch, call, r, "its record has magic ", record.magic, ", expected ", kIpcRecordMagic,
                       " (not a chorus IPC record: do all ranks run this bootstrap?)");
    }
    if (record.version != kIpcRecordVersion) {
      throw make_error(ErrorCode::mismatch, call, r, "record version ", record.version, ", expected ", kIpcRecordVersion,
                       " (every process must be built from the same chorus)");
    }
    if (record.stage != records[0].stage) {
      throw make_error(ErrorCode::mismatch, call, r, "is at bootstrap stage ", static_cast<std::uint32_t>(record.stage),
                       ", rank 0 at ", static_cast<std::uint32_t>(records[0].stage));
    }
    if (record.rank != r) {
      throw make_error(ErrorCode::mismatch, call, r, "the record at position ", r, " says rank ", record.rank);
    }
    if (record.nranks != n) {
      throw make_error(ErrorCode::mismatch, call, r, "nranks ", record.nranks, ", but ", n, " ranks exchanged records");
    }
    if (record.failed != 0) {
      throw make_error(ErrorCode::peer_failed, call, r, "failed before this exchange (its own error says why)");
    }
    if (record.blocks < 1 || record.blocks > kernel::kMaxBlocks) {
      throw make_error(ErrorCode::invalid_argument, call, r, "blocks ", record.blocks, " not in 1..", kernel::kMaxBlocks);
    }
    if (record.stage == IpcStage::memory && record.blocks != records[0].blocks) {
      throw make_error(ErrorCode::mismatch, call, r, "blocks ", record.blocks, ", rank 0 ", records[0].blocks,
                       " (the agreed minimum must be used by all)");
    }
    if (!same_layout(record.layout, records[0].layout)) {
      throw make_error(ErrorCode::mismatch, call, r, "scratch layout of ", record.layout.total_bytes(), " bytes (staging ",
                       record.layout.staging_bytes, ", LL ", record.layout.ll_bytes, ", FIFO ", record.layout.fifo_depth, " x ",
                       record.layout.fifo_slot_bytes, "), rank 0 has ", records[0].layout.total_bytes(), " (staging ",
                       records[0].layout.staging_bytes, ", LL ", records[0].layout.ll_bytes, ", FIFO ",
                       records[0].layout.fifo_depth, " x ", records[0].layout.fifo_slot_bytes,
                       "): every rank must pass the same TeamOptions");
    }
    // Two ranks in separate launches on one GPU could each wait for a kernel that never gets an SM.
    for (int k = 0; k < r; ++k) {
      if (ipc_detail::bus_id_of(record) == ipc_detail::bus_id_of(records[static_cast<std::size_t>(k)])) {
        throw make_error(ErrorCode::invalid_argument, call, r, "GPU ", ipc_detail::bus_id_of(record), " is also rank ", k,
                         "'s; one GPU per rank (for several ranks on one GPU use cuda::Team::virtual_ranks)");
      }
    }
  }
}

// The blocks every rank uses: the fewest any rank's GPU keeps resident (hello records, validated).
inline int agreed_blocks(const std::vector<IpcRecord>& records) {
  int blocks = records.at(0).blocks;
  for (const IpcRecord& record : records) blocks = record.blocks < blocks ? record.blocks : blocks;
  return blocks;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
