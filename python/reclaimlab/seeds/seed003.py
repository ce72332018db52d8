"""Seed 003 (vmscan tracepoints, less aggressive lumpy reclaim, wait_iff_congested, zone
congestion; v2.6.36-rc4): its X86-64 STRESS-HIGHALLOC table beside simulated runs of
scenarios/seed003/, one per kernel (traceonly-v2r2, lowlumpy-v2r3, waitcongest-v2r3,
waitwriteback-v2r4), and the FTrace Reclaim Statistics tables of the runs' own traces, as
`reclaimlab trace report` prints them.

The seed's machine has 3 GB (`--scale` 1). mmtests sizes stress-highalloc's attempts from
MemTotal (95 % of it in 2 MiB pages); the scenarios' background (the file read in a loop, the
swap file and the memhogs, a third of memory each) and the pass time limit scale with it. The
small files written (fs_mark) are a kernel build's, whatever the memory.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rich.table import Table

from reclaimlab.rundir import RunDir
from reclaimlab.seeds import seed000
from reclaimlab.seeds.seed000 import Target

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "seed003"
# The scenario names and the seed's column names, in the seed's order (the first is the base).
KERNELS = ("traceonly", "lowlumpy", "waitcongest", "waitwriteback")
SEED_NAMES = {"traceonly": "traceonly-v2r2", "lowlumpy": "lowlumpy-v2r3", "waitcongest": "waitcongest-v2r3",
              "waitwriteback": "waitwriteback-v2r4"}  # fmt: skip

# The scenarios' machine at scale 1 and what scales with it.
MEMORY_MB = 3072
PASS_LIMIT_S = 240.0
DURATION_S = 900.0

# The seed's X86-64 STRESS-HIGHALLOC table: % Success per pass, per kernel.
PASSES = (("Pass 1", "load-1"), ("Pass 2", "load-2"), ("At Rest", "rest"))
SEED_SUCCESS: dict[str, dict[str, int]] = {
    "traceonly": {"load-1": 82, "load-2": 90, "rest": 92},
    "lowlumpy": {"load-1": 84, "load-2": 87, "rest": 90},
    "waitcongest": {"load-1": 85, "load-2": 88, "rest": 90},
    "waitwriteback": {"load-1": 85, "load-2": 89, "rest": 91},
}
# The seed's stress-highalloc "FTrace Reclaim Statistics: vmscan" rows the targets read.
SEED_KSWAPD_SCANNED = {"traceonly": 7290822, "lowlumpy": 15341158, "waitcongest": 11916436, "waitwriteback": 13703442}
SEED_DIRECT_CONGEST_MS = {"traceonly": 78896, "lowlumpy": 8288, "waitcongest": 7260, "waitwriteback": 200}

# micro-mapped-file-stream: one scenario, each kernel's switches as --sets (the same
# switches the stress-highalloc files set; tests/test_seed003.py checks they agree).
MAPPED_FILE_STREAM = SCENARIO_DIR / "mapped-file-stream.toml"
KERNEL_SETS: dict[str, tuple[str, ...]] = {
    "traceonly": ('variant.high_order_reclaim="lumpy"', 'variant.reclaim_wait="congestion_wait"'),
    "lowlumpy": ('variant.high_order_reclaim="lowlumpy"', 'variant.reclaim_wait="congestion_wait"'),
    "waitcongest": ('variant.high_order_reclaim="lowlumpy"', 'variant.reclaim_wait="wait_iff_congested"'),
    "waitwriteback": ('variant.high_order_reclaim="lowlumpy"', 'variant.reclaim_wait="zone_congested"'),
}
# The seed's X86-64 micro-mapped-file-stream vmstat table (its DMA32 rows: the seed's
# pgalloc_normal and the rest of the Normal rows are 0, and its DMA rows are the 16 MB
# ZONE_DMA's, which the model has not: the model's one zone stands for DMA32).
MAPPED_FILE_STREAM_ROWS = ("pgalloc_dma32", "pgsteal_dma32", "pgscan_kswapd_dma32", "pgscan_direct_dma32", "pageoutrun", "allocstall")  # fmt: skip
SEED_MAPPED_FILE_STREAM: dict[str, dict[str, int]] = {
    "traceonly": {"pgalloc_dma32": 2842410, "pgsteal_dma32": 2338721, "pgscan_kswapd_dma32": 4597713,
                  "pgscan_direct_dma32": 305820, "pageoutrun": 16296, "allocstall": 443},
    "lowlumpy": {"pgalloc_dma32": 2842626, "pgsteal_dma32": 2447354, "pgscan_kswapd_dma32": 4503597,
                 "pgscan_direct_dma32": 280204, "pageoutrun": 21254, "allocstall": 273},
    "waitcongest": {"pgalloc_dma32": 2843043, "pgsteal_dma32": 2429536, "pgscan_kswapd_dma32": 4295673,
                    "pgscan_direct_dma32": 600518, "pageoutrun": 18447, "allocstall": 513},
    "waitwriteback": {"pgalloc_dma32": 2843014, "pgsteal_dma32": 2436772, "pgscan_kswapd_dma32": 3891686,
                      "pgscan_direct_dma32": 957485, "pageoutrun": 20067, "allocstall": 1568},
}  # fmt: skip
# The model's counter for each of the seed's rows: its one zone is ZONE_NORMAL.
SIM_COUNTER = {"pgalloc_dma32": "pgalloc_normal", "pgsteal_dma32": ("pgsteal_kswapd", "pgsteal_direct"),
               "pgscan_kswapd_dma32": "pgscan_kswapd", "pgscan_direct_dma32": "pgscan_direct",
               "pageoutrun": "pageoutrun", "allocstall": ("allocstall_normal", "allocstall_movable")}  # fmt: skip
SUCCESS_TOLERANCE = 10  # percentage points (issue 35)

Row = dict[str, Any]


def scenario(kernel: str) -> Path:
    return SCENARIO_DIR / f"stress-highalloc-{kernel}.toml"


def memory_mb(scale: float) -> int:
    """The machine's memory at `scale`, in whole 4 MB (at least 256 MB)."""
    return max(256, int(MEMORY_MB * scale) // 4 * 4)


def overrides(scale: float, duration: float | None) -> list[str]:
    """`--set`s for one point: memory; the swap file, the file read in a loop and the four
    memhogs together a third of it each; the pass time limit in proportion to the attempts
    (mmtests' count is a share of memory); the run's length limit (`duration`, else the
    scenarios' 900 s, more at scales above 1)."""
    mb = memory_mb(scale)
    third = mb // 3
    length = duration if duration is not None else math.ceil(DURATION_S * max(1.0, mb / MEMORY_MB))
    return [
        f"machine.memory_mb_per_node={mb}",
        f"swap.size_mb={third}",
        f"workload.background.0.file_mb={third}",
        f"workload.background.2.size_mb={third // 4}",
        f"workload.pass_limit_s={round(PASS_LIMIT_S * mb / MEMORY_MB, 1)}",
        f"run.duration_s={length:g}",
    ]


def highalloc_numpages(sim: dict[str, Row]) -> int:
    """The attempts a pass asks for (the same in every kernel's run: MemTotal's share)."""
    return max((r.get("numpages") or 0 for r in sim.values()), default=0)


def mmtests_diff(base: int | None, new: int | None) -> int | None:
    """The 2010 stress-highalloc report's bracket: new − base in percentage points."""
    if base is None or new is None:
        return None
    return new - base


def columns_of(run: RunDir) -> Row:
    """A run's numbers: % Success and attempts per pass, attempt latency p50/p99, and the
    vmstat deltas of compaction."""
    m = run.result.get("metrics", {})
    row: Row = {}
    for _, p in PASSES:
        row[p] = m.get("highalloc_success_pct", {}).get(p)
        row[f"{p}:attempts"] = m.get("highalloc_attempts", {}).get(p)
        lat = m.get("highalloc_attempt_ms", {}).get(p, {})
        row[f"{p}:p50"], row[f"{p}:p99"] = lat.get("p50"), lat.get("p99")
    row["numpages"] = m.get("highalloc_numpages")
    d = run.delta
    for k in ("compact_stall", "compact_success", "pgmigrate_success"):
        row[k] = d.get(k, 0)
    return row


def trace_summary(report_json: str) -> dict[str, Row]:
    """From `reclaimlab trace report --json` of the runs (one input per kernel, in order):
    kswapd's pages scanned, direct reclaim's, and the direct reclaimers' congestion and
    conditional (wait_iff_congested) waits in ms."""
    out: dict[str, Row] = {}
    for i in json.loads(report_json)["inputs"]:
        s, a = i["summary"], i["analysis"]
        scanned = lambda who: sum(v for k, v in s[who].items() if k.startswith("scanned_"))  # noqa: E731
        out[i["name"]] = {
            "kswapd_scanned": scanned("kswapd"),
            "direct_scanned": scanned("direct"),
            "direct_wait_ms": (a["congestion_wait"][0]["time_us"] + a["wait_iff_congested"][0]["time_us"]) / 1000,
            "direct_stalled_s": s["time_stalled_direct_s"],
        }
    return out


def _cell(v: int | None, diff: int | None) -> str:
    if v is None:
        return "—"
    return f"{v:.2f} ({diff:5.2f}%)" if diff is not None else f"{v:.2f}"


def success_table(sim: dict[str, Row], title: str) -> Table:
    """The seed's STRESS-HIGHALLOC rows (% Success, mmtests' point differences against
    traceonly) and the simulated ones beneath, with each pass's attempts and latency."""
    t = Table(title=title, title_justify="left")
    t.add_column("")
    for k in KERNELS:
        t.add_column(SEED_NAMES[k], justify="right")
    base = KERNELS[0]
    for label, p in PASSES:
        t.add_row(f"seed {label}", *[_cell(SEED_SUCCESS[k][p], mmtests_diff(SEED_SUCCESS[base][p], SEED_SUCCESS[k][p])) for k in KERNELS])
    for label, p in PASSES:
        b = sim.get(base, {}).get(p)
        t.add_row(f"sim {label}", *[_cell(sim.get(k, {}).get(p), mmtests_diff(b, sim.get(k, {}).get(p))) for k in KERNELS])
    for _, p in PASSES:
        t.add_row(f"sim {p} attempts", *[f"{sim.get(k, {}).get(f'{p}:attempts') or 0:,} of {sim.get(k, {}).get('numpages') or 0:,}" for k in KERNELS])
    for _, p in PASSES:
        for q in ("p50", "p99"):
            v = [sim.get(k, {}).get(f"{p}:{q}") for k in KERNELS]
            t.add_row(f"sim {p} attempt ms {q}", *["—" if x is None else f"{x:,.3f}" for x in v])
    for c in ("compact_stall", "compact_success", "pgmigrate_success"):
        t.add_row(f"sim {c}", *[f"{sim.get(k, {}).get(c) or 0:,}" for k in KERNELS])
    return t


def mapped_file_stream_overrides(scale: float, duration: float | None) -> list[str]:
    """`--set`s for micro-mapped-file-stream at `scale`: memory, swap a third of it, the file
    4 × memory (mmtests' nr_bytes), the run's limit."""
    mb = memory_mb(scale)
    out = [f"machine.memory_mb_per_node={mb}", f"swap.size_mb={mb // 3}", f"workload.size_mb={4 * mb}"]
    if duration is not None:
        out.append(f"run.duration_s={duration:g}")
    return out


def pdiff(base: int | None, new: int | None) -> float | None:
    """mmtests' micro report's percentage: (new − base) / new · 100 (the seed: pgalloc_dma
    1639 → 667 is −145.73 %)."""
    if base is None or new is None or new == 0:
        return None
    return (new - base) / new * 100


def mapped_file_stream_columns(delta: dict[str, int]) -> Row:
    """The seed's micro-mapped-file-stream rows from a run's vmstat deltas."""
    row: Row = {}
    for r in MAPPED_FILE_STREAM_ROWS:
        c = SIM_COUNTER[r]
        row[r] = sum(delta.get(x, 0) for x in c) if isinstance(c, tuple) else delta.get(c, 0)
    return row


def mapped_file_stream_table(sim: dict[str, Row] | None = None) -> Table:
    """The seed's X86-64 micro-mapped-file-stream vmstat table, seed's rows and simulated
    ones, each with mmtests' percentage against traceonly."""
    t = Table(title="X86-64 micro-mapped-file-stream (vmstat deltas, mmtests' percentages against traceonly)", title_justify="left")
    t.add_column("")
    for k in KERNELS:
        t.add_column(SEED_NAMES[k], justify="right")
    base = KERNELS[0]

    def cells(rows: dict[str, Row], r: str) -> list[str]:
        b = rows.get(base, {}).get(r)
        out = []
        for k in KERNELS:
            v = rows.get(k, {}).get(r)
            d = pdiff(b, v)
            out.append("—" if v is None else f"{v:,}" + ("" if d is None else f" ({d:7.2f}%)"))
        return out

    for r in MAPPED_FILE_STREAM_ROWS:
        t.add_row(f"seed {r}", *cells(SEED_MAPPED_FILE_STREAM, r))
    for r in MAPPED_FILE_STREAM_ROWS:
        t.add_row(f"sim {r}", *cells(sim or {}, r))
    return t


def vmscan_sections(report_text: str) -> str:
    """The "FTrace Reclaim Statistics: vmscan" and "…: congestion_wait" sections of a trace
    report's text (what the seed prints for stress-highalloc): from the first to the next
    section of the report."""
    start = report_text.find("FTrace Reclaim Statistics: vmscan")
    if start < 0:
        return ""
    ends = [report_text.find(m, start) for m in ("FTrace Reclaim Statistics: slab", "Trace totals against", "\n== ")]
    end = min((e for e in ends if e > start), default=len(report_text))
    return report_text[start:end].rstrip() + "\n"


NOTES = (
    "Seed's rows: its X86-64 STRESS-HIGHALLOC table (% Success; the bracket is mmtests' 2010\n"
    "point difference against traceonly-v2r2). Simulated: % Success over the attempts made\n"
    "(a pass stops starting attempts at workload.pass_limit_s), each attempt a write of\n"
    "nr_hugepages + 1. The reclaim tables below are the simulated runs' own traces\n"
    "(`reclaimlab trace report`); the seed's are in its text."
)


def check_mapped_file_stream_targets(mfs: dict[str, Row], trace: dict[str, Row], scale: float = 1.0) -> list[Target]:
    """Issue 35's micro-mapped-file-stream targets at one memory size: lowlumpy scans less
    in kswapd than traceonly (seed −2.09 %); waitwriteback moves scanning from kswapd to
    direct reclaim against traceonly (pgscan_kswapd −18 %, pgscan_direct +68 % in the seed);
    the direct reclaimers' congestion waits fall with the series (the seed's
    micro-mapped-file-stream congestion table: 4,604 ms in traceonly, 0 in waitwriteback).
    `trace` is `trace_summary` of the mapped-file-stream runs."""
    at = f"×{scale:g} ({memory_mb(scale)} MB)"
    t, low, wb = (mfs.get(k) for k in ("traceonly", "lowlumpy", "waitwriteback"))
    ks, dr = "pgscan_kswapd_dma32", "pgscan_direct_dma32"
    out = []
    ok = bool(t and low) and low[ks] < t[ks]
    out.append(Target(f"mapped-file-stream: kswapd scans less with lowlumpy than traceonly (seed −2.09 %), {at}", ok,
                      f"{t[ks]:,} → {low[ks]:,}" if t and low else "no runs"))
    ok = bool(t and wb) and wb[ks] < t[ks] and wb[dr] > t[dr]
    out.append(Target(f"mapped-file-stream: waitwriteback scans less in kswapd and more in direct reclaim than traceonly (seed −18 %, +68 %), {at}", ok,
                      f"kswapd {t[ks]:,} → {wb[ks]:,}, direct {t[dr]:,} → {wb[dr]:,}" if t and wb else "no runs"))
    tt, tw = trace.get("traceonly"), trace.get("waitwriteback")
    ok = bool(tt and tw) and tw["direct_wait_ms"] < tt["direct_wait_ms"]
    out.append(Target(f"mapped-file-stream: direct reclaim's congestion waits shorter with waitwriteback than traceonly (seed: 4,604 → 0 ms), {at}", ok,
                      f"{tt['direct_wait_ms']:,.0f} → {tw['direct_wait_ms']:,.0f} ms" if tt and tw else "no trace"))
    return out


def check_targets(sim: dict[str, Row], trace: dict[str, Row], scale: float = 1.0) -> list[Target]:
    """Issue 35's stress-highalloc targets at one memory size: each pass's success within
    ±10 points of the seed's, per kernel; lowlumpy scans less in kswapd than traceonly (the
    seed's stress-highalloc table shows the opposite, 15.3 M against 7.3 M pages, so the
    target is the seed's direction in that table: more; the issue's "less" is the seed's
    micro-mapped-file-stream, −2.09 %); direct reclaim stalls for less time with lowlumpy;
    the direct reclaimers' congestion wait falls with wait_iff_congested (waitcongest below
    lowlumpy). A target without its
    numbers is not met."""
    at = f"×{scale:g} ({memory_mb(scale)} MB)"
    out: list[Target] = []
    for k in KERNELS:
        for label, p in PASSES:
            seed, got = SEED_SUCCESS[k][p], sim.get(k, {}).get(p)
            ok = got is not None and abs(got - seed) <= SUCCESS_TOLERANCE
            out.append(Target(f"{SEED_NAMES[k]} {label} within ±{SUCCESS_TOLERANCE} points, {at}", ok, f"seed {seed}, sim {got}"))
    t, low, wc = (trace.get(k) for k in ("traceonly", "lowlumpy", "waitcongest"))
    ok = t is not None and low is not None and low["kswapd_scanned"] > t["kswapd_scanned"]
    detail = f"{t['kswapd_scanned']:,} → {low['kswapd_scanned']:,}" if t and low else "no trace"
    out.append(Target(f"kswapd pages scanned higher with lowlumpy than traceonly (seed: 7,290,822 → 15,341,158), {at}", ok, detail))
    ok = t is not None and low is not None and low["direct_stalled_s"] < t["direct_stalled_s"]
    detail = f"{t['direct_stalled_s']:,.2f} → {low['direct_stalled_s']:,.2f} s" if t and low else "no trace"
    out.append(Target(f"time stalled in direct reclaim lower with lowlumpy than traceonly (seed: 4,588.93 → 2,467.16 s), {at}", ok, detail))
    ok = low is not None and wc is not None and wc["direct_wait_ms"] < low["direct_wait_ms"]
    detail = f"{low['direct_wait_ms']:,.0f} → {wc['direct_wait_ms']:,.0f} ms" if low and wc else "no trace"
    out.append(Target(f"direct reclaim's congestion waits shorter with wait_iff_congested (seed: 8,288 → 7,260 ms), {at}", ok, detail))
    return out


def targets_table(targets: list[Target]) -> Table:
    return seed000.targets_table(targets, f"Targets: {sum(x.ok for x in targets)} of {len(targets)} met")
