// The program's NVTX ranges as pasta scopes, for nv::Cupti: NVTX is pointed
// at CUPTI as its injection, and CUPTI's NVTX callbacks enter and leave scopes.
#pragma once

#include <dlfcn.h>

#include <cstdlib>

#include <pasta/core/detail/scope_registry.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

// The program's NVTX ranges reach CUPTI only if NVTX loads CUPTI as its
// injection, and NVTX reads this when it initialises: set before the
// profiler's first scope initialises NVTX. A setting of the program's wins.
inline void route_nvtx_to_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info) && info.dli_fname)
    ::setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

// pasta's own scopes reach the profiler directly; their NVTX ranges are
// for Nsight only.
inline bool own_domain(nvtxDomainHandle_t domain) {
#ifdef PASTA_DETAIL_NVTX
  return domain == static_cast<nvtxDomainHandle_t>(pasta::detail::nvtx_domain());
#else
  (void)domain;
  return false;
#endif
}

inline void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& d) {
  auto range_name = [](const nvtxEventAttributes_t* a) -> NameId {
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
      return intern(a->message.ascii);
    return intern("(unnamed NVTX range)");
  };
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const auto* p = static_cast<const nvtxRangePushA_params*>(d.functionParams);
      pasta::detail::scope_enter(intern(p->message ? p->message : "(unnamed NVTX range)"), false);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      pasta::detail::scope_enter(
          range_name(static_cast<const nvtxRangePushEx_params*>(d.functionParams)->eventAttrib),
          false);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
      pasta::detail::scope_exit(false);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d.functionParams);
      if (!own_domain(p->domain))
        pasta::detail::scope_enter(range_name(p->core.eventAttrib), false);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      const auto* p = static_cast<const nvtxDomainRangePop_params*>(d.functionParams);
      if (!own_domain(p->domain)) pasta::detail::scope_exit(false);
      break;
    }
    default:
      break;
  }
}

}  // namespace pasta::nv::detail
