"""tracefs for live runs: reclaim events into trace.txt, and the tracing state put back.

Events are recorded in a tracefs *instance* of our own (instances/reclaimlab-PID): its buffer,
event switches and tracing_on are separate from the top-level ones, so whatever tracing the
machine's owner had running is left exactly as found. The only other change is mounting
tracefs if it was not mounted. Both are journaled: restore removes the instance and unmounts.
The trace is streamed from trace_pipe while the workload runs, so a long run does not overflow
the ring buffer; the lines are the kernel's own format.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from reclaimlab.live.backend import BackendError, KernelBackend

CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
DEFAULT_EVENTS = ("vmscan", "writeback", "compaction")


def find_tracefs(backend: KernelBackend) -> str | None:
    for root in CANDIDATES:
        if backend.exists(f"{root}/instances"):
            return root
    return None


def tracefs_supported(backend: KernelBackend) -> bool:
    return find_tracefs(backend) is not None or "tracefs" in backend.read_text("/proc/filesystems")


def ensure_mounted(backend: KernelBackend) -> str:
    root = find_tracefs(backend)
    if root is not None:
        return root
    if "tracefs" not in backend.read_text("/proc/filesystems"):
        raise BackendError("this kernel has no tracefs (CONFIG_FTRACE); run without tracing")
    backend.mount("tracefs", CANDIDATES[0])
    if not backend.exists(f"{CANDIDATES[0]}/instances"):
        raise BackendError(f"mounted tracefs at {CANDIDATES[0]} but it has no instances/")
    return CANDIDATES[0]


def resolve_events(backend: KernelBackend, root: str, wanted: list[str] | tuple[str, ...]) -> list[str]:
    """`subsystem` or `subsystem:event` names present on this kernel, as set_event lines.
    vmscan is required; writeback and compaction are taken where present."""
    out = []
    for name in wanted:
        subsystem, _, event = name.partition(":")
        path = f"{root}/events/{subsystem}" + (f"/{event}" if event else "")
        if backend.exists(path):
            out.append(f"{subsystem}:{event or '*'}")
        elif subsystem == "vmscan":
            raise BackendError(f"{path} is missing: this kernel has no vmscan tracepoints")
    return out


class TraceSession:
    """An instance with the reclaim events on, streamed to `dest` until `stop()`."""

    def __init__(self, backend: KernelBackend, events: list[str] | tuple[str, ...] = DEFAULT_EVENTS, buffer_kb: int = 16384) -> None:
        self.backend = backend
        self.wanted = list(events)
        self.buffer_kb = buffer_kb
        self.instance = ""
        self.enabled: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self, dest: Path) -> None:
        root = ensure_mounted(self.backend)
        self.enabled = resolve_events(self.backend, root, self.wanted)
        self.instance = f"{root}/instances/reclaimlab-{os.getpid()}"
        self.backend.record({"op": "trace_instance", "path": self.instance})
        self.backend.mkdir(self.instance)
        self.backend.write_text(f"{self.instance}/tracing_on", "0")
        self.backend.write_text(f"{self.instance}/buffer_size_kb", str(self.buffer_kb))
        for line in self.enabled:
            self.backend.write_text(f"{self.instance}/set_event", line)
        self._thread = threading.Thread(target=self._pump, args=(dest,), name="reclaimlab-trace", daemon=True)
        self._thread.start()
        self.backend.write_text(f"{self.instance}/tracing_on", "1")

    def _pump(self, dest: Path) -> None:
        try:
            self.backend.stream(f"{self.instance}/trace_pipe", dest, self._stop)
        except BaseException as e:
            self.error = e

    def stop(self) -> None:
        """Stop tracing, drain what is buffered into the file, and close the pipe (the
        instance itself is removed with the rest of the journal)."""
        if self._thread is None:
            return
        self.backend.write_text(f"{self.instance}/tracing_on", "0")
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self.error is not None:
            raise RuntimeError(f"reading {self.instance}/trace_pipe failed: {self.error}")

