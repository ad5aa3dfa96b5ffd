#!/usr/bin/env bash
# Compile time of a translation unit that includes pasta.hpp and
# instantiates the four-tool pipeline, against an empty one and against one
# that calls the same tools by hand. Best of N runs each; prints a table and
# writes CSV. Usage: bench/compile_time.sh [CSV] (CXX, CXXFLAGS, RUNS from the
# environment; defaults g++, -O2, 5).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
csv=${1:-compile_time.csv}
cxx=${CXX:-g++}
runs=${RUNS:-5}
read -r -a flags <<<"${CXXFLAGS:--O2}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() {  # best wall time in seconds of compiling $1
  local src=$1 best=999
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$cxx" -std=c++20 "${flags[@]}" -I"$root/include" -c "$src" -o "$tmp/out.o"
    t1=$(date +%s.%N)
    best=$(echo "$t1 - $t0" | bc -l | awk -v b="$best" '{ print ($1 < b) ? $1 : b }')
  done
  echo "$best"
}

empty=$(best "$here/compile_time/empty.cpp")
hand=$(best "$here/compile_time/hand_written.cpp")
pipe=$(best "$here/compile_time/pipeline.cpp")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
version=$("$cxx" --version | head -1)

printf '\nCompile time, best of %s, %s %s, %s (%s cores)\n' "$runs" "$version" "${flags[*]}" "$cpu" "$(nproc)"
printf '%-44s %8s\n' "translation unit" "seconds"
printf '%-44s %8.2f\n' "empty main" "$empty"
printf '%-44s %8.2f\n' "4 tools called by hand" "$hand"
printf '%-44s %8.2f\n' "pasta.hpp + 4-tool Profiler" "$pipe"
printf '%-44s %8.2f  (goal: <= 3 s)\n' "extra for pasta, vs empty main" "$(echo "$pipe - $empty" | bc -l)"
printf '%-44s %8.2f\n' "extra for the pipeline, vs tools by hand" "$(echo "$pipe - $hand" | bc -l)"
{
  echo "unit,seconds"
  echo "empty,$empty"
  echo "hand_written,$hand"
  echo "pipeline,$pipe"
} >"$csv"
