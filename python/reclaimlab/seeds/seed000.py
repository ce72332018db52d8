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


def columns_of(result: dict) -> dict[str, float]:
    """The seed's columns from a run's result.json (simulated or live)."""
    m = result["metrics"]
    ks = m.get("kswapd_cpu") or [0.0, 0.0]
    return {
        "dd": m["tasks"],
        "sy": m["sy"],
        "dd_cpu": m["dd_cpu"],
        "kswapd0": ks[0] if ks else 0.0,
        "kswapd1": ks[1] if len(ks) > 1 else 0.0,
        "throughput": m["throughput_kb_s"],
        "dr": m["dr"],
        "pgscan_kswapd": m["pgscan_kswapd"],
        "pgscan_direct": m["pgscan_direct"],
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
