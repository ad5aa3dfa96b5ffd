// Run-time configuration: set it in code, override it with PASTA_*
// environment variables. Each variable is one row of a table: pasta's own
// below, a handler's in its settings header (nv/cupti/settings.hpp, ...),
// which core never includes: a pipeline's Config is composed from its
// handlers' (ConfigFor). A bad value is reported in one line that names the
// variable and what it accepts, and the setting keeps its previous value.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/capture.hpp>
#include <pasta/core/detail/parse.hpp>
#include <pasta/core/detail/regex.hpp>
#include <pasta/core/detail/variables.hpp>
#include <pasta/core/process_identity.hpp>
#include <pasta/core/type_list.hpp>

namespace pasta {

namespace format {
inline constexpr unsigned text = 1, json = 2, csv = 4;
inline constexpr unsigned all = text | json | csv;
}  // namespace format

enum class PrintTo : std::uint8_t { stderr_, stdout_, none };

// Settings of pasta as a whole: what every pipeline reads, whatever its
// handler.
struct Config {
  // PASTA_OUTPUT_DIR: where reports go. In a job (a rank variable, or under
  // `pasta run`) each process writes into a place of its own below it
  // (ProcessIdentity::dir_name), unless the name holds placeholders (%p pid,
  // %h host, %q{VAR}, %r rank): then it names each process's place itself.
  std::string output_dir = "pasta-out";
  std::string kernel_filter;             // PASTA_KERNEL_FILTER: POSIX ERE searched in kernel names
  std::uint64_t launch_skip = 0;         // PASTA_LAUNCH_SKIP: ignore the first N selected launches
  std::uint64_t launch_count = 0;        // PASTA_LAUNCH_COUNT: analyse at most N (0 = all)
  // PASTA_CAPTURE_RANGE: the window of the run to profile (core/capture.hpp);
  // a malformed one captures nothing, and the profiler says why.
  CaptureRange capture;
  unsigned formats = format::all;        // PASTA_REPORT: text,json,csv or none
  PrintTo print = PrintTo::stderr_;      // PASTA_PRINT: where text reports are shown
  std::size_t top = 20;                  // PASTA_TOP: rows in text tables
  std::uint64_t page_bytes = 64 * 1024;  // PASTA_PAGE_BYTES: page size of hotness histograms
  std::string trace_file;                // PASTA_TRACE: trace to record to / replay from
  bool op_tags = true;                   // PASTA_OP_TAGS: kernels carry the operator that launched them
  bool verbose = false;                  // PASTA_VERBOSE: handlers say what they enabled
  // PASTA_SELF_TIME: handlers time their own callbacks and say the sums at
  // exit (core/detail/self_time.hpp).
  bool self_time = false;
  // PASTA_SELF_TIME_PARTS: handlers that have sections (torch::Aten's operator
  // callbacks) time each one and say the sums at exit; a clock read a section.
  bool self_time_parts = false;
  // PASTA_HOST_QUEUE: a program thread that finds the pipeline busy queues
  // its event instead of waiting (core/detail/pending_events.hpp).
  bool host_queue = true;
  // PASTA_CEILINGS: the GPU's DRAM bandwidth and FP32 and tensor peaks for the
  // roofline (tools::OpCounters), "dram_tbps=4.8,fp32_tflops=67,tensor_tflops=989";
  // empty: NVIDIA's datasheet numbers for the GPUs pasta knows.
  std::string ceilings;
  std::string stall_samples;  // PASTA_STALL_SAMPLES: the sampled run's stall_samples.json
  std::string nvdisasm;       // PASTA_NVDISASM: the disassembler (empty = search)
  // PASTA_TOOLS: run only these of the tools compiled into the Profiler, by
  // name (empty = all). The Profiler checks the names against its tools.
  std::vector<std::string> tools;
  bool read_env = true;                  // false: ignore PASTA_* variables
  // Who this process is (rank, pid, host): filled in by the Profiler, which
  // also turns output_dir into this process's own directory.
  ProcessIdentity process;
};

namespace detail {

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

inline std::optional<unsigned> parse_formats(std::string_view s) {
  if (s == "none") return 0u;
  static constexpr Flag names[] = {
      {"text", format::text}, {"json", format::json}, {"csv", format::csv}};
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

// Empty when `pattern` compiles as a POSIX extended regex, else why not.
inline std::string regex_error(const std::string& pattern) { return Regex(pattern).error(); }

}  // namespace detail

namespace detail {
inline constexpr Choice<PrintTo> print_to[] = {
    {"stderr", PrintTo::stderr_}, {"stdout", PrintTo::stdout_}, {"none", PrintTo::none}};
}  // namespace detail

// The variables of pasta as a whole, in the order apply_env applies them.
inline constexpr detail::Variable<Config> config_table[] = {
    detail::var::text<&Config::output_dir>("PASTA_OUTPUT_DIR", "a directory"),
    {"PASTA_KERNEL_FILTER", "a POSIX extended regular expression",
     [](Config& c, std::string_view v, std::string& why) {
       why = detail::regex_error(std::string(v));
       if (why.empty()) c.kernel_filter = std::string(v);
       return why.empty();
     },
     [](const Config& c) {
       return c.kernel_filter.empty() ? std::string("every kernel")
                                      : "\"" + c.kernel_filter + "\"";
     }},
    detail::var::whole<&Config::launch_skip>("PASTA_LAUNCH_SKIP", "a whole number >= 0"),
    {"PASTA_LAUNCH_COUNT", "a whole number >= 0 or \"all\" (0 = all)",
     [](Config& c, std::string_view v, std::string&) {
       const auto n = v == "all" ? std::optional<std::uint64_t>(0) : detail::parse_uint(v);
       if (n) c.launch_count = *n;
       return n.has_value();
     },
     [](const Config& c) {
       return c.launch_count == 0 ? std::string("all") : std::to_string(c.launch_count);
     }},
    {"PASTA_CAPTURE_RANGE", "cudaProfilerApi, nvtx:NAME or steps:A-B",
     [](Config& c, std::string_view v, std::string&) {
       c.capture = parse_capture_range(v);  // a malformed range is kept: it captures nothing
       return true;
     },
     [](const Config& c) { return c.capture.whole() ? std::string("none") : c.capture.spec; }},
    {"PASTA_REPORT", "a comma-separated list of text, json, csv, or \"none\"",
     [](Config& c, std::string_view v, std::string&) {
       const auto f = detail::parse_formats(v);
       if (f) c.formats = *f;
       return f.has_value();
     },
     nullptr, "the previous formats"},
    detail::var::one_of<&Config::print, detail::print_to>(
        "PASTA_PRINT", "stderr, stdout or none", "the previous destination"),
    detail::var::whole<&Config::top, 1>("PASTA_TOP", "a whole number >= 1"),
    detail::var::power_of_two<&Config::page_bytes, 256, 1ull << 30>(
        "PASTA_PAGE_BYTES", "a power of two from 256 to 1G (suffixes K, M, G)"),
    detail::var::text<&Config::trace_file>("PASTA_TRACE", "a file"),
    detail::var::flag<&Config::op_tags>("PASTA_OP_TAGS"),
    detail::var::flag<&Config::verbose>("PASTA_VERBOSE"),
    detail::var::flag<&Config::self_time>("PASTA_SELF_TIME"),
    detail::var::flag<&Config::self_time_parts>("PASTA_SELF_TIME_PARTS"),
    detail::var::flag<&Config::host_queue>("PASTA_HOST_QUEUE"),
    detail::var::text<&Config::stall_samples>("PASTA_STALL_SAMPLES", "a file"),
    detail::var::text<&Config::nvdisasm>("PASTA_NVDISASM", "a program"),
    detail::var::text<&Config::ceilings>(
        "PASTA_CEILINGS", "dram_tbps=N,fp32_tflops=N[,tensor_tflops=N] (the GPU's peaks)"),
    {"PASTA_TOOLS", "a comma-separated list of tool names (kernel_freq,timeline)",
     [](Config& c, std::string_view v, std::string&) {
       auto names = detail::parse_names(v);
       if (names) c.tools = std::move(*names);
       return names.has_value();
     },
     nullptr, "every tool of the profiler"},
};

// Calls f(table) for each table of pasta's own variables, in the order
// apply_env applies them.
template <class F>
constexpr void for_each_variable_table(F&& f) {
  f(config_table);
}

// A part that brings settings of its own (a handler) names them `using
// settings = S;`, and S's rows are variables_of(const S*), a function beside
// S that ADL finds. The Config a pipeline sees holds pasta's own settings and
// each handler's: ConfigWith<nv::CuptiSettings>, what ConfigFor<nv::Cupti>
// names. A plain Config converts to it, with the handlers' settings at their
// defaults.
template <class... Own>
struct ConfigWith : Config, Own... {
  ConfigWith() = default;
  ConfigWith(const Config& c) : Config(c) {}  // NOLINT(google-explicit-constructor)
  ConfigWith(const Config& c, const Own&... own) : Config(c), Own(own)... {}
};

namespace detail {
template <class H>
struct settings_of {
  using type = TypeList<>;
};
template <class H>
  requires requires { typename H::settings; }
struct settings_of<H> {
  using type = TypeList<typename H::settings>;
};
template <class H>
  requires requires { typename H::settings_list; }  // pasta::Handlers<...>: each one's
struct settings_of<H> {
  using type = typename H::settings_list;
};

template <class List>
struct config_with;
template <>
struct config_with<TypeList<>> {
  using type = Config;
};
template <class... Own>
struct config_with<TypeList<Own...>> {
  using type = ConfigWith<Own...>;
};
}  // namespace detail

// The settings handler H brings (a TypeList), and the Config a pipeline with
// H sees: Config itself when H brings none.
template <class H>
using SettingsOf = typename detail::settings_of<H>::type;
template <class H>
using ConfigFor = typename detail::config_with<SettingsOf<H>>::type;

namespace detail {
// Applies the variables of the handlers' settings in `cfg`, not pasta's own.
template <class Getenv>
std::vector<std::string> apply_own_env(Config&, Getenv&&) {
  return {};
}
template <class... Own, class Getenv>
std::vector<std::string> apply_own_env(ConfigWith<Own...>& cfg, Getenv&& getenv) {
  std::vector<std::string> errors;
  (apply_variables(static_cast<Own&>(cfg), variables_of(static_cast<const Own*>(nullptr)), getenv,
                   errors),
   ...);
  return errors;
}
}  // namespace detail

// Every variable's name of pasta's own tables, in order.
inline constexpr auto config_variables = [] {
  std::array<std::string_view, std::size(config_table)> names{};
  std::size_t n = 0;
  for_each_variable_table([&](const auto& table) {
    for (const auto& row : table) names[n++] = row.name;
  });
  return names;
}();

// Applies the PASTA_* variables that `getenv(name)` returns (nullptr or ""
// = unset) on top of `cfg`: pasta's own, then each handler's settings in
// a ConfigWith. Returns one line per rejected value.
template <class Getenv>
std::vector<std::string> apply_env(Config& cfg, Getenv&& getenv) {
  std::vector<std::string> errors;
  for_each_variable_table([&](const auto& table) {
    using Settings = typename std::remove_cvref_t<decltype(table[0])>::settings_type;
    detail::apply_variables(static_cast<Settings&>(cfg), table, getenv, errors);
  });
  return errors;
}
template <class... Own, class Getenv>
std::vector<std::string> apply_env(ConfigWith<Own...>& cfg, Getenv&& getenv) {
  std::vector<std::string> errors = apply_env(static_cast<Config&>(cfg), getenv);
  for (auto& line : detail::apply_own_env(cfg, getenv)) errors.push_back(std::move(line));
  return errors;
}

template <class C>
std::vector<std::string> apply_env(C& cfg) {
  return apply_env(cfg, [](const char* name) { return std::getenv(name); });
}

}  // namespace pasta
