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
