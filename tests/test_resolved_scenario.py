"""A point is parsed and checked once (`_core.sweep_points`) and travels as a
`ResolvedScenario`: run as it is, pickled to a worker as its canonical TOML."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from reclaimlab import _core
from reclaimlab.scenarios import SCENARIO_DIR, shipped_scenarios
from reclaimlab.seeds import seed000, seed002
from reclaimlab.simulate.cli import BENCH_HIGHALLOC, BENCH_NUMA, BENCH_SCENARIO, BENCH_WRITEBACK
from reclaimlab.simulate.runner import points, run_points

from .conftest import ROOT


def test_a_point_pickles_as_its_canonical_toml_and_comes_back_the_same(small_scenario: Path) -> None:
    (p,) = points(small_scenario, ["workload.tasks=3"])
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, _core.ResolvedScenario)
    assert (q.label, q.toml, q.backend, q.name) == (p.label, p.toml, "sim", "small")
    assert _core.page_state_bytes_needed(q) == _core.page_state_bytes_needed(p)
    assert "workload.tasks=3" not in p.label and "tasks = 3" in p.toml


def test_a_relabelled_point_is_the_same_scenario(small_scenario: Path) -> None:
    (p,) = points(small_scenario)
    q = p.with_label("test3/workload.tasks=12")
    assert (q.label, q.toml) == ("test3/workload.tasks=12", p.toml)


def test_sweep_points_run_in_workers_as_in_one_process(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text((ROOT / "scenarios" / "small.toml").read_text() + '\n[sweep]\n"workload.tasks" = [2, 4]\n')
    pts = points(sweep, ["run.duration_s=0.1"])
    assert [p.label for p in pts] == ["workload.tasks=2", "workload.tasks=4"]
    one = run_points(pts, tmp_path / "one", jobs=1, quiet=True)
    two = run_points(pts, tmp_path / "two", jobs=2, quiet=True)
    for a, b in zip(one, two):
        for name in ("scenario.toml", "result.json", "vmstat.after"):
            assert (a / name).read_bytes() == (b / name).read_bytes()
        assert (a / "scenario.toml").read_text() == pts[one.index(a)].toml


def test_a_point_checked_for_a_live_run_is_not_simulated(tmp_path: Path) -> None:
    p, *_ = _core.sweep_points(str(ROOT / "scenarios" / "live" / "dd-squeeze.toml"), [], "live")
    with pytest.raises(ValueError, match="resolved for a live run"):
        _core.run_scenario(p, tmp_path / "run")


def test_the_host_is_asked_for_by_the_file_or_a_set(tmp_path: Path, small_scenario: Path) -> None:
    host = tmp_path / "host.toml"
    host.write_text('[machine]\nfrom = "host"\n[workload]\nkind = "dd"\n')
    assert _core.needs_host_profile(str(host))
    assert not _core.needs_host_profile(str(host), ['machine.from="nothost"'])
    assert not _core.needs_host_profile(str(small_scenario))
    assert _core.needs_host_profile(str(small_scenario), ["machine.from=host"])
    assert not _core.needs_host_profile(str(small_scenario), ["machine.from=host", "machine.from=other"])  # the last wins
    assert not _core.needs_host_profile(str(tmp_path / "absent.toml"))


def test_the_seeds_scale_their_own_machines() -> None:
    assert seed000.overrides(0.125, 5.0) == ["machine.memory_mb_per_node=48384", "machine.dma32_mb=3072", "run.duration_s=5.0"]
    assert seed000.overrides(1.0, None) == []
    assert seed002.overrides(*seed002.BENCH) == [
        "machine.memory_mb_per_node=2048", "machine.dma32_mb=1024", "workload.size_mb=1600",
        "workload.background.size_mb=480", "swap.size_mb=8192",
        "run.duration_s=10", "workload.runtime_s=10", "workload.background.runtime_s=10",
    ]  # fmt: skip


def test_the_bench_scenario_is_a_shipped_file_listed_as_a_benchmark() -> None:
    assert BENCH_SCENARIO == SCENARIO_DIR / "bench" / "dd.toml"
    (p,) = points(BENCH_SCENARIO)
    assert 'description = ""' in p.toml and "tasks = 90" in p.toml
    listed = dict(shipped_scenarios())
    assert listed[BENCH_SCENARIO].startswith("benchmark (bench)")
    assert listed[BENCH_WRITEBACK].startswith("benchmark (bench-writeback): the scenario `reclaimlab bench --writeback`")
    (w,) = points(BENCH_WRITEBACK)
    assert 'kind = "dd-write"' in w.toml and "tasks = 16" in w.toml
    assert listed[BENCH_NUMA].startswith("benchmark (bench-numa): the scenario `reclaimlab bench --numa`")
    (n,) = points(BENCH_NUMA)
    assert "nodes = 4" in n.toml and "zonelist_cache = true" in n.toml
    assert listed[BENCH_HIGHALLOC].startswith("benchmark (bench-highalloc): the scenario `reclaimlab bench --highalloc`")
    (h,) = points(BENCH_HIGHALLOC)
    assert 'kind = "hugetlb"' in h.toml and "large_folio_readahead = true" in h.toml
