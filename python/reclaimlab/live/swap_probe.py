"""`reclaimlab host probe --swap`: what the kernel's swap path costs on this machine.

The measurement itself is native (`_core.probe.swap_costs`, crates/reclaim-py/src/probe.rs:
MADV_PAGEOUT, swap-cache faults and a swap-in pass over memory of this process's own). This
module gives it swap space of its own, a swap file at the highest priority so that its pages
go there, and takes it away again. The file is a journaled change like a live run's: an
interrupted probe undoes it on its way out, a killed one leaves it to `reclaimlab live
restore`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from typing import Any, Callable

from reclaimlab import _core
from reclaimlab.interrupts import signals_blocked, signals_unwind
from reclaimlab.live.backend import MiB, BackendError, KernelBackend, RealBackend
from reclaimlab.live.journal import Journal, JournalError, journal_path

PROBE_MB = 128
# A VM's timings move by tens of percent from one round to the next: the median of a few.
ROUNDS = 3
SWAP_FILE_MB = 2 * PROBE_MB
# The highest swap priority, so that the probe's pages go to its own file even where the
# machine has swap of its own (which is left on).
PRIORITY = 32767


class SwapProbeError(RuntimeError):
    """The probe cannot run here, or its measurement failed; the message says why."""


def refusals(backend: KernelBackend) -> list[str]:
    """Reasons the probe cannot run now, each with what to do; empty if it can."""
    problems = []
    if backend.euid() != 0:
        problems.append("it adds a swap file, which needs root: run it with sudo")
    missing = [t for t in ("mkswap", "swapon", "swapoff") if shutil.which(t) is None]
    if missing:
        problems.append(f"{', '.join(missing)} not found: install util-linux")
    zswap = "/sys/module/zswap/parameters/enabled"
    if backend.exists(zswap) and backend.read_value(zswap) in ("Y", "1"):
        problems.append(f"zswap is on ({zswap}): page-outs would go to it, not to the probe's swap file; turn it off for the probe")
    try:
        existing = Journal.load(journal_path())
    except JournalError as e:
        problems.append(str(e))
    else:
        if existing is not None:
            problems.append(f"a live run left unrestored changes in {journal_path()}: run `reclaimlab live restore` first")
    return problems


def probe_swap_costs(path: str, backend: KernelBackend | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Add a swap file under `path`, time the swap path with it (ROUNDS rounds of a second or
    two), and remove it. Returns the median of `_core.probe.swap_costs`' results: `probe`,
    the raw measurements, and `costs`, the `[costs]` keys they give."""
    backend = backend or RealBackend()
    problems = refusals(backend)
    if problems:
        raise SwapProbeError("cannot probe swap:\n  - " + "\n  - ".join(problems))
    swapfile = os.path.join(path, f"reclaimlab-probe-swap-{os.getpid()}.img")
    with signals_unwind():
        try:
            journal = Journal.create(journal_path(), scenario="host probe --swap")
        except JournalError as e:
            raise SwapProbeError(str(e)) from None
        backend.journal = journal
        try:
            backend.add_swapfile(swapfile, SWAP_FILE_MB * MiB, PRIORITY)
            log(f"swap probe: swap file {swapfile}, {SWAP_FILE_MB} MiB, priority {PRIORITY}")
            rounds = [json.loads(_core.probe.swap_costs(PROBE_MB * MiB)) for _ in range(ROUNDS)]
        except BackendError as e:
            raise SwapProbeError(f"swap probe: {e}") from None
        except OSError as e:  # the native probe's messages name it already
            raise SwapProbeError(str(e)) from None
        finally:
            with signals_blocked():
                lines = backend.restore(journal)
                for line in lines:
                    log(f"swap probe: restore: {line}")
            backend.journal = None
    if any(line.startswith("FAILED") for line in lines):
        raise SwapProbeError(f"swap probe: some changes could not be undone; {journal_path()} keeps them for `reclaimlab live restore`")
    return median_of(rounds)


def median_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds that gave it; a key fewer than half the rounds
    gave is left out (the model then keeps its default)."""
    result: dict[str, Any] = {}
    for part in ("probe", "costs"):
        keys = dict.fromkeys(k for r in rounds for k in r[part])
        result[part] = {}
        for k in keys:
            values = [r[part][k] for r in rounds if k in r[part]]
            if 2 * len(values) > len(rounds):
                result[part][k] = int(statistics.median(values))
    return result
