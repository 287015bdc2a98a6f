#!/usr/bin/env bash
# Installs chorus into a scratch prefix and builds consumer.cpp using only pkg-config: `chorus`
# (header-only) and `chorus-lib` (compiled mode: the headers plus libchorus).
set -euo pipefail
source_root=$1 build_root=$2 compiler=${3:-c++}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
meson install -C "$build_root" --destdir "$work/stage" --no-rebuild --quiet >/dev/null
prefix=$(meson introspect "$build_root" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
pcdir=$(dirname "$(find "$work/stage" -name chorus.pc | head -n1)")
# The .pc file names the final prefix; point it at the staging copy.
export PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$work/stage
# libchorus may be shared (-Ddefault_library=shared): let the loader find the staged copy.
libdir=$(dirname "$(find "$work/stage" -name 'libchorus.*' | head -n1)")
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for package in chorus chorus-lib; do
  flags=$(pkg-config --cflags --libs $package)
  echo "pkg-config $package: $flags (prefix $prefix)"
  "$compiler" -std=c++17 "$source_root/tests/consume/consumer.cpp" $flags -o "$work/consumer-$package"
  "$work/consumer-$package"
done
