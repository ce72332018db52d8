"""The seed-000 fidelity targets: the seed's own tables must meet every one of them (so a
target that fails on a simulation means the simulation differs from the seed), and each
target can fail."""

from __future__ import annotations

import copy
from pathlib import Path

from reclaimlab.rundir import RunDir
from reclaimlab.seeds import seed000


def seed_results() -> dict[int, list[seed000.Row]]:
    return {test: seed000.reference_results(test) for test in (1, 2, 3, 4)}


def test_the_seed_meets_its_own_targets() -> None:
    targets = seed000.check_targets(seed_results())
    assert len(targets) >= 12
    failed = [t for t in targets if not t.ok]
    assert not failed, failed


def test_targets_fail_on_a_model_without_the_kswapd_bottleneck() -> None:
    res = seed_results()
    flat = copy.deepcopy(res)
    for r in flat[3]:
        r["throughput"] = 26_000_000.0  # device-limited: no reclaim ceiling
        r["dr"] = 0
    failed = {t.name for t in seed000.check_targets(flat) if not t.ok}
    assert "T3 throughput plateaus near 17–18 GB/s (52–90)" in failed
    assert "T3 direct reclaims from 22 on, growing with N" in failed
    assert any(name.startswith("T4/T3 throughput at 90") for name in failed)


def test_counts_are_scaled_to_the_seed_stage() -> None:
    r = RunDir(
        path=Path("r"), scenario={}, vmstat_before={"allocstall_normal": 3, "pgscan_kswapd": 0},
        vmstat_after={"allocstall_normal": 5, "allocstall_movable": 5, "pgscan_kswapd": 100, "pgscan_direct": 0},
        result={"elapsed_s": 30.0, "metrics": {"tasks": 10, "throughput_kB_s": 1.0}},
    )  # fmt: skip
    cols = seed000.columns_of(r)
    assert cols["dr"] == 70 and cols["pgscan_kswapd"] == 1000
    assert cols["dd"] == 10 and cols["throughput"] == 1.0  # not counts: not scaled


def test_the_t4_t3_targets_are_the_seeds_own_ratios() -> None:
    names = [t.name for t in seed000.check_targets(seed_results()) if t.name.startswith("T4/T3")]
    assert names == ["T4/T3 throughput at 52 within ±15% of the seed's 1.24", "T4/T3 throughput at 90 within ±15% of the seed's 1.34"]


def test_sy_without_cpu_samples_is_unknown_and_judges_nothing() -> None:
    # A stage shorter than its sample interval has no CPU sample: its sy is unknown ("-"),
    # not 0, and the sy targets leave such points out rather than fail on them.
    r = RunDir(path=Path("r"), scenario={}, vmstat_before={}, vmstat_after={}, result={"elapsed_s": 5.0, "metrics": {"tasks": 90}})
    assert seed000.columns_of(r)["sy"] is None
    res = seed_results()
    for test in (3, 4):
        for row in res[test]:
            row["sy"] = None
    names = {t.name for t in seed000.check_targets(res)}
    assert not [n for n in names if "sy" in n.split()]
    assert "T3 throughput plateaus near 17–18 GB/s (52–90)" in names  # the rest still judged
