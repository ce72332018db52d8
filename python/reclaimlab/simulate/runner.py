"""Run scenarios and sweeps with the Rust simulator, one process per point, with progress."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from reclaimlab import _core
from reclaimlab.simulate.capacity import fit_jobs


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
        return [Point(label, toml) for label, toml, _ in _core.sweep_points(str(path), list(overrides), "sim")]
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def point_dir(out: Path, point: Point) -> Path:
    return out / point.label if point.label else out


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_points(pts: list[Point], out: Path, force: bool = False, jobs: int | None = None, quiet: bool = False) -> list[Path]:
    """Run every point into `out` (or `out/<label>/`); returns the run directories, in order.

    Refuses before running anything if a point's directory already holds a result and
    `force` is not set, so nothing a user wrote is overwritten without asking.
    """
    if not force:
        for p in pts:
            _core.check_run_dir_free(point_dir(out, p))
    jobs = fit_jobs(pts, jobs or default_jobs())  # CapacityError: a point bigger than this host
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
        disable=quiet, transient=False,
    ) as progress:
        task = progress.add_task(f"simulating {len(pts)} point(s)", total=len(pts))
        if jobs == 1 or len(pts) == 1:
            for p in pts:
                sub = progress.add_task(p.label or "run", total=1.0)
                _core.run_scenario(p.scenario_toml, point_dir(out, p), force, lambda f, s=sub: progress.update(s, completed=f))
                progress.remove_task(sub)
                progress.advance(task)
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(_core.run_scenario, p.scenario_toml, point_dir(out, p), force) for p in pts]
                for fut in as_completed(futures):
                    fut.result()
                    progress.advance(task)
    return [point_dir(out, p) for p in pts]
