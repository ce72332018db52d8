"""The seed-layout summary tables, computed from run directories."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from reclaimlab.live.summary import DD_COLUMNS, dd_row, summary_table, usemem_row, vmstat_metrics
from reclaimlab.rundir import read_rundir, write_json, write_json_lines, write_scenario, write_vmstat
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)


def dd_run(path: Path) -> Path:
    path.mkdir()
    write_scenario(path / "scenario.toml", {"name": "d", "workload": {"kind": "dd", "tasks": 2}})
    write_vmstat(path / "vmstat.before", "pgscan_kswapd 100\npgscan_direct 0\nallocstall_normal 1\nallocstall_movable 2\n")
    write_vmstat(path / "vmstat.after", "pgscan_kswapd 1100\npgscan_direct 50\nallocstall_normal 4\nallocstall_movable 9\n")
    write_json_lines(path / "cpu.samples", [{"t": 1, "sy_pct": 12.4}, {"t": 2, "sy_pct": 30.6}, {"t": 3, "sy_pct": 20.0}])
    tasks = [
        {"pid": 1, "comm": "dd", "kind": "workload", "node": None, "user_s": 0, "sys_s": 1, "cpu_pct": 10.0},
        {"pid": 2, "comm": "dd", "kind": "workload", "node": None, "user_s": 0, "sys_s": 1, "cpu_pct": 10.0},
        {"pid": 3, "comm": "dd", "kind": "workload", "node": None, "user_s": 0, "sys_s": 2, "cpu_pct": 20.0},
        {"pid": 9, "comm": "kswapd0", "kind": "kswapd", "node": 0, "user_s": 0, "sys_s": 3, "cpu_pct": 30.0},
    ]
    write_json(path / "tasks.json", {"elapsed_s": 10, "nr_cpus": 2, "tasks": tasks})
    write_json(path / "result.json", {"kind": "live", "scenario": "d", "workload": "dd", "elapsed_s": 10, "metrics": {"tasks": 2, "throughput_kB_s": 1234.5}})
    return path


def test_dd_row_is_seed_000_test_3(tmp_path: Path) -> None:
    run = read_rundir(dd_run(tmp_path / "r"))
    row = dict(zip(DD_COLUMNS, dd_row(run)))
    # sy = highest sample; dd_cpu = per task slot (3 processes in 2 slots); dr = Δ Σ allocstall_*
    assert row == {"dd": "2", "sy": "31", "dd_cpu": "20.00", "kswapd0": "30.00", "kswapd1": "-",
                   "throughput": "1234.50", "dr": "10", "pgscan_kswapd": "1000", "pgscan_direct": "50"}  # fmt: skip
    console = Console(width=200, record=True)
    console.print(summary_table([run], "t"))
    text = console.export_text()
    assert "pgscan_direct" in text and "1234.50" in text


def test_ra_hit_percentage() -> None:
    m = vmstat_metrics({"swap_ra": 200, "swap_ra_hit": 129, "allocstall_dma32": 1, "allocstall_normal": 2})
    assert m["ra_hit_pct"] == 64.5 and m["allocstall"] == 3
    assert vmstat_metrics({})["ra_hit_pct"] is None


def test_usemem_row(tmp_path: Path) -> None:
    path = dd_run(tmp_path / "u")
    write_vmstat(path / "vmstat.after", "swap_ra 1000\nswap_ra_hit 998\npswpin 5\npswpout 7\n")
    write_vmstat(path / "vmstat.before", "swap_ra 0\nswap_ra_hit 0\npswpin 0\npswpout 0\n")
    write_json(path / "result.json", {"kind": "live", "scenario": "u", "workload": "usemem", "elapsed_s": 1, "metrics": {"tasks": 2, "throughput_kB_s": 345413}})
    row = usemem_row(read_rundir(path))
    assert row[:5] == ["2", "345413 KB/s", "99.80%", "1000", "998"]
