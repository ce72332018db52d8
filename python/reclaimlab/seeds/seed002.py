"""Seed 002 (VMA-based swap readahead): its table beside simulated runs of both policies."""

from __future__ import annotations

import tomllib
from pathlib import Path

from rich.table import Table

from reclaimlab import columns
from reclaimlab.seeds import seed000
from reclaimlab.seeds.seed000 import Target
from reclaimlab.rundir import RunDir

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "seed002" / "usemem.toml"
POLICIES = ("cluster", "vma")  # the seed's base and optimized kernels
# The seed's machine: 32 GB over 2 nodes; what --scale multiplies (with the usemem sizes and
# the swap file). DMA32 stays whole up to the node's size.
NODE_MB, DMA32_MB, SEQ_MB, RAND_MB, SWAP_MB = 16384, 3072, 12800, 3840, 65536

# `reclaimlab bench --swap`: the experiment at 1/8 of its memory, 10 s (`overrides(*BENCH)`).
BENCH = (1 / 8, 10)

ROWS = [  # (row label, key in reference.toml and in columns_of)
    ("throughput KB/s", "throughput_kB_s"),
    ("latency.average µs", "latency_average"),
    *((f"latency.{q}th µs", f"latency_p{q}") for q in (50, 60, 70, 80, 90, 95, 99)),
    ("ra_hit%", "ra_hit_pct"),
]

Row = dict[str, float | None]


def reference() -> dict[str, Row]:
    """The seed's published values, by policy."""
    data = tomllib.loads((SCENARIO.parent / "reference.toml").read_text())
    return {p: dict(data[p]) for p in POLICIES}


def overrides(scale: float, duration: float | None) -> list[str]:
    """`--set`s that scale the seed's memory, usemem sizes and swap file by `scale`, and its
    300 s run (and the processes' runtime) to `duration`."""
    out = []
    if scale != 1.0:
        node = max(256, int(NODE_MB * scale) // 4 * 4)
        out += [
            f"machine.memory_mb_per_node={node}",
            f"machine.dma32_mb={min(DMA32_MB, node // 2)}",
            f"workload.size_mb={max(1, int(SEQ_MB * scale))}",
            f"workload.background.size_mb={max(1, int(RAND_MB * scale))}",
            f"swap.size_mb={max(64, int(SWAP_MB * scale))}",
        ]
    if duration is not None:
        out += [f"run.duration_s={duration}", f"workload.runtime_s={duration}", f"workload.background.runtime_s={duration}"]
    return out


def columns_of(run: RunDir) -> Row:
    """The seed's rows of a run directory: the foreground (sequential) usemem's throughput
    and latency, and ra_hit% = Δswap_ra_hit / Δswap_ra."""
    m = run.result["metrics"]
    lat = m.get("latency_us", {})
    row: Row = {"throughput_kB_s": m.get("throughput_kB_s"), "latency_average": lat.get("average")}
    for q in (50, 60, 70, 80, 90, 95, 99):
        row[f"latency_p{q}"] = lat.get(f"p{q}")
    ra, hit = columns.value(run, "vmstat.swap_ra"), columns.value(run, "vmstat.swap_ra_hit")
    row["ra_hit_pct"] = 100.0 * hit / ra if ra else None
    row["swap_ra"] = ra
    row["pswpin"] = columns.value(run, "vmstat.pswpin")
    return row


# A hit rate counts only when readahead read this share of the pages swapped in at least.
MIN_RA_SHARE = 0.01


def _fmt(key: str, v: float | None) -> str:
    if v is None:
        return "—"
    if key == "throughput_kB_s":
        return f"{v:,.0f}"
    if key == "ra_hit_pct":
        return f"{v:.2f}%"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def _change(a: float | None, b: float | None) -> str:
    return f"{(b - a) * 100 / a:+.1f}%" if a and b is not None else "—"


def table(sim: dict[str, Row], suffix: str = "") -> Table:
    """Simulated values with the seed's beside them, and the change from base to optimized."""
    ref = reference()
    t = Table(title=f"Seed 002: usemem sequential + random background, cluster vs VMA swap readahead{suffix}")
    for h in ("", "cluster (sim)", "seed", "vma (sim)", "seed", "change (sim)", "change (seed)"):
        t.add_column(h, justify="left" if not h else "right")
    for label, key in ROWS:
        c, v = sim["cluster"].get(key), sim["vma"].get(key)
        rc, rv = ref["cluster"][key], ref["vma"][key]
        t.add_row(label, _fmt(key, c), _fmt(key, rc), _fmt(key, v), _fmt(key, rv), _change(c, v), _change(rc, rv))
    return t


def check_targets(sim: dict[str, Row]) -> list[Target]:
    """The issue's targets: each ra_hit% within ±15 points of the seed's (and readahead
    reading at least MIN_RA_SHARE of the pages swapped in, so that the rate means something);
    VMA's throughput gain within ±15 % of the seed's ratio (1.199); average latency lower
    with VMA."""
    ref = reference()
    out = []
    for p in POLICIES:
        s, r = sim[p]["ra_hit_pct"], ref[p]["ra_hit_pct"]
        ra, swapins = sim[p].get("swap_ra") or 0, sim[p].get("pswpin") or 0
        share = ra / swapins if swapins else 0.0
        shown = f"{_fmt('ra_hit_pct', s)} (readahead {share:.1%} of swap-ins)"
        met = s is not None and abs(s - r) <= 15 and share >= MIN_RA_SHARE
        out.append(Target(f"ra_hit% {p}", met, f"{shown}; seed {r:.2f}%"))
    rs = ref["vma"]["throughput_kB_s"] / ref["cluster"]["throughput_kB_s"]
    c, v = sim["cluster"]["throughput_kB_s"], sim["vma"]["throughput_kB_s"]
    ss = v / c if c and v is not None else None
    out.append(Target("throughput vma/cluster", ss is not None and abs(ss / rs - 1) <= 0.15, (f"{ss:.3f}" if ss else "—") + f"; seed {rs:.3f}"))
    c, v = sim["cluster"]["latency_average"], sim["vma"]["latency_average"]
    seed_change = _change(ref["cluster"]["latency_average"], ref["vma"]["latency_average"])
    out.append(Target("latency.average lower with vma", c is not None and v is not None and v < c, f"{_change(c, v)}; seed {seed_change}"))
    return out


def targets_table(targets: list[Target]) -> Table:
    return seed000.targets_table(targets, f"Targets: {sum(x.ok for x in targets)} of {len(targets)} met")
