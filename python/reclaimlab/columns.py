"""Column sources: where a table's value comes from in a run directory, simulated or live.

A source (as `_core.workload_columns` gives them) is one of
`metrics.<name>` (result.json's metrics; dotted for nested dicts), `vmstat.<counter>` (its
after − before delta; `vmstat.<prefix>*` sums the counters with that prefix), `memcg.<event>`
(result.json's `memcg.events`: the workload's memory cgroup), `cpu.sy_max`,
`tasks.workload_cpu` or `tasks.kswapd_cpu.<node>`.
"""

from __future__ import annotations

from typing import Any, Mapping

from reclaimlab.rundir import RunDir, sum_prefix


def value(run: RunDir, source: str) -> Any:
    """The value of `source` in `run`; None where the run has none (a metric it did not
    report, a node without kswapd). ValueError for a source that is not one of the above."""
    group, _, name = source.partition(".")
    if group == "metrics" and name:
        return metric(run.result.get("metrics", {}), name)
    if group == "memcg" and name:
        return metric(run.result.get("memcg") or {}, f"events.{name}")
    if group == "vmstat" and name:
        delta = run.delta
        return sum_prefix(delta, name[:-1]) if name.endswith("*") else delta.get(name, 0)
    if source == "cpu.sy_max":
        return max_sy(run)
    if source == "tasks.workload_cpu":
        return workload_cpu_per_task(run)
    node = source.removeprefix("tasks.kswapd_cpu.")
    if node != source and node.isdigit():
        return kswapd_cpu(run, int(node))
    raise ValueError(f"unknown column source {source!r}")


def metric(metrics: Mapping[str, Any], dotted: str) -> Any:
    """`metrics["a"]["b"]` for "a.b"; None if any key is missing."""
    found: Any = metrics
    for key in dotted.split("."):
        if not isinstance(found, Mapping) or key not in found:
            return None
        found = found[key]
    return found


def max_sy(run: RunDir) -> float | None:
    """vmstat's `sy`, the highest sample (seed 000: "I just grab the highest value"); None
    when the run took no CPU sample (a run shorter than its sample interval)."""
    return max((c["sy_pct"] for c in run.cpu), default=None)


def workload_cpu_per_task(run: RunDir) -> float:
    """Mean CPU% per workload task slot (restarted dd processes add up in their slot)."""
    tasks = run.tasks_of_kind("workload")
    slots = int(run.result.get("metrics", {}).get("tasks") or len(tasks) or 1)
    return sum(t["cpu_pct"] for t in tasks) / slots


def kswapd_cpu(run: RunDir, node: int) -> float | None:
    """CPU% of node `node`'s kswapd thread, the mean over its threads when it has several
    (seed 000 tracks kswapd "the same way it is tracked for dd": per task)."""
    threads = [t for t in run.tasks_of_kind("kswapd") if t.get("node") == node]
    return sum(t["cpu_pct"] for t in threads) / len(threads) if threads else None


def ra_hit_pct(delta: Mapping[str, int]) -> float | None:
    """Swap readahead hits per readahead page, in percent (None without readahead)."""
    ra, hit = delta.get("swap_ra", 0), delta.get("swap_ra_hit", 0)
    return round(hit * 100.0 / ra, 2) if ra else None
