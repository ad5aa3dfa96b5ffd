# Finds the Compute Sanitizer API for pasta::sanitizer: its headers, which
# nv::Sanitizer is compiled with, and libsanitizer-public.so, whose folder is
# only the last place nv::Sanitizer looks at run time (it loads the library,
# nothing links it). Looked for under $PASTA_SANITIZER_ROOT, in the CUDA
# toolkit's compute-sanitizer/, and in the PyPI wheel
# nvidia-cuda-sanitizer-api (nvidia/cuXX/ of the Python found, XX the
# toolkit's major version). Run after find_package(CUDAToolkit), by pasta's
# CMakeLists.txt and by the installed pastaConfig.cmake, beside which it is
# installed.
#
# Sets PASTA_SANITIZER_INCLUDE_DIR and PASTA_SANITIZER_LIBRARY (cache), and
# PASTA_SANITIZER_LIBRARY_DIR and PASTA_CUDA_WHEEL_DIR (empty if none).
function(_pasta_find_sanitizer)
  set(wheel "")
  find_package(Python3 QUIET COMPONENTS Interpreter)
  if(Python3_FOUND AND CUDAToolkit_VERSION_MAJOR)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
              "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'cu${CUDAToolkit_VERSION_MAJOR}'))"
      OUTPUT_VARIABLE wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(hints ENV PASTA_SANITIZER_ROOT "${CUDAToolkit_LIBRARY_ROOT}/compute-sanitizer"
            "${CUDAToolkit_BIN_DIR}/../compute-sanitizer" "${wheel}")
  find_path(PASTA_SANITIZER_INCLUDE_DIR sanitizer.h HINTS ${hints} PATH_SUFFIXES include)
  find_library(PASTA_SANITIZER_LIBRARY sanitizer-public HINTS ${hints} PATH_SUFFIXES lib lib64 .)
  set(libdir "")
  if(PASTA_SANITIZER_LIBRARY)
    get_filename_component(libdir "${PASTA_SANITIZER_LIBRARY}" DIRECTORY)
  endif()
  set(PASTA_SANITIZER_LIBRARY_DIR "${libdir}" PARENT_SCOPE)
  set(PASTA_CUDA_WHEEL_DIR "${wheel}" PARENT_SCOPE)
endfunction()
_pasta_find_sanitizer()
