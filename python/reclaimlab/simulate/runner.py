"""Run scenarios and sweeps with the Rust simulator, one process per point (or one Ray task,
`ray_backend`), with progress; a sweep resumes where it stopped, a failed point is reported
while the others finish, and SIGINT or SIGTERM stops it within a second, leaving each point
complete or absent."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import sys
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from reclaimlab import _core
from reclaimlab.simulate.capacity import fit_jobs
from reclaimlab.rundir import is_rundir, label_dir
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
    return label_dir(out, point.label)


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_points(pts: list[Point], out: Path, force: bool = False, jobs: int | None = None, quiet: bool = False,
               ray_address: str | None = None, resume: str = "") -> list[Path]:  # fmt: skip
    """Run every point into `out` (or `out/<label>/`); returns the run directories, in order.

    A sweep resumes: a point whose directory in `out` is complete and holds the same resolved
    scenario is skipped (deterministic: it would be written again byte for byte), and each
    other point is written into `out` as it finishes, complete or absent (docs/rundir.md). A
    point's directory holding another scenario's run is refused before anything runs, as is a
    single run over a run, unless `force`: then the whole of `out` is replaced, by a complete
    run only (the sweep is staged in a hidden directory renamed to `out` at its end).

    The points run in local worker processes (`jobs`), or as Ray tasks on the cluster at
    `ray_address` (`ray_backend`). A point that fails does not stop the others: at the end
    `PointsFailed` names each with its error. SIGINT or SIGTERM stops it within a second,
    and `Interrupted` says which points finished and, with `resume`, how to go on.
    """
    sweep = any(p.label for p in pts)
    replace = force and not _is_free(out)  # --force over a run: staged whole, put in place only when complete
    if sweep and not replace:
        todo = _not_yet_complete(pts, out)  # FileExistsError: a directory in the way
        staging, where = None, out
    else:
        _core.check_run_dir_free(out, force)
        todo = list(pts)
        staging = Path(_core.staging_dir(out)) if sweep else None
        where = staging or out
    skipped = len(pts) - len(todo)
    if skipped:
        _note(f"skipped {skipped} of {len(pts)} point(s): already complete in {out} (--force runs them again)")
    engine = None
    if ray_address is not None and todo:
        from reclaimlab.simulate import ray_backend

        engine = ray_backend.connect(ray_address)  # RayUnavailable; before our signal handlers, which it must not replace
    elif todo:
        jobs = fit_jobs(todo, jobs or default_jobs())  # CapacityError: a point bigger than this host
    existed = out.exists()

    def in_place() -> list[Point]:
        return [p for p in pts if is_rundir(point_dir(out, p))]

    done: list[Point] = []
    failed: list[tuple[Point, str]] = []
    overwrite = force and not sweep  # a single run replaces its directory itself, when complete
    with signals_unwind():
        try:
            with _progress(len(pts), skipped, quiet) as tally:

                def outcome(p: Point, error: str | None) -> None:
                    (done.append(p) if error is None else failed.append((p, error)))
                    tally(error is None)

                if engine is not None:
                    engine.run(todo, lambda p: point_dir(where, p), overwrite, outcome)
                else:
                    _run_locally(todo, where, overwrite, jobs or 1, tally.bar, outcome)
        except (KeyboardInterrupt, Terminated) as e:
            # A worker may have written its point before saying so: a sweep in place is looked at.
            finished = in_place() if sweep and staging is None else done
            kept = _kept(out, existed, staging, finished)
            if sweep and staging is None and resume:
                kept += f"\nto resume (the finished points are skipped): {resume}"
            unfinished = [p for p in pts if p not in finished]
            raise Interrupted(signal_of(e), [_name(p) for p in finished], [_name(p) for p in unfinished], kept) from None
        except BaseException:
            _kept(out, existed, staging, [])
            raise
        finally:
            if engine is not None:
                engine.close()
    if failed:
        kept = _kept(out, existed, staging, in_place() if sweep and staging is None else [])
        if sweep and staging is None and resume:
            kept += f"\nto run the failed points again (the complete ones are skipped): {resume}"
        raise PointsFailed(failed, len(pts), kept)
    if staging is not None:
        _core.commit_run_dir(staging, out, force)
    return [point_dir(out, p) for p in pts]


def _kept(out: Path, existed: bool, staging: Path | None, finished: list[Point]) -> str:
    """After a run that did not complete: a staged sweep is dropped (an old run is replaced
    only by a complete one), a sweep's directory made by this run and left empty removed.
    What `out` holds now, in words."""
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    elif not existed:
        with contextlib.suppress(OSError):  # absent, or holds finished points
            out.rmdir()
    if finished and staging is None:
        return f"the finished points are in {out}" if any(p.label for p in finished) else f"run directory: {out}"
    if not _is_free(out):
        return f"{out} is kept as it was: --force replaces it only with a complete run"
    return "nothing was written"


class PointsFailed(RuntimeError):
    """Points whose simulation failed (a bad parameter, a panic in the core, a lost Ray node)
    while the others ran to the end: each point's label and error, and what was kept."""

    def __init__(self, failed: list[tuple[Point, str]], total: int, kept: str) -> None:
        self.failed = [(_name(p), error) for p, error in failed]
        lines = [f"{len(failed)} of {total} point(s) failed:"]
        lines += [f"  {name}: {error}" for name, error in self.failed]
        lines.append(kept)
        super().__init__("\n".join(lines))


def simulate_point(point: Point, out_dir: Path, overwrite: bool = False, progress: Callable[[float], object] | None = None) -> str | None:
    """Simulate one point into `out_dir`: None once it is written, or its error's text
    when it failed. SIGINT and SIGTERM (KeyboardInterrupt, Terminated) still propagate."""
    try:
        _core.run_scenario(point, out_dir, overwrite, progress)
    except _core.PanicException as e:  # a BaseException: named here so nothing else is caught with it
        return f"the simulator panicked: {e}"
    except Exception as e:
        return str(e) or type(e).__name__
    return None


def _not_yet_complete(pts: list[Point], out: Path) -> list[Point]:
    """The points of a sweep that `out` does not hold complete. FileExistsError if `out`
    holds files that are not runs, or a point's directory holds a run of another scenario:
    nothing a user wrote is replaced without --force."""
    _core.check_run_dir_free(out, True)  # absent, empty, or runs only
    todo = []
    for p in pts:
        d = point_dir(out, p)
        if not is_rundir(d):
            todo.append(p)
        elif (d / "scenario.toml").read_text() != p.toml:
            raise FileExistsError(f"{d} already holds a run of another scenario; choose another directory or pass --force")
    return todo


def _note(text: str) -> None:
    print(text, file=sys.stderr)


class _Tally:
    """The sweep's bar: points done, failed and skipped, advanced as each point ends."""

    def __init__(self, bar: Progress, total: int, skipped: int) -> None:
        self.bar, self.total, self.counts = bar, total, {"done": 0, "failed": 0, "skipped": skipped}
        self.task = bar.add_task(self._description(), total=total, completed=skipped)

    def _description(self) -> str:
        return f"simulating {self.total} point(s): " + ", ".join(f"{n} {what}" for what, n in self.counts.items())

    def __call__(self, ok: bool) -> None:
        self.counts["done" if ok else "failed"] += 1
        self.bar.update(self.task, advance=1, description=self._description())


@contextlib.contextmanager
def _progress(total: int, skipped: int, quiet: bool) -> Iterator[_Tally]:
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
        disable=quiet, transient=False,
    ) as bar:  # fmt: skip
        yield _Tally(bar, total, skipped)


def _run_locally(todo: list[Point], where: Path, overwrite: bool, jobs: int, progress: Progress, outcome: Callable[[Point, str | None], None]) -> None:
    """In this process (one job, or one point, with a bar of its own) or in worker processes."""
    if jobs == 1 or len(todo) == 1:
        for p in todo:
            sub = progress.add_task(p.label or "run", total=1.0)
            error = simulate_point(p, point_dir(where, p), overwrite, lambda f, s=sub: progress.update(s, completed=f))
            progress.remove_task(sub)
            outcome(p, error)
    else:
        _run_in_workers(todo, where, jobs, outcome)


def _name(p: Point) -> str:
    return p.label or "the run"


def _is_free(out: Path) -> bool:
    try:
        _core.check_run_dir_free(out, False)
    except FileExistsError:
        return False
    return True


# --- worker processes --------------------------------------------------------------------------

# A worker's parent waits at most this long for it to stop after SIGTERM, then kills it.
STOP_GRACE_S = 5.0


def _run_in_workers(pts: list[Point], where: Path, jobs: int, outcome: Callable[[Point, str | None], None]) -> None:
    """Run the points in up to `jobs` worker processes (spawned: each is this program's
    child), calling `outcome` with each as it ends (its error's text if it failed). A worker
    dies with its parent (PR_SET_PDEATHSIG); on any exception here (SIGINT, SIGTERM) every
    worker still running is sent SIGTERM, waited for, and killed if it has not stopped
    within `STOP_GRACE_S`."""
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
                kind, error = recv.recv() if recv.poll() else ("died", None)
                recv.close()
                if kind == "interrupted":
                    raise KeyboardInterrupt
                if kind == "died":
                    error = f"the worker process died (exit status {proc.exitcode})"
                outcome(p, error)
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
    """One point in a worker process: its outcome ("ended" and None or the error's text,
    or "interrupted") goes to the parent through `send`."""
    die_with_parent(parent)
    unwind_on_signals()
    try:
        send.send(("ended", simulate_point(point, out_dir)))
    except (KeyboardInterrupt, Terminated):
        send.send(("interrupted", None))
