// Hardware counters per kernel launch for nv::Cupti through CUPTI's Range
// Profiler: the launch policy (which launches to measure, replayed how, when
// profiling stops). How and why: docs/internals-counters.md.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/core/pipeline.hpp>
#include <pasta/nv/counters/counter_plan.hpp>
#include <pasta/nv/counters/counter_stats.hpp>
#include <pasta/nv/counters/l2_flush.hpp>
#include <pasta/nv/counters/module_variables.hpp>
#include <pasta/nv/counters/range_ledger.hpp>
#include <pasta/nv/counters/range_profiler.hpp>
#include <pasta/nv/counters/replay_memory.hpp>
#include <pasta/nv/counters/user_replay.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

class RangeCounters {
 public:
  // Ranges decoded at a time: the counter-data image holds this many.
  static constexpr std::size_t ranges_per_image = RangeProfiler::ranges_per_image;
  static_assert(RangeLedger::ranges_per_image == ranges_per_image);

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
  // Under user replay, measured launches replayed together (1: each at its
  // own launch). At most as many as an image's ranges allow, a range for each
  // launch and for the restore of its variables and the L2 flush before it.
  static constexpr std::uint64_t ranges_per_member = 3;
  void set_batch(std::uint64_t n) {
    batch_ = std::clamp<std::uint64_t>(n, 1, RangeLedger::room / ranges_per_member);
  }
  bool user_replay() const { return user_replay_; }
  std::uint64_t batch() const { return batch_; }
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

  // A module's image as it loads (any thread, pasta's own loads included):
  // the `__device__` variables of its kernels, saved and restored with the
  // allocations once a launch of one is replayed (module_variables.hpp).
  void module_loaded(std::span<const std::byte> image) { variables_.loaded(image); }
  // Before a module unloads or the context ends (after releasing()), not on
  // a thread inside before() and after(): the variables' ranges leave the
  // saved memory until a replayed launch names them again.
  void modules_changing() {
    std::lock_guard lock(mutex_);
    memory_.variables().clear();
    variable_ranges_.clear();
    variables_.forget();
  }
  // `__device__` variables saved with the allocations, and those an image
  // named that the driver would not find for a replayed launch.
  std::size_t variables_saved() const { return variables_seen_; }
  // The most copies they took at a save or restore (variables_saved() less
  // those packed beside one another: VariableSpans); a module's unload takes
  // its variables out, so at the end there may be none.
  std::size_t variable_spans() const { return spans_most_; }
  // Saves whose allocations went in one batched call, saves and restores
  // whose variables pasta's copy kernel copied (ReplayMemory).
  std::uint64_t batched_copies() const { return memory_.batched(); }
  std::uint64_t kernel_copies() const { return memory_.kernel_copies(); }
  std::uint64_t copies_with_flush() const { return memory_.copies_with_flush(); }
  std::size_t variables_missed() const { return variables_.missed(); }

  // Whether the handler has CUPTI's kernel activity records on (user replay
  // turns them off around its passes).
  void set_kernel_records(bool on) { kernel_records_ = on; }

  // The driver call of a launch (its CUPTI callback's parameters).
  using Call = LaunchCall;
  using Launch = DriverLaunch;

  // On the launching thread, before the launch API runs: returns whether the
  // launch is measured. `signature` names (kernel, grid, block, operator
  // path), `stream` the stream it is launched on. after() must follow on
  // the same thread.
  template <class Emit>
  bool before(CUcontext ctx, CUstream stream, std::uint64_t correlation, std::uint64_t signature,
              Emit&& emit) {
    mutex_.lock();
    uploaded_ = false;
    if (failed_) return false;
    if (!ctx) {  // no context to measure in (the callbacks give the driver launch's)
      ++tally_.other_context;
      return false;
    }
    try {
      if (!measurable(ctx, stream, emit)) return false;
      const int k = plan_.pick(signature, index(profiler_.configured()));
      if (k == CounterPlan::none) return pass_over(correlation, signature, emit);
      MetricSet& set = k == CounterPlan::full ? full_ : cache_[static_cast<std::size_t>(k - 1)];
      ledger_.end_run();
      if (user_replay_) {
        // Replayed at the driver's launch call (replay()); the image keeps
        // taking ranges across launches.
        owed_ = {true, correlation, signature};
        launch_ = {&spent_.full, Clock::now()};
        note('R');
        return true;
      }
      profile(set, stream, correlation, signature, emit);
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
      ++tally_.unreplayed;
      plan_.lost(owed_.signature, index(&full_));
    }
    if (launch_.into) {
      launch_.into->add(launch_.start);
      launch_.into = nullptr;
    }
    try {
      // The image nearly full: decoded now; the next measured launch arms a fresh one.
      if (!failed_ && profiler_.running() && ledger_.nearly_full()) pause(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    mutex_.unlock();
  }
  // At the driver's launch call of the launch before() chose, before the
  // call runs (user replay): the program's memory saved for it, and the
  // launch kept to be replayed with the next ones (set_batch); once the batch
  // is full, or when the launch cannot be kept (its arguments cannot be
  // copied), the batch's passes and their counters decoded. On the
  // launching thread, inside before() and after(). Every range-profiler call
  // runs on one thread of pasta's (ReplayWorker) while the caller waits:
  // launches made inside CUPTI's callbacks are not reported. Memory that
  // could not be saved (no room for the backup) leaves the launch unmeasured;
  // for a launch after the first of a batch, the batch is dropped instead
  // (measured again at its signatures' next launches) and the launch starts
  // a new one. A failure after a save restores the memory first.
  template <class Emit>
  void replay(const Launch& launch, Emit&& emit) {
    if (!owed_.due) return;
    owed_.due = false;
    if (failed_) return;
    try {
      worker_.run([&] {
        std::optional<KeptLaunch> kept;
        if (batch_ > 1 && std::ranges::find(unkeepable_, owed_.signature) == unkeepable_.end()) {
          std::string why;
          kept = KeptLaunch::keep(driver_, launch, why);
          if (!kept) {
            ++tally_.alone;
            pasta::detail::log_once(
                "counters:alone",
                fmt::format("hardware counters: a launch is replayed at its own launch, not kept "
                            "for a batch ({}); such launches cost a start of the range profiler "
                            "each pass",
                            why));
          }
        }
        if (!kept) replay_batch(emit);  // the others first: this one is replayed now
        add_variables(launch);
        std::size_t slot = batch_members_.size();
        if (!save(slot)) {
          if (slot == 0) return;
          log_dropped(memory_.why());
          if (!save(slot = 0)) return;
        }
        batch_members_.push_back({kept ? std::move(*kept) : KeptLaunch::borrow(launch),
                                  owed_.correlation, owed_.signature});
        // Replayed now when the batch is full, or when the memory of one more
        // moment (the next launch, or the moment the batch is replayed
        // before a wait or a free) could not be kept.
        if (!kept || batch_members_.size() >= batch_ || !reserve(slot + 1)) run_batch(slot, emit);
      });
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  // The launches kept for a batch, before the program frees or unmaps
  // memory: replayed now, while their memory exists. Before a module unloads
  // or the context ends: dropped (counted and logged), since replaying then
  // is not safe (measured at their signatures' next launch, if there is
  // one); the host's waits replay them before that (interrupt()). Not on a
  // thread inside before() and after(). `call` names the program's call
  // (the summary counts early replays by it).
  template <class Emit>
  void releasing(Emit&& emit, bool replayable, std::string_view call = {}) {
    std::lock_guard lock(mutex_);
    if (failed_ || batch_members_.empty()) return;
    if (!replayable) {
      log_dropped("a module was unloaded or the context ended first");
      return;
    }
    try {
      ++tally_.early_at_free;
      replay_early(emit, call, 'D');
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  // Inside a replay's own thread: its API calls and their records are pasta's.
  static bool& replaying() { return detail::replaying(); }

  // Before GPU work that is not a kernel launch before() sees, `kind` as
  // interrupt_kind() names it (x a memset, y or c a copy, g other):
  // profiling stops, so the work is no range of its own. Where the host
  // waits for the GPU (s a synchronisation, c a synchronous copy), the
  // launches kept for a batch are replayed first: the program may end next,
  // and a batch left at the end is dropped. Not where the wait follows an
  // upload (`upload`: a copy from the host to the device) with no launch
  // since: the program goes on to use what it sent (PyTorch's copy to the
  // device waits for each tensor it sends). Asynchronous copies and
  // memsets do not replay them either, nor does what the host reads: a kept
  // launch's memory is in its own slot, and the replay saves and restores
  // the program's memory of its own moment. Not on a thread inside before()
  // and after(). `call` names the program's call (the summary counts early
  // replays by it).
  template <class Emit>
  void interrupt(Emit&& emit, char kind, std::string_view call = {}, bool upload = false) {
    std::lock_guard lock(mutex_);
    if (failed_) return;
    try {
      if (kind == 's' || kind == 'c') {
        if (uploaded_ || (kind == 'c' && upload)) {
          if (!batch_members_.empty()) {
            ++tally_.kept_at_uploads;
            note('u');
          }
        } else {
          replay_early(emit, call, 'S');
        }
      }
      if (kind != 's') uploaded_ = upload;  // only a copy uploads
      if (kind == 's' || !profiler_.running()) return;
      note(kind == 'c' ? 'y' : kind);
      ++tally_.interrupts;
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
      if (!failed_ && !batch_members_.empty()) log_dropped("the program ended first");
      if (!failed_ && profiler_.running()) pause(emit);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    teardown();
    pasta::detail::DispatchScope own;
    l2_.release();
    memory_.release(ctx_);
  }

  // Launches measured, passed over or left out (CounterTally).
  const CounterTally& tally() const { return tally_; }
  // The calls that replayed kept launches early (user replay).
  const EarlyReplays& early_replays() const { return early_; }
  std::uint32_t passes() const { return full_.passes; }
  // The ncu metrics measured again in one pass: comma-separated, the sets
  // (one launch each) separated by semicolons.
  std::string cache_metrics() const {
    std::vector<std::string> sets;
    for (const MetricSet& set : cache_) sets.push_back(pasta::detail::join(set.names, ", "));
    return sets.empty() ? "none" : pasta::detail::join(sets, "; ");
  }
  // Launches to measure in one pass left for their signature's next launch.
  std::uint64_t waited() const { return plan_.waits(); }
  const std::string& error() const { return error_; }
  // What each launch was, in order (verbose): F measured in full, C in one
  // pass, R kept for pasta's replay, p profiled and passed over, . not
  // profiled, w outside the capture window; x, y, g profiling stopped for a
  // memset, a copy, other GPU work; S, D kept launches replayed early where
  // the host waited for the GPU, before a free; u a wait after an upload
  // that left them kept; / another metric set, | profiling started.
  const std::string& sequence() const { return sequence_; }
  // Where the time went, for the verbose summary.
  std::string timing() const { return spent_.summary(); }
  // Why L2 could not be flushed (then it was not, from that launch on).
  const std::string& flush_error() const { return flush_error_; }
  std::size_t allocations() const { return memory_.allocations().count(); }

 private:
  // The profiler set up for `ctx`: the full set, and under kernel replay the
  // one-pass sets of the cache-sensitive metrics.
  // before()'s parts. Whether a launch on `stream` of `ctx` can be measured
  // at all (the profiler enabled at the first one): not in another context,
  // a graph's capture or outside the capture window.
  template <class Emit>
  bool measurable(CUcontext ctx, CUstream stream, Emit& emit) {
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
      ++tally_.other_context;
      return false;
    }
    if (driver_.capturing(stream)) {
      // Captured into a graph, not run now: not measured (nor are the
      // kernels a graph runs: they have no launch callback). Profiling
      // stopped at the capture's begin (an interrupt); stopping now would
      // synchronise and so break the capture.
      ++tally_.captured;
      note('g');
      return false;
    }
    if (!pasta::detail::capture_window().open()) {
      // Outside the capture window: run as is, neither measured nor
      // counted toward its signature's launches to measure.
      ++tally_.outside;
      if (profiler_.running()) pause(emit);
      note('w');
      return false;
    }
    return true;
  }
  // A launch the plan does not measure: run as is. Returns false.
  template <class Emit>
  bool pass_over(std::uint64_t correlation, std::uint64_t signature, Emit& emit) {
    ++tally_.skipped;
    // Profiling a few launches in one pass and passing over their
    // ranges costs less than stopping and starting again.
    if (profiler_.running() && profiler_.configured() != &full_ && ledger_.can_pass_over()) {
      ledger_.pass_over_launch(correlation, signature);
      ++tally_.passed_over;
      launch_ = {&spent_.passed, Clock::now()};
      note('p');
      return false;
    }
    // Profiling stays off until a launch to measure: this one runs as is.
    if (profiler_.running()) pause(emit);
    note('.');
    return false;
  }
  // A launch measured with `set` under CUPTI's kernel replay, in the
  // profiler's current image when it can take it.
  template <class Emit>
  void profile(MetricSet& set, CUstream stream, std::uint64_t correlation, std::uint64_t signature,
               Emit& emit) {
    const bool flush = &set != &full_ && flush_cache_;
    if (flush && !l2_.ready()) {
      // The flush kernel's module and buffer, made with profiling off.
      if (profiler_.running()) pause(emit);
      with_l2([&] {
        l2_.prepare(ctx_);
        return true;
      });
    }
    if (profiler_.running() && (profiler_.configured() != &set || ledger_.image_full()))
      pause(emit);
    if (profiler_.configured() != &set || ledger_.image_full()) arm(set);
    if (!profiler_.running()) start();
    // Only the one-pass sets get a flushed L2 (under replay the profiler's
    // own save and restore fill it again): the flush kernel runs profiled,
    // a range passed over.
    if (flush && flush_cache_ && with_l2([&] { return l2_.flush(ctx_, stream); })) {
      ++tally_.flushes;
      ledger_.add_own();
    }
    ledger_.add_measured(correlation, signature);
    launch_ = {&set == &full_ ? &spent_.full : &spent_.cache, Clock::now()};
    note(&set == &full_ ? 'F' : 'C');
  }
  void enable(CUcontext ctx);

  // The range profiler, enabled for `set` (RangeProfiler::use).
  void use(MetricSet& set) {
    if (profiler_.uses(set)) return;
    note('/');
    Timer t(spent_.use);
    profiler_.use(set);
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
    profiler_.arm(set, user_replay_);
    ledger_.fresh_image();
  }

  // Profiling on: the configured image takes ranges after those it holds.
  void start() {
    note('|');
    Timer t(spent_.start);
    profiler_.start();
  }

  // A launch kept to be replayed in a batch (its memory in the slot of its
  // index).
  struct Member {
    KeptLaunch launch;
    std::uint64_t correlation, signature;
    bool left_out = false;  // its launch again failed: not in the batch's passes
  };
  // A kept launch the driver refused to launch again, in a batch's first
  // pass: the batch is run again without it.
  struct RelaunchFailed : std::runtime_error {
    RelaunchFailed(std::size_t k, const std::string& what) : std::runtime_error(what), member(k) {}
    std::size_t member;
  };
  // replay()'s parts, on the replay thread with the measured context
  // current. The program's memory saved in `slot`: false when there is no
  // room for it (for slot 0, counted and logged once: the launch is not
  // measured).
  bool save(std::size_t slot);
  // The launch's kernel's `__device__` variables among the memory saved (on
  // the worker, in the measured context), until its batch runs: a slot then
  // holds the variables of its own launch and the batch's earlier ones, the
  // slot the batch ends on (the last launch's, or one saved for the batch)
  // all of the batch's, and no slot those of kernels the batch does not
  // replay, which nothing it runs writes.
  void add_variables(const Launch& launch) {
    for (const auto& r : variables_.of(driver_, launch_function(launch))) {
      memory_.variables().add(r);
      if (std::ranges::find(variable_ranges_, r) != variable_ranges_.end()) continue;
      variable_ranges_.push_back(r);
      ++variables_seen_;
    }
    spans_most_ = std::max(spans_most_, memory_.variables().count());
  }
  // The batch's passes with the memory as it was at each launch, the counters
  // decoded, then the memory as saved in slot `now` (the program's at this
  // moment); the batch emptied.
  template <class Emit>
  void run_batch(std::size_t now, Emit& emit);
  // run_batch()'s passes, the memory as saved in slot `now` after them.
  void run_passes(const std::vector<Member>& members, std::size_t now);
  // The batch replayed at a moment no launch of it is at: the memory as it
  // is now saved first (or, with no room for it, the batch dropped).
  template <class Emit>
  void replay_batch(Emit& emit) {
    if (batch_members_.empty()) return;
    const std::size_t now = batch_members_.size();
    if (save(now))
      run_batch(now, emit);
    else
      log_dropped(memory_.why());
  }
  // The launches kept, if any, replayed before their batch is full, at the
  // program's `call` (`mark` in the sequence: S a wait, D a free).
  template <class Emit>
  void replay_early(Emit& emit, std::string_view call, char mark) {
    if (batch_members_.empty()) return;
    ++tally_.early_batches;
    early_.add(call, batch_members_.size());
    note(mark);
    Timer t(spent_.early);
    worker_.run([&] { replay_batch(emit); });
  }
  // Room for slot `slot`'s save of the memory as large as it is now.
  bool reserve(std::size_t slot) {
    pasta::detail::DispatchScope own;  // an allocation of pasta's
    Timer t(spent_.reserve);
    return memory_.reserve(slot);
  }
  // The batch dropped, and why (the first time in the log; every time in
  // the summary's count).
  void log_dropped(std::string_view why) {
    pasta::detail::log_once(
        "counters:dropped",
        fmt::format("hardware counters: {} launches kept for a batch were not replayed ({}); "
                    "they are measured at a later launch of their signature, if there is one "
                    "(PASTA_COUNTER_BATCH=1 keeps none)",
                    batch_members_.size(), why));
    drop_batch();
  }
  // The batch forgotten: its signatures measured again at their next launch.
  void drop_batch() {
    for (const Member& m : batch_members_) plan_.lost(m.signature, index(&full_));
    tally_.dropped += batch_members_.size();
    batch_members_.clear();
    // Its variables stay among the memory saved until the next batch runs:
    // the launch that dropped it has added its own already.
  }
  // A user-replay pass ended: whether it was the last one.
  bool stop_pass();

  // Profiling off; the image's new ranges decoded, one for each launch
  // profiled since the last pause, in order. The image keeps its
  // configuration: the next measured launch of its set only starts profiling
  // again. Ranges and launches not as many (work CUPTI counted that before()
  // did not see): which range is whose is not known, so none is reported and
  // the launches' signatures are measured again at their next launch.
  template <class Emit>
  void pause(Emit& emit) {
    Timer t(spent_.drain);
    RangeProfiler::check(profiler_.stop(), "stopping the range profiler");
    decode(emit);
  }
  // The image's new ranges decoded and emitted (see pause()).
  template <class Emit>
  void decode(Emit& emit) {
    MetricSet& set = *profiler_.configured();
    const std::size_t total = profiler_.decode();
    const RangeLedger::Match match = ledger_.match(total);
    const auto& pending = ledger_.pending();
    std::vector<double> values(set.names.size());
    for (std::size_t j = 0; j < pending.size(); ++j) {
      const RangeLedger::Pending& p = pending[j];
      if (!p.measured) continue;
      if (!match.matched) {
        ++tally_.mismatched;
        plan_.lost(p.signature, index(&set));
        continue;
      }
      RangeProfiler::evaluate(set, match.first + j, values);
      KernelCounters c = metrics::from_counters(set.index, values);
      c.correlation = p.correlation;
      c.device = device_;
      c.passes = set.passes;
      c.l2_warm_replay = !user_replay_;  // CUPTI's replay leaves its memory restore in L2
      emit(c);
      ++(&set == &full_ ? tally_.measured : tally_.remeasured);
    }
    tally_.extra_ranges += match.extra;
    if (!match.matched && verbose_ && listed_++ < 5)
      pasta::detail::log(fmt::format(
          "hardware counters: {} ranges for {} launches ({} measured) in one image of the {}",
          match.ranges, pending.size(),
          std::count_if(pending.begin(), pending.end(),
                        [](const RangeLedger::Pending& p) { return p.measured; }),
          &set == &full_ ? "full set" : "one-pass set"));
    ledger_.decoded(total);
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
      worker_.run([&] { profiler_.release(full_, cache_); });
      worker_.stop();
    } else {
      profiler_.release(full_, cache_);
    }
    failed_ = true;  // nothing is measured after the end
  }

  void fail(const std::string& why) {
    error_ = fmt::format("hardware counters: {}; launches from here on are not measured", why);
    pasta::detail::log(error_);
    ledger_.drop();
    teardown();
  }

  using Clock = CounterTiming::Clock;
  using Timer = CounterTiming::Timer;
  CounterTiming spent_;
  struct {
    CounterTiming::Spent* into = nullptr;  // the launch being measured, from before() to after()
    Clock::time_point start;
  } launch_;

  std::mutex mutex_;
  // Sets of one pass for the cache-sensitive metrics, at most this many.
  static constexpr std::size_t max_cache_sets = 2;

  MetricSet full_;                // every metric
  std::vector<MetricSet> cache_;  // the cache-sensitive ones, one pass each
  RangeProfiler profiler_;
  RangeLedger ledger_;
  CUcontext ctx_ = nullptr;
  std::uint32_t device_ = 0;
  bool failed_ = false, flush_cache_ = true;
  bool verbose_ = false;
  std::uint64_t listed_ = 0;  // images whose ranges were listed in the log
  std::string sequence_;      // sequence(), the first 8000 steps
  // The last GPU work since the last launch was an upload (interrupt()).
  bool uploaded_ = false;
  void note(char c) {
    if (verbose_ && sequence_.size() < 8000) sequence_ += c;
  }
  Driver driver_;
  L2Flush l2_{driver_};
  ReplayMemory memory_{driver_};
  ModuleVariables variables_;
  std::vector<Variable> variable_ranges_;  // every variable saved so far
  std::size_t variables_seen_ = 0, spans_most_ = 0;
  bool user_replay_ = true;
  bool kernel_records_ = false;
  // The launch before() chose for a user replay, until replay() runs.
  struct {
    bool due = false;
    std::uint64_t correlation = 0, signature = 0;
  } owed_;
  // The launches kept to be replayed together (user replay), in launch
  // order, each with its memory in the slot of its index.
  std::vector<Member> batch_members_;
  // Signatures whose kept launch the driver refused to launch again: replayed
  // at their own launch from then on.
  std::vector<std::uint64_t> unkeepable_;
  std::uint64_t batch_ = 1;
  std::string flush_error_;
  std::uint64_t per_signature_ = 1;
  CounterPlan plan_;
  CounterTally tally_;
  EarlyReplays early_;
  std::string error_;
  ReplayWorker worker_;  // last: stopped before what its jobs use is destroyed
};

// The profiler enabled for a context, and the passes of one measured launch
// under pasta's replay: run on the replay thread with the program's memory
// restored between them.

inline void RangeCounters::enable(CUcontext ctx) {
  device_ = profiler_.initialize(ctx);
  profiler_.build(full_);
  ctx_ = ctx;
  // Under user replay every pass starts with L2 flushed: nothing to measure again.
  if (user_replay_) {
    plan_.configure(per_signature_, 0);
    return;
  }
  profiler_.build_one_pass_sets(cache_, max_cache_sets);
  plan_.configure(per_signature_, full_.passes > 1 ? cache_.size() : 0);
}

inline bool RangeCounters::save(std::size_t slot) {
  bool saved = false;
  {
    pasta::detail::DispatchScope own;  // the copies are pasta's work
    Timer t(spent_.save);
    saved = memory_.save(nullptr, slot);
  }
  if (saved || slot) return saved;  // a later slot's failure drops the batch (the caller's)
  ++tally_.unsaved;
  pasta::detail::log_once(
      "counters:unsaved",
      fmt::format("hardware counters: {}; launches are not measured while it is so "
                  "(PASTA_COUNTER_REPLAY=cupti lets CUPTI save only what a kernel writes)",
                  memory_.why()));
  return false;
}

template <class Emit>
void RangeCounters::run_batch(std::size_t now, Emit& emit) {
  std::vector<Member> members = std::move(batch_members_);
  batch_members_.clear();
  // Every slot of the batch is saved: the next batch saves its own kernels' variables.
  memory_.variables().clear();
  // CUPTI's kernel records off while replaying: with them on, the
  // SASS-instruction counts (the flop count) of a user replay read 0
  // (measured on the H100, bench/gpu/probe). The program's work is waited
  // for first, so no record of it is lost.
  KernelRecordsOff off(kernel_records_, driver_);
  // Each launch's pass takes a range for its L2 flush and one for the
  // restore of its variables too, when profiling runs over several launches
  // (they are then inside it).
  const bool inside = members.size() > 1;
  if (profiler_.configured() != &full_ ||
      !ledger_.fits(members.size() * (inside ? ranges_per_member : 1)))
    arm(full_);
  for (;;) {
    try {
      run_passes(members, now);
      break;
    } catch (const RelaunchFailed& e) {
      // Its signature is measured at its next launch, replayed from its own
      // call; the others again, in a fresh image (the failed pass's ranges
      // are not theirs alone).
      Member& m = members[e.member];
      m.left_out = true;
      unkeepable_.push_back(m.signature);
      plan_.lost(m.signature, index(&full_));
      ++tally_.unrelaunched;
      pasta::detail::log_once(
          "counters:relaunch",
          fmt::format("hardware counters: {}; measured at its next launch, not kept for a batch",
                      e.what()));
      // A fresh image even when none is left: the failed pass's ranges
      // must not meet the next batch's.
      ledger_.drop();
      arm(full_);
      if (std::ranges::all_of(members, &Member::left_out)) return;
    }
  }
  for (std::size_t k = 0; k < members.size(); ++k)
    if (!members[k].left_out) tally_.replayed_bytes += memory_.saved_bytes(k);
  if (inside) ++tally_.batches;
  decode(emit);
}

inline void RangeCounters::run_passes(const std::vector<Member>& members, std::size_t now) {
  pasta::detail::DispatchScope own;  // copies, flushes and relaunches are pasta's work
  // All work is waited for before and after, so the legacy stream serves:
  // the launches' own streams may be gone.
  const CUstream stream = nullptr;
  constexpr std::size_t dirty = ~std::size_t{0};
  std::size_t at = now;  // the slot the memory holds (dirty: none)
  // Whether it launched pasta's copy kernel (for the variables): a range.
  // Given `rows`, variables the L2 flush can copy are left to it.
  auto restore = [&](std::size_t slot, ReplayMemory::Rows* rows = nullptr) {
    if (at == slot) return false;
    Timer t(spent_.restore);
    at = slot;
    return memory_.restore(stream, slot, rows);
  };
  try {
    const bool flush = flush_cache_ && with_l2([&] {
                         l2_.prepare(ctx_);
                         return true;
                       });
    // Restores `slot` and flushes L2, the variables' copy in the flush's
    // launch where it fits (else, or when the flush does not come, the copy
    // kernel's own). Returns the ranges of pasta's own it took.
    auto restore_flushed = [&](std::size_t slot) {
      const bool flushing = flush && flush_cache_;  // flush_cache_: off once a flush failed
      ReplayMemory::Rows rows;
      const int copy = restore(slot, flushing ? &rows : nullptr) ? 1 : 0;
      if (!flushing || !with_l2([&] { return l2_.flush(ctx_, stream, rows.table, rows.count); })) {
        memory_.copy_rows(rows, stream);  // timed with the flush's try
        return copy + (rows ? 1 : 0);
      }
      ++tally_.flushes;
      return copy + 1;
    };
    const bool inside = members.size() > 1;
    for (std::uint32_t pass = 0;; ++pass) {
      if (!inside) restore_flushed(0);
      start();
      // Every pass takes the same ranges, as the ledger counts them in the first.
      if (inside) at = dirty;
      for (std::size_t k = 0; k < members.size(); ++k) {
        const Member& m = members[k];
        if (m.left_out) continue;
        if (inside) {
          const int ranges = restore_flushed(k);
          if (pass == 0)
            for (int i = 0; i < ranges; ++i) ledger_.add_own();
        }
        const CUresult launched = m.launch.launch(driver_, stream);
        at = dirty;
        if (launched != CUDA_SUCCESS && pass == 0 && !m.launch.borrowed())
          throw RelaunchFailed(k, fmt::format("the driver refused to launch {} again from its "
                                              "kept arguments: {}",
                                              m.launch.describe(driver_), driver_.name(launched)));
        driver_.call(launched, "launching the kernel for a replay pass");
        if (pass == 0) ledger_.add_measured(m.correlation, m.signature);
      }
      if (stop_pass()) break;
      if (pass > 256) throw std::runtime_error("the range profiler never took its last pass");
    }
    restore(now);
    driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
  } catch (const std::exception&) {
    try {
      if (profiler_.running()) (void)profiler_.stop();
      at = dirty;
      restore(now);
      driver_.call(driver_.stream_synchronize(stream), "restoring device memory");
    } catch (const std::exception& f) {
      pasta::detail::log(fmt::format(
          "hardware counters: the program's memory could not be restored after a failed "
          "replay ({}): its results may be wrong",
          f.what()));
    }
    throw;
  }
}

inline bool RangeCounters::stop_pass() {
  Timer t(spent_.stop);
  bool last = false;
  RangeProfiler::check(profiler_.stop(&last), "stopping the range profiler after a pass");
  return last;
}

}  // namespace pasta::nv::detail
