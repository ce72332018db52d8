"""The seed-000 fidelity targets: the seed's own tables must meet every one of them (so a
target that fails on a simulation means the simulation differs from the seed), and each
target can fail."""

from __future__ import annotations

import copy

from reclaimlab.seeds import seed000


def seed_results() -> dict[int, list[dict]]:
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
        r["metrics"]["throughput_kb_s"] = 26_000_000.0  # device-limited: no reclaim ceiling
        r["metrics"]["dr"] = 0
    failed = {t.name for t in seed000.check_targets(flat) if not t.ok}
    assert "T3 throughput plateaus near 17–18 GB/s (52–90)" in failed
    assert "T3 direct reclaims from 22 on, growing with N" in failed
    assert any(name.startswith("T4/T3 throughput at 90") for name in failed)


def test_counts_are_scaled_to_the_seed_stage() -> None:
    r = {"elapsed_s": 30.0, "metrics": {"tasks": 10, "sy": 1, "dd_cpu": 1, "kswapd_cpu": [1, 1], "throughput_kb_s": 1, "dr": 7, "pgscan_kswapd": 100, "pgscan_direct": 0}}
    cols = seed000.columns_of(r)
    assert cols["dr"] == 70 and cols["pgscan_kswapd"] == 1000
