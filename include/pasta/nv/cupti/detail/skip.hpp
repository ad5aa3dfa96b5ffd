// PASTA_CUPTI_SKIP: the record kinds nv::Cupti leaves off even when a tool
// wants them, to trade detail for overhead (a comma list of the names below).
// No CUPTI: tested on the CPU (tests/nv/cupti/skip_test.cpp).
#pragma once

#include <string_view>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/log.hpp>

namespace pasta::nv::detail {

enum CuptiSkip : unsigned {
  skip_memcpy = 1,
  skip_memset = 2,
  skip_sync = 4,
  skip_memory = 8,
  skip_nvtx = 16,
  skip_device = 32,
  skip_graphs = 64  // capture-time operators of CUDA graph nodes (graph_callbacks.hpp)
};

// The kinds `list` names (CuptiSkip bits); a name that is none is logged and ignored.
inline unsigned parse_cupti_skip(const char* list) {
  unsigned skip = 0;
  if (!list || !*list) return skip;
  std::string_view rest(list);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item == "memcpy")
      skip |= skip_memcpy;
    else if (item == "memset")
      skip |= skip_memset;
    else if (item == "sync")
      skip |= skip_sync;
    else if (item == "memory")
      skip |= skip_memory;
    else if (item == "nvtx")
      skip |= skip_nvtx;
    else if (item == "device")
      skip |= skip_device;
    else if (item == "graphs")
      skip |= skip_graphs;
    else
      pasta::detail::log(fmt::format(
          "PASTA_CUPTI_SKIP: \"{}\" is not a record kind; expected a comma list of memcpy, "
          "memset, sync, memory, nvtx, device, graphs; ignored",
          item));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return skip;
}

}  // namespace pasta::nv::detail
