#include <doctest/doctest.h>

#include <cstring>
#include <functional>

#include <pasta/trace.hpp>
#include <pasta/trace/dump.hpp>

#include "../support.hpp"

using namespace pasta;
using trace::TraceError;
using trace::TraceReader;
using trace::TraceWriter;

namespace {

// One event of every type, every field set to something other than its default.
std::vector<test::AnyEvent> every_event() {
  const NameId k = intern("_Z6kernelPf"), s = intern("scope"), op = intern("aten::mm");
  return {
      DeviceInfo{.device = 1,
                 .name = intern("NVIDIA H100"),
                 .cc_major = 9,
                 .cc_minor = 0,
                 .sm_count = 132,
                 .global_mem_bytes = 85ull << 30},
      KernelLaunch{.correlation = 11,
                   .context = 2,
                   .stream = 3,
                   .device = 1,
                   .name = k,
                   .grid = {4, 5, 6},
                   .block = {32, 2, 1},
                   .shared_mem_bytes = 1024,
                   .thread = 77,
                   .time_ns = 123456789},
      KernelComplete{.correlation = 11,
                     .context = 2,
                     .stream = 3,
                     .device = 1,
                     .name = k,
                     .grid = {4, 5, 6},
                     .block = {32, 2, 1},
                     .shared_mem_bytes = 1024,
                     .start_ns = 1000,
                     .end_ns = 2000,
                     .op = 21},
      MemAlloc{.address = 0x7f0000001000,
               .bytes = 4096,
               .device = 1,
               .mem_kind = MemKind::managed,
               .stream = 3,
               .time_ns = 5},
      MemFree{.address = 0x7f0000001000,
              .bytes = 4096,
              .device = 1,
              .mem_kind = MemKind::pool,
              .stream = 3,
              .time_ns = 6},
      Memcpy{.correlation = 12,
             .context = 2,
             .stream = 3,
             .device = 1,
             .copy_kind = CopyKind::d2h,
             .bytes = 1 << 20,
             .start_ns = 7,
             .end_ns = 8,
             .op = 21},
      Memset{.correlation = 13,
             .context = 2,
             .stream = 3,
             .device = 1,
             .value = 0xab,
             .address = 0x1000,
             .bytes = 64,
             .start_ns = 9,
             .end_ns = 10,
             .op = 22},
      Synchronize{.sync_kind = SyncKind::stream,
                  .device = 1,
                  .context = 2,
                  .stream = 3,
                  .thread = 77,
                  .start_ns = 11,
                  .end_ns = 12},
      ModuleLoad{.device = 1, .context = 2, .module = 0xdead, .image_bytes = 999, .time_ns = 13},
      MemAccess{.correlation = 11,
                .address = 0x7f0000001008,
                .pc = 0x1f0,
                .alloc_base = 0x7f0000001000,
                .device = 1,
                .bytes = 8,
                .flags = access::read | access::atomic,
                .space = MemSpace::shared},
      AccessHistogram{.correlation = 11,
                      .address = 0x7f0000001000,
                      .alloc_base = 0x7f0000001000,
                      .device = 1,
                      .bin_bytes = 4096,
                      .reads = 100,
                      .writes = 50,
                      .read_bytes = 400,
                      .write_bytes = 200},
      ScopeBegin{.name = s, .thread = 77, .depth = 2, .time_ns = 14},
      ScopeEnd{.name = s, .thread = 77, .depth = 2, .time_ns = 15},
      OpBegin{.id = 21,
              .parent = 20,
              .sequence = -5,
              .name = op,
              .inputs = s,
              .thread = 78,
              .depth = 1,
              .time_ns = 16,
              .module = s,
              .source = op,
              .backward = 1},
      OpEnd{.id = 21, .name = op, .thread = 78, .depth = 1, .time_ns = 17},
      TensorAlloc{.address = 0x2000,
                  .bytes = 512,
                  .device = 1,
                  .total_allocated = 1024,
                  .total_reserved = 2048,
                  .time_ns = 18,
                  .op = 21,
                  .thread = 78},
      TensorFree{.address = 0x2000,
                 .bytes = 512,
                 .device = 1,
                 .total_allocated = 512,
                 .total_reserved = 2048,
                 .time_ns = 19},
      KernelCounters{.correlation = 42,
                     .device = 1,
                     .passes = 9,
                     .dram_bytes_read = 1048576,
                     .dram_bytes_write = 524288,
                     .dram_throughput_pct = 87.25,
                     .l2_hit_rate_pct = 0.5,
                     .flops = 3.0e12},
      StallSample{.function = s, .pc = 0x370, .reason = op, .samples = 42, .device = 1},
      TensorView{.address = 0x2008,
                 .bytes = 84,
                 .base = 0x2000,
                 .base_bytes = 512,
                 .layout = s,
                 .element_bytes = 4,
                 .device = 1,
                 .op = 21,
                 .thread = 78},
      FusedKernel{.op = 22, .kernel = s, .source = op, .fused = op, .graph = s},
      PcAccessCount{.correlation = 11,
                    .address = 0x2010,
                    .pc = 0x1f0,
                    .count = 4096,
                    .bytes = 65536,
                    .device = 1,
                    .flags = access::read,
                    .space = MemSpace::global},
      ModuleCall{.module = s,
                 .parent = op,
                 .class_name = op,
                 .source = s,
                 .thread = 78,
                 .depth = 3,
                 .begin_ns = 20,
                 .end_ns = 21},
  };
}

std::string as_text(const test::AnyEvent& e) {
  return std::visit([](const auto& x) { return trace::to_text(x); }, e);
}

void write_trace(const std::string& path, const std::vector<test::AnyEvent>& events,
                 std::size_t copies = 1) {
  TraceWriter w;
  REQUIRE(w.open(path, {{"purpose", "test"}}).empty());
  for (std::size_t i = 0; i < copies; ++i)
    for (const auto& e : events) std::visit([&](const auto& x) { w.write(x); }, e);
  w.close();
  REQUIRE_FALSE(w.failed());
}

std::vector<std::string> read_trace(const std::string& path) {
  TraceReader r(path);
  std::vector<std::string> out;
  r.read_all([&](const auto& e) { out.push_back(trace::to_text(e)); });
  return out;
}

std::string bytes_of(const std::string& path) { return detail::read_file(path); }

void put_bytes(const std::string& path, const std::string& bytes) {
  REQUIRE(detail::write_file(path, bytes).empty());
}

// What reading `path` throws; fails the test if it reads cleanly.
TraceError read_error(const std::string& path) {
  try {
    read_trace(path);
  } catch (const TraceError& e) {
    return e;
  }
  FAIL("the damaged trace was read without an error");
  return TraceError(TraceError::Kind::io, 0, "");
}

}  // namespace

TEST_CASE("every event type survives a write and a read, names included") {
  test::TempDir dir;
  const auto events = every_event();
  write_trace(dir.file("t.pasta"), events);
  std::vector<std::string> expected;
  for (const auto& e : events) expected.push_back(as_text(e));
  CHECK(read_trace(dir.file("t.pasta")) == expected);
  CHECK(expected[1] ==
        "KernelLaunch correlation=11 context=2 stream=3 device=1 name=\"_Z6kernelPf\" "
        "grid=(4,5,6) block=(32,2,1) shared_mem_bytes=1024 thread=77 time_ns=123456789");
}

TEST_CASE("the header carries the format version, the schema and the metadata") {
  test::TempDir dir;
  write_trace(dir.file("t.pasta"), every_event());
  TraceReader r(dir.file("t.pasta"));
  CHECK(r.major_version() == 1);
  CHECK(r.minor_version() == 8);
  CHECK(r.metadata() == trace::Metadata{{"purpose", "test"}});
  REQUIRE(r.schema().size() == 23);
  const auto& launch = r.schema()[1];
  CHECK(launch.name == "KernelLaunch");
  CHECK(launch.payload_bytes == 8 + 8 + 8 + 4 + 4 + 12 + 12 + 4 + 4 + 8);
  CHECK(launch.fields[5].name == "grid.x");
  CHECK(launch.fields[5].type == trace::FieldType::u32);
  CHECK(launch.fields[4].type == trace::FieldType::name);
}

TEST_CASE("names are remapped into the reading process's table") {
  test::TempDir dir;
  {
    TraceWriter w;
    REQUIRE(w.open(dir.file("t.pasta"), {}).empty());
    w.write(test::launch(1, "only_in_the_file_xyz"));
  }
  // The reader interns what the file defines, whatever id it had there.
  std::vector<KernelLaunch> got;
  TraceReader r(dir.file("t.pasta"));
  r.read_all([&](const auto& e) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, KernelLaunch>) got.push_back(e);
  });
  REQUIRE(got.size() == 1);
  CHECK(name_of(got[0].name) == "only_in_the_file_xyz");
  CHECK(got[0].name == intern("only_in_the_file_xyz"));
}

TEST_CASE("large traces span many blocks and read back in order") {
  test::TempDir dir;
  {
    TraceWriter w;
    REQUIRE(w.open(dir.file("big.pasta"), {}).empty());
    for (std::uint64_t i = 0; i < 100000; ++i)
      w.write(MemAccess{.correlation = i / 1000, .address = i * 4, .bytes = 4});
    CHECK(w.events() + w.buffered() == 100000);
  }
  TraceReader r(dir.file("big.pasta"));
  std::uint64_t n = 0, blocks = 0;
  bool ordered = true;
  while (r.next_block([&](const auto& e) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, MemAccess>)
      ordered = ordered && e.address == n * 4;
    ++n;
  }))
    ++blocks;
  CHECK(n == 100000);
  CHECK(ordered);
  // The writer closes a block once it reaches trace::target_block_payload bytes.
  constexpr std::uint64_t record = 2 + trace::payload_bytes<MemAccess>;
  constexpr std::uint64_t per_block = (trace::target_block_payload + record - 1) / record;
  CHECK(blocks == (100000 + per_block - 1) / per_block);
  CHECK(r.complete());
}

TEST_CASE("a reader can skip event types it does not want without decoding them") {
  test::TempDir dir;
  write_trace(dir.file("t.pasta"), every_event(), 3);
  TraceReader r(dir.file("t.pasta"));
  int launches = 0, others = 0;
  while (r.next_block(
      [&](const auto& e) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, KernelLaunch>)
          ++launches;
        else
          ++others;
      },
      [](EventKind k) { return k == EventKind::kernel_launch; })) {
  }
  CHECK(launches == 3);
  CHECK(others == 0);
}

// --- damaged files --------------------------------------------------------------

TEST_CASE("a trace cut off at any byte gives an error with an offset, never a crash") {
  test::TempDir dir;
  write_trace(dir.file("whole.pasta"), every_event());
  const std::string whole = bytes_of(dir.file("whole.pasta"));
  const std::size_t header = [&] {
    std::uint32_t h;
    std::memcpy(&h, whole.data() + 12, 4);
    return h;
  }();
  for (std::size_t len = 0; len < whole.size(); ++len) {
    CAPTURE(len);
    put_bytes(dir.file("cut.pasta"), whole.substr(0, len));
    const TraceError e = read_error(dir.file("cut.pasta"));
    CHECK(e.offset() <= len);
    if (len < 8)
      CHECK(e.kind() == TraceError::Kind::not_a_trace);
    else
      CHECK(e.kind() == TraceError::Kind::truncated);
    if (len == header)
      CHECK(std::string(e.what()) ==
            "byte " + std::to_string(header) +
                ": the trace ends without its end marker after 0 events: the recording was cut "
                "off");
  }
}

TEST_CASE("events before the cut are delivered, then the error") {
  test::TempDir dir;
  write_trace(dir.file("whole.pasta"), every_event(), 2000);  // several blocks
  const std::string whole = bytes_of(dir.file("whole.pasta"));
  put_bytes(dir.file("cut.pasta"), whole.substr(0, whole.size() * 2 / 3));
  TraceReader r(dir.file("cut.pasta"));
  std::uint64_t seen = 0;
  CHECK_THROWS_AS(r.read_all([&](const auto&) { ++seen; }), TraceError);
  CHECK(seen > 0);
  CHECK(seen == r.events());
  CHECK(seen < 17 * 2000);
}

TEST_CASE("flipping any single bit is detected") {
  test::TempDir dir;
  write_trace(dir.file("whole.pasta"), every_event());
  const std::string whole = bytes_of(dir.file("whole.pasta"));
  for (std::size_t i = 0; i < whole.size(); ++i) {
    for (int bit : {0, 5}) {
      CAPTURE(i);
      CAPTURE(bit);
      std::string damaged = whole;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      put_bytes(dir.file("flip.pasta"), damaged);
      const TraceError e = read_error(dir.file("flip.pasta"));
      CHECK(e.offset() <= whole.size());
    }
  }
}

TEST_CASE("specific damage gives specific messages") {
  test::TempDir dir;
  write_trace(dir.file("whole.pasta"), every_event());
  const std::string whole = bytes_of(dir.file("whole.pasta"));
  std::uint32_t header;
  std::memcpy(&header, whole.data() + 12, 4);

  SUBCASE("not a trace at all") {
    put_bytes(dir.file("x.pasta"), "hello, world, this is not a trace");
    CHECK(std::string(read_error(dir.file("x.pasta")).what()) ==
          "byte 0: not a pasta trace (no PASTATRC magic)");
  }
  SUBCASE("a newer major version") {
    std::string v2 = whole;
    v2[8] = 2;
    v2[10] = 0;  // minor 0
    put_bytes(dir.file("v2.pasta"), v2);
    const auto e = read_error(dir.file("v2.pasta"));
    CHECK(e.kind() == TraceError::Kind::version);
    CHECK(std::string(e.what()) ==
          "byte 8: trace format 2.0 is not supported; this build reads 1.x");
  }
  SUBCASE("a damaged block") {
    std::string bad = whole;
    bad[header + 16 + 3] ^= 0x40;  // inside the first block's payload
    put_bytes(dir.file("b.pasta"), bad);
    const auto e = read_error(dir.file("b.pasta"));
    CHECK(e.kind() == TraceError::Kind::corrupt);
    CHECK(std::string(e.what()) ==
          "byte " + std::to_string(header) + ": block checksum mismatch: the block is damaged");
  }
  SUBCASE("bytes after the end marker") {
    put_bytes(dir.file("tail.pasta"), whole + "junk");
    CHECK(std::string(read_error(dir.file("tail.pasta")).what()) ==
          "byte " + std::to_string(whole.size()) + ": 4 bytes follow the end marker");
  }
  SUBCASE("a file that does not exist") {
    const auto e = read_error(dir.file("missing.pasta"));
    CHECK(e.kind() == TraceError::Kind::io);
    CHECK(std::string(e.what()) == "byte 0: cannot open: No such file or directory");
  }
}

// Another pasta version's schema, made by editing this build's header and
// fixing its checksum.
static std::string with_header_edit(const std::string& whole, std::string_view field, int delta,
                                    bool type_byte) {
  std::string other = whole;
  std::uint32_t header;
  std::memcpy(&header, other.data() + 12, 4);
  const auto at = other.find(field);
  REQUIRE(at < header);
  if (type_byte)
    other[at + field.size()] = static_cast<char>(other[at + field.size()] + delta);
  else
    other[at] = static_cast<char>(other[at] + delta);
  std::memset(other.data() + 16, 0, 4);
  const std::uint32_t crc = trace::crc32(other.data(), header);
  std::memcpy(other.data() + 16, &crc, 4);
  return other;
}

TEST_CASE("a trace with other fields is read by name, a changed field type is a version error") {
  test::TempDir dir;
  write_trace(dir.file("whole.pasta"), every_event());
  const std::string whole = bytes_of(dir.file("whole.pasta"));
  SUBCASE("a field this build does not know is skipped, one it lacks keeps its default") {
    // KernelLaunch's first field renamed: as if written by a version that
    // had "dorrelation" instead of "correlation".
    put_bytes(dir.file("other.pasta"), with_header_edit(whole, "correlation", 1, false));
    std::vector<KernelLaunch> launches;
    std::vector<KernelComplete> completes;
    TraceReader r(dir.file("other.pasta"));
    r.read_all([&](const auto& e) {
      using E = std::remove_cvref_t<decltype(e)>;
      if constexpr (std::is_same_v<E, KernelLaunch>) launches.push_back(e);
      if constexpr (std::is_same_v<E, KernelComplete>) completes.push_back(e);
    });
    REQUIRE(launches.size() == 1);
    REQUIRE(completes.size() == 1);
    KernelLaunch expected = std::get<KernelLaunch>(every_event()[1]);
    CHECK(launches[0].correlation == 0);
    CHECK(launches[0].stream == expected.stream);
    CHECK(launches[0].grid == expected.grid);
    CHECK(launches[0].time_ns == expected.time_ns);
    CHECK(completes[0].correlation == std::get<KernelComplete>(every_event()[2]).correlation);
  }
  SUBCASE("a field whose type changed") {
    // The type byte after "correlation" (u64 = 4) becomes u32 (3).
    put_bytes(dir.file("other.pasta"), with_header_edit(whole, "correlation", -1, true));
    const auto e = read_error(dir.file("other.pasta"));
    CHECK(e.kind() == TraceError::Kind::version);
    CHECK(std::string(e.what()).ends_with(
        "event KernelLaunch (kind 2) is laid out differently in this trace (field correlation "
        "has another type): it was written by another pasta version"));
  }
}

TEST_CASE("a writer that cannot write says so once and counts what it lost") {
  test::CapturedLog log;
  TraceWriter w;
  REQUIRE(w.open("/dev/full", {}).empty());  // opening works; every write fails
  for (int i = 0; i < 50000; ++i) w.write(MemAccess{.address = std::uint64_t(i)});
  w.close();
  CHECK(w.failed());
  CHECK(w.events() == 0);
  CHECK(w.dropped() == 50000);
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0].starts_with("writing trace /dev/full failed (No space left on device)"));
}

TEST_CASE("a writer that cannot create its file says why") {
  TraceWriter w;
  CHECK(w.open("/nonexistent-dir/t.pasta", {}) ==
        "cannot create /nonexistent-dir/t.pasta: No such file or directory");
  w.write(test::launch(1, "k"));
  CHECK(w.dropped() == 1);
}
