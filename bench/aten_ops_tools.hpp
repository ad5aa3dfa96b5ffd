// The tools bench/aten_ops.cpp times, and the worker it plays: shared by the benchmark program
// and by libpasta_bench_aten_tools.so (aten_ops_tools.cpp), the same tools built as `pasta run`
// builds them, in a shared library the program loads.
#pragma once

#include <chrono>
#include <stop_token>
#include <string_view>
#include <thread>

#include <pasta/pasta.hpp>
#include <pasta/tools/event_count.hpp>
#include <pasta/tools/kernel_freq.hpp>
#include <pasta/tools/op_summary.hpp>
#include <pasta/tools/scope_time.hpp>
#include <pasta/tools/tensor_alloc.hpp>
#include <pasta/tools/timeline.hpp>
#include <pasta/torch/aten.hpp>

namespace pasta_bench {

// pasta's worker in a CUDA run: the program's threads queue their events,
// this thread processes them every 10 ms.
struct Settler {
  static constexpr std::string_view name = "settler";
  explicit Settler(const pasta::Config&) {}
  template <class Sink>
  void start(Sink& sink) {
    if constexpr (requires {
                    sink.queue_always();
                    sink.settle();
                  }) {
      sink.queue_always();
      thread_ = std::jthread([&sink](std::stop_token stop) {
        while (!stop.stop_requested()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          sink.settle();
        }
      });
    }
  }
  void stop() { thread_ = {}; }
  void flush() {}
  std::jthread thread_;
};

template <class Handler>
using TorchTools =
    pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::OpSummary, pasta::tools::TensorAlloc,
                    pasta::tools::KernelFreq, pasta::tools::Timeline, pasta::tools::ScopeTime,
                    pasta::tools::EventCount>;
using Queued = TorchTools<pasta::Handlers<pasta::torch::Aten, Settler>>;
using Inline = TorchTools<pasta::torch::Aten>;

}  // namespace pasta_bench

// libpasta_bench_aten_tools.so's entry points: the queued tools started (a Queued the caller
// stops and releases with the second).
extern "C" void* pasta_bench_aten_tools_start();
extern "C" void pasta_bench_aten_tools_stop(void* tools);
extern "C" void pasta_bench_aten_tools_window(int open);
