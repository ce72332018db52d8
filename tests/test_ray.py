"""Sweeps on a Ray cluster (`reclaimlab run --ray`, docs/scale-out.md): a real head started
here on 127.0.0.1 with 2 CPUs and no dashboard, stopped at the end. The run directories are
the local pool's, byte for byte; a point that fails or panics is reported while the others
finish; an interrupted sweep resumes to the same run directories."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from reclaimlab.rundir import find_rundirs

from .procs import session

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'reclaimlab[ray]')")

CLI = [sys.executable, "-c", "from reclaimlab.cli import main; main()"]
# The point the core panics in (its test hook, crates/reclaim-py/src/sim.rs): set in the head's
# environment, so in its workers'; no other test sweeps the seed.
PANIC_POINT = "seed=13"
# The head and the drivers without token authentication: a test cluster on 127.0.0.1, and no
# token written to the user's ~/.ray.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RECLAIMLAB_TEST_PANIC_POINT": PANIC_POINT}
# What the head offers tasks: 2 CPUs and 4 GB, less than a 1 TiB-per-node point needs.
HEAD_MEMORY = 4_000_000_000
SWEEP = ["--sweep", "workload.tasks=1,2,3,4"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A Ray head on 127.0.0.1 with 2 CPUs, in a session of its own so that every process it
    starts is ended with it; its address."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="rl-ray-")  # short: Ray's socket paths must fit 107 bytes
    ray = Path(sys.executable).parent / "ray"
    head = subprocess.Popen(
        [str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=2", f"--memory={HEAD_MEMORY}",
         "--include-dashboard=false", "--node-ip-address=127.0.0.1", f"--temp-dir={temp}", "--disable-usage-stats"],
        env={**os.environ, **RAY_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while True:
            assert head.poll() is None, "ray start exited"
            assert time.monotonic() < end, "the Ray head did not start"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()  # `ray start --block` stops the processes it started
        try:
            head.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        if session(head.pid):  # what did not stop with it (there should be none)
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        end = time.monotonic() + 10
        while session(head.pid) and time.monotonic() < end:  # killed, not yet gone
            time.sleep(0.1)
        subprocess.run(["rm", "-rf", temp], check=False)
        assert not session(head.pid), "a Ray process outlived the test cluster"


def reclaimlab(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env={**os.environ, **RAY_ENV, **(env or {})}, capture_output=True, text=True, timeout=300)


def tree(path: Path) -> dict[str, str]:
    """Every file under `path`, by relative name: its SHA-256 (`diff -r`, and hidden files too)."""
    return {str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(path.rglob("*")) if f.is_file()}


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory: pytest.TempPathFactory, small_scenario_path: Path) -> Path:
    """The 4-point sweep run on the local process pool: what every Ray run is held against."""
    cwd = tmp_path_factory.mktemp("pool")
    r = reclaimlab(cwd, "run", str(small_scenario_path), *SWEEP, "-o", "pool", "-j", "2")
    assert r.returncode == 0, r.stderr
    return cwd / "pool"


@pytest.fixture(scope="module")
def small_scenario_path() -> Path:
    return Path(__file__).resolve().parents[1] / "scenarios" / "small.toml"


def test_an_address_where_no_head_listens_is_refused_at_once(tmp_path: Path, small_scenario_path: Path) -> None:
    start = time.monotonic()
    r = reclaimlab(tmp_path, "run", str(small_scenario_path), "-o", "out", "--ray", f"127.0.0.1:{_free_port()}")
    assert r.returncode == 2 and "no Ray cluster at '127.0.0.1:" in r.stdout + r.stderr, r.stdout + r.stderr
    assert time.monotonic() - start < 30, "the unreachable head was retried"
    assert not (tmp_path / "out").exists()


def test_a_sweep_on_ray_writes_the_pools_bytes(tmp_path: Path, ray_head: str, pool_sweep: Path, small_scenario_path: Path) -> None:
    r = reclaimlab(tmp_path, "run", str(small_scenario_path), *SWEEP, "-o", "ray", "--ray", ray_head)
    assert r.returncode == 0, r.stderr
    assert "4 point(s): 4 done, 0 failed, 0 skipped" in r.stdout
    assert len(find_rundirs(tmp_path / "ray")) == 4
    assert tree(tmp_path / "ray") == tree(pool_sweep)
    again = reclaimlab(tmp_path, "run", str(small_scenario_path), *SWEEP, "-o", "ray", "--ray", ray_head)
    assert again.returncode == 0 and "skipped 4 of 4 point(s)" in again.stderr, again.stderr


def test_a_point_too_big_for_any_node_fails_while_the_others_finish(tmp_path: Path, ray_head: str, small_scenario_path: Path) -> None:
    big = "machine.memory_mb_per_node=1048576"  # 1 TiB a node: more state than the head's 4 GB
    r = reclaimlab(tmp_path, "run", str(small_scenario_path), "--sweep", "workload.tasks=1,2", "--sweep", f"{big.split('=')[0]}=1024,1048576",
                   "-o", "sw", "--ray", ray_head)  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert "2 of 4 point(s) failed" in r.stdout
    assert f"workload.tasks=1,{big}: needs" in r.stdout and "the largest Ray node offers" in r.stdout
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == [
        "workload.tasks=1,machine.memory_mb_per_node=1024",
        "workload.tasks=2,machine.memory_mb_per_node=1024",
    ]


@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_a_panic_in_one_point_is_reported_with_its_label(tmp_path: Path, request: pytest.FixtureRequest, small_scenario_path: Path, engine: str) -> None:
    where = ["--ray", request.getfixturevalue("ray_head")] if engine == "ray" else ["-j", "2"]
    r = reclaimlab(tmp_path, "run", str(small_scenario_path), "--sweep", "seed=11,12,13", "-o", "sw", *where)
    assert r.returncode == 1, r.stderr
    assert "1 of 3 point(s) failed" in r.stdout
    assert f"{PANIC_POINT}: the simulator panicked" in r.stdout
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == ["seed=11", "seed=12"], "complete points only, no staging left"


def test_an_interrupted_sweep_resumes_to_the_same_run_directories(tmp_path: Path, ray_head: str, small_scenario_path: Path) -> None:
    """^C once the short point is written: the Ray tasks are cancelled, the short point kept,
    and the command printed to resume runs the rest; the result is an uninterrupted run's."""
    sweep = ["--sweep", "run.duration_s=0.2,8,9,0.3"]
    proc = subprocess.Popen([*CLI, "run", str(small_scenario_path), *sweep, "-o", "sw", "--ray", ray_head],
                            cwd=tmp_path, env={**os.environ, **RAY_ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    end = time.monotonic() + 120
    while not (tmp_path / "sw" / "run.duration_s=0.2" / "result.json").exists():
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    kept = [p.name for p in find_rundirs(tmp_path / "sw")]
    assert "run.duration_s=0.2" in kept and len(kept) < 4, kept
    resume = next(line for line in err.splitlines() if line.startswith("to resume"))
    args = shlex.split(resume.partition(": ")[2])
    assert args[0] == "reclaimlab" and "-o" in args
    r = reclaimlab(tmp_path, *args[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"skipped {len(kept)} of 4 point(s)" in r.stderr
    whole = reclaimlab(tmp_path, "run", str(small_scenario_path), *sweep, "-o", "whole", "-j", "2")
    assert whole.returncode == 0, whole.stderr
    assert tree(tmp_path / "sw") == tree(tmp_path / "whole")
