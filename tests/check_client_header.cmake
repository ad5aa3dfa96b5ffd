# Preprocesses SOURCE with CXX (-std=c++20 -I INCLUDE), compiled (-DPASTA_COMPILED) and
# header-only, and fails if a header it reaches in either is Boost, fmt, nlohmann/json,
# a standard container or another of pasta's (what the client header allows: <cstddef>,
# <cstdint>, <cstdio> and core/detail/api.hpp's macros).
foreach(mode "-DPASTA_COMPILED" "-DPASTA_HEADER_ONLY_CHECK")
  execute_process(COMMAND ${CXX} -std=c++20 ${mode} -I${INCLUDE} -H -fsyntax-only ${SOURCE}
                  ERROR_VARIABLE headers RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${SOURCE} does not compile (${mode}):\n${headers}")
  endif()
  string(REGEX MATCHALL "(^|\n)\\.+ [^\n]+" lines "${headers}")
  set(bad)
  set(n 0)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^\n?\\.+ " "" path "${line}")
    math(EXPR n "${n} + 1")
    if(path MATCHES "boost/|fmt/|nlohmann|/(vector|string|string_view|mutex|atomic|memory|map|unordered_map|functional)$"
       OR (path MATCHES "pasta/" AND NOT path MATCHES "pasta/core/(scope|detail/api)\\.hpp$"))
      list(APPEND bad "${path}")
    endif()
  endforeach()
  if(bad)
    list(JOIN bad "\n  " bad)
    message(FATAL_ERROR "the client header reaches heavy headers (${mode}):\n  ${bad}")
  endif()
  message(STATUS "the client header reaches ${n} headers (${mode}), none of Boost, fmt, JSON, "
                 "std containers or the rest of pasta")
endforeach()
