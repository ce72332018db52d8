"""Stopping a simulation (docs/rundir.md, "Interrupts"): SIGINT and SIGTERM stop a point and a
sweep within seconds, no worker outlives its parent, a run directory is complete or absent,
and `--force` replaces a run directory whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from reclaimlab.cli import cli
from reclaimlab.rundir import FILES, find_rundirs

from .procs import children

# A simulated run also writes its pressure (a live one where the kernel keeps it).
SIM_FILES = sorted([*FILES, "psi.samples", "pressure_memory", "buddyinfo.before", "buddyinfo", "pagetypeinfo"])

CLI = [sys.executable, "-c", "from reclaimlab.cli import main; main()"]
STOP_S = 5.0  # what the issue asks: a stopped run is gone within this


def start(tmp_path: Path, *args: str, group: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=group)


def until(what: Callable[[], object], timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def workers_of(pid: int) -> list[int]:
    """The sweep's worker processes (multiprocessing's spawned children); a child that exits
    between being listed and being read is none."""

    def cmdline(c: int) -> bytes:
        try:
            return Path(f"/proc/{c}/cmdline").read_bytes()
        except OSError:
            return b""

    return [c for c in children(pid) if b"spawn_main" in cmdline(c)]


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def stop(proc: subprocess.Popen[str], send: Callable[[], None]) -> tuple[int, str, float]:
    """Send the signal(s); the exit code, stderr and seconds it took to exit."""
    t0 = time.monotonic()
    send()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode, err, time.monotonic() - t0


def sweep_scenario(tmp_path: Path, small_scenario: Path, durations: str) -> Path:
    s = tmp_path / "sweep.toml"
    s.write_text(small_scenario.read_text() + f'\n[sweep]\n"run.duration_s" = [{durations}]\n')
    return s


def hidden(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("."))


def test_sigint_stops_a_running_point_and_writes_nothing(tmp_path: Path, small_scenario: Path) -> None:
    proc = start(tmp_path, "run", str(small_scenario), "--set", "run.duration_s=600", "-o", "one")
    until(lambda: hidden(tmp_path))  # the point is being written: .one.partial-<pid>
    time.sleep(0.5)
    rc, err, took = stop(proc, lambda: proc.send_signal(signal.SIGINT))
    assert rc == 130, err
    assert took < STOP_S
    assert "interrupted (SIGINT): 0 of 1 point(s) finished" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "neither the run nor its staging directory"


@pytest.mark.parametrize("how", ["parent", "group twice"])
def test_sigint_stops_a_sweep_keeping_only_complete_points(tmp_path: Path, small_scenario: Path, how: str) -> None:
    """-j 2 over a short point and two long ones: ^C once the short one is written. The
    workers are gone, the short point is complete, the others absent. With "group twice",
    as a terminal's ^C ^C: every process gets SIGINT, twice."""
    s = sweep_scenario(tmp_path, small_scenario, "0.2, 600.0, 600.0")
    proc = start(tmp_path, "run", str(s), "-o", "sw", "-j", "2", group=how != "parent")
    until(lambda: (tmp_path / "sw" / "run.duration_s=0.2" / "result.json").exists())  # each point written as it ends
    until(lambda: len(workers_of(proc.pid)) == 2)  # the next long point has started too
    workers = workers_of(proc.pid)
    others = children(proc.pid)  # multiprocessing's resource tracker too, which ends at EOF

    def send() -> None:
        if how == "parent":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGINT)

    rc, err, took = stop(proc, send)
    assert rc == 130, err
    assert took < STOP_S
    assert not [w for w in workers if alive(w)], "no worker outlives the sweep"
    until(lambda: not [w for w in others if alive(w)], timeout=2.0)
    assert "1 of 3 point(s) finished" in err and "finished: run.duration_s=0.2" in err
    assert "not finished: run.duration_s=600.0, run.duration_s=600.0" in err
    assert f"to resume (the finished points are skipped): reclaimlab run {s} -o sw -j 2" in err
    assert hidden(tmp_path) == [] and hidden(tmp_path / "sw") == []
    assert [p.name for p in (tmp_path / "sw").iterdir()] == ["run.duration_s=0.2"]
    assert sorted(p.name for p in (tmp_path / "sw" / "run.duration_s=0.2").iterdir()) == SIM_FILES


def test_sigterm_ends_the_sweep_and_its_workers(tmp_path: Path, small_scenario: Path) -> None:
    s = sweep_scenario(tmp_path, small_scenario, "600.0, 600.0")
    proc = start(tmp_path, "run", str(s), "-o", "sw", "-j", "2")
    until(lambda: len(workers_of(proc.pid)) == 2)
    time.sleep(1.0)
    workers = children(proc.pid)
    rc, err, took = stop(proc, lambda: proc.send_signal(signal.SIGTERM))
    assert rc == 143, err
    assert took < STOP_S
    assert "interrupted (SIGTERM)" in err and "nothing was written" in err
    until(lambda: not [w for w in workers if alive(w)], timeout=2.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.toml"]


def test_a_killed_sweeps_workers_die_with_it(tmp_path: Path, small_scenario: Path) -> None:
    s = sweep_scenario(tmp_path, small_scenario, "600.0, 600.0")
    proc = start(tmp_path, "run", str(s), "-o", "sw", "-j", "2")
    until(lambda: len(workers_of(proc.pid)) == 2)
    time.sleep(1.0)
    workers = children(proc.pid)
    stop(proc, proc.kill)
    until(lambda: not [w for w in workers if alive(w)], timeout=STOP_S)
    # Each point is written into sw/ as it finishes: none had, so nothing but (at most) a
    # point's hidden staging directory is there, and no point looks complete.
    sw = tmp_path / "sw"
    assert not sw.exists() or [p.name for p in sw.iterdir()] == hidden(sw), "only hidden staging directories are left"


def test_an_interrupted_force_run_keeps_the_old_run(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "one"
    assert invoke("run", str(small_scenario), "-o", str(out)).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = start(tmp_path, "run", str(small_scenario), "--set", "run.duration_s=600", "-o", "one", "--force")
    until(lambda: hidden(tmp_path))
    rc, err, _ = stop(proc, lambda: proc.send_signal(signal.SIGINT))
    assert rc == 130 and "kept as it was" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert hidden(tmp_path) == []


# --- --force replaces a run directory whole ------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_force_over_a_traced_run_with_an_untraced_one_leaves_no_trace(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "run"
    assert invoke("run", str(small_scenario), "-o", str(out), "--set", "run.trace=true").exit_code == 0
    assert (out / "trace.txt").stat().st_size > 0
    r = invoke("run", str(small_scenario), "-o", str(out), "--force", "--set", "workload.tasks=2")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == SIM_FILES
    assert json.loads((out / "result.json").read_text())["metrics"]["tasks"] == 2
    r = CliRunner().invoke(cli, ["trace", "report", str(out)])
    assert r.exit_code == 2 and "has no trace.txt" in r.output
    assert hidden(tmp_path) == []


def test_force_over_a_sweep_leaves_none_of_its_old_points(tmp_path: Path, small_scenario: Path) -> None:
    s = sweep_scenario(tmp_path, small_scenario, "0.1, 0.2")
    assert invoke("run", str(s), "-o", str(tmp_path / "sw"), "-j", "1").exit_code == 0
    s.write_text(s.read_text().replace("[0.1, 0.2]", "[0.3]"))
    assert invoke("run", str(s), "-o", str(tmp_path / "sw"), "-j", "1", "--force").exit_code == 0
    assert [p.name for p in find_rundirs(tmp_path / "sw")] == ["run.duration_s=0.3"]
    assert [p.name for p in (tmp_path / "sw").iterdir()] == ["run.duration_s=0.3"]


def test_force_never_replaces_a_directory_that_holds_other_files(tmp_path: Path, small_scenario: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    r = invoke("run", str(small_scenario), "-o", str(mine), "--force")
    assert r.exit_code == 2 and "not runs" in r.output
    assert (mine / "notes.txt").read_text() == "keep me"


def test_readers_skip_hidden_directories(tmp_path: Path, small_scenario: Path) -> None:
    s = sweep_scenario(tmp_path, small_scenario, "0.1")
    assert invoke("run", str(s), "-o", str(tmp_path / "sw"), "-j", "1").exit_code == 0
    (tmp_path / "sw" / ".run.duration_s=0.5.partial-1").mkdir()
    for name in ("result.json", "scenario.toml", "vmstat.before", "vmstat.after"):
        (tmp_path / "sw" / ".run.duration_s=0.5.partial-1" / name).write_text("{}")
    assert [p.name for p in find_rundirs(tmp_path / "sw")] == ["run.duration_s=0.1"]


def reading_stdin(pid: int) -> bool:
    """Whether a thread of `pid` is blocked in read(0, …) (x86-64's syscall 0 on fd 0, as
    /proc/PID/task/TID/syscall shows it): the command has started and waits for its input."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if Path(f"/proc/{pid}/task/{tid}/syscall").read_text().startswith("0 0x0 "):
                return True
        except OSError:
            continue
    return False


def test_sigint_stops_a_trace_report_waiting_for_its_input(tmp_path: Path) -> None:
    proc = subprocess.Popen([*CLI, "trace", "report", "-"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if os.uname().machine == "x86_64":
        until(lambda: reading_stdin(proc.pid))  # started, and reading a stdin that never ends
    else:
        time.sleep(3)
    rc, err, took = stop(proc, lambda: proc.send_signal(signal.SIGINT))
    assert rc == 130 and "interrupted" in err, err
    assert took < STOP_S
