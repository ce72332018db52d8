"""The run directory (docs/rundir.md): writing its files and reading one back.

Simulated and live runs write the same files through these helpers, and every report reads
them back with `read_rundir`, so the format lives in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from reclaimlab import _core

Vmstat = dict[str, int]
T = TypeVar("T")

FILES = (
    "scenario.toml",
    "vmstat.before",
    "vmstat.after",
    "vmstat.samples",
    "iostat.samples",
    "cpu.samples",
    "buddyinfo.samples",
    "tasks.json",
    "zoneinfo",
    "result.json",
)


# --- /proc/vmstat text -------------------------------------------------------------------------


def parse_vmstat(text: str) -> Vmstat:
    """`/proc/vmstat` text → {counter: value}, in file order."""
    counters: Vmstat = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            counters[parts[0]] = int(parts[1])
    return counters


def format_vmstat(counters: Mapping[str, int]) -> str:
    return "".join(f"{name} {value}\n" for name, value in counters.items())


def vmstat_delta(before: Mapping[str, int], after: Mapping[str, int]) -> Vmstat:
    """after − before for every counter in `after` (counters are cumulative)."""
    return {name: value - before.get(name, 0) for name, value in after.items()}


def sum_prefix(counters: Mapping[str, int], prefix: str) -> int:
    """Σ of the counters whose name starts with `prefix` (e.g. allocstall_ over all zones)."""
    return sum(v for k, v in counters.items() if k.startswith(prefix))


# --- writing -----------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    path.write_text(text)


def write_vmstat(path: Path, counters: Mapping[str, int] | str) -> None:
    """Write a vmstat block; raw /proc text is kept as read so names and order are the kernel's."""
    write_text(path, counters if isinstance(counters, str) else format_vmstat(counters))


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=False) + "\n")


def format_timed_block(t: float, text: str) -> str:
    """One mmtests proc-vmstat style sample: `time: <s>` then the file's text (vmstat.samples,
    buddyinfo.samples)."""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"time: {t:.3f}\n{body}"


class SamplesWriter:
    """Appends samples to a file as they are taken (a killed run keeps what it sampled)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "w", encoding="utf-8")

    def timed_block(self, t: float, text: str) -> None:
        self._file.write(format_timed_block(t, text))
        self._file.flush()

    def json_line(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> SamplesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_lines(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    with SamplesWriter(path) as w:
        for r in records:
            w.json_line(r)


# --- reading -----------------------------------------------------------------------------------


def parse_timed_blocks(text: str, parse: Callable[[str], T]) -> list[tuple[float, T]]:
    """A file of `time: <s>` lines each followed by a block (vmstat.samples,
    buddyinfo.samples) → [(t, parse(block))]."""
    samples: list[tuple[float, T]] = []
    lines: list[str] = []
    t: float | None = None
    for line in text.splitlines():
        if line.startswith("time:"):
            if t is not None:
                samples.append((t, parse("\n".join(lines))))
            t, lines = float(line.split(":", 1)[1]), []
        else:
            lines.append(line)
    if t is not None:
        samples.append((t, parse("\n".join(lines))))
    return samples


def parse_vmstat_samples(text: str) -> list[tuple[float, Vmstat]]:
    """vmstat.samples → [(t, counters)]."""
    return parse_timed_blocks(text, parse_vmstat)


def parse_buddyinfo_samples(text: str) -> list[tuple[float, list[dict[str, Any]]]]:
    """buddyinfo.samples → [(t, zones)], each zone as `parse_buddyinfo` gives it."""
    return parse_timed_blocks(text, parse_buddyinfo)


_ZONE_FIELDS = ("boost", "min", "low", "high", "promo", "spanned", "present", "managed")


def parse_buddyinfo(text: str) -> list[dict[str, Any]]:
    """`/proc/buddyinfo` text → one dict per zone: `node`, `zone` and `free`, its count of
    free blocks of each order from 0 up. Lines of another shape are skipped."""
    zones: list[dict[str, Any]] = []
    for line in text.splitlines():
        head, sep, counts = line.partition(", zone")
        parts = counts.split()
        if not sep or not head.startswith("Node ") or len(parts) < 2 or not all(c.isdigit() for c in parts[1:]):
            continue
        zones.append({"node": int(head.split()[1]), "zone": parts[0], "free": [int(c) for c in parts[1:]]})
    return zones


def parse_zoneinfo(text: str) -> list[dict[str, Any]]:
    """`/proc/zoneinfo` text → one dict per zone: `node`, `zone`, `free` (its "pages free")
    and, of the lines `boost min low high promo spanned present managed`, those it has; the
    per-node stats, protection and pagesets lines are left out."""
    zones: list[dict[str, Any]] = []
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("Node ") and len(parts) >= 4 and parts[2] == "zone":
            zones.append({"node": int(parts[1].rstrip(",")), "zone": parts[3]})
        elif zones and parts[:2] == ["pages", "free"] and len(parts) == 3:
            zones[-1]["free"] = int(parts[2])
        elif zones and len(parts) == 2 and parts[0] in _ZONE_FIELDS and parts[1].isdigit():
            zones[-1][parts[0]] = int(parts[1])
    return zones


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class RunDir:
    """A run directory read back: every file parsed, missing optional files empty."""

    path: Path
    scenario: dict[str, Any]
    vmstat_before: Vmstat
    vmstat_after: Vmstat
    vmstat_samples: list[tuple[float, Vmstat]] = field(default_factory=list)
    iostat: list[dict[str, Any]] = field(default_factory=list)
    cpu: list[dict[str, Any]] = field(default_factory=list)
    # psi.samples: absent where the kernel keeps no pressure (psi=0) and in older runs
    psi: list[dict[str, Any]] = field(default_factory=list)
    tasks: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    trace_path: Path | None = None
    zones: list[dict[str, Any]] = field(default_factory=list)
    # buddyinfo.before: absent in older run directories and where a live kernel has none
    buddyinfo_before: list[dict[str, Any]] = field(default_factory=list)
    # buddyinfo.samples: absent in run directories written before it existed
    buddyinfo_samples: list[tuple[float, list[dict[str, Any]]]] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.result.get("kind", ""))

    @property
    def elapsed_s(self) -> float:
        return float(self.result.get("elapsed_s", self.tasks.get("elapsed_s", 0.0)))

    @cached_property
    def delta(self) -> Vmstat:
        """after − before, computed once: reports read many columns of one run."""
        return vmstat_delta(self.vmstat_before, self.vmstat_after)

    def tasks_of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [t for t in self.tasks.get("tasks", []) if t.get("kind") == kind]

    def watermarks(self) -> dict[str, int] | None:
        """Σ over zones of the min, low and high watermarks (pages), from `zoneinfo`; None
        for a run directory without it."""
        if not self.zones:
            return None
        return {w: sum(int(z.get(w, 0)) for z in self.zones) for w in ("min", "low", "high")}

    def free_at_start(self, order: int) -> tuple[int, int] | None:
        """Free pages as the window starts (`buddyinfo.before`, Σ over zones), as (pages in
        blocks below `order`, pages in blocks of `order` and above); None without the file."""
        if not self.buddyinfo_before:
            return None
        below = above = 0
        for z in self.buddyinfo_before:
            for o, n in enumerate(z["free"]):
                if o < order:
                    below += n << o
                else:
                    above += n << o
        return below, above


class DamagedRunDir(ValueError):
    """A run directory file that cannot be parsed (a run killed while writing it, or an
    edit): the message is one line naming the file and what is wrong."""



def _parsed(path: Path, parse: Callable[[Path], T]) -> T:
    """`parse(path)`, with a parse error turned into DamagedRunDir naming the file."""
    try:
        return parse(path)
    except ValueError as e:  # JSONDecodeError, TOMLDecodeError, UnicodeDecodeError, int()
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DamagedRunDir(f"{path}: damaged, cannot be read ({first})") from None


def _json_object(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text())
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, found {type(value).__name__}")
    return value


def read_rundir(path: Path | str) -> RunDir:
    """Read a run directory; raises FileNotFoundError naming the first required file missing,
    DamagedRunDir naming the first file that cannot be parsed."""
    import tomllib  # here: the trace report of a plain file needs no TOML

    path = Path(path)
    for required in ("scenario.toml", "vmstat.before", "vmstat.after", "result.json"):
        if not (path / required).exists():
            raise FileNotFoundError(f"{path} is not a run directory: {required} is missing")
    samples = path / "vmstat.samples"
    tasks = path / "tasks.json"
    zoneinfo = path / "zoneinfo"
    buddyinfo = path / "buddyinfo.before"
    buddyinfo_samples = path / "buddyinfo.samples"
    trace = next(
        (path / n for n in ("trace.txt", "trace.txt.zst", "trace.txt.gz") if (path / n).exists()),
        None,
    )
    return RunDir(
        path=path,
        scenario=_parsed(path / "scenario.toml", lambda f: tomllib.loads(f.read_text())),
        vmstat_before=_parsed(path / "vmstat.before", lambda f: parse_vmstat(f.read_text())),
        vmstat_after=_parsed(path / "vmstat.after", lambda f: parse_vmstat(f.read_text())),
        vmstat_samples=_parsed(samples, lambda f: parse_vmstat_samples(f.read_text())) if samples.exists() else [],
        iostat=_parsed(path / "iostat.samples", read_json_lines),
        cpu=_parsed(path / "cpu.samples", read_json_lines),
        psi=_parsed(path / "psi.samples", read_json_lines),
        tasks=_parsed(tasks, _json_object) if tasks.exists() else {},
        result=_parsed(path / "result.json", _json_object),
        trace_path=trace,
        zones=_parsed(zoneinfo, lambda f: parse_zoneinfo(f.read_text())) if zoneinfo.exists() else [],
        buddyinfo_before=_parsed(buddyinfo, lambda f: parse_buddyinfo(f.read_text())) if buddyinfo.exists() else [],
        buddyinfo_samples=(
            _parsed(buddyinfo_samples, lambda f: parse_buddyinfo_samples(f.read_text())) if buddyinfo_samples.exists() else []
        ),
    )


def label_dir(out: Path, label: str) -> Path:
    """A sweep point's run directory under `out` (`out` itself for a run of one point)."""
    return out / label if label else out


def is_rundir(path: Path) -> bool:
    return (path / "result.json").exists() and (path / "scenario.toml").exists()


def find_rundirs(path: Path | str) -> list[Path]:
    """A run directory itself, or the point directories of a sweep under it, sorted by name.
    Hidden directories are not read: `.<name>.partial-<pid>` is a run still being written (or
    a killed one's), `.<name>.old-<pid>` one being replaced (docs/rundir.md)."""
    path = Path(path)
    if is_rundir(path):
        return [path]
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".") and is_rundir(p))


def unique_names(names: list[str]) -> list[str]:
    """Report column names for runs or traces: a name that occurs more than once is numbered
    at each occurrence (`run#1`, `run#2`)."""
    return [f"{n}#{names[: i + 1].count(n)}" if names.count(n) > 1 else n for i, n in enumerate(names)]


# --- scenario.toml -----------------------------------------------------------------------------


def write_scenario(path: Path, doc: Mapping[str, Any] | str) -> None:
    """scenario.toml: TOML text as it is (a resolved scenario), or a table written as TOML by
    the core's TOML writer."""
    write_text(path, doc if isinstance(doc, str) else _core.dumps_toml(json.dumps(doc)))
