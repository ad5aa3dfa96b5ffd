// Where nv::Sanitizer looks for the Compute Sanitizer API
// (nv::detail::sanitizer_library_candidates), on environments and loaded
// libraries written out by hand, and what loading says when nothing loads.
#include <doctest/doctest.h>

#include <pasta/nv/sanitizer/detail/api.hpp>

#include <map>
#include <string>
#include <vector>

using pasta::nv::detail::load_sanitizer_api;
using pasta::nv::detail::sanitizer_library_candidates;

namespace {

using Env = std::map<std::string, std::string>;

std::vector<std::string> candidates(const Env& env, const std::vector<std::string>& loaded,
                                    std::string_view hint = "") {
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const char* wanted = getenv("PASTA_SANITIZER_LIB");  // what SanitizerSettings::library holds
  return sanitizer_library_candidates(wanted ? wanted : "", getenv, loaded, hint);
}

const std::string lib = "libsanitizer-public.so";
const std::string usr_local = "/usr/local/cuda/compute-sanitizer/" + lib;

}  // namespace

TEST_CASE("with nothing set, the loader's own search and then /usr/local/cuda") {
  CHECK(candidates({}, {}) == std::vector<std::string>{lib, usr_local});
}

TEST_CASE("PASTA_SANITIZER_LIB first, then CUDA_HOME and CUDA_PATH, then the compile-time hint") {
  const Env env{{"PASTA_SANITIZER_LIB", "/opt/san/libsanitizer-public.so"},
                {"CUDA_HOME", "/opt/cuda-13.0/"},
                {"CUDA_PATH", "/opt/cuda-b"}};
  CHECK(candidates(env, {}, "/build/site-packages/nvidia/cu13/lib") ==
        std::vector<std::string>{"/opt/san/libsanitizer-public.so", lib,
                                 "/opt/cuda-13.0/compute-sanitizer/" + lib,
                                 "/opt/cuda-b/compute-sanitizer/" + lib, usr_local,
                                 "/build/site-packages/nvidia/cu13/lib/" + lib});
}

TEST_CASE("empty variables count as unset, and a place named twice is tried once") {
  const Env env{{"PASTA_SANITIZER_LIB", ""}, {"CUDA_HOME", "/usr/local/cuda"}, {"CUDA_PATH", ""}};
  CHECK(candidates(env, {}, "/usr/local/cuda/compute-sanitizer") ==
        std::vector<std::string>{lib, usr_local});
}

TEST_CASE("beside a CUDA library from a wheel, the way PyTorch loads them") {
  const std::string wheel = "/venv/lib/python3.12/site-packages/nvidia/cu13/lib";
  const std::vector<std::string> loaded{"/lib/x86_64-linux-gnu/libc.so.6",
                                        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                        "/venv/lib/python3.12/site-packages/torch/lib/libtorch.so",
                                        wheel + "/libcudart.so.13",
                                        wheel + "/libcupti.so.13",
                                        "linux-vdso.so.1"};
  // The driver's folder, torch's own and libc's are not CUDA toolkit folders.
  CHECK(candidates({}, loaded) ==
        std::vector<std::string>{
            lib, usr_local, wheel + "/" + lib,
            "/venv/lib/python3.12/site-packages/nvidia/cu13/compute-sanitizer/" + lib});
}

TEST_CASE("from a toolkit's library folder, its compute-sanitizer folder") {
  SUBCASE("lib64") {
    CHECK(candidates({}, {"/opt/cuda/lib64/libcudart.so.13"}) ==
          std::vector<std::string>{lib, usr_local, "/opt/cuda/lib64/" + lib,
                                   "/opt/cuda/compute-sanitizer/" + lib});
  }
  SUBCASE("targets/<arch>/lib") {
    CHECK(candidates({}, {"/opt/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13"}) ==
          std::vector<std::string>{lib, usr_local, "/opt/cuda-13.0/targets/x86_64-linux/lib/" + lib,
                                   "/opt/cuda-13.0/compute-sanitizer/" + lib});
  }
  SUBCASE("CUPTI's own folder") {
    CHECK(candidates({}, {"/opt/cuda/extras/CUPTI/lib64/libcupti.so.13"}) ==
          std::vector<std::string>{lib, usr_local, "/opt/cuda/extras/CUPTI/lib64/" + lib,
                                   "/opt/cuda/compute-sanitizer/" + lib});
  }
}

TEST_CASE("nothing loads: one line naming every place tried and how to fix it") {
  const std::vector<std::string> tried{"/nonexistent/" + lib, "/also/not/here/" + lib};
  const auto api = load_sanitizer_api(tried);
  CHECK_FALSE(api.loaded());
  CHECK_FALSE(bool(api.sanitizerSubscribe));
  CHECK(api.failed == tried);
  // The wheel's version is the CUDA headers' own (13.0 for CUDA 13.0).
  CHECK(api.error ==
        fmt::format("the Compute Sanitizer API did not load, so nv::Sanitizer records nothing and "
                    "the program runs unprofiled; tried /nonexistent/libsanitizer-public.so, "
                    "/also/not/here/libsanitizer-public.so. Install the CUDA toolkit's "
                    "compute-sanitizer or `pip install nvidia-cuda-sanitizer-api=={}.{}.*`, or set "
                    "PASTA_SANITIZER_LIB to the full path of libsanitizer-public.so",
                    CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
  CHECK(api.error.find('\n') == std::string::npos);
}

TEST_CASE("a file that is there but is not the library says why it did not load") {
  const auto api = load_sanitizer_api(std::vector<std::string>{PASTA_TEST_NOT_A_LIBRARY});
  REQUIRE(api.failed.size() == 1);
  CHECK(api.failed[0].starts_with(PASTA_TEST_NOT_A_LIBRARY " ("));
}

TEST_CASE("the library CMake found has every function pasta calls") {
  if (std::string_view(PASTA_SANITIZER_HINT_DIR).empty()) {
    MESSAGE("CMake found the Sanitizer API's headers but not its library: not checked");
    return;
  }
  const std::string found = std::string(PASTA_SANITIZER_HINT_DIR) + "/" + lib;
  const auto api = load_sanitizer_api(std::vector<std::string>{"/nonexistent/" + lib, found});
  CHECK(api.library == found);
  CHECK(api.failed == std::vector<std::string>{"/nonexistent/" + lib});
  CHECK(api.loaded());  // only with every function found
  CHECK(bool(api.sanitizerSubscribe));
  CHECK(api.error.empty());
}
