"""`reclaimlab trace report`: real and simulated traces, run directories, stdin, damaged
lines, JSON, and never overwriting a file unasked."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from reclaimlab.cli import cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "vmscan-6.18-memcg-hugetlb.trace.zst"


def invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def agreement_rows(text: str) -> list[str]:
    section = text.split("Trace totals against /proc/vmstat deltas", 1)[1]
    return [line for line in section.splitlines() if line.startswith("  ")][:6]


def test_real_trace_agrees_with_its_vmstat_files() -> None:
    r = invoke("trace", "report", str(REAL))
    assert r.exit_code == 0, r.output
    assert "FTrace Reclaim Statistics: vmscan" in r.output
    rows = agreement_rows(r.output)
    assert len(rows) == 6
    assert all(row.endswith("equal") for row in rows), rows
    assert re.search(r"\n  Kswapd pages scanned +717070   pgscan_kswapd +717070   equal\n", r.output)


def test_simulated_run_directory_report_agrees_with_its_vmstat(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "run"
    r = invoke("run", str(small_scenario), "-o", str(out), "--set", "run.trace=true", "--set", "run.duration_s=0.3", "--set", "workload.tasks=24")
    assert r.exit_code == 0, r.output
    r = invoke("trace", "report", str(out), "--json")
    assert r.exit_code == 0, r.output
    (col,) = json.loads(r.output)["inputs"]
    assert col["analysis"]["parse"]["malformed"] == 0
    ag = {a["counter"]: (a["trace"], a["vmstat"]) for a in col["vmstat_agreement"]}
    assert ag["pgscan_kswapd"][1] > 0
    assert all(t == v for t, v in ag.values()), ag
    # The run directory's workload CPU time feeds "Percentage Time Spent Direct Reclaim".
    text = invoke("trace", "report", str(out)).output
    row = next(line for line in text.splitlines() if line.startswith("Percentage Time Spent Direct Reclaim"))
    assert row.rstrip().endswith("%"), row


def test_simulated_stalls_scan_every_node_of_the_zonelist(tmp_path: Path, small_scenario: Path) -> None:
    """The concurrency view of a simulated 2-node run: shrink_zones() visits both nodes in every
    stall, and the time split by tasks in direct reclaim covers the whole trace."""
    out = tmp_path / "run"
    r = invoke("run", str(small_scenario), "-o", str(out), "--set", "run.trace=true", "--set", "run.duration_s=0.5", "--set", "workload.tasks=48")
    assert r.exit_code == 0, r.output
    (col,) = json.loads(invoke("trace", "report", str(out), "--json").output)["inputs"]
    a = col["analysis"]
    c = a["concurrency"]
    closed = sum(len(p["direct_stalls"]) for p in a["processes"])
    assert closed > 0
    assert c["stalls_by_nodes"] == [0, 0, closed, 0, 0]
    span_ns = a["parse"]["last_ts_ns"] - a["parse"]["first_ts_ns"]
    assert sum(c["time_ns_by_tasks"]) == span_ns
    assert 1 <= c["max_tasks"] <= 48
    text = invoke("trace", "report", str(out)).output
    assert "Direct reclaim concurrency" in text
    assert f"Stalls that scanned 2 nodes{closed:>24}" in text


def test_kswapd_asleep_in_the_trace_is_the_cpu_it_did_not_use(tmp_path: Path, small_scenario: Path) -> None:
    """One node, one kswapd that keeps up and naps: the time the trace shows it asleep (naps
    have no tracepoint, only the gap before the next wake) and the CPU the simulator charged
    it add up to the whole run, within the slack of the trace's first and last events."""
    out = tmp_path / "run"
    r = invoke("run", str(small_scenario), "-o", str(out), "--set", "run.trace=true", "--set", "run.duration_s=0.5", "--set", "machine.nodes=1", "--set", "workload.tasks=8")
    assert r.exit_code == 0, r.output
    (col,) = json.loads(invoke("trace", "report", str(out), "--json").output)["inputs"]
    c = col["analysis"]["concurrency"]
    asleep_pct = 100 * c["kswapd_asleep_ns"] / sum(c["time_ns_by_tasks"])
    tasks = json.loads((out / "tasks.json").read_text())["tasks"]
    (cpu_pct,) = [t["cpu_pct"] for t in tasks if t["kind"] == "kswapd"]
    assert 10 < cpu_pct < 90, cpu_pct
    assert abs(asleep_pct + cpu_pct - 100) < 2.5, (asleep_pct, cpu_pct)


def test_stdin_gzip_and_damaged_lines_are_counted_not_fatal() -> None:
    text = (
        "# tracer: nop\n"
        "              dd-7       [000] .....   1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n"
        "this line is damaged\n"
        "              dd-7       [000] .....   1.000500: mm_vmscan_direct_reclaim_end: nr_reclaimed=32\n"
        "              dd-7       [000] .....   1.000600: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=32 nr_scanned=oops nr_taken=3 lru=inactive_file\n"
    ).encode()
    # The real command: the Rust reader streams file descriptor 0 itself.
    exe = Path(sys.executable).parent / "reclaimlab"
    r = subprocess.run([str(exe), "trace", "report", "-"], input=gzip.compress(text), capture_output=True, check=True)
    out = r.stdout.decode()
    assert "2 malformed" in out
    assert "malformed lines skipped: 3, 5" in out
    direct = next(line for line in out.splitlines() if line.startswith("Direct reclaims"))
    assert direct.split()[-1] == "1"


def test_two_inputs_are_two_columns(tmp_path: Path) -> None:
    r = invoke("trace", "report", str(REAL), str(REAL), "--ignore-pid")
    assert r.exit_code == 0, r.output
    header = r.output.split("FTrace Reclaim Statistics: vmscan\n\n", 1)[1].splitlines()[0]
    assert header.split() == ["vmscan-6.18-memcg-hugetlb#1", "vmscan-6.18-memcg-hugetlb#2"]
    row = next(line for line in r.output.splitlines() if line.startswith("Kswapd pages scanned"))
    assert row.split()[-2:] == ["717070", "717070"]


def test_output_file_is_never_overwritten_unasked(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    out.write_text("mine")
    r = CliRunner().invoke(cli, ["trace", "report", str(REAL), "-o", str(out)])
    assert r.exit_code != 0 and "--force" in r.output
    assert out.read_text() == "mine"
    assert invoke("trace", "report", str(REAL), "-o", str(out), "--force").exit_code == 0
    assert "Kswapd pages scanned" in out.read_text()


def test_a_sweep_directory_is_one_column_per_point(tmp_path: Path, small_scenario: Path) -> None:
    sweep = tmp_path / "sweep"
    for n in (8, 16):
        point = sweep / f"workload.tasks={n}"
        r = invoke("run", str(small_scenario), "-o", str(point), "-j", "1", "--set", "run.trace=true",
                   "--set", "run.duration_s=0.2", "--set", f"workload.tasks={n}")  # fmt: skip
        assert r.exit_code == 0, r.output
    r = invoke("trace", "report", str(sweep), "--json")
    assert r.exit_code == 0, r.output
    cols = json.loads(r.output)["inputs"]
    assert [c["name"] for c in cols] == ["workload.tasks=16", "workload.tasks=8"]
    assert all(c["summary"]["kswapd"]["scanned_file"] > 0 for c in cols)


def test_clear_errors_for_missing_inputs(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["trace", "report", str(tmp_path / "nope.txt")])
    assert r.exit_code == 2 and "no such file" in r.output
    r = CliRunner().invoke(cli, ["trace", "report", str(tmp_path)])
    assert r.exit_code == 2 and "no traced run directory" in r.output


def test_any_number_of_threads_gives_the_streamed_report(tmp_path: Path, small_scenario: Path) -> None:
    """A plain file is mapped and decoded by -j threads in 1 MiB blocks; stdin is read in
    batches that -j threads decode, or with -j 1 streamed by one thread. Copies of a simulated
    trace one after another (several blocks; stalls open across block ends; timestamps going
    back at each copy) report the same every way."""
    out = tmp_path / "run"
    r = invoke("run", str(small_scenario), "-o", str(out), "--set", "run.trace=true", "--set", "run.duration_s=0.3", "--set", "workload.tasks=24")
    assert r.exit_code == 0, r.output
    one = (out / "trace.txt").read_bytes()
    copies = -(-3_500_000 // len(one))
    big = tmp_path / "big.trace"
    big.write_bytes(one * copies + b"a damaged last line without its newline")
    exe = Path(sys.executable).parent / "reclaimlab"

    def analysis(*args: str, stdin: bytes | None = None) -> dict:
        r = subprocess.run([str(exe), "trace", "report", "--json", *args], input=stdin, capture_output=True, check=True)
        return json.loads(r.stdout)["inputs"][0]["analysis"]

    streamed = analysis("-j", "1", "-", stdin=big.read_bytes())
    assert streamed["parse"]["malformed_lines"] == [streamed["parse"]["lines"]]
    assert streamed["parse"]["bytes"] > 3_000_000
    for jobs in ("1", "2", "3"):
        assert analysis("-j", jobs, str(big)) == streamed, jobs
    assert analysis("-j", "2", "-", stdin=big.read_bytes()) == streamed
