#!/usr/bin/python3
"""Figures of a flopwatt run or campaign directory (PNG and SVG).

    plot.py DIR [--out OUT] [--formats png,svg]

A run directory (run.json, samples.csv) gives:
  power_trace   every power source over time; each measurement's window shaded
  throughput    FLOP/s per op and backend (median, whiskers p10..p90 of the repetitions)
  efficiency    FLOP/J per op and backend, each row from its own judged headline source
  roofline      FLOP/s against arithmetic intensity (log-log): this machine's
                compute and memory ceilings as lines, each op a point per backend,
                and each op that evaluates exps a short bar at its exp cap
                (the exp rate times its FLOP per exp) where that is below the peak
  energy_roofline  FLOP/J against intensity: the energy ceilings fitted from the
                run (or stated by a device model, dashed) as curves, each op a point
A campaign directory (campaign.json, comparison.json) gives mains_vs_battery
(FLOP/s and FLOP/J on mains and on battery, with the mains/battery ratio) and
the three figures above for each phase's run in OUT/<state>[/<part>]/.
`run gpt2 --grad-order` runs (one run directory, or a directory whose
subdirectories are run directories) also give:
  grad_order            per linear layer's backward and the step: median time
                        and the CPU traffic model's DRAM bytes, one bar per run
                        (labelled with its order and backend; "sim" when simulated)
  grad_order_npu_model  a simulator run's NPU fused-backward model per layer:
                        standard vs the chosen order/partitioning [simulated]
and a directory of run directories gives each run's figures in OUT/<run>/.

Pixel sizes are fixed (no tight bounding box) so pages and tests can rely on
them: SIZES below. Exit status follows flopwatt's contract: 2 with one line on
stderr for bad input, 1 for an internal failure.
"""
import argparse
import csv
import json
import math
import os
import sys

SIZES = {  # name: (width, height) in pixels at DPI
    "power_trace": (1000, 500),
    "throughput": (1000, 500),
    "efficiency": (1000, 500),
    "mains_vs_battery": (1000, 700),
    "grad_order": (1000, 700),
    "grad_order_npu_model": (1000, 600),
    "roofline": (1100, 750),
    "energy_roofline": (1100, 750),
}
GRAD_ORDER_LAYERS = ["qkv", "attproj", "fc", "fcproj", "lm_head"]
DPI = 100
MAX_TRACE_POINTS = 1500  # per source; longer traces are averaged into bins (keeps SVGs small)

class InputError(Exception):
    pass


def fail(msg, code=2):
    print("flopwatt plot: " + msg, file=sys.stderr)
    sys.exit(code)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror}); fix: pass a run or campaign directory written by flopwatt")
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON ({e}); fix: re-run the measurement")


def gflop(v):
    return v * 1e-9


def shape_text(m):
    s = m.get("shape")
    return f"{s['M']}x{s['N']}x{s['K']}" if s else ""


def config_label(m):
    parts = [m["op"]]
    if m.get("layer") is not None:
        parts.append(f"L{m['layer']}")
    if m.get("workload") == "gemm" and m.get("shape") and not m["op"].startswith(shape_text(m)):
        parts.append(shape_text(m))  # a custom shape's op is already its shape
    return " ".join(parts)


def comparable(m):
    if m.get("skipped") or not m.get("flop_per_s") or m.get("reps", 0) < 1:
        return False
    return not (m.get("workload") == "gpt2" and m.get("step") is not None)


def source_domains(run):
    d = {s["id"]: s.get("domain", "") for s in run.get("power_sources", [])}
    return d


def pick_source(run, m):
    """The source a row's FLOP/J is read from: the row's own headline, as flopwatt judged its window
    (run.json's measurements[].headline_source), and only while that figure has FLOP/J. No order of
    its own: a row without a judged headline (refused everywhere, or a run written before rows
    recorded theirs) has no FLOP/J here, as in `flopwatt report`."""
    h = m.get("headline_source")
    e = (m.get("energy") or {}).get(h) if h else None
    return h if e and e.get("flop_per_j") else None


def backend_colors(backends):
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {b: cmap(i % 10) for i, b in enumerate(backends)}


def new_figure(kind):
    import matplotlib.pyplot as plt

    w, h = SIZES[kind]
    return plt.figure(figsize=(w / DPI, h / DPI), dpi=DPI, layout="constrained")


def save(fig, out_dir, kind, formats, written):
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    for fmt in formats:
        path = os.path.join(out_dir, f"{kind}.{fmt}")
        # No dates or random ids in the files, so regenerated figures diff cleanly.
        meta = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(path, dpi=DPI, format=fmt, metadata=meta)
        written.append(path)
    plt.close(fig)


def read_samples(path):
    """{source id: (unit, [t_ns], [value])}"""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        need = {"source_id", "t_ns", "value", "unit"}
        if not r.fieldnames or not need.issubset(r.fieldnames):
            raise InputError(f"{path}: header is not source_id,t_ns,value,unit; fix: re-run the measurement")
        for i, row in enumerate(r, start=2):
            try:
                t, v = int(row["t_ns"]), float(row["value"])
            except (TypeError, ValueError):
                raise InputError(f"{path}:{i}: malformed sample row; fix: re-run the measurement")
            unit, ts, vs = out.setdefault(row["source_id"], (row["unit"], [], []))
            ts.append(t)
            vs.append(v)
    return out


def to_power(unit, ts, vs):
    """Watts over time: gauges as read, counters (J) differentiated between samples."""
    if unit != "J":
        return list(ts), list(vs)
    pt, pv = [], []
    for i in range(1, len(ts)):
        dt = (ts[i] - ts[i - 1]) * 1e-9
        if dt <= 0:
            continue
        pt.append((ts[i] + ts[i - 1]) // 2)
        pv.append(max(0.0, (vs[i] - vs[i - 1]) / dt))
    return pt, pv


def decimate(ts, vs, n=MAX_TRACE_POINTS):
    if len(ts) <= n:
        return ts, vs
    step = len(ts) / n
    ot, ov = [], []
    for k in range(n):
        a, b = int(k * step), max(int((k + 1) * step), int(k * step) + 1)
        ot.append(sum(ts[a:b]) / (b - a))
        ov.append(sum(vs[a:b]) / (b - a))
    return ot, ov


SPIKE_QUANTILE = 0.99  # the trace axis is scaled to this quantile of all points...
SPIKE_FACTOR = 1.5     # ...unless the maximum is within this factor of it (then nothing is clipped)


def quantile(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def trace_ylim(series):
    """(axis top, clip level) for power traces: a few spikes far above the bulk
    are cut at the clip level instead of setting the scale."""
    pts = [v for pv in series for v in pv]
    if not pts:
        return 1.0, math.inf
    peak = max(pts)
    bulk = quantile(pts, SPIKE_QUANTILE)
    if bulk <= 0 or peak <= bulk * SPIKE_FACTOR:
        return peak * 1.25, math.inf
    clip = bulk * 1.2
    return clip * 1.1, clip


def plot_power_trace(run, run_dir, out_dir, formats, written, title):
    samples = read_samples(os.path.join(run_dir, "samples.csv"))
    samples = {k: v for k, v in samples.items() if len(v[1]) >= 2}
    if not samples:
        return "power_trace: no power samples in samples.csv (no source was available for this run)"
    windows = [m for m in run["measurements"] if m.get("window_ns") and not m.get("skipped")]
    t0 = min(min(v[1]) for v in samples.values())
    fig = new_figure("power_trace")
    ax = fig.add_subplot(1, 1, 1)
    backends = []
    for m in windows:
        if m["backend"] not in backends:
            backends.append(m["backend"])
    colors = backend_colors(backends)
    dom = source_domains(run)
    traces = []
    for sid, (unit, ts, vs) in sorted(samples.items()):
        pt, pv = to_power(unit, ts, vs)
        pt, pv = decimate(pt, pv)
        if pt:
            traces.append((sid, pt, pv))
    ymax, clip = trace_ylim([pv for _, _, pv in traces])
    clipped_any = False
    for sid, pt, pv in traces:
        label = sid + (f" ({dom[sid]})" if dom.get(sid) else "")
        xs = [(t - t0) * 1e-9 for t in pt]
        line, = ax.plot(xs, [min(v, clip) for v in pv], linewidth=1.0, label=label)
        over = [(x, v) for x, v in zip(xs, pv) if v > clip]
        if over:
            # A spike drawn to scale would flatten every other trace: it is cut
            # at the axis top and marked, with its true peak in the legend.
            clipped_any = True
            ax.plot([x for x, _ in over], [clip] * len(over), linestyle="none", marker="^", markersize=6,
                    color=line.get_color(), markeredgecolor="black", markeredgewidth=0.5,
                    label=f"{sid}: {len(over)} spike(s) clipped, max {max(v for _, v in over):.1f} W")
    shaded = set()
    for m in windows:
        a, b = ((x - t0) * 1e-9 for x in m["window_ns"])
        lab = m["backend"] if m["backend"] not in shaded else None
        shaded.add(m["backend"])
        ax.axvspan(a, b, color=colors[m["backend"]], alpha=0.18, linewidth=0, label=lab)
    # Op names over the regions wide enough to carry them.
    if windows:
        xmax = max((x - t0) * 1e-9 for m in windows for x in m["window_ns"])
        span = max(xmax, max((t - t0) * 1e-9 for v in samples.values() for t in v[1]))
        for m in windows:
            a, b = ((x - t0) * 1e-9 for x in m["window_ns"])
            if span > 0 and (b - a) / span > 0.012:
                ax.text((a + b) / 2, 0.98, m["op"], rotation=90, ha="center", va="top", fontsize=7,
                        transform=ax.get_xaxis_transform(), clip_on=True)
    ax.set_xlabel("time since the first sample (s)")
    ax.set_ylabel("power (W)")
    ax.set_ylim(bottom=0, top=ymax if ymax > 0 else 1)
    ax.set_title(title + ("" if windows else "  (no measurement windows recorded)") +
                 ("  (spikes clipped: marked ^)" if clipped_any else ""), fontsize=10)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    ax.grid(alpha=0.3)
    save(fig, out_dir, "power_trace", formats, written)
    return None


def grouped_bars(ax, groups, backends, value_fn, err_fn, simulated, ylabel, low_fn=None):
    """Bars per group (x) and backend (colour); returns True when anything was drawn.
    low_fn(g, b) -> True marks a low-confidence figure (red outline, cross hatch)."""
    colors = backend_colors(backends)
    n = max(1, len(backends))
    width = 0.8 / n
    drawn = False
    vals_all = []
    for j, b in enumerate(backends):
        xs, ys, lo, hi = [], [], [], []
        for i, g in enumerate(groups):
            v = value_fn(g, b)
            if v is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(v)
            e = err_fn(g, b) if err_fn else None
            lo.append(v - e[0] if e else 0)
            hi.append(e[1] - v if e else 0)
            vals_all.append(v)
        if not xs:
            continue
        drawn = True
        ax.bar(xs, ys, width=width * 0.95, color=colors[b], label=b + (" (simulated)" if b in simulated else ""),
               hatch="//" if b in simulated else None, edgecolor="white" if b not in simulated else "black",
               linewidth=0.3, yerr=[lo, hi] if err_fn else None, capsize=2, error_kw={"linewidth": 0.8})
        if low_fn:
            low = [(x, y) for x, y, g in zip(xs, ys, [g for g in groups if value_fn(g, b) is not None])
                   if low_fn(g, b)]
            if low:
                mark_low(ax, [x for x, _ in low], [y for _, y in low], width * 0.95)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    pos = [v for v in vals_all if v > 0]
    if pos and max(pos) / min(pos) > 200:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    return drawn


LOW_LABEL = "low confidence (run.json: why_low)"


def mark_low(ax, xs, ys, width):
    """Outlines low-confidence bars in red with a cross hatch; one legend entry per axes."""
    # ax.bar labels its BarContainer, not the patches in it.
    have = any(c.get_label() == LOW_LABEL for c in ax.containers)
    ax.bar(xs, ys, width=width, fill=False, hatch="xx", edgecolor="#d62728", linewidth=1.2,
           label=None if have else LOW_LABEL)


def run_table(run):
    groups, backends, cell, simulated = [], [], {}, set()
    for m in run["measurements"]:
        if not comparable(m):
            continue
        g = config_label(m)
        if g not in groups:
            groups.append(g)
        if m["backend"] not in backends:
            backends.append(m["backend"])
        if m.get("simulated"):
            simulated.add(m["backend"])
        cell.setdefault((g, m["backend"]), m)
    return groups, backends, cell, simulated


def rate_at(m, t):
    return m["flop"] / t if t and t > 0 else None


def plot_throughput(run, out_dir, formats, written, title):
    groups, backends, cell, simulated = run_table(run)
    if not groups:
        return "throughput: no measurement ran"
    fig = new_figure("throughput")
    ax = fig.add_subplot(1, 1, 1)

    def val(g, b):
        m = cell.get((g, b))
        return gflop(m["flop_per_s"]) if m else None

    def err(g, b):
        m = cell[(g, b)]
        # run.json version 2 keeps the time statistics under "time" ({"p90_s": ..}), version 1 under "time_s".
        t = m.get("time") or {k + "_s": v for k, v in m.get("time_s", {}).items()}
        lo, hi = rate_at(m, t.get("p90_s")), rate_at(m, t.get("p10_s"))
        v = gflop(m["flop_per_s"])
        return (gflop(lo) if lo else v, gflop(hi) if hi else v)

    grouped_bars(ax, groups, backends, val, err, simulated, "GFLOP/s (median; whiskers p10-p90)")
    ax.set_title(title, fontsize=10)
    save(fig, out_dir, "throughput", formats, written)
    return None


def plot_efficiency(run, out_dir, formats, written, title):
    groups, backends, cell, simulated = run_table(run)
    sources = set()

    def val(g, b):
        m = cell.get((g, b))
        if not m:
            return None
        s = pick_source(run, m)
        if not s:
            return None
        sources.add(s)
        return gflop(m["energy"][s]["flop_per_j"])

    if not any(val(g, b) is not None for g in groups for b in backends):
        return "efficiency: no energy figures in this run (no power source, or windows too short)"
    def low(g, b):
        m = cell.get((g, b))
        s = m and pick_source(run, m)
        return bool(s) and m["energy"][s].get("confidence") == "low"

    fig = new_figure("efficiency")
    ax = fig.add_subplot(1, 1, 1)
    grouped_bars(ax, groups, backends, val, None, simulated, "GFLOP/J", low_fn=low)
    ax.set_title(f"{title}\nFLOP/J from {', '.join(sorted(sources))}", fontsize=10)
    save(fig, out_dir, "efficiency", formats, written)
    return None


MARKERS = "osD^vP*Xh<>p"


def roof_rows(run, value_fn):
    """(label, backend, intensity, value, simulated) of each op's row that has an intensity: GPT-2's
    per-op rows over all layers and GEMM rows; steps and per-layer rows would repeat them."""
    rows = []
    for m in run.get("measurements", []):
        i = m.get("intensity_flop_per_byte")
        if m.get("skipped") or not i or m.get("layer") is not None:
            continue
        if m.get("workload") == "gpt2" and m.get("op") == "step":
            continue
        v = value_fn(m)
        if not v or v <= 0:
            continue
        # The op names the point; a GEMM's shape would make 30 labels unreadable (run.json has it).
        if m.get("workload") == "gpt2":
            label = m["op"] + (f" {m['pass']}" if m.get("pass") else "")
        else:
            label = m["op"] + " GEMM"
        rows.append((label, m["backend"], i, v, bool(m.get("simulated"))))
    return rows


def exp_caps(run, ceil):
    """The third ceiling of the ops that evaluate exps: at most their FLOP per exp times the host's
    exp rate, so each such op has a cap of its own at its intensity: (intensity, FLOP/s) per op,
    host backends only (a device model has no exp rate)."""
    rate = (ceil or {}).get("exp_per_s")
    caps = {}
    if not rate:
        return rate, []
    for m in run.get("measurements", []):
        i, exps = m.get("intensity_flop_per_byte"), m.get("exps")
        if m.get("skipped") or m.get("layer") is not None or m.get("simulated") or not i or not exps:
            continue
        if m.get("workload") == "gpt2" and m.get("op") == "step":
            continue
        if m.get("flop"):
            caps[(m.get("op"), m.get("pass"))] = (i, rate * m["flop"] / exps)
    return rate, sorted(caps.values())


def memory_lines(ceil):
    """The fastest stream of each memory level: (level, bytes/s), DRAM last."""
    best = {}
    for c in (ceil or {}).get("memory", []):
        level = c["name"].split("_")[0]
        if c.get("bytes_per_s") and c["bytes_per_s"] > best.get(level, (None, 0))[1]:
            best[level] = (c["name"], c["bytes_per_s"])
    order = ["l1", "l2", "llc", "dram"]
    return sorted(best.values(), key=lambda nb: order.index(nb[0].split("_")[0]) if nb[0].split("_")[0] in order else 9)


def attainable(ceil, dtype, intensity):
    peaks = (ceil or {}).get("peak_flop_per_s") or {}
    peak = peaks.get(dtype) or peaks.get("fp32")
    dram = (ceil or {}).get("dram") or {}
    if not peak or not dram.get("bytes_per_s"):
        return None
    return min(peak, intensity * dram["bytes_per_s"])


LABEL_DECADES = 0.06  # columns closer than this (in log10 intensity) share one label
LABEL_NAMES = 2       # names written per label; the rest are counted
LABEL_ROOM = 10 ** 2.5  # headroom above the highest point for the rotated labels
LEVEL_STYLES = {"dram": "-", "llc": "-.", "l2": "--", "l1": ":"}


def label_columns(ax, rows, y_of, fontsize=6):
    """One rotated label per column of points: ops of (nearly) the same intensity share a label,
    written once above the column's highest point, so 30 ops x 5 backends stay readable."""
    cols = []
    for label, _b, i, v, _s in sorted(rows, key=lambda r: r[2]):
        x = math.log10(i)
        if not cols or x - cols[-1]["x0"] > LABEL_DECADES:
            cols.append({"x0": x, "xs": [], "top": 0, "labels": []})
        c = cols[-1]
        c["xs"].append(x)
        c["top"] = max(c["top"], y_of(v))
        if label not in c["labels"]:
            c["labels"].append(label)
    for c in cols:
        more = len(c["labels"]) - LABEL_NAMES
        text = ", ".join(c["labels"][:LABEL_NAMES]) + (f" +{more}" if more > 0 else "")
        x = 10 ** (sum(c["xs"]) / len(c["xs"]))
        ax.annotate(text, (x, c["top"]), xytext=(0, 4), textcoords="offset points", rotation=90,
                    ha="center", va="bottom", fontsize=fontsize, color="#333333", annotation_clip=True)


def scatter_backends(ax, rows, y_of):
    backends = list(dict.fromkeys(b for _l, b, _i, _v, _s in rows))
    colors = backend_colors(backends)
    for k, b in enumerate(backends):
        pts = [(i, y_of(v), s) for _l, bb, i, v, s in rows if bb == b]
        sim = any(s for _i, _y, s in pts)
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22, marker=MARKERS[k % len(MARKERS)],
                   color=colors[b], edgecolors="black", linewidths=0.3, zorder=3,
                   label=b + (" (simulated)" if sim else ""))
    return colors


def x_range(rows, extra=()):
    xs = [r[2] for r in rows] + list(extra)
    lo, hi = min(xs), max(xs)
    return 10 ** math.floor(math.log10(lo) - 0.3), 10 ** math.ceil(math.log10(hi) + 0.3)


def plot_roofline(run, out_dir, formats, written, title):
    rows = roof_rows(run, lambda m: m.get("flop_per_s"))
    roof = run.get("context", {}).get("roofline") or {}
    host = roof.get("host")
    modelled = roof.get("modelled") or {}
    if not rows:
        return "roofline: no measurement has an arithmetic intensity (bytes unknown)"
    fig = new_figure("roofline")
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo, hi = x_range(rows)
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    ys_all = [gflop(r[3]) for r in rows]
    if host:
        peaks = host.get("peak_flop_per_s") or {}
        top = max(peaks.values()) if peaks else None
        for level_name, bw in memory_lines(host):
            line = [gflop(min(x * bw, top) if top else x * bw) for x in xs]
            level = level_name.split("_")[0]
            # Cache levels often lie close together: the legend names them, by line style.
            ax.plot(xs, line, color="#444444", lw=1.2 if level == "dram" else 0.8, ls=LEVEL_STYLES.get(level, ":"),
                    zorder=1, label=f"{level_name} {bw / 1e9:.3g} GB/s")
            ys_all.append(line[0])
        for dtype, p in sorted(peaks.items()):
            ax.axhline(gflop(p), color="#222222", lw=1.2, ls="-" if dtype == "fp32" else "--", zorder=1)
            ax.annotate(f"{dtype} peak {gflop(p):.4g} GFLOP/s ({host.get('threads', '?')} threads)",
                        (hi, gflop(p)), xytext=(-4, 3), textcoords="offset points", ha="right", fontsize=7)
            ys_all.append(gflop(p))
        rate, caps = exp_caps(run, host)
        # A cap above every peak never binds (attention's few exps per FLOP).
        caps = [(i, cap) for i, cap in caps if not top or cap < top]
        for k, (i, cap) in enumerate(caps):
            # A short bar at the op's own intensity: the cap is not a line through other ops.
            ax.plot([i / 1.4, i * 1.4], [gflop(cap)] * 2, color="#aa3377", lw=1.4, zorder=2,
                    label=f"exp rate {rate / 1e9:.3g} G exp/s x the op's FLOP per exp" if k == 0 else None)
            ys_all.append(gflop(cap))
    colors = scatter_backends(ax, rows, gflop)
    for b, c in modelled.items():
        col = colors.get(b, "#888888")
        line = [gflop(attainable(c, "bf16", x) or 0) for x in xs]
        if any(line):
            ax.plot(xs, line, color=col, lw=1.0, ls="--", zorder=1, label=f"{b} roof (modelled)")
            ys_all += [v for v in line if v > 0]
    label_columns(ax, rows, gflop)
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(v for v in ys_all if v > 0) / 3, max(ys_all) * LABEL_ROOM)
    ax.set_xlabel("arithmetic intensity (FLOP per analytic DRAM byte)")
    ax.set_ylabel("GFLOP/s (median)")
    ax.grid(which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    src = roof.get("from", "no ceilings in this run (flopwatt run peak stores them)")
    ax.set_title(f"{title}\nceilings: {src}", fontsize=9)
    save(fig, out_dir, "roofline", formats, written)
    return None


def energy_curve(fit, ceil, dtype, x):
    a = attainable(ceil, dtype, x)
    per_flop = fit["j_per_flop"] + fit["j_per_byte"] / x + (fit["constant_w"] / a if a else 0)
    return 1 / per_flop if per_flop > 0 else None


def plot_energy_roofline(run, out_dir, formats, written, title):
    def fpj(m):
        s = pick_source(run, m)
        return m["energy"][s]["flop_per_j"] if s else None

    rows = roof_rows(run, fpj)
    er = run.get("energy_roofline") or {}
    roof = run.get("context", {}).get("roofline") or {}
    curves = []  # (label, fit, ceilings, dtype, dashed)
    if er.get("host") and roof.get("host"):
        f = er["host"]
        curves.append((f"fitted from {f.get('source')}: {f['j_per_flop'] * 1e12:.3g} pJ/FLOP, "
                       f"{f['j_per_byte'] * 1e12:.3g} pJ/B, {f['constant_w']:.3g} W "
                       f"(rms error {100 * f['rms_relative_error']:.1f}%, {f['points']} points)",
                       f, roof["host"], "fp32", False))
    for b, f in (er.get("modelled") or {}).items():
        c = (roof.get("modelled") or {}).get(b)
        if c:
            curves.append((f"{b} (modelled): {f['j_per_flop'] * 1e12:.3g} pJ/FLOP, {f['j_per_byte'] * 1e12:.3g} pJ/B, "
                           f"{f['constant_w']:.3g} W static", f, c, "bf16", True))
    if not rows and not curves:
        return ("energy_roofline: no energy figures and no energy ceilings in this run "
                "(no power source, and no simulated backend)")
    fig = new_figure("energy_roofline")
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo, hi = x_range(rows, extra=[0.1, 100] if not rows else [])
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    ys_all = [gflop(r[3]) for r in rows]
    colors = scatter_backends(ax, rows, gflop) if rows else {}
    for label, f, c, dtype, dashed in curves:
        ys = [energy_curve(f, c, dtype, x) for x in xs]
        pts = [(x, gflop(y)) for x, y in zip(xs, ys) if y]
        if not pts:
            continue
        col = "#222222"
        if dashed:
            col = next((v for k, v in colors.items() if label.startswith(k)), "#888888")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=col, lw=1.2, ls="--" if dashed else "-",
                zorder=1, label=label)
        ys_all += [p[1] for p in pts]
    if rows:
        label_columns(ax, rows, gflop)
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(ys_all) / 3, max(ys_all) * LABEL_ROOM)
    ax.set_xlabel("arithmetic intensity (FLOP per analytic DRAM byte)")
    ax.set_ylabel("GFLOP/J")
    ax.grid(which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    sub = "ceiling: 1 / (J/FLOP + J/B / intensity + W / attainable FLOP/s)"
    if not er.get("host"):
        sub += "; no host fit (no power source, or fewer than 4 rows with energy)"
    ax.set_title(f"{title}\n{sub}", fontsize=9)
    save(fig, out_dir, "energy_roofline", formats, written)
    return None


def plot_run(run_dir, out_dir, formats, written, notes, title_prefix=""):
    run = load_json(os.path.join(run_dir, "run.json"))
    if not isinstance(run, dict) or not isinstance(run.get("measurements"), list):
        raise InputError(f"{os.path.join(run_dir, 'run.json')}: malformed run.json (no measurements array); "
                         "fix: pass a run directory written by flopwatt")
    ctx = run.get("context", {})
    what = " ".join(str(ctx[k]) for k in ("command", "model", "dtype") if ctx.get(k))
    title = (f"{title_prefix}{what + ' | ' if what else ''}{run.get('run_id', '?')}: "
             f"{ctx.get('cpu') or 'unknown CPU'}, {ctx.get('threads', '?')} threads")
    if ctx.get("shapes"):
        title += f"\nshapes {ctx['shapes']}"
    for fn in (lambda: plot_power_trace(run, run_dir, out_dir, formats, written, title),
               lambda: plot_throughput(run, out_dir, formats, written, title),
               lambda: plot_efficiency(run, out_dir, formats, written, title),
               lambda: plot_roofline(run, out_dir, formats, written, title),
               lambda: plot_energy_roofline(run, out_dir, formats, written, title)):
        note = fn()
        if note:
            notes.append(f"{run_dir}: {note}")


def plot_campaign(cdir, out_dir, formats, written, notes):
    camp = load_json(os.path.join(cdir, "campaign.json"))
    cmp_path = os.path.join(cdir, "comparison.json")
    for ph in camp.get("phases", []):
        for r in ph.get("runs", []):
            d = os.path.join(cdir, r.get("dir", ""))
            if os.path.exists(os.path.join(d, "run.json")):
                root = camp.get("sysfs_root") or "/"
                origin = "" if root == "/" else "fixture power, "
                plot_run(d, os.path.join(out_dir, r["dir"]), formats, written, notes, f"{origin}{ph.get('state')}: ")
    if not os.path.exists(cmp_path):
        notes.append(f"{cdir}: mains_vs_battery: no comparison.json (the campaign did not finish)")
        return
    c = load_json(cmp_path)
    rows = [r for r in c.get("rows", []) if r.get("mains") or r.get("battery")]
    if not rows:
        notes.append(f"{cdir}: mains_vs_battery: the comparison has no rows")
        return
    fig = new_figure("mains_vs_battery")
    axes = fig.subplots(2, 1, sharex=True)
    labels = [f"{r['label']}\n{r['backend']}{' (sim)' if r.get('simulated') else ''}" for r in rows]
    states = [("mains", "#1f77b4"), ("battery", "#ff7f0e")]
    valid = c.get("valid", {})
    for ax, key, ylabel, ratio_key in ((axes[0], "flop_per_s", "GFLOP/s", "flop_per_s"),
                                       (axes[1], "flop_per_j", "GFLOP/J", "flop_per_j")):
        for k, (state, color) in enumerate(states):
            xs, ys, lows = [], [], []
            for i, r in enumerate(rows):
                side = r.get(state)
                if side and side.get(key):
                    xs.append(i - 0.2 + 0.4 * k)
                    ys.append(gflop(side[key]))
                    lows.append(key == "flop_per_j" and side.get("energy_confidence") == "low")
            src = sorted({(r.get(state) or {}).get("energy_source") for r in rows} - {None})
            lab = state + ("" if valid.get(state, True) else " (INVALID phase)")
            if key == "flop_per_j" and src:
                lab += f" ({', '.join(src)})"
            if xs:
                ax.bar(xs, ys, width=0.38, color=color, label=lab)
                low = [(x, y) for x, y, lo in zip(xs, ys, lows) if lo]
                if low:
                    mark_low(ax, [x for x, _ in low], [y for _, y in low], 0.38)
        top = ax.get_ylim()[1]
        for i, r in enumerate(rows):
            q = (r.get("mains_over_battery") or {}).get(ratio_key)
            sides = [r.get(s) or {} for s, _ in states]
            # A FLOP/J ratio is only drawn over bars that come from the source it was computed from.
            same = ratio_key == "flop_per_s" or (
                sides[0].get("energy_source") == sides[1].get("energy_source") ==
                (r.get("mains_over_battery") or {}).get("flop_per_j_source"))
            if q and same:
                hs = [gflop(x.get(key) or 0) for x in sides]
                ax.text(i, max(hs) + top * 0.02, f"{q:.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_ylim(top=top * 1.15)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    axes[1].set_xticks(range(len(rows)))
    axes[1].set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
    root = camp.get("sysfs_root") or "/"
    origin = "" if root == "/" else "power from a fixture tree (--sysfs-root), not a machine: "
    axes[0].set_title(f"{origin}mains vs battery ({c.get('suite', camp.get('suite', '?'))}); "
                      "labels: mains/battery ratio", fontsize=10)
    srcs = [sorted({(r.get(s) or {}).get("energy_source") for r in rows} - {None}) for s, _ in states]
    if srcs[0] != srcs[1]:
        axes[1].set_title("FLOP/J from different sources on mains and on battery: no ratio drawn "
                          "(comparison.json has it from a source of both states where one exists)", fontsize=8)
    save(fig, out_dir, "mains_vs_battery", formats, written)


def grad_order_series(run):
    """One bar series of the grad_order figure, or None when the run records no order."""
    g = (run.get("context") or {}).get("gpt2") or {}
    if "grad_order" not in g:
        return None
    layers = g.get("grad_order_layers") or {}
    rows = {}
    for m in run.get("measurements", []):
        if m.get("workload") != "gpt2" or m.get("skipped") or m.get("step") is not None or m.get("layer") is not None:
            continue
        if m.get("op") == "step" or (m.get("op") in GRAD_ORDER_LAYERS and m.get("pass") == "bwd"):
            rows[m["op"]] = m
    times, mbytes, ran = [], [], []
    step_bytes = 0.0
    for layer in GRAD_ORDER_LAYERS + ["step"]:
        m = rows.get(layer)
        times.append(m["time"]["median_s"] * 1e3 if m else None)
        if layer == "step":
            mbytes.append(step_bytes / 1e6 if step_bytes else None)
            ran.append("")
            continue
        x = layers.get(layer) or {}
        key = "modelled_bytes_interleaved" if x.get("order") == "interleaved" else "modelled_bytes_standard"
        b = x.get(key, 0) * ((m or {}).get("count_per_step") or 0)
        step_bytes += b
        mbytes.append(b / 1e6 if b else None)
        ran.append("i" if x.get("order") == "interleaved" else "s")
    sim = any(m.get("simulated") for m in rows.values())
    label = f"{g['grad_order']} ({g.get('gemm_backend', '?')}{', sim' if sim else ''})"
    return {"label": label, "times": times, "mbytes": mbytes, "ran": ran, "npu_model": g.get("grad_order_npu_model")}


def plot_grad_order(runs, out_dir, formats, written):
    series = [s for s in (grad_order_series(r) for r in runs) if s]
    if not series:
        return
    fig = new_figure("grad_order")
    axes = fig.subplots(2, 1, sharex=True)
    names = GRAD_ORDER_LAYERS + ["step"]
    width = 0.8 / len(series)
    for k, s in enumerate(series):
        for ax, vals in ((axes[0], s["times"]), (axes[1], s["mbytes"])):
            xs = [i - 0.4 + width * (k + 0.5) for i, v in enumerate(vals) if v is not None]
            ys = [v for v in vals if v is not None]
            bars = ax.bar(xs, ys, width=width * 0.95, label=s["label"])
            if ax is axes[1]:
                # s: the layer ran in the standard order, i: interleaved (auto decides per layer)
                tags = [t for t, v in zip(s["ran"], vals) if v is not None]
                for b, t in zip(bars, tags):
                    ax.text(b.get_x() + b.get_width() / 2, b.get_height(), t, ha="center", va="bottom", fontsize=7)
    axes[0].set_ylabel("median time, ms (step: whole step)")
    axes[1].set_ylabel("modelled DRAM MB (step: linear bwd sum)")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_title("linear backward per layer (all occurrences in a step) and the step, by gradient order; "
                      "s/i: the order each layer ran", fontsize=9)
    axes[1].set_xticks(range(len(names)))
    axes[1].set_xticklabels([n if n == "step" else n + " bwd" for n in names])
    save(fig, out_dir, "grad_order", formats, written)
    models = [s for s in series if s["npu_model"]]
    if not models:
        return
    fig = new_figure("grad_order_npu_model")
    ax = fig.subplots(1, 1)
    width = 0.8 / (2 * len(models))
    for k, s in enumerate(models):
        nm = s["npu_model"]
        layers = nm["layers"]
        dev = nm["device"]["name"]
        for j, which in enumerate(("standard", "chosen")):
            xs = [i - 0.4 + width * (2 * k + j + 0.5) for i in range(len(layers))]
            ys = [l[which]["time_s"] * 1e3 for l in layers]
            bars = ax.bar(xs, ys, width=width * 0.95, label=f"{dev} {which}")
            if which == "chosen":
                for b, l in zip(bars, layers):
                    c = l["chosen"]
                    ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{c['order']}/{c['partition']}",
                            ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(models[0]["npu_model"]["layers"])))
    ax.set_xticklabels([l["layer"] + " bwd" for l in models[0]["npu_model"]["layers"]])
    ax.set_ylabel("modelled time per occurrence, ms")
    ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("[simulated] NPU fused-backward model: standard order vs the chosen order/partitioning", fontsize=10)
    save(fig, out_dir, "grad_order_npu_model", formats, written)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--out")
    p.add_argument("--formats", default="png,svg")
    a = p.parse_args(argv)
    formats = [f for f in a.formats.split(",") if f]
    bad = [f for f in formats if f not in ("png", "svg")]
    if bad or not formats:
        fail(f"--formats {a.formats}: unknown format; fix: use png, svg or png,svg")
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "flopwatt"
    except ImportError:
        fail("matplotlib is missing for /usr/bin/python3; fix: apt-get install python3-matplotlib")
    out = a.out or os.path.join(a.dir, "plots")
    if os.path.lexists(out) and not os.path.isdir(out):
        fail(f"--out {out}: exists and is not a directory; fix: pass a directory for the figures")
    written, notes = [], []
    try:
        if os.path.exists(os.path.join(a.dir, "campaign.json")):
            plot_campaign(a.dir, out, formats, written, notes)
        elif os.path.exists(os.path.join(a.dir, "run.json")):
            plot_run(a.dir, out, formats, written, notes)
            plot_grad_order([load_json(os.path.join(a.dir, "run.json"))], out, formats, written)
        elif subs := sorted(d for d in os.listdir(a.dir) if os.path.exists(os.path.join(a.dir, d, "run.json"))):
            for d in subs:
                plot_run(os.path.join(a.dir, d), os.path.join(out, d), formats, written, notes, f"{d}: ")
            runs = [load_json(os.path.join(a.dir, d, "run.json")) for d in subs]
            plot_grad_order(runs, out, formats, written)
        else:
            fail(f"{a.dir}: neither a run dir (run.json) nor a campaign dir (campaign.json); "
                 "fix: pass a directory written by flopwatt")
    except InputError as e:
        fail(str(e))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        fail(f"{a.dir}: malformed report (missing or wrong field {e}); fix: re-run the measurement")
    except OSError as e:
        fail(f"{e.filename or out}: {e.strerror}; fix: pass a readable run directory and a writable --out")
    for n in notes:
        print("note: " + n)
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
