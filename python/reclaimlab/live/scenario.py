"""Live scenarios: a scenario file read for a live run.

The schema is the simulator's (crates/reclaim-sim/src/scenario), read through the bindings:
one file runs both ways, each key has one name, and a key a live run cannot honour (a kernel
variant, a measured window that starts when kswapd wakes, …) is refused naming the file and
the key. A live run uses `[workload]` (with `[workload.background]`, or several
`[[workload.background]]`, started alongside), `[sysctl]` (only the keys the file sets are written), `[memory]`, `[swap]`,
`[run]` (`duration_s`, `sample_interval_s`, `trace`) and `[live]`; `[machine]`, `[costs]` and
`[variant]` describe the simulated machine and are not read here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reclaimlab import _core


class ScenarioError(ValueError):
    pass


@dataclass
class LiveScenario:
    """One point of a live scenario: `doc` is the resolved scenario (defaults filled, --set
    applied, the sweep expanded), `toml` the same as scenario.toml text."""

    source: str
    label: str
    doc: dict[str, Any]
    toml: str

    @property
    def name(self) -> str:
        name = str(self.doc.get("name") or "unnamed")
        return Path(self.source).stem if name == "unnamed" else name

    @property
    def live(self) -> dict[str, Any]:
        return self.doc["live"]

    @property
    def run(self) -> dict[str, Any]:
        return self.doc["run"]

    @property
    def memory(self) -> dict[str, Any]:
        return self.doc["memory"]

    @property
    def swap(self) -> dict[str, Any]:
        return self.doc["swap"]

    @property
    def swap_areas(self) -> list[dict[str, Any]]:
        """Every swap area to add, in swapon order: `[swap]` (unless its kind is "none"),
        then `[[swap.also]]`'s."""
        first = [self.swap] if self.swap["kind"] != "none" else []
        return first + list(self.swap.get("also", []))

    @property
    def sysctl(self) -> dict[str, Any]:
        """The sysctls the scenario sets (a key left out is left as the machine has it)."""
        return self.doc["sysctl"]

    @property
    def workload(self) -> dict[str, Any]:
        """The workload's keys, without its background."""
        return {k: v for k, v in self.doc["workload"].items() if k != "background"}

    @property
    def backgrounds(self) -> list[dict[str, Any]]:
        """Every background workload, in order: `[workload.background]`'s table, or each of
        `[[workload.background]]`'s (the schema's `WorkloadSpec::backgrounds`)."""
        bg = self.doc["workload"].get("background")
        if bg is None:
            return []
        return list(bg) if isinstance(bg, list) else [bg]

    @property
    def background_list(self) -> bool:
        """The scenario gave its backgrounds as a list (`[[workload.background]]`): result.json
        then reports them as a list, in order, as the simulator's does."""
        return isinstance(self.doc["workload"].get("background"), list)


@dataclass
class LiveSweep:
    """A scenario file's points, each checked for a live run."""

    source: str
    points_: list[LiveScenario]

    @property
    def name(self) -> str:
        return self.points_[0].name

    def points(self) -> list[tuple[str, LiveScenario]]:
        return [(p.label, p) for p in self.points_]


def load(path: Path | str, sets: list[str] | tuple[str, ...] = ()) -> LiveSweep:
    """Read and check a scenario for a live run; ScenarioError names the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file")
    try:
        points = _core.sweep_points(str(path), list(sets), "live")
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return LiveSweep(str(path), [LiveScenario(str(path), p.label, json.loads(p.json), p.toml) for p in points])
