#!/usr/bin/env bash
# The ABI tag (docs/abi.md) turns a version or mode mismatch into a link error:
#   1. consumer.cpp in compiled mode links with a libchorus built from these headers, and runs;
#   2. the same object does NOT link with a libchorus of another version (these sources with the patch
#      number bumped in a copy of the headers): undefined references naming chorus::<tag>;
#   3. header-only and compiled units use different tags (so they never stand in for each other).
# Without the tag, step 2 links silently (both versions define the same symbols); that is what this checks.
# Usage: abi_mismatch.sh SOURCE_ROOT CXX
set -euo pipefail
root=$1 cxx=${2:-c++}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
flags=(-std=c++17 -O0 -pthread)

config=$root/include/chorus/core/config.hpp
tag() {  # the tag a mode's headers produce, as the compiler sees it
  printf '#include <chorus/core/config.hpp>\nCHORUS_ABI_TAG\n' |
    "$cxx" "${flags[@]}" -E -P -x c++ -I "$1" ${2:+"$2"} - | tail -n1
}

# Another version: the same tree with CHORUS_VERSION_PATCH + 1 (relative includes, so copy it all).
patch=$(sed -n 's/^#define CHORUS_VERSION_PATCH \([0-9]*\)$/\1/p' "$config")
[ -n "$patch" ] || { echo "FAIL: no CHORUS_VERSION_PATCH in $config"; exit 1; }
cp -r "$root/include" "$work/other-include"
sed -i "s/^#define CHORUS_VERSION_PATCH $patch\$/#define CHORUS_VERSION_PATCH $((patch + 1))/" \
  "$work/other-include/chorus/core/config.hpp"

ours=$(tag "$root/include" -DCHORUS_COMPILED_LIB)
other=$(tag "$work/other-include" -DCHORUS_COMPILED_LIB)
header_only=$(tag "$root/include")
echo "tags: compiled $ours, header-only $header_only, other version compiled $other"

# libchorus twice (one object each, as src/chorus.cpp is the whole library), and the consumer.
"$cxx" "${flags[@]}" -DCHORUS_COMPILED_LIB -I "$root/include" -c "$root/src/chorus.cpp" -o "$work/lib-same.o"
"$cxx" "${flags[@]}" -DCHORUS_COMPILED_LIB -I "$work/other-include" -c "$root/src/chorus.cpp" -o "$work/lib-other.o"
"$cxx" "${flags[@]}" -DCHORUS_COMPILED_LIB -I "$root/include" -c "$root/tests/consume/consumer.cpp" \
  -o "$work/consumer-lib.o"
"$cxx" "${flags[@]}" -I "$root/include" -c "$root/tests/consume/consumer.cpp" -o "$work/consumer-header-only.o"

# 1. Same version: links and runs.
"$cxx" "${flags[@]}" "$work/consumer-lib.o" "$work/lib-same.o" -o "$work/same"
"$work/same"

# 2. Other version: must fail, naming the consumer's tag.
if out=$("$cxx" "${flags[@]}" "$work/consumer-lib.o" "$work/lib-other.o" -o "$work/other" 2>&1); then
  echo "FAIL: a $ours unit linked with a $other libchorus"
  exit 1
fi
if ! grep -q "undefined reference to \`chorus::$ours::" <<<"$out"; then
  echo "FAIL: the link failed, but not with an undefined chorus::$ours reference:"
  echo "$out" | head -n 20
  exit 1
fi
echo "a $ours unit with a $other libchorus fails to link, as it should:"
grep -m3 "undefined reference" <<<"$out" || true

# 3. The header-only unit's chorus symbols carry its own tag, never the compiled one.
if [ "$ours" = "$header_only" ]; then
  echo "FAIL: header-only and compiled mode have the same tag, $ours"
  exit 1
fi
# (nm's output in a variable: grep -q closing the pipe early would fail the pipeline under pipefail)
symbols=$(nm -C "$work/consumer-header-only.o")
if ! grep -q "chorus::$header_only::" <<<"$symbols" || grep -q "chorus::$ours::" <<<"$symbols"; then
  echo "FAIL: the header-only unit's symbols are not all under chorus::$header_only"
  exit 1
fi
echo "header-only unit: chorus::$header_only only; compiled unit: chorus::$ours"
