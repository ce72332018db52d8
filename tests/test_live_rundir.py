"""rundir.py round trips and the samplers' arithmetic (iostat -x, vmstat percentages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaimlab.compare import METRICS
from reclaimlab.live.fake import BUDDYINFO, ZONEINFO
from reclaimlab.live.samplers import DiskCounters, cpu_record, iostat_record, parse_diskstats
from reclaimlab.rundir import (
    RunDir,
    SamplesWriter,
    find_rundirs,
    parse_buddyinfo,
    parse_buddyinfo_samples,
    parse_vmstat,
    parse_vmstat_samples,
    parse_zoneinfo,
    read_rundir,
    sum_prefix,
    vmstat_delta,
    write_json,
    write_json_lines,
    write_scenario,
    write_vmstat,
)

from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)


def test_vmstat_text_round_trip_keeps_kernel_order() -> None:
    text = "nr_free_pages 5\npgscan_kswapd 10\nallocstall_normal 2\nallocstall_movable 3\n"
    counters = parse_vmstat(text)
    assert list(counters) == ["nr_free_pages", "pgscan_kswapd", "allocstall_normal", "allocstall_movable"]
    assert sum_prefix(counters, "allocstall_") == 5
    assert vmstat_delta({"pgscan_kswapd": 4}, counters)["pgscan_kswapd"] == 6


def test_samples_are_mmtests_proc_vmstat_style(tmp_path: Path) -> None:
    with SamplesWriter(tmp_path / "vmstat.samples") as w:
        w.timed_block(0.0, "pgscan_kswapd 1\n")
        w.timed_block(1.5, "pgscan_kswapd 7")
    text = (tmp_path / "vmstat.samples").read_text()
    assert text == "time: 0.000\npgscan_kswapd 1\ntime: 1.500\npgscan_kswapd 7\n"
    assert parse_vmstat_samples(text) == [(0.0, {"pgscan_kswapd": 1}), (1.5, {"pgscan_kswapd": 7})]


def test_buddyinfo_samples_read_back_per_zone(tmp_path: Path) -> None:
    block = "Node 0, zone    DMA32      1      0      2 \nNode 0, zone   Normal      5      1      0 \n"
    with SamplesWriter(tmp_path / "buddyinfo.samples") as w:
        w.timed_block(0.0, block)
        w.timed_block(2.0, block.replace("     5", "     3"))
    samples = parse_buddyinfo_samples((tmp_path / "buddyinfo.samples").read_text())
    assert [t for t, _ in samples] == [0.0, 2.0]
    assert samples[0][1] == [{"node": 0, "zone": "DMA32", "free": [1, 0, 2]}, {"node": 0, "zone": "Normal", "free": [5, 1, 0]}]
    assert samples[1][1][1]["free"] == [3, 1, 0]


def test_scenario_toml_writer_round_trips(tmp_path: Path) -> None:
    import tomllib

    doc = {
        "name": "x \"quoted\"",
        "live": {"trace_events": ["vmscan"], "drop_caches": True},
        "workload": {"kind": "usemem", "tasks": 1, "background": {"kind": "usemem", "random": True}},
        "sysctl": {},
    }
    write_scenario(tmp_path / "scenario.toml", doc)
    assert tomllib.loads((tmp_path / "scenario.toml").read_text()) == doc


def make_rundir(path: Path) -> None:
    path.mkdir()
    write_scenario(path / "scenario.toml", {"name": "t", "workload": {"kind": "dd"}})
    write_vmstat(path / "vmstat.before", {"pgscan_kswapd": 1, "allocstall_normal": 0})
    write_vmstat(path / "vmstat.after", "pgscan_kswapd 11\nallocstall_normal 3\n")
    write_json_lines(path / "cpu.samples", [{"t": 1.0, "us_pct": 1, "sy_pct": 30, "id_pct": 69, "wa_pct": 0}])
    write_json(path / "tasks.json", {"elapsed_s": 2.0, "nr_cpus": 2, "tasks": [{"pid": 1, "comm": "kswapd0", "kind": "kswapd", "node": 0, "user_s": 0, "sys_s": 1, "cpu_pct": 50.0}]})
    write_json(path / "result.json", {"kind": "live", "scenario": "t", "workload": "dd", "elapsed_s": 2.0, "metrics": {"tasks": 1}})


def test_read_rundir(tmp_path: Path) -> None:
    make_rundir(tmp_path / "tasks-1")
    make_rundir(tmp_path / "tasks-2")
    assert [p.name for p in find_rundirs(tmp_path)] == ["tasks-1", "tasks-2"]
    run = read_rundir(tmp_path / "tasks-1")
    assert isinstance(run, RunDir)
    assert run.kind == "live" and run.elapsed_s == 2.0
    assert run.delta == {"pgscan_kswapd": 10, "allocstall_normal": 3}
    assert run.tasks_of_kind("kswapd")[0]["cpu_pct"] == 50.0
    assert run.cpu[0]["sy_pct"] == 30 and run.iostat == [] and run.trace_path is None


def test_zoneinfo_keeps_each_zones_watermarks_and_skips_the_rest() -> None:
    # the kernel's layout: per-node stats, protection and pagesets (whose "high:" is no
    # watermark) between the zone lines
    zones = parse_zoneinfo(ZONEINFO)
    assert [(z["node"], z["zone"], z["free"]) for z in zones] == [(0, "DMA32", 120000), (0, "Normal", 1500000)]
    assert (zones[1]["min"], zones[1]["low"], zones[1]["high"], zones[1]["managed"]) == (15000, 18750, 22500, 1790000)
    run = RunDir(Path("."), {}, {}, {}, zones=zones)
    assert run.watermarks() == {"min": 17000, "low": 21250, "high": 25500}
    assert RunDir(Path("."), {}, {}, {}).watermarks() is None


def test_buddyinfo_gives_each_zones_free_blocks_and_the_start_split_at_an_order() -> None:
    # the kernel's layout, with a line cut short by a damaged copy, which is skipped
    zones = parse_buddyinfo(BUDDYINFO + "Node 0, zone   Normal   18 x\n")
    assert [(z["node"], z["zone"], z["free"][:3], len(z["free"])) for z in zones] == [
        (0, "DMA32", [12, 19, 18], 11), (0, "Normal", [1827, 3926, 3858], 11)]  # fmt: skip
    run = RunDir(Path("."), {}, {}, {}, buddyinfo_before=zones)
    below, whole = run.free_at_start(9)
    # DMA32: 10 blocks of order 9 and 743 of order 10; Normal: 503 and 4605
    assert whole == (10 + 503) * 512 + (743 + 4605) * 1024
    dma32 = 12 + 19 * 2 + 18 * 4 + 13 * 8 + 16 * 16 + 15 * 32 + 11 * 64 + 11 * 128 + 8 * 256
    normal = 1827 + 3926 * 2 + 3858 * 4 + 3116 * 8 + 2573 * 16 + 1776 * 32 + 1088 * 64 + 792 * 128 + 228 * 256
    assert below == dma32 + normal
    rows = {m.name: m.get(run) for m in METRICS if m.name.startswith("Free at start")}
    assert rows == {"Free at start in blocks < order 9 (pages)": below, "Free at start in blocks of order 9+ (pages)": whole}
    # a run directory without the file has neither row
    assert RunDir(Path("."), {}, {}, {}).free_at_start(9) is None
    assert all(m.get(RunDir(Path("."), {}, {}, {})) is None for m in METRICS if m.name.startswith("Free at start"))


def test_the_page_cache_share_in_pmd_folios_comes_from_nr_file_hugepages() -> None:
    (metric,) = [m for m in METRICS if m.name == "Page cache in order-9 folios at end %"]
    # nr_file_hugepages counts huge pages: 3 of them, 1536 of 2048 pages
    run = RunDir(Path("."), {}, {}, {"nr_file_hugepages": 3, "nr_file_pages": 2048})
    assert metric.get(run) == 75.0
    # a kernel or model that prints no such line, or an empty page cache, has no row
    assert metric.get(RunDir(Path("."), {}, {}, {"nr_file_pages": 2048})) is None
    assert metric.get(RunDir(Path("."), {}, {}, {"nr_file_hugepages": 0, "nr_file_pages": 0})) is None


def test_read_rundir_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="scenario.toml is missing"):
        read_rundir(tmp_path)


def test_iostat_arithmetic_is_iostat_x() -> None:
    text = "   8       0 sda 100 0 800 50 10 0 80 5 0 60 55 0 0 0 0\n   8       1 sda1 1 0 8 1 0 0 0 0 0 1 1\n"
    a = parse_diskstats(text, {"sda"})["sda"]
    b = DiskCounters(reads=300, rd_sectors=800 + 4096, rd_ms=50 + 400, writes=10, wr_sectors=80, wr_ms=5, io_ms=60 + 500, weighted_ms=55 + 1500)
    r = iostat_record(1.0, "sda", a, b, 1.0)
    assert r["rkB_s"] == 2048.0  # 4096 sectors of 512 bytes in 1 s
    assert r["r_await_ms"] == 2.0  # 400 ms over 200 reads
    assert r["aqu_sz"] == 1.5 and r["util_pct"] == 50.0 and r["w_await_ms"] == 0.0


def test_cpu_percentages_are_vmstat_columns() -> None:
    a = [100, 0, 50, 800, 10, 0, 0, 0]
    b = [110, 10, 80, 850, 20, 5, 5, 0]  # Δ: us 10+10, sy 30+5+5, id 50, wa 10 → total 120
    r = cpu_record(2.0, a, b)
    assert (r["us_pct"], r["sy_pct"], r["id_pct"], r["wa_pct"]) == (16.67, 33.33, 41.67, 8.33)
