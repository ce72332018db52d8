"""Small real live runs (a 256 MiB memory cgroup), marked `live`: skipped where root, the
memory cgroup or tracefs is missing. The session fixture in conftest.py checks that nothing is
left behind; the SIGKILL test checks `reclaimlab live restore` puts the machine back."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reclaimlab.live.backend import RealBackend
from reclaimlab.live.runner import LiveError, run
from reclaimlab.live.scenario import load
from reclaimlab.live.tracefs import tracefs_supported
from reclaimlab.rundir import read_rundir
from reclaimlab.tracing.report import render, resolve_input

from .live_support import machine_left_as_found, machine_state, state_dir  # noqa: F401  (fixtures)

pytestmark = pytest.mark.live


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    b = RealBackend()
    if b.memcg_parent() is None:
        return "no usable memory cgroup"
    if not tracefs_supported(b):
        return "no tracefs"
    return None


REASON = _skip_reason()
requires_machine = pytest.mark.skipif(REASON is not None, reason=REASON or "")
CLI = [sys.executable, "-c", "from reclaimlab.cli import main; main()"]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "scenario.toml"
    p.write_text(text)
    return p


@requires_machine
def test_dd_reader_in_a_256m_cgroup_is_traced(tmp_path: Path, state_dir: Path) -> None:
    sc = load(write(tmp_path, f"""
name = "live-dd-test"
[run]
sample_interval_s = 0.5
trace = true
duration_s = 3
[memory]
mode = "cgroup"
limit_mb = 256
[workload]
kind = "dd"
tasks = 1
file_mb = 384
dir = "{tmp_path}/data"
"""))
    points = run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    r = read_rundir(points[0].rundir)
    assert r.result["kind"] == "live"
    assert r.result["metrics"]["bytes"] > 0
    # the file is larger than the cgroup: reading it again and again reclaims inside the
    # cgroup, and the evicted pages fault back in (v1 has no pgscan in memory.stat)
    assert r.result["memcg"]["stat"]["workingset_refault_file"] > 0
    # the limit as the simulator reports it, and the charges that hit it (v2 memory.events
    # max, v1 memory.failcnt)
    memcg = r.result["memcg"]
    assert memcg["max_bytes"] == 256 << 20
    assert memcg["events"]["max"] > 0 if "failcnt" not in memcg else memcg["failcnt"] > 0
    assert r.trace_path is not None
    trace = r.trace_path.read_text()
    assert "mm_vmscan_" in trace
    # The live kernel's trace through the report: every line reads, and the cgroup's
    # reclaim shows up as memcg reclaim (not in pgscan_kswapd/direct).
    col = json.loads(render([resolve_input(str(points[0].rundir))], as_json=True))["inputs"][0]
    assert col["analysis"]["parse"]["malformed"] == 0
    assert col["summary"]["memcg_reclaims"] > 0
    assert col["summary"]["memcg"]["scanned_file"] > 0
    assert len(r.vmstat_samples) >= 3 and r.cpu and r.iostat
    assert any(t["kind"] == "workload" for t in r.tasks["tasks"])
    assert any(t["kind"] == "kswapd" for t in r.tasks["tasks"])
    assert not (tmp_path / "data").exists()  # files the run made are deleted


@requires_machine
def test_writing_a_mapped_file_larger_than_a_256m_cgroup_writes_it_back(tmp_path: Path, state_dir: Path) -> None:
    """vmscan-file-mmap-write (seed 001's mmap-strm) for real: each page of a 384 MiB sparse
    file mapped MAP_SHARED is dirtied by its write fault, and a cgroup of 256 MiB holds only
    part of it, so pages are written back and reclaimed while the task runs."""
    sc = load(write(tmp_path, f"""
name = "live-mmap-write-test"
[run]
sample_interval_s = 0.5
duration_s = 60
[memory]
mode = "cgroup"
limit_mb = 256
[workload]
kind = "mapped-file-stream"
write = true
tasks = 1
size_mb = 384
dir = "{tmp_path}/data"
"""))
    points = run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    r = read_rundir(points[0].rundir)
    m = r.result["metrics"]
    assert m["pages"] == 384 * 256 and m["elapsed_s"] > 0
    vm = {k: r.vmstat_after[k] - r.vmstat_before.get(k, 0) for k in ("nr_dirtied", "nr_written")}
    # Every page dirtied, and more written than the cgroup could hold dirty.
    assert vm["nr_dirtied"] >= 384 * 256
    assert vm["nr_written"] > 128 * 256
    assert not (tmp_path / "data").exists()


def usemem_over_256m(swap: str) -> str:
    """Two usemem tasks of 300 MiB, two passes each, in a 256 MiB memory cgroup, swapping to
    the areas `swap` (TOML) describes: each task alone overflows the cgroup."""
    return f"""
[memory]
mode = "cgroup"
limit_mb = 256
{swap}
[workload]
kind = "usemem"
tasks = 2
size_mb = 300
repeats = 2
"""


@requires_machine
def test_usemem_swaps_out_of_a_256m_cgroup(tmp_path: Path, state_dir: Path) -> None:
    sc = load(write(tmp_path, usemem_over_256m(f"""
[swap]
kind = "file"
size_mb = 512
path = "{tmp_path}/swap.img"
""")))
    points = run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    m = points[0].result["metrics"]
    assert m["completed_tasks"] == 2 and m["throughput_kB_s"] > 0
    # Each 300 MiB task alone overflows the 256 MiB cgroup: it swaps whether or not the two
    # tasks overlap in time (on a loaded machine they may not).
    assert m["pswpout"] > 0 and m["pswpin"] > 0
    # Every page of both passes timed (the first access of each task has no start).
    assert m["latency_us"]["samples"] == 2 * (2 * 300 * 256) - 2
    assert 0 < m["latency_us"]["p50"] <= m["latency_us"]["p99"]
    assert not (tmp_path / "swap.img").exists()


def _zram_free() -> bool:
    return any(Path(p).read_text().strip() == "0" for p in glob.glob("/sys/block/zram*/disksize"))


@requires_machine
@pytest.mark.skipif(not _zram_free(), reason="no unused zram device")
def test_usemem_swaps_to_zram_without_readahead(tmp_path: Path, state_dir: Path) -> None:
    sc = load(write(tmp_path, usemem_over_256m("""
[swap]
kind = "zram"
size_mb = 512
""")))
    points = run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    m = points[0].result["metrics"]
    assert points[0].result["machine"]["swap"].startswith("/dev/zram")
    assert m["completed_tasks"] == 2 and m["pswpout"] > 0
    # zram is a synchronous-I/O device: swap-ins bypass the swap cache, so no readahead at all
    assert m["swap_ra"] == 0


@requires_machine
@pytest.mark.skipif(not _zram_free(), reason="no unused zram device")
def test_a_small_zram_area_overflows_into_the_swap_file_of_lower_priority(tmp_path: Path, state_dir: Path) -> None:
    sc = load(write(tmp_path, usemem_over_256m(f"""
[swap]
kind = "zram"
size_mb = 32
priority = 100
[[swap.also]]
kind = "file"
size_mb = 512
priority = 10
path = "{tmp_path}/swap.img"
""")))
    points = run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    result = points[0].result
    assert result["machine"]["swap"].startswith("/dev/zram")
    assert result["machine"]["swap_also"] == [f"{tmp_path}/swap.img"]
    m = result["metrics"]
    assert m["completed_tasks"] == 2 and m["pswpout"] > 32 * 256
    # zram's swap-ins bypass the swap cache (test above): read-ahead pages came from the file.
    assert m["swap_ra"] > 0
    assert not (tmp_path / "swap.img").exists()


@requires_machine
def test_squeeze_below_the_margin_is_refused_before_any_change(tmp_path: Path, state_dir: Path) -> None:
    sc = load(write(tmp_path, '[memory]\nmode = "squeeze"\nfree_mb = 300\nmargin_mb = 1024\n[workload]\nkind = "dd"\ntasks = 1\nfile_mb = 64\n'))
    before = machine_state()
    with pytest.raises(LiveError, match="safe margin"):
        run(RealBackend(), sc, tmp_path / "out", log=lambda s: None)
    assert machine_state() == before


KILLED_SCENARIO = """
name = "killed"
[run]
sample_interval_s = 0.5
trace = true
duration_s = 60
[memory]
mode = "cgroup"
limit_mb = 256
[swap]
kind = "file"
size_mb = 64
path = "{tmp}/swap.img"
nonrotational = true
[sysctl]
watermark_scale_factor = 77
[workload]
kind = "dd"
tasks = 2
file_mb = 128
dir = "{tmp}/data"
"""


def _start_run(tmp_path: Path, state: Path) -> subprocess.Popen[bytes]:
    path = write(tmp_path, KILLED_SCENARIO.format(tmp=tmp_path))
    env = {**os.environ, "RECLAIMLAB_STATE_DIR": str(state)}
    with open(tmp_path / "run.log", "wb") as log:  # the child keeps its own copy of the fd
        return subprocess.Popen([*CLI, "live", "run", str(path), "-o", str(tmp_path / "out")], env=env,
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


def _wait_until_running(proc: subprocess.Popen[bytes], state: Path) -> list[dict]:
    """Until the journal shows the workload started (every change is made by then)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, (state.parent / "run.log").read_text()
        try:
            entries = json.loads((state / "journal.json").read_text())["entries"]
        except (FileNotFoundError, json.JSONDecodeError):
            entries = []
        ops = [e["op"] for e in entries]
        workload = ops[ops.index("cgroup"):] if "cgroup" in ops else []  # the dds that made its files came before
        if workload.count("process") >= 2:
            time.sleep(1.0)  # let the samplers and the trace run a little
            return entries
        time.sleep(0.1)
    raise AssertionError("the live run did not start its workload within 60 s")


@requires_machine
def test_sigkilled_run_is_undone_by_live_restore(tmp_path: Path) -> None:
    state = tmp_path / "state"
    before = machine_state()
    proc = _start_run(tmp_path, state)
    entries = _wait_until_running(proc, state)
    assert {"cgroup", "swapon", "trace_instance", "file", "write"} <= {e["op"] for e in entries}
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    during = machine_state()
    assert during != before  # the kill left changes behind: swap, sysctl, cgroup, tracing
    assert during["watermark_scale_factor"] == "77" and during["swaps"] != before["swaps"]
    env = {**os.environ, "RECLAIMLAB_STATE_DIR": str(state)}
    refused = subprocess.run([*CLI, "live", "run", str(tmp_path / "scenario.toml")], env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "reclaimlab live restore" in refused.stderr
    restored = subprocess.run([*CLI, "live", "restore"], env=env, capture_output=True, text=True)
    assert restored.returncode == 0, restored.stderr
    assert machine_state() == before
    assert not (state / "journal.json").exists()
    assert not (tmp_path / "data").exists() and not (tmp_path / "swap.img").exists()


@requires_machine
def test_the_dd_writing_a_test_file_is_ended_by_live_restore(tmp_path: Path) -> None:
    """A run killed while its dd writes a test file: `live restore` ends the dd (it would go
    on writing to the deleted file) and deletes the file."""
    state = tmp_path / "state"
    path = write(tmp_path, f'name = "big"\n[workload]\nkind = "dd"\ntasks = 1\nfile_mb = 8192\ndir = "{tmp_path}/data"\n')
    env = {**os.environ, "RECLAIMLAB_STATE_DIR": str(state)}
    proc = subprocess.Popen([*CLI, "live", "run", str(path), "-o", str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    dd: list[dict] = []
    while not dd and time.monotonic() < deadline:
        try:
            dd = [e for e in json.loads((state / "journal.json").read_text())["entries"] if e["op"] == "process"]
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.05)
    assert dd, "the run never started its dd"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    pid = dd[0]["pid"]
    assert RealBackend().process_start_time(pid) == dd[0]["start"], "the dd outlives the run"
    restored = subprocess.run([*CLI, "live", "restore"], env=env, capture_output=True, text=True)
    assert restored.returncode == 0, restored.stderr
    assert RealBackend().process_start_time(pid) is None
    assert not (tmp_path / "data").exists()


@requires_machine
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_makes_the_run_restore_itself(tmp_path: Path, sig: int) -> None:
    state = tmp_path / "state"
    before = machine_state()
    proc = _start_run(tmp_path, state)
    _wait_until_running(proc, state)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) != 0
    assert machine_state() == before
    assert not (state / "journal.json").exists()


@requires_machine
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_trace_record_restores_tracing(tmp_path: Path, sig: int) -> None:
    before = machine_state()
    env = {**os.environ, "RECLAIMLAB_STATE_DIR": str(tmp_path / "state")}
    out = tmp_path / "rec"
    proc = subprocess.Popen([*CLI, "trace", "record", "-o", str(out), "--", "sleep", "30"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 30
    while not glob.glob("/sys/kernel/tracing/instances/reclaimlab-*") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert glob.glob("/sys/kernel/tracing/instances/reclaimlab-*"), "tracing never started"
    time.sleep(0.5)
    proc.send_signal(sig)
    assert proc.wait(timeout=30) != 0
    assert machine_state() == before
    assert (out / "trace.txt").exists() and (out / "vmstat.after").exists()
