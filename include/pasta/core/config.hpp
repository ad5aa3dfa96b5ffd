// Run-time configuration: set it in code, override it with PASTA_*
// environment variables. A bad value is reported in one line that names the
// variable and what it accepts, and the setting keeps its previous value.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/parse.hpp>
#include <pasta/core/detail/regex.hpp>
#include <pasta/core/process_identity.hpp>

namespace pasta {

namespace format {
inline constexpr unsigned text = 1, json = 2, csv = 4;
inline constexpr unsigned all = text | json | csv;
}  // namespace format

enum class PrintTo : std::uint8_t { stderr_, stdout_, none };

// Which device patch instruments memory accesses. `automatic` follows the
// pipeline: device histograms for proc::GpuBucketing, raw records for
// proc::Cpu. The others are for measuring: `noop` (the cost of the patch
// call alone; counts nothing) and `atomic` (one atomic per access instead
// of one per warp and key; histogram pipelines only), `object_atomic` (the
// per-access atomics of AccelProf-style GPU analysis: one counter set per
// allocation, so every access lands on page 0 of its allocation).
enum class AccessPatch : std::uint8_t { automatic, noop, atomic, object_atomic };

// Bits of Config::access_spaces.
namespace space {
inline constexpr unsigned global = 1, shared = 2, local = 4;
}  // namespace space

struct Config {
  // PASTA_OUTPUT_DIR: where reports go. In a job (a rank variable, or under
  // `pasta run`) each process writes into a place of its own below it
  // (ProcessIdentity::dir_name), unless the name holds placeholders (%p pid,
  // %h host, %q{VAR}, %r rank): then it names each process's place itself.
  std::string output_dir = "pasta-out";
  std::string kernel_filter;             // PASTA_KERNEL_FILTER: POSIX ERE searched in kernel names
  std::uint64_t launch_skip = 0;         // PASTA_LAUNCH_SKIP: ignore the first N selected launches
  std::uint64_t launch_count = 0;        // PASTA_LAUNCH_COUNT: analyse at most N (0 = all)
  unsigned formats = format::all;        // PASTA_REPORT: text,json,csv or none
  PrintTo print = PrintTo::stderr_;      // PASTA_PRINT: where text reports are shown
  std::size_t top = 20;                  // PASTA_TOP: rows in text tables
  std::uint64_t page_bytes = 64 * 1024;  // PASTA_PAGE_BYTES: page size of hotness histograms
  std::string trace_file;                // PASTA_TRACE: trace to record to / replay from
  bool launch_callbacks = false;         // PASTA_LAUNCH_CALLBACKS: host-side launch events
  bool op_inputs = false;                // PASTA_OP_INPUTS: operators carry input shapes, dtypes
  bool op_tags = true;                   // PASTA_OP_TAGS: kernels carry the operator that launched them
  bool verbose = false;                  // PASTA_VERBOSE: handlers say what they enabled
  std::uint64_t flush_ms = 1000;         // PASTA_FLUSH_MS: device-record flush period (0 = none)
  bool flush_on_sync = true;             // PASTA_FLUSH_ON_SYNC: also flush after a device sync
  AccessPatch access_patch = AccessPatch::automatic;  // PASTA_ACCESS_PATCH (benchmarks)
  unsigned access_spaces = space::global;  // PASTA_ACCESS_SPACES: global,shared,local
  std::uint64_t trace_buffer_bytes = 256ull << 20;  // PASTA_TRACE_BUFFER: device access records
  std::uint64_t annotation_bins = 1ull << 20;  // PASTA_ANNOTATION_BINS: device::Annotations table
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
  unsigned pc_sampling_period = 0;  // PASTA_PC_SAMPLING_PERIOD: 2^N cycles, 5-31 (0 = CUPTI's)
  std::string stall_samples;        // PASTA_STALL_SAMPLES: the sampled run's stall_samples.json
  std::string nvdisasm;             // PASTA_NVDISASM: the disassembler (empty = search)
  // PASTA_TOOLS: run only these of the tools compiled into the Profiler, by
  // name (empty = all). The Profiler checks the names against its tools.
  std::vector<std::string> tools;
  bool read_env = true;                  // false: ignore PASTA_* variables
  // Who this process is (rank, pid, host): filled in by the Profiler, which
  // also turns output_dir into this process's own directory.
  ProcessIdentity process;
};

namespace detail {

// "4096", "64K", "2M", "1G" (binary units).
inline std::optional<std::uint64_t> parse_bytes(std::string_view s) {
  std::uint64_t unit = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        unit = 1ull << 10;
        break;
      case 'M':
      case 'm':
        unit = 1ull << 20;
        break;
      case 'G':
      case 'g':
        unit = 1ull << 30;
        break;
      default:
        break;
    }
    if (unit != 1) s.remove_suffix(1);
  }
  auto v = parse_uint(s);
  if (!v || *v > std::numeric_limits<std::uint64_t>::max() / unit) return std::nullopt;
  return *v * unit;
}

// A comma list of names, each one bit of the result; nullopt if a name is unknown.
struct Flag {
  std::string_view name;
  unsigned bit;
};
// Calls f(item) for each item of the comma list `s` while f returns true;
// returns whether every item was taken.
template <class F>
bool for_each_item(std::string_view s, F&& f) {
  for (;;) {
    const auto comma = s.find(',');
    if (!f(s.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    s.remove_prefix(comma + 1);
  }
}

// The items joined by `sep`: "a, b, c".
template <class Range>
std::string join(const Range& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += std::string_view(item);
  }
  return out;
}

// The tool names a profiler type has, comma-separated (what PASTA_TOOLS
// chooses among), built once: what injection libraries export as
// pasta_tool_names, so `pasta run` can check a library without starting it.
template <class Profiler>
const char* tool_names() noexcept {
  static const std::string names = join(Profiler::tool_names, ",");
  return names.c_str();
}

template <std::size_t N>
std::optional<unsigned> parse_flags(std::string_view s, const Flag (&flags)[N]) {
  unsigned out = 0;
  const bool ok = for_each_item(s, [&](std::string_view item) {
    const Flag* f = std::find_if(std::begin(flags), std::end(flags),
                                 [&](const Flag& x) { return x.name == item; });
    if (f == std::end(flags)) return false;
    out |= f->bit;
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

inline std::optional<unsigned> parse_formats(std::string_view s) {
  if (s == "none") return 0u;
  static constexpr Flag names[] = {{"text", format::text}, {"json", format::json}, {"csv", format::csv}};
  return parse_flags(s, names);
}

inline std::optional<unsigned> parse_spaces(std::string_view s) {
  static constexpr Flag names[] = {
      {"global", space::global}, {"shared", space::shared}, {"local", space::local}};
  return parse_flags(s, names);
}

// "kernel_freq,timeline": names of [a-z0-9_], comma-separated; nullopt if malformed.
inline std::optional<std::vector<std::string>> parse_names(std::string_view s) {
  std::vector<std::string> out;
  const bool ok = for_each_item(s, [&](std::string_view item) {
    const bool word = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (word && std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
    return word;
  });
  if (!ok) return std::nullopt;
  return out;
}

inline std::optional<bool> parse_bool(std::string_view s) {
  if (s == "1" || s == "yes" || s == "on" || s == "true") return true;
  if (s == "0" || s == "no" || s == "off" || s == "false") return false;
  return std::nullopt;
}

// Empty when `pattern` compiles as a POSIX extended regex, else why not.
inline std::string regex_error(const std::string& pattern) { return Regex(pattern).error(); }

}  // namespace detail

// The variables apply_env reads, for docs and for the unknown-variable check.
inline constexpr std::string_view config_variables[] = {
    "PASTA_OUTPUT_DIR",   "PASTA_KERNEL_FILTER",
    "PASTA_LAUNCH_SKIP",  "PASTA_LAUNCH_COUNT",
    "PASTA_REPORT",       "PASTA_PRINT",
    "PASTA_TOP",          "PASTA_PAGE_BYTES",
    "PASTA_TRACE",        "PASTA_LAUNCH_CALLBACKS", "PASTA_OP_INPUTS", "PASTA_OP_TAGS",
    "PASTA_VERBOSE",      "PASTA_FLUSH_MS",
    "PASTA_FLUSH_ON_SYNC", "PASTA_ACCESS_PATCH",
    "PASTA_ACCESS_SPACES", "PASTA_TRACE_BUFFER", "PASTA_ANNOTATION_BINS",
    "PASTA_TOOLS", "PASTA_COUNTER_LAUNCHES", "PASTA_COUNTER_CACHE",
    "PASTA_COUNTER_REPLAY", "PASTA_PC_SAMPLING_PERIOD", "PASTA_STALL_SAMPLES",
    "PASTA_NVDISASM"};

// Applies the PASTA_* variables that `getenv(name)` returns (nullptr or ""
// = unset) on top of `cfg`. Returns one line per rejected value.
template <class Getenv>
std::vector<std::string> apply_env(Config& cfg, Getenv&& getenv) {
  std::vector<std::string> errors;
  auto value = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  auto reject = [&](const char* name, const std::string& v, std::string_view accepted,
                    std::string_view kept) {
    errors.push_back(
        fmt::format("{}=\"{}\" is not accepted: expected {}; using {}", name, v, accepted, kept));
  };

  if (auto v = value("PASTA_OUTPUT_DIR")) cfg.output_dir = *v;
  if (auto v = value("PASTA_TRACE")) cfg.trace_file = *v;
  if (auto v = value("PASTA_KERNEL_FILTER")) {
    if (auto why = detail::regex_error(*v); why.empty())
      cfg.kernel_filter = *v;
    else
      reject("PASTA_KERNEL_FILTER", *v,
             fmt::format("a POSIX extended regular expression ({})", why),
             cfg.kernel_filter.empty() ? "every kernel" : "\"" + cfg.kernel_filter + "\"");
  }
  if (auto v = value("PASTA_LAUNCH_SKIP")) {
    if (auto n = detail::parse_uint(*v))
      cfg.launch_skip = *n;
    else
      reject("PASTA_LAUNCH_SKIP", *v, "a whole number >= 0", std::to_string(cfg.launch_skip));
  }
  if (auto v = value("PASTA_LAUNCH_COUNT")) {
    if (*v == "all")
      cfg.launch_count = 0;
    else if (auto n = detail::parse_uint(*v))
      cfg.launch_count = *n;
    else
      reject("PASTA_LAUNCH_COUNT", *v, "a whole number >= 0 or \"all\" (0 = all)",
             cfg.launch_count == 0 ? "all" : std::to_string(cfg.launch_count));
  }
  if (auto v = value("PASTA_REPORT")) {
    if (auto f = detail::parse_formats(*v))
      cfg.formats = *f;
    else
      reject("PASTA_REPORT", *v, "a comma-separated list of text, json, csv, or \"none\"",
             "the previous formats");
  }
  if (auto v = value("PASTA_PRINT")) {
    if (*v == "stderr")
      cfg.print = PrintTo::stderr_;
    else if (*v == "stdout")
      cfg.print = PrintTo::stdout_;
    else if (*v == "none")
      cfg.print = PrintTo::none;
    else
      reject("PASTA_PRINT", *v, "stderr, stdout or none", "the previous destination");
  }
  if (auto v = value("PASTA_TOP")) {
    if (auto n = detail::parse_uint(*v); n && *n >= 1)
      cfg.top = *n;
    else
      reject("PASTA_TOP", *v, "a whole number >= 1", std::to_string(cfg.top));
  }
  if (auto v = value("PASTA_COUNTER_LAUNCHES")) {
    if (auto n = detail::parse_uint(*v))
      cfg.counter_launches = *n;
    else
      reject("PASTA_COUNTER_LAUNCHES", *v, "a whole number (0 = measure every launch)",
             std::to_string(cfg.counter_launches));
  }
  if (auto v = value("PASTA_COUNTER_CACHE")) {
    if (*v == "all" || *v == "none")
      cfg.counter_cache_flush = *v == "all";
    else
      reject("PASTA_COUNTER_CACHE", *v,
             "all (flush L2 before measuring DRAM bytes and hit rates) or none (L2 as the program left it)",
             cfg.counter_cache_flush ? "all" : "none");
  }
  if (auto v = value("PASTA_COUNTER_REPLAY")) {
    if (*v == "pasta" || *v == "cupti")
      cfg.counter_user_replay = *v == "pasta";
    else
      reject("PASTA_COUNTER_REPLAY", *v,
             "pasta (pasta replays kernels, saving and restoring device memory) or cupti "
             "(CUPTI's kernel replay)",
             cfg.counter_user_replay ? "pasta" : "cupti");
  }
  if (auto v = value("PASTA_PC_SAMPLING_PERIOD")) {
    auto n = detail::parse_uint(*v);
    if (n && (*n == 0 || (*n >= 5 && *n <= 31)))
      cfg.pc_sampling_period = static_cast<unsigned>(*n);
    else
      reject("PASTA_PC_SAMPLING_PERIOD", *v,
             "a whole number from 5 to 31 (a sample every 2^N cycles per SM; 0 = CUPTI's choice)",
             std::to_string(cfg.pc_sampling_period));
  }
  if (auto v = value("PASTA_STALL_SAMPLES")) cfg.stall_samples = *v;
  if (auto v = value("PASTA_NVDISASM")) cfg.nvdisasm = *v;
  if (auto v = value("PASTA_PAGE_BYTES")) {
    auto n = detail::parse_bytes(*v);
    if (n && *n >= 256 && *n <= (1ull << 30) && (*n & (*n - 1)) == 0)
      cfg.page_bytes = *n;
    else
      reject("PASTA_PAGE_BYTES", *v, "a power of two from 256 to 1G (suffixes K, M, G)",
             std::to_string(cfg.page_bytes));
  }
  auto boolean = [&](const char* name, bool& field) {
    if (auto v = value(name)) {
      if (auto b = detail::parse_bool(*v))
        field = *b;
      else
        reject(name, *v, "1, yes, on, true or 0, no, off, false", field ? "on" : "off");
    }
  };
  boolean("PASTA_LAUNCH_CALLBACKS", cfg.launch_callbacks);
  boolean("PASTA_OP_INPUTS", cfg.op_inputs);
  boolean("PASTA_OP_TAGS", cfg.op_tags);
  boolean("PASTA_FLUSH_ON_SYNC", cfg.flush_on_sync);
  boolean("PASTA_VERBOSE", cfg.verbose);
  if (auto v = value("PASTA_FLUSH_MS")) {
    if (auto n = detail::parse_uint(*v))
      cfg.flush_ms = *n;
    else
      reject("PASTA_FLUSH_MS", *v, "a whole number of milliseconds (0 = no periodic flush)",
             std::to_string(cfg.flush_ms));
  }
  if (auto v = value("PASTA_ACCESS_PATCH")) {
    if (*v == "auto")
      cfg.access_patch = AccessPatch::automatic;
    else if (*v == "noop")
      cfg.access_patch = AccessPatch::noop;
    else if (*v == "atomic")
      cfg.access_patch = AccessPatch::atomic;
    else if (*v == "object_atomic")
      cfg.access_patch = AccessPatch::object_atomic;
    else
      reject("PASTA_ACCESS_PATCH", *v, "auto, noop, atomic or object_atomic",
             "the previous patch");
  }
  if (auto v = value("PASTA_ACCESS_SPACES")) {
    if (auto sp = detail::parse_spaces(*v))
      cfg.access_spaces = *sp;
    else
      reject("PASTA_ACCESS_SPACES", *v, "a comma-separated list of global, shared, local",
             "the previous spaces");
  }
  if (auto v = value("PASTA_TRACE_BUFFER")) {
    auto n = detail::parse_bytes(*v);
    if (n && *n >= (1ull << 20) && *n <= (64ull << 30))
      cfg.trace_buffer_bytes = *n;
    else
      reject("PASTA_TRACE_BUFFER", *v, "a size from 1M to 64G (suffixes K, M, G)",
             std::to_string(cfg.trace_buffer_bytes));
  }
  if (auto v = value("PASTA_ANNOTATION_BINS")) {
    auto n = detail::parse_bytes(*v);
    if (n && *n >= 1024 && *n <= (1ull << 30) && (*n & (*n - 1)) == 0)
      cfg.annotation_bins = *n;
    else
      reject("PASTA_ANNOTATION_BINS", *v, "a power of two from 1K to 1G (suffixes K, M, G)",
             std::to_string(cfg.annotation_bins));
  }
  if (auto v = value("PASTA_TOOLS")) {
    if (auto names = detail::parse_names(*v))
      cfg.tools = std::move(*names);
    else
      reject("PASTA_TOOLS", *v, "a comma-separated list of tool names (kernel_freq,timeline)",
             "every tool of the profiler");
  }
  return errors;
}

inline std::vector<std::string> apply_env(Config& cfg) {
  return apply_env(cfg, [](const char* name) { return std::getenv(name); });
}

}  // namespace pasta
