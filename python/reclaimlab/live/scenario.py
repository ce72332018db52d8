"""Live scenarios: the keys a live run uses, read from TOML and checked.

Only the sections a live run needs are read here: `[live]`, `[workload]` (with an optional
`[workload.background]` started alongside), `[sysctl]`, `[swap]` and `[memory]`; the simulator
has its own full schema and ignores what it does not model. A wrong key or type raises
`ScenarioError` naming the file, the key and what was expected.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from reclaimlab import _core

LIVE_SECTIONS = ("live", "workload", "sysctl", "swap", "memory")
# Top-level keys the simulator's schema owns; a live run carries them through untouched.
PASS_THROUGH = ("name", "description", "seed", "machine", "kernel", "variant", "sim", "scale", "report")


class ScenarioError(ValueError):
    pass


@dataclass(frozen=True)
class Key:
    kind: str  # "int", "float", "bool", "str", "list[int]", "list[str]", "int|list[int]"
    default: Any
    check: Callable[[Any], bool] | None = None
    expect: str = ""


def _nonneg(v: Any) -> bool:
    return (v if not isinstance(v, list) else min(v, default=0)) >= 0


def _pos(v: Any) -> bool:
    return (v if not isinstance(v, list) else min(v, default=0)) > 0


LIVE = {
    "sample_interval_s": Key("float", 1.0, _pos, "a positive number of seconds"),
    "trace": Key("bool", False),
    "trace_events": Key("list[str]", ["vmscan", "writeback", "compaction"]),
    "trace_buffer_kb": Key("int", 16384, _pos, "a positive size in KiB per CPU"),
    "drop_caches": Key("bool", True),
    "timeout_s": Key("float", 600.0, _pos, "a positive number of seconds"),
    "nonrotational": Key("list[str]", []),  # block devices to mark non-rotational for the run
}
MEMORY = {
    "mode": Key("str", "none", lambda v: v in ("none", "cgroup", "squeeze"), '"none", "cgroup" or "squeeze"'),
    "limit_mb": Key("int", 0, _nonneg, "a size in MiB"),
    "free_mb": Key("int", 0, _nonneg, "a size in MiB"),
    "margin_mb": Key("int", 1024, lambda v: v >= 256, "at least 256 MiB"),
}
SWAP = {
    "kind": Key("str", "none", lambda v: v in ("none", "file", "zram"), '"none", "file" or "zram"'),
    "size_mb": Key("int", 0, _nonneg, "a size in MiB"),
    "priority": Key("int", 100, lambda v: -1 <= v <= 32767, "a priority in -1..32767"),
    "path": Key("str", ""),
    "nonrotational": Key("bool", False),
}
SYSCTL = {
    "min_free_kbytes": Key("int", None, _pos, "a positive number of KiB"),
    "watermark_scale_factor": Key("int", None, lambda v: 1 <= v <= 3000, "1..3000"),
    "swappiness": Key("int", None, lambda v: 0 <= v <= 200, "0..200"),
    "dirty_ratio": Key("int", None, lambda v: 0 <= v <= 100, "0..100"),
    "dirty_background_ratio": Key("int", None, lambda v: 0 <= v <= 100, "0..100"),
    "page_cluster": Key("int", None, lambda v: 0 <= v <= 10, "0..10"),
    "vma_ra_enabled": Key("bool", None),
}
WORKLOAD_KINDS = ("dd", "dd-write", "usemem", "mapped-file-stream", "stutter")
_kind = Key("str", None, lambda v: v in WORKLOAD_KINDS, " | ".join(f'"{k}"' for k in WORKLOAD_KINDS))
_dir = Key("str", "/var/tmp/reclaimlab")
WORKLOAD: dict[str, dict[str, Key]] = {
    "dd": {
        "tasks": Key("int|list[int]", 1, _pos, "a positive task count or a list of them (a sweep)"),
        "block_kb": Key("int", 4096, _pos, "a positive block size in KiB"),
        "direct": Key("bool", False),
        "file_mb": Key("int", 1024, _pos, "a positive size in MiB"),
        "duration_s": Key("float", 30.0, _nonneg, "seconds (0 = read each file once)"),
        "dir": _dir,
        "files": Key("list[str]", []),
    },
    "dd-write": {
        "tasks": Key("int|list[int]", 1, _pos, "a positive task count or a list of them (a sweep)"),
        "block_kb": Key("int", 1024, _pos, "a positive block size in KiB"),
        "file_mb": Key("int", 1024, _pos, "a positive size in MiB per task"),
        "conv": Key("str", ""),
        "dir": _dir,
    },
    "usemem": {
        "tasks": Key("int|list[int]", 1, _pos, "a positive task count or a list of them (a sweep)"),
        "size_mb": Key("int", 256, _pos, "a positive size in MiB per task"),
        "random": Key("bool", False),
        "repeats": Key("int", 1, _nonneg, "a repeat count (0 = until runtime_s)"),
        "runtime_s": Key("float", 0.0, _nonneg, "seconds (0 = no limit)"),
    },
    "mapped-file-stream": {
        "tasks": Key("int|list[int]", 1, _pos, "a positive task count or a list of them (a sweep)"),
        "size_mb": Key("int", 1024, _pos, "a positive size in MiB per task"),
        "dir": _dir,
    },
    "stutter": {
        "memhog_mb": Key("int", 512, _pos, "a positive size in MiB"),
        "file_mb": Key("int", 1024, _pos, "a positive size in MiB"),
        "block_kb": Key("int", 2048, _pos, "a positive block size in KiB"),
        "iterations": Key("int", 1, _pos, "a positive iteration count"),
        "probe_pages": Key("int", 32768, _pos, "a positive page count"),
        "settle_s": Key("float", 2.0, _nonneg, "seconds"),
        "dir": _dir,
    },
}


def _type_ok(kind: str, v: Any) -> bool:
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "list[str]":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if kind == "list[int]":
        return isinstance(v, list) and all(_type_ok("int", x) for x in v)
    if kind == "int|list[int]":
        return _type_ok("int", v) or (_type_ok("list[int]", v) and len(v) > 0)
    raise AssertionError(kind)


def _check_table(source: str, section: str, table: Any, schema: dict[str, Key], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ScenarioError(f"{source}: [{section}] must be a table, got {table!r}")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key in skip:
            continue
        if key not in schema:
            raise ScenarioError(
                f"{source}: unknown key {section}.{key}; expected one of: {', '.join(schema)}"
            )
        spec = schema[key]
        if not _type_ok(spec.kind, value):
            raise ScenarioError(f"{source}: {section}.{key} = {value!r}: expected {spec.kind}")
        if spec.check is not None and not spec.check(value):
            raise ScenarioError(f"{source}: {section}.{key} = {value!r}: expected {spec.expect}")
        out[key] = float(value) if spec.kind == "float" else value
    for key, spec in schema.items():
        if key not in out and spec.default is not None:
            out[key] = copy.deepcopy(spec.default)
    return out


def _check_workload(source: str, section: str, table: Any) -> dict[str, Any]:
    if not isinstance(table, dict) or "kind" not in table:
        raise ScenarioError(f"{source}: [{section}] needs kind = {_kind.expect}")
    kind = table["kind"]
    if not isinstance(kind, str) or kind not in WORKLOAD_KINDS:
        raise ScenarioError(f"{source}: {section}.kind = {kind!r}: expected {_kind.expect}")
    out = {"kind": kind, **_check_table(source, section, table, WORKLOAD[kind], skip=("kind", "background"))}
    return out


@dataclass
class LiveScenario:
    """A checked live scenario: `doc` is the resolved TOML (defaults filled, --set applied)."""

    source: str
    doc: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.doc.get("name") or Path(self.source).stem)

    @property
    def live(self) -> dict[str, Any]:
        return self.doc["live"]

    @property
    def memory(self) -> dict[str, Any]:
        return self.doc["memory"]

    @property
    def swap(self) -> dict[str, Any]:
        return self.doc["swap"]

    @property
    def sysctl(self) -> dict[str, Any]:
        return self.doc["sysctl"]

    @property
    def workload(self) -> dict[str, Any]:
        return self.doc["workload"]

    @property
    def background(self) -> dict[str, Any] | None:
        return self.doc["workload"].get("background")

    def points(self) -> list[tuple[str, LiveScenario]]:
        """A sweep over task counts → (label, scenario with one task count) per point."""
        tasks = self.workload.get("tasks", 1)
        if not isinstance(tasks, list):
            return [("", self)]
        out = []
        for n in tasks:
            doc = copy.deepcopy(self.doc)
            doc["workload"]["tasks"] = n
            out.append((f"tasks-{n}", LiveScenario(self.source, doc)))
        return out


def check(doc: dict[str, Any], source: str) -> LiveScenario:
    unknown = [k for k in doc if k not in LIVE_SECTIONS and k not in PASS_THROUGH]
    if unknown:
        raise ScenarioError(
            f"{source}: unknown top-level key(s) {', '.join(unknown)}; a live run reads "
            f"[{'], ['.join(LIVE_SECTIONS)}] (and passes {', '.join(PASS_THROUGH)} through)"
        )
    if "workload" not in doc:
        raise ScenarioError(f"{source}: missing [workload] (kind = {_kind.expect})")
    resolved = {k: v for k, v in doc.items() if k in PASS_THROUGH}
    resolved["live"] = _check_table(source, "live", doc.get("live", {}), LIVE)
    resolved["memory"] = _check_table(source, "memory", doc.get("memory", {}), MEMORY)
    resolved["swap"] = _check_table(source, "swap", doc.get("swap", {}), SWAP)
    resolved["sysctl"] = _check_table(source, "sysctl", doc.get("sysctl", {}), SYSCTL)
    workload = _check_workload(source, "workload", doc["workload"])
    if "background" in doc["workload"]:
        background = _check_workload(source, "workload.background", doc["workload"]["background"])
        if isinstance(background.get("tasks"), list):
            raise ScenarioError(f"{source}: workload.background.tasks must be one count, not a sweep")
        workload["background"] = background
    resolved["workload"] = workload
    mem = resolved["memory"]
    if mem["mode"] == "cgroup" and mem["limit_mb"] <= 0:
        raise ScenarioError(f"{source}: memory.mode = \"cgroup\" needs memory.limit_mb > 0")
    if mem["mode"] == "squeeze" and mem["free_mb"] <= 0:
        raise ScenarioError(f"{source}: memory.mode = \"squeeze\" needs memory.free_mb > 0")
    if resolved["swap"]["kind"] != "none" and resolved["swap"]["size_mb"] <= 0:
        raise ScenarioError(f"{source}: swap.kind = {resolved['swap']['kind']!r} needs swap.size_mb > 0")
    return LiveScenario(source, resolved)


def parse_set(assignment: str) -> tuple[list[str], Any]:
    """`section.key=value` (value in TOML syntax; a bare word is a string) → (path, value),
    parsed as the simulator parses its overrides."""
    try:
        key, value = _core.parse_override(assignment)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return key.split("."), json.loads(value)


def load(path: Path | str, sets: list[str] | tuple[str, ...] = ()) -> LiveScenario:
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file")
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}")
    for assignment in sets:
        keys, value = parse_set(assignment)
        table = doc
        for k in keys[:-1]:
            table = table.setdefault(k, {})
            if not isinstance(table, dict):
                raise ScenarioError(f"--set {assignment!r}: {k} is not a table")
        table[keys[-1]] = value
    return check(doc, str(path))
