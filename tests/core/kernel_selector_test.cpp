#include <doctest/doctest.h>

#include <pasta/core/kernel_selector.hpp>

using namespace pasta;

TEST_CASE("without settings every launch is selected") {
  KernelSelector s(Config{});
  CHECK_FALSE(s.filtering());
  for (int i = 0; i < 5; ++i) CHECK(s.select(intern("any")));
  CHECK_FALSE(s.done());
}

TEST_CASE("the filter is searched in the demangled and the mangled name") {
  Config c;
  c.kernel_filter = "^void gemm<";
  KernelSelector s(c);
  CHECK(s.matches(intern("_Z4gemmIfEvPT_")));  // void gemm<float>(float*)
  CHECK_FALSE(s.matches(intern("_Z6reducePf")));
  c.kernel_filter = "_Z6red";
  KernelSelector raw(c);
  CHECK(raw.matches(intern("_Z6reducePf")));
  CHECK_FALSE(raw.matches(intern("vectorAdd")));
}

TEST_CASE("skip and count apply to matching launches, in order") {
  Config c;
  c.kernel_filter = "gemm";
  c.launch_skip = 2;
  c.launch_count = 3;
  KernelSelector s(c);
  const NameId gemm = intern("gemm"), other = intern("other");
  std::string picked;
  for (int i = 0; i < 8; ++i) {
    picked += s.select(gemm) ? 'G' : 'g';
    picked += s.select(other) ? 'O' : 'o';
  }
  CHECK(picked == "gogoGoGoGogogogo");
  CHECK(s.done());
}

TEST_CASE("a filter that does not compile selects nothing") {
  Config c;
  c.kernel_filter = "(";
  KernelSelector s(c);
  CHECK_FALSE(s.select(intern("gemm")));
}

TEST_CASE("filters that would blow up the regex engine are refused, not compiled") {
  // Found by fuzzing: glibc's regcomp doubles its memory with each stacked
  // quantifier (25 '+' took 6 GB) and each level of nested repetition.
  const std::string stacked = "gemm" + std::string(30, '+');
  std::string nested = "a";
  for (int i = 0; i < 16; ++i) nested = "(" + nested + ")+";
  for (const std::string& bad : {stacked, nested, std::string("a{1,100}{1,100}"),
                                 std::string("(a{1,100}){1,100}"), std::string(5000, 'a')}) {
    const detail::Regex re(bad);
    CHECK_FALSE(re.valid());
    CHECK_FALSE(re.error().empty());
  }
  CHECK(detail::Regex(stacked).error().starts_with("a repetition follows another at offset 5"));
  for (const char* good : {"gemm|conv", "^sm90_.*_tilesize(128|64)x", "a{1,100}", "[+*]{2}",
                           "\\\\+\\\\+", "((a+)b)+", "(a{1,30}){1,30}", "[[:alpha:]]+_kernel"}) {
    INFO(good);
    CHECK(detail::Regex(good).valid());
  }
}
