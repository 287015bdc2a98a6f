#!/bin/bash
# chorus-trace-summary on real dumps and on bad input (bench/trace/meson.build).
#   check_trace_summary.sh host TOOL EXAMPLE_10          the host hang's dumps
#   check_trace_summary.sh bad  TOOL EXAMPLE_10          bad input exits 2 with a reason
#   check_trace_summary.sh mpi  TOOL EXAMPLE_12 MPIRUN   one dump per MPI process, 3 processes
set -u
mode=$1 tool=$2 program=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # expect TEXT WHAT: WHAT occurs in TEXT
  grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $1"
}
# expect_error REASON FILES...: the tool exits 2 with "chorus-trace-summary: error: ...REASON..." and prints nothing
expect_error() {
  local reason=$1
  shift
  local out err rc
  out=$("$tool" "$@" 2>"$work/err")
  rc=$?
  err=$(cat "$work/err")
  echo "$* -> $rc: $err"
  [ "$rc" -eq 2 ] || fail "exit status $rc, not 2, for $*"
  [ -z "$out" ] || fail "printed a summary for bad input: $out"
  expect "$err" "chorus-trace-summary: error: "
  expect "$err" "$reason"
}
host_dumps() {  # host_dumps DIR: example 10's hang with CHORUS_TRACE_DUMP=DIR
  mkdir -p "$1"
  CHORUS_TRACE_DUMP=$1 "$program" >/dev/null || fail "example 10 failed"
}

case $mode in
host)
  host_dumps "$work/a"
  ls "$work/a"
  for f in "$work"/a/*.json; do
    [[ $(basename "$f") =~ ^chorus-flight-record-comm[0-9]+-rank[0-9]+-pid[0-9]+\.json$ ]] ||
      fail "dump name without communicator, rank and pid: $f"
  done
  out=$("$tool" "$work"/a/*.json) || fail "exit status $? on real dumps"
  echo "$out"
  expect "$out" "of communicator pid"
  expect "$out" "(4 ranks)"
  expect "$out" "desync summary (flight recorders of 4 ranks):"
  expect "$out" "first disagreement at call 2: ranks 0, 1, 3 called broadcast 1 x float32 root 0 binomial; rank 2 called all_reduce 4096 x float32 sum"
  expect "$out" "rank 2 is the odd one out at call 2"
  grep -q "no dump of" <<<"$out" && fail "a host dump holds every rank"
  ;;
mpi)
  mpirun=$4
  run() {  # run DIR: example 12 under mpirun, 3 processes, dumping into DIR
    mkdir -p "$1"
    "$mpirun" -np 3 --oversubscribe -x CHORUS_TRACE_DUMP="$1" "$program" >"$1.out" 2>&1 || { cat "$1.out"; fail "example 12 failed"; }
  }
  run "$work/a"
  ls "$work/a"
  [ "$(ls "$work"/a/*.json | wc -l)" -eq 3 ] || fail "expected one dump per rank (3)"
  pids=$(ls "$work"/a/*.json | sed -E 's/.*-pid([0-9]+)\.json/\1/' | sort -u | wc -l)
  [ "$pids" -eq 3 ] || fail "expected 3 processes' pids in the names"
  for r in 0 1 2; do
    ls "$work"/a/chorus-flight-record-comm*-rank$r-pid*.json >/dev/null || fail "no dump of rank $r"
    expect "$(cat "$work/a.out")" "this rank's record: $work/a/chorus-flight-record-comm"
  done
  out=$("$tool" "$work"/a/*.json) || fail "exit status $? on real dumps"
  echo "$out"
  expect "$out" "chorus-trace-summary: 3 dumps of communicator pid"
  expect "$out" "desync summary (flight recorders of 3 ranks):"
  expect "$out" "first disagreement at call 2: ranks 0, 1 called broadcast 1 x float32 root 0 binomial; rank 2 called all_reduce 4096 x float32 sum"
  expect "$out" "rank 2 is the odd one out at call 2"
  expect "$out" "rank 2: last done call 1 all_reduce 4096 x float32 sum"
  # A rank that wrote nothing is named, and the summary covers the others.
  out=$("$tool" "$work"/a/*rank0*.json "$work"/a/*rank2*.json) || fail "exit status $? on two of three dumps"
  expect "$out" "no dump of rank 1:"
  expect "$out" "desync summary (flight recorders of 2 ranks):"
  # Two runs into two directories: their files must not be mixed.
  run "$work/b"
  expect_error "two dumps of rank 0 from different runs: " "$work"/a/*rank0*.json "$work"/b/*rank0*.json
  expect_error "dumps of different runs or communicators: " "$work"/a/*rank0*.json "$work"/b/*rank1*.json
  ;;
bad)
  expect_error "required" 
  expect_error "$work/none.json: cannot open it" "$work/none.json"
  printf '{"format": "chorus-flight-record", "version": 2, ' >"$work/truncated.json"
  expect_error "$work/truncated.json: not a valid flight record: " "$work/truncated.json"
  echo '{"traceEvents": []}' >"$work/chrome.json"
  expect_error "$work/chrome.json: not a chorus flight record" "$work/chrome.json"
  host_dumps "$work/a"
  first=$(ls "$work"/a/*.json | head -1)
  sed 's/"version": 2/"version": 1/' "$first" >"$work/v1.json"
  expect_error "$work/v1.json: format version 1; this tool reads version 2" "$work/v1.json"
  sed 's/"collective": "broadcast"/"collective": "bcast"/' "$first" >"$work/unknown.json"
  expect_error "$work/unknown.json: rank 0: unknown collective 'bcast'" "$work/unknown.json"
  sed 's/"sequence": 2,/"sequence": "2",/' "$first" >"$work/type.json"
  expect_error "$work/type.json: not a valid flight record: " "$work/type.json"
  sed 's/{"rank": 3,/{"rank": 4,/' "$first" >"$work/rank.json"
  expect_error "$work/rank.json: rank 4 in a communicator of 4 ranks" "$work/rank.json"
  host_dumps "$work/b"
  expect_error "two dumps of rank 0 from different runs: " "$first" "$(ls "$work"/b/*.json | head -1)"
  ;;
*)
  echo "usage: $0 host|bad|mpi TOOL PROGRAM [MPIRUN]"
  exit 2
  ;;
esac
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo ok
