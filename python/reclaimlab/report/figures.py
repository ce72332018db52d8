"""The HTML report's plots, as plotly figures built from run directories, the comparison's
rows and the trace report's JSON. Each function returns None where its run has nothing to
plot, so the page shows a note instead of an empty chart."""

from __future__ import annotations

import itertools
from typing import Any, Iterable, NamedTuple, Sequence

import plotly.colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from reclaimlab import _core
from reclaimlab.compare import Comparison
from reclaimlab.rundir import RunDir, Vmstat, sum_prefix

HEIGHT = 400
_LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "height": HEIGHT,
    "margin": {"l": 70, "r": 20, "t": 45, "b": 40},
    # Below the plot, under the x axis' title: a legend on top would cover the title.
    "legend": {"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0.0},
    "hovermode": "x unified",
}

# The reclaim counters plotted as rates: (vmstat counter or prefix*, legend name).
RECLAIM_RATES = (
    ("pgscan_kswapd", "pgscan kswapd"),
    ("pgsteal_kswapd", "pgsteal kswapd"),
    ("pgscan_direct", "pgscan direct"),
    ("pgsteal_direct", "pgsteal direct"),
)
# Across a sweep, the seed-style curves: compare's metric name, the plot's and the axis' title.
SWEEP_METRICS = (
    ("Throughput (kB/s)", "Throughput", "throughput (kB/s)"),
    ("Direct reclaims (allocstall)", "Direct reclaims", "direct reclaims (allocstall)"),
    ("Kswapd CPU % (all threads)", "kswapd CPU, all threads", "kswapd CPU (% of a CPU)"),
    ("sy % (highest sample)", "System CPU (sy)", "sy, highest sample (%)"),
)


def _title(text: str) -> dict[str, Any]:
    """A plot's title at its top left, the same distance from the top in every plot."""
    return {"text": text, "x": 0.0, "xanchor": "left", "yref": "container", "y": 1.0, "yanchor": "top", "pad": {"t": 12}}


def _figure(title: str, xaxis: str, yaxis: str, **layout: Any) -> go.Figure:
    fig = go.Figure()
    fig.update_layout({**_LAYOUT, **layout}, title=_title(title))
    fig.update_xaxes(title_text=xaxis)
    fig.update_yaxes(title_text=yaxis, rangemode="tozero")
    return fig


def _counter(sample: Vmstat, name: str) -> int:
    return sum_prefix(sample, name[:-1]) if name.endswith("*") else sample.get(name, 0)


def _rates(samples: Sequence[tuple[float, Vmstat]], name: str) -> tuple[list[float], list[float]]:
    """Per interval between samples: its end time and the counter's rate over it (per s)."""
    ts, ys = [], []
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        if t1 > t0:
            ts.append(t1)
            ys.append((_counter(b, name) - _counter(a, name)) / (t1 - t0))
    return ts, ys


class PointRun(NamedTuple):
    """A point's run from one input: the input's place among all inputs (its colour), its
    name and the run."""

    k: int
    name: str
    run: RunDir


Runs = Sequence[PointRun]  # a point's runs, one per input that has the point


def colour(k: int) -> str:
    """Input k's colour, the same in every plot of the page."""
    palette = plotly.colors.qualitative.Plotly
    return palette[k % len(palette)]


def _named(name: str, what: str, runs: Runs) -> str:
    """A trace's legend name: what it is, after the input's name when several are overlaid."""
    return f"{name} {what}" if len(runs) > 1 else what


def free_pages(runs: Runs) -> go.Figure | None:
    """nr_free_pages over time against the min/low/high watermarks (Σ over zones), the
    inputs overlaid; watermarks once when every input has the same, else per input. A
    simulated run's samples also carry `nr_free_pages_true` (every free page, the per-CPU
    lists' included, where nr_free_pages is the kernel's reading without the per-CPU
    deltas): drawn dotted beside it when present (older run directories have none)."""
    series = [(k, name, run, [(t, v["nr_free_pages"]) for t, v in run.vmstat_samples if "nr_free_pages" in v]) for k, name, run in runs]
    series = [x for x in series if x[3]]
    if not series:
        return None
    fig = _figure("Free pages against the watermarks", "time (s)", "pages")
    for k, name, _, samples in series:
        fig.add_trace(go.Scatter(x=[t for t, _ in samples], y=[v for _, v in samples], name=_named(name, "nr_free_pages", runs),
                                 mode="lines+markers", line={"color": colour(k)}, legendgroup=name))  # fmt: skip
    for k, name, run, _ in series:
        true = [(t, v["nr_free_pages_true"]) for t, v in run.vmstat_samples if "nr_free_pages_true" in v]
        if true:
            fig.add_trace(go.Scatter(x=[t for t, _ in true], y=[v for _, v in true], name=_named(name, "free pages, per-CPU lists included", runs),
                                     mode="lines", line={"color": colour(k), "dash": "dot"}, legendgroup=name))  # fmt: skip
    marks = [(k, name, run.watermarks()) for k, name, run, _ in series]
    known = [(k, name, m) for k, name, m in marks if m is not None]
    shared = len({tuple(sorted(m.items())) for _, _, m in known}) == 1
    ts = [t for *_, samples in series for t, _ in samples]
    span = [min(ts), max(ts)]
    for k, name, m in known[:1] if shared else known:
        for w, dash in (("high", "dot"), ("low", "dash"), ("min", "solid")):
            what = f"{w} watermark (Σ zones)"
            fig.add_trace(go.Scatter(x=span, y=[m[w]] * 2, name=what if shared else _named(name, what, runs), mode="lines",
                                     line={"dash": dash, "width": 1.5, "color": "#777" if shared else colour(k)},
                                     legendgroup="watermarks" if shared else name))  # fmt: skip
    return fig


def _split_at_order(free: Sequence[int], order: int) -> tuple[int, int]:
    """A zone's free blocks of each order → (pages in blocks of `order` and above, pages in
    smaller blocks)."""
    whole = sum(n << o for o, n in enumerate(free) if o >= order)
    return whole, sum(n << o for o, n in enumerate(free)) - whole


def free_blocks(runs: Runs) -> go.Figure | None:
    """buddyinfo.samples: each zone's free pages in whole pageblocks (order 9 and above, what
    an order-9 folio or huge page can take without compaction) and in the fragments below,
    over time; one colour per input, one dash per zone and kind. Zones that never hold 1 % of
    the free memory (DMA, an empty Movable) are left out."""
    order = _core.PAGEBLOCK_ORDER
    sampled = [(k, name, run) for k, name, run in runs if run.buddyinfo_samples]
    if not sampled:
        return None
    fig = _figure(f"Free pages by zone: whole pageblocks (order {order}+) and fragments", "time (s)", "pages")
    dashes = itertools.cycle(("solid", "dash", "dot", "dashdot", "longdash", "longdashdot"))
    style: dict[tuple[str, str], str] = {}
    for k, name, run in sampled:
        total = max(sum(sum(n << o for o, n in enumerate(z["free"])) for z in zones) for _, zones in run.buddyinfo_samples)
        names = list(dict.fromkeys((z["node"], z["zone"]) for _, zones in run.buddyinfo_samples for z in zones))
        for node, zone in names:
            rows = [(t, _split_at_order(z["free"], order)) for t, zones in run.buddyinfo_samples
                    for z in zones if (z["node"], z["zone"]) == (node, zone)]  # fmt: skip
            if max(w + f for _, (w, f) in rows) * 100 < total:
                continue
            label = zone if len({n for n, _ in names}) == 1 else f"node {node} {zone}"
            for i, kind in ((0, "whole"), (1, "fragments")):
                dash = style.setdefault((label, kind), next(dashes))
                fig.add_trace(go.Scatter(x=[t for t, _ in rows], y=[v[i] for _, v in rows], name=_named(name, f"{label} {kind}", runs),
                                         mode="lines", line={"color": colour(k), "dash": dash}, legendgroup=name))  # fmt: skip
    return fig


def reclaim_rates(runs: Runs) -> go.Figure | None:
    """pgscan/pgsteal by kswapd, then by direct reclaim (pages/s: rows of their own, as
    direct reclaim is often orders of magnitude below kswapd), then allocstall (stalls/s);
    one colour per input, pgsteal dotted."""
    sampled = [(k, name, run) for k, name, run in runs if len(run.vmstat_samples) >= 2]
    if not sampled:
        return None
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=("kswapd", "direct reclaim", "direct reclaims (allocstall)"))  # fmt: skip
    legend_y = -0.09 - 0.03 * max(0, len(sampled) - 1)
    fig.update_layout({**_LAYOUT, "height": HEIGHT + 220 + 40 * (len(sampled) - 1), "margin": {**_LAYOUT["margin"], "t": 75},
                       "legend": {**_LAYOUT["legend"], "y": legend_y}},
                      title=_title("Reclaim: pages scanned and stolen, direct reclaims"))  # fmt: skip
    fig.update_annotations(font_size=12, x=0.0, xanchor="left")
    for k, name, run in sampled:
        for counter, what in RECLAIM_RATES:
            ts, ys = _rates(run.vmstat_samples, counter)
            row = 1 if counter.endswith("kswapd") else 2
            dash = "dot" if counter.startswith("pgsteal") else "solid"
            fig.add_trace(go.Scatter(x=ts, y=ys, name=_named(name, what, runs), mode="lines", line={"dash": dash, "color": colour(k)},
                                     legendgroup=name), row=row, col=1)  # fmt: skip
        ts, ys = _rates(run.vmstat_samples, "allocstall_*")
        fig.add_trace(go.Scatter(x=ts, y=ys, name=_named(name, "allocstall", runs), mode="lines+markers", line={"color": colour(k)},
                                 marker={"symbol": "diamond"}, legendgroup=name), row=3, col=1)  # fmt: skip
    for row, unit in ((1, "pages/s"), (2, "pages/s"), (3, "stalls/s")):
        fig.update_yaxes(title_text=unit, rangemode="tozero", row=row, col=1)
    fig.update_xaxes(title_text="time (s)", row=3, col=1)
    return fig


def task_names(tasks: Sequence[dict[str, Any]]) -> list[str]:
    """Each task's name on the x axis: its comm, numbered where several tasks share one
    (`dd 1`, `dd 2`, …), so that the inputs' tasks line up whatever their pids."""
    comms = [str(t.get("comm", "?")) for t in tasks]
    seen: dict[str, int] = {}
    out = []
    for comm in comms:
        seen[comm] = seen.get(comm, 0) + 1
        out.append(f"{comm} {seen[comm]}" if comms.count(comm) > 1 else comm)
    return out


def task_cpu(runs: Runs) -> go.Figure | None:
    """Each task's CPU over the window (tasks.json), one bar per input side by side."""
    with_tasks = [(k, name, run.tasks.get("tasks", [])) for k, name, run in runs]
    with_tasks = [x for x in with_tasks if x[2]]
    if not with_tasks:
        return None
    fig = _figure("CPU per task over the window", "task", "CPU (%, user + sys)", barmode="group")
    order: list[str] = []
    for k, name, tasks in with_tasks:
        xs = task_names(tasks)
        order += [x for x in xs if x not in order]
        fig.add_trace(go.Bar(x=xs, y=[t.get("cpu_pct", 0.0) for t in tasks], name=name, marker={"color": colour(k)},
                             customdata=[[t.get("kind", "other"), t.get("pid", "?")] for t in tasks],
                             hovertemplate="%{x} (%{customdata[0]}, pid %{customdata[1]}): %{y:.2f} %"))  # fmt: skip
    fig.update_xaxes(type="category", tickangle=-45, categoryorder="array", categoryarray=order)
    # Inside the plot's top right: below it, the legend would cover the rotated task names.
    fig.update_layout(hovermode="closest", showlegend=True,
                      legend={"orientation": "v", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "top", "bgcolor": "rgba(255,255,255,0.8)"})  # fmt: skip
    return fig


def _sample_lines(runs: Runs, samples: str, title: str, yaxis: str, series: Sequence[tuple[str, str, str]]) -> go.Figure | None:
    """One line per (key, name, dash) of `series` from the JSON-lines samples `samples` of
    each run (`RunDir.cpu`, `RunDir.psi`), one colour per input; None if no run has any."""
    sampled = [(k, name, getattr(run, samples)) for k, name, run in runs if getattr(run, samples)]
    if not sampled:
        return None
    fig = _figure(title, "time (s)", yaxis)
    for k, name, rows in sampled:
        ts = [c["t"] for c in rows]
        for key, what, dash in series:
            fig.add_trace(go.Scatter(x=ts, y=[c.get(key) for c in rows], name=_named(name, what, runs), mode="lines+markers",
                                     line={"dash": dash, "color": colour(k) if len(runs) > 1 else None}, legendgroup=name))  # fmt: skip
    return fig


def cpu_over_time(runs: Runs) -> go.Figure | None:
    """cpu.samples: user, system and iowait over all CPUs, as vmstat prints them; one colour
    per input, us solid, sy dashed, wa dotted."""
    return _sample_lines(runs, "cpu", "CPU over time, all CPUs", "CPU (%)",
                         (("us_pct", "us", "solid"), ("sy_pct", "sy", "dash"), ("wa_pct", "wa", "dot")))  # fmt: skip


def memory_pressure(runs: Runs) -> go.Figure | None:
    """psi.samples: the share of each interval stalled on memory, some (solid) and full
    (dashed), from /proc/pressure/memory's totals, and its avg10 (dotted); one colour per input."""
    return _sample_lines(runs, "psi", "Memory pressure (PSI)", "time stalled (%)",
                         (("some_pct", "some", "solid"), ("full_pct", "full", "dash"), ("some_avg10", "some avg10", "dot")))  # fmt: skip


def device_throughput(runs: Runs) -> go.Figure | None:
    """iostat.samples: read and write MB/s per device that moved data (writes only where a
    device wrote). With several inputs overlaid, one colour per input and one legend entry
    per input and direction for all its devices (the device is in the hover)."""
    sampled = [(k, name, run) for k, name, run in runs if run.iostat]
    if not sampled:
        return None
    fig = _figure("Device throughput", "time (s)", "MB/s")
    several = len(runs) > 1
    for k, name, run in sampled:
        devices = list(dict.fromkeys(s["device"] for s in run.iostat))
        # a live machine lists every block device: plot those that moved data, if any did
        busy = [d for d in devices if any(s.get("rkB_s") or s.get("wkB_s") for s in run.iostat if s["device"] == d)]
        devices = busy or devices
        line = {"color": colour(k)} if several else {}
        for n, dev in enumerate(devices):
            mine = [s for s in run.iostat if s["device"] == dev]
            ts = [s["t"] for s in mine]
            for key, what, dash in (("rkB_s", "read", "solid"), ("wkB_s", "write", "dot")):
                if key == "wkB_s" and not any(s.get(key, 0.0) for s in mine):
                    continue
                group = f"{name} {what}" + (" (each device)" if len(devices) > 1 else "")
                fig.add_trace(go.Scatter(x=ts, y=[s.get(key, 0.0) / 1024 for s in mine], mode="lines", line={**line, "dash": dash},
                                         name=group if several else f"{dev} {what}", legendgroup=group if several else None,
                                         showlegend=not several or n == 0, text=[dev] * len(ts),
                                         hovertemplate=f"{name} %{{text}} {what}: %{{y:.1f}} MB/s<extra></extra>"))  # fmt: skip
    return fig


def point_figures(runs: Runs) -> list[go.Figure]:
    """Every per-point plot the point's runs have data for, the inputs overlaid, in page order."""
    figs = (free_pages(runs), free_blocks(runs), reclaim_rates(runs), task_cpu(runs), cpu_over_time(runs), memory_pressure(runs), device_throughput(runs))
    return [f for f in figs if f is not None]


def sweep_x(label: str, run: RunDir | None) -> tuple[str, float | str]:
    """A sweep point's position: the swept key and its value from the label
    (`workload.tasks=16` → ("workload.tasks", 16.0)), else the workload's task count."""
    key, sep, value = label.partition("=")
    if sep and "," not in label:
        try:
            return key, float(value)
        except ValueError:
            return key, value
    tasks = run.result.get("metrics", {}).get("tasks") if run is not None else None
    if isinstance(tasks, (int, float)) and "," not in label:
        return "tasks", float(tasks)
    return "point", label


def sweep_curves(c: Comparison, points: Sequence[dict[str, RunDir]]) -> list[go.Figure]:
    """Seed-style curves across a sweep: each metric of SWEEP_METRICS against the swept
    value, one line per input with at least two points. `points` are the inputs' runs by label."""
    figs = []
    for metric, title, axis in SWEEP_METRICS:
        rows = [r for r in c.rows if r.metric == metric]
        fig: go.Figure | None = None
        for k, name in enumerate(c.names):
            xy = []
            key = "point"
            for r in rows:
                if r.values[k] is None:
                    continue
                key, x = sweep_x(r.point, points[k].get(r.point))
                xy.append((x, r.values[k]))
            if len(xy) < 2:
                continue
            xy.sort(key=lambda p: (isinstance(p[0], str), p[0]))
            if fig is None:
                fig = _figure(f"{title} across the sweep", key, axis, hovermode="closest")
            fig.add_trace(go.Scatter(x=[x for x, _ in xy], y=[y for _, y in xy], name=name, mode="lines+markers", line={"color": colour(k)}))
        if fig is not None:
            figs.append(fig)
    return figs


def stall_latencies_ms(report: dict[str, Any]) -> list[float]:
    """Every direct-reclaim stall's latency (ms) in a trace report's input."""
    return [s["ns"] / 1e6 for p in report.get("analysis", {}).get("processes", []) for s in p.get("direct_stalls", [])]


def stall_histogram(stalls: Iterable[tuple[str, list[float]]]) -> go.Figure | None:
    """The direct-reclaim stall histogram, one overlaid series per traced run."""
    series = [(name, ms) for name, ms in stalls if ms]
    if not series:
        return None
    fig = _figure("Direct-reclaim stalls by latency", "stall latency (ms)", "stalls",
                  barmode="overlay", hovermode="closest")  # fmt: skip
    for name, ms in series:
        fig.add_trace(go.Histogram(x=ms, name=f"{name} ({len(ms)} stalls)", opacity=0.6 if len(series) > 1 else 1.0))
    return fig
