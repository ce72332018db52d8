"""Scenarios read for a live run: the one schema (the core's), its defaults, sweeps, --set, the
keys a live run refuses, and errors that name file, key and expectation."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reclaimlab.live.scenario import ScenarioError, load
from reclaimlab.simulate.runner import ScenarioError as SimScenarioError
from reclaimlab.simulate.runner import points as sim_points
from .live_support import host_profile_text
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_shipped_scenarios_parse_for_a_live_run() -> None:
    dd = load(ROOT / "scenarios/live/dd-squeeze.toml")
    labels = [label for label, _ in dd.points()]
    assert labels == ["workload.tasks=1", "workload.tasks=2", "workload.tasks=4"]
    point = dd.points()[2][1]
    assert point.memory["mode"] == "squeeze" and point.workload["block_kb"] == 4096
    assert point.workload["tasks"] == 4 and point.run["duration_s"] == 30.0
    um = load(ROOT / "scenarios/live/usemem-swap-ra.toml").points()[0][1]
    assert len(um.backgrounds) == 1 and um.backgrounds[0]["random"] is True and not um.background_list
    assert um.swap["nonrotational"] is True
    assert um.sysctl == {"page_cluster": 3, "vma_ra_enabled": True}


HOST_PROFILE = host_profile_text()


def test_every_shipped_scenario_is_one_format(host_profile: Path) -> None:
    """Every scenario file parses for both backends, or is refused by one of them by key;
    at least one backend runs it."""
    host_profile.write_text(HOST_PROFILE)
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        if path.name == "reference.toml":
            continue
        accepted = 0
        for read in (load, sim_points):
            try:
                read(path, [])
                accepted += 1
            except (ScenarioError, SimScenarioError) as e:
                assert "cannot honour it" in str(e), f"{path}: {e}"
        assert accepted, f"{path}: neither backend runs it"


def test_a_host_scenario_is_this_hosts_machine(host_profile: Path) -> None:
    host_profile.write_text(HOST_PROFILE)
    (point,) = sim_points(ROOT / "scenarios/live/dd-squeeze.toml", ["workload.tasks=2"])
    doc = tomllib.loads(point.toml)
    assert "from" not in doc["machine"]
    assert doc["machine"]["memory_mb_per_node"] == 8192 and doc["machine"]["cpus_per_node"] == 2
    assert doc["machine"]["devices"][0]["name"] == "vdz" and doc["machine"]["devices"][0]["bandwidth_mb_s"] == 1500.0
    assert doc["machine"]["sysctl"] == {"read_ahead_kb": 512, "min_free_kbytes": 67584, "watermark_scale_factor": 10}
    assert "read_ahead_kb" not in doc.get("sysctl", {})
    # explicit keys win over the profile
    (point,) = sim_points(ROOT / "scenarios/live/dd-squeeze.toml", ["workload.tasks=2", "machine.cpus_per_node=4"])
    assert tomllib.loads(point.toml)["machine"]["cpus_per_node"] == 4
    # a live run of the same file sets none of the host's sysctls
    (_, live), *_ = load(ROOT / "scenarios/live/dd-squeeze.toml").points()
    assert live.sysctl == {}


def test_without_a_profile_the_simulator_says_how_to_make_one() -> None:
    with pytest.raises(SimScenarioError, match=r"key `machine\.from`: .*run `reclaimlab host probe`"):
        sim_points(ROOT / "scenarios/live/dd-squeeze.toml", [])


def test_defaults_are_filled_in(tmp_path: Path) -> None:
    (label, sc), = load(write(tmp_path, '[workload]\nkind = "dd"\ntasks = 1\nfile_mb = 64\n')).points()
    assert label == ""
    assert sc.workload == {
        "kind": "dd", "tasks": 1, "block_kb": 4096, "direct": False, "readahead_depth": 2,
        "file_mb": 64, "dir": "/var/tmp/reclaimlab", "files": [],
    }  # fmt: skip
    assert sc.memory["mode"] == "none" and sc.sysctl == {}
    assert sc.run["duration_s"] == 10.0 and sc.run["trace"] is False
    assert sc.live["drop_caches"] is True
    assert sc.name == "s"


def test_set_overrides_and_parses_toml_values(tmp_path: Path) -> None:
    p = write(tmp_path, '[workload]\nkind = "usemem"\n[sysctl]\nvma_ra_enabled = true\n[sweep]\n"workload.tasks" = [1, 2]\n')
    sweep = load(p, ["sysctl.vma_ra_enabled=false", "memory.mode=cgroup", "memory.limit_mb=256"])
    assert [lbl for lbl, _ in sweep.points()] == ["workload.tasks=1", "workload.tasks=2"]
    sc = sweep.points()[1][1]
    assert sc.sysctl["vma_ra_enabled"] is False and sc.workload["tasks"] == 2
    assert sc.memory["mode"] == "cgroup"


@pytest.mark.parametrize(
    "text, message",
    [
        ('[workload]\nkind = "dd"\ntasks = 1\nthreads = 4\n', r"s\.toml: .*unknown field `threads`"),
        ('[workload]\nkind = "dd"\ntasks = 1\ndirect = "yes"\n', r"s\.toml: key `workload\.direct`: .*expected a boolean"),
        ('[workload]\nkind = "fio"\n', r'key `workload\.kind`: unknown workload `fio`; expected one of "dd", "dd-write"'),
        ('[workload]\nkind = "dd"\ntasks = 0\n', r"key `workload\.tasks`: expected at least one task"),
        ('[sysctl]\nswappiness = 300\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `sysctl\.swappiness`: expected 0 to 200"),
        ('[memory]\nmode = "cgroup"\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `memory\.limit_mb`: .*needs a limit"),
        ('[swap]\nkind = "zram"\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `swap\.size_mb`"),
        ('[workload]\nkind = "dd"\ntasks = 1\n[extra]\nx = 1\n', r"unknown field `extra`"),
        ('[run]\nsample_interval_s = 0\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `run\.sample_interval_s`"),
        ('[memory]\nmode = "none"\n', r"missing field `workload`"),
        ('[variant]\nkswapd_threads = 4\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `variant\.kswapd_threads`: a live run cannot honour it"),
        ('[run]\nstart_at = "kswapd_wake"\n[workload]\nkind = "dd"\ntasks = 1\n', r"key `run\.start_at`: a live run cannot honour it"),
        ('[workload]\nkind = "dd"\ntasks = 1\n', r"key `workload\.file_mb`: a live run cannot honour it: a live run makes each dd task's file"),
    ],
)
def test_errors_name_the_file_the_key_and_what_was_expected(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        load(write(tmp_path, text))


def test_a_background_workload_cannot_sweep(tmp_path: Path) -> None:
    text = '[workload]\nkind = "usemem"\n[workload.background]\nkind = "usemem"\ntasks = [1, 2]\n'
    with pytest.raises(ScenarioError, match=r"key `workload\.background\.tasks`"):
        load(write(tmp_path, text))


def test_bad_set_syntax(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="expected key=value"):
        load(write(tmp_path, '[workload]\nkind = "dd"\ntasks = 1\n'), ["sysctl.swappiness"])


def test_every_sysctl_a_live_run_accepts_is_one_it_can_write(tmp_path: Path) -> None:
    from reclaimlab.live.backend import SYSCTLS

    text = (
        '[sysctl]\nmin_free_kbytes = 1\nwatermark_scale_factor = 1\nswappiness = 1\n'
        'watermark_boost_factor = 0\ndirty_ratio = 1\ndirty_background_ratio = 1\n'
        'page_cluster = 1\nvma_ra_enabled = true\n[workload]\nkind = "usemem"\n'
    )
    (_, sc), = load(write(tmp_path, text)).points()
    assert len(sc.sysctl) == 8 and set(sc.sysctl) <= set(SYSCTLS)
