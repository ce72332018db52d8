"""stress-highalloc's live side against the fake backend: each attempt a write of
nr_hugepages + 1 and a read-back, the passes' metrics by the simulator's code, the background
stopped before the rest pass, and the pool back at its starting size after each pass, at the
end, after an interrupt and through the journal after a kill."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Sequence

import pytest

from reclaimlab import _core
from reclaimlab.live import workloads
from reclaimlab.live.backend import NR_HUGEPAGES
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.journal import Journal, journal_path
from reclaimlab.live.runner import LiveError, highalloc_capacity, preflight, restore, run
from reclaimlab.live.scenario import load
from reclaimlab.simulate.runner import points as sim_points
from .live_support import host_profile_text
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]

# 8 GiB (the fake's MemTotal) in 2 MiB pages is 4096; 1 % of them is 40 attempts a pass,
# 0.1 ms apart (20000 MB/s).
SCENARIO = """
name = "fake-highalloc"
[run]
sample_interval_s = 0.05
[workload]
kind = "stress-highalloc"
percent = 1
mb_per_sec = 20000.0
warmup_s = 0.0
pass_gap_s = 0.0
rest_after_s = 0.0
[workload.background]
kind = "dd"
tasks = 1
file_mb = 64
dir = "/var/tmp/reclaimlab-fake"
"""


def load_text(tmp_path: Path, text: str, sets: Sequence[str]):  # type: ignore[no-untyped-def]
    p = tmp_path / "sc.toml"
    p.write_text(text)
    return load(p, list(sets))


def scenario(tmp_path: Path, sets: Sequence[str] = ()):  # type: ignore[no-untyped-def]
    return load_text(tmp_path, SCENARIO, sets)


def dd_taking(seconds: float):  # type: ignore[no-untyped-def]
    """A fake dd that copies 64 MiB in `seconds`."""

    def program(argv: Sequence[str]) -> tuple[int, str, str, float]:
        return 0, "", "67108864 bytes (67 MB, 64 MiB) copied, 0.1 s, 671 MB/s\n", seconds

    return program


dd_program = dd_taking(0.1)


def hugepage_writes(fake: FakeBackend) -> list[str]:
    return [c[2] for c in fake.calls if c[0] == "write" and c[1] == NR_HUGEPAGES]


def test_the_count_and_the_delay_are_the_simulators() -> None:
    assert _core.live.highalloc_count(3072 << 20, 2 << 20, 95) == 1459
    assert _core.live.highalloc_interval_s(16.0) == pytest.approx(0.125)


def test_passes_count_each_attempt_stop_the_background_and_restore_the_pool(tmp_path: Path, state_dir: Path) -> None:
    # The fake kernel gives at most 33 huge pages; the pool starts with 3 (someone's).
    fake = FakeBackend(programs={"dd": dd_program}, hugetlb_max=33)
    fake.files[NR_HUGEPAGES] = "3"
    (point,) = run(fake, scenario(tmp_path), tmp_path / "out", log=lambda s: None)
    m = point.result["metrics"]
    assert m["highalloc_numpages"] == 40
    # Each pass: 30 attempts grow the pool from 3 to 33, 10 fail: 30 × 100 / 40 = 75.
    assert m["highalloc_success_pct"] == {"load-1": 75, "load-2": 75, "rest": 75}
    assert m["highalloc_attempts"] == {"load-1": 40, "load-2": 40, "rest": 40}
    for p in ("load-1", "load-2", "rest"):
        lat = m["highalloc_attempt_ms"][p]
        assert set(lat) == {"p50", "p90", "p99", "max"} and 0 <= lat["p50"] <= lat["p99"] <= lat["max"]
    # Writes: per pass 40 attempts of pool + 1 (4 … 34 asked, 33 the most read back) and the
    # write back to 3; then the stop writes it back once more.
    writes = hugepage_writes(fake)
    one_pass = [str(n) for n in range(4, 34)] + ["34"] * 10 + ["3"]
    assert writes[:41] == one_pass and writes[41:82] == one_pass and writes[82:123] == one_pass
    assert set(writes[123:]) == {"3"}
    assert fake.files[NR_HUGEPAGES] == "3"
    # The background was stopped (signalled) before the rest pass's first write.
    rest_start = [i for i, c in enumerate(fake.calls) if c[0] == "write" and c[1] == NR_HUGEPAGES][82]
    signals = [i for i, c in enumerate(fake.calls) if c[0] == "signal"]
    assert signals and signals[0] < rest_start
    assert point.result["background"]["workload"] == "dd"
    assert not journal_path().exists()


def test_an_interrupt_mid_pass_writes_the_pool_back(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": dd_program})
    fake.files[NR_HUGEPAGES] = "2"

    def tick(name: str, t: float, planned: float | None) -> None:
        if int(fake.files[NR_HUGEPAGES]) > 6:
            raise KeyboardInterrupt

    # Attempts 50 ms apart (40 MB/s): the run is interrupted a few attempts in.
    with pytest.raises(KeyboardInterrupt):
        run(fake, scenario(tmp_path, ["workload.mb_per_sec=40.0"]), tmp_path / "out", log=lambda s: None, tick=tick)
    assert int(max(hugepage_writes(fake), key=int)) > 6
    assert fake.files[NR_HUGEPAGES] == "2"
    assert not journal_path().exists()


def test_a_killed_run_leaves_the_start_value_in_the_journal(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend()
    fake.files[NR_HUGEPAGES] = "5"
    fake.journal = Journal.create(journal_path(), scenario="fake-highalloc")
    w = workloads.make(json.loads(json.dumps(scenario(tmp_path).points_[0].workload)), fake)
    w.params["warmup_s"] = 3600.0  # no attempt before the "kill"
    w.start(None)
    # The run is killed here: nothing stops the workload; the pool is left changed.
    fake.write_text(NR_HUGEPAGES, "17")
    w.halt.set()
    lines = fake.restore(Journal.load(journal_path()))  # type: ignore[arg-type]
    assert fake.files[NR_HUGEPAGES] == "5"
    assert any(NR_HUGEPAGES in line for line in lines)
    assert not journal_path().exists()


# --- several backgrounds, and the squeeze beside the passes ---------------------------------------

# Seed 003's three backgrounds (a dd reader, fs_mark, usemem), under a squeeze of the fake's
# 7 GiB available to 2 GiB: 2560 hugetlb pages reserved before the workload starts.
SEVERAL = """
name = "fake-highalloc-several"
[run]
sample_interval_s = 0.05
[memory]
mode = "squeeze"
free_mb = 2048
margin_mb = 1024
[workload]
kind = "stress-highalloc"
percent = 1
mb_per_sec = 20000.0
warmup_s = 0.0
pass_gap_s = 0.0
rest_after_s = 0.0
[[workload.background]]
kind = "dd"
tasks = 1
file_mb = 64
dir = "/var/tmp/reclaimlab-fake"
[[workload.background]]
kind = "fs_mark"
threads = 1
dirs = 2
files_per_dir = 4
files = 8
loops = 1
file_size = 65536
dir = "/var/tmp/reclaimlab-fake"
[[workload.background]]
kind = "usemem"
tasks = 2
size_mb = 64
repeats = 0
runtime_s = 3600.0
"""


def several(tmp_path: Path, sets: Sequence[str] = ()):  # type: ignore[no-untyped-def]
    return load_text(tmp_path, SEVERAL, sets)


long_dd = dd_taking(3600.0)


def fs_mark_program(argv: Sequence[str]) -> tuple[int, str, str, float]:
    loop = {"files": 8, "files_per_sec": 800.0, "app_overhead_us": 10}
    return 0, json.dumps(loop) + "\n", "", 3600.0


def usemem_program(argv: Sequence[str]) -> tuple[int, str, str, float]:
    start = int(argv[argv.index("--start-at-ns") + 1])
    out = {"bytes": 64 << 20, "usecs": 1, "kb_s": 1000, "passes": 1, "words": 1, "free_usecs": 5, "start_ns": start}
    return 0, json.dumps(out) + "\n", "", 3600.0


PROGRAMS = {"dd": long_dd, "fs_mark": fs_mark_program, "usemem": usemem_program}


def spawned_pids(fake: FakeBackend) -> list[int]:
    return list(fake.processes)


def test_several_backgrounds_run_beside_the_passes_and_all_stop_for_the_rest_pass(tmp_path: Path, state_dir: Path) -> None:
    # The squeeze reserves (7168 - 2048) / 2 = 2560 pages; the fake kernel gives 30 more.
    fake = FakeBackend(programs=PROGRAMS, hugetlb_max=2590)
    (point,) = run(fake, several(tmp_path), tmp_path / "out", log=lambda s: None)
    r = point.result
    assert r["machine"]["hugetlb_pages"] == 2560
    # Each pass counts from the squeeze's pool: 30 of its 40 attempts grow it (75 %), and
    # the pool is written back to the squeeze's 2560 after each pass, not to 0.
    m = r["metrics"]
    assert m["highalloc_success_pct"] == {"load-1": 75, "load-2": 75, "rest": 75}
    writes = hugepage_writes(fake)
    assert writes[0] == "2560"  # the squeeze
    one_pass = [str(n) for n in range(2561, 2591)] + ["2591"] * 10 + ["2560"]
    assert writes[1:42] == one_pass and writes[42:83] == one_pass and writes[83:124] == one_pass
    # After the passes: the stop writes the squeeze's size back, then the restore the machine's 0.
    assert set(writes[124:-1]) == {"2560"} and writes[-1] == "0"
    assert fake.files[NR_HUGEPAGES] == "0"
    # Every background started (dd, fs_mark, two usemem), each in the run's cgroup …
    spawned = [c for c in fake.calls if c[0] == "spawn"]
    kinds = ["fs_mark" if "fs_mark" in c else "usemem" if "usemem" in c else c[1] for c in spawned]
    assert kinds == ["dd", "fs_mark", "usemem", "usemem"]
    # … and every one of them was signalled before the rest pass's first write.
    rest_start = [i for i, c in enumerate(fake.calls) if c[0] == "write" and c[1] == NR_HUGEPAGES][84]
    signalled = {c[1] for c in fake.calls[:rest_start] if c[0] == "signal"}
    assert signalled == set(spawned_pids(fake))
    # result.json: the backgrounds in the scenario's order, as the simulator writes them
    # (metrics.background, a list), and with their kinds.
    assert [b["workload"] for b in r["background"]] == ["dd", "fs_mark", "usemem"]
    assert isinstance(m["background"], list) and len(m["background"]) == 3
    assert m["background"][0]["tasks"] == 1 and m["background"][1]["threads"] == 1 and m["background"][2]["tasks"] == 2
    assert m["background"] == [b["metrics"] for b in r["background"]]
    # Every task's CPU is in tasks.json: the four background processes' (the attempts run in
    # the run's own process).
    tasks = json.loads((tmp_path / "out/tasks.json").read_text())
    comms = json.dumps(tasks)
    assert all(f'"{c}"' in comms for c in ("dd", "fs_mark", "usemem"))
    assert not journal_path().exists()
    assert not any(p.startswith("/var/tmp/reclaimlab-fake") for p in fake.files)


def test_several_backgrounds_are_undone_after_a_killed_run(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBackend(programs=PROGRAMS, hugetlb_max=2590)

    def tick(name: str, t: float, planned: float | None) -> None:
        if int(fake.files[NR_HUGEPAGES]) > 2565:
            raise KeyboardInterrupt

    # The "kill": the run neither stops its background processes nor restores, so the
    # journal is all that is left.
    setattr(fake, "restore", lambda journal, since=0: [])
    monkeypatch.setattr(workloads.Workload, "stop", lambda self: None)
    with pytest.raises(KeyboardInterrupt):
        run(fake, several(tmp_path, ["workload.mb_per_sec=40.0"]), tmp_path / "out", log=lambda s: None, tick=tick)
    assert journal_path().exists()
    delattr(fake, "restore")  # the class's again: `reclaimlab live restore`
    assert int(fake.files[NR_HUGEPAGES]) >= 2560
    assert len(fake.processes) == 4 and all(p.returncode is None for p in fake.processes.values())
    assert any(p.startswith("/var/tmp/reclaimlab-fake/dd-") for p in fake.files)
    assert any(d.startswith("/var/tmp/reclaimlab-fake/fsmark-") for d in fake.dirs)
    lines: list[str] = []
    assert restore(fake, log=lines.append)
    # The pool is back to the machine's value (before the squeeze), every background's
    # process is gone, and its files (the reader's input, fs_mark's tree) are deleted.
    assert fake.files[NR_HUGEPAGES] == "0"
    assert all(p.returncode is not None for p in fake.processes.values())
    assert not any(p.startswith("/var/tmp/reclaimlab-fake") for p in fake.files)
    assert not any(d.startswith("/var/tmp/reclaimlab-fake") for d in fake.dirs)
    assert not journal_path().exists()


def test_a_pass_that_would_eat_into_the_margin_is_refused(tmp_path: Path, state_dir: Path) -> None:
    # 8 GiB MemTotal: 12 % is 491 pages (982 MiB); with the memhogs' 128 MiB and the 1024 MiB
    # margin that is more than the squeeze's 2048 MiB: (2048 - 1024 - 128) / 2 = 448 pages fit,
    # which 10 % (409) is the most of.
    fake = FakeBackend(programs=PROGRAMS)
    with pytest.raises(LiveError, match=r"workload\.percent: 12 % of MemTotal is 491 huge pages .* expected percent at most 10"):
        run(fake, several(tmp_path, ["workload.percent=12"]), tmp_path / "out", log=lambda s: None)
    assert hugepage_writes(fake) == [] and not journal_path().exists()
    # Without a squeeze the room is MemAvailable (7 GiB).
    p = several(tmp_path, ["workload.percent=12", 'memory.mode="none"']).points_[0]
    assert highalloc_capacity(fake, p) == ""
    p = several(tmp_path, ["workload.percent=90", 'memory.mode="none"']).points_[0]
    assert "MemAvailable" in highalloc_capacity(fake, p)


def test_the_host_scenario_parses_and_fits_this_sized_machine(tmp_path: Path, host_profile: Path) -> None:
    path = ROOT / "scenarios/live/stress-highalloc.toml"
    ((label, point),) = load(path).points()
    assert point.background_list and [b["kind"] for b in point.backgrounds] == ["dd", "fs_mark", "usemem"]
    assert point.memory["mode"] == "squeeze" and point.workload["load_passes"] == 2
    # A 24 GB machine as this one (24105 MiB, 23 000 available): 8 % is 964 attempts, whose
    # 1928 MiB and the memhogs' 1024 MiB leave the 1024 MiB margin of the squeeze's 4096 MiB.
    fake = FakeBackend(mem_total_kb=24105 << 10, mem_available_kb=23000 << 10)
    assert _core.live.highalloc_count(24105 << 20, 2 << 20, 8) == 964
    assert highalloc_capacity(fake, point) == ""
    assert preflight(fake, point) == []
    # The passes' least time (964 attempts 125 ms apart) is within pass_limit_s, and the
    # point's most time within live.timeout_s.
    w = point.workload
    assert 964 * _core.live.highalloc_interval_s(w["mb_per_sec"]) < w["pass_limit_s"]
    most = w["warmup_s"] + 3 * w["pass_limit_s"] + w["pass_gap_s"] + w["rest_after_s"]
    assert most < point.live["timeout_s"] <= 720
    # Simulated, on a profile of this machine's size: the same file, three backgrounds.
    host_profile.write_text(HOST_PROFILE)
    (sim,) = sim_points(path, [])
    doc = tomllib.loads(sim.toml)
    assert doc["machine"]["memory_mb_per_node"] == 24105 and len(doc["workload"]["background"]) == 3


HOST_PROFILE = host_profile_text(memory_mb_per_node=24105, read_ahead_kb=8192, bandwidth_mb_s=1000.0, latency_us=100.0, max_request_kb=4096, queue_depth=128)
