// nv::Sanitizer's device patches: pasta's patch image added to a context
// once, each module's memory instructions patched once, and the post-pass
// kernel loaded into a context outside any launch.
#pragma once

#include <cuda.h>

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <pasta/core/detail/fmt.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/log.hpp>
#include <pasta/nv/sanitizer/detail/api.hpp>
#include <pasta/nv/sanitizer/detail/device.hpp>
#include <pasta/nv/sanitizer/settings.hpp>  // space::

namespace pasta::nv::detail {

class AccessPatcher {
 public:
  explicit AccessPatcher(SanitizerStats& stats) : stats_(stats) {}
  AccessPatcher(const AccessPatcher&) = delete;
  AccessPatcher& operator=(const AccessPatcher&) = delete;

  // Loads the post-pass into the context, outside any launch (see
  // CONTEXT_CREATION_FINISHED); a failure stops the instrumentation.
  void prepare_post_pass(ContextState& c) {
    std::lock_guard lock(patch_mutex_);
    if (c.compact) return;
    in_context(c.ctx, "entering a new context", [&](const Driver&) { load_post_pass(c); });
  }
  // Adds the patch image to the context (once) and patches the module's
  // memory instructions in `spaces` with the patches of `family` (once per
  // module); with `post_pass`, the post-pass comes with it.
  void patch_module(ContextState& c, CUmodule module, std::string_view family, unsigned spaces,
                    bool post_pass);
  bool patched(CUmodule module) {
    std::lock_guard lock(patch_mutex_);
    return patched_.count(module) != 0;
  }
  // A module unloads: a module loaded later may have its handle.
  void unloading(CUmodule module) {
    std::lock_guard lock(patch_mutex_);
    patched_.erase(module);
  }

 private:
  SanitizerStats& stats_;
  // Patching must be serialised, and sanitizerPatchModule calls back on the
  // same thread: a recursive mutex.
  std::recursive_mutex patch_mutex_;
  std::unordered_set<CUmodule> patched_;
  std::atomic<bool> async_warned_{false};
};

inline void AccessPatcher::patch_module(ContextState& c, CUmodule module, std::string_view family,
                                        unsigned spaces, bool post_pass) {
  std::lock_guard lock(patch_mutex_);
  if (patched_.count(module)) return;
  const auto t0 = pasta::detail::steady_ns();
  if (!c.patches_added) {
    check(sanitizer_api().sanitizerAddPatches(generated::access_patches, c.ctx),
          "adding pasta's device patches");
    c.patches_added = true;
  }
  // A context created before pasta subscribed: its post-pass comes with its
  // first patched module, still outside any launch.
  if (post_pass) prepare_post_pass(c);
  struct Space {
    unsigned bit;
    Sanitizer_InstructionId id;
    const char* suffix;
  };
  for (const Space s : {Space{space::global, SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "global"},
                        Space{space::shared, SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "shared"},
                        Space{space::local, SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, "local"}}) {
    if (!(spaces & s.bit)) continue;
    const std::string patch = fmt::format("pasta_{}_{}", family, s.suffix);
    check(sanitizer_api().sanitizerPatchInstructions(s.id, module, patch.c_str()),
          fmt::format("patching {} memory accesses with {}", s.suffix, patch));
  }
  // Asynchronous copies from global memory (cp.async, cp.async.bulk) read
  // it too, when `spaces` names them. A driver that cannot patch them leaves
  // them uncounted, and says so once; the tensor copies
  // (cp.async.bulk.tensor) have no patch point in the Sanitizer API at all
  // (docs/user-guide.md).
  if (spaces & space::async)
    for (const auto& [id, suffix] :
         {std::pair{SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "memcpy_async"},
          std::pair{SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "bulk_copy"}}) {
      const std::string patch = fmt::format("pasta_{}_{}", family, suffix);
      if (const SanitizerResult r =
              sanitizer_api().sanitizerPatchInstructions(id, module, patch.c_str());
          r != SANITIZER_SUCCESS && !async_warned_.exchange(true))
        pasta::detail::log(fmt::format("sanitizer: asynchronous copies ({}) are not counted: {}",
                                       suffix, sanitizer_error(r)));
    }
  check(sanitizer_api().sanitizerPatchModule(module), "patching a module");
  patched_.insert(module);
  stats_.modules_patched.fetch_add(1, std::memory_order_relaxed);
  stats_.patch_ns.fetch_add(pasta::detail::steady_ns() - t0, std::memory_order_relaxed);
}

}  // namespace pasta::nv::detail
