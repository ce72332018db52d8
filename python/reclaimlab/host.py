"""`reclaimlab host probe`: describe this machine for scenarios that say
`[machine] from = "host"`.

Nodes, CPUs and memory per node come from sysfs and /proc; the block device is the one under
a path (the workload's files: /var/tmp by default), with its queue's `read_ahead_kb`,
`max_sectors_kb`, tag depth and `rotational` flag, and its speed from a short, bounded,
read-only probe of an existing file on it: sequential O_DIRECT reads of `max_sectors_kb` in
parallel streams for the bandwidth, scattered 4 KiB reads in one stream for the per-request
latency and in many native ones for the IOPS (`request_us`), then the same sequential reads
buffered, through the page cache (the file's pages dropped before each pass with
POSIX_FADV_DONTNEED, and after the probe), for the rate buffered readers get: on a VM the
two differ by the host's time per scatter-gather segment, which the core fits
(`[reads]`, scenario/host.rs). With `--fresh-mb` the probe writes the file it reads, and
measures that write (`[writes]`): the rate `write()` fills the page cache at and the rate
the disk takes the file's writeback at, which becomes the device's write bandwidth. The
profile is
written by the core (its schema is crates/reclaim-sim/src/scenario/host.rs) to
`_core.host_profile_file()`, which later runs reuse. With `--swap` (root) the swap path's
CPU costs are measured too, with a swap file the probe adds and removes
(live/swap_probe.py); without it the probe changes nothing.

The profile also keeps the zones' non-movable pageblocks, the free blocks in them and the
free fragments of movable pageblocks, from /proc/pagetypeinfo, and how many of the
fragmented pageblocks also hold kernel memory no compaction moves or page cache, from
/proc/kpageflags (`pageblocks`, crates/reclaim-sim/src/mm/boot_memory.rs), so that a
simulated run starts as fragmented as this machine; `reclaimlab host pageblocks` reads them
again on their own, optionally after dropping the page cache as a live run does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import mmap
import os
import platform
import random
import shutil
import socket
import statistics
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

import click

from reclaimlab import _core
from reclaimlab.interrupts import signals_unwind
from reclaimlab.live.workloads import latency_us

MiB = 1 << 20
PROBE_FILE_MIN = 64 * MiB
BANDWIDTH_SECONDS = 1.5
BANDWIDTH_THREADS = 8
SINGLE_STREAM_SECONDS = 1.0
LATENCY_REQUEST = 4096
IOPS_THREADS = 32
IOPS_SECONDS = 1.0
BUFFERED_THREADS = 4
BUFFERED_SECONDS = 1.5
SEARCH_LIMIT = 50_000  # directory entries looked at while searching for a file to read


class ProbeError(RuntimeError):
    pass


def _read(path: str | Path) -> str:
    return Path(path).read_text().strip()


def _kb(line: str) -> int:
    return int(line.split()[-2])


PAGETYPEINFO = "/proc/pagetypeinfo"
# The model's zones: the host's ZONE_DMA counts with its DMA32, as `dma32_mb` does.
MODEL_ZONE = {"DMA": "DMA32", "DMA32": "DMA32", "Normal": "Normal"}
NON_MOVABLE = {"Unmovable": "unmovable", "Reclaimable": "reclaimable", "HighAtomic": "highatomic"}
FREE_LISTS = {"Unmovable": "free_unmovable", "Reclaimable": "free_reclaimable", "Movable": "free_movable"}
PAGEBLOCK_ORDER = _core.PAGEBLOCK_ORDER


def movable_fragments(zone: dict[str, Any]) -> int:
    """Pages free on a zone's Movable lists in blocks below pageblock order: what other
    memory leaves of the movable pageblocks it breaks up."""
    return sum(n << o for o, n in enumerate(zone.get("free_movable", [])[:PAGEBLOCK_ORDER]))


def pageblocks(text: str) -> list[dict[str, Any]]:
    """Each zone's non-movable pageblocks and the free blocks on the Unmovable, Reclaimable
    and Movable free lists, from /proc/pagetypeinfo's text, as the machine's `pageblocks`
    (`ZonePageblocks`). Zones the model does not have (Movable, Device) are left out; a
    line that does not parse is skipped."""
    zones: dict[tuple[int, str], dict[str, Any]] = {}

    def zone(node: str, name: str) -> dict[str, Any] | None:
        if name not in MODEL_ZONE:
            return None
        key = (int(node), MODEL_ZONE[name])
        return zones.setdefault(key, {"node": key[0], "zone": key[1], "unmovable": 0, "reclaimable": 0, "highatomic": 0})

    columns: list[str] = []
    for line in text.splitlines():
        head, _, rest = line.partition(",")
        fields = rest.replace(",", " ").split()
        if line.startswith("Number of blocks type"):
            columns = line.split()[4:]
        elif head.startswith("Node") and len(fields) >= 2 and fields[0] == "zone":
            if fields[2:3] == ["type"] and len(fields) >= 4:
                # Node 0, zone Normal, type Unmovable <counts by order>
                name, mt, counts = fields[1], fields[3], fields[4:]
                z = zone(head.split()[1], name)
                key = FREE_LISTS.get(mt)
                if z is None or key is None or not all(c.isdigit() for c in counts):
                    continue
                have = z.setdefault(key, [])
                have.extend([0] * (len(counts) - len(have)))
                for i, c in enumerate(counts):
                    have[i] += int(c)
            elif columns and len(fields) == 2 + len(columns) and all(c.isdigit() for c in fields[2:]):
                # Node 0, zone Normal <blocks of each type>
                z = zone(head.split()[1], fields[1])
                if z is None:
                    continue
                for mt, n in zip(columns, fields[2:]):
                    if mt in NON_MOVABLE:
                        z[NON_MOVABLE[mt]] += int(n)
    return [z for z in zones.values() if z["unmovable"] or z["reclaimable"] or z["highatomic"] or movable_fragments(z)]


ZONEINFO = "/proc/zoneinfo"
KPAGEFLAGS = "/proc/kpageflags"
# /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h).
KPF_LRU, KPF_BUDDY, KPF_ANON, KPF_HUGE, KPF_NOPAGE = 1 << 5, 1 << 10, 1 << 12, 1 << 17, 1 << 20


def zone_spans(text: str) -> list[tuple[int, str, int, int]]:
    """Each zone of /proc/zoneinfo with pages, as (node, model zone, start_pfn, spanned);
    zones the model does not have are left out."""
    spans: list[tuple[int, str, int, int]] = []
    node, name, spanned = -1, "", 0
    for line in text.splitlines():
        words = line.replace(",", " ").split()
        if words[:1] == ["Node"] and len(words) >= 4 and words[2] == "zone":
            node, name, spanned = int(words[1]), words[3], 0
        elif words[:1] == ["spanned"] and len(words) == 2:
            spanned = int(words[1])
        elif words[:1] == ["start_pfn:"] and len(words) == 2 and spanned and name in MODEL_ZONE:
            spans.append((node, MODEL_ZONE[name], int(words[1]), spanned))
    return spans


def fragment_census(spans: list[tuple[int, str, int, int]], kpageflags: BinaryIO) -> dict[tuple[int, str], tuple[int, int, int]]:
    """For each (node, model zone): the pageblocks holding free pages beside pages on an LRU
    list (movable pageblocks that other memory breaks up); of them those that also hold a
    page no compaction moves: on no LRU, not free, not a hugetlb page, and with a flag set
    (slab, page tables, reserved and other kernel memory); and of the others those holding
    page cache (an LRU page not anonymous), which a compaction without `__GFP_FS` cannot move
    either. A page with no flag at all may be free on a per-CPU list and is not counted, nor
    a pfn outside the zone (a pageblock it shares with another zone counts in both). Limits:
    the pageblocks' migratetypes are not in /proc/kpageflags, so a non-movable pageblock that
    took movable allocations counts too; kernel memory with no flag (vmalloc, stacks) is
    missed, and folios isolated or in a per-CPU LRU batch at that moment count as kernel
    memory. `kpageflags` is /proc/kpageflags opened for binary reading (8 bytes per pfn)."""
    per_block = 1 << PAGEBLOCK_ORDER
    census: dict[tuple[int, str], list[int]] = {}
    for node, zone, start, spanned in spans:
        counts = census.setdefault((node, zone), [0, 0, 0])
        end = start + spanned
        first = start - start % per_block
        kpageflags.seek(first * 8)
        for block in range(first, end, per_block):
            raw = kpageflags.read(per_block * 8)
            if len(raw) < 8:
                break
            pfns = memoryview(raw)[: len(raw) - len(raw) % 8].cast("Q")
            # Only the zone's own pfns of a pageblock it shares.
            flags = set(pfns[max(0, start - block) : end - block])
            used = {f for f in flags if not f & (KPF_BUDDY | KPF_NOPAGE)}
            if not any(f & KPF_BUDDY for f in flags) or not any(f & KPF_LRU for f in used):
                continue
            counts[0] += 1
            if any(f and not f & (KPF_LRU | KPF_HUGE) for f in used):
                counts[1] += 1
            elif any(f & KPF_LRU and not f & KPF_ANON for f in used):
                counts[2] += 1
    return {key: (c[0], c[1], c[2]) for key, c in census.items()}


def add_fragment_census(blocks: list[dict[str, Any]]) -> None:
    """The zones of `blocks` (`pageblocks()`) gain `fragment_blocks`,
    `fragment_blocks_unmovable` and `fragment_blocks_file` from /proc/kpageflags (root);
    without it they are left as they are, and the model takes every fragmented pageblock's
    other memory as movable."""
    if not os.access(KPAGEFLAGS, os.R_OK):
        return
    with open(KPAGEFLAGS, "rb") as f:
        apply_fragment_census(blocks, _read(ZONEINFO), f)


def apply_fragment_census(blocks: list[dict[str, Any]], zoneinfo: str, kpageflags: BinaryIO) -> None:
    """`add_fragment_census` from /proc/zoneinfo's text and /proc/kpageflags opened for
    binary reading (`fragment_census`)."""
    census = fragment_census(zone_spans(zoneinfo), kpageflags)
    for b in blocks:
        total, unmovable, file = census.get((b["node"], b["zone"]), (0, 0, 0))
        if total:
            b["fragment_blocks"], b["fragment_blocks_unmovable"], b["fragment_blocks_file"] = total, unmovable, file


def drop_page_cache() -> None:
    """`sync; echo 3 > /proc/sys/vm/drop_caches`: the clean page cache and reclaimable slab
    dropped, as a live run with `[live] drop_caches` starts (root)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def memory_per_node_mb(nodes: list[Path]) -> int:
    """MemTotal of the smallest node. With one node, /proc/meminfo's MemTotal: a kernel that
    initialises struct pages lazily (deferred_init) counts only what it has initialised so
    far in the node's own MemTotal."""
    if len(nodes) == 1:
        line = next(l for l in _read("/proc/meminfo").splitlines() if l.startswith("MemTotal:"))
        return _kb(line) // 1024
    sizes = []
    for n in nodes:
        line = next(l for l in _read(n / "meminfo").splitlines() if "MemTotal:" in l)
        sizes.append(_kb(line) // 1024)
    return min(sizes)


def node_distances(nodes: list[Path]) -> list[list[int]]:
    """Each node's row of distances (nodeN/distance, the firmware's SLIT as the kernel
    keeps it); none on a host of one node, whose only distance is the default."""
    if len(nodes) < 2:
        return []
    return [[int(d) for d in _read(n / "distance").split()] for n in nodes]


def dma32_mb() -> int:
    """ZONE_DMA and ZONE_DMA32 of node 0 (managed pages in /proc/zoneinfo)."""
    pages, zone = 0, None
    for line in _read("/proc/zoneinfo").splitlines():
        if line.startswith("Node "):
            node, zone = line.split(",")[0].split()[1], line.split()[-1]
            zone = zone if node == "0" else None
        elif zone in ("DMA", "DMA32") and line.strip().startswith("managed"):
            pages += int(line.split()[-1])
    return pages * 4 // 1024


def block_device(path: str) -> str:
    """The whole-disk block device holding `path` (a partition's parent)."""
    st = os.stat(path)
    sysdev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not sysdev.exists():
        raise ProbeError(f"{path} is not on a block device (st_dev {os.major(st.st_dev)}:{os.minor(st.st_dev)})")
    real = sysdev.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


def queue_depth(dev: str) -> int:
    """Requests the device takes at once: its hardware tags (blk-mq), else nr_requests."""
    mq = Path(f"/sys/block/{dev}/mq")
    tags = [int(_read(q / "nr_tags")) for q in mq.glob("*") if (q / "nr_tags").exists()] if mq.exists() else []
    return sum(tags) if tags else int(_read(f"/sys/block/{dev}/queue/nr_requests"))


def find_probe_file(path: str) -> Path:
    """The largest regular file on `path`'s filesystem among the first entries of a bounded
    search (the path itself, then the usual large-file places)."""
    dev = os.stat(path).st_dev
    best: tuple[int, Path] | None = None
    seen = 0
    for root in (path, "/usr", "/var", "/opt", "/root", "/home"):
        if not os.path.isdir(root) or os.stat(root).st_dev != dev:
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            seen += len(dirnames) + len(filenames)
            dirnames[:] = [d for d in dirnames if os.lstat(os.path.join(dirpath, d)).st_dev == dev]
            for name in filenames:
                p = os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if st.st_dev == dev and os.path.isfile(p) and not os.path.islink(p) and (best is None or st.st_size > best[0]):
                    best = (st.st_size, Path(p))
            if seen > SEARCH_LIMIT:
                break
        if best is not None and best[0] >= PROBE_FILE_MIN:
            break
    if best is None or best[0] < PROBE_FILE_MIN:
        raise ProbeError(f"no file of at least {PROBE_FILE_MIN // MiB} MiB on the filesystem of {path} to read; give --path on a filesystem that has one")
    return best[1]


def _open_direct(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        raise ProbeError(f"{path}: cannot open with O_DIRECT ({e})") from None


def read_streams(
    path: Path, request_bytes: int, threads: int, seconds: float, scattered: bool = False, times: list[float] | None = None
) -> tuple[float, int]:
    """`threads` sequential O_DIRECT readers of `request_bytes` per read, each from its own
    part of the file (wrapping at its end), for `seconds`: (elapsed seconds, reads done).
    `scattered`: each read at a random offset instead (a fixed seed: the same offsets each
    probe), which neither the device nor its host can prefetch. `times`, if given, gets
    each read's own duration in seconds."""
    size = os.path.getsize(path) // request_bytes * request_bytes
    if size == 0:
        raise ProbeError(f"{path} is smaller than one request ({request_bytes} bytes)")
    reads = [0] * threads
    stop = time.perf_counter() + seconds

    def reader(i: int) -> None:
        fd = _open_direct(path)
        buf = mmap.mmap(-1, request_bytes)
        offset = (size // threads * i) // request_bytes * request_bytes
        rng = random.Random(i)
        try:
            while (start := time.perf_counter()) < stop:
                os.preadv(fd, [buf], offset)
                if times is not None:
                    times.append(time.perf_counter() - start)
                reads[i] += 1
                if scattered:
                    offset = rng.randrange(size // request_bytes) * request_bytes
                else:
                    offset = (offset + request_bytes) % size
        finally:
            os.close(fd)

    return _run_threads(reader, threads), sum(reads)


def _run_threads(reader: Callable[[int], None], threads: int) -> float:
    """`reader(i)` on `threads` threads at once; the seconds until the last has returned."""
    t0 = time.perf_counter()
    workers = [threading.Thread(target=reader, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return time.perf_counter() - t0


def _diskstats(dev: str, ios_field: int, text: str | None) -> tuple[int, int]:
    """(I/Os completed, sectors) of whole-disk `dev` in /proc/diskstats (or `text`): the
    fields from `ios_field` (3 for reads, 7 for writes) and two after it."""
    text = _read("/proc/diskstats") if text is None else text
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > ios_field + 2 and fields[2] == dev:
            return int(fields[ios_field]), int(fields[ios_field + 2])
    raise ProbeError(f"{dev}: not in /proc/diskstats")


def disk_reads(dev: str, text: str | None = None) -> tuple[int, int]:
    """(reads completed, sectors read) of whole-disk `dev` in /proc/diskstats (or `text`)."""
    return _diskstats(dev, 3, text)


def disk_writes(dev: str, text: str | None = None) -> tuple[int, int]:
    """(writes completed, sectors written) of whole-disk `dev` in /proc/diskstats (or `text`)."""
    return _diskstats(dev, 7, text)


def request_kb(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The mean request between two `disk_reads` (or `disk_writes`), in KiB (0 if none
    completed)."""
    ios, sectors = after[0] - before[0], after[1] - before[1]
    return sectors * 512 / 1024 / ios if ios > 0 else 0.0


def _drop_cached(fd: int, offset: int, length: int) -> None:
    """POSIX_FADV_DONTNEED of a range of the probe's file: its clean, unmapped pages leave
    the page cache (no other file's, no sysctl)."""
    os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


def buffered_streams(path: Path, request_bytes: int, threads: int, seconds: float) -> tuple[float, int]:
    """`threads` sequential buffered readers of `request_bytes` per read (as `dd bs=`), each
    over its own part of the file, for `seconds`: (elapsed seconds, bytes read). Each part's
    pages are dropped from the page cache before each pass over it, so that every byte comes
    from the device (through readahead, as a buffered reader's do); the whole file's once
    more at the end, so that the probe leaves none of it cached."""
    size = os.path.getsize(path) // request_bytes * request_bytes
    part = size // threads // request_bytes * request_bytes
    if part == 0:
        raise ProbeError(f"{path} is smaller than {threads} requests of {request_bytes} bytes")
    done = [0] * threads
    stop = time.perf_counter() + seconds

    def reader(i: int) -> None:
        fd = os.open(path, os.O_RDONLY)
        buf = bytearray(request_bytes)
        start, offset = part * i, part * i
        try:
            _drop_cached(fd, start, part)
            while time.perf_counter() < stop:
                done[i] += os.preadv(fd, [buf], offset)
                offset += request_bytes
                if offset >= start + part:
                    offset = start
                    _drop_cached(fd, start, part)
        finally:
            os.close(fd)

    elapsed = _run_threads(reader, threads)
    fd = os.open(path, os.O_RDONLY)
    try:
        _drop_cached(fd, 0, 0)
    finally:
        os.close(fd)
    return elapsed, sum(done)


def latency_jitter(latencies: list[float]) -> float:
    """The device model's `latency_jitter` of these request latencies: the fraction j of the
    latency drawn from an exponential distribution, X = L·(1 − j + j·E). Its quartiles are
    L·j·ln 3 apart and its median is L·(1 − j + j·ln 2), so with r = (Q3 − Q1) / median,
    j = r / (ln 3 + r·(1 − ln 2)), within 0 and 1. Quartiles, not the mean: a VM's rare
    stalls of a millisecond would move a mean-based estimate more than the reads do."""
    if len(latencies) < 4:
        return 0.0
    q1, median, q3 = statistics.quantiles(latencies, n=4)
    if median <= 0:
        return 0.0
    r = (q3 - q1) / median
    return min(1.0, max(0.0, r / (math.log(3) + r * (1 - math.log(2)))))


def probe_reads(path: Path, dev: str, request_bytes: int) -> dict[str, Any]:
    """The device's sequential read rates (`[reads]` of the profile): BANDWIDTH_THREADS
    O_DIRECT streams of `request_bytes` into buffers of 4 KiB pages, then BUFFERED_THREADS
    buffered ones of the same reads, and the mean request the device saw in each (other I/O
    on the disk meanwhile counts in too)."""
    before = disk_reads(dev)
    elapsed, reads = read_streams(path, request_bytes, BANDWIDTH_THREADS, BANDWIDTH_SECONDS)
    mid = disk_reads(dev)
    b_elapsed, b_bytes = buffered_streams(path, request_bytes, BUFFERED_THREADS, BUFFERED_SECONDS)
    after = disk_reads(dev)
    return {
        "direct_mb_s": round(reads * request_bytes / elapsed / 1e6, 1),
        "buffered_mb_s": round(b_bytes / b_elapsed / 1e6, 1),
        "direct_request_kb": round(request_kb(before, mid), 1),
        "buffered_request_kb": round(request_kb(mid, after), 1),
        "file_mb": max(1, os.path.getsize(path) // MiB),
        "streams": BUFFERED_THREADS,
    }


def probe_device(path: Path, request_bytes: int, bandwidth: float) -> tuple[float, float, float]:
    """(latency in µs, latency jitter, request time in µs) for the simulator's device
    model, in which one stream sees `latency + request + size/bandwidth` per request and
    enough streams saturate the bandwidth; `bandwidth` (MB/s of 10⁶ bytes) is the O_DIRECT
    streams' of `probe_reads` (as the dd workloads read). One stream of LATENCY_REQUEST reads
    at random offsets the per-request time (as swap-ins meet it: a request that small is
    nearly all latency, and a scattered one cannot be prefetched); the latency is what that
    time has beyond the transfer stage's, and its spread from read to read the jitter. The
    interpreter's own time per read (a few µs) is counted in. IOPS_THREADS native readers
    of LATENCY_REQUEST reads at random offsets (`_core.probe.read_iops`) give the most
    small requests the device completes a second: the time it spends on each beyond its
    transfer is the model's `request_us` (the per-request work of its transfer stage, which
    bounds its IOPS and which one stream's request also pays)."""
    times: list[float] = []
    elapsed, reads = read_streams(path, LATENCY_REQUEST, 1, SINGLE_STREAM_SECONDS, scattered=True, times=times)
    per_request_s = elapsed / max(1, reads)
    transfer_s = LATENCY_REQUEST / (bandwidth * 1e6)
    elapsed, reads = _core.probe.read_iops(str(path), IOPS_THREADS, IOPS_SECONDS)
    request_s = max(0.0, elapsed / max(1, reads) - transfer_s)
    # One stream's request is the transfer stage's (its request time and transfer) and then
    # the latency: the latency is what is left.
    stage_s = transfer_s + request_s
    latency_s = max(0.0, per_request_s - stage_s)
    jitter = latency_jitter([max(0.0, t - stage_s) for t in times])
    return latency_s * 1e6, jitter, request_s * 1e6


COST_PROBE_MB = 256


def p50_ns(result: dict[str, Any]) -> int:
    """The median access of one live usemem task's result, in ns (its bucket's floor, as the
    live and simulated usemem report percentiles)."""
    return round(latency_us([result])["p50"] * 1e3)


def probe_usemem_costs() -> dict[str, int]:
    """`[costs]` of usemem as this machine runs it: the median access of live usemem (the
    same code as a live run's, clock read included) over a resident mapping of
    COST_PROBE_MB: eleven sequential passes (the first one's faults are a tenth of the
    samples, below the median) and a second of random words. Then one pass over fresh
    memory, every access a first touch: what its median has beyond a present page's is
    `do_anonymous_page()`'s (the allocator and the LRU add are batched, live and simulated,
    so the median touch pays neither). Left out, so that the model keeps its default, where
    that median is not a 4 KiB fault: with transparent huge pages `always` one fault maps
    512 pages, and a difference under MIN_FAULT_NS is no fault the clock can see."""
    seq = json.loads(_core.live.usemem(COST_PROBE_MB * MiB, False, 11, 0.0))
    rnd = json.loads(_core.live.usemem(COST_PROBE_MB * MiB, True, 0, 1.0))
    costs = {"usemem_page_ns": p50_ns(seq), "usemem_word_ns": p50_ns(rnd)}
    if min(costs.values()) < 1:
        raise ProbeError(f"usemem's costs measured as {costs}: a clock this coarse cannot time an access")
    if thp_mode() != "always":
        first = json.loads(_core.live.usemem(COST_PROBE_MB * MiB, False, 1, 0.0))
        fault = p50_ns(first) - costs["usemem_page_ns"]
        if fault >= MIN_FAULT_NS:
            costs["anon_fault_ns"] = fault
    return costs


MIN_FAULT_NS = 100
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def thp_mode(path: str = THP_ENABLED) -> str:
    """The bracketed choice of transparent_hugepage/enabled ("never" without THP)."""
    try:
        text = _read(path)
    except OSError:
        return "never"
    chosen = [w for w in text.split() if w.startswith("[")]
    return chosen[0].strip("[]") if chosen else "never"


FRESH_FILE_NAME = ".reclaimlab-probe"
FRESH_WRITE_CHUNK = 4 * MiB


@dataclasses.dataclass
class FreshFile:
    """The probe's own file (`fresh_file`) and, when its device was named, how it was
    written (`[writes]` of the profile)."""

    path: Path
    writes: dict[str, Any] | None


@contextlib.contextmanager
def fresh_file(path: str, size_mb: int, log: Callable[[str], None], dev: str | None = None) -> Iterator[FreshFile]:
    """A zero-filled file of `size_mb` MiB written under `path` and synced (as dd-squeeze's
    live files are: `dd if=/dev/zero conv=fdatasync`), its pages dropped from the page cache,
    and removed when the block ends, interrupted or not. The data a live workload reads is
    what it wrote minutes before, which a VM's host serves from nearer than an image's old
    file (docs/fidelity/host.md, "The device as buffered readers see it", item 4).

    With `dev` (the disk under `path`) the write is measured too (`write_rates`): the rate
    `write()` fills the page cache at, and the rate the disk takes the file's writeback at
    during the `fdatasync()` — what a dd writer's flusher gets from the device."""
    if size_mb * MiB < PROBE_FILE_MIN:
        raise ProbeError(f"--fresh-mb {size_mb}: the probe reads at least {PROBE_FILE_MIN // MiB} MiB")
    target = Path(path) / FRESH_FILE_NAME
    free = shutil.disk_usage(path).free
    if size_mb * MiB > free // 2:
        raise ProbeError(f"--fresh-mb {size_mb}: {path} has {free // MiB} MiB free; the probe takes at most half")
    log(f"writing {size_mb} MiB to {target} (removed after the probe) …")
    chunk = bytes(FRESH_WRITE_CHUNK)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ProbeError(f"{target} exists (a probe's file left by a killed probe?): remove it first") from None
    try:
        try:
            t0 = time.perf_counter()
            for _ in range(size_mb * MiB // FRESH_WRITE_CHUNK):
                os.write(fd, chunk)
            t1 = time.perf_counter()
            before = disk_writes(dev) if dev else None
            os.fdatasync(fd)
            t2 = time.perf_counter()
            after = disk_writes(dev) if dev else None
            _drop_cached(fd, 0, 0)
        finally:
            os.close(fd)
        writes = None
        if before is not None and after is not None:
            writes = write_rates(size_mb, t1 - t0, t2 - t1, before, after)
        yield FreshFile(target, writes)
    finally:
        target.unlink(missing_ok=True)


def write_rates(
    size_mb: int, write_s: float, sync_s: float, before: tuple[int, int], after: tuple[int, int]
) -> dict[str, Any] | None:
    """`[writes]` of a fresh file of `size_mb` MiB whose `write()`s took `write_s` and whose
    `fdatasync()` took `sync_s`, with `disk_writes` before and after the sync: the page-cache
    rate, and the disk's rate over the sync (the sectors it wrote meanwhile, whatever wrote
    them; writeback that began before the sync is not counted, as its time is not). None
    where the sync wrote nothing (a file system without a disk under it)."""
    sectors = after[1] - before[1]
    if sectors <= 0 or sync_s <= 0 or write_s <= 0:
        return None
    return {
        "buffered_mb_s": round(size_mb * MiB / write_s / 1e6, 1),
        "writeback_mb_s": round(sectors * 512 / sync_s / 1e6, 1),
        "writeback_request_kb": round(request_kb(before, after), 1),
        "file_mb": size_mb,
    }


def probe(path: str = "/var/tmp", log: Callable[[str], None] = lambda s: None, fresh_mb: int = 0) -> dict[str, Any]:
    """This host's profile (the fields of scenario/host.rs's HostProfile); `log` is told each
    measurement as it starts. `fresh_mb`: read a file of that many MiB written for the probe
    (`fresh_file`) instead of the largest one found on the filesystem."""
    if fresh_mb:
        with fresh_file(path, fresh_mb, log, block_device(path)) as fresh:
            return _probe(path, fresh.path, log, fresh.writes)
    return _probe(path, None, log, None)


def _probe(path: str, probe_file: Path | None, log: Callable[[str], None], writes: dict[str, Any] | None) -> dict[str, Any]:
    # Node 2 before node 10; no NUMA: one node.
    nodes = sorted(Path("/sys/devices/system/node").glob("node[0-9]*"), key=lambda n: int(n.name[4:])) or [Path("/")]
    cpus = os.cpu_count() or 1
    dev = block_device(path)
    q = Path(f"/sys/block/{dev}/queue")
    max_request_kb = int(_read(q / "max_sectors_kb"))
    if probe_file is None:
        probe_file = find_probe_file(path)
    seconds = BANDWIDTH_SECONDS + BUFFERED_SECONDS + SINGLE_STREAM_SECONDS + IOPS_SECONDS
    log(f"probing {dev}: O_DIRECT and buffered bandwidth, latency and IOPS from reads of {probe_file} (about {seconds:g} s) …")
    reads = probe_reads(probe_file, dev, max_request_kb * 1024)
    bandwidth = reads["direct_mb_s"]
    latency, jitter, request_us = probe_device(probe_file, max_request_kb * 1024, bandwidth)
    log(f"probing usemem's costs in {COST_PROBE_MB} MiB of memory (a few seconds) …")
    profile = {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "probed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "path": path,
        "nodes": len(nodes),
        "node_distances": node_distances(nodes),
        "cpus_per_node": max(1, cpus // len(nodes)),
        "memory_mb_per_node": memory_per_node_mb(nodes),
        "dma32_mb": dma32_mb(),
        "read_ahead_kb": int(_read(q / "read_ahead_kb")),
        "min_free_kbytes": int(_read("/proc/sys/vm/min_free_kbytes")),
        "watermark_scale_factor": int(_read("/proc/sys/vm/watermark_scale_factor")),
        "rotational": _read(q / "rotational") == "1",
        "device": {
            "name": dev,
            "count": 1,
            "bandwidth_mb_s": round(bandwidth, 1),
            "latency_us": round(latency, 1),
            "max_request_kb": max_request_kb,
            "request_us": round(request_us, 1),
            "queue_depth": queue_depth(dev),
            "jitter": 0.0,
            "latency_jitter": round(jitter, 2),
        },
        "reads": reads,
        "costs": probe_usemem_costs(),
        "pageblocks": pageblocks(_read(PAGETYPEINFO)) if os.access(PAGETYPEINFO, os.R_OK) else [],
    }
    if profile["pageblocks"]:
        add_fragment_census(profile["pageblocks"])
    if writes is not None:
        profile["writes"] = writes
    return profile


def write_profile(profile: dict[str, Any]) -> Path:
    out = Path(_core.host_profile_file())
    out.parent.mkdir(parents=True, exist_ok=True)
    text = _core.host_profile_toml(json.dumps(profile))
    out.write_text("# this machine, as `reclaimlab host probe` measured it\n" + text.rstrip("\n") + "\n")
    return out


def ensure_profile(echo: Any = None) -> None:
    """Probe the host once if no profile exists yet (a `from = "host"` scenario needs it)."""
    if Path(_core.host_profile_file()).exists():
        return
    if echo is not None:
        echo("no host profile yet: probing this machine (a few seconds, read-only) …")
    write_profile(probe(log=echo or (lambda s: None)))


@click.group()
def host() -> None:
    """This machine, as scenarios with `[machine] from = "host"` see it: its host profile, in
    $RECLAIMLAB_HOST_PROFILE, else $XDG_CACHE_HOME/reclaimlab/host.toml, else
    ~/.cache/reclaimlab/host.toml."""


@host.command("probe")
@click.option("--path", default="/var/tmp", show_default=True, type=click.Path(exists=True, file_okay=False), help="A path on the device the workloads use (dd's files).")
@click.option(
    "--swap",
    is_flag=True,
    help="Also measure the swap path's CPU costs (root: adds a 256 MiB swap file under --path for a few seconds, and removes it).",
)
@click.option(
    "--fresh-mb",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help=f"Write a zero-filled file of this many MiB under --path (at least {PROBE_FILE_MIN // MiB}), measure its writeback (the device's write bandwidth), read it instead of an existing file, and remove it: the data a live dd run reads is freshly written. 0: read the largest existing file found, and measure no writes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON instead of its TOML (the file written is TOML either way).")
def probe_command(path: str, swap: bool, fresh_mb: int, as_json: bool) -> None:
    """Measure this machine and write (or replace) its host profile: nodes, CPUs, memory per
    node, the watermark sysctls, the block device under --path with its bandwidth and
    latency and IOPS from about four seconds of read-only O_DIRECT reads of an existing
    file on it (or of a file it writes and removes, with --fresh-mb) and its buffered bandwidth from 1.5 s of buffered reads of the same file
    (whose pages are dropped from the page cache before each pass and after,
    POSIX_FADV_DONTNEED: no other file's), and usemem's CPU costs from about two seconds of live usemem in 256 MiB of
    this process's own memory. With --swap, also what paging out, a swap-cache fault and a
    swap-in cost the kernel here (`swap_out_ns`, `swapin_map_ns`, `swap_cache_insert_ns`),
    and with two CPUs the TLB shootdown reclaim pays to unmap another CPU's page
    (`tlb_flush_ipi_ns`)."""
    from reclaimlab.live.swap_probe import SwapProbeError, probe_swap_costs

    try:
        with signals_unwind():
            profile = probe(path, log=lambda s: click.echo(s, err=True), fresh_mb=fresh_mb)
        if swap:
            measured = probe_swap_costs(path, log=lambda s: click.echo(s, err=True))
            click.echo(f"swap probe: measured (ns per page; swapin_sys_ns in all) {json.dumps(measured['probe'])}", err=True)
            profile["costs"].update(measured["costs"])
        out = write_profile(profile)
    except (ProbeError, SwapProbeError, OSError) as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(json.dumps(profile, indent=2))
    else:
        click.echo(out.read_text(), nl=False)
    click.echo(f"host profile: {out}", err=True)


@host.command("pageblocks")
@click.option(
    "--drop-caches",
    is_flag=True,
    help="First drop the page cache and reclaimable slab (sync; echo 3 > /proc/sys/vm/drop_caches; root), as a live run with `[live] drop_caches` starts.",
)
@click.option(
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False),
    default=PAGETYPEINFO,
    show_default=True,
    help="Read a copy of /proc/pagetypeinfo saved earlier (e.g. just before a live run) instead.",
)
def pageblocks_command(drop_caches: bool, path: str) -> None:
    """Read this machine's non-movable pageblocks, the free blocks in them and the free
    fragments of its movable pageblocks from /proc/pagetypeinfo (root) into its host
    profile, the rest of the profile kept: a simulated run of a `from = "host"` scenario
    starts from them (`[machine] pageblocks`)."""
    try:
        if drop_caches:
            drop_page_cache()
        blocks = pageblocks(_read(path))
        if path == PAGETYPEINFO:
            add_fragment_census(blocks)
        text = _core.host_profile_with_pageblocks(json.dumps(blocks))
    except (OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    out = Path(_core.host_profile_file())
    out.write_text("# this machine, as `reclaimlab host probe` measured it\n" + text.rstrip("\n") + "\n")
    for b in blocks:
        click.echo(
            f"node {b['node']} {b['zone']}: {b['unmovable']} unmovable, {b['reclaimable']} reclaimable, {b['highatomic']} high-atomic pageblocks; "
            f"{movable_fragments(b)} free pages in movable blocks below order {PAGEBLOCK_ORDER}"
            + (
                f", in {b['fragment_blocks']} pageblocks: {b['fragment_blocks_unmovable']} also hold kernel memory, "
                f"{b['fragment_blocks_file']} of the others page cache"
                if b.get("fragment_blocks")
                else ""
            )
        )
    click.echo(f"host profile: {out}", err=True)


@host.command("show")
def show_command() -> None:
    """Print the host profile (probing first if there is none)."""
    try:
        ensure_profile(lambda s: click.echo(s, err=True))
    except (ProbeError, OSError) as e:
        raise click.ClickException(str(e)) from None
    out = Path(_core.host_profile_file())
    click.echo(out.read_text(), nl=False)
    click.echo(f"host profile: {out}", err=True)
