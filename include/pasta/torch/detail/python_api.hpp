// The few CPython entry points pasta's Python-side helpers call (the compiled
// kernels' bridge, the module and source-line tracker), resolved with dlsym
// in the running process: no link dependency, and a program without Python
// resolves nothing and pays nothing. PyObject* is an opaque pointer here.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include <pasta/core/detail/thread.hpp>

namespace pasta::torch::detail {

// The state of a Python-side helper that installs itself lazily, from operator
// callbacks: on (a handler started it), in, or given up, and a try at most
// every retry_ns, one at a time.
struct LazyInstall {
  static constexpr std::uint64_t retry_ns = 5'000'000;
  std::atomic<bool> active{false}, installed{false}, given_up{false}, pending{false};
  std::atomic<std::uint64_t> last_try_ns{0};

  // Whether the caller should try now; `pending` stays set until the try ends.
  // torch::Aten asks every 16th operator of a thread: once installed (or
  // given up) it reads no clock.
  bool due() {
    if (!active.load(std::memory_order_relaxed) || installed.load(std::memory_order_relaxed) ||
        given_up.load(std::memory_order_relaxed))
      return false;
    const std::uint64_t now_ns = pasta::detail::now_ns();
    if (now_ns - last_try_ns.load(std::memory_order_relaxed) < retry_ns) return false;
    if (pending.exchange(true)) return false;
    last_try_ns.store(now_ns, std::memory_order_relaxed);
    return true;
  }
};

struct PythonApi {
  using Obj = void*;
  struct MethodDef {  // PyMethodDef
    const char* name;
    Obj (*fn)(Obj, Obj);
    int flags;
    const char* doc;
  };
  using FastFn = Obj (*)(Obj, Obj const*, long);  // METH_FASTCALL
  static constexpr int meth_varargs = 0x0001, meth_noargs = 0x0004, meth_o = 0x0008,
                       meth_fastcall = 0x0080;
  // A METH_FASTCALL function's entry, cast as CPython's own headers do.
  static MethodDef fastcall(const char* name, FastFn fn) {
    return {name, reinterpret_cast<Obj (*)(Obj, Obj)>(reinterpret_cast<void (*)()>(fn)),
            meth_fastcall, nullptr};
  }
  static constexpr int file_input = 257;  // Py_file_input

  int (*is_initialized)() = nullptr;
  int (*add_pending_call)(int (*)(void*), void*) = nullptr;
  Obj (*run_string)(const char*, int, Obj, Obj, void*) = nullptr;  // PyRun_StringFlags
  Obj (*dict_new)() = nullptr;
  Obj (*dict_get)(Obj, const char*) = nullptr;  // borrowed
  Obj (*builtins)() = nullptr;                  // PyEval_GetBuiltins, borrowed
  int (*dict_set)(Obj, const char*, Obj) = nullptr;
  Obj (*new_function)(MethodDef*, Obj, Obj) = nullptr;  // PyCFunction_NewEx
  Obj (*call)(Obj, Obj) = nullptr;                      // PyObject_CallObject
  Obj (*tuple_new)(long) = nullptr;
  int (*tuple_set)(Obj, long, Obj) = nullptr;  // steals
  Obj (*tuple_get)(Obj, long) = nullptr;       // borrowed
  long (*tuple_size)(Obj) = nullptr;
  const char* (*utf8)(Obj, long*) = nullptr;  // PyUnicode_AsUTF8AndSize
  Obj (*unicode_from)(const char*) = nullptr;  // PyUnicode_FromString
  Obj (*long_from)(long long) = nullptr;
  long long (*long_as)(Obj) = nullptr;
  Obj (*err_occurred)() = nullptr;
  void (*err_clear)() = nullptr;
  void (*err_print)() = nullptr;
  void (*incref)(Obj) = nullptr;
  void (*decref)(Obj) = nullptr;
  Obj none = nullptr;

  // Frames and threads, for the module and source-line tracker (3.11+;
  // frame_var is 3.12+). Absent in older Pythons: frames() says so.
  Obj (*eval_frame)() = nullptr;                      // PyEval_GetFrame, borrowed
  Obj (*thread_frame)(Obj) = nullptr;                 // PyThreadState_GetFrame
  Obj (*frame_back)(Obj) = nullptr;                   // PyFrame_GetBack
  Obj (*frame_code)(Obj) = nullptr;                   // PyFrame_GetCode
  int (*frame_lasti)(Obj) = nullptr;                  // PyFrame_GetLasti
  int (*frame_line)(Obj) = nullptr;                   // PyFrame_GetLineNumber
  Obj (*frame_var)(Obj, const char*) = nullptr;       // PyFrame_GetVarString
  Obj (*get_attr)(Obj, const char*) = nullptr;        // PyObject_GetAttrString
  Obj (*type_of)(Obj) = nullptr;                      // PyObject_Type
  Obj (*gil_this_thread)() = nullptr;                 // PyGILState_GetThisThreadState
  int (*gil_ensure)() = nullptr;                      // PyGILState_Ensure
  void (*gil_release)(int) = nullptr;                 // PyGILState_Release

  // Every entry point the bridges always need, or false (not a Python process).
  bool resolve() {
    bool ok = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(RTLD_DEFAULT, name));
      ok = ok && fn != nullptr;
    };
    get(is_initialized, "Py_IsInitialized");
    if (!ok) return false;
    get(add_pending_call, "Py_AddPendingCall");
    get(run_string, "PyRun_StringFlags");
    get(dict_new, "PyDict_New");
    get(dict_get, "PyDict_GetItemString");
    get(builtins, "PyEval_GetBuiltins");
    get(dict_set, "PyDict_SetItemString");
    get(new_function, "PyCFunction_NewEx");
    get(call, "PyObject_CallObject");
    get(tuple_new, "PyTuple_New");
    get(tuple_set, "PyTuple_SetItem");
    get(tuple_get, "PyTuple_GetItem");
    get(tuple_size, "PyTuple_Size");
    get(utf8, "PyUnicode_AsUTF8AndSize");
    get(unicode_from, "PyUnicode_FromString");
    get(long_from, "PyLong_FromLongLong");
    get(long_as, "PyLong_AsLongLong");
    get(err_occurred, "PyErr_Occurred");
    get(err_clear, "PyErr_Clear");
    get(err_print, "PyErr_Print");
    get(incref, "Py_IncRef");
    get(decref, "Py_DecRef");
    none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    if (!ok || !none) return false;
    bool frames_ok = true;
    auto frame_fn = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(RTLD_DEFAULT, name));
      frames_ok = frames_ok && fn != nullptr;
    };
    frame_fn(eval_frame, "PyEval_GetFrame");
    frame_fn(thread_frame, "PyThreadState_GetFrame");
    frame_fn(frame_back, "PyFrame_GetBack");
    frame_fn(frame_code, "PyFrame_GetCode");
    frame_fn(frame_lasti, "PyFrame_GetLasti");
    frame_fn(frame_line, "PyFrame_GetLineNumber");
    frame_fn(frame_var, "PyFrame_GetVarString");
    frame_fn(get_attr, "PyObject_GetAttrString");
    frame_fn(type_of, "PyObject_Type");
    frame_fn(gil_this_thread, "PyGILState_GetThisThreadState");
    frame_fn(gil_ensure, "PyGILState_Ensure");
    frame_fn(gil_release, "PyGILState_Release");
    has_frames_ = frames_ok;
    return true;
  }
  // Whether the frame and thread entry points resolved (Python 3.12 or newer).
  bool frames() const { return has_frames_; }

  Obj new_none() const {
    incref(none);
    return none;
  }
  // The text of a str object, or "" (and the error cleared).
  std::string_view text(Obj s) const {
    long n = 0;
    const char* p = s ? utf8(s, &n) : nullptr;
    if (!p) {
      err_clear();
      return {};
    }
    return {p, static_cast<std::size_t>(n)};
  }

  // Runs `source` in a namespace of its own and calls its `install(fns...)`
  // with each MethodDef made a function. Returns install's result as an
  // integer, or `failed` when the source did not load or the call raised
  // (the error cleared, or printed when `verbose`). On the Python thread,
  // holding the GIL. `install_fn` keeps the installer for later calls.
  long long load_and_install(const char* source, std::initializer_list<MethodDef*> defs,
                             Obj& install_fn, bool verbose, long long failed) const {
    if (!install_fn) {
      Obj ns = dict_new();
      Obj result = nullptr;
      if (ns && dict_set(ns, "__builtins__", builtins()) == 0)
        result = run_string(source, file_input, ns, ns, nullptr);
      if (!result) return fail(failed, verbose);
      decref(result);
      install_fn = dict_get(ns, "install");
      if (!install_fn) return fail(failed, verbose);
      incref(install_fn);
    }
    Obj args = tuple_new(static_cast<long>(defs.size()));
    if (!args) return fail(failed, verbose);
    long i = 0;
    for (MethodDef* d : defs) {
      Obj f = new_function(d, nullptr, nullptr);
      if (!f) {
        decref(args);
        return fail(failed, verbose);
      }
      tuple_set(args, i++, f);
    }
    Obj result = call(install_fn, args);
    decref(args);
    if (!result) return fail(failed, verbose);
    const long long r = long_as(result);
    decref(result);
    if (err_occurred()) {
      err_clear();
      return failed;
    }
    return r;
  }

 private:
  long long fail(long long failed, bool verbose) const {
    if (err_occurred()) {
      if (verbose)
        err_print();
      else
        err_clear();
    }
    return failed;
  }
  bool has_frames_ = false;
};

}  // namespace pasta::torch::detail
