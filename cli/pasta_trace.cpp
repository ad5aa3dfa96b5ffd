// pasta-trace: look into a recorded trace and replay it through the
// default analysis tools (and the timeline), on any machine, GPU or not; and
// what the pasta launcher asks the library (its tables, its own directory).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <pasta/core/detail/profiler_setup.hpp>
#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/metrics.hpp>
#include <pasta/core/process.hpp>
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>
#include <pasta/tools/timeline.hpp>
#include <pasta/trace/dump.hpp>

namespace {

constexpr const char* usage =
    "usage: pasta-trace info FILE             header, metadata and event counts\n"
    "       pasta-trace dump FILE [--limit N] one line per event\n"
    "       pasta-trace replay FILE [-o DIR]  run the default tools over the trace\n"
    "       pasta-trace convert FILE OUT      rewrite the trace in the current format\n"
    "       pasta-trace metrics               the hardware metrics of KernelCounters as JSON:\n"
    "                                         key -> ncu metrics and weights that sum to it\n"
    "                                         (a hit rate: ncu's own rate)\n"
    "       pasta-trace variables             the PASTA_* variables, the launchers' rank\n"
    "                                         variables and the output placeholders, as JSON\n"
    "       pasta-trace expand [--pid N] PATTERN  who process N (default: this one) is in\n"
    "                                         its job, and PATTERN's placeholders for it, JSON\n"
    "       pasta-trace --version\n";

int fail_usage(const std::string& why) {
  fmt::print(stderr, "pasta-trace: {}\n{}", why, usage);
  return 2;
}

int fail_trace(const std::string& path, const std::exception& e) {
  fmt::print(stderr, "pasta-trace: {}: {}\n", path, e.what());
  return 1;
}

void print_metadata(const pasta::trace::Metadata& m) {
  for (const auto& [key, value] : m) fmt::print("  {}: {}\n", key, value);
}

int info(const std::string& path) {
  try {
    pasta::trace::TraceReader reader(path);
    fmt::print("{}: pasta trace format {}.{}\n", path, reader.major_version(),
               reader.minor_version());
    print_metadata(reader.metadata());
    std::map<std::string_view, std::uint64_t> counts;
    std::map<std::uint32_t, std::string> gpus;
    std::string error;
    try {
      reader.read_all([&](const auto& e) {
        using E = std::remove_cvref_t<decltype(e)>;
        ++counts[E::type_name];
        if constexpr (std::is_same_v<E, pasta::DeviceInfo>)
          gpus[e.device] =
              fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB)", pasta::name_of(e.name), e.cc_major,
                          e.cc_minor, e.sm_count, e.global_mem_bytes / double(1ull << 30));
      });
    } catch (const pasta::trace::TraceError& e) {
      error = e.what();
    }
    for (const auto& [device, text] : gpus) fmt::print("  device {}: {}\n", device, text);
    for (const auto& [type, n] : counts) fmt::print("  {:<16} {}\n", type, n);
    fmt::print("  events: {}\n", reader.events());
    if (!error.empty()) {
      fmt::print(stderr, "pasta-trace: {}: {}\n", path, error);
      return 1;
    }
    return 0;
  } catch (const pasta::trace::TraceError& e) {
    return fail_trace(path, e);
  }
}

int dump(const std::string& path, std::uint64_t limit) {
  try {
    pasta::trace::TraceReader reader(path);
    std::uint64_t n = 0;
    bool more = true;
    while (more && n < limit)
      more = reader.next_block([&](const auto& e) {
        if (n++ < limit) fmt::print("{}\n", pasta::trace::to_text(e));
      });
    return 0;
  } catch (const pasta::trace::TraceError& e) {
    return fail_trace(path, e);
  }
}

// run.json for the report page: what was replayed, the program that was
// recorded, where and when, on which GPUs (the trace's DeviceInfo events).
void write_run_info(const std::string& path, const std::string& out_dir) {
  nlohmann::json gpus = nlohmann::json::array();
  nlohmann::json info = nlohmann::json::object();
  try {
    pasta::trace::TraceReader r(path);
    for (const auto& [key, value] : r.metadata()) {
      if (key == "command") info["program"] = value;
      if (key == "recorded_at") info["started"] = value;
      if (key == "host") info["host"] = value;
    }
    const auto want = [](pasta::EventKind k) { return k == pasta::EventKind::device_info; };
    while (r.next_block(
        [&](const auto& e) {
          if constexpr (std::is_same_v<std::decay_t<decltype(e)>, pasta::DeviceInfo>) {
            const std::string name(pasta::name_of(e.name));
            if (std::find(gpus.begin(), gpus.end(), name) == gpus.end()) gpus.push_back(name);
          }
        },
        want)) {
    }
  } catch (const pasta::trace::TraceError&) {  // the replay itself said what is wrong
  }
  info["replay_of"] = path;
  info["gpus"] = gpus;
  info["replayed_by"] = std::string("pasta-trace ") + PASTA_VERSION_STRING;
  const std::string file = pasta::detail::join_path(out_dir, "run.json");
  if (const auto why = pasta::detail::write_file(file, info.dump(2) + "\n"); !why.empty())
    fmt::print(stderr, "pasta-trace: {} not written: {}\n", file, why);
}

int replay(const std::string& path, const std::string& out_dir) {
  pasta::Config cfg;
  cfg.trace_file = path;
  if (!out_dir.empty()) cfg.output_dir = out_dir;
  using Prof =
      pasta::Profiler<pasta::Replay, pasta::proc::Cpu, pasta::tools::KernelFreq,
                      pasta::tools::MemHotness, pasta::tools::UvmHotness, pasta::tools::ScopeTime,
                      pasta::tools::OpSummary, pasta::tools::ModuleSummary,
                      pasta::tools::OpCounters, pasta::tools::TensorAlloc,
                      pasta::tools::TensorHotness, pasta::tools::EventCount,
                      pasta::tools::Timeline>;
  try {
    pasta::trace::TraceReader header(path);
    fmt::print(stderr, "pasta-trace: replaying {}\n", path);
    for (const auto& [key, value] : header.metadata()) fmt::print(stderr, "  {}: {}\n", key, value);
  } catch (const pasta::trace::TraceError& e) {
    return fail_trace(path, e);
  }
  Prof prof(cfg);
  prof.stop();
  write_run_info(path, cfg.output_dir);
  return prof.handler().complete() ? 0 : 1;
}

// What Replay feeds: every event, straight into a Record tool.
struct RecordSink {
  pasta::tools::Record& to;
  template <class E>
  static constexpr bool wants() {
    return true;
  }
  template <class E>
  void emit(const E& e) {
    to.on(e);
  }
  template <class F>
  void batch(F&& f) {
    f(*this);
  }
};

// Replays `path` into a Record tool writing `out`: an older trace in the
// current format, or a copy that stops where a damaged one does.
int convert(const std::string& path, const std::string& out) {
  pasta::Config cfg;
  cfg.trace_file = path;
  try {
    pasta::trace::TraceReader header(path);
  } catch (const pasta::trace::TraceError& e) {
    return fail_trace(path, e);
  }
  pasta::Config rec = cfg;
  rec.trace_file = out;
  pasta::tools::Record record(rec);
  RecordSink sink{record};
  pasta::Replay replay(cfg);
  replay.start(sink);
  replay.stop();
  record.finish();
  if (!replay.complete() || record.writer().failed() || record.writer().events() == 0) return 1;
  fmt::print(stderr, "pasta-trace: {} written\n", out);
  return 0;
}

// For scripts that ask ncu for the same numbers.
int metrics() {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& m : pasta::metrics::all) {
    auto& parts = out[std::string(m.key)] = nlohmann::json::array();
    // A rate pasta computes from its hits and sectors: ncu's own rate.
    const bool summed = pasta::metrics::summed(m.field);
    if (!summed) parts.push_back({{"ncu", m.ncu}, {"weight", 1.0}});
    for (const auto& c : pasta::metrics::counters)
      if (c.field == m.field && summed) parts.push_back({{"ncu", c.name}, {"weight", c.weight}});
  }
  fmt::print("{}\n", out.dump(1));
  return 0;
}

// The tables the launcher reads instead of keeping copies: every variable a
// Config takes (by part), what pasta run sets for its processes, what the
// launcher and CMake read themselves, the rank variables and the placeholders.
int variables() {
  nlohmann::json settable = nlohmann::json::array();
  pasta::for_each_variable_table_of_all([&](const auto& table) {
    for (const auto& row : table) settable.push_back({{"name", row.name}, {"accepts", row.accepts}});
  });
  nlohmann::json outside = nlohmann::json::array();
  for (const auto& v : pasta::detail::read_outside)
    outside.push_back({{"name", v.name}, {"reader", v.reader}});
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : pasta::rank_variables)
    ranks.push_back({{"rank", r.rank},
                     {"local_rank", r.local_rank},
                     {"world_size", r.world_size},
                     {"launcher", r.launcher}});
  nlohmann::json placeholders = nlohmann::json::array();
  for (const auto& p : pasta::placeholders)
    placeholders.push_back({{"letter", std::string(1, p.letter)}, {"means", p.means}});
  const nlohmann::json out = {
      {"variables", settable},
      {"run", {{"run_id", pasta::run_id_variable}, {"launcher_pid", pasta::launcher_pid_variable}}},
      {"read_outside", outside},
      {"rank_variables", ranks},
      {"placeholders", placeholders}};
  fmt::print("{}\n", out.dump(1));
  return 0;
}

// Who process `pid` (the launcher that asks) is in its job, from this
// environment, and `pattern` expanded for it: what a profiled process with
// the same environment works out, so the launcher's -o and its processes'
// directories agree.
int expand(std::uint64_t pid, std::uint64_t parent, std::string_view pattern) {
  auto getenv = [](const char* name) { return std::getenv(name); };
  std::vector<std::string> errors;
  std::string host = pasta::detail::host_name();
  const pasta::ProcessIdentity id = pasta::detail::identify(
      getenv, pid, parent, host.empty() ? "localhost" : std::move(host), errors);
  const std::string expanded = pasta::detail::expand_placeholders(pattern, id, getenv, errors);
  auto number = [](const std::optional<std::uint64_t>& n) {
    return n ? nlohmann::json(*n) : nlohmann::json(nullptr);
  };
  const nlohmann::json out = {{"pid", id.pid},
                              {"host", id.host},
                              {"rank", number(id.rank)},
                              {"rank_variable", id.rank_variable},
                              {"local_rank", number(id.local_rank)},
                              {"world_size", number(id.world_size)},
                              {"dir_name", id.dir_name()},
                              {"expanded", expanded},
                              {"errors", errors}};
  fmt::print("{}\n", out.dump(1));
  return 0;
}

int expand_command(int argc, char** argv) {
  std::uint64_t pid = static_cast<std::uint64_t>(::getpid());
  std::uint64_t parent = static_cast<std::uint64_t>(::getppid());
  int i = 2;
  if (i + 1 < argc && std::strcmp(argv[i], "--pid") == 0) {
    const auto n = pasta::detail::parse_uint(argv[i + 1]);
    if (!n) return fail_usage(fmt::format("--pid takes a whole number, not '{}'", argv[i + 1]));
    pid = *n;
    parent = 0;  // unknown: the asker's parent is not this process's
    i += 2;
  }
  if (i + 1 != argc) return fail_usage("expand takes one pattern");
  return expand(pid, parent, argv[i]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail_usage("no command given");
  const std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    fmt::print("{}", usage);
    return 0;
  }
  if (cmd == "--version") {
    fmt::print("pasta-trace {} (trace format {}.{})\n", PASTA_VERSION_STRING,
               pasta::trace::version_major, pasta::trace::version_minor);
    return 0;
  }
  if (cmd == "metrics") return metrics();
  if (cmd == "variables") return variables();
  if (cmd == "expand") return expand_command(argc, argv);
  if (argc < 3) return fail_usage(fmt::format("'{}' needs a trace file", cmd));
  const std::string path = argv[2];
  if (cmd == "info") {
    if (argc != 3) return fail_usage("info takes one file");
    return info(path);
  }
  if (cmd == "dump") {
    std::uint64_t limit = UINT64_MAX;
    for (int i = 3; i < argc; ++i) {
      if (std::strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
        auto n = pasta::detail::parse_uint(argv[++i]);
        if (!n) return fail_usage(fmt::format("--limit takes a whole number, not '{}'", argv[i]));
        limit = *n;
      } else {
        return fail_usage(fmt::format("unknown option '{}'", argv[i]));
      }
    }
    return dump(path, limit);
  }
  if (cmd == "replay") {
    std::string out;
    for (int i = 3; i < argc; ++i) {
      if ((std::strcmp(argv[i], "-o") == 0 || std::strcmp(argv[i], "--output") == 0) &&
          i + 1 < argc)
        out = argv[++i];
      else
        return fail_usage(fmt::format("unknown option '{}'", argv[i]));
    }
    return replay(path, out);
  }
  if (cmd == "convert") {
    if (argc != 4) return fail_usage("convert takes a trace file and the file to write");
    return convert(path, argv[3]);
  }
  return fail_usage(fmt::format("unknown command '{}'", cmd));
}
