"""Seed 000 (multi-threaded kswapd): its four tables beside simulated (or live) runs."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from reclaimlab import _core, columns
from reclaimlab.rundir import RunDir
from reclaimlab.summary import format_value

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "seed000"

TESTS = {
    1: "Test #1: Direct IO",
    2: "Test #2: standard file system IO, no page replacement",
    3: "Test #3: 1 kswapd thread per node",
    4: "Test #4: 4 kswapd threads per node",
}
DD_SOURCES = dict(_core.workload_columns("dd"))  # header → column source (reclaimlab.columns)
SHORT_COLUMNS = ["dd", "sy", "dd_cpu", "throughput"]
LONG_COLUMNS = list(DD_SOURCES)

Row = dict[str, float | None]  # a table row: column header → value


# The seed's machine: 378 GiB per node (756 GB over 2 nodes), what --scale multiplies; a
# scaled node keeps at least 2 GiB, and its DMA32 zone an eighth of it, at most 3 GiB.
NODE_MB, DMA32_MB, MIN_NODE_MB = 387072, 3072, 2048


def overrides(scale: float, duration: float | None) -> list[str]:
    """`--set`s that scale the seed's memory by `scale` and its 300 s stage to `duration`."""
    out = []
    if scale != 1.0:
        mb = NODE_MB * scale
        out.append(f"machine.memory_mb_per_node={max(MIN_NODE_MB, int(mb) // 4 * 4)}")
        out.append(f"machine.dma32_mb={min(DMA32_MB, max(0, int(mb) // 8))}")
    if duration is not None:
        out.append(f"run.duration_s={duration}")
    return out


def scenario_dir() -> Path:
    """scenarios/seed000 of the source tree (the package is used from its checkout)."""
    return SCENARIO_DIR


def reference(test: int) -> dict[int, Row]:
    """The seed's published rows of a test, by dd task count."""
    data = tomllib.loads((scenario_dir() / "reference.toml").read_text())[f"test{test}"]
    return {int(r[0]): dict(zip(data["columns"], r)) for r in data["rows"]}


STAGE_S = 300.0  # the seed's measured stage: five minutes


def columns_of(run: RunDir, stage_s: float | None = STAGE_S) -> Row:
    """The seed's columns (dd's table) of a simulated or live run directory. Counts (the
    vmstat deltas: dr, pgscan) are scaled to a `stage_s`-second stage, so that shorter runs
    read beside the seed's."""
    k = stage_s / run.elapsed_s if stage_s and run.elapsed_s else 1.0
    row: Row = {}
    for header, source in DD_SOURCES.items():
        v = columns.value(run, source)
        row[header] = v * k if source.startswith("vmstat.") else v
    return row


def _fmt(col: str, v: float | None) -> str:
    return format_value(DD_SOURCES[col], v)


def table(test: int, rows: list[Row], title_suffix: str = "") -> Table:
    """One seed table: for each task count, the simulated row and the seed's row under it."""
    ref = reference(test)
    cols = SHORT_COLUMNS if test in (1, 2) else LONG_COLUMNS
    t = Table(title=f"{TESTS[test]}{title_suffix}", title_justify="left")
    t.add_column("")
    for c in cols:
        t.add_column(c, justify="right")
    for row in sorted(rows, key=lambda r: r["dd"]):
        t.add_row("sim", *[_fmt(c, row[c]) for c in cols])
        seed = ref.get(int(row["dd"]))
        if seed is not None:
            t.add_row("[dim]seed[/dim]", *[f"[dim]{_fmt(c, seed[c])}[/dim]" for c in cols])
    return t


def print_tables(tables: list[Table], console: Console | None = None) -> None:
    console = console or Console(width=140)
    for t in tables:
        console.print(t)
        console.print()


@dataclass
class Target:
    name: str
    ok: bool
    detail: str


def _by_tasks(rows: list[Row]) -> dict[int, Row]:
    return {int(r["dd"]): r for r in rows}


def check_targets(rows: dict[int, list[Row]]) -> list[Target]:
    """The fidelity targets for seed 000 (issue: "reproduce seed 000"), evaluated on whatever
    tests and task counts were run (rows as `columns_of` gives them, by test). Each says what
    it measured."""
    out: list[Target] = []
    t = {test: _by_tasks(rs) for test, rs in rows.items()}
    plateau = 26_250_000.0

    def have(test: int, *ns: int) -> bool:
        return test in t and all(n in t[test] for n in ns)

    def kswapd(test: int, n: int) -> tuple[float, float]:
        """Both nodes' kswapd CPU (0 for a node the run had no kswapd of)."""
        return t[test][n]["kswapd0"] or 0.0, t[test][n]["kswapd1"] or 0.0

    if 1 in t:
        high = {n: r["throughput"] for n, r in t[1].items() if n >= 22}
        if high:
            worst = min(high.values())
            out.append(Target("T1 saturates near 26.25 GB/s by ~22 tasks", worst >= 0.95 * plateau and max(high.values()) <= 1.02 * plateau,
                              f"min over ≥22 tasks {worst / 1e6:.2f}M KB/s"))
    if 2 in t and len(t[2]) >= 2:
        ns = sorted(t[2])
        tp = [t[2][n]["throughput"] for n in ns]
        rising = all(b >= a * 0.99 for a, b in zip(tp, tp[1:]))
        detail = " → ".join(f"{n}:{v / 1e6:.1f}" for n, v in zip(ns, tp))
        ok = rising and (90 not in t[2] or abs(t[2][90]["throughput"] - 25.25e6) / 25.25e6 <= 0.10)
        out.append(Target("T2 climbs steadily to ~25 GB/s at 90", ok, detail))
    if 3 in t:
        low = [n for n in (10, 16) if n in t[3]]
        if low:
            out.append(Target("T3 no direct reclaims at 10–16", all(t[3][n]["dr"] == 0 for n in low), ", ".join(f"{n}:{t[3][n]['dr']:.0f}" for n in low)))
        mid = sorted(n for n in t[3] if n >= 22)
        if len(mid) >= 2:
            drs = [t[3][n]["dr"] for n in mid]
            out.append(Target("T3 direct reclaims from 22 on, growing with N", all(d > 0 for d in drs) and drs[-1] > drs[0],
                              ", ".join(f"{n}:{d:.0f}" for n, d in zip(mid, drs))))
        busy = [n for n in (22, 28, 34, 40) if n in t[3]]
        if busy:
            ks = [min(kswapd(3, n)) for n in busy]
            out.append(Target("T3 kswapd CPU near 100% at 22–40", all(k >= 85 for k in ks), ", ".join(f"{n}:{k:.0f}%" for n, k in zip(busy, ks))))
        if have(3, 40, 90):
            a = sum(kswapd(3, 40)) / 2
            b = sum(kswapd(3, 90)) / 2
            out.append(Target("T3 kswapd CPU falls at high N", b < a - 10, f"40: {a:.0f}%, 90: {b:.0f}%"))
        hi = [n for n in t[3] if n >= 52]
        if hi:
            tps = [t[3][n]["throughput"] / 1e6 for n in sorted(hi)]
            out.append(Target("T3 throughput plateaus near 17–18 GB/s (52–90)", all(15.5 <= v <= 19.5 for v in tps),
                              ", ".join(f"{n}:{v:.1f}" for n, v in zip(sorted(hi), tps))))
    seed = {test: reference(test) for test in (3, 4)}
    for n in (52, 90):
        if have(3, n) and have(4, n):
            seed_ratio = seed[4][n]["throughput"] / seed[3][n]["throughput"]
            r = t[4][n]["throughput"] / t[3][n]["throughput"]
            out.append(Target(f"T4/T3 throughput at {n} within ±15% of the seed's {seed_ratio:.2f}", abs(r / seed_ratio - 1) <= 0.15, f"{r:.2f}"))
    if 4 in t:
        quiet = [n for n in t[4] if 22 <= n <= 58]
        if quiet:
            drs = {n: t[4][n]["dr"] for n in sorted(quiet)}
            ok = all(d <= 1000 for d in drs.values())
            out.append(Target("T4 direct reclaims near zero at 22–58 (≤ 1000 per stage)", ok, ", ".join(f"{n}:{d:.0f}" for n, d in drs.items())))
    def have_sy(test: int, *ns: int) -> bool:
        return have(test, *ns) and all(t[test][n]["sy"] is not None for n in ns)

    for test in (3, 4):
        if have_sy(test, 22, 90):
            out.append(Target(f"T{test} sy rises with N", t[test][90]["sy"] > t[test][22]["sy"], f"22: {t[test][22]['sy']:.0f}, 90: {t[test][90]['sy']:.0f}"))
    both = [n for n in (76, 82, 88, 90) if have_sy(3, n) and have_sy(4, n)]
    if both:
        s3 = sum(t[3][n]["sy"] for n in both) / len(both)
        s4 = sum(t[4][n]["sy"] for n in both) / len(both)
        out.append(Target("sy higher in T3 than T4 at high N (mean over 76–90)", s3 > s4, f"T3 {s3:.1f} vs T4 {s4:.1f}"))
    return out


def targets_table(targets: list[Target], title: str = "Seed 000 fidelity targets") -> Table:
    """The targets, met or not, with what was measured (seed 002's table too)."""
    t = Table(title=title, title_justify="left")
    t.add_column("target")
    t.add_column("met", justify="center")
    t.add_column("measured")
    for x in targets:
        t.add_row(x.name, "[green]yes[/green]" if x.ok else "[red]no[/red]", x.detail)
    return t


def reference_results(test: int) -> list[Row]:
    """The seed's own rows, in the shape `check_targets` takes (for checking the targets
    themselves)."""
    return list(reference(test).values())
