"""The simulator's command line: run directories, refusal to overwrite, scenario errors,
determinism, and the seed-000 table."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaimlab.cli import cli
from reclaimlab.rundir import read_rundir

RUN_FILES = ["scenario.toml", "vmstat.before", "vmstat.after", "vmstat.samples", "iostat.samples", "cpu.samples", "buddyinfo.samples", "tasks.json", "zoneinfo", "buddyinfo.before", "buddyinfo", "pagetypeinfo", "result.json"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def table_rows(output: str) -> list[dict[str, str]]:
    """The rows of the table `reclaimlab run` printed, by column header."""
    lines = output.splitlines()
    header = next(line for line in lines if line.startswith("┃")).strip("┃").split("┃")
    cells = [line.strip("│").split("│") for line in lines if line.startswith("│")]
    return [dict(zip((h.strip() for h in header), (c.strip() for c in row))) for row in cells]


def test_run_writes_a_complete_run_directory(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "run"
    r = invoke("run", str(small_scenario), "-o", str(out), "-j", "1")
    assert r.exit_code == 0, r.output
    for name in RUN_FILES:
        assert (out / name).stat().st_size > 0, name
    result = json.loads((out / "result.json").read_text())
    assert result["kind"] == "sim"
    m = result["metrics"]
    assert m["tasks"] == 12 and m["throughput_kB_s"] > 0
    assert m["throughput_kB_s"] == pytest.approx(m["bytes"] / 1024 / result["elapsed_s"])
    before = dict(line.split() for line in (out / "vmstat.before").read_text().splitlines())
    after = dict(line.split() for line in (out / "vmstat.after").read_text().splitlines())
    pgscan_kswapd = int(after["pgscan_kswapd"]) - int(before["pgscan_kswapd"])
    assert pgscan_kswapd > 0, "the small scenario reclaims"
    # the printed row reads the same delta: dd's table, throughput and pgscan_kswapd among it
    row = table_rows(r.output)[0]
    assert row["dd"] == "12" and row["pgscan_kswapd"] == str(pgscan_kswapd)
    assert row["throughput"] == f"{m['throughput_kB_s']:.2f}"
    tasks = json.loads((out / "tasks.json").read_text())
    assert {t["comm"] for t in tasks["tasks"]} >= {"dd", "kswapd0", "kswapd1"}
    # zoneinfo: /proc/zoneinfo's layout, each zone's watermarks in order and its free pages
    zones = read_rundir(out).zones
    assert [(z["node"], z["zone"]) for z in zones] == [(0, "DMA32"), (0, "Normal"), (1, "Normal")]
    assert all(0 < z["min"] < z["low"] < z["high"] < z["managed"] for z in zones)
    assert sum(z["free"] for z in zones) == int(after["nr_free_pages"])


def test_run_refuses_to_overwrite_without_force(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "run"
    assert invoke("run", str(small_scenario), "-o", str(out)).exit_code == 0
    marker = (out / "result.json").read_text()
    r = invoke("run", str(small_scenario), "-o", str(out), "--set", "workload.tasks=2")
    assert r.exit_code == 2
    assert "already holds a run" in r.output
    assert (out / "result.json").read_text() == marker
    assert invoke("run", str(small_scenario), "-o", str(out), "--force", "--set", "workload.tasks=2").exit_code == 0
    assert json.loads((out / "result.json").read_text())["metrics"]["tasks"] == 2


def test_scenario_errors_name_file_key_and_expectation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[workload]\nkind = "dd"\ntasks = "many"\n')
    r = invoke("run", str(bad), "-o", str(tmp_path / "out"))
    assert r.exit_code == 2
    assert "bad.toml" in r.output and "workload.tasks" in r.output and "expected" in r.output
    assert not (tmp_path / "out").exists()


def test_bad_override_names_the_key(tmp_path: Path, small_scenario: Path) -> None:
    r = invoke("run", str(small_scenario), "-o", str(tmp_path / "o"), "--set", "variant.kswapd_threads=99")
    assert r.exit_code == 2 and "variant.kswapd_threads" in r.output


def test_same_scenario_and_seed_give_identical_run_directories(tmp_path: Path, small_scenario: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke("run", str(small_scenario), "-o", str(a)).exit_code == 0
    assert invoke("run", str(small_scenario), "-o", str(b)).exit_code == 0
    for name in RUN_FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_sweep_writes_one_directory_per_point(tmp_path: Path, small_scenario: Path) -> None:
    text = small_scenario.read_text() + '\n[sweep]\n"workload.tasks" = [2, 6]\n'
    s = tmp_path / "sweep.toml"
    s.write_text(text)
    r = invoke("run", str(s), "-o", str(tmp_path / "sw"), "-j", "2")
    assert r.exit_code == 0, r.output
    tasks = sorted(json.loads((d / "result.json").read_text())["metrics"]["tasks"] for d in (tmp_path / "sw").iterdir())
    assert tasks == [2, 6]
    assert [row["dd"] for row in table_rows(r.output)] == ["2", "6"]


def test_reproduce_prints_the_seed_rows_beside_the_simulated_ones(tmp_path: Path) -> None:
    r = invoke("reproduce", "seed000", "--tests", "1", "--tasks", "6,16", "--scale", "0.01", "--duration", "0.5", "-o", str(tmp_path / "r"))
    assert r.exit_code == 0, r.output
    assert "Test #1: Direct IO" in r.output
    assert "14726026.40" in r.output  # the seed's 6-task throughput, printed beneath ours
    assert r.output.count("sim") >= 2


# --- resumable sweeps, sweeps from the command line ---------------------------------------------


def sweep_file(tmp_path: Path, small_scenario: Path) -> Path:
    s = tmp_path / "sweep.toml"
    s.write_text(small_scenario.read_text() + '\n[sweep]\n"workload.tasks" = [2, 6]\n')
    return s


def test_a_sweep_rerun_skips_its_complete_points(tmp_path: Path, small_scenario: Path) -> None:
    s, out = sweep_file(tmp_path, small_scenario), tmp_path / "sw"
    assert invoke("run", str(s), "-o", str(out), "-j", "1").exit_code == 0
    kept = (out / "workload.tasks=2" / "result.json").stat().st_mtime_ns
    before = (out / "workload.tasks=6" / "result.json").read_bytes()
    shutil.rmtree(out / "workload.tasks=6")
    r = invoke("run", str(s), "-o", str(out), "-j", "1")
    assert r.exit_code == 0, r.output
    assert "skipped 1 of 2 point(s): already complete in" in r.output
    assert (out / "workload.tasks=2" / "result.json").stat().st_mtime_ns == kept
    assert (out / "workload.tasks=6" / "result.json").read_bytes() == before


def test_a_sweep_rerun_refuses_a_point_of_another_scenario(tmp_path: Path, small_scenario: Path) -> None:
    s, out = sweep_file(tmp_path, small_scenario), tmp_path / "sw"
    assert invoke("run", str(s), "-o", str(out), "-j", "1").exit_code == 0
    before = (out / "workload.tasks=2" / "scenario.toml").read_text()
    r = invoke("run", str(s), "-o", str(out), "-j", "1", "--set", "run.duration_s=0.5")
    assert r.exit_code == 2 and "already holds a run of another scenario" in r.output and "--force" in r.output
    assert (out / "workload.tasks=2" / "scenario.toml").read_text() == before


def _labels(r_output: str) -> list[str]:
    return [row["label"] for row in json.loads(r_output)]


def test_sweep_option_adds_or_replaces_one_axis(tmp_path: Path, small_scenario: Path) -> None:
    s = sweep_file(tmp_path, small_scenario)
    set_duration = ["--set", "run.duration_s=0.2"]
    r = invoke("run", str(s), "-o", str(tmp_path / "a"), "--json", *set_duration, "--sweep", "workload.tasks=1,3")
    assert r.exit_code == 0, r.output
    assert _labels(r.output) == ["workload.tasks=1", "workload.tasks=3"]
    r = invoke("run", str(small_scenario), "-o", str(tmp_path / "b"), "--json", *set_duration,
               "--sweep", "workload.tasks=1,2", "--sweep", "variant.kswapd_threads=1,4")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert _labels(r.output) == [f"workload.tasks={t},variant.kswapd_threads={k}" for t in (1, 2) for k in (1, 4)]
    r = invoke("run", str(small_scenario), "-o", str(tmp_path / "c"), "--sweep", "workload.tasks=")
    assert r.exit_code == 2 and "--sweep" in r.output


def test_a_quoted_dotted_key_in_set_stays_whole(tmp_path: Path, small_scenario: Path) -> None:
    r = invoke("run", str(small_scenario), "-o", str(tmp_path / "q"), "--json", "--set", "run.duration_s=0.2", "--set", 'sweep."workload.tasks"=[2, 3]')
    assert r.exit_code == 0, r.output
    assert _labels(r.output) == ["workload.tasks=2", "workload.tasks=3"]


def test_ray_missing_says_how_to_get_it(tmp_path: Path, small_scenario: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    r = invoke("run", str(small_scenario), "-o", str(tmp_path / "r"), "--ray", "local")
    assert r.exit_code == 2 and "pip install 'reclaimlab[ray]'" in r.output
    assert not (tmp_path / "r").exists()
