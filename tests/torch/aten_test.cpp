// torch::Aten against the real PyTorch, on CPU tensors: operator calls with
// their nesting, autograd's backward operators, and the CPU allocator's
// reports, with the counts this PyTorch version (2.11) gives.
#include <doctest/doctest.h>

// ATen's tensor and the operators the tests call, not <torch/torch.h> (the C++ frontend's nn,
// optim and data headers): the unit builds in 11 CPU-s instead of 24.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/relu.h>
#include <ATen/record_function.h>
#include <torch/version.h>

#include <array>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <pasta/core/capture.hpp>
#include <pasta/core/handlers.hpp>
#include <pasta/core/profiler.hpp>
#include <pasta/proc/pass_through.hpp>
#include <pasta/torch/aten.hpp>

#include "../support.hpp"

// c10's logging defines a glog-style CHECK; these tests mean doctest's.
#undef CHECK
#define CHECK DOCTEST_CHECK

using namespace pasta;

namespace {

using Prof = Profiler<pasta::torch::Aten, proc::PassThrough, test::Collect>;

// Names TensorView, which a tool taking every event (Collect) does not turn on.
struct ViewReader {
  static constexpr std::string_view name = "view_reader";
  void on(const TensorView&) {}
  void report(Report&) const {}
};
using ViewProf = Profiler<pasta::torch::Aten, proc::PassThrough, test::Collect, ViewReader>;

// What a device handler asks at a launch (core/detail/op_correlation.hpp),
// asked at each operator's start instead, on the thread that started it.
struct StackReader {
  static constexpr std::string_view name = "stack_reader";
  struct Seen {
    std::uint64_t op = 0, innermost = 0, path = 0;
  };
  std::vector<Seen> seen;
  void on(const OpBegin& b) {
    const auto* stack = pasta::detail::op_stack().load();
    if (stack && b.thread == pasta::detail::thread_id())
      seen.push_back({b.id, stack->innermost(), stack->path()});
  }
  void report(Report&) const {}
};
using StackProf = Profiler<pasta::torch::Aten, proc::PassThrough, test::Collect, StackReader>;

std::map<std::string, int> calls(const test::Collect& c) {
  std::map<std::string, int> out;
  for (const OpBegin& b : c.of<OpBegin>()) ++out[std::string(name_of(b.name))];
  return out;
}

}  // namespace

TEST_CASE("Aten: operator calls with names, nesting, and begin/end pairs") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  {
    at::Tensor a = at::ones({64, 64});
    at::Tensor b = at::mm(a, a);
    at::Tensor c = at::relu(b);
    CHECK(c.sum().item<float>() == 64.0f * 64 * 64);
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  const auto begins = col.of<OpBegin>();
  const auto ends = col.of<OpEnd>();
  const auto n = calls(col);
  CHECK(n.at("aten::ones") == 1);
  CHECK(n.at("aten::mm") == 1);
  CHECK(n.at("aten::relu") == 1);
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 11
  // Every call PyTorch 2.11 makes for these five lines, inner ones included.
  const std::map<std::string, int> expected{{"aten::_local_scalar_dense", 1},
                                            {"aten::as_strided", 1},
                                            {"aten::clamp_min", 1},
                                            {"aten::empty", 1},
                                            {"aten::fill_", 2},
                                            {"aten::item", 1},
                                            {"aten::mm", 1},
                                            {"aten::ones", 1},
                                            {"aten::relu", 1},
                                            {"aten::resolve_conj", 3},
                                            {"aten::sum", 2}};
  CHECK(n == expected);
#endif
  REQUIRE(begins.size() == ends.size());
  // aten::ones runs aten::empty and aten::fill_ inside it: children name
  // their parent and sit one level deeper.
  std::map<std::uint64_t, OpBegin> by_id;
  for (const OpBegin& b : begins) by_id[b.id] = b;
  std::multiset<std::string> children_of_ones;
  for (const OpBegin& b : begins) {
    if (!b.parent) {
      CHECK(b.depth == 0);
      continue;
    }
    REQUIRE(by_id.count(b.parent));
    CHECK(b.depth == by_id[b.parent].depth + 1);
    CHECK(b.thread == by_id[b.parent].thread);
    if (name_of(by_id[b.parent].name) == "aten::ones") children_of_ones.emplace(name_of(b.name));
  }
  CHECK(children_of_ones == std::multiset<std::string>{"aten::empty", "aten::fill_"});
  // Every end matches the begin with its id, and ends after it began.
  for (const OpEnd& e : ends) {
    REQUIRE(by_id.count(e.id));
    CHECK(e.name == by_id[e.id].name);
    CHECK(e.time_ns >= by_id[e.id].time_ns);
  }
}

TEST_CASE("Aten: CPU tensor memory, charged to the operator that allocated it") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  {
    at::Tensor a = at::empty({256, 256});  // 256 KiB
    at::Tensor b = at::mm(a, a);           // 256 KiB more
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  std::map<std::uint64_t, std::string> op_name;
  for (const OpBegin& b : col.of<OpBegin>()) op_name[b.id] = std::string(name_of(b.name));
  std::map<std::string, std::uint64_t> bytes_by_op;
  std::uint64_t allocated = 0, freed = 0;
  for (const TensorAlloc& a : col.of<TensorAlloc>()) {
    CHECK(a.device == pasta::torch::Aten::cpu_device);
    bytes_by_op[op_name[a.op]] += a.bytes;
    allocated += a.bytes;
  }
  for (const TensorFree& f : col.of<TensorFree>()) freed += f.bytes;
  CHECK(bytes_by_op["aten::empty"] == 256 * 256 * 4);
  CHECK(allocated == 2 * 256 * 256 * 4);
  CHECK(freed == allocated);  // both tensors died inside the profiled block
}

TEST_CASE("Aten: backward operators and user scopes are operators too") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  {
    at::Tensor w = at::ones({8, 8}).set_requires_grad(true);
    at::Tensor x = at::ones({4, 8});
    at::Tensor loss;
    {
      at::RecordFunction guard(at::RecordScope::USER_SCOPE);
      guard.before("forward step");
      loss = at::mm(x, w).sum();
    }
    loss.backward();
    CHECK(w.grad().sum().item<float>() == 4.0f * 8 * 8);
  }
  prof.stop();
  const auto n = calls(prof.tool<test::Collect>());
  CHECK(n.at("forward step") == 1);
  // One mm and one sum in the graph: one backward node each.
  CHECK(n.at("MmBackward0") == 1);
  CHECK(n.at("SumBackward0") == 1);
}

TEST_CASE("Aten: ranges whose names share a pointer keep their own names") {
  // A record_function name is copied into the RecordFunction: a short one
  // into the object itself, here at the same stack address every time, a long
  // one onto the heap, where the last one's freed block comes back. The name
  // cache, keyed by the pointer, must compare the text.
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  const std::array<std::string, 4> names{"range a", "range b",
                                         "a range whose name is long enough for the heap: one",
                                         "a range whose name is long enough for the heap: two"};
  for (int i = 0; i < 40; ++i) {
    at::RecordFunction range(at::RecordScope::USER_SCOPE);
    range.before(names[i % 4]);
  }
  prof.stop();
  const auto n = calls(prof.tool<test::Collect>());
  for (const auto& name : names) CHECK(n.at(name) == 10);
}

TEST_CASE("Aten: operators on several threads keep their own nesting") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  constexpr int threads = 4, rounds = 25;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([] {
      for (int i = 0; i < rounds; ++i) at::relu(at::ones({16}));
    });
  for (auto& t : pool) t.join();
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  const auto n = calls(col);
  CHECK(n.at("aten::relu") == threads * rounds);
  CHECK(n.at("aten::ones") == threads * rounds);
  std::map<std::uint64_t, OpBegin> by_id;
  for (const OpBegin& b : col.of<OpBegin>()) by_id[b.id] = b;
  for (const OpBegin& b : col.of<OpBegin>())
    if (b.parent) CHECK(by_id.at(b.parent).thread == b.thread);
  CHECK(col.of<OpEnd>().size() == col.of<OpBegin>().size());
}

TEST_CASE("Aten: with PASTA_OP_INPUTS, operators carry their input shapes and dtypes") {
  test::TempDir dir;
  Prof::config_type cfg = test::quiet(dir);  // Config + torch::AtenSettings
  cfg.op_inputs = true;
  Prof prof(cfg);
  {
    at::Tensor a = at::ones({2, 3});
    at::Tensor b = at::ones({3, 4});
    at::mm(a, b);
  }
  prof.stop();
  std::string mm_inputs;
  for (const OpBegin& b : prof.tool<test::Collect>().of<OpBegin>())
    if (name_of(b.name) == "aten::mm") mm_inputs = std::string(name_of(b.inputs));
  CHECK(mm_inputs == "Float[2, 3], Float[3, 4]");
}

TEST_CASE("Aten: after stop, operators reach no tool") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  prof.stop();
  at::relu(at::ones({4}));
  CHECK(prof.tool<test::Collect>().events.empty());
}

TEST_CASE("Aten: an operator's input views come with their base storage and layout") {
  test::TempDir dir;
  ViewProf prof(test::quiet(dir));
  std::uint64_t base = 0;
  {
    at::Tensor a = at::ones({4, 6});
    base = reinterpret_cast<std::uint64_t>(a.data_ptr());
    at::Tensor r = at::relu(a.narrow(1, 2, 3));  // columns 2..4 of every row
    at::Tensor m = at::mm(a.t(), a);             // all of a, read column by column
    CHECK(m.sum().item<float>() == 6.0f * 6 * 4);
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  std::map<std::uint64_t, std::string> op_name;
  for (const OpBegin& b : col.of<OpBegin>()) op_name[b.id] = std::string(name_of(b.name));
  std::map<std::string, std::vector<TensorView>> views;
  for (const TensorView& v : col.of<TensorView>()) views[op_name[v.op]].push_back(v);
  CHECK(views.count("aten::ones") == 0);  // a itself is its whole storage: not a view
  REQUIRE(views["aten::relu"].size() == 1);
  const TensorView& slice = views["aten::relu"][0];
  CHECK(slice.address == base + 2 * 4);
  CHECK(slice.bytes == (3 * 6 + 2 + 1) * 4);  // first element to last, the gaps included
  CHECK(slice.base == base);
  CHECK(slice.base_bytes == 4 * 6 * 4);
  CHECK(name_of(slice.layout) == "Float[4, 3] strides [6, 1]");
  CHECK(slice.element_bytes == 4);
  CHECK(slice.device == pasta::torch::Aten::cpu_device);
  REQUIRE(views["aten::mm"].size() == 1);
  CHECK(views["aten::mm"][0].address == base);
  CHECK(views["aten::mm"][0].bytes == 4 * 6 * 4);
  CHECK(name_of(views["aten::mm"][0].layout) == "Float[6, 4] strides [1, 6]");
}

TEST_CASE("Aten: a view whose storage holds no data (meta) is passed over, its operator kept") {
  test::TempDir dir;
  ViewProf prof(test::quiet(dir));
  {
    at::Tensor meta = at::empty({4, 6}, at::TensorOptions().device(at::kMeta));
    at::Tensor slice = meta.narrow(1, 2, 3);
    at::Tensor r = at::add(slice, slice);
    CHECK(r.sizes() == at::IntArrayRef({4, 3}));
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  CHECK(calls(col).at("aten::add") == 1);
  CHECK(col.of<TensorView>().empty());
  CHECK(col.of<OpEnd>().size() == col.of<OpBegin>().size());
}

TEST_CASE("Aten: without a tool that names views, operators' inputs are not read") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  {
    at::Tensor a = at::ones({4, 6});
    at::Tensor r = at::relu(a.narrow(1, 2, 3));
    CHECK(r.sum().item<float>() == 12.0f);
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  CHECK(calls(col).at("aten::relu") == 1);
  CHECK(col.of<TensorView>().empty());
}

namespace {
// One training step as torch.optim marks it: the optimizer's step inside a
// record_function named "Optimizer.step#SGD.step"; `mms` matrix products before it.
void train_step(const at::Tensor& w, int mms) {
  for (int i = 0; i < mms; ++i) (void)at::mm(w, w);
  at::RecordFunction guard(at::RecordScope::USER_SCOPE);
  guard.before("Optimizer.step#SGD.step");
  (void)at::relu(w);
}
}  // namespace

TEST_CASE("Aten: steps:A-B keeps the operators of optimizer steps A to B, whole") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.capture = parse_capture_range("steps:1-2");
  Prof prof(cfg);
  const at::Tensor w = at::ones({4, 4});
  for (int step = 0; step < 5; ++step) train_step(w, step + 1);  // step s runs s+1 mms
  prof.stop();
  const auto n = calls(prof.tool<test::Collect>());
  CHECK(n.at("aten::mm") == 2 + 3);  // steps 1 and 2
  CHECK(n.at("aten::relu") == 2);
  CHECK(n.at("Optimizer.step#SGD.step") == 2);
  CHECK(n.count("aten::ones") == 0);  // before the window
  const auto& col = prof.tool<test::Collect>();
  CHECK(col.of<OpEnd>().size() == col.of<OpBegin>().size());
  const auto s = pasta::detail::capture_window().summary();
  CHECK(s.steps == 5);
  CHECK(s.opened == 1);
}

TEST_CASE("Aten: nvtx:NAME opens at a record_function of that name, a missing one says so") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.capture = parse_capture_range("nvtx:measured");
  {
    Prof prof(cfg);
    const at::Tensor w = at::ones({4, 4});
    (void)at::mm(w, w);
    {
      at::RecordFunction guard(at::RecordScope::USER_SCOPE);
      guard.before("measured");
      (void)at::mm(w, w);
      (void)at::relu(w);
    }
    (void)at::relu(w);
    prof.stop();
    const auto n = calls(prof.tool<test::Collect>());
    CHECK(n.at("measured") == 1);
    CHECK(n.at("aten::mm") == 1);
    CHECK(n.at("aten::relu") == 1);
  }
  cfg.capture = parse_capture_range("steps:3-4");
  test::CapturedLog log;
  {
    Prof prof(cfg);
    train_step(at::ones({2, 2}), 1);
    prof.stop();
    CHECK(prof.tool<test::Collect>().of<OpBegin>().empty());
    // Allocations pass outside the window: the state its events are read against.
    CHECK_FALSE(prof.tool<test::Collect>().of<TensorAlloc>().empty());
  }
  CHECK(log.contains("capture range steps:3-4 never opened: the run ended 1 optimizer step (a "
                     "step ends with torch.optim's Optimizer.step); nothing was captured"));
}

TEST_CASE("Aten: device handlers find the calling thread's operator and its path on its stack") {
  test::TempDir dir;
  {
    StackProf prof(test::quiet(dir));
    CHECK(pasta::detail::op_stack().load() != nullptr);
    {
      at::Tensor a = at::ones({8, 8});
      at::Tensor b = at::mm(a, a);
      CHECK(b.sum().item<float>() == 8.0f * 8 * 8);
    }
    prof.stop();
    CHECK(pasta::detail::op_stack().load() == nullptr);  // stopped: nothing to ask
    // Each operator's path from its parents' names, as nv::Cupti's own stack hashed them.
    std::map<std::uint64_t, std::uint64_t> path, parent;
    for (const OpBegin& b : prof.tool<test::Collect>().of<OpBegin>()) {
      path[b.id] = pasta::detail::fnv_step(b.parent ? path.at(b.parent) : pasta::detail::fnv_offset,
                                           b.name.value + 1ull);
      parent[b.id] = b.parent;
    }
    const auto& seen = prof.tool<StackReader>().seen;
    CHECK(seen.size() == path.size());
    int nested = 0;
    for (const auto& s : seen) {
      CHECK(s.innermost == s.op);
      CHECK(s.path == path.at(s.op));
      nested += parent.at(s.op) != 0;
    }
    CHECK(nested > 0);  // paths of more than one operator among them
  }
}

TEST_CASE("Aten: PASTA_SELF_TIME_PARTS times each section of every operator start and end") {
  for (const bool on : {false, true}) {
    CAPTURE(on);
    test::TempDir dir;
    Config cfg = test::quiet(dir);
    cfg.self_time_parts = on;
    Prof prof(cfg);
    {
      at::Tensor a = at::ones({16, 16});
      CHECK(at::relu(a).sum().item<float>() == 256.0f);
    }
    prof.stop();
    const auto& stats = prof.handler().stats();
    const auto begins = prof.tool<test::Collect>().of<OpBegin>().size();
    CHECK(stats.op_start_parts.calls.load() == (on ? begins : 0));
    CHECK(stats.op_end_parts.calls.load() == (on ? begins : 0));
    // The record section ends every start and end recorded: each took some time.
    CHECK((stats.op_start_parts.ns[5].load() > 0) == on);
    CHECK((stats.op_end_parts.ns[2].load() > 0) == on);
    CHECK(stats.ops.load() == begins);  // the ids issued, one an operator recorded
  }
}

TEST_CASE("Aten: PASTA_SELF_TIME times every operator start and end, and nothing when off") {
  for (const bool on : {true, false}) {
    CAPTURE(on);
    test::TempDir dir;
    Config cfg = test::quiet(dir);
    cfg.self_time = on;
    Prof prof(cfg);
    {
      at::Tensor a = at::ones({64, 64});
      at::Tensor b = at::mm(a, a);
      CHECK(b.sum().item<float>() == 64.0f * 64 * 64);
    }
    prof.stop();
    const auto& stats = prof.handler().stats();
    const auto begins = prof.tool<test::Collect>().of<OpBegin>().size();
    CHECK(stats.op_start.calls.load() == (on ? begins : 0));
    CHECK(stats.op_end.calls.load() == (on ? begins : 0));
    CHECK((stats.op_start.ns.load() > 0) == on);
    // Every allocator report with a size (CPU tensors: ones, mm, sum's result, freed too).
    CHECK(stats.memory.calls.load() ==
          (on ? stats.allocations.load() + stats.frees.load() : 0));
  }
}

TEST_CASE("Aten: a memory hook that a state guard removed comes back within 16 operators, and "
          "the run says how many operators' allocations may be missing") {
  test::TempDir dir;
  Prof prof(test::quiet(dir));
  constexpr int calls = 40;
  std::vector<at::Tensor> kept;
  {
    const at::Tensor x = at::ones({64});  // 256 B, with the hook on
    // What at::launch's task or a user's guard does: the thread's debug info
    // replaced by one without any profiler state.
    c10::ThreadLocalDebugInfo::_forceCurrentDebugInfo(nullptr);
    for (int i = 0; i < calls; ++i) kept.push_back(at::relu(x));  // 256 B each
  }
  prof.stop();
  std::uint64_t recorded = 0;
  for (const TensorAlloc& a : prof.tool<test::Collect>().of<TensorAlloc>())
    recorded += a.bytes == 256;
  // x's and the relu outputs after the check that put the hook back: at most
  // 15 operator starts went by without it, each relu at least one of them.
  CHECK(recorded <= 1 + calls);
  CHECK(recorded >= 1 + calls - 15);
  CHECK(prof.handler().stats().restores.load() == 1);
  CHECK(prof.handler().partial_reason() ==
        "the memory hook was found removed 1 times (by a thread state guard other than "
        "autograd's) and installed again: the allocations of up to 15 operators before each "
        "may be missing");
}

TEST_CASE("Aten: outside the capture window operators reach no callback but a sampled poll, "
          "ranges and the memory hook still do, and other threads follow the window") {
  test::TempDir dir;
  Config cfg = test::quiet(dir);
  cfg.self_time = true;  // counts every call of the operator start callback
  cfg.capture = parse_capture_range("cudaProfilerApi");
  Prof prof(cfg);
  auto& window = pasta::detail::capture_window();
  std::uint32_t outside_thread = 0;
  auto relus = [](const at::Tensor& w, int n, std::uint32_t* thread = nullptr) {
    if (thread) *thread = pasta::detail::thread_id();
    for (int i = 0; i < n; ++i) (void)at::relu(w);  // 64 B each
  };
  const at::Tensor w = at::ones({4, 4});  // 64 B
  relus(w, 200);
  // A thread that starts outside: its hook comes at its first sampled poll,
  // about one in 16 of its 800 operator calls (relu and its clamp_min).
  std::thread(relus, w, 400, &outside_thread).join();
  window.profiler_api(true);
  relus(w, 3);
  std::thread(relus, w, 1).join();  // started inside: recorded from its first call
  {
    at::RecordFunction range(at::RecordScope::USER_SCOPE);
    range.before("closes inside");
    window.profiler_api(false);  // the range still ends
  }
  relus(w, 200);
  {
    at::RecordFunction range(at::RecordScope::USER_SCOPE);
    range.before("outside");
  }
  prof.stop();
  const auto& col = prof.tool<test::Collect>();
  const auto n = calls(col);
  CHECK(n.at("aten::relu") == 4);
  CHECK(n.at("closes inside") == 1);
  CHECK(n.count("outside") == 0);
  CHECK(col.of<OpEnd>().size() == col.of<OpBegin>().size());
  // Every start callback call was an operator recorded, or the range outside.
  CHECK(prof.handler().stats().op_start.calls.load() == col.of<OpBegin>().size() + 1);
  // The allocations pass in and outside: all of the main thread's and of the
  // thread started inside (1 + 200 + 3 + 1 + 200), and the outside thread's
  // after its first poll (failing when none came in its first 400 calls:
  // (15/16)^400, about 6e-12).
  std::uint64_t others = 0, outside = 0;
  for (const TensorAlloc& a : col.of<TensorAlloc>())
    if (a.bytes == 64) ++(a.thread == outside_thread ? outside : others);
  CHECK(others == 1 + 200 + 3 + 1 + 200);
  CHECK(outside >= 200);
  CHECK(outside <= 400);
  // ... which the report says: the thread started inside got its hook at its
  // first operator, the main thread at start.
  CHECK(prof.handler().stats().late_hooks.load() == 1);
  CHECK(prof.handler().partial_reason() ==
        "the memory hook reached 1 thread that began outside the capture window at a sampled "
        "operator (one in 16 on average): the allocations of its first operators may be missing");
}
