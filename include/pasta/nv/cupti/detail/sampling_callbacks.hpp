// Warp stall samples (StallSample) in nv::Cupti's callbacks: PcSampler
// starts at a context's first launch; its samples are read after API calls
// such as synchronisations, before a module unloads or a context ends.
#pragma once

#include <string>

#include <pasta/core/config.hpp>
#include <pasta/nv/cupti/settings.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/cupti/detail/launch_callbacks.hpp>
#include <pasta/nv/sampling/pc_sampling.hpp>
#include <pasta/nv/cupti/detail/sync_callbacks.hpp>

namespace pasta::nv::detail {

class SamplingCallbacks {
 public:
  explicit SamplingCallbacks(const CuptiSettings& own) {
    sampler_.set_period(own.pc_sampling_period);
  }

  // The capture window opened or closed (nv::Cupti listens for it).
  template <class Sink>
  void window(Sink& sink, bool open) {
    sampler_.window(open, [&](const StallSample& e) { sink.emit(e); });
  }

  // Sampling starts at a context's first launch; samples are read after
  // synchronisations, before a module unloads or a context ends, and at stop.
  void enable(CUpti_SubscriberHandle subscriber) {
    const auto& window = pasta::detail::capture_window();
    sampler_.set_windowed(!window.whole(), window.open());
    enable_launch_callbacks(subscriber);
    enable_sync_callbacks(subscriber);
    for (CUpti_CallbackId id :
         {CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
      cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, id),
               "a resource callback");
  }

  template <class Sink>
  void on_callback(Sink& sink, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                   const void* data) {
    auto emit = [&](const StallSample& e) { sink.emit(e); };
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      const auto& r = *static_cast<const CUpti_ResourceData*>(data);
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) sampler_.finish(r.context, emit);
      if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) sampler_.collect(emit);
    } else if (domain != CUPTI_CB_DOMAIN_NVTX) {
      const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
      if (!is_launch(domain, cbid)) {
        if (cb.callbackSite == CUPTI_API_EXIT) sampler_.collect(emit);
      } else if (cb.callbackSite == CUPTI_API_ENTER) {
        sampler_.enable(cb.context);  // stopped until the window opens, with a window
      }
    }
  }

  // The last samples; once, at the end.
  template <class Sink>
  void finish(Sink& sink) {
    sampler_.finish(nullptr, [&](const StallSample& e) { sink.emit(e); });
  }
  void log_summary(bool verbose) const {
    if (verbose || !sampler_.error().empty() || sampler_.dropped())
      pasta::detail::log(fmt::format(
          "cupti handler: PC sampling: {} samples ({} dropped, {} in kernels CUPTI does not "
          "attribute), {} pc records, {} stall reasons",
          sampler_.samples(), sampler_.dropped(), sampler_.non_user(), sampler_.records(),
          sampler_.reasons()));
  }
  // Why samples are missing; empty when none is.
  std::string partial_reason() const {
    if (!sampler_.error().empty()) return sampler_.error();
    if (sampler_.dropped() || sampler_.buffer_full())
      return fmt::format("PC sampling dropped {} of {} samples{}", sampler_.dropped(),
                         sampler_.samples(),
                         sampler_.buffer_full() ? " (its hardware buffer filled up; raise "
                                                  "PASTA_PC_SAMPLING_PERIOD)"
                                                : "");
    return {};
  }

 private:
  PcSampler sampler_;
};

}  // namespace pasta::nv::detail
