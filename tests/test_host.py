"""`reclaimlab host probe`: this machine's profile, written by the core and read back by a
`[machine] from = "host"` scenario."""

from __future__ import annotations

import array
import io
import json
import random
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaimlab import _core, host
from reclaimlab.cli import cli
from reclaimlab.simulate.runner import ScenarioError, points

from .live_support import VM_PROFILE

ROOT = Path(__file__).resolve().parents[1]


def test_the_probe_describes_this_machine_and_a_host_scenario_uses_it(host_profile: Path) -> None:
    try:
        host.find_probe_file("/var/tmp")
    except host.ProbeError as e:
        pytest.skip(f"nothing to probe here: {e}")
    result = CliRunner().invoke(cli, ["host", "probe", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    profile = tomllib.loads(host_profile.read_text())
    # --json: the profile written, as JSON on stdout; each measurement announced on stderr
    assert json.loads(result.stdout)["memory_mb_per_node"] == profile["memory_mb_per_node"]
    assert "probing usemem's costs" in result.stderr
    assert profile["nodes"] >= 1 and profile["cpus_per_node"] >= 1
    assert profile["memory_mb_per_node"] > 64 and profile["device"]["bandwidth_mb_s"] > 0
    assert profile["device"]["max_request_kb"] >= 4 and profile["read_ahead_kb"] >= 0
    # What the device spends on each small read beyond its transfer, from its IOPS; one
    # stream's read waits longer than that (its latency is what is left).
    assert profile["device"]["request_us"] < 10_000 and profile["device"]["latency_us"] > 0
    # The spread of its scattered reads; a profile leaves the key out when it is 0.
    jitter = profile["device"].get("latency_jitter")
    assert jitter is None or 0.0 < jitter <= 1.0
    # usemem's costs as live usemem meets them here, then in the host scenario's [costs].
    costs = profile["costs"]
    assert 0 < costs["usemem_word_ns"] < costs["usemem_page_ns"] < 100_000
    # A first touch costs a fault (a page zeroed, charged, mapped) beyond the write; not
    # measured where transparent huge pages map 512 pages a fault.
    if host.thp_mode() == "always":
        assert "anon_fault_ns" not in costs
    else:
        assert host.MIN_FAULT_NS <= costs["anon_fault_ns"] < 100_000
    (swap_point,) = points(ROOT / "scenarios/live/usemem-swap-ra.toml", [])
    point_costs = tomllib.loads(swap_point.toml)["costs"]
    assert point_costs["usemem_page_ns"] == costs["usemem_page_ns"]
    assert point_costs["anon_fault_ns"] == costs.get("anon_fault_ns", 1200)
    # Both sequential rates, and the device fitted to them: a buffered rate above the
    # O_DIRECT one is the transfer's, the difference a segment's time.
    reads = profile["reads"]
    assert reads["direct_mb_s"] > 0 and reads["buffered_mb_s"] > 0 and reads["streams"] == host.BUFFERED_THREADS
    assert reads["file_mb"] * host.MiB >= host.PROBE_FILE_MIN
    if reads["buffered_mb_s"] > reads["direct_mb_s"]:
        assert profile["device"]["bandwidth_mb_s"] == reads["buffered_mb_s"]
        segment_us = 4096 * (1 / reads["direct_mb_s"] - 1 / reads["buffered_mb_s"])
        assert profile["device"]["segment_us"] == pytest.approx(segment_us, abs=0.001)
    else:
        assert profile["device"]["bandwidth_mb_s"] == reads["direct_mb_s"] and "segment_us" not in profile["device"]
    (point,) = points(ROOT / "scenarios/live/dd-squeeze.toml", ["workload.tasks=1"])
    machine = tomllib.loads(point.toml)["machine"]
    assert machine["memory_mb_per_node"] == profile["memory_mb_per_node"]
    assert machine["devices"][0]["name"] == profile["device"]["name"]
    # It read a file it did not write: no write measured, reads and writes share a bandwidth.
    assert "writes" not in profile and "write_bandwidth_mb_s" not in profile["device"]


def test_a_probe_that_writes_its_own_file_measures_the_devices_writeback(host_profile: Path) -> None:
    try:
        host.block_device("/var/tmp")
    except host.ProbeError as e:
        pytest.skip(f"no disk to write to here: {e}")
    result = CliRunner().invoke(cli, ["host", "probe", "--fresh-mb", "64"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert not (Path("/var/tmp") / host.FRESH_FILE_NAME).exists()
    profile = tomllib.loads(host_profile.read_text())
    writes = profile["writes"]
    assert writes["file_mb"] == 64 and writes["buffered_mb_s"] > 0 and writes["writeback_request_kb"] > 0
    assert profile["device"]["write_bandwidth_mb_s"] == writes["writeback_mb_s"] > 0
    (point,) = points(ROOT / "scenarios/live/dd-squeeze.toml", ["workload.tasks=1"])
    device = tomllib.loads(point.toml)["machine"]["devices"][0]
    assert device["write_bandwidth_mb_s"] == writes["writeback_mb_s"]


def test_many_native_readers_measure_the_devices_small_read_rate(tmp_path: Path) -> None:
    try:
        f = host.find_probe_file("/var/tmp")
    except host.ProbeError as e:
        pytest.skip(f"nothing to probe here: {e}")
    elapsed, reads = _core.probe.read_iops(str(f), 4, 0.2)
    assert elapsed >= 0.2 and reads > 0
    with pytest.raises(OSError, match="nowhere.img"):
        _core.probe.read_iops(str(tmp_path / "nowhere.img"), 4, 0.1)
    with pytest.raises(ValueError, match="one reader"):
        _core.probe.read_iops(str(f), 0, 0.1)


def test_the_median_of_a_live_histogram_is_the_bucket_holding_the_middle_sample() -> None:
    def p50(hist: list[list[int]]) -> int:
        return host.p50_ns({"latency_hist": hist, "latency_sum_ns": 0})

    # A live histogram's values are the simulator's bucket floors (896, 49 152), as the
    # helper reports them.
    assert p50([[60, 10], [896, 89], [49_152, 1]]) == 896
    assert p50([[60, 60], [896, 40]]) == 60
    assert p50([]) == 0


def test_latency_jitter_is_the_exponential_share_that_gives_the_measured_quartiles() -> None:
    # The device model's rule, L·((1 − j) + j·E) with E exponential of mean 1, sampled at
    # known j: the estimate from the quartiles finds j again.
    rng = random.Random(5)
    for j in (0.0, 0.3, 0.7, 1.0):
        samples = [100.0 * ((1 - j) + j * rng.expovariate(1.0)) for _ in range(40_000)]
        assert host.latency_jitter(samples) == pytest.approx(j, abs=0.03)
    # Rare long stalls (a VM's) barely move it.
    samples = [100.0 * (0.5 + 0.5 * rng.expovariate(1.0)) for _ in range(40_000)]
    stalled = samples + [5_000.0] * 200
    assert host.latency_jitter(stalled) == pytest.approx(0.5, abs=0.03)
    # No spread, or too few reads to tell: 0.
    assert host.latency_jitter([100.0] * 100) == 0.0
    assert host.latency_jitter([10.0, 100.0]) == 0.0


def test_the_thp_mode_is_the_bracketed_choice(tmp_path: Path) -> None:
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    assert host.thp_mode(str(f)) == "madvise"
    f.write_text("[always] madvise never\n")
    assert host.thp_mode(str(f)) == "always"
    assert host.thp_mode(str(tmp_path / "absent")) == "never"


def test_one_node_without_numa_sysfs_reads_meminfo() -> None:
    mb = host.memory_per_node_mb([Path("/")])
    assert mb * 1024 == pytest.approx(int(Path("/proc/meminfo").read_text().split()[1]), abs=1024)


def test_a_numa_hosts_distances_are_read_one_row_per_node(tmp_path: Path) -> None:
    nodes = []
    for i, row in enumerate(["10 21", "21 10"]):
        (tmp_path / f"node{i}").mkdir()
        (tmp_path / f"node{i}" / "distance").write_text(row + "\n")
        nodes.append(tmp_path / f"node{i}")
    assert host.node_distances(nodes) == [[10, 21], [21, 10]]
    assert host.node_distances([Path("/")]) == []


def test_a_path_on_no_block_device_is_a_clear_error() -> None:
    with pytest.raises(host.ProbeError, match="not on a block device"):
        host.block_device("/proc")


def test_a_usemem_task_waits_for_its_start_time() -> None:
    start_at = time.monotonic_ns() + 200_000_000
    result = json.loads(_core.live.usemem(1 << 20, False, 1, 0.0, start_at))
    assert result["start_ns"] >= start_at and result["passes"] == 1
    # A time already past: at once.
    now = time.monotonic_ns()
    late = json.loads(_core.live.usemem(1 << 20, False, 1, 0.0, now - 1))
    assert now <= late["start_ns"] < now + 100_000_000


DISKSTATS = """\
 253       0 vda 1000 20 204800 500 10 0 80 5 0 600 505 0 0 0 0 0 0
 253       1 vda1 900 20 200000 400 10 0 80 5 0 500 405 0 0 0 0 0 0
"""


def test_diskstats_give_the_mean_read_request_of_the_whole_disk() -> None:
    before = host.disk_reads("vda", DISKSTATS)
    assert before == (1000, 204800)
    after = (before[0] + 8, before[1] + 8 * 1024)  # eight reads of 512 KiB
    assert host.request_kb(before, after) == 512.0
    assert host.request_kb(before, before) == 0.0
    with pytest.raises(host.ProbeError, match="sdz: not in /proc/diskstats"):
        host.disk_reads("sdz", DISKSTATS)
    # Writes: fields 7 and 9 of the line (ten writes, 80 sectors).
    assert host.disk_writes("vda", DISKSTATS) == (10, 80)


def test_a_fresh_files_writeback_rate_is_the_sectors_the_sync_wrote_over_its_time() -> None:
    # 2 GiB written in 0.5 s; the sync took 1 s and the disk wrote 1 GiB meanwhile in 512
    # requests (the rest went out before the sync began: neither counted).
    before, after = (100, 1000), (612, 1000 + (1 << 30) // 512)
    w = host.write_rates(2048, 0.5, 1.0, before, after)
    assert w == {"buffered_mb_s": 4295.0, "writeback_mb_s": 1073.7, "writeback_request_kb": 2048.0, "file_mb": 2048}
    # A sync that wrote nothing (no disk under the file, or all written before it): no figure.
    assert host.write_rates(2048, 0.5, 1.0, before, before) is None


def test_buffered_streams_read_their_own_parts_and_leave_nothing_cached(tmp_path: Path) -> None:
    f = tmp_path / "probe.img"
    f.write_bytes(b"\1" * (4 << 20))
    elapsed, done = host.buffered_streams(f, 256 << 10, 2, 0.2)
    # Whole reads only, each stream wrapping within its 2 MiB: far more than the file.
    assert elapsed >= 0.2 and done > 4 << 20 and done % (256 << 10) == 0
    with pytest.raises(host.ProbeError, match="smaller than 32 requests"):
        host.buffered_streams(f, 256 << 10, 32, 0.1)


def test_the_core_fits_the_profiles_device_to_both_read_rates(tmp_path: Path) -> None:
    def profile(reads: dict) -> dict:
        return {
            "hostname": "vm", "kernel": "6.18", "probed_at": "2026-11-27T20:00:00Z", "path": "/var/tmp",
            "nodes": 1, "cpus_per_node": 2, "memory_mb_per_node": 24105, "dma32_mb": 3034, "read_ahead_kb": 8192,
            "min_free_kbytes": 67584, "watermark_scale_factor": 10, "rotational": True,
            "device": {"name": "vda", "bandwidth_mb_s": 1000.0, "latency_us": 50.0, "request_us": 10.0},
            "reads": reads,
        }

    reads = {"direct_mb_s": 1000.0, "buffered_mb_s": 2000.0, "direct_request_kb": 512.0,
             "buffered_request_kb": 3900.0, "file_mb": 674, "streams": 4}
    written = tomllib.loads(_core.host_profile_toml(json.dumps(profile(reads))))
    assert written["device"]["bandwidth_mb_s"] == 2000.0
    assert written["device"]["segment_us"] == 2.048  # 4096 · (1/1000 − 1/2000) µs
    assert written["reads"] == reads
    with pytest.raises(ValueError, match=r"reads\.direct_mb_s: expected a positive number"):
        _core.host_profile_toml(json.dumps(profile({**reads, "direct_mb_s": 0.0})))


def test_a_fresh_probe_file_is_written_synced_and_removed_even_when_the_probe_fails(tmp_path: Path) -> None:
    logged: list[str] = []
    with host.fresh_file(str(tmp_path), 64, logged.append) as fresh:
        f = fresh.path
        assert fresh.writes is None  # no device named: the write is not measured
        assert f.parent == tmp_path and f.stat().st_size == 64 << 20
        with f.open("rb") as r:
            assert r.read(4096) == bytes(4096)
    assert not f.exists() and "64 MiB" in logged[0]
    with pytest.raises(RuntimeError, match="probe failed"):
        with host.fresh_file(str(tmp_path), 64, logged.append):
            raise RuntimeError("probe failed")
    assert list(tmp_path.iterdir()) == []


def test_a_fresh_probe_file_refuses_too_small_a_size_a_leftover_and_a_full_disk(tmp_path: Path) -> None:
    with pytest.raises(host.ProbeError, match="at least 64 MiB"):
        with host.fresh_file(str(tmp_path), 63, print):
            pass
    leftover = tmp_path / host.FRESH_FILE_NAME
    leftover.write_text("mine")
    with pytest.raises(host.ProbeError, match="exists"):
        with host.fresh_file(str(tmp_path), 64, print):
            pass
    assert leftover.read_text() == "mine"  # never removed: the probe did not write it
    leftover.unlink()
    with pytest.raises(host.ProbeError, match="the probe takes at most half"):
        with host.fresh_file(str(tmp_path), 1 << 30, print):
            pass
    assert list(tmp_path.iterdir()) == []


def test_the_probe_command_refuses_a_fresh_file_too_small_to_measure(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["host", "probe", "--path", str(tmp_path), "--fresh-mb", "10"])
    assert result.exit_code == 1 and "--fresh-mb 10: the probe reads at least 64 MiB" in result.output
    assert list(tmp_path.iterdir()) == []


PAGETYPEINFO = ROOT / "tests" / "data" / "pagetypeinfo-6.18.txt"


def test_pagetypeinfo_gives_each_zones_non_movable_pageblocks_and_their_free_blocks() -> None:
    text = PAGETYPEINFO.read_text()
    # A damaged line is skipped, not a crash.
    text = text.replace("Node 0, zone   Normal           93", "Node 0, zone   Normal  x y\nNode 0, zone   Normal           93")
    blocks = host.pageblocks(text)
    dma32, normal = blocks
    # ZONE_DMA counts with DMA32, as `dma32_mb` does: 1 + 12 unmovable pageblocks.
    assert (dma32["zone"], dma32["unmovable"], dma32["reclaimable"], dma32["highatomic"]) == ("DMA32", 13, 44, 0)
    assert dma32["free_unmovable"] == [131, 198, 86, 50, 23, 18, 14, 3, 4, 0, 0]
    assert dma32["free_reclaimable"][:3] == [2215, 1290, 572]
    assert (normal["zone"], normal["unmovable"], normal["reclaimable"], normal["highatomic"]) == ("Normal", 93, 292, 78)
    assert normal["free_unmovable"] == [109, 798, 333, 175, 83, 24, 17, 9, 4, 1, 0]
    assert normal["free_movable"] == [1299, 30460, 20127, 11500, 5202, 2333, 1991, 1058, 678, 361, 359]
    assert dma32["free_movable"][-2:] == [39 + 1, 693 + 3]
    # Whole free blocks on the Movable lists alone say nothing of the machine's layout; the
    # fragments below pageblock order do.
    assert host.pageblocks("Node 0, zone Normal, type Movable 0 0 0 0 0 0 0 0 0 1 2\n") == []
    (alone,) = host.pageblocks("Node 0, zone Normal, type Movable 1 2\n")
    assert (alone["unmovable"], alone["free_movable"], host.movable_fragments(alone)) == (0, [1, 2], 1 + 2 * 2)


ZONEINFO = """Node 0, zone      DMA
  pages free     2816
        spanned  1023
        present  998
  start_pfn:           1
Node 0, zone   Normal
  pages free     1000
        spanned  3584
        present  3584
  start_pfn:           1024
Node 0, zone  Movable
  pages free     0
        spanned  0
        present  0
"""


def test_zoneinfo_gives_each_zones_span() -> None:
    assert host.zone_spans(ZONEINFO) == [(0, "DMA32", 1, 1023), (0, "Normal", 1024, 3584)]


def test_the_fragment_census_counts_pageblocks_broken_up_and_those_holding_kernel_memory() -> None:
    slab, lru, huge, pgtable = 1 << 7, host.KPF_LRU, host.KPF_HUGE | (1 << 15), 1 << 26
    anon = host.KPF_LRU | host.KPF_ANON
    per = 512
    blocks = [
        [host.KPF_BUDDY] * per,  # wholly free: not broken up
        [host.KPF_BUDDY] * 500 + [lru] * 12,  # fragments beside page cache
        [host.KPF_BUDDY] * 500 + [lru] * 11 + [slab],  # … and a slab page
        [host.KPF_BUDDY] * 500 + [lru] * 11 + [0],  # … and a page with no flag (a per-CPU list's)
        [lru] * 511 + [slab],  # no free page
        [host.KPF_BUDDY] * 500 + [slab] * 12,  # a non-movable pageblock: no LRU page
        [host.KPF_BUDDY] * 256 + [lru] * 128 + [huge] * 128,  # fragments beside hugetlb pages
        [host.KPF_BUDDY] * 300 + [lru] * 200 + [pgtable] * 12,  # … and page tables
        [host.KPF_BUDDY] * 300 + [anon] * 212,  # fragments beside anonymous memory only
        [lru] * 500 + [host.KPF_NOPAGE] * 12,  # a hole is not a free page
    ]
    flags = array.array("Q", [0] * 1024 + [f for b in blocks for f in b])
    census = host.fragment_census([(0, "Normal", 1024, len(blocks) * per)], io.BytesIO(flags.tobytes()))
    # Broken up: blocks 1, 2, 3, 6, 7 and 8; 2 and 7 hold kernel memory; 1, 3 and 6 page cache.
    assert census == {(0, "Normal"): (6, 2, 3)}
    # A zone that starts inside a pageblock and ends inside another counts only its own pfns
    # there: from pfn 7 of block 1 to pfn 499 of block 3, block 3's page cache (after its
    # first 500 pfns) is not the zone's; from pfn 500 of block 1, its free pages are not.
    census = host.fragment_census([(0, "Normal", 1024 + per + 7, 2 * per + 500 - 7)], io.BytesIO(flags.tobytes()))
    assert census == {(0, "Normal"): (2, 1, 1)}
    census = host.fragment_census([(0, "Normal", 1024 + per + 500, 2 * per - 500)], io.BytesIO(flags.tobytes()))
    assert census == {(0, "Normal"): (1, 1, 0)}


def test_the_pageblocks_command_fills_the_profile_and_a_host_scenario_starts_from_them(host_profile: Path) -> None:
    result = CliRunner().invoke(cli, ["host", "pageblocks", "--file", str(PAGETYPEINFO)])
    assert result.exit_code != 0 and "reclaimlab host probe" in result.output, result.output
    host_profile.write_text(_core.host_profile_toml(json.dumps(VM_PROFILE)))
    result = CliRunner().invoke(cli, ["host", "pageblocks", "--file", str(PAGETYPEINFO)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "node 0 Normal: 93 unmovable, 292 reclaimable, 78 high-atomic pageblocks; 829031 free pages in movable blocks below order 9" in result.stdout
    written = tomllib.loads(host_profile.read_text())
    assert written["device"]["bandwidth_mb_s"] == 1000.0 and written["min_free_kbytes"] == 67584
    assert [b["zone"] for b in written["pageblocks"]] == ["DMA32", "Normal"]
    scenario = ROOT / "scenarios" / "live" / "dd-squeeze.toml"
    (point,) = points(scenario, ["workload.tasks=1"])
    machine = tomllib.loads(point.toml)["machine"]
    assert machine["pageblocks"] == written["pageblocks"]


def test_a_live_runs_window_start_pageblocks_with_the_census_where_kpageflags_can_be_read() -> None:
    from reclaimlab.live.fake import FakeBackend
    from reclaimlab.live.runner import window_pageblocks

    fake = FakeBackend()
    assert window_pageblocks(fake) is None, "no /proc/pagetypeinfo: nothing to record"
    fake.files[host.PAGETYPEINFO] = PAGETYPEINFO.read_text()
    without = window_pageblocks(fake)
    assert without == host.pageblocks(PAGETYPEINFO.read_text())
    assert not any("fragment_blocks" in b for b in without or [])
    # With /proc/kpageflags: Normal (pfns 1024 on) has one pageblock of free pages beside page
    # cache and one beside a slab page; DMA32's pfns are all in use.
    per = 512
    flags = [0] * 1024 + [host.KPF_BUDDY] * 500 + [host.KPF_LRU] * 12 + [host.KPF_BUDDY] * 500 + [host.KPF_LRU] * 11 + [1 << 7]
    flags += [host.KPF_LRU] * (3584 - 2 * per)
    fake.files[host.ZONEINFO] = ZONEINFO
    fake.binary_files[host.KPAGEFLAGS] = array.array("Q", flags).tobytes()
    blocks = {b["zone"]: b for b in window_pageblocks(fake) or []}
    assert (blocks["Normal"]["fragment_blocks"], blocks["Normal"]["fragment_blocks_unmovable"], blocks["Normal"]["fragment_blocks_file"]) == (2, 1, 1)
    assert "fragment_blocks" not in blocks["DMA32"]


def test_pageblocks_become_a_scenario_override_checked_against_its_machine(host_profile: Path) -> None:
    host_profile.write_text(_core.host_profile_toml(json.dumps(VM_PROFILE)))
    blocks = host.pageblocks(PAGETYPEINFO.read_text())
    blocks[1].update(fragment_blocks=40, fragment_blocks_unmovable=10, fragment_blocks_file=20)
    override = _core.pageblocks_override(json.dumps(blocks))
    assert override.startswith("machine.pageblocks=[")
    scenario = ROOT / "scenarios" / "live" / "dd-squeeze.toml"
    (point,) = points(scenario, ["workload.tasks=1", override])
    assert tomllib.loads(point.toml)["machine"]["pageblocks"] == blocks
    with pytest.raises(ValueError, match="pageblocks"):
        _core.pageblocks_override('[{"node": 0}]')
    blocks[1]["zone"] = "HighMem"
    with pytest.raises(ScenarioError, match="pageblocks"):
        points(scenario, ["workload.tasks=1", _core.pageblocks_override(json.dumps(blocks))])
