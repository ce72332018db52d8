"""Fixtures of the live tests, imported by each tests/test_live_*.py (not a conftest.py, which
other parts of the project own). `machine_left_as_found` snapshots everything a live run may
change at the start of the session and compares at its end, so a test that leaves a cgroup, a
hugetlb reservation, swap, a sysctl, a block-queue setting or tracing behind fails the suite."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

import pytest

from reclaimlab.live.backend import SYSCTLS, RealBackend


def machine_state() -> dict[str, Any]:
    b = RealBackend()
    state: dict[str, Any] = {}
    for key, path in SYSCTLS.items():
        state[key] = b.read_value(path) if b.exists(path) else None
    state["nr_hugepages"] = b.read_value("/proc/sys/vm/nr_hugepages")
    state["swaps"] = b.swaps()
    state["rotational"] = {
        d: b.read_value(f"/sys/block/{d}/queue/rotational")
        for d in sorted(os.listdir("/sys/block"))
        if os.path.exists(f"/sys/block/{d}/queue/rotational")
    }
    parent = b.memcg_parent() if os.geteuid() == 0 else None
    state["cgroups"] = sorted(glob.glob(f"{parent[1]}/reclaimlab-*")) if parent else []
    state["tracefs_mounts"] = sorted(
        line.split()[1] for line in b.read_text("/proc/mounts").splitlines() if line.split()[2] == "tracefs"
    )
    state["trace_instances"] = sorted(glob.glob("/sys/kernel/tracing/instances/reclaimlab-*"))
    state["files"] = sorted(glob.glob("/var/tmp/reclaimlab*"))
    state["zram_disksize"] = {
        p: Path(p).read_text().strip() for p in sorted(glob.glob("/sys/block/zram*/disksize"))
    }
    return state


@pytest.fixture(scope="session", autouse=True)
def machine_left_as_found() -> Any:
    """Session-wide: after every test, nothing a live run changes may differ from before."""
    if os.geteuid() != 0:
        yield
        return
    before = machine_state()
    yield
    after = machine_state()
    diff = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not diff, f"the test session left the machine changed: {diff}"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("RECLAIMLAB_STATE_DIR", str(d))
    return d


# The host profile's fields (as `reclaimlab host probe` measures them, JSON for
# `_core.host_profile_toml`) of the 24 GiB development VM whose /proc/pagetypeinfo is
# tests/data/pagetypeinfo-6.18.txt.
VM_PROFILE = {
    "hostname": "vm", "kernel": "6.18", "probed_at": "2026-11-28T08:00:00Z", "path": "/var/tmp",
    "nodes": 1, "cpus_per_node": 2, "memory_mb_per_node": 24105, "dma32_mb": 3034, "read_ahead_kb": 8192,
    "min_free_kbytes": 67584, "watermark_scale_factor": 10, "rotational": False,
    "device": {"name": "vda", "bandwidth_mb_s": 1000.0, "latency_us": 50.0},
}


def host_profile_text(memory_mb_per_node: int = 8192, read_ahead_kb: int = 512, bandwidth_mb_s: float = 1500.0,
                      latency_us: float = 80.0, max_request_kb: int = 1024, queue_depth: int = 64) -> str:  # fmt: skip
    """A host profile of a one-node, two-CPU machine with one non-rotational device, as
    `reclaimlab host probe` writes it, with the numbers a test varies."""
    return f"""
hostname = "test"
kernel = "6.18"
probed_at = "2026-11-25T00:00:00Z"
path = "/var/tmp"
nodes = 1
cpus_per_node = 2
memory_mb_per_node = {memory_mb_per_node}
dma32_mb = 3000
read_ahead_kb = {read_ahead_kb}
min_free_kbytes = 67584
watermark_scale_factor = 10
rotational = false

[device]
name = "vdz"
count = 1
bandwidth_mb_s = {bandwidth_mb_s}
latency_us = {latency_us}
max_request_kb = {max_request_kb}
request_us = 0.0
queue_depth = {queue_depth}
jitter = 0.0
"""
