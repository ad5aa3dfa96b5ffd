// Which CUPTI callbacks tag device work with operators (nv/cupti/detail/op_tags.hpp), over
// CUPTI's own tables of callback names: every driver call that makes device work, and of the
// runtime's only its copies and memsets. Checked without a GPU.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <pasta/nv/cupti/detail/op_tags.hpp>

namespace {
std::set<std::string> tagged(CUpti_CallbackDomain domain, std::uint32_t size) {
  std::set<std::string> names;
  for (std::uint32_t id = 1; id < size; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name &&
        pasta::nv::detail::tag_callback(domain, name))
      names.emplace(name);
  }
  return names;
}
}  // namespace

TEST_CASE("tag_callback: the driver's launches, copies and memsets, the runtime's copies and memsets") {
  const auto runtime = tagged(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  const auto driver = tagged(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  for (const char* name : {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                           "cuLaunchCooperativeKernel", "cuGraphLaunch", "cuMemcpyAsync",
                           "cuMemcpyHtoDAsync_v2", "cuMemsetD8Async", "cuMemsetD32_v2"}) {
    CAPTURE(name);
    CHECK(driver.count(name) == 1);
  }
  for (const char* name : {"cudaMemcpyAsync_v3020", "cudaMemcpy_v3020", "cudaMemsetAsync_v3020"}) {
    CAPTURE(name);
    CHECK(runtime.count(name) == 1);
  }
  for (const auto& name : runtime) {
    CAPTURE(name);
    CHECK((name.starts_with("cudaMemcpy") || name.starts_with("cudaMemset")));
  }
  for (const char* name : {"cudaLaunchKernel_v7000", "cudaGraphLaunch_v10000"}) {
    CAPTURE(name);
    CHECK(runtime.count(name) == 0);
  }
  // Nothing else of the driver's: no synchronisation, allocation or query.
  for (const auto& name : driver) {
    CAPTURE(name);
    CHECK((name.starts_with("cuLaunch") || name.starts_with("cuGraphLaunch") ||
           name.starts_with("cuMemcpy") || name.starts_with("cuMemset")));
  }
}
