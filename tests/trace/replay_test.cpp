#include <doctest/doctest.h>

#include <pasta/pasta.hpp>
#include <pasta/trace.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {

// A small program's worth of events: two kernels, an allocation, accesses.
template <class Prof>
void run_program(Prof& prof) {
  prof.emit(MemAlloc{.address = 0x10000, .bytes = 8192, .mem_kind = MemKind::device});
  for (std::uint64_t i = 1; i <= 6; ++i) {
    const bool add = i % 3 != 0;
    prof.emit(test::launch(i, add ? "add" : "scale", {add ? 64u : 32u, 1, 1}, {256, 1, 1}));
    for (std::uint64_t a = 0; a < 4; ++a)
      prof.emit(MemAccess{.correlation = i,
                          .address = 0x10000 + 4096 * (a % 2) + 4 * i,
                          .bytes = 4,
                          .flags = a % 2 ? access::write : access::read});
    prof.emit(test::complete(i, 1000 * i, 1000 * i + 100 * i));
  }
  prof.emit(MemFree{.address = 0x10000});
}
}  // namespace

TEST_CASE("replaying a recorded run gives the tools exactly what the live run gave them") {
  test::TempDir dir;
  Config rec = test::quiet(dir);
  rec.trace_file = dir.file("run.pasta");
  using Live = Profiler<Direct, proc::Cpu, tools::KernelFreq, tools::MemHotness, tools::Record>;
  std::uint64_t live_add = 0, live_scale_ns = 0;
  {
    Live live(rec);
    run_program(live);
    live_add = live.tool<tools::KernelFreq>().stats("add")->calls();
    live_scale_ns = live.tool<tools::KernelFreq>().stats("scale")->total_ns;
  }
  CHECK(live_add == 4);
  CHECK(live_scale_ns == 900);

  Config rep = test::quiet(dir);
  rep.trace_file = dir.file("run.pasta");
  Profiler<Replay, proc::Cpu, tools::KernelFreq, tools::MemHotness> replay(rep);
  CHECK(replay.handler().complete());
  CHECK(replay.handler().error().empty());
  const auto& f = replay.tool<tools::KernelFreq>();
  CHECK(f.stats("add")->calls() == 4);
  CHECK(f.stats("add")->total_ns == 100 + 200 + 400 + 500);
  CHECK(f.stats("scale")->total_ns == 900);
  const auto& h = replay.tool<tools::MemHotness>();
  REQUIRE(h.objects().size() == 1);
  CHECK(h.objects()[0].total().reads == 12);
  CHECK(h.objects()[0].total().writes == 12);
  CHECK(h.objects()[0].pages.touched() == 1);  // 8 KiB fits one 64 KiB page
  CHECK(h.objects()[0].freed);
}

TEST_CASE("replay honours the kernel filter like a live run") {
  test::TempDir dir;
  Config rec = test::quiet(dir);
  rec.trace_file = dir.file("run.pasta");
  {
    Profiler<Direct, proc::Cpu, tools::Record> live(rec);
    run_program(live);
  }
  Config rep = test::quiet(dir);
  rep.trace_file = dir.file("run.pasta");
  rep.kernel_filter = "^scale$";
  Profiler<Replay, proc::Cpu, tools::KernelFreq, tools::MemHotness> replay(rep);
  CHECK(replay.tool<tools::KernelFreq>().stats("add") == nullptr);
  CHECK(replay.tool<tools::KernelFreq>().stats("scale")->calls() == 2);
  CHECK(replay.tool<tools::MemHotness>().objects()[0].total().accesses() == 8);
}

TEST_CASE("a damaged trace is replayed up to the damage and the reports say partial") {
  test::TempDir dir;
  Config rec = test::quiet(dir);
  rec.trace_file = dir.file("run.pasta");
  {
    Profiler<Direct, proc::Cpu, tools::Record> live(rec);
    for (int r = 0; r < 400; ++r) run_program(live);
  }
  const std::string whole = detail::read_file(dir.file("run.pasta"));
  REQUIRE(detail::write_file(dir.file("cut.pasta"), whole.substr(0, whole.size() / 2)).empty());

  test::CapturedLog log;
  Config rep = test::quiet(dir);
  rep.trace_file = dir.file("cut.pasta");
  {
    Profiler<Replay, proc::Cpu, tools::KernelFreq> replay(rep);
    CHECK_FALSE(replay.handler().complete());
    // Exactly the launches of the whole blocks before the cut: a plain reader stops there too.
    std::uint64_t whole_blocks = 0;
    trace::TraceReader reader(dir.file("cut.pasta"));
    try {
      reader.read_all([&](const auto& e) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, KernelLaunch>)
          whole_blocks += name_of(e.name) == "add";
      });
    } catch (const trace::TraceError&) {
    }
    CHECK(whole_blocks > 0);
    CHECK(whole_blocks < 400 * 4);  // the cut lost some
    CHECK(replay.tool<tools::KernelFreq>().stats("add")->calls() == whole_blocks);
    CHECK(replay.handler().error().starts_with(dir.file("cut.pasta") + ": byte "));
  }
  REQUIRE(log.lines().size() >= 1);
  CHECK(log.lines()[0].find(dir.file("cut.pasta") + ": byte ") == 0);
  CHECK(log.lines()[0].find("; replayed the ") != std::string::npos);
  CHECK(detail::read_file(dir.file("kernel_freq.txt"))
            .find("PARTIAL REPORT: " + dir.file("cut.pasta")) != std::string::npos);
}

TEST_CASE("replay without a trace file says how to give one") {
  test::TempDir dir;
  test::CapturedLog log;
  Profiler<Replay, proc::Cpu, tools::KernelFreq> replay(test::quiet(dir));
  CHECK_FALSE(replay.handler().complete());
  REQUIRE_FALSE(log.lines().empty());
  CHECK(log.lines()[0] == "no trace to replay: set PASTA_TRACE or Config::trace_file");
}

TEST_CASE("Record writes to <output_dir>/trace.pasta by default and reports what it wrote") {
  test::TempDir dir;
  Config c = test::quiet(dir);
  c.output_dir = dir.file("out");
  {
    Profiler<Direct, proc::Cpu, tools::Record> prof(c);
    prof.emit(test::launch(1, "k"));
    prof.emit(test::launch(2, "k"));
  }
  trace::TraceReader r(dir.file("out/trace.pasta"));
  int n = 0;
  r.read_all([&](const auto&) { ++n; });
  CHECK(n == 2);
  CHECK(r.complete());
  const std::string report = detail::read_file(dir.file("out/record.txt"));
  CHECK(report.find("events written: 2") != std::string::npos);
  CHECK(report.find("complete: yes") != std::string::npos);
  bool has_version = false;
  for (const auto& [k, v] : r.metadata())
    has_version |= k == "pasta_version" && v == PASTA_VERSION_STRING;
  CHECK(has_version);
}

TEST_CASE("Record on a full disk loses events, says so once, and the program goes on") {
  test::TempDir dir;
  test::CapturedLog log;
  Config c = test::quiet(dir);
  c.trace_file = "/dev/full";
  {
    Profiler<Direct, proc::Cpu, tools::Record, tools::EventCount> prof(c);
    for (std::uint64_t i = 0; i < 20000; ++i) prof.emit(test::launch(i, "k"));
    CHECK(prof.tool<tools::EventCount>().count(EventKind::kernel_launch) == 20000);
  }
  const std::string report = detail::read_file(dir.file("record.txt"));
  CHECK(report.find("events lost (write failed): 20000") != std::string::npos);
  CHECK(report.find("complete: no") != std::string::npos);
  CHECK(log.contains("writing trace /dev/full failed (No space left on device)"));
}
