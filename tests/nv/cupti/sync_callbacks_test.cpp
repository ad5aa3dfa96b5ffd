// The synchronising calls nv::Cupti turns into Synchronize events from their
// API callbacks (nv/cupti/detail/sync_callbacks.hpp): which calls they are, the
// stream their parameters name, and one event for a runtime call and the
// driver call under it; and which callback of a launch reports it
// (launch_callbacks.hpp). Checked without a GPU.
#include <doctest/doctest.h>

#include <thread>

#include <pasta/nv/cupti/detail/launch_callbacks.hpp>
#include <pasta/nv/cupti/detail/sync_callbacks.hpp>

using namespace pasta;
using namespace pasta::nv::detail;

TEST_CASE("sync_call: each synchronising call, by domain, and nothing else") {
  const auto* device =
      sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
  REQUIRE(device != nullptr);
  CHECK(device->kind == SyncKind::context);
  CHECK(device->device_wide);
  CHECK_FALSE(device->stream);

  const auto* stream = sync_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000);
  REQUIRE(stream != nullptr);
  CHECK(stream->kind == SyncKind::stream);
  CHECK(stream->stream);
  CHECK(stream->per_thread);
  CHECK_FALSE(stream->device_wide);

  const auto* wait =
      sync_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent);
  REQUIRE(wait != nullptr);
  CHECK(wait->kind == SyncKind::event);
  CHECK(wait->stream);
  CHECK_FALSE(wait->per_thread);
  const auto* event =
      sync_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize);
  REQUIRE(event != nullptr);
  CHECK_FALSE(event->stream);
  CHECK(sync_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2)
            ->device_wide);

  // The same number in the other domain is another call; launches, copies
  // and ids past the tables are not synchronisations.
  CHECK(sync_call(CUPTI_CB_DOMAIN_DRIVER_API,
                  CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020) == nullptr);
  CHECK(sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) ==
        nullptr);
  CHECK(sync_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2) == nullptr);
  CHECK(sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE) == nullptr);
  CHECK(sync_call(CUPTI_CB_DOMAIN_NVTX, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) ==
        nullptr);

  // Every entry is found under its own domain and id.
  for (const SyncCall& c : sync_calls) CHECK(sync_call(c.domain, c.cbid) == &c);
}

TEST_CASE("sync_stream reads the stream a call's parameters start with") {
  auto* s = reinterpret_cast<CUstream>(0x5a00);
  struct {
    CUstream stream;
    void* event;
    unsigned flags;
  } wait_params{s, reinterpret_cast<void*>(0x77), 0};
  const auto& wait =
      *sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020);
  CHECK(sync_stream(wait, &wait_params) == s);
  // An event synchronisation's parameters start with the event, not a stream.
  struct {
    void* event;
  } event_params{reinterpret_cast<void*>(0x77)};
  const auto& event =
      *sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020);
  CHECK(sync_stream(event, &event_params) == nullptr);
  CHECK(sync_stream(wait, nullptr) == nullptr);
}

TEST_CASE("a runtime synchronisation and the driver call under it are one, timed from the outer") {
  const auto& runtime =
      *sync_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
  const auto& driver =
      *sync_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize);
  sync_enter(runtime, 100);
  sync_enter(driver, 110);
  CHECK_FALSE(sync_exit(driver).has_value());
  const auto start = sync_exit(runtime);
  REQUIRE(start.has_value());
  CHECK(*start == 100);
  CHECK_FALSE(sync_exit(runtime).has_value());  // ended once

  // A driver call on its own is a synchronisation of its own.
  sync_enter(driver, 200);
  CHECK(sync_exit(driver) == std::optional<std::uint64_t>{200});

  // An exit whose enter was not seen (the window opened during the call,
  // or the callbacks came on then) ends nothing.
  CHECK_FALSE(sync_exit(runtime).has_value());

  // Each thread has its own call under way.
  sync_enter(runtime, 300);
  std::optional<std::uint64_t> other;
  std::thread([&] {
    sync_enter(driver, 310);
    other = sync_exit(driver);
  }).join();
  CHECK(other == std::optional<std::uint64_t>{310});
  CHECK(sync_exit(runtime) == std::optional<std::uint64_t>{300});
}

// Launches share the stream look-up (cupti_stream_id): a launch call's null
// stream is the thread's own default stream exactly for the _ptsz calls.
TEST_CASE("per_thread_stream: every _ptsz launch call, and no other") {
  auto check_domain = [](CUpti_CallbackDomain domain, const auto& ids) {
    for (CUpti_CallbackId id : ids) {
      const char* name = nullptr;
      REQUIRE(cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS);
      CAPTURE(name);
      CHECK(per_thread_stream(domain, id) == (std::string_view(name).find("_ptsz") !=
                                              std::string_view::npos));
    }
  };
  check_domain(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_launches);
  check_domain(CUPTI_CB_DOMAIN_DRIVER_API, driver_launches);
}

// One launch's callbacks in CUPTI's order, as the counters (before the
// handler) and nv::Cupti see them: which entry reports the launch.
namespace {
struct LaunchSeen {
  bool runtime = false, driver = false;
};
LaunchSeen runtime_launch(CUcontext at_entry, CUcontext driver_context) {
  LaunchSeen seen;
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_ENTER;
  cb.context = at_entry;
  const bool asked = reported_launch_entry(CUPTI_CB_DOMAIN_RUNTIME_API, cb);
  seen.runtime = runtime_launch_callback(cb);
  CHECK(asked == seen.runtime);
  CUpti_CallbackData driver{};
  driver.callbackSite = CUPTI_API_ENTER;
  driver.context = driver_context;
  seen.driver = reported_launch_entry(CUPTI_CB_DOMAIN_DRIVER_API, driver);
  cb.callbackSite = CUPTI_API_EXIT;
  cb.context = driver_context;  // the runtime made it current
  CHECK_FALSE(runtime_launch_callback(cb));
  return seen;
}
}  // namespace

TEST_CASE("a launch is reported once: at the runtime call, or at the driver call under a "
          "runtime call that had no context yet") {
  std::thread([] {
    auto* ctx = reinterpret_cast<CUcontext>(0x1000);
    // A thread's first runtime launch, before the runtime made the primary
    // context current there: the driver launch under it reports, with its context.
    LaunchSeen first = runtime_launch(nullptr, ctx);
    CHECK_FALSE(first.runtime);
    CHECK(first.driver);
    CHECK(runtime_depth() == 0);
    CHECK_FALSE(runtime_launch_without_context());
    // Every later runtime launch reports at its own entry, not the driver's.
    LaunchSeen later = runtime_launch(ctx, ctx);
    CHECK(later.runtime);
    CHECK_FALSE(later.driver);
    // A driver launch outside any runtime launch (cuBLAS, cuDNN, Triton) reports itself.
    CUpti_CallbackData driver{};
    driver.callbackSite = CUPTI_API_ENTER;
    driver.context = ctx;
    CHECK(reported_launch_entry(CUPTI_CB_DOMAIN_DRIVER_API, driver));
  }).join();
}
