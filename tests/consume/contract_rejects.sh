#!/usr/bin/env bash
# A type that misses part of the communicator contract is rejected at compile time with a message
# that names the missing member (not pages of template errors first).
# Usage: contract_rejects.sh SOURCE_ROOT CXX
set -uo pipefail
root=$1 cxx=$2
out=$("$cxx" -std=c++17 -fsyntax-only -I "$root/include" "$root/tests/consume/incomplete_comm.cpp" 2>&1)
if [ $? -eq 0 ]; then
  echo "FAIL: a communicator without reduce_scatter compiled"
  exit 1
fi
want='chorus communicator contract: missing typed `reduce_scatter(const T\*, T\*, size_t, ReduceOp)`'
if ! echo "$out" | grep -q "$want"; then
  echo "FAIL: the compiler did not say which member is missing; it said:"
  echo "$out" | head -n 20
  exit 1
fi
first=$(echo "$out" | grep -m1 "error")
echo "rejected as expected: $first"
