"""The live pressure sampler: /proc/pressure/memory (and a cgroup's memory.pressure) into
psi.samples and result.json, and a clean skip where the kernel keeps no pressure (psi=0)."""

from __future__ import annotations

import json
from pathlib import Path

from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.samplers import PRESSURE, PressureWindow, parse_pressure, psi_record


def pressure(some_us: int, full_us: int) -> str:
    return (
        f"some avg10=12.50 avg60=3.10 avg300=0.70 total={some_us}\n"
        f"full avg10=4.00 avg60=1.00 avg300=0.20 total={full_us}\n"
    )


def test_the_kernels_format_is_parsed() -> None:
    p = parse_pressure(pressure(1_500_000, 250_000))
    assert p["some"] == {"avg10": 12.5, "avg60": 3.1, "avg300": 0.7, "total": 1_500_000.0}
    assert p["full"]["total"] == 250_000.0


def test_an_interval_is_its_total_difference_over_its_length() -> None:
    a, b = parse_pressure(pressure(1_000_000, 0)), parse_pressure(pressure(1_500_000, 200_000))
    r = psi_record(4.0, a, b, 2.0)
    # 0.5 s of 2 s stalled: 25 %; full 0.2 s: 10 %
    assert r == {"t": 4.0, "some_pct": 25.0, "full_pct": 10.0, "some_avg10": 12.5, "full_avg10": 4.0,
                 "some_total_us": 1_500_000, "full_total_us": 200_000}  # fmt: skip


def test_samples_and_the_window_with_a_cgroup(tmp_path: Path) -> None:
    fake = FakeBackend()
    cg = "/sys/fs/cgroup/reclaimlab-x"
    w = PressureWindow(fake, tmp_path, cg)
    for t, sys_us, cg_us in ((0.0, 0, 0), (2.0, 400_000, 200_000), (4.0, 1_000_000, 300_000)):
        fake.files[PRESSURE] = pressure(sys_us, sys_us // 2)
        fake.files[f"{cg}/memory.pressure"] = pressure(cg_us, 0)
        w.sample(t)
    w.close()
    lines = [json.loads(x) for x in (tmp_path / "psi.samples").read_text().splitlines()]
    assert [(x["t"], x["some_pct"], x["cgroup_some_pct"]) for x in lines] == [(2.0, 20.0, 10.0), (4.0, 30.0, 5.0)]
    assert w.result() == {
        "psi_memory_some_pct": 25.0, "psi_memory_full_pct": 12.5,
        "psi_cgroup_memory_some_pct": 7.5, "psi_cgroup_memory_full_pct": 0.0,
    }  # fmt: skip


def test_without_pressure_files_nothing_is_written_and_the_window_is_null(tmp_path: Path) -> None:
    fake = FakeBackend()  # psi=0: no /proc/pressure, no memory.pressure
    assert not fake.exists(PRESSURE)
    w = PressureWindow(fake, tmp_path, "/sys/fs/cgroup/reclaimlab-x")
    w.sample(0.0)
    w.sample(2.0)
    w.close()
    assert not (tmp_path / "psi.samples").exists()
    assert w.result() == {
        "psi_memory_some_pct": None, "psi_memory_full_pct": None,
        "psi_cgroup_memory_some_pct": None, "psi_cgroup_memory_full_pct": None,
    }  # fmt: skip
