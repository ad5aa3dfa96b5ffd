#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <type_traits>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/profiler_setup.hpp>
#include <pasta/core/handlers.hpp>
#include <pasta/core/profiler.hpp>
#include <pasta/variables.hpp>

using namespace pasta;

namespace {
struct FakeEnv {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};
}  // namespace

TEST_CASE("no PASTA_* variables leave the configuration as the code set it") {
  Config cfg;
  cfg.top = 5;
  CHECK(apply_env(cfg, FakeEnv{}).empty());
  CHECK(cfg.top == 5);
  CHECK(cfg.output_dir == "pasta-out");
  CHECK(cfg.formats == format::all);
}

TEST_CASE("valid values override the code's configuration") {
  ConfigWithAll cfg;
  FakeEnv env{{{"PASTA_OUTPUT_DIR", "/tmp/out"},
               {"PASTA_KERNEL_FILTER", "^gemm|conv"},
               {"PASTA_LAUNCH_SKIP", "10"},
               {"PASTA_LAUNCH_COUNT", "all"},
               {"PASTA_REPORT", "json,csv"},
               {"PASTA_PRINT", "none"},
               {"PASTA_TOP", "3"},
               {"PASTA_PAGE_BYTES", "2M"},
               {"PASTA_TRACE", "run.pasta"},
               {"PASTA_LAUNCH_CALLBACKS", "yes"}}};
  cfg.launch_count = 7;
  CHECK(apply_env(cfg, env).empty());
  CHECK(cfg.output_dir == "/tmp/out");
  CHECK(cfg.kernel_filter == "^gemm|conv");
  CHECK(cfg.launch_skip == 10);
  CHECK(cfg.launch_count == 0);
  CHECK(cfg.formats == (format::json | format::csv));
  CHECK(cfg.print == PrintTo::none);
  CHECK(cfg.top == 3);
  CHECK(cfg.page_bytes == 2u << 20);
  CHECK(cfg.trace_file == "run.pasta");
  CHECK(cfg.launch_callbacks);
}

TEST_CASE("torch::Aten's variables set its own settings, which pasta's Config does not hold") {
  static_assert(!std::is_base_of_v<torch::AtenSettings, Config>);
  ConfigWith<torch::AtenSettings> cfg;
  FakeEnv env{{{"PASTA_MODULES", "0"},
               {"PASTA_SOURCE_LINES", "off"},
               {"PASTA_OP_INPUTS", "1"},
               {"PASTA_SOURCE_SKIP", "site-packages"},
               {"PASTA_COMPILED_KERNELS", "no"}}};
  CHECK(apply_env(cfg, env).empty());
  CHECK_FALSE(cfg.modules);
  CHECK_FALSE(cfg.source_lines);
  CHECK(cfg.op_inputs);
  CHECK(cfg.source_skip == "site-packages");
  CHECK_FALSE(cfg.compiled_kernels);
  // Its defaults where nothing is set.
  ConfigWith<torch::AtenSettings> fresh;
  CHECK(apply_env(fresh, FakeEnv{}).empty());
  CHECK(fresh.modules);
  CHECK(fresh.source_lines);
  CHECK_FALSE(fresh.op_inputs);
}

TEST_CASE("each bad value gives one line naming the variable and what it accepts") {
  ConfigWithAll cfg;
  FakeEnv env{{{"PASTA_KERNEL_FILTER", "(unclosed"},
               {"PASTA_LAUNCH_SKIP", "-1"},
               {"PASTA_LAUNCH_COUNT", "ten"},
               {"PASTA_REPORT", "xml"},
               {"PASTA_PRINT", "printer"},
               {"PASTA_TOP", "0"},
               {"PASTA_PAGE_BYTES", "3000"},
               {"PASTA_LAUNCH_CALLBACKS", "maybe"}}};
  const auto errors = apply_env(cfg, env);
  REQUIRE(errors.size() == 8);
  CHECK(
      errors[0].starts_with("PASTA_KERNEL_FILTER=\"(unclosed\" is not accepted: expected a "
                            "POSIX extended regular expression ("));
  CHECK(errors[0].ends_with("); using every kernel"));
  CHECK(errors[1] ==
        "PASTA_LAUNCH_SKIP=\"-1\" is not accepted: expected a whole number >= 0; using 0");
  CHECK(errors[2] ==
        "PASTA_LAUNCH_COUNT=\"ten\" is not accepted: expected a whole number >= 0 "
        "or \"all\" (0 = all); using all");
  CHECK(errors[3] ==
        "PASTA_REPORT=\"xml\" is not accepted: expected a comma-separated list of "
        "text, json, csv, or \"none\"; using the previous formats");
  CHECK(errors[4] ==
        "PASTA_PRINT=\"printer\" is not accepted: expected stderr, stdout or none; "
        "using the previous destination");
  CHECK(errors[5] == "PASTA_TOP=\"0\" is not accepted: expected a whole number >= 1; using 20");
  CHECK(errors[6] ==
        "PASTA_PAGE_BYTES=\"3000\" is not accepted: expected a power of two from "
        "256 to 1G (suffixes K, M, G); using 65536");
  // Rejected values leave the defaults in place.
  CHECK(cfg.kernel_filter.empty());
  CHECK(cfg.launch_skip == 0);
  CHECK(cfg.top == 20);
  CHECK(cfg.page_bytes == 65536);
  CHECK(cfg.formats == format::all);
}

TEST_CASE("byte sizes take K, M and G suffixes and reject overflow") {
  CHECK(detail::parse_bytes("4096") == 4096u);
  CHECK(detail::parse_bytes("64K") == 65536u);
  CHECK(detail::parse_bytes("1g") == 1ull << 30);
  CHECK_FALSE(detail::parse_bytes("K"));
  CHECK_FALSE(detail::parse_bytes("12X"));
  CHECK_FALSE(detail::parse_bytes("99999999999999999G"));
  CHECK_FALSE(detail::parse_uint(""));
  CHECK_FALSE(detail::parse_uint("1 "));
}

TEST_CASE("report formats parse as a comma list") {
  CHECK(detail::parse_formats("text") == format::text);
  CHECK(detail::parse_formats("csv,text") == (format::csv | format::text));
  CHECK(detail::parse_formats("none") == 0u);
  CHECK_FALSE(detail::parse_formats(""));
  CHECK_FALSE(detail::parse_formats("text,"));
  CHECK_FALSE(detail::parse_formats("text,,csv"));
}

TEST_CASE("unknown PASTA_* variables are found, known ones and others are not") {
  char a[] = "PASTA_OUTPT_DIR=x", b[] = "PASTA_TOP=3", c[] = "HOME=/root", d[] = "PASTA_TOOLS=y",
       e[] = "PASTA_TOOL=z";
  char* env[] = {a, b, c, d, e, nullptr};
  CHECK(detail::unknown_variables(env) ==
        std::vector<std::string>{"PASTA_OUTPT_DIR", "PASTA_TOOL"});
  // What building pasta reads (CMake) and what the launcher reads are not typos either.
  char f[] = "PASTA_SANITIZER_ROOT=/opt/s", g[] = "PASTA_TORCH_ROOT=/t", h[] = "PASTA_STALL_ACCESS_LIB=l",
       i[] = "PASTA_JOB_MEMORY=4GB";
  char* more[] = {f, g, h, i, nullptr};
  CHECK(detail::unknown_variables(more).empty());
}

namespace {
// Handlers that bring settings of their own.
struct WithCupti : Direct {
  using settings = nv::CuptiSettings;
  nv::CuptiSettings seen;
  WithCupti(const Config&, const nv::CuptiSettings& own) : seen(own) {}
};
struct WithAnnotations : Direct {
  using settings = device::AnnotationSettings;
  std::uint64_t bins;
  WithAnnotations(const Config&, const device::AnnotationSettings& own)
      : bins(own.annotation_bins) {}
};
}  // namespace

TEST_CASE("a pipeline's Config is pasta's own plus its handlers' settings") {
  static_assert(std::is_same_v<ConfigFor<Direct>, Config>);
  static_assert(std::is_same_v<ConfigFor<WithCupti>, ConfigWith<nv::CuptiSettings>>);
  static_assert(std::is_same_v<ConfigFor<Handlers<WithCupti, Direct, WithAnnotations>>,
                               ConfigWith<nv::CuptiSettings, device::AnnotationSettings>>);
  // Each handler gets its own part of the composed config.
  ConfigFor<Handlers<WithCupti, WithAnnotations>> cfg;
  cfg.top = 3;
  cfg.flush_ms = 5;
  cfg.annotation_bins = 4096;
  Handlers<WithCupti, WithAnnotations> handlers(cfg);
  CHECK(handlers.get<WithCupti>().seen.flush_ms == 5);
  CHECK(handlers.get<WithAnnotations>().bins == 4096);
  // A plain Config converts: the handlers' settings at their defaults.
  const ConfigWith<nv::CuptiSettings> from_plain = Config{};
  CHECK(from_plain.flush_ms == nv::CuptiSettings{}.flush_ms);
  // The environment reaches the handlers' settings too.
  ConfigWith<nv::CuptiSettings> env_cfg;
  CHECK(apply_env(env_cfg, FakeEnv{{{"PASTA_FLUSH_MS", "250"}, {"PASTA_TOP", "7"}}}).empty());
  CHECK(env_cfg.flush_ms == 250);
  CHECK(env_cfg.top == 7);
}

TEST_CASE("PASTA_CUPTI_SKIP and PASTA_SANITIZER_LIB are rows of their handlers' tables") {
  ConfigWithAll cfg;
  // A name that is no record kind is logged and passed over, as it always was.
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_CUPTI_SKIP", "memcpy,kernels,sync"},
                               {"PASTA_SANITIZER_LIB", "/opt/s/libsanitizer-public.so"}}})
            .empty());
  CHECK(cfg.skip == (nv::detail::skip_memcpy | nv::detail::skip_sync));
  CHECK(cfg.library == "/opt/s/libsanitizer-public.so");
}

TEST_CASE("the unknown-variable warning knows the variables of the handlers this program holds") {
  // This file includes every settings header (pasta/variables.hpp).
  for (auto name : all_variables) {
    CAPTURE(name);
    std::string entry = std::string(name) + "=1";
    char* env[] = {entry.data(), nullptr};
    CHECK(detail::unknown_variables(env).empty());
  }
}

TEST_CASE("memory-access settings: patch, spaces, trace buffer") {
  ConfigWithAll cfg;
  FakeEnv good{{{"PASTA_ACCESS_PATCH", "object_atomic"},
                {"PASTA_ACCESS_SPACES", "global,local,async"},
                {"PASTA_TRACE_BUFFER", "2G"}}};
  CHECK(apply_env(cfg, good).empty());
  CHECK(cfg.access_patch == AccessPatch::object_atomic);
  CHECK(cfg.access_spaces == (space::global | space::local | space::async));
  CHECK(cfg.trace_buffer_bytes == (2ull << 30));

  FakeEnv bad{{{"PASTA_ACCESS_PATCH", "fast"},
               {"PASTA_ACCESS_SPACES", "global,texture"},
               {"PASTA_TRACE_BUFFER", "512K"}}};
  const auto errors = apply_env(cfg, bad);
  REQUIRE(errors.size() == 3);
  CHECK(errors[0] ==
        "PASTA_ACCESS_PATCH=\"fast\" is not accepted: expected auto, noop, atomic or "
        "object_atomic; using the previous patch");
  CHECK(errors[1] ==
        "PASTA_ACCESS_SPACES=\"global,texture\" is not accepted: expected a comma-separated "
        "list of global, shared, local, async; using the previous spaces");
  CHECK(errors[2] ==
        "PASTA_TRACE_BUFFER=\"512K\" is not accepted: expected a size from 1M to 64G "
        "(suffixes K, M, G); using 2147483648");
  CHECK(cfg.access_patch == AccessPatch::object_atomic);  // kept
}

TEST_CASE("PASTA_ANNOTATION_BINS: a power of two from 1K to 1G") {
  ConfigWithAll cfg;
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_ANNOTATION_BINS", "4M"}}}).empty());
  CHECK(cfg.annotation_bins == (4ull << 20));
  for (const char* bad : {"1000", "512", "2G", "many"}) {
    CAPTURE(bad);
    const auto errors = apply_env(cfg, FakeEnv{{{"PASTA_ANNOTATION_BINS", bad}}});
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == fmt::format("PASTA_ANNOTATION_BINS=\"{}\" is not accepted: expected a "
                                   "power of two from 1K to 1G (suffixes K, M, G); using 4194304",
                                   bad));
  }
  CHECK(cfg.annotation_bins == (4ull << 20));
}

TEST_CASE("PASTA_COUNTER_LAUNCHES: a whole number, 0 measuring every launch") {
  ConfigWithAll cfg;
  CHECK(cfg.counter_launches == 1);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_LAUNCHES", "0"}}}).empty());
  CHECK(cfg.counter_launches == 0);
  const auto errors = apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_LAUNCHES", "-2"}}});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "PASTA_COUNTER_LAUNCHES=\"-2\" is not accepted: expected a whole number (0 = "
        "measure every launch); using 0");
  CHECK(cfg.counter_launches == 0);
}

TEST_CASE("PASTA_COUNTER_BATCH: 1 to 24 launches replayed together (3 ranges each), 24 unless set") {
  ConfigWithAll cfg;
  CHECK(cfg.counter_batch == 24);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_BATCH", "1"}}}).empty());
  CHECK(cfg.counter_batch == 1);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_BATCH", "16"}}}).empty());
  CHECK(cfg.counter_batch == 16);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_BATCH", "12"}}}).empty());
  for (const char* bad : {"0", "25", "eight"}) {
    const auto errors = apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_BATCH", bad}}});
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == fmt::format("PASTA_COUNTER_BATCH=\"{}\" is not accepted: expected a whole "
                                   "number from 1 to 24 (1 = each launch replayed at its own); "
                                   "using 12",
                                   bad));
    CHECK(cfg.counter_batch == 12);
  }
}

TEST_CASE("PASTA_COUNTER_CACHE: all (the default, like ncu) or none") {
  ConfigWithAll cfg;
  CHECK(cfg.counter_cache_flush);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_CACHE", "none"}}}).empty());
  CHECK_FALSE(cfg.counter_cache_flush);
  const auto errors = apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_CACHE", "flush"}}});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "PASTA_COUNTER_CACHE=\"flush\" is not accepted: expected all (flush L2 before "
        "measuring DRAM bytes and hit rates) or none (L2 as the program left it); "
        "using none");
  CHECK_FALSE(cfg.counter_cache_flush);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_CACHE", "all"}}}).empty());
  CHECK(cfg.counter_cache_flush);
}

TEST_CASE("PASTA_COUNTER_REPLAY: pasta (the default) or cupti") {
  ConfigWithAll cfg;
  CHECK(cfg.counter_user_replay);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_REPLAY", "pasta"}}}).empty());
  CHECK(cfg.counter_user_replay);
  const auto errors = apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_REPLAY", "kernel"}}});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "PASTA_COUNTER_REPLAY=\"kernel\" is not accepted: expected pasta (pasta replays "
        "kernels, saving and restoring device memory) or cupti (CUPTI's kernel replay); "
        "using pasta");
  CHECK(cfg.counter_user_replay);
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_COUNTER_REPLAY", "cupti"}}}).empty());
  CHECK_FALSE(cfg.counter_user_replay);
}

TEST_CASE("PASTA_TOOLS: a comma list of tool names, duplicates folded, malformed lists refused") {
  Config cfg;
  CHECK(apply_env(cfg, FakeEnv{{{"PASTA_TOOLS", "timeline,kernel_freq,timeline"}}}).empty());
  CHECK(cfg.tools == std::vector<std::string>{"timeline", "kernel_freq"});
  for (const char* bad : {"timeline,", ",x", "Kernel_Freq", "a b", "kernel-freq"}) {
    Config c;
    const auto errors = apply_env(c, FakeEnv{{{"PASTA_TOOLS", bad}}});
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == fmt::format("PASTA_TOOLS=\"{}\" is not accepted: expected a comma-separated "
                                   "list of tool names (kernel_freq,timeline); using every tool "
                                   "of the profiler",
                                   bad));
    CHECK(c.tools.empty());
  }
}

TEST_CASE("docs/configuration.md lists every PASTA_* variable, and no variable pasta lacks") {
  std::ifstream in(PASTA_SOURCE_DIR "/docs/configuration.md");
  REQUIRE(in);
  // Names in the first column of the variables table: "| `PASTA_X`, `PASTA_Y` | ...".
  std::set<std::string> documented;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("| `PASTA_")) continue;
    const std::string first = line.substr(0, line.find(" |", 2));
    for (std::size_t at = first.find("`PASTA_"); at != std::string::npos;
         at = first.find("`PASTA_", at + 1))
      documented.insert(first.substr(at + 1, first.find('`', at + 1) - at - 1));
  }
  for (auto name : all_variables) {
    CAPTURE(name);
    CHECK(documented.count(std::string(name)) == 1);
  }
  for (const auto& name : documented) {
    CAPTURE(name);
    const auto known = [&](const auto& names) {
      return std::find(std::begin(names), std::end(names), name) != std::end(names);
    };
    CHECK((known(all_variables) || known(detail::other_known_variables)));
  }
}
