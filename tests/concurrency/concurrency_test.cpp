// Many threads emitting at once, as CUDA callbacks do. Run under
// ThreadSanitizer in CI; the counts must come out exact.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <variant>
#include <vector>

#include <pasta/nv/cupti/detail/graph_ops.hpp>
#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include "../support.hpp"
#include "../trace/truth.hpp"

using namespace pasta;

namespace {
constexpr int threads = 16;
constexpr std::uint64_t per_thread = 2000;

template <class Prof>
void hammer(Prof& prof) {
  std::vector<std::thread> pool;
  std::atomic<bool> go{false};
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      const std::string kernel = "kernel" + std::to_string(t % 4);
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        const std::uint64_t corr = t * per_thread + i + 1;
        const std::uint64_t base = 0x100000ull * (corr + 1);
        PASTA_SCOPE("iteration");
        prof.emit(MemAlloc{.address = base, .bytes = 256});
        prof.emit(test::launch(corr, kernel));
        prof.emit(MemAccess{
            .correlation = corr, .address = base + 8, .bytes = 4, .flags = access::write});
        prof.emit(test::complete(corr, 10, 20));
        prof.emit(MemFree{.address = base});
      }
    });
  go = true;
  for (auto& th : pool) th.join();
}
}  // namespace

TEST_CASE("16 threads emitting at once: every event counted exactly once") {
  test::TempDir dir;
  Profiler<Direct, proc::Cpu, tools::KernelFreq, tools::MemHotness, tools::ScopeTime,
           tools::EventCount>
      prof(test::quiet(dir));
  hammer(prof);
  const std::uint64_t total = threads * per_thread;
  const auto& count = prof.tool<tools::EventCount>();
  CHECK(count.count(EventKind::kernel_launch) == total);
  CHECK(count.count(EventKind::kernel_complete) == total);
  CHECK(count.count(EventKind::scope_begin) == total);
  CHECK(count.count(EventKind::scope_end) == total);
  for (int k = 0; k < 4; ++k) {
    const auto* s = prof.tool<tools::KernelFreq>().stats("kernel" + std::to_string(k));
    REQUIRE(s);
    CHECK(s->calls() == total / 4);
    CHECK(s->total_ns == 10 * total / 4);
  }
  const auto& hot = prof.tool<tools::MemHotness>();
  CHECK(hot.objects().size() == total);
  CHECK(hot.unattributed().accesses() == 0);
  std::uint64_t writes = 0;
  for (const auto& o : hot.objects()) writes += o.total().writes;
  CHECK(writes == total);
  CHECK(prof.tool<tools::ScopeTime>().stats("iteration")->calls == total);
}

TEST_CASE("recording from 16 threads gives a trace that replays to the same counts") {
  test::TempDir dir;
  Config c = test::quiet(dir);
  c.trace_file = dir.file("mt.pasta");
  {
    Profiler<Direct, proc::Cpu, tools::Record> prof(c);
    hammer(prof);
  }
  Profiler<Replay, proc::Cpu, tools::EventCount> replay(c);
  CHECK(replay.handler().complete());
  CHECK(replay.tool<tools::EventCount>().count(EventKind::mem_access) == threads * per_thread);
}

TEST_CASE("8 Replay handlers on 8 threads feeding one profiler: 8 times every count, exactly") {
  // A trace recorded on the H100 (tests/data), replayed whole by each thread
  // into the same pipeline, as several CUDA contexts' buffers arrive at once.
  test::TempDir dir;
  Config c = test::quiet(dir);
  c.trace_file = PASTA_TEST_DATA_DIR "/resnet18_torch_h100.pasta";
  using Prof = Profiler<Direct, proc::Cpu, tools::KernelFreq, tools::EventCount>;
  Prof once(c);
  {
    Replay r(c);
    r.start(once);
    REQUIRE(r.complete());
  }
  Prof many(c);
  constexpr int replayers = 8;
  std::vector<std::thread> pool;
  std::atomic<int> complete{0};
  for (int t = 0; t < replayers; ++t)
    pool.emplace_back([&] {
      Replay r(c);
      r.start(many);
      complete += r.complete();
    });
  for (auto& th : pool) th.join();
  CHECK(complete == replayers);
  const auto& one = once.tool<tools::EventCount>();
  const auto& all = many.tool<tools::EventCount>();
  std::uint64_t events = 0;
  for (std::size_t k = 0; k <= detail::event_type_count; ++k) {
    const auto kind = static_cast<EventKind>(k);
    CHECK(all.count(kind) == replayers * one.count(kind));
    events += one.count(kind);
  }
  const test::TraceEvents truth(c.trace_file);
  std::uint64_t recorded = 0;
  for (const std::uint64_t n : truth.per_kind) recorded += n;
  CHECK(events == recorded);  // every event of the trace, once per replay
  Report r1{"kernel_freq"}, r8{"kernel_freq"};
  once.tool<tools::KernelFreq>().report(r1);
  many.tool<tools::KernelFreq>().report(r8);
  const auto s1 = test::summary(r1), s8 = test::summary(r8);
  // As many launches as the trace holds kernel records (a plain TraceReader pass).
  CHECK(std::get<std::uint64_t>(s1.at("launches")) ==
        truth.count(EventKind::kernel_complete));
  CHECK(std::get<std::uint64_t>(s8.at("launches")) ==
        replayers * std::get<std::uint64_t>(s1.at("launches")));
  CHECK(s8.at("kernels") == s1.at("kernels"));
  CHECK(std::get<double>(s8.at("device time (ms)")) ==
        replayers * std::get<double>(s1.at("device time (ms)")));
}

TEST_CASE("a thread that finds the pipeline busy queues its events, and they arrive in order") {
  test::TempDir dir;
  Profiler<Direct, proc::Cpu, test::Collect> prof(test::quiet(dir));
  std::atomic<bool> held{false}, emitted{false};
  bool emitted_while_held = false;
  std::thread worker([&] {
    prof.batch([&](auto& sink) {
      held = true;
      // The program thread's events must not wait for this batch (if they did,
      // this would wait out the 10 s and the check below would fail).
      for (int i = 0; i < 10000 && !emitted; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      emitted_while_held = emitted;
      sink.emit(test::launch(99, "worker_kernel"));
    });
  });
  while (!held) std::this_thread::yield();
  prof.emit(OpBegin{.id = 1, .thread = 7, .time_ns = 10});
  prof.emit(OpEnd{.id = 1, .thread = 7, .time_ns = 20});
  emitted = true;
  worker.join();
  CHECK(emitted_while_held);
  const auto& events = prof.tool<test::Collect>().events;
  REQUIRE(events.size() == 3);
  CHECK(std::holds_alternative<KernelLaunch>(events[0]));  // the batch's own, first
  CHECK(std::get<OpBegin>(events[1]).id == 1);               // then the queued ones, in order
  CHECK(std::get<OpEnd>(events[2]).id == 1);
}

TEST_CASE("queue_always: program threads only queue, settle() processes in order, "
          "PASTA_HOST_QUEUE=0 keeps every event on its thread") {
  test::TempDir dir;
  for (const bool queue : {true, false}) {
    CAPTURE(queue);
    Config cfg = test::quiet(dir);
    cfg.host_queue = queue;
    detail::Pipeline<proc::PassThrough, test::Collect> pipeline(cfg);
    pipeline.queue_always();
    std::thread program([&] {
      pipeline.emit(OpBegin{.id = 1, .thread = 7, .time_ns = 10});
      pipeline.emit(OpEnd{.id = 1, .thread = 7, .time_ns = 20});
    });
    program.join();
    const auto& events = pipeline.tools().get<test::Collect>().events;
    CHECK(events.size() == (queue ? 0u : 2u));
    CHECK(pipeline.deferred_events() == (queue ? 2u : 0u));
    pipeline.settle();
    REQUIRE(events.size() == 2);
    CHECK(std::get<OpBegin>(events[0]).id == 1);
    CHECK(std::get<OpEnd>(events[1]).id == 1);
  }
}

TEST_CASE("the host queue: full at its limit, drained in order, and used again after") {
  detail::PendingEvents q;
  const auto limit = detail::PendingEvents::limit;
  for (std::uint64_t i = 0; i < limit; ++i) REQUIRE(q.push(OpBegin{.id = i + 1}));
  CHECK_FALSE(q.push(OpBegin{.id = limit + 1}));  // full: the caller waits its turn
  std::uint64_t next = 1;
  bool in_order = true;
  q.drain([&](const auto& e) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, OpBegin>)
      in_order = in_order && e.id == next;
    ++next;
  });
  CHECK(in_order);
  CHECK(next == limit + 1);
  // The next lap: other event types, each its own size.
  CHECK(q.push(OpEnd{.id = 7, .time_ns = 70}));
  CHECK(q.push(OpBegin{.id = 8, .name = NameId{3}}));
  std::vector<std::uint64_t> ids;
  q.drain([&](const auto& e) {
    using E = std::remove_cvref_t<decltype(e)>;
    if constexpr (std::is_same_v<E, OpEnd>) ids.push_back(e.id * 10 + (e.time_ns == 70));
    if constexpr (std::is_same_v<E, OpBegin>) ids.push_back(e.id * 10 + (e.name.value == 3));
  });
  CHECK(ids == std::vector<std::uint64_t>{71, 81});
  CHECK(q.deferred() == limit + 2);
}

TEST_CASE("the host queue under Pipeline::emit's pattern: a thread that queued events and then "
          "takes the pipeline has them processed before its own, while others are pushing") {
  // Queue when the pipeline is busy, else take it, drain, process: as Pipeline::emit does.
  detail::PendingEvents q;
  std::mutex pipeline;
  constexpr std::uint32_t threads = 8;
  constexpr std::uint64_t each = 400000;
  std::vector<std::uint64_t> last(threads, 0);
  std::uint64_t seen = 0, out_of_order = 0;
  auto process = [&](const OpBegin& e) {
    out_of_order += e.id != last[e.thread] + 1;
    last[e.thread] = e.id;
    ++seen;
  };
  auto queued = [&](const auto& e) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, OpBegin>) process(e);
  };
  std::atomic<bool> go{false};
  std::vector<std::thread> program;
  for (std::uint32_t t = 0; t < threads; ++t)
    program.emplace_back([&, t] {
      while (!go) std::this_thread::yield();  // all at once
      for (std::uint64_t i = 1; i <= each; ++i) {
        const OpBegin e{.id = i, .thread = t};
        std::unique_lock lock(pipeline, std::try_to_lock);
        if (!lock.owns_lock()) {
          if (q.push(e)) continue;
          lock.lock();
        }
        q.drain(queued);
        process(e);
      }
    });
  go = true;
  for (auto& th : program) th.join();
  q.drain(queued);
  CHECK(seen == threads * each);
  CHECK(out_of_order == 0);
}

TEST_CASE("queue_always under load: 4 program threads, 6 queue laps, the worker settling, "
          "every event once, each thread's in its order") {
  test::TempDir dir;
  detail::Pipeline<proc::PassThrough, test::Collect> pipeline(test::quiet(dir));
  pipeline.queue_always();
  constexpr std::uint64_t threads = 4, each = 3 * detail::PendingEvents::limit / 2;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    while (!done.load()) pipeline.settle();
  });
  std::vector<std::thread> program;
  for (std::uint64_t t = 0; t < threads; ++t)
    program.emplace_back([&pipeline, t] {
      for (std::uint64_t i = 1; i <= each; ++i)
        pipeline.emit(OpBegin{.id = i, .thread = static_cast<std::uint32_t>(t)});
    });
  for (auto& th : program) th.join();
  done = true;
  worker.join();
  pipeline.settle();
  std::vector<std::uint64_t> last(threads, 0);
  std::uint64_t seen = 0, out_of_order = 0;
  for (const auto& e : pipeline.tools().get<test::Collect>().events) {
    const auto& b = std::get<OpBegin>(e);
    out_of_order += b.id != last[b.thread] + 1;
    last[b.thread] = b.id;
    ++seen;
  }
  CHECK(seen == threads * each);
  CHECK(out_of_order == 0);
}

// nv::Cupti's graph callbacks write on the threads that capture; its worker reads.
TEST_CASE("CUDA graph nodes recorded on 4 program threads while the worker charges records") {
  nv::detail::GraphOps g;
  constexpr int writers = 4, nodes_each = 2000;
  std::vector<std::thread> pool;
  for (int t = 0; t < writers; ++t)
    pool.emplace_back([&g, t] {
      for (int i = 0; i < nodes_each; ++i) {
        const std::uint64_t node = 1 + t * nodes_each + i;
        g.created(node, 1, 100 + t);
        g.cloned(node + 1'000'000, 2, node);
      }
    });
  std::uint64_t charged = 0;
  for (int i = 0; i < writers * nodes_each; ++i) charged += g.charge(1'000'001 + i, 0) != 0;
  for (auto& th : pool) th.join();
  CHECK(g.size() == 2 * writers * nodes_each);
  CHECK(g.stats().records == writers * nodes_each);
  CHECK(g.stats().at_capture == charged);
  for (int t = 0; t < writers; ++t) CHECK(g.op_of(1'000'001 + t * nodes_each) == 100 + t);
}

namespace {
// A per-thread object that counts its lives: made, destroyed, and the value it holds.
struct Tally {
  static inline std::atomic<int> made{0}, destroyed{0};
  int value = 0;
  Tally() { made.fetch_add(1); }
  ~Tally() {
    value = -1;  // what a reader after the destructor would see
    destroyed.fetch_add(1);
  }
};
// A C++ thread_local whose destructor reads the thread's Tally: ThreadSlot's
// objects must outlive those destructors.
struct ReadsAtExit {
  int* seen = nullptr;
  ~ReadsAtExit() {
    if (seen) *seen = detail::ThreadSlot<Tally>::get().value;
  }
};
}  // namespace

TEST_CASE("ThreadSlot: one object per thread, kept across calls, destroyed at the thread's exit "
          "after its thread_local destructors") {
  const int made_before = Tally::made.load(), destroyed_before = Tally::destroyed.load();
  constexpr int n = 8;
  std::vector<int> seen_at_exit(n, -1);
  std::vector<const Tally*> objects(n);
  std::atomic<int> arrived{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i)
    pool.emplace_back([&, i] {
      thread_local ReadsAtExit reader;  // made before the Tally, so destroyed after it would be
      reader.seen = &seen_at_exit[i];
      Tally& mine = detail::ThreadSlot<Tally>::get();
      objects[i] = &mine;
      for (int k = 0; k < 1000; ++k) ++detail::ThreadSlot<Tally>::get().value;
      CHECK(&detail::ThreadSlot<Tally>::get() == &mine);
      arrived.fetch_add(1);
      while (arrived.load() < n) std::this_thread::yield();  // all n alive at once
    });
  for (auto& t : pool) t.join();
  for (int i = 0; i < n; ++i) CHECK(seen_at_exit[i] == 1000);  // still alive when `reader` went
  CHECK(std::set<const Tally*>(objects.begin(), objects.end()).size() == n);
  CHECK(Tally::made.load() - made_before == n);
  CHECK(Tally::destroyed.load() - destroyed_before == n);
  CHECK(detail::thread_id() == static_cast<std::uint32_t>(::gettid()));
}
