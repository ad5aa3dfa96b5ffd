// What RangeCounters did, for its summaries: launches measured, passed over
// or left out (CounterTally), where its wall time went, step by step
// (CounterTiming), and which calls replayed kept launches early
// (EarlyReplays).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

namespace pasta::nv::detail {

struct CounterTally {
  std::uint64_t measured = 0;       // launches measured in full
  std::uint64_t remeasured = 0;     // measured again for the cache-sensitive metrics alone
  std::uint64_t skipped = 0;        // not measured: given their signature's measured mean
  std::uint64_t other_context = 0;  // on a context other than the one measured, or none
  std::uint64_t mismatched = 0;     // in an image whose ranges did not match its launches
  // Ranges beyond the launches profiled (work CUPTI counted as a range of its
  // own that before() did not see).
  std::uint64_t extra_ranges = 0;
  std::uint64_t interrupts = 0;   // stops for GPU work other than launches (interrupt())
  std::uint64_t passed_over = 0;  // profiled in one pass and passed over, not to stop and start
  std::uint64_t flushes = 0;      // L2 flushes before a measured launch or pass
  std::uint64_t captured = 0;     // captured into a graph (not run then, not measured)
  std::uint64_t outside = 0;      // launched outside the capture window: not measured
  // User replay: launches not measured because the memory could not be
  // saved or because no driver launch call came; the bytes saved for the
  // launches measured.
  std::uint64_t unsaved = 0, unreplayed = 0, replayed_bytes = 0;
  // User replay: batches of launches replayed together (more than one
  // launch); replays of kept launches before their batch was full (where
  // the host waits for the GPU, or at a free: early_at_free of them);
  // launches kept for a batch and then dropped (no room to save the memory
  // of a later moment, or a module unloaded, the context or the program
  // ended first), measured again at their signatures' next launch; launches
  // replayed alone because their arguments could not be copied.
  std::uint64_t batches = 0, early_batches = 0, early_at_free = 0, dropped = 0, alone = 0;
  // User replay: the host's waits right after an upload (no launch since),
  // where kept launches stayed kept for their batch.
  std::uint64_t kept_at_uploads = 0;
  // User replay: kept launches the driver refused to launch again (left out
  // of their batch, measured at their signature's next launch).
  std::uint64_t unrelaunched = 0;
};

// User replay: the program's calls at which kept launches were replayed
// before their batch was full (a wait for the GPU, a free), by the call's
// name, with the launches they replayed: each such replay costs a start of
// the profiler a pass however few launches it holds. The first `most`
// names are kept; later ones count under "other calls".
class EarlyReplays {
 public:
  static constexpr std::size_t most = 8;
  void add(std::string_view call, std::uint64_t launches) {
    if (call.empty()) call = "a call not named";
    Row* row = nullptr;
    for (Row& r : rows_)
      if (r.call == call) row = &r;
    if (!row && rows_.size() < most) row = &rows_.emplace_back(Row{std::string(call)});
    if (!row) row = &other_;
    ++row->replays;
    row->launches += launches;
  }
  // "cudaStreamSynchronize 12 (30 launches), cudaFree 3 (6 launches)", the
  // most replays first; empty when there were none.
  std::string summary() const {
    std::vector<const Row*> rows;
    for (const Row& r : rows_) rows.push_back(&r);
    if (other_.replays) rows.push_back(&other_);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row* a, const Row* b) { return a->replays > b->replays; });
    std::string out;
    for (const Row* r : rows)
      out += fmt::format("{}{} {} ({} launch{})", out.empty() ? "" : ", ", r->call, r->replays,
                         r->launches, r->launches == 1 ? "" : "es");
    return out;
  }

 private:
  struct Row {
    std::string call;
    std::uint64_t replays = 0, launches = 0;
  };
  std::vector<Row> rows_;
  Row other_{"other calls"};
};

struct CounterTiming {
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

  Spent startup, full, cache, passed, use, arm, start, drain, flush, save, restore;
  // User replay: the profiler stopped after a pass; backups made ready for a
  // batch's next launch; batches replayed early, outside the launches (at
  // the host's waits and frees: not in `full`).
  Spent stop, reserve, early;

  std::string summary() const {
    const auto& s = *this;
    return fmt::format(
        "start-up {:.0f} ms; launches measured in full {:.0f} ms ({}), in one pass {:.0f} ms ({}), "
        "passed over {:.0f} ms ({}); range profiler set up for another metric set {:.0f} ms ({}); "
        "images configured {:.0f} ms ({}); profiling started {:.0f} ms ({}), stopped and decoded "
        "{:.0f} ms ({}); L2 flushes {:.0f} ms ({}); memory saved {:.0f} ms ({}), restored {:.0f} "
        "ms ({}); passes stopped {:.0f} ms ({}); backups made ready for batches {:.0f} ms ({}); "
        "batches replayed early, outside the launches {:.0f} ms ({})",
        s.startup.ms, s.full.ms, s.full.n, s.cache.ms, s.cache.n, s.passed.ms, s.passed.n, s.use.ms,
        s.use.n, s.arm.ms, s.arm.n, s.start.ms, s.start.n, s.drain.ms, s.drain.n, s.flush.ms,
        s.flush.n, s.save.ms, s.save.n, s.restore.ms, s.restore.n, s.stop.ms, s.stop.n,
        s.reserve.ms, s.reserve.n, s.early.ms, s.early.n);
  }
};

}  // namespace pasta::nv::detail
