#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <pasta/core/detail/demangle.hpp>
#include <pasta/core/report_writer.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {
Report sample() {
  Report r("demo");
  r.summary("kernels", 2);
  r.summary("device time (ms)", 1.5);
  auto& t = r.table("kernels", "Launches per kernel", {"kernel", "launches", "mean_us"});
  t.precision(2, 1);
  t.row("vectorAdd", 10, 2.25);
  t.row("gemm, tiled \"v2\"", 3, 100.0);
  t.row("reduce", 1, 0.5);
  r.note("note: times are device times");
  return r;
}
}  // namespace

TEST_CASE("a report renders as an aligned text table, numbers right-aligned") {
  const std::string text = detail::render_text(sample(), 20);
  CHECK(text ==
        "== pasta demo ==\n"
        "  kernels: 2\n"
        "  device time (ms): 1.500\n"
        "\n"
        "Launches per kernel\n"
        "  kernel           launches mean_us\n"
        "  vectorAdd              10     2.2\n"
        "  gemm, tiled \"v2\"        3   100.0\n"
        "  reduce                  1     0.5\n"
        "\n"
        "note: times are device times\n");
}

TEST_CASE("text tables show the top rows only and say so") {
  const std::string text = detail::render_text(sample(), 2);
  CHECK(text.find("Launches per kernel (top 2 of 3)\n") != std::string::npos);
  CHECK(text.find("reduce") == std::string::npos);
}

TEST_CASE("long cells are clipped in text, kept whole in files") {
  Report r("clip");
  const std::string longname(100, 'k');
  r.table("t", "T", {"name"}).row(longname);
  const std::string text = detail::render_text(r, 20);
  CHECK(text.find(std::string(34, 'k') + "..." + std::string(34, 'k')) != std::string::npos);
  CHECK(detail::to_csv(r.tables()[0]) == "name\n" + longname + "\n");
}

TEST_CASE("CSV quotes fields with commas and quotes and keeps full precision") {
  const Report r = sample();
  CHECK(detail::to_csv(r.tables()[0]) ==
        "kernel,launches,mean_us\n"
        "vectorAdd,10,2.250000000\n"
        "\"gemm, tiled \"\"v2\"\"\",3,100.000000000\n"
        "reduce,1,0.500000000\n");
}

TEST_CASE("JSON holds the summary, every table row as an object, and the notes") {
  const auto j = detail::to_json(sample());
  CHECK(j["tool"] == "demo");
  CHECK(j["summary"]["kernels"] == 2);
  CHECK(j["summary"]["device time (ms)"] == 1.5);
  REQUIRE(j["tables"]["kernels"].size() == 3);
  CHECK(j["tables"]["kernels"][1]["kernel"] == "gemm, tiled \"v2\"");
  CHECK(j["tables"]["kernels"][1]["launches"] == 3);
  CHECK(j["tables"]["kernels"][0]["mean_us"] == 2.25);
  CHECK(j["notes"][0] == "note: times are device times");
  CHECK_FALSE(j.contains("partial"));
}

TEST_CASE("a partial report says so in text and JSON") {
  Report r = sample();
  r.mark_partial("trace cut off at byte 4096");
  CHECK(detail::render_text(r, 20).find("PARTIAL REPORT: trace cut off at byte 4096\n") !=
        std::string::npos);
  CHECK(detail::to_json(r)["partial"] == "trace cut off at byte 4096");
}

TEST_CASE("a tool's hints for the report page are in its JSON, and only what it said") {
  Report r = sample();
  CHECK_FALSE(detail::to_json(r).contains("page"));
  r.page(35).nothing("no kernels").tables({"kernels"});
  const auto j = detail::to_json(r);
  CHECK(j["page"] == nlohmann::json{{"order", 35}, {"nothing", "no kernels"},
                                    {"tables", {"kernels"}}});
  // The text report is the same with or without them.
  CHECK(detail::render_text(r, 20) == detail::render_text(sample(), 20));
}

TEST_CASE("write_report writes text, JSON and one CSV per table") {
  test::TempDir dir;
  Config cfg;
  cfg.output_dir = dir.file("out/nested");
  cfg.print = PrintTo::none;
  const auto files = detail::write_report(sample(), cfg);
  CHECK(files == std::vector<std::string>{dir.file("out/nested/demo.txt"),
                                          dir.file("out/nested/demo.json"),
                                          dir.file("out/nested/demo.kernels.csv")});
  CHECK(detail::read_file(dir.file("out/nested/demo.txt")) == detail::render_text(sample(), 20));
  const auto j = nlohmann::json::parse(detail::read_file(dir.file("out/nested/demo.json")));
  CHECK(j["tables"]["kernels"][2]["kernel"] == "reduce");

  SUBCASE("formats select the files") {
    cfg.formats = format::csv;
    CHECK(detail::write_report(sample(), cfg) ==
          std::vector<std::string>{dir.file("out/nested/demo.kernels.csv")});
  }
}

TEST_CASE("an unwritable output directory gives one log line and no files") {
  test::TempDir dir;
  test::CapturedLog log;
  Config cfg;
  cfg.print = PrintTo::none;
  // A path under a regular file is unwritable for every user, root included.
  REQUIRE(detail::write_file(dir.file("plain"), "x").empty());
  cfg.output_dir = dir.file("plain/reports");
  CHECK(detail::write_report(sample(), cfg).empty());
  CHECK(detail::write_report(sample(), cfg).empty());
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0].starts_with("cannot write reports to '" + cfg.output_dir + "' ("));
  CHECK(
      log.lines()[0].ends_with("); set PASTA_OUTPUT_DIR to a writable directory. Text reports "
                               "still go to stderr"));
}

TEST_CASE("a files-only column is in CSV and JSON but not in the text table") {
  Report r("hidden");
  auto& t = r.table("t", "T", {"short", "long"});
  t.files_only(1);
  t.row("gemm", "void gemm<float>(float const*, int)");
  const std::string text = detail::render_text(r, 20);
  CHECK(text.find("gemm") != std::string::npos);
  CHECK(text.find("float const*") == std::string::npos);
  CHECK(detail::to_csv(r.tables()[0]).find("float const*") != std::string::npos);
  CHECK(detail::to_json(r)["tables"]["t"][0]["long"] == "void gemm<float>(float const*, int)");
}

TEST_CASE("kernel names shorten to the function and its template arguments") {
  CHECK(detail::short_kernel_name("void gemm<float, 128>(float const*, int)") ==
        "gemm<float, 128>");
  CHECK(detail::short_kernel_name("saxpy(float, float const*, float*, int)") == "saxpy");
  CHECK(detail::short_kernel_name(
            "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<"
            "at::native::FillFunctor<float> >(at::TensorIteratorBase&, "
            "at::native::FillFunctor<float> const&)::{lambda(int)#1}>(int, "
            "at::native::gpu_kernel_impl<at::native::FillFunctor<float> >(at::TensorIteratorBase&, "
            "at::native::FillFunctor<float> const&)::{lambda(int)#1})") ==
        "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<"
        "at::native::FillFunctor<float> >(at::TensorIteratorBase&, "
        "at::native::FillFunctor<float> const&)::{lambda(int)#1}>");
  CHECK(detail::short_kernel_name("sm90_xmma_gemm_kernel") == "sm90_xmma_gemm_kernel");
}

TEST_CASE("the console's form leaves out tables with no rows, a tool with nothing is one line") {
  Report r("mixed");
  r.summary("kernels", 2);
  r.table("empty", "Nothing here", {"a"});
  r.table("full", "Something", {"a"}).row(1);
  const std::string console = detail::render_text(r, 20, true);
  CHECK(console.find("Nothing here") == std::string::npos);
  CHECK(console.find("Something") != std::string::npos);
  CHECK(detail::render_text(r, 20).find("Nothing here") != std::string::npos);  // the file's form

  Report none("mem_hotness");
  none.summary("accesses", 0);
  none.table("pages", "Pages", {"page"});
  none.table("kernels", "Kernels", {"kernel"});
  CHECK(detail::render_text(none, 20, true) == "== pasta mem_hotness: nothing recorded\n");
  none.mark_partial("the trace was cut off");
  CHECK(detail::render_text(none, 20, true) ==
        "== pasta mem_hotness: nothing recorded (partial: the trace was cut off)\n");
}

TEST_CASE("the console shows a tool's first table, ten rows at most, and names the others") {
  Report r("many");
  auto& first = r.table("first", "First", {"n"});
  for (int i = 0; i < 15; ++i) first.row(i);
  r.table("second", "Second", {"n"}).row(1);
  r.table("third", "Third", {"n"}).row(2);
  const std::string console = detail::render_text(r, 20, true);
  CHECK(console.find("First (top 10 of 15)") != std::string::npos);
  CHECK(console.find("Second\n") == std::string::npos);
  CHECK(console.find("  (and 2 more tables in many.txt: second, third)\n") != std::string::npos);
  CHECK(detail::render_text(r, 20).find("Second\n") != std::string::npos);  // the file's form
}
