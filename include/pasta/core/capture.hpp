// A window of the run to profile, as nsys's --capture-range, ncu's NVTX
// filter and torch.profiler's schedule choose one: `pasta run
// --capture-range=SPEC`, PASTA_CAPTURE_RANGE, or Config::capture.
//
//   cudaProfilerApi  from each cudaProfilerStart (cuProfilerStart,
//                    torch.cuda.profiler.start) to the next Stop
//   nvtx:NAME        inside every range named NAME: an NVTX range,
//                    a pasta scope, or a PyTorch record_function
//   steps:A-B        PyTorch optimizer steps A to B, counted from 0 as
//                    torch.profiler counts ProfilerStep#N ("steps:7" is one)
//
// Outside the window the handlers drop what happens (operators, scopes,
// launches) and gate what costs: CUPTI collects no activity records,
// kernels are neither instrumented nor replayed. Device work launched inside
// is kept when it finishes after the window closes. Allocations, frees,
// module loads and devices pass at all times: they are the state the
// window's events are read against (a tensor allocated at load and read in
// step 10 keeps its name).
//
// One window per process: the last profiler constructed sets it.
#pragma once

#include <string>
#include <string_view>

#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/parse.hpp>

namespace pasta {

// What SPEC (above) selects; a malformed one is kind invalid, with the
// reason in `error`: such a window never opens.
inline CaptureRange parse_capture_range(std::string_view spec) {
  CaptureRange r;
  r.spec = std::string(spec);
  auto fail = [&](std::string why) {
    r.kind = CaptureRange::Kind::invalid;
    r.error = std::move(why);
    return r;
  };
  if (spec.empty() || spec == "none") {
    r.kind = CaptureRange::Kind::whole;
    return r;
  }
  if (spec == "cudaProfilerApi") {
    r.kind = CaptureRange::Kind::profiler_api;
    return r;
  }
  if (spec.starts_with("nvtx:")) {
    r.name = std::string(spec.substr(5));
    if (r.name.empty()) return fail("nvtx: needs the range's name, as in nvtx:train_step");
    r.kind = CaptureRange::Kind::nvtx;
    return r;
  }
  if (spec.starts_with("steps:")) {
    const std::string_view range = spec.substr(6);
    const auto dash = range.find('-');
    const auto a = detail::parse_uint(range.substr(0, dash));
    const auto b = dash == std::string_view::npos ? a : detail::parse_uint(range.substr(dash + 1));
    if (!a || !b)
      return fail("steps: takes A-B or A, whole numbers counted from 0, as in steps:10-12");
    if (*b < *a) return fail(fmt::format("steps:{}-{} ends before it begins", *a, *b));
    r.kind = CaptureRange::Kind::steps;
    r.first = *a;
    r.last = *b;
    return r;
  }
  return fail("expected cudaProfilerApi, nvtx:NAME or steps:A-B");
}

// "steps 10-12", as reports name the window.
inline std::string describe(const CaptureRange& r) {
  switch (r.kind) {
    case CaptureRange::Kind::whole:
      return "the whole run";
    case CaptureRange::Kind::profiler_api:
      return "from cudaProfilerStart to cudaProfilerStop";
    case CaptureRange::Kind::nvtx:
      return fmt::format("inside the ranges named \"{}\"", r.name);
    case CaptureRange::Kind::steps:
      return r.first == r.last ? fmt::format("optimizer step {}", r.first)
                               : fmt::format("optimizer steps {} to {}", r.first, r.last);
    case CaptureRange::Kind::invalid:
      break;
  }
  return fmt::format("nothing: \"{}\" is not a capture range ({})", r.spec, r.error);
}

namespace detail {

// The window as reports state it; empty for the whole run.
inline std::string report_line(const CaptureWindow::Summary& s) {
  const CaptureRange& r = s.range;
  if (r.whole()) return {};
  if (r.kind == CaptureRange::Kind::invalid) return "capture range: " + describe(r);
  std::string line = fmt::format("capture range {}: {}", r.spec, describe(r));
  if (r.kind == CaptureRange::Kind::steps)
    line += fmt::format(" ({} optimizer steps ended in the run)", s.steps);
  else if (s.opened)
    line += fmt::format(" (opened {} time{})", s.opened, s.opened == 1 ? "" : "s");
  return line;
}

// Why the window captured nothing; empty if it opened.
inline std::string never_opened(const CaptureWindow::Summary& s) {
  const CaptureRange& r = s.range;
  switch (r.kind) {
    case CaptureRange::Kind::whole:
      return {};
    case CaptureRange::Kind::invalid:
      return fmt::format("nothing was captured: \"{}\" is not a capture range ({})", r.spec,
                         r.error);
    case CaptureRange::Kind::profiler_api:
      if (s.opened) return {};
      return fmt::format("capture range {} never opened: the program never called "
                         "cudaProfilerStart; nothing was captured",
                         r.spec);
    case CaptureRange::Kind::nvtx:
      if (s.opened) return {};
      return fmt::format("capture range {} never opened: no NVTX range, pasta scope or "
                         "record_function named \"{}\" began; nothing was captured",
                         r.spec, r.name);
    case CaptureRange::Kind::steps:
      if (s.opened) return {};
      return fmt::format(
          "capture range {} never opened: the run ended {} optimizer step{} (a step ends "
          "with torch.optim's Optimizer.step); nothing was captured",
          r.spec, s.steps, s.steps == 1 ? "" : "s");
  }
  return {};
}

}  // namespace detail
}  // namespace pasta
