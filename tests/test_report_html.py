"""`reclaimlab report`: the HTML report as a person sees it, in real headless Chromium
(Debian's, driven by Playwright's Python API), and its command line.

The browser test does not skip: where Chromium or Playwright is missing it fails with the
command that installs them (`make browser`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reclaimlab.cli import cli

CHROMIUM = Path(os.environ.get("RECLAIMLAB_CHROMIUM", "/usr/bin/chromium"))
INSTALL = "make browser  (apt-get install chromium fonts-liberation; playwright from requirements-dev.txt)"

# Every plot the report of a traced sweep and a second sweep must show.
EXPECTED_PLOTS = {
    "Free pages against the watermarks",
    "Free pages by zone: whole pageblocks (order 9+) and fragments",
    "Reclaim: pages scanned and stolen, direct reclaims",
    "CPU per task over the window",
    "CPU over time, all CPUs",
    "Memory pressure (PSI)",
    "Device throughput",
    "Direct-reclaim stalls by latency",
    "Throughput across the sweep",
    "Direct reclaims across the sweep",
    "kswapd CPU, all threads across the sweep",
    "System CPU (sy) across the sweep",
}


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two small simulated sweeps over the task count (8, 48: kswapd alone, then direct
    reclaim too): the first traced, the second with 4 kswapd threads per node."""
    root = tmp_path_factory.mktemp("report-runs")
    scenario = root / "sweep.toml"
    small = Path(__file__).resolve().parents[1] / "scenarios" / "small.toml"
    scenario.write_text(small.read_text() + '\n[sweep]\n"workload.tasks" = [8, 48]\n')
    common = ("--set", "run.duration_s=0.5", "--set", "run.sample_interval_s=0.1")
    one, four = root / "kswapd1", root / "kswapd4"
    for out, extra in ((one, ("--set", "run.trace=true")), (four, ("--set", "variant.kswapd_threads=4"))):
        r = invoke("run", str(scenario), "-o", str(out), *common, *extra)
        assert r.exit_code == 0, r.output
    return one, four


def _playwright() -> Any:
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}: run `{INSTALL}`", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"Playwright is not installed: run `{INSTALL}`", pytrace=False)
    return sync_playwright


# Every plot drawn, or stop waiting at the page's first error (reported by _open).
RECORD_ERRORS = "window.__errors = []; window.addEventListener('error', e => window.__errors.push(e.message));"
WAIT_RENDERED = """() => {
    const divs = [...document.querySelectorAll('.plotly-graph-div')];
    return window.__errors.length > 0 || (divs.length > 0 && divs.every(d => d.querySelector('.main-svg') && d._fullLayout));
}"""

PLOTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(d => ({
    title: (d.layout.title && d.layout.title.text) || '',
    points: d.data.map(t => Math.max((t.x || []).length, (t.y || []).length)),
    names: d.data.map(t => t.name || ''),
    drawn: d.querySelectorAll('g.trace').length,
    width: d.getBoundingClientRect().width,
}))"""


def _open(browser: Any, report: Path, screenshot: Path, full_page: bool = True) -> list[dict[str, Any]]:
    """Open `report`, wait for every plot to render, fail on any console error, page error or
    request that leaves the machine; screenshot it; return what each plot holds."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("request", lambda r: None if r.url.split(":", 1)[0] in ("file", "data", "blob", "about") else problems.append(f"network request: {r.url}"))
    page.add_init_script(RECORD_ERRORS)
    page.goto(report.as_uri())
    page.wait_for_function(WAIT_RENDERED, timeout=20_000)
    assert not problems, "\n".join(problems)
    plots: list[dict[str, Any]] = page.evaluate(PLOTS)
    page.screenshot(path=str(screenshot), full_page=full_page)
    page.close()
    assert not problems, "\n".join(problems)
    assert screenshot.stat().st_size > 10_000
    return plots


def test_the_report_renders_in_headless_chromium(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    sync_playwright = _playwright()
    one, four = sweeps
    embedded, beside = tmp_path / "report.html", tmp_path / "beside" / "report.html"
    assert invoke("report", str(one), str(four), "-o", str(embedded)).exit_code == 0
    # plotly.min.js written beside the page instead (one run: 7 plots are enough to see it load)
    assert invoke("report", str(four / "workload.tasks=8"), "-o", str(beside), "--plotlyjs", "beside").exit_code == 0
    assert (beside.parent / "plotly.min.js").exists()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            plots = _open(browser, embedded, tmp_path / "report.png")
            assert len(_open(browser, beside, tmp_path / "beside.png", full_page=False)) == 7
        finally:
            browser.close()

    titles = [p["title"] for p in plots]
    assert EXPECTED_PLOTS <= set(titles), EXPECTED_PLOTS - set(titles)
    # per point, the two inputs overlaid: 2 points × 6 plots; across the sweep 4; the stall histogram 1
    assert len(plots) == 2 * 7 + 4 + 1
    for plot in plots:
        assert plot["points"] and max(plot["points"]) > 0, f"{plot['title']}: no data"
        assert plot["drawn"] >= 1, f"{plot['title']}: nothing drawn"
        assert plot["width"] > 300, f"{plot['title']}: not laid out"
    free = next(p for p in plots if p["title"] == "Free pages against the watermarks")
    # Both inputs on one plot; the same machine's watermarks once.
    # Both inputs on one plot, each beside its true count (the per-CPU lists' pages included);
    # the same machine's watermarks once.
    assert free["names"] == ["kswapd1 nr_free_pages", "kswapd4 nr_free_pages",
                             "kswapd1 free pages, per-CPU lists included", "kswapd4 free pages, per-CPU lists included",
                             "high watermark (Σ zones)", "low watermark (Σ zones)", "min watermark (Σ zones)"]  # fmt: skip
    blocks = next(p for p in plots if p["title"].startswith("Free pages by zone"))
    # One colour per input, a line each for every zone's whole pageblocks and fragments (two
    # nodes: the zones are named with their node).
    wanted = {f"{run} node {n} Normal {kind}" for run in ("kswapd1", "kswapd4") for n in (0, 1) for kind in ("whole", "fragments")}
    assert wanted <= set(blocks["names"]), blocks["names"]
    for title in ("Reclaim: pages scanned and stolen, direct reclaims", "CPU over time, all CPUs", "Memory pressure (PSI)", "Device throughput"):
        for p in (p for p in plots if p["title"] == title):
            assert {n.split(" ", 1)[0] for n in p["names"]} == {"kswapd1", "kswapd4"}, (title, p["names"])
    tasks = next(p for p in plots if p["title"] == "CPU per task over the window")
    assert tasks["names"] == ["kswapd1", "kswapd4"]
    sweep = next(p for p in plots if p["title"] == "Throughput across the sweep")
    assert sweep["names"] == ["kswapd1", "kswapd4"] and sweep["points"] == [2, 2]
    stalls = next(p for p in plots if p["title"] == "Direct-reclaim stalls by latency")
    assert stalls["points"][0] > 0  # the traced 48-task point stalled


def test_free_pages_draws_the_true_count_only_where_the_samples_have_it(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    from reclaimlab.report.figures import free_pages
    from reclaimlab.rundir import read_rundir

    run = read_rundir(sweeps[0] / "workload.tasks=48")
    true = [v["nr_free_pages_true"] for _, v in run.vmstat_samples]
    # The kernel's reading leaves out the per-CPU lists' pages (and lags by the deltas).
    assert all(t > 0 for t in true) and true != [v["nr_free_pages"] for _, v in run.vmstat_samples]
    names = [t.name for t in free_pages([(0, "new", run)]).data]
    assert names[:2] == ["nr_free_pages", "free pages, per-CPU lists included"]
    # A run directory written before the line existed: the kernel's count alone.
    for _, v in run.vmstat_samples:
        del v["nr_free_pages_true"]
    names = [t.name for t in free_pages([(0, "old", run)]).data]
    assert names[0] == "nr_free_pages" and not any("per-CPU" in n for n in names)


def test_the_page_holds_the_comparison_and_plotly_once(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    one, four = sweeps
    out = tmp_path / "r.html"
    assert invoke("report", str(one), str(four), "-o", str(out), "--title", "kswapd threads").exit_code == 0
    html = out.read_text()
    assert "<title>kswapd threads</title>" in html
    assert html.count("Throughput (kB/s)") >= 2  # a table row per point
    assert html.count("Plotly.newPlot") == 19
    # Plots first, the comparison last; its rows say which way is better and what they measure.
    assert html.index('<section id="sweep">') < html.index('<section id="points">') < html.index('<section id="compare">')
    assert '<td class="dir">↑</td>' in html and "title=\"the workload&#x27;s throughput over the measured window\"" in html
    assert "Kswapd CPU % (all threads)" in html and "Kswapd CPU % node 1" in html
    assert html.count("<script src=") == 0 and "cdn" not in html.split("</head>", 1)[1].lower()
    assert 'id="comparison"' in html


def test_cli_refuses_to_overwrite_and_names_bad_inputs(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    one, _ = sweeps
    out = tmp_path / "r.html"
    out.write_text("mine")
    r = invoke("report", str(one), "-o", str(out))
    assert r.exit_code == 2 and "exists; pass --force" in r.output and out.read_text() == "mine"
    assert invoke("report", str(one), "-o", str(out), "--force").exit_code == 0
    assert out.read_text().startswith("<!DOCTYPE html>")

    (tmp_path / "empty").mkdir()
    r = invoke("report", str(tmp_path / "empty"), "-o", str(tmp_path / "x.html"))
    assert r.exit_code == 2 and "neither a run directory" in r.output
    r = invoke("report", str(tmp_path / "nothing"), "-o", str(tmp_path / "x.html"))
    assert r.exit_code == 2 and "not a directory" in r.output
    assert not (tmp_path / "x.html").exists()


def test_a_run_without_samples_or_zoneinfo_gets_notes_not_empty_plots(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    one, _ = sweeps
    run = tmp_path / "old"
    run.mkdir()
    for f in (one / "workload.tasks=8").iterdir():
        if f.name not in ("vmstat.samples", "zoneinfo", "trace.txt", "cpu.samples", "iostat.samples", "psi.samples", "buddyinfo.samples"):
            (run / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "r.html"
    assert invoke("report", str(run), "-o", str(out)).exit_code == 0
    html = out.read_text()
    assert "fewer than two vmstat samples" in html
    assert html.count("Plotly.newPlot") == 1  # per-task CPU only


def test_the_cli_starts_without_importing_plotly() -> None:
    code = "import sys, reclaimlab.cli; sys.exit('plotly' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
