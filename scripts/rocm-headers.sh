#!/usr/bin/env bash
# Assembles the rocprofiler-sdk, HIP, HSA and thunk headers from ROCm's
# source repositories into one include folder, for compiling the AMD handler
# on a machine without ROCm (cmake -DPASTA_ROCM_HEADERS=OUT/include). Nothing
# is linked or run against it: where ROCm 6.2+ is installed, CMake finds
# rocprofiler-sdk itself and this script is not needed.
#
#   scripts/rocm-headers.sh OUT ROCPROFILER_SDK HIP CLR ROCR_RUNTIME ROCT_THUNK
#
# Each repository argument is a git clone (bare or not) of, in order,
# ROCm/rocprofiler-sdk, ROCm/HIP, ROCm/clr, ROCm/ROCR-Runtime and
# ROCm/ROCT-Thunk-Interface, at matching ROCm releases. The generated
# version headers say version 0.5.0 (rocprofiler-sdk) and 6.3 (HIP).
set -euo pipefail
if [[ $# -ne 6 ]]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
out=$1 sdk=$2 hip=$3 clr=$4 rocr=$5 thunk=$6
inc=$out/include
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$inc/hip" "$inc/hsa"

extract() {  # repo path-in-repo -> $tmp/<path-in-repo>
  git -C "$1" archive HEAD "$2" | tar -x -C "$tmp"
}
extract "$sdk" source/include
cp -r "$tmp/source/include/rocprofiler-sdk" "$tmp/source/include/rocprofiler-sdk-roctx" "$inc/"
for v in rocprofiler-sdk rocprofiler-sdk-roctx; do
  # The configured values only name the build; every macro the API needs is set.
  sed -e 's/@PROJECT_VERSION_MAJOR@/0/g;s/@PROJECT_VERSION_MINOR@/5/g;s/@PROJECT_VERSION_PATCH@/0/g' \
      -e 's/@FULL_VERSION_STRING@/0.5.0/;s/@HSA_RUNTIME_VERSION_M[A-Z]*@/1/;s/@[A-Za-z_]*@/unknown/g' \
      -e '/^#cmakedefine/d' "$inc/$v/version.h.in" > "$inc/$v/version.h"
done
extract "$rocr" runtime/hsa-runtime/inc
cp -r "$tmp/runtime/hsa-runtime/inc/." "$inc/hsa/"
extract "$hip" include/hip
cp -r "$tmp/include/hip/." "$inc/hip/"
extract "$clr" hipamd/include/hip
cp -r "$tmp/hipamd/include/hip/." "$inc/hip/"
cat > "$inc/hip/hip_version.h" <<'VERSION'
#pragma once
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 3
#define HIP_VERSION_PATCH 0
#define HIP_VERSION_GITHASH "unknown"
#define HIP_VERSION_BUILD_ID 0
#define HIP_VERSION_BUILD_NAME ""
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)
VERSION
extract "$thunk" include/hsakmt
cp -r "$tmp/include/hsakmt" "$inc/"
echo "ROCm headers in $inc: cmake -DPASTA_ROCM_HEADERS=$inc"
