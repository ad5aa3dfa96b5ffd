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
//   pasta_bench_aten_ops native|empty-callback|ring-callback|torch|torch-shared|torch-inline
//                        [CALLS] [EVICT_KIB]
//                        [paired]
//
// torch-shared: torch's tools from libpasta_bench_aten_tools.so beside the program, loaded with
// dlopen as `pasta run --torch` loads its library: thread-local state reached as a dlopen'ed
// library reaches it (in this executable the linker makes every access a plain load).
//
// paired (torch, torch-shared; run with PASTA_CAPTURE_RANGE=cudaProfilerApi): the blocks
// alternate outside and inside the tools' capture window, first and last outside, and the
// program prints, besides the inside blocks' median, the median over inside blocks of each
// one's ns a call less the mean of the outside blocks on either side: what recording costs,
// read within one process, where processes differ by more than that (the GPU machine's host).
//
// EVICT_KIB: after each call, write one byte of every cache line of a
// buffer that large, as the Python interpreter and PyTorch's dispatch do
// between two operators of a real program: the callbacks then meet their
// code and data no longer cached (what bench/aten_ops.py --misses counts).
//
// empty-callback: a global RecordFunction callback that does nothing, with
// the same scopes as torch::Aten's: what PyTorch's own machinery costs any
// operator profiler (torch.profiler too). ring-callback: the floor of an
// operator record (ring_ops.hpp: an id, a time, the name's pointer and the
// thread into the thread's ring at the start, a time at the end).
// One variant a process (bench/aten_ops.py interleaves them): prints the
// median of 20 blocks in ns per operator call. A benchmark, not a test.
#include <dlfcn.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "aten_ops_tools.hpp"
#include "ring_ops.hpp"

namespace {

using pasta_bench::Inline;
using pasta_bench::Queued;

// The rest of an operator's time in a GPU program: the kernel launch. Out of line, so that
// bench/aten_ops.py --instructions can leave it out of the count (its spins depend on time).
[[gnu::noinline]] void launch_like_work() {
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

// ns a call over one block of `n` calls: an add, the launch-like work and the eviction each.
// Out of line: --instructions counts what runs in it, launch_like_work left out.
[[gnu::noinline]] double block_ns(long n, const at::Tensor& a, const at::Tensor& b,
                                  Evictor& evict) {
  const auto t0 = std::chrono::steady_clock::now();
  for (long j = 0; j < n; ++j) {
    at::Tensor c = at::add(a, b);
    launch_like_work();
    evict();
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double ns_per_call(long calls, Evictor& evict) {
  const at::Tensor a = at::ones({1}), b = at::ones({1});
  constexpr int blocks = 20, warm = 2;
  std::vector<double> ns;
  for (int i = 0; i < warm + blocks; ++i) {
    const double t = block_ns(calls / blocks, a, b, evict);
    if (i >= warm) ns.push_back(t);
  }
  return median(ns);
}

// The paired mode: ns a call inside the window (median of the inside blocks) and the median
// over inside blocks of its ns less the mean of its two outside neighbours. `window(open)`
// opens or closes the capture window of the tools under test.
struct Paired {
  double inside = 0, outside = 0, extra = 0;
};
Paired paired_ns(long calls, Evictor& evict, void (*window)(int)) {
  const at::Tensor a = at::ones({1}), b = at::ones({1});
  constexpr int inside_blocks = 20, blocks = 2 * inside_blocks + 1, warm = 2;
  std::vector<double> ns;
  for (int i = 0; i < warm + blocks; ++i) {  // outside, then outside/inside alternately
    window(i >= warm && (i - warm) % 2 == 1 ? 1 : 0);
    const double t = block_ns(calls / blocks, a, b, evict);
    if (i >= warm) ns.push_back(t);
  }
  window(0);
  std::vector<double> inside, outside, extra;
  for (std::size_t i = 0; i < ns.size(); ++i) (i % 2 ? inside : outside).push_back(ns[i]);
  for (std::size_t i = 1; i + 1 < ns.size(); i += 2)
    extra.push_back(ns[i] - (ns[i - 1] + ns[i + 1]) / 2);
  return {median(inside), median(outside), median(extra)};
}

// libpasta_bench_aten_tools.so's tools, started; stopped and released at scope exit.
class SharedTools {
 public:
  SharedTools() {
    std::string path = "libpasta_bench_aten_tools.so";
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      const std::string self(exe, static_cast<std::size_t>(n));
      path = self.substr(0, self.rfind('/') + 1) + path;
    }
    library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library_) throw std::runtime_error(std::string("torch-shared: ") + ::dlerror());
    auto start = reinterpret_cast<void* (*)()>(::dlsym(library_, "pasta_bench_aten_tools_start"));
    stop_ = reinterpret_cast<void (*)(void*)>(::dlsym(library_, "pasta_bench_aten_tools_stop"));
    window = reinterpret_cast<void (*)(int)>(::dlsym(library_, "pasta_bench_aten_tools_window"));
    if (!start || !stop_ || !window)
      throw std::runtime_error("torch-shared: the library has no entry points");
    tools_ = start();
  }
  SharedTools(const SharedTools&) = delete;
  SharedTools& operator=(const SharedTools&) = delete;
  ~SharedTools() { stop_(tools_); }  // the library stays loaded, as the real one does
  void (*window)(int) = nullptr;  // the library's capture window: open (1) or closed (0)

 private:
  void* library_ = nullptr;
  void (*stop_)(void*) = nullptr;
  void* tools_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string_view variant = argc > 1 ? argv[1] : "native";
  const long calls = argc > 2 ? std::atol(argv[2]) : 400'000;
  const long evict_kib = argc > 3 ? std::atol(argv[3]) : 0;
  const bool paired = argc > 4 && std::string_view(argv[4]) == "paired";
  if ((variant != "native" && variant != "empty-callback" && variant != "ring-callback" &&
       variant != "torch" && variant != "torch-shared" && variant != "torch-inline") ||
      calls < (paired ? 41 : 20) || evict_kib < 0 || (argc > 4 && !paired) ||
      (paired && variant != "torch" && variant != "torch-shared")) {
    std::fprintf(stderr,
                 "usage: %s native|empty-callback|ring-callback|torch|torch-shared|torch-inline "
                 "[CALLS >= 20, 41 paired] [EVICT_KIB >= 0] [paired: torch or torch-shared only]\n",
                 argv[0]);
    return 2;
  }
  if (paired) {
    const char* range = std::getenv("PASTA_CAPTURE_RANGE");
    if (!range || std::string_view(range) != "cudaProfilerApi") {
      std::fprintf(stderr, "paired: run with PASTA_CAPTURE_RANGE=cudaProfilerApi\n");
      return 2;
    }
  }
  Evictor evict(static_cast<std::size_t>(evict_kib));
  at::set_num_threads(1);
  std::optional<Queued> queued;
  std::optional<Inline> inline_tools;
  std::optional<SharedTools> shared_tools;
  if (variant == "torch") queued.emplace();
  if (variant == "torch-inline") inline_tools.emplace();
  if (variant == "torch-shared") {
    try {
      shared_tools.emplace();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  if (variant == "empty-callback")
    at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction&)
                                       -> std::unique_ptr<at::ObserverContext> { return nullptr; },
                                   [](const at::RecordFunction&, at::ObserverContext*) {})
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
  if (variant == "ring-callback") pasta_bench::ring::add();
  Paired p;
  if (paired) {
    auto* window = shared_tools ? shared_tools->window : +[](int open) {
      pasta::detail::capture_window().profiler_api(open != 0);
    };
    p = paired_ns(calls, evict, window);
  }
  const double ns = paired ? p.inside : ns_per_call(calls, evict);
  if (queued) queued->stop();
  if (inline_tools) inline_tools->stop();
  shared_tools.reset();
  std::printf("{\"variant\": \"%.*s\", \"ns_per_call\": %.1f", static_cast<int>(variant.size()),
              variant.data(), ns);
  if (paired)
    std::printf(", \"ns_outside\": %.1f, \"paired_extra_ns\": %.1f", p.outside, p.extra);
  std::printf("}\n");
  return 0;
}
