// A kernel's TimeoutRecord as the chorus::Error the host throws: who waited for whom, at which step, and
// what it saw. Shared by the CPU twin's teams and the CUDA communicators so every backend words it alike.
// Host code only (the record is read after the kernel finished, or after its bounded wait).
#pragma once

#include <cstdint>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/all_reduce_call.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Whether `record` holds a timeout (acquire: its fields were written before `timed_out`).
inline bool timed_out(const kernel::TimeoutRecord& record) {
  return __atomic_load_n(&record.timed_out, __ATOMIC_ACQUIRE) != 0;
}

// `kernel_name` names what ran ("ring", "p2p", ...).
inline Error timeout_error(const kernel::TimeoutRecord& record, const char* call, const char* kernel_name, long long timeout_ms) {
  return make_error(ErrorCode::timeout, call, record.rank, kernel_name, " block ", record.block, " waited ", timeout_ms,
                    " ms for rank ", record.peer, " (", kernel::to_string(static_cast<kernel::WaitKind>(record.wait)), ", step ",
                    record.step, "): expected ", record.expected, ", saw ", record.seen);
}
inline Error timeout_error(const kernel::TimeoutRecord& record, const char* call, kernel::KernelAlgorithm algorithm,
                           long long timeout_ms) {
  return timeout_error(record, call, kernel::to_string(algorithm), timeout_ms);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
