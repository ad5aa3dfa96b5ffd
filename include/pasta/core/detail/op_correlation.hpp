// How an operator source (torch::Aten) tells a device handler (nv::Cupti)
// which operator the calling thread is in, so device work is tagged with it
// without a callback per launch. The device handler installs the hooks while
// it runs; with none installed, operator sources skip the calls.
//
// A source that keeps its own stack of open operators registers an OpStack
// instead, and the device handler asks it at each call it tags: launches are
// far fewer than operator calls (20,453 against 131,158 in a GPT-2 training
// step), so tagging then costs an operator call nothing. The hooks then
// serve only to announce the first operator (the device handler turns its
// tagging callbacks on there).
#pragma once

#include <atomic>
#include <cstdint>

#include <pasta/core/detail/hash.hpp>
#include <pasta/core/names.hpp>

namespace pasta::detail {

struct OpCorrelator {
  void (*enter)(std::uint64_t op, NameId name);  // the calling thread enters operator `op`
  void (*exit)();                                // ... and leaves the innermost one it entered
};

inline std::atomic<const OpCorrelator*>& op_correlator() {
  static std::atomic<const OpCorrelator*> hooks{nullptr};
  return hooks;
}

struct OpStack {
  std::uint64_t (*innermost)();  // the calling thread's innermost open operator, 0 if none
  // The path of the calling thread's open operators (op_path_step from the
  // outermost); 0 if none.
  std::uint64_t (*path)();
};

// An operator path: `outer`'s (0 for none) and one more operator, `name`,
// inside it. What the counters' launch signatures carry, whichever keeps
// the stack.
inline std::uint64_t op_path_step(std::uint64_t outer, NameId name) {
  return fnv_step(outer ? outer : fnv_offset, name.value + 1ull);
}

inline std::atomic<const OpStack*>& op_stack() {
  static std::atomic<const OpStack*> stack{nullptr};
  return stack;
}

}  // namespace pasta::detail
