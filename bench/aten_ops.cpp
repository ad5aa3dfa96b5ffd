// What torch::Aten's operator callbacks cost the program's thread, per
// operator call, with no GPU: a loop of small CPU operators (at::add of two
// one-element tensors: an operator call and an allocation and free each),
// each followed by 4 us of other work (what launching a kernel costs an
// eager PyTorch program: about 2,000 operators in 10 ms, the rate of the
// GPU benchmarks' launch-bound steps), timed with and without `pasta run
// --torch`'s tools. As under nv::Cupti,
// the program's thread only queues its events and another thread processes
// them every 10 ms (`Settler` below plays pasta's worker).
//
//   pasta_bench_aten_ops native|empty-callback|torch|torch-inline [CALLS] [EVICT_KIB]
//
// EVICT_KIB: after each call, write one byte of every cache line of a
// buffer that large, as the Python interpreter and PyTorch's dispatch do
// between two operators of a real program: the callbacks then meet their
// code and data no longer cached (what bench/aten_ops.py --misses counts).
//
// empty-callback: a global RecordFunction callback that does nothing, with
// the same scopes as torch::Aten's: what PyTorch's own machinery costs any
// operator profiler (torch.profiler too).
// One variant a process (bench/aten_ops.py interleaves them): prints the
// median of 20 blocks in ns per operator call. A benchmark, not a test.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stop_token>
#include <string_view>
#include <thread>
#include <vector>

#include <pasta/pasta.hpp>
#include <pasta/tools/event_count.hpp>
#include <pasta/tools/kernel_freq.hpp>
#include <pasta/tools/op_summary.hpp>
#include <pasta/tools/scope_time.hpp>
#include <pasta/tools/tensor_alloc.hpp>
#include <pasta/tools/timeline.hpp>
#include <pasta/torch/aten.hpp>

namespace {

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

// The rest of an operator's time in a GPU program: the kernel launch.
void launch_like_work() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(4);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// What runs between two operators of a real program, as far as the caches see it.
struct Evictor {
  explicit Evictor(std::size_t kib) : lines(kib * 1024 / 64) {}
  void operator()() {
    for (Line& l : lines) ++l.byte;
  }
  struct alignas(64) Line {
    unsigned char byte = 0;
  };
  std::vector<Line> lines;
};

double ns_per_call(long calls, Evictor& evict) {
  at::Tensor a = at::ones({1}), b = at::ones({1});
  constexpr int blocks = 20;
  std::vector<double> ns;
  for (int i = 0; i < blocks + 2; ++i) {  // two blocks of warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (long j = 0; j < calls / blocks; ++j) {
      at::Tensor c = at::add(a, b);
      launch_like_work();
      evict();
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= 2) ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                             static_cast<double>(calls / blocks));
  }
  std::nth_element(ns.begin(), ns.begin() + blocks / 2, ns.end());
  return ns[blocks / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view variant = argc > 1 ? argv[1] : "native";
  const long calls = argc > 2 ? std::atol(argv[2]) : 400'000;
  const long evict_kib = argc > 3 ? std::atol(argv[3]) : 0;
  if ((variant != "native" && variant != "empty-callback" && variant != "torch" &&
       variant != "torch-inline") ||
      calls < 20 || evict_kib < 0) {
    std::fprintf(stderr,
                 "usage: %s native|empty-callback|torch|torch-inline [CALLS >= 20] "
                 "[EVICT_KIB >= 0]\n",
                 argv[0]);
    return 2;
  }
  Evictor evict(static_cast<std::size_t>(evict_kib));
  at::set_num_threads(1);
  std::optional<Queued> queued;
  std::optional<Inline> inline_tools;
  if (variant == "torch") queued.emplace();
  if (variant == "torch-inline") inline_tools.emplace();
  if (variant == "empty-callback")
    at::addGlobalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
              return nullptr;
            },
            [](const at::RecordFunction&, at::ObserverContext*) {})
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
  const double ns = ns_per_call(calls, evict);
  if (queued) queued->stop();
  if (inline_tools) inline_tools->stop();
  std::printf("{\"variant\": \"%.*s\", \"ns_per_call\": %.1f}\n", static_cast<int>(variant.size()),
              variant.data(), ns);
  return 0;
}
