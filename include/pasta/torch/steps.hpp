// pasta::torch::Steps: PyTorch's optimizer steps for a `steps:A-B` capture
// range, in a pipeline without torch::Aten (`pasta run` without --torch: the
// default pipeline, --memory, --counters, --record). It links no PyTorch: the
// Python entry points come from the running process (detail/python_api.hpp),
// and the hooks are torch.optim's global optimizer step hooks, two Python
// calls a step (pre and post), nothing per operator. A step ends when the
// outermost optimizer step on its thread returns, as torch::Aten counts them
// by their `Optimizer.step#...` record_function (which it must not be
// paired with: each would count every step).
//
// It starts only for a steps range, and installs its hooks from a pending
// call, which the Python main thread runs between two bytecodes: CUDA (and
// with it the pipeline) starts inside a torch call, after `import torch`.
// A process without Python, or one that has not imported torch.optim by
// then, counts no step and says so in one line; the window never opens, and
// every report says that too (core/capture.hpp).
#pragma once

#include <atomic>
#include <string_view>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/log.hpp>
#include <pasta/torch/detail/python_api.hpp>

namespace pasta::torch {

class Steps {
 public:
  static constexpr std::string_view name = "steps";
  static constexpr unsigned capture_sources = capture_sources::steps;

  explicit Steps(const Config& cfg) : verbose_(cfg.verbose) {}
  ~Steps() { stop(); }
  Steps(const Steps&) = delete;
  Steps& operator=(const Steps&) = delete;

  template <class Sink>
  void start(Sink&) {
    if (pasta::detail::capture_window().kind() != CaptureRange::Kind::steps) return;
    State& s = state();
    if (s.running.exchange(true)) return;  // hooks stay in once installed; one set counts
    s.verbose = verbose_;
    started_ = true;
    if (!s.python) s.python = s.api.resolve() && s.api.is_initialized();
    if (!s.python) {
      pasta::detail::log(
          "capture range steps: optimizer steps are PyTorch's, and this process runs no Python: "
          "the window never opens");
      return;
    }
    if (!s.installed.load() && s.api.add_pending_call(&install, nullptr) != 0)
      pasta::detail::log("capture range steps: Python refused the call that installs the "
                         "optimizer step hooks: the window never opens");
  }
  void stop() {
    if (started_) state().running.store(false);
    started_ = false;
  }
  void flush() {}

 private:
  struct State {
    detail::PythonApi api;
    bool python = false, verbose = false;
    std::atomic<bool> running{false}, installed{false};
    detail::PythonApi::Obj install_fn = nullptr;
  };
  static State& state() {
    static State s;
    return s;
  }

  // install(step_end): 1 hooked, 0 no torch.optim in the process yet.
  static constexpr const char* python_source = R"PY(
def install(step_end):
    import sys
    import threading
    optimizer = sys.modules.get("torch.optim.optimizer")
    if optimizer is None or not hasattr(optimizer, "register_optimizer_step_post_hook"):
        return 0
    depth = threading.local()

    def pre(opt, args, kwargs):
        depth.n = getattr(depth, "n", 0) + 1

    def post(opt, args, kwargs):
        depth.n = getattr(depth, "n", 1) - 1
        if depth.n == 0:
            step_end()

    optimizer.register_optimizer_step_pre_hook(pre)
    optimizer.register_optimizer_step_post_hook(post)
    return 1
)PY";

  // The pending call: on the Python main thread, holding the GIL.
  static int install(void*) {
    State& s = state();
    if (!s.running.load() || s.installed.load()) return 0;
    static detail::PythonApi::MethodDef end{"pasta_step_end", &py_step_end,
                                            detail::PythonApi::meth_noargs, nullptr};
    const long long r = s.api.load_and_install(python_source, {&end}, s.install_fn, s.verbose, -1);
    if (r == 1) {
      s.installed.store(true);
      if (s.verbose) pasta::detail::log("capture range steps: optimizer step hooks installed");
    } else {
      pasta::detail::log(
          r == 0 ? "capture range steps: torch.optim was not imported when CUDA started, so no "
                   "optimizer step is counted: the window never opens (import torch before the "
                   "first CUDA call)"
                 : "capture range steps: the optimizer step hooks could not be installed: the "
                   "window never opens");
    }
    return 0;
  }

  // The outermost optimizer step on the calling thread returned.
  static detail::PythonApi::Obj py_step_end(detail::PythonApi::Obj, detail::PythonApi::Obj) {
    State& s = state();
    if (s.running.load(std::memory_order_relaxed)) pasta::detail::capture_window().step_end();
    return s.api.new_none();
  }

  bool verbose_;
  bool started_ = false;
};

}  // namespace pasta::torch
