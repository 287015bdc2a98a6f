// An MSCCL program as msccl-executor-nccl reads it from XML: the <algo> header, one Gpu per rank,
// its thread blocks and their steps. Fields are named after the XML attributes they come from, so
// a reader of a file finds each value under the name it has there. Offsets and counts are in
// chunks (nchunksperloop chunks cover the largest buffer), not elements or bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl {

// The wire protocol NCCL uses on the program's connections; it never changes the result.
enum class Protocol : std::uint8_t { simple, ll, ll128 };

inline const char* to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::simple: return "Simple";
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
  }
  return "?";
}

// Every step type the executor accepts. What each reads and writes locally is in the predicates
// below; the send-type and receive-type ones are matched FIFO per (sender, receiver, channel).
enum class StepType : std::uint8_t {
  send,                   // s
  recv,                   // r
  recv_copy_send,         // rcs
  recv_reduce_copy,       // rrc
  recv_reduce_send,       // rrs
  recv_reduce_copy_send,  // rrcs
  copy,                   // cpy
  reduce,                 // re
  nop,                    // nop: only its dependency
};

inline constexpr StepType kStepTypes[] = {StepType::send,           StepType::recv,
                                          StepType::recv_copy_send, StepType::recv_reduce_copy,
                                          StepType::recv_reduce_send, StepType::recv_reduce_copy_send,
                                          StepType::copy,           StepType::reduce,
                                          StepType::nop};

// The XML spelling.
inline const char* to_string(StepType type) {
  switch (type) {
    case StepType::send: return "s";
    case StepType::recv: return "r";
    case StepType::recv_copy_send: return "rcs";
    case StepType::recv_reduce_copy: return "rrc";
    case StepType::recv_reduce_send: return "rrs";
    case StepType::recv_reduce_copy_send: return "rrcs";
    case StepType::copy: return "cpy";
    case StepType::reduce: return "re";
    case StepType::nop: return "nop";
  }
  return "?";
}

// Sends a message on the thread block's send connection.
inline bool sends(StepType type) {
  return type == StepType::send || type == StepType::recv_copy_send || type == StepType::recv_reduce_send ||
         type == StepType::recv_reduce_copy_send;
}
// Takes a message from the thread block's receive connection.
inline bool receives(StepType type) {
  return type == StepType::recv || type == StepType::recv_copy_send || type == StepType::recv_reduce_copy ||
         type == StepType::recv_reduce_send || type == StepType::recv_reduce_copy_send;
}
// Reads srcbuf[srcoff, srcoff+cnt) on the executing rank (the executor's reading: the local
// operand of the rr* steps is the src side).
inline bool reads_src(StepType type) {
  return type == StepType::send || type == StepType::recv_reduce_copy || type == StepType::recv_reduce_send ||
         type == StepType::recv_reduce_copy_send || type == StepType::copy || type == StepType::reduce;
}
// Writes dstbuf[dstoff, dstoff+cnt) on the executing rank (re also reads it).
inline bool writes_dst(StepType type) {
  return type == StepType::recv || type == StepType::recv_copy_send || type == StepType::recv_reduce_copy ||
         type == StepType::recv_reduce_copy_send || type == StepType::copy || type == StepType::reduce;
}

// The XML's buffer letters: i, o, s.
inline char buffer_letter(Buffer buffer) {
  switch (buffer) {
    case Buffer::input: return 'i';
    case Buffer::output: return 'o';
    case Buffer::scratch: return 's';
  }
  return '?';
}

struct Step {
  int s = 0;  // index in its thread block, 0..n-1
  StepType type = StepType::nop;
  Buffer srcbuf = Buffer::input;
  int srcoff = -1;  // -1 where the step does not use this side (msccl-tools writes -1 there)
  Buffer dstbuf = Buffer::output;
  int dstoff = -1;
  int cnt = 0;      // chunks, moved as one message
  int depid = -1;   // thread block on the same gpu this step waits for, -1 = none
  int deps = -1;    // ... until that block has finished this step (and flagged it)
  bool hasdep = false;  // others wait for this step: the executor flags its completion
  int line = 0;     // of the <step> element, for later error messages
};

struct ThreadBlock {
  int id = 0;
  int send = -1;  // peer this block sends to, -1 = none
  int recv = -1;  // peer this block receives from, -1 = none
  int chan = 0;
  std::vector<Step> steps;
  int line = 0;
};

struct Gpu {
  int id = 0;
  int i_chunks = 0;  // chunks of each buffer the program touches on this rank
  int o_chunks = 0;
  int s_chunks = 0;  // the scratch buffer's size
  std::vector<ThreadBlock> thread_blocks;  // index == id
  int line = 0;

  int chunks(Buffer buffer) const {
    return buffer == Buffer::input ? i_chunks : buffer == Buffer::output ? o_chunks : s_chunks;
  }
};

struct Program {
  std::string name;  // optional in the file
  Protocol proto = Protocol::simple;
  int ngpus = 0;
  Collective coll = Collective::all_reduce;
  std::string coll_name;  // as spelled in the file (reduce_scatter or reducescatter)
  int nchunksperloop = 0;
  int nchannels = 0;
  bool inplace = false;
  bool outofplace = true;   // when absent: not inplace
  std::string redop;        // empty when absent
  std::int64_t min_bytes = 0;  // minBytes, maxBytes: the executor's size window, 0 = no limit
  std::int64_t max_bytes = 0;
  std::vector<Gpu> gpus;  // index == id == rank
  int line = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl
