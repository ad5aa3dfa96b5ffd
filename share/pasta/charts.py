"""The overview's charts, drawn by matplotlib as SVG and inlined in the page: no
script, no network, a few kB each. Text stays text (svg.fonttype "none"), so the
browser renders it and a test reads it. Each bar, its label and its value carry
an id (<chart>-bar-<i>, <chart>-label-<i>, <chart>-value-<i>) and the bar a
tooltip (<title>) with the full name.
"""
import html
import io
import re

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

import kernel_kinds  # noqa: E402

# One colour per kind, the same in every chart (matplotlib's tab10 and greys).
COLOURS = {
    kernel_kinds.GEMM: "#1f77b4", kernel_kinds.ATTENTION: "#9467bd",
    kernel_kinds.REDUCTION: "#2ca02c", kernel_kinds.ELEMENTWISE: "#ff7f0e",
    kernel_kinds.COMMUNICATION: "#d62728", kernel_kinds.OTHER: "#8c564b",
    kernel_kinds.COPY: "#17becf", kernel_kinds.MEMSET: "#bcbd22", kernel_kinds.IDLE: "#d9d9d9",
}
OPERATOR = "#7f7f7f"
LABEL_CHARS = 32
STYLE = {"svg.fonttype": "none", "font.size": 8, "axes.spines.top": False,
         "axes.spines.right": False}


def label(name, chars=LABEL_CHARS):
    return name if len(name) <= chars else name[:chars - 1] + "\u2026"


def ms(value):
    return f"{value:.3f} ms" if value < 100 else f"{value:,.1f} ms"


def _svg(fig, chart, caption, titles=None):
    """{"svg": the figure as an inline <svg> element (no XML prolog or metadata, a
    <title> inside each element named in `titles`), "caption": its caption, which
    the page sets as HTML text}."""
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": chart}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r' xmlns(:xlink)?="[^"]*"', "", svg)
    svg = svg.replace("<svg ", f'<svg class="chart" id="{chart}" role="img" ', 1)
    for gid, title in (titles or {}).items():
        svg = svg.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(title)}</title>', 1)
    return {"svg": svg, "caption": caption}


def _figure(width, height):
    """A figure of a fixed size (the page's grid fits three across), laid out inside."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def bars(chart, title, items, width=4.1, height=2.4, colour=None):
    """Horizontal bars, largest on top: items are dicts with name, full, ms, and
    optionally kind (the colour), min and max (a range drawn over the bar)."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, height)
        items = list(items)
        y = list(range(len(items)))[::-1]
        colours = [colour or COLOURS.get(i.get("kind"), OPERATOR) for i in items]
        drawn = ax.barh(y, [i["ms"] for i in items], color=colours, height=0.7)
        titles = {}
        for n, (bar, item) in enumerate(zip(drawn, items)):
            bar.set_gid(f"{chart}-bar-{n}")
            titles[f"{chart}-bar-{n}"] = f"{item['full']}: {ms(item['ms'])}"
        if any("max" in i for i in items):
            ax.errorbar([i["ms"] for i in items], y, fmt="none", ecolor="#333", elinewidth=0.8,
                        capsize=2, xerr=[[i["ms"] - i["min"] for i in items],
                                         [i["max"] - i["ms"] for i in items]])
        ax.set_yticks(y, [label(i["name"]) for i in items])
        for n, tick in enumerate(ax.get_yticklabels()):
            tick.set_gid(f"{chart}-label-{n}")
        values = ax.bar_label(drawn, labels=[ms(i["ms"]) for i in items], padding=2, fontsize=7)
        for n, text in enumerate(values):
            text.set_gid(f"{chart}-value-{n}")
        ax.set_xlim(0, max([i.get("max", i["ms"]) for i in items] + [1e-9]) * 1.3)
        ax.set_xlabel("device time (ms)")
        ax.tick_params(axis="y", length=0)
        return _svg(fig, chart, title, titles)


def kinds(chart, pairs, span_ms, width=4.1, height=2.4):
    """Device time per kind, as bars in the kinds' order; idle gaps, which would dwarf
    them in most runs, in the title."""
    idle = dict(pairs).get(kernel_kinds.IDLE)
    title = "Device time by kind"
    if idle is not None and span_ms:
        title += f"; idle gaps {ms(idle)} ({100 * idle / span_ms:.1f}%)"
    return bars(chart, title, [{"name": k, "full": k, "ms": v, "kind": k} for k, v in pairs
                               if k != kernel_kinds.IDLE], width, height)


def busy(chart, series, busy_pct, width=4.1, height=2.4):
    """The GPU's busy share over the run, as an area over time."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, height)
        t = [p[0] for p in series]
        pct = [p[1] for p in series]
        step = (t[1] - t[0]) if len(t) > 1 else 1.0
        ax.fill_between(t + [t[-1] + step], pct + [pct[-1]], step="post", color=COLOURS[
            kernel_kinds.GEMM], linewidth=0, gid=f"{chart}-area")
        ax.set_ylim(0, 100)
        ax.set_xlim(t[0], t[-1] + step)
        ax.set_ylabel("busy %")
        ax.set_xlabel("time (ms)")
        return _svg(fig, chart, f"GPU busy over the run: {busy_pct:.1f}%")


def memory(chart, device, width=4.1, height=2.4):
    """Live tensor memory of one GPU over time, the peak marked with its operator."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, height)
        t = [p[0] for p in device["points"]]
        mb = [p[1] for p in device["points"]]
        ax.fill_between(t, mb, step="post", color="#9ecae1", linewidth=0.8, edgecolor="#3182bd")
        peak = ax.annotate(f"peak {device['peak_mb']:.1f} MB\n{label(device['op_at_peak'], 30)}",
                           (device["peak_at_ms"], device["peak_mb"]), xytext=(-4, -4),
                           textcoords="offset points", ha="right", va="top", fontsize=7,
                           bbox={"boxstyle": "square,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
                           arrowprops={"arrowstyle": "-", "color": "#333", "lw": 0.6})
        peak.set_gid(f"{chart}-peak")
        ax.plot([device["peak_at_ms"]], [device["peak_mb"]], "o", color="#c33", markersize=3)
        ax.set_ylim(0, device["peak_mb"] * 1.1 or 1)
        ax.set_ylabel("live tensors (MB)")
        ax.set_xlabel("time (ms since the first tensor event)")
        return _svg(fig, chart, f"Tensor memory, GPU {device['device']}")


def processes(chart, rows, listed, width=8.4, height=None,
              title="Processes side by side: device time by kind"):
    """Each process's device time by kind as one stacked bar; the straggler marked.
    `listed`: how many the job has (rows may be the busiest of them)."""
    with plt.rc_context(STYLE):
        height = height or 0.9 + 0.32 * len(rows)
        fig, ax = _figure(width, height)
        y = list(range(len(rows)))[::-1]
        shown = [k for k in kernel_kinds.KINDS if k != kernel_kinds.IDLE and
                 any(dict(r["kinds"]).get(k) for r in rows)]
        left = [0.0] * len(rows)
        for k in shown:
            widths = [dict(r["kinds"]).get(k, 0.0) for r in rows]
            drawn = ax.barh(y, widths, left=left, color=COLOURS[k], height=0.6, label=k)
            for n, bar in enumerate(drawn):
                bar.set_gid(f"{chart}-bar-{n}-{kernel_kinds.KINDS.index(k)}")
            left = [a + b for a, b in zip(left, widths)]
        names = [r["name"] + (" (straggler)" if r["straggler"] else "") for r in rows]
        ax.set_yticks(y, names)
        for n, tick in enumerate(ax.get_yticklabels()):
            tick.set_gid(f"{chart}-label-{n}")
            if rows[n]["straggler"]:
                tick.set_color("#c33")
                tick.set_fontweight("bold")
        for n, total in enumerate(left):
            text = ax.text(total, y[n], " " + ms(total), va="center", fontsize=7)
            text.set_gid(f"{chart}-value-{n}")
        ax.set_xlim(0, max(left + [1e-9]) * 1.25)
        ax.set_xlabel("device time (ms), idle left out")
        fig.legend(loc="outside right upper", fontsize=7, frameon=False)
        return _svg(fig, chart, title + (
            f" (the {len(rows)} busiest of {listed})" if listed > len(rows) else ""))


# The colour of a change, by its verdict (diff.py): slower red, faster green, noise grey.
VERDICTS = {"slower": "#d62728", "faster": "#2ca02c", "new": "#ff7f0e", "gone": "#1f77b4",
            "within noise": "#bbbbbb", "same": "#bbbbbb"}


def changes(chart, title, items, unit="ms", width=4.1, height=2.4):
    """Changes from A to B as bars left (faster) and right (slower) of zero, coloured by
    verdict, each with its noise band: items are dicts with name, full, delta, noise (or None)
    and verdict."""
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, height)
        items = list(items)
        y = list(range(len(items)))[::-1]
        deltas = [i["delta"] for i in items]
        drawn = ax.barh(y, deltas, color=[VERDICTS.get(i["verdict"], OPERATOR) for i in items],
                        height=0.7)
        titles = {}
        for n, (bar, item) in enumerate(zip(drawn, items)):
            bar.set_gid(f"{chart}-bar-{n}")
            titles[f"{chart}-bar-{n}"] = f"{item['full']}: {signed(item['delta'], unit)}, " \
                                         f"{item['verdict']}"
        noisy = [(d, yy, i["noise"]) for d, yy, i in zip(deltas, y, items) if i.get("noise")]
        if noisy:
            ax.errorbar([d for d, _, _ in noisy], [yy for _, yy, _ in noisy], fmt="none",
                        xerr=[n for _, _, n in noisy], ecolor="#333", elinewidth=0.8, capsize=2)
        ax.axvline(0, color="#333", linewidth=0.6)
        ax.set_yticks(y, [label(i["name"]) for i in items])
        for n, tick in enumerate(ax.get_yticklabels()):
            tick.set_gid(f"{chart}-label-{n}")
        reach = max([abs(d) + (i.get("noise") or 0) for d, i in zip(deltas, items)] + [1e-9])
        for n, (d, yy, item) in enumerate(zip(deltas, y, items)):
            # The value beyond the bar and its noise band, on the bar's side of zero.
            end = d + (1 if d >= 0 else -1) * ((item.get("noise") or 0) + 0.03 * reach)
            ax.text(end, yy, signed(d, unit), va="center", ha="left" if d >= 0 else "right",
                    fontsize=7, gid=f"{chart}-value-{n}")
        # Room for the values on both sides: a bar left of zero carries its value left of it.
        ax.set_xlim(-2.0 * reach if min(deltas) < 0 else -0.1 * reach,
                    2.0 * reach if max(deltas) > 0 else 0.1 * reach)
        shown = [v for v in VERDICTS if v != "same" and any(i["verdict"] == v for i in items)]
        ax.legend(handles=[matplotlib.patches.Patch(color=VERDICTS[v], label=v) for v in shown],
                  loc="best", fontsize=6,
                  frameon=False)
        ax.set_xlabel(f"change, B \u2212 A ({unit})")
        ax.tick_params(axis="y", length=0)
        return _svg(fig, chart, title, titles)


def signed(value, unit="ms"):
    sign = "+" if value > 0 else "\u2212" if value < 0 else "\u00b1"
    return f"{sign}{abs(value):.3g} {unit}"


def step(chart, picture, width=12.0):
    """One window of the timeline: a row per stream and per operator depth."""
    with plt.rc_context(STYLE):
        rows = picture["rows"]
        fig, ax = _figure(width, 0.6 + 0.28 * len(rows))
        span = picture["end_ms"] - picture["start_ms"]
        seen = set()
        for n, row in enumerate(rows[::-1]):
            by_colour = {}
            for start, length, key in row["bars"]:
                colour = COLOURS.get(key, OPERATOR)
                by_colour.setdefault(colour, []).append((start, max(length, span / 4000)))
                seen.add(key if key in COLOURS else None)
            for colour, spans in by_colour.items():
                ax.broken_barh(spans, (n - 0.35, 0.7), facecolors=colour, linewidth=0)
            if row["label"].startswith("operators"):
                for start, length, name in row["bars"]:
                    if length > span / 12:
                        ax.text(start + length / 2, n, label(name, int(length / span * 110)),
                                ha="center", va="center", fontsize=6, color="white", clip_on=True)
        ax.set_yticks(range(len(rows)), [r["label"] for r in rows[::-1]])
        ax.set_xlim(picture["start_ms"], picture["end_ms"])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel("time (ms, as in the timeline file)")
        ax.tick_params(axis="y", length=0)
        handles = [matplotlib.patches.Patch(color=COLOURS[k], label=k)
                   for k in kernel_kinds.KINDS if k in seen]
        if None in seen:
            handles.append(matplotlib.patches.Patch(color=OPERATOR, label="operator"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7,
                  frameon=False)
        return _svg(fig, chart, None)


def modules(chart, rows, width=8.4, max_depth=4):
    """The module tree as an icicle: one band per depth, each module as wide as its
    device time (self and below it), children under their parent, largest first.
    rows: the module_summary table's rows (depth first), with module, parent, depth
    and device_total_ms."""
    children, roots = {}, []
    for r in rows:
        if r["module"] == "(no module)":
            continue
        (children.setdefault(r["parent"], []) if r["parent"] else roots).append(r)
    total = sum(r["device_total_ms"] for r in roots)
    if total <= 0:
        return None
    cells = []  # (depth, start, width, row)

    def place(row, depth, start):
        cells.append((depth, start, row["device_total_ms"], row))
        if depth + 1 >= max_depth:
            return
        at = start
        for c in children.get(row["module"], []):
            place(c, depth + 1, at)
            at += c["device_total_ms"]

    at = 0.0
    for r in roots:
        place(r, 0, at)
        at += r["device_total_ms"]
    depths = 1 + max(c[0] for c in cells)
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, 0.5 + 0.42 * depths)
        palette = ["#1f77b4", "#6baed6", "#9ecae1", "#c6dbef", "#deebf7"]
        titles = {}
        for n, (depth, start, w, row) in enumerate(cells):
            drawn = ax.broken_barh([(start, w)], (depths - depth - 0.9, 0.85),
                                   facecolors=palette[depth % len(palette)], edgecolor="white",
                                   linewidth=0.6)
            drawn.set_gid(f"{chart}-cell-{n}")
            titles[f"{chart}-cell-{n}"] = (f"{row['module']} ({row.get('class') or 'module'}): "
                                           f"{ms(row['device_total_ms'])}")
            name = row["module"].rsplit(".", 1)[-1] if depth else row["module"]
            chars = int(w / total * width * 14)
            if chars >= 4:
                ax.text(start + w / 2, depths - depth - 0.48, label(name, chars), ha="center",
                        va="center", fontsize=6.5, color="black" if depth else "white",
                        clip_on=True)
        ax.set_xlim(0, total)
        ax.set_ylim(0, depths)
        ax.set_yticks([])
        ax.set_xlabel("device time (ms), forward and backward, each module with what it calls")
        return _svg(fig, chart, "Where the device time went, by nn.Module", titles)


def roofline(chart, rows, ceilings, width=6.0, height=3.6):
    """Each operator a point at its arithmetic intensity and achieved FLOP/s, sized
    by its device time and coloured by its verdict; the GPU's ceilings as lines.
    rows: op_counters' verdicts rows; ceilings: (dram TB/s, FP32 TFLOP/s, tensor
    TFLOP/s) or None."""
    points = [r for r in rows if (r.get("arithmetic_intensity") or 0) > 0
              and (r.get("achieved_tflops") or 0) > 0]
    if not points:
        return None
    colour = {"memory-bound": "#ff7f0e", "compute-bound (tensor)": "#1f77b4",
              "compute-bound (FP pipes)": "#9467bd", "latency-bound": "#8c564b",
              "launch-bound": "#7f7f7f"}
    with plt.rc_context(STYLE):
        fig, ax = _figure(width, height)
        xs = [r["arithmetic_intensity"] for r in points]
        lo, hi = min(xs) / 4, max(xs) * 4
        if ceilings:
            dram, fp32, tensor = ceilings
            for peak, name in ((fp32, "FP32"), (tensor, "tensor")):
                knee = peak / dram
                grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
                ax.plot(grid, [min(peak, x * dram) for x in grid], color="#333", lw=0.8,
                        gid=f"{chart}-ceiling-{name}")
                ax.text(hi, peak, f" {name} {peak:g} TFLOP/s", fontsize=6.5, va="bottom",
                        ha="right")
            ax.text(lo, lo * dram, f" DRAM {dram:g} TB/s", fontsize=6.5, va="bottom", rotation=0)
        biggest = max(r["device_ms"] for r in points) or 1
        titles = {}
        for n, r in enumerate(points):
            dot = ax.scatter([r["arithmetic_intensity"]], [r["achieved_tflops"]],
                             s=12 + 300 * r["device_ms"] / biggest, alpha=0.7,
                             color=colour.get(r["bound"], "#7f7f7f"), edgecolors="white",
                             linewidths=0.5)
            dot.set_gid(f"{chart}-point-{n}")
            titles[f"{chart}-point-{n}"] = (f"{r['operator']}: {r['bound']}, "
                                           f"{ms(r['device_ms'])}, {r['achieved_tflops']:.3g} "
                                           f"TFLOP/s at {r['arithmetic_intensity']:.3g} FLOP/B")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
        ax.set_ylabel("achieved TFLOP/s")
        handles = [matplotlib.lines.Line2D([], [], marker="o", ls="", color=c, label=b)
                   for b, c in colour.items() if any(r["bound"] == b for r in points)]
        ax.legend(handles=handles, fontsize=6.5, frameon=False, loc="lower right")
        return _svg(fig, chart, "Roofline: each operator at its intensity and FLOP/s "
                    "(size: device time)", titles)
