# cmake -DREADELF=<readelf> -DFILE=<program> -P check_runtime_deps.cmake
# Fails if the program links the Compute Sanitizer API or libcuda, or has a
# RUNPATH into a Python site-packages: pasta finds both where the program
# runs, not where it was built.
execute_process(COMMAND ${READELF} -d ${FILE} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${FILE} failed (${rc})")
endif()
foreach(bad "sanitizer-public" "libcuda\\.so" "site-packages")
  if(out MATCHES "[^\n]*${bad}[^\n]*")
    message(FATAL_ERROR "${FILE} depends on the build machine:${CMAKE_MATCH_0}")
  endif()
endforeach()
message(STATUS "${FILE}: links neither the Sanitizer API nor libcuda, no RUNPATH into site-packages")
