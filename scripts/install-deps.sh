#!/usr/bin/env bash
# Installs what building and testing pasta needs on Debian/Ubuntu: the
# compiler toolchain, Boost (CRC), fmt, nlohmann/json,
# doctest, Google Benchmark, and from PyPI Jinja2, matplotlib and DuckDB (the report page, its
# charts and a job's analyses); with --all also Chromium (for the report test), Debian's HIP
# and rocPRIM, and from PyPI Conan, atheris and the Compute Sanitizer API wheel. Does nothing
# for what is already there; safe to run again.
set -euo pipefail

need_apt=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v g++ >/dev/null || need_apt+=(g++)
command -v bc >/dev/null || need_apt+=(bc)
have_header boost/crc.hpp || need_apt+=(libboost-dev)
have_header fmt/core.h || need_apt+=(libfmt-dev)
have_header nlohmann/json.hpp || need_apt+=(nlohmann-json3-dev)
have_header doctest/doctest.h || need_apt+=(doctest-dev)
have_header benchmark/benchmark.h || need_apt+=(libbenchmark-dev)

if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${need_apt[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

# The report page: Jinja2 renders it, matplotlib draws its charts. The README's two
# commands need them, so they come with the default install.
py=$(command -v python3)
if ! "$py" -c "import jinja2, matplotlib" >/dev/null 2>&1; then
  if "$py" -m pip --version >/dev/null 2>&1; then
    echo "install-deps: installing Jinja2 and matplotlib (the report page and its charts)"
    "$py" -m pip install -q "jinja2>=3" "matplotlib>=3.7" ||
      echo "install-deps: Jinja2 or matplotlib did not install: the page or its charts will say so"
  else
    echo "install-deps: no pip: the report page needs Jinja2 and matplotlib (python3 -m pip install jinja2 matplotlib)"
  fi
fi
# DuckDB: a job's merge reads each rank's records into Parquet and runs the job's analyses in
# it (share/pasta/job_store.py): in-process, columnar, spills to disk; the Python over JSON it
# replaced took 296 s and 4.3 GB for 1,024 ranks. The job tests of the README's test command
# need it.
if ! "$py" -c "import duckdb" >/dev/null 2>&1; then
  if "$py" -m pip --version >/dev/null 2>&1; then
    echo "install-deps: installing DuckDB (a job's analyses over its ranks)"
    "$py" -m pip install -q "duckdb>=1.1" ||
      echo "install-deps: DuckDB did not install: a job's merge will say so in one line"
  else
    echo "install-deps: no pip: a job's analyses need DuckDB (python3 -m pip install duckdb)"
  fi
fi

if [ "${1:-}" = "--all" ]; then
  "$py" -m pip --version >/dev/null 2>&1 || { echo "install-deps: pip is missing"; exit 1; }
  "$py" -m pip show conan >/dev/null 2>&1 || "$py" -m pip install -q "conan>=2,<3"
  # The Sanitizer API headers and library for the nv::Sanitizer handler,
  # matching nvcc 13.0.
  # Chromium (Debian, below) is the browser the report test loads the page in.
  # jsonschema: checks the per-operator profile against docs/schema.
  "$py" -m pip show jsonschema >/dev/null 2>&1 || "$py" -m pip install -q "jsonschema>=4"
  # atheris: libFuzzer for Python, for the launcher's fuzz target (tests/fuzz).
  "$py" -m pip show atheris >/dev/null 2>&1 || "$py" -m pip install -q "atheris>=2.3,<4"
  # Debian's HIP (hipcc on clang 15) and rocPRIM: the AMD code paths
  # (examples/hip, the rocPRIM post-pass) are compiled for gfx90a; there is
  # no AMD GPU to run them on.
  if ! command -v hipcc >/dev/null || ! have_header rocprim/rocprim.hpp; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
      hipcc libamdhip64-dev librocprim-dev rocm-device-libs
  fi
  # clang and its libFuzzer runtime for the fuzz targets (tests/fuzz).
  if ! command -v clang++ >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends clang
  fi
  if ! command -v chromium >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium
  fi
  "$py" -m pip show nvidia-cuda-sanitizer-api >/dev/null 2>&1 ||
    "$py" -m pip install -q "nvidia-cuda-sanitizer-api==13.0.*"
  # nvdisasm for the SASS reader's test on a real cubin (tools::StallBlame);
  # PyPI's oldest CUDA 13 one reads sm_90 code as 13.0's does.
  "$py" -m pip show nvidia-cuda-nvdisasm >/dev/null 2>&1 ||
    "$py" -m pip install -q "nvidia-cuda-nvdisasm==13.2.*"
  # PyTorch's headers and CPU libraries for torch::Aten (its CPU tests run
  # libtorch on CPU tensors). The wheel alone: its CUDA dependencies (some
  # GB) are not needed to compile, link, or run on the CPU. The version the
  # GPU machine has, which the tests' exact counts are for.
  "$py" -m pip show torch >/dev/null 2>&1 ||
    "$py" -m pip install -q --no-deps "torch==2.11.0"
  # The same PyTorch for a Python 3.12 (pyenv's, where there is one): the modules and
  # source-lines test needs sys.monitoring (tests/torch/modules_check.py). With the three
  # CUDA libraries `import torch` needs that the CUDA toolkit does not have, and the
  # packages `import torch` imports.
  py312=$(ls "$HOME"/.pyenv/versions/3.12*/bin/python3 2>/dev/null | head -1 || command -v python3.12 || true)
  if [ -n "$py312" ] && ! "$py312" -m pip show torch >/dev/null 2>&1; then
    echo "install-deps: PyTorch for $py312 (the modules test)"
    "$py312" -m pip install -q --no-deps "torch==2.11.0" nvidia-cufile nvidia-cusparselt-cu13 \
      nvidia-nvshmem-cu13 sympy mpmath networkx fsspec filelock typing_extensions jinja2 \
      markupsafe numpy
  fi
  # torch.compile on CPU (the compiled models' modules test) builds its kernels through
  # torch.utils.cpp_extension, which imports setuptools: a Python 3.12 comes without it.
  if [ -n "$py312" ] && ! "$py312" -m pip show setuptools >/dev/null 2>&1; then
    "$py312" -m pip install -q setuptools
  fi
fi
