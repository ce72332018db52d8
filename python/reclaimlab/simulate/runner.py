"""Run scenarios and sweeps with the Rust simulator, one process per point, with progress;
stopped by SIGINT or SIGTERM within a second, leaving each point complete or absent."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterable

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from reclaimlab import _core
from reclaimlab.simulate.capacity import fit_jobs
from reclaimlab.rundir import is_rundir
from reclaimlab.interrupts import Interrupted, Terminated, die_with_parent, signal_of, signals_unwind, unwind_on_signals


# One simulation: a sweep point resolved and checked once, in Rust, by `points`; its `label`
# (empty for a scenario without a sweep) and canonical `toml`. It is run as it is, and goes to
# a worker process pickled as its canonical TOML, which the worker trusts.
Point = _core.ResolvedScenario


class ScenarioError(ValueError):
    """A scenario that cannot be read; the message names the file, key and expectation."""


def points(path: str | Path, overrides: Iterable[str] = ()) -> list[Point]:
    """The sweep points of a scenario file, overrides applied."""
    try:
        return _core.sweep_points(str(path), list(overrides), "sim")
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def point_dir(out: Path, point: Point) -> Path:
    return out / point.label if point.label else out


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_points(pts: list[Point], out: Path, force: bool = False, jobs: int | None = None, quiet: bool = False) -> list[Path]:
    """Run every point into `out` (or `out/<label>/`); returns the run directories, in order.

    Refuses before running anything if `out` already holds a run or a sweep and `force` is
    not set, so nothing a user wrote is overwritten without asking. Each point's directory is
    complete or absent (docs/rundir.md): a sweep is written into a hidden staging directory
    renamed to `out` at its end, replacing the old one whole with `force`.

    SIGINT or SIGTERM stops it within a second: the workers are ended, and `Interrupted`
    says which points finished. Those are kept in `out`, unless `force` would have replaced
    a run there: an old run is replaced only by a complete one.
    """
    _core.check_run_dir_free(out, force)
    jobs = fit_jobs(pts, jobs or default_jobs())  # CapacityError: a point bigger than this host
    sweep = any(p.label for p in pts)
    staging = Path(_core.staging_dir(out)) if sweep else None
    finished: list[Point] = []
    with signals_unwind():
        try:
            with Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                disable=quiet, transient=False,
            ) as progress:  # fmt: skip
                task = progress.add_task(f"simulating {len(pts)} point(s)", total=len(pts))
                where = staging or out
                if jobs == 1 or len(pts) == 1:
                    for p in pts:
                        sub = progress.add_task(p.label or "run", total=1.0)
                        _core.run_scenario(p, point_dir(where, p), force, lambda f, s=sub: progress.update(s, completed=f))
                        progress.remove_task(sub)
                        finished.append(p)
                        progress.advance(task)
                else:
                    _run_in_workers(pts, where, jobs, lambda p: (finished.append(p), progress.advance(task)))
        except (KeyboardInterrupt, Terminated) as e:
            if staging is not None:  # a worker may have written its point before saying so
                finished = [p for p in pts if is_rundir(point_dir(staging, p))]
            kept = _keep_finished(staging, out, force, finished)
            unfinished = [p for p in pts if p not in finished]
            raise Interrupted(signal_of(e), [_name(p) for p in finished], [_name(p) for p in unfinished], kept) from None
        except BaseException:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        if staging is not None:
            _core.commit_run_dir(staging, out, force)
    return [point_dir(out, p) for p in pts]


def _name(p: Point) -> str:
    return p.label or "the run"


def _keep_finished(staging: Path | None, out: Path, force: bool, finished: list[Point]) -> str:
    """After an interrupt: a sweep's finished points are put into place, unless `force` is
    to replace an old run there, which is then kept as it was. What was kept, in words."""
    if staging is not None and finished and _is_free(out):
        _core.commit_run_dir(staging, out, False)
        return f"the finished points are in {out}"
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    if staging is None and finished:
        return f"run directory: {out}"
    if not _is_free(out):
        return f"{out} is kept as it was: --force replaces it only with a complete run"
    return "nothing was written"


def _is_free(out: Path) -> bool:
    try:
        _core.check_run_dir_free(out, False)
    except FileExistsError:
        return False
    return True


# --- worker processes --------------------------------------------------------------------------

# A worker's parent waits at most this long for it to stop after SIGTERM, then kills it.
STOP_GRACE_S = 5.0


def _run_in_workers(pts: list[Point], where: Path, jobs: int, done: Callable[[Point], object]) -> None:
    """Run the points in up to `jobs` worker processes (spawned: each is this program's
    child), calling `done` with each as it finishes. A worker dies with its parent (PR_SET_PDEATHSIG);
    on any exception here (SIGINT, SIGTERM, a point's error) every worker still running is
    sent SIGTERM, waited for, and killed if it has not stopped within `STOP_GRACE_S`."""
    ctx = multiprocessing.get_context("spawn")
    queue = list(pts)
    running: dict[Any, tuple[Point, Connection]] = {}
    try:
        while queue or running:
            while queue and len(running) < jobs:
                p = queue.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(p, point_dir(where, p), send, os.getpid()), name=f"reclaimlab {_name(p)}")
                proc.start()
                send.close()
                running[proc] = (p, recv)
            wait([proc.sentinel for proc in running])
            for proc in [proc for proc in running if proc.exitcode is not None]:
                p, recv = running.pop(proc)
                outcome, error = recv.recv() if recv.poll() else ("died", None)
                recv.close()
                if outcome == "done":
                    done(p)
                elif outcome == "interrupted":
                    raise KeyboardInterrupt
                elif error is not None:
                    raise error
                else:
                    raise RuntimeError(f"{_name(p)}: the worker process died (exit status {proc.exitcode})")
    finally:
        _stop(list(running))


def _stop(procs: list[Any]) -> None:
    for proc in procs:
        if proc.exitcode is None:
            proc.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.exitcode is None:
            proc.kill()
            proc.join()


def _worker(point: Point, out_dir: Path, send: Connection, parent: int) -> None:
    """One point in a worker process: its outcome ("done", "interrupted" or "error" and the
    exception) goes to the parent through `send`."""
    die_with_parent(parent)
    unwind_on_signals()
    try:
        _core.run_scenario(point, out_dir, False)
        send.send(("done", None))
    except (KeyboardInterrupt, Terminated):
        send.send(("interrupted", None))
    except Exception as e:
        send.send(("error", e))
