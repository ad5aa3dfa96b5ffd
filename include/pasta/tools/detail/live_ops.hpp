// The operators open on each thread, to name the operator that allocated a
// tensor: TensorAlloc::op is the innermost operator of the allocating
// thread, so it is almost always the top of that thread's stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>

namespace pasta::detail {

class LiveOps {
 public:
  void on(const OpBegin& e) {
    auto& stack = stack_of(e.thread);
    if (stack.size() > e.depth) stack.resize(e.depth);  // ends we missed
    stack.push_back({e.id, e.name, e.source});
  }

  void on(const OpEnd& e) {
    auto& stack = stack_of(e.thread);
    for (std::size_t i = stack.size(); i-- > 0;)
      if (stack[i].id == e.id) {
        stack.resize(i);
        return;
      }
  }

  // What tables call an allocation's operator: its name, "(no operator)"
  // for op 0, "(operator not seen)" for one whose begin was not seen. The
  // returned id is 0 for no operator; label() turns it into text.
  NameId name(std::uint32_t thread, std::uint64_t op) const {
    if (op == 0) return {};
    const Open* o = find(thread, op);
    return o ? o->name : intern(unknown_op);
  }
  // The line of the program that called operator `op` (OpBegin::source); 0 if unknown.
  NameId source(std::uint32_t thread, std::uint64_t op) const {
    const Open* o = op ? find(thread, op) : nullptr;
    return o ? o->source : NameId{};
  }
  // The innermost operator open on `thread`; 0 for none.
  NameId innermost(std::uint32_t thread) const {
    auto it = stacks_.find(thread);
    return it == stacks_.end() || it->second.empty() ? NameId{} : it->second.back().name;
  }
  // f(id) for each operator open on `thread`, innermost first.
  template <class F>
  void for_each_open(std::uint32_t thread, F&& f) const {
    if (auto it = stacks_.find(thread); it != stacks_.end())
      for (std::size_t i = it->second.size(); i-- > 0;) f(it->second[i].id);
  }
  static std::string label(NameId op) { return op ? std::string(name_of(op)) : std::string(no_op); }

  static constexpr std::string_view no_op = "(no operator)";
  static constexpr std::string_view unknown_op = "(operator not seen)";

 private:
  struct Open {
    std::uint64_t id;
    NameId name, source;
  };

  const Open* find(std::uint32_t thread, std::uint64_t op) const {
    if (auto it = stacks_.find(thread); it != stacks_.end())
      if (const Open* o = search(it->second, op)) return o;
    for (const auto& [t, stack] : stacks_)  // reported on another thread than it ran
      if (t != thread)
        if (const Open* o = search(stack, op)) return o;
    return nullptr;
  }

  static const Open* search(const std::vector<Open>& stack, std::uint64_t op) {
    for (std::size_t i = stack.size(); i-- > 0;)
      if (stack[i].id == op) return &stack[i];
    return nullptr;
  }

  std::vector<Open>& stack_of(std::uint32_t thread) { return stacks_[thread]; }

  // Per thread; a stack keeps its capacity, so steady state allocates nothing.
  std::unordered_map<std::uint32_t, std::vector<Open>> stacks_;
};

}  // namespace pasta::detail
