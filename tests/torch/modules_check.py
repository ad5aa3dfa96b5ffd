#!/usr/bin/env python3
"""Checks the nn.Module and source line pasta gives every operator against
truths pasta has no part in.

* Modules: the same steps run again under torch.profiler, each module call
  inside a record_function range its hooks open (tests/torch/modules_model.py
  --truth). An operator's module is its innermost range; a backward
  operator's is that of the forward operator with its sequence number and
  forward thread (as torch.profiler links them), or its caller's.
* Lines (--model small): the model's source, where each line that calls an
  operator or a module is marked "# line: ..."; an operator's line is the
  marked line of the innermost function of the program's own that runs it.
* Counts: module_summary's operators (and, on a GPU, kernels) per module
  equal the truth run's.

Usage (CPU, the probe library loaded into Python 3.12 with torch):
  modules_check.py --python PY --pasta-trace BIN --probe LIB --out DIR [--model small]
On a GPU, the pasta run is `pasta run --torch --record`:
  modules_check.py --python python3 --pasta-trace BIN --pasta BIN/pasta --device cuda
                   --model gpt2 --out DIR
Prints a table and "modules and lines exact"; exits 1 on a mismatch, 77 when
PY has no torch or no sys.monitoring (skipped, and says why).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "modules_model.py")
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
NO_MODULE = "(no module)"


def parse_dump(text):
    """pasta-trace dump's lines as (type, {field: value})."""
    out = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        fields = {}
        for k, v in FIELD.findall(rest):
            fields[k] = json.loads(v) if v.startswith('"') else v
        out.append((kind, fields))
    return out


def marked_lines(path):
    """{"block fc": 42, ...}: the lines the model marks."""
    marks = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# line: (.+)$", line)
            if m:
                marks[m.group(1).strip()] = n
    return marks


RUNTIME = re.compile(r"^cu(da)?[A-Z]|^INVALID$")
# CUPTI's own work as torch.profiler lists it on the host: neither operators nor their parents.
OVERHEAD = {"Activity Buffer Request", "Instrumentation", "Resource", "Lazy Function Loading",
            "Runtime Triggered Module Loading", "CUPTI", "Profiler"}


def nest(events):
    """Each CPU event's parent: the innermost event of its thread whose span holds it.
    Events are keyed by their place in the list ("key"): an operator's correlation id and
    a CUDA API call's come from two counters and can be equal."""
    threads = collections.defaultdict(list)
    for i, e in enumerate(events):
        e["key"] = i
        if e["device"] == "CPU" and e["name"] not in OVERHEAD:
            threads[e["thread"]].append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e["start"], -e["end"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["end"] < e["end"]:
                stack.pop()
            e["parent"] = stack[-1]["key"] if stack else None
            stack.append(e)


def is_op(e):
    """An operator as pasta records them: not a module range of the truth run, not a
    CUDA API call, not a profiler's own event."""
    return (e["device"] == "CPU" and e["scope"] in (0, 1, 7) and e["name"] not in OVERHEAD
            and not e["name"].startswith(("module: ", "profiler::", "ProfilerStep"))
            and not RUNTIME.match(e["name"]))


def backward_root(e):
    """A backward function, or autograd's evaluate_function wrapper around one."""
    return (e["scope"] == 1 or e["fwd_thread"] > 0
            or e["name"].startswith("autograd::engine::evaluate_function: "))


def truth_modules(events):
    """torch.profiler's operators, and each one's module: its innermost module range;
    for a backward function (and what it calls) the module of the forward operator
    with its sequence number and forward thread, as torch.profiler links them."""
    nest(events)
    by_key = {e["key"]: e for e in events if e["device"] == "CPU"}

    def ancestors(e):
        p = by_key.get(e["parent"])
        while p is not None:
            yield p
            p = by_key.get(p["parent"])

    ops = [e for e in events if is_op(e)]
    result, forward = {}, {}
    for e in sorted(ops, key=lambda e: e["start"]):
        if any(backward_root(a) for a in [e, *ancestors(e)]):
            continue
        m = next((a["name"][len("module: "):] for a in ancestors(e)
                  if a["name"].startswith("module: ")), NO_MODULE)
        result[e["key"]] = m
        # The last operator with a sequence number made its node (the number goes up
        # after it; operators before it that made none show the same number).
        if e["sequence"] >= 0:
            forward[(e["thread"], e["sequence"])] = m
    for e in ops:
        if e["key"] in result:
            continue
        outer = [a for a in [e, *ancestors(e)] if backward_root(a)][-1]  # the outermost
        result[e["key"]] = forward.get((outer["fwd_thread"], outer["sequence"]), NO_MODULE)
    return ops, result


def is_backward(e, by_key):
    while e is not None:
        if backward_root(e):
            return True
        e = by_key.get(e["parent"])
    return False


# Where each operator of the small model comes from: (module, operator) ->
# the mark of its line, for operators called from Python (their callees
# inherit the line). The module's own line when its forward is the model's
# code, its caller's when it is torch's (Linear, LayerNorm, GELU).
SMALL_LINES = [
    (r"Net\.embed$", None, "net embed"),
    (r"Net\.blocks\.\d\.ln$", None, "block fc"),
    (r"Net\.blocks\.\d\.fc$", None, "block fc"),
    (r"Net\.blocks\.\d\.act$", None, "block act"),
    (r"Net\.blocks\.\d$", "aten::mul", "block act"),
    (r"Net\.blocks\.\d\.shared$", None, "block shared"),
    (r"Net\.blocks\.\d$", "aten::add", "block shared"),
    (r"Net\.blocks\.0\.extra$", None, "net reaches blocks.0.extra"),
    (r"Net$", "aten::add", "net reaches blocks.0.extra"),
    (r"Net\.rec$", "aten::relu", "recursive relu"),
    (r"Net\.rec$", "aten::add", "recursive add"),
    (r"Net\.scripted$", None, "net scripted"),
    (r"Net$", "head range", "net range"),
    (r"Net\.head$", "aten::mul", "hook"),
    (r"Net\.head$", None, "net head"),
    (r"\(no module\)$", r"Optimizer\.zero_grad", "zero_grad"),
    (r"\(no module\)$", r"Optimizer\.step", "step"),
    (r"\(no module\)$", r"autograd::|aten::(ones_like|empty_strided|fill_)", "backward"),
    (r"\(no module\)$", r"aten::(to|_has_compatible_shallow_copy_type)$", "to device"),
    (r"\(no module\)$", r"aten::randn$", "inputs"),
    (r"\(no module\)$", None, "loss"),
]


def expected_line(module, name, marks):
    """The marked line operator `name` (or, inside a record_function range,
    the outermost range's name) in `module` comes from."""
    for mod_re, op_re, mark in SMALL_LINES:
        if re.match(mod_re, module) and (op_re is None or re.match(op_re, name)):
            return marks[mark]
    return None


def verdict(failures, passed):
    """Prints each failure and a last line (`passed` when there is none); the exit status."""
    for f in failures:
        print("FAIL", f)
    print(passed if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


def probe_main(doc, script, child, check, env=None):
    """The driver of a CPU check that loads the probe library into a child Python:
    `script --child --probe LIB` runs child(LIB), the profiled program; otherwise, skipped (77)
    where --python has no torch or no sys.monitoring, it runs that child with the trace and
    reports written to OUT/pasta (and `env` added), then returns check(args, proc, the trace
    dump as parse_dump gives it), or 1 where the child failed."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--probe", required=True)
    p.add_argument("--pasta-trace")
    p.add_argument("--out")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        # The child says whether it can run (77: no torch, or no sys.monitoring), rather than
        # a Python of its own importing torch first (2 s each time on two cores).
        try:
            import torch  # noqa: F401
        except Exception:
            return 77
        if not hasattr(sys, "monitoring"):
            return 77
        child(args.probe)
        return 0
    os.makedirs(args.out, exist_ok=True)
    pasta_dir = os.path.join(args.out, "pasta")
    proc = subprocess.run([args.python, script, "--child", "--probe", args.probe],
                          env=dict(os.environ, PASTA_OUTPUT_DIR=pasta_dir, PASTA_PRINT="none",
                                   PASTA_VERBOSE="1", **(env(args) if env else {})),
                          capture_output=True, text=True, timeout=240)
    if proc.returncode == 77:
        print(f"skipped: {args.python} has no torch, or no sys.monitoring (Python 3.12+)")
        return 77
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-3000:])
        print("FAIL the profiled program did not finish")
        return 1
    dump = parse_dump(subprocess.run([args.pasta_trace, "dump", os.path.join(pasta_dir, "trace.pasta")],
                                     capture_output=True, text=True, check=True).stdout)
    return check(args, proc, dump)


def run(cmd, env=None, **kw):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400, **kw)
    if r.returncode != 0:
        sys.exit(f"modules_check: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--pasta-trace", required=True)
    p.add_argument("--probe", help="CPU: the pipeline library to load into Python")
    p.add_argument("--pasta", help="GPU: the launcher, run with --torch --record")
    p.add_argument("--device", default="cpu")
    p.add_argument("--model", default="small")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--out", required=True)
    p.add_argument("--reuse", action="store_true",
                   help="check OUT/pasta/trace.pasta and OUT/truth.json a run left, running nothing")
    args = p.parse_args()

    if not args.reuse:
        probe = subprocess.run([args.python, "-c", "import sys, torch; "
                                "print(hasattr(sys, 'monitoring'), torch.cuda.is_available())"],
                               capture_output=True, text=True)
        has = probe.stdout.split()
        if probe.returncode != 0 or not has or has[0] != "True":
            print(f"skipped: {args.python} has no torch, or no sys.monitoring (Python 3.12+): "
                  f"{(probe.stderr.strip().splitlines() or [''])[-1]}")
            return 77
        if args.device == "cuda" and has[1] != "True":
            print("skipped: no GPU (torch.cuda.is_available() is not True)")
            return 77

    os.makedirs(args.out, exist_ok=True)
    pasta_dir = os.path.join(args.out, "pasta")
    model_args = ["--model", args.model, "--device", args.device, "--steps", str(args.steps)]
    env = dict(os.environ, PASTA_OUTPUT_DIR=pasta_dir, PASTA_PRINT="none")
    truth_path = os.path.join(args.out, "truth.json")
    trace = os.path.join(pasta_dir, "trace.pasta")
    if not args.reuse:
        if args.pasta:
            run([args.python, args.pasta, "run", "--torch", "--record", "-f", "-o", pasta_dir,
                 "--", args.python, MODEL] + model_args, env=env)
        else:
            run([args.python, MODEL, "--probe", args.probe] + model_args, env=env)
        run([args.python, MODEL, "--truth", truth_path] + model_args)
    # module_summary's own table: the probe's pipeline has the tool; a --record run's
    # trace is replayed through it.
    summary_dir = pasta_dir
    if not os.path.exists(os.path.join(pasta_dir, "module_summary.json")):
        summary_dir = os.path.join(args.out, "replayed")
        run([args.pasta_trace, "replay", trace, "-o", summary_dir],
            env=dict(os.environ, PASTA_PRINT="none"))

    dump = parse_dump(run([args.pasta_trace, "dump", trace]).stdout)
    pasta_ops = [f for k, f in dump if k == "OpBegin"]
    kernels = [f for k, f in dump if k == "KernelComplete"]
    with open(truth_path) as f:
        truth = json.load(f)
    events = truth["events"]
    ops, module_of = truth_modules(events)
    by_key = {e["key"]: e for e in events if e["device"] == "CPU"}

    failures = []
    # 1. Forward operators on the main thread, in order: names and modules.
    main_thread = min(e["thread"] for e in ops)
    t_fwd = [e for e in sorted(ops, key=lambda e: e["start"])
             if e["thread"] == main_thread and not is_backward(e, by_key)]
    p_main = pasta_ops[0]["thread"] if pasta_ops else None
    p_fwd = [o for o in pasta_ops if o["thread"] == p_main and o.get("backward", "0") == "0"]
    names_t = [e["name"] for e in t_fwd]
    names_p = [o["name"] for o in p_fwd]
    if names_t != names_p:
        first = next((i for i, (a, b) in enumerate(zip(names_t, names_p)) if a != b),
                     min(len(names_t), len(names_p)))
        failures.append(f"forward operators differ at call {first}: torch.profiler "
                        f"{names_t[first:first + 3]}, pasta {names_p[first:first + 3]} "
                        f"({len(names_t)} against {len(names_p)})")
    module_mismatch = 0
    for e, o in zip(t_fwd, p_fwd):
        if e["name"] == o["name"] and module_of[e["key"]] != (o.get("module") or NO_MODULE):
            if module_mismatch < 5:
                failures.append(f"{e['name']}: module {o.get('module') or NO_MODULE!r}, "
                                f"torch.profiler's ranges say {module_of[e['key']]!r}")
            module_mismatch += 1

    # 2. Operators per module, forward and backward, over every thread.
    t_counts = collections.Counter(module_of[e["key"]] for e in ops)
    p_counts = collections.Counter(o.get("module") or NO_MODULE for o in pasta_ops)
    t_back = collections.Counter(module_of[e["key"]] for e in ops if is_backward(e, by_key))
    p_back = collections.Counter(o.get("module") or NO_MODULE for o in pasta_ops
                                 if o.get("backward", "0") != "0")
    for what, t, pc in (("operators", t_counts, p_counts), ("backward operators", t_back, p_back)):
        for m in sorted(set(t) | set(pc)):
            if t[m] != pc[m]:
                failures.append(f"{what} in {m}: pasta {pc[m]}, torch.profiler {t[m]}")

    # 3. module_summary's own table against the same counts.
    with open(os.path.join(summary_dir, "module_summary.json")) as f:
        summary = json.load(f)
    table = {r["module"]: r for r in summary["tables"]["modules"]}
    for m, n in t_counts.items():
        if not table and m == NO_MODULE:  # no module at all: the tables stay empty
            continue
        got = table.get(m, {}).get("ops")
        if got != n:
            failures.append(f"module_summary: {m} has ops {got}, torch.profiler {n}")

    # 4. Kernels per module (GPU): each kernel's module is its operator's.
    if args.device == "cuda":
        t_kernels = collections.Counter()
        op_by_id = {e["id"]: e for e in ops}  # operators' correlation ids, which kernels link to
        # On the device timeline torch.profiler also shows copies, memsets and the ranges of
        # record_function (each module's here): kernels are the rest.
        ranges = {e["name"] for e in events if e["device"] == "CPU" and e["scope"] == 7}
        for k in events:
            if (k["device"] != "CUDA" or k["name"] in ranges
                    or k["name"].startswith(("Memcpy", "Memset", "module: "))):
                continue
            op = op_by_id.get(k["linked"])
            t_kernels[module_of[op["key"]] if op is not None else NO_MODULE] += 1
        op_module = {o["id"]: o.get("module") or NO_MODULE for o in pasta_ops}
        p_kernels = collections.Counter(op_module.get(k["op"], NO_MODULE) for k in kernels)
        for m in sorted(set(t_kernels) | set(p_kernels)):
            if t_kernels[m] != p_kernels[m]:
                failures.append(f"kernels in {m}: pasta {p_kernels[m]}, torch.profiler "
                                f"{t_kernels[m]}")
            if table.get(m, {}).get("launches_self", 0) != p_kernels[m]:
                failures.append(f"module_summary: {m} launches_self "
                                f"{table.get(m, {}).get('launches_self')}, the trace {p_kernels[m]}")

    # 5. Source lines.
    lines_checked = 0
    if args.model == "none":
        # A script without any nn.Module: everything outside every module, at its lines.
        marks = marked_lines(MODEL)
        for o in pasta_ops:
            want = marks["no module input" if o["name"] == "aten::randn" else "no module"]
            if (o.get("module") or NO_MODULE) != NO_MODULE:
                failures.append(f"{o['name']}: module {o.get('module')!r} in a script without one")
            if o["depth"] == "0":
                lines_checked += 1
                if o.get("source") != f"{MODEL}:{want}":
                    failures.append(f"{o['name']}: line {o.get('source')!r}, expected {MODEL}:{want}")
    elif args.model == "small":
        marks = marked_lines(MODEL)
        p_by_id = {o["id"]: o for o in pasta_ops}

        def outermost(o):  # the operator its module's code called (or the range it ran in)
            while o["parent"] in p_by_id and p_by_id[o["parent"]].get("module") == o.get("module"):
                o = p_by_id[o["parent"]]
            return o["name"]
        for o in pasta_ops:
            if o.get("backward", "0") != "0":
                continue
            module = o.get("module") or NO_MODULE
            name = outermost(o)
            want = expected_line(module, name, marks)
            got = o.get("source", "")
            if want is None:
                failures.append(f"{o['name']} in {module}: no expected line (the table misses it)")
                continue
            lines_checked += 1
            if got != f"{MODEL}:{want}":
                if lines_checked < 20:
                    failures.append(f"{o['name']} in {module}: line {got!r}, expected "
                                    f"{MODEL}:{want}")
    else:
        # A model nobody here wrote: the lines of its own operators are in its own files.
        # A model nobody here wrote: the operators its modules run from Python come from
        # its own library's files (transformers' or torchvision's), never from torch's.
        package = {"gpt2": "/transformers/", "resnet18": "/torchvision/"}[args.model]
        own = [o for o in pasta_ops if o.get("backward", "0") == "0"
               and (o.get("module") or NO_MODULE) != NO_MODULE and o["depth"] == "0"]
        files = collections.Counter(o.get("source", "").rsplit(":", 1)[0] for o in own)
        for f, n in files.most_common(6):
            print(f"  {n:5} top-level operators from {f or '(no line)'}")
        in_model = [o for o in own if package in o.get("source", "")]
        lines_checked = len(own)
        if not own or len(in_model) != len(own):
            failures.append(f"{len(in_model)} of {len(own)} top-level operators in modules have a "
                            f"line in {package}")

    print(f"{'module':48} {'ops pasta':>9} {'ops truth':>9} {'backward':>9}")
    for m in sorted(t_counts, key=lambda m: -t_counts[m])[:25]:
        print(f"{m[:48]:48} {p_counts[m]:9} {t_counts[m]:9} {p_back[m]:9}")
    print(f"{len(p_fwd)} forward operators on the main thread, {len(pasta_ops)} in all, "
          f"{len(kernels)} kernels, {lines_checked} lines checked")
    if failures:
        for f in failures[:30]:
            print("FAIL:", f)
        return 1
    print("modules and lines exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
