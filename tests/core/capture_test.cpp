// Capture ranges (core/capture.hpp): parsing, the window's state on
// synthetic boundary streams, and a profiler whose scopes are cut to it.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <pasta/core/capture.hpp>
#include <pasta/pasta.hpp>

#include "../support.hpp"

using namespace pasta;
using Kind = CaptureRange::Kind;

namespace {

using ScopeProf = Profiler<Direct, proc::Cpu, test::Collect, tools::ScopeTime>;

// The window's state after each boundary, as '1' (open) or '0'.
struct Trace {
  detail::CaptureWindow w;
  std::string states;
  explicit Trace(std::string_view spec) {
    w.configure(parse_capture_range(spec));
    w.listen(this, [](void* self, bool open) {
      auto* t = static_cast<Trace*>(self);
      t->states += open ? 'o' : 'c';
      if (t->w.done()) t->states += 'd';  // a listener asks as the window closes for good
    });
  }
  char now() const { return w.open() ? '1' : '0'; }
};

std::vector<std::string> begun(const test::Collect& c) {
  std::vector<std::string> out;
  for (const ScopeBegin& b : c.of<ScopeBegin>()) out.emplace_back(name_of(b.name));
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("capture ranges: the three kinds and none") {
  CHECK(parse_capture_range("").whole());
  CHECK(parse_capture_range("none").whole());
  CHECK(parse_capture_range("cudaProfilerApi").kind == Kind::profiler_api);
  const auto nvtx = parse_capture_range("nvtx:train step");
  CHECK(nvtx.kind == Kind::nvtx);
  CHECK(nvtx.name == "train step");
  const auto steps = parse_capture_range("steps:10-12");
  CHECK(steps.kind == Kind::steps);
  CHECK(steps.first == 10);
  CHECK(steps.last == 12);
  const auto one = parse_capture_range("steps:7");
  CHECK(one.first == 7);
  CHECK(one.last == 7);
  CHECK(describe(steps) == "optimizer steps 10 to 12");
  CHECK(describe(one) == "optimizer step 7");
  CHECK(describe(nvtx) == "inside the ranges named \"train step\"");
}

TEST_CASE("capture ranges: a malformed one says why, and captures nothing") {
  const auto check_bad = [](std::string_view spec, std::string_view why) {
    const auto r = parse_capture_range(spec);
    CHECK(r.kind == Kind::invalid);
    CHECK(r.error == why);
    CHECK(r.spec == spec);
    detail::CaptureWindow w;
    w.configure(r);
    CHECK_FALSE(w.open());
    w.step_end();
    w.profiler_api(true);
    CHECK_FALSE(w.open());
  };
  check_bad("steps:12-10", "steps:12-10 ends before it begins");
  check_bad("steps:a-b", "steps: takes A-B or A, whole numbers counted from 0, as in steps:10-12");
  check_bad("steps:", "steps: takes A-B or A, whole numbers counted from 0, as in steps:10-12");
  check_bad("nvtx:", "nvtx: needs the range's name, as in nvtx:train_step");
  check_bad("step:1-2", "expected cudaProfilerApi, nvtx:NAME or steps:A-B");
  check_bad("cudaprofilerapi", "expected cudaProfilerApi, nvtx:NAME or steps:A-B");
  detail::CaptureWindow w;
  w.configure(parse_capture_range("step:1-2"));
  CHECK(detail::never_opened(w.summary()) ==
        "nothing was captured: \"step:1-2\" is not a capture range (expected cudaProfilerApi, "
        "nvtx:NAME or steps:A-B)");
}

TEST_CASE("capture window: steps A-B open after step A-1 ends and close after step B ends") {
  Trace t("steps:2-3");
  std::string seen(1, t.now()), done(1, t.w.done() ? '1' : '0');
  for (int i = 0; i < 6; ++i) {
    t.w.step_end();
    seen += t.now();
    done += t.w.done() ? '1' : '0';
  }
  // Step 0 runs before the first end, step 1 after it, ...
  CHECK(seen == "0011000");
  // Past step 3 it never opens again, and its listeners know it as it closes.
  CHECK(done == "0000111");
  CHECK(t.states == "ocd");
  const auto s = t.w.summary();
  CHECK(s.steps == 6);
  CHECK(s.opened == 1);
  CHECK(detail::report_line(s) ==
        "capture range steps:2-3: optimizer steps 2 to 3 (6 optimizer steps ended in the run)");
  CHECK(detail::never_opened(s).empty());
}

TEST_CASE("capture window: steps:0 is open from the start") {
  Trace t("steps:0");
  CHECK(t.w.open());
  t.w.step_end();
  CHECK_FALSE(t.w.open());
  CHECK(t.states == "cd");
}

TEST_CASE("capture window: a step range past the run never opens, and says how far it got") {
  Trace t("steps:10-12");
  for (int i = 0; i < 5; ++i) t.w.step_end();
  CHECK(t.states.empty());
  CHECK(detail::never_opened(t.w.summary()) ==
        "capture range steps:10-12 never opened: the run ended 5 optimizer steps (a step ends "
        "with torch.optim's Optimizer.step); nothing was captured");
}

TEST_CASE("capture window: nvtx:NAME is open inside every range of that name, nested or not") {
  Trace t("nvtx:step");
  const NameId step = intern("step"), other = intern("other");
  std::string seen;
  t.w.range(other, true);  // other names do nothing
  seen += t.now();
  t.w.range(step, true);
  seen += t.now();
  t.w.range(step, true);  // nested: still open after the inner one ends
  t.w.range(step, false);
  seen += t.now();
  t.w.range(step, false);
  seen += t.now();
  t.w.range(other, false);
  t.w.range(step, false);  // an end without a begin is ignored
  seen += t.now();
  t.w.range(step, true);
  t.w.range(step, false);
  CHECK(seen == "01100");
  CHECK(t.states == "ococ");
  CHECK(t.w.summary().opened == 2);
  CHECK(detail::report_line(t.w.summary()) ==
        "capture range nvtx:step: inside the ranges named \"step\" (opened 2 times)");
}

TEST_CASE("capture window: cudaProfilerApi opens at each start and closes at each stop") {
  Trace t("cudaProfilerApi");
  CHECK_FALSE(t.w.open());
  t.w.profiler_api(false);  // a stop before any start
  t.w.profiler_api(true);
  t.w.profiler_api(true);   // a second start while open
  CHECK(t.w.open());
  t.w.profiler_api(false);
  t.w.profiler_api(true);
  t.w.profiler_api(false);
  CHECK(t.states == "ococ");
  CHECK(t.w.summary().opened == 2);
  t.w.step_end();  // boundaries of other kinds do nothing
  t.w.range(intern("x"), true);
  CHECK_FALSE(t.w.open());
}

TEST_CASE("capture window: the whole run is open and names no window") {
  Trace t("none");
  CHECK(t.w.open());
  CHECK(t.w.whole());
  t.w.step_end();
  t.w.profiler_api(false);
  CHECK(t.w.open());
  CHECK(detail::report_line(t.w.summary()).empty());
  CHECK(detail::never_opened(t.w.summary()).empty());
}

TEST_CASE("a profiler with nvtx:NAME sees only the scopes inside that range, whole pairs") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.capture = parse_capture_range("nvtx:step");
  {
    ScopeProf prof(cfg);
    {
      PASTA_SCOPE("load");
      PASTA_SCOPE("read");
    }
    pasta::start("outer");  // holds the window's ranges, but began outside: not seen
    for (int i = 0; i < 2; ++i) {
      PASTA_SCOPE("step");
      { PASTA_SCOPE("forward"); }
    }
    pasta::end();
    { PASTA_SCOPE("after"); }
    const auto& c = prof.tool<test::Collect>();
    CHECK(begun(c) == std::vector<std::string>{"step", "forward", "step", "forward"});
    CHECK(c.of<ScopeEnd>().size() == 4);
    CHECK(prof.tool<tools::ScopeTime>().stats("step")->calls == 2);
    CHECK(prof.tool<tools::ScopeTime>().stats("load") == nullptr);
    prof.stop();
  }
  const std::string text = slurp(dir.path() + "/scope_time.txt");
  CHECK(text.find("WINDOW: capture range nvtx:step: inside the ranges named \"step\" (opened 2 "
                  "times)") != std::string::npos);
  CHECK(text.find("PARTIAL") == std::string::npos);
}

TEST_CASE("a window that never opens: the reports are marked, the program runs on") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.capture = parse_capture_range("nvtx:missing");
  test::CapturedLog log;
  {
    ScopeProf prof(cfg);
    { PASTA_SCOPE("step"); }
    CHECK(prof.tool<test::Collect>().events.empty());
    prof.stop();
  }
  const std::string why =
      "capture range nvtx:missing never opened: no NVTX range, pasta scope or record_function "
      "named \"missing\" began; nothing was captured";
  CHECK(slurp(dir.path() + "/scope_time.txt").find("PARTIAL REPORT: " + why) !=
        std::string::npos);
  CHECK(log.contains(why));
  // The handler (Direct) sees no NVTX ranges: said when the profiler started.
  CHECK(log.contains("this profiler's handlers see neither NVTX ranges nor record_function "
                     "scopes; only pasta scopes named \"missing\" open the window"));
}

TEST_CASE("PASTA_CAPTURE_RANGE sets Config::capture, a malformed value is kept and captures nothing") {
  Config cfg;
  auto errors = apply_env(cfg, [](const char* name) -> const char* {
    return std::string_view(name) == "PASTA_CAPTURE_RANGE" ? "steps:3-4" : nullptr;
  });
  CHECK(errors.empty());
  CHECK(cfg.capture.kind == Kind::steps);
  CHECK(cfg.capture.first == 3);
  errors = apply_env(cfg, [](const char* name) -> const char* {
    return std::string_view(name) == "PASTA_CAPTURE_RANGE" ? "stpes:3-4" : nullptr;
  });
  CHECK(errors.empty());  // the profiler says it, and every report
  CHECK(cfg.capture.kind == Kind::invalid);
}
