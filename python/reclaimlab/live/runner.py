"""A live run: check the machine, make the scenario's changes (journaled), run the workload
under the monitors, write the run directory, and undo every change — whatever happens.
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from reclaimlab import _core, host
from reclaimlab.interrupts import signals_blocked, signals_unwind
from reclaimlab.live import workloads
from reclaimlab.live.backend import SYSCTLS, BackendError, Cgroup, KernelBackend, MiB
from reclaimlab.live.journal import Journal, JournalError, journal_path, pid_alive
from reclaimlab.live.samplers import Samplers, TaskTracker
from reclaimlab.live.scenario import LiveScenario, LiveSweep
from reclaimlab.live.summary import vmstat_metrics
from reclaimlab.live.tracefs import TraceSession, tracefs_supported
from reclaimlab.rundir import label_dir, parse_vmstat, vmstat_delta, write_json, write_scenario, write_text, write_vmstat

DEFAULT_TIMEOUT_S = 600.0
# Time given to a workload's tasks to start before they begin together (a Python helper
# takes 40-70 ms here; several of them share the CPUs).
START_LEAD_S = 0.5
LATE_START_WARN_MS = 50.0  # a task this late began on its own, not with the others
BACKGROUND_GRACE_S = 10.0  # after the foreground ends, before the backgrounds are stopped


class LiveError(RuntimeError):
    """The run cannot start or failed; the message says why and what to do."""


# --- refusing to start -------------------------------------------------------------------------


def preflight(backend: KernelBackend, scenario: LiveScenario) -> list[str]:
    """Reasons this machine cannot run `scenario` now, each with what to do; empty if it can."""
    problems = []
    if backend.euid() != 0:
        problems.append("live runs change kernel settings and need root: run it as root (sudo)")
    try:
        existing = Journal.load(journal_path())
    except JournalError as e:
        existing, problems = None, problems + [str(e)]
    if existing is not None:
        problems.append(
            f"an earlier live run (pid {existing.pid}) left unrestored changes in "
            f"{journal_path()}: run `reclaimlab live restore` first"
        )
    if problems:
        return problems  # the checks below read files only root may read
    mem = scenario.memory
    parent = backend.memcg_parent()
    if mem["mode"] == "cgroup" and parent is None:
        problems.append("memory.mode = \"cgroup\" but no memory cgroup is usable here: use \"squeeze\" or mount the memory controller")
    if mem.get("high_mb") and parent is not None and parent[0] == 1:
        problems.append("memory.high_mb: this machine's memory cgroup is v1, which has no memory.high; remove the key or use cgroup v2")
    if mem["mode"] == "squeeze":
        try:
            backend.squeeze_plan(mem["free_mb"] * MiB, mem["margin_mb"] * MiB)
        except BackendError as e:
            problems.append(str(e))
    if scenario.workload["kind"] == "stress-highalloc":
        problem = highalloc_capacity(backend, scenario)
        if problem:
            problems.append(problem)
    if scenario.workload["kind"] == "mapped-file-stream" and scenario.workload.get("write"):
        problem = mapped_write_capacity(backend, scenario)
        if problem:
            problems.append(problem)
    if scenario.run["trace"] and not tracefs_supported(backend):
        problems.append("run.trace = true but this kernel has no tracefs: set run.trace = false")
    for key in scenario.sysctl:
        if not backend.exists(SYSCTLS[key]):
            problems.append(f"sysctl.{key}: {SYSCTLS[key]} does not exist on this kernel; drop the key")
    paths = [a["path"] for a in scenario.swap_areas if a["kind"] == "file" and a["path"]]
    if len(paths) != len(set(paths)):
        problems.append(f"two swap areas name the same file ({', '.join(sorted(p for p in set(paths) if paths.count(p) > 1))}): give each its own swap.path")
    if any(a["kind"] == "zram" for a in scenario.swap_areas) and not (backend.exists("/sys/block/zram0") or backend.exists("/sys/class/zram-control")):
        if backend.run(["modprobe", "-n", "zram"]).returncode != 0:
            problems.append("swap.kind = \"zram\" but this kernel has no zram: use kind = \"file\"")
    return problems


def mapped_write_capacity(backend: KernelBackend, scenario: LiveScenario) -> str:
    """Why the filesystem of `workload.dir` cannot hold what vmscan-file-mmap-write writes, or
    "". Every page of every task's sparse file is stored once, so written back at most once:
    tasks × size_mb, which must leave a tenth of what is free for the rest of the machine."""
    w = scenario.workload
    need = w["tasks"] * w["size_mb"] * MiB
    free = backend.disk_free_bytes(w["dir"])
    if need <= free * 9 // 10:
        return ""
    fits = free * 9 // 10 // (w["tasks"] * MiB)
    return (
        f"workload.size_mb: {w['tasks']} tasks × {w['size_mb']} MiB may write {need // MiB} MiB to "
        f"{w['dir']}, whose filesystem has {free // MiB} MiB free (a tenth kept for the rest of the "
        f"machine): expected size_mb at most {fits}, or another workload.dir"
    )


def highalloc_capacity(backend: KernelBackend, scenario: LiveScenario) -> str:
    """Why this machine cannot hold stress-highalloc's passes beside its backgrounds, or "".

    A pass keeps every huge page it got until it ends, and its attempts reclaim and compact
    until the kernel gives up: a pass of `numpages` attempts can hold numpages huge pages.
    Together with the usemem backgrounds' anonymous memory (resident: it is written over and
    over) they must leave `memory.margin_mb` of what the run has — `memory.free_mb` under a
    squeeze (whose hugetlb pages stay reserved: the passes count from the pool they find and
    write it back after each pass), MemAvailable otherwise — for the rest of the machine, as
    the squeeze itself does; else the rest of the machine, not the workload, would be what
    runs out of memory."""
    mem = scenario.memory
    info = backend.meminfo()
    hpage = backend.hugepage_bytes()
    numpages = _core.live.highalloc_count(info["MemTotal"], hpage, scenario.workload["percent"])
    anon = sum(bg["tasks"] * bg["size_mb"] * MiB for bg in scenario.backgrounds if bg["kind"] == "usemem")
    squeezed = mem["mode"] == "squeeze"
    room = mem["free_mb"] * MiB if squeezed else info["MemAvailable"]
    margin = mem["margin_mb"] * MiB
    if numpages * hpage + anon + margin <= room:
        return ""
    fits = max(0, (room - margin - anon) // hpage)
    percent = next((p for p in range(100, 0, -1) if _core.live.highalloc_count(info["MemTotal"], hpage, p) <= fits), 0)
    what = "memory.free_mb under the squeeze" if squeezed else "MemAvailable"
    return (
        f"workload.percent: {scenario.workload['percent']} % of MemTotal is {numpages} huge pages "
        f"({numpages * hpage // MiB} MiB) a pass may hold; with the usemem backgrounds' {anon // MiB} MiB "
        f"that leaves less than memory.margin_mb ({mem['margin_mb']} MiB) of the {room // MiB} MiB this run has "
        f"({what}): expected percent at most {percent}"
        + ("" if percent else " (none fits: raise memory.free_mb or shrink the backgrounds)")
    )


def _swapon(backend: KernelBackend, swap: dict[str, Any], index: int, log: Log) -> tuple[str, str | None]:
    """Add swap area `index` of the scenario (a swap file or a zram device): its path, and
    the block device it marked non-rotational, if it did."""
    if swap["kind"] == "zram":
        dev = backend.add_zram(swap["size_mb"] * MiB, swap["priority"])
        log(f"  swap {dev}, {swap['size_mb']} MiB, priority {swap['priority']}")
        return dev, None
    suffix = f"-{index}" if index else ""
    path = swap["path"] or f"/var/tmp/reclaimlab-swap-{os.getpid()}{suffix}.img"
    marked = None
    if swap["nonrotational"]:
        # swapon decides SSD vs rotational (and so whether VMA readahead may be used) from
        # the queue flag at swapon time, so it must be set first.
        marked = backend.block_device_of(os.path.dirname(path) or ".")
        backend.set_rotational(marked, False)
    backend.add_swapfile(path, swap["size_mb"] * MiB, swap["priority"])
    log(f"  swap file {path}, {swap['size_mb']} MiB, priority {swap['priority']}")
    return path, marked


# --- the run -----------------------------------------------------------------------------------


@dataclass
class PointResult:
    label: str
    rundir: Path
    result: dict[str, Any]


Log = Callable[[str], None]
Tick = Callable[[str, float, float | None], None]


def run(
    backend: KernelBackend,
    scenario: LiveSweep,
    outdir: Path,
    log: Log = print,
    tick: Tick | None = None,
    force: bool = False,
) -> list[PointResult]:
    """Run every point of `scenario` into `outdir` (one directory per sweep point); `tick`, if
    given, is called while a workload runs with (point label, seconds so far, planned seconds).
    Refuses before changing anything if a point's directory already holds a run, unless `force`."""
    if not force:
        for label, _ in scenario.points():
            try:
                _core.check_run_dir_free(label_dir(outdir, label))
            except FileExistsError as e:
                raise LiveError(str(e))
    try:
        _core.check_run_dir_free(outdir, force)
    except FileExistsError as e:
        raise LiveError(str(e))
    problems = [p for _, point in scenario.points() for p in preflight(backend, point)]
    problems = list(dict.fromkeys(problems))
    if problems:
        raise LiveError("refusing to start:\n  - " + "\n  - ".join(problems))
    results = []
    # Signals become exceptions before the journal exists and until the restore is over (during
    # which they are held), so no instance of SIGINT/SIGTERM can skip the undo.
    with signals_unwind():
        try:
            journal = Journal.create(journal_path(), scenario=scenario.name)
        except JournalError as e:
            raise LiveError(str(e))
        backend.journal = journal
        # The run is written into a hidden staging directory renamed to `outdir` at the end
        # (docs/rundir.md): with `force` an old run there is replaced whole, and only then.
        staging = Path(_core.staging_dir(outdir))
        try:
            # Input files for the largest point are made once, before any point's changes, so
            # every point reuses them; they are deleted (if the run made them) at the very end.
            prepare_inputs(backend, scenario, log)
            for label, point in scenario.points():
                mark = len(journal.entries)
                rundir = label_dir(outdir, label)
                log(f"[{scenario.name}{' ' + label if label else ''}] running into {rundir}")
                try:
                    done = run_point(backend, point, label_dir(staging, label), log, tick, name=rundir.name)
                    results.append(PointResult(done.label, rundir, done.result))
                finally:
                    with signals_blocked():
                        for line in backend.restore(journal, since=mark):
                            log(f"  restore: {line}")
        except BaseException:
            with signals_blocked():
                keep_what_was_written(staging, outdir)
            raise
        finally:
            with signals_blocked():
                for line in backend.restore(journal):
                    log(f"  restore: {line}")
            backend.journal = None
        _core.commit_run_dir(staging, outdir, force)
    return results


def keep_what_was_written(staging: Path, outdir: Path) -> None:
    """A failed or interrupted run keeps what it wrote (a live run's samples are written as
    they are taken), unless `outdir` holds an old run (`--force`), which is then kept. A run
    that failed before it measured anything (its points hold only their scenario.toml: the
    squeeze refused, a file could not be made) is not kept, so that the same command can be
    run again."""
    try:
        measured = any(p.is_file() and p.name != "scenario.toml" for p in staging.rglob("*"))
        if measured:
            _core.commit_run_dir(staging, outdir, False)
            return
    except OSError:
        pass
    shutil.rmtree(staging, ignore_errors=True)


def prepare_inputs(backend: KernelBackend, scenario: LiveSweep, log: Log = lambda s: None) -> None:
    """Every point's input files, made once for the sweep (a file another point already made
    is reused: its name carries what makes it differ, such as its size); `log` is told of
    each file as it is written."""
    for _, point in scenario.points():
        for params in (point.workload, *point.backgrounds):
            workloads.make(params, backend).prepare(log)


def apply_changes(backend: KernelBackend, scenario: LiveScenario, label: str, log: Log) -> tuple[Cgroup | None, dict[str, Any]]:
    """The scenario's machine settings, in an order whose reverse is a safe undo."""
    notes: dict[str, Any] = {}
    for key, value in scenario.sysctl.items():
        old = backend.set_sysctl(key, value)
        new = str(value).lower() if isinstance(value, bool) else str(value)
        log(f"  sysctl {key}: {old} -> {new}" + (" (unchanged)" if old == new else ""))
    for dev in scenario.live["nonrotational"]:
        backend.set_rotational(dev, False)
    for i, swap in enumerate(scenario.swap_areas):
        added, marked = _swapon(backend, swap, i, log)
        if i == 0:
            notes["swap"] = added
        else:
            notes.setdefault("swap_also", []).append(added)
        if marked is not None:
            notes["swap_device_nonrotational"] = marked
    if scenario.live["drop_caches"]:
        backend.drop_caches()
    mem = scenario.memory
    name = f"reclaimlab-{os.getpid()}" + (f"-{label}" if label else "")
    cgroup = None
    if mem["mode"] == "squeeze":
        pages = backend.squeeze(mem["free_mb"] * MiB, mem["margin_mb"] * MiB)
        info = backend.meminfo()
        notes["hugetlb_pages"] = pages
        notes["mem_available_mb"] = info["MemAvailable"] // MiB
        log(f"  squeeze: {pages} hugetlb pages reserved, {info['MemAvailable'] // MiB} MiB available")
    if backend.memcg_parent() is not None:
        # In every mode the workload runs in a cgroup of its own: restore kills it by cgroup.
        limit = mem["limit_mb"] * MiB if mem["mode"] == "cgroup" else None
        high = mem.get("high_mb", 0) * MiB or None
        cgroup = backend.create_memcg(name, limit, scenario.sysctl.get("swappiness"), high)
        notes["cgroup"] = cgroup.path
        if limit:
            log(f"  memory cgroup {cgroup.path}, limit {mem['limit_mb']} MiB" + (f", memory.high {mem['high_mb']} MiB" if high else ""))
    return cgroup, notes


class MemoryWatchdog:
    """Under a squeeze the rest of the machine shares what is left: if MemAvailable falls below
    a quarter of the margin, the run stops its workload before the OOM killer picks a victim
    (which could be anyone's process)."""

    PERIOD_S = 0.5

    def __init__(self, backend: KernelBackend, floor_bytes: int) -> None:
        self.backend = backend
        self.floor = floor_bytes
        self.next_check = 0.0
        self.reason = ""

    def tripped(self) -> bool:
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + self.PERIOD_S
        available = self.backend.meminfo()["MemAvailable"]
        if available < self.floor:
            self.reason = f"MemAvailable {available // MiB} MiB fell below {self.floor // MiB} MiB during the squeeze"
            return True
        return False


def run_point(backend: KernelBackend, scenario: LiveScenario, rundir: Path, log: Log, tick: Tick | None = None, name: str = "") -> PointResult:
    """One point into `rundir`; `name` (default: rundir's) names its cgroup and its progress."""
    name = name or rundir.name
    rundir.mkdir(parents=True, exist_ok=True)
    write_scenario(rundir / "scenario.toml", scenario.toml)
    fg = workloads.make(scenario.workload, backend)
    # Every background workload, in the scenario's order; each is started, stepped and stopped
    # beside the others, as the simulator's `WithBackground` runs its list.
    bgs = [workloads.make(params, backend) for params in scenario.backgrounds]
    for w in (fg, *bgs):
        w.prepare(log)  # before memory is constrained: creating input files is not the test
    cgroup, notes = apply_changes(backend, scenario, name, log)
    blocks = window_pageblocks(backend)
    if blocks is not None:
        write_json(rundir / "pageblocks.json", blocks)

    trace = None
    if scenario.run["trace"]:
        trace = TraceSession(backend, scenario.live["trace_events"], scenario.live["trace_buffer_kb"])
        trace.start(rundir / "trace.txt")
    tracker = TaskTracker(backend)
    tracker.begin()
    memcg_before = backend.memcg_counters(cgroup) if cgroup is not None else None
    before = backend.read_text("/proc/vmstat")
    fragmentation_before = read_fragmentation(backend, ("/proc/buddyinfo",))
    t0 = time.monotonic()
    samplers = Samplers(backend, rundir, scenario.run["sample_interval_s"], t0, cgroup.path if cgroup is not None else None)
    samplers.start()
    timed_out = False
    aborted = ""
    squeezed = scenario.memory["mode"] == "squeeze"
    watchdog = MemoryWatchdog(backend, scenario.memory["margin_mb"] * MiB // 4) if squeezed else None
    try:
        # A workload that runs until stopped (dd) stops after run.duration_s; the others end
        # by themselves, within live.timeout_s.
        duration = float(scenario.run["duration_s"]) if fg.until_stopped else 0.0
        deadline = t0 + duration if duration > 0 else None
        hard_stop = t0 + float(scenario.live.get("timeout_s", DEFAULT_TIMEOUT_S))
        # Workloads that can wait begin together, once every task has had time to start.
        start_at_ns = time.monotonic_ns() + int(START_LEAD_S * 1e9)
        fg.start(cgroup, start_at_ns)
        for bg in bgs:
            bg.start(cgroup, start_at_ns)
        bg_stopped_for_fg = False
        while not fg.step(deadline):
            if fg.wants_background_stopped and not bg_stopped_for_fg:
                # The foreground's next part runs without the background (stress-highalloc's
                # rest pass): stop every one of them now, as mmtests' `killall` does.
                for bg in bgs:
                    bg.stop()
                bg_stopped_for_fg = True
                fg.background_stopped()
            now = time.monotonic()
            if tick is not None:
                tick(name, now - t0, duration or None)
            if deadline is not None and now >= deadline:
                break
            if now >= hard_stop:
                timed_out = True
                log(f"  timeout: stopping the workload after {now - t0:.0f} s")
                break
            if watchdog is not None and watchdog.tripped():
                aborted = watchdog.reason
                log(f"  abort: {aborted}")
                break
            if not bg_stopped_for_fg:
                for bg in bgs:
                    bg.step(None)
            time.sleep(0.05)
        if bgs and not bg_stopped_for_fg:
            # A background usually has the same runtime: let each finish and report by itself.
            grace = time.monotonic() + BACKGROUND_GRACE_S
            while not all([bg.step(None) for bg in bgs]) and time.monotonic() < grace:
                time.sleep(0.05)
    finally:
        fg.stop()
        for bg in bgs:
            bg.stop()
        samplers.stop()
        after = backend.read_text("/proc/vmstat")
        zoneinfo = backend.read_text("/proc/zoneinfo")
        fragmentation_after = read_fragmentation(backend, ("/proc/buddyinfo", "/proc/pagetypeinfo"))
        try:
            memcg_after = backend.memcg_counters(cgroup) if cgroup is not None else None
        except OSError:
            memcg_after = None  # reported as absent; an error of the run itself must not be masked
        if trace is not None:
            trace.stop()
    write_vmstat(rundir / "vmstat.before", before)
    write_vmstat(rundir / "vmstat.after", after)
    write_text(rundir / "zoneinfo", zoneinfo)
    for file, text in fragmentation_before.items():
        write_text(rundir / f"{file}.before", text)
    for file, text in fragmentation_after.items():
        write_text(rundir / file, text)

    elapsed = fg.elapsed_s
    for w in (fg, *bgs):
        for pid, comm, user_s, sys_s in w.cpu_tasks():
            tracker.add_workload_task(pid, comm, user_s, sys_s)
    write_json(rundir / "tasks.json", tracker.finish(elapsed))
    delta = vmstat_delta(parse_vmstat(before), parse_vmstat(after))
    failures = fg.failures() + [f for bg in bgs for f in bg.failures()]
    each = [bg.metrics() for bg in bgs]
    result: dict[str, Any] = {
        "kind": "live",
        "scenario": scenario.name,
        "workload": fg.kind,
        "elapsed_s": round(elapsed, 3),
        "metrics": {**fg.metrics(), **vmstat_metrics(delta)},
        **samplers.psi.result(),
        "machine": {"kernel": platform.release(), "nr_cpus": os.cpu_count(), **notes},
    }
    if memcg_before is not None and memcg_after is not None:
        result["memcg"] = memcg_result(memcg_before, memcg_after)
    if bgs:
        # The simulator's shape: `metrics.background`, one background's metrics for
        # `[workload.background]`, a list in the scenario's order for `[[workload.background]]`;
        # and `background`, the same with each one's kind (`workload`) beside its metrics.
        named = [{"workload": bg.kind, "metrics": m} for bg, m in zip(bgs, each)]
        result["metrics"]["background"] = each if scenario.background_list else each[0]
        result["background"] = named if scenario.background_list else named[0]
    if timed_out:
        result["timed_out"] = True
    if aborted:
        result["aborted"] = aborted
    if failures:
        result["failures"] = failures
    write_json(rundir / "result.json", result)
    if failures:
        raise LiveError(f"{rundir}: workload task(s) failed:\n  " + "\n  ".join(failures))
    late = max([*result["metrics"].get("start_late_ms", []), *(x for m in each for x in m.get("start_late_ms", []))], default=0.0)
    if late > LATE_START_WARN_MS:
        log(f"  warning: a task began {late:.0f} ms after the common start (it was not ready in {START_LEAD_S} s): the tasks did not begin together")
    return PointResult(name, rundir, result)


# The memcg events the simulator counts too (result.json `memcg.events` of either backend).
MEMCG_EVENTS = ("pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct", "max", "oom", "high")


def window_pageblocks(backend: KernelBackend) -> list[dict[str, Any]] | None:
    """The machine's pageblocks as the window starts (after the drop and the squeeze): the
    non-movable pageblocks and free blocks of /proc/pagetypeinfo and, where /proc/kpageflags
    can be read, the census of the fragmented movable ones (`reclaimlab.host`), in the host
    profile's `pageblocks` shape. `--live-and-sim` starts the point's simulated twin from
    them. None where the kernel has no /proc/pagetypeinfo or will not let us read it. Reading
    /proc/kpageflags takes about 1.5 s on a 24 GiB machine (8 bytes a page), before the
    window starts."""
    try:
        blocks = host.pageblocks(backend.read_text(host.PAGETYPEINFO))
    except OSError:
        return None
    try:
        zoneinfo = backend.read_text(host.ZONEINFO)
        with backend.open_binary(host.KPAGEFLAGS) as f:
            host.apply_fragment_census(blocks, zoneinfo, f)
    except (OSError, ValueError):
        pass  # the pageblocks without the census, as a profile without /proc/kpageflags has
    return blocks


def read_fragmentation(backend: KernelBackend, paths: tuple[str, ...]) -> dict[str, str]:
    """The kernel's free-block files among `paths` (/proc/buddyinfo, /proc/pagetypeinfo), by
    file name: how free memory is broken up, written into the run directory as a simulated run
    writes its own. A file the kernel does not have (or will not let us read) is left out."""
    texts = {}
    for path in paths:
        try:
            texts[path.rsplit("/", 1)[1]] = backend.read_text(path)
        except OSError:
            pass
    return texts


def memcg_result(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """result.json's `memcg`, in the simulator's shape: memory.max and memory.current (at the
    end) in bytes, and over the run the events both backends count (memory.stat's reclaim
    counters, memory.events' `max` and `oom`; those the kernel does not give are left out), and
    `stat`, every memory.stat counter's delta, and with cgroup v1 `failcnt` (live only)."""

    def delta(group: str) -> dict[str, int]:
        return {k: v - before[group].get(k, 0) for k, v in after[group].items()}

    stat, events = delta("stat"), delta("events")
    both = {**stat, **events}
    out = {
        "max_bytes": after["max"],
        "current_bytes": after["current"],
        "events": {k: both[k] for k in MEMCG_EVENTS if k in both},
        "stat": stat,
    }
    if after.get("high") is not None:
        out["high_bytes"] = after["high"]
    if "failcnt" in events:
        out["failcnt"] = events["failcnt"]
    return out


def restore(backend: KernelBackend, log: Log = print) -> bool:
    """Undo what a killed run left (`reclaimlab live restore`). False if nothing was left."""
    journal = Journal.load(journal_path())
    if journal is None:
        return False
    if journal.pid != os.getpid() and pid_alive(journal.pid) and journal.owner_is_live():
        raise LiveError(f"the run that wrote {journal.path} (pid {journal.pid}) is still running; stop it (it restores on SIGINT/SIGTERM)")
    with signals_blocked():
        lines = backend.restore(journal)
    for line in lines:
        log(line)
    if any(line.startswith("FAILED") for line in lines):
        raise LiveError(f"some changes could not be undone; {journal.path} keeps them for another `reclaimlab live restore`")
    return True
