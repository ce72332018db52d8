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
