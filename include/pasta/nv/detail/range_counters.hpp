// Hardware counters per kernel launch for nv::Cupti, through CUPTI's Range
// Profiler (CUDA 12.6 and later): auto ranges, one per kernel, each kernel
// run as many passes as the metrics need. The metrics are core/metrics.hpp's,
// under ncu's names. Two ways to replay (PASTA_COUNTER_REPLAY):
//
// pasta (the default): user replay, as ncu does it. At the driver's launch
// call, before it runs, pasta saves the program's device memory
// (ReplayMemory), then for each pass restores it, flushes L2 (L2Flush),
// starts the profiler, launches the kernel itself with the program's
// arguments and stops the profiler; it restores the memory once more and
// the program's own launch then runs, unprofiled, on what the program had.
// Every pass starts from the same memory and an L2 that holds none of it,
// as under `ncu --cache-control all`. Measured on the H100 (bench/gpu/probe):
// a 4 MB in-place kernel writes 1 KB to DRAM in every pass, as ncu says
// (0), where kernel replay reports 3.4 MB; a launch costs ~100 ms. Every
// range-profiler call runs on a thread of pasta's (Worker), and CUPTI's
// kernel records are off during the passes (with them on, the
// SASS-instruction counts, and so the flop count, read 0).
//
// cupti: CUPTI's kernel replay, which saves and restores the
// memory the kernel may write itself, inside the launch.
//
// Ranges carry no launch id, only their order (their names are their
// indices): launches are serialised between before() and after() (kernel
// replay serialises them anyway), and the k-th range since profiling started
// is the k-th launch profiled. Other GPU work (copies, memsets, graphs) stops
// profiling first (interrupt()), so it adds no range; an image whose ranges
// still do not match its launches reports none of them. Only the first
// context a launch came from is measured. Launches of a signature past the
// first few are not measured: profiling is stopped around them, so they run
// at full speed and tools give them the measured mean.
//
// Caches, under kernel replay: ncu writes back and evicts L2 before each
// pass by default. Under CUPTI's kernel replay that cannot be done: CUPTI saves the memory the
// kernel may write before the first pass and restores it before each other
// one, inside the launch, and those copies leave L2 full of dirty lines that
// the kernel's own traffic then writes back (a kernel whose 4 MB of output
// stays in L2 shows megabytes of DRAM writes). So the next launches of the
// signature are measured again for the cache-sensitive metrics alone, in
// sets of one pass each (metrics::cache_sensitive): no save, no restore, and
// L2 flushed just before (L2Flush), as under ncu. Fields a measurement did
// not collect are NaN; tools take each metric from the measurements with the
// fewest passes.
//
// Cost (H100, a 12-block GPT step): starting the profiler takes 70-130 ms, a
// launch replayed in 9 passes ~160 ms, one in one pass ~15 ms, a fresh
// range-profiler object ~25 ms, stopping and decoding under 1 ms. So an
// image keeps its configuration across stops and takes ranges until it is
// nearly full; a one-pass image profiles the flush kernel and up to
// pass_over unmeasured launches in a row and passes over their ranges rather
// than stopping and starting again.
#pragma once

#include <cupti_activity.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/nv/detail/counter_plan.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/driver.hpp>
#include <pasta/nv/detail/l2_flush.hpp>
#include <pasta/nv/detail/replay_memory.hpp>

namespace pasta::nv::detail {

class RangeCounters {
 public:
  // Ranges decoded at a time: the counter-data image holds this many.
  static constexpr std::size_t ranges_per_image = 64;

  RangeCounters() {
    for (std::size_t i = 0; i < metrics::counters.size(); ++i) full_.add(i);
  }
  RangeCounters(const RangeCounters&) = delete;
  RangeCounters& operator=(const RangeCounters&) = delete;

  // Launches of one signature measured (0: all); the rest run unmeasured.
  void set_per_signature(std::uint64_t n) { per_signature_ = n; }
  // Whether L2 is flushed before each launch measured for the cache-sensitive
  // metrics (PASTA_COUNTER_CACHE).
  void set_flush_cache(bool on) { flush_cache_ = on; }
  // Whether images whose ranges do not match their launches are listed in
  // the log, and sequence() is kept.
  void set_verbose(bool on) { verbose_ = on; }
  // pasta replays kernels itself (true, the default) or CUPTI does (false).
  void set_user_replay(bool on) { user_replay_ = on; }
  bool user_replay() const { return user_replay_; }
  // Whether a launch before() chose waits for replay() (on the thread that launched it).
  bool owes() const { return owed_.due; }

  // The program's allocations (saved and restored around a user replay).
  void allocated(std::uint64_t base, std::uint64_t bytes) {
    memory_.allocations().add(base, bytes);
  }
  void freed(std::uint64_t base) { memory_.allocations().remove(base); }
  void unmapped(std::uint64_t base, std::uint64_t bytes) {
    memory_.allocations().remove(base, bytes);
  }

  // Whether the handler has CUPTI's kernel activity records on (user replay
  // turns them off around its passes).
  void set_kernel_records(bool on) { kernel_records_ = on; }

  // The driver call of a launch (its CUPTI callback's parameters).
  enum class Call { kernel, kernel_ex, cooperative };
  struct Launch {
    Call call;
    const void* params;
  };

  // On the launching thread, before the launch API runs: returns whether the
  // launch is measured. `signature` names (kernel, grid, block, operator
  // path), `stream` the stream it is launched on. after() must follow on
  // the same thread.
  template <class Emit>
  bool before(CUcontext ctx, CUstream stream, std::uint64_t correlation, std::uint64_t signature,
              Emit&& emit) {
    mutex_.lock();
    if (failed_ || !ctx) return false;
    try {
      if (!ctx_) {
        Timer t(spent_.startup);
        driver_.bind();
        if (user_replay_)
          worker_.run([&] {
            driver_.call(driver_.ctx_set_current(ctx), "making the measured context current");
            enable(ctx);
          });
        else
          enable(ctx);
      }
      if (ctx != ctx_) {
        ++other_context_;
        return false;
      }
      if (driver_.capturing(stream)) {
        // Captured into a graph, not run now: not measured (nor are the
        // kernels a graph runs: they have no launch callback). Profiling
        // stopped at the capture's begin (an interrupt); stopping now would
        // synchronise and so break the capture.
        ++captured_;
        note('g');
        return false;
      }
      const int k = plan_.pick(signature, index(configured_));
      MetricSet* set = k == CounterPlan::none   ? nullptr
                       : k == CounterPlan::full ? &full_
                                                : &cache_[static_cast<std::size_t>(k - 1)];
      if (!set) {
        ++skipped_;
        // Profiling a few launches in one pass and passing over their
        // ranges costs less than stopping and starting again.
        if (running_ && configured_ != &full_ && passed_in_row_ < pass_over &&
            decoded_ + pending_.size() < room) {
          ++passed_in_row_;
          ++passed_over_;
          pending_.push_back({correlation, signature, false});
          launch_ = {&spent_.passed, Clock::now()};
          note('p');
          return false;
        }
        // Profiling stays off until a launch to measure: this one runs as is.
        if (running_) pause(emit);
        note('.');
        return false;
      }
      passed_in_row_ = 0;
      if (user_replay_) {
        // Replayed at the driver's launch call (replay()); the image keeps
        // taking ranges across launches.
        owed_ = {true, stream, correlation, signature};
        launch_ = {&spent_.full, Clock::now()};
        note('R');
        return true;
      }
      const bool flush = set != &full_ && flush_cache_;
      if (flush && !l2_.ready()) {
        // The flush kernel's module and buffer, made with profiling off.
        if (running_) pause(emit);
        with_l2([&] {
          l2_.prepare(ctx_);
          return true;
        });
      }
      if (running_ && (configured_ != set || decoded_ >= room)) pause(emit);
      if (configured_ != set || decoded_ >= room) arm(*set);
      if (!running_) start();
      // Only the one-pass sets get a flushed L2 (under replay the profiler's
      // own save and restore fill it again): the flush kernel runs profiled,
      // a range passed over.
      if (flush && flush_cache_ && with_l2([&] { return l2_.flush(ctx_, stream); })) {
        ++flushes_;
        pending_.push_back({0, 0, false});
      }
      pending_.push_back({correlation, signature, true});
      launch_ = {set == &full_ ? &spent_.full : &spent_.cache, Clock::now()};
      note(set == &full_ ? 'F' : 'C');
      return true;
    } catch (const std::exception& e) {
      fail(e.what());
      return false;
    }
  }
  // After the launch API returned (the kernel ran, replayed, on the device).
  template <class Emit>
  void after(Emit&& emit) {
    if (owed_.due) {
      // No driver launch call came (replay() never ran): measured later.
      owed_.due = false;
      ++unreplayed_;
      plan_.lost(owed_.signature, index(&full_));
    }
    if (launch_.into) {
      launch_.into->add(launch_.start);
      launch_.into = nullptr;
    }
    try {
      // The image nearly full: decoded now; the next measured launch arms a fresh one.
      if (!failed_ && running_ && decoded_ + pending_.size() >= room) pause(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    mutex_.unlock();
  }
  // At the driver's launch call of the launch before() chose, before the
  // call runs (user replay): the passes, then the counters decoded. On the
  // launching thread, inside before() and after(). Under user replay every
  // range-profiler call runs on one thread of pasta's (Worker) while the
  // caller waits: launches made inside CUPTI's callbacks are not reported.
  // Memory that could not be saved (no room for the backup) leaves the
  // launch unmeasured; a failure after the save restores the memory first.
  template <class Emit>
  void replay(const Launch& launch, Emit&& emit) {
    if (!owed_.due) return;
    owed_.due = false;
    if (failed_) return;
    try {
      worker_.run([&] {
        // CUPTI's kernel records off while replaying: with them on, the
        // SASS-instruction counts (the flop count) of a user replay read 0
        // (measured on the H100, bench/gpu/probe). The program's work is
        // waited for first, so no record of it is lost.
        KernelRecordsOff off(kernel_records_, driver_);
        if (configured_ != &full_ || decoded_ >= room) arm(full_);
        if (!run_passes(launch)) return;
        pending_.push_back({owed_.correlation, owed_.signature, true});
        decode(emit);
      });
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  // Inside a replay's own thread: its API calls and their records are pasta's.
  static bool& replaying() {
    thread_local bool on = false;
    return on;
  }

  // Before GPU work that is not a kernel launch before() sees (a copy, a
  // memset, a graph): profiling stops, so the work is no range of its own.
  // Not on a thread inside before() and after().
  template <class Emit>
  void interrupt(Emit&& emit, char kind) {
    std::lock_guard lock(mutex_);
    if (failed_ || !running_) return;
    note(kind);
    try {
      ++interrupts_;
      pause(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  // The launches not decoded yet; profiling stops. Call once, at the end.
  template <class Emit>
  void finish(Emit&& emit) {
    std::lock_guard lock(mutex_);
    try {
      if (!failed_ && running_) pause(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    teardown();
    pasta::detail::DispatchScope own;
    l2_.release();
    memory_.release(ctx_);
  }

  std::uint64_t measured() const { return measured_; }
  // Launches measured again for the cache-sensitive metrics alone.
  std::uint64_t remeasured() const { return remeasured_; }
  std::uint64_t skipped() const { return skipped_; }
  std::uint64_t other_context() const { return other_context_; }
  std::uint64_t mismatched() const { return mismatched_; }
  std::uint32_t passes() const { return full_.passes; }
  // The ncu metrics measured again in one pass: comma-separated, the sets
  // (one launch each) separated by semicolons.
  std::string cache_metrics() const {
    std::vector<std::string> sets;
    for (const MetricSet& set : cache_) sets.push_back(pasta::detail::join(set.names, ", "));
    return sets.empty() ? "none" : pasta::detail::join(sets, "; ");
  }
  // Ranges beyond the launches profiled (work CUPTI counted as a range of its
  // own that before() did not see).
  std::uint64_t extra_ranges() const { return extra_ranges_; }
  // Stops for GPU work other than launches (interrupt()).
  std::uint64_t interrupts() const { return interrupts_; }
  // Launches profiled in one pass and passed over, not to stop and start.
  std::uint64_t passed_over() const { return passed_over_; }
  // Launches to measure in one pass left for their signature's next launch.
  std::uint64_t waited() const { return plan_.waits(); }
  const std::string& error() const { return error_; }
  // What each launch was, in order (verbose): F measured in full, C in one
  // pass, p profiled and passed over, . not profiled; x, y, g profiling
  // stopped for a memset, a copy, other GPU work; / another metric set, |
  // profiling started.
  const std::string& sequence() const { return sequence_; }
  // Where the time went, for the verbose summary.
  std::string timing() const {
    const auto& s = spent_;
    return fmt::format(
        "start-up {:.0f} ms; launches measured in full {:.0f} ms ({}), in one pass {:.0f} ms ({}), "
        "passed over {:.0f} ms ({}); range profiler set up for another metric set {:.0f} ms ({}); "
        "images configured {:.0f} "
        "ms ({}); profiling started {:.0f} ms ({}), stopped and decoded {:.0f} ms ({}); L2 "
        "flushes {:.0f} ms ({}); memory saved and restored {:.0f} ms ({})",
        s.startup.ms, s.full.ms, s.full.n, s.cache.ms, s.cache.n, s.passed.ms, s.passed.n, s.use.ms,
        s.use.n, s.arm.ms, s.arm.n, s.start.ms, s.start.n, s.drain.ms, s.drain.n, s.flush.ms,
        s.flush.n, s.copy.ms, s.copy.n);
  }
  // Why L2 could not be flushed (then it was not, from that launch on).
  const std::string& flush_error() const { return flush_error_; }
  std::uint64_t flushes() const { return flushes_; }
  // Launches captured into a graph (not run then, not measured).
  std::uint64_t captured() const { return captured_; }
  // User replay: launches not measured because the memory could not be
  // saved or because no driver launch call came; the bytes saved for the
  // launches measured.
  std::uint64_t unsaved() const { return unsaved_; }
  std::uint64_t unreplayed() const { return unreplayed_; }
  std::uint64_t replayed_bytes() const { return replayed_bytes_; }
  std::size_t allocations() const { return memory_.allocations().count(); }

 private:
  template <class P>
  static P params(std::size_t size) {
    P p{};
    p.structSize = size;
    return p;
  }
  static void check(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return;
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
      throw std::runtime_error(
          fmt::format("{}: {}. Reading GPU performance counters needs root, or the driver option "
                      "NVreg_RestrictProfilingToAdminUsers=0",
                      what, cupti_error(r)));
    throw std::runtime_error(fmt::format("{}: {}", what, cupti_error(r)));
  }

  // A set of metrics measured together: its names, which `counters` each
  // is, and what CUPTI built for it.
  struct MetricSet {
    std::vector<const char*> names;
    std::vector<std::size_t> index;  // into metrics::counters
    CUpti_Profiler_Host_Object* host = nullptr;
    std::vector<std::uint8_t> config, data;  // config image, counter-data image
    std::uint32_t passes = 0;
    void add(std::size_t i) {
      names.push_back(metrics::counters[i].name.data());
      index.push_back(i);
    }
  };

  // A range of the image not decoded yet: a launch measured, or one profiled
  // and passed over (the L2 flush, a launch not measured).
  struct Pending {
    std::uint64_t correlation, signature;
    bool measured;  // not: a range passed over (the L2 flush, a launch not measured)
  };

  void enable(CUcontext ctx) {
    auto init =
        params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    check(cuptiProfilerInitialize(&init), "initialising the CUPTI profiler");
    profiler_initialized_ = true;
    check(cuptiGetDeviceId(ctx, &device_), "finding the device of the context");

    auto chip =
        params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = device_;
    check(cuptiDeviceGetChipName(&chip), "finding the GPU's chip name");

    auto avail = params<CUpti_Profiler_GetCounterAvailability_Params>(
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    avail.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    check(cuptiProfilerGetCounterAvailability(&avail), "asking which counters are available");
    build(full_, chip.pChipName, availability);
    ctx_ = ctx;
    // Under user replay every pass starts with L2 flushed: nothing to measure again.
    if (user_replay_) {
      plan_.configure(per_signature_, 0);
      return;
    }
    // The cache-sensitive metrics in sets of one pass each, most wanted
    // first: each (all its counters) goes to the first set it fits in, or
    // starts a set. On GH100 the L2 hit rate's counters take more than one
    // pass, so it is measured in the full set only.
    for (auto field : metrics::cache_sensitive) {
      bool placed = false;
      for (std::size_t k = 0; k <= cache_.size() && !placed && k < max_cache_sets; ++k) {
        MetricSet trial;
        if (k < cache_.size())
          for (std::size_t i : cache_[k].index) trial.add(i);
        for (std::size_t i = 0; i < metrics::counters.size(); ++i)
          if (metrics::counters[i].field == field) trial.add(i);
        build(trial, chip.pChipName, availability);
        placed = trial.passes == 1;
        if (!placed) {
          release(trial);
        } else if (k < cache_.size()) {
          release(cache_[k]);  // the larger set replaces it, as built
          cache_[k] = std::move(trial);
        } else {
          cache_.push_back(std::move(trial));
        }
      }
    }

    plan_.configure(per_signature_, full_.passes > 1 ? cache_.size() : 0);
  }

  // The range profiler, enabled for `set`. Switching sets takes a fresh
  // range profiler object: one object configured for one set and then the
  // other mixed up the two (counts of an earlier launch in a later one, and
  // a PyTorch program that stopped making progress, on an H100).
  void use(MetricSet& set) {
    if (object_ && sized_ == &set) return;
    note('/');
    Timer t(spent_.use);
    if (object_) {
      auto off = params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = object_;
      object_ = nullptr;
      check(cuptiRangeProfilerDisable(&off), "disabling the range profiler");
    }
    auto on =
        params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    on.ctx = ctx_;
    check(cuptiRangeProfilerEnable(&on), "enabling the range profiler");
    object_ = on.pRangeProfilerObject;
    auto data = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    data.pRangeProfilerObject = object_;
    data.pMetricNames = set.names.data();
    data.numMetrics = set.names.size();
    data.maxNumOfRanges = ranges_per_image;
    data.maxNumRangeTreeNodes = ranges_per_image;
    check(cuptiRangeProfilerGetCounterDataSize(&data), "sizing the counter-data image");
    set.data.resize(data.counterDataSize);
    sized_ = &set;
  }

  // The host object, config image and pass count of one set.
  void build(MetricSet& set, const char* chip, std::vector<std::uint8_t>& availability) {
    auto host = params<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip;
    host.pCounterAvailabilityImage = availability.data();
    check(cuptiProfilerHostInitialize(&host), "initialising the profiler host");
    set.host = host.pHostObject;

    auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = set.host;
    add.ppMetricNames = set.names.data();
    add.numMetrics = set.names.size();
    check(cuptiProfilerHostConfigAddMetrics(&add),
          "adding the metrics (an unknown metric name for this GPU?)");
    auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = set.host;
    check(cuptiProfilerHostGetConfigImageSize(&size), "sizing the config image");
    set.config.resize(size.configImageSize);
    auto image = params<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = set.host;
    image.pConfigImage = set.config.data();
    image.configImageSize = set.config.size();
    check(cuptiProfilerHostGetConfigImage(&image), "building the config image");
    auto passes = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    passes.pConfigImage = set.config.data();
    passes.configImageSize = set.config.size();
    check(cuptiProfilerHostGetNumOfPasses(&passes), "counting the replay passes");
    set.passes = static_cast<std::uint32_t>(passes.numOfPasses);
  }

  void release(MetricSet& set) {
    if (!set.host) return;
    auto off = params<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    off.pHostObject = set.host;
    (void)cuptiProfilerHostDeinitialize(&off);
    set.host = nullptr;
  }

  // A set's number in CounterPlan's terms.
  int index(const MetricSet* set) const {
    if (!set) return CounterPlan::none;
    return set == &full_ ? CounterPlan::full : static_cast<int>(set - cache_.data()) + 1;
  }

  // A fresh counter-data image of `set` and its configuration.
  void arm(MetricSet& set) {
    use(set);
    Timer t(spent_.arm);
    std::fill(set.data.begin(), set.data.end(), std::uint8_t{0});
    auto init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = object_;
    init.pCounterData = set.data.data();
    init.counterDataSize = set.data.size();
    check(cuptiRangeProfilerCounterDataImageInitialize(&init),
          "initialising the counter-data image");
    auto config = params<CUpti_RangeProfiler_SetConfig_Params>(
        CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    config.pRangeProfilerObject = object_;
    config.pConfig = set.config.data();
    config.configSize = set.config.size();
    config.pCounterDataImage = set.data.data();
    config.counterDataImageSize = set.data.size();
    config.range = CUPTI_AutoRange;
    config.replayMode = user_replay_ ? CUPTI_UserReplay : CUPTI_KernelReplay;
    config.maxRangesPerPass = ranges_per_image;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&config), "configuring the range profiler");
    configured_ = &set;
    decoded_ = 0;
  }

  // Profiling on: the configured image takes ranges after those it holds.
  void start() {
    note('|');
    Timer t(spent_.start);
    auto p = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStart(&p), "starting the range profiler");
    running_ = true;
  }

  CUptiResult stop(bool* last_pass = nullptr) {
    auto p = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    running_ = false;
    const CUptiResult r = cuptiRangeProfilerStop(&p);
    if (last_pass) *last_pass = p.isAllPassSubmitted != 0;
    return r;
  }
  // CUPTI's kernel activity records off for a scope (if the handler has them on).
  struct KernelRecordsOff {
    bool on;
    KernelRecordsOff(bool records, Driver& driver) : on(records) {
      if (!on) return;
      driver.call(driver.ctx_synchronize(), "waiting for the program's work before a replay");
      check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
            "turning kernel records off for a replay");
    }
    ~KernelRecordsOff() {
      if (on) (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
    KernelRecordsOff(const KernelRecordsOff&) = delete;
    KernelRecordsOff& operator=(const KernelRecordsOff&) = delete;
  };
  // replay()'s work, on its own thread with the measured context current:
  // whether the launch was measured.
  bool run_passes(const Launch& launch) {
    pasta::detail::DispatchScope own;  // copies, flushes and relaunches are pasta's work
    // The launching thread's own default stream is not this thread's: the
    // legacy one instead (all work is waited for before and after anyway).
    const CUstream stream = owed_.stream == CU_STREAM_PER_THREAD ? nullptr : owed_.stream;
    bool saved = false;
    {
      Timer t(spent_.copy);
      saved = memory_.save(stream);
    }
    if (!saved) {
      ++unsaved_;
      pasta::detail::log_once(
          "counters:unsaved",
          fmt::format("hardware counters: {}; launches are not measured while it is so "
                      "(PASTA_COUNTER_REPLAY=cupti lets CUPTI save only what a kernel writes)",
                      memory_.why()));
      return false;
    }
    try {
      const bool flush = flush_cache_ && with_l2([&] {
                           l2_.prepare(ctx_);
                           return true;
                         });
      for (std::uint32_t pass = 0;; ++pass) {
        if (pass) {
          Timer t(spent_.copy);
          memory_.restore(stream);
        }
        if (flush && flush_cache_ && with_l2([&] { return l2_.flush(ctx_, stream); })) ++flushes_;
        start();
        const CUresult launched = relaunch(launch, stream);
        const bool last = stop_pass();
        driver_.call(launched, "launching the kernel for a replay pass");
        if (last) break;
        if (pass > 256) throw std::runtime_error("the range profiler never took its last pass");
      }
      Timer t(spent_.copy);
      memory_.restore(stream);
      driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
    } catch (const std::exception&) {
      try {
        if (running_) (void)stop();
        memory_.restore(stream);
        driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
      } catch (const std::exception& f) {
        pasta::detail::log(fmt::format(
            "hardware counters: the program's memory could not be restored after a failed "
            "replay ({}): its results may be wrong",
            f.what()));
      }
      throw;
    }
    replayed_bytes_ += memory_.saved_bytes();
    return true;
  }
  // A user-replay pass ended: whether it was the last one.
  bool stop_pass() {
    bool last = false;
    check(stop(&last), "stopping the range profiler after a pass");
    return last;
  }
  // The kernel launched again as the program's driver call launched it, on `stream`.
  CUresult relaunch(const Launch& l, CUstream stream) {
    switch (l.call) {
      case Call::kernel: {
        const auto& p = *static_cast<const DriverLaunchParams*>(l.params);
        return driver_.launch(p.f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                              p.blockDimZ, p.sharedMemBytes, stream, p.kernelParams, p.extra);
      }
      case Call::cooperative: {
        const auto& p = *static_cast<const DriverLaunchParams*>(l.params);
        return driver_.launch_cooperative(p.f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX,
                                          p.blockDimY, p.blockDimZ, p.sharedMemBytes, stream,
                                          p.kernelParams);
      }
      case Call::kernel_ex: {
        const auto& p = *static_cast<const DriverLaunchExParams*>(l.params);
        CUlaunchConfig config = *p.config;
        config.hStream = stream;
        return driver_.launch_ex(&config, p.f, p.kernelParams, p.extra);
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  }

  // Profiling off; the image's new ranges decoded, one for each launch
  // profiled since the last pause, in order. The image keeps its
  // configuration: the next measured launch of its set only starts profiling
  // again. Ranges and launches not as many (work CUPTI counted that before()
  // did not see): which range is whose is not known, so none is reported and
  // the launches' signatures are measured again at their next launch.
  template <class Emit>
  void pause(Emit& emit) {
    Timer t(spent_.drain);
    check(stop(), "stopping the range profiler");
    decode(emit);
  }
  // The image's new ranges decoded and emitted (see pause()).
  template <class Emit>
  void decode(Emit& emit) {
    MetricSet& set = *configured_;
    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerDecodeData(&decode), "decoding the counters");
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = set.data.data();
    info.counterDataImageSize = set.data.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "counting the decoded ranges");
    const std::size_t total = info.numTotalRanges;
    const std::size_t first = total >= decoded_ ? decoded_ : 0;
    const std::size_t ranges = total - first;
    const bool matched = ranges == pending_.size();
    std::vector<double> values(set.names.size());
    for (std::size_t j = 0; j < pending_.size(); ++j) {
      const Pending& p = pending_[j];
      if (!p.measured) continue;
      if (!matched) {
        ++mismatched_;
        plan_.lost(p.signature, index(&set));
        continue;
      }
      auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = set.host;
      eval.pCounterDataImage = set.data.data();
      eval.counterDataImageSize = set.data.size();
      eval.ppMetricNames = set.names.data();
      eval.numMetrics = set.names.size();
      eval.rangeIndex = first + j;
      eval.pMetricValues = values.data();
      check(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluating the counters");
      KernelCounters c = metrics::from_counters(set.index, values);
      c.correlation = p.correlation;
      c.device = device_;
      c.passes = set.passes;
      emit(c);
      ++(&set == &full_ ? measured_ : remeasured_);
    }
    if (ranges > pending_.size()) extra_ranges_ += ranges - pending_.size();
    if (!matched && verbose_ && listed_++ < 5)
      pasta::detail::log(fmt::format(
          "hardware counters: {} ranges for {} launches ({} measured) in one image of the {}",
          ranges, pending_.size(),
          std::count_if(pending_.begin(), pending_.end(),
                        [](const Pending& p) { return p.measured; }),
          &set == &full_ ? "full set" : "one-pass set"));
    decoded_ = total;
    pending_.clear();
  }

  // The flush kernel's own launch and module load are pasta's work: CUPTI's
  // callbacks skip them (DispatchScope). A failure turns flushing off.
  template <class F>
  bool with_l2(F&& f) {
    pasta::detail::DispatchScope own;
    Timer t(spent_.flush);
    try {
      return f();
    } catch (const std::exception& e) {
      flush_cache_ = false;
      flush_error_ = fmt::format(
          "hardware counters: L2 is not flushed before measured launches ({}): a kernel's DRAM "
          "bytes and hit rates include what earlier kernels left in L2",
          e.what());
      pasta::detail::log(flush_error_);
      return false;
    }
  }

  void teardown() {
    if (worker_.started()) {
      worker_.run([&] { release_profiler(); });
      worker_.stop();
    } else {
      release_profiler();
    }
    running_ = false;
    failed_ = true;  // nothing is measured after the end
  }
  void release_profiler() {
    if (object_) {
      if (running_) (void)stop();
      auto off = params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = object_;
      (void)cuptiRangeProfilerDisable(&off);
      object_ = nullptr;
    }
    release(full_);
    for (MetricSet& set : cache_) release(set);
    if (profiler_initialized_) {
      auto off = params<CUpti_Profiler_DeInitialize_Params>(
          CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      (void)cuptiProfilerDeInitialize(&off);
      profiler_initialized_ = false;
    }
  }

  void fail(const std::string& why) {
    error_ = fmt::format("hardware counters: {}; launches from here on are not measured", why);
    pasta::detail::log(error_);
    pending_.clear();
    teardown();
  }

  // Wall time spent in one kind of step, and how many.
  using Clock = std::chrono::steady_clock;
  struct Spent {
    double ms = 0;
    std::uint64_t n = 0;
    void add(Clock::time_point since) {
      ms += std::chrono::duration<double, std::milli>(Clock::now() - since).count();
      ++n;
    }
  };
  struct Timer {
    Spent& into;
    Clock::time_point start = Clock::now();
    ~Timer() { into.add(start); }
  };
  struct {
    Spent startup, full, cache, passed, use, arm, start, drain, flush, copy;
  } spent_;
  struct {
    Spent* into = nullptr;  // the launch being measured, from before() to after()
    Clock::time_point start;
  } launch_;

  std::mutex mutex_;
  // Sets of one pass for the cache-sensitive metrics, at most this many.
  static constexpr std::size_t max_cache_sets = 2;
  // Ranges an image takes before it is decoded and a fresh one armed; the
  // rest of its ranges_per_image are room for ranges no launch explains.
  static constexpr std::size_t room = ranges_per_image - 16;

  MetricSet full_;                   // every metric
  std::vector<MetricSet> cache_;     // the cache-sensitive ones, one pass each
  MetricSet* configured_ = nullptr;  // the set of the image object_ fills
  std::size_t decoded_ = 0;          // ranges of that image decoded
  MetricSet* sized_ = nullptr;       // the set object_ was enabled for
  CUcontext ctx_ = nullptr;
  std::uint32_t device_ = 0;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::vector<Pending> pending_;  // the launches of the ranges in the image, in order
  bool profiler_initialized_ = false, running_ = false, failed_ = false, flush_cache_ = true;
  bool verbose_ = false;
  std::uint64_t listed_ = 0;  // images whose ranges were listed in the log
  std::string sequence_;      // sequence(), the first 8000 steps
  void note(char c) {
    if (verbose_ && sequence_.size() < 8000) sequence_ += c;
  }
  // The thread that makes every range-profiler call under user replay, with
  // the measured context current: run() hands it a job and waits for it.
  class Worker {
   public:
    Worker() = default;
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    ~Worker() { stop(); }
    bool started() const { return thread_.joinable(); }
    // Runs `job` on the worker (started at the first call) and waits;
    // rethrows what it threw.
    template <class F>
    void run(F&& job) {
      std::function<void()> f = std::forward<F>(job);
      if (!started())
        thread_ = std::thread([this] {
          replaying() = true;  // its API calls are pasta's
          loop();
        });
      std::unique_lock lock(mutex_);
      job_ = &f;
      error_ = nullptr;
      wake_.notify_all();
      wake_.wait(lock, [&] { return job_ == nullptr; });
      if (error_) std::rethrow_exception(error_);
    }
    void stop() {
      if (!started()) return;
      {
        std::lock_guard lock(mutex_);
        quit_ = true;
        wake_.notify_all();
      }
      thread_.join();
      quit_ = false;
    }

   private:
    void loop() {
      std::unique_lock lock(mutex_);
      for (;;) {
        wake_.wait(lock, [&] { return job_ != nullptr || quit_; });
        if (job_) {
          try {
            (*job_)();
          } catch (...) {
            error_ = std::current_exception();
          }
          job_ = nullptr;
          wake_.notify_all();
        } else if (quit_) {
          return;
        }
      }
    }
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::function<void()>* job_ = nullptr;
    std::exception_ptr error_;
    bool quit_ = false;
  };

  Driver driver_;
  L2Flush l2_{driver_};
  ReplayMemory memory_{driver_};
  bool user_replay_ = true;
  bool kernel_records_ = false;
  // The launch before() chose for a user replay, until replay() runs.
  struct {
    bool due = false;
    CUstream stream = nullptr;
    std::uint64_t correlation = 0, signature = 0;
  } owed_;
  std::uint64_t unsaved_ = 0, captured_ = 0, unreplayed_ = 0, replayed_bytes_ = 0;
  std::uint64_t flushes_ = 0;
  std::string flush_error_;
  std::uint64_t per_signature_ = 1;
  CounterPlan plan_;
  std::uint64_t measured_ = 0, remeasured_ = 0, skipped_ = 0, other_context_ = 0, mismatched_ = 0,
                extra_ranges_ = 0, interrupts_ = 0, passed_over_ = 0;
  // Launches profiled in one pass in a row and passed over, at most pass_over.
  static constexpr std::uint32_t pass_over = 4;
  std::uint32_t passed_in_row_ = 0;
  std::string error_;
  Worker worker_;  // last: stopped before what its jobs use is destroyed
};

}  // namespace pasta::nv::detail
