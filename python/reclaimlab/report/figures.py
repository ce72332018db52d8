"""The HTML report's plots, as plotly figures built from run directories, the comparison's
rows and the trace report's JSON. Each function returns None where its run has nothing to
plot, so the page shows a note instead of an empty chart."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

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
    ("Throughput kB/s", "Throughput", "throughput (kB/s)"),
    ("Direct reclaims (allocstall)", "Direct reclaims", "direct reclaims (allocstall)"),
    ("Kswapd CPU %", "kswapd CPU", "kswapd CPU (%)"),
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


def free_pages(run: RunDir) -> go.Figure | None:
    """nr_free_pages over time against the min/low/high watermarks (Σ over zones)."""
    samples = [(t, v["nr_free_pages"]) for t, v in run.vmstat_samples if "nr_free_pages" in v]
    if not samples:
        return None
    ts = [t for t, _ in samples]
    fig = _figure("Free pages against the watermarks", "time (s)", "pages")
    fig.add_trace(go.Scatter(x=ts, y=[v for _, v in samples], name="nr_free_pages", mode="lines+markers"))
    marks = run.watermarks()
    if marks is not None:
        span = [min(ts), max(ts)]
        for name, dash in (("high", "dot"), ("low", "dash"), ("min", "solid")):
            fig.add_trace(go.Scatter(x=span, y=[marks[name]] * 2, name=f"{name} watermark (Σ zones)",
                                     mode="lines", line={"dash": dash, "width": 1.5}))  # fmt: skip
    return fig


def reclaim_rates(run: RunDir) -> go.Figure | None:
    """pgscan/pgsteal by kswapd, then by direct reclaim (pages/s: rows of their own, as
    direct reclaim is often orders of magnitude below kswapd), then allocstall (stalls/s)."""
    if len(run.vmstat_samples) < 2:
        return None
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=("kswapd", "direct reclaim", "direct reclaims (allocstall)"))  # fmt: skip
    fig.update_layout({**_LAYOUT, "height": HEIGHT + 220, "margin": {**_LAYOUT["margin"], "t": 75}, "legend": {**_LAYOUT["legend"], "y": -0.09}},
                      title=_title("Reclaim: pages scanned and stolen, direct reclaims"))  # fmt: skip
    fig.update_annotations(font_size=12, x=0.0, xanchor="left")
    for counter, name in RECLAIM_RATES:
        ts, ys = _rates(run.vmstat_samples, counter)
        row = 1 if counter.endswith("kswapd") else 2
        dash = "dot" if counter.startswith("pgsteal") else "solid"
        fig.add_trace(go.Scatter(x=ts, y=ys, name=name, mode="lines", line={"dash": dash}), row=row, col=1)
    ts, ys = _rates(run.vmstat_samples, "allocstall_*")
    fig.add_trace(go.Scatter(x=ts, y=ys, name="allocstall", mode="lines+markers"), row=3, col=1)
    for row, unit in ((1, "pages/s"), (2, "pages/s"), (3, "stalls/s")):
        fig.update_yaxes(title_text=unit, rangemode="tozero", row=row, col=1)
    fig.update_xaxes(title_text="time (s)", row=3, col=1)
    return fig


def task_cpu(run: RunDir) -> go.Figure | None:
    """Each task's CPU over the window (tasks.json), one colour per kind of task."""
    tasks = run.tasks.get("tasks", [])
    if not tasks:
        return None
    fig = _figure("CPU per task over the window", "task", "CPU (%, user + sys)", barmode="group")
    kinds = list(dict.fromkeys(t.get("kind", "other") for t in tasks))
    for kind in kinds:
        mine = [t for t in tasks if t.get("kind", "other") == kind]
        fig.add_trace(go.Bar(x=[f"{t.get('comm', '?')}[{t.get('pid', '?')}]" for t in mine],
                             y=[t.get("cpu_pct", 0.0) for t in mine], name=kind))  # fmt: skip
    fig.update_xaxes(type="category", tickangle=-45)
    # Inside the plot's top right: below it, the legend would cover the rotated task names.
    fig.update_layout(hovermode="closest", legend={"orientation": "v", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "top",
                                                   "bgcolor": "rgba(255,255,255,0.8)"})  # fmt: skip
    return fig


def cpu_over_time(run: RunDir) -> go.Figure | None:
    """cpu.samples: user, system and iowait over all CPUs, as vmstat prints them."""
    if not run.cpu:
        return None
    fig = _figure("CPU over time, all CPUs", "time (s)", "CPU (%)")
    ts = [c["t"] for c in run.cpu]
    for key, name in (("us_pct", "us"), ("sy_pct", "sy"), ("wa_pct", "wa")):
        fig.add_trace(go.Scatter(x=ts, y=[c.get(key) for c in run.cpu], name=name, mode="lines+markers"))
    return fig


def device_throughput(run: RunDir) -> go.Figure | None:
    """iostat.samples: read and write MB/s per device that moved data (writes only where a
    device wrote)."""
    if not run.iostat:
        return None
    fig = _figure("Device throughput", "time (s)", "MB/s")
    devices = list(dict.fromkeys(s["device"] for s in run.iostat))
    # a live machine lists every block device: plot those that moved data, if any did
    busy = [d for d in devices if any(s.get("rkB_s") or s.get("wkB_s") for s in run.iostat if s["device"] == d)]
    devices = busy or devices
    for dev in devices:
        mine = [s for s in run.iostat if s["device"] == dev]
        ts = [s["t"] for s in mine]
        fig.add_trace(go.Scatter(x=ts, y=[s.get("rkB_s", 0.0) / 1024 for s in mine], name=f"{dev} read", mode="lines"))
        if any(s.get("wkB_s", 0.0) for s in mine):
            fig.add_trace(go.Scatter(x=ts, y=[s.get("wkB_s", 0.0) / 1024 for s in mine], name=f"{dev} write",
                                     mode="lines", line={"dash": "dot"}))  # fmt: skip
    return fig


def point_figures(run: RunDir) -> list[go.Figure]:
    """Every per-point plot the run has data for, in page order."""
    figs = (free_pages(run), reclaim_rates(run), task_cpu(run), cpu_over_time(run), device_throughput(run))
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
            fig.add_trace(go.Scatter(x=[x for x, _ in xy], y=[y for _, y in xy], name=name, mode="lines+markers"))
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
