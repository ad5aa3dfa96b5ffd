"""pasta diff A B: what changed between two runs, per module, operator, kernel and rank,
and whether it is beyond the runs' own noise.

A and B are report directories (one process, or a job's directory with its processes/
list) or traces (`.pasta`, replayed first with pasta-trace; a directory or a job's process
that holds only a trace.pasta is replayed too). Groups are matched by name: modules by
their path below the root module (module_summary, `--torch` runs), operators by name
(op_summary), kernels by name and by signature (name, grid, block; the timeline), steps by
number, processes by rank. Values are per step when both runs have training steps (the
run's totals over its number of steps), else per run.

Noise comes from the runs themselves: every kernel launch's device time is in the
timeline, so each kernel signature has a per-launch spread; a group's total then has a
variance of launches x the per-launch variance of its kernels (a group whose kernels are
not listed, an operator, borrows the run's pooled relative spread). A change is beyond
the noise when it exceeds three times the combined standard deviation of the two totals; step
times are judged by their spread over the steps. What no run can show is the spread
between processes (clocks, another tenant): compare two runs of each side for that.

Plain data here; the launcher (launcher/cli.py) wires the command line, charts.py draws,
diff.html.j2 lays out the page.
"""
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import kernel_kinds
import library
import overview
import report
from job import COMMUNICATION_PREFIXES, find_processes

FORMAT = 1  # of the diff's JSON document
TOP = 10  # rows per table in the text summary
PAGE_ROWS = 50  # rows per table on the page (the JSON has them all)
NOISE_SIGMAS = 3.0  # a change beyond this many combined standard deviations is real: with
# a hundred kernels compared, fewer than one reads as a change by chance (2 would give five)
PRIOR_LAUNCHES = 4  # a kernel's spread is drawn towards the run's by this many launches
STARTUP_FACTOR = 2.0  # a first step this many times the median of the others is start-up
NO_MODULE = "(no module)"
SUMMED_COUNTERS = ("dram_bytes_read", "dram_bytes_write", "flops", "inst_executed")


class DiffError(Exception):
    """Input the diff cannot use: one line, said by the launcher, exit status 2."""


# --- statistics ---------------------------------------------------------------------------
class Group:
    """Device work of one group (a kernel, an operator, a module): launches, device time
    (ms) and the variance of that time (ms^2; None where the run shows no spread)."""
    __slots__ = ("n", "ms", "var", "calls")

    def __init__(self, n=0.0, ms=0.0, var=0.0, calls=None):
        self.n, self.ms, self.var, self.calls = n, ms, var, calls

    def add(self, other):
        self.n += other.n
        self.ms += other.ms
        self.var = None if self.var is None or other.var is None else self.var + other.var
        if other.calls is not None:
            self.calls = (self.calls or 0) + other.calls
        return self

    def scaled(self, f):
        return Group(self.n * f, self.ms * f, None if self.var is None else self.var * f * f,
                     None if self.calls is None else self.calls * f)


def add_groups(maps):
    """Several {key: Group} summed key by key."""
    out = {}
    for m in maps:
        for k, g in m.items():
            out.setdefault(k, Group(calls=None)).add(g)
    return out


def verdict(delta, noise, a_present=True, b_present=True, words=("slower", "faster")):
    """How a change reads: new, gone, same, within noise, slower or faster (or, for a
    share, higher or lower)."""
    if not a_present:
        return "new"
    if not b_present:
        return "gone"
    if abs(delta) < 1e-9:
        return "same"
    if noise is not None and abs(delta) <= noise:
        return "within noise"
    return words[0] if delta > 0 else words[1]


REAL = ("slower", "faster", "new", "gone", "higher", "lower")


def compare(key, a, b, **extra):
    """One row of a table: A's and B's values of a group, the change, its noise band and
    verdict."""
    delta = (b.ms if b else 0.0) - (a.ms if a else 0.0)
    noise = None
    if a and b and a.var is not None and b.var is not None:
        noise = NOISE_SIGMAS * math.sqrt(a.var + b.var)
    row = {"key": key, "a_ms": a.ms if a else None, "b_ms": b.ms if b else None,
           "a_launches": a.n if a else None, "b_launches": b.n if b else None,
           "delta_ms": delta, "delta_pct": pct(a.ms, b.ms) if a and b else None,
           "noise_ms": noise, "verdict": verdict(delta, noise, a is not None, b is not None)}
    if (a and a.calls is not None) or (b and b.calls is not None):
        row["a_calls"] = a.calls if a else None
        row["b_calls"] = b.calls if b else None
    row.update(extra)
    return row


def compare_maps(a, b):
    """Rows for every key of either map, the real changes first, largest first."""
    return order([compare(k, a.get(k), b.get(k)) for k in set(a) | set(b)])


def order(rows):
    """The real changes first, largest first; then the largest groups."""
    return sorted(rows, key=lambda r: (r["verdict"] not in REAL, -abs(r["delta_ms"]),
                                       -max(r.get("a_ms") or 0, r.get("b_ms") or 0),
                                       str(r["key"])))


def pct(a, b):
    return 100.0 * (b - a) / a if a else None


# --- names ----------------------------------------------------------------------------------
def kernel_key(name):
    """A kernel's name as kernel_freq's `kernel` column has it: no `void`, no parameters
    (include/pasta/core/detail/demangle.hpp, short_kernel_name)."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                depth += 1
            elif s[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:
                        s = s[:i]
                    break
    return s


def collapse(path):
    """transformer.h.3.attn -> transformer.h.*.attn: numbered siblings as one."""
    return ".".join("*" if part.isdigit() else part for part in path.split(".")) if path else path


def program_of(command):
    """What a command runs, for telling programs apart: the first script (.py), else
    `-m module`, else the program's file name. Arguments (a batch size) do not count."""
    words = (command or "").split()
    for i, w in enumerate(words):
        if w.endswith(".py"):
            return os.path.basename(w)
        if w == "-m" and i + 1 < len(words) and words[i + 1] not in ("torch.distributed.run",):
            return words[i + 1]
    return os.path.basename(words[0]) if words else None


# --- reading one process's reports ----------------------------------------------------------
class Profile:
    """One process's reports as the diff reads them."""

    def __init__(self, d, label):
        self.dir, self.label = d, label
        self.notes = []
        self.command = None
        self.gpus = []
        self.kernels = {}      # kernel key -> Group (totals of the run)
        self.full_names = {}   # kernel key -> the signature with parameters
        self.signatures = {}   # (kernel key, grid, block) -> Group
        self.cv2 = None        # pooled relative per-launch variance of the run
        self.launch_var = {}   # kernel key -> per-launch variance (ms^2) within its signatures
        self.steps = []        # (start us, end us) on the timeline's clock
        self.step_device = []  # device ms of each step (kernels that start in it)
        self.operators = None  # name -> Group (device self time)
        self.torch = False
        self.modules = None    # module_summary rows by module
        self.module_kernels = None  # module -> {kernel key: (launches, ms)}
        self.memory = {}       # device -> peak live tensor MB
        self.counters = None   # (operator path, kernel, grid x block) -> {metric: value}
        self.stalls = None     # {"reason" | "kernel" | "blamed operator": {name: samples}}
        self.kinds = []        # [(kind, ms)]
        self.module_map = None  # a merged job's modules, already per unit (module_maps)

    @property
    def kernel_ms(self):
        return sum(g.ms for g in self.kernels.values())

    @property
    def launches(self):
        return sum(g.n for g in self.kernels.values())


def read_json(d, name, notes, required=False):
    """d/name.json, or None; a damaged one is a note (or, when required, an error)."""
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            doc = json.load(f)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return doc
    except (OSError, ValueError) as e:
        line = f"{path} is damaged ({e})"
        if required:
            raise DiffError(line + ": replay the trace or run the program again") from None
        notes.append(line + "; left out")
        return None


def rows_of(doc, table):
    tables = (doc or {}).get("tables")
    rows = tables.get(table) if isinstance(tables, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def load_profile(d, label=None):
    """The reports of one process in d."""
    p = Profile(d, label)
    kf = read_json(d, "kernel_freq", p.notes, required=True)
    if kf is None:
        raise DiffError(f"{d} holds no pasta reports (no kernel_freq.json, no processes/ list, "
                        f"no trace.pasta)")
    if kf.get("partial"):
        p.notes.append(f"{d}: the reports are partial: {kf['partial']}")
    run = read_json(d, "run", p.notes) or {}
    p.command = run.get("program")
    p.gpus = [g.split(",")[0].strip() for g in run.get("gpus") or [] if isinstance(g, str)]
    read_kernels(p, kf)
    read_timeline(p, kf)
    read_operators(p, read_json(d, "op_summary", p.notes))
    read_modules(p, read_json(d, "module_summary", p.notes))
    read_memory(p, read_json(d, "tensor_alloc", p.notes))
    read_counters(p, d)
    read_stalls(p, d)
    return p


def read_kernels(p, kf):
    """Kernels by name from kernel_freq: the run's launches and device time."""
    for r in rows_of(kf, "kernels"):
        name = r.get("kernel") or r.get("signature")
        ms, n = number(r.get("total_ms")), number(r.get("launches"))
        if not name or ms is None or n is None:
            continue
        key = kernel_key(name)
        p.kernels.setdefault(key, Group()).add(Group(n, ms, None))
        p.full_names[key] = r.get("signature") or name


def read_timeline(p, kf):
    """Per-launch device times (the spread of each kernel and signature), training steps
    and device time by kind, from the timeline; kernels from it when kernel_freq has
    none."""
    path = os.path.join(p.dir, "timeline.trace.json")
    events = overview.read_timeline(p.dir)
    if events is None:
        if os.path.exists(path):
            p.notes.append(f"{path} is damaged: no per-launch spread or steps for this run")
        p.kinds = overview.kinds(rows_of(kf, "kernels"), [], 0.0)
        return
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            m = re.match(r"GPU \d+: (.+)", str((e.get("args") or {}).get("name", "")))
            if m and m.group(1) not in p.gpus:
                p.gpus.append(m.group(1))
    launches = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and number(e.get("dur")) is not None:
            args = e.get("args") or {}
            sig = (kernel_key(e.get("name", "")), args.get("grid", ""), args.get("block", ""))
            launches.setdefault(sig, []).append(e["dur"] / 1e3)
            p.full_names.setdefault(sig[0], e.get("name", ""))
    records = overview.device_records(events)
    busy_us, span_us, _ = overview.busy(records)
    p.kinds = overview.kinds(rows_of(kf, "kernels"), records, span_us - busy_us)
    spread(p, launches)
    if not p.kernels:  # kernel_freq without rows: the timeline's kernels
        for (key, _, _), g in p.signatures.items():
            p.kernels.setdefault(key, Group()).add(Group(g.n, g.ms, None))
    timeline_n = sum(len(v) for v in launches.values())
    if launches and timeline_n != p.launches:
        p.notes.append(f"{path} holds {timeline_n} of the {p.launches:g} launches kernel_freq "
                       f"counted: signatures left out, spread from the launches it holds")
        p.signatures = {}
    for key, g in p.kernels.items():
        per_launch = p.launch_var.get(key)
        if per_launch is None and p.cv2 is not None and g.n:
            per_launch = p.cv2 * (g.ms / g.n) ** 2
        g.var = None if per_launch is None else g.n * per_launch
    ranges = overview.host_ranges(events)
    p.steps = overview.steps(ranges)
    p.step_device = step_device(p.steps, records)


def spread(p, launches):
    """Signatures with their variance; each name's per-launch variance within its
    signatures; the run's pooled relative variance. A spread from a few launches is drawn
    towards the run's pooled one (PRIOR_LAUNCHES launches' worth of it): two launches that
    happened to agree say little."""
    ss_by_name, df_by_name, mean_sq_by_name = {}, {}, {}
    ss_all = mean_sq_all = 0.0
    for sig, xs in launches.items():
        n, mean = len(xs), sum(xs) / len(xs)
        ss = sum((x - mean) ** 2 for x in xs)
        if n >= 2:
            ss_all += ss
            mean_sq_all += n * mean * mean
        ss_by_name[sig[0]] = ss_by_name.get(sig[0], 0.0) + ss
        df_by_name[sig[0]] = df_by_name.get(sig[0], 0) + n - 1
        mean_sq_by_name[sig[0]] = mean_sq_by_name.get(sig[0], 0.0) + n * mean * mean
    p.cv2 = ss_all / mean_sq_all if mean_sq_all > 0 else None

    def shrunk(ss, df, mean_sq):  # per-launch variance, from ss over df and the prior
        prior = p.cv2 * mean_sq if p.cv2 is not None else 0.0
        if df + (PRIOR_LAUNCHES if p.cv2 is not None else 0) == 0:
            return None
        return (ss + PRIOR_LAUNCHES * prior) / (df + PRIOR_LAUNCHES) if p.cv2 is not None \
            else ss / df

    for sig, xs in launches.items():
        n, mean = len(xs), sum(xs) / len(xs)
        v = shrunk(sum((x - mean) ** 2 for x in xs), n - 1, mean * mean)
        p.signatures[sig] = Group(n, sum(xs), None if v is None else n * v)
    for key, df in df_by_name.items():
        n = df + sum(1 for s in launches if s[0] == key)
        p.launch_var[key] = shrunk(ss_by_name[key], df, mean_sq_by_name[key] / n)
    return p


def step_device(steps, records):
    """Device time (ms) of the kernels that start in each step: from its start to the next
    step's, the last to its own end (the work after it is the program's, not the step's)."""
    out = []
    for i, (s, t) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else t
        out.append(sum(r[1] - r[0] for r in records if r[2] == "kernel" and s <= r[0] < end)
                   / 1e3)
    return out


def read_operators(p, doc):
    """Operators by name, device self time (op_summary of a --torch run)."""
    rows = rows_of(doc, "operators")
    if not rows:
        return
    p.torch = True
    p.operators = {}
    for r in rows:
        ms = number(r.get("device_self_ms"))
        if not r.get("operator") or ms is None:
            continue
        n = (number(r.get("kernels")) or 0) + (number(r.get("copies")) or 0)
        var = None if p.cv2 is None else p.cv2 * ms * ms / max(n, 1)
        p.operators.setdefault(r["operator"], Group(calls=0)).add(
            Group(n, ms, var, number(r.get("calls")) or 0))


def read_modules(p, doc):
    """Modules (module_summary): rows by module, and the kernels each launched itself."""
    rows = rows_of(doc, "modules")
    if doc is None:
        return
    # A run whose operators ran in no module (no nn.Module, or no Python 3.12) has no modules.
    if not any(r.get("module") and r["module"] != "(no module)" for r in rows):
        return
    p.modules = {r["module"]: r for r in rows if r.get("module")}
    p.module_kernels = {}
    for r in rows_of(doc, "module_kernels"):
        if r.get("module") and r.get("kernel"):
            per = p.module_kernels.setdefault(r["module"], {})
            n, ms = per.get(kernel_key(r["kernel"]), (0, 0.0))
            per[kernel_key(r["kernel"])] = (n + (number(r.get("launches")) or 0),
                                            ms + (number(r.get("device_ns")) or 0) / 1e6)


def read_memory(p, doc):
    for r in rows_of(doc, "devices"):
        mb = number(r.get("peak_live_mb"))
        if mb is not None and r.get("device") is not None:
            p.memory[str(r["device"])] = mb


def read_counters(p, d):
    """Hardware counters per operator path and per kernel signature (op_counters.profile.json
    of a --counters run), where some launch was measured."""
    doc = read_json(d, "op_counters.profile", p.notes)
    if not doc:
        return
    out = {}
    for entry in (doc.get("operators") or []) + [dict(e, path="(no operator)")
                                                 for e in doc.get("unattributed") or []]:
        for k in entry.get("kernels") or [entry]:
            metrics = k.get("metrics")
            if not isinstance(metrics, dict):
                continue
            grid = ",".join(map(str, k.get("grid") or []))
            block = ",".join(map(str, k.get("block") or []))
            key = (entry.get("path") or "(no operator)", kernel_kinds.short_name(
                k.get("kernel", "")), f"({grid})x({block})")
            row = out.setdefault(key, {"launches": 0, "device_ms": 0.0})
            row["launches"] += number(k.get("launches")) or 0
            row["device_ms"] += (number(k.get("device_ns")) or 0) / 1e6
            for m, v in metrics.items():
                if number(v) is not None:
                    row[m] = v
    if out:
        p.counters = out


def read_stalls(p, d):
    """Stall samples: shares per reason and per kernel (PC sampling, run 1 of -t
    stall_blame: its report is in sampled/ or in d itself), blamed shares per operator."""
    blamed = read_json(d, "stall_blame", p.notes)
    sampled = read_json(os.path.join(d, "sampled"), "stall_blame", p.notes) or blamed
    out = {}
    reasons = {r["reason"]: number(r.get("samples")) or 0 for r in rows_of(sampled, "reasons")
               if r.get("reason")}
    if reasons:
        out["reason"] = reasons
    per_kernel = {}
    for r in rows_of(sampled, "stalls"):
        if r.get("kernel"):
            per_kernel[r["kernel"]] = per_kernel.get(r["kernel"], 0) + (number(r.get("samples"))
                                                                         or 0)
    if per_kernel:
        out["kernel"] = per_kernel
    ops = {r["operator"]: number(r.get("stall_samples")) or 0
           for r in rows_of(blamed, "blame_operators")
           if r.get("operator") and not str(r["operator"]).startswith("(")}
    if ops:
        out["blamed operator"] = ops
    if out:
        p.stalls = out


# --- opening a side: a directory, a job, a trace -------------------------------------------
def is_trace(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"PASTATRC"
    except OSError:
        return False


class Replayer:
    """Replays traces into a scratch folder with pasta-trace (found when first needed)."""

    def __init__(self, find_tool):
        self.find_tool, self.tool, self.scratch = find_tool, None, None

    def _env(self):
        """This environment without pasta's variables and the launchers' rank variables
        (the replaying shell's rank must not stand for the traces')."""
        try:
            ranks = library.rank_variable_names(self.tool)
        except library.LibraryError as e:
            raise DiffError(str(e)) from None
        return {k: v for k, v in os.environ.items()
                if not k.startswith("PASTA_") and k not in ranks} | {"PASTA_PRINT": "none"}

    def replay(self, trace):
        """(report directory, {"command", "gpus"} from the trace's header)."""
        self.tool = self.tool or self.find_tool()
        self.scratch = self.scratch or tempfile.mkdtemp(prefix="pasta-diff-")
        out = os.path.join(self.scratch, str(len(os.listdir(self.scratch))))
        r = subprocess.run([self.tool, "replay", trace, "-o", out], env=self._env(),
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            said = [l for l in r.stderr.splitlines() if l.startswith("pasta")]
            raise DiffError(f"{trace} cannot be replayed: " +
                            (said[-1].split(": ", 1)[-1] if said else f"exit code {r.returncode}"))
        info = subprocess.run([self.tool, "info", trace], env=self._env(), capture_output=True,
                              text=True, check=False)
        meta = {"gpus": []}
        for line in info.stdout.splitlines():
            m = re.match(r"  device \d+: (.+?) \(", line)
            if m:
                meta["gpus"].append(m.group(1))
            elif line.startswith("  command: "):
                meta["command"] = line[len("  command: "):]
        return out, meta

    def close(self):
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


def load_dir(d, replayer, label=None):
    """A process's directory: its reports, or its trace replayed when it holds only that."""
    if not os.path.exists(os.path.join(d, "kernel_freq.json")) and \
            os.path.exists(os.path.join(d, "trace.pasta")):
        return load_trace(os.path.join(d, "trace.pasta"), replayer, label)
    return load_profile(d, label)


def load_trace(path, replayer, label=None):
    out, meta = replayer.replay(path)
    p = load_profile(out, label)
    p.dir = path
    p.command = p.command or meta.get("command")
    p.gpus = meta["gpus"] or p.gpus
    return p


class Side:
    """A or B: one process, or the processes of a job by rank."""

    def __init__(self, name, path):
        self.name, self.path = name, path
        self.processes = {}  # match key -> Profile
        self.job = False
        self.notes = []

    @property
    def profiles(self):
        return list(self.processes.values())

    @property
    def command(self):
        return next((p.command for p in self.profiles if p.command), None)

    @property
    def program(self):
        return program_of(self.command)

    @property
    def gpus(self):
        return sorted({g for p in self.profiles for g in p.gpus})


def open_side(name, path, replayer):
    side = Side(name, path)
    if not os.path.exists(path):
        raise DiffError(f"{name}: {path}: no such file or directory")
    if os.path.isfile(path):
        if not is_trace(path):
            raise DiffError(f"{name}: {path} is neither a report directory nor a pasta trace")
        side.processes[None] = load_trace(path, replayer)
        return side
    processes, problems = find_processes([path])
    side.notes += [f"{name}: {line}" for line in problems]
    job = len(processes) > 1 or any(pr.rank is not None for pr in processes)
    if not job:
        side.processes[None] = load_dir(path, replayer)
        return side
    side.job = True
    pids = 0
    for pr in processes:
        if not pr.has_reports:
            if pr.status != "no GPU work":
                why = "did not finish" if pr.status == "running" else pr.status
                side.notes.append(f"{name}: {pr.label} {why}: left out")
            continue
        if pr.rank is not None:
            key = ("rank", pr.rank)
        else:  # processes without a rank are matched in the order of their pids
            key, pids = ("pid", pids), pids + 1
        try:
            p = load_dir(pr.dir, replayer, pr.label)
        except DiffError as e:  # one damaged process leaves the others to compare
            side.notes.append(f"{name}: {pr.label}: {e}: left out")
            continue
        p.command = p.command or pr.entry.get("command")
        side.processes[key] = p
    if not side.processes:
        raise DiffError(f"{name}: {path}: no process of the job finished with reports")
    return side


# --- comparing ------------------------------------------------------------------------------
class Scale:
    """Per step (every process compared has steps) or per run: the factor for each one."""

    def __init__(self, profiles, unit=None):
        self.per_step = unit is None and all(p.steps for p in profiles)
        self.unit = unit or ("step" if self.per_step else "run")

    def factor(self, p):
        return 1.0 / len(p.steps) if self.per_step else 1.0


def scaled(groups, f):
    return None if groups is None else {k: g.scaled(f) for k, g in groups.items()}


def steady(p):
    """Step times (ms) without the first when there are two or more: it holds start-up."""
    times = [(t - s) / 1e3 for s, t in p.steps]
    return times[1:] if len(times) >= 2 else times


def step_stat(p):
    """(median step ms, its standard error or None)."""
    times = steady(p)
    if not times:
        return None, None
    se = 1.25 * statistics.stdev(times) / math.sqrt(len(times)) if len(times) >= 2 else None
    return statistics.median(times), se


def headline(a, b, scale):
    """The answer: step time (both runs have steps) or device time, A against B."""
    if scale.per_step:
        (va, sa), (vb, sb) = step_stat(a), step_stat(b)
        noise = NOISE_SIGMAS * math.hypot(sa, sb) if sa is not None and sb is not None else None
        metric = "step"
    else:
        ga = Group(a.launches, a.kernel_ms, total_var(a.kernels))
        gb = Group(b.launches, b.kernel_ms, total_var(b.kernels))
        va, vb = ga.ms, gb.ms
        noise = NOISE_SIGMAS * math.sqrt(ga.var + gb.var) if ga.var is not None and \
            gb.var is not None else None
        metric = "device time"
    delta = vb - va
    return {"metric": metric, "a_ms": va, "b_ms": vb, "delta_ms": delta, "delta_pct": pct(va, vb),
            "noise_ms": noise, "verdict": verdict(delta, noise)}


def total_var(groups):
    vs = [g.var for g in groups.values()]
    return None if any(v is None for v in vs) else sum(vs)


def module_maps(p, f):
    """{module path below the root: (self Group, total Group, row)} scaled by f. The root
    module holding the most device time is left out of the path (an OptimizedModule's
    _orig_mod too), so eager and compiled models match; a run with other roots (a module the
    tracker met outside the model's call, e.g. past a graph break of a compiled model, named
    by its attribute path) keeps their names, and a name both give is one module."""
    if p.module_map is not None:
        return p.module_map
    if p.modules is None:
        return None
    roots = [m for m, r in p.modules.items() if not r.get("parent") and m != NO_MODULE]
    root = max(roots, key=lambda m: (number(p.modules[m].get("device_ns_total")) or 0, m),
               default=None)

    def rel(m):
        if m == NO_MODULE or root is None:
            return m
        path = "" if m == root else m[len(root) + 1:] if m.startswith(root + ".") else m
        return path[len("_orig_mod."):] if path.startswith("_orig_mod.") else \
            "" if path == "_orig_mod" else path

    self_groups = {}
    for m, r in p.modules.items():
        kernels = p.module_kernels.get(m, {})
        var = 0.0
        for k, (n, ms) in kernels.items():
            per_launch = p.launch_var.get(k)
            if per_launch is None and p.cv2 is not None and n:
                per_launch = p.cv2 * (ms / n) ** 2
            var = None if var is None or per_launch is None else var + n * per_launch
        ms = (number(r.get("device_ns_self")) or 0) / 1e6
        n = number(r.get("launches_self")) or 0
        if not kernels:
            var = None if p.cv2 is None else p.cv2 * ms * ms / max(n, 1)
        self_groups[m] = Group(n, ms, var, number(r.get("calls")))
    out = {}
    for m, r in p.modules.items():
        total = Group(number(r.get("launches_total")) or 0,
                      (number(r.get("device_ns_total")) or 0) / 1e6, 0.0, number(r.get("calls")))
        total.var = total_var({k: g for k, g in self_groups.items()
                               if k == m or k.startswith(m + ".")}) if m != NO_MODULE else \
            self_groups[m].var
        entry = {"self": self_groups[m].scaled(f), "total": total.scaled(f), "row": r,
                 "parent": rel(r["parent"]) if r.get("parent") else None,
                 "kernels": {k: (n * f, ms * f) for k, (n, ms) in
                             p.module_kernels.get(m, {}).items()}}
        key = rel(m)
        if key in out:  # one module under two names: one row, the larger's
            entry, other = (entry, out[key]) if entry["total"].ms > out[key]["total"].ms else \
                (out[key], entry)
            entry["self"].add(other["self"])
            entry["total"].add(other["total"])
            for k, (n, ms) in other["kernels"].items():
                n0, ms0 = entry["kernels"].get(k, (0, 0.0))
                entry["kernels"][k] = (n0 + n, ms0 + ms)
            entry["parent"] = entry["parent"] or other["parent"]
        out[key] = entry
    return out


def root_name(p):
    """The root module's class, as the tables name the module path ""."""
    root = (module_maps(p, 1.0) or {}).get("")
    return (root["row"].get("class") or root["row"].get("module")) if root else "(root)"


def module_rows(ma, mb, names):
    """Module rows: self and total, with the peak memory each reached."""
    rows = []
    for key in set(ma) | set(mb):
        a, b = ma.get(key), mb.get(key)
        row = compare(key, a and a["total"], b and b["total"], name=names(key))
        s = compare(key, a and a["self"], b and b["self"])
        row.update({"a_self_ms": s["a_ms"], "b_self_ms": s["b_ms"], "self_delta_ms": s["delta_ms"],
                    "self_noise_ms": s["noise_ms"], "self_verdict": s["verdict"],
                    "a_peak_mb": peak_mb(a), "b_peak_mb": peak_mb(b),
                    "collapsed": collapse(key) if key != NO_MODULE else key})
        rows.append(row)
    return order(rows)


def peak_mb(m):
    v = number((m or {}).get("row", {}).get("peak_bytes"))
    return None if v is None else v / 2**20


def collapsed_modules(ma, mb):
    """Numbered siblings summed: {collapsed path: (A total, B total, A self, B self)}."""
    out = {}
    for side, maps in ((0, ma), (1, mb)):
        for key, m in maps.items():
            c = collapse(key) if key != NO_MODULE else key
            entry = out.setdefault(c, [None, None, None, None])
            for i, g in ((side, m["total"]), (side + 2, m["self"])):
                entry[i] = (entry[i] or Group(calls=None)).add(Group(g.n, g.ms, g.var, g.calls))
    return out


def path_parent(key):
    """The module above `key` by its path: "a.b" -> "a", "a" -> "" (the root), "" -> None."""
    return None if key in ("", None, NO_MODULE) else key.rsplit(".", 1)[0] if "." in key else ""


def children_of(keys, parent_of):
    """{parent: [children]} with each parent the nearest module listed above it: a module
    that launched nothing and ran no forward (a ModuleList) may be missing from the table."""
    keys = set(keys)
    out = {}
    for k in keys:
        p = parent_of(k)
        while p is not None and p not in keys:
            p = path_parent(p)
        out.setdefault(p, []).append(k)
    return out


def explain(collapsed):
    """The modules the summary names: each root split into its children, down to a module
    whose children are all leaves (a layer of primitives is the answer, not its Linear);
    a module's own work is an item of its own. Rows of compare() on totals."""
    children = children_of(collapsed, path_parent)

    def row(c, i):
        a, b = collapsed[c][i], collapsed[c][i + 1]
        return compare(c, a, b)

    def walk(c, root=False):
        kids = children.get(c, [])
        if not kids or (not root and all(not children.get(k) for k in kids)):
            return [row(c, 0)]
        items = [x for k in kids for x in walk(k)]
        if c in collapsed:
            own = row(c, 2)
            own["key"] = f"{c} (own)" if c else "(root, own)"
            items.append(own)
        return items

    items = [x for top in sorted(children.get(None, [])) for x in walk(top, root=top != NO_MODULE)]
    return order([r for r in items if r["a_ms"] is not None or r["b_ms"] is not None])


def kernel_changes(pa, pb, ma, mb, names):
    """Kernels that appear or vanish, one change per place. With modules, the place of a
    change is the lowest module that holds both its vanished and its new kernels (a fused
    Triton kernel in an MLP replacing its activation's kernel and two of its own is one change
    in the MLP); numbered siblings making the same change are one. Without modules (or their
    kernels), one change for the run."""
    found = []
    listed = all(m and any(x["kernels"] for x in m.values()) for m in (ma, mb))
    if listed:  # both runs list the kernels of their modules
        found = module_changes(ma, mb)
    else:
        gone, new = set(pa) - set(pb), set(pb) - set(pa)
        if gone or new:
            found = [(None, {k: (pa[k].n, pa[k].ms) for k in gone},
                      {k: (pb[k].n, pb[k].ms) for k in new})]
    grouped = {}
    for where, gone, new in found:
        place = collapse(where) if where not in (None, NO_MODULE) else where
        c = grouped.setdefault((place, tuple(sorted(gone)), tuple(sorted(new))),
                               {"module": place, "modules": 0, "gone": {}, "new": {}})
        c["modules"] += 1
        for side, kernels in (("gone", gone), ("new", new)):
            for k, (n, ms) in kernels.items():
                n0, ms0 = c[side].get(k, (0, 0.0))
                c[side][k] = (n0 + n, ms0 + ms)
    shorts = distinct_names({k for c in grouped.values() for k in list(c["gone"]) + list(c["new"])})
    out = []
    for c in grouped.values():
        gone_ms = sum(ms for _, ms in c["gone"].values())
        new_ms = sum(ms for _, ms in c["new"].values())
        kind = ("fused" if len(c["gone"]) > len(c["new"]) >= 1 and c["module"] is not None else
                "replaced" if c["gone"] and c["new"] else "gone" if c["gone"] else "new")
        out.append({"module": c["module"],
                    "name": names(c["module"]) if c["module"] is not None else None,
                    "modules": c["modules"], "kind": kind, "delta_ms": new_ms - gone_ms,
                    "gone": [{"kernel": k, "short": shorts[k], "launches": n, "ms": ms}
                             for k, (n, ms) in sorted(c["gone"].items())],
                    "new": [{"kernel": k, "short": shorts[k], "launches": n, "ms": ms}
                            for k, (n, ms) in sorted(c["new"].items())]})
    return sorted(out, key=lambda c: -abs(c["delta_ms"]))


def module_changes(ma, mb):
    """[(module, gone {kernel: (launches, ms)}, new {...})] over the union of both runs'
    module trees: a module's vanished kernels are those its subtree launched in A and not in
    B. Changes of one kind only (kernels gone) stay in the child they are in, unless the
    module also has changes of the other kind, with which they then make one change."""
    children = children_of(set(ma) | set(mb), lambda k: (ma.get(k) or mb.get(k))["parent"])

    def subtree(maps, k):
        out = {}
        for key in [k] + [d for d in descendants(k)]:
            for kernel, (n, ms) in (maps.get(key) or {"kernels": {}})["kernels"].items():
                n0, ms0 = out.get(kernel, (0, 0.0))
                out[kernel] = (n0 + n, ms0 + ms)
        return out

    def descendants(k):
        for c in children.get(k, []):
            yield c
            yield from descendants(c)

    def walk(k):
        sa, sb = subtree(ma, k), subtree(mb, k)
        gone = {x: sa[x] for x in set(sa) - set(sb)}
        new = {x: sb[x] for x in set(sb) - set(sa)}
        found = [c for child in sorted(children.get(k, [])) for c in walk(child)]
        complete = [c for c in found if c[1] and c[2]]
        pure = [c for c in found if not (c[1] and c[2])]
        rest_gone = {x: v for x, v in gone.items() if not any(x in c[1] for c in found)}
        rest_new = {x: v for x, v in new.items() if not any(x in c[2] for c in found)}
        if (rest_gone or any(c[1] for c in pure)) and (rest_new or any(c[2] for c in pure)):
            for c in pure:  # a replacement inside k: one change here
                rest_gone.update({x: v for x, v in c[1].items() if x in gone})
                rest_new.update({x: v for x, v in c[2].items() if x in new})
            pure = [c for c in pure if not (set(c[1]) <= set(gone) and set(c[2]) <= set(new))]
        mine = [(k, rest_gone, rest_new)] if rest_gone or rest_new else []
        return complete + pure + mine

    return [c for root in sorted(children.get(None, [])) for c in walk(root)]


def signature_rows(a, b):
    """Kernel signatures (name, grid, block): the mean device time per launch, A against B,
    judged by the per-launch spreads; ordered by what the change costs B's launches."""
    rows = []
    shorts = distinct_names({k[0] for k in set(a) | set(b)})
    for key in set(a) | set(b):
        ga, gb = a.get(key), b.get(key)
        mean_a = ga.ms / ga.n if ga and ga.n else None
        mean_b = gb.ms / gb.n if gb and gb.n else None
        delta = noise = None
        if mean_a is not None and mean_b is not None:
            delta = mean_b - mean_a
            if ga.var is not None and gb.var is not None:
                noise = NOISE_SIGMAS * math.sqrt(ga.var / ga.n ** 2 + gb.var / gb.n ** 2)
        rows.append({"key": f"{key[0]} {key[1]}x{key[2]}", "kernel": key[0],
                     "short": shorts[key[0]], "grid": key[1], "block": key[2],
                     "a_launches": ga.n if ga else None, "b_launches": gb.n if gb else None,
                     "a_ms": ga.ms if ga else None, "b_ms": gb.ms if gb else None,
                     "a_mean_us": None if mean_a is None else 1e3 * mean_a,
                     "b_mean_us": None if mean_b is None else 1e3 * mean_b,
                     "delta_us": None if delta is None else 1e3 * delta,
                     "noise_us": None if noise is None else 1e3 * noise,
                     "delta_ms": (delta or 0.0) * (gb.n if gb else 0),
                     "verdict": verdict(delta or 0.0, noise, ga is not None, gb is not None)})
    return order(rows)


def distinct_names(keys):
    """{kernel key: a short name}; where short names collide, with the first template
    argument in which the colliding kernels differ (vectorized_elementwise_kernel<FillFunctor
    <float>>), else a number."""
    by_short = {}
    for k in keys:
        by_short.setdefault(kernel_kinds.short_name(k), []).append(k)
    out = {}
    for short, ks in by_short.items():
        if len(ks) == 1:
            out[ks[0]] = short
            continue
        args = {k: template_args(k) for k in ks}
        width = max(len(a) for a in args.values())
        at = next((i for i in range(width)
                   if len({tuple(args[k][i:i + 1]) for k in ks}) == len(ks)), None)
        if at is None:
            at = next((i for i in range(width) if len({tuple(args[k][i:i + 1]) for k in ks}) > 1),
                      None)
        for n, k in enumerate(sorted(ks), 1):
            arg = args[k][at] if at is not None and at < len(args[k]) else f"#{n}"
            out[k] = f"{short}<{arg if len(arg) <= 40 else arg[:39] + chr(0x2026)}>"
    return out


def template_args(key):
    """The template arguments of a kernel's own name, split at the top level."""
    depth, start, args, current = 0, None, [], []
    for i, ch in enumerate(key):
        if ch == "<":
            depth += 1
            if depth == 1:
                start, current, args = i, [], []
                continue
        elif ch == ">":
            depth -= 1
            if depth == 0:
                args.append("".join(current).strip())
                continue
        if depth == 1 and ch == ",":
            args.append("".join(current).strip())
            current = []
        elif depth >= 1:
            current.append(ch)
    return args if start is not None else []


def kernel_rows(a, b, names):
    rows = compare_maps(a, b)
    shorts = distinct_names(set(a) | set(b))
    for r in rows:
        r["short"] = shorts[r["key"]]
        r["kind"] = kernel_kinds.kind(names.get(r["key"], r["key"]))
        r["name"] = names.get(r["key"], r["key"])
    return rows


def share_rows(a, b):
    """Stall shares: per key, A's and B's share of their samples, in points, and whether the
    difference is beyond the sampling noise (binomial)."""
    ta, tb = sum(a.values()), sum(b.values())
    rows = []
    for key in set(a) | set(b):
        pa, pb = a.get(key, 0) / ta if ta else 0.0, b.get(key, 0) / tb if tb else 0.0
        noise = NOISE_SIGMAS * math.sqrt(pa * (1 - pa) / max(ta, 1) + pb * (1 - pb) / max(tb, 1))
        d = pb - pa
        rows.append({"key": key, "a_share_pct": 100 * pa, "b_share_pct": 100 * pb,
                     "delta_ms": 100 * d, "delta_points": 100 * d, "noise_points": 100 * noise,
                     "verdict": verdict(d, noise, key in a, key in b, ("higher", "lower"))})
    rows = order(rows)
    for r in rows:
        del r["delta_ms"]
    return rows


def counter_rows(a, b, fa, fb):
    """Counters of the operator paths and kernel signatures both runs measured: summed ones
    (bytes, flops, instructions) per unit, rates as they are."""
    rows = []
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        row = {"operator": key[0], "kernel": key[1], "shape": key[2], "metrics": {}}
        for m in sorted(set(ra) & set(rb) - {"launches", "device_ms"}):
            f = (fa, fb) if m in SUMMED_COUNTERS else (1.0, 1.0)
            va, vb = ra[m] * f[0], rb[m] * f[1]
            row["metrics"][m] = {"a": va, "b": vb, "delta_pct": pct(va, vb)}
        dram = [row["metrics"].get(m) for m in ("dram_bytes_read", "dram_bytes_write")]
        if all(dram):
            row["a_dram_bytes"] = dram[0]["a"] + dram[1]["a"]
            row["b_dram_bytes"] = dram[0]["b"] + dram[1]["b"]
        occ = row["metrics"].get("achieved_occupancy_pct")
        if occ:
            row["a_occupancy_pct"], row["b_occupancy_pct"] = occ["a"], occ["b"]
        rows.append(row)
    return rows


def compare_profiles(a, b, scale, detail=True):
    """Everything the diff says about one process of A against one of B."""
    fa, fb = scale.factor(a), scale.factor(b)
    ka, kb = scaled(a.kernels, fa), scaled(b.kernels, fb)
    names = dict(a.full_names)
    names.update(b.full_names)
    out = {"headline": headline(a, b, scale),
           "device": compare("device time", Group(a.launches * fa, a.kernel_ms * fa,
                                                  scaled_var(total_var(a.kernels), fa)),
                             Group(b.launches * fb, b.kernel_ms * fb,
                                   scaled_var(total_var(b.kernels), fb))),
           "compute": compare("compute", compute(ka), compute(kb)),
           "kernels": kernel_rows(ka, kb, names)}
    if not detail:
        return out
    out["signatures"] = signature_rows(scaled(a.signatures, fa), scaled(b.signatures, fb)) \
        if a.signatures and b.signatures else []
    out["operators"] = compare_maps(scaled(a.operators, fa), scaled(b.operators, fb)) \
        if a.operators is not None and b.operators is not None else []
    ma, mb = module_maps(a, fa), module_maps(b, fb)
    ra, rb = root_name(a), root_name(b)
    root = ra if ra == rb else f"{ra} / {rb}"

    def name(key):
        return root if key == "" else f"{root} (own)" if key == "(root, own)" else key

    if ma is not None and mb is not None:
        out["modules"] = module_rows(ma, mb, name)
        collapsed = collapsed_modules(ma, mb)
        out["modules_collapsed"] = order([dict(compare(c, v[0], v[1]), name=name(c),
                                               self_delta_ms=compare(c, v[2], v[3])["delta_ms"])
                                          for c, v in collapsed.items()])
        out["explained"] = [dict(r, name=name(r["key"])) for r in explain(collapsed)]
    else:
        out["modules"] = out["modules_collapsed"] = out["explained"] = []
    out["changes"] = kernel_changes(ka, kb, ma, mb, name)
    out["steps"] = [{"step": i + 1,
                     "a_ms": (a.steps[i][1] - a.steps[i][0]) / 1e3 if i < len(a.steps) else None,
                     "b_ms": (b.steps[i][1] - b.steps[i][0]) / 1e3 if i < len(b.steps) else None,
                     "a_device_ms": a.step_device[i] if i < len(a.step_device) else None,
                     "b_device_ms": b.step_device[i] if i < len(b.step_device) else None}
                    for i in range(max(len(a.steps), len(b.steps)))]
    out["memory"] = [{"device": dev, "a_peak_mb": a.memory.get(dev), "b_peak_mb": b.memory.get(dev),
                      "delta_mb": (b.memory[dev] - a.memory[dev])
                      if dev in a.memory and dev in b.memory else None}
                     for dev in sorted(set(a.memory) | set(b.memory))]
    out["counters"] = counter_rows(a.counters, b.counters, fa, fb) \
        if a.counters and b.counters else []
    out["stalls"] = {what: share_rows(a.stalls[what], b.stalls[what])
                     for what in sorted(set(a.stalls or {}) & set(b.stalls or {}))}
    out["kinds"] = {"a": [(k, v * fa) for k, v in a.kinds if k != kernel_kinds.IDLE],
                    "b": [(k, v * fb) for k, v in b.kinds if k != kernel_kinds.IDLE]}
    return out


def scaled_var(v, f):
    return None if v is None else v * f * f


def compute(kernels):
    """Device time without NCCL's kernels (which wait for the slowest rank)."""
    g = Group()
    for k, x in kernels.items():
        if not kernel_kinds.short_name(k).startswith(COMMUNICATION_PREFIXES) and \
                not k.startswith(COMMUNICATION_PREFIXES):
            g.add(x)
    return g


def merged(profiles, scale):
    """A job's processes as one: every rank's groups summed (per unit each)."""
    m = Profile(None, "merged")
    for p in profiles:
        f = scale.factor(p)
        for attr in ("kernels", "signatures", "operators"):
            groups = getattr(p, attr)
            if groups is not None:
                setattr(m, attr, add_groups([getattr(m, attr) or {}, scaled(groups, f)]))
        m.full_names.update(p.full_names)
        for dev, mb in p.memory.items():
            m.memory[f"{p.label} GPU {dev}"] = mb
        m.kinds = add_kinds(m.kinds, [(k, v * f) for k, v in p.kinds])
    m.torch = all(p.torch for p in profiles)
    maps = [module_maps(p, scale.factor(p)) for p in profiles]
    if maps and all(x is not None for x in maps):
        m.module_map = merge_module_maps(maps)
        m.modules = {}
    return m


def merge_module_maps(maps):
    """Several processes' module maps summed module by module (the peak: the largest)."""
    out = {}
    for mm in maps:
        for key, m in mm.items():
            o = out.setdefault(key, {"self": Group(calls=None), "total": Group(calls=None),
                                     "row": dict(m["row"]), "parent": m["parent"], "kernels": {}})
            o["self"].add(m["self"])
            o["total"].add(m["total"])
            peak = max(number(o["row"].get("peak_bytes")) or 0,
                       number(m["row"].get("peak_bytes")) or 0)
            o["row"]["peak_bytes"] = peak
            for k, (n, ms) in m["kernels"].items():
                n0, ms0 = o["kernels"].get(k, (0, 0.0))
                o["kernels"][k] = (n0 + n, ms0 + ms)
    return out


def add_kinds(a, b):
    out = dict(a)
    for k, v in b:
        out[k] = out.get(k, 0.0) + v
    return [(k, out[k]) for k in kernel_kinds.KINDS if k in out]


# --- the whole diff ------------------------------------------------------------------------
def scale_unit(result):
    return "step" if result["headline"]["metric"] == "step" else "run"


def notes_for(a, b, result):
    """One line per thing the reader must know about the inputs."""
    notes = a.notes + b.notes + [f"{s.name}: {n}" for s in (a, b) for p in s.profiles
                                 for n in p.notes]
    pa, pb = a.program, b.program
    if pa and pb and pa != pb:
        shared = [r for r in result["kernels"] if r["verdict"] not in ("new", "gone")]
        notes.append(f"A and B ran different programs ({a.command}; {b.command}): comparing what "
                     f"matches, {len(shared)} of {len(result['kernels'])} kernels, "
                     f"{ms(sum(r['a_ms'] for r in shared))} \u2192 "
                     f"{ms(sum(r['b_ms'] for r in shared))} per {scale_unit(result)}")
    ga, gb = a.gpus, b.gpus
    if ga and gb and ga != gb:
        notes.append(f"A ran on {', '.join(ga)} and B on {', '.join(gb)}: device times of "
                     f"different GPUs")
    ta, tb = all(p.torch for p in a.profiles), all(p.torch for p in b.profiles)
    if ta != tb:
        notes.append(f"{'A' if ta else 'B'} was profiled with --torch and {'B' if ta else 'A'} "
                     f"without: kernels are compared, operators and modules are not")
    elif ta:
        ha = all(p.modules is not None for p in a.profiles)
        hb = all(p.modules is not None for p in b.profiles)
        if ha != hb:
            notes.append(f"only {'A' if ha else 'B'} has modules (module_summary): operators and "
                         f"kernels are compared, modules are not")
    if a.job != b.job:
        job, one = (a, b) if a.job else (b, a)
        notes.append(f"{job.name} is a job of {len(job.processes)} processes and {one.name} one "
                     f"process: {one.name} is compared with {job.name}'s "
                     f"{job.profiles[0].label}")
    for s in (a, b):  # one line a side, however many of its processes started slowly
        slow = []
        for p in s.profiles:
            times = [(t - st) / 1e3 for st, t in p.steps]
            if len(times) >= 3 and times[0] > STARTUP_FACTOR * statistics.median(times[1:]):
                slow.append((p, times[0], statistics.median(times[1:])))
        if slow:
            p, first, rest = slow[0]
            more = f" (and {len(slow) - 1} more of its processes)" if len(slow) > 1 else ""
            notes.append(f"{s.name}{' ' + p.label if p.label else ''}: step 1 took {first:.1f} ms "
                         f"against a median of {rest:.1f} ms (start-up){more}: its work is in "
                         f"the per-step averages; --capture-range=steps:A-B profiles steady steps")
    sa, sb = [bool(p.steps) for p in a.profiles], [bool(p.steps) for p in b.profiles]
    if any(sa + sb) and not all(sa + sb):
        notes.append("only one run has training steps: compared per run, not per step")
    return notes


def diff(path_a, path_b, find_trace_tool):
    """The diff document of A against B (raises DiffError for input it cannot use)."""
    replayer = Replayer(find_trace_tool)
    try:
        a, b = open_side("A", path_a, replayer), open_side("B", path_b, replayer)
    finally:
        replayer.close()
    if a.job and b.job:
        return diff_jobs(a, b)
    pa, pb = a.profiles[0], b.profiles[0]
    scale = Scale([pa, pb])
    result = compare_profiles(pa, pb, scale)
    return finish(a, b, scale, result)


def diff_jobs(a, b):
    """Rank by rank, and merged: every matched rank's groups summed."""
    keys = [k for k in a.processes if k in b.processes]
    only = [(s, k) for s, o in ((a, b), (b, a)) for k in s.processes if k not in o.processes]
    pairs = [(a.processes[k], b.processes[k]) for k in keys]
    if not pairs:
        raise DiffError("A and B have no process in common (ranks differ)")
    scale = Scale([p for pair in pairs for p in pair])
    ranks = []
    for pa, pb in pairs:
        r = compare_profiles(pa, pb, scale, detail=False)
        top = next((k for k in r["kernels"] if k["verdict"] in REAL), None)
        ranks.append({"process": pa.label, "headline": r["headline"], "compute": r["compute"],
                      "device": r["device"], "top_kernel": top,
                      "kernels": r["kernels"][:5]})
    ranks.sort(key=lambda r: (r["compute"]["verdict"] not in REAL, -abs(r["compute"]["delta_ms"])))
    ma = merged([p for p, _ in pairs], scale)
    mb = merged([q for _, q in pairs], scale)
    result = compare_profiles(ma, mb, Scale([], unit=scale.unit))  # already per unit
    # The job's answer: its slowest process, on each side.
    heads = [r["headline"] for r in ranks]
    slow_a, slow_b = max(heads, key=lambda h: h["a_ms"]), max(heads, key=lambda h: h["b_ms"])
    noise = max((h["noise_ms"] for h in heads if h["noise_ms"] is not None), default=None)
    delta = slow_b["b_ms"] - slow_a["a_ms"]
    result["headline"] = {"metric": heads[0]["metric"], "a_ms": slow_a["a_ms"],
                          "b_ms": slow_b["b_ms"], "delta_ms": delta,
                          "delta_pct": pct(slow_a["a_ms"], slow_b["b_ms"]), "noise_ms": noise,
                          "verdict": verdict(delta, noise), "of": "the slowest process"}
    result["ranks"] = ranks
    doc = finish(a, b, scale, result)
    doc["notes"] += [f"{s.name} only: {s.processes[k].label}" for s, k in only]
    return doc


def side_doc(s):
    return {"path": os.path.abspath(s.path), "command": s.command, "program": s.program,
            "gpus": s.gpus, "job": s.job, "processes": len(s.processes),
            "torch": all(p.torch for p in s.profiles),
            "modules": all(p.modules is not None for p in s.profiles),
            "steps": [len(p.steps) for p in s.profiles]}


def finish(a, b, scale, result):
    doc = {"pasta_diff": FORMAT, "a": side_doc(a), "b": side_doc(b), "unit": scale.unit}
    doc.update(result)
    doc["notes"] = notes_for(a, b, result)
    doc["summary"] = summary(doc)
    return doc


# --- words ----------------------------------------------------------------------------------
def ms(v):
    return "-" if v is None else f"{v:,.2f} ms" if abs(v) >= 1 else f"{v:.3f} ms"


def signed(v, unit=" ms"):
    if v is None:
        return "-"
    text = f"{abs(v):,.2f}" if abs(v) >= 1 else f"{abs(v):.3f}"
    return ("+" if v > 0 else "\u2212" if v < 0 else "\u00b1") + text + unit


def percent(v):
    return "" if v is None else ("+" if v > 0 else "\u2212" if v < 0 else "\u00b1") + \
        f"{abs(v):.1f}%"


def judged(h):
    """How the headline's change reads against the noise."""
    if h["verdict"] == "same":
        return "no change"
    if h["noise_ms"] is None:
        return "no spread to judge it by"
    if h["verdict"] == "within noise":
        return f"within the runs' spread of \u00b1{ms(h['noise_ms'])}"
    return f"beyond the runs' spread of \u00b1{ms(h['noise_ms'])}"


def summary(doc):
    """The one line that answers: what changed, by how much, and where."""
    h = doc["headline"]
    what = {"step": "step", "device time": "device time"}[h["metric"]]
    if h.get("of"):
        what = f"{what} of the slowest process,"
    line = (f"{what} {ms(h['a_ms'])} \u2192 {ms(h['b_ms'])} "
            f"({percent(h['delta_pct']) or signed(h['delta_ms'])}, {judged(h)})")
    parts = []
    ranks = [r for r in doc.get("ranks", []) if r["compute"]["verdict"] in REAL][:3]
    for r in ranks:
        top = r["top_kernel"]
        parts.append(f"{r['process']} {signed(r['compute']['delta_ms'])}" +
                     (f" ({top['short']} {signed(top['delta_ms'])})"
                      if top else ""))
    if "ranks" in doc:
        quiet = len(doc["ranks"]) - len([r for r in doc["ranks"]
                                         if r["compute"]["verdict"] in REAL])
        if quiet:
            parts.append(f"{quiet} of {len(doc['ranks'])} processes within noise or unchanged")
    items = [r for r in doc.get("explained", []) if r["verdict"] in REAL][:3]
    level = "modules"
    if not items:
        items, level = [r for r in doc.get("operators", []) if r["verdict"] in REAL][:3], "ops"
    if not items:
        items, level = [r for r in doc["kernels"] if r["verdict"] in REAL][:3], "kernels"
    if items:
        parts.append(", ".join(f"{label_of(r, level)} {signed(r['delta_ms'])}" for r in items))
    changes = doc.get("changes") or []
    if changes:
        c = changes[0]
        where = f" in {c['name']}" + (f" ({c['modules']} modules)" if c["modules"] > 1 else "") \
            if c["module"] else ""
        parts.append(f"kernels {c['kind']}{where}: {len(c['gone'])} \u2192 {len(c['new'])}" +
                     (f", {len(changes) - 1} more kernel changes" if len(changes) > 1 else ""))
    mem = [m for m in doc.get("memory", []) if m["delta_mb"] and m["a_peak_mb"] and
           abs(m["delta_mb"]) >= 0.01 * m["a_peak_mb"]]
    if mem and not doc["a"]["job"]:
        m = max(mem, key=lambda m: abs(m["delta_mb"]))
        parts.append(f"peak tensor memory {m['a_peak_mb']:,.1f} \u2192 {m['b_peak_mb']:,.1f} MB")
    if not parts and h["verdict"] in ("same", "within noise"):
        parts.append("no change beyond the noise")
    if h["metric"] == "step":
        d = doc["device"]
        parts.insert(0, f"device time per step {ms(d['a_ms'])} \u2192 {ms(d['b_ms'])}")
    return line + (": " + "; ".join(parts) if parts else "")


def label_of(row, level):
    return row.get("short") if level == "kernels" else row.get("name") or row["key"]


def table(title, rows, columns, top):
    """A text table: columns are (header, width, function of the row)."""
    if not rows:
        return []
    lines = [f"\n{title} ({'first ' + str(top) + ' of ' if len(rows) > top else ''}"
             f"{len(rows)})",
             "  " + " ".join(f"{h:>{w}}" if w > 0 else h for h, w, _ in columns)]
    for r in rows[:top]:
        lines.append("  " + " ".join(f"{fn(r):>{w}}" if w > 0 else fn(r) for _, w, fn in columns))
    return lines


def num(v, digits=3):
    return "-" if v is None else f"{v:,.{digits}f}"


def count(v):
    return "-" if v is None else f"{v:,.0f}" if abs(v - round(v)) < 1e-9 else f"{v:,.1f}"


def change_columns(name_column, per):
    return [(f"A ms/{per}", 11, lambda r: num(r["a_ms"])),
            (f"B ms/{per}", 11, lambda r: num(r["b_ms"])),
            ("change", 10, lambda r: signed(r["delta_ms"], "")),
            ("noise \u00b1", 9, lambda r: num(r["noise_ms"])),
            ("verdict", 12, lambda r: r["verdict"]), (name_column[0], 0, name_column[1])]


def text(doc, top=TOP):
    """The diff as text: the answer first, then what it rests on."""
    per = doc["unit"]
    a, b = doc["a"], doc["b"]
    lines = [doc["summary"],
             f"A: {a['path']} ({a['command'] or 'program unknown'}; "
             f"{', '.join(a['gpus']) or 'GPU unknown'})",
             f"B: {b['path']} ({b['command'] or 'program unknown'}; "
             f"{', '.join(b['gpus']) or 'GPU unknown'})"]
    lines += [f"note: {n}" for n in doc["notes"]]
    if doc.get("ranks"):
        lines += table("Processes, by the change in compute time (device time, NCCL left out)",
                       doc["ranks"],
                       [(f"A ms/{per}", 11, lambda r: num(r["compute"]["a_ms"])),
                        (f"B ms/{per}", 11, lambda r: num(r["compute"]["b_ms"])),
                        ("change", 10, lambda r: signed(r["compute"]["delta_ms"], "")),
                        ("noise \u00b1", 9, lambda r: num(r["compute"]["noise_ms"])),
                        ("verdict", 12, lambda r: r["compute"]["verdict"]),
                        ("process", 10, lambda r: r["process"]),
                        ("", 0, lambda r: "  top kernel: " + (
                            f"{r['top_kernel']['short']} "
                            f"{signed(r['top_kernel']['delta_ms'])}" if r["top_kernel"] else "-"))],
                       top)
    lines += table(f"Modules, numbered siblings collapsed (device time per {per}, whole "
                   f"subtree)", [r for r in doc.get("modules_collapsed", []) if r["key"] != ""],
                   change_columns(("module", lambda r: r["name"]), per), top)
    lines += table(f"Operators (device self time per {per})", doc.get("operators", []),
                   change_columns(("operator", lambda r: r["key"]), per), top)
    lines += table(f"Kernels (device time per {per})", doc["kernels"],
                   change_columns(("kernel", lambda r: r["short"]), per)[:2] +
                   [("launches A", 10, lambda r: count(r["a_launches"])),
                    ("B", 8, lambda r: count(r["b_launches"]))] +
                   change_columns(("kernel", lambda r: r["short"]), per)[2:], top)
    lines += table("Kernel signatures (mean device time per launch)", doc.get("signatures", []),
                   [("A us", 9, lambda r: num(r["a_mean_us"], 2)),
                    ("B us", 9, lambda r: num(r["b_mean_us"], 2)),
                    ("change", 9, lambda r: signed(r["delta_us"], "")),
                    ("noise \u00b1", 9, lambda r: num(r["noise_us"], 2)),
                    ("verdict", 12, lambda r: r["verdict"]),
                    ("kernel grid x block", 0,
                     lambda r: f"{r['short']} {r['grid']}x{r['block']}")], top)
    for c in (doc.get("changes") or [])[:top]:
        where = (f"{c['name']}" + (f" ({c['modules']} modules)" if c["modules"] > 1 else "")
                 if c["module"] else "the run")
        lines.append(f"kernels {c['kind']} in {where} ({signed(c['delta_ms'])}/{per}): " +
                     ", ".join(k["short"] for k in c["gone"]) + " \u2192 " +
                     (", ".join(k["short"] for k in c["new"]) or "nothing"))
    steps = doc.get("steps") or []
    if steps:
        lines += table("Steps (wall time, ms; device time of the kernels that start in each)",
                       steps, [("step", 5, lambda r: str(r["step"])),
                               ("A", 10, lambda r: num(r["a_ms"], 2)),
                               ("B", 10, lambda r: num(r["b_ms"], 2)),
                               ("A device", 10, lambda r: num(r["a_device_ms"], 2)),
                               ("B device", 10, lambda r: num(r["b_device_ms"], 2))], top)
    for m in doc.get("memory") or []:
        where = m["device"] if m["device"] == "cpu" or " " in m["device"] else f"GPU {m['device']}"
        lines.append(f"peak tensor memory, {where}: {num(m['a_peak_mb'], 1)} \u2192 "
                     f"{num(m['b_peak_mb'], 1)} MB")
    lines += table("Hardware counters both runs measured", doc.get("counters") or [],
                   [("A DRAM MB", 11, lambda r: num(mb_of(r.get("a_dram_bytes")), 2)),
                    ("B DRAM MB", 11, lambda r: num(mb_of(r.get("b_dram_bytes")), 2)),
                    ("A occ %", 8, lambda r: num(r.get("a_occupancy_pct"), 1)),
                    ("B occ %", 8, lambda r: num(r.get("b_occupancy_pct"), 1)),
                    ("operator / kernel shape", 0,
                     lambda r: f"{r['operator']} / {r['kernel']} {r['shape']}")], top)
    for what, rows in (doc.get("stalls") or {}).items():
        lines += table(f"Stall samples per {what} (share of each run's samples)", rows,
                       [("A %", 7, lambda r: num(r["a_share_pct"], 1)),
                        ("B %", 7, lambda r: num(r["b_share_pct"], 1)),
                        ("points", 8, lambda r: signed(r["delta_points"], "")),
                        ("noise \u00b1", 9, lambda r: num(r["noise_points"], 1)),
                        ("verdict", 12, lambda r: r["verdict"]), (what, 0, lambda r: r["key"])],
                       top)
    return "\n".join(lines) + "\n"


def mb_of(v):
    return None if v is None else v / 2**20


def slower_than(doc, share):
    """The line that fails a CI gate, or None: B slower than A by more than `share` %."""
    h = doc["headline"]
    if h["delta_pct"] is None or h["delta_pct"] <= share:
        return None
    line = (f"B is slower than A by {h['delta_pct']:.1f}% ({h['metric']}"
            f"{', ' + h['of'] if h.get('of') else ''}), more than --fail-if-slower {share:g}%")
    if h["verdict"] == "within noise":
        line += f" (within the runs' spread of \u00b1{ms(h['noise_ms'])})"
    return line


# --- the command ----------------------------------------------------------------------------
def main(args, find_trace_tool, template_dir):
    """pasta diff: returns the exit status (1: --fail-if-slower's gate); raises DiffError for
    input it cannot use."""
    if args.top < 1:
        raise DiffError(f"--top takes a whole number from 1, not {args.top}")
    if args.fail_if_slower is not None and args.fail_if_slower < 0:
        raise DiffError(f"--fail-if-slower takes a share in percent >= 0, not "
                        f"{args.fail_if_slower:g}")
    doc = diff(args.a, args.b, find_trace_tool)
    said = sys.stderr if args.json == "-" else sys.stdout
    if args.json and args.json != "-":
        write_json(doc, args.json)
    page = None
    if args.output:
        write_json(doc, os.path.splitext(args.output)[0] + ".json")
        page = write_page(doc, template_dir, args.output)
    try:
        said.write(text(doc, args.top))
        if args.json == "-":
            write_json(doc, None)
        if page:
            said.write(f"pasta: the runs side by side in {page}\n")
        said.flush()
        sys.stdout.flush()
    except BrokenPipeError:  # `pasta diff A B | head -1`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    gate = slower_than(doc, args.fail_if_slower) if args.fail_if_slower is not None else None
    if gate:
        sys.stderr.write(f"pasta: {gate}\n")
        return 1
    return 0


def write_json(doc, path):
    """The diff as JSON, into `path` (whole or not at all) or, with None, on stdout."""
    data = json.dumps(doc, indent=1, default=str)
    if path is None:
        sys.stdout.write(data + "\n")
        return
    try:
        with open(path + ".tmp", "w") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    except OSError as e:
        raise DiffError(f"cannot write {path}: {e.strerror or e}") from None


def write_page(doc, template_dir, output):
    """The runs side by side as one HTML page (share/pasta/diff.html.j2); its path, or None
    (and a line saying why) without Jinja2."""
    charts = report._charts()
    try:
        return report.write_html(template_dir, "diff.html.j2", page_context(doc, charts), output)
    except ImportError as e:
        sys.stderr.write(f"pasta: no HTML page: {e} (pip install {e.name or 'jinja2'})\n")
    except OSError as e:
        raise DiffError(f"cannot write {output}: {e.strerror or e}") from None
    return None


def page_context(doc, charts):
    """What diff.html.j2 shows: the answer, the notes, charts (matplotlib SVG, or a line
    saying how to get them) and the tables."""
    per = doc["unit"]
    drawn = []
    if charts is None:
        missing = report.CHARTS_MISSING
    else:
        missing = None
        kinds = doc.get("kinds") or {}
        if kinds.get("a") or kinds.get("b"):
            drawn.append(charts.processes(
                "kinds", [{"name": n, "kinds": kinds.get(k) or [], "straggler": False}
                          for n, k in (("A", "a"), ("B", "b"))], 2, height=1.5,
                title=f"Device time by kind, per {per}"))
        for chart, title, rows, name in (
                ("ranks", "Processes: change in compute time", doc.get("ranks"), None),
                ("modules", "Modules: the largest changes", doc.get("explained"), "name"),
                ("operators", "Operators: the largest changes", doc.get("operators"), "key"),
                ("kernels", "Kernels: the largest changes", doc.get("kernels"), "short")):
            items = [change_item(r, name) for r in (rows or [])[:32 if chart == "ranks" else 10]]
            items = [i for i in items if i["delta"] or i["verdict"] not in ("same",)]
            if items:
                drawn.append(charts.changes(chart, f"{title} (ms/{per})", items,
                                            height=max(2.4, 0.8 + 0.2 * len(items))))
    return {"doc": doc, "a": doc["a"], "b": doc["b"], "summary": doc["summary"],
            "notes": doc["notes"], "charts": drawn, "charts_missing": missing,
            "tables": [t for t in page_tables(doc) if t["rows"]], "rows_shown": PAGE_ROWS}


def change_item(r, name):
    if name is None:  # a process: its compute time
        c = r["compute"]
        return {"name": r["process"], "full": r["process"], "delta": c["delta_ms"],
                "noise": c["noise_ms"], "verdict": c["verdict"]}
    return {"name": r.get(name) or r["key"], "full": r.get("name") or r["key"],
            "delta": r["delta_ms"], "noise": r["noise_ms"], "verdict": r["verdict"]}


def cell(text, title=None, cls=None):
    return {"text": text, "title": title, "cls": cls}


def verdict_cell(v):
    return cell(v, cls="v-" + v.replace(" ", "-"))


def change_cells(r):
    return [cell(num(r["a_ms"]), cls="num"), cell(num(r["b_ms"]), cls="num"),
            cell(signed(r["delta_ms"], ""), cls="num"),
            cell(percent(r.get("delta_pct")), cls="num"), cell(num(r["noise_ms"]), cls="num"),
            verdict_cell(r["verdict"])]


def page_table(tid, title, columns, rows, note=None):
    return {"id": tid, "title": title, "columns": columns, "note": note,
            "rows": rows[:PAGE_ROWS], "total": len(rows)}


def page_tables(doc):
    per = doc["unit"]
    change = [f"A ms/{per}", f"B ms/{per}", "change", "%", "noise \u00b1", "verdict"]
    out = [
        page_table("ranks", "Processes", ["process"] + change + ["top kernel", "its change"],
                   [[cell(r["process"])] + change_cells(r["compute"]) +
                    ([cell(r["top_kernel"]["short"], r["top_kernel"].get("name")),
                      cell(signed(r["top_kernel"]["delta_ms"], ""), cls="num")]
                     if r["top_kernel"] else [cell("-"), cell("")]) for r in doc.get("ranks", [])],
                   "compute time: device time, NCCL's kernels left out (they wait for the "
                   "slowest rank); the other tables merge every process"),
        page_table("modules-collapsed", "Modules, numbered siblings collapsed",
                   ["module"] + change + ["own change"],
                   [[cell(r["name"])] + change_cells(r) +
                    [cell(signed(r["self_delta_ms"], ""), cls="num")]
                    for r in doc.get("modules_collapsed", [])],
                   "device time of the module's whole subtree; own: what it launched itself"),
        page_table("modules", "Modules", ["module"] + change + ["A own", "B own", "own change",
                                                                "A peak MB", "B peak MB"],
                   [[cell(r["name"])] + change_cells(r) +
                    [cell(num(r["a_self_ms"]), cls="num"), cell(num(r["b_self_ms"]), cls="num"),
                     cell(signed(r["self_delta_ms"], ""), cls="num"),
                     cell(num(r["a_peak_mb"], 1), cls="num"),
                     cell(num(r["b_peak_mb"], 1), cls="num")] for r in doc.get("modules", [])]),
        page_table("operators", "Operators", ["operator", "A calls", "B calls"] + change,
                   [[cell(r["key"]), cell(count(r.get("a_calls")), cls="num"),
                     cell(count(r.get("b_calls")), cls="num")] + change_cells(r)
                    for r in doc.get("operators", [])], "device self time"),
        page_table("kernels", "Kernels", ["kernel", "kind", "A launches", "B launches"] + change,
                   [[cell(r["short"], r["name"]), cell(r["kind"]),
                     cell(count(r["a_launches"]), cls="num"),
                     cell(count(r["b_launches"]), cls="num")] + change_cells(r)
                    for r in doc["kernels"]]),
        page_table("signatures", "Kernel signatures", [
            "kernel", "grid", "block", "A launches", "B launches", "A us", "B us", "change us",
            "noise \u00b1", "verdict"],
            [[cell(r["short"], r["kernel"]), cell(r["grid"]), cell(r["block"]),
              cell(count(r["a_launches"]), cls="num"), cell(count(r["b_launches"]), cls="num"),
              cell(num(r["a_mean_us"], 2), cls="num"), cell(num(r["b_mean_us"], 2), cls="num"),
              cell(signed(r["delta_us"], ""), cls="num"), cell(num(r["noise_us"], 2), cls="num"),
              verdict_cell(r["verdict"])] for r in doc.get("signatures", [])],
            "mean device time per launch"),
        page_table("changes", "Kernels that appeared or vanished",
                   ["where", "modules", "change", "vanished", "appeared", f"ms/{per}"],
                   [[cell(c["name"] or "the run"), cell(count(c["modules"]), cls="num"),
                     cell(c["kind"]),
                     cell(", ".join(k["short"] for k in c["gone"]),
                          "\n".join(k["kernel"] for k in c["gone"])),
                     cell(", ".join(k["short"] for k in c["new"]),
                          "\n".join(k["kernel"] for k in c["new"])),
                     cell(signed(c["delta_ms"], ""), cls="num")] for c in doc.get("changes", [])]),
        page_table("steps", "Steps", ["step", "A ms", "B ms", "A device ms", "B device ms"],
                   [[cell(str(r["step"]), cls="num")] +
                    [cell(num(r[k], 2), cls="num") for k in ("a_ms", "b_ms", "a_device_ms",
                                                            "b_device_ms")]
                    for r in doc.get("steps", [])],
                   "wall time from the optimizer's zero_grad to the end of its step; device "
                   "time of the kernels that start in it"),
        page_table("memory", "Peak tensor memory", ["device", "A MB", "B MB", "change MB"],
                   [[cell(m["device"])] + [cell(num(m[k], 1), cls="num")
                                           for k in ("a_peak_mb", "b_peak_mb", "delta_mb")]
                    for m in doc.get("memory", [])]),
        page_table("counters", "Hardware counters both runs measured",
                   ["operator", "kernel", "shape", "A DRAM MB", "B DRAM MB", "A occupancy %",
                    "B occupancy %", "other metrics, A \u2192 B"],
                   [[cell(r["operator"]), cell(r["kernel"]), cell(r["shape"]),
                     cell(num(mb_of(r.get("a_dram_bytes")), 2), cls="num"),
                     cell(num(mb_of(r.get("b_dram_bytes")), 2), cls="num"),
                     cell(num(r.get("a_occupancy_pct"), 1), cls="num"),
                     cell(num(r.get("b_occupancy_pct"), 1), cls="num"),
                     cell(", ".join(f"{m} {v['a']:.4g} \u2192 {v['b']:.4g}"
                                    for m, v in r["metrics"].items()
                                    if not m.startswith(("dram_bytes", "achieved_occ"))))]
                    for r in doc.get("counters", [])])]
    for what, rows in (doc.get("stalls") or {}).items():
        out.append(page_table(f"stalls-{what.replace(' ', '-')}", f"Stall samples per {what}",
                              [what, "A %", "B %", "change, points", "noise \u00b1",
                               "verdict"],
                              [[cell(r["key"]), cell(num(r["a_share_pct"], 1), cls="num"),
                                cell(num(r["b_share_pct"], 1), cls="num"),
                                cell(signed(r["delta_points"], ""), cls="num"),
                                cell(num(r["noise_points"], 1), cls="num"),
                                verdict_cell(r["verdict"])] for r in rows],
                              "share of each run's samples"))
    return out
