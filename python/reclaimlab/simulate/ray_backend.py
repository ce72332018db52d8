"""Sweep points as Ray tasks (`reclaimlab run --ray`): past one machine, on a Ray cluster.

Each point is one task asking for one CPU (the simulation is single-threaded and releases the
GIL) and the memory `capacity.point_need` estimates, so Ray packs points onto nodes without
running one out of memory. A task simulates its point into a scratch directory on its node
and returns the files' bytes; the driver writes them into the run directory, staged and
renamed into place as a local run's, so the run directories are the same bytes.

Ray is an optional dependency (`pip install 'reclaimlab[ray]'`): imported only here.
"""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any, Callable

from reclaimlab import _core
from reclaimlab.simulate.capacity import bytes_text, point_need
from reclaimlab.simulate.runner import Point, simulate_point

INSTALL_HINT = "--ray needs Ray: pip install 'reclaimlab[ray]' (or pip install 'ray>=2.9')"

# A point's files, by path relative to its run directory: what a task sends back.
Files = dict[str, bytes]


class RayUnavailable(RuntimeError):
    """Ray is not installed, or no cluster answers at the address: the message says what to do."""


def connect(address: str) -> RayEngine:
    """Connect to the Ray cluster at `address` ("auto": the one this host belongs to;
    "local": a new one started in this process, on this host's CPUs). Ray's own logging is
    kept off the command line's output."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(INSTALL_HINT) from None
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
    _check_reachable(address)
    try:
        if address == "local":
            ray.init(include_dashboard=False, **quiet)
        else:
            ray.init(address=address, **quiet)
    except ConnectionError as e:
        raise RayUnavailable(
            f"no Ray cluster at {address!r} ({e}); start one (`ray start --head`, docs/scale-out.md) "
            "or pass --ray local to start one in this process"
        ) from None
    except Exception as e:  # e.g. the cluster's authentication token missing here
        raise RayUnavailable(f"cannot connect to the Ray cluster at {address!r}: {_first_line(e)} (docs/scale-out.md)") from None
    return RayEngine(ray)


# How long a head given as HOST:PORT has to accept a connection before the sweep gives up.
CONNECT_TIMEOUT_S = 5.0


def _check_reachable(address: str) -> None:
    """Refuse a HOST:PORT that accepts no TCP connection within CONNECT_TIMEOUT_S: Ray's
    own client retries an unreachable head for minutes before it says so. `auto`, `local`
    and `ray://` addresses are Ray's to resolve."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or address.startswith("ray://"):
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise RayUnavailable(
            f"no Ray cluster at {address!r} ({e.strerror or e}); start one (`ray start --head`, docs/scale-out.md) "
            "or pass --ray local to start one in this process"
        ) from None


class RayEngine:
    """A connected Ray driver that runs points as tasks; `close` disconnects (and stops a
    cluster `connect` started)."""

    # How often the driver wakes from waiting on tasks, so that ^C is seen promptly.
    WAIT_S = 0.2

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.task = ray.remote(_simulate_to_files)

    def run(self, pts: list[Point], dest: Callable[[Point], Path], overwrite: bool, outcome: Callable[[Point, str | None], None]) -> None:
        """Submit every point, then write each one's directory at `dest(point)` as its task
        ends, calling `outcome` (the error's text if it failed). On any exception (^C) the
        tasks not yet ended are cancelled, their workers killed."""
        ray = self.ray
        largest = self._largest_node_memory()
        pending: dict[Any, Point] = {}
        for p in pts:
            need = point_need(p)
            if largest is not None and need > largest:
                outcome(p, f"needs {bytes_text(need)} of memory; the largest Ray node offers {bytes_text(int(largest))}")
                continue
            ref = self.task.options(num_cpus=1, memory=need, name=f"reclaimlab {p.label or 'run'}").remote(p)
            pending[ref] = p
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.WAIT_S)
                for ref in ready:
                    p = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayError as e:  # a lost node or worker, a task that could not start
                        outcome(p, f"Ray: {_first_line(e)}")
                        continue
                    if isinstance(result, str):
                        outcome(p, result)
                        continue
                    try:
                        _write(result, dest(p), overwrite)
                    except OSError as e:  # as a local point's run directory that cannot be written
                        outcome(p, str(e))
                        continue
                    outcome(p, None)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def _largest_node_memory(self) -> float | None:
        """The most memory any live node offers to tasks; None if Ray does not say."""
        offers = [n["Resources"].get("memory", 0.0) for n in self.ray.nodes() if n.get("Alive")]
        return max(offers) if offers else None

    def close(self) -> None:
        self.ray.shutdown()


def _simulate_to_files(point: Point) -> Files | str:
    """A Ray task: simulate `point` into a scratch directory on this node; its files' bytes,
    or the point's error's text."""
    with tempfile.TemporaryDirectory(prefix="reclaimlab-") as scratch:
        run_dir = Path(scratch) / "run"
        error = simulate_point(point, run_dir)
        if error is not None:
            return error
        return {str(f.relative_to(run_dir)): f.read_bytes() for f in sorted(run_dir.rglob("*")) if f.is_file()}


def _write(files: Files, dest: Path, overwrite: bool) -> None:
    """A point's files into `dest`, complete or absent: staged beside it, renamed into place."""
    staging = Path(_core.staging_dir(dest))
    try:
        for name, data in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        _core.commit_run_dir(staging, dest, overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
