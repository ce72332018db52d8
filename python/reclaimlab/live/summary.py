"""Reclaim metrics from vmstat deltas, and the summary table in the layout of the seed tables.

Reads run directories (rundir.RunDir), so a simulated run prints the same table.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

from rich.console import Console
from rich.table import Table

from reclaimlab.rundir import RunDir, sum_prefix


def vmstat_metrics(delta: Mapping[str, int]) -> dict[str, Any]:
    """The reclaim counters every report wants, from after − before (kernel names)."""
    ra, hit = delta.get("swap_ra", 0), delta.get("swap_ra_hit", 0)
    return {
        "pgscan_kswapd": delta.get("pgscan_kswapd", 0),
        "pgscan_direct": delta.get("pgscan_direct", 0),
        "pgsteal_kswapd": delta.get("pgsteal_kswapd", 0),
        "pgsteal_direct": delta.get("pgsteal_direct", 0),
        "allocstall": sum_prefix(delta, "allocstall_"),
        "pageoutrun": delta.get("pageoutrun", 0),
        "pswpin": delta.get("pswpin", 0),
        "pswpout": delta.get("pswpout", 0),
        "swap_ra": ra,
        "swap_ra_hit": hit,
        "ra_hit_pct": round(hit * 100.0 / ra, 2) if ra else None,
        "nr_vmscan_write": delta.get("nr_vmscan_write", 0),
    }


def max_sy(run: RunDir) -> float:
    """vmstat's `sy`, the highest sample (seed 000: "I just grab the highest value")."""
    return max((c["sy_pct"] for c in run.cpu), default=0.0)


def workload_cpu_per_task(run: RunDir) -> float:
    """Mean CPU% per workload task slot (restarted dd processes add up in their slot)."""
    tasks = run.tasks_of_kind("workload")
    slots = int(run.result.get("metrics", {}).get("tasks") or len(tasks) or 1)
    return sum(t["cpu_pct"] for t in tasks) / slots


def kswapd_cpu(run: RunDir, node: int) -> float | None:
    threads = [t for t in run.tasks_of_kind("kswapd") if t.get("node") == node]
    return sum(t["cpu_pct"] for t in threads) if threads else None


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def dd_row(run: RunDir) -> list[str]:
    m = run.result["metrics"]
    d = run.delta
    return [
        str(m.get("tasks", "")),
        f"{max_sy(run):.0f}",
        _fmt(workload_cpu_per_task(run)),
        _fmt(kswapd_cpu(run, 0)),
        _fmt(kswapd_cpu(run, 1)),
        _fmt(float(m.get("throughput_kB_s", 0.0))),
        str(sum_prefix(d, "allocstall_")),
        str(d.get("pgscan_kswapd", 0)),
        str(d.get("pgscan_direct", 0)),
    ]


DD_COLUMNS = ["dd", "sy", "dd_cpu", "kswapd0", "kswapd1", "throughput", "dr", "pgscan_kswapd", "pgscan_direct"]
USEMEM_COLUMNS = ["usemem", "throughput", "ra_hit%", "swap_ra", "swap_ra_hit", "pswpin", "pswpout", "dr", "pgscan_kswapd", "pgscan_direct"]
GENERIC_COLUMNS = ["run", "elapsed_s", "sy", "kswapd0", "dr", "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct"]


def usemem_row(run: RunDir) -> list[str]:
    m = run.result["metrics"]
    d = run.delta
    vm = vmstat_metrics(d)
    return [
        str(m.get("tasks", "")),
        f"{m.get('throughput_kB_s', 0)} KB/s",
        _fmt(vm["ra_hit_pct"]) + ("%" if vm["ra_hit_pct"] is not None else ""),
        str(vm["swap_ra"]),
        str(vm["swap_ra_hit"]),
        str(vm["pswpin"]),
        str(vm["pswpout"]),
        str(vm["allocstall"]),
        str(vm["pgscan_kswapd"]),
        str(vm["pgscan_direct"]),
    ]


def generic_row(run: RunDir) -> list[str]:
    d = run.delta
    return [
        run.path.name,
        _fmt(run.elapsed_s),
        f"{max_sy(run):.0f}",
        _fmt(kswapd_cpu(run, 0)),
        str(sum_prefix(d, "allocstall_")),
        str(d.get("pgscan_kswapd", 0)),
        str(d.get("pgscan_direct", 0)),
        str(d.get("pgsteal_kswapd", 0)),
        str(d.get("pgsteal_direct", 0)),
    ]


STUTTER_COLUMNS = ["run", "mmap samples", "mean ms", "p50", "p95", "p99", "max", "delayed", "cp s", "tput MiB/s"]
WRITEBACK_COLUMNS = ["dd", "job elapsed s", "+/-", "throughput", "nr_vmscan_write", "dr", "pgscan_kswapd", "pgscan_direct"]


def stutter_row(run: RunDir) -> list[str]:
    m = run.result["metrics"]
    lat = m.get("mmap_latency_ms", {})
    return [
        run.path.name,
        str(lat.get("samples", 0)),
        *(_fmt(float(lat.get(k, 0.0)), 3) for k in ("mean", "p50", "p95", "p99", "max")),
        str(lat.get("delayed", 0)),
        " ".join(_fmt(float(t)) for t in m.get("copy_elapsed_s", [])),
        " ".join(_fmt(float(t)) for t in m.get("tput_MiB_s", [])),
    ]


def writeback_row(run: RunDir) -> list[str]:
    m = run.result["metrics"]
    d = run.delta
    return [
        str(m.get("tasks", "")),
        _fmt(float(m.get("job_elapsed_mean_s", 0.0)), 3),
        _fmt(float(m.get("job_elapsed_stddev_pct", 0.0))) + "%",
        _fmt(float(m.get("throughput_kB_s", 0.0))),
        str(d.get("nr_vmscan_write", 0)),
        str(sum_prefix(d, "allocstall_")),
        str(d.get("pgscan_kswapd", 0)),
        str(d.get("pgscan_direct", 0)),
    ]


LAYOUTS = {
    "dd": (DD_COLUMNS, dd_row),
    "usemem": (USEMEM_COLUMNS, usemem_row),
    "stutter": (STUTTER_COLUMNS, stutter_row),
    "dd-write": (WRITEBACK_COLUMNS, writeback_row),
}


def summary_table(runs: list[RunDir], title: str = "") -> Table:
    """One row per run, in the layout of the workload's seed/mmtests table (generic if mixed)."""
    kinds = {r.result.get("workload") for r in runs}
    kind = next(iter(kinds)) if len(kinds) == 1 else None
    columns, row = LAYOUTS.get(kind or "", (GENERIC_COLUMNS, generic_row))
    table = Table(title=title or None)
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i == 0 and c == "run" else "right")
    for r in runs:
        table.add_row(*row(r))
    return table


def print_summary(runs: list[RunDir], title: str = "", console: Console | None = None) -> None:
    if console is None:
        # Piped into a file or a log, rich would wrap at 80 columns: keep a row on one line.
        console = Console() if sys.stdout.isatty() else Console(width=160)
    console.print(summary_table(runs, title))
