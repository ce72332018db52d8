"""The live processes of this machine, read from /proc, for tests that check what a command
left running."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable


def live_processes(where: Callable[[list[str]], bool]) -> list[int]:
    """Live (not zombie) processes whose /proc/PID/stat fields after the command name
    (state, ppid, pgrp, session, …) satisfy `where`."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[0] != "Z" and where(fields):
                out.append(int(entry))
    return out


def children(pid: int) -> list[int]:
    """Live processes whose parent is `pid`."""
    return live_processes(lambda f: int(f[1]) == pid)


def session(sid: int) -> list[int]:
    """Live processes of session `sid`."""
    return live_processes(lambda f: int(f[3]) == sid)
