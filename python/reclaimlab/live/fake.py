"""FakeBackend: a recorded, in-memory machine for tests (no root, no kernel needed).

Every primitive call is appended to `calls`; files live in `files`; the few kernel behaviours
the changes depend on are simulated: cgroup directories get control files and refuse rmdir
while they hold tasks, nr_hugepages takes memory out of MemAvailable, swapon/swapoff edit
/proc/swaps, tracefs instances get their files. Processes are scripted by `programs`: a
function of argv returning (returncode, stdout, stderr, run_seconds).
"""

from __future__ import annotations

import io
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence

from reclaimlab.live.backend import Cgroup, Completed, KernelBackend

Program = Callable[[Sequence[str]], tuple[int, str, str, float]]

MEMINFO = """MemTotal:       {total} kB
MemFree:        {free} kB
MemAvailable:   {avail} kB
HugePages_Total:   {hp}
HugePages_Free:    {hp}
Hugepagesize:       2048 kB
"""

# /proc/buddyinfo's layout (6.x): free blocks of each order, per zone. The fake kernel has no
# /proc/pagetypeinfo, as a kernel without CONFIG_PROC_FS's pagetypeinfo (or a reader without
# root) has none.
BUDDYINFO = """Node 0, zone    DMA32     12     19     18     13     16     15     11     11      8     10    743
Node 0, zone   Normal   1827   3926   3858   3116   2573   1776   1088    792    228    503   4605
"""

# /proc/zoneinfo's layout (6.x), cut to one node's DMA32 and Normal zones.
ZONEINFO = """Node 0, zone    DMA32
  pages free     120000
        boost    0
        min      2000
        low      2500
        high     3000
        promo    3500
        spanned  1044480
        present  782288
        managed  750000
        cma      0
        protection: (0, 0, 7000, 7000, 0)
      nr_free_pages 120000
Node 0, zone   Normal
  per-node stats
      nr_inactive_anon 1000
  pages free     1500000
        boost    0
        min      15000
        low      18750
        high     22500
        promo    26250
        spanned  1835008
        present  1835008
        managed  1790000
        cma      0
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              count: 10
              high:  378
"""


def default_vmstat(scale: int = 0) -> str:
    names = ["nr_free_pages", "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct",
             "allocstall_dma32", "allocstall_normal", "allocstall_movable", "pswpin", "pswpout",
             "swap_ra", "swap_ra_hit", "pageoutrun"]  # fmt: skip
    return "".join(f"{n} {i * scale}\n" for i, n in enumerate(names))


@dataclass
class FakeProcess:
    backend: FakeBackend
    pid: int
    argv: list[str]
    returncode_when_done: int
    out: str
    err: str
    ends_at: float
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and time.monotonic() >= self.ends_at:
            self._exit(self.returncode_when_done)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        while self.poll() is None:
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.backend.calls.append(("signal", self.pid, sig))
        if self.returncode is None:
            self._exit(-sig)

    def _exit(self, rc: int) -> None:
        self.returncode = rc
        self.backend._process_gone(self.pid)

    def rusage(self) -> tuple[float, float] | None:
        return (0.25, 0.5) if self.returncode is not None else None

    def output(self) -> tuple[str, str]:
        return self.out, self.err

    def close(self) -> None:
        self.backend.calls.append(("close", self.pid))


@dataclass
class FakeBackend(KernelBackend):
    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    programs: dict[str, Program] = field(default_factory=dict)
    processes: dict[int, FakeProcess] = field(default_factory=dict)
    uid: int = 0
    next_pid: int = 1000
    mem_total_kb: int = 8 << 20
    mem_available_kb: int = 7 << 20
    fail_commands: set[str] = field(default_factory=set)
    # Hugetlb pages the fake kernel can reserve at most (None: as many as asked).
    hugetlb_max: int | None = None
    # Bytes free on every filesystem of the fake machine.
    disk_free: int = 1 << 40
    # Binary files (/proc/kpageflags), read through `open_binary`.
    binary_files: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.journal = None
        base = {
            "/proc/vmstat": default_vmstat(),
            "/proc/self/cgroup": "4:memory:/user\n0::/user\n",
            "/proc/zoneinfo": ZONEINFO,
            "/proc/buddyinfo": BUDDYINFO,
            "/proc/swaps": "Filename\tType\tSize\tUsed\tPriority\n",
            "/proc/mounts": "proc /proc proc rw 0 0\n",
            "/proc/filesystems": "nodev\ttracefs\n",
            "/proc/diskstats": "   8       0 sda 100 0 800 50 10 0 80 5 0 60 55 0 0 0 0\n",
            "/proc/stat": "cpu  100 0 50 800 10 0 0 0 0 0\ncpu0 50 0 25 400 5 0 0 0 0 0\ncpu1 50 0 25 400 5 0 0 0 0 0\n",
            "/proc/sys/vm/min_free_kbytes": "67584",
            "/proc/sys/vm/watermark_scale_factor": "10",
            "/proc/sys/vm/swappiness": "60",
            "/proc/sys/vm/dirty_ratio": "20",
            "/proc/sys/vm/dirty_background_ratio": "10",
            "/proc/sys/vm/dirty_bytes": "0",
            "/proc/sys/vm/dirty_background_bytes": "0",
            "/proc/sys/vm/dirty_expire_centisecs": "3000",
            "/proc/sys/vm/dirty_writeback_centisecs": "500",
            "/proc/sys/vm/page-cluster": "3",
            "/proc/sys/vm/zone_reclaim_mode": "0",
            "/proc/sys/vm/min_unmapped_ratio": "1",
            "/proc/sys/vm/nr_hugepages": "0",
            "/proc/sys/vm/drop_caches": "0",
            "/sys/kernel/mm/swap/vma_ra_enabled": "true",
            "/sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never",
            "/sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712",
            "/sys/fs/cgroup/memory/user/cgroup.procs": "",
            "/sys/block/sda/queue/rotational": "1",
            "/proc/100/comm": "kswapd0",
            "/proc/100/stat": "100 (kswapd0) S 2 0 0 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0 5 0 0",
        }
        for path, text in base.items():
            self.files.setdefault(path, text)
        for d in ("/proc", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory/user", "/sys/block", "/sys/block/sda"):
            self.dirs.add(d)
        self._sync_meminfo()

    # --- simulated kernel state ----------------------------------------------------------------

    def _sync_meminfo(self) -> None:
        hp = int(self.files["/proc/sys/vm/nr_hugepages"])
        avail = self.mem_available_kb - hp * 2048
        self.files["/proc/meminfo"] = MEMINFO.format(total=self.mem_total_kb, free=avail, avail=avail, hp=hp)

    def _process_gone(self, pid: int) -> None:
        for path, text in list(self.files.items()):
            if path.endswith("/cgroup.procs"):
                pids = [p for p in text.split() if p != str(pid)]
                self.files[path] = "".join(f"{p}\n" for p in pids)
        self.files.pop(f"/proc/{pid}/stat", None)
        self.files.pop(f"/proc/{pid}/comm", None)

    def tracing_instances(self) -> list[str]:
        return [d for d in self.dirs if "/instances/" in d]

    # --- primitives ----------------------------------------------------------------------------

    def read_text(self, path: str) -> str:
        self.calls.append(("read", path))
        if path not in self.files:
            raise FileNotFoundError(path)
        if path == "/sys/class/zram-control/hot_add":  # as the kernel: the read makes a device
            dev = f"/sys/block/zram{self.files[path]}"
            self.files.update({f"{dev}/disksize": "0", f"{dev}/reset": ""})
        return self.files[path]

    def open_binary(self, path: str) -> BinaryIO:
        self.calls.append(("read", path))
        if path not in self.binary_files:
            raise FileNotFoundError(path)
        return io.BytesIO(self.binary_files[path])

    def write_text(self, path: str, text: str) -> None:
        self.calls.append(("write", path, text))
        parent = path.rsplit("/", 1)[0]
        if path not in self.files and parent not in self.dirs:
            raise FileNotFoundError(path)
        if path.endswith("/set_event"):
            lines = [ln for ln in self.files.get(path, "").splitlines() if ln]
            self.files[path] = "".join(f"{ln}\n" for ln in [*lines, text.strip()])
            return
        if path.endswith("/cgroup.procs"):
            self.files[path] = self.files.get(path, "") + f"{text.strip()}\n"
            return
        self.files[path] = text
        if path == "/proc/sys/vm/nr_hugepages":
            if self.hugetlb_max is not None:
                self.files[path] = str(min(int(text), self.hugetlb_max))
            self._sync_meminfo()

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def disk_free_bytes(self, path: str) -> int:
        return self.disk_free

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in [*self.files, *self.dirs] if p.startswith(prefix)}
        return sorted(names)

    def mkdir(self, path: str) -> None:
        self.calls.append(("mkdir", path))
        if path in self.dirs:
            raise FileExistsError(path)
        self.dirs.add(path)
        if path.startswith("/sys/fs/cgroup/"):
            for name, value in (("cgroup.procs", ""), ("memory.limit_in_bytes", "9223372036854771712"),
                                ("memory.swappiness", "60"), ("memory.usage_in_bytes", "0"), ("memory.failcnt", "0"),
                                ("memory.max", "max"), ("memory.current", "0"), ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\n"), ("memory.high", "max"),
                                ("memory.stat", "cache 0\npgpgin 10\npgmajfault 1\n")):  # fmt: skip
                self.files[f"{path}/{name}"] = value
        if "/instances/" in path:
            for name, value in (("tracing_on", "1"), ("buffer_size_kb", "1408"), ("set_event", ""), ("trace_pipe", "")):
                self.files[f"{path}/{name}"] = value

    def rmdir(self, path: str) -> None:
        self.calls.append(("rmdir", path))
        if self.files.get(f"{path}/cgroup.procs", "").strip():
            raise OSError(16, "Device or resource busy", path)
        if path not in self.dirs:
            raise FileNotFoundError(path)
        self.dirs.discard(path)
        for p in [p for p in self.files if p.startswith(path + "/")]:
            del self.files[p]

    def unlink(self, path: str) -> None:
        self.calls.append(("unlink", path))
        if path not in self.files:
            raise FileNotFoundError(path)
        del self.files[path]

    def run(self, argv: Sequence[str]) -> Completed:
        argv = list(argv)
        self.calls.append(("run", *argv))
        cmd = argv[0]
        if cmd in self.fail_commands:
            return Completed(1, "", f"{cmd}: simulated failure")
        if cmd == "fallocate":
            self.files[argv[-1]] = "\0" * 16
        elif cmd == "dd":
            path = next(a[3:] for a in argv if a.startswith("of="))
            self.files[path] = "zeros"
        elif cmd == "swapon":
            self.files["/proc/swaps"] += f"{argv[-1]}\tfile\t1024\t0\t{argv[2]}\n"
        elif cmd == "swapoff":
            lines = self.files["/proc/swaps"].splitlines(keepends=True)
            self.files["/proc/swaps"] = "".join(ln for ln in lines if ln.split()[0] != argv[-1])
        elif cmd == "mount":
            self.files["/proc/mounts"] += f"{argv[3]} {argv[4]} {argv[2]} rw 0 0\n"
            self.dirs.update({argv[4], f"{argv[4]}/instances", f"{argv[4]}/events", f"{argv[4]}/events/vmscan"})
        elif cmd == "umount":
            lines = self.files["/proc/mounts"].splitlines(keepends=True)
            self.files["/proc/mounts"] = "".join(ln for ln in lines if ln.split()[1] != argv[-1])
            for d in [d for d in self.dirs if d.startswith(argv[-1])]:
                self.dirs.discard(d)
        return Completed(0, "", "")

    def check_run_journaled(self, argv: Sequence[str]) -> Completed:
        """The fake's commands are done at once: as `check_run` (what journaling them does is
        tested on the base class's method)."""
        return self.check_run(argv)

    def spawn(self, argv: Sequence[str], *, cgroup: Cgroup | None = None, workdir: str | None = None) -> FakeProcess:
        argv = list(argv)
        self.calls.append(("spawn", *argv))
        pid = self.next_pid
        self.next_pid += 1
        name = argv[0].rsplit("/", 1)[-1]
        if "reclaimlab.live.helpers" in argv:
            name = argv[argv.index("reclaimlab.live.helpers") + 1]
        program = self.programs.get(name, lambda a: (0, "", "", 0.0))
        rc, out, err, seconds = program(argv)
        self.files[f"/proc/{pid}/stat"] = f"{pid} ({name}) R 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {pid} 0 0"
        if cgroup is not None:
            self.write_text(cgroup.procs, str(pid))
        proc = FakeProcess(self, pid, argv, rc, out, err, time.monotonic() + seconds)
        self.processes[pid] = proc
        return proc

    def stream(self, path: str, dest: Path, stop: threading.Event) -> None:
        stop.wait()
        dest.write_text(self.files.get(path, ""))

    def euid(self) -> int:
        return self.uid

    def kill(self, pid: int, sig: int) -> None:
        self.calls.append(("kill", pid, sig))
        proc = self.processes.get(pid)
        if proc is None or proc.returncode is not None:
            raise ProcessLookupError(pid)
        if sig == signal.SIGKILL or sig == signal.SIGTERM:
            proc.send_signal(sig)

    def sleep(self, seconds: float) -> None:
        self.calls.append(("sleep", seconds))

    def block_device_of(self, path: str) -> str:
        return "sda"
