#!/usr/bin/env bash
# Every header of a tier must compile on its own, warning-free: proves each header includes what it
# uses and that nothing outside a tier needs that tier's toolchain.
#   headers_compile_alone.sh ROOT COMPILER          the CPU tier (plain C++17): everything but cuda/
#                                                   (less cuda/kernel/ and cuda/twin/), nccl/, mpi/ and
#                                                   their umbrellas
#   headers_compile_alone.sh ROOT MPICXX mpi        the MPI tier, with MPI's compiler wrapper; and
#                                                   <chorus/mpi.hpp> from a plain compiler stops with
#                                                   an #error that says what to do
set -euo pipefail
root=$1 compiler=${2:-c++} tier=${3:-cpu}
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
compile_alone() {  # COMPILER HEADER
  echo "#include <$2>" | "$1" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I "$root/include" -x c++ - 2>"$log"
}
if [ "$tier" = mpi ]; then
  headers=$(cd "$root/include" && { find chorus/mpi -name '*.hpp'; echo chorus/mpi.hpp; } | sort)
  if compile_alone c++ chorus/mpi.hpp || ! grep -q "compile with mpicxx" "$log"; then
    echo "FAILED: <chorus/mpi.hpp> from a plain compiler must stop with the #error naming mpicxx:"; cat "$log"; status=1
  fi
else
  # cuda/kernel/ (the kernels' bodies) and cuda/twin/ (their CPU twin) are CPU-tier: plain C++17.
  headers=$(cd "$root/include" && find chorus -name '*.hpp' \( -not -path '*/cuda/*' -o -path '*/cuda/kernel/*' \
              -o -path '*/cuda/twin/*' \) -not -path '*/nccl/*' -not -path '*/mpi/*' -not -name mpi.hpp \
              -not -name cuda.hpp -not -name nccl.hpp | sort)
fi
for header in $headers; do
  if ! compile_alone "$compiler" "$header"; then
    echo "FAILED: <$header> does not compile alone:"; cat "$log"; status=1
  fi
done
[ $status -eq 0 ] && echo "all $tier-tier headers compile alone"
exit $status
