"""Seed 004 (delete the zonelist cache, 4.3-rc1 → 4.4): its stutter table beside simulated
runs of scenarios/seed004/, baseline (the zonelist cache) and nozlc-v4 (without it).

The seed names no memory size for its 2-node machine; the scenarios' 2 × 1 GiB is the
reference `--scale` multiplies, with the node's DMA32 (half the node), the memhog (¾ of
memory), the copied file (2 × memory) and the swap file (4 GiB at scale 1) scaled with it, as
mmtests sizes stutter from MemTotal. The probe (128 MiB) and the block size are mmtests'
constants and stay.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from reclaimlab.rundir import RunDir
from reclaimlab.seeds import seed000
from reclaimlab.seeds.seed000 import Target

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "seed004"
KERNELS = ("baseline", "nozlc")  # the seed's columns: 4.3.0-rc1 baseline and nozlc-v4

# The scenarios' machine at scale 1 (per node) and what mmtests derives from MemTotal.
NODES, NODE_MB, SWAP_MB = 2, 1024, 4096

# The seed's table: mmtests' rows for the mmap probe (ms), baseline then nozlc-v4.
ROWS = ("Min", "1st-qrtle", "2nd-qrtle", "3rd-qrtle", "Max-90%", "Max-93%", "Max-95%", "Max-99%", "Max", "Mean",
        "Best99%Mean", "Best95%Mean", "Best90%Mean", "Best50%Mean", "Best10%Mean", "Best5%Mean", "Best1%Mean")  # fmt: skip
SEED: dict[str, tuple[float, float]] = {
    "Min": (20.9243, 20.7716),
    "1st-qrtle": (22.0612, 22.0680),
    "2nd-qrtle": (22.3291, 22.3809),
    "3rd-qrtle": (25.2244, 25.2396),
    "Max-90%": (48.0995, 28.3713),
    "Max-93%": (52.5557, 36.0170),
    "Max-95%": (55.8173, 47.3163),
    "Max-99%": (67.3781, 70.1140),
    "Max": (24447.6375, 12915.1356),
    "Mean": (33.7883, 27.7944),
    "Best99%Mean": (27.7825, 25.2767),
    "Best95%Mean": (26.3912, 23.7994),
    "Best90%Mean": (24.9886, 23.2251),
    "Best50%Mean": (22.0157, 22.0261),
    "Best10%Mean": (21.6705, 21.6083),
    "Best5%Mean": (21.5581, 21.4611),
    "Best1%Mean": (21.3079, 21.1631),
}

# The mechanism's rows (vmstat deltas over the run): (label, key of columns_of).
MECHANISM = (
    ("pgscan_direct", "pgscan_direct"),
    ("allocstall (all zones)", "allocstall"),
    ("numa_miss", "numa_miss"),
    ("numa_foreign", "numa_foreign"),
    ("thp_fault_alloc", "thp_fault_alloc"),
    ("thp_fault_fallback", "thp_fault_fallback"),
    ("compact_stall", "compact_stall"),
)

Row = dict[str, float | None]


def scenario(kernel: str) -> Path:
    return SCENARIO_DIR / f"stutter-{kernel}.toml"


def node_mb(scale: float) -> int:
    """A node's memory at `scale`, in whole 4 MB (at least 256 MB)."""
    return max(256, int(NODE_MB * scale) // 4 * 4)


def overrides(scale: float, duration: float | None) -> list[str]:
    """`--set`s for one point: the node's memory and DMA32 (half of it), the memhog (¾ of
    memory), the copied file (2 × memory) and the swap file scaled; the run's length."""
    node = node_mb(scale)
    total = NODES * node
    out = [
        f"machine.memory_mb_per_node={node}",
        f"machine.dma32_mb={node // 2}",
        f"workload.memhog_mb={total * 3 // 4}",
        f"workload.file_mb={2 * total}",
        f"swap.size_mb={max(1024, int(SWAP_MB * scale))}",
    ]
    if duration is not None:
        out.append(f"run.duration_s={duration}")
    return out


def columns_of(run: RunDir) -> Row:
    """A run's numbers: mmtests' rows of the probe's latency (result.json's
    `metrics.mmap_latency_ms.mmtests`), its sample count, and the mechanism's vmstat deltas
    (`allocstall` summed over the `allocstall_*` zones, 4.3's single counter)."""
    lat = run.result.get("metrics", {}).get("mmap_latency_ms", {})
    row: Row = {k: lat.get("mmtests", {}).get(k) for k in ROWS}
    row["samples"] = lat.get("samples")
    d = run.delta
    row["allocstall"] = float(sum(v for k, v in d.items() if k.startswith("allocstall")))
    for k in ("pgscan_direct", "numa_miss", "numa_foreign", "thp_fault_alloc", "thp_fault_fallback", "compact_stall"):
        row[k] = float(d.get(k, 0))
    return row


def mmtests_pct(base: float | None, new: float | None) -> float | None:
    """mmtests' percentage beside a latency (lower is better): (base − new) / base."""
    if base is None or new is None or not base:
        return None
    return (base - new) * 100.0 / base


def _cell(v: float | None, pct: float | None, digits: int = 4) -> str:
    if v is None:
        return "—"
    return f"{v:.{digits}f} ({pct:6.2f}%)" if pct is not None else f"{v:.{digits}f}"


def table(sim: dict[str, Row], title: str) -> Table:
    """The seed's stutter rows (ms, mmtests' percentages) beside the simulated ones."""
    t = Table(title=title, title_justify="left")
    for h in ("", "seed baseline", "seed nozlc-v4", "sim baseline", "sim nozlc"):
        t.add_column(h, justify="left" if not h else "right")
    b, n = sim.get("baseline", {}), sim.get("nozlc", {})
    for r in ROWS:
        sb, sn = SEED[r]
        t.add_row(f"{r} mmap", _cell(sb, 0.0), _cell(sn, mmtests_pct(sb, sn)),
                  _cell(b.get(r), 0.0 if b.get(r) is not None else None), _cell(n.get(r), mmtests_pct(b.get(r), n.get(r))))  # fmt: skip
    t.add_row("samples", "", "", f"{b.get('samples') or 0:,}", f"{n.get('samples') or 0:,}")
    for label, key in MECHANISM:
        t.add_row(label, "", "", f"{b.get(key) or 0:,.0f}", f"{n.get(key) or 0:,.0f}")
    return t


NOTES = (
    "Seed's rows: its stutter table (4.3.0-rc1 baseline, nozlc-v4), ms; mmtests' percentage is\n"
    "(baseline − nozlc) / baseline. The seed gives no counters; the mechanism rows are the\n"
    "simulated runs' vmstat deltas. numa_miss/numa_foreign count allocations of every order\n"
    "(a THP that missed its node is one), as the kernel's do."
)


def check_targets(sim: dict[str, Row], scale: float = 1.0) -> list[Target]:
    """Issue 36's targets on one memory size: Max-90% and Max lower without the zlc, Mean
    lower by 10–25 % (mmtests' percentage), direct reclaim (pgscan_direct) not lower
    without it, and fewer remote allocations (numa_miss) without it. A target without its
    numbers is not met."""
    b, n = sim.get("baseline", {}), sim.get("nozlc", {})
    at = f"×{scale:g} ({NODES * node_mb(scale)} MB)"
    out: list[Target] = []

    def lower(key: str, unit: str) -> None:
        x, y = b.get(key), n.get(key)
        ok = x is not None and y is not None and y < x
        out.append(Target(f"{key} lower without the zlc, {at}", ok, f"{x} → {y} {unit}"))

    lower("Max-90%", "ms")
    lower("Max", "ms")
    pct = mmtests_pct(b.get("Mean"), n.get("Mean"))
    out.append(Target(f"Mean lower by 10–25 % without the zlc, {at}", pct is not None and 10.0 <= pct <= 25.0,
                      f"{b.get('Mean')} → {n.get('Mean')} ms ({'—' if pct is None else f'{pct:.2f}%'})"))  # fmt: skip
    x, y = b.get("pgscan_direct"), n.get("pgscan_direct")
    out.append(Target(f"pgscan_direct not lower without the zlc, {at}", x is not None and y is not None and y >= x,
                      f"{x or 0:,.0f} → {y or 0:,.0f}"))  # fmt: skip
    x, y = b.get("numa_miss"), n.get("numa_miss")
    out.append(Target(f"numa_miss fewer without the zlc, {at}", x is not None and y is not None and y < x,
                      f"{x or 0:,.0f} → {y or 0:,.0f}"))  # fmt: skip
    return out


def targets_table(targets: list[Target]) -> Table:
    return seed000.targets_table(targets, f"Targets: {sum(x.ok for x in targets)} of {len(targets)} met")
