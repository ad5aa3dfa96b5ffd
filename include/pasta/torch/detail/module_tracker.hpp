// Which nn.Module is running, and which line of the program called an
// operator, in a Python process under torch::Aten.
//
// Modules: once torch.nn is imported, sys.monitoring (Python 3.12+) reports
// the start and the return of nn.Module._call_impl, the one function every
// module call goes through; a per-thread stack follows the calls. Nothing
// is added to the modules themselves (no hooks: torch.compile traces no
// extra call, and a model's own hooks run as before). A module is named by
// where it sits: its root's class, then the attribute path from there
// ("GPT2LMHeadModel.transformer.h.3.attn"), looked up once per (parent,
// module) and remembered; a torch.compile'd module (OptimizedModule) is
// named as the module it wraps.
//
// Source lines: the innermost frame that is not torch's own code nor
// Python's standard library (PASTA_SOURCE_SKIP adds path fragments, e.g.
// "site-packages"). Walking the frames takes the GIL, so it is paid per call
// site rather than per call: an operator called from Python is keyed by the
// module it runs in, its position among that module call's operators, and
// its name; the frames are walked the first time a key is seen.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/thread.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/torch/detail/python_api.hpp>

namespace pasta::torch::detail {

// A module call in progress on this thread.
struct ModuleFrame {
  PythonApi::Obj frame = nullptr;  // its _call_impl frame: matched when it returns
  NameId module{}, parent{}, class_name{}, source{};
  std::uint32_t ops = 0;  // operators called from Python inside it so far
  std::uint64_t begin_ns = 0;
};

// Where an operator call sits, as the source-line cache keys it.
struct SiteKey {
  std::uint32_t module = 0, ordinal = 0, op = 0;
  friend bool operator==(const SiteKey&, const SiteKey&) = default;
};
struct SiteKeyHash {
  std::size_t operator()(const SiteKey& k) const noexcept {
    std::uint64_t h = (std::uint64_t{k.module} << 32 | k.ordinal) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(h ^ (std::uint64_t{k.op} * 0xC2B2AE3D27D4EB4Full));
  }
};

struct ModuleThread {
  std::vector<ModuleFrame> stack;
  std::uint32_t outside_ops = 0;  // operators from Python outside every module, since the last root
  bool walking = false;           // inside a frame walk (a finaliser may run operators)
  std::uint32_t site_hits = 0;    // sites found in `sites`, not yet added to the stats
  std::unordered_map<SiteKey, NameId, SiteKeyHash> sites;
};
inline ModuleThread& module_thread() { return pasta::detail::ThreadSlot<ModuleThread>::get(); }

class ModuleTracker {
 public:
  using Emit = void (*)(const ModuleCall&);
  // Per thread at most this many call sites are looked up (a Python loop of
  // operators makes new keys each iteration); past it, operators carry no line.
  static constexpr std::size_t max_sites = std::size_t{1} << 16;

  struct Stats {
    std::atomic<std::uint64_t> calls{0}, walks{0}, site_hits{0}, dropped{0};
  };

  // Called by the active torch::Aten handler. `modules`: follow nn.Module
  // calls; `sources`: look up source lines; `skip`: path fragments whose
  // frames are not the program's (PASTA_SOURCE_SKIP).
  static void start(Emit emit, bool modules, bool sources, std::vector<std::string> skip,
                    bool verbose) {
    State& s = state();
    s.emit = emit;
    s.modules = modules;
    s.sources = sources;
    hot().lines.store(sources && s.installed.load());
    s.verbose = verbose;
    {
      std::scoped_lock lock(s.mutex);
      s.extra_skip = std::move(skip);
    }
    if (!s.resolved) {
      s.resolved = true;
      s.python = s.api.resolve() && s.api.frames();
    }
    s.active.store(s.python && (modules || sources), std::memory_order_release);
  }
  static void stop() {
    State& s = state();
    if (!s.active.exchange(false)) return;
    add_site_hits(module_thread());
    if (s.verbose)
      pasta::detail::log(fmt::format(
          "modules: {} module calls; source lines: {} call sites looked up, {} operators found "
          "theirs in the cache, {} past the cache's bound{}",
          s.stats.calls.load(), s.stats.walks.load(), s.stats.site_hits.load(),
          s.stats.dropped.load(),
          s.finished.load() ? "; module calls no longer followed once the capture window "
                              "closed for good"
                            : ""));
  }
  // The capture window closed and never opens again (a steps window past its
  // last step, on the thread that ended that step): nothing after it is
  // recorded, so module calls are no longer followed. Each monitoring
  // callback of _call_impl returns sys.monitoring.DISABLE from then on, which
  // turns it off where it fired: after the first module call, none costs the
  // program anything (PY_UNWIND, which cannot be disabled, does nothing).
  // The calling thread's open module calls are dropped, as follow(False)
  // drops them.
  static void finish() {
    State& s = state();
    if (s.finished.exchange(true)) return;
    module_thread().stack.clear();
  }
  static const Stats& stats() { return state().stats; }
  // Paused from Python (pasta_modules.follow(False)): operators look up no
  // module and no line, as with PASTA_MODULES=0 PASTA_SOURCE_LINES=0.
  static bool paused() { return hot().paused.load(std::memory_order_relaxed); }

  // From an operator callback: until the monitoring is in, looks for
  // torch.nn, at most every retry_ns: at once when the calling thread runs
  // Python (taking the GIL it released for the operator), so that the first
  // operators already carry their lines; otherwise through a pending call,
  // which the Python main thread runs between two bytecodes.
  static void poll() {
    State& s = state();
    if (!s.due()) return;
    if (!s.api.is_initialized()) {
      s.pending.store(false);
      return;
    }
    if (s.api.gil_this_thread() && !s.exiting.load() && !module_thread().walking) {
      ModuleThread& t = module_thread();
      t.walking = true;  // Python runs: its operators look nothing up
      const int gil = s.api.gil_ensure();
      try_install(nullptr);
      s.api.gil_release(gil);
      t.walking = false;
      return;
    }
    if (s.api.add_pending_call(&try_install, nullptr) != 0) s.pending.store(false);
  }

  // The module the calling thread runs in now (0 = none).
  static NameId current() {
    const auto& t = module_thread();
    return t.stack.empty() ? NameId{} : t.stack.back().module;
  }

  // Whether the code of file `path` is the program's own, as source lines
  // count it: not torch's, not the standard library's, not under a
  // PASTA_SOURCE_SKIP fragment (torch's and the library's folders are known
  // once modules are followed).
  static bool program_file(std::string_view path) {
    State& s = state();
    std::scoped_lock lock(s.mutex);
    return user_file(s, path);
  }

  // The source line of operator `op`, called from Python on this thread now.
  static NameId op_source(NameId op) {
    const Hot& h = hot();
    if (!h.lines.load(std::memory_order_relaxed)) return {};
    ModuleThread& t = module_thread();
    if (t.walking) return {};
    // Outside every module only the main thread's operators are looked up:
    // another thread's (autograd's, a data loader's) run no Python code.
    if (t.stack.empty() && pasta::detail::thread_id() != h.main_thread.load(std::memory_order_relaxed))
      return {};
    SiteKey key{.op = op.value};
    if (t.stack.empty()) {
      key.ordinal = ++t.outside_ops;
    } else {
      key.module = t.stack.back().module.value;
      key.ordinal = ++t.stack.back().ops;
    }
    if (auto it = t.sites.find(key); it != t.sites.end()) {
      // Counted on the thread (every operator comes here, and a shared
      // count is a write to a shared line) and added to the stats in blocks;
      // stop() adds the stopping thread's rest, another thread's last
      // site_hits_block - 1 at most are left out of the verbose count.
      if (++t.site_hits == site_hits_block) [[unlikely]]
        add_site_hits(t);
      return it->second;
    }
    State& s = state();
    if (t.sites.size() >= max_sites) {
      if (s.stats.dropped.fetch_add(1, std::memory_order_relaxed) == 0)
        pasta::detail::log(fmt::format(
            "source lines: a thread met more than {} operator call sites; later ones carry no "
            "line",
            max_sites));
      return {};
    }
    const NameId site = walk_this_thread();
    t.sites.emplace(key, site);
    return site;
  }

  // The calling thread's innermost Python frames now, up to `max`, as (file,
  // line), innermost first; empty where there is no Python. Takes the GIL.
  static std::vector<std::pair<std::string, int>> python_frames(int max) {
    std::vector<std::pair<std::string, int>> out;
    State& s = state();
    if (!s.python || s.exiting.load(std::memory_order_relaxed)) return out;
    ModuleThread& t = module_thread();
    PythonApi& py = s.api;
    if (t.walking || !py.gil_this_thread()) return out;
    t.walking = true;
    try {
      const int gil = py.gil_ensure();
      PythonApi::Obj frame = py.thread_frame(py.gil_this_thread());
      while (frame && static_cast<int>(out.size()) < max) {
        PythonApi::Obj code = py.frame_code(frame);
        PythonApi::Obj file = code ? py.get_attr(code, "co_filename") : nullptr;
        out.emplace_back(file ? std::string(py.text(file)) : std::string(), py.frame_line(frame));
        if (file) py.decref(file);
        if (code) py.decref(code);
        PythonApi::Obj back = py.frame_back(frame);
        py.decref(frame);
        frame = back;
      }
      if (frame) py.decref(frame);
      py.gil_release(gil);
    } catch (...) {
      pasta::detail::log_once("modules:frames", "compiled graphs: a call's line was not looked up");
    }
    t.walking = false;
    return out;
  }

 private:
  struct Named {
    NameId module{}, class_name{};
  };
  struct CodeSite {  // an instruction of a code object
    const void* code = nullptr;
    int lasti = 0;
    friend bool operator==(const CodeSite&, const CodeSite&) = default;
  };
  struct CodeSiteHash {
    std::size_t operator()(const CodeSite& k) const noexcept {
      return static_cast<std::size_t>(
          (reinterpret_cast<std::uintptr_t>(k.code) * 0x9E3779B97F4A7C15ull) ^
          static_cast<std::uint64_t>(static_cast<unsigned>(k.lasti)));
    }
  };
  struct NamedKey {  // a module object (and its type) called from a parent module
    std::uint32_t parent = 0;
    const void* self = nullptr;
    const void* type = nullptr;
    friend bool operator==(const NamedKey&, const NamedKey&) = default;
  };
  struct NamedKeyHash {
    std::size_t operator()(const NamedKey& k) const noexcept {
      const auto a = reinterpret_cast<std::uintptr_t>(k.self) * 0x9E3779B97F4A7C15ull;
      const auto b = reinterpret_cast<std::uintptr_t>(k.type) * 0xC2B2AE3D27D4EB4Full;
      return static_cast<std::size_t>(a ^ b ^ k.parent);
    }
  };
  struct State : LazyInstall {
    PythonApi api;
    bool resolved = false, python = false, verbose = false;
    bool modules = false, sources = false;
    std::atomic<bool> exiting{false};  // the interpreter is finalising: no frame walks
    std::atomic<bool> finished{false};  // the capture window never opens again (finish())
    Emit emit = nullptr;
    Stats stats;
    PythonApi::Obj install = nullptr, module_name = nullptr, call_impl_code = nullptr;
    PythonApi::Obj disable = nullptr;  // sys.monitoring.DISABLE
    std::mutex mutex;  // what follows (callbacks hold the GIL; frame walks take it)
    std::string torch_dir, stdlib_dir;
    std::vector<std::string> extra_skip;
    std::unordered_map<NamedKey, Named, NamedKeyHash> named;
    std::unordered_map<PythonApi::Obj, bool> user_code;  // code object -> the program's own
    std::unordered_map<CodeSite, NameId, CodeSiteHash> lines;  // -> "file:line"
  };
  static State& state() {
    static State s;
    return s;
  }
  // What every operator call reads (paused(), op_source()), constant-
  // initialized, so that no guard is checked, in a line of its own.
  struct alignas(64) Hot {
    std::atomic<bool> paused{false};  // pasta_modules.follow(False)
    std::atomic<bool> lines{false};   // source lines asked for, and the monitoring is in
    std::atomic<std::uint32_t> main_thread{0};  // pasta's id of the thread that runs pending calls
  };
  static Hot& hot() {
    static constinit Hot h;
    return h;
  }
  // A thread's counted site hits, given to the stats (the verbose line's count).
  static constexpr std::uint32_t site_hits_block = 1024;
  static void add_site_hits(ModuleThread& t) {
    state().stats.site_hits.fetch_add(std::exchange(t.site_hits, 0), std::memory_order_relaxed);
  }

  static constexpr const char* python_source = R"PY(
import sys
def install(start, ret, unwind, configure, exiting, pause):
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return -2
    mm = sys.modules.get("torch.nn.modules.module")
    if mm is None:
        return 0
    code = getattr(getattr(getattr(mm, "Module", None), "_call_impl", None), "__code__", None)
    if code is None:
        return -3
    tool = next((t for t in (mon.PROFILER_ID, 3, 4) if mon.get_tool(t) is None), None)
    if tool is None:
        return -4
    import os, sysconfig, atexit
    torch_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(mm.__file__))))
    stdlib = sysconfig.get_paths().get("stdlib") or os.path.dirname(os.__file__)
    def unwrap(mod):  # a torch.compile'd module is named as the module it wraps
        inner = getattr(mod, "_orig_mod", None) if type(mod).__name__ == "OptimizedModule" else None
        return mod if inner is None else inner
    def module_name(parent, mod):
        mod = unwrap(mod)
        if parent is None:
            return type(mod).__name__
        parent = unwrap(parent)
        if mod is parent:
            return ""
        for n, m in parent._modules.items():
            if m is mod:
                return n
        for n, m in parent.named_modules(remove_duplicate=False):
            if m is mod and n:
                return n
        return type(mod).__name__
    configure(module_name, code, os.path.join(torch_dir, ""), os.path.join(stdlib, ""),
              mon.DISABLE)
    mon.use_tool_id(tool, "pasta")
    E = mon.events
    mon.register_callback(tool, E.PY_START, start)
    mon.register_callback(tool, E.PY_RETURN, ret)
    mon.register_callback(tool, E.PY_UNWIND, unwind)
    mon.set_local_events(tool, code, E.PY_START | E.PY_RETURN)
    mon.set_events(tool, E.PY_UNWIND)
    atexit.register(exiting)
    import types
    switch = types.ModuleType("pasta_modules", FOLLOW_DOC)
    def follow(on=True):
        """follow(False) stops following nn.Module calls and looking up source lines, follow()
        starts again; call it outside every module (between steps)."""
        on = bool(on)
        pause(0 if on else 1)
        mon.set_local_events(tool, code, (E.PY_START | E.PY_RETURN) if on else 0)
        mon.set_events(tool, E.PY_UNWIND if on else 0)
    switch.follow = follow
    sys.modules.setdefault("pasta_modules", switch)
    return 1

FOLLOW_DOC = """pasta run --torch's switch for nn.Module calls and source lines. follow(False): the
operators after it carry no module and no line, and cost what they cost with PASTA_MODULES=0
PASTA_SOURCE_LINES=0; follow(True): followed again. A module call begun before a switch is
not reported. After a steps:A-B capture window has closed, module calls are no longer
followed and follow() switches nothing. For benchmarks that time both in one process."""
)PY";

  // The pending call: on the Python main thread, holding the GIL.
  static int try_install(void*) {
    State& s = state();
    s.pending.store(false);
    if (!s.active.load() || s.installed.load() || s.given_up.load()) return 0;
    static PythonApi::MethodDef start = PythonApi::fastcall("pasta_module_start", &py_start),
                                ret = PythonApi::fastcall("pasta_module_return", &py_return),
                                unwind = PythonApi::fastcall("pasta_module_unwind", &py_unwind),
                                configure =
                                    PythonApi::fastcall("pasta_module_configure", &py_configure),
        exiting{"pasta_exiting", &py_exiting, PythonApi::meth_noargs, nullptr},
        pause = PythonApi::fastcall("pasta_module_pause", &py_pause);
    constexpr long long failed = -100;
    const long long r = s.api.load_and_install(
        python_source, {&start, &ret, &unwind, &configure, &exiting, &pause}, s.install, s.verbose, failed);
    if (r == 0) return 0;  // torch.nn not imported yet: asked again later
    if (r == 1) {
      hot().main_thread.store(pasta::detail::thread_id());
      s.installed.store(true);
      hot().lines.store(s.sources);
      if (s.verbose)
        pasta::detail::log(fmt::format("modules: nn.Module calls followed{}",
                                       s.sources ? ", source lines looked up" : ""));
      return 0;
    }
    s.given_up.store(true);
    pasta::detail::log(
        r == -2 ? "modules: this Python has no sys.monitoring (3.12 or newer has it): operators "
                  "carry no nn.Module and no source line"
        : r == -4
            ? "modules: every sys.monitoring profiler id is taken (another profiler or coverage "
              "tool runs): operators carry no nn.Module and no source line"
            : "modules: torch.nn.Module._call_impl was not found, or following it failed: "
              "operators carry no nn.Module and no source line");
    return 0;
  }

  static PythonApi::Obj py_configure(PythonApi::Obj, PythonApi::Obj const* args, long n) {
    State& s = state();
    if (n == 5) {
      std::scoped_lock lock(s.mutex);
      s.api.incref(args[0]);
      s.module_name = args[0];
      s.api.incref(args[1]);
      s.call_impl_code = args[1];
      s.torch_dir = std::string(s.api.text(args[2]));
      s.stdlib_dir = std::string(s.api.text(args[3]));
      s.api.incref(args[4]);
      s.disable = args[4];
    }
    return s.api.new_none();
  }
  // pasta_modules.follow: 1 pauses, 0 resumes. The calling thread's open
  // module calls are dropped either way: their returns are not all seen.
  static PythonApi::Obj py_pause(PythonApi::Obj, PythonApi::Obj const* args, long n) {
    State& s = state();
    if (n == 1) {
      hot().paused.store(s.api.long_as(args[0]) != 0, std::memory_order_relaxed);
      module_thread().stack.clear();
    }
    return s.api.new_none();
  }
  static PythonApi::Obj py_exiting(PythonApi::Obj, PythonApi::Obj) {
    State& s = state();
    s.exiting.store(true);
    return s.api.new_none();
  }

  // PY_START of _call_impl(self, ...): a module call begins.
  // What a monitoring callback of _call_impl returns once finish() ran:
  // sys.monitoring.DISABLE, a new reference.
  static PythonApi::Obj disabled(State& s) {
    if (!s.disable) return s.api.new_none();
    s.api.incref(s.disable);
    return s.disable;
  }
  static PythonApi::Obj py_start(PythonApi::Obj, PythonApi::Obj const*, long) {
    State& s = state();
    PythonApi& py = s.api;
    if (s.finished.load(std::memory_order_relaxed)) return disabled(s);
    if (!s.active.load(std::memory_order_relaxed)) return py.new_none();
    try {
      PythonApi::Obj frame = py.eval_frame();
      PythonApi::Obj self = frame ? py.frame_var(frame, "self") : nullptr;
      if (!self) {
        py.err_clear();
        return py.new_none();
      }
      ModuleThread& t = module_thread();
      const ModuleFrame* parent = t.stack.empty() ? nullptr : &t.stack.back();
      const Named named = name(s, parent, self);
      py.decref(self);  // the frame holds it while the call runs
      if (t.stack.empty()) t.outside_ops = 0;
      PythonApi::Obj caller = py.frame_back(frame);
      const NameId source = s.sources ? user_site(s, caller) : NameId{};
      t.stack.push_back(ModuleFrame{.frame = frame,
                                    .module = named.module,
                                    .parent = parent ? parent->module : NameId{},
                                    .class_name = named.class_name,
                                    .source = source,
                                    .begin_ns = pasta::detail::now_ns()});
      s.stats.calls.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      pasta::detail::log_once("modules:start", "modules: a module call was not followed");
    }
    return py.new_none();
  }
  static PythonApi::Obj py_return(PythonApi::Obj, PythonApi::Obj const*, long) {
    State& s = state();
    if (s.finished.load(std::memory_order_relaxed)) return disabled(s);
    leave(s, s.api.eval_frame());
    return s.api.new_none();
  }
  // PY_UNWIND of any function: only _call_impl's matter (an exception left a module).
  static PythonApi::Obj py_unwind(PythonApi::Obj, PythonApi::Obj const* args, long n) {
    State& s = state();
    if (n >= 1 && args[0] == s.call_impl_code && !s.finished.load(std::memory_order_relaxed))
      leave(s, s.api.eval_frame());
    return s.api.new_none();
  }
  // The module call of `frame` returned: it and any call above it whose
  // return was not seen end here.
  static void leave(State& s, PythonApi::Obj frame) {
    ModuleThread& t = module_thread();
    std::size_t i = t.stack.size();
    while (i > 0 && t.stack[i - 1].frame != frame) --i;
    if (i == 0) return;  // begun before pasta followed modules
    const std::uint64_t now = pasta::detail::now_ns();
    while (t.stack.size() >= i) {
      const ModuleFrame f = t.stack.back();
      t.stack.pop_back();
      if (s.emit && s.modules && s.active.load(std::memory_order_relaxed))
        s.emit(ModuleCall{.module = f.module,
                          .parent = f.parent,
                          .class_name = f.class_name,
                          .source = f.source,
                          .thread = pasta::detail::thread_id(),
                          .depth = static_cast<std::uint32_t>(t.stack.size()),
                          .begin_ns = f.begin_ns,
                          .end_ns = now});
    }
    if (t.stack.empty()) t.outside_ops = 0;
  }

  // The name of module `self` called from `parent` (nullptr: a root). Holds
  // the GIL (a monitoring callback); the lock is not held while Python runs.
  static Named name(State& s, const ModuleFrame* parent, PythonApi::Obj self) {
    PythonApi& py = s.api;
    PythonApi::Obj type = py.type_of(self);
    const NamedKey key{parent ? parent->module.value : 0u, self, type};
    {
      std::scoped_lock lock(s.mutex);
      if (auto it = s.named.find(key); it != s.named.end()) {
        py.decref(type);
        return it->second;
      }
    }
    ModuleThread& t = module_thread();
    const bool was_walking = t.walking;
    t.walking = true;  // Python runs below: its operators look up no line
    Named named;
    PythonApi::Obj type_name = type ? py.get_attr(type, "__name__") : nullptr;
    const std::string class_name(py.text(type_name));
    if (type_name) py.decref(type_name);
    if (type) py.decref(type);
    named.class_name = intern(class_name.empty() ? "?" : class_name);
    std::string relative = class_name;
    if (s.module_name) {
      // The parent module object: the parent frame's `self` (None for a root,
      // named by its class: a compiled module's is the class it wraps).
      PythonApi::Obj parent_self = parent ? py.frame_var(parent->frame, "self") : py.new_none();
      PythonApi::Obj args = parent_self ? py.tuple_new(2) : nullptr;
      PythonApi::Obj result = nullptr;
      if (args) {
        py.incref(self);
        py.tuple_set(args, 0, parent_self);
        py.tuple_set(args, 1, self);
        result = py.call(s.module_name, args);
        py.decref(args);
      } else if (parent_self) {
        py.decref(parent_self);
      }
      if (result) {
        relative = std::string(py.text(result));
        py.decref(result);
      } else {
        py.err_clear();
      }
    }
    t.walking = was_walking;
    if (!parent) {
      if (!relative.empty()) named.class_name = intern(relative);
      named.module = named.class_name;
    } else if (relative.empty()) {  // a module calling itself: the same entry
      named.module = parent->module;
    } else {
      named.module = intern(std::string(name_of(parent->module)) + "." + relative);
    }
    std::scoped_lock lock(s.mutex);
    s.named.emplace(key, named);
    return named;
  }

  // With the GIL taken: the first frame from `frame` (a new reference,
  // consumed) outward that is the program's own, as "file:line"; 0 if none.
  static NameId user_site(State& s, PythonApi::Obj frame) {
    PythonApi& py = s.api;
    NameId site{};
    while (frame) {
      PythonApi::Obj code = py.frame_code(frame);
      if (code && is_user(s, code)) {
        const CodeSite key{code, py.frame_lasti(frame)};
        std::scoped_lock lock(s.mutex);
        if (auto it = s.lines.find(key); it != s.lines.end()) {
          site = it->second;
        } else {
          PythonApi::Obj file = py.get_attr(code, "co_filename");
          site = intern(fmt::format("{}:{}", py.text(file), py.frame_line(frame)));
          if (file) py.decref(file);
          s.lines.emplace(key, site);
        }
        py.decref(code);
        py.decref(frame);
        return site;
      }
      if (code) py.decref(code);
      PythonApi::Obj back = py.frame_back(frame);
      py.decref(frame);
      frame = back;
    }
    return site;
  }

  // Whether code object `code` is the program's own: not torch's, not the
  // standard library's (site-packages under it are programs' own), not
  // frozen or generated ("<...>"), and not under a PASTA_SOURCE_SKIP fragment.
  static bool is_user(State& s, PythonApi::Obj code) {
    std::scoped_lock lock(s.mutex);
    if (auto it = s.user_code.find(code); it != s.user_code.end()) return it->second;
    PythonApi& py = s.api;
    PythonApi::Obj file = py.get_attr(code, "co_filename");
    const bool user = user_file(s, py.text(file));
    if (file) py.decref(file);
    py.incref(code);  // kept: the cache is keyed by its address
    s.user_code.emplace(code, user);
    return user;
  }

  // Whether the code of file `path` is the program's own (is_user's rule); s.mutex held.
  static bool user_file(const State& s, std::string_view path) {
    bool user = !path.empty() && !path.starts_with("<");
    if (user && !s.torch_dir.empty() && path.starts_with(s.torch_dir)) user = false;
    if (user && !s.stdlib_dir.empty() && path.starts_with(s.stdlib_dir) &&
        path.find("-packages/") == std::string_view::npos)
      user = false;
    for (const std::string& fragment : s.extra_skip)
      if (user && !fragment.empty() && path.find(fragment) != std::string_view::npos) user = false;
    return user;
  }

  // The calling thread's innermost program frame, as "file:line". Takes the
  // GIL: the thread released it to run the operator.
  static NameId walk_this_thread() {
    State& s = state();
    if (s.exiting.load(std::memory_order_relaxed)) return {};
    PythonApi& py = s.api;
    PythonApi::Obj ts = py.gil_this_thread();
    if (!ts) return {};  // no Python on this thread
    ModuleThread& t = module_thread();
    t.walking = true;
    NameId site{};
    try {
      const int gil = py.gil_ensure();
      site = user_site(s, py.thread_frame(ts));
      py.gil_release(gil);
    } catch (...) {
      pasta::detail::log_once("modules:site", "source lines: a call site was not looked up");
    }
    t.walking = false;
    s.stats.walks.fetch_add(1, std::memory_order_relaxed);
    return site;
  }
};

}  // namespace pasta::torch::detail
