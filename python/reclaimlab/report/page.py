"""The HTML report's page: the comparison's tables (the rows `reclaimlab compare` prints),
the plots of python/reclaimlab/report/figures.py, and plotly's JavaScript once, embedded
or referenced beside the page, so that it opens with no network."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Sequence, TypeVar

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from reclaimlab.compare import TITLE, Comparison, Input, as_dict, better_text, change_style, point_key, row_label, trace_report, value_text
from reclaimlab.report import figures
from reclaimlab.rundir import RunDir

PLOTLY_JS = "plotly.min.js"
_CONFIG = {"responsive": True, "displaylogo": False}

_CSS = """
body { font-family: "Liberation Sans", "DejaVu Sans", Arial, sans-serif; margin: 1.5rem 2rem; color: #222; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2rem; margin-top: 2rem; }
h3 { margin: 1.5rem 0 0.3rem; } .muted, .note { color: #666; } nav a { margin-right: 1rem; }
table { border-collapse: collapse; font-size: 0.9rem; margin: 0.5rem 0 1rem; }
th, td { padding: 0.2rem 0.6rem; border-bottom: 1px solid #e4e4e4; }
td.num { text-align: right; font-family: "Liberation Mono", "DejaVu Sans Mono", monospace; white-space: pre; }
th { text-align: right; background: #f4f4f4; } th.label, td.label { text-align: left; }
tr.point th { text-align: left; background: #e8eef7; }
.better { color: #1a7f37; } .worse { color: #c62828; } .flag { color: #c62828; font-weight: bold; }
.warn { color: #c62828; } td.dir { text-align: center; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1rem; align-items: start; }
.plot { border: 1px solid #e4e4e4; border-radius: 4px; padding: 0.3rem; min-width: 0; }
"""


@dataclass
class Section:
    id: str
    title: str
    parts: list[str] = field(default_factory=list)


def _plot(fig: go.Figure) -> str:
    """One figure as a div; plotly's JavaScript is in the page's head, not repeated here."""
    height = fig.layout.height or figures.HEIGHT
    div = fig.to_html(full_html=False, include_plotlyjs=False, config=_CONFIG, default_width="100%", default_height=f"{height}px")
    return f'<div class="plot">{div}</div>'


def _grid(figs: Sequence[go.Figure]) -> str:
    return '<div class="grid">' + "".join(_plot(f) for f in figs) + "</div>"


def _note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def comparison_tables(c: Comparison) -> str:
    """The comparison as HTML tables: the same cells as `reclaimlab compare` (rows in the
    order of the points' swept values), a heading row per sweep point, each metric's better
    direction (its description on hover), and a change coloured only where the metric has a
    better direction: green where better, red where worse."""
    head = "".join(f"<th>{escape(n)}<br><span class=muted>{escape(k)}</span></th>" for n, k in zip(c.names, c.kinds))
    about = {m.name: m.about for m in c.metrics}
    out = ['<table class="compare">', f'<thead><tr><th class="label"></th><th title="the better direction">better</th>{head}</tr></thead><tbody>']
    point: str | None = None
    for row in c.rows:
        if row.point != point and any(r.point for r in c.rows):
            point = row.point
            out.append(f'<tr class="point"><th colspan="{len(c.names) + 2}">{escape(row.point or "(single run)")}</th></tr>')
        cells = []
        for k in range(len(row.values)):
            cls = f"num {change_style(row, k)}".strip()
            cells.append(f'<td class="{cls}">{escape(row.cell(k, with_change=k > 0))}</td>')
        label = escape(row.metric if point is not None else row_label(row))
        out.append(f'<tr><td class="label" title="{escape(about.get(row.metric, ""))}">{label}</td>'
                   f'<td class="dir">{better_text(row.better)}</td>{"".join(cells)}</tr>')  # fmt: skip
    out.append("</tbody></table>")
    if c.divergence:
        out.append(f"<h3>Simulated over live (flagged outside ×{c.tolerance:g})</h3>")
        out.append("<table><thead><tr>" + "".join(f'<th class="label">{h}</th>' for h in ("point", "metric", "simulated", "live")))
        out.append("<th>sim/live</th><th></th></tr></thead><tbody>")
        for d in c.divergence:
            flag = '<span class="flag">!!</span>' if d.flagged else ""
            values = "".join(f'<td class="num">{escape(cell)}</td>' for cell in d.cells())
            out.append(
                f'<tr><td class="label">{escape(d.point or "-")}</td><td class="label">{escape(d.metric)}</td>'
                f'{values}<td class="num">{d.ratio:.2f}</td><td>{flag}</td></tr>'
            )
        out.append("</tbody></table>")
    return "".join(out)


def _stall_table(rows: list[tuple[str, dict[str, float]]]) -> str:
    """The trace report's stall statistics (all orders), one column per traced run."""
    keys = list(rows[0][1])
    head = "".join(f"<th>{escape(name)}</th>" for name, _ in rows)
    body = "".join(
        f'<tr><td class="label">{escape(k)}{"" if k == "Samples" else " ms"}</td>'
        + "".join(f'<td class="num">{value_text(float(stats.get(k, 0.0)))}</td>' for _, stats in rows)
        + "</tr>"
        for k in keys
    )
    return f'<table><thead><tr><th class="label">direct-reclaim stalls</th>{head}</tr></thead><tbody>{body}</tbody></table>'


_T = TypeVar("_T")


def _ordered(points: dict[str, _T]) -> list[tuple[str, _T]]:
    """A sweep's points by their swept value (tasks 4, 8, 16 rather than by name)."""
    return sorted(points.items(), key=lambda p: point_key(p[0]))


def _run_name(name: str, label: str) -> str:
    return f"{name} · {label}" if label else name


def trace_section(inputs: list[Input], names: list[str]) -> Section | None:
    traced = [(_run_name(n, label), run) for i, n in zip(inputs, names) for label, run in _ordered(i.points) if run.trace_path is not None]
    if not traced:
        return None
    s = Section("trace", "Direct-reclaim stalls (from the trace)")
    latencies, stats, quiet = [], [], []
    for name, run in traced:
        report = trace_report(run)
        assert report is not None
        ms = figures.stall_latencies_ms(report)
        latencies.append((name, ms))
        if ms:
            every_order = next((x for x in report.get("direct_stalls_ms", []) if x.get("order") is None), None)
            if every_order is not None:
                stats.append((name, every_order["rows"]))
        else:
            quiet.append(name)
    fig = figures.stall_histogram(latencies)
    if fig is not None:
        s.parts.append(_grid([fig]))
    if stats:
        s.parts.append(_stall_table(stats))
    if quiet:
        s.parts.append(_note("No direct-reclaim stall in the trace of: " + ", ".join(quiet) + "."))
    return s


def _point_notes(run: RunDir) -> list[str]:
    notes = []
    if len(run.vmstat_samples) < 2:
        notes.append("fewer than two vmstat samples: no rates over time (the run was shorter than its sample interval)")
    elif run.watermarks() is None:
        notes.append("no zoneinfo in the run directory: the watermarks are not shown")
    return notes


def points_section(inputs: list[Input], names: list[str], kinds: list[str]) -> Section:
    """Per sweep point (in the order of the swept values), its plots with every input that
    has the point overlaid, one colour per input."""
    s = Section("points", "Per point over time")
    labels = sorted({label for i in inputs for label in i.points}, key=point_key)
    for label in labels:
        runs = [(name, i.points[label], kind) for i, name, kind in zip(inputs, names, kinds) if label in i.points]
        which = ", ".join(f'<span style="color:{figures.colour(names.index(name))}">■</span> {escape(name)} '
                          f"({escape(run.kind or kind)}, {run.elapsed_s:.2f} s)" for name, run, kind in runs)  # fmt: skip
        s.parts.append(f"<h3>{escape(label or '(single run)')} <span class=muted>{which}</span></h3>")
        s.parts += [_note(f"{name}: {n}") for name, run, _ in runs for n in _point_notes(run)]
        # Colours follow an input's place among all inputs, not among those with this point.
        figs = figures.point_figures([figures.PointRun(names.index(name), name, run) for name, run, _ in runs])
        s.parts.append(_grid(figs) if figs else _note("no samples to plot"))
    return s


def render_page(inputs: list[Input], c: Comparison, title: str | None = None, plotlyjs: str = "embed") -> str:
    """The whole report as one HTML document. `plotlyjs` is "embed" (the library inside the
    page) or "beside" (a <script src> of PLOTLY_JS, which the caller writes next to it)."""
    names = c.names
    sections = []
    point_runs = [i.points for i in inputs]
    sweep = figures.sweep_curves(c, point_runs)
    if sweep:
        sections.append(Section("sweep", "Across the sweep", [_grid(sweep)]))
    sections.append(points_section(inputs, names, c.kinds))
    trace = trace_section(inputs, names)
    if trace is not None:
        sections.append(trace)
    sections.append(Section("compare", "Comparison", [
        *(f'<p class="warn">warning: {escape(w)}</p>' for w in c.warnings()),
        _note(TITLE + ". Points are matched by their sweep label; hover over a metric for what it measures."),
        comparison_tables(c),
    ]))  # fmt: skip

    heading = title or "reclaimlab report: " + " vs ".join(names)
    script = f"<script>{get_plotlyjs()}</script>" if plotlyjs == "embed" else f'<script src="{PLOTLY_JS}"></script>'
    nav = "".join(f'<a href="#{s.id}">{escape(s.title)}</a>' for s in sections)
    body = "".join(f'<section id="{s.id}"><h2>{escape(s.title)}</h2>{"".join(s.parts)}</section>' for s in sections)
    inputs_line = ", ".join(f"{escape(n)} ({escape(k)}, {len(i.points)} point{'s' if len(i.points) != 1 else ''})" for i, n, k in zip(inputs, names, c.kinds))
    data = json.dumps(as_dict(c)).replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(heading)}</title>\n<style>{_CSS}</style>\n{script}\n</head>\n<body>\n"
        f"<h1>{escape(heading)}</h1>\n<p class=\"muted\">Inputs: {inputs_line}</p>\n<nav>{nav}</nav>\n{body}\n"
        f'<script type="application/json" id="comparison">{data}</script>\n</body>\n</html>\n'
    )

