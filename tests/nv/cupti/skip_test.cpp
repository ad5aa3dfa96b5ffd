// PASTA_CUPTI_SKIP's list (nv::detail::parse_cupti_skip): the record kinds
// nv::Cupti leaves off.
#include <doctest/doctest.h>

#include <pasta/nv/cupti/detail/skip.hpp>

using namespace pasta::nv::detail;

TEST_CASE("PASTA_CUPTI_SKIP unset or empty leaves every record kind on") {
  CHECK(parse_cupti_skip(nullptr) == 0);
  CHECK(parse_cupti_skip("") == 0);
}

TEST_CASE("PASTA_CUPTI_SKIP names record kinds, comma-separated") {
  CHECK(parse_cupti_skip("memcpy") == skip_memcpy);
  CHECK(parse_cupti_skip("memset,sync,nvtx") == (skip_memset | skip_sync | skip_nvtx));
  CHECK(parse_cupti_skip("memory,device,memory") == (skip_memory | skip_device));
}

TEST_CASE("PASTA_CUPTI_SKIP: a name that is no record kind is ignored, the rest kept") {
  CHECK(parse_cupti_skip("memcpy,kernels,sync") == (skip_memcpy | skip_sync));
  CHECK(parse_cupti_skip("Memcpy") == 0);  // names are lower case
  CHECK(parse_cupti_skip("memcpy,") == skip_memcpy);
}

TEST_CASE("PASTA_CUPTI_SKIP=graphs leaves the CUDA graph callbacks off") {
  CHECK(parse_cupti_skip("graphs") == skip_graphs);
  CHECK(parse_cupti_skip("nvtx,graphs") == (skip_nvtx | skip_graphs));
}
