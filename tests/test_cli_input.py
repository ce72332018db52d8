"""Input the command line refuses: bad options (click's one-line error, exit 2), a machine
bigger than this host (refused with the numbers before anything is allocated), a damaged
run directory (one line naming the file), a file that is not a trace (the counts)."""

from __future__ import annotations

import json
import random
import re
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaimlab import _core
from reclaimlab.cli import cli
from reclaimlab.simulate.capacity import FIXED_BYTES, CapacityError, fit_jobs, mem_available, point_need
from reclaimlab.simulate.runner import points


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    "args, option",
    [
        (["bench", "--memory-gb", "1"], "--memory-gb"),
        (["bench", "--tasks", "0"], "--tasks"),
        (["bench", "--duration", "0"], "--duration"),
        (["bench", "--kswapd-threads", "17"], "--kswapd-threads"),
        (["bench", "--swap", "--writeback"], "--writeback"),
        (["bench", "--numa", "--writeback"], "--numa"),
        (["bench", "--numa", "--highalloc"], "--highalloc"),
        (["reproduce", "seed000", "--tasks", "abc"], "--tasks"),
        (["reproduce", "seed000", "--tasks", "0"], "--tasks"),
        (["reproduce", "seed000", "--tests", "5"], "--tests"),
        (["reproduce", "seed000", "--scale", "0"], "--scale"),
        (["reproduce", "seed000", "--scale", "-1"], "--scale"),
        (["reproduce", "seed002", "--scale", "abc"], "--scale"),
        (["reproduce", "seed000", "--duration", "-5"], "--duration"),
        (["reproduce", "seed000", "-j", "0"], "-j"),
        (["reproduce", "seed000", "-j", "-3"], "-j"),
        (["demo", "-j", "0"], "-j"),
        (["run", "scenarios/small.toml", "-j", "0"], "-j"),
        (["run", "scenarios/small.toml", "-j", "-3"], "-j"),
        (["run", "--ray", "scenarios/small.toml"], "--ray"),
        (["reproduce", "--ray", "seed000"], "--ray"),
    ],
)
def test_bad_options_are_refused_by_click_before_anything_runs(args: list[str], option: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    r = invoke(*args, "-o", str(tmp_path / "out")) if args[0] != "bench" else invoke(*args)
    assert r.exit_code == 2, r.output
    error = [line for line in r.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and option in error[0], r.output
    assert not (tmp_path / "out").exists()
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_run_json_prints_each_points_result(tmp_path: Path, small_scenario: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(small_scenario), "-o", str(out), "-j", "1", "--json",
                                 "--set", "run.duration_s=0.5"])  # fmt: skip
    assert r.exit_code == 0, r.output
    (point,) = json.loads(r.output)
    assert point["label"] == "" and point["run_dir"] == str(out)
    assert point["result"] == json.loads((out / "result.json").read_text())


# --- a machine bigger than this host -----------------------------------------------------------

HUGE = ["--set", "machine.nodes=2", "--set", "machine.memory_mb_per_node=4194304"]  # 8 TiB


def test_an_oversized_machine_is_refused_with_the_numbers_before_any_allocation(tmp_path: Path, small_scenario: Path) -> None:
    """Under a 3 GiB address-space limit, so that a regression (the 32 GiB of page
    descriptors allocated) fails here at once instead of swapping the machine."""
    limit = 3 << 30

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    exe = shutil.which("reclaimlab", path=str(Path(sys.executable).parent)) or "reclaimlab"
    p = subprocess.run([exe, "run", str(small_scenario), *HUGE, "-o", str(tmp_path / "out"), "-j", "1"],
                       capture_output=True, text=True, preexec_fn=limit_memory, timeout=120,
                       env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    text = " ".join(p.stdout.split())
    (huge,) = points(small_scenario, HUGE[1::2])
    need = point_need(huge)
    assert need > 32 << 30  # 2³¹ page descriptors of 16 bytes
    assert f"this run needs {need / 2**30:.1f} GiB of memory" in text, text
    assert "available (MemAvailable)" in text and "machine.memory_mb_per_node" in text
    assert not (tmp_path / "out").exists()


def test_the_need_is_the_estimate_of_the_resolved_scenario(small_scenario: Path) -> None:
    (small,) = points(small_scenario)
    (huge,) = points(small_scenario, HUGE[1::2])
    state = _core.page_state_bytes_needed(huge)
    assert state >= (2**31) * 16  # the descriptors of 2³¹ page frames
    assert point_need(huge) > state + FIXED_BYTES
    assert point_need(small) < 1 << 30


def test_workers_are_lowered_to_what_fits_and_a_point_too_big_is_refused(small_scenario: Path) -> None:
    pts = [p.with_label(f"p={i}") for i, p in enumerate(points(small_scenario) * 4)]
    need = point_need(pts[0])
    notes: list[str] = []
    assert fit_jobs(pts, 8, available=10 * need, note=notes.append) == 4  # no more workers than points
    assert fit_jobs(pts, 4, available=int(2.5 * need), note=notes.append) == 2
    assert len(notes) == 1 and notes[0].startswith("-j lowered from 4 to 2: 4 points at once would need")
    with pytest.raises(CapacityError, match=r"point p=\d needs .* but this host has .* available \(MemAvailable\)"):
        fit_jobs(pts, 4, available=need - 1)


def test_mem_available_reads_meminfo(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n")
    assert mem_available(tmp_path / "meminfo") == 1024000
    assert mem_available(tmp_path / "none") is None
    assert (mem_available() or 0) > 0


# --- damaged run directories and traces --------------------------------------------------------


@pytest.fixture(scope="module")
def damaged_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A good run directory and a copy whose result.json was cut short."""
    root = tmp_path_factory.mktemp("damaged")
    good = root / "good"
    small = Path(__file__).resolve().parents[1] / "scenarios" / "small.toml"
    r = CliRunner().invoke(cli, ["run", str(small), "-o", str(good), "-j", "1", "--set", "run.duration_s=0.5"])
    assert r.exit_code == 0, r.output
    bad = root / "bad"
    shutil.copytree(good, bad)
    text = (bad / "result.json").read_text()
    (bad / "result.json").write_text(text[: len(text) // 2])
    return good, bad


@pytest.mark.parametrize("command", [["compare"], ["report", "-o", "REPORT"]])
def test_a_truncated_result_json_is_one_line_naming_the_file(command: list[str], damaged_run: tuple[Path, Path], tmp_path: Path) -> None:
    good, bad = damaged_run
    args = [a.replace("REPORT", str(tmp_path / "r.html")) for a in command]
    r = CliRunner().invoke(cli, [*args, str(good), str(bad)])
    assert r.exit_code == 1, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("Error: "), r.output
    assert f"{bad / 'result.json'}: damaged" in r.output
    assert isinstance(r.exception, SystemExit)


def test_a_result_json_that_is_not_an_object_is_damaged(damaged_run: tuple[Path, Path], tmp_path: Path) -> None:
    good, _ = damaged_run
    odd = tmp_path / "odd"
    shutil.copytree(good, odd)
    (odd / "result.json").write_text("[]\n")
    r = CliRunner().invoke(cli, ["compare", str(good), str(odd)])
    assert r.exit_code == 1 and "result.json: damaged, cannot be read (expected a JSON object, found list)" in r.output, r.output


def test_random_bytes_as_a_trace_exit_non_zero_with_the_counts(tmp_path: Path) -> None:
    junk = tmp_path / "junk.trace"
    # Seeded: urandom's bytes made this flaky (an empty line, "\n\n", is not malformed).
    junk.write_bytes(random.Random(1).randbytes(1 << 20))
    r = CliRunner().invoke(cli, ["trace", "report", str(junk)])
    assert r.exit_code == 1, r.output
    assert r.output.count("\n") == 1, r.output
    assert re.search(r"\d+ of \d+ lines are malformed \(the first at lines 1, \d", r.output), r.output
    assert "not a vmscan trace?" in r.output


def test_a_trace_with_a_few_damaged_lines_is_still_reported(tmp_path: Path) -> None:
    trace = tmp_path / "few.trace"
    ok = "dd-1 [000] .... 1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n"
    trace.write_text(ok * 3 + "garbage\n")
    r = CliRunner().invoke(cli, ["trace", "report", str(trace)])
    assert r.exit_code == 0, r.output



def test_host_probe_of_a_missing_path_is_refused_by_click() -> None:
    r = CliRunner().invoke(cli, ["host", "probe", "--path", "/no/such/dir"])
    assert r.exit_code == 2 and "Invalid value for '--path'" in r.output, r.output


def test_usemem_mapping_more_than_the_page_tables_index_is_a_scenario_error() -> None:
    from reclaimlab.simulate.runner import ScenarioError

    usemem = Path(__file__).resolve().parents[1] / "scenarios" / "seed002" / "usemem.toml"
    with pytest.raises(ScenarioError, match=r"workload.size_mb.*under 16 TiB"):
        points(usemem, ["workload.tasks=100", "workload.size_mb=200000"])
