#!/usr/bin/env bash
# Every header's quoted includes must point down docs/architecture.md's layer order: a folder may include only
# itself and the folders listed for it below. A new dependency between layers is a design decision,
# so it has to be made here, on purpose, rather than slipping in with an #include.
# Usage: layers_point_down.sh <source root>
set -euo pipefail
root="$(realpath "$1")/include/chorus"
declare -A allowed=(
  [core]=""
  [algo]="core"
  [topo]="core algo"
  [model]="core algo topo"
  [runtime]="core algo"
  [bootstrap]="core"
  [host]="core algo runtime"
  [mpi]="core algo runtime"
  [shm]="core algo runtime bootstrap host"
  [cuda]="core algo topo runtime"
  [nccl]="core cuda runtime"
  [parallel]="core"
  [bench]="core"
)
status=0
while IFS= read -r header; do
  relative="${header#"$root"/}"
  layer="${relative%%/*}"
  [ "$layer" = "$relative" ] && continue  # umbrella headers (chorus.hpp, host.hpp, ...) include anything
  if [ -z "${allowed[$layer]+set}" ]; then
    echo "$relative: folder '$layer' has no entry in $0's layer table"; status=1; continue
  fi
  dir="$(dirname "$header")"
  while IFS= read -r include; do
    target="$(realpath -m "$dir/$include")"
    case "$target" in "$root"/*) ;; *) continue ;; esac
    target_layer="${target#"$root"/}"; target_layer="${target_layer%%/*}"
    [ "$target_layer" = "$layer" ] && continue
    if [[ " ${allowed[$layer]} " != *" $target_layer "* ]]; then
      echo "$relative includes $include: $layer may not depend on $target_layer (allowed: ${allowed[$layer]:-nothing})"
      status=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$header")
done < <(find "$root" -mindepth 2 \( -name '*.hpp' -o -name '*.cuh' \) | sort)
[ $status -eq 0 ] && echo "every include points down the layer order"
exit $status
