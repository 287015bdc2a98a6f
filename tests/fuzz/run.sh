#!/usr/bin/env bash
# Builds each text parser's libFuzzer harness (nvidia-smi topo -m, NCCL's topology XML, MSCCL's algorithm
# XML) with Debian's clang (ASan + UBSan) and runs it for a bounded time over its corpus
# (tests/fuzz/corpus/<parser>/). Exit status: 0 clean, 1 a crash or a broken property (the input is kept
# under the work directory and printed), 77 when clang or libFuzzer is missing (meson counts that as skipped).
#   usage: tests/fuzz/run.sh [seconds per parser, default 20] [work directory]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-${CHORUS_FUZZ_SECONDS:-20}}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/chorus-fuzz-XXXXXX")}
mkdir -p "$work"

cxx=""
for candidate in clang++-14 clang++; do
  if command -v "$candidate" >/dev/null 2>&1; then cxx=$candidate; break; fi
done
if [ -z "$cxx" ]; then echo "fuzz: no clang++ found; skipped"; exit 77; fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
     "$cxx" -x c++ -fsanitize=fuzzer - -o "$work/probe" >/dev/null 2>&1; then
  echo "fuzz: $cxx cannot link -fsanitize=fuzzer (libclang_rt.fuzzer missing); skipped"; exit 77
fi

status=0
for parser in nvsmi nccl_xml msccl; do
  binary="$work/fuzz_$parser"
  echo "=== fuzz $parser: building with $cxx"
  if ! "$cxx" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
       -I "$root/include" "$here/fuzz_$parser.cpp" -o "$binary"; then
    echo "=== fuzz $parser: build FAILED"; status=1; continue
  fi
  # New inputs go to a scratch copy; the checked-in corpus is only read.
  scratch="$work/corpus_$parser"
  mkdir -p "$scratch" "$work/artifacts_$parser"
  echo "=== fuzz $parser: running ${seconds}s"
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
     "$binary" "$scratch" "$here/corpus/$parser" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=8192 -print_final_stats=1 -artifact_prefix="$work/artifacts_$parser/" >"$work/log_$parser.txt" 2>&1; then
    grep -E "^stat::number_of_executed_units|^Done" "$work/log_$parser.txt" | sed "s/^/    /"
    echo "=== fuzz $parser: clean"
  else
    tail -n 40 "$work/log_$parser.txt"
    echo "=== fuzz $parser: FAILED; inputs kept in $work/artifacts_$parser/"
    ls "$work/artifacts_$parser/"
    status=1
  fi
done
exit $status
