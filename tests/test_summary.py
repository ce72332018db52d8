"""The summary tables and their column sources, computed from run directories: a simulated and
a live dd run read through the same columns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from reclaimlab import _core
from reclaimlab.columns import value
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.runner import run
from reclaimlab.live.scenario import load
from reclaimlab.live.summary import vmstat_metrics
from reclaimlab.rundir import RunDir, read_rundir, write_json, write_scenario, write_vmstat
from reclaimlab.seeds import seed000
from reclaimlab.simulate.runner import points
from reclaimlab.summary import cells, layout, summary_table
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def hand_written_run() -> RunDir:
    kswapd = [("kswapd0:0", 0, 30.0), ("kswapd0:1", 0, 5.5), ("kswapd1", 1, 12.5)]
    tasks = [
        *({"pid": i, "comm": "dd", "kind": "workload", "node": None, "cpu_pct": pct} for i, pct in enumerate((10.0, 10.0, 20.0))),
        *({"pid": 100 + i, "comm": comm, "kind": "kswapd", "node": node, "cpu_pct": pct} for i, (comm, node, pct) in enumerate(kswapd)),
    ]
    return RunDir(
        path=Path("runs/hand"),
        scenario={},
        vmstat_before={"pgscan_kswapd": 100, "pgscan_direct": 0, "allocstall_dma32": 1, "allocstall_normal": 2},
        vmstat_after={"pgscan_kswapd": 1100, "pgscan_direct": 50, "allocstall_dma32": 4, "allocstall_normal": 9, "allocstall_movable": 3},
        cpu=[{"t": 1, "sy_pct": 12.4}, {"t": 2, "sy_pct": 30.6}, {"t": 3, "sy_pct": 20.0}],
        tasks={"elapsed_s": 10, "nr_cpus": 4, "tasks": tasks},
        result={"kind": "live", "workload": "dd", "elapsed_s": 10, "metrics": {"tasks": 2, "throughput_kB_s": 1234.5, "lat": {"p99": 7.5}}},
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("metrics.tasks", 2),
        ("metrics.throughput_kB_s", 1234.5),
        ("metrics.lat.p99", 7.5),  # nested
        ("metrics.lat.p50", None),  # not reported: no value, not an error
        ("metrics.missing", None),
        ("vmstat.pgscan_kswapd", 1000),
        ("vmstat.pgscan_direct", 50),
        ("vmstat.allocstall_*", 3 + 7 + 3),  # Σ over zones, one counter new in vmstat.after
        ("vmstat.nr_vmscan_write", 0),  # a counter the kernel did not print
        ("cpu.sy_max", 30.6),
        ("tasks.workload_cpu", 20.0),  # 40% over 3 processes in 2 task slots
        ("tasks.kswapd_cpu.0", 17.75),  # node 0's two threads, per thread
        ("tasks.kswapd_cpu.1", 12.5),
        ("tasks.kswapd_cpu.2", None),  # no such node
    ],
)
def test_column_sources(source: str, expected: object) -> None:
    assert value(hand_written_run(), source) == expected


@pytest.mark.parametrize("source", ["bogus", "metrics", "vmstat", "cpu.sy_min", "tasks.kswapd_cpu.x", "tasks.dd_cpu"])
def test_an_unknown_source_is_an_error(source: str) -> None:
    with pytest.raises(ValueError, match="unknown column source"):
        value(hand_written_run(), source)


def test_dd_row_is_seed_000_test_3() -> None:
    dd = layout("dd")
    assert [(c.header, c.source) for c in dd] == _core.workload_columns("dd")
    row = dict(zip([c.header for c in dd], cells(hand_written_run(), dd)))
    # sy = highest sample, no decimals; counts as integers; other numbers with two decimals
    assert row == {"dd": "2", "sy": "31", "dd_cpu": "20.00", "kswapd0": "17.75", "kswapd1": "12.50",
                   "throughput": "1234.50", "dr": "13", "pgscan_kswapd": "1000", "pgscan_direct": "50"}  # fmt: skip


def test_table_headers_carry_their_units() -> None:
    headers = [c.header for c in summary_table([hand_written_run()]).columns]
    assert headers == ["dd\n", "sy\n(%)", "dd_cpu\n(%/task)", "kswapd0\n(%/thread)", "kswapd1\n(%/thread)", "throughput\n(kB/s)", "dr\n",
                       "pgscan_kswapd\n(pages)", "pgscan_direct\n(pages)"]  # fmt: skip
    stutter = [c.title for c in layout("stutter")]
    assert stutter[:4] == ["run", "mmap samples", "mean ms", "p50\n(ms)"]  # a header naming its unit keeps it once


def test_a_live_only_workload_has_its_own_layout_and_mixed_runs_the_generic_one() -> None:
    usemem = replace(hand_written_run(), result={"workload": "usemem", "metrics": {"tasks": 1}})
    assert [c.header for c in layout("stutter")][:2] == ["run", "mmap samples"]
    assert summary_table([usemem]).columns[0].header == "usemem\n"  # the units on the second line
    assert summary_table([usemem, hand_written_run()]).columns[0].header == "run\n"


def test_ra_hit_percentage() -> None:
    m = vmstat_metrics({"swap_ra": 200, "swap_ra_hit": 129, "allocstall_dma32": 1, "allocstall_normal": 2})
    assert m["ra_hit_pct"] == 64.5 and m["allocstall"] == 3
    assert vmstat_metrics({})["ra_hit_pct"] is None


def test_usemem_row(tmp_path: Path) -> None:
    path = tmp_path / "u"
    path.mkdir()
    write_scenario(path / "scenario.toml", {"name": "u", "workload": {"kind": "usemem", "tasks": 2}})
    write_vmstat(path / "vmstat.after", "swap_ra 1000\nswap_ra_hit 998\npswpin 5\npswpout 7\n")
    write_vmstat(path / "vmstat.before", "swap_ra 0\nswap_ra_hit 0\npswpin 0\npswpout 0\n")
    write_json(path / "result.json", {"kind": "live", "scenario": "u", "workload": "usemem", "elapsed_s": 1, "metrics": {"tasks": 2, "throughput_kB_s": 345413}})
    row = cells(read_rundir(path), layout("usemem"))
    assert row[:5] == ["2", "345413 KB/s", "99.80%", "1000", "998"]


# --- one simulated and one live dd run, through the same table ---------------------------------


def simulated_dd_run(out: Path) -> RunDir:
    (point,) = points(ROOT / "scenarios" / "small.toml", ["run.duration_s=0.2", "run.sample_interval_s=0.05"])
    _core.run_scenario(point, out)
    return read_rundir(out)


LIVE_DD = """
name = "fake-dd"
[run]
sample_interval_s = 0.05
duration_s = 0.3
[workload]
kind = "dd"
tasks = 2
file_mb = 64
dir = "/var/tmp/reclaimlab-fake"
"""


def live_dd_run(tmp_path: Path) -> RunDir:
    def dd(argv: object) -> tuple[int, str, str, float]:
        return 0, "", "67108864 bytes (67 MB, 64 MiB) copied, 0.1 s, 671 MB/s\n", 0.1

    fake = FakeBackend(programs={"dd": dd})
    fake.files["/proc/101/comm"] = "kswapd1"  # a second node, as the seed's machine has
    fake.files["/proc/101/stat"] = "101 (kswapd1) S 2 0 0 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0 5 0 0"
    scenario = tmp_path / "live.toml"
    scenario.write_text(LIVE_DD)
    (point,) = run(fake, load(scenario), tmp_path / "live", log=lambda s: None)
    return read_rundir(point.rundir)


def test_a_simulated_and_a_live_dd_run_read_alike(tmp_path: Path, state_dir: Path) -> None:
    sim, live = simulated_dd_run(tmp_path / "sim"), live_dd_run(tmp_path)
    assert (sim.kind, live.kind) == ("sim", "live")
    dd = layout("dd")
    for r in (sim, live):
        row = dict(zip([c.header for c in dd], cells(r, dd)))
        assert list(row) == seed000.LONG_COLUMNS
        assert "-" not in row.values(), (r.kind, row)
        throughput = r.result["metrics"]["throughput_kB_s"]
        assert throughput > 0 and row["throughput"] == f"{throughput:.2f}"
        seed_row = seed000.columns_of(r)
        assert list(seed_row) == seed000.LONG_COLUMNS and None not in seed_row.values(), (r.kind, seed_row)
        assert seed_row["throughput"] == throughput
    # one table holds both: the same columns whichever backend wrote the run
    console = Console(width=200, record=True)
    console.print(summary_table([sim, live]))
    text = console.export_text()
    assert "pgscan_direct" in text and f"{live.result['metrics']['throughput_kB_s']:.2f}" in text
