#!/usr/bin/env python3
"""`pasta diff A B` on the CPU: synthetic report directories whose numbers are chosen here
(an eager and a "compiled" toy transformer with modules, a run within the other's noise,
bad input), pairs of traces recorded on the H100 (expected values summed from `pasta-trace
dump`'s kernel records, not from pasta's reports), and a 64-rank synthetic job against
itself with one rank slowed.

    diff_test.py BUILD_DIR

BUILD_DIR holds cli/pasta-trace; the launcher is this source tree's bin/pasta.
"""
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402
from checks import expect, near  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1])
DATA = os.path.join(ROOT, "tests", "data")
TRACE_TOOL = os.path.join(BUILD, "cli", "pasta-trace")
H100 = "NVIDIA H100 80GB HBM3"


def pasta(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASTA_")}
    env["PASTA_BUILD_DIR"] = BUILD
    return subprocess.run([sys.executable, os.path.join(ROOT, "bin", "pasta"), *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def diff(a, b, *more, code=0):
    """pasta diff A B --json FILE: (the JSON document, stdout, stderr)."""
    out = tempfile.mktemp(suffix=".json")
    p = pasta("diff", a, b, "--json", out, *more)
    expect(f"diff {os.path.basename(a)} {os.path.basename(b)} {' '.join(more)}: exit code",
           p.returncode, code)
    if p.returncode not in (0, 1):
        print(p.stdout, p.stderr)
        return None, p.stdout, p.stderr
    with open(out) as f:
        return json.load(f), p.stdout, p.stderr


def row(rows, key):
    return next((r for r in rows if r["key"] == key), None)


# --- synthetic report directories ---------------------------------------------------------
def write(d, name, doc):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        json.dump(doc, f)


def jitter(i, spread):
    """A deterministic wobble of a launch's time: -spread, 0 or +spread, 0 over any 3 i."""
    return spread * (i % 3 - 1)


class Run:
    """A process's reports written from a list of launches: (module, operator, kernel, grid,
    block, us) per step, steps of the given wall times; every report's numbers are sums of
    those launches, so what the diff must say is known here."""

    def __init__(self, step_ms, launches, program="python3 toy.py --batch 8", gpu=H100,
                 scale=1.0, spread=0.02, modules=None, counters=None, stalls=None):
        self.step_ms, self.launches, self.program, self.gpu = step_ms, launches, program, gpu
        self.scale, self.spread, self.modules = scale, spread, modules
        self.counters, self.stalls = counters, stalls

    def kernels(self):
        """Every launch: (step, module, operator, kernel, grid, block, us). A launch's wobble
        goes one way in step 1, none in step 2, the other in step 3: sums over the steps are
        the times given."""
        out = []
        for step in range(len(self.step_ms)):
            for i, (module, op, kernel, grid, block, us) in enumerate(self.launches):
                sign = 1 if i % 2 else -1
                out.append((step, module, op, kernel, grid, block,
                            us * self.scale * (1 + sign * jitter(step, self.spread))))
        return out

    def write(self, d, torch=True):
        launches = self.kernels()
        events, t = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                      "args": {"name": f"GPU 0: {self.gpu}"}}], 1000.0
        for step, wall in enumerate(self.step_ms):
            start = t
            if torch:
                events += [{"name": "Optimizer.zero_grad#SGD.zero_grad", "cat": "op", "ph": ph,
                            "pid": 0, "tid": 1, "ts": start + dt} for ph, dt in (("B", 0), ("E", 1))]
            k = start + 2
            for s, _, _, kernel, grid, block, us in launches:
                if s == step:
                    events.append({"name": f"void {kernel}(float*)", "cat": "kernel", "ph": "X",
                                   "pid": 1, "tid": 7, "ts": round(k, 3), "dur": round(us, 3),
                                   "args": {"grid": grid, "block": block}})
                    k += us + 1
            end = start + wall * 1e3
            if torch:
                events += [{"name": "Optimizer.step#SGD.step", "cat": "op", "ph": ph, "pid": 0,
                            "tid": 1, "ts": ts} for ph, ts in (("B", end - 5), ("E", end))]
            t = end
        write(d, "timeline.trace.json", {"traceEvents": events})
        by_kernel, by_op = {}, {}
        for _, module, op, kernel, _, _, us in launches:
            n, total = by_kernel.get(kernel, (0, 0.0))
            by_kernel[kernel] = (n + 1, total + round(us, 3) / 1e3)
            n, total = by_op.get(op, (0, 0.0))
            by_op[op] = (n + 1, total + round(us, 3) / 1e3)
        write(d, "kernel_freq.json", {"tool": "kernel_freq", "summary": {}, "tables": {"kernels": [
            {"kernel": k, "signature": f"void {k}(float*)", "launches": n, "total_ms": ms}
            for k, (n, ms) in by_kernel.items()]}})
        write(d, "run.json", {"program": self.program, "gpus": [f"{self.gpu}, 580.159"]})
        if not torch:
            return
        write(d, "op_summary.json", {"tool": "op_summary", "summary": {}, "tables": {"operators": [
            {"operator": op, "calls": n, "kernels": n, "device_self_ms": ms}
            for op, (n, ms) in by_op.items()]}})
        write(d, "tensor_alloc.json", {"tool": "tensor_alloc", "tables": {"devices": [
            {"device": 0, "peak_live_mb": 100.0 * self.scale}]}})
        if self.modules is not None:
            self.write_modules(d, launches)
        if self.counters:  # op_counters.profile.json: the attention GEMM measured
            dram_read, occupancy = self.counters
            n = 2 * len(self.step_ms)
            write(d, "op_counters.profile.json", {"schema": "pasta.op_profile", "version": "1.1",
                                                  "operators": [{"path": "aten::linear/aten::mm",
                                                                 "operator": "aten::mm",
                                                                 "kernels": [{
                "kernel": GEMM, "grid": [4, 1, 1], "block": [128, 1, 1], "launches": n,
                "measured": 1, "propagated": n - 1, "device_ns": 1000 * n,
                "metrics": {"dram_bytes_read": dram_read * n, "dram_bytes_write": 5e5 * n,
                            "achieved_occupancy_pct": occupancy, "flops": 1e9 * n}}]}],
                "unattributed": []})
        if self.stalls:  # -t stall_blame: run 1's samples in sampled/, run 2's blame here
            reasons, blamed = self.stalls
            total = sum(reasons.values())
            write(os.path.join(d, "sampled"), "stall_blame.json", {"tool": "stall_blame",
                                                                   "tables": {
                "reasons": [{"reason": r, "samples": n, "share": n / total}
                            for r, n in reasons.items()],
                "stalls": [{"kernel": "softmax_warp_forward", "pc": "0x10", "reason": r,
                            "samples": n} for r, n in reasons.items()]}})
            write(d, "stall_blame.json", {"tool": "stall_blame", "tables": {"blame_operators": [
                {"operator": op, "tensors": 1, "stall_samples": n, "share": n / total}
                for op, n in blamed.items()]}})

    def write_modules(self, d, launches):
        """module_summary.json as the module issue's contract has it."""
        self_ns, kernels = {}, {}
        for _, module, _, kernel, _, _, us in launches:
            ns = round(us, 3) * 1e3
            n, t = self_ns.get(module, (0, 0.0))
            self_ns[module] = (n + 1, t + ns)
            n, t = kernels.get((module, kernel), (0, 0.0))
            kernels[(module, kernel)] = (n + 1, t + ns)
        rows = []
        for module, cls in self.modules:
            parent = module.rsplit(".", 1)[0] if "." in module else ""
            sub = [m for m in self_ns if m == module or m.startswith(module + ".")]
            rows.append({"module": module, "class": cls, "parent": parent,
                         "depth": module.count("."), "calls": len(self.step_ms), "ops": 1,
                         "launches_self": self_ns.get(module, (0, 0))[0],
                         "launches_total": sum(self_ns[m][0] for m in sub),
                         "device_ns_self": self_ns.get(module, (0, 0.0))[1],
                         "device_ns_total": sum(self_ns[m][1] for m in sub),
                         "alloc_bytes": 0, "peak_bytes": 1 << 20})
        rows.append({"module": "(no module)", "class": "", "parent": "", "depth": 0, "calls": 0,
                     "ops": 1, "launches_self": self_ns["(no module)"][0],
                     "launches_total": self_ns["(no module)"][0],
                     "device_ns_self": self_ns["(no module)"][1],
                     "device_ns_total": self_ns["(no module)"][1], "alloc_bytes": 0,
                     "peak_bytes": 0})
        write(d, "module_summary.json", {"tool": "module_summary", "summary": {}, "tables": {
            "modules": rows, "module_kernels": [
                {"module": m, "kernel": k, "launches": n, "device_ns": ns}
                for (m, k), (n, ns) in kernels.items()]}})


MODULES = [("Toy", "Toy"), ("Toy.head", "Linear")] + [
    (f"Toy.h.{i}{path}", cls) for i in range(2) for path, cls in (
        ("", "Block"), (".attn", "Attention"), (".attn.c_attn", "Linear"), (".mlp", "MLP"),
        (".mlp.fc", "Linear"), (".mlp.act", "GELU"), (".mlp.proj", "Linear"))]
GEMM = "sm90_xmma_gemm_f32f32"


def block(i, c_attn_us, fused):
    """One transformer block's launches (us): the attention's projection (a GEMM) and its
    softmax, the MLP's two GEMMs, its GELU, add and mul, or one Triton kernel fusing all
    three."""
    h = f"Toy.h.{i}"
    out = [(f"{h}.attn.c_attn", "aten::mm", GEMM, "(4,1,1)", "(128,1,1)", c_attn_us),
           (f"{h}.attn", "aten::softmax", "softmax_warp_forward", "(2,1,1)", "(128,1,1)", 20.0),
           (f"{h}.mlp.fc", "aten::mm", GEMM, "(8,1,1)", "(128,1,1)", 50.0)]
    if fused:
        out.append((f"{h}.mlp", "triton_poi_fused_add_gelu_mul_0",
                    "triton_poi_fused_add_gelu_mul_0", "(16,1,1)", "(256,1,1)", 8.0))
    else:
        out += [(f"{h}.mlp.act", "aten::gelu", "gelu_kernel", "(16,1,1)", "(256,1,1)", 10.0),
                (f"{h}.mlp", "aten::add", "add_kernel", "(16,1,1)", "(256,1,1)", 5.0),
                (f"{h}.mlp", "aten::mul", "mul_kernel", "(16,1,1)", "(256,1,1)", 5.0)]
    out.append((f"{h}.mlp.proj", "aten::mm", GEMM, "(8,2,1)", "(128,1,1)", 50.0))
    return out


def toy(c_attn_us, fused):
    return [x for i in range(2) for x in block(i, c_attn_us, fused)] + [
        ("Toy.head", "aten::mm", GEMM, "(16,1,1)", "(128,1,1)", 100.0),
        ("(no module)", "aten::_foreach_add_", "multi_tensor_apply_kernel", "(8,1,1)",
         "(512,1,1)", 30.0)]


def eager_vs_compiled(tmp):
    """The toy model eager (A) and with its MLP fused and its attention GEMM faster (B):
    what changed, per module, operator, kernel and signature, by hand."""
    a, b = os.path.join(tmp, "eager"), os.path.join(tmp, "compiled")
    Run([10.0, 10.2, 9.8], toy(40.0, False), modules=MODULES, counters=(1e6, 40.0),
        stalls=({"long_scoreboard": 600, "wait": 400}, {"aten::softmax": 500})).write(a)
    Run([7.0, 7.1, 6.9], toy(30.0, True), modules=MODULES, counters=(8e5, 55.0),
        stalls=({"long_scoreboard": 300, "wait": 690, "barrier": 10},
                {"aten::softmax": 400})).write(b)
    doc, out, _ = diff(a, b)
    h = doc["headline"]
    expect("per step: both runs have steps", doc["unit"], "step")
    expect("headline: step time, the median of steps 2 and 3 (ms)", (h["metric"], h["a_ms"],
                                                                       h["b_ms"]),
           ("step", 10.0, 7.0))
    near("headline: -30%", h["delta_pct"], -30.0, 1e-9)
    # Steps 2-3: 10.2, 9.8 and 7.1, 6.9: standard errors 1.25 sd / sqrt 2.
    se_a = 1.25 * statistics.stdev([10.2, 9.8]) / 2 ** 0.5
    se_b = 1.25 * statistics.stdev([7.1, 6.9]) / 2 ** 0.5
    near("headline noise: 3 sqrt(se_A^2 + se_B^2) (ms)", h["noise_ms"],
         3 * (se_a ** 2 + se_b ** 2) ** 0.5, 1e-9)
    expect("headline verdict", h["verdict"], "faster")
    # Device time per step: 2 x (40 + 20 + 50 + 10 + 5 + 5 + 50) + 100 + 30 = 490 us in A,
    # 2 x (30 + 20 + 50 + 8 + 50) + 130 = 446 us in B.
    near("device time per step, A (ms)", doc["device"]["a_ms"], 0.490, 1e-9)
    near("device time per step, B (ms)", doc["device"]["b_ms"], 0.446, 1e-9)
    expect("the answer leads", out.splitlines()[0].startswith(
        "step 10.00 ms \u2192 7.00 ms (\u221230.0%, beyond the runs' spread"), True)
    with open(os.path.join(ROOT, "docs", "user-guide.md")) as f:
        expect("the user guide shows this line", out.splitlines()[0] in f.read().splitlines(),
               True)
    expect("the summary names the MLP, the attention, the fusion", re.findall(
        r"h\.\*\.mlp [^,;]+|h\.\*\.attn [^,;]+|kernels fused in [^;]+", out.splitlines()[0]),
        ["h.*.mlp \u22120.024 ms", "h.*.attn \u22120.020 ms",
         "kernels fused in h.*.mlp (2 modules): 3 \u2192 1"])
    # Modules, collapsed: h.*.mlp per step, 2 x (50 + 10 + 5 + 5 + 50) us in A and
    # 2 x (50 + 8 + 50) in B.
    mlp = row(doc["modules_collapsed"], "h.*.mlp")
    near("h.*.mlp: A (ms/step)", mlp["a_ms"], 0.240, 1e-9)
    near("h.*.mlp: B (ms/step)", mlp["b_ms"], 0.216, 1e-9)
    expect("h.*.mlp: verdict", mlp["verdict"], "faster")
    expect("the root module matched, named by its class", row(doc["modules"], "")["name"], "Toy")
    expect("modules matched below the root", sorted(r["key"] for r in doc["modules"]),
           sorted(["", "(no module)"] + [m[4:] for m, _ in MODULES if m.startswith("Toy.")]))
    head = row(doc["modules"], "head")
    expect("an unchanged module: head the same", head["verdict"], "same")
    changes = doc["changes"]
    expect("one kernel change: the fusion, in both MLPs", [(c["module"], c["kind"], c["modules"],
                                                            [k["kernel"] for k in c["gone"]],
                                                            [k["kernel"] for k in c["new"]])
                                                           for c in changes],
           [("h.*.mlp", "fused", 2, ["add_kernel", "gelu_kernel", "mul_kernel"],
             ["triton_poi_fused_add_gelu_mul_0"])])
    near("the fusion's change per step (ms): 2 x (8 - 20) us", changes[0]["delta_ms"], -0.024,
         1e-9)
    ops = doc["operators"]
    expect("operators gone and new", sorted((r["key"], r["verdict"]) for r in ops
                                            if r["verdict"] in ("gone", "new")),
           [("aten::add", "gone"), ("aten::gelu", "gone"), ("aten::mul", "gone"),
            ("triton_poi_fused_add_gelu_mul_0", "new")])
    mm = row(ops, "aten::mm")
    near("aten::mm: -2 x 10 us a step (ms)", mm["delta_ms"], -0.020, 1e-9)
    sig = row(doc["signatures"], f"{GEMM} (4,1,1)x(128,1,1)")
    near("the attention GEMM's signature: 40 -> 30 us a launch", sig["delta_us"], -10.0, 1e-9)
    expect("its verdict", sig["verdict"], "faster")
    same = row(doc["signatures"], f"{GEMM} (8,1,1)x(128,1,1)")
    expect("the MLP GEMM's signature: unchanged", same["verdict"], "same")
    expect("memory: peak 100 -> 100 MB (scale 1)", doc["memory"],
           [{"device": "0", "a_peak_mb": 100.0, "b_peak_mb": 100.0, "delta_mb": 0.0}])
    expect("no notes for a clean pair", doc["notes"], [])
    # Counters where both runs measured them: summed ones per step (6 launches over 3 steps),
    # rates as measured.
    c = doc["counters"]
    expect("counters: the measured signature", [(r["operator"], r["kernel"], r["shape"])
                                                for r in c],
           [("aten::linear/aten::mm", GEMM, "(4,1,1)x(128,1,1)")])
    expect("counters: DRAM bytes per step, A and B", (c[0]["a_dram_bytes"], c[0]["b_dram_bytes"]),
           (2 * (1e6 + 5e5), 2 * (8e5 + 5e5)))
    expect("counters: occupancy", (c[0]["a_occupancy_pct"], c[0]["b_occupancy_pct"]),
           (40.0, 55.0))
    expect("counters: flops per step", c[0]["metrics"]["flops"], {"a": 2e9, "b": 2e9,
                                                                  "delta_pct": 0.0})
    # Stall shares, judged by the sampling noise: 3 sqrt(pa (1 - pa) / 1000 + pb (1 - pb) / 1000).
    reasons = {r["key"]: r for r in doc["stalls"]["reason"]}
    r = reasons["long_scoreboard"]
    expect("stalls: long scoreboard 60% -> 30%", (r["a_share_pct"], r["b_share_pct"]), (60.0, 30.0))
    near("its noise (points)", r["noise_points"],
         300 * (0.6 * 0.4 / 1000 + 0.3 * 0.7 / 1000) ** 0.5, 1e-9)
    expect("verdicts", {k: v["verdict"] for k, v in reasons.items()},
           {"long_scoreboard": "lower", "wait": "higher", "barrier": "new"})
    expect("stalls: per kernel and blamed operator", sorted(doc["stalls"]),
           ["blamed operator", "kernel", "reason"])
    expect("blamed operator: 100% both", [(r["key"], r["verdict"])
                                          for r in doc["stalls"]["blamed operator"]],
           [("aten::softmax", "same")])
    # The other way round, B is slower: the CI gate.
    _, _, err = diff(b, a, "--fail-if-slower", "10", code=1)
    expect("the gate says why", err.strip().splitlines()[-1],
           "pasta: B is slower than A by 42.9% (step), more than --fail-if-slower 10%")
    diff(b, a, "--fail-if-slower", "50")
    diff(a, b, "--fail-if-slower", "0")
    return a, b


def stray_root(tmp, a):
    """B with a second root module, "h" (a module the tracker met outside the model's call,
    as past a compiled model's graph break, named by its attribute path and holding no
    kernel): the model's root still leaves the paths, and B's modules meet A's."""
    b = os.path.join(tmp, "compiled-stray-root")
    Run([7.0, 7.1, 6.9], toy(30.0, True), modules=MODULES + [("h", "ModuleList")]).write(b)
    doc, _, _ = diff(a, b)
    expect("a second root: the fusion, in both MLPs, as without it",
           [(c["module"], c["kind"], c["modules"]) for c in doc["changes"]],
           [("h.*.mlp", "fused", 2)])
    mlp = row(doc["modules"], "h.0.mlp")
    near("a second root: h.0.mlp in both runs, B (ms/step)", mlp["b_ms"], 0.108, 1e-9)
    expect("a second root: the root is the model's", row(doc["modules"], "")["name"], "Toy")


def page(tmp, a, b):
    """The page of the eager/compiled pair in headless Chromium: the answer, the modules'
    chart (bars, labels, values, tooltips), every table, sorting ready, no script error and
    no network URL. Skipped without Chromium, Jinja2 or matplotlib (failed with
    PASTA_REQUIRE_BROWSER=1, as report_test.py does)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = [m for m, ok in (("chromium", browser), ("jinja2", importlib.util.find_spec("jinja2")),
                               ("matplotlib", importlib.util.find_spec("matplotlib"))) if not ok]
    if missing:
        print(f"{'FAIL' if os.environ.get('PASTA_REQUIRE_BROWSER') == '1' else 'skip'} the page: "
              f"no {', '.join(missing)}")
        checks.failures += os.environ.get("PASTA_REQUIRE_BROWSER") == "1"
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import report_test  # its DOM reader and browser driver
    out = os.path.join(tmp, "page.html")
    p = pasta("diff", a, b, "-o", out)
    expect("the page is named", p.stdout.splitlines()[-1],
           f"pasta: the runs side by side in {out}")
    with open(os.path.join(tmp, "page.json")) as f:
        doc = json.load(f)
    dom, console = report_test.browse(browser, out, tmp)
    text = report_test.text
    expect("page: console messages", console, [])
    root = next(n for n in report_test.walk(dom.root) if n["tag"] == "html")
    expect("page: script errors", root["attrs"].get("data-errors"), None)
    expect("page: the answer first", text(dom.ids["answer"]), doc["summary"])
    expect("page: the notes", [text(n) for n in report_test.walk(dom.root)
                               if "note-line" in report_test.classes(n)], doc["notes"])
    expect("page: the modules' chart, labels",
           [text(dom.ids.get(f"modules-label-{i}")) for i in range(3)],
           ["h.*.mlp", "h.*.attn", None])
    expect("page: its values", [text(dom.ids.get(f"modules-value-{i}")) for i in range(2)],
           ["\u22120.024 ms", "\u22120.02 ms"])
    expect("page: its tooltips", [report_test.tooltip(dom.ids.get(f"modules-bar-{i}"))
                                  for i in range(2)],
           ["h.*.mlp: \u22120.024 ms, faster", "h.*.attn: \u22120.02 ms, faster"])
    expect("page: charts", sorted(i for i in dom.ids if i in ("kinds", "modules", "operators",
                                                              "kernels", "ranks")),
           ["kernels", "kinds", "modules", "operators"])
    sections = {n["attrs"]["id"]: n for n in report_test.walk(dom.root) if n["tag"] == "section"}
    rows = {k: sum(1 for n in report_test.walk(v) if n["tag"] == "tr") - 1
            for k, v in sections.items()}
    expect("page: a table per level, every row", rows, {
        "modules-collapsed": len(doc["modules_collapsed"]), "modules": len(doc["modules"]),
        "operators": len(doc["operators"]), "kernels": len(doc["kernels"]),
        "signatures": len(doc["signatures"]), "changes": 1, "steps": 3, "memory": 1,
        "counters": 1, "stalls-reason": 3, "stalls-kernel": 1, "stalls-blamed-operator": 1})
    tables = [n for n in report_test.walk(dom.root) if n["tag"] == "table"]
    expect("page: every table sortable", {t["attrs"].get("data-sortable") for t in tables},
           {"ready"})
    with open(out) as f:
        urls = set(re.findall(r"https?://[^\s\"'<>)]+", f.read()))
    expect("page: network URLs", sorted(u for u in urls if not u.startswith("http://www.w3.org/")),
           [])


def within_noise(tmp, a):
    """The same launches, 0.1% slower, steps 50 us longer: within the spread."""
    c = os.path.join(tmp, "again")
    Run([10.05, 10.25, 9.85], toy(40.0, False), modules=MODULES, scale=1.001).write(c)
    doc, out, _ = diff(a, c, "--fail-if-slower", "0.1", code=1)
    expect("headline within noise", doc["headline"]["verdict"], "within noise")
    expect("every kernel within noise", {r["verdict"] for r in doc["kernels"]}, {"within noise"})
    expect("the line says so", out.splitlines()[0],
           "step 10.00 ms \u2192 10.05 ms (+0.5%, within the runs' spread of \u00b11.06 ms): "
           "device time per step 0.490 ms \u2192 0.490 ms; no change beyond the noise")
    same, out, _ = diff(a, a)
    expect("A against itself: every row the same", {r["verdict"] for r in same["kernels"] +
                                                     same["modules"] + same["operators"]},
           {"same"})
    expect("A against itself: the line", out.splitlines()[0],
           "step 10.00 ms \u2192 10.00 ms (\u00b10.0%, no change): device time per step "
           "0.490 ms \u2192 0.490 ms; no change beyond the noise")


def bad_inputs(tmp, a, b):
    """Different programs, GPUs, --torch on one side, modules on one side, damaged input:
    one line each, never a traceback."""
    other = os.path.join(tmp, "other")
    Run([10.0, 10.0, 10.0], toy(40.0, False), program="python3 other.py",
        gpu="NVIDIA H200").write(other, torch=False)
    doc, out, err = diff(a, other)
    expect("notes: programs, GPUs, --torch", doc["notes"], [
        "A and B ran different programs (python3 toy.py --batch 8; python3 other.py): comparing "
        "what matches, 6 of 6 kernels, 1.47 ms \u2192 1.47 ms per run",
        "A ran on NVIDIA H100 80GB HBM3 and B on NVIDIA H200: device times of different GPUs",
        "A was profiled with --torch and B without: kernels are compared, operators and modules "
        "are not",
        "only one run has training steps: compared per run, not per step"])
    expect("the notes printed one line each", [l for l in out.splitlines()
                                              if l.startswith("note: ")],
           ["note: " + n for n in doc["notes"]])
    expect("no operators compared", doc["operators"], [])
    plain = os.path.join(tmp, "no-modules")
    Run([7.0, 7.1, 6.9], toy(30.0, True)).write(plain)
    doc, _, _ = diff(a, plain)
    expect("modules on one side", doc["notes"], [
        "only A has modules (module_summary): operators and kernels are compared, modules are "
        "not"])
    expect("no modules compared", (doc["modules"], doc["explained"]), ([], []))
    expect("kernels changed, for the run", [(c["module"], c["kind"]) for c in doc["changes"]],
           [(None, "replaced")])
    bare = []  # modules without the kernels each launched: the kernel changes are the run's
    for d in (a, b):
        bare.append(os.path.join(tmp, "bare-" + os.path.basename(d)))
        shutil.copytree(d, bare[-1])
        with open(os.path.join(d, "module_summary.json")) as f:
            doc = json.load(f)
        doc["tables"]["module_kernels"] = []
        write(bare[-1], "module_summary.json", doc)
    doc, _, _ = diff(*bare)
    expect("modules without their kernels: one kernel change, for the run",
           [(c["module"], c["kind"], len(c["gone"]), len(c["new"])) for c in doc["changes"]],
           [(None, "replaced", 3, 1)])
    expect("... and the modules compared", row(doc["modules_collapsed"], "h.*.mlp")["verdict"],
           "faster")
    damaged = os.path.join(tmp, "damaged")
    shutil.copytree(b, damaged)
    with open(os.path.join(damaged, "kernel_freq.json"), "w") as f:
        f.write('{"tool": "kernel_freq", "tables": {')
    cases = [
        ((a, damaged), f"pasta: {damaged}/kernel_freq.json is damaged (Expecting property name "
                       "enclosed in double quotes: line 1 column 36 (char 35)): replay the trace "
                       "or run the program again"),
        ((a, os.path.join(tmp, "missing")), f"pasta: B: {tmp}/missing: no such file or directory"),
        ((os.path.join(ROOT, "README.md"), a),
         f"pasta: A: {ROOT}/README.md is neither a report directory nor a pasta trace"),
        ((a, tmp + "/empty"), f"pasta: {tmp}/empty holds no pasta reports (no kernel_freq.json, "
                              "no processes/ list, no trace.pasta)"),
    ]
    os.makedirs(tmp + "/empty")
    for (x, y), line in cases:
        p = pasta("diff", x, y)
        expect(f"bad input, one line: {line[:60]}...", (p.returncode, p.stderr), (2, line + "\n"))
    # A timeline that is not JSON: a note, and no spread (nor steps) for that run.
    broken = os.path.join(tmp, "broken-timeline")
    shutil.copytree(b, broken)
    with open(os.path.join(broken, "timeline.trace.json"), "w") as f:
        f.write("not json")
    doc, _, _ = diff(a, broken)
    expect("a damaged timeline is a note", [n for n in doc["notes"] if "timeline" in n],
           [f"B: {broken}/timeline.trace.json is damaged: no per-launch spread or steps for "
            "this run"])


# --- recorded traces ---------------------------------------------------------------------------
def dump(trace):
    """Independently of pasta's reports, from the trace's own records: per kernel (demangled
    by c++filt, without `void` and parameters) launches and device ms; per operator name the
    device ms of the kernels, copies and memsets it launched itself; training steps (ms)."""
    lines = subprocess.run([TRACE_TOOL, "dump", trace], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    field = re.compile(r'(\w+)=("[^"]*"|\S+)')
    records, op_names, op_ranges, open_ops = [], {}, [], {}
    for line in lines:
        kind = line.split(" ", 1)[0]
        f = {k: v.strip('"') for k, v in field.findall(line)}
        if kind in ("KernelComplete", "Memcpy", "Memset"):
            records.append((kind, f.get("name"), (int(f["end_ns"]) - int(f["start_ns"])) / 1e6,
                            f.get("op", "0")))
        elif kind == "OpBegin":
            op_names[f["id"]] = f["name"]
            open_ops[f["id"]] = int(f["time_ns"])
        elif kind == "OpEnd":
            op_ranges.append((f["name"], open_ops.pop(f["id"], None), int(f["time_ns"])))
    mangled = sorted({r[1] for r in records if r[0] == "KernelComplete"})
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    name_of = {m: strip(d) for m, d in zip(mangled, demangled)}
    kernels, ops = {}, {}
    for kind, name, ms, op in records:
        if kind == "KernelComplete":
            n, t = kernels.get(name_of[name], (0, 0.0))
            kernels[name_of[name]] = (n + 1, t + ms)
        if op != "0":
            ops[op_names[op]] = ops.get(op_names[op], 0.0) + ms
    ends = sorted(t for name, _, t in op_ranges if name.startswith("Optimizer.step#"))
    starts = [s for name, s, _ in op_ranges if name.startswith("Optimizer.zero_grad#")]
    steps, previous = [], min((s for _, s, _ in op_ranges), default=0)
    for end in ends:
        start = max([z for z in starts if previous <= z < end], default=previous)
        steps.append((end - start) / 1e6)
        previous = end
    return kernels, ops, steps


def strip(name):
    """`void f<...>(args)` -> `f<...>`."""
    name = name[5:] if name.startswith("void ") else name
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                return name[:i]
    return name


# Pairs of traces in tests/data that `pasta diff` must get right to the sums of their own
# records: (A, B, what the pair is). A pair recorded for the diff (the same model at two batch
# sizes, eager against compiled) is one more line here.
PAIRS = [
    ("ddp_rank0_h100", "ddp_rank1_h100", "two ranks of one DDP job: one program, one GPU"),
    ("gpt12_torch_h100", "resnet18_torch_h100", "two --torch programs: a 12-block GPT, ResNet-18"),
    ("gpt2_b2_h200", "gpt2_b8_h200", "one transformers GPT-2 with modules, at batch 2 and 8"),
]


def check_pair(a_name, b_name, what):
    """pasta diff of two traces against what their records say: every kernel's launches and
    device time, every operator's device self time, the step times (per step when both have
    steps, else the device time), per unit. Returns the diff's document."""
    a, b = (os.path.join(DATA, n + ".pasta") for n in (a_name, b_name))
    (ka, oa, sa), (kb, ob, sb) = dump(a), dump(b)
    doc, out, _ = diff(a, b)
    per_step = bool(sa and sb)
    expect(f"{what}: per {'step' if per_step else 'run'}", doc["unit"],
           "step" if per_step else "run")
    fa, fb = (1 / len(sa), 1 / len(sb)) if per_step else (1, 1)
    got = {r["key"]: (r["a_launches"], r["a_ms"], r["b_launches"], r["b_ms"])
           for r in doc["kernels"]}
    want = {k: (ka[k][0] * fa if k in ka else None, ka[k][1] * fa if k in ka else None,
                kb[k][0] * fb if k in kb else None, kb[k][1] * fb if k in kb else None)
            for k in set(ka) | set(kb)}
    expect(f"{what}: the kernels, by name", sorted(got), sorted(want))
    off = [k for k in want if k in got and any(
        (x is None) != (y is None) or (x is not None and abs(x - y) > 1e-6)
        for x, y in zip(got[k], want[k]))]
    expect(f"{what}: kernels whose launches or device time differ from the trace's sums", off, [])
    if oa and ob:
        got = {r["key"]: (r["a_ms"] or 0.0, r["b_ms"] or 0.0) for r in doc["operators"]}
        off = [op for op in set(oa) | set(ob) if
               abs(got.get(op, (0, 0))[0] - oa.get(op, 0.0) * fa) > 1e-6 or
               abs(got.get(op, (0, 0))[1] - ob.get(op, 0.0) * fb) > 1e-6]
        expect(f"{what}: operators whose device self time differs from the trace's sums", off, [])
    if per_step:  # the median of the steps after the first (timeline times: to the ns)
        for side, steps in (("a", sa), ("b", sb)):
            near(f"{what}: {side.upper()}'s step (ms)", doc["headline"][f"{side}_ms"],
                 statistics.median(steps[1:] if len(steps) > 1 else steps), 1e-3)
    else:
        for side, kernels in (("a", ka), ("b", kb)):
            near(f"{what}: {side.upper()}'s device time (ms)", doc["headline"][f"{side}_ms"],
                 sum(t for _, t in kernels.values()), 1e-6)
    print(out.splitlines()[0])
    return doc, (ka, oa, sa), (kb, ob, sb)


def recorded(tmp):
    """Every pair of PAIRS, and what the first two say besides."""
    docs = {(a, b): check_pair(a, b, what) for a, b, what in PAIRS}
    doc, _, _ = docs[("ddp_rank0_h100", "ddp_rank1_h100")]
    expect("DDP: the same program and GPU, no note", doc["notes"], [])
    expect("DDP: the program read from the trace", doc["a"]["program"], "ddp_train.py")
    doc, (kg, _, sg), (kr, _, sr) = docs[("gpt12_torch_h100", "resnet18_torch_h100")]
    shared = set(kg) & set(kr)
    matched = [sum(k[n][1] for n in shared) / len(s) for k, s in ((kg, sg), (kr, sr))]
    expect("different programs, said in one line", [n for n in doc["notes"] if "programs" in n],
           [f"A and B ran different programs (python3 examples/pytorch/gpt_block.py --layers 12 "
            f"--steps 3; python3 tests/gpu/torch_model.py --steps 1): comparing what matches, "
            f"{len(shared)} of {len(set(kg) | set(kr))} kernels, {matched[0]:,.2f} ms \u2192 "
            f"{matched[1]:,.2f} ms per step"])
    expect("GPT's first step is start-up, said once", [n for n in doc["notes"] if "step 1" in n],
           [f"A: step 1 took {sg[0]:.1f} ms against a median of {statistics.median(sg[1:]):.1f} ms "
            "(start-up): its work is in the per-step averages; --capture-range=steps:A-B "
            "profiles steady steps"])

    resnet, step = (os.path.join(DATA, n + ".pasta") for n in ("resnet18_torch_h100",
                                                              "resnet18_step_h100"))
    doc, _, _ = diff(resnet, step)
    expect("--torch on one side", [n for n in doc["notes"] if "--torch" in n],
           ["A was profiled with --torch and B without: kernels are compared, operators and "
            "modules are not"])
    cut = os.path.join(tmp, "cut.pasta")
    with open(step, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(100000))
    p = pasta("diff", resnet, cut)
    expect("a cut-off trace: one line", (p.returncode, p.stderr.count("\n"),
                                         p.stderr.startswith(f"pasta: {cut} cannot be replayed: ")),
           (2, 1, True))


# --- jobs ------------------------------------------------------------------------------------
def rank_dir(job, rank, slow=1.0, kernels=10):
    """A rank's reports: a GEMM, an elementwise kernel and an all-reduce, 10 launches each."""
    d = os.path.join(job, f"rank{rank}")
    write(os.path.join(job, "processes"), f"node-{1000 + rank}.json",
          {"pasta_process": 1, "pid": 1000 + rank, "host": "node", "rank": rank,
           "run_id": "synthetic", "dir": f"rank{rank}", "status": "finished",
           "command": "python3 train.py"})
    launches = [("gemm_kernel", "(8,1,1)", 50.0 * slow), ("elementwise_kernel", "(64,1,1)", 10.0),
                ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "(1,1,1)", 30.0)]
    events, t, totals = [], 0.0, {}
    for i in range(kernels):
        for name, grid, us in launches:
            us = round(us * (1 + jitter(i + rank, 0.02)), 3)
            events.append({"name": f"void {name}(float*)", "cat": "kernel", "ph": "X", "pid": 1,
                           "tid": 7, "ts": t, "dur": us, "args": {"grid": grid,
                                                                   "block": "(256,1,1)"}})
            t += us + 1
            n, ms = totals.get(name, (0, 0.0))
            totals[name] = (n + 1, ms + us / 1e3)
    write(d, "timeline.trace.json", {"traceEvents": events})
    write(d, "kernel_freq.json", {"tool": "kernel_freq", "tables": {"kernels": [
        {"kernel": k, "launches": n, "total_ms": ms} for k, (n, ms) in totals.items()]}})


def job(tmp, ranks=64, slowed=17):
    """A 64-rank job against itself with one rank's GEMM 50% slower: that rank and that kernel
    come first."""
    a, b = os.path.join(tmp, "job-a"), os.path.join(tmp, "job-b")
    for r in range(ranks):
        rank_dir(a, r)
        rank_dir(b, r, slow=1.5 if r == slowed else 1.0)
    same, _, _ = diff(a, a, "--fail-if-slower", "0")
    expect("a job against itself: every rank the same",
           {r["compute"]["verdict"] for r in same["ranks"]}, {"same"})
    expect("every process compared", len(same["ranks"]), ranks)
    doc, out, err = diff(a, b, "--fail-if-slower", "5", code=1)
    first = doc["ranks"][0]
    expect("the slowed rank comes first", first["process"], f"rank {slowed}")
    expect("its verdict", first["compute"]["verdict"], "slower")
    expect("its top kernel: the GEMM", first["top_kernel"]["short"], "gemm_kernel")
    expect("the other ranks: the same", {r["compute"]["verdict"] for r in doc["ranks"][1:]},
           {"same"})
    expect("merged: the GEMM comes first", doc["kernels"][0]["key"], "gemm_kernel")
    expect("merged: the GEMM's verdict", doc["kernels"][0]["verdict"], "slower")
    expect("merged: every other kernel the same", {r["verdict"] for r in doc["kernels"][1:]},
           {"same"})
    expect("the line names the rank and the kernel", re.search(
        r"rank 17 \+0\.\d+ ms \(gemm_kernel \+0\.\d+ ms\); 63 of 64 processes within noise or "
        r"unchanged", out.splitlines()[0]) is not None, True)
    print(out.splitlines()[0])
    print(err.strip())
    with open(os.path.join(b, "rank5", "kernel_freq.json"), "w") as f:
        f.write("{")
    doc, _, _ = diff(a, b)
    expect("a damaged rank: left out, said in one line", [n for n in doc["notes"]
                                                          if "rank 5" in n],
           [f"B: rank 5: {b}/rank5/kernel_freq.json is damaged (Expecting property name enclosed "
            "in double quotes: line 1 column 2 (char 1)): replay the trace or run the program "
            "again: left out", "A only: rank 5"])
    expect("the others compared", len(doc["ranks"]), ranks - 1)
    rank_dir(b, 5)
    if importlib.util.find_spec("jinja2") and importlib.util.find_spec("matplotlib"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import report_test  # its DOM reader
        out = os.path.join(tmp, "job.html")
        pasta("diff", a, b, "-o", out)
        with open(out) as f:
            dom = report_test.Dom(f.read())
        expect("job page: the ranks' chart leads with the slowed rank",
               report_test.text(dom.ids.get("ranks-label-0")), f"rank {slowed}")
        expect("job page: its tooltip", report_test.tooltip(dom.ids.get("ranks-bar-0")),
               f"rank {slowed}: +0.25 ms, slower")


def main():
    tmp = tempfile.mkdtemp(prefix="pasta-diff-test-")
    a, b = eager_vs_compiled(tmp)
    page(tmp, a, b)
    stray_root(tmp, a)
    within_noise(tmp, a)
    bad_inputs(tmp, a, b)
    if os.path.exists(TRACE_TOOL) and shutil.which("c++filt"):
        recorded(tmp)
    else:
        print(f"FAIL no {TRACE_TOOL} or no c++filt: the recorded pairs are not checked")
        checks.failures += 1
    job(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    print("diff: every check exact" if not checks.failures else
          f"diff: {checks.failures} checks failed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
