#!/usr/bin/env bash
# Every header of a tier must compile on its own, warning-free: proves each header includes what it
# uses and that nothing outside a tier needs that tier's toolchain.
#   headers_compile_alone.sh ROOT COMPILER          the CPU tier (plain C++17): everything but cuda/
#                                                   (less cuda/kernel/ and cuda/twin/), nccl/, mpi/ and
#                                                   their umbrellas
#   headers_compile_alone.sh ROOT MPICXX mpi        the MPI tier, with MPI's compiler wrapper; and
#                                                   <chorus/mpi.hpp> from a plain compiler stops with
#                                                   an #error that says what to do
#   headers_compile_alone.sh ROOT CXX nccl CUDA_INC the NCCL tier, with CUDA's include path (NCCL's
#                                                   header sits there too); and <chorus/nccl.hpp> stops
#                                                   with an #error without the CUDA runtime, and with
#                                                   the NCCL one where CUDA is there but NCCL is not
set -euo pipefail
root=$1 compiler=${2:-c++} tier=${3:-cpu} cuda_include=${4:-}
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
compile_alone() {  # COMPILER HEADER [FLAGS...]
  local cxx=$1 header=$2
  shift 2
  echo "#include <$header>" | "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I "$root/include" "$@" -x c++ - 2>"$log"
}
flags=()
if [ "$tier" = mpi ]; then
  headers=$(cd "$root/include" && { find chorus/mpi -name '*.hpp'; echo chorus/mpi.hpp; } | sort)
  if compile_alone c++ chorus/mpi.hpp || ! grep -q "compile with mpicxx" "$log"; then
    echo "FAILED: <chorus/mpi.hpp> from a plain compiler must stop with the #error naming mpicxx:"; cat "$log"; status=1
  fi
elif [ "$tier" = nccl ]; then
  headers=$(cd "$root/include" && { find chorus/nccl -name '*.hpp'; echo chorus/nccl.hpp; } | sort)
  flags=(-isystem "$cuda_include" -isystem "$cuda_include/cccl")
  # The compiler's default include path, less any directory holding CUDA's or NCCL's headers (some
  # machines link them into /usr/local/include), stands for a machine without them.
  plain=(-nostdinc)
  while read -r dir; do
    [ -e "$dir/cuda_runtime.h" ] || [ -e "$dir/nccl.h" ] || plain+=(-isystem "$dir")
  done < <("$compiler" -x c++ -E -v /dev/null 2>&1 | sed -n '/^#include <...> search starts here:/,/^End of search list/p' | sed '1d;$d;s/^ *//')
  if compile_alone "$compiler" chorus/nccl.hpp "${plain[@]}" || ! grep -q "need the CUDA runtime: add" "$log"; then
    echo "FAILED: <chorus/nccl.hpp> without CUDA's headers must stop with the CUDA runtime's #error:"; cat "$log"; status=1
  fi
  # A toolkit without NCCL (NCCL is a package of its own): CUDA's headers, less nccl.h.
  no_nccl=$(mktemp -d)
  trap 'rm -f "$log"; rm -rf "$no_nccl"' EXIT
  for entry in "$cuda_include"/*; do
    [ "$(basename "$entry")" = nccl.h ] || ln -s "$entry" "$no_nccl/"
  done
  if compile_alone "$compiler" chorus/nccl.hpp "${plain[@]}" -isystem "$no_nccl" -isystem "$no_nccl/cccl" ||
     ! grep -q "needs NCCL: add" "$log"; then
    echo "FAILED: <chorus/nccl.hpp> without nccl.h must stop with the #error naming NCCL:"; cat "$log"; status=1
  fi
else
  # cuda/kernel/ (the kernels' bodies) and cuda/twin/ (their CPU twin) are CPU-tier: plain C++17.
  headers=$(cd "$root/include" && find chorus -name '*.hpp' \( -not -path '*/cuda/*' -o -path '*/cuda/kernel/*' \
              -o -path '*/cuda/twin/*' \) -not -path '*/nccl/*' -not -path '*/mpi/*' -not -name mpi.hpp \
              -not -name cuda.hpp -not -name nccl.hpp | sort)
fi
# Each header in both modes: header-only, and compiled (-DCHORUS_COMPILED_LIB: the declarations a libchorus
# user compiles against, whose bodies are left out). Two compilers at a time: the headers are independent.
check_one() {  # HEADER MODE-FLAG...
  local header=$1 out
  shift
  if ! out=$(echo "#include <$header>" | "$compiler" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
               -I "$root/include" "${flags[@]}" "$@" -x c++ - 2>&1); then
    echo "FAILED: <$header> does not compile alone${1:+ ($1)}:"; echo "$out"; return 1
  fi
}
# Compiled mode changes only what CHORUS_FUNC and CHORUS_DEFINE_BODIES expand to, so a header whose
# preprocessed text is the same in both modes (about half: those that reach no such function) would be
# checked twice over the same tokens. The preprocessor costs a twentieth of a syntax check. The ABI tag
# (docs/abi.md) differs in every header between the modes, one namespace name: compared as one word.
same_in_both_modes() {  # HEADER
  local header=$1 a b tag='s/\bv[0-9]\+_[0-9]\+_[0-9]\+\(_lib\)\?\b/CHORUS_ABI_TAG/g'
  a=$(echo "#include <$header>" | "$compiler" -std=c++17 -E -P -I "$root/include" "${flags[@]}" -x c++ - 2>/dev/null |
        sed "$tag" | cksum) &&
  b=$(echo "#include <$header>" | "$compiler" -std=c++17 -E -P -I "$root/include" "${flags[@]}" -DCHORUS_COMPILED_LIB \
        -x c++ - 2>/dev/null | sed "$tag" | cksum) && [ "$a" = "$b" ]
}
check_both() {  # HEADER
  check_one "$1" || return 1
  same_in_both_modes "$1" || check_one "$1" -DCHORUS_COMPILED_LIB
}
export -f check_one same_in_both_modes check_both
export root compiler
flags_text=""
[ ${#flags[@]} -gt 0 ] && flags_text=$(printf '%q ' "${flags[@]}")
export flags_text
jobs=$( (nproc || echo 2) 2>/dev/null)
if ! printf '%s\n' $headers | xargs -P "$jobs" -I{} bash -c 'eval "flags=($flags_text)"; check_both {}'; then
  status=1
fi
[ $status -eq 0 ] && echo "all $tier-tier headers compile alone, header-only and in compiled mode"
exit $status
