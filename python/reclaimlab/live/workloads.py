"""The live workloads, with the simulator's names and parameters (docs/workloads.md).

A workload prepares its files (before memory is constrained, so creating them does not count),
starts its processes in the run's cgroup, is stepped until it is done or the run's time is up,
is stopped, and then reports its tasks' CPU and its metrics. Processes are journaled as they
start, so a killed run's workload is killed by `reclaimlab live restore`.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from reclaimlab import _core
from reclaimlab.live.backend import NR_HUGEPAGES, BackendError, Cgroup, KernelBackend, ProcessHandle

HELPER = [sys.executable, "-m", "reclaimlab.live.helpers"]
DD_BYTES = re.compile(r"^(\d+) bytes", re.M)


@dataclass
class Task:
    """One process of a workload, its start and end times, and its output."""

    slot: int
    comm: str
    handle: ProcessHandle
    started: float
    ended: float | None = None
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    stopped: bool = False  # ended by the run (time up), not by itself

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started


@dataclass
class Workload(ABC):
    params: dict[str, Any]
    backend: KernelBackend
    tasks: list[Task] = field(default_factory=list)
    cgroup: Cgroup | None = None
    t_start: float = 0.0
    t_stop: float = 0.0
    # CLOCK_MONOTONIC ns at which tasks that can wait for it begin together (0: at once).
    start_at_ns: int = 0

    kind = ""
    # Runs until the run stops it (run.duration_s), rather than ending by itself.
    until_stopped = False

    def __post_init__(self) -> None:
        """Per-kind state is set up here by subclasses (they are not dataclasses themselves)."""

    # --- life cycle ----------------------------------------------------------------------------

    def prepare(self, log: Callable[[str], None] = lambda s: None) -> None:
        """Create input files (journaled, so restore deletes what the run created), telling
        `log` of each as it is written."""

    def start(self, cgroup: Cgroup | None, start_at_ns: int = 0) -> None:
        self.cgroup = cgroup
        self.t_start = time.monotonic()
        self.start_at_ns = start_at_ns
        self.launch()

    @abstractmethod
    def launch(self) -> None: ...

    def step(self, deadline: float | None) -> bool:
        """Reap finished tasks, start follow-ups; True once the workload is complete (its
        stop time is then the last task's end)."""
        self.reap()
        done = all(t.ended is not None for t in self.tasks)
        if done:
            self.finish_time()
        return done

    def stop(self) -> None:
        """End whatever still runs: SIGINT first (dd prints its totals, the probe flushes), then
        SIGKILL after a grace period."""
        for sig, grace in ((self.stop_signal, 5.0), (signal.SIGKILL, 5.0)):
            running = [t for t in self.tasks if t.ended is None]
            for t in running:
                t.stopped = True
                t.handle.send_signal(sig)
            end = time.monotonic() + grace
            while time.monotonic() < end and any(t.ended is None for t in self.tasks):
                self.reap()
                time.sleep(0.02)
        self.reap()
        if self.t_stop == 0.0:
            self.t_stop = time.monotonic()

    stop_signal = signal.SIGINT

    # A foreground that runs part of its work with the background stopped sets this; the run
    # then stops the background and calls `background_stopped()` (stress-highalloc's rest pass).
    wants_background_stopped = False

    def background_stopped(self) -> None:
        """The run has stopped the background (or had none)."""

    # --- helpers -------------------------------------------------------------------------------

    def spawn(self, slot: int, comm: str, argv: list[str]) -> Task:
        handle = self.backend.spawn(argv, cgroup=self.cgroup)
        self.backend.track_process(handle.pid)
        task = Task(slot, comm, handle, time.monotonic())
        self.tasks.append(task)
        return task

    def reap(self) -> None:
        for t in self.tasks:
            if t.ended is None:
                rc = t.handle.poll()
                if rc is not None:
                    t.ended = time.monotonic()
                    t.returncode = rc
                    t.stdout, t.stderr = t.handle.output()
                    t.handle.close()

    def finish_time(self) -> None:
        if self.t_stop == 0.0 and self.tasks and all(t.ended is not None for t in self.tasks):
            self.t_stop = max(t.ended or 0.0 for t in self.tasks)

    @property
    def elapsed_s(self) -> float:
        return max((self.t_stop or time.monotonic()) - self.t_start, 1e-6)

    def cpu_tasks(self) -> list[tuple[int, str, float, float]]:
        """(pid, comm, user_s, sys_s) of each finished process."""
        out = []
        for t in self.tasks:
            ru = t.handle.rusage()
            if ru is not None:
                out.append((t.handle.pid, t.comm, ru[0], ru[1]))
        return out

    def failures(self, allowed: tuple[int, ...] = (0,)) -> list[str]:
        return [
            f"{t.comm} (pid {t.handle.pid}) exited {t.returncode}: {t.stderr.strip()[-300:]}"
            for t in self.tasks
            if not t.stopped and t.returncode not in allowed
        ]

    @abstractmethod
    def metrics(self) -> dict[str, Any]: ...

    def track_new_file(self, path: str) -> bool:
        """Journal `path` for deletion unless it exists already (a user's file is never deleted).
        Returns True if the run will create it."""
        if self.backend.exists(path):
            return False
        self.backend.track_file(path)
        return True

    def data_dir(self) -> str:
        d = self.params["dir"].rstrip("/") or "/"
        missing = []
        parent = d
        while parent not in ("", "/") and not self.backend.exists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        for path in reversed(missing):  # outermost first; restore removes them innermost first
            self.backend.track_dir(path)  # removed (if empty) by restore
            self.backend.mkdir(path)
        return d


def make_file(backend: KernelBackend, path: str, size_mb: int, block_kb: int = 1024,
              log: Callable[[str], None] = lambda s: None, nth: str = "") -> None:  # fmt: skip
    """A zero-filled file written to disk (conv=fdatasync), as the seeds' test files are."""
    log(f"  writing {path} ({size_mb} MiB{', ' + nth if nth else ''}) …")
    count = max(1, size_mb * 1024 // block_kb)
    backend.check_run_journaled(["dd", "if=/dev/zero", f"of={path}", f"bs={block_kb}K", f"count={count}", "conv=fdatasync", "status=none"])


# --- dd readers (seed 000) ---------------------------------------------------------------------


class DdRead(Workload):
    """Parallel dd readers, one file per task, buffered or O_DIRECT, for run.duration_s (each
    dd is restarted on its file when it reaches the end)."""

    kind = "dd"
    until_stopped = True

    def files(self) -> list[str]:
        n = self.params["tasks"]
        given = self.params.get("files") or []
        if given:
            if len(given) < n:
                raise BackendError(f"workload.files lists {len(given)} file(s) for {n} dd tasks")
            return given[:n]
        if self.params["file_mb"] <= 0:
            raise BackendError("workload.file_mb: a live run makes each dd task's file; give its size in MiB (or list workload.files)")
        return [f"{self.params['dir']}/dd-{i}-{self.params['file_mb']}m.dat" for i in range(n)]

    def prepare(self, log: Callable[[str], None] = lambda s: None) -> None:
        if self.params.get("files"):
            missing = [f for f in self.files() if not self.backend.exists(f)]
            if missing:
                raise BackendError(f"workload.files: {', '.join(missing)} do not exist")
            return
        self.data_dir()
        files = self.files()
        for i, path in enumerate(files):
            if self.track_new_file(path):
                make_file(self.backend, path, self.params["file_mb"], log=log, nth=f"{i + 1} of {len(files)}")

    def argv(self, path: str) -> list[str]:
        argv = ["dd", f"if={path}", "of=/dev/null", f"bs={self.params['block_kb']}K"]
        return argv + (["iflag=direct"] if self.params["direct"] else [])

    def launch(self) -> None:
        for i, path in enumerate(self.files()):
            self.spawn(i, "dd", self.argv(path))

    def step(self, deadline: float | None) -> bool:
        self.reap()
        for t in list(self.tasks):
            if t.ended is not None and t.returncode == 0 and not self._restarted(t):
                if deadline is None or time.monotonic() < deadline:
                    self.spawn(t.slot, "dd", self.argv(self.files()[t.slot]))
        done = all(t.ended is not None for t in self.tasks)
        if done:
            self.finish_time()
        return done

    def _restarted(self, t: Task) -> bool:
        return any(o.slot == t.slot and o.started > t.started for o in self.tasks)

    def metrics(self) -> dict[str, Any]:
        per_slot = [0] * self.params["tasks"]
        for t in self.tasks:
            m = DD_BYTES.search(t.stderr)
            per_slot[t.slot] += int(m.group(1)) if m else 0
        total = sum(per_slot)
        return {
            "tasks": self.params["tasks"],
            "bytes": total,
            "throughput_kB_s": round(total / 1024 / self.elapsed_s, 1),
            "task_bytes": per_slot,
        }


# --- dd writers (simple-writeback) -------------------------------------------------------------


class DdWrite(Workload):
    """simple-writeback: N dd writers at once, each writing `jobs` files of file_mb one after
    the other (a dd each, as the simulated writer does); mean per-job elapsed. The scenario
    check refuses jobs = 0 (until stopped) for a live run.

    With `cpu_factors`, mmtests' shellpack-bench-simple-writeback (gormanm/mmtests 7ed65ad9),
    as the simulated one runs it (crates/reclaim-sim/src/workload/dd_write.rs): one round per
    CPU factor of `tasks × factor` dd jobs started together, each writing
    `FILESIZE / NR_JOBS / BS` blocks (FILESIZE = file_mb × tasks MiB, BS = block_kb KiB) to
    its own file; the jobs are waited for in order, each one's file removed once it has
    exited, then `sleep 1` before the next round. `elapsed_s` is the whole test's."""

    kind = "dd-write"

    def __post_init__(self) -> None:
        self._rounds = simple_writeback_rounds(self.params) if self.params.get("cpu_factors") else []
        self._round = 0  # the round running (or, after the last, len(_rounds))
        self._waited = 0  # jobs of the round waited for and their files removed
        self._round_tasks: list[list[Task]] = []
        self._round_times: list[tuple[float, float]] = []
        self._sleep_until: float | None = None
        self._test_end: float | None = None

    def launch(self) -> None:
        self.data_dir()
        if self._rounds:
            self._launch_round()
            return
        for i in range(self.params["tasks"]):
            self._write(i, 0)

    def _path(self, writer: int, job: int) -> str:
        return f"{self.params['dir'].rstrip('/')}/writeback-{os.getpid()}-{writer}-{job}.dat"

    def _write(self, writer: int, job: int, count: int | None = None) -> Task:
        bs = self.params["block_kb"]
        if count is None:
            count = max(1, self.params["file_mb"] * 1024 // bs)
        path = self._path(writer, job)
        self.track_new_file(path)
        argv = ["dd", "if=/dev/zero", f"of={path}", f"ibs={bs}K", f"obs={bs}K", f"count={count}"]
        if self.params["conv"]:
            argv.append(f"conv={self.params['conv']}")
        return self.spawn(writer, "dd", argv)

    def _launch_round(self) -> None:
        """`dd … &` for each job of the round (the file of job j of round r: writer j, job r)."""
        r = self._rounds[self._round]
        start = time.monotonic()
        self._round_tasks.append([self._write(j, self._round, r["blocks"]) for j in range(r["jobs"])])
        self._round_times.append((start, start))
        self._waited = 0

    def step(self, deadline: float | None) -> bool:
        """A writer whose dd ended well starts its next file, until it has written `jobs`;
        with `cpu_factors`, the shellpack's loop (`_step_rounds`)."""
        self.reap()
        if self._rounds:
            return self._step_rounds()
        jobs = self.params["jobs"]
        done = True
        for writer in range(self.params["tasks"]):
            mine = [t for t in self.tasks if t.slot == writer]
            last = mine[-1]
            if last.ended is None:
                done = False
            elif last.returncode == 0 and len(mine) < jobs:
                self._write(writer, len(mine))
                done = False
        if done:
            self.finish_time()
        return done

    def _step_rounds(self) -> bool:
        """`wait $JOBPID; rm file-$JOB` in job order, then `sleep 1`, then the next round;
        done after the last round's sleep."""
        if self._test_end is not None:
            return True
        now = time.monotonic()
        if self._sleep_until is not None:
            if now < self._sleep_until:
                return False
            self._sleep_until = None
            self._round += 1
            if self._round == len(self._rounds):
                self._test_end = now
                self.t_stop = now
                return True
            self._launch_round()
            return False
        tasks = self._round_tasks[self._round]
        while self._waited < len(tasks) and tasks[self._waited].ended is not None:
            path = self._path(self._waited, self._round)
            if self.backend.exists(path):
                self.backend.unlink(path)
            self._waited += 1
        if self._waited < len(tasks):
            return False
        start, _ = self._round_times[self._round]
        self._round_times[self._round] = (start, time.monotonic())
        self._sleep_until = time.monotonic() + 1.0
        return False

    def metrics(self) -> dict[str, Any]:
        elapsed = [t.elapsed for t in self.tasks if t.ended is not None]
        mean = sum(elapsed) / len(elapsed) if elapsed else 0.0
        sd = math.sqrt(sum((e - mean) ** 2 for e in elapsed) / len(elapsed)) if elapsed else 0.0
        written = sum(int(m.group(1)) for t in self.tasks if (m := DD_BYTES.search(t.stderr)))
        out: dict[str, Any] = {
            "tasks": self.params["tasks"],
            "jobs": len(elapsed),
            "job_elapsed_mean_s": round(mean, 3),
            "job_elapsed_stddev_pct": round(sd * 100 / mean, 2) if mean else 0.0,
            "bytes": written,
            "throughput_kB_s": round(written / 1024 / self.elapsed_s, 1),
        }
        if self._rounds:
            out.update(self._round_metrics())
        return out

    def _round_metrics(self) -> dict[str, Any]:
        """The whole test's elapsed time (None until it completed) and each round's mean job
        elapsed time and its standard deviation in % of the mean, the simulated run's keys."""
        rounds = []
        for n, r in enumerate(self._rounds):
            tasks = self._round_tasks[n] if n < len(self._round_tasks) else []
            times = [t.elapsed for t in tasks if t.ended is not None and not t.stopped]
            finished = n < self._round or self._test_end is not None
            took = self._round_times[n][1] - self._round_times[n][0] if finished and n < len(self._round_times) else None
            mean = sum(times) / len(times) if times else 0.0
            sd = math.sqrt(sum((t - mean) ** 2 for t in times) / len(times)) if times else 0.0
            rounds.append({
                "cpu_factor": r["cpu_factor"], "jobs": r["jobs"], "bytes_per_job": r["blocks"] * self.params["block_kb"] * 1024,
                "jobs_done": len(times), "job_elapsed_mean_s": round(mean, 3),
                "job_elapsed_stddev_pct": round(sd * 100 / mean, 2) if mean else 0.0,
                "elapsed_s": None if took is None else round(took, 3),
            })  # fmt: skip
        done = self._test_end is not None
        return {
            "completed": done,
            "elapsed_s": round(self._test_end - self.t_start, 3) if self._test_end is not None else None,
            "rounds": rounds,
        }


def simple_writeback_rounds(params: dict[str, Any]) -> list[dict[str, int]]:
    """shellpack-bench-simple-writeback's rounds (the simulator's `simple_writeback_rounds`):
    `NR_JOBS = NUMCPUS × CPU_FACTOR` (`tasks` for NUMCPUS) and `FILESIZE_JOB_CHUNKS =
    FILESIZE / NR_JOBS / BS`, shell integer division, FILESIZE = file_mb × tasks MiB and
    BS = block_kb KiB."""
    tasks, bs = params["tasks"], params["block_kb"] * 1024
    filesize = (params["file_mb"] * tasks) << 20
    return [{"cpu_factor": f, "jobs": tasks * f, "blocks": filesize // (tasks * f) // bs} for f in params["cpu_factors"]]


# --- fs_mark (seed 001) ---------------------------------------------------------------------------


class FsMark(Workload):
    """fs_mark -S0: `threads` helpers running fs_mark's loop (reclaimlab.live.fs_mark), each in
    its own directory, which the run removes with everything in it when it restores."""

    kind = "fs_mark"

    def launch(self) -> None:
        d = self.data_dir()
        p = self.params
        for i in range(p["threads"]):
            top = f"{d}/fsmark-{os.getpid()}-{i}"
            if self.backend.exists(top):
                raise BackendError(f"{top} exists; fs_mark writes only into a directory it makes")
            self.backend.track_tree(top)
            self.backend.mkdir(top)
            argv = [*HELPER, "fs_mark", "--dir", top, "--dirs", str(p["dirs"]), "--files-per-dir", str(p["files_per_dir"]),
                    "--files", str(p["files"]), "--loops", str(p["loops"]), "--file-size", str(p["file_size"]),
                    "--block-bytes", str(p["block_kb"] * 1024)]  # fmt: skip
            self.spawn(i, "fs_mark", argv)

    def metrics(self) -> dict[str, Any]:
        return fs_mark_metrics(self.params, [t.stdout for t in self.tasks], self.t_start, [t.ended for t in self.tasks])


def fs_mark_metrics(params: dict[str, Any], outputs: list[str], t_start: float, ended: list[float | None]) -> dict[str, Any]:
    """The simulator's fs_mark metrics from the threads' loop lines: a loop's Files/s is the sum
    of each thread's, for the loops every thread finished."""
    per_thread = [[json.loads(line) for line in out.splitlines() if line.startswith("{")] for out in outputs]
    loops_done = min((len(t) for t in per_thread), default=0)
    rates = [round(sum(t[i]["files_per_sec"] for t in per_thread), 2) for i in range(loops_done)]
    files = sum(r["files"] for t in per_thread for r in t)
    last = max((e for e in ended if e is not None), default=t_start)
    return {
        "threads": params["threads"],
        "loops_done": loops_done,
        "completed": loops_done == params["loops"],
        "files": files,
        "files_per_sec": rates,
        "files_per_sec_mean": round(sum(rates) / len(rates), 2) if rates else 0.0,
        "elapsed_s": round(last - t_start, 3),
        "bytes": files * params["file_size"],
    }


# --- usemem (seed 002) ---------------------------------------------------------------------------


class Usemem(Workload):
    """vm-scalability usemem: N processes, each mapping and writing size_mb of anonymous memory.

    usemem -n N forks its N children together, and the simulated processes start together
    too; each of these is a Python helper that takes tens of milliseconds to start, so they
    all wait for the run's common start time (`start_at_ns`) before they map their memory.
    Started one by one, the first ones had their memory before the others began, which
    decided which of them kept it (docs/fidelity/host.md)."""

    kind = "usemem"
    stop_signal = signal.SIGTERM

    def launch(self) -> None:
        p = self.params
        for i in range(p["tasks"]):
            argv = [*HELPER, "usemem", "--size-mb", str(p["size_mb"]), "--repeats", str(p["repeats"]), "--runtime-s", str(p["runtime_s"])]
            argv += ["--start-at-ns", str(self.start_at_ns)]
            self.spawn(i, "usemem", argv + (["--random"] if p["random"] else []))
        # Its time runs from the common start (time.monotonic is CLOCK_MONOTONIC too).
        if self.start_at_ns:
            self.t_start = max(self.t_start, self.start_at_ns / 1e9)

    def metrics(self) -> dict[str, Any]:
        results = []
        for t in self.tasks:
            line = t.stdout.strip().splitlines()[-1:] if t.returncode == 0 else []
            if line:
                results.append(json.loads(line[0]))
        return {
            "tasks": self.params["tasks"],
            "random": self.params["random"],
            "completed_tasks": len(results),
            "throughput_kB_s": sum(r["kb_s"] for r in results),
            "bytes": sum(r["bytes"] for r in results),
            "task_kB_s": [r["kb_s"] for r in results],
            "free_usecs": [r["free_usecs"] for r in results],
            # How long after the common start each task began (it was not ready in time).
            "start_late_ms": [round(max(0, r["start_ns"] - self.start_at_ns) / 1e6, 3) for r in results if "start_ns" in r] if self.start_at_ns else [],
            "latency_us": latency_us(results),
        }


def latency_us(results: list[dict[str, Any]]) -> dict[str, float]:
    """The tasks' access latencies added up (each task's `latency_hist`: [bucket floor ns,
    count] pairs, the simulator's buckets): the average and the percentiles in µs, as the
    simulated usemem's `latency_us`, by the simulator's own code."""
    buckets = [(floor, n) for r in results for floor, n in r.get("latency_hist", [])]
    sum_ns = sum(r.get("latency_sum_ns", 0) for r in results)
    return json.loads(_core.live.usemem_latency_us(buckets, sum_ns))


# --- mapped-file-stream ------------------------------------------------------------------------


class MappedFileStream(Workload):
    kind = "mapped-file-stream"
    stop_signal = signal.SIGTERM

    def launch(self) -> None:
        d = self.data_dir()
        for i in range(self.params["tasks"]):
            path = f"{d}/clog-{os.getpid()}-{i}"
            self.track_new_file(path)  # the helper unlinks it at once; this covers a kill before
            write = ["--write"] if self.params.get("write") else []
            self.spawn(i, "mapped-file-stream", [*HELPER, "mapped-file-stream", "--path", path, "--size-mb", str(self.params["size_mb"]), *write])

    def metrics(self) -> dict[str, Any]:
        results = [json.loads(t.stdout.strip().splitlines()[-1]) for t in self.tasks if t.returncode == 0 and t.stdout.strip()]
        task_elapsed_s = [round(r["usecs"] / 1e6, 3) for r in results]
        return {
            "tasks": self.params["tasks"],
            "pages": sum(r["pages"] for r in results),
            "task_elapsed_s": task_elapsed_s,
            "elapsed_s": max(task_elapsed_s, default=0.0),
        }


# --- stutter -----------------------------------------------------------------------------------


def latency_samples_ms(text: str) -> list[float]:
    """ExtractStutter: each `count avg_ns` line is `count` samples of avg/1e6 ms."""
    out: list[float] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            out.extend([int(parts[1]) / 1e6] * int(parts[0]))
    return out


class Stutter(Workload):
    """mmtests stutter: the mmap latency probe runs throughout; each iteration starts a memhog,
    lets it settle, times `cp source dest; sync`, then kills the memhog."""

    kind = "stutter"

    def __post_init__(self) -> None:
        self.iteration = 0
        self.phase = "idle"
        self.phase_since = 0.0
        self.copy_times: list[float] = []
        self.probe: Task | None = None
        self.memhog: Task | None = None
        self.copy: Task | None = None

    def source(self) -> str:
        return f"{self.params['dir']}/stutter-source-file"

    def prepare(self, log: Callable[[str], None] = lambda s: None) -> None:
        self.data_dir()
        if self.track_new_file(self.source()):
            make_file(self.backend, self.source(), self.params["file_mb"], self.params["block_kb"], log=log)

    def launch(self) -> None:
        self.probe = self.spawn(0, "mmap-latency", [*HELPER, "mmap-latency", "--duration-s", "86400", "--pages", str(self.params["probe_pages"])])
        self._next_iteration()

    def _next_iteration(self) -> None:
        self.memhog = self.spawn(1, "memhog", [*HELPER, "memhog", "--size-mb", str(self.params["memhog_mb"])])
        self.phase, self.phase_since = "settle", time.monotonic()

    def step(self, deadline: float | None) -> bool:
        self.reap()
        now = time.monotonic()
        if self.probe is not None and self.probe.ended is not None:
            raise BackendError(f"the latency probe died: {self.probe.stderr.strip()[-300:]}")
        if self.phase == "settle":
            assert self.memhog is not None
            if self.memhog.ended is not None:
                raise BackendError(f"the memhog died (OOM?): {self.memhog.stderr.strip()[-300:]}")
            if now - self.phase_since >= self.params["settle_s"] and "ready" in self.memhog.handle.output()[0]:
                dest = f"{self.params['dir']}/stutter-ddfile-{os.getpid()}"
                self.track_new_file(dest)
                self.copy = self.spawn(2, "cp", ["/bin/sh", "-c", 'cp "$0" "$1" && sync', self.source(), dest])
                self.phase = "copy"
        elif self.phase == "copy":
            assert self.copy is not None and self.memhog is not None
            if self.copy.ended is not None:
                self.copy_times.append(self.copy.elapsed)
                self.memhog.handle.send_signal(signal.SIGKILL)
                self.iteration += 1
                if self.iteration < self.params["iterations"]:
                    self._next_iteration()
                else:
                    self.phase = "done"
                    self.t_stop = time.monotonic()
        return self.phase == "done"

    def metrics(self) -> dict[str, Any]:
        lat = latency_samples_ms(self.probe.stdout if self.probe else "")
        file_mib = self.params["file_mb"]
        return {
            "iterations": len(self.copy_times),
            "mmap_latency_ms": {
                "samples": len(lat),
                "mean": round(sum(lat) / len(lat), 4) if lat else 0.0,
                "p50": round(_core.quantile(lat, 0.50), 4),
                "p95": round(_core.quantile(lat, 0.95), 4),
                "p99": round(_core.quantile(lat, 0.99), 4),
                "max": round(max(lat), 4) if lat else 0.0,
                "delayed": sum(1 for x in lat if x > 5.0),
                # mmtests' latency table (SummariseVariabletime), as the simulated stutter's.
                "mmtests": {label: round(v, 4) for label, v in _core.latency_rows(lat)},
            },
            "copy_elapsed_s": [round(t, 3) for t in self.copy_times],
            "tput_MiB_s": [round(file_mib / (t + 1), 2) for t in self.copy_times],
        }

    def failures(self, allowed: tuple[int, ...] = (0,)) -> list[str]:
        # The probe ends on SIGINT and memhogs are killed by design; only copies must succeed.
        return [f"cp exited {t.returncode}: {t.stderr.strip()[-300:]}" for t in self.tasks if t.comm == "cp" and not t.stopped and t.returncode != 0]


# --- stress-highalloc (seed 003) ------------------------------------------------------------------


class StressHighalloc(Workload):
    """mmtests stress-highalloc through the hugetlb pool, as the simulated workload
    (crates/reclaim-sim/src/workload/stress_highalloc.rs, whose keys and metrics these are):
    passes `load-1`, `load-2`, … under the background, then `rest` once the run has stopped
    it. Each attempt writes nr_hugepages + 1 to /proc/sys/vm/nr_hugepages and reads it back,
    timed: a success if the pool grew. After each pass, and when stopped (an interrupted run
    too), the pool is written back to the value it had at the start; the journal holds that
    value from before the first write, so `live restore` writes it back after a kill.

    The attempts run in a thread of this process (the run loop keeps sampling and stepping the
    background meanwhile); a write can block in the kernel for seconds while it reclaims and
    compacts, and stopping waits for the write under way."""

    kind = "stress-highalloc"

    def __post_init__(self) -> None:
        self.passes: list[tuple[str, list[tuple[bool, float]]]] = []
        self.numpages = 0
        self.start_pages = 0
        self.halt = threading.Event()
        self.bg_stopped = threading.Event()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.done = False

    def launch(self) -> None:
        b = self.backend
        if not b.exists(NR_HUGEPAGES):
            raise BackendError(f"{NR_HUGEPAGES} does not exist: this kernel has no hugetlb pool")
        self.start_pages = int(b.read_value(NR_HUGEPAGES))
        info = b.meminfo()
        self.numpages = _core.live.highalloc_count(info["MemTotal"], b.hugepage_bytes(), self.params["percent"])
        self.interval_s = _core.live.highalloc_interval_s(self.params["mb_per_sec"]) * b.hugepage_bytes() / (2 << 20)
        # Journaled before the first write: a killed run's restore writes the start value back.
        b.record({"op": "write", "path": NR_HUGEPAGES, "old": str(self.start_pages)})
        self.thread = threading.Thread(target=self._run, name="stress-highalloc", daemon=True)
        self.thread.start()

    def _wait(self, seconds: float) -> bool:
        """Sleep `seconds` unless stopped; False if stopped."""
        return not self.halt.wait(max(0.0, seconds))

    def _run(self) -> None:
        p = self.params
        try:
            if not self._wait(p["warmup_s"]):
                return
            load = p["load_passes"]
            for i in range(load + 1):
                if i == load:
                    if not self._wait(p["rest_after_s"]):
                        return
                    self.wants_background_stopped = True
                    while not self.bg_stopped.wait(0.05):
                        if self.halt.is_set():
                            return
                elif i > 0 and not self._wait(p["pass_gap_s"]):
                    return
                name = f"load-{i + 1}" if i < load else "rest"
                attempts: list[tuple[bool, float]] = []
                self.passes.append((name, attempts))
                try:
                    self._pass(attempts)
                finally:
                    self._restore_pool()
                if self.halt.is_set():
                    return
        except BaseException as e:  # reported by step() in the run's thread
            self.error = e
        finally:
            self.done = True

    def _pass(self, attempts: list[tuple[bool, float]]) -> None:
        b = self.backend
        interval = self.interval_s
        limit = self.params["pass_limit_s"]
        started = time.monotonic()
        pages = int(b.read_value(NR_HUGEPAGES))
        for _ in range(self.numpages):
            t0 = time.monotonic()
            if self.halt.is_set() or (limit > 0 and t0 - started >= limit):
                return
            b.write_text(NR_HUGEPAGES, str(pages + 1))
            got = int(b.read_value(NR_HUGEPAGES))
            attempts.append((got > pages, (time.monotonic() - t0) * 1000.0))
            pages = got
            if not self._wait(t0 + interval - time.monotonic()):
                return

    def _restore_pool(self) -> None:
        """The pool back to its size at the start; a shrink only frees pages, so it cannot fail
        short (the read-back says if it did)."""
        self.backend.write_text(NR_HUGEPAGES, str(self.start_pages))
        left = int(self.backend.read_value(NR_HUGEPAGES))
        if left != self.start_pages:
            raise BackendError(f"{NR_HUGEPAGES} is {left} after writing back {self.start_pages}")

    def background_stopped(self) -> None:
        self.bg_stopped.set()

    def step(self, deadline: float | None) -> bool:
        if self.error is not None:
            error, self.error = self.error, None
            raise BackendError(f"stress-highalloc: {error}") from error
        if self.done and self.t_stop == 0.0:
            self.t_stop = time.monotonic()
        return self.done

    def stop(self) -> None:
        self.halt.set()
        if self.thread is not None:
            self.thread.join()
        if self.t_stop == 0.0:
            self.t_stop = time.monotonic()
        if self.thread is not None:
            self._restore_pool()

    def metrics(self) -> dict[str, Any]:
        return json.loads(_core.live.highalloc_metrics([(name, a) for name, a in self.passes], self.numpages))


KINDS: dict[str, type[Workload]] = {
    "dd": DdRead,
    "dd-write": DdWrite,
    "fs_mark": FsMark,
    "usemem": Usemem,
    "mapped-file-stream": MappedFileStream,
    "stutter": Stutter,
    "stress-highalloc": StressHighalloc,
}


def make(params: dict[str, Any], backend: KernelBackend) -> Workload:
    return KINDS[params["kind"]](params=params, backend=backend)
