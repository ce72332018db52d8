"""The reclaim counters a live result.json carries beside its workload's metrics.

Tables are not made here: reclaimlab.summary prints simulated and live runs alike.
"""

from __future__ import annotations

from typing import Any, Mapping

from reclaimlab.columns import ra_hit_pct
from reclaimlab.rundir import sum_prefix


def vmstat_metrics(delta: Mapping[str, int]) -> dict[str, Any]:
    """The reclaim counters every report wants, from after − before (kernel names)."""
    return {
        "pgscan_kswapd": delta.get("pgscan_kswapd", 0),
        "pgscan_direct": delta.get("pgscan_direct", 0),
        "pgsteal_kswapd": delta.get("pgsteal_kswapd", 0),
        "pgsteal_direct": delta.get("pgsteal_direct", 0),
        "allocstall": sum_prefix(delta, "allocstall_"),
        "pageoutrun": delta.get("pageoutrun", 0),
        "pswpin": delta.get("pswpin", 0),
        "pswpout": delta.get("pswpout", 0),
        "swap_ra": delta.get("swap_ra", 0),
        "swap_ra_hit": delta.get("swap_ra_hit", 0),
        "ra_hit_pct": ra_hit_pct(delta),
        "nr_vmscan_write": delta.get("nr_vmscan_write", 0),
    }
