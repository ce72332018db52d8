"""KernelBackend: everything a live run does to the machine, behind one interface.

The abstract part is a handful of primitives (read and write a file, make a directory, run a
command, start a process). `RealBackend` does them to this machine; `FakeBackend`
(live/fake.py) records them and keeps files in memory, so tests need neither root nor a kernel.

The concrete part is the changes a run makes — sysctls, memory cgroups, the hugetlb squeeze,
swap, block-queue settings, files, processes — each written to the journal *before* it is made,
and `undo()`, which reverts one journal entry. Undo is written against the same primitives, so
`reclaimlab live restore` in a fresh process can undo a killed run's journal entry by entry.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol, Sequence

from reclaimlab import _core
from reclaimlab.live.journal import Entry, Journal

MiB = 1 << 20
HUGEPAGE_BYTES_DEFAULT = 2 * MiB

# Scenario [sysctl] key → the file a live run writes it to (defined once, beside the
# scenario's [sysctl] table: reclaim_sim::sysctl::SYSCTL_KEYS).
SYSCTLS: dict[str, str] = dict(_core.machine.sysctl_files())


def current_choice(text: str) -> str:
    """The current value of a sysfs file that lists its choices with the current one in
    brackets (/sys/kernel/mm/transparent_hugepage/enabled: `always [madvise] never`); any
    other text as it is."""
    start, end = text.find("["), text.find("]")
    if 0 <= start < end:
        return text[start + 1 : end]
    return text
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
# The part of a squeeze's hugetlb pages the kernel may fail to reserve before the run is
# refused: a page or two of fragmentation is noise, more leaves the workload another machine.
SQUEEZE_SHORTFALL = 0.01
DROP_CACHES = "/proc/sys/vm/drop_caches"


class BackendError(RuntimeError):
    """A change could not be made; the message says what and why."""


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


class ProcessHandle(Protocol):
    """A started workload process."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def rusage(self) -> tuple[float, float] | None:
        """(user_s, sys_s) of the exited process and its reaped children, else None."""
        ...

    def output(self) -> tuple[str, str]:
        """(stdout, stderr) so far."""
        ...

    def close(self) -> None:
        """Release the output files (after the last output())."""
        ...


@dataclass
class Cgroup:
    """A memory cgroup the run created: `procs` is the file a task writes its pid to."""

    version: int
    path: str

    @property
    def procs(self) -> str:
        return f"{self.path}/cgroup.procs"


class KernelBackend(ABC):
    """The machine. Subclasses give the primitives; the changes and their undo are shared."""

    journal: Journal | None = None

    # --- primitives ----------------------------------------------------------------------------

    @abstractmethod
    def read_text(self, path: str) -> str: ...

    @abstractmethod
    def write_text(self, path: str, text: str) -> None:
        """One write(2) of `text`, as `echo text > path` does (sysfs/procfs semantics)."""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def open_binary(self, path: str) -> BinaryIO:
        """`path` opened for binary reading (/proc/kpageflags); OSError if it cannot be."""

    @abstractmethod
    def disk_free_bytes(self, path: str) -> int:
        """Bytes an unprivileged writer may still write on the filesystem that holds `path`
        (or would hold it: its nearest existing ancestor)."""

    @abstractmethod
    def listdir(self, path: str) -> list[str]: ...

    @abstractmethod
    def mkdir(self, path: str) -> None: ...

    @abstractmethod
    def rmdir(self, path: str) -> None: ...

    @abstractmethod
    def unlink(self, path: str) -> None: ...

    @abstractmethod
    def run(self, argv: Sequence[str]) -> Completed:
        """Run a command to completion (mkswap, swapon, …)."""

    @abstractmethod
    def spawn(
        self, argv: Sequence[str], *, cgroup: Cgroup | None = None, workdir: str | None = None
    ) -> ProcessHandle:
        """Start a workload process, inside `cgroup` from its first instruction."""

    @abstractmethod
    def stream(self, path: str, dest: Path, stop: threading.Event) -> None:
        """Copy a pipe-like file (trace_pipe) into `dest` until `stop` is set and it is drained."""

    @abstractmethod
    def euid(self) -> int: ...

    @abstractmethod
    def kill(self, pid: int, sig: int) -> None: ...

    @abstractmethod
    def sleep(self, seconds: float) -> None: ...

    # --- helpers on the primitives -------------------------------------------------------------

    def read_value(self, path: str) -> str:
        return self.read_text(path).strip()

    def meminfo(self) -> dict[str, int]:
        """/proc/meminfo in bytes (HugePages_* stay counts)."""
        info: dict[str, int] = {}
        for line in self.read_text("/proc/meminfo").splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                value = int(parts[0])
                info[name] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
        return info

    def swaps(self) -> list[str]:
        """Active swap areas (paths from /proc/swaps)."""
        lines = self.read_text("/proc/swaps").splitlines()[1:]
        return [line.split()[0] for line in lines if line.strip()]

    def check_run(self, argv: Sequence[str]) -> Completed:
        result = self.run(argv)
        if result.returncode != 0:
            raise BackendError(f"`{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def check_run_journaled(self, argv: Sequence[str]) -> Completed:
        """`check_run` for a command that runs long (dd writing a test or swap file): journaled
        as a workload's process is, so that `live restore` ends it if this run is killed (it
        would go on writing to the file restore deleted), and killed at once if the run is
        interrupted (SIGINT, SIGTERM) while it waits."""
        proc = self.spawn(argv)
        try:
            self.track_process(proc.pid)
            rc = proc.wait()
            out, err = proc.output()
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            proc.close()
        if rc != 0:
            raise BackendError(f"`{' '.join(argv)}` failed ({rc}): {err.strip()}")
        return Completed(rc, out, err)

    # --- journaled changes ---------------------------------------------------------------------

    def record(self, entry: Entry) -> None:
        """Journal a change before making it."""
        if self.journal is None:
            raise BackendError("no journal attached: refusing to change the machine unrecorded")
        self.journal.record(entry)

    def read_setting(self, path: str) -> str:
        """A setting's current value: the bracketed word of a file that lists its choices
        (`always [madvise] never` is `madvise`), else the file's text."""
        return current_choice(self.read_value(path))

    def set_value(self, path: str, value: str) -> str:
        """Write a sysfs/procfs value, journaling the old one; returns the old value (the
        bracketed choice of a file that lists them, which is what writing it back takes)."""
        old = self.read_setting(path)
        if old == str(value):
            return old
        self.record({"op": "write", "path": path, "old": old})
        self.write_text(path, str(value))
        return old

    def set_sysctl(self, key: str, value: int | bool | str) -> str:
        if key not in SYSCTLS:
            raise BackendError(f"unknown sysctl {key!r}; known: {', '.join(SYSCTLS)}")
        path = SYSCTLS[key]
        if not self.exists(path):
            raise BackendError(f"{path} does not exist on this kernel")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = value  # a choice: transparent_hugepage's "always", "defer+madvise", ...
        else:
            text = str(int(value))
        return self.set_value(path, text)

    def drop_caches(self) -> None:
        """sync, then drop clean page cache and slab (no state to restore)."""
        self.run(["sync"])
        self.write_text(DROP_CACHES, "3")

    def track_file(self, path: str) -> None:
        """Journal a file the run is about to create, so restore deletes it."""
        self.record({"op": "file", "path": path})

    def track_dir(self, path: str) -> None:
        """Journal a directory the run is about to create; restore removes it if empty."""
        self.record({"op": "dir", "path": path})

    def track_tree(self, path: str) -> None:
        """Journal a directory the run is about to create and fill; restore removes it with
        everything in it (only ever a directory the run made: callers check it is new)."""
        self.record({"op": "tree", "path": path})

    def remove_tree(self, path: str) -> None:
        """Remove `path` and everything under it, following no symbolic link."""
        if not self.exists(path):
            return
        for name in self.listdir(path):
            child = f"{path}/{name}"
            try:
                self.unlink(child)
            except (IsADirectoryError, FileNotFoundError, PermissionError):
                if self.exists(child):
                    self.remove_tree(child)
        self.rmdir(path)

    def track_process(self, pid: int) -> None:
        """Journal a started process so restore kills it (same pid *and* start time only)."""
        self.record({"op": "process", "pid": pid, "start": self.process_start_time(pid)})

    def process_start_time(self, pid: int) -> int | None:
        try:
            stat = self.read_text(f"/proc/{pid}/stat")
        except OSError:
            return None
        return int(stat.rpartition(")")[2].split()[19])

    # memory cgroup ------------------------------------------------------------------------------

    def memcg_parent(self) -> tuple[int, str] | None:
        """Where this process may create a memory cgroup: (version, directory), or None.

        Nested under our own cgroup, never the root: on a machine whose processes are already
        confined (containers, systemd slices) a run stays inside those limits."""
        own = self.read_text("/proc/self/cgroup").splitlines()
        v1_root = "/sys/fs/cgroup/memory"
        for line in own:
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(",") and self.exists(f"{v1_root}/memory.limit_in_bytes"):
                return 1, (v1_root + path).rstrip("/")
        for v2_root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
            if not self.exists(f"{v2_root}/cgroup.controllers"):
                continue
            if "memory" not in self.read_value(f"{v2_root}/cgroup.controllers").split():
                continue
            for line in own:
                hier, _, path = line.split(":", 2)
                if hier == "0":
                    parent = (v2_root + path).rstrip("/")
                    # cgroup v2 forbids controllers below a cgroup that holds processes, except
                    # at the root, so use the root or a parent that already delegates memory.
                    delegated = "memory" in self.read_value(f"{parent}/cgroup.subtree_control").split()
                    if delegated:
                        return 2, parent
                    if parent == v2_root:
                        return 2, v2_root
        return None

    def create_memcg(self, name: str, limit_bytes: int | None, swappiness: int | None = None, high_bytes: int | None = None) -> Cgroup:
        found = self.memcg_parent()
        if found is None:
            raise BackendError(
                "no usable memory cgroup: mount the v1 memory controller or enable memory in a "
                "cgroup v2 hierarchy this process may write to"
            )
        version, parent = found
        if version == 2 and "memory" not in self.read_value(f"{parent}/cgroup.subtree_control").split():
            self.record({"op": "subtree_control", "path": f"{parent}/cgroup.subtree_control"})
            self.write_text(f"{parent}/cgroup.subtree_control", "+memory")
        cg = Cgroup(version, f"{parent}/{name}")
        self.record({"op": "cgroup", "path": cg.path, "version": version})
        self.mkdir(cg.path)
        if limit_bytes is not None:
            limit_file = "memory.limit_in_bytes" if version == 1 else "memory.max"
            self.write_text(f"{cg.path}/{limit_file}", str(limit_bytes))
        if high_bytes is not None:
            if version == 1:
                raise BackendError("memory.high needs cgroup v2 (this memory cgroup is v1)")
            self.write_text(f"{cg.path}/memory.high", str(high_bytes))
        if swappiness is not None and version == 1:
            # v1 memcg reclaim uses the memcg's own swappiness, not vm.swappiness.
            self.write_text(f"{cg.path}/memory.swappiness", str(swappiness))
        return cg

    def cgroup_pids(self, cg: Cgroup) -> list[int]:
        try:
            return [int(p) for p in self.read_text(cg.procs).split()]
        except OSError:
            return []

    def memcg_counters(self, cg: Cgroup) -> dict[str, Any]:
        """The cgroup's state and counters: `stat`, the event counters of its memory.stat
        (v2 names its reclaim pgscan_*/pgsteal_*; v1 has only pgpgin/pgpgout, faults and
        refaults); `events`, memory.events (v2), or `failcnt`, memory.failcnt (v1: every
        failed charge of the page counter, which is not memory.events' `max`: a charge that
        needs reclaim fails more than once); `current`, `max` and `high` in bytes (`max` and
        `high` None when unlimited; `high` always None on v1).
        Reclaim inside a memory cgroup is not counted in /proc/vmstat's pgscan/pgsteal/
        allocstall, only here."""
        stat = {}
        for line in self.read_text(f"{cg.path}/memory.stat").splitlines():
            name, _, value = line.partition(" ")
            counter = name.startswith(("pg", "workingset_", "swp", "thp_", "zswp")) and name != "workingset_nodes"
            if counter and value.strip().isdigit():
                stat[name] = int(value)
        if cg.version == 2:
            events = {}
            for line in self.read_text(f"{cg.path}/memory.events").splitlines():
                name, _, value = line.partition(" ")
                if value.strip().isdigit():
                    events[name] = int(value)
            current, limit = self.read_value(f"{cg.path}/memory.current"), self.read_value(f"{cg.path}/memory.max")
            high = self.read_value(f"{cg.path}/memory.high") if self.exists(f"{cg.path}/memory.high") else "max"
        else:
            events = {"failcnt": int(self.read_value(f"{cg.path}/memory.failcnt"))}
            current = self.read_value(f"{cg.path}/memory.usage_in_bytes")
            limit = self.read_value(f"{cg.path}/memory.limit_in_bytes")
            high = "max"  # v1 has no memory.high

        def bytes_or_none(v: str) -> int | None:
            return int(v) if v.isdigit() and int(v) < 1 << 62 else None

        return {"stat": stat, "events": events, "current": int(current), "max": bytes_or_none(limit), "high": bytes_or_none(high)}

    # global squeeze ------------------------------------------------------------------------------

    def hugepage_bytes(self) -> int:
        return self.meminfo().get("Hugepagesize", HUGEPAGE_BYTES_DEFAULT)

    def squeeze_plan(self, free_bytes: int, margin_bytes: int) -> int:
        """Hugetlb pages to reserve so that about `free_bytes` stays available; refuses (with the
        reason and what to do) if that would leave the rest of the system less than the margin,
        or if this machine has no more than `free_bytes` available (nothing to squeeze)."""
        info = self.meminfo()
        if free_bytes < margin_bytes:
            raise BackendError(
                f"the squeeze would leave {free_bytes // MiB} MiB available, less than the safe "
                f"margin of {margin_bytes // MiB} MiB for the rest of the system; raise "
                "memory.free_mb (or, knowing the risk, lower memory.margin_mb)"
            )
        available = info["MemAvailable"]
        if info.get("HugePages_Total", 0) > 0:
            raise BackendError(
                f"{info['HugePages_Total']} hugetlb pages are already reserved by someone else; "
                "the squeeze would miscount. Free them (vm.nr_hugepages=0) or use a memory cgroup"
            )
        pages = (available - free_bytes) // self.hugepage_bytes() if available > free_bytes else 0
        if pages == 0:
            raise BackendError(
                f"the squeeze would leave {free_bytes // MiB} MiB available but this machine has only "
                f"{available // MiB} MiB available (MemAvailable): nothing to squeeze. Lower memory.free_mb "
                "below that, or use a memory cgroup"
            )
        return pages

    def squeeze(self, free_bytes: int, margin_bytes: int) -> int:
        """Reserve hugetlb pages until about `free_bytes` is left; returns pages reserved.
        Refuses (BackendError with the numbers; the reservation is undone by the journal) when
        the kernel reserves less than SQUEEZE_SHORTFALL of what was asked."""
        pages = self.squeeze_plan(free_bytes, margin_bytes)
        self.set_value(NR_HUGEPAGES, str(pages))
        got = int(self.read_value(NR_HUGEPAGES))
        if got < pages * (1 - SQUEEZE_SHORTFALL):
            size = self.hugepage_bytes()
            left = self.meminfo()["MemAvailable"]
            raise BackendError(
                f"the squeeze asked for {pages} hugetlb pages ({pages * size // MiB} MiB) to leave "
                f"{free_bytes // MiB} MiB available, but the kernel reserved only {got} ({got * size // MiB} MiB), "
                f"leaving {left // MiB} MiB: memory is fragmented or taken. Drop caches, raise memory.free_mb, "
                "or use a memory cgroup"
            )
        return got

    # swap ----------------------------------------------------------------------------------------

    def add_swapfile(self, path: str, size_bytes: int, priority: int) -> None:
        if self.exists(path):
            # The undo deletes the swap file, so it must be one this run creates.
            raise BackendError(f"swap file {path} already exists; give swap.path a new file name")
        self.track_file(path)
        # fallocate is quick, but some filesystems refuse it or reject its unwritten extents
        # for swap (swapon: "holes"); a written file works everywhere.
        if self.run(["fallocate", "-l", str(size_bytes), path]).returncode != 0:
            self._write_zeros(path, size_bytes)
        self.check_run(["chmod", "600", path])
        self.check_run(["mkswap", path])
        self.record({"op": "swapon", "path": path})
        if self.run(["swapon", "-p", str(priority), path]).returncode != 0:
            self._write_zeros(path, size_bytes)
            self.check_run(["mkswap", path])
            self.check_run(["swapon", "-p", str(priority), path])

    def _write_zeros(self, path: str, size_bytes: int) -> None:
        self.check_run_journaled(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={max(1, size_bytes >> 20)}", "conv=fsync", "status=none"])

    def add_zram(self, size_bytes: int, priority: int) -> str:
        if not self.exists("/sys/class/zram-control") and not self.exists("/sys/block/zram0"):
            self.run(["modprobe", "zram"])
        dev, added = self._free_zram()
        # A device this run made (zram-control/hot_add) is removed again on restore, so the
        # machine keeps only the devices it had; one it found is reset and stays.
        self.record({"op": "zram", "device": dev, "hot_added": added})
        self.write_text(f"/sys/block/{dev}/disksize", str(size_bytes))
        self.check_run(["mkswap", f"/dev/{dev}"])
        self._swapon(f"/dev/{dev}", priority)
        return f"/dev/{dev}"

    def _free_zram(self) -> tuple[str, bool]:
        """An unused zram device, and whether it was made for this run: reading
        zram-control/hot_add makes a new one (its number is what the read returns)."""
        for name in sorted(self.listdir("/sys/block")):
            if name.startswith("zram") and self.read_value(f"/sys/block/{name}/disksize") == "0":
                return name, False
        if self.exists("/sys/class/zram-control/hot_add"):
            return f"zram{self.read_value('/sys/class/zram-control/hot_add')}", True
        raise BackendError("no free zram device and no zram-control/hot_add")

    def _swapon(self, path: str, priority: int) -> None:
        self.record({"op": "swapon", "path": path})
        self.check_run(["swapon", "-p", str(priority), path])

    def block_device_of(self, path: str) -> str:
        """The whole-disk block device (sysfs name) holding `path`."""
        st = os.stat(path)
        major, minor = os.major(st.st_dev), os.minor(st.st_dev)
        link = os.path.realpath(f"/sys/dev/block/{major}:{minor}")
        if self.exists(f"{link}/partition"):
            link = os.path.dirname(link)
        return os.path.basename(link)

    def set_rotational(self, device: str, rotational: bool) -> None:
        self.set_value(f"/sys/block/{device}/queue/rotational", "1" if rotational else "0")

    # undo ----------------------------------------------------------------------------------------

    def undo(self, entry: Entry) -> None:
        """Revert one journal entry; tolerant of a change that never happened."""
        op = entry["op"]
        if op == "write":
            if self.exists(entry["path"]):
                self.write_text(entry["path"], entry["old"])
        elif op == "process":
            self._kill_if_same(int(entry["pid"]), entry.get("start"))
        elif op == "cgroup":
            self._remove_cgroup(Cgroup(int(entry["version"]), entry["path"]))
        elif op == "subtree_control":
            if self.exists(entry["path"]):
                self.write_text(entry["path"], "-memory")
        elif op == "swapon":
            if entry["path"] in self.swaps():
                self.check_run(["swapoff", entry["path"]])
        elif op == "zram":
            dev = entry["device"]
            if f"/dev/{dev}" in self.swaps():
                self.check_run(["swapoff", f"/dev/{dev}"])
            if self.exists(f"/sys/block/{dev}/reset"):
                self.write_text(f"/sys/block/{dev}/reset", "1")
            if entry.get("hot_added") and self.exists(f"/sys/block/{dev}/reset"):
                self.write_text("/sys/class/zram-control/hot_remove", dev.removeprefix("zram"))
        elif op == "file":
            if self.exists(entry["path"]):
                self.unlink(entry["path"])
        elif op == "trace_instance":
            if self.exists(entry["path"]):
                self.write_text(f"{entry['path']}/tracing_on", "0")
                self._rmdir_retry(entry["path"])
        elif op == "tree":
            self.remove_tree(entry["path"])
        elif op == "dir":
            if self.exists(entry["path"]) and not self.listdir(entry["path"]):
                self.rmdir(entry["path"])
        elif op == "mount":
            if self._mounted(entry["target"]):
                self.check_run(["umount", entry["target"]])
        else:
            raise BackendError(f"unknown journal entry {entry!r}")

    def _kill_if_same(self, pid: int, start: int | None) -> None:
        current = self.process_start_time(pid)
        if current is None or (start is not None and current != start):
            return  # exited, or the pid now belongs to someone else
        self.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if self.process_start_time(pid) != current:
                return
            self.sleep(0.05)

    def _remove_cgroup(self, cg: Cgroup) -> None:
        if not self.exists(cg.path):
            return
        for _ in range(100):
            pids = self.cgroup_pids(cg)
            if not pids:
                break
            for pid in pids:
                try:
                    self.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.sleep(0.05)
        self._rmdir_retry(cg.path)

    def _rmdir_retry(self, path: str) -> None:
        for _ in range(50):
            try:
                self.rmdir(path)
                return
            except OSError:  # EBUSY while a killed task or a trace_pipe reader goes away
                self.sleep(0.1)
        self.rmdir(path)

    def _mounted(self, target: str) -> bool:
        return any(line.split()[1] == target for line in self.read_text("/proc/mounts").splitlines())

    def mount(self, fstype: str, target: str) -> None:
        self.record({"op": "mount", "target": target})
        self.check_run(["mount", "-t", fstype, fstype, target])

    def restore(self, journal: Journal, since: int = 0) -> list[str]:
        """Undo the pending entries of `journal` numbered `since` or later, newest first; when
        all are undone the journal file is removed. Returns a line per entry; an entry that
        fails is reported and left for another try."""
        report: list[str] = []
        failed = False
        processes = 0
        for index, entry in journal.pending():
            if index < since:
                continue
            try:
                self.undo(entry)
            except Exception as e:  # keep going: every other change must still be undone
                failed = True
                report.append(f"FAILED {describe(entry)}: {e}")
                continue
            journal.mark_undone(index)
            if entry["op"] == "process":
                processes += 1  # one line for all of them: a dd sweep starts hundreds
            else:
                report.append(f"undone {describe(entry)}")
        if processes:
            report.insert(0, f"undone {processes} workload process(es): killed if still running")
        if not failed and not journal.pending():
            journal.remove()
        return report


def describe(entry: Entry) -> str:
    op = entry["op"]
    if op == "write":
        return f"{entry['path']} back to {entry['old']!r}"
    if op == "process":
        return f"process {entry['pid']} killed if still running"
    if op == "tree":
        return f"{entry['path']} removed with everything in it"
    if op in ("cgroup", "file", "dir"):
        return f"{op} {entry['path']} removed"
    if op == "swapon":
        return f"swap {entry['path']} off"
    if op == "zram":
        return f"zram {entry['device']} reset"
    if op == "trace_instance":
        return f"tracefs instance {entry['path']} removed"
    if op == "subtree_control":
        return f"{entry['path']} -memory"
    if op == "mount":
        return f"{entry['target']} unmounted"
    return repr(entry)


# --- the real machine ------------------------------------------------------------------------------


class RealProcess:
    """A Popen reaped with wait4(2), so the run gets each task's exact user and system time."""

    def __init__(self, popen: subprocess.Popen[bytes], out: IO[bytes], err: IO[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self._out, self._err = out, err
        self._rusage: tuple[float, float] | None = None

    def _reap(self, flags: int) -> int | None:
        if self._popen.returncode is not None:
            return self._popen.returncode
        pid, status, ru = os.wait4(self.pid, flags)
        if pid == 0:
            return None
        self._rusage = (ru.ru_utime, ru.ru_stime)
        self._popen.returncode = os.waitstatus_to_exitcode(status)
        return self._popen.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rc = self._reap(os.WNOHANG)
            if rc is not None:
                return rc
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self._popen.args, timeout or 0)
            time.sleep(0.02)

    def send_signal(self, sig: int) -> None:
        if self._popen.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def rusage(self) -> tuple[float, float] | None:
        return self._rusage

    def output(self) -> tuple[str, str]:
        def read(f: IO[bytes]) -> str:
            f.flush()
            f.seek(0)
            return f.read().decode(errors="replace")

        return read(self._out), read(self._err)

    def close(self) -> None:
        self._out.close()
        self._err.close()


class RealBackend(KernelBackend):
    def open_binary(self, path: str) -> BinaryIO:
        return open(path, "rb")

    def read_text(self, path: str) -> str:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def write_text(self, path: str, text: str) -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def disk_free_bytes(self, path: str) -> int:
        while not os.path.exists(path):
            path = os.path.dirname(path) or "/"
        st = os.statvfs(path)
        return st.f_bavail * st.f_frsize

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def run(self, argv: Sequence[str]) -> Completed:
        try:
            p = subprocess.run(list(argv), capture_output=True, text=True, check=False)
        except FileNotFoundError as e:
            return Completed(127, "", str(e))
        return Completed(p.returncode, p.stdout, p.stderr)

    def spawn(
        self, argv: Sequence[str], *, cgroup: Cgroup | None = None, workdir: str | None = None
    ) -> RealProcess:
        import tempfile

        argv = list(argv)
        if cgroup is not None:
            # The shell joins the cgroup, then execs the workload: it is charged from its start.
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.procs, *argv]
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        popen = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=workdir)
        return RealProcess(popen, out, err)

    def stream(self, path: str, dest: Path, stop: threading.Event) -> None:
        stream_pipe(path, dest, stop)

    def euid(self) -> int:
        return os.geteuid()

    def kill(self, pid: int, sig: int) -> None:
        os.kill(pid, sig)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def stream_pipe(path: str, dest: Path, stop: threading.Event) -> None:
    """Copy a trace_pipe to `dest` until `stop` is set and the pipe is drained."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with open(dest, "wb") as out:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.2)
                chunk = b""
                if ready:
                    try:
                        chunk = os.read(fd, 1 << 20)
                    except BlockingIOError:
                        chunk = b""
                if chunk:
                    out.write(chunk)
                elif stop.is_set():
                    return
    finally:
        os.close(fd)
