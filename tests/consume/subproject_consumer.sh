#!/usr/bin/env bash
# Builds a project that uses chorus as a Meson subproject (with its tests and tools off) and runs it.
set -euo pipefail
source_root=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project/subprojects"
cp "$source_root/tests/consume/subproject/meson.build" "$work/project/meson.build"
cp "$source_root/tests/consume/consumer.cpp" "$work/consumer.cpp"
ln -s "$source_root" "$work/project/subprojects/chorus"
meson setup "$work/build" "$work/project" -Dchorus:tests=false -Dchorus:tools=false -Dchorus:cuda=disabled \
  -Dchorus:mpi=disabled -Dchorus:nccl=disabled >/dev/null
ninja -C "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/consumer-lib"
