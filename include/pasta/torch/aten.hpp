// pasta::torch::Aten: PyTorch operators and tensor memory as pasta events.
// Operators come from RecordFunction global callbacks (every thread: the
// program's, autograd's backward threads, TorchScript's); tensor memory from
// the allocator reports torch.profiler's memory view reads
// (c10::MemoryReportingInfoBase: every CPU and CUDA caching-allocator block,
// with its rounded size and the allocator's totals). Those reports go to a
// per-thread hook, so the handler installs it on each thread that runs an
// operator, and autograd carries it into the threads it starts.
//
// With nv::Cupti in the same Handlers list, each operator also tags the CUDA
// work its thread launches (CUPTI external correlation ids), so kernels,
// copies and memsets arrive with KernelComplete::op and friends set.
//
// In a Python process that compiles with torch.compile, each launch of an
// Inductor Triton kernel is an operator call named after the kernel, followed
// by a FusedKernel event with the operators Inductor says the kernel fuses
// (detail/inductor_bridge.hpp).
//
// In a Python process (3.12+), each operator also carries the nn.Module it
// ran in and the line of the program that called it (detail/module_tracker.hpp),
// and module calls are events (ModuleCall). Backward operators carry their
// forward's module and line (detail/forward_origins.hpp).
#pragma once

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/capture_window.hpp>
#include <pasta/core/detail/op_correlation.hpp>
#include <pasta/core/detail/self_time.hpp>
#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/torch/detail/forward_origins.hpp>
#include <pasta/torch/detail/inductor_bridge.hpp>
#include <pasta/torch/detail/module_tracker.hpp>
#include <pasta/torch/detail/tensor_text.hpp>
#include <pasta/torch/settings.hpp>

namespace pasta::torch {

class Aten {
 public:
  static constexpr std::string_view name = "aten";
  // record_function ranges and optimizer steps bound a capture window (core/capture.hpp).
  static constexpr unsigned capture_sources = capture_sources::ranges | capture_sources::steps;

  struct Stats {
    std::atomic<std::uint64_t> ops{0};          // operator calls seen (at stop: the ids issued)
    std::atomic<std::uint64_t> allocations{0};  // allocator reports (allocations)
    std::atomic<std::uint64_t> frees{0};
    std::atomic<std::uint64_t> views{0};    // TensorView events (input views, per call)
    std::atomic<std::uint64_t> threads{0};  // threads the memory hook was installed on
    // ... and installed again on a thread whose state guard had removed it
    std::atomic<std::uint64_t> restores{0};
    // ... and installed on a thread first reached outside the capture
    // window, by a sampled operator (on_poll): the allocations of its first
    // operators may be missing (partial_reason())
    std::atomic<std::uint64_t> late_hooks{0};
    // PASTA_SELF_TIME: time in the callbacks, on the program's threads.
    pasta::detail::SelfTime op_start, op_end, memory;
    // PASTA_SELF_TIME_PARTS: the same by section (stop() names the sections).
    pasta::detail::SelfTimeParts op_start_parts, op_end_parts;
  };

  using settings = AtenSettings;  // ConfigFor<Aten> holds them (torch/settings.hpp)

  explicit Aten(const Config& cfg, const AtenSettings& own = {})
      : inputs_(own.op_inputs),
        verbose_(cfg.verbose),
        self_time_(cfg.self_time),
        self_time_parts_(cfg.self_time_parts),
        timed_(self_time_ || self_time_parts_),
        compiled_kernels_(own.compiled_kernels),
        modules_(own.modules),
        source_lines_(own.source_lines),
        source_skip_(skip_list(own.source_skip)) {}
  ~Aten() { stop(); }
  Aten(const Aten&) = delete;
  Aten& operator=(const Aten&) = delete;

  template <class Sink>
  void start(Sink& sink) {
    constexpr bool views = Sink::template wants<TensorView>();
    constexpr bool ops = Sink::template wants<OpBegin>() || Sink::template wants<OpEnd>() ||
                         Sink::template wants<TensorAlloc>() ||  // allocations name their op
                         views;
    constexpr bool memory =
        Sink::template wants<TensorAlloc>() || Sink::template wants<TensorFree>();
    if constexpr (ops || memory) {
      Aten* expected = nullptr;
      if (!current().compare_exchange_strong(expected, this)) {
        error_ =
            "a torch::Aten handler is already active in this process; this one records "
            "nothing";
        pasta::detail::log(error_);
        return;
      }
      sink_ = &sink;
      emit_begin_ = [](void* s, const OpBegin& e) { static_cast<Sink*>(s)->emit(e); };
      emit_end_ = [](void* s, const OpEnd& e) { static_cast<Sink*>(s)->emit(e); };
      emit_alloc_ = [](void* s, const TensorAlloc& e) { static_cast<Sink*>(s)->emit(e); };
      emit_free_ = [](void* s, const TensorFree& e) { static_cast<Sink*>(s)->emit(e); };
      emit_view_ = [](void* s, const TensorView& e) { static_cast<Sink*>(s)->emit(e); };
      if constexpr (Sink::template wants<FusedKernel>())
        emit_fused_ = [](void* s, const FusedKernel& e) { static_cast<Sink*>(s)->emit(e); };
      if constexpr (Sink::template wants<ModuleCall>())
        emit_module_ = [](void* s, const ModuleCall& e) { static_cast<Sink*>(s)->emit(e); };
      compiled_ = compiled_kernels_ &&
                  (Sink::template wants<OpBegin>() || Sink::template wants<FusedKernel>());
      tracking_ = modules_ || source_lines_;
      if (tracking_)
        detail::ModuleTracker::start(&on_module, modules_, source_lines_, source_skip_, verbose_);
      if (compiled_)
        detail::InductorBridge::start(&enter_compiled, &leave_compiled, &enter_graph,
                                      &leave_graph, tracking_, verbose_);
      memory_ = memory;
      views_ = views;
      if (memory_) install_reporter();  // the starting thread, before its first operator
      // Operators are needed for memory too: the callback installs the
      // reporter on each new thread. record_function ranges (user scopes)
      // have a callback of their own, always on: they move the capture
      // window. The operators' callback is on only while the window is open,
      // so that outside it the program's operators take PyTorch's path with
      // no callback at all; a sampled one keeps each thread's polls going
      // there (follow_window()).
      first_id_ = shared().next_id.load(std::memory_order_relaxed);
      scopes_handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                                 .needsInputs(inputs_ || views_)
                                                 .scopes({at::RecordScope::USER_SCOPE}));
      ops_handle_ = at::addGlobalCallback(
          at::RecordFunctionCallback(&on_start, &on_end)
              .needsInputs(inputs_ || views_)
              .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
      if (auto& window = pasta::detail::capture_window(); !window.whole()) {
        polls_handle_ = at::addGlobalCallback(
            at::RecordFunctionCallback(&on_poll)
                .samplingProb(1.0 / poll_every)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
        window.listen(this, &on_window);
        follow_window();
      }
      // Device handlers ask this thread's stack for the operator of a launch.
      pasta::detail::op_stack().store(&open_stack, std::memory_order_release);
      active_ = true;
      if (verbose_)
        pasta::detail::log(fmt::format("aten handler: operators{}{}, tensor memory {}",
                                       inputs_ ? " with input shapes" : "",
                                       views_ ? " and input views" : "", memory_ ? "on" : "off"));
    }
  }

  void stop() {
    if (!active_) return;
    active_ = false;
    current() = nullptr;  // callbacks already running see it and return
    const pasta::detail::OpStack* ours = &open_stack;
    pasta::detail::op_stack().compare_exchange_strong(ours, nullptr);
    if (compiled_) detail::InductorBridge::stop();
    if (tracking_) detail::ModuleTracker::stop();
    pasta::detail::capture_window().forget(this);
    for (at::CallbackHandle* h : {&scopes_handle_, &ops_handle_, &polls_handle_})
      if (*h) at::removeCallback(std::exchange(*h, 0));
    // Every operator call recorded took one id: no count of its own on the hot path.
    stats_.ops.store(shared().next_id.load(std::memory_order_relaxed) - first_id_);
    // Threads keep the (now silent) reporter until their state is reset:
    // its calls return at once while no handler is current.
    if (verbose_)
      pasta::detail::log(fmt::format(
          "aten handler: {} operator calls, {} allocations, {} frees, {} views, memory hook on {} "
          "threads",
          stats_.ops.load(), stats_.allocations.load(), stats_.frees.load(), stats_.views.load(),
          stats_.threads.load()));
    if (self_time_)
      for (const auto& [what, t] : {std::pair{"operator starts", &stats_.op_start},
                                    std::pair{"operator ends", &stats_.op_end},
                                    std::pair{"allocator reports", &stats_.memory}})
        pasta::detail::log("aten handler: self time: " + pasta::detail::describe_self_time(what, *t));
    if (self_time_parts_) {
      pasta::detail::log("aten handler: " + pasta::detail::describe_parts(
                                                "operator start", stats_.op_start_parts,
                                                {"polls and memory hook", "window and name",
                                                 "capture window", "placement", "kernel tag",
                                                 "record"}));
      pasta::detail::log("aten handler: " + pasta::detail::describe_parts(
                                                "operator end", stats_.op_end_parts,
                                                {"time", "stack and tag", "record"}));
    }
  }
  void flush() {}

  const Stats& stats() const { return stats_; }
  std::string partial_reason() const {
    if (!error_.empty()) return error_;
    std::string out;
    if (const auto restored = stats_.restores.load())
      out = fmt::format(
          "the memory hook was found removed {} times (by a thread state guard other than "
          "autograd's) and installed again: the allocations of up to {} operators before each may "
          "be missing",
          restored, poll_every - 1);
    if (const auto late = stats_.late_hooks.load())
      out += fmt::format(
          "{}the memory hook reached {} thread{} that began outside the capture window at a "
          "sampled operator (one in {} on average): the allocations of {} first operators may be "
          "missing",
          out.empty() ? "" : "; ", late, late == 1 ? "" : "s", poll_every,
          late == 1 ? "its" : "their");
    return out;
  }

 private:
  // One operator call, carried from the start callback to the end callback
  // (which may run on another thread for asynchronous scopes).
  struct OpContext : at::ObserverContext {
    std::uint64_t id = 0;
    NameId name{};
    std::uint32_t thread = 0, depth = 0;
    bool tagged = false;   // entered in the device handler's correlation stack
    bool emitted = true;   // began inside the capture window: its end is emitted too
    bool range = false;    // a record_function range the capture window watches
    bool step = false;     // an optimizer step (Optimizer.step#...)

    // One is made at every operator call and deleted at its end: the
    // thread's recent ones are reused instead of going back to the heap.
    static void* operator new(std::size_t size);
    static void operator delete(void* p);
  };
  // An operator open on a thread, with what the operators it calls inherit.
  struct Open {
    std::uint64_t id = 0;
    NameId name{}, module{}, source{};
    bool backward = false;  // autograd's backward of a forward operator, or inside one
    bool scope = false;     // a record_function range: what it calls is called from Python
  };

  // Per thread: the stack of open operators, and names already interned
  // (operator names repeat; the global table takes a lock).
  // What every operator call reads comes first, in one cache line.
  struct alignas(64) ThreadState {
    std::vector<Open> open;
    std::uint32_t steps_open = 0;  // optimizer steps open on this thread
    std::uint32_t polls_in = 1;    // operators until the Python helpers are asked again
    std::uint64_t torch_thread = 0;  // at::RecordFunction::currentThreadId(), once known
    bool deferring = false;          // `deferred` holds a wrapper's OpBegin
    bool reporter_seen = false;      // the memory hook was on this thread at a check
    bool in_graph = false;           // !graphs.empty(), read by every operator
    std::uint32_t tid = pasta::detail::thread_id();  // at hand with the rest
    // Freed operator contexts (a context may end on another thread than it
    // began: it joins that thread's): the recent ones are taken first, so
    // a call usually reads the line after this one.
    std::uint32_t contexts_kept = 0;
    static constexpr std::size_t contexts_max = 64;
    void* contexts[contexts_max];
    ~ThreadState() {
      while (contexts_kept > 0) ::operator delete(contexts[--contexts_kept]);
    }
    // Recent name pointers, direct-mapped: a pointer, its name and the
    // interned text (which lives as long as the name table), so a hit is
    // one load and a compare, with no lock of the table. Bounded, unlike a
    // map of every pointer seen (per-call names come at ever new addresses).
    struct Named {
      const char* pointer = nullptr;
      NameId id{};
      bool wrapper = false;  // autograd's evaluate_function wrapper (is_backward_wrapper)
      std::string_view text;
    };
    std::array<Named, 512> recent{};  // 2^9: op_name takes the hash's top 9 bits
    std::unordered_map<std::string_view, NameId> names;  // views of interned text
    std::vector<OpContext> launches;  // open compiled-kernel launches (id 0: not recorded)
    // Compiled graphs this thread runs now (innermost last): the graph, the
    // first operator id opened inside it, and its operators called so far
    // from the graph's own code; and, per graph and ordinal, the extern
    // kernel the graph's line calls there (looked up once: nullptr = none).
    struct GraphCall {
      std::uint64_t graph = 0, first_op = 0;
      std::uint32_t ordinal = 0;
    };
    struct GraphSite {
      NameId op{};
      const detail::CompiledKernel* kernel = nullptr;
    };
    std::vector<GraphCall> graphs;
    std::unordered_map<std::uint64_t, GraphSite> graph_sites;
    // autograd's evaluate_function wrapper, held back until the node it runs
    // starts and says the forward the wrapper belongs to (see place()).
    OpBegin deferred{};  // while `deferring`
  };
  static constexpr std::uint32_t poll_every = 16;
  static ThreadState& thread_state() { return pasta::detail::ThreadSlot<ThreadState>::get(); }
  static void* take_context(std::size_t size) {
    ThreadState& t = thread_state();
    if (t.contexts_kept > 0) return t.contexts[--t.contexts_kept];
    return ::operator new(size);
  }
  static void give_context(void* p) {
    ThreadState& t = thread_state();
    if (t.contexts_kept < ThreadState::contexts_max) {
      t.contexts[t.contexts_kept++] = p;
      return;
    }
    ::operator delete(p);
  }
  // The calling thread's open operators as device handlers see them
  // (core/detail/op_correlation.hpp): asked at each launch they tag.
  static std::uint64_t innermost_open() {
    const auto& open = thread_state().open;
    return open.empty() ? 0 : open.back().id;
  }
  static std::uint64_t open_path() {
    std::uint64_t path = 0;
    for (const Open& o : thread_state().open) path = pasta::detail::op_path_step(path, o.name);
    return path;
  }
  static constexpr pasta::detail::OpStack open_stack{&innermost_open, &open_path};
  // The handler running now and the next operator id: read (the id taken)
  // at every operator call, so in one cache line.
  struct alignas(64) Shared {
    std::atomic<Aten*> current{nullptr};
    std::atomic<std::uint64_t> next_id{1};  // OpBegin::id; 0 means none
  };
  static Shared& shared() {
    static Shared s;  // constant-initialized: no guard to check
    return s;
  }
  static std::atomic<Aten*>& current() { return shared().current; }

  // Operator names are mostly the same few hundred schema strings, passed
  // as the same pointers: a pointer hit, checked against the name it gave
  // (user scopes may reuse a pointer for other text), costs no hashing of
  // the text and no allocation.
  //
  // This runs at every operator call, after the program's own code has had
  // the caches: what it touches, code and data, is most of its cost
  // (bench/aten_ops.py --misses). Its hit is inline and compares the text
  // itself; the miss is out of line.
  static const ThreadState::Named& op_name(ThreadState& t, const char* s) {
    static constexpr ThreadState::Named none{};
    if (!s) return none;
    // Fibonacci hashing: the top 9 bits of the pointer times 2^64 / phi.
    auto& slot = t.recent[(reinterpret_cast<std::uintptr_t>(s) * 0x9E3779B97F4A7C15ull) >> 55];
    if (slot.pointer == s && same_text(slot.text, s)) return slot;
    return name_missed(t, slot, s);
  }
  // strcmp, not a loop of ours: a name is compared at every operator call, and
  // a byte loop costs 7 instructions a character (callgrind: 66 of the start's
  // 490 for "aten::add"; autograd's wrapper names run to 60 characters). An
  // interned name ends in a NUL (NameTable keeps std::strings).
  static bool same_text(std::string_view text, const char* s) {
    return text.data() && std::strcmp(s, text.data()) == 0;
  }
  [[gnu::noinline, gnu::cold]] static const ThreadState::Named& name_missed(
      ThreadState& t, ThreadState::Named& slot, const char* s) {
    const std::string_view v(s);
    auto it = t.names.find(v);
    const NameId id = it != t.names.end() ? it->second : intern(v);
    const std::string_view text = name_of(id);
    if (it == t.names.end()) t.names.emplace(text, id);
    slot = {.pointer = s, .id = id, .wrapper = is_backward_wrapper(s), .text = text};
    return slot;
  }

  // The operator callbacks. Timed (PASTA_SELF_TIME, PASTA_SELF_TIME_PARTS),
  // they run out of line under their clocks; untimed, no clock code is in
  // them (what they touch is most of what they cost: op_name()).
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    Aten* self = current().load(std::memory_order_acquire);
    if (!self) return nullptr;
    if (self->timed_) [[unlikely]]
      return timed_start(self, fn);
    return start_op<false>(self, fn, nullptr);
  }
  [[gnu::noinline]] static std::unique_ptr<at::ObserverContext> timed_start(
      Aten* self, const at::RecordFunction& fn) {
    pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.op_start : nullptr);
    pasta::detail::PartClock part(self->self_time_parts_ ? &self->stats_.op_start_parts : nullptr);
    return start_op<true>(self, fn, &part);
  }
  template <bool Timed>
  static void mark(pasta::detail::PartClock* part, std::size_t section) {
    if constexpr (Timed) part->mark(section);
  }

  template <bool Timed>
  [[gnu::always_inline]] static std::unique_ptr<at::ObserverContext> start_op(
      Aten* self, const at::RecordFunction& fn, pasta::detail::PartClock* part) {
    try {
      ThreadState& t = thread_state();
      // The Python helpers install themselves when Python lets them: asked
      // every poll_every-th operator of a thread, not at each.
      if (--t.polls_in == 0) [[unlikely]]
        self->poll_helpers(t);
      mark<Timed>(part, 0);
      const auto& window = *self->window_;
      const bool windowed = !window.whole();
      // Outside a capture window only user scopes (ranges, optimizer steps) matter.
      if (windowed && !window.open() && fn.scope() != at::RecordScope::USER_SCOPE) [[unlikely]]
        return nullptr;
      auto ctx = std::make_unique<OpContext>();
      const ThreadState::Named& named = op_name(t, fn.name());
      // autograd runs a backward node under the state of the thread that
      // called backward (its guard swaps the thread's debug info, where the
      // memory hook lives), and the node's evaluate_function wrapper is the
      // first operator there: the hook is checked at it, besides every
      // poll_every-th operator (poll_helpers).
      if (named.wrapper && self->memory_) [[unlikely]]
        self->check_reporter(t, false);
      mark<Timed>(part, 1);
      ctx->name = named.id;
      if (windowed && !self->enter_window(t, fn, *ctx)) [[unlikely]]
        return ctx->step ? std::move(ctx) : nullptr;  // outside: a step is still counted
      mark<Timed>(part, 2);
      ctx->id = shared().next_id.fetch_add(1, std::memory_order_relaxed);
      ctx->thread = t.tid;
      ctx->depth = static_cast<std::uint32_t>(t.open.size());
      const std::uint64_t parent = t.open.empty() ? 0 : t.open.back().id;
      const bool wrapper = named.wrapper && self->tracking();
      Open open = wrapper ? Open{.id = ctx->id, .backward = true} : self->place(t, fn, *ctx);
      open.name = ctx->name;
      if (t.deferring) [[unlikely]]
        self->flush_deferred(t, open);
      t.open.push_back(open);
      mark<Timed>(part, 3);
      // nv::Cupti asks the stack at launches (open_stack): only a device
      // handler without that (amd::Rocprofiler), or nv::Cupti waiting for the
      // first operator, takes the call.
      if (const auto* hooks = pasta::detail::op_correlator().load(std::memory_order_acquire))
          [[unlikely]] {
        hooks->enter(ctx->id, ctx->name);
        ctx->tagged = true;
      }
      mark<Timed>(part, 4);
      const OpBegin begin{.id = ctx->id,
                          .parent = parent,
                          .sequence = fn.seqNr(),
                          .name = ctx->name,
                          .inputs = self->inputs_ ? inputs_of(fn) : NameId{},
                          .thread = ctx->thread,
                          .depth = ctx->depth,
                          .time_ns = pasta::detail::now_ns(),
                          .module = open.module,
                          .source = open.source,
                          .backward = open.backward};
      if (wrapper) [[unlikely]] {
        t.deferred = begin;
        t.deferring = true;
        return ctx;
      }
      self->emit_begin_(self->sink_, begin);
      if (self->views_) [[unlikely]]
        self->emit_views(fn, ctx->id, ctx->thread);
      mark<Timed>(part, 5);
      return ctx;
    } catch (...) {
      pasta::detail::log_once("aten:start", "torch::Aten: an operator callback failed");
      return nullptr;
    }
  }

  static void on_end(const at::RecordFunction&, at::ObserverContext* base) {
    auto* ctx = static_cast<OpContext*>(base);
    if (!ctx) return;
    Aten* timed = current().load(std::memory_order_acquire);
    if (timed && timed->timed_) [[unlikely]]
      return timed_end(timed, ctx);
    end_op<false>(ctx, nullptr);
  }
  [[gnu::noinline]] static void timed_end(Aten* self, OpContext* ctx) {
    pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.op_end : nullptr);
    pasta::detail::PartClock part(self->self_time_parts_ ? &self->stats_.op_end_parts : nullptr);
    end_op<true>(ctx, &part);
  }
  template <bool Timed>
  [[gnu::always_inline]] static void end_op(OpContext* ctx, pasta::detail::PartClock* part) {
    if (!ctx->emitted) [[unlikely]] {
      leave_window(*ctx);
      return;
    }
    const std::uint64_t now = pasta::detail::now_ns();
    ThreadState& state = thread_state();
    ThreadState* t = ctx->thread == state.tid ? &state : nullptr;
    if (t && t->deferring) [[unlikely]] {
      if (Aten* self = current().load(std::memory_order_acquire)) self->flush_deferred(*t);
    }
    mark<Timed>(part, 0);
    if (t) [[likely]] {
      auto& open = t->open;
      if (!open.empty() && open.back().id == ctx->id) [[likely]]
        open.pop_back();
      else
        unwind(open, ctx->id);
      if (ctx->tagged) [[unlikely]]
        if (const auto* hooks = pasta::detail::op_correlator().load(std::memory_order_acquire))
          hooks->exit();
    }
    mark<Timed>(part, 1);
    Aten* self = current().load(std::memory_order_acquire);
    if (!self) [[unlikely]]
      return;
    try {
      self->emit_end_(self->sink_, OpEnd{.id = ctx->id,
                                         .name = ctx->name,
                                         .thread = ctx->thread,
                                         .depth = ctx->depth,
                                         .time_ns = now});
    } catch (...) {
      pasta::detail::log_once("aten:end", "torch::Aten: an operator callback failed");
    }
    leave_window(*ctx);
    mark<Timed>(part, 2);
  }

  // Where operator call `fn` runs: its module and source line, and what the
  // operators it calls inherit. A backward function gets its forward's (by
  // autograd's sequence number and forward thread); an operator called by
  // another operator (not a record_function range) gets its caller's; one
  // called from Python gets the module running now and the line that called it.
  Open place(ThreadState& t, const at::RecordFunction& fn, const OpContext& ctx) {
    const bool track = tracking();  // read once an operator
    Open open{.id = ctx.id, .scope = fn.scope() == at::RecordScope::USER_SCOPE};
    const Open* caller = t.open.empty() ? nullptr : &t.open.back();
    // autograd's evaluate_function wrapper is a FUNCTION, with its node's forward thread.
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION || fn.forwardThreadId() != 0) {
      open.backward = true;
      if (track) {
        const auto origin = origins_.find(fn.forwardThreadId(), fn.seqNr());
        open.module = origin.module;
        open.source = origin.source;
      }
      return open;
    }
    if (caller && (caller->backward || !caller->scope)) {
      open.backward = caller->backward;
      open.module = caller->module;
      open.source = caller->source;
    } else if (track) {
      if (modules_) open.module = detail::ModuleTracker::current();
      if (source_lines_) open.source = detail::ModuleTracker::op_source(ctx.name);
    }
    if (track && t.in_graph) [[unlikely]]
      graph_place(t, caller, ctx, open);
    if (track && !open.backward) {
      if (!t.torch_thread) t.torch_thread = at::RecordFunction::currentThreadId();
      origins_.put(t.torch_thread, fn.seqNr(), {open.module, open.source});
    }
    return open;
  }

  // An operator a compiled graph's code calls itself (an extern kernel: a
  // cuBLAS GEMM, attention, a fallback): the module and line of the FX nodes
  // it computes, as the comment before its call names them, below the module
  // running the graph. Looked up once per graph and place in its order.
  [[gnu::noinline]] void graph_place(ThreadState& t, const Open* caller, const OpContext& ctx,
                                     Open& open) {
    ThreadState::GraphCall& g = t.graphs.back();
    if (caller && caller->id >= g.first_op) return;  // inside another operator: its caller's
    const std::uint64_t key = g.graph << 24 | (++g.ordinal & 0xffffff);
    auto it = t.graph_sites.find(key);
    if (it == t.graph_sites.end() || it->second.op != ctx.name) {
      if (t.graph_sites.size() >= max_graph_sites) return;
      ThreadState::GraphSite site{.op = ctx.name};
      // The graph's frame: innermost, or below a Python wrapper of the operator.
      for (const auto& [file, line] : detail::ModuleTracker::python_frames(3))
        if ((site.kernel = detail::InductorBridge::extern_site(file, line))) break;
      it = t.graph_sites.insert_or_assign(key, site).first;
    }
    if (const detail::CompiledKernel* k = it->second.kernel) {
      if (modules_) open.module = compiled_module(open.module, *k);
      if (source_lines_ && k->line) open.source = k->line;
    }
  }
  static constexpr std::size_t max_graph_sites = 1 << 16;  // per thread

  // A compiled graph's call begins and ends on this thread (InductorBridge).
  static void enter_graph(long long graph) {
    ThreadState& t = thread_state();
    t.graphs.push_back({.graph = static_cast<std::uint64_t>(graph),
                        .first_op = shared().next_id.load(std::memory_order_relaxed)});
    t.in_graph = true;
  }
  static void leave_graph() {
    ThreadState& t = thread_state();
    if (!t.graphs.empty()) t.graphs.pop_back();
    t.in_graph = !t.graphs.empty();
  }

  // PASTA_OP_INPUTS: the operator's input shapes and dtypes, interned.
  [[gnu::noinline]] static NameId inputs_of(const at::RecordFunction& fn) {
    return intern(detail::inputs_text(fn));
  }

  // The capture window opened or closed (on the thread that moved it): the
  // operators' callback follows it, and the sampled polls do the opposite.
  // Reads the window itself, so a change racing start() is not lost.
  static void on_window(void* owner, bool) { static_cast<Aten*>(owner)->follow_window(); }
  void follow_window() {
    std::scoped_lock lock(window_mutex_);
    const int open = pasta::detail::capture_window().open();
    if (open == followed_) return;
    followed_ = open;
    // The operators' callback first when it opens (an operator may then take
    // both: the polls' records nothing), the polls first when it closes.
    if (open) {
      at::reenableCallback(ops_handle_);
      at::disableCallback(polls_handle_);
    } else {
      at::reenableCallback(polls_handle_);
      at::disableCallback(ops_handle_);
      // A steps window past its last step never opens again: module calls
      // need no following after it (the module tracker stops).
      if (tracking_ && pasta::detail::capture_window().done()) detail::ModuleTracker::finish();
    }
  }
  // Outside the capture window, about one operator in poll_every of each
  // thread (sampled by PyTorch): the polls that thread's operators would
  // make, nothing recorded. A thread's first calls may pass before one.
  static std::unique_ptr<at::ObserverContext> on_poll(const at::RecordFunction&) {
    Aten* self = current().load(std::memory_order_acquire);
    if (!self) return nullptr;
    try {
      ThreadState& t = thread_state();
      const bool first = !t.reporter_seen;
      if (self->poll_helpers(t) && first)
        self->stats_.late_hooks.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      pasta::detail::log_once("aten:poll", "torch::Aten: an operator callback failed");
    }
    return nullptr;
  }

  // The Python helpers install themselves when Python lets them: asked
  // every poll_every-th operator of a thread, not at each. Returns whether
  // the memory hook was installed on the thread now.
  [[gnu::noinline]] bool poll_helpers(ThreadState& t) {
    t.polls_in = poll_every;
    const bool installed = memory_ && check_reporter(t, true);
    if (compiled_) detail::InductorBridge::poll();
    if (tracking_) detail::ModuleTracker::poll();
    return installed;
  }

  // autograd's "autograd::engine::evaluate_function: XBackward0" wrapper: a
  // FUNCTION that learns its sequence number only after it started.
  static bool is_backward_wrapper(const char* name) {
    static constexpr std::string_view prefix = "autograd::engine::evaluate_function: ";
    return name && std::strncmp(name, prefix.data(), prefix.size()) == 0;
  }
  // An operator that ends while others it opened are still open (they end
  // later, or on another thread): taken out of the stack where it is.
  [[gnu::noinline]] static void unwind(std::vector<Open>& open, std::uint64_t id) {
    if (auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.id == id; });
        it != open.end())
      open.erase(it);
  }

  // Emits the held-back wrapper, with the module and line of `first`, the
  // first operator it runs (the backward node, which knows its forward), when
  // that is a backward one; before that operator's own OpBegin.
  [[gnu::noinline]] void flush_deferred(ThreadState& t, const Open& first) noexcept {
    OpBegin begin = t.deferred;
    t.deferring = false;
    if (first.backward && !t.open.empty() && t.open.back().id == begin.id) {
      begin.module = first.module;
      begin.source = first.source;
      t.open.back().module = first.module;
      t.open.back().source = first.source;
    }
    try {
      emit_begin_(sink_, begin);
    } catch (...) {
      pasta::detail::log_once("aten:start", "torch::Aten: an operator callback failed");
    }
  }
  // An operator end or an allocation came first: the wrapper is emitted as it is.
  void flush_deferred(ThreadState& t) noexcept { flush_deferred(t, Open{}); }

  // A module call returned (detail::ModuleTracker, on the Python thread).
  static void on_module(const ModuleCall& e) {
    Aten* self = current().load(std::memory_order_acquire);
    if (!self || !self->emit_module_) return;
    const auto& window = pasta::detail::capture_window();
    if (!window.whole() && !window.open()) return;
    try {
      self->emit_module_(self->sink_, e);
    } catch (...) {
      pasta::detail::log_once("aten:module", "torch::Aten: a module call was not recorded");
    }
  }

  // "a,b" as {"a", "b"}, with the fragments every run skips: Inductor's
  // generated wrapper code is not the program's.
  static std::vector<std::string> skip_list(std::string_view text) {
    std::vector<std::string> out{"/torchinductor_"};
    while (!text.empty()) {
      const auto comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      if (!item.empty()) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
    return out;
  }

  // With a capture range: reports the boundaries an operator call makes
  // (a record_function range entered, an optimizer step begun) and says
  // whether the call is inside the window. Outside, it is not emitted, and
  // only an optimizer step is followed to its end.
  [[gnu::noinline]] bool enter_window(ThreadState& t, const at::RecordFunction& fn,
                                     OpContext& ctx) {
    auto& window = pasta::detail::capture_window();
    if (fn.scope() == at::RecordScope::USER_SCOPE) {
      ctx.range = true;
      window.range(ctx.name, true);  // the range that opens the window is in it
      if (name_of(ctx.name).starts_with(pasta::detail::optimizer_step_prefix)) {
        ctx.step = t.steps_open++ == 0;  // only the outermost one ends a step
        if (!ctx.step) --t.steps_open;
      }
    }
    ctx.emitted = window.open();
    if (!ctx.emitted) ctx.thread = t.tid;
    return ctx.emitted;
  }
  static void leave_window(const OpContext& ctx) {
    if (ctx.range) [[unlikely]]
      leave_range(ctx);
  }
  [[gnu::noinline]] static void leave_range(const OpContext& ctx) {
    auto& window = pasta::detail::capture_window();
    window.range(ctx.name, false);
    if (ctx.step) {
      if (ThreadState& t = thread_state(); ctx.thread == t.tid) --t.steps_open;
      window.step_end();
    }
  }

  // A compiled kernel's launch, from the Python thread launching it: an
  // operator call named after the kernel, its FusedKernel, and the device
  // work in between tagged with it. Every enter is matched by one leave.
  static void enter_compiled(const detail::CompiledKernel& k) {
    ThreadState& t = thread_state();
    OpContext ctx;
    Aten* self = current().load(std::memory_order_acquire);
    if (self && k.kernel) {
      try {
        ctx.id = shared().next_id.fetch_add(1, std::memory_order_relaxed);
        ctx.name = k.kernel;
        ctx.thread = t.tid;
        ctx.depth = static_cast<std::uint32_t>(t.open.size());
        const std::uint64_t parent = t.open.empty() ? 0 : t.open.back().id;
        Open open{.id = ctx.id, .name = ctx.name};
        if (self->tracking()) {
          // The module running the compiled code (or its operator's), and below it
          // the module of the nodes the kernel fuses, when Inductor's comment names it.
          const bool inside = !t.open.empty() && !t.open.back().scope;
          if (self->modules_) {
            open.module = inside ? t.open.back().module : detail::ModuleTracker::current();
            open.module = compiled_module(open.module, k);
          }
          if (self->source_lines_)
            open.source = k.line   ? k.line
                          : inside ? t.open.back().source
                                   : detail::ModuleTracker::op_source(ctx.name);
        }
        t.open.push_back(open);
        if (const auto* hooks = pasta::detail::op_correlator().load(std::memory_order_acquire)) {
          hooks->enter(ctx.id, ctx.name);
          ctx.tagged = true;
        }
        self->emit_begin_(self->sink_, OpBegin{.id = ctx.id,
                                               .parent = parent,
                                               .name = ctx.name,
                                               .thread = ctx.thread,
                                               .depth = ctx.depth,
                                               .time_ns = pasta::detail::now_ns(),
                                               .module = open.module,
                                               .source = open.source});
        if (self->emit_fused_)
          self->emit_fused_(self->sink_, FusedKernel{.op = ctx.id,
                                                     .kernel = k.kernel,
                                                     .source = k.source,
                                                     .fused = k.fused,
                                                     .graph = k.graph});
      } catch (...) {
        pasta::detail::log_once("aten:compiled", "torch::Aten: a compiled kernel's launch failed");
      }
    }
    t.launches.push_back(ctx);
  }
  // A compiled kernel's module: named whole, or `k.module_path` below `running`.
  static NameId compiled_module(NameId running, const detail::CompiledKernel& k) {
    if (k.module) return k.module;
    if (!k.module_path) return running;
    if (!running) return k.module_path;
    thread_local std::unordered_map<std::uint64_t, NameId> below;  // (running, path) -> name
    const std::uint64_t key = std::uint64_t{running.value} << 32 | k.module_path.value;
    auto it = below.find(key);
    if (it == below.end())
      it = below.emplace(key, intern(fmt::format("{}.{}", name_of(running), name_of(k.module_path))))
               .first;
    return it->second;
  }
  static void leave_compiled() {
    ThreadState& t = thread_state();
    if (t.launches.empty()) return;
    const OpContext ctx = t.launches.back();
    t.launches.pop_back();
    if (ctx.id == 0) return;
    unwind(t.open, ctx.id);
    if (ctx.tagged)
      if (const auto* hooks = pasta::detail::op_correlator().load(std::memory_order_acquire))
        hooks->exit();
    Aten* self = current().load(std::memory_order_acquire);
    if (!self) return;
    try {
      self->emit_end_(self->sink_, OpEnd{.id = ctx.id,
                                         .name = ctx.name,
                                         .thread = ctx.thread,
                                         .depth = ctx.depth,
                                         .time_ns = pasta::detail::now_ns()});
    } catch (...) {
      pasta::detail::log_once("aten:compiled", "torch::Aten: a compiled kernel's launch failed");
    }
  }

  // The operator's inputs that are views of their storage, each as a
  // TensorView: a slice, a transpose, a split, an expand. A tensor that is
  // its whole storage, in order, is its base and is not reported. A tensor
  // whose storage cannot be read (a subclass without data) is passed over:
  // the operator itself is recorded all the same.
  [[gnu::noinline]] void emit_views(const at::RecordFunction& fn, std::uint64_t op,
                                   std::uint32_t thread) noexcept {
    try {
      for (const c10::IValue& v : fn.inputs()) {
        if (v.isTensor())
          emit_view(v.toTensor(), op, thread);
        else if (v.isTensorList())
          for (const at::Tensor& t : v.toTensorList().vec()) emit_view(t, op, thread);
      }
    } catch (...) {
      pasta::detail::log_once("aten:view", "torch::Aten: an operator's input views were not read");
    }
  }
  void emit_view(const at::Tensor& t, std::uint64_t op, std::uint32_t thread) {
    auto view = detail::view_of(t);
    if (!view) return;
    view->op = op;
    view->thread = thread;
    stats_.views.fetch_add(1, std::memory_order_relaxed);
    emit_view_(sink_, *view);
  }

  // The allocator's report hook for the calling thread. Allocations are
  // charged to the thread's innermost open operator.
  // PyTorch reads the thread's PROFILER_STATE as a ProfilerStateBase
  // (torch.profiler's: ProfilerStateBase::get(), behind profilerEnabled(),
  // _RecordFunctionFast, ...): a bare MemoryReportingInfoBase there is read
  // as one, and torch.compile(mode="reduce-overhead") crashed on it. So the
  // reporter is a profiler state, disabled, that no profiler runs.
  struct Reporter final : ::torch::profiler::impl::ProfilerStateBase {
    Reporter()
        : ProfilerStateBase(::torch::profiler::impl::ProfilerConfig(
              ::torch::profiler::impl::ProfilerState::Disabled)) {}
    ::torch::profiler::impl::ActiveProfilerType profilerType() override {
      return ::torch::profiler::impl::ActiveProfilerType::NONE;
    }
    bool memoryProfilingEnabled() const override { return current().load() != nullptr; }
    void reportMemoryUsage(void* ptr, std::int64_t bytes, std::size_t total_allocated,
                           std::size_t total_reserved, c10::Device device) override {
      Aten* self = current().load(std::memory_order_acquire);
      if (!self || bytes == 0) return;
      pasta::detail::SelfTimer timer(self->self_time_ ? &self->stats_.memory : nullptr);
      try {
        const auto device_id =
            device.is_cpu() ? cpu_device : static_cast<std::uint32_t>(device.index());
        const auto address = reinterpret_cast<std::uint64_t>(ptr);
        const std::uint64_t now = pasta::detail::now_ns();
        if (bytes > 0) {
          ThreadState& t = thread_state();
          if (t.deferring) [[unlikely]]
            self->flush_deferred(t);
          const auto& open = t.open;
          self->stats_.allocations.fetch_add(1, std::memory_order_relaxed);
          self->emit_alloc_(self->sink_, TensorAlloc{.address = address,
                                                     .bytes = static_cast<std::uint64_t>(bytes),
                                                     .device = device_id,
                                                     .total_allocated = total_allocated,
                                                     .total_reserved = total_reserved,
                                                     .time_ns = now,
                                                     .op = open.empty() ? 0 : open.back().id,
                                                     .thread = t.tid});
        } else {
          self->stats_.frees.fetch_add(1, std::memory_order_relaxed);
          self->emit_free_(self->sink_, TensorFree{.address = address,
                                                   .bytes = static_cast<std::uint64_t>(-bytes),
                                                   .device = device_id,
                                                   .total_allocated = total_allocated,
                                                   .total_reserved = total_reserved,
                                                   .time_ns = now});
        }
      } catch (...) {
        pasta::detail::log_once("aten:memory", "torch::Aten: a memory report failed");
      }
    }
  };

 public:
  // TensorAlloc::device for host (CPU) tensors.
  static constexpr std::uint32_t cpu_device = pasta::host_device;

 private:
  // Installs the report hook on the calling thread unless a profiler's (ours
  // or torch.profiler's) is already there; autograd copies it into the
  // threads that run backward for this thread. Returns whether it installed.
  [[gnu::noinline]] bool install_reporter() {
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) return false;
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     std::make_shared<Reporter>());
    stats_.threads.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Checked at a thread's first operator, every poll_every-th one and each
  // backward node's, not at every operator: the check walks PyTorch's
  // thread-local debug info (10 calls of __tls_get_addr in libc10, build
  // machine). At a backward node the guard was set just before, so nothing
  // was missed. At a poll, a hook found gone on a thread that had one was
  // removed by a thread state guard other than autograd's (at::launch's, a
  // user's): the allocations of the operators since the last check may be
  // missing, counted (Stats::restores) and said (partial_reason()).
  [[gnu::noinline]] bool check_reporter(ThreadState& t, bool at_poll) {
    const bool installed = install_reporter();
    if (installed && t.reporter_seen && at_poll)
      stats_.restores.fetch_add(1, std::memory_order_relaxed);
    t.reporter_seen = true;
    return installed;
  }

  // What the operator and allocator callbacks read, in one cache line: they
  // run after the program's own code has had the caches (op_name()).
  alignas(64) bool inputs_;
  bool verbose_;
  bool self_time_;         // Config::self_time
  bool self_time_parts_;   // Config::self_time_parts
  bool timed_;             // either: the callbacks run under their clocks
  bool compiled_kernels_;  // Config::compiled_kernels
  bool modules_, source_lines_;  // Config::modules, Config::source_lines
  bool tracking_ = false;  // modules or source lines followed (detail::ModuleTracker)
  bool memory_ = false;
  bool views_ = false;  // a tool wants TensorView: operators' inputs are recorded
  bool active_ = false;
  bool compiled_ = false;  // compiled kernels' launches are operator calls (a tool wants them)
  void* sink_ = nullptr;
  const pasta::detail::CaptureWindow* window_ = &pasta::detail::capture_window();
  void (*emit_begin_)(void*, const OpBegin&) = nullptr;
  void (*emit_end_)(void*, const OpEnd&) = nullptr;
  void (*emit_alloc_)(void*, const TensorAlloc&) = nullptr;
  void (*emit_free_)(void*, const TensorFree&) = nullptr;
  detail::ForwardOrigins origins_;  // forward operators' modules and lines, for backward ones
  // ... and not paused now (pasta_modules.follow(False), from Python).
  bool tracking() const { return tracking_ && !detail::ModuleTracker::paused(); }
  std::vector<std::string> source_skip_;  // Config::source_skip, split
  // The RecordFunction callbacks: user scopes, operators (on while the
  // capture window is open) and the polls (on while it is closed).
  at::CallbackHandle scopes_handle_ = 0, ops_handle_ = 0, polls_handle_ = 0;
  std::mutex window_mutex_;  // follow_window()
  int followed_ = -1;        // the window's state the callbacks were set for (-1: none yet)
  void (*emit_view_)(void*, const TensorView&) = nullptr;
  void (*emit_fused_)(void*, const FusedKernel&) = nullptr;
  void (*emit_module_)(void*, const ModuleCall&) = nullptr;
  Stats stats_;
  std::string error_;
  std::uint64_t first_id_ = 0;  // shared().next_id at start()
};

// The contexts come from their thread's state (Aten::ThreadState).
inline void* Aten::OpContext::operator new(std::size_t size) { return take_context(size); }
inline void Aten::OpContext::operator delete(void* p) { give_context(p); }

}  // namespace pasta::torch
