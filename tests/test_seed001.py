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


def _sets(test: str, c: seed001.Config, scale: float, duration: float | None) -> dict[str, str]:
    return dict(s.split("=", 1) for s in seed001.overrides(test, c, scale, duration))


def test_the_scale_applies_to_memory_files_and_file_size() -> None:
    sets = _sets("fsmark", seed001.Config("raid", 512, "1P"), 0.5, None)
    assert sets["workload.files"] == "75" and sets["run.duration_s"] == str(seed001.DEFAULT_DURATION_S)
    assert '256' in next(v for k, v in sets.items() if "memory_mb_per_node" in k)
    sets = _sets("simple-wb", seed001.Config("raid", 4608), 1.5, 30)
    assert sets["workload.file_mb"] == "6912" and sets["run.duration_s"] == "30"
    assert seed001.memory_mb(1024, 1 / 64) == 64  # the simulator's least


def test_the_thread_configurations_are_the_seeds_notation() -> None:
    # 1P: one CPU, one fs_mark thread of the seed's 150 files at 512 MB, and mmtests'
    # simple-writeback with NUMCPUS = 1 job writing 4 × MemTotal.
    sets = _sets("fsmark", seed001.Config("raid", 512, "1P"), 1, None)
    assert (sets["machine.cpus_per_node"], sets["workload.threads"], sets["workload.files"]) == ("1", "1", "150")
    sets = _sets("simple-wb", seed001.Config("raid", 512, "1P"), 1, None)
    assert (sets["machine.cpus_per_node"], sets["workload.tasks"], sets["workload.file_mb"]) == ("1", "1", "2048")
    # Plain: 4 CPUs and NUM_CPU threads, the 150 files shared: round(37.5) = 38 a thread.
    sets = _sets("fsmark", seed001.Config("raid", 512), 1, None)
    assert (sets["machine.cpus_per_node"], sets["workload.threads"], sets["workload.files"]) == ("4", "4", "38")
    sets = _sets("simple-wb", seed001.Config("raid", 512), 1, None)
    assert (sets["workload.tasks"], sets["workload.file_mb"]) == ("4", "512")
    # mmap-strm: NUM_CPU tasks over 10 × MemTotal, and a run to the tasks' end (its limit, not
    # the default length; longer at a larger scale).
    sets = _sets("mmap-strm", seed001.Config("raid", 512, "1P"), 1, None)
    assert (sets["machine.cpus_per_node"], sets["workload.tasks"], sets["workload.size_mb"]) == ("1", "1", "5120")
    sets = _sets("mmap-strm", seed001.Config("raid", 512), 1, None)
    assert (sets["workload.tasks"], sets["workload.size_mb"], sets["run.duration_s"]) == ("4", "1280", "600.0")
    assert _sets("mmap-strm", seed001.Config("usb", 1024), 1.5, 30)["run.duration_s"] == "4500.0"
    # 4X and 16X: 16 and 64 threads on 4 CPUs; 1024 MB's 300 files: 18.75 → 19, 4.69 → 5;
    # 4608 MB's 1350 over 64: 21.09 → 21.
    for c, threads, files in ((seed001.Config("raid", 1024, "4X"), 16, 19), (seed001.Config("raid", 1024, "16X"), 64, 5),
                              (seed001.Config("raid", 4608, "16X"), 64, 21)):  # fmt: skip
        sets = _sets("fsmark", c, 1, None)
        assert (sets["machine.cpus_per_node"], sets["workload.threads"], sets["workload.files"]) == ("4", str(threads), str(files))
    # At least a file a thread: 64 MB over 64 threads.
    assert _sets("fsmark", seed001.Config("raid", 512, "16X"), 0.125, None)["workload.files"] == "1"
    # The seed's row names.
    assert [seed001.seed_row(c) for c in seed001.CONFIGS[:4]] == ["512M1P", "512M", "512M-4X", "512M-16X"]
    assert all(seed001.seed_row(c) in seed001.SEED for c in seed001.CONFIGS)
    # An X configuration's simple-writeback is the plain configuration's run, not one more.
    labels = [k.label for k in seed001.keys(["raid-512-16x"])]
    assert labels == ["raid-512-16x/fsmark-baseline", "raid-512-16x/fsmark-patched",
                      "raid-512/simple-wb-baseline", "raid-512/simple-wb-patched",
                      "raid-512/mmap-strm-baseline", "raid-512/mmap-strm-patched"]  # fmt: skip
    both = [k.label for k in seed001.keys(["raid-512", "raid-512-4x"])]
    assert len(both) == 8 and len(set(both)) == 8


def _row(**kw: float) -> seed001.Row:
    return dict(kw)


def test_targets_follow_the_issue() -> None:
    sim: seed001.Sim = {}
    for key in seed001.keys():
        better = key.kernel == "patched"
        if key.test == "fsmark":
            sim[key.sim] = _row(files_s=11.0 if better else 10.0, direct_writepage=0.0 if better else 50.0, **{"await": 800.0 if better else 900.0})
        else:
            sim[key.sim] = _row(elapsed=90.0 if better else 100.0, direct_writepage=0.0 if better else 70.0, **{"await": 1500.0 if better else 2000.0})
    met = {t.name: t.ok for t in seed001.check_targets(sim)}
    # Files/s: 4 thread configurations at 512 and 1024 MB, and USB (none at 4608 MB);
    # simple-wb: 1P and plain at each RAID size, and USB; USB Avg wait twice; ->writepage.
    assert all(met.values()) and len(met) == 9 + 7 + 2 + 1
    sim[("raid-512", "simple-wb", "patched")]["elapsed"] = 101.0
    sim[("usb-1024", "fsmark", "patched")]["await"] = 901.0
    sim[("raid-1024-4x", "fsmark", "patched")]["direct_writepage"] = 1.0
    sim[("raid-1024-4x", "fsmark", "patched")]["files_s"] = None
    met = {t.name: t.ok for t in seed001.check_targets(sim)}
    assert not met["simple-wb elapsed shorter with the patch, raid-512 (512 MB)"]
    assert not met["Avg wait lower with the patch, usb-1024 (1024 MB), fsmark"]
    assert not met["Files/s higher with the patch, raid-1024-4x (1024 MB)"]
    named = {t.name for t in seed001.check_targets(sim, 0.5)}
    assert "Files/s higher with the patch, raid-1024-4x (512 MB)" in named
    assert not met["direct reclaim ->writepage zero with the patch (model count †)"]
    assert sum(met.values()) == len(met) - 4
    # Only the configurations run are judged.
    some = {k: v for k, v in sim.items() if k[0] == "raid-512-1p"}
    assert len(seed001.check_targets(some)) == 1 + 1 + 1


def _counter(path: Path, name: str) -> int:
    """A counter of a /proc/vmstat copy, read here rather than through the run directory."""
    return next(int(line.split()[1]) for line in path.read_text().splitlines() if line.split()[0] == name)


def test_reproduce_seed001_prints_the_seeds_rows_beside_the_runs(tmp_path: Path) -> None:
    out = tmp_path / "r"
    r = invoke("reproduce", "seed001", "--scale", "0.125", "--duration", "3", "-o", str(out))
    assert r.exit_code == 0, r.output
    # The seed's numbers and the targets; every row simulated.
    for seed_value in ("32.69 ( 0.00%)", "34.44 ( 5.08%)", "618.18", "5404.53", "1453.54", "3852.53", "Targets:"):
        assert seed_value in r.output, seed_value
    assert "not simulated" not in r.output
    labels = sorted(f"{p.parent.name}/{p.name}" for p in out.glob("*/*") if p.is_dir())
    # A size's 1P and plain configurations run all three tests, its 4X and 16X only fs_mark.
    assert labels == sorted(k.label for k in seed001.keys()) and len(labels) == 3 * (2 * 3 * 2 + 2 * 2) + 6
    # Every run is a point of its scenario with the scaled memory and the seed's filesystem.
    scenario = (out / "raid-4608" / "simple-wb-baseline" / "scenario.toml").read_text()
    assert "memory_mb_per_node = 576" in scenario and 'fs = "xfs"' in scenario
    assert "file_mb = 576" in scenario and "duration_s = 3" in scenario
    # The thread configurations' machines and fs_mark threads.
    scenario = (out / "raid-512-1p" / "fsmark-patched" / "scenario.toml").read_text()
    assert {"cpus_per_node = 1", "threads = 1", "files = 19"} <= set(scenario.splitlines())
    scenario = (out / "raid-1024-16x" / "fsmark-baseline" / "scenario.toml").read_text()
    assert {"cpus_per_node = 4", "threads = 64", "files = 1"} <= set(scenario.splitlines())
    assert "writeback_isolated_wait = true" in (out / "raid-512" / "fsmark-patched" / "scenario.toml").read_text()
    scenario = (out / "raid-512" / "mmap-strm-baseline" / "scenario.toml").read_text()
    assert {"memory_mb_per_node = 64", "tasks = 4", "size_mb = 160", "duration_s = 600.0", "write = true"} <= set(scenario.splitlines())
    for c in seed001.CONFIGS:
        assert f"(seed's {seed001.seed_row(c)}-xfs)" in " ".join(r.output.split()), c
    # The simulated numbers printed are the run directories' (the plain 512 MB table).
    lines = r.output.splitlines()
    start = next(i for i, line in enumerate(lines) if "RAID-0, 64 MB, 4 CPUs, fs_mark 4 threads" in line)
    table = lines[start:next(i for i in range(start + 1, len(lines)) if "Seed 001," in lines[i])]
    for test in seed001.TESTS:
        row = next(line for line in table if f"nr_vmscan_write {test} " in line).split("│")
        for kernel, cell in (("baseline", row[5]), ("patched", row[6])):
            run = read_rundir(out / "raid-512" / f"{test}-{kernel}")
            expected = seed001.columns_of(run, test)["nr_vmscan_write"]
            assert cell.strip() == f"{expected:,.0f}"
            assert expected == _counter(run.path / "vmstat.after", "nr_vmscan_write") - _counter(run.path / "vmstat.before", "nr_vmscan_write")
    row = next(line for line in table if line.startswith("│ Elapsed Time mmap-strm")).split("│")
    for kernel, cell in (("baseline", row[5]), ("patched", row[6])):
        m = read_rundir(out / "raid-512" / f"mmap-strm-{kernel}").result["metrics"]
        assert len(m["task_elapsed_s"]) == 4 and cell.strip() == f"{m['elapsed_s']:,.2f}"
    files = next(line for line in table if line.startswith("│ Files/s")).split("│")
    base = seed001.columns_of(read_rundir(out / "raid-512" / "fsmark-baseline"), "fsmark")["files_s"]
    assert files[5].strip().startswith(f"{base:,.2f}")


def test_configs_choose_the_points() -> None:
    assert [k.label for k in seed001.keys(["usb-1024"])] == [
        "usb-1024/fsmark-baseline", "usb-1024/fsmark-patched", "usb-1024/simple-wb-baseline", "usb-1024/simple-wb-patched",
        "usb-1024/mmap-strm-baseline", "usb-1024/mmap-strm-patched"]
    assert len(seed001.keys()) == 54
    r = invoke("reproduce", "seed001", "--configs", "raid-512,raid-2048")
    assert r.exit_code == 2 and "raid-2048" in r.output and "usb-1024" in r.output
    r = invoke("reproduce", "seed002", "--configs", "raid-512")
    assert r.exit_code == 2 and "seed001's configurations" in r.output


def test_simple_wb_is_the_whole_test_and_mmtests_kswapd_efficiency(tmp_path: Path) -> None:
    """The simple-wb rows: the whole simple-writeback test's elapsed time (its seven rounds,
    run to their end by default) and kswapd efficiency in mmtests-vmstat's integer division."""
    sets = dict(s.split("=", 1) for s in seed001.overrides("simple-wb", seed001.Config("raid", 512), 0.125, None))
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


def test_seeds_means_and_spreads_are_computed_by_hand() -> None:
    # Two seeds of raid-512-1p: Files/s 10 → 11 (+10 %) and 10 → 9.5 (−5 %).
    def sim(fb: float, fp: float, eb: float | None, ep: float, kb: float, kp: float) -> seed001.Sim:
        return {("raid-512-1p", "fsmark", "baseline"): _row(files_s=fb), ("raid-512-1p", "fsmark", "patched"): _row(files_s=fp),
                ("raid-512-1p", "mmap-strm", "baseline"): {"elapsed": eb, "kswapd": kb},
                ("raid-512-1p", "mmap-strm", "patched"): _row(elapsed=ep, kswapd=kp)}  # fmt: skip
    sims = [sim(10.0, 11.0, 20.0, 19.0, 60.0, 62.0), sim(10.0, 9.5, None, 21.0, 50.0, 53.0)]
    mean = seed001.mean_sim(sims)
    assert mean[("raid-512-1p", "fsmark", "patched")]["files_s"] == 10.25
    assert mean[("raid-512-1p", "mmap-strm", "baseline")]["kswapd"] == 55.0
    # A number one run lacks has no mean.
    assert mean[("raid-512-1p", "mmap-strm", "baseline")]["elapsed"] is None
    # mean ± sd (n − 1): 10 and −5 → 2.5 ± sqrt(112.5).
    m, sd = seed001.mean_sd([10.0, -5.0])
    assert m == 2.5 and abs(sd - 112.5**0.5) < 1e-12 and seed001.mean_sd([3.0]) == (3.0, 0.0)
    rows = {r.name: r for r in seed001.spreads(sims)}
    files = rows["Files/s higher with the patch, raid-512-1p (512 MB)"]
    assert files.changes == [10.0, -5.0] and files.unit == "%" and files.met == 1 and files.verdict == "met in 1 of 2"
    elapsed = rows["mmap-strm Elapsed Time, raid-512-1p (512 MB)"]
    assert elapsed.changes == [-5.0, None] and elapsed.verdict == "1 of 2 runs lack it"
    # Kswapd efficiency in points: +2 and +3.
    ksw = rows["mmap-strm Kswapd efficiency, raid-512-1p (512 MB)"]
    assert ksw.changes == [2.0, 3.0] and ksw.unit == "pt" and ksw.verdict == "+ in all 2"
    # An unchanged number is neither sign, and a target not met.
    sims[1][("raid-512-1p", "fsmark", "patched")]["files_s"] = 10.0
    files = next(r for r in seed001.spreads(sims) if r.name.startswith("Files/s"))
    assert files.changes == [10.0, 0.0] and files.met == 1


def test_reproduce_seed001_seeds_runs_each_point_per_seed(tmp_path: Path) -> None:
    out = tmp_path / "r"
    jitter = "machine.devices.0.latency_jitter=0.05"
    r = invoke("reproduce", "seed001", "--configs", "raid-512-1p", "--scale", "0.125", "--duration", "3", "--seeds", "2", "--set", jitter, "-o", str(out))
    assert r.exit_code == 0, r.output
    labels = sorted(str(p.relative_to(out)) for p in out.glob("*/*/*") if p.is_dir())
    assert labels == sorted(f"seed-{s}/{k.label}" for s in (1, 2) for k in seed001.keys(["raid-512-1p"]))
    for s in (1, 2):
        lines = (out / f"seed-{s}" / "raid-512-1p" / "mmap-strm-patched" / "scenario.toml").read_text().splitlines()
        assert f"seed = {s}" in lines and any("latency_jitter = 0.05" in line for line in lines)
    runs = [seed001.columns_of(read_rundir(out / f"seed-{s}" / "raid-512-1p" / "mmap-strm-baseline"), "mmap-strm") for s in (1, 2)]
    # The jittered devices draw from the seed: the two runs differ.
    assert runs[0] != runs[1]
    # The tables print the runs' mean; the last table each target's change per seed.
    assert "the mean of each point's 2 runs" in r.output
    row = next(line for line in r.output.splitlines() if line.startswith("│ Elapsed Time mmap-strm")).split("│")
    assert row[5].strip() == f"{(runs[0]['elapsed'] + runs[1]['elapsed']) / 2:,.2f}"
    assert "Over 2 seeds" in r.output and "mmap-strm Kswapd efficiency, raid-512-1p (64 MB)" in r.output
    assert "met in" in r.output
    # The seeds are --seeds' own; other seeds do not take it.
    r = invoke("reproduce", "seed001", "--seeds", "2", "--set", "seed=3", "-o", str(tmp_path / "x"))
    assert r.exit_code == 2 and "--set seed" in r.output
    r = invoke("reproduce", "seed002", "--seeds", "2", "-o", str(tmp_path / "y"))
    assert r.exit_code == 2 and "seed001 only" in r.output
