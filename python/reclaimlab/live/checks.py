"""`reclaimlab live check`: what this machine supports, read without changing anything."""

from __future__ import annotations

import shutil

from reclaimlab.live.backend import NR_HUGEPAGES, SYSCTLS, KernelBackend
from reclaimlab.live.journal import Journal, JournalError, journal_path
from reclaimlab.live.tracefs import find_tracefs, tracefs_supported


def capabilities(backend: KernelBackend) -> list[tuple[str, bool, str]]:
    rows: list[tuple[str, bool, str]] = []
    root = backend.euid() == 0
    rows.append(("root", root, "live runs need root" if not root else "euid 0"))
    try:
        j = Journal.load(journal_path())
        rows.append(("no unrestored run", j is None, f"{journal_path()}" + (" exists: run `reclaimlab live restore`" if j else "")))
    except JournalError as e:
        rows.append(("no unrestored run", False, str(e)))
    parent = backend.memcg_parent()
    rows.append(("memory cgroup", parent is not None, f"v{parent[0]} under {parent[1]}" if parent else "no memory controller usable"))
    hp = backend.exists(NR_HUGEPAGES)
    info = backend.meminfo()
    rows.append(("hugetlb squeeze", hp, f"{info.get('Hugepagesize', 0) // 1024} KiB pages, {info.get('MemAvailable', 0) >> 20} MiB available" if hp else "no hugetlb"))
    tracefs = find_tracefs(backend)
    rows.append(("tracefs", tracefs_supported(backend), tracefs or "not mounted (a run mounts it and unmounts after)"))
    if tracefs:
        present = [s for s in ("vmscan", "writeback", "compaction") if backend.exists(f"{tracefs}/events/{s}")]
        rows.append(("reclaim events", "vmscan" in present, ", ".join(present)))
    tools = [t for t in ("dd", "fallocate", "mkswap", "swapon", "swapoff") if shutil.which(t)]
    rows.append(("swap file tools", len(tools) == 5, ", ".join(tools)))
    zram = backend.exists("/sys/block/zram0") or backend.exists("/sys/class/zram-control")
    rows.append(("zram", zram, "note: zram swap bypasses the swap cache, so no swap readahead" if zram else "module not loaded"))
    for key, path in SYSCTLS.items():
        ok = backend.exists(path)
        rows.append((f"sysctl {key}", ok, backend.read_setting(path) if ok else f"{path} missing"))
    for dev in sorted(backend.listdir("/sys/block")):
        if dev.startswith(("loop", "ram", "zram")):
            continue
        rot = backend.read_value(f"/sys/block/{dev}/queue/rotational")
        rows.append((f"disk {dev}", True, "rotational (VMA swap readahead is off for swap on it unless marked non-rotational)" if rot == "1" else "non-rotational"))
    swaps = backend.swaps()
    rows.append(("active swap", True, ", ".join(swaps) or "none"))
    return rows
