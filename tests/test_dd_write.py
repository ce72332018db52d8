"""dd-write (seed 001's simple-writeback) is simulated: `reclaimlab run` of the small
scenario writes a run directory with the writeback counters and prints the dd-write table,
the same columns a live run of it prints."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reclaimlab.cli import cli

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "sim" / "dd-write.toml"


def test_a_simulated_dd_write_run_has_the_writeback_counters_and_the_table(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(SCENARIO), "-o", str(out), "-j", "1", "--set", "run.duration_s=2"])
    assert r.exit_code == 0, r.output
    for header in ("job elapsed s", "throughput", "nr_vmscan_write", "immediate", "pgrotated"):
        assert header in r.output, r.output
    metrics = json.loads((out / "result.json").read_text())["metrics"]
    assert metrics["bytes"] > 0 and metrics["throughput_kB_s"] > 0
    after = dict(line.split() for line in (out / "vmstat.after").read_text().splitlines())
    assert int(after["nr_dirtied"]) > 0
    assert int(after["nr_dirty_threshold"]) > int(after["nr_dirty_background_threshold"]) > 0


def test_the_listing_says_dd_write_is_simulated() -> None:
    r = CliRunner().invoke(cli, ["scenarios", "--json"])
    assert r.exit_code == 0, r.output
    listing = json.loads(r.output)
    kinds = {w["kind"]: w for w in listing["workloads"]}
    assert kinds["dd-write"]["simulated"]
    paths = {Path(s["path"]).as_posix().split("scenarios/", 1)[-1] for s in listing["scenarios"]}
    assert "sim/dd-write.toml" in paths


def test_a_live_writer_writes_its_jobs_one_after_the_other(tmp_path: Path) -> None:
    """Each of 2 writers runs dd 3 times, a new file each, the next once the last has ended;
    the workload is complete when all 6 have, and restore removes every file."""
    import time

    from reclaimlab.live.fake import FakeBackend
    from reclaimlab.live.journal import Journal
    from reclaimlab.live.scenario import load
    from reclaimlab.live.workloads import make

    fake = FakeBackend()
    fake.dirs.add("/var/tmp")
    fake.programs["dd"] = lambda argv: (0, "", "1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.01 s, 100 MB/s\n", 0.0)
    text = '[workload]\nkind = "dd-write"\ntasks = 2\nfile_mb = 1\njobs = 3\ndir = "/var/tmp/reclaimlab-ddw"\n'
    (tmp_path / "s.toml").write_text(text)
    w = make(load(tmp_path / "s.toml").points()[0][1].workload, fake)
    fake.journal = Journal(tmp_path / "journal.jsonl")
    w.start(None)
    deadline = time.monotonic() + 10
    while not w.step(None):
        assert time.monotonic() < deadline, "the writers never finished"
        time.sleep(0.01)
    spawned = [c for c in fake.calls if c[0] == "spawn"]
    paths = [next(a for a in c if a.startswith("of=")) for c in spawned]
    assert len(paths) == 6 and len(set(paths)) == 6, paths
    assert w.metrics()["jobs"] == 6 and w.metrics()["bytes"] == 6 << 20
    fake.restore(fake.journal)
    assert not any(p.startswith("/var/tmp/reclaimlab-ddw/") for p in fake.files)


def test_a_simulated_dd_write_with_jobs_ends_when_its_files_are_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    sets = ["--set", "workload.jobs=1", "--set", "workload.file_mb=8"]
    r = CliRunner().invoke(cli, ["run", str(SCENARIO), "-o", str(out), "-j", "1", *sets])
    assert r.exit_code == 0, r.output
    result = json.loads((out / "result.json").read_text())
    assert result["metrics"]["jobs"] == 4 and result["elapsed_s"] < 20  # the scenario says 20 s
    assert "timed_out" not in result


def test_a_live_run_refuses_writers_that_never_end() -> None:
    import pytest

    from reclaimlab.live.scenario import ScenarioError, load

    with pytest.raises(ScenarioError, match=r"dd-write\.toml: key `workload\.jobs`: .*simulated only"):
        load(SCENARIO)  # scenarios/sim/dd-write.toml writes until the run stops (jobs = 0)
    assert load(SCENARIO, ["workload.jobs=2"]).points()[0][1].workload["jobs"] == 2


def test_a_live_simple_writeback_runs_the_shellpacks_rounds(tmp_path: Path) -> None:
    """cpu_factors = [1, 2] on 2 tasks: a round of 2 dd jobs of FILESIZE / 2 / BS = 2 MiB /
    2 / 256 KiB = 4 blocks, then 4 jobs of 2 blocks; each job's file is removed once it and
    the jobs before it have exited, the next round starts after the shell's `sleep 1`, and
    the test's elapsed time covers both rounds and both sleeps."""
    import time

    from reclaimlab.live.fake import FakeBackend
    from reclaimlab.live.journal import Journal
    from reclaimlab.live.scenario import load
    from reclaimlab.live.workloads import make

    fake = FakeBackend()
    fake.dirs.add("/var/tmp")

    def dd(argv: list[str]) -> tuple[int, str, str, float]:
        path = next(a for a in argv if a.startswith("of="))[3:]
        count = int(next(a for a in argv if a.startswith("count="))[6:])
        fake.files[path] = ""
        return (0, "", f"{count * 262144} bytes copied, 0.01 s, 100 MB/s\n", 0.05)

    fake.programs["dd"] = dd
    text = ('[workload]\nkind = "dd-write"\ntasks = 2\nfile_mb = 1\nblock_kb = 256\ncpu_factors = [1, 2]\n'
            'dir = "/var/tmp/reclaimlab-ddw"\n')  # fmt: skip
    (tmp_path / "s.toml").write_text(text)
    w = make(load(tmp_path / "s.toml").points()[0][1].workload, fake)
    fake.journal = Journal(tmp_path / "journal.jsonl")
    w.start(None)
    deadline = time.monotonic() + 20
    while not w.step(None):
        assert time.monotonic() < deadline, "the rounds never finished"
        time.sleep(0.01)
    spawned = [c for c in fake.calls if c[0] == "spawn"]
    counts = [next(a for a in c if a.startswith("count=")) for c in spawned]
    assert counts == ["count=4"] * 2 + ["count=2"] * 4, counts
    # Every file removed by the workload itself, in job order within each round.
    paths = [next(a for a in c if a.startswith("of="))[3:] for c in spawned]
    unlinked = [c[1] for c in fake.calls if c[0] == "unlink"]
    assert unlinked == paths, (unlinked, paths)
    # The second round started after the first's files were removed and a second's sleep.
    second = fake.calls.index(spawned[2])
    assert fake.calls.index(("unlink", paths[1])) < second
    m = w.metrics()
    assert m["completed"] and m["jobs"] == 6 and m["bytes"] == 2 * (2 << 20)
    assert [(r["cpu_factor"], r["jobs"], r["bytes_per_job"], r["jobs_done"]) for r in m["rounds"]] == [
        (1, 2, 1 << 20, 2), (2, 4, 512 << 10, 4)]  # fmt: skip
    assert all(r["job_elapsed_stddev_pct"] >= 0.0 for r in m["rounds"])
    assert m["elapsed_s"] >= 2.0 + sum(r["elapsed_s"] for r in m["rounds"]) - 0.01
    assert m["elapsed_s"] == round(w.elapsed_s, 3)


def test_bad_cpu_factors_are_refused_naming_the_key(tmp_path: Path) -> None:
    import pytest

    from reclaimlab.live.scenario import ScenarioError, load

    text = '[workload]\nkind = "dd-write"\ntasks = 4\nfile_mb = 8\ncpu_factors = [1, 2, 3]\n'
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(ScenarioError, match=r"s\.toml: key `workload\.cpu_factors`: .*double"):
        load(tmp_path / "s.toml")
