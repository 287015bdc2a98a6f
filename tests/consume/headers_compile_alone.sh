#!/usr/bin/env bash
# Every CPU-tier header must compile on its own with a plain C++17 compiler, warning-free:
# proves each header includes what it uses and that nothing below cuda/, nccl/, mpi/ needs them.
set -euo pipefail
root=$1 compiler=${2:-c++}
status=0
while IFS= read -r header; do
  relative=${header#"$root/include/"}
  if ! echo "#include <$relative>" | "$compiler" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
       -I "$root/include" -x c++ - 2>/tmp/chorus-header-check.$$; then
    echo "FAILED: <$relative> does not compile alone:"; cat /tmp/chorus-header-check.$$; status=1
  fi
done < <(find "$root/include/chorus" -name '*.hpp' -not -path '*/cuda/*' -not -path '*/nccl/*' -not -path '*/mpi/*' | sort)
rm -f /tmp/chorus-header-check.$$
[ $status -eq 0 ] && echo "all CPU-tier headers compile alone"
exit $status
