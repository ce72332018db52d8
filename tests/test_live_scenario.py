"""Live scenario parsing: defaults, sweeps, --set, and errors that name file, key and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaimlab.live.scenario import ScenarioError, load
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_shipped_scenarios_parse() -> None:
    dd = load(ROOT / "scenarios/live/dd-squeeze.toml")
    assert [label for label, _ in dd.points()] == ["tasks-1", "tasks-2", "tasks-4"]
    assert dd.memory["mode"] == "squeeze" and dd.workload["block_kb"] == 4096
    um = load(ROOT / "scenarios/live/usemem-swap-ra.toml")
    assert um.background is not None and um.background["random"] is True
    assert um.swap["nonrotational"] is True


def test_defaults_are_filled_in(tmp_path: Path) -> None:
    sc = load(write(tmp_path, '[workload]\nkind = "dd"\n'))
    assert sc.workload == {
        "kind": "dd", "tasks": 1, "block_kb": 4096, "direct": False, "file_mb": 1024,
        "duration_s": 30.0, "dir": "/var/tmp/reclaimlab", "files": [],
    }  # fmt: skip
    assert sc.memory["mode"] == "none" and sc.sysctl == {}
    assert sc.name == "s"


def test_set_overrides_and_parses_toml_values(tmp_path: Path) -> None:
    p = write(tmp_path, '[workload]\nkind = "usemem"\n[sysctl]\nvma_ra_enabled = true\n')
    sc = load(p, ["sysctl.vma_ra_enabled=false", "workload.tasks=[1,2]", "memory.mode=cgroup", "memory.limit_mb=256"])
    assert sc.sysctl["vma_ra_enabled"] is False
    assert [lbl for lbl, _ in sc.points()] == ["tasks-1", "tasks-2"]
    assert sc.memory["mode"] == "cgroup"


@pytest.mark.parametrize(
    "text, message",
    [
        ('[workload]\nkind = "dd"\nthreads = 4\n', r"s\.toml: unknown key workload\.threads; expected one of: tasks"),
        ('[workload]\nkind = "dd"\ndirect = "yes"\n', r"s\.toml: workload\.direct = 'yes': expected bool"),
        ('[workload]\nkind = "fio"\n', r'workload\.kind = \'fio\': expected "dd" \| "dd-write"'),
        ('[workload]\nkind = "dd"\ntasks = 0\n', r"workload\.tasks = 0: expected a positive task count"),
        ('[sysctl]\nswappiness = 300\n[workload]\nkind = "dd"\n', r"sysctl\.swappiness = 300: expected 0\.\.200"),
        ('[memory]\nmode = "cgroup"\n[workload]\nkind = "dd"\n', r"needs memory\.limit_mb > 0"),
        ('[swap]\nkind = "zram"\n[workload]\nkind = "dd"\n', r"needs swap\.size_mb > 0"),
        ("[workload]\nkind = \"dd\"\n[extra]\nx = 1\n", r"unknown top-level key\(s\) extra"),
        ('[live]\nsample_interval_s = 0\n[workload]\nkind = "dd"\n', r"live\.sample_interval_s = 0"),
        ("[memory]\nmode = \"none\"\n", r"missing \[workload\]"),
    ],
)
def test_errors_name_the_file_the_key_and_what_was_expected(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        load(write(tmp_path, text))


def test_background_cannot_sweep(tmp_path: Path) -> None:
    text = '[workload]\nkind = "usemem"\n[workload.background]\nkind = "usemem"\ntasks = [1, 2]\n'
    with pytest.raises(ScenarioError, match="background.tasks must be one count"):
        load(write(tmp_path, text))


def test_bad_set_syntax(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="expected key=value"):
        load(write(tmp_path, '[workload]\nkind = "dd"\n'), ["sysctl.swappiness"])
