"""Run scenarios and sweeps with the Rust simulator, one process per point, with progress."""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from reclaimlab import _core


@dataclass(frozen=True)
class Point:
    """One simulation: a label (empty for a scenario without a sweep) and its resolved TOML."""

    label: str
    scenario_toml: str


class ScenarioError(ValueError):
    """A scenario that cannot be read; the message names the file, key and expectation."""


def points(path: str | Path, overrides: Iterable[str] = ()) -> list[Point]:
    """The sweep points of a scenario file, overrides applied."""
    try:
        return [Point(label, toml) for label, toml in _core.sweep_points(str(path), list(overrides))]
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def point_dir(out: Path, point: Point) -> Path:
    return out / point.label if point.label else out


def _run_one(scenario_toml: str, out_dir: str, force: bool) -> dict:
    return json.loads(_core.run_scenario(scenario_toml, Path(out_dir), force))


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_points(pts: list[Point], out: Path, force: bool = False, jobs: int | None = None, quiet: bool = False) -> dict[str, dict]:
    """Run every point into `out` (or `out/<label>/`); returns label → result.json.

    Refuses before running anything if a point's directory already holds a result and
    `force` is not set, so nothing a user wrote is overwritten without asking.
    """
    if not force:
        taken = [point_dir(out, p) for p in pts if (point_dir(out, p) / "result.json").exists()]
        if taken:
            raise FileExistsError(f"{taken[0]} already holds a run (result.json); choose another -o directory or pass --force")
    jobs = jobs or default_jobs()
    results: dict[str, dict] = {}
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
        disable=quiet, transient=False,
    ) as progress:
        task = progress.add_task(f"simulating {len(pts)} point(s)", total=len(pts))
        if jobs == 1 or len(pts) == 1:
            for p in pts:
                sub = progress.add_task(p.label or "run", total=1.0)
                res = json.loads(
                    _core.run_scenario(p.scenario_toml, point_dir(out, p), force, lambda f, s=sub: progress.update(s, completed=f))
                )
                progress.remove_task(sub)
                results[p.label] = res
                progress.advance(task)
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(_run_one, p.scenario_toml, str(point_dir(out, p)), force): p for p in pts}
                for fut in as_completed(futures):
                    results[futures[fut].label] = fut.result()
                    progress.advance(task)
    return {p.label: results[p.label] for p in pts}
