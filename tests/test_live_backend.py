"""KernelBackend's journaled changes and their undo, against the recorded fake (no root)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from reclaimlab.live.backend import SYSCTLS, MiB, BackendError
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.journal import Journal, JournalError, journal_path
from reclaimlab.live.tracefs import TraceSession
from .live_support import machine_left_as_found, state_dir  # noqa: F401  (fixtures)


@pytest.fixture
def fake(state_dir: Path) -> FakeBackend:
    b = FakeBackend()
    b.journal = Journal.create(journal_path(), scenario="test")
    return b


def journal_on_disk() -> list[dict]:
    return json.loads(journal_path().read_text())["entries"]


def test_journal_entry_is_on_disk_before_the_change(fake: FakeBackend) -> None:
    seen = []
    original = fake.write_text

    def spy(path: str, text: str) -> None:
        seen.append([e for e in journal_on_disk() if e.get("path") == path])
        original(path, text)

    fake.write_text = spy  # type: ignore[method-assign]
    fake.set_sysctl("swappiness", 100)
    assert seen == [[{"op": "write", "path": "/proc/sys/vm/swappiness", "old": "60"}]]
    assert fake.files["/proc/sys/vm/swappiness"] == "100"


def test_unchanged_value_is_not_journaled(fake: FakeBackend) -> None:
    fake.set_sysctl("swappiness", 60)
    assert fake.journal is not None and fake.journal.entries == []
    assert not any(c[0] == "write" for c in fake.calls)


def test_restore_undoes_in_reverse_order_and_removes_the_journal(fake: FakeBackend) -> None:
    fake.set_sysctl("vma_ra_enabled", False)
    fake.set_sysctl("page_cluster", 0)
    fake.set_sysctl("page_cluster", 2)  # second change of the same file: undo must end at "3"
    journal = fake.journal
    assert journal is not None
    fake.restore(journal)
    writes = [c for c in fake.calls if c[0] == "write"]
    assert writes[-3:] == [
        ("write", "/proc/sys/vm/page-cluster", "0"),
        ("write", "/proc/sys/vm/page-cluster", "3"),
        ("write", "/sys/kernel/mm/swap/vma_ra_enabled", "true"),
    ]
    assert fake.files["/proc/sys/vm/page-cluster"] == "3"
    assert not journal_path().exists()


def test_zone_reclaim_mode_is_written_and_restored(fake: FakeBackend) -> None:
    assert fake.set_sysctl("zone_reclaim_mode", 1) == "0"
    assert fake.set_sysctl("min_unmapped_ratio", 5) == "1"
    assert fake.files["/proc/sys/vm/zone_reclaim_mode"] == "1"
    fake.restore(fake.journal)
    writes = [c for c in fake.calls if c[0] == "write"]
    assert writes[-2:] == [
        ("write", "/proc/sys/vm/min_unmapped_ratio", "1"),
        ("write", "/proc/sys/vm/zone_reclaim_mode", "0"),
    ]


def test_the_sysctl_files_come_from_the_scenario_schema() -> None:
    # Every [sysctl] key but read_ahead_kb (a block queue's, which a live run refuses), in
    # the order of the section's table (reclaim_sim::sysctl), which `live check` keeps.
    assert list(SYSCTLS) == [
        "min_free_kbytes", "watermark_scale_factor", "swappiness", "watermark_boost_factor",
        "dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes",
        "dirty_expire_centisecs", "dirty_writeback_centisecs", "page_cluster", "vma_ra_enabled",
        "transparent_hugepage", "transparent_hugepage_defrag", "zone_reclaim_mode",
        "min_unmapped_ratio",
    ]
    assert SYSCTLS["page_cluster"] == "/proc/sys/vm/page-cluster"
    assert SYSCTLS["zone_reclaim_mode"] == "/proc/sys/vm/zone_reclaim_mode"
    assert SYSCTLS["vma_ra_enabled"] == "/sys/kernel/mm/swap/vma_ra_enabled"


def test_thp_settings_read_the_bracketed_choice_and_restore_it(fake: FakeBackend) -> None:
    enabled = "/sys/kernel/mm/transparent_hugepage/enabled"
    defrag = "/sys/kernel/mm/transparent_hugepage/defrag"
    assert fake.set_sysctl("transparent_hugepage", "madvise") == "madvise"
    assert fake.journal is not None and fake.journal.entries == [], "unchanged: not journaled"
    assert fake.set_sysctl("transparent_hugepage", "always") == "madvise"
    assert fake.set_sysctl("transparent_hugepage_defrag", "defer+madvise") == "madvise"
    assert fake.files[enabled] == "always"
    fake.restore(fake.journal)
    writes = [c for c in fake.calls if c[0] == "write"]
    assert writes[-2:] == [("write", defrag, "madvise"), ("write", enabled, "madvise")]


def test_unknown_sysctl_is_refused(fake: FakeBackend) -> None:
    with pytest.raises(BackendError, match="unknown sysctl"):
        fake.set_sysctl("overcommit", 1)


def test_no_change_without_a_journal(state_dir: Path) -> None:
    b = FakeBackend()
    with pytest.raises(BackendError, match="no journal"):
        b.set_sysctl("swappiness", 10)
    assert b.files["/proc/sys/vm/swappiness"] == "60"


def test_memcg_is_nested_under_our_own_cgroup_and_removed_with_its_tasks(fake: FakeBackend) -> None:
    cg = fake.create_memcg("reclaimlab-t", 256 * MiB, swappiness=100)
    assert cg.path == "/sys/fs/cgroup/memory/user/reclaimlab-t"
    assert fake.files[f"{cg.path}/memory.limit_in_bytes"] == str(256 * MiB)
    assert fake.files[f"{cg.path}/memory.swappiness"] == "100"
    p = fake.spawn(["sleep", "100"], cgroup=cg)
    fake.programs = {}
    assert fake.cgroup_pids(cg) == [p.pid]
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert ("kill", p.pid, signal.SIGKILL) in fake.calls
    assert cg.path not in fake.dirs


def test_squeeze_reserves_hugepages_down_to_the_free_target(fake: FakeBackend) -> None:
    fake.mem_available_kb = 8 << 20  # 8 GiB available
    fake._sync_meminfo()
    pages = fake.squeeze(3072 * MiB, 1024 * MiB)
    assert pages == (8192 - 3072) // 2
    assert fake.meminfo()["MemAvailable"] == 3072 * MiB
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


def test_squeeze_below_the_margin_is_refused_with_advice(fake: FakeBackend) -> None:
    with pytest.raises(BackendError, match="safe margin.*raise memory.free_mb"):
        fake.squeeze(512 * MiB, 1024 * MiB)
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


def test_squeeze_with_nothing_to_squeeze_is_refused_with_the_numbers(fake: FakeBackend) -> None:
    fake.mem_available_kb = 4 << 20
    fake._sync_meminfo()
    with pytest.raises(BackendError, match="leave 1000000 MiB available but this machine has only 4096 MiB available"):
        fake.squeeze(1000000 * MiB, 1024 * MiB)
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


def test_squeeze_the_kernel_cannot_reserve_is_refused_with_the_numbers(fake: FakeBackend) -> None:
    fake.mem_available_kb = 8 << 20
    fake._sync_meminfo()
    fake.hugetlb_max = 1000  # fragmented: 2000 MiB of the 5120 asked
    with pytest.raises(BackendError, match=r"asked for 2560 hugetlb pages \(5120 MiB\) to leave 3072 MiB available, "
                                           r"but the kernel reserved only 1000 \(2000 MiB\), leaving 6192 MiB"):  # fmt: skip
        fake.squeeze(3072 * MiB, 1024 * MiB)
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


def test_squeeze_refuses_when_hugepages_are_already_reserved(fake: FakeBackend) -> None:
    fake.files["/proc/sys/vm/nr_hugepages"] = "10"
    fake._sync_meminfo()
    with pytest.raises(BackendError, match="already reserved"):
        fake.squeeze(2048 * MiB, 1024 * MiB)


def test_swapfile_is_journaled_first_and_undone(fake: FakeBackend) -> None:
    fake.add_swapfile("/var/tmp/swap.img", 64 * MiB, 5)
    assert fake.swaps() == ["/var/tmp/swap.img"]
    runs = [c[1:] for c in fake.calls if c[0] == "run"]
    assert runs[0] == ("fallocate", "-l", str(64 * MiB), "/var/tmp/swap.img")
    assert runs[-1] == ("swapon", "-p", "5", "/var/tmp/swap.img")
    assert [e["op"] for e in journal_on_disk()] == ["file", "swapon"]
    assert not any(c[:2] == ("run", "dd") for c in fake.calls)  # fallocate worked: no zero-fill
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.swaps() == []
    assert "/var/tmp/swap.img" not in fake.files


def test_failed_swapon_still_leaves_a_restorable_journal(fake: FakeBackend) -> None:
    fake.fail_commands = {"swapon"}
    with pytest.raises(BackendError, match="swapon"):
        fake.add_swapfile("/var/tmp/swap.img", 64 * MiB, 5)
    assert fake.journal is not None
    lines = fake.restore(fake.journal)
    assert "/var/tmp/swap.img" not in fake.files
    assert not any(line.startswith("FAILED") for line in lines)


def test_rotational_flag_is_restored(fake: FakeBackend) -> None:
    fake.set_rotational("sda", False)
    assert fake.files["/sys/block/sda/queue/rotational"] == "0"
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.files["/sys/block/sda/queue/rotational"] == "1"


def test_process_of_someone_else_with_a_reused_pid_is_not_killed(fake: FakeBackend) -> None:
    p = fake.spawn(["dd"])
    fake.track_process(p.pid)
    # the process exits and the pid is reused by an unrelated process (another start time)
    fake.files[f"/proc/{p.pid}/stat"] = f"{p.pid} (bash) S 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999999 0 0"
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert not any(c[0] == "kill" for c in fake.calls)


def test_tracing_uses_its_own_instance_and_mounts_tracefs_if_needed(fake: FakeBackend, tmp_path: Path) -> None:
    session = TraceSession(fake, ["vmscan", "writeback"])
    session.start(tmp_path / "trace.txt")
    inst = session.instance
    assert inst.startswith("/sys/kernel/tracing/instances/reclaimlab-")
    assert fake.files[f"{inst}/set_event"] == "vmscan:*\n"  # writeback absent on this fake kernel
    assert fake.files[f"{inst}/tracing_on"] == "1"
    fake.files[f"{inst}/trace_pipe"] = "  dd-1 [000] ..... 1.000000: mm_vmscan_kswapd_wake: nid=0 order=0\n"
    session.stop()
    assert "mm_vmscan_kswapd_wake" in (tmp_path / "trace.txt").read_text()
    assert [e["op"] for e in journal_on_disk()] == ["mount", "trace_instance"]
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.tracing_instances() == []
    assert "tracefs" not in fake.files["/proc/mounts"]


def test_a_second_run_is_refused_while_a_journal_is_unrestored(fake: FakeBackend) -> None:
    fake.set_sysctl("swappiness", 1)
    with pytest.raises(JournalError, match="reclaimlab live restore"):
        Journal.create(journal_path())


def test_restore_from_a_fresh_process_view_of_the_journal(fake: FakeBackend) -> None:
    """`reclaimlab live restore` sees only the file: load it and undo from there."""
    fake.set_sysctl("min_free_kbytes", 200000)
    fake.add_swapfile("/var/tmp/s.img", MiB, 1)
    loaded = Journal.load(journal_path())
    assert loaded is not None and len(loaded.pending()) == 3
    fresh = FakeBackend(files=fake.files, dirs=fake.dirs)
    fresh.restore(loaded)
    assert fake.files["/proc/sys/vm/min_free_kbytes"] == "67584"
    assert fake.swaps() == []
    assert Journal.load(journal_path()) is None


def test_memcg_v2_is_used_where_the_parent_delegates_memory(state_dir: Path) -> None:
    b = FakeBackend()
    b.journal = Journal.create(journal_path())
    del b.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"]  # no v1 memory controller
    b.files["/proc/self/cgroup"] = "0::/user.slice/run\n"
    b.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io memory pids"
    b.files["/sys/fs/cgroup/user.slice/run/cgroup.subtree_control"] = "memory"
    b.dirs.add("/sys/fs/cgroup/user.slice/run")
    cg = b.create_memcg("reclaimlab-x", 256 * MiB)
    assert cg.version == 2 and cg.path == "/sys/fs/cgroup/user.slice/run/reclaimlab-x"
    assert b.files[f"{cg.path}/memory.max"] == str(256 * MiB)
    # Its counters: memory.stat's, memory.events, memory.current and memory.max ("max" when
    # unlimited reads as None).
    b.files[f"{cg.path}/memory.stat"] = "anon 4096\npgscan_direct 7\npgsteal_direct 5\nworkingset_refault_anon 2\n"
    b.files[f"{cg.path}/memory.events"] = "low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\noom_group_kill 0\n"
    b.files[f"{cg.path}/memory.current"] = "8192"
    c = b.memcg_counters(cg)
    assert c["stat"] == {"pgscan_direct": 7, "pgsteal_direct": 5, "workingset_refault_anon": 2}
    assert c["events"]["max"] == 3 and c["current"] == 8192 and c["max"] == 256 * MiB
    b.files[f"{cg.path}/memory.max"] = "max"
    assert b.memcg_counters(cg)["max"] is None
    b.restore(b.journal)
    assert cg.path not in b.dirs


def test_no_memcg_where_v2_does_not_delegate_memory(state_dir: Path) -> None:
    b = FakeBackend()
    del b.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    b.files["/proc/self/cgroup"] = "0::/user.slice/run\n"
    b.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io memory pids"
    b.files["/sys/fs/cgroup/user.slice/run/cgroup.subtree_control"] = ""
    assert b.memcg_parent() is None


def test_zram_swap_is_reset_on_restore(fake: FakeBackend) -> None:
    fake.files["/sys/block/zram0/disksize"] = "0"
    fake.files["/sys/block/zram0/reset"] = ""
    dev = fake.add_zram(128 * MiB, 50)
    assert dev == "/dev/zram0" and fake.swaps() == ["/dev/zram0"]
    assert fake.files["/sys/block/zram0/disksize"] == str(128 * MiB)
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.swaps() == []
    assert ("write", "/sys/block/zram0/reset", "1") in fake.calls
    assert not any(c[1] == "/sys/class/zram-control/hot_remove" for c in fake.calls), "a device it found stays"


def test_a_zram_device_made_for_the_run_is_removed_on_restore(fake: FakeBackend) -> None:
    # zram0 is in use: the run makes zram1 (reading hot_add makes it) and removes it after.
    fake.files["/sys/block/zram0/disksize"] = str(64 * MiB)
    fake.files["/sys/class/zram-control/hot_add"] = "1"
    fake.files["/sys/class/zram-control/hot_remove"] = ""
    assert fake.add_zram(128 * MiB, 50) == "/dev/zram1"
    assert fake.journal is not None
    report = fake.restore(fake.journal)
    assert not any(line.startswith("FAILED") for line in report), report
    assert fake.swaps() == []
    writes = [c for c in fake.calls if c[0] == "write"]
    assert writes[-2:] == [("write", "/sys/block/zram1/reset", "1"), ("write", "/sys/class/zram-control/hot_remove", "1")]
    assert ("write", "/sys/class/zram-control/hot_remove", "0") not in fake.calls, "zram0 was the machine's"


def test_trace_record_writes_a_run_directory_and_restores(state_dir: Path, tmp_path: Path) -> None:
    from reclaimlab.rundir import read_rundir
    from reclaimlab.tracing.record import record_command

    fake = FakeBackend()
    rc = record_command(fake, ["sh", "-c", "exit 3"], tmp_path / "rec")
    assert rc == 3
    run = read_rundir(tmp_path / "rec")
    assert run.result["metrics"]["exit_code"] == 3 and run.trace_path is not None
    assert run.result["metrics"]["events"] == ["vmscan:*"]
    assert fake.tracing_instances() == [] and "tracefs" not in fake.files["/proc/mounts"]
    assert not journal_path().exists()


def test_an_existing_swap_file_is_refused_not_deleted(fake: FakeBackend) -> None:
    fake.files["/home/me/important"] = "data"
    with pytest.raises(BackendError, match="already exists"):
        fake.add_swapfile("/home/me/important", MiB, 1)
    assert fake.journal is not None
    fake.restore(fake.journal)
    assert fake.files["/home/me/important"] == "data"


def test_swapfile_falls_back_to_a_written_file(fake: FakeBackend) -> None:
    fake.fail_commands = {"fallocate"}
    fake.add_swapfile("/var/tmp/swap.img", 64 * MiB, 5)
    runs = [c[1:3] for c in fake.calls if c[0] == "run"]
    assert ("dd", "if=/dev/zero") in runs
    assert fake.swaps() == ["/var/tmp/swap.img"]


def test_a_long_command_is_journaled_and_killed_when_interrupted(state_dir: Path) -> None:
    """The dd that writes a test or swap file: journaled, so `live restore` ends it after a
    SIGKILL of the run, and killed at once when the run is interrupted while it waits."""
    from reclaimlab.live.backend import RealBackend

    b = RealBackend()
    b.journal = Journal.create(journal_path(), scenario="test")
    b.check_run_journaled(["true"])
    with pytest.raises(BackendError, match=r"failed \(3\)"):
        b.check_run_journaled(["sh", "-c", "exit 3"])
    assert [e["op"] for e in b.journal.entries] == ["process", "process"]

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            b.check_run_journaled(["sleep", "30"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    sleeper = b.journal.entries[-1]
    assert sleeper["op"] == "process" and b.process_start_time(sleeper["pid"]) is None, "killed and reaped"
    assert not any(line.startswith("FAILED") for line in b.restore(b.journal))
