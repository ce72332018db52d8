"""Whether a run's points fit in this host's memory, checked before any point starts.

A point needs its per-page state (`_core.page_state_bytes_needed`: page descriptors, side
arrays, page tables, swap map, computed from the resolved scenario without building the
machine) and a fixed cost (`FIXED_BYTES`); a sweep's workers each hold one point at a time.
The need is set against MemAvailable: a point that does not fit alone is refused, and `-j`
is lowered to the workers whose largest points fit together, saying why.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from reclaimlab import _core

if TYPE_CHECKING:
    from reclaimlab.simulate.runner import Point

# What a point costs besides its per-page state: the interpreter and its modules (a worker
# process has its own), the tasks, the event queue, per-CPU and per-device state. Measured
# as the peak RSS of `reclaimlab run -j 1` points less their per-page state (dd on 0.5 to 32
# GiB of simulated memory; seed 002's usemem with swap, with and without a memory cgroup): 22
# to 24 MiB in every case (docs/benchmarks.md). 64 MiB leaves room for a worker's own copy
# and for what a future release adds.
FIXED_BYTES = 64 << 20
# The estimate equalled the per-page state those runs reported, and their RSS beyond it did
# not grow with it (24 MiB over 2 MiB of state as over 128 MiB): 5 % covers what grows with
# the workload rather than the memory (tasks, I/O, the event queue) and the allocator's rounding.
STATE_FACTOR = 1.05

MEMINFO = Path("/proc/meminfo")


class CapacityError(RuntimeError):
    """A point bigger than this host can hold: the message says what it needs, what the host
    has and what to change."""


def point_need(point: Point) -> int:
    """Bytes a point needs at most while it runs."""
    return int(_core.page_state_bytes_needed(point) * STATE_FACTOR) + FIXED_BYTES


def mem_available(meminfo: Path = MEMINFO) -> int | None:
    """MemAvailable in bytes; None where /proc/meminfo does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "MemAvailable":
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bytes_text(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def fit_jobs(pts: Sequence[Point], jobs: int, available: int | None = None,
             note: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> int:  # fmt: skip
    """The workers to run `pts` with, at most `jobs`: as many as the memory `available`
    (default: MemAvailable; unchecked where /proc/meminfo does not say) holds running the
    largest points at once. Raises CapacityError when the largest point does not fit alone;
    `note` gets the reason when `jobs` is lowered."""
    if available is None:
        available = mem_available()
    jobs = max(1, min(jobs, len(pts)))
    if available is None or not pts:
        return jobs
    needs = sorted(((point_need(p), p.label) for p in pts), reverse=True)
    need, label = needs[0]
    if need > available:
        what = f"point {label}" if label else "this run"
        raise CapacityError(
            f"{what} needs {bytes_text(need)} of memory ({bytes_text(need - FIXED_BYTES)} of simulator state for its pages, "
            f"page tables and swap map, and {bytes_text(FIXED_BYTES)} for the process) but this host has "
            f"{bytes_text(available)} available (MemAvailable): simulate less memory (machine.memory_mb_per_node, "
            f"swap.size_mb, the workload's size_mb; reproduce --scale) or run it on a larger host"
        )
    fit, total = 0, 0
    for n, _ in needs[:jobs]:
        if total + n > available:
            break
        total += n
        fit += 1
    if fit < jobs:
        note(
            f"-j lowered from {jobs} to {fit}: {jobs} points at once would need "
            f"{bytes_text(sum(n for n, _ in needs[:jobs]))} of memory, this host has {bytes_text(available)} available (MemAvailable)"
        )
    return fit

