"""Stopping on SIGINT and SIGTERM (docs/rundir.md, "Interrupts"): SIGTERM raised as an
exception like SIGINT's KeyboardInterrupt, signals held while a stop is cleaned up, worker
processes that end with their parent, and the report of what an interrupted run finished.

Imported by the top-level command line, so it imports nothing heavy."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from typing import Any, Iterator

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Terminated(BaseException):
    """SIGTERM, turned into an exception so a run unwinds and cleans up as on SIGINT."""


def signal_of(e: BaseException) -> int:
    """The signal an interruption came from: SIGTERM for `Terminated`, SIGINT otherwise."""
    return signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT


# Set by the first SIGINT or SIGTERM a run unwinds on: the process is stopping.
_stopping = threading.Event()


def unwind_on_signals() -> tuple[Any, Any]:
    """From now on SIGINT raises KeyboardInterrupt and SIGTERM `Terminated`, once: a later
    signal finds the run already stopping and is ignored, so a second ^C cannot cut the
    stop short. Returns the old handlers (SIGINT's, SIGTERM's)."""

    def on_signal(signum: int, frame: Any) -> None:
        if _stopping.is_set():
            return
        _stopping.set()
        if signum == signal.SIGTERM:
            raise Terminated(f"signal {signum}")
        raise KeyboardInterrupt

    return signal.signal(signal.SIGINT, on_signal), signal.signal(signal.SIGTERM, on_signal)


@contextlib.contextmanager
def signals_unwind() -> Iterator[None]:
    """`unwind_on_signals` until the block ends (on the main thread only: elsewhere Python
    cannot install handlers and this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping.clear()  # a new run: nothing is stopping yet
    old_int, old_term = unwind_on_signals()
    try:
        yield
    finally:
        # Once stopping, a later signal stays ignored: the old handler would raise it again
        # while the stop is reported, and the process would die of it instead of exiting 130.
        stopped = _stopping.is_set()
        signal.signal(signal.SIGINT, signal.SIG_IGN if stopped else old_int)
        signal.signal(signal.SIGTERM, signal.SIG_IGN if stopped else old_term)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while cleaning up (bounded work): a second ^C must not leave it
    half done. They are delivered when the block ends."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def die_with_parent(parent: int) -> None:
    """Have the kernel send this process SIGTERM when its parent dies (prctl
    PR_SET_PDEATHSIG), so no worker outlives a killed parent; if the parent `parent` is
    already gone, exit now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


class Interrupted(Exception):
    """A run stopped by SIGINT or SIGTERM: which points finished and which did not, and what
    was kept. The command line prints it and exits 128 + the signal (130, or 143)."""

    def __init__(self, signum: int, finished: list[str], unfinished: list[str], kept: str) -> None:
        self.signum = signum
        self.finished = finished
        self.unfinished = unfinished
        self.kept = kept
        super().__init__(self.report())

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def report(self) -> str:
        name = signal.Signals(self.signum).name
        total = len(self.finished) + len(self.unfinished)
        lines = [f"interrupted ({name}): {len(self.finished)} of {total} point(s) finished"]
        if self.finished:
            lines.append("  finished: " + ", ".join(self.finished))
        if self.unfinished:
            lines.append("  not finished: " + ", ".join(self.unfinished))
        lines.append(self.kept)
        return "\n".join(lines)
