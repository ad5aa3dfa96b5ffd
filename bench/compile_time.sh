#!/usr/bin/env bash
# Compile time of a translation unit that includes pasta.hpp and
# instantiates the four-tool pipeline, against an empty one and against one
# that calls the same tools by hand: header-only (the default) and compiled
# (PASTA_COMPILED, linked to pasta's runtime object, whose own compile time
# is a one-off); of the client header alone (core/scope.hpp and one
# PASTA_SCOPE); and of the pipeline unit and an empty one as .cu files under
# nvcc (-std=c++20 -x cu), where nvcc is found. Best of N runs each; prints a
# table and writes CSV. Usage: bench/compile_time.sh [CSV] (CXX, CXXFLAGS,
# NVCC, RUNS, LDLIBS from the environment; defaults g++, -O2, nvcc on PATH
# or /usr/local/cuda/bin/nvcc, 5, -lfmt). A unit that nvcc does not compile,
# or a compiled-mode program that does not link, is reported, not fatal.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
csv=${1:-compile_time.csv}
cxx=${CXX:-g++}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
runs=${RUNS:-5}
read -r -a ldlibs <<<"${LDLIBS:--lfmt}"
read -r -a flags <<<"${CXXFLAGS:--O2}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() {  # best wall time in seconds of compiling $1 with the command after it
  local src=$1 best=999 out=${OUT:-$tmp/out.o}
  shift
  for _ in $(seq "${N:-$runs}"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" "${flags[@]}" -I"$root/include" -c "$src" -o "$out" || return 1
    t1=$(date +%s.%N)
    best=$(echo "$t1 - $t0" | bc -l | awk -v b="$best" '{ print ($1 < b) ? $1 : b }')
  done
  echo "$best"
}

empty=$(best "$here/compile_time/empty.cpp" "$cxx" -std=c++20)
hand=$(best "$here/compile_time/hand_written.cpp" "$cxx" -std=c++20)
pipe=$(best "$here/compile_time/pipeline.cpp" "$cxx" -std=c++20)
client_ho=$(best "$here/compile_time/scope_client.cpp" "$cxx" -std=c++20)
# Compiled mode: the runtime object once, then the units that link to it.
runtime=$(N=1 OUT="$tmp/runtime.o" best "$root/src/runtime.cpp" "$cxx" -std=c++20)
cpipe=$(OUT="$tmp/pipeline.o" best "$here/compile_time/pipeline.cpp" "$cxx" -std=c++20 -DPASTA_COMPILED)
client=$(best "$here/compile_time/scope_client.cpp" "$cxx" -std=c++20 -DPASTA_COMPILED)
links="links and runs"
if ! "$cxx" "$tmp/pipeline.o" "$tmp/runtime.o" "${ldlibs[@]}" -o "$tmp/pipeline" 2>"$tmp/link.log"; then
  links="does NOT link: $(head -3 "$tmp/link.log" | tr '\n' ' ')"
elif ! (cd "$tmp" && ./pipeline >/dev/null 2>&1); then
  links="links, but does NOT run"
fi
cu_empty="" cu_pipe="" cu_why=""
if [[ -x $nvcc ]]; then
  cp "$here/compile_time/empty.cpp" "$tmp/empty.cu"
  cp "$here/compile_time/pipeline.cpp" "$tmp/pipeline.cu"
  if cu_empty=$(best "$tmp/empty.cu" "$nvcc" -std=c++20 -x cu 2>"$tmp/nvcc.log") &&
    cu_pipe=$(best "$tmp/pipeline.cu" "$nvcc" -std=c++20 -x cu 2>"$tmp/nvcc.log"); then
    nvcc_version=$("$nvcc" --version | grep -m1 release || true)
  else
    cu_empty="" cu_pipe="" cu_why="$nvcc failed: $(tail -3 "$tmp/nvcc.log" | tr '\n' ' ')"
  fi
else
  cu_why="no nvcc (set NVCC)"
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
version=$("$cxx" --version | head -1)

row() { printf '%-50s %8.2f%s\n' "$1" "$2" "${3:-}"; }
printf '\nCompile time, best of %s, %s %s, %s (%s cores)\n' "$runs" "$version" "${flags[*]}" "$cpu" "$(nproc)"
printf '%-50s %8s\n' "translation unit" "seconds"
row "empty main" "$empty"
row "4 tools called by hand" "$hand"
printf 'header-only (the default):\n'
row "pasta.hpp + 4-tool Profiler" "$pipe"
row "extra for pasta, vs empty main" "$(echo "$pipe - $empty" | bc -l)" "  (goal: well under 12.9 s)"
row "extra for the pipeline, vs tools by hand" "$(echo "$pipe - $hand" | bc -l)"
row "core/scope.hpp + PASTA_SCOPE" "$client_ho"
printf 'compiled (PASTA_COMPILED, linked to the runtime object):\n'
row "runtime object, once per build (src/runtime.cpp)" "$runtime"
row "pasta.hpp + 4-tool Profiler" "$cpipe" "  ($links)"
row "extra for pasta, vs empty main" "$(echo "$cpipe - $empty" | bc -l)" "  (goal: <= 3 s)"
row "core/scope.hpp + PASTA_SCOPE" "$client"
row "extra for the client header, vs empty main" "$(echo "$client - $empty" | bc -l)" "  (goal: <= 0.2 s)"
if [[ -n $cu_pipe ]]; then
  printf 'nvcc -std=c++20 -x cu %s (%s), the same units as .cu files:\n' "${flags[*]}" "$nvcc_version"
  row "empty main (.cu)" "$cu_empty"
  row "pasta.hpp + 4-tool Profiler (.cu)" "$cu_pipe"
  row "extra for pasta under nvcc, vs empty .cu" "$(echo "$cu_pipe - $cu_empty" | bc -l)"
else
  printf 'nvcc: %s\n' "$cu_why"
fi
{
  echo "unit,seconds"
  echo "empty,$empty"
  echo "hand_written,$hand"
  echo "pipeline,$pipe"
  echo "scope_client,$client_ho"
  echo "runtime,$runtime"
  echo "compiled_pipeline,$cpipe"
  echo "compiled_scope_client,$client"
  if [[ -n $cu_pipe ]]; then
    echo "nvcc_empty,$cu_empty"
    echo "nvcc_pipeline,$cu_pipe"
  fi
} >"$csv"
