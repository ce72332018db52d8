"""Monitors of a live run, as mmtests runs them (WORKLOADS.md §2.7), written in run-dir format.

One thread samples /proc/vmstat, /proc/buddyinfo, /proc/diskstats, /proc/stat and
/proc/pressure/memory (with the run's cgroup's memory.pressure) together every interval, so the
files share their time stamps. A kernel booted with psi=0 has no /proc/pressure: psi.samples is
then not written and the window's pressure is null. Per-task CPU (tasks.json) comes from
wait4(2) for the workload's own processes and from /proc/PID/stat at start and end for kernel
threads.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reclaimlab.live.backend import KernelBackend
from reclaimlab.rundir import SamplesWriter

SECTOR_KB = 0.5  # /proc/diskstats counts 512-byte sectors
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- /proc/diskstats → iostat.samples ----------------------------------------------------------


@dataclass
class DiskCounters:
    reads: int
    rd_sectors: int
    rd_ms: int
    writes: int
    wr_sectors: int
    wr_ms: int
    io_ms: int
    weighted_ms: int


def parse_diskstats(text: str, devices: set[str] | None = None) -> dict[str, DiskCounters]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14 or (devices is not None and f[2] not in devices):
            continue
        out[f[2]] = DiskCounters(
            reads=int(f[3]), rd_sectors=int(f[5]), rd_ms=int(f[6]),
            writes=int(f[7]), wr_sectors=int(f[9]), wr_ms=int(f[10]),
            io_ms=int(f[12]), weighted_ms=int(f[13]),
        )  # fmt: skip
    return out


def iostat_record(t: float, device: str, a: DiskCounters, b: DiskCounters, dt: float) -> dict[str, Any]:
    """One interval as `iostat -x` computes it: await = Δms/Δios, aqu-sz = Δweighted/Δt,
    util = Δio_ticks/Δt."""
    dr, dw = b.reads - a.reads, b.writes - a.writes
    return {
        "t": round(t, 3),
        "device": device,
        "rkB_s": round((b.rd_sectors - a.rd_sectors) * SECTOR_KB / dt, 2),
        "wkB_s": round((b.wr_sectors - a.wr_sectors) * SECTOR_KB / dt, 2),
        "r_await_ms": round((b.rd_ms - a.rd_ms) / dr, 3) if dr else 0.0,
        "w_await_ms": round((b.wr_ms - a.wr_ms) / dw, 3) if dw else 0.0,
        "aqu_sz": round((b.weighted_ms - a.weighted_ms) / (dt * 1000), 3),
        "util_pct": round(min(100.0, (b.io_ms - a.io_ms) / (dt * 10)), 2),
    }


# --- /proc/stat → cpu.samples ------------------------------------------------------------------


def parse_cpu_line(text: str) -> list[int]:
    for line in text.splitlines():
        if line.startswith("cpu "):
            return [int(x) for x in line.split()[1:]]
    raise ValueError("no aggregate cpu line in /proc/stat")


def cpu_record(t: float, a: list[int], b: list[int]) -> dict[str, Any]:
    """Percentages over all CPUs as vmstat prints them: us = user+nice, sy = system+irq+softirq
    (steal is in the total but, as docs/rundir.md lists, not a column of its own)."""
    d = [y - x for x, y in zip(a, b)] + [0] * 8
    user, nice, system, idle, iowait, irq, softirq = d[:7]
    total = sum(d[:8]) or 1
    pct = lambda v: round(v * 100.0 / total, 2)  # noqa: E731
    return {
        "t": round(t, 3),
        "us_pct": pct(user + nice),
        "sy_pct": pct(system + irq + softirq),
        "id_pct": pct(idle),
        "wa_pct": pct(iowait),
    }


def nr_cpus(backend: KernelBackend) -> int:
    return sum(1 for line in backend.read_text("/proc/stat").splitlines() if line[:3] == "cpu" and line[3].isdigit())


# --- /proc/pressure/memory → psi.samples ------------------------------------------------------


PRESSURE = "/proc/pressure/memory"
Pressure = dict[str, dict[str, float]]


def parse_pressure(text: str) -> Pressure:
    """/proc/pressure/memory (or a cgroup's memory.pressure) → {"some"|"full": {"avg10",
    "avg60", "avg300", "total"}}; `total` is the stall time in µs."""
    out = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        out[kind] = {k: float(v) for k, v in (f.split("=") for f in fields)}
    return out


def read_pressure(backend: KernelBackend, path: str) -> Pressure | None:
    """The pressure file at `path`, or None where the kernel keeps none (psi=0, no cgroup
    pressure): absent, or refused on read (EOPNOTSUPP)."""
    try:
        return parse_pressure(backend.read_text(path))
    except OSError:
        return None


def stall_pct(a: Pressure, b: Pressure, kind: str, dt: float) -> float:
    """The share of `dt` seconds stalled between readings `a` and `b`, from `total=` (µs)."""
    return round((b[kind]["total"] - a[kind]["total"]) / (dt * 1e4), 2)


def psi_record(t: float, a: Pressure, b: Pressure, dt: float) -> dict[str, Any]:
    """One interval of psi.samples (docs/rundir.md)."""
    return {
        "t": round(t, 3),
        "some_pct": stall_pct(a, b, "some", dt),
        "full_pct": stall_pct(a, b, "full", dt),
        "some_avg10": b["some"]["avg10"],
        "full_avg10": b["full"]["avg10"],
        "some_total_us": int(b["some"]["total"]),
        "full_total_us": int(b["full"]["total"]),
    }


class PressureWindow:
    """/proc/pressure/memory and the run's cgroup's memory.pressure over the run: each
    interval into psi.samples, the first and last readings for result.json."""

    def __init__(self, backend: KernelBackend, rundir: Path, cgroup_path: str | None) -> None:
        self.backend = backend
        self.paths = {"": PRESSURE}
        if cgroup_path is not None:
            self.paths["cgroup_"] = f"{cgroup_path}/memory.pressure"
        self.writer: SamplesWriter | None = None
        self.rundir = rundir
        self.first: dict[str, tuple[float, Pressure]] = {}
        self.last: dict[str, tuple[float, Pressure]] = {}

    def sample(self, t: float) -> None:
        prev = dict(self.last)
        readings = {key: read_pressure(self.backend, path) for key, path in self.paths.items()}
        for key, reading in readings.items():
            if reading is not None:
                self.first.setdefault(key, (t, reading))
                self.last[key] = (t, reading)
        now, before = readings[""], prev.get("")
        if now is None or before is None:
            return
        dt = max(t - before[0], 1e-3)
        record = psi_record(t, before[1], now, dt)
        cg_now, cg_before = readings.get("cgroup_"), prev.get("cgroup_")
        if cg_now is not None and cg_before is not None:
            record["cgroup_some_pct"] = stall_pct(cg_before[1], cg_now, "some", dt)
            record["cgroup_full_pct"] = stall_pct(cg_before[1], cg_now, "full", dt)
        if self.writer is None:
            self.writer = SamplesWriter(self.rundir / "psi.samples")
        self.writer.json_line(record)

    def result(self) -> dict[str, float | None]:
        """`psi_memory_some_pct`/`full_pct` (and `psi_cgroup_memory_*` with a cgroup) over the
        window between the first and last readings; null where the kernel has no pressure."""
        out: dict[str, float | None] = {}
        for key in self.paths:
            for kind in ("some", "full"):
                name = f"psi_{key}memory_{kind}_pct"
                first, last = self.first.get(key), self.last.get(key)
                if first is None or last is None or last[0] <= first[0]:
                    out[name] = None
                else:
                    out[name] = stall_pct(first[1], last[1], kind, last[0] - first[0])
        return out

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


# --- the sampling thread -----------------------------------------------------------------------


def whole_disks(backend: KernelBackend) -> set[str]:
    """Block devices worth watching: whole disks, not loop or ram devices."""
    return {d for d in backend.listdir("/sys/block") if not d.startswith(("loop", "ram"))}


class Samplers:
    """Samples vmstat, diskstats and cpu every `interval` seconds into a run directory."""

    def __init__(self, backend: KernelBackend, rundir: Path, interval: float, t0: float, cgroup_path: str | None = None) -> None:
        self.backend = backend
        self.psi = PressureWindow(backend, rundir, cgroup_path)
        self.interval = interval
        self.t0 = t0
        self.devices = whole_disks(backend)
        self.vmstat = SamplesWriter(rundir / "vmstat.samples")
        self.iostat = SamplesWriter(rundir / "iostat.samples")
        self.cpu = SamplesWriter(rundir / "cpu.samples")
        self.buddyinfo = SamplesWriter(rundir / "buddyinfo.samples")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="reclaimlab-samplers", daemon=True)
        self.error: BaseException | None = None
        self._last: tuple[float, dict[str, DiskCounters], list[int]] | None = None

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def sample(self) -> None:
        t = time.monotonic() - self.t0
        self.vmstat.timed_block(t, self.backend.read_text("/proc/vmstat"))
        try:
            self.buddyinfo.timed_block(t, self.backend.read_text("/proc/buddyinfo"))
        except OSError:  # a kernel without it (or not readable): the file stays empty
            pass
        disks = parse_diskstats(self.backend.read_text("/proc/diskstats"), self.devices)
        cpu = parse_cpu_line(self.backend.read_text("/proc/stat"))
        self.psi.sample(t)
        if self._last is not None:
            t_prev, disks_prev, cpu_prev = self._last
            dt = max(t - t_prev, 1e-3)
            for dev in sorted(disks):
                if dev in disks_prev:
                    self.iostat.json_line(iostat_record(t, dev, disks_prev[dev], disks[dev], dt))
            self.cpu.json_line(cpu_record(t, cpu_prev, cpu))
        self._last = (t, disks, cpu)

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self.sample()
        except BaseException as e:  # reported by stop(); a sampler must not kill the run silently
            self.error = e

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.error is None:
            self.sample()  # a final partial interval, so short runs still have one
        for w in (self.vmstat, self.iostat, self.cpu, self.buddyinfo, self.psi):
            w.close()
        if self.error is not None:
            raise RuntimeError(f"sampling failed: {self.error}") from self.error


# --- tasks.json --------------------------------------------------------------------------------


def proc_times(backend: KernelBackend, pid: int) -> tuple[str, float, float] | None:
    """(comm, user_s, sys_s) from /proc/PID/stat, or None if the task is gone."""
    try:
        stat = backend.read_text(f"/proc/{pid}/stat")
    except OSError:
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    f = stat.rpartition(")")[2].split()
    return comm, int(f[11]) / CLK_TCK, int(f[12]) / CLK_TCK


def kernel_threads(backend: KernelBackend) -> dict[int, str]:
    """kswapd threads (kswapdN, and kswapdN:M where a kernel runs several per node) → kind."""
    found = {}
    for name in backend.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            comm = backend.read_value(f"/proc/{name}/comm")
        except OSError:
            continue
        if comm.startswith("kswapd"):
            found[int(name)] = "kswapd"
    return found


class TaskTracker:
    """CPU of kswapd threads over the run (start/end snapshots) plus the workload's tasks."""

    def __init__(self, backend: KernelBackend) -> None:
        self.backend = backend
        self.start: dict[int, tuple[str, float, float]] = {}
        self.workload: list[dict[str, Any]] = []

    def begin(self) -> None:
        for pid in kernel_threads(self.backend):
            t = proc_times(self.backend, pid)
            if t is not None:
                self.start[pid] = t

    def add_workload_task(self, pid: int, comm: str, user_s: float, sys_s: float) -> None:
        self.workload.append({"pid": pid, "comm": comm, "kind": "workload", "user_s": user_s, "sys_s": sys_s})

    def finish(self, elapsed_s: float) -> dict[str, Any]:
        tasks = []
        for t in self.workload:
            tasks.append({**t, "node": None})
        for pid, (comm, u0, s0) in sorted(self.start.items()):
            now = proc_times(self.backend, pid)
            if now is None:
                continue
            node = _kswapd_node(comm)
            tasks.append({"pid": pid, "comm": comm, "kind": "kswapd", "node": node, "user_s": now[1] - u0, "sys_s": now[2] - s0})
        for t in tasks:
            t["user_s"] = round(t["user_s"], 3)
            t["sys_s"] = round(t["sys_s"], 3)
            t["cpu_pct"] = round((t["user_s"] + t["sys_s"]) * 100.0 / elapsed_s, 2) if elapsed_s > 0 else 0.0
        return {"elapsed_s": round(elapsed_s, 3), "nr_cpus": nr_cpus(self.backend), "tasks": tasks}


def _kswapd_node(comm: str) -> int | None:
    digits = comm.removeprefix("kswapd").split(":")[0]
    return int(digits) if digits.isdigit() else None
