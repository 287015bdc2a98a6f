#!/usr/bin/env bash
# What the communicator contract refuses is refused at compile time, with a message that says why
# (not pages of template errors first):
#   - a type that misses part of the contract: check_communicator names the missing member;
#   - a device-memory communicator handed to generic code that copies with the CPU: require_host_memory.
# Usage: contract_rejects.sh SOURCE_ROOT CXX
set -uo pipefail
root=$1 cxx=$2
failed=0

# rejects SOURCE WANT [ONLY [ALSO]]: SOURCE must fail to compile with WANT (a grep pattern) in the
# output; ONLY=only: with exactly one error; ALSO: a second pattern the output must hold.
rejects() {
  local source=$1 want=$2 only=${3:-} also=${4:-}
  local out
  out=$("$cxx" -std=c++17 -fsyntax-only -I "$root/include" "$root/tests/consume/$source" 2>&1)
  if [ $? -eq 0 ]; then
    echo "FAIL: $source compiled"
    failed=1
    return
  fi
  if ! echo "$out" | grep -q "$want" || { [ -n "$also" ] && ! echo "$out" | grep -q "$also"; }; then
    echo "FAIL: $source: the compiler did not say why; it said:"
    echo "$out" | head -n 20
    failed=1
    return
  fi
  local errors
  errors=$(echo "$out" | grep -c "error:")
  if [ "$only" = only ] && [ "$errors" -ne 1 ]; then
    echo "FAIL: $source: expected one error, got $errors:"
    echo "$out" | grep "error:" | head -n 10
    failed=1
    return
  fi
  echo "$source rejected as expected: $(echo "$out" | grep -m1 "error")"
}

rejects incomplete_comm.cpp 'chorus communicator contract: missing typed `reduce_scatter(const T\*, T\*, size_t, ReduceOp)`'
# The message is require_host_memory's; the compiler's "required from" line names the generic code.
rejects device_comm_on_cpu.cpp 'chorus: this generic code copies with the CPU: it needs a communicator whose buffers are host memory' \
  only 'required from .*class chorus::.*parallel::GradientReducer<DeviceComm>'
exit $failed
