// Which CUDA API calls a program makes, and how many: a CUPTI injection
// library (CUDA_INJECTION64_PATH) that counts every runtime and driver call
// by name and writes the counts as JSON at exit to $API_CENSUS_OUT. The
// question behind it: what the default pipeline's cost on a PyTorch step
// (7% of a GPT-2 step where kernel records explain about 1%, docs/benchmarks.md)
// is made of, given what each call costs with CUPTI attached
// (bench/gpu/probe/api_cost.cu). Two runs of a script with N and 2N steps
// give a step's calls as their difference over N.
//
// A transformers GPT-2 step (6 layers, bf16, batch 8, AdamW; torch_step.py) on an
// H200, 2026-11-30: 8,130 runtime and 10,656 driver calls a step, 6,841 of them
// cudaGetDevice (docs/benchmarks.md).
//   g++ -std=c++17 -O2 -shared -fPIC -o /tmp/libapi_census.so \
//     bench/gpu/probe/api_census.cpp -I$CUPTI_INC -I$CUDA_INC -L$CUPTI_LIB -lcupti
//   API_CENSUS_OUT=calls.json CUDA_INJECTION64_PATH=/tmp/libapi_census.so python3 step.py
#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

std::array<std::atomic<unsigned long long>, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime_calls{};
std::array<std::atomic<unsigned long long>, CUPTI_DRIVER_TRACE_CBID_SIZE> driver_calls{};
CUpti_SubscriberHandle subscriber{};

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_ENTER) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < runtime_calls.size())
    runtime_calls[cbid].fetch_add(1, std::memory_order_relaxed);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < driver_calls.size())
    driver_calls[cbid].fetch_add(1, std::memory_order_relaxed);
}

template <std::size_t N>
void write(std::FILE* f, CUpti_CallbackDomain domain,
           const std::array<std::atomic<unsigned long long>, N>& calls, bool& first) {
  for (std::size_t cbid = 1; cbid < N; ++cbid) {
    const unsigned long long n = calls[cbid].load();
    const char* name = nullptr;
    if (!n || cuptiGetCallbackName(domain, static_cast<std::uint32_t>(cbid), &name) != CUPTI_SUCCESS ||
        !name)
      continue;
    std::fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", name, n);
    first = false;
  }
}

void at_exit() {
  const char* path = std::getenv("API_CENSUS_OUT");
  std::FILE* f = path ? std::fopen(path, "w") : stderr;
  if (!f) return;
  bool first = true;
  std::fprintf(f, "{");
  write(f, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_calls, first);
  write(f, CUPTI_CB_DOMAIN_DRIVER_API, driver_calls, first);
  std::fprintf(f, "}\n");
  if (f != stderr) std::fclose(f);
}

}  // namespace

extern "C" int InitializeInjection() {
  if (cuptiSubscribe(&subscriber, on_api, nullptr) != CUPTI_SUCCESS) return 0;
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  std::atexit(at_exit);
  return 1;
}
