// torch.compile'd models: each launch of a Triton kernel Inductor generated,
// told to torch::Aten with what Inductor's own metadata says the kernel fuses.
// In a Python process, once torch._inductor's runtime is imported (Inductor
// compiled something), CachingAutotuner.run is wrapped; the wrapper looks the
// kernel up once (its source hash, and the compiled graph's module that
// launched it, whose comments list the operators: detail/inductor_wrapper.hpp)
// and brackets every launch with enter/leave. Inductor's codegen is watched
// too (its get_kernel_metadata, which writes the comment before each launch
// in the graph's code, is wrapped): the comment gets the nn.Module of the FX
// nodes that launch computes (their nn_module_stack; a backward node's is its
// forward's, fwd_nn_module_stack) and the frames of the code that made them
// (stack_trace), so that modules and lines survive compilation. A launch is
// looked up once per place in the graph's code (one kernel serves every block
// of a model). A graph compiled before pasta watched (Inductor's cache filled
// by a run without it) has no such lines: its kernels go to the module that
// ran it. Extern kernels (cuBLAS GEMMs, attention, fallback operators) get
// the same comment lines; CompiledFxGraph.__call__ is wrapped so that
// torch::Aten knows when a thread runs a compiled graph, and looks up the
// line of the graph's code calling each of its operators once (extern_site).
// The Python C API is found with
// dlsym (no link dependency): a program without Python, or one that never
// compiles, pays one check every few operator calls and nothing else.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/thread.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/torch/detail/inductor_wrapper.hpp>
#include <pasta/torch/detail/module_tracker.hpp>
#include <pasta/torch/detail/python_api.hpp>

namespace pasta::torch::detail {

// One place a Triton kernel is launched from, as Inductor's metadata describes it.
struct CompiledKernel {
  NameId kernel{}, source{}, fused{}, graph{};  // as FusedKernel's fields
  // The nn.Module of the nodes one launch of it computes (InductorCallSite's):
  // `module` whole when the compiled code named its root, else `module_path`
  // below the module running the graph; `line`: the program's line that made
  // them. 0 = not known (both modules 0: the module running the graph).
  NameId module{}, module_path{}, line{};
};

class InductorBridge {
 public:
  using Enter = void (*)(const CompiledKernel&);
  using Leave = void (*)();
  using EnterGraph = void (*)(long long graph);  // a compiled graph's call begins (id from 1)

  // Called by the active torch::Aten handler; `modules`: it follows modules
  // or source lines (then launches whose graph names none are counted).
  static void start(Enter enter, Leave leave, EnterGraph enter_graph, Leave leave_graph,
                    bool modules, bool verbose) {
    State& s = state();
    s.enter = enter;
    s.leave = leave;
    s.enter_graph = enter_graph;
    s.leave_graph = leave_graph;
    s.modules = modules;
    s.verbose = verbose;
    if (!s.resolved) {
      s.resolved = true;
      s.python = s.api.resolve();
    }
    s.active.store(s.python, std::memory_order_release);
  }
  static void stop() {
    State& s = state();
    if (!s.active.exchange(false)) return;
    if (s.verbose && s.installed.load())
      pasta::detail::log(fmt::format(
          "inductor: {} compiled kernels' launch places seen, {} with the operators they fuse, "
          "{} with their nn.Module, {} launches",
          s.kernels.size(), s.described.load(), s.with_module.load(), s.launches.load()));
    if (s.verbose && s.modules)
      pasta::detail::log(fmt::format(
          "inductor: {} extern kernel calls in compiled graphs looked up, {} with their nn.Module",
          s.externs.load(), s.externs_with_module.load()));
    if (s.modules && s.without_module.load() > 0)
      pasta::detail::log(fmt::format(
          "inductor: {} of {} compiled kernels' launch places name no nn.Module (their graphs "
          "were compiled before pasta watched, e.g. taken from Inductor's cache): their kernels "
          "go to the module running the graph; TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 compiles "
          "them again",
          s.without_module.load(), s.kernels.size()));
  }

  // At an operator call (torch::Aten asks every 16th of a thread): until the
  // wrapper is in, asks the Python main thread (a pending call: it runs
  // between two bytecodes, holding the GIL) to look for Inductor's runtime,
  // at most every `retry_ns`.
  static void poll() {
    State& s = state();
    if (!s.due()) return;
    if (!s.api.is_initialized() || s.api.add_pending_call(&try_install, nullptr) != 0)
      s.pending.store(false);
  }

  static std::uint64_t launches() { return state().launches.load(); }

  // The extern kernel called from line `line` of file `file`, when that is a
  // compiled graph's code whose comment names its module; nullptr otherwise.
  // The pointer stays valid for the process.
  static const CompiledKernel* extern_site(const std::string& file, int line) {
    State& s = state();
    std::scoped_lock lock(s.mutex);
    const std::string key = fmt::format("{}\n{}", file, line);
    if (auto hit = s.extern_ids.find(key); hit != s.extern_ids.end()) return hit->second;
    const CompiledKernel* found = nullptr;
    if (const InductorCallSite* site = find_extern(graph_of(s, file), line)) {
      CompiledKernel k{.kernel = intern(site->kernel), .graph = intern(file)};
      if (site_module(*site, k)) s.externs_with_module.fetch_add(1, std::memory_order_relaxed);
      s.externs.fetch_add(1, std::memory_order_relaxed);
      found = &s.extern_kernels.emplace_back(k);
    }
    s.extern_ids.emplace(key, found);
    return found;
  }

 private:
  struct State : LazyInstall {
    PythonApi api;
    bool resolved = false, python = false, verbose = false, modules = false;
    std::atomic<std::uint64_t> launches{0}, described{0}, with_module{0}, without_module{0},
        externs{0}, externs_with_module{0};
    std::uint64_t logged = 0;  // kernels described in the log (the first 60)
    Enter enter = nullptr;
    Leave leave = nullptr;
    EnterGraph enter_graph = nullptr;
    Leave leave_graph = nullptr;
    PythonApi::Obj install = nullptr;
    std::mutex mutex;  // the tables below (Python threads hold the GIL, free-threaded ones not)
    std::deque<CompiledKernel> kernels;                         // index + 1 is the id Python keeps
    std::map<std::string, long long> ids;  // graph \n source \n name \n line -> id
    std::map<std::string, InductorGraph> graphs;  // module file -> its kernels and launches
    std::deque<CompiledKernel> extern_kernels;    // what extern_site returns
    std::map<std::string, const CompiledKernel*> extern_ids;  // file \n line -> one of them
  };
  static State& state() {
    static State s;
    return s;
  }

  // The Python side: wraps CachingAutotuner.run once its module is
  // imported. describe() returns the kernel's id, negative while the
  // launching module did not name the kernel (tried again next launch).
  static constexpr const char* python_source = R"PY(
import re, sys
_LOCAL = re.compile(r"L\[['\"]([^'\"]+)['\"]\]")
_ITEM = re.compile(r"\[['\"]?([^'\"\]]*)['\"]?\]")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

def module_parts(fqn):
    # "L['self'].h.0.ln" or "L['self']._modules['h']['0']" -> ["h", "0", "ln"]; None: no local
    m = _LOCAL.match(fqn if isinstance(fqn, str) else "")
    if not m:
        return None
    rest = _ITEM.sub(lambda g: "." + g.group(1), fqn[m.end():])
    return [p for p in rest.split(".") if p and p != "_modules"]

def class_name(cls):
    return getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1].strip("'>")

_SAYS = ("nn_module_stack", "fwd_nn_module_stack", "stack_trace")

def own_nodes(kernel, nodes):
    """An extern kernel's own nodes: those whose operator it calls (extern_kernels.mm: the
    aten.mm node, not the views of its inputs, which other modules' code may have made) and
    that say where they come from; every node where none does (a graph pass's product, such
    as the addmm that folds a tied weight's two gradients, has no metadata of its own)."""
    name = str(getattr(kernel, "python_kernel_name", None) or getattr(kernel, "op_overload", None) or "")
    wanted = set(re.split(r"[.:]", name)) - {"", "extern_kernels", "torch", "ops", "aten", "default"}
    own = [n for n in nodes if wanted & set(re.split(r"[.:]", str(getattr(n, "target", "")))) and
           any(k in (getattr(n, "meta", None) or {}) for k in _SAYS)]
    return own or nodes

def unknown_nodes(nodes):
    """The nodes of a backward graph that say nothing of their module: AOTAutograd gives each
    backward node its forward's stack (fwd_nn_module_stack, None for the compiled frame's own
    code), so a node with neither key was made later (a decomposition, a graph pass) and
    must not take the common module up to the root. In a forward graph a node without
    nn_module_stack is the compiled frame's own code. Empty when no node would be left."""
    metas = [getattr(n, "meta", None) or {} for n in nodes]
    if not any("fwd_nn_module_stack" in m for m in metas):
        return set()
    out = {id(n) for n, m in zip(nodes, metas)
           if "fwd_nn_module_stack" not in m and "nn_module_stack" not in m}
    return out if len(out) < len(nodes) else set()

def describe_nodes(nodes, comment="#"):
    """The comment lines of the FX nodes a launch computes (in order): their common
    nn.Module and the frames of the code that made the first of them."""
    common, root, roots, classes, frames, seen = None, "", set(), {}, "", False
    skip = unknown_nodes(nodes)
    for n in nodes:
        meta = getattr(n, "meta", None) or {}
        if not frames and meta.get("stack_trace"):
            found = _FRAME.findall(meta["stack_trace"])
            frames = ";".join(f"{f}:{l}" for f, l in reversed(found[-8:]))
        if id(n) in skip:  # its frames only
            continue
        stack = meta.get("nn_module_stack") or meta.get("fwd_nn_module_stack") or {}
        entries = []
        for v in stack.values():
            if isinstance(v, (tuple, list)) and len(v) >= 2:
                parts = module_parts(v[0])
                if parts is not None:
                    entries.append((parts, class_name(v[1])))
        this_root = ""
        if entries and not entries[0][0]:  # a module handed to the compiled code: its class
            this_root = entries[0][1]
        for parts, cls in entries:
            classes.setdefault((this_root, tuple(parts)), cls)
        path = entries[-1][0] if entries else []
        if stack or meta.get("stack_trace"):
            seen = True
        roots.add(this_root)
        if common is None:
            common = list(path)
        else:
            k = 0
            while k < len(common) and k < len(path) and common[k] == path[k]:
                k += 1
            del common[k:]
    if not seen:
        return ""
    if len(roots) > 1:  # nodes of modules handed in and of the compiled frame's own
        root, common = "", []
    else:
        root = next(iter(roots), "")
    common = common or []
    cls = classes.get((root, tuple(common)), root if not common else "")
    lines = [f"{comment} pasta module: root={root} path={'.'.join(common)} class={cls}"]
    if frames:
        lines.append(f"{comment} pasta frames: {frames}")
    return "\n".join(lines)

def hook_codegen():
    u = sys.modules.get("torch._inductor.utils")
    original = getattr(u, "get_kernel_metadata", None)
    if original is None:
        return 0
    if getattr(original, "_pasta", False):
        return 1
    origins = getattr(u, "aggregate_origins", None)
    def pasta_get_kernel_metadata(node_schedule, wrapper, *args, **kwargs):
        result = original(node_schedule, wrapper, *args, **kwargs)
        try:
            if origins is None or not isinstance(result, tuple) or len(result) != 2:
                return result
            nodes = [o for o in origins(node_schedule) if getattr(o, "op", "") == "call_function"]
            if not isinstance(node_schedule, (list, tuple)):  # an extern kernel
                nodes = own_nodes(node_schedule, nodes)
            graphs = {id(o.graph) for o in nodes}
            if len(graphs) == 1:
                graph = nodes[0].graph
                index = getattr(graph, "_pasta_index", None)
                if index is None or len(index) != len(graph.nodes):
                    index = {x: i for i, x in enumerate(graph.nodes)}
                    graph._pasta_index = index
                nodes.sort(key=lambda x: index.get(x, 0))
            extra = describe_nodes(nodes, getattr(wrapper, "comment", "#"))
            if extra:  # after the comment's first line, before the launch it describes
                return (result[0] + "\n" + extra) if result[0] else extra, result[1]
        except Exception:
            pass
        return result
    pasta_get_kernel_metadata._pasta = True
    pasta_get_kernel_metadata.__wrapped__ = original
    # Inductor's codegen modules bound the name when they were imported.
    for name, module in list(sys.modules.items()):
        if name.startswith("torch._inductor") and getattr(module, "get_kernel_metadata", None) is original:
            module.get_kernel_metadata = pasta_get_kernel_metadata
    return 1

def hook_graphs(enter_graph, leave_graph):
    # A compiled graph's call, bracketed: torch::Aten looks up the graph's line of
    # each extern kernel it calls. 1: wrapped (or nothing to wrap in this version).
    oc = sys.modules.get("torch._inductor.output_code")
    if oc is None:
        return 0
    cls = getattr(oc, "CompiledFxGraph", None)
    call = getattr(cls, "__call__", None)
    if call is None or getattr(call, "_pasta", False):
        return 1
    ids = iter(range(1, 1 << 62))
    def pasta_graph_call(self, *args, **kwargs):
        g = getattr(self, "_pasta_graph", None)
        if g is None:
            g = next(ids)
            try:
                self._pasta_graph = g
            except Exception:
                return call(self, *args, **kwargs)
        enter_graph(g)
        try:
            return call(self, *args, **kwargs)
        finally:
            leave_graph()
    pasta_graph_call._pasta = True
    pasta_graph_call.__wrapped__ = call
    cls.__call__ = pasta_graph_call
    return 1

def install(enter, leave, describe, enter_graph, leave_graph):
    hook_codegen()
    graphs = hook_graphs(enter_graph, leave_graph)
    th = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    if th is None:
        return 0
    cls = getattr(th, "CachingAutotuner", None)
    run = getattr(cls, "run", None)
    if run is None:
        return -1
    if getattr(run, "_pasta", False):
        return graphs
    getframe = sys._getframe
    def pasta_run(self, *args, **kwargs):
        caller = getframe(1)
        site = (id(caller.f_code), caller.f_lineno)  # the launch's place in the graph's code
        sites = self.__dict__.get("_pasta_sites")
        if sites is None:
            sites = self.__dict__["_pasta_sites"] = {}
        k = sites.get(site, 0)
        if k <= 0:
            try:
                meta = getattr(self, "inductor_meta", None) or {}
                name = meta.get("kernel_name") or getattr(getattr(self, "fn", None), "__name__", "")
                graph = caller.f_globals.get("__file__") or ""
                k = describe(str(name or ""), str(getattr(self, "filename", None) or ""), str(graph),
                             int(caller.f_lineno))
                if k > 0:
                    sites[site] = k
            except Exception:
                k = 0
        if k == 0:
            return run(self, *args, **kwargs)
        enter(k if k > 0 else -k)
        try:
            return run(self, *args, **kwargs)
        finally:
            leave()
    pasta_run._pasta = True
    pasta_run.__wrapped__ = run
    pasta_run.__name__ = getattr(run, "__name__", "run")
    pasta_run.__qualname__ = getattr(run, "__qualname__", "run")
    cls.run = pasta_run
    return graphs
)PY";

  static PythonApi::Obj py_enter(PythonApi::Obj, PythonApi::Obj arg) {
    State& s = state();
    const long long id = s.api.long_as(arg);
    if (id <= 0) {
      s.api.err_clear();
    } else if (s.active.load(std::memory_order_acquire)) {
      CompiledKernel k;
      {
        std::scoped_lock lock(s.mutex);
        if (static_cast<std::size_t>(id) <= s.kernels.size()) k = s.kernels[id - 1];
      }
      s.launches.fetch_add(1, std::memory_order_relaxed);
      s.enter(k);
      return s.api.new_none();
    }
    s.enter(CompiledKernel{});  // a frame all the same: leave() pops one per enter()
    return s.api.new_none();
  }
  static PythonApi::Obj py_leave(PythonApi::Obj, PythonApi::Obj) {
    State& s = state();
    s.leave();
    return s.api.new_none();
  }
  static PythonApi::Obj py_describe(PythonApi::Obj, PythonApi::Obj args) {
    State& s = state();
    std::string text[3];
    const long long line = s.api.long_as(s.api.tuple_get(args, 3));
    if (s.api.err_occurred()) {
      s.api.err_clear();
      return s.api.long_from(0);
    }
    for (int i = 0; i < 3; ++i) {
      long n = 0;
      const char* p = s.api.utf8(s.api.tuple_get(args, i), &n);
      if (!p) {
        s.api.err_clear();
        return s.api.long_from(0);
      }
      text[i].assign(p, static_cast<std::size_t>(n));
    }
    long long id = 0;
    try {
      id = describe(s, text[0], text[1], text[2], static_cast<int>(line));
    } catch (...) {
      pasta::detail::log_once("inductor:describe", "inductor: a compiled kernel was not described");
    }
    return s.api.long_from(id);
  }

  // The id of kernel `name` (source file `path`) launched from line `line` of module `graph`.
  static long long describe(State& s, const std::string& name, const std::string& path,
                            const std::string& graph, int line) {
    std::scoped_lock lock(s.mutex);
    const std::string source(source_hash(path));
    const std::string key = fmt::format("{}\n{}\n{}\n{}", graph, source, name, line);
    if (auto hit = s.ids.find(key); hit != s.ids.end()) return hit->second;
    const InductorGraph& module = graph_of(s, graph);
    const InductorLaunch launch = find_launch(module, name, source, line);
    const InductorKernel* found = launch.kernel;
    const InductorCallSite* site = launch.site;
    const char* how = launch.by_name ? "name within its module" : "source hash";
    std::string fused;
    if (found)
      for (const std::string& op : found->fused) {
        if (!fused.empty()) fused += ", ";
        fused += operator_event_name(op);
      }
    CompiledKernel k{.kernel = intern(name),
                     .source = intern(source),
                     .fused = fused.empty() ? NameId{} : intern(fused),
                     .graph = intern(graph)};
    const bool has_module = found && site && site_module(*site, k);
    if (has_module) {
      s.with_module.fetch_add(1, std::memory_order_relaxed);
    } else if (found) {
      s.without_module.fetch_add(1, std::memory_order_relaxed);
    }
    s.kernels.push_back(k);
    const auto id = static_cast<long long>(s.kernels.size());
    if (found && !fused.empty()) s.described.fetch_add(1, std::memory_order_relaxed);
    if (s.verbose && ++s.logged <= 60) {
      if (found)
        pasta::detail::log(fmt::format(
            "inductor: {} (source {}, by {}) fuses [{}]{}, from {}:{}", name, source, how, fused,
            has_module ? fmt::format(" of module {}{}{} at {}", site->module_root,
                                       site->module_root.empty() ? "" : ".", site->module_path,
                                       k.line ? name_of(k.line) : "?")
                         : std::string(" (no module: compiled before pasta watched?)"),
            graph, line));
      else
        pasta::detail::log(fmt::format(
            "inductor: {} (source {}) is not defined in the module that launched it ({}; {} "
            "kernels there): launched as an operator of its own, looked up again next launch",
            name, source, graph.empty() ? "no file" : graph, module.kernels.size()));
    }
    // Negative: Python asks again at the next launch, which finds this id
    // unless another module launches it (the first caller may not be the
    // graph, e.g. an autotuning pass).
    const long long result = found ? id : -id;
    s.ids.emplace(key, result);
    return result;
  }

  // Module file `graph`'s kernels and launches, read once; s.mutex held.
  static const InductorGraph& graph_of(State& s, const std::string& graph) {
    auto module = s.graphs.find(graph);
    if (module == s.graphs.end()) {
      InductorGraph g;
      if (!graph.empty() && graph.ends_with(".py")) {
        std::ifstream in(graph);
        std::stringstream text;
        text << in.rdbuf();
        g = inductor_graph(text.str());
      }
      module = s.graphs.emplace(graph, std::move(g)).first;
    }
    return module->second;
  }

  // `site`'s module and line into `k`: whether its comment names a module.
  static bool site_module(const InductorCallSite& site, CompiledKernel& k) {
    if (!site.has_module) return false;
    if (!site.module_root.empty())
      k.module = intern(site.module_path.empty() ? site.module_root
                                                 : site.module_root + "." + site.module_path);
    else if (!site.module_path.empty())
      k.module_path = intern(site.module_path);
    for (const std::string& frame : site.frames) {
      const auto colon = frame.rfind(':');
      if (colon != std::string::npos && ModuleTracker::program_file(frame.substr(0, colon))) {
        k.line = intern(frame);
        break;
      }
    }
    return true;
  }

  static PythonApi::Obj py_enter_graph(PythonApi::Obj, PythonApi::Obj arg) {
    State& s = state();
    const long long id = s.api.long_as(arg);
    if (id <= 0 || s.api.err_occurred()) {
      s.api.err_clear();
      return s.api.new_none();
    }
    if (s.enter_graph) s.enter_graph(id);  // always: leave() pops one per enter()
    return s.api.new_none();
  }
  static PythonApi::Obj py_leave_graph(PythonApi::Obj, PythonApi::Obj) {
    State& s = state();
    if (s.leave_graph) s.leave_graph();
    return s.api.new_none();
  }

  // The pending call: on the Python main thread, holding the GIL.
  static int try_install(void*) {
    State& s = state();
    s.pending.store(false);
    if (!s.active.load() || s.installed.load() || s.given_up.load()) return 0;
    static PythonApi::MethodDef enter{"pasta_enter", &py_enter, PythonApi::meth_o, nullptr},
        leave{"pasta_leave", &py_leave, PythonApi::meth_noargs, nullptr},
        describe{"pasta_describe", &py_describe, PythonApi::meth_varargs, nullptr},
        enter_graph{"pasta_enter_graph", &py_enter_graph, PythonApi::meth_o, nullptr},
        leave_graph{"pasta_leave_graph", &py_leave_graph, PythonApi::meth_noargs, nullptr};
    constexpr long long failed = -100;
    const long long r = s.api.load_and_install(python_source,
                                               {&enter, &leave, &describe, &enter_graph, &leave_graph},
                                               s.install, s.verbose, failed);
    if (r == failed) return fail(s, "the Python side did not load, or wrapping CachingAutotuner.run failed");
    if (r == 1) {
      s.installed.store(true);
      if (s.verbose)
        pasta::detail::log(
            "inductor: Triton kernels of compiled graphs are attributed to the operators they "
            "fuse (torch._inductor CachingAutotuner.run wrapped)");
    } else if (r < 0) {
      return fail(s, "torch._inductor has no CachingAutotuner.run");
    }
    return 0;
  }
  static int fail(State& s, const char* why) {
    s.given_up.store(true);
    pasta::detail::log(fmt::format(
        "inductor: compiled kernels are not attributed to the operators they fuse ({})", why));
    return 0;
  }
};

}  // namespace pasta::torch::detail
