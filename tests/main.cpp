// The tests' main: doctest's, and a run that was given a --test-case filter
// fails when the filter matched no test case. ctest runs each case in a
// process of its own by name (doctest_discover_tests), and a name CMake
// cannot carry (one with a ';' splits in two there) would otherwise run
// nothing and pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

int matched = -1;  // test cases that passed the filters, at the run's end

struct Matched : doctest::IReporter {
  explicit Matched(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override {
    matched = static_cast<int>(s.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("matched", 1, Matched);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (failed || context.shouldExit()) return failed;
  const char* filter = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg.substr(0, 12) == "--test-case=" || arg.substr(0, 4) == "-tc=") filter = argv[i];
  }
  if (filter && matched == 0) {
    std::fprintf(stderr, "no test case matches %s: nothing ran\n", filter);
    return 1;
  }
  return 0;
}
