"""The undo journal: every change a live run makes to the machine, written down before it is made.

The journal is a JSON file, replaced atomically and fsynced on every entry, so a run killed at
any instant leaves a journal that names every change that may have happened (an entry whose
change did not happen is harmless to undo). `reclaimlab live restore` undoes what it lists.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATE_DIR_ENV = "RECLAIMLAB_STATE_DIR"
DEFAULT_STATE_DIR = Path("/var/lib/reclaimlab")
JOURNAL_NAME = "journal.json"

Entry = dict[str, Any]


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def journal_path() -> Path:
    return state_dir() / JOURNAL_NAME


class JournalError(RuntimeError):
    """An earlier run's journal blocks a new run (it must be restored first)."""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Journal:
    path: Path
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)
    scenario: str = ""
    entries: list[Entry] = field(default_factory=list)
    undone: list[int] = field(default_factory=list)

    @classmethod
    def create(cls, path: Path | None = None, scenario: str = "") -> Journal:
        """A new journal; refuses while an earlier one exists (its changes may still be live)."""
        path = path or journal_path()
        existing = cls.load(path)
        if existing is not None:
            if existing.pid != os.getpid() and pid_alive(existing.pid) and existing.owner_is_live():
                raise JournalError(
                    f"another live run (pid {existing.pid}, scenario {existing.scenario!r}) is "
                    f"in progress; its journal is {path}. Wait for it to finish."
                )
            raise JournalError(
                f"an earlier live run (pid {existing.pid}, scenario {existing.scenario!r}) left "
                f"{len(existing.pending())} unrestored change(s) in {path}. "
                "Run `reclaimlab live restore` first."
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        journal = cls(path=path, scenario=scenario)
        journal._flush()
        return journal

    @classmethod
    def load(cls, path: Path | None = None) -> Journal | None:
        path = path or journal_path()
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as e:
            # The file is replaced atomically, so a torn file means someone else wrote it.
            raise JournalError(f"{path} is not a reclaimlab journal ({e}); inspect it by hand")
        return cls(
            path=path,
            pid=int(data["pid"]),
            started=float(data["started"]),
            scenario=str(data.get("scenario", "")),
            entries=list(data["entries"]),
            undone=list(data.get("undone", [])),
        )

    def owner_is_live(self) -> bool:
        """The pid is alive and still the process that wrote the journal (pids are reused)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return False
        return b"reclaimlab" in cmdline or b"pytest" in cmdline

    def record(self, entry: Entry) -> int:
        """Write `entry` durably before its change is made; returns its index."""
        self.entries.append(dict(entry))
        self._flush()
        return len(self.entries) - 1

    def mark_undone(self, index: int) -> None:
        self.undone.append(index)
        self._flush()

    def pending(self) -> list[tuple[int, Entry]]:
        """Entries not yet undone, newest first (the order in which to undo them)."""
        done = set(self.undone)
        return [(i, e) for i, e in reversed(list(enumerate(self.entries))) if i not in done]

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        _fsync_dir(self.path.parent)

    def _flush(self) -> None:
        data = {
            "pid": self.pid,
            "started": self.started,
            "scenario": self.scenario,
            "entries": self.entries,
            "undone": self.undone,
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
