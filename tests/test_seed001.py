"""Seed 001's reproduction: its XFS rows beside simulated baseline and patched runs."""

from __future__ import annotations

from pathlib import Path

from reclaimlab.rundir import read_rundir
from reclaimlab.seeds import seed001
from tests.test_simulate_cli import invoke


def test_mmtests_percentage_is_the_seeds() -> None:
    # The seed prints 32.69 → 34.44 as ( 5.08%) and 30.78 → 35.94 as (14.36%): relative to
    # the patched value.
    assert round(seed001.mmtests_pct(32.69, 34.44), 2) == 5.08
    assert round(seed001.mmtests_pct(30.78, 35.94), 2) == 14.36
    for row in seed001.SEED.values():
        b, p = row["files_s"]
        assert abs(seed001.mmtests_pct(b, p) - row["files_pct"][1]) < 0.01


def test_the_scale_applies_to_memory_files_and_file_size() -> None:
    sets = dict(s.split("=", 1) for s in seed001.overrides("fsmark", 512, 0.5, None))
    assert sets["workload.files"] == "75" and sets["run.duration_s"] == str(seed001.DEFAULT_DURATION_S)
    assert '256' in next(v for k, v in sets.items() if "memory_mb_per_node" in k)
    sets = dict(s.split("=", 1) for s in seed001.overrides("simple-wb", 4608, 1.5, 30))
    assert sets["workload.file_mb"] == "6912" and sets["run.duration_s"] == "30"
    assert seed001.memory_mb(1024, 1 / 64) == 64  # the simulator's least


def _row(**kw: float) -> seed001.Row:
    return dict(kw)


def test_targets_follow_the_issue() -> None:
    sim: seed001.Sim = {}
    for d, mb in seed001.CONFIGS:
        sim[(d, mb, "fsmark", "baseline")] = _row(files_s=10.0, direct_writepage=50.0, **{"await": 900.0})
        sim[(d, mb, "fsmark", "patched")] = _row(files_s=11.0, direct_writepage=0.0, **{"await": 800.0})
        sim[(d, mb, "simple-wb", "baseline")] = _row(elapsed=100.0, direct_writepage=70.0, **{"await": 2000.0})
        sim[(d, mb, "simple-wb", "patched")] = _row(elapsed=90.0, direct_writepage=0.0, **{"await": 1500.0})
    met = {t.name: t.ok for t in seed001.check_targets(sim)}
    assert all(met.values()) and len(met) == 3 + 4 + 2 + 1  # no Files/s target at 4608 MB
    sim[("raid", 512, "simple-wb", "patched")]["elapsed"] = 101.0
    sim[("usb", 1024, "fsmark", "patched")]["await"] = 901.0
    sim[("raid", 1024, "fsmark", "patched")]["direct_writepage"] = 1.0
    sim[("raid", 1024, "fsmark", "patched")]["files_s"] = None
    met = {t.name: t.ok for t in seed001.check_targets(sim)}
    assert not met["simple-wb elapsed shorter with the patch, raid-512 (512 MB)"]
    assert not met["Avg wait lower with the patch, usb-1024 (1024 MB), fsmark"]
    assert not met["Files/s higher with the patch, raid-1024 (1024 MB)"]
    named = {t.name for t in seed001.check_targets(sim, 0.5)}
    assert "Files/s higher with the patch, raid-1024 (512 MB)" in named
    assert not met["direct reclaim ->writepage zero with the patch (model count †)"]
    assert sum(met.values()) == len(met) - 4


def _counter(path: Path, name: str) -> int:
    """A counter of a /proc/vmstat copy, read here rather than through the run directory."""
    return next(int(line.split()[1]) for line in path.read_text().splitlines() if line.split()[0] == name)


def test_reproduce_seed001_prints_the_seeds_rows_beside_the_runs(tmp_path: Path) -> None:
    out = tmp_path / "r"
    r = invoke("reproduce", "seed001", "--scale", "0.125", "--duration", "3", "-o", str(out))
    assert r.exit_code == 0, r.output
    # The seed's numbers, the mmap-strm rows the model does not run, and the targets.
    for seed_value in ("32.69 ( 0.00%)", "34.44 ( 5.08%)", "618.18", "5404.53", "1453.54", "not simulated", "Targets:"):
        assert seed_value in r.output, seed_value
    labels = sorted(f"{p.parent.name}/{p.name}" for p in out.glob("*/*") if p.is_dir())
    assert labels == sorted(k.label for k in seed001.keys()) and len(labels) == 16
    # Every run is a point of its scenario with the scaled memory and the seed's filesystem.
    scenario = (out / "raid-4608" / "simple-wb-baseline" / "scenario.toml").read_text()
    assert "memory_mb_per_node = 576" in scenario and 'fs = "xfs"' in scenario
    assert "file_mb = 576" in scenario and "duration_s = 3" in scenario
    # The simulated numbers printed are the run directories'.
    lines = r.output.splitlines()
    start = next(i for i, line in enumerate(lines) if "RAID-0, 64 MB" in line)
    table = lines[start:next(i for i in range(start + 1, len(lines)) if "RAID-0, 128 MB" in lines[i])]
    for test in ("fsmark", "simple-wb"):
        row = next(line for line in table if f"nr_vmscan_write {test} " in line).split("│")
        for kernel, cell in (("baseline", row[5]), ("patched", row[6])):
            run = read_rundir(out / "raid-512" / f"{test}-{kernel}")
            expected = seed001.columns_of(run, test)["nr_vmscan_write"]
            assert cell.strip() == f"{expected:,.0f}"
            assert expected == _counter(run.path / "vmstat.after", "nr_vmscan_write") - _counter(run.path / "vmstat.before", "nr_vmscan_write")
    files = next(line for line in table if line.startswith("│ Files/s")).split("│")
    base = seed001.columns_of(read_rundir(out / "raid-512" / "fsmark-baseline"), "fsmark")["files_s"]
    assert files[5].strip().startswith(f"{base:,.2f}")


def test_configs_choose_the_points() -> None:
    assert [k.label for k in seed001.keys(["usb-1024"])] == [
        "usb-1024/fsmark-baseline", "usb-1024/fsmark-patched", "usb-1024/simple-wb-baseline", "usb-1024/simple-wb-patched"]
    assert len(seed001.keys()) == 16
    r = invoke("reproduce", "seed001", "--configs", "raid-512,raid-2048")
    assert r.exit_code == 2 and "raid-2048" in r.output and "usb-1024" in r.output
    r = invoke("reproduce", "seed002", "--configs", "raid-512")
    assert r.exit_code == 2 and "seed001's configurations" in r.output


def test_simple_wb_is_the_whole_test_and_mmtests_kswapd_efficiency(tmp_path: Path) -> None:
    """The simple-wb rows: the whole simple-writeback test's elapsed time (its seven rounds,
    run to their end by default) and kswapd efficiency in mmtests-vmstat's integer division."""
    sets = dict(s.split("=", 1) for s in seed001.overrides("simple-wb", 512, 0.125, None))
    assert sets["run.duration_s"] == str(seed001.SIMPLE_WB_LIMIT_S)
    out = tmp_path / "r"
    r = invoke("reproduce", "seed001", "--configs", "raid-512", "--scale", "0.125", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert "Elapsed Time simple-wb (s) " in r.output and "a job's file" not in r.output
    lines = r.output.splitlines()
    row = next(line for line in lines if line.startswith("│ Elapsed Time simple-wb")).split("│")
    eff = next(line for line in lines if line.startswith("│ Kswapd efficiency simple-wb")).split("│")
    for kernel, cell, eff_cell in (("baseline", row[5], eff[5]), ("patched", row[6], eff[6])):
        run = read_rundir(out / "raid-512" / f"simple-wb-{kernel}")
        m = run.result["metrics"]
        assert m["completed"] and [x["cpu_factor"] for x in m["rounds"]] == [1, 2, 4, 8, 16, 32, 64]
        assert cell.strip() == f"{m['elapsed_s']:,.2f}"
        steal, scan = (run.delta.get(f"{k}_kswapd", 0) for k in ("pgsteal", "pgscan"))
        assert scan > 0 and eff_cell.strip() == f"{steal * 100 // scan}%"
