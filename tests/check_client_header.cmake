# Preprocesses SOURCE with CXX (-std=c++20 -DPASTA_COMPILED -I INCLUDE) and
# fails if a header it reaches is Boost, fmt, nlohmann/json or a standard
# header beyond <cstddef> and <cstdint> (what the client header allows).
execute_process(COMMAND ${CXX} -std=c++20 -DPASTA_COMPILED -I${INCLUDE} -H -fsyntax-only ${SOURCE}
                ERROR_VARIABLE headers RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${SOURCE} does not compile:\n${headers}")
endif()
string(REGEX MATCHALL "(^|\n)\\.+ [^\n]+" lines "${headers}")
set(bad)
set(n 0)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^\n?\\.+ " "" path "${line}")
  math(EXPR n "${n} + 1")
  if(path MATCHES "boost/|fmt/|nlohmann|/(vector|string|string_view|mutex|atomic|memory|map|unordered_map|functional)$")
    list(APPEND bad "${path}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " bad)
  message(FATAL_ERROR "the client header reaches heavy headers:\n  ${bad}")
endif()
message(STATUS "the client header reaches ${n} headers, none of Boost, fmt, JSON or std containers")
