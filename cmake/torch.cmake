# pasta::torch: what the torch::Aten handler compiles and links against,
# found in an installed PyTorch (a pip wheel's torch/ folder: headers under
# include/, libtorch_cpu and libc10 under lib/). PASTA_TORCH_ROOT names the
# folder; otherwise Python is asked where `torch` is, without importing it
# (a wheel installed without its CUDA dependencies cannot be imported, but
# compiles and links).
set(PASTA_TORCH_ROOT "$ENV{PASTA_TORCH_ROOT}" CACHE PATH "PyTorch's torch/ folder (auto: python3)")
if(NOT PASTA_TORCH_ROOT)
  # The python3 first on PATH: the one a user runs their PyTorch with.
  find_program(PASTA_PYTHON3 python3)
  if(PASTA_PYTHON3)
    execute_process(
      COMMAND ${PASTA_PYTHON3} -c
              "import importlib.util as u; s = u.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')"
      OUTPUT_VARIABLE _pasta_torch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(PASTA_TORCH_ROOT "${_pasta_torch}" CACHE PATH "PyTorch's torch/ folder (auto: python3)" FORCE)
  endif()
endif()
if(PASTA_TORCH_ROOT AND EXISTS "${PASTA_TORCH_ROOT}/include/ATen/record_function.h")
  find_library(PASTA_TORCH_CPU torch_cpu HINTS "${PASTA_TORCH_ROOT}/lib" NO_DEFAULT_PATH)
  find_library(PASTA_TORCH_C10 c10 HINTS "${PASTA_TORCH_ROOT}/lib" NO_DEFAULT_PATH)
endif()
if(PASTA_TORCH_CPU AND PASTA_TORCH_C10)
  add_library(pasta_torch INTERFACE)
  add_library(pasta::torch ALIAS pasta_torch)
  target_include_directories(pasta_torch SYSTEM INTERFACE
    "${PASTA_TORCH_ROOT}/include" "${PASTA_TORCH_ROOT}/include/torch/csrc/api/include")
  target_link_libraries(pasta_torch INTERFACE pasta ${PASTA_TORCH_CPU} ${PASTA_TORCH_C10})
  # PyTorch ships its own {fmt} headers (a newer major version), which its
  # include folder puts ahead of the system's: use them header-only, so no
  # translation unit mixes their declarations with the system library.
  target_compile_definitions(pasta_torch INTERFACE FMT_HEADER_ONLY)
  # Programs find libtorch where it was found at build time.
  target_link_options(pasta_torch INTERFACE "-Wl,-rpath,${PASTA_TORCH_ROOT}/lib")
  message(STATUS "pasta: PyTorch in ${PASTA_TORCH_ROOT}: pasta::torch is built")
else()
  message(STATUS "pasta: no PyTorch found (set PASTA_TORCH_ROOT): pasta::torch is not built")
endif()
