"""Seed 000 (multi-threaded kswapd): its four tables beside simulated (or live) runs."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "seed000"

TESTS = {
    1: "Test #1: Direct IO",
    2: "Test #2: standard file system IO, no page replacement",
    3: "Test #3: 1 kswapd thread per node",
    4: "Test #4: 4 kswapd threads per node",
}
SHORT_COLUMNS = ["dd", "sy", "dd_cpu", "throughput"]
LONG_COLUMNS = ["dd", "sy", "dd_cpu", "kswapd0", "kswapd1", "throughput", "dr", "pgscan_kswapd", "pgscan_direct"]


def scenario_dir() -> Path:
    """scenarios/seed000 of the source tree (the package is used from its checkout)."""
    return SCENARIO_DIR


@dataclass
class Reference:
    columns: list[str]
    rows: dict[int, list[float]]


def reference(test: int) -> Reference:
    data = tomllib.loads((scenario_dir() / "reference.toml").read_text())[f"test{test}"]
    return Reference(data["columns"], {int(r[0]): r for r in data["rows"]})


STAGE_S = 300.0  # the seed's measured stage: five minutes


def columns_of(result: dict, stage_s: float | None = STAGE_S) -> dict[str, float]:
    """The seed's columns from a run's result.json (simulated or live). Counts (dr, pgscan)
    are scaled to a `stage_s`-second stage, so that shorter runs read beside the seed's."""
    m = result["metrics"]
    ks = m.get("kswapd_cpu") or [0.0, 0.0]
    k = stage_s / result["elapsed_s"] if stage_s and result.get("elapsed_s") else 1.0
    return {
        "dd": m["tasks"],
        "sy": m["sy"],
        "dd_cpu": m["dd_cpu"],
        "kswapd0": ks[0] if ks else 0.0,
        "kswapd1": ks[1] if len(ks) > 1 else 0.0,
        "throughput": m["throughput_kb_s"],
        "dr": m["dr"] * k,
        "pgscan_kswapd": m["pgscan_kswapd"] * k,
        "pgscan_direct": m["pgscan_direct"] * k,
    }


def _fmt(col: str, v: float | None) -> str:
    if v is None:
        return "-"
    if col in ("dd", "dr", "pgscan_kswapd", "pgscan_direct"):
        return f"{int(round(v))}"
    if col == "sy":
        return f"{v:.0f}"
    if col == "throughput":
        return f"{v:.2f}"
    return f"{v:.2f}"


def table(test: int, results: list[dict], title_suffix: str = "") -> Table:
    """One seed table: for each task count, the simulated row and the seed's row under it."""
    ref = reference(test)
    cols = SHORT_COLUMNS if test in (1, 2) else LONG_COLUMNS
    t = Table(title=f"{TESTS[test]}{title_suffix}", title_justify="left")
    t.add_column("")
    for c in cols:
        t.add_column(c, justify="right")
    for res in sorted(results, key=lambda r: r["metrics"]["tasks"]):
        row = columns_of(res)
        t.add_row("sim", *[_fmt(c, row[c]) for c in cols])
        seed = ref.rows.get(int(row["dd"]))
        if seed is not None:
            t.add_row("[dim]seed[/dim]", *[f"[dim]{_fmt(c, seed[ref.columns.index(c)])}[/dim]" for c in cols])
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


def _by_tasks(results: list[dict]) -> dict[int, dict[str, float]]:
    return {int(r["metrics"]["tasks"]): columns_of(r) for r in results}


def check_targets(results: dict[int, list[dict]]) -> list[Target]:
    """The fidelity targets for seed 000 (issue: "reproduce seed 000"), evaluated on whatever
    tests and task counts were run. Each says what it measured."""
    out: list[Target] = []
    t = {test: _by_tasks(rs) for test, rs in results.items()}
    plateau = 26_250_000.0

    def have(test: int, *ns: int) -> bool:
        return test in t and all(n in t[test] for n in ns)

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
            ks = [min(t[3][n]["kswapd0"], t[3][n]["kswapd1"]) for n in busy]
            out.append(Target("T3 kswapd CPU near 100% at 22–40", all(k >= 85 for k in ks), ", ".join(f"{n}:{k:.0f}%" for n, k in zip(busy, ks))))
        if have(3, 40, 90):
            a = (t[3][40]["kswapd0"] + t[3][40]["kswapd1"]) / 2
            b = (t[3][90]["kswapd0"] + t[3][90]["kswapd1"]) / 2
            out.append(Target("T3 kswapd CPU falls at high N", b < a - 10, f"40: {a:.0f}%, 90: {b:.0f}%"))
        hi = [n for n in t[3] if n >= 52]
        if hi:
            tps = [t[3][n]["throughput"] / 1e6 for n in sorted(hi)]
            out.append(Target("T3 throughput plateaus near 17–18 GB/s (52–90)", all(15.5 <= v <= 19.5 for v in tps),
                              ", ".join(f"{n}:{v:.1f}" for n, v in zip(sorted(hi), tps))))
    for n, seed_ratio in ((52, 21758352.0 / 17607680.4), (90, 22516787.6 / 16864428.0)):
        if have(3, n) and have(4, n):
            r = t[4][n]["throughput"] / t[3][n]["throughput"]
            out.append(Target(f"T4/T3 throughput at {n} within ±15% of the seed's {seed_ratio:.2f}", abs(r / seed_ratio - 1) <= 0.15, f"{r:.2f}"))
    if 4 in t:
        quiet = [n for n in t[4] if 22 <= n <= 58]
        if quiet:
            drs = {n: t[4][n]["dr"] for n in sorted(quiet)}
            ok = all(d <= 1000 for d in drs.values())
            out.append(Target("T4 direct reclaims near zero at 22–58 (≤ 1000 per stage)", ok, ", ".join(f"{n}:{d:.0f}" for n, d in drs.items())))
    for test in (3, 4):
        if have(test, 22, 90):
            out.append(Target(f"T{test} sy rises with N", t[test][90]["sy"] > t[test][22]["sy"], f"22: {t[test][22]['sy']:.0f}, 90: {t[test][90]['sy']:.0f}"))
    both = [n for n in (76, 82, 88, 90) if have(3, n) and have(4, n)]
    if both:
        s3 = sum(t[3][n]["sy"] for n in both) / len(both)
        s4 = sum(t[4][n]["sy"] for n in both) / len(both)
        out.append(Target("sy higher in T3 than T4 at high N (mean over 76–90)", s3 > s4, f"T3 {s3:.1f} vs T4 {s4:.1f}"))
    return out


def targets_table(targets: list[Target]) -> Table:
    t = Table(title="Seed 000 fidelity targets", title_justify="left")
    t.add_column("target")
    t.add_column("met", justify="center")
    t.add_column("measured")
    for x in targets:
        t.add_row(x.name, "[green]yes[/green]" if x.ok else "[red]no[/red]", x.detail)
    return t


def reference_results(test: int) -> list[dict]:
    """The seed's own rows as result.json-like dicts (for checking the targets themselves)."""
    ref = reference(test)
    out = []
    for row in ref.rows.values():
        v = dict(zip(ref.columns, row))
        out.append({
            "elapsed_s": STAGE_S,
            "metrics": {
                "tasks": v["dd"], "sy": v["sy"], "dd_cpu": v["dd_cpu"],
                "kswapd_cpu": [v.get("kswapd0", 0.0), v.get("kswapd1", 0.0)],
                "throughput_kb_s": v["throughput"], "dr": v.get("dr", 0),
                "pgscan_kswapd": v.get("pgscan_kswapd", 0), "pgscan_direct": v.get("pgscan_direct", 0),
            },
        })
    return out
