// What nv::Cupti can be told, in code (ConfigFor<nv::Cupti>'s fields) or by
// PASTA_* variables: how it records launches and flushes device records,
// which record kinds it leaves out, and how it measures counters and stall
// samples. No CUPTI here: the docs check and pasta-trace read the table.
#pragma once

#include <cstdint>
#include <string>

#include <pasta/core/detail/variables.hpp>
#include <pasta/nv/cupti/detail/skip.hpp>

namespace pasta::nv {

struct CuptiSettings {
  bool launch_callbacks = false;  // PASTA_LAUNCH_CALLBACKS: host-side launch events
  std::uint64_t flush_ms = 1000;  // PASTA_FLUSH_MS: device-record flush period (0 = none)
  bool flush_on_sync = true;      // PASTA_FLUSH_ON_SYNC: also flush after a device sync
  // PASTA_CUPTI_BUFFER_POOL: activity buffers reused, zeroed by pasta's
  // worker (off: a new one for each request, zeroed by CUPTI on the thread
  // that launches; for measuring).
  bool buffer_pool = true;
  // PASTA_CUPTI_DETACH: when CUPTI is detached (cuptiFinalize) after a
  // capture window, so that the steps after it run as fast as those before
  // (CUPTI keeps part of its cost once its records are off). last: once no
  // window can open again (after a steps:A-B range); every: also at each
  // cudaProfilerStop, attached again 20 ms later, where a window that opens
  // and closes within those 20 ms is not recorded and nothing can tell
  // (nv/cupti.hpp, Cupti::detach); off: never.
  enum class Detach : std::uint8_t { off, last, every };
  Detach detach = Detach::last;
  // PASTA_CUPTI_SYNC: where synchronisations (Synchronize) come from.
  // callbacks: the synchronising calls' API callbacks (sync_callbacks.hpp),
  // which cost only at those calls; records: CUPTI's synchronization
  // records, whose record kind slows every launch (docs/benchmarks.md).
  bool sync_records = false;
  std::uint64_t counter_launches = 1;  // PASTA_COUNTER_LAUNCHES: measured per signature (0 = all)
  // PASTA_COUNTER_CACHE: all = write back and evict L2 before each replay
  // pass (under PASTA_COUNTER_REPLAY=cupti, before the one-pass measurement
  // of the cache-sensitive metrics), like ncu's default --cache-control all;
  // none = L2 as the program (or the memory restore) left it.
  bool counter_cache_flush = true;
  // PASTA_COUNTER_REPLAY: pasta = pasta replays a measured kernel itself,
  // saving and restoring all device memory, L2 flushed before every pass,
  // like ncu; cupti = CUPTI's kernel replay (it saves only what the kernel
  // may write, and L2 holds that restore when the kernel runs).
  bool counter_user_replay = true;
  // PASTA_COUNTER_BATCH: under user replay, measured launches whose passes
  // are replayed together, each pass profiling started once for all of them
  // (starting costs ~9 ms on an H200, a kernel's range ~1 ms); 1 = each
  // launch's passes at its own launch. At most RangeLedger::room / 3 (24).
  std::uint64_t counter_batch = 24;
  unsigned pc_sampling_period = 0;  // PASTA_PC_SAMPLING_PERIOD: 2^N cycles, 5-31 (0 = CUPTI's)
  // PASTA_CUPTI_SKIP: record kinds left out even when a tool wants them
  // (detail::CuptiSkip bits, detail/skip.hpp).
  unsigned skip = 0;
};

namespace detail::cupti_rows {
namespace var = pasta::detail::var;
using S = CuptiSettings;
inline constexpr pasta::detail::Choice<bool> cache[] = {{"all", true}, {"none", false}};
inline constexpr pasta::detail::Choice<bool> replay[] = {{"pasta", true}, {"cupti", false}};
inline constexpr pasta::detail::Choice<bool> sync[] = {{"callbacks", false}, {"records", true}};
inline constexpr pasta::detail::Choice<S::Detach> detach[] = {
    {"last", S::Detach::last}, {"every", S::Detach::every}, {"off", S::Detach::off}};

inline constexpr pasta::detail::Variable<CuptiSettings> cupti_variables[] = {
    var::flag<&S::launch_callbacks>("PASTA_LAUNCH_CALLBACKS"),
    var::whole<&S::flush_ms>("PASTA_FLUSH_MS",
                             "a whole number of milliseconds (0 = no periodic flush)"),
    var::flag<&S::flush_on_sync>("PASTA_FLUSH_ON_SYNC"),
    var::flag<&S::buffer_pool>("PASTA_CUPTI_BUFFER_POOL"),
    var::one_of<&S::detach, detach>(
        "PASTA_CUPTI_DETACH",
        "last (detach CUPTI once no capture window can open again), every (also at each "
        "cudaProfilerStop, attached again 20 ms later) or off"),
    var::one_of<&S::sync_records, sync>(
        "PASTA_CUPTI_SYNC",
        "callbacks (synchronisations from the API callbacks of the calls that synchronise) or "
        "records (from CUPTI's synchronization records, which slow every launch)"),
    var::whole<&S::counter_launches>("PASTA_COUNTER_LAUNCHES",
                                     "a whole number (0 = measure every launch)"),
    var::one_of<&S::counter_cache_flush, cache>(
        "PASTA_COUNTER_CACHE",
        "all (flush L2 before measuring DRAM bytes and hit rates) or none (L2 as the program "
        "left it)"),
    var::one_of<&S::counter_user_replay, replay>(
        "PASTA_COUNTER_REPLAY",
        "pasta (pasta replays kernels, saving and restoring device memory) or cupti (CUPTI's "
        "kernel replay)"),
    var::whole<&S::counter_batch, 1, 24>(
        "PASTA_COUNTER_BATCH", "a whole number from 1 to 24 (1 = each launch replayed at its own)"),
    {"PASTA_PC_SAMPLING_PERIOD",
     "a whole number from 5 to 31 (a sample every 2^N cycles per SM; 0 = CUPTI's choice)",
     [](S& s, std::string_view v, std::string&) {
       const auto n = pasta::detail::parse_uint(v);
       if (!n || (*n != 0 && (*n < 5 || *n > 31))) return false;
       s.pc_sampling_period = static_cast<unsigned>(*n);
       return true;
     },
     [](const S& s) { return std::to_string(s.pc_sampling_period); }},
    // A name that is no record kind is logged and passed over; the rest are kept.
    {"PASTA_CUPTI_SKIP", "a comma list of memcpy, memset, sync, memory, nvtx, device, graphs",
     [](S& s, std::string_view v, std::string&) {
       s.skip = parse_cupti_skip(std::string(v).c_str());
       return true;
     },
     nullptr, "none"},
};
inline const bool entered = pasta::detail::enter_known_variables(cupti_variables);
}  // namespace detail::cupti_rows

using detail::cupti_rows::cupti_variables;
constexpr const auto& variables_of(const CuptiSettings*) { return cupti_variables; }

}  // namespace pasta::nv
