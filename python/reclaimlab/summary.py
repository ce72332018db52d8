"""The summary table of run directories: one row per run, in the columns its workload chooses.

A workload the simulator knows names its columns (`_core.workload_columns`), so a simulated
and a live run of it print the same row; the live-only workloads' layouts are here, in the
same column sources (reclaimlab.columns) wherever a source can say it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from reclaimlab import _core
from reclaimlab.columns import ra_hit_pct, value
from reclaimlab.rundir import RunDir

Source = str | Callable[[RunDir], Any]


def format_value(source: str, v: Any) -> str:
    """Counts (tasks, vmstat deltas) as integers, `sy` without decimals, other numbers with two."""
    if v is None:
        return "-"
    if source == "metrics.tasks" or source.startswith("vmstat."):
        return str(round(v))
    if source == "cpu.sy_max":
        return f"{v:.0f}"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def unit(source: Source) -> str:
    """The unit of a column source's values, for its header: "" for a count, a name, or a
    source whose values are not numbers of one unit."""
    if not isinstance(source, str):
        return ""
    for suffix, u in (("_kB_s", "kB/s"), ("_MiB_s", "MiB/s"), ("_ms", "ms"), ("_s", "s")):
        if source.startswith("metrics.") and source.endswith(suffix):
            return u
    if source.startswith("metrics.mmap_latency_ms.") and source.rsplit(".", 1)[1] not in ("samples", "delayed"):
        return "ms"
    if source.startswith(("vmstat.pgscan", "vmstat.pgsteal", "vmstat.pswp", "vmstat.swap_ra")):
        return "pages"
    if source == "cpu.sy_max":
        return "%"
    if source == "tasks.workload_cpu":
        return "%/task"
    if source.startswith("tasks.kswapd_cpu."):
        return "%/thread"  # the mean over the node's threads: seed 000's per-task kswapd
    return ""


@dataclass(frozen=True)
class Column:
    """A table column: its header, a column source or a function of the run, a formatter
    where `format_value` is not the one wanted, and its unit where its source's (`unit`) is
    not the one to show ("" where the cells carry it)."""

    header: str
    source: Source
    fmt: Callable[[Any], str] | None = None
    unit: str | None = None

    @property
    def title(self) -> str:
        """The header as a table prints it: its unit on a second line, unless the header
        names it (a line of its own keeps the table as narrow as its numbers)."""
        u = unit(self.source) if self.unit is None else self.unit
        return f"{self.header}\n({u})" if u and u not in self.header.split() else self.header

    def cell(self, run: RunDir) -> str:
        v = self.source(run) if callable(self.source) else value(run, self.source)
        if v is not None and self.fmt is not None:
            return self.fmt(v)
        return format_value(self.source if isinstance(self.source, str) else "", v)


def decimals(n: int) -> Callable[[Any], str]:
    return lambda v: f"{float(v):.{n}f}"


def percent(v: Any) -> str:
    return f"{float(v):.2f}%"


def joined(vs: Any) -> str:
    """A list-valued metric (one value per iteration), two decimals each."""
    return " ".join(f"{float(v):.2f}" for v in vs)


def run_name(run: RunDir) -> str:
    return run.path.name


def elapsed_s(run: RunDir) -> float:
    return run.elapsed_s


RECLAIM = [
    Column("dr", "vmstat.allocstall_*"),
    Column("pgscan_kswapd", "vmstat.pgscan_kswapd"),
    Column("pgscan_direct", "vmstat.pgscan_direct"),
]
LIVE_ONLY_LAYOUTS = {
    "usemem": [
        Column("usemem", "metrics.tasks"),
        Column("throughput", "metrics.throughput_kB_s", lambda v: f"{v} KB/s", unit=""),  # usemem's own format
        Column("ra_hit%", lambda run: ra_hit_pct(run.delta), percent),  # its cells carry the %
        Column("swap_ra", "vmstat.swap_ra"),
        Column("swap_ra_hit", "vmstat.swap_ra_hit"),
        Column("pswpin", "vmstat.pswpin"),
        Column("pswpout", "vmstat.pswpout"),
        *RECLAIM,
    ],
    "stutter": [
        Column("run", run_name),
        Column("mmap samples", "metrics.mmap_latency_ms.samples"),
        Column("mean ms", "metrics.mmap_latency_ms.mean", decimals(3)),
        *(Column(q, f"metrics.mmap_latency_ms.{q}", decimals(3)) for q in ("p50", "p95", "p99", "max")),
        Column("delayed", "metrics.mmap_latency_ms.delayed"),
        Column("cp s", "metrics.copy_elapsed_s", joined),
        Column("tput MiB/s", "metrics.tput_MiB_s", joined),
    ],
    "dd-write": [
        Column("dd", "metrics.tasks"),
        Column("job elapsed s", "metrics.job_elapsed_mean_s", decimals(3)),
        Column("+/-", "metrics.job_elapsed_stddev_pct", percent),
        Column("throughput", "metrics.throughput_kB_s", decimals(2)),
        Column("nr_vmscan_write", "vmstat.nr_vmscan_write"),
        Column("immediate", "vmstat.nr_vmscan_immediate_reclaim"),
        Column("pgrotated", "vmstat.pgrotated"),
        *RECLAIM,
    ],
}
GENERIC = [
    Column("run", run_name),
    Column("elapsed_s", elapsed_s),
    Column("sy", "cpu.sy_max"),
    Column("kswapd0", "tasks.kswapd_cpu.0"),
    *RECLAIM,
    Column("pgsteal_kswapd", "vmstat.pgsteal_kswapd"),
    Column("pgsteal_direct", "vmstat.pgsteal_direct"),
]


def layout(kind: str | None) -> list[Column]:
    """The columns of `kind`'s table: the simulator's for a workload it knows, else the
    live-only layout, else GENERIC (also for runs of mixed workloads, kind None)."""
    if kind in {k for k, _, _ in _core.workload_kinds()}:
        columns = [Column(header, source) for header, source in _core.workload_columns(kind)]
        if columns:
            return columns
    return LIVE_ONLY_LAYOUTS.get(kind or "", GENERIC)


def cells(run: RunDir, columns: list[Column]) -> list[str]:
    return [c.cell(run) for c in columns]


def summary_table(runs: list[RunDir], title: str = "") -> Table:
    """One row per run, in its workload's layout (GENERIC if the runs' workloads differ)."""
    kinds = {r.result.get("workload") for r in runs}
    columns = layout(kinds.pop() if len(kinds) == 1 else None)
    table = Table(title=title or None)
    titles = [c.title for c in columns]
    two_lines = any("\n" in t for t in titles)
    for i, (c, title) in enumerate(zip(columns, titles)):
        # Names on the first line, units on the second (rich would put a one-line header on the last).
        title = title if "\n" in title or not two_lines else title + "\n"
        table.add_column(title, justify="left" if i == 0 and c.header == "run" else "right")
    for r in runs:
        table.add_row(*cells(r, columns))
    return table


def print_summary(runs: list[RunDir], title: str = "", console: Console | None = None) -> None:
    if console is None:
        # Piped into a file or a log, rich would wrap at 80 columns: keep a row on one line.
        console = Console() if sys.stdout.isatty() else Console(width=160)
    console.print(summary_table(runs, title))
