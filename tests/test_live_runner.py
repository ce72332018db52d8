"""A whole live run against the fake backend: the run directory, the journal, the refusals."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Sequence

import pytest

from reclaimlab.live.backend import BackendError
from reclaimlab.live.fake import FakeBackend
from reclaimlab.live.journal import Journal, journal_path
from reclaimlab.live.runner import LiveError, preflight, run
from reclaimlab.live.scenario import load
from reclaimlab.simulate.runner import ScenarioError
from reclaimlab.rundir import FILES, read_rundir
from reclaimlab.summary import cells, layout
from .live_support import VM_PROFILE, machine_left_as_found, state_dir  # noqa: F401  (fixtures)


def scenario(tmp_path: Path, text: str, sets: Sequence[str] = ()):  # type: ignore[no-untyped-def]
    p = tmp_path / "sc.toml"
    p.write_text(text)
    return load(p, list(sets))


DD = """
name = "fake-dd"
[run]
sample_interval_s = 0.05
trace = true
duration_s = 0.3
[memory]
mode = "squeeze"
free_mb = 2048
[sysctl]
watermark_scale_factor = 200
[workload]
kind = "dd"
tasks = 1
file_mb = 64
dir = "/var/tmp/reclaimlab-fake"
[sweep]
"workload.tasks" = [1, 2]
"""


def live_and_sim(path: Path, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    """`reclaimlab run PATH --live-and-sim -o OUT [EXTRA…]` through click's runner, on whatever
    backend the test has patched in; its click Result."""
    from click.testing import CliRunner

    from reclaimlab.cli import cli

    return CliRunner().invoke(cli, ["run", str(path), "--live-and-sim", "-o", str(out), *extra], catch_exceptions=False)


def dd_program(argv: Sequence[str]) -> tuple[int, str, str, float]:
    # a dd that reads 64 MiB in 0.1 s, then is restarted by the run until time is up
    return 0, "", "67108864 bytes (67 MB, 64 MiB) copied, 0.1 s, 671 MB/s\n", 0.1


def test_dd_sweep_writes_every_run_file_and_restores_everything(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": dd_program})
    fake.files["/proc/sys/vm/drop_caches"] = "0"
    before = dict(fake.files)
    logged: list[str] = []
    points = run(fake, scenario(tmp_path, DD), tmp_path / "out", log=logged.append)
    assert [p.label for p in points] == ["workload.tasks=1", "workload.tasks=2"]
    for p in points:
        for name in FILES:
            assert (p.rundir / name).exists(), name
        assert (p.rundir / "trace.txt").exists()
        # free blocks by order at the window's start and end, as the kernel printed them; the
        # fake kernel has no /proc/pagetypeinfo, so there is none
        assert (p.rundir / "buddyinfo.before").read_text() == fake.files["/proc/buddyinfo"]
        assert (p.rundir / "buddyinfo").read_text() == fake.files["/proc/buddyinfo"]
        assert not (p.rundir / "pagetypeinfo").exists()
    run2 = read_rundir(tmp_path / "out/workload.tasks=2")
    m = run2.result["metrics"]
    assert run2.result["kind"] == "live" and run2.result["workload"] == "dd"
    assert m["tasks"] == 2
    # each slot ran about 0.3/0.1 = 3 dd processes of 64 MiB: restarts happened and were counted
    assert all(b >= 2 * 64 * 2**20 for b in m["task_bytes"])
    assert m["bytes"] == sum(m["task_bytes"])
    assert run2.result["machine"]["hugetlb_pages"] == (7168 - 2048) // 2
    assert run2.tasks["nr_cpus"] == 2
    assert {t["kind"] for t in run2.tasks["tasks"]} == {"workload", "kswapd"}
    dd = layout("dd")
    row = dict(zip([c.header for c in dd], cells(run2, dd)))
    assert row["dd"] == "2" and row["kswapd1"] == "-"  # the fake machine has one node
    # the scenario written is the resolved one: defaults filled, one task count per point
    assert run2.scenario["workload"]["tasks"] == 2 and run2.scenario["workload"]["block_kb"] == 4096
    # the machine is as before: sysctl, hugepages, cgroups, tracing, files
    assert fake.files["/proc/sys/vm/watermark_scale_factor"] == "10"
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"
    assert not [d for d in fake.dirs if "reclaimlab-" in d]
    assert not [f for f in fake.files if f.startswith("/var/tmp/")]
    assert fake.files["/proc/mounts"] == before["/proc/mounts"]
    assert not journal_path().exists()
    # input files were made once for the sweep and reused: one dd per file, not per point
    made = [c for c in fake.calls if c[:2] == ("run", "dd")]
    assert len(made) == 2
    # each announced as it is written, before the first point runs
    writing = [i for i, s in enumerate(logged) if s.startswith("  writing /var/tmp/reclaimlab-fake/dd-")]
    assert [logged[i].split("(")[1] for i in writing] == ["64 MiB, 1 of 1) …", "64 MiB, 2 of 2) …"]
    assert writing[-1] < next(i for i, s in enumerate(logged) if "running into" in s)


def test_missing_data_directories_are_made_and_removed(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": dd_program})
    fake.dirs.add("/var/tmp")
    sc = scenario(tmp_path, DD, ["workload.tasks=1", "workload.dir=/var/tmp/a/b", "run.trace=false"])
    run(fake, sc, tmp_path / "out", log=lambda s: None)
    assert ("mkdir", "/var/tmp/a") in fake.calls and ("mkdir", "/var/tmp/a/b") in fake.calls
    assert "/var/tmp/a" not in fake.dirs and "/var/tmp/a/b" not in fake.dirs
    assert "/var/tmp" in fake.dirs


def test_files_the_user_supplied_are_used_and_never_deleted(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": dd_program})
    fake.files["/data/a"] = "mine"
    sc = scenario(tmp_path, DD, ['workload.files=["/data/a"]', "workload.tasks=1", "run.trace=false", "memory.mode=none"])
    run(fake, sc, tmp_path / "out", log=lambda s: None)
    assert fake.files["/data/a"] == "mine"
    assert not [c for c in fake.calls if c[:2] == ("run", "dd")]
    assert any(c[:2] == ("spawn", "dd") and "if=/data/a" in c for c in fake.calls)


def test_refuses_a_run_directory_that_holds_a_run_unless_forced(tmp_path: Path, state_dir: Path) -> None:
    sc = scenario(tmp_path, DD, ["run.trace=false"])
    (tmp_path / "out/workload.tasks=2").mkdir(parents=True)
    (tmp_path / "out/workload.tasks=2/result.json").write_text("mine")
    fake = FakeBackend(programs={"dd": dd_program})
    with pytest.raises(LiveError, match=r"workload.tasks=2 already holds a run.*--force"):
        run(fake, sc, tmp_path / "out", log=lambda s: None)
    assert not fake.calls  # refused before touching the machine or running any point
    assert (tmp_path / "out/workload.tasks=2/result.json").read_text() == "mine"
    assert not (tmp_path / "out/workload.tasks=1").exists()
    points = run(fake, sc, tmp_path / "out", log=lambda s: None, force=True)
    assert json.loads((points[1].rundir / "result.json").read_text())["kind"] == "live"


def test_force_replaces_the_run_directory_whole(tmp_path: Path, state_dir: Path) -> None:
    sc = scenario(tmp_path, DD, ["run.trace=false"])
    for stale in ("out/workload.tasks=2", "out/workload.tasks=9"):
        (tmp_path / stale).mkdir(parents=True)
        (tmp_path / stale / "result.json").write_text("old")
    (tmp_path / "out/workload.tasks=2/trace.txt").write_text("an old trace")
    run(FakeBackend(programs={"dd": dd_program}), sc, tmp_path / "out", log=lambda s: None, force=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["workload.tasks=1", "workload.tasks=2"]
    assert not (tmp_path / "out/workload.tasks=2/trace.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_refuses_without_root_saying_what_to_do(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(uid=1000)
    with pytest.raises(LiveError, match="need root: run it as root"):
        run(fake, scenario(tmp_path, DD), tmp_path / "out")
    assert not any(c[0] in ("write", "mkdir", "spawn") for c in fake.calls)


def test_refuses_while_an_earlier_journal_is_unrestored(tmp_path: Path, state_dir: Path) -> None:
    j = Journal.create(journal_path(), scenario="old")
    j.pid = 999999  # a run that died
    j.record({"op": "write", "path": "/proc/sys/vm/swappiness", "old": "60"})
    fake = FakeBackend()
    problems = preflight(fake, scenario(tmp_path, DD))
    assert any("reclaimlab live restore" in p for p in problems)
    with pytest.raises(LiveError, match="refusing to start"):
        run(fake, scenario(tmp_path, DD), tmp_path / "out")


def test_refuses_a_squeeze_below_the_safety_margin(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend()
    sc = scenario(tmp_path, DD, ["memory.free_mb=512", "memory.margin_mb=1024"])
    with pytest.raises(LiveError, match="safe margin"):
        run(fake, sc, tmp_path / "out")
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


MMAP_WRITE = """
name = "fake-mmap-write"
[workload]
kind = "mapped-file-stream"
write = true
tasks = 4
size_mb = 1280
dir = "/var/tmp/reclaimlab-fake"
"""


def test_a_mapped_write_larger_than_its_filesystem_is_refused_naming_the_size_that_fits(tmp_path: Path, state_dir: Path) -> None:
    # 4 × 1280 MiB against 4000 MiB free, of which 3600 may be used: 900 MiB a task fits.
    fake = FakeBackend(disk_free=4000 << 20)
    with pytest.raises(LiveError, match=r"workload\.size_mb: 4 tasks × 1280 MiB may write 5120 MiB to /var/tmp/reclaimlab-fake, .* 4000 MiB free .* expected size_mb at most 900"):
        run(fake, scenario(tmp_path, MMAP_WRITE), tmp_path / "out")
    assert not any(c[0] in ("write", "mkdir", "spawn") for c in fake.calls)
    assert preflight(fake, scenario(tmp_path, MMAP_WRITE, ["workload.size_mb=900"]).points_[0]) == []
    # A reading stream writes nothing: no limit.
    assert preflight(fake, scenario(tmp_path, MMAP_WRITE, ["workload.write=false"]).points_[0]) == []


def test_a_mapped_write_runs_the_helper_with_write_and_reports_its_tasks(tmp_path: Path, state_dir: Path) -> None:
    def helper(argv: Sequence[str]) -> tuple[int, str, str, float]:
        mib = int(argv[argv.index("--size-mb") + 1])
        return 0, json.dumps({"pages": mib * 256, "usecs": 250_000, "checksum": 0}) + "\n", "", 0.05

    fake = FakeBackend(programs={"mapped-file-stream": helper})
    points = run(fake, scenario(tmp_path, MMAP_WRITE, ["workload.size_mb=8", "workload.tasks=2", "run.sample_interval_s=0.05"]), tmp_path / "out", log=lambda s: None)
    spawned = [c for c in fake.calls if c[0] == "spawn" and "mapped-file-stream" in c]
    assert len(spawned) == 2 and all("--write" in c and c[c.index("--size-mb") + 1] == "8" for c in spawned)
    m = points[0].result["metrics"]
    assert m["pages"] == 2 * 8 * 256 and m["task_elapsed_s"] == [0.25, 0.25] and m["elapsed_s"] == 0.25
    # A reading stream's helper is not asked to write.
    fake = FakeBackend(programs={"mapped-file-stream": helper})
    run(fake, scenario(tmp_path, MMAP_WRITE, ["workload.size_mb=8", "workload.tasks=1", "workload.write=false"]), tmp_path / "out2", log=lambda s: None)
    assert not any("--write" in c for c in fake.calls if c[0] == "spawn")


def test_a_squeeze_the_kernel_cannot_reserve_fails_before_the_workload_starts(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": dd_program}, hugetlb_max=10)
    with pytest.raises((LiveError, BackendError), match="the kernel reserved only 10"):
        run(fake, scenario(tmp_path, DD), tmp_path / "out", log=lambda s: None)
    assert not [c for c in fake.calls if c[0] == "spawn" and "of=/dev/null" in " ".join(map(str, c))]
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"
    assert not journal_path().exists()
    # Nothing was measured, so nothing is kept: the same command may be run again.
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    with pytest.raises((LiveError, BackendError), match="the kernel reserved only 10"):
        run(FakeBackend(programs={"dd": dd_program}, hugetlb_max=10), scenario(tmp_path, DD), tmp_path / "out", log=lambda s: None)


def test_a_squeeze_with_nothing_to_squeeze_is_refused_before_anything_changes(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend()
    with pytest.raises(LiveError, match="leave 1000000 MiB available but this machine has only"):
        run(fake, scenario(tmp_path, DD, ["memory.free_mb=1000000"]), tmp_path / "out")
    assert not [c for c in fake.calls if c[0] == "write"]


def test_failure_mid_run_still_restores(tmp_path: Path, state_dir: Path) -> None:
    def failing_dd(argv: Sequence[str]) -> tuple[int, str, str, float]:
        return 1, "", "dd: error reading: Input/output error\n", 0.0

    fake = FakeBackend(programs={"dd": failing_dd})
    with pytest.raises(LiveError, match="Input/output error"):
        run(fake, scenario(tmp_path, DD), tmp_path / "out", log=lambda s: None)
    result = json.loads((tmp_path / "out/workload.tasks=1/result.json").read_text())
    assert result["failures"]
    assert fake.files["/proc/sys/vm/watermark_scale_factor"] == "10"
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"
    assert not journal_path().exists()


USEMEM = """
[memory]
mode = "cgroup"
limit_mb = 256
[swap]
kind = "file"
size_mb = 512
priority = 7
path = "/var/tmp/reclaimlab-swap-test.img"
nonrotational = true
[sysctl]
vma_ra_enabled = false
swappiness = 100
[workload]
kind = "usemem"
tasks = 2
size_mb = 64
runtime_s = 1
repeats = 0
[workload.background]
kind = "usemem"
tasks = 1
size_mb = 32
random = true
runtime_s = 1
repeats = 0
"""


def test_usemem_with_background_swap_and_cgroup(tmp_path: Path, state_dir: Path) -> None:
    def usemem(argv: Sequence[str]) -> tuple[int, str, str, float]:
        kb = 300 if "--random" in argv else 1000
        start = int(argv[argv.index("--start-at-ns") + 1])
        # The background's task began 80 ms late.
        late = 80_000_000 if "--random" in argv else 1_000_000
        out = {"bytes": 1, "usecs": 1, "kb_s": kb, "passes": 1, "words": 1, "free_usecs": 5, "start_ns": start + late}
        return 0, json.dumps(out) + "\n", "", 0.05

    fake = FakeBackend(programs={"usemem": usemem})
    lines: list[str] = []
    points = run(fake, scenario(tmp_path, USEMEM), tmp_path / "out", log=lines.append)
    result = points[0].result
    assert result["metrics"]["start_late_ms"] == [1.0, 1.0]
    assert result["background"]["metrics"]["start_late_ms"] == [80.0]
    assert any("began 80 ms after the common start" in line for line in lines)
    assert result["metrics"]["throughput_kB_s"] == 2000
    assert result["background"]["metrics"]["throughput_kB_s"] == 300
    # The cgroup's limit (v1 here) and its counters, in the simulator's shape.
    assert result["memcg"]["max_bytes"] == 256 << 20
    assert result["memcg"]["events"] == {} and result["memcg"]["failcnt"] == 0  # v1: no memory.events
    assert result["memcg"]["stat"]["pgpgin"] == 0
    # order of the changes: sysctls, queue flag, then swap (swapon reads the flag), then cgroup
    ops = [c for c in fake.calls if c[0] in ("write", "run", "mkdir")]
    rot = ops.index(("write", "/sys/block/sda/queue/rotational", "0"))
    swapon = next(i for i, c in enumerate(ops) if c[:2] == ("run", "swapon"))
    mkdir = next(i for i, c in enumerate(ops) if c[0] == "mkdir")
    assert rot < swapon < mkdir
    cg = result["machine"]["cgroup"]
    assert ("write", f"{cg}/memory.limit_in_bytes", str(256 << 20)) in fake.calls
    assert ("write", f"{cg}/memory.swappiness", "100") in fake.calls
    spawned = [c for c in fake.calls if c[0] == "spawn"]
    assert sum("--random" in c for c in spawned) == 1 and len(spawned) == 3
    # Foreground and background tasks wait for one common start, after they were spawned.
    starts = {int(c[c.index("--start-at-ns") + 1]) for c in spawned}
    assert len(starts) == 1 and starts.pop() > 0
    assert fake.files["/sys/block/sda/queue/rotational"] == "1"
    assert fake.files["/sys/kernel/mm/swap/vma_ra_enabled"] == "true"
    assert fake.swaps() == []



def test_several_swap_areas_are_added_in_order_with_their_priorities_and_removed(tmp_path: Path, state_dir: Path) -> None:
    def usemem(argv: Sequence[str]) -> tuple[int, str, str, float]:
        return 0, json.dumps({"bytes": 1, "usecs": 1, "kb_s": 1000, "passes": 1, "words": 1, "free_usecs": 5}) + "\n", "", 0.05

    fake = FakeBackend(programs={"usemem": usemem})
    fake.files["/sys/block/zram0/disksize"] = "0"
    fake.files["/sys/block/zram0/reset"] = ""
    sets = ["swap.kind=\"zram\"", "swap.size_mb=64", "swap.priority=100",
            'swap.also=[{kind="file", size_mb=512, priority=10}]']
    result = run(fake, scenario(tmp_path, USEMEM, sets), tmp_path / "out", log=lambda s: None)[0].result
    swapons = [c[1:] for c in fake.calls if c[:2] == ("run", "swapon")]
    assert [argv[argv.index("-p") + 1] for argv in swapons] == ["100", "10"]
    assert swapons[0][-1] == "/dev/zram0" and swapons[1][-1].startswith("/var/tmp/reclaimlab-swap-")
    notes = result["machine"]
    assert notes["swap"] == "/dev/zram0" and notes["swap_also"] == [swapons[1][-1]]
    assert fake.swaps() == []
    assert ("write", "/sys/block/zram0/reset", "1") in fake.calls
    # Two areas on one file: refused before any change.
    twice = FakeBackend(programs={"usemem": usemem})
    same = ['swap.also=[{kind="file", size_mb=64, path="/var/tmp/reclaimlab-swap-test.img"}]']
    with pytest.raises(LiveError, match="same file"):
        run(twice, scenario(tmp_path, USEMEM, same), tmp_path / "out2", log=lambda s: None)
    assert not any(c[:2] == ("run", "swapon") for c in twice.calls)


def test_a_v2_cgroup_records_memory_events(tmp_path: Path, state_dir: Path) -> None:
    def usemem(argv: Sequence[str]) -> tuple[int, str, str, float]:
        return 0, json.dumps({"bytes": 1, "usecs": 1, "kb_s": 1000, "passes": 1, "words": 1, "free_usecs": 5}) + "\n", "", 0.05

    fake = FakeBackend(programs={"usemem": usemem})
    del fake.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"]  # no v1 memory controller
    fake.files["/proc/self/cgroup"] = "0::/user.slice/run\n"
    fake.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io memory pids"
    fake.files["/sys/fs/cgroup/user.slice/run/cgroup.subtree_control"] = "memory"
    fake.dirs.add("/sys/fs/cgroup/user.slice/run")
    result = run(fake, scenario(tmp_path, USEMEM), tmp_path / "out", log=lambda s: None)[0].result
    # memory.max as written, memory.events' max and oom, no v1 failcnt.
    assert result["memcg"]["max_bytes"] == 256 << 20
    assert result["memcg"]["events"] == {"max": 0, "oom": 0, "high": 0} and "failcnt" not in result["memcg"]

def test_squeeze_watchdog_stops_the_workload_when_memory_runs_out(tmp_path: Path, state_dir: Path) -> None:
    fake = FakeBackend(programs={"dd": lambda argv: (0, "", "1 bytes copied\n", 30.0)})
    original = fake.meminfo

    def shrinking() -> dict[str, int]:
        info = original()
        if fake.files["/proc/sys/vm/nr_hugepages"] != "0":
            info["MemAvailable"] = 100 << 20  # someone else took the memory the squeeze left
        return info

    fake.meminfo = shrinking  # type: ignore[method-assign]
    sc = scenario(tmp_path, DD, ["workload.tasks=1", "run.duration_s=20", "run.trace=false"])
    points = run(fake, sc, tmp_path / "out", log=lambda s: None)
    result = points[0].result
    assert "fell below" in result["aborted"]
    assert result["elapsed_s"] < 5
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"


SMALL_BOTH = """
name = "both"
[machine]
nodes = 1
cpus_per_node = 2
memory_mb_per_node = 4096
devices = [{ name = "vdz", bandwidth_mb_s = 2000, latency_us = 100, max_request_kb = 1024 }]
[memory]
mode = "squeeze"
free_mb = 2048
[run]
duration_s = 0.3
sample_interval_s = 0.1
[workload]
kind = "dd"
tasks = 1
file_mb = 64
dir = "/var/tmp/reclaimlab-fake"
[sweep]
"workload.tasks" = [1, 2]
"""


# SMALL_BOTH on this machine, as the host profile describes it.
HOST_BOTH = SMALL_BOTH.replace(
    """[machine]
nodes = 1
cpus_per_node = 2
memory_mb_per_node = 4096
devices = [{ name = "vdz", bandwidth_mb_s = 2000, latency_us = 100, max_request_kb = 1024 }]""",
    '[machine]\nfrom = "host"',
)
assert HOST_BOTH != SMALL_BOTH


def test_live_and_sim_of_this_machine_simulates_each_point_from_its_live_twins_start(
    tmp_path: Path, state_dir: Path, host_profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reclaimlab.live.cli
    from reclaimlab import _core, host

    host_profile.write_text(_core.host_profile_toml(json.dumps(VM_PROFILE)))
    pagetypeinfo = (Path(__file__).parent / "data" / "pagetypeinfo-6.18.txt").read_text()

    class Drifting(FakeBackend):
        """A kernel whose Normal zone has one more unmovable pageblock after each squeeze."""

        def read_text(self, path: str) -> str:
            text = super().read_text(path)
            if path == host.PAGETYPEINFO:
                n = sum(1 for c in self.calls if c[:2] == ("write", "/proc/sys/vm/nr_hugepages") and c[2] != "0")
                text = text.replace("Node 0, zone   Normal           93", f"Node 0, zone   Normal           {93 + n}")
            return text

    fake = Drifting(programs={"dd": dd_program})
    fake.files[host.PAGETYPEINFO] = pagetypeinfo
    monkeypatch.setattr(reclaimlab.live.cli, "backend", lambda: fake)
    path = tmp_path / "host.toml"
    path.write_text(HOST_BOTH)
    out = tmp_path / "out"
    result = live_and_sim(path, out, "-j", "1")
    assert result.exit_code == 0, result.output
    for n, label in enumerate(("workload.tasks=1", "workload.tasks=2"), 1):
        started = json.loads((out / "live" / label / "pageblocks.json").read_text())
        assert [b["zone"] for b in started] == ["DMA32", "Normal"]
        assert started[1]["unmovable"] == 93 + n, "each point records its own start"
        simulated = tomllib.loads((out / "sim" / label / "scenario.toml").read_text())["machine"]
        assert simulated["pageblocks"] == started, "the twin starts where the live point started"
    assert "pageblocks" not in tomllib.loads(host_profile.read_text()), "the profile is left as it was"
    # The simulation stopped half way: the same command keeps the live side and simulates the
    # rest, each point still from its twin's start.
    kept = (out / "live" / "workload.tasks=2" / "result.json").read_text()
    for f in (out / "sim" / "workload.tasks=2").iterdir():
        f.unlink()
    (out / "sim" / "workload.tasks=2").rmdir()
    again = live_and_sim(path, out, "-j", "1")
    assert again.exit_code == 0, again.output
    assert "simulating only" in again.output
    assert (out / "live" / "workload.tasks=2" / "result.json").read_text() == kept
    simulated = tomllib.loads((out / "sim" / "workload.tasks=2" / "scenario.toml").read_text())["machine"]
    assert simulated["pageblocks"][1]["unmovable"] == 95


def test_a_live_point_without_pageblocks_is_simulated_from_the_profile(tmp_path: Path) -> None:
    from reclaimlab.simulate.cli import _from_live_start
    from reclaimlab.simulate.runner import points

    path = tmp_path / "both.toml"
    path.write_text(SMALL_BOTH)
    (point, _) = points(path)
    (tmp_path / "live" / point.label).mkdir(parents=True)
    assert _from_live_start(str(path), (), point, tmp_path / "live") is point
    (tmp_path / "live" / point.label / "pageblocks.json").write_text('[{"node": 0}]')
    with pytest.raises(ScenarioError, match="pageblocks.json"):
        _from_live_start(str(path), (), point, tmp_path / "live")


def _v2(fake: FakeBackend) -> None:
    del fake.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"]  # no v1 memory controller
    fake.files["/proc/self/cgroup"] = "0::/user.slice/run\n"
    fake.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io memory pids"
    fake.files["/sys/fs/cgroup/user.slice/run/cgroup.subtree_control"] = "memory"
    fake.dirs.add("/sys/fs/cgroup/user.slice/run")


def test_memory_high_is_written_to_a_v2_cgroup_and_refused_on_v1(tmp_path: Path, state_dir: Path) -> None:
    def usemem(argv: Sequence[str]) -> tuple[int, str, str, float]:
        return 0, json.dumps({"bytes": 1, "usecs": 1, "kb_s": 1000, "passes": 1, "words": 1, "free_usecs": 5}) + "\n", "", 0.05

    fake = FakeBackend(programs={"usemem": usemem})
    _v2(fake)
    sc = scenario(tmp_path, USEMEM, ["memory.high_mb=128"])
    result = run(fake, sc, tmp_path / "out", log=lambda s: None)[0].result
    cg = result["machine"]["cgroup"]
    assert ("write", f"{cg}/memory.high", str(128 << 20)) in fake.calls
    assert result["memcg"]["events"]["high"] == 0 and result["memcg"]["high_bytes"] == 128 << 20
    v1 = FakeBackend(programs={"usemem": usemem})
    with pytest.raises(LiveError, match="v1, which has no memory.high"):
        run(v1, scenario(tmp_path, USEMEM, ["memory.high_mb=128"]), tmp_path / "out1", log=lambda s: None)
    assert not any(c[0] == "mkdir" for c in v1.calls), "refused before any change"


def test_live_and_sim_runs_one_file_both_ways_and_compares(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import reclaimlab.live.cli

    fake = FakeBackend(programs={"dd": dd_program})
    monkeypatch.setattr(reclaimlab.live.cli, "backend", lambda: fake)
    path = tmp_path / "both.toml"
    path.write_text(SMALL_BOTH)
    out = tmp_path / "out"
    result = live_and_sim(path, out, "-j", "1")
    assert result.exit_code == 0, result.output
    for side, kind in (("sim", "sim"), ("live", "live")):
        assert sorted(p.name for p in (out / side).iterdir()) == ["workload.tasks=1", "workload.tasks=2"]
        assert read_rundir(out / side / "workload.tasks=2").kind == kind
    assert "Simulated over live" in result.output
    assert fake.files["/proc/sys/vm/nr_hugepages"] == "0"
    # Run again: the complete live side is kept (nothing is squeezed again), the complete
    # simulated points are skipped, and the two are compared once more.
    writes = sum(1 for c in fake.calls if c[0] == "write")
    again = live_and_sim(path, out)
    assert again.exit_code == 0 and "simulating only" in again.output and "Simulated over live" in again.output
    assert sum(1 for c in fake.calls if c[0] == "write") == writes
    # A live side of another scenario is refused before anything runs.
    path.write_text(SMALL_BOTH.replace("duration_s = 0.3", "duration_s = 0.4"))
    other = live_and_sim(path, out)
    assert other.exit_code == 2 and "already holds a run" in other.output
