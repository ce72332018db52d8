"""`reclaimlab compare`: mmtests-style changes, points matched by label, the sim/live
divergence section, its output formats and its errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reclaimlab import compare as compare_mod
from reclaimlab.cli import cli
from reclaimlab.compare import HIGHER, LOWER, METRICS, change_style, compare, load_input, pdiff, to_markdown
from reclaimlab.rundir import format_vmstat, read_rundir, write_json


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write_run(d: Path, kind: str, throughput: float, allocstall: int = 0, pgscan_kswapd: int = 1000, pgsteal_kswapd: int = 900,
              workingset: bool = True) -> None:  # fmt: skip
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text('name = "t"\n' + ("[variant]\nworkingset = true\n" if workingset else ""))
    zero = {"allocstall_normal": 0, "pgscan_kswapd": 0, "pgsteal_kswapd": 0, "pgscan_direct": 0, "pgsteal_direct": 0}
    after = {"allocstall_normal": allocstall, "pgscan_kswapd": pgscan_kswapd, "pgsteal_kswapd": pgsteal_kswapd, "pgscan_direct": 0, "pgsteal_direct": 0}
    (d / "vmstat.before").write_text(format_vmstat(zero))
    (d / "vmstat.after").write_text(format_vmstat(after))
    result: dict[str, Any] = {"kind": kind, "workload": "dd", "elapsed_s": 10.0, "metrics": {"tasks": 1, "throughput_kB_s": throughput}}
    write_json(d / "result.json", result)


def test_changes_are_signed_so_that_positive_is_better() -> None:
    assert pdiff(100.0, 110.0, HIGHER) == pytest.approx(10.0)
    assert pdiff(100.0, 110.0, LOWER) == pytest.approx(-10.0)
    assert pdiff(100.0, 80.0, LOWER) == pytest.approx(20.0)
    assert pdiff(0.0, 0.0, LOWER) == 0.0
    assert pdiff(0.0, 5.0, HIGHER) is None  # no percentage of nothing
    assert pdiff(100.0, 80.0, None) == pytest.approx(-20.0)  # effort: positive = more


def test_only_outcomes_have_a_better_direction() -> None:
    better = {m.name: m.better for m in METRICS}
    assert better["Throughput (kB/s)"] == HIGHER
    assert better["Direct reclaims (allocstall)"] == LOWER
    assert better["Percentage Time Spent Direct Reclaim"] == LOWER
    for effort in ("Kswapd pages scanned", "Direct pages scanned", "Kswapd CPU % (all threads)", "Kswapd CPU % per thread",
                   "Percentage Time kswapd Awake"):  # fmt: skip
        assert better[effort] is None, effort
    assert all(m.about for m in METRICS)


def test_effort_metrics_are_signed_by_amount_and_never_coloured(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "sim", 100.0, allocstall=10, pgscan_kswapd=1000)
    write_run(tmp_path / "b", "sim", 100.0, allocstall=5, pgscan_kswapd=2000)
    c = compare([load_input(tmp_path / "a"), load_input(tmp_path / "b")])
    rows = {r.metric: r for r in c.rows}
    scanned, stalls = rows["Kswapd pages scanned"], rows["Direct reclaims (allocstall)"]
    assert scanned.changes[1] == pytest.approx(100.0) and scanned.cell(1) == "2000 (+100.00%)"
    assert change_style(scanned, 1) == ""  # more kswapd scanning is neither better nor worse
    assert stalls.changes[1] == pytest.approx(50.0) and change_style(stalls, 1) == "better"
    md = to_markdown(c)
    assert "| Kswapd pages scanned |  | 1000 (  0.00%) | 2000 (+100.00%) |" in md
    assert "| Direct reclaims (allocstall) | ↓ | 10 (  0.00%) | 5 ( 50.00%) |" in md
    doc = json.loads(invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json").output)
    assert doc["metrics"]["Kswapd pages scanned"]["better"] is None and "pgscan_kswapd" in doc["metrics"]["Kswapd pages scanned"]["about"]
    assert next(r for r in doc["rows"] if r["metric"] == "Throughput (kB/s)")["better"] == "higher"


def test_points_are_matched_by_sweep_label_and_the_first_input_is_the_baseline(tmp_path: Path) -> None:
    write_run(tmp_path / "a/tasks-1", "sim", 100.0)
    write_run(tmp_path / "a/tasks-2", "sim", 200.0, allocstall=10)
    write_run(tmp_path / "b/tasks-2", "sim", 150.0, allocstall=5)
    write_run(tmp_path / "b/tasks-4", "sim", 300.0)
    c = compare([load_input(tmp_path / "a"), load_input(tmp_path / "b")])
    rows = {(r.point, r.metric): r for r in c.rows}
    tput = rows[("tasks-2", "Throughput (kB/s)")]
    assert tput.values == [200.0, 150.0] and tput.changes[1] == pytest.approx(-25.0)
    stalls = rows[("tasks-2", "Direct reclaims (allocstall)")]
    assert stalls.changes[1] == pytest.approx(50.0)  # fewer stalls is better
    assert rows[("tasks-1", "Throughput (kB/s)")].values == [100.0, None]
    assert rows[("tasks-4", "Throughput (kB/s)")].changes == [None, None]  # no baseline point
    eff = rows[("tasks-2", "Kswapd efficiency %")]
    assert eff.values == [pytest.approx(90.0), pytest.approx(90.0)]
    assert [r.point for r in c.rows][0] == "tasks-1" and c.divergence == []


def test_sim_against_live_flags_ratios_outside_the_tolerance(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0, pgscan_kswapd=1000)
    write_run(tmp_path / "sim", "sim", 200.0, pgscan_kswapd=1200)
    inputs = [load_input(tmp_path / "live"), load_input(tmp_path / "sim")]
    div = {d.metric: d for d in compare(inputs).divergence}
    assert div["Throughput (kB/s)"].ratio == pytest.approx(2.0) and div["Throughput (kB/s)"].flagged
    assert div["Kswapd pages scanned"].ratio == pytest.approx(1.2) and not div["Kswapd pages scanned"].flagged
    assert "Direct reclaims (allocstall)" not in div  # 0 live: no ratio
    assert not {d.metric: d for d in compare(inputs, tolerance=2.5).divergence}["Throughput (kB/s)"].flagged


def test_json_csv_and_markdown_carry_the_same_rows(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0)
    write_run(tmp_path / "sim", "sim", 200.0)
    args = (str(tmp_path / "live"), str(tmp_path / "sim"))
    doc = json.loads(invoke("compare", *args, "--json").output)
    assert [i["kind"] for i in doc["inputs"]] == ["live", "sim"]
    tput = next(r for r in doc["rows"] if r["metric"] == "Throughput (kB/s)")
    assert tput["values"] == [100.0, 200.0] and tput["change_pct"] == [0.0, 100.0]
    assert any(d["flagged"] for d in doc["divergence"]["rows"])
    rows = list(csv.reader(io.StringIO(invoke("compare", *args, "--csv").output)))
    assert rows[0][:5] == ["point", "metric", "better", "live", "sim"] and len(rows) == len(doc["rows"]) + 1
    md = invoke("compare", *args, "--markdown").output
    assert "| Throughput (kB/s) | ↑ | 100 (  0.00%) | 200 (100.00%) |" in md
    assert "| - | Throughput (kB/s) | 200 (sim) | 100 (live) | 2.00 | !! |" in md
    table = invoke("compare", *args).output
    assert "Simulated over live" in table and "Throughput (kB/s)" in table


def test_a_simulation_without_shadow_entries_beside_a_live_run_is_warned_of(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0)
    write_run(tmp_path / "plain", "sim", 100.0, workingset=False)
    write_run(tmp_path / "shadows", "sim", 100.0)
    warned = CliRunner().invoke(cli, ["compare", str(tmp_path / "live"), str(tmp_path / "plain"), str(tmp_path / "shadows")])
    assert warned.exit_code == 0
    warnings = [line for line in warned.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "plain is simulated without page-cache shadow entries" in warnings[0], warned.stderr
    # Two simulations without a live run: nothing to warn of.
    quiet = CliRunner().invoke(cli, ["compare", str(tmp_path / "plain"), str(tmp_path / "shadows")])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_inputs_of_the_same_name_are_numbered(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "sim", 1.0)
    c = compare([load_input(tmp_path / "a"), load_input(tmp_path / "a")])
    assert c.names == ["a#1", "a#2"]


def test_an_input_that_is_not_a_run_is_a_clear_error(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "sim", 1.0)
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "empty")])
    assert r.exit_code == 2 and "empty: neither a run directory" in r.output
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "missing")])
    assert r.exit_code == 2 and "missing: not a directory" in r.output
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), "--tolerance", "0.9"])
    assert r.exit_code == 2 and "tolerance" in r.output


def test_kswapd_cpu_rows_are_the_sums_of_tasks_json(tmp_path: Path, small_scenario: Path) -> None:
    # Two real simulations of two nodes: the same readers with 1 and 4 kswapd threads per
    # node, both traced, so they also have the trace's rows.
    for name, threads in (("k1", 1), ("k4", 4)):
        r = invoke("run", str(small_scenario), "-o", str(tmp_path / name), "-j", "1", "--set", f"variant.kswapd_threads={threads}",
                   "--set", "run.trace=true")  # fmt: skip
        assert r.exit_code == 0, r.output
    doc = json.loads(invoke("compare", str(tmp_path / "k1"), str(tmp_path / "k4"), "--json").output)
    rows = {r["metric"]: r for r in doc["rows"]}
    for k, name in enumerate(("k1", "k4")):
        kswapds = [t for t in json.loads((tmp_path / name / "tasks.json").read_text())["tasks"] if t["kind"] == "kswapd"]
        assert len(kswapds) == 2 * (1, 4)[k]
        total = sum(t["cpu_pct"] for t in kswapds)
        assert rows["Kswapd CPU % (all threads)"]["values"][k] == pytest.approx(total)
        assert rows["Kswapd CPU % per thread"]["values"][k] == pytest.approx(total / len(kswapds))
        for node in (0, 1):
            node_sum = sum(t["cpu_pct"] for t in kswapds if t["node"] == node)
            assert rows[f"Kswapd CPU % node {node}"]["values"][k] == pytest.approx(node_sum)
    # More threads: more kswapd CPU in all, less per thread; neither is called better.
    cpu = rows["Kswapd CPU % (all threads)"]
    assert cpu["values"][1] > cpu["values"][0] and cpu["change_pct"][1] > 0 and cpu["better"] is None
    assert rows["Kswapd CPU % per thread"]["change_pct"][1] < 0
    assert rows["Throughput (kB/s)"]["values"][0] > 0
    awake = rows["Percentage Time kswapd Awake"]["values"]
    assert all(0 < a <= 100 for a in awake), awake  # any thread awake: never the sum of eight threads
    summaries = [compare_mod.trace_report(read_rundir(tmp_path / n))["summary"] for n in ("k1", "k4")]  # type: ignore[index]
    assert summaries[1]["time_kswapd_awake_s"] > summaries[1]["time_kswapd_any_awake_s"]  # threads overlap
    assert awake[1] == pytest.approx(summaries[1]["time_kswapd_any_awake_s"] * 100 / summaries[1]["elapsed_s"])
    # small: next to no direct reclaim (0.01 % of the time: refills of the per-CPU page lists
    # take a zone below min for a moment now and then)
    assert 0.0 <= rows["Percentage Time Spent Direct Reclaim"]["values"][0] < 0.5


def test_one_node_has_no_per_node_rows(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "sim", 1.0)
    tasks = [{"pid": p, "comm": f"kswapd0:{p}", "kind": "kswapd", "node": 0, "cpu_pct": 10.0 * p} for p in (1, 2)]
    write_json(tmp_path / "a/tasks.json", {"elapsed_s": 10.0, "tasks": tasks})
    rows = {r.metric: r for r in compare([load_input(tmp_path / "a")]).rows}
    assert rows["Kswapd CPU % (all threads)"].values == [30.0] and rows["Kswapd CPU % per thread"].values == [15.0]
    assert not any(m.startswith("Kswapd CPU % node") for m in rows)


def test_points_sort_by_their_swept_values(tmp_path: Path) -> None:
    for tasks in (16, 4, 8):
        write_run(tmp_path / f"a/workload.tasks={tasks}", "sim", float(tasks))
    write_run(tmp_path / "b/workload.tasks=2", "sim", 2.0)
    write_run(tmp_path / "b/workload.tasks=8", "sim", 8.0)
    c = compare([load_input(tmp_path / "a"), load_input(tmp_path / "b")])
    order = list(dict.fromkeys(r.point for r in c.rows))
    assert order == [f"workload.tasks={n}" for n in (2, 4, 8, 16)]
    csv_points = [row[0] for row in csv.reader(io.StringIO(invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--csv").output))][1:]
    assert list(dict.fromkeys(csv_points)) == order
    table = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b")).output
    assert table.index("workload.tasks=4") < table.index("workload.tasks=8") < table.index("workload.tasks=16")


def test_inputs_sharing_no_point_are_warned_of_and_refused_with_strict(tmp_path: Path) -> None:
    for n in (1, 2):
        write_run(tmp_path / f"tasks/workload.tasks={n}", "sim", 1.0)
        write_run(tmp_path / f"threads/variant.kswapd_threads={n}", "sim", 1.0)
    args = [str(tmp_path / "tasks"), str(tmp_path / "threads")]
    r = CliRunner().invoke(cli, ["compare", *args])
    assert r.exit_code == 0 and "warning: threads shares no sweep point with the baseline tasks" in r.stderr
    assert "Throughput" in r.stdout
    r = CliRunner().invoke(cli, ["compare", *args, "--strict"])
    assert r.exit_code == 1 and "error: threads shares no sweep point" in r.stderr and "Throughput" not in r.stdout
    assert json.loads(invoke("compare", *args, "--json").stdout)["warnings"]
    # One shared point is enough.
    write_run(tmp_path / "threads/workload.tasks=2", "sim", 1.0)
    r = CliRunner().invoke(cli, ["compare", *args, "--strict"])
    assert r.exit_code == 0 and "warning" not in r.stderr


def test_repeats_give_mean_stddev_and_a_significance_mark(tmp_path: Path) -> None:
    for k, t in enumerate([100.0, 102.0, 98.0], 1):
        write_run(tmp_path / f"a/workload.tasks=2,repeat={k}", "sim", t)
    for k, t in enumerate([150.0, 149.0, 151.0], 1):
        write_run(tmp_path / f"b/workload.tasks=2,repeat={k}", "sim", t)
    for k, t in enumerate([101.0, 99.0, 100.0], 1):
        write_run(tmp_path / f"c/workload.tasks=2,repeat={k}", "sim", t)
    inputs = [load_input(tmp_path / x) for x in "abc"]
    assert list(inputs[0].repeats) == ["workload.tasks=2"] and len(inputs[0].repeats["workload.tasks=2"]) == 3
    c = compare(inputs)
    tput = {r.metric: r for r in c.rows}["Throughput (kB/s)"]
    assert tput.point == "workload.tasks=2" and tput.runs == [3, 3, 3]
    assert tput.values == [pytest.approx(100.0), pytest.approx(150.0), pytest.approx(100.0)]
    assert tput.stddevs[0] == pytest.approx(2.0) and tput.stddevs[1] == pytest.approx(1.0)
    assert tput.significant == [None, True, False]  # 150 ± 1 against 100 ± 2 is; 100 ± 1 is not
    assert tput.cell(1) == "150 +/- 1 ( 50.00%)*"
    assert tput.cell(2).endswith("(  0.00%)")
    doc = json.loads(invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json").output)
    row = next(r for r in doc["rows"] if r["metric"] == "Throughput (kB/s)")
    assert row["runs"] == [3, 3] and row["significant"] == [None, True]


def test_a_simulated_sweep_with_repeats_compares_as_one_point_per_task_count(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "r"
    result = invoke("run", str(small_scenario), "--set", "run.duration_s=0.2", "--set", "run.repeats=2",
                    "--set", "machine.devices=[{name=\"nvme\", count=1, bandwidth_mb_s=3000, latency_us=100, jitter=1.0}]",
                    "-o", str(out), "-j", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["repeat=1", "repeat=2"]
    (row,) = [r for r in compare([load_input(out)]).rows if r.metric == "Kswapd pages scanned"]
    assert row.point == "" and row.runs == [2]
    assert row.stddevs[0] is not None and row.stddevs[0] > 0  # two seeds, two jitters


MEMCG_SCENARIO = """
name = "memcg-compare"
[machine]
nodes = 1
cpus_per_node = 4
memory_mb_per_node = 256
devices = [{ name = "nvme", bandwidth_mb_s = 2000, latency_us = 50 }]
[memory]
mode = "cgroup"
limit_mb = 64
[swap]
kind = "file"
size_mb = 256
[workload]
kind = "usemem"
tasks = 1
size_mb = 96
repeats = 0
runtime_s = 0.5
[run]
duration_s = 0.5
"""


def test_memory_cgroup_reclaim_compares_between_a_simulated_and_a_live_run(tmp_path: Path) -> None:
    from reclaimlab.live.runner import memcg_result

    scenario = tmp_path / "memcg.toml"
    scenario.write_text(MEMCG_SCENARIO)
    r = invoke("run", str(scenario), "-o", str(tmp_path / "sim"))
    assert r.exit_code == 0, r.output
    sim = json.loads((tmp_path / "sim/result.json").read_text())["memcg"]
    assert sim["max_bytes"] == 64 << 20 and sim["events"]["pgscan_direct"] > 0
    # A live run's cgroup, as the runner records it from two readings of memory.stat/events.
    before = {"stat": {"pgscan_direct": 100, "pgsteal_direct": 90, "pgscan_kswapd": 0, "pgsteal_kswapd": 0, "pgpgin": 5},
              "events": {"low": 0, "high": 0, "max": 3, "oom": 0, "oom_kill": 0}, "current": 0, "max": 64 << 20}  # fmt: skip
    after = {"stat": {**before["stat"], "pgscan_direct": 2 * sim["events"]["pgscan_direct"] + 100, "pgsteal_direct": 1090},
             "events": {**before["events"], "max": 13}, "current": 60 << 20, "max": 64 << 20}  # fmt: skip
    live = memcg_result(before, after)
    assert live["events"] == {"pgscan_kswapd": 0, "pgscan_direct": 2 * sim["events"]["pgscan_direct"], "pgsteal_kswapd": 0,
                              "pgsteal_direct": 1000, "max": 10, "oom": 0, "high": 0}  # fmt: skip
    assert live["stat"]["pgpgin"] == 0 and live["current_bytes"] == 60 << 20
    write_run(tmp_path / "live", "live", 1000.0)
    result = json.loads((tmp_path / "live/result.json").read_text())
    write_json(tmp_path / "live/result.json", {**result, "memcg": live})
    doc = json.loads(invoke("compare", str(tmp_path / "live"), str(tmp_path / "sim"), "--json").stdout)
    rows = {r["metric"]: r for r in doc["rows"]}
    scanned = rows["Memcg direct pages scanned"]["values"]
    assert scanned == [2 * sim["events"]["pgscan_direct"], sim["events"]["pgscan_direct"]]
    assert rows["Memcg limit hits (memory.events max)"]["values"][0] == 10
    # The model's error on it is in the divergence section: the simulated side scanned half.
    div = {d["metric"]: d for d in doc["divergence"]["rows"]}
    assert div["Memcg direct pages scanned"]["ratio"] == pytest.approx(0.5)


def test_memory_pressure_rows_come_from_result_json_and_skip_a_kernel_without_psi(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0)
    write_run(tmp_path / "sim", "sim", 100.0)
    write_run(tmp_path / "nopsi", "live", 100.0)
    for name, some, full in (("live", 12.0, 3.0), ("sim", 24.0, 3.0), ("nopsi", None, None)):
        result = json.loads((tmp_path / name / "result.json").read_text())
        write_json(tmp_path / name / "result.json", {**result, "psi_memory_some_pct": some, "psi_memory_full_pct": full})
    div = {d.metric: d for d in compare([load_input(tmp_path / "live"), load_input(tmp_path / "sim")]).divergence}
    assert div["Memory pressure some %"].ratio == pytest.approx(2.0) and div["Memory pressure some %"].flagged
    assert div["Memory pressure full %"].ratio == pytest.approx(1.0)
    rows = {r.metric: r for r in compare([load_input(tmp_path / "nopsi"), load_input(tmp_path / "sim")]).rows}
    assert rows["Memory pressure some %"].values[0] is None  # psi=0: no figure, not a zero


def test_thp_and_compaction_rows_appear_only_for_runs_that_allocated_huge_pages(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0)
    write_run(tmp_path / "sim", "sim", 100.0)
    write_run(tmp_path / "plain", "sim", 100.0)
    for name, events in (("live", {"thp_fault_alloc": 9444, "thp_fault_fallback": 4639, "compact_stall": 13812}),
                         ("sim", {"thp_fault_alloc": 46974, "thp_fault_fallback": 642})):  # fmt: skip
        after = dict(events)
        before = {k: 0 for k in events}
        old_after = (tmp_path / name / "vmstat.after").read_text()
        (tmp_path / name / "vmstat.after").write_text(old_after + format_vmstat(after))
        (tmp_path / name / "vmstat.before").write_text((tmp_path / name / "vmstat.before").read_text() + format_vmstat(before))
    div = {d.metric: d for d in compare([load_input(tmp_path / "live"), load_input(tmp_path / "sim")]).divergence}
    assert div["THP faults (thp_fault_alloc)"].ratio == pytest.approx(46974 / 9444)
    assert div["THP fault fallbacks (thp_fault_fallback)"].ratio == pytest.approx(642 / 4639)
    # The simulated side compacted nothing: a zero, not a missing figure.
    assert div["Compaction stalls (compact_stall)"].ratio == pytest.approx(0.0)
    rows = {r.metric: r for r in compare([load_input(tmp_path / "plain"), load_input(tmp_path / "plain")]).rows}
    assert "THP faults (thp_fault_alloc)" not in rows  # an order-0 run has no such row
    assert "Compaction stalls (compact_stall)" not in rows


def test_writeback_rows_appear_only_for_runs_that_dirtied_pages(tmp_path: Path) -> None:
    write_run(tmp_path / "live", "live", 100.0)
    write_run(tmp_path / "sim", "sim", 100.0)
    write_run(tmp_path / "plain", "sim", 100.0)
    for name, dirtied, written, reclaim_writes in (("live", 3_000_000, 2_900_000, 40), ("sim", 3_000_000, 2_950_000, 0)):
        after = {"nr_dirtied": dirtied, "nr_written": written, "nr_vmscan_write": reclaim_writes, "pgrotated": 7}
        old_after = (tmp_path / name / "vmstat.after").read_text()
        (tmp_path / name / "vmstat.after").write_text(old_after + format_vmstat(after))
        (tmp_path / name / "vmstat.before").write_text((tmp_path / name / "vmstat.before").read_text() + format_vmstat({k: 0 for k in after}))
        result = json.loads((tmp_path / name / "result.json").read_text())
        result["metrics"]["elapsed_s"] = 12.0 if name == "live" else 9.0
        write_json(tmp_path / name / "result.json", result)
    div = {d.metric: d for d in compare([load_input(tmp_path / "live"), load_input(tmp_path / "sim")]).divergence}
    assert div["Pages written (nr_written)"].ratio == pytest.approx(2_950_000 / 2_900_000)
    assert div["Elapsed (s)"].ratio == pytest.approx(9.0 / 12.0)
    # The simulated side wrote nothing from reclaim, and a counter the kernel left alone is 0.
    assert div["Reclaim writes (nr_vmscan_write)"].ratio == pytest.approx(0.0)
    both = {r.metric for r in compare([load_input(tmp_path / "live"), load_input(tmp_path / "sim")]).rows}
    assert "Immediate reclaim (nr_vmscan_immediate_reclaim)" in both
    rows = {r.metric: r for r in compare([load_input(tmp_path / "plain"), load_input(tmp_path / "plain")]).rows}
    assert "Pages dirtied (nr_dirtied)" not in rows and "Elapsed (s)" not in rows  # a reader wrote nothing
