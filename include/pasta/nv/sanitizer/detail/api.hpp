// The Compute Sanitizer API functions nv::Sanitizer calls, looked up once at
// run time in libsanitizer-public.so rather than linked: a binary built on
// one machine finds the library wherever the machine it runs on keeps it,
// and runs on unprofiled where there is none. Loading only.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <sanitizer.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>  // detail::join

// The folder where CMake found the library when the program was configured
// (pasta::sanitizer defines it): the last place looked, which serves a
// program run on the machine that built it.
#ifndef PASTA_SANITIZER_HINT_DIR
#define PASTA_SANITIZER_HINT_DIR ""
#endif

// Every Sanitizer API function pasta calls; SanitizerApi has a pointer for each.
#define PASTA_SANITIZER_FUNCTIONS(X)  \
  X(sanitizerAddPatches)              \
  X(sanitizerAlloc)                   \
  X(sanitizerAllocHost)               \
  X(sanitizerEnableCallback)          \
  X(sanitizerEnableDomain)            \
  X(sanitizerFree)                    \
  X(sanitizerFreeHost)                \
  X(sanitizerGetFunctionPcAndSize)    \
  X(sanitizerGetResultString)         \
  X(sanitizerMemcpyDeviceToHost)      \
  X(sanitizerMemcpyHostToDeviceAsync) \
  X(sanitizerMemset)                  \
  X(sanitizerPatchInstructions)       \
  X(sanitizerPatchModule)             \
  X(sanitizerSetLaunchCallbackData)   \
  X(sanitizerStreamSynchronize)       \
  X(sanitizerSubscribe)               \
  X(sanitizerUnsubscribe)

namespace pasta::nv::detail {

inline constexpr std::string_view sanitizer_library = "libsanitizer-public.so";

// CUDA libraries whose folder may hold the Sanitizer API as well: a wheel's
// nvidia/cuXX/lib/ (PyTorch loads its libcudart and libcupti from there, and
// nvidia-cuda-sanitizer-api installs into it), or a toolkit's.
inline constexpr std::string_view cuda_library_prefixes[] = {"libcudart", "libcupti", "libnvrtc",
                                                             "libnvJitLink", "libcublas"};

// The toolkit above a folder of its libraries (lib64, lib, targets/<arch>/lib
// or extras/CUPTI/lib64), where compute-sanitizer/ sits; empty for another folder.
inline std::filesystem::path toolkit_root(const std::filesystem::path& libdir) {
  if (libdir.filename() != "lib64" && libdir.filename() != "lib") return {};
  const std::filesystem::path up = libdir.parent_path();
  if (up.parent_path().filename() == "targets") return up.parent_path().parent_path();
  if (up.filename() == "CUPTI" && up.parent_path().filename() == "extras")
    return up.parent_path().parent_path();
  return up;
}

// Where to look for the library, in order: `wanted` (a full path:
// SanitizerSettings::library, PASTA_SANITIZER_LIB); the bare name, which the dynamic loader looks up (LD_LIBRARY_PATH,
// the program's RUNPATH, ld.so.cache); compute-sanitizer/ under $CUDA_HOME,
// $CUDA_PATH and /usr/local/cuda; beside each CUDA library in `loaded` (the
// paths of the libraries the process has loaded) and in its toolkit's
// compute-sanitizer/; and last `hint_dir`. `getenv` is called as std::getenv.
template <class Getenv>
std::vector<std::string> sanitizer_library_candidates(
    std::string_view wanted, Getenv&& getenv, std::span<const std::string> loaded,
    std::string_view hint_dir = PASTA_SANITIZER_HINT_DIR) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  auto add = [&](const fs::path& path) {
    std::string p = path.lexically_normal().string();
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  auto in = [&](const fs::path& dir) { add(dir / sanitizer_library); };
  auto variable = [&](const char* name) -> std::string_view {
    const char* value = getenv(name);
    return value ? value : "";
  };
  if (!wanted.empty()) add(wanted);
  add(sanitizer_library);
  for (const char* root : {"CUDA_HOME", "CUDA_PATH"})
    if (const auto dir = variable(root); !dir.empty()) in(fs::path(dir) / "compute-sanitizer");
  in("/usr/local/cuda/compute-sanitizer");
  for (const fs::path lib : loaded) {
    const std::string name = lib.filename().string();
    const bool cuda =
        std::any_of(std::begin(cuda_library_prefixes), std::end(cuda_library_prefixes),
                    [&](std::string_view p) { return name.starts_with(p); });
    if (!cuda || !lib.has_parent_path()) continue;
    in(lib.parent_path());
    if (const fs::path root = toolkit_root(lib.parent_path()); !root.empty())
      in(root / "compute-sanitizer");
  }
  if (!hint_dir.empty()) in(hint_dir);
  return out;
}

// The paths of the shared objects the process has loaded.
inline std::vector<std::string> loaded_libraries() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        try {
          if (info->dlpi_name && *info->dlpi_name)
            static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
          return 0;
        } catch (...) {
          return 1;
        }
      },
      &paths);
  return paths;
}

struct SanitizerApi {
#define PASTA_SANITIZER_POINTER(f) decltype(&::f) f = nullptr;
  PASTA_SANITIZER_FUNCTIONS(PASTA_SANITIZER_POINTER)
#undef PASTA_SANITIZER_POINTER
  std::string library;              // the file the functions come from; empty if none loaded
  std::vector<std::string> failed;  // the candidates tried before it, with why where known
  std::string error;                // none loaded: what was tried and how to fix it, one line
  std::string warning;              // PASTA_SANITIZER_LIB did not load, another file did

  bool loaded() const { return !library.empty(); }
};

// The first of `candidates` that loads and has every function.
inline SanitizerApi load_sanitizer_api(std::span<const std::string> candidates) {
  SanitizerApi api;
  for (const std::string& path : candidates) {
    std::string failure = path == sanitizer_library
                              ? fmt::format("{} (LD_LIBRARY_PATH, RUNPATH, ld.so.cache)", path)
                              : path;
    // Global, as when a program linked it: its symbols are where the driver
    // and the tools it loads would look for them.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      // Whatever is more than "not there" (a missing dependency, a wrong
      // architecture) is worth its line.
      const char* error = dlerror();
      const std::string_view why = error ? error : "";
      if (!why.empty() && !why.ends_with("No such file or directory"))
        failure += fmt::format(" ({})", why);
      api.failed.push_back(std::move(failure));
      continue;
    }
    const char* missing = nullptr;
#define PASTA_SANITIZER_LOOKUP(f) \
  if (!missing && !(api.f = reinterpret_cast<decltype(api.f)>(dlsym(lib, #f)))) missing = #f;
    PASTA_SANITIZER_FUNCTIONS(PASTA_SANITIZER_LOOKUP)
#undef PASTA_SANITIZER_LOOKUP
    if (!missing) {
      // The file the loader took, where it searched for a bare name.
      link_map* map = nullptr;
      api.library = dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name
                        ? map->l_name
                        : path;
      return api;
    }
    api.failed.push_back(fmt::format("{} (has no {})", failure, missing));
    dlclose(lib);
  }
  api.error = fmt::format(
      "the Compute Sanitizer API did not load, so nv::Sanitizer records nothing and the program "
      "runs unprofiled; tried {}. Install the CUDA toolkit's compute-sanitizer or `pip install "
      "nvidia-cuda-sanitizer-api=={}.{}.*`, or set PASTA_SANITIZER_LIB to the full path of {}",
      pasta::detail::join(api.failed, ", "), CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
      sanitizer_library);
  return api;
}

// The process's Sanitizer API, loaded at the first call: from `wanted`
// first (SanitizerSettings::library) when the first caller gives one.
inline const SanitizerApi& sanitizer_api(std::string_view wanted = {}) {
  static const SanitizerApi api = [&] {
    auto getenv = [](const char* name) { return std::getenv(name); };
    SanitizerApi a =
        load_sanitizer_api(sanitizer_library_candidates(wanted, getenv, loaded_libraries()));
    if (a.loaded() && !wanted.empty() && !a.failed.empty())  // it was the first candidate
      a.warning = fmt::format("PASTA_SANITIZER_LIB: {} did not load; using {}", a.failed.front(),
                              a.library);
    return a;
  }();
  return api;
}

}  // namespace pasta::nv::detail
