"""`reclaimlab compare`: sets of runs side by side, in the layout of mmtests' compare-kernels.

Each input is a run directory or a sweep directory (run directories under it, one per point,
named by their sweep label such as `workload.tasks=4`), simulated or live. Points are matched by label
and ordered by their swept values; the first input is the baseline, and an input that shares
no point with it is warned of. Every metric row gives each input's value and, in
parentheses, its change against the baseline. A metric with a better direction (throughput
up, direct reclaims and stall time down) signs it so that positive means better: mmtests'
`pdiff` where higher is better, `pndiff` where lower is better. An effort metric (pages
scanned, kswapd CPU) has no better direction: more kswapd work may be what replaces direct
reclaim. Its change is signed so that positive means more, and it is never coloured.

When the inputs mix live and simulated runs, a divergence section gives, per point and
metric, each simulated value over the first live input's, and flags the ratios outside a
tolerance: the model's error on this machine, on every comparison.

A point run several times (`run.repeats`, labels `…,repeat=K`) gives the mean of its runs, their
standard deviation (`+/-`), and a `*` where the change against the baseline is significant
(Welch's t-test, p < 0.05), as mmtests marks it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from reclaimlab import _core
from reclaimlab.columns import ra_hit_pct, value, workload_cpu_per_task
from reclaimlab.rundir import DamagedRunDir, RunDir, find_rundirs, read_rundir, unique_names


HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Metric:
    """A compared row: its name (with its unit), where a run gives it (a column source of
    `reclaimlab.columns`, or a function of the run; None where the run has none), which
    direction is better (HIGHER, LOWER, or None for an effort metric such as pages scanned
    or kswapd CPU, which is neither: more kswapd scanning may replace direct reclaim), and
    what it measures, in a sentence."""

    name: str
    source: str | Callable[[RunDir], float | None]
    better: str | None
    about: str

    def get(self, run: RunDir) -> float | None:
        v = self.source(run) if callable(self.source) else value(run, self.source)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _efficiency(who: str) -> Callable[[RunDir], float | None]:
    """mmtests' `Kswapd efficiency` / `Direct efficiency`: pgsteal·100 / pgscan."""

    def get(run: RunDir) -> float | None:
        d = run.delta
        scanned = d.get(f"pgscan_{who}", 0)
        return d.get(f"pgsteal_{who}", 0) * 100.0 / scanned if scanned else None

    return get


def _kswapd_cpu_total(run: RunDir) -> float | None:
    """Σ CPU % of every kswapd thread of every node (tasks.json)."""
    threads = run.tasks_of_kind("kswapd")
    return sum(t["cpu_pct"] for t in threads) if threads else None


def _kswapd_cpu_node(node: int) -> Callable[[RunDir], float | None]:
    """Σ CPU % of node `node`'s kswapd threads."""

    def get(run: RunDir) -> float | None:
        threads = [t for t in run.tasks_of_kind("kswapd") if t.get("node") == node]
        return sum(t["cpu_pct"] for t in threads) if threads else None

    return get


def _kswapd_cpu_per_thread(run: RunDir) -> float | None:
    """The mean CPU % of a kswapd thread, over every thread of every node."""
    threads = run.tasks_of_kind("kswapd")
    return sum(t["cpu_pct"] for t in threads) / len(threads) if threads else None


def _workload_cpu(run: RunDir) -> float | None:
    return workload_cpu_per_task(run) if run.tasks_of_kind("workload") else None


_TRACE_REPORTS: dict[Path, dict[str, Any]] = {}


HIGH_ORDER_EVENTS = ("compact_stall", "thp_fault_alloc", "thp_fault_fallback")


def _high_order_vmstat(name: str) -> Callable[[RunDir], float | None]:
    """A vmstat counter's delta in a run that allocated huge pages: a stress-highalloc run,
    or one whose window saw compaction or THP faults (None in any other: these are rows of
    the high-order comparisons, not of every one)."""

    def get(run: RunDir) -> float | None:
        highalloc = "highalloc_numpages" in run.result.get("metrics", {})
        if not highalloc and not any(run.delta.get(e, 0) for e in HIGH_ORDER_EVENTS):
            return None
        return float(run.delta.get(name, 0))

    return get


HIGHALLOC_PASSES = ("load-1", "load-2", "rest")

def _free_at_start(whole: bool) -> Callable[[RunDir], float | None]:
    """Free pages as the window starts, in blocks below pageblock order or in whole
    pageblocks and above (`buddyinfo.before`): where two runs start from memory broken up
    differently, a large folio or a huge page costs compaction in one and not the other."""

    def get(run: RunDir) -> float | None:
        free = run.free_at_start(_core.PAGEBLOCK_ORDER)
        return None if free is None else float(free[1] if whole else free[0])

    return get


def _page_cache_in_pmd_folios(run: RunDir) -> float | None:
    """The share of the page cache in order-9 folios as the window ends (`nr_file_hugepages`,
    in huge pages, over `nr_file_pages`; None where the kernel prints no such line)."""
    after = run.vmstat_after
    if "nr_file_hugepages" not in after or not after.get("nr_file_pages"):
        return None
    return after["nr_file_hugepages"] * (1 << _core.HPAGE_PMD_ORDER) * 100.0 / after["nr_file_pages"]


def _writeback_vmstat(name: str) -> Callable[[RunDir], float | None]:
    """A vmstat counter's delta in a run that dirtied page-cache pages (None in any other:
    these are the rows of the writeback comparisons, seed 001's)."""

    def get(run: RunDir) -> float | None:
        if not run.delta.get("nr_dirtied", 0):
            return None
        return float(run.delta.get(name, 0))

    return get


def trace_report(run: RunDir) -> dict[str, Any] | None:
    """The trace report's JSON for a traced run (its one input: `summary`, `direct_stalls_ms`,
    `analysis`, …; parsed once per run directory, for every report that asks), with the
    workload's user+sys CPU seconds added as `user_sys_s`; None for a run without a trace."""
    if run.trace_path is None:
        return None
    if run.path not in _TRACE_REPORTS:
        from reclaimlab.tracing.report import render, resolve_input

        trace_input = resolve_input(str(run.path))
        report = json.loads(render([trace_input], as_json=True))["inputs"][0]
        _TRACE_REPORTS[run.path] = {**report, "user_sys_s": trace_input.user_sys_s}
    return _TRACE_REPORTS[run.path]


def _trace_summary(run: RunDir) -> dict[str, Any] | None:
    """The trace report's summary of a traced run, with `user_sys_s` beside it."""
    report = trace_report(run)
    return None if report is None else {**report["summary"], "user_sys_s": report["user_sys_s"]}


def _pct_time_direct(run: RunDir) -> float | None:
    """mmtests' `Percentage Time Spent Direct Reclaim`: stalled·100 / (user + sys + stalled)."""
    s = _trace_summary(run)
    if s is None or s["user_sys_s"] is None:
        return None
    stalled = float(s["time_stalled_direct_s"])
    total = s["user_sys_s"] + stalled
    return stalled * 100.0 / total if total else None


def _pct_time_kswapd_awake(run: RunDir) -> float | None:
    """The share of the trace's span in which at least one kswapd thread was awake."""
    s = _trace_summary(run)
    return None if s is None else float(s["pct_time_kswapd_awake"])


_EFFORT = "effort, not an outcome: neither more nor less is better in itself"
METRICS: list[Metric] = [
    Metric("Throughput (kB/s)", "metrics.throughput_kB_s", HIGHER, "the workload's throughput over the measured window"),
    Metric("Job elapsed (s)", "metrics.job_elapsed_mean_s", LOWER, "the mean time a job of the workload took to finish"),
    Metric("Elapsed (s)", "metrics.elapsed_s", LOWER,
           "the workload's time from its start to its end (fs_mark's loops; mapped-file-stream's last task)"),
    *(Metric(f"mmap latency {q} (ms)", f"metrics.mmap_latency_ms.{q}", LOWER, f"the {q} of the workload's mmap access latencies")
      for q in ("p50", "p95", "p99", "max")),  # fmt: skip
    # stress-highalloc (seed 003): each pass's success and its attempts' latency; then, for
    # every run that allocated huge pages, compaction, migration and THP faults (vmstat).
    *(Metric(f"Highalloc success % {p}", f"metrics.highalloc_success_pct.{p}", HIGHER,
             f"the share of pass {p}'s attempts that got a huge page (mmtests' % Success)") for p in HIGHALLOC_PASSES),
    *(Metric(f"Highalloc attempt {q} {p} (ms)", f"metrics.highalloc_attempt_ms.{p}.{q}", LOWER,
             f"the {q} of pass {p}'s attempt latencies (a write of nr_hugepages + 1)")
      for p in HIGHALLOC_PASSES for q in ("p50", "p99")),
    Metric(f"Free at start in blocks < order {_core.PAGEBLOCK_ORDER} (pages)", _free_at_start(False), None,
           "free pages as the window starts in blocks smaller than a pageblock (buddyinfo.before): usable by "
           "large folios and huge pages only after compaction"),
    Metric(f"Free at start in blocks of order {_core.PAGEBLOCK_ORDER}+ (pages)", _free_at_start(True), None,
           "free pages as the window starts in whole pageblocks and larger blocks (buddyinfo.before)"),
    Metric(f"Page cache in order-{_core.HPAGE_PMD_ORDER} folios at end %", _page_cache_in_pmd_folios, None,
           "the share of the page cache held in PMD-sized folios as the window ends (nr_file_hugepages over "
           "nr_file_pages): what large-folio readahead got, and what reclaim of them can free whole"),
    Metric("Compaction stalls (compact_stall)", _high_order_vmstat("compact_stall"), None,
           f"allocations that entered direct compaction (compact_stall); {_EFFORT}"),
    Metric("Compaction successes (compact_success)", _high_order_vmstat("compact_success"), None,
           "direct compactions after which the allocation succeeded (compact_success)"),
    Metric("Pages migrated (pgmigrate_success)", _high_order_vmstat("pgmigrate_success"), None,
           f"pages compaction (or other migration) moved (pgmigrate_success); {_EFFORT}"),
    Metric("THP faults (thp_fault_alloc)", _high_order_vmstat("thp_fault_alloc"), None,
           "anonymous faults that mapped a transparent huge page (thp_fault_alloc)"),
    Metric("THP fault fallbacks (thp_fault_fallback)", _high_order_vmstat("thp_fault_fallback"), LOWER,
           "anonymous faults that wanted a huge page and mapped a base page (thp_fault_fallback)"),
    # Writeback (seed 001), in runs that dirtied pages.
    Metric("Pages dirtied (nr_dirtied)", _writeback_vmstat("nr_dirtied"), None, f"page-cache pages that became dirty; {_EFFORT}"),
    Metric("Pages written (nr_written)", _writeback_vmstat("nr_written"), None, f"page-cache pages whose writeback completed; {_EFFORT}"),
    Metric("Reclaim writes (nr_vmscan_write)", _writeback_vmstat("nr_vmscan_write"), LOWER,
           "pages reclaim handed to ->writepage or swap (single-page writes from the LRU tail)"),
    Metric("Immediate reclaim (nr_vmscan_immediate_reclaim)", _writeback_vmstat("nr_vmscan_immediate_reclaim"), None,
           f"dirty or writeback pages reclaim marked PG_reclaim, to be freed when written; {_EFFORT}"),
    Metric("Pages rotated (pgrotated)", _writeback_vmstat("pgrotated"), None,
           f"PG_reclaim pages moved to the inactive tail when their writeback ended; {_EFFORT}"),
    Metric("Direct reclaims (allocstall)", "vmstat.allocstall*", LOWER, "allocations that stalled in direct reclaim (Σ allocstall_*)"),
    # Pressure stall information, as production reads it (result.json, from /proc/pressure/memory).
    Metric("Memory pressure some %", lambda run: run.result.get("psi_memory_some_pct"), LOWER,
           "the share of the window in which some task stalled on memory (PSI some, total= over the window)"),
    Metric("Memory pressure full %", lambda run: run.result.get("psi_memory_full_pct"), LOWER,
           "the share of the window in which every non-idle task stalled on memory (PSI full)"),
    Metric("Kswapd pages scanned", "vmstat.pgscan_kswapd", None, f"pages kswapd scanned (pgscan_kswapd); {_EFFORT}"),
    Metric("Kswapd pages reclaimed", "vmstat.pgsteal_kswapd", None, f"pages kswapd reclaimed (pgsteal_kswapd); {_EFFORT}"),
    Metric("Direct pages scanned", "vmstat.pgscan_direct", None, f"pages direct reclaim scanned (pgscan_direct); {_EFFORT}"),
    Metric("Direct pages reclaimed", "vmstat.pgsteal_direct", None, f"pages direct reclaim reclaimed (pgsteal_direct); {_EFFORT}"),
    # Reclaim of the workload's memory cgroup (memory.stat; memcg reclaim is not in vmstat).
    Metric("Memcg kswapd pages scanned", "memcg.pgscan_kswapd", None, f"pages kswapd scanned in the workload's memory cgroup; {_EFFORT}"),
    Metric("Memcg kswapd pages reclaimed", "memcg.pgsteal_kswapd", None, f"pages kswapd reclaimed from the workload's memory cgroup; {_EFFORT}"),
    Metric("Memcg direct pages scanned", "memcg.pgscan_direct", None, f"pages the cgroup's own reclaim scanned; {_EFFORT}"),
    Metric("Memcg direct pages reclaimed", "memcg.pgsteal_direct", None, f"pages the cgroup's own reclaim reclaimed; {_EFFORT}"),
    Metric("Memcg limit hits (memory.events max)", "memcg.max", None, "charges that reached the cgroup's memory.max and reclaimed"),
    Metric("Memcg memory.high reclaims (memory.events high)", "memcg.high", None, "times the cgroup's usage went over memory.high and was reclaimed"),
    Metric("Kswapd efficiency %", _efficiency("kswapd"), None, "pages kswapd reclaimed per page it scanned (pgsteal·100/pgscan)"),
    Metric("Direct efficiency %", _efficiency("direct"), None, "pages direct reclaim reclaimed per page it scanned (pgsteal·100/pgscan)"),
    Metric("Percentage Time Spent Direct Reclaim", _pct_time_direct, LOWER,
           "the workload's time stalled in direct reclaim, over its user + sys + stalled time (traced runs)"),
    Metric("Percentage Time kswapd Awake", _pct_time_kswapd_awake, None,
           "the share of the traced time in which at least one kswapd thread was awake (at most 100)"),
    Metric("Swap Ins", "vmstat.pswpin", None, "pages read from swap (pswpin)"),
    # Anon workingset detection (5.9 on): swap-ins that found a shadow, and those activated.
    Metric("Workingset refaults anon", "vmstat.workingset_refault_anon", None, "anon pages faulted back in soon after eviction"),
    Metric("Workingset activations anon", "vmstat.workingset_activate_anon", None, "refaulted anon pages activated at once"),
    Metric("Workingset restores anon", "vmstat.workingset_restore_anon", None, "refaulted anon pages that had been active when evicted"),
    Metric("Swap Outs", "vmstat.pswpout", None, "pages written to swap (pswpout)"),
    Metric("ra_hit%", lambda run: ra_hit_pct(run.delta), HIGHER, "swap readahead pages that were used, per page read ahead"),
    Metric("Kswapd CPU % (all threads)", _kswapd_cpu_total, None,
           f"CPU of every kswapd thread of every node together, in % of one CPU; {_EFFORT}"),
    # "Kswapd CPU % node N" rows go here on machines of several nodes (metrics_for).
    Metric("Kswapd CPU % per thread", _kswapd_cpu_per_thread, None, f"the mean CPU of one kswapd thread, in % of one CPU; {_EFFORT}"),
    Metric("Workload CPU % per task", _workload_cpu, None, "the mean CPU of one workload task, in % of one CPU"),
    Metric("sy % (highest sample)", "cpu.sy_max", None, "system CPU time over all CPUs, the highest sample (as seed 000 reads vmstat)"),
]


def metrics_for(runs: Iterable[RunDir]) -> list[Metric]:
    """METRICS, with a `Kswapd CPU % node N` row (Σ of that node's kswapd threads) per node
    after the all-threads row when the runs' kswapd threads are on more than one node."""
    nodes = sorted({t["node"] for r in runs for t in r.tasks_of_kind("kswapd") if isinstance(t.get("node"), int)})
    if len(nodes) < 2:
        return METRICS
    k = next(i for i, m in enumerate(METRICS) if m.name == "Kswapd CPU % (all threads)") + 1
    per_node = [Metric(f"Kswapd CPU % node {n}", _kswapd_cpu_node(n), None,
                       f"CPU of node {n}'s kswapd threads together, in % of one CPU; {_EFFORT}") for n in nodes]  # fmt: skip
    return METRICS[:k] + per_node + METRICS[k:]


def pdiff(base: float, new: float, better: str | None) -> float | None:
    """`new`'s change against `base` in percent: positive = better where `better` is HIGHER
    or LOWER (mmtests' pdiff / pndiff), positive = more where it is None (an effort
    metric); None when the baseline is 0 and `new` is not."""
    if base == 0:
        return 0.0 if new == 0 else None
    change = (new - base) * 100.0 / abs(base)
    return -change if better == LOWER and change != 0 else change


REPEAT = re.compile(r"(^|,)repeat=\d+$")


def point_of(label: str) -> str:
    """The point a run directory's label names, without its `repeat=K`."""
    return REPEAT.sub("", label)


def point_key(label: str) -> tuple[tuple[int, float | str], ...]:
    """A sort key ordering points by their swept values, numbers as numbers
    (`workload.tasks=4` before `workload.tasks=16`), key by key of a label `a=1,b=2`."""
    key: list[tuple[int, float | str]] = []
    for part in label.split(","):
        name, _, v = part.partition("=")
        try:
            key += [(0, name), (0, float(v))]
        except ValueError:
            key += [(0, name), (1, v)]
    return tuple(key)


@dataclass
class Input:
    """One compared input: its name (the directory's), its runs by point label (the first
    repeat of each) and every repeat of each point (`run.repeats`)."""

    name: str
    points: dict[str, RunDir]
    repeats: dict[str, list[RunDir]] = field(default_factory=dict)

    @property
    def kinds(self) -> set[str]:
        return {r.kind for r in self.points.values()}


class CompareError(Exception):
    pass


def load_input(path: Path) -> Input:
    """A run directory (one point, label "") or a sweep directory (a point per run under it)."""
    if not path.is_dir():
        raise CompareError(f"{path}: not a directory")
    dirs = find_rundirs(path)
    if not dirs:
        raise CompareError(f"{path}: neither a run directory (result.json, scenario.toml) nor a sweep of them")
    repeats: dict[str, list[RunDir]] = {}
    try:
        for d in dirs:
            repeats.setdefault(point_of("" if d == path else d.name), []).append(read_rundir(d))
    except FileNotFoundError as e:
        raise CompareError(str(e)) from e
    return Input(path.name or str(path), {label: runs[0] for label, runs in repeats.items()}, repeats)


def load_inputs(paths: Iterable[Path]) -> list[Input]:
    """Every path as an input (`load_input`); CompareError names the first that is not one."""
    return [load_input(p) for p in paths]


@dataclass
class Row:
    """A metric at a point: per input the mean over its runs, the change of that mean against
    the baseline's, and, where a point was run more than once, the standard deviation, the
    number of runs and whether the change is significant (Welch's t-test, p < SIGNIFICANCE)."""

    point: str
    metric: str
    values: list[float | None]
    changes: list[float | None]
    better: str | None = None
    stddevs: list[float | None] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    significant: list[bool | None] = field(default_factory=list)

    def cell(self, k: int, with_change: bool = True) -> str:
        """Input k's cell: `mean [+/- sd] (change%)[*]`, `-` where it has no value."""
        v = self.values[k]
        if v is None:
            return "-"
        sd = self.stddevs[k] if self.stddevs else None
        text = value_text(v) + (f" +/- {value_text(sd)}" if sd is not None else "")
        if with_change:
            text += f" {change_text(self.changes[k], signed=self.better is None)}"
        return text + ("*" if self.significant and self.significant[k] else "")


SIGNIFICANCE = 0.05


def _stats(samples: list[float]) -> tuple[float, float | None]:
    """Mean and, for more than one sample, the sample standard deviation."""
    mean = sum(samples) / len(samples)
    if len(samples) < 2:
        return mean, None
    return mean, (sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)) ** 0.5


def _significant(base: list[float], other: list[float]) -> bool | None:
    """Whether two inputs' samples differ at p < SIGNIFICANCE (Welch's t-test, as mmtests
    marks significant changes); None where either has fewer than two samples."""
    if len(base) < 2 or len(other) < 2:
        return None
    if len(set(base)) == 1 and len(set(other)) == 1:
        return base[0] != other[0]  # no spread at all: any difference is certain
    from scipy.stats import ttest_ind

    return bool(ttest_ind(base, other, equal_var=False).pvalue < SIGNIFICANCE)


@dataclass
class Divergence:
    """A simulated input's value of a metric over the live input's: the inputs' names, their
    values, the ratio, and whether it lies outside the tolerance."""

    point: str
    metric: str
    sim: str
    live: str
    sim_value: float
    live_value: float
    ratio: float
    flagged: bool

    def cells(self) -> tuple[str, str]:
        """The simulated and the live cell: each value with its input's name."""
        return f"{value_text(self.sim_value)} ({self.sim})", f"{value_text(self.live_value)} ({self.live})"


@dataclass
class Comparison:
    names: list[str]
    kinds: list[str]
    rows: list[Row]
    divergence: list[Divergence]
    tolerance: float
    metrics: list[Metric] = field(default_factory=list)
    # Inputs after the first that share no point with it (no change can be given for them).
    unshared: list[str] = field(default_factory=list)
    points: list[list[str]] = field(default_factory=list)
    # Simulated inputs without page-cache shadow entries set beside a live one, whose kernel
    # always keeps them (`variant.workingset`, docs/model.md).
    shadowless: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """What the reader must know before trusting the table: inputs sharing no point, and
        simulated inputs that leave out a mechanism the live kernel beside them has."""
        out = [f"{name} is simulated without page-cache shadow entries (variant.workingset = false) "
               "while the live kernel keeps them: refaults are not activated there as they are live; "
               "set variant.workingset = true to compare like with like" for name in self.shadowless]  # fmt: skip
        for name in self.unshared:
            k = self.names.index(name)
            out.append(f"{name} shares no sweep point with the baseline {self.names[0]} "
                       f"({_points_text(self.points[k])} against {_points_text(self.points[0])}): "
                       "none of its values has a change")  # fmt: skip
        return out


def _points_text(points: list[str], most: int = 3) -> str:
    shown = [p or "(single run)" for p in points[:most]]
    return ", ".join(shown) + (f", … ({len(points)} points)" if len(points) > most else "")


def compare(inputs: list[Input], tolerance: float = 1.5) -> Comparison:
    """Every metric any input has, per point label, the points in the order of their swept
    values (`point_key`)."""
    if tolerance <= 1.0:
        raise CompareError(f"the divergence tolerance must be a factor above 1, not {tolerance}")
    labels: list[str] = sorted({label for i in inputs for label in i.points}, key=point_key)
    names = unique_names([i.name for i in inputs])
    metrics = metrics_for(r for i in inputs for rs in i.repeats.values() for r in rs)
    rows: list[Row] = []
    for label in labels:
        runs = [i.repeats.get(label) or ([i.points[label]] if label in i.points else []) for i in inputs]
        for m in metrics:
            samples = [[v for v in (m.get(r) for r in rs) if v is not None] for rs in runs]
            if not any(samples):
                continue
            stats = [_stats(x) if x else (None, None) for x in samples]
            values = [mean for mean, _ in stats]
            base = values[0]
            changes = [pdiff(base, v, m.better) if base is not None and v is not None else None for v in values]
            significant = [None] + [_significant(samples[0], x) for x in samples[1:]]
            rows.append(Row(label, m.name, values, changes, m.better, [sd for _, sd in stats], [len(x) for x in samples], significant))
    kinds = ["/".join(sorted(i.kinds)) for i in inputs]
    points = [sorted(i.points, key=point_key) for i in inputs]
    unshared = [n for n, i in zip(names[1:], inputs[1:]) if not set(i.points) & set(inputs[0].points)]
    used = {r.metric for r in rows}
    shadowless = [n for n, i in zip(names, inputs) if _without_workingset(i)] if "live" in kinds else []
    return Comparison(names, kinds, rows, _divergence(rows, names, kinds, tolerance), tolerance,
                      [m for m in metrics if m.name in used], unshared, points, shadowless)  # fmt: skip


def _without_workingset(i: Input) -> bool:
    """A simulated input any of whose points ran without page-cache shadow entries (the
    simulator's default; the resolved scenario writes the key only when it is set)."""
    return "sim" in i.kinds and any(not r.scenario.get("variant", {}).get("workingset", False) for r in i.points.values())


def _divergence(rows: list[Row], names: list[str], kinds: list[str], tolerance: float) -> list[Divergence]:
    live = next((k for k, kind in enumerate(kinds) if kind == "live"), None)
    sims = [k for k, kind in enumerate(kinds) if kind == "sim"]
    if live is None or not sims:
        return []
    out = []
    for row in rows:
        ref = row.values[live]
        for k in sims:
            v = row.values[k]
            if ref is None or v is None or ref == 0:
                continue
            ratio = v / ref
            flagged = not (1 / tolerance <= ratio <= tolerance) if ratio > 0 else True
            out.append(Divergence(row.point, row.metric, names[k], names[live], v, ref, ratio, flagged))
    return out


# --- output -----------------------------------------------------------------------------------


def value_text(v: float | None) -> str:
    """A compared value as every output prints it (`-` for none)."""
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 1000 or float(v).is_integer() else f"{v:.2f}"


def change_text(c: float | None, signed: bool = False) -> str:
    """A change against the baseline as every output prints it: `( 12.34%)` where positive
    is better, `(+12.34%)` with its sign where positive is more (an effort metric)."""
    if c is None:
        return "(   n/a )"
    return f"({c:+6.2f}%)" if signed and c != 0 else f"({c:6.2f}%)"


def better_text(better: str | None) -> str:
    """A metric's better direction in one character: ↑ higher, ↓ lower, blank for none."""
    return {HIGHER: "↑", LOWER: "↓"}.get(better or "", "")


TITLE = "Change against the first input (↑/↓: the better direction, a change positive when better; no arrow: an effort metric, + = more)"


def row_label(row: Row) -> str:
    """A row's label: its metric and, in a sweep, its point."""
    return f"{row.metric} {row.point}".rstrip()


def change_style(row: Row, k: int) -> str:
    """How input k's change is coloured: `better` or `worse` where the metric has a better
    direction and the change is not nil, else nothing (an effort metric is never coloured)."""
    c = row.changes[k]
    if k == 0 or row.better is None or c is None or abs(c) < 0.005:
        return ""
    return "better" if c > 0 else "worse"


_RICH_STYLE = {"better": "green", "worse": "red", "": ""}


def rich_tables(c: Comparison) -> list[Table]:
    t = Table(title=TITLE, title_justify="left")
    t.add_column("")
    t.add_column("", justify="center")
    for name, kind in zip(c.names, c.kinds):
        t.add_column(f"{name}\n{kind}", justify="right")
    for row in c.rows:
        cells = []
        for k in range(len(row.values)):
            style = _RICH_STYLE[change_style(row, k)]
            cells.append(Text(row.cell(k), style=style))
        t.add_row(row_label(row), better_text(row.better), *cells)
    tables = [t]
    if c.divergence:
        d = Table(title=f"Simulated over live (flagged outside ×{c.tolerance:g})", title_justify="left")
        for col in ("point", "metric", "simulated", "live", "sim/live", ""):
            d.add_column(col, justify="left" if col in ("point", "metric", "") else "right")
        for x in c.divergence:
            d.add_row(x.point or "-", x.metric, *x.cells(), f"{x.ratio:.2f}", "[red]!![/red]" if x.flagged else "")
        tables.append(d)
    return tables


def as_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as plain data (what --json prints and the HTML report embeds)."""
    return {
        "inputs": [{"name": n, "kind": k, "points": p} for n, k, p in zip(c.names, c.kinds, c.points)],
        "metrics": {m.name: {"better": m.better, "about": m.about} for m in c.metrics},
        "rows": [
            {"point": r.point, "metric": r.metric, "better": r.better, "values": r.values, "change_pct": r.changes,
             "stddev": r.stddevs, "runs": r.runs, "significant": r.significant}
            for r in c.rows
        ],  # fmt: skip
        "warnings": c.warnings(),
        "divergence": {
            "tolerance": c.tolerance,
            "rows": [vars(d) for d in c.divergence],
        },
    }


def to_json(c: Comparison) -> str:
    return json.dumps(as_dict(c), indent=2)


def to_csv(c: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["point", "metric", "better", *c.names, *(f"{n} change %" for n in c.names), *(f"{n} stddev" for n in c.names), *(f"{n} runs" for n in c.names)])
    for r in c.rows:
        w.writerow([
            r.point, r.metric, r.better or "", *("" if v is None else repr(v) for v in r.values), *("" if x is None else f"{x:.4f}" for x in r.changes),
            *("" if x is None else repr(x) for x in r.stddevs), *r.runs,
        ])  # fmt: skip
    return buf.getvalue()


def to_markdown(c: Comparison) -> str:
    lines = [TITLE + ".", "", "| | better | " + " | ".join(f"{n} ({k})" for n, k in zip(c.names, c.kinds)) + " |",
             "|---" * (len(c.names) + 2) + "|"]  # fmt: skip
    for r in c.rows:
        cells = [r.cell(k) for k in range(len(r.values))]
        lines.append(f"| {row_label(r)} | {better_text(r.better)} | " + " | ".join(cells) + " |")
    if c.divergence:
        lines += ["", f"Simulated over live (flagged outside ×{c.tolerance:g}):", "", "| point | metric | simulated | live | sim/live | |", "|---|---|--:|--:|--:|---|"]
        for d in c.divergence:
            sim, live = d.cells()
            lines.append(f"| {d.point or '-'} | {d.metric} | {sim} | {live} | {d.ratio:.2f} | {'!!' if d.flagged else ''} |")
    return "\n".join(lines) + "\n"


# --- command line -----------------------------------------------------------------------------


@click.command("compare")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "fmt", flag_value="json", help="Print the comparison as JSON.")
@click.option("--csv", "fmt", flag_value="csv", help="Print the comparison as CSV (one row per point and metric).")
@click.option("--markdown", "fmt", flag_value="markdown", help="Print the comparison as Markdown tables.")
@click.option("--tolerance", default=1.5, show_default=True, type=click.FloatRange(min=1.0, min_open=True),
              help="Flag simulated/live ratios outside ×TOLERANCE (and below 1/TOLERANCE).")
@click.option("--strict", is_flag=True, help="Exit with status 1, printing no table, when an input shares no point with the baseline.")  # fmt: skip
def compare_command(inputs: tuple[Path, ...], fmt: str | None, tolerance: float, strict: bool) -> None:
    """Compare run or sweep directories, simulated or live, mmtests-style: the first input is
    the baseline, points are matched by their sweep label (workload.tasks=4, …) and ordered by
    value. A metric with a better direction (↑ higher, ↓ lower) signs its change so that
    positive is better; an effort metric (pages scanned, kswapd CPU) shows its change with its
    sign, positive = more. An input sharing no point with the baseline is warned of (an error
    with --strict). Mixed live and simulated inputs get a section of simulated/live ratios."""
    try:
        c = compare(load_inputs(inputs), tolerance)
    except DamagedRunDir as e:
        raise click.ClickException(str(e)) from None
    except CompareError as e:
        raise click.UsageError(str(e))
    for w in c.warnings():
        click.echo(f"{'error' if strict else 'warning'}: {w}", err=True)
    if strict and c.warnings():
        raise SystemExit(1)
    if fmt == "json":
        click.echo(to_json(c), nl=False)
        click.echo()
    elif fmt == "csv":
        click.echo(to_csv(c), nl=False)
    elif fmt == "markdown":
        click.echo(to_markdown(c), nl=False)
    else:
        console = Console() if sys.stdout.isatty() else Console(width=200)
        for t in rich_tables(c):
            console.print(t)
