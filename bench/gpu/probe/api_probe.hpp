// What the CUPTI API probes (launch_callbacks.cu, api_cost.cu) share: a
// checked call, the calls pasta's operator tags pick, a median, and an
// activity buffer's allocation. Each probe is still one nvcc command.
#pragma once

#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                        \
  do {                                                                  \
    if ((x) != 0) {                                                     \
      std::fprintf(stderr, "%s failed at line %d\n", #x, __LINE__);     \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

namespace probe {

// A call that puts work on the device (what nv/cupti/detail/op_tags.hpp tags).
inline bool makes_device_work(const char* api) {
  for (const char* prefix : {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset",
                             "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"})
    if (std::strncmp(api, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

}  // namespace probe
