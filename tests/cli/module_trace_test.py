#!/usr/bin/env python3
"""ModuleSummary on traces recorded on the H200 with modules and lines (tests/data/gpt2_*):
every number of its tables recomputed here from the trace's own records, as
`pasta-trace dump` prints them: per module the operator calls, module calls,
kernels and device time of its own operators (self) and with every module
below it (total), forward and backward apart; per line the device time and
kernels of the operators it called; per (module, kernel) the launches.

    module_trace_test.py PASTA_TRACE OUT_DIR
"""
import collections
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
TRACES = ["gpt2_b2_h200.pasta", "gpt2_b8_h200.pasta", "gpt2_compiled_b4_h200.pasta"]
NO_MODULE = "(no module)"


def records(tool, trace):
    out = subprocess.run([tool, "dump", trace], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        yield kind, {k: json.loads(v) if v.startswith('"') else v for k, v in FIELD.findall(rest)}


def truth(tool, trace):
    ops, calls, parent = {}, collections.Counter(), {}
    self_ns, self_n = collections.Counter(), collections.Counter()
    fwd_ns, bwd_ns = collections.Counter(), collections.Counter()
    op_calls = collections.Counter()
    line_ns, line_n = collections.Counter(), collections.Counter()
    pair = collections.Counter()
    for kind, f in records(tool, trace):
        if kind == "OpBegin":
            ops[f["id"]] = f
            op_calls[f.get("module") or NO_MODULE] += 1
        elif kind == "ModuleCall":
            calls[f["module"]] += 1
            if f.get("parent") != f["module"]:  # a module calling itself keeps its parent
                parent[f["module"]] = f.get("parent", "")
        elif kind == "KernelComplete":
            start, end = int(f["start_ns"]), int(f["end_ns"])
            d = end - start if int(start) and end >= start else 0
            op = ops.get(f["op"])
            m = (op.get("module") if op else "") or NO_MODULE
            self_ns[m] += d
            self_n[m] += 1
            (bwd_ns if op and op.get("backward") == "1" else fwd_ns)[m] += d
            pair[(m, f["name"])] += 1
            if op and op.get("source"):
                line_ns[op["source"]] += d
                line_n[op["source"]] += 1
    total_ns, total_n = collections.Counter(), collections.Counter()
    for m in set(self_ns) | set(calls) | set(op_calls):
        a = m
        while a and a != NO_MODULE:  # the module and each that called it
            total_ns[a] += self_ns[m]
            total_n[a] += self_n[m]
            a = parent.get(a, a.rpartition(".")[0])
    return dict(calls=calls, op_calls=op_calls, self_ns=self_ns, self_n=self_n, fwd_ns=fwd_ns,
                bwd_ns=bwd_ns, total_ns=total_ns, total_n=total_n, line_ns=line_ns,
                line_n=line_n, pair=pair)


def main(tool, out):
    ok = True

    def expect(what, got, want):
        nonlocal ok
        if got != want:
            ok = False
            print(f"FAIL {what}: ModuleSummary {got}, the trace {want}")

    for name in TRACES:
        trace = os.path.join(ROOT, "tests", "data", name)
        report_dir = os.path.join(out, name)
        subprocess.run([tool, "replay", trace, "-o", report_dir], check=True, capture_output=True,
                       env=dict(os.environ, PASTA_PRINT="none"))
        with open(os.path.join(report_dir, "module_summary.json")) as f:
            tables = json.load(f)["tables"]
        t = truth(tool, trace)
        rows = {r["module"]: r for r in tables["modules"]}
        for m, r in rows.items():
            expect(f"{name} {m} ops", r["ops"], t["op_calls"][m])
            expect(f"{name} {m} calls", r["calls"], t["calls"][m])
            expect(f"{name} {m} launches_self", r["launches_self"], t["self_n"][m])
            expect(f"{name} {m} device_ns_self", r["device_ns_self"], t["self_ns"][m])
            if m != NO_MODULE:
                expect(f"{name} {m} launches_total", r["launches_total"], t["total_n"][m])
                expect(f"{name} {m} device_ns_total", r["device_ns_total"], t["total_ns"][m])
                expect(f"{name} {m} forward+backward", round((r["forward_total_ms"] +
                       r["backward_total_ms"]) * 1e6), t["total_ns"][m])
        expect(f"{name} modules", sorted(rows), sorted(set(t["total_ns"]) | {NO_MODULE}))
        lines = {r["source"]: r for r in tables["lines"]}
        for src, r in lines.items():
            expect(f"{name} line {src} launches", r["launches"], t["line_n"][src])
            expect(f"{name} line {src} device ms", round(r["device_ms"] * 1e6),
                   t["line_ns"][src])
        pairs = collections.Counter({(r["module"], r["kernel"]): r["launches"]
                                     for r in tables["module_kernels"]})
        expect(f"{name} launches per (module, kernel)", pairs, t["pair"])
        root = max((m for m in rows if "." not in m and m != NO_MODULE),
                   key=lambda m: rows[m]["device_ns_total"])
        print(f"{name}: {len(rows)} modules, {len(lines)} lines, root {root} "
              f"{rows[root]['device_total_ms']:.3f} ms over {rows[root]['launches_total']} kernels")
    print("module tables exact" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
