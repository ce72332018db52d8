"""fs_mark (seed 001): the live loop on a temporary directory at small sizes, the helper
process's loop lines, the metrics the live workload makes of them (the simulator's names),
a fake live run that removes its files at restore, a simulated run's table, and bad keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaimlab.cli import cli
from reclaimlab.live import fs_mark
from reclaimlab.live.backend import RealBackend
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.scenario import ScenarioError, load
from reclaimlab.live.workloads import fs_mark_metrics

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "sim" / "fs_mark.toml"


def test_the_loop_writes_its_files_into_subdirectories_and_reports_each_loop(tmp_path: Path) -> None:
    lines: list[dict[str, float]] = []
    top = str(tmp_path / "t0")
    results = fs_mark.run(top, dirs=3, files_per_dir=2, files=4, loops=2, file_size=10_000, block_bytes=4096,
                          report=lines.append)  # fmt: skip
    assert results == lines and [r["loop"] for r in results] == [0, 1]
    assert all(r["files"] == 4 and r["usecs"] >= 0 and r["files_per_sec"] > 0 for r in results)
    # 8 files, 2 to a subdirectory, 3 subdirectories in turn: 00000 gets files 0, 1, 6, 7.
    names = sorted(str(p.relative_to(top)) for p in Path(top).rglob("f*"))
    assert names == ["00000/f00000000", "00000/f00000001", "00000/f00000006", "00000/f00000007",
                     "00001/f00000002", "00001/f00000003", "00002/f00000004", "00002/f00000005"]  # fmt: skip
    assert all(p.stat().st_size == 10_000 for p in Path(top).rglob("f*"))
    assert (Path(top) / "00000" / "f00000000").read_bytes() == b"\xa5" * 10_000


def test_the_helper_prints_a_json_line_per_loop(tmp_path: Path) -> None:
    top = tmp_path / "t1"
    argv = [sys.executable, "-m", "reclaimlab.live.helpers", "fs_mark", "--dir", str(top), "--dirs", "2",
            "--files-per-dir", "5", "--files", "3", "--loops", "3", "--file-size", "8192", "--block-bytes", "16384"]  # fmt: skip
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    loops = [json.loads(line) for line in out.splitlines()]
    assert [r["loop"] for r in loops] == [0, 1, 2]
    assert len(list(top.rglob("f*"))) == 9


def test_metrics_sum_the_threads_rates_for_the_loops_all_finished() -> None:
    line = lambda i, fps: json.dumps({"loop": i, "files": 10, "usecs": 1, "files_per_sec": fps})  # noqa: E731
    outputs = ["\n".join([line(0, 5.0), line(1, 4.0), line(2, 3.0)]), "\n".join([line(0, 6.0), line(1, 2.0)])]
    params = {"threads": 2, "loops": 3, "file_size": 1000}
    m = fs_mark_metrics(params, outputs, 100.0, [112.5, None])
    assert m["files_per_sec"] == [11.0, 6.0] and m["files_per_sec_mean"] == 8.5
    assert m["loops_done"] == 2 and m["completed"] is False
    assert m["files"] == 50 and m["bytes"] == 50_000 and m["elapsed_s"] == 12.5


def test_remove_tree_removes_what_the_run_made_and_follows_no_link(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious").write_text("x")
    top = tmp_path / "tree"
    fs_mark.run(str(top), dirs=2, files_per_dir=1, files=2, loops=1, file_size=100, block_bytes=4096, report=lambda r: None)
    os.symlink(keep, top / "link")
    RealBackend().remove_tree(str(top))
    assert not top.exists() and (keep / "precious").read_text() == "x"


def test_a_fake_live_run_starts_a_helper_per_thread_and_restore_removes_their_trees(tmp_path: Path) -> None:
    fake = FakeBackend()
    fake.dirs.add("/var/tmp")
    sweep = load(_write(tmp_path, '[workload]\nkind = "fs_mark"\nthreads = 2\nfiles = 3\nloops = 2\nfile_size = 4096\n'
                                  'dir = "/var/tmp/reclaimlab-fsm"\n'))  # fmt: skip
    from reclaimlab.live.workloads import make

    w = make(sweep.points()[0][1].workload, fake)
    from reclaimlab.live.journal import Journal

    journal = Journal(tmp_path / "journal.jsonl")
    fake.journal = journal
    w.start(None)
    spawned = [c for c in fake.calls if c[0] == "spawn"]
    assert len(spawned) == 2 and all("fs_mark" in c for c in spawned)
    tops = [c[c.index("--dir") + 1] for c in spawned]
    assert len(set(tops)) == 2 and all(t.startswith("/var/tmp/reclaimlab-fsm/fsmark-") for t in tops)
    # What the helpers would have written.
    for t in tops:
        fake.dirs.add(f"{t}/00000")
        fake.files[f"{t}/00000/f00000000"] = ""
    fake.restore(journal)
    assert not any(p.startswith("/var/tmp/reclaimlab-fsm") for p in [*fake.files, *fake.dirs])


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "text, message",
    [
        ('[workload]\nkind = "fs_mark"\nfiles = 0\n', r"s\.toml: key `workload\.files`: expected at least 1"),
        ('[workload]\nkind = "fs_mark"\nsync = 1\n', r"s\.toml: key `workload\.sync`: expected 0"),
        ('[workload]\nkind = "fs_mark"\nthreads = 0\n', r"s\.toml: key `workload\.threads`: expected at least 1"),
    ],
)
def test_bad_fs_mark_keys_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        load(_write(tmp_path, text))


def test_a_simulated_fs_mark_run_prints_its_table(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(SCENARIO), "-o", str(out), "-j", "1", "--set", "workload.loops=2", "--set", "run.duration_s=8"])
    assert r.exit_code == 0, r.output
    for header in ("files/s mean", "elapsed s", "loops", "nr_vmscan_write"):
        assert header in r.output, r.output
    m = json.loads((out / "result.json").read_text())["metrics"]
    assert m["loops_done"] == 2 and m["completed"] and len(m["files_per_sec"]) == 2
