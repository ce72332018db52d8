"""`reclaimlab host probe --swap`: its swap file is a journaled change, refused without root
and removed even when the measurement fails (against the recorded fake); on this machine, as
root, the real measurement (marked `live`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reclaimlab.live import swap_probe
from reclaimlab.live.backend import RealBackend
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.journal import journal_path
from reclaimlab.live.swap_probe import SwapProbeError, median_of, probe_swap_costs

from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)


def test_without_root_the_probe_refuses_before_any_change(state_dir: Path) -> None:
    fake = FakeBackend(uid=1000)
    with pytest.raises(SwapProbeError, match="needs root"):
        probe_swap_costs("/var/tmp", backend=fake, log=lambda s: None)
    assert not [c for c in fake.calls if c[0] == "run"]
    assert not journal_path().exists()


def test_a_failed_measurement_still_removes_the_swap_file(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBackend(uid=0)
    seen: list[str] = []

    def fails(size: int) -> str:
        seen.extend(fake.swaps())
        raise OSError("swap probe: pages written by MADV_PAGEOUT: 0 of 32768 pages")

    monkeypatch.setattr(swap_probe._core.probe, "swap_costs", fails)
    with pytest.raises(SwapProbeError, match="MADV_PAGEOUT"):
        probe_swap_costs("/var/tmp", backend=fake, log=lambda s: None)
    assert len(seen) == 1 and seen[0].startswith("/var/tmp/reclaimlab-probe-swap-")
    assert ("run", "swapon", "-p", "32767", seen[0]) in fake.calls
    assert fake.swaps() == [] and seen[0] not in fake.files
    assert not journal_path().exists()


def test_the_result_is_each_figures_median_over_the_rounds_that_gave_it() -> None:
    rounds: list[dict[str, Any]] = [
        {"probe": {"pageout_ns": p}, "costs": {"swap_out_ns": p - 330, **extra}}
        for p, extra in [(4000, {"swapin_map_ns": 9, "tlb_flush_ipi_ns": 5}), (9000, {}), (3000, {"swapin_map_ns": 7})]
    ]
    # swapin_map_ns from two rounds of three (their median is their mean); tlb_flush_ipi_ns
    # from one: left out.
    assert median_of(rounds) == {"probe": {"pageout_ns": 4000}, "costs": {"swap_out_ns": 3670, "swapin_map_ns": 8}}


def test_with_zswap_on_the_probe_refuses(state_dir: Path) -> None:
    fake = FakeBackend(uid=0)
    fake.files["/sys/module/zswap/parameters/enabled"] = "Y"
    with pytest.raises(SwapProbeError, match="zswap is on"):
        probe_swap_costs("/var/tmp", backend=fake, log=lambda s: None)
    assert not [c for c in fake.calls if c[0] == "run"]


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_the_swap_path_is_measured_on_this_kernel(state_dir: Path) -> None:
    lines: list[str] = []
    before = RealBackend().swaps()
    result = probe_swap_costs("/var/tmp", log=lines.append)
    probe, costs = result["probe"], result["costs"]
    # Every page of the swap-in pass was read back from the probe's own swap file.
    assert probe["swapin_reads"] >= 0.9 * probe["swapin_pages"]
    # A page-out is dearer than the reclaim steps the model charges apart from it, and a
    # fault on a swap-cache folio is a fault: each is a kernel path of 0.1 to 100 µs.
    for key in ("swap_out_ns", "swapin_map_ns", "swap_cache_insert_ns"):
        assert 100 < costs[key] < 100_000, (key, result)
    # With two CPUs the remote page-out ran, and interrupting the other CPU cost something.
    if len(os.sched_getaffinity(0)) >= 2:
        assert 0 < probe["pageout_local_ns"] < probe["pageout_remote_ns"]
        assert 100 < costs["tlb_flush_ipi_ns"] < 100_000
    else:
        assert "tlb_flush_ipi_ns" not in costs
    assert RealBackend().swaps() == before
    assert not list(Path("/var/tmp").glob("reclaimlab-probe-swap-*"))
    assert any("removed" in line for line in lines)
