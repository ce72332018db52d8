"""stress-highalloc's live side against the fake backend: each attempt a write of
nr_hugepages + 1 and a read-back, the passes' metrics by the simulator's code, the background
stopped before the rest pass, and the pool back at its starting size after each pass, at the
end, after an interrupt and through the journal after a kill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

from reclaimlab import _core
from reclaimlab.live import workloads
from reclaimlab.live.backend import NR_HUGEPAGES
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.journal import Journal, journal_path
from reclaimlab.live.runner import run
from reclaimlab.live.scenario import load
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)

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


def scenario(tmp_path: Path, sets: Sequence[str] = ()):  # type: ignore[no-untyped-def]
    p = tmp_path / "sc.toml"
    p.write_text(SCENARIO)
    return load(p, list(sets))


def dd_program(argv: Sequence[str]) -> tuple[int, str, str, float]:
    return 0, "", "67108864 bytes (67 MB, 64 MiB) copied, 0.1 s, 671 MB/s\n", 0.1


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
