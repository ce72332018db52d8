"""Seed 001 (no filesystem writeback from direct reclaim, 3.2): its XFS rows beside
simulated runs of scenarios/seed001/, baseline (3.1) and patched (the series).

The points: fs_mark and simple-writeback on the 4-disk RAID-0 at 512, 1024 and 4608 MB, each
in the seed's thread configurations (`Config`: 1P, plain, 4X, 16X), and on the USB stick at
1024 MB, each baseline and patched; `--scale` multiplies the memory and, as the seed scales
them with it, fs_mark's files per loop (about 3 × RAM of 10 MiB files, shared among the
threads), simple-writeback's file per job (4 × MemTotal over NUMCPUS jobs) and mmap-strm's
file per task (mmtests' vmscan-file-mmap-write: 10 × MemTotal over NUM_CPU tasks). mmap-strm's
runs end when their tasks do, within `MMAP_STRM_LIMIT_S` (or `--duration`, if longer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from reclaimlab import _core
from reclaimlab.compare import _efficiency
from reclaimlab.rundir import RunDir
from reclaimlab.seeds import seed000
from reclaimlab.seeds.seed000 import Target

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "seed001"

# The default simulated seconds a run: short enough for a first look on a laptop (the
# 4608 MB RAID points cost the most); the scenario files' own 600 s with --duration 600.
DEFAULT_DURATION_S = 60.0

# simple-writeback's run length by default: the whole test (its seven rounds) ends by itself
# well within it at the seed's sizes; `--duration` sets another.
SIMPLE_WB_LIMIT_S = 7200.0

# The seed's fs_mark at 512 MB: 150 files a loop (-n 150), "about 3xRAM".
FSMARK_FILES_AT_512 = 150

# The seed's machine: "4-core AMD" (NUM_CPU), the scenario files' `cpus_per_node`.
NUM_CPU = 4


@dataclass(frozen=True)
class Config:
    """One of the seed's configurations: the device, the memory in MB at scale 1, and the
    thread notation of its row names, which the seed's author explained in the posting's
    thread: "1P == 1 Processor, 512M == 512M RAM (mem=512M), 2X == 2 x NUM_CPU fsmark
    threads". `"1P"`: one CPU and one fs_mark thread; `""` (the plain rows): four CPUs and
    NUM_CPU fs_mark threads (1X by the same notation; the seed does not spell the plain rows
    out, so this is a choice); `"4X"`, `"16X"`: four CPUs and 4 or 16 × NUM_CPU threads. The X
    multiplies fs_mark's threads only: simple-writeback and mmap-strm of an X configuration
    are the plain configuration's runs (the same tests on the same machine)."""

    device: str
    mb: int  # at scale 1 (the seed's)
    tag: str = ""

    @property
    def cpus(self) -> int:
        return 1 if self.tag == "1P" else NUM_CPU

    @property
    def fsmark_threads(self) -> int:
        """fs_mark's threads (`-t 1` with `-d` given this many times, the seed's "For
        multiple threads, the -d switch is specified multiple times")."""
        return {"1P": 1, "": 1, "4X": 4, "16X": 16}[self.tag] * self.cpus

    @property
    def simple_wb_jobs(self) -> int:
        """mmtests simple-writeback's dd jobs: NUMCPUS × 1."""
        return self.cpus

    @property
    def mmap_strm_tasks(self) -> int:
        """vmscan-file-mmap-write's usemem tasks: `MICRO_VMSCAN_FILE_MMAP_NUM_THREADS`,
        NUM_CPU."""
        return self.cpus

    def run_config(self, test: str) -> Config:
        """The configuration whose run a test of this one is: simple-writeback and mmap-strm
        of an X configuration are the plain one's."""
        if test in ("simple-wb", "mmap-strm") and self.tag in ("4X", "16X"):
            return Config(self.device, self.mb)
        return self


# The seed's configurations that scenarios/seed001 has, in its tables' order: the RAID-0 at
# each size with its 1P, plain, 4X and 16X rows, and the USB stick (plain only).
CONFIGS = [Config("raid", mb, tag) for mb in (512, 1024, 4608) for tag in ("1P", "", "4X", "16X")] + [Config("usb", 1024)]
TESTS = ("fsmark", "simple-wb", "mmap-strm")
# The most simulated seconds an mmap-strm run may take at scale 1 (the USB stick writes about
# 10 MB/s: 10 × 1024 MB take some 1 200 s); it ends when its tasks do.
MMAP_STRM_LIMIT_S = {"raid": 600.0, "usb": 3000.0}
KERNELS = ("baseline", "patched")

# The seed's numbers (its summary of XFS results), baseline then patched. Keys: the seed's
# row names. Files/s carries mmtests' percentage as printed ((patched − baseline) / patched).
# 1P, plain, 4X and 16X are its thread configurations (`Config`).
SEED: dict[str, dict[str, tuple[float, float]]] = {
    "512M1P": {"files_s": (32.69, 34.44), "files_pct": (0.0, 5.08), "elapsed_fsmark": (51.41, 48.29),
               "elapsed_simple-wb": (114.09, 108.61), "elapsed_mmap-strm": (113.46, 109.34),
               "kswapd_fsmark": (62, 63), "kswapd_simple-wb": (56, 61), "kswapd_mmap-strm": (44, 42)},
    "512M": {"files_s": (30.78, 35.94), "files_pct": (0.0, 14.36), "elapsed_fsmark": (56.08, 48.90),
             "elapsed_simple-wb": (112.22, 98.13), "elapsed_mmap-strm": (219.15, 196.67),
             "kswapd_fsmark": (54, 56), "kswapd_simple-wb": (54, 55), "kswapd_mmap-strm": (45, 44)},
    "512M-4X": {"files_s": (30.31, 33.33), "files_pct": (0.0, 9.06), "elapsed_fsmark": (63.26, 55.88),
                "elapsed_simple-wb": (100.90, 90.25), "elapsed_mmap-strm": (261.73, 255.38),
                "kswapd_fsmark": (49, 50), "kswapd_simple-wb": (54, 56), "kswapd_mmap-strm": (37, 36)},
    "512M-16X": {"files_s": (60.89, 65.22), "files_pct": (0.0, 6.64), "elapsed_fsmark": (67.47, 58.25),
                 "elapsed_simple-wb": (103.22, 90.89), "elapsed_mmap-strm": (237.09, 198.82),
                 "kswapd_fsmark": (45, 46), "kswapd_simple-wb": (53, 55), "kswapd_mmap-strm": (33, 33)},
    "1024M1P": {"files_s": (39.09, 41.15), "files_pct": (0.0, 5.01), "elapsed_fsmark": (84.14, 80.41),
                "elapsed_simple-wb": (210.77, 184.78), "elapsed_mmap-strm": (162.00, 160.34),
                "kswapd_fsmark": (69, 75), "kswapd_simple-wb": (71, 77), "kswapd_mmap-strm": (43, 44)},
    "1024M": {"files_s": (35.45, 37.00), "files_pct": (0.0, 4.19), "elapsed_fsmark": (94.59, 91.00),
              "elapsed_simple-wb": (229.84, 195.08), "elapsed_mmap-strm": (405.38, 440.29),
              "kswapd_fsmark": (79, 71), "kswapd_simple-wb": (74, 74), "kswapd_mmap-strm": (39, 42)},
    "1024M-4X": {"files_s": (32.63, 35.05), "files_pct": (0.0, 6.90), "elapsed_fsmark": (103.33, 97.74),
                 "elapsed_simple-wb": (204.48, 178.57), "elapsed_mmap-strm": (528.38, 511.88),
                 "kswapd_fsmark": (81, 70), "kswapd_simple-wb": (73, 72), "kswapd_mmap-strm": (39, 38)},
    "1024M-16X": {"files_s": (42.65, 42.97), "files_pct": (0.0, 0.74), "elapsed_fsmark": (103.11, 99.11),
                  "elapsed_simple-wb": (200.83, 178.24), "elapsed_mmap-strm": (397.35, 459.82),
                  "kswapd_fsmark": (84, 69), "kswapd_simple-wb": (74, 73), "kswapd_mmap-strm": (39, 40)},
    "4608M1P": {"files_s": (29.75, 30.96), "files_pct": (0.0, 3.91), "elapsed_fsmark": (512.01, 492.15),
                "elapsed_simple-wb": (618.18, 566.24), "elapsed_mmap-strm": (488.05, 465.07),
                "kswapd_fsmark": (93, 86), "kswapd_simple-wb": (88, 84), "kswapd_mmap-strm": (46, 45)},
    "4608M": {"files_s": (27.60, 28.85), "files_pct": (0.0, 4.33), "elapsed_fsmark": (555.96, 532.34),
              "elapsed_simple-wb": (659.72, 571.85), "elapsed_mmap-strm": (1082.57, 1146.38),
              "kswapd_fsmark": (89, 91), "kswapd_simple-wb": (88, 82), "kswapd_mmap-strm": (48, 46)},
    "4608M-4X": {"files_s": (26.00, 27.47), "files_pct": (0.0, 5.35), "elapsed_fsmark": (592.91, 564.00),
                 "elapsed_simple-wb": (616.65, 575.07), "elapsed_mmap-strm": (1773.02, 1631.53),
                 "kswapd_fsmark": (90, 94), "kswapd_simple-wb": (87, 82), "kswapd_mmap-strm": (43, 43)},
    "4608M-16X": {"files_s": (26.07, 26.42), "files_pct": (0.0, 1.32), "elapsed_fsmark": (602.69, 585.78),
                  "elapsed_simple-wb": (606.60, 573.81), "elapsed_mmap-strm": (1549.75, 1441.86),
                  "kswapd_fsmark": (98, 98), "kswapd_simple-wb": (88, 82), "kswapd_mmap-strm": (44, 42)},
    "USB-1024M": {"files_s": (0.41, 0.44), "files_pct": (0.0, 6.82), "elapsed_fsmark": (2053.52, 1641.03),
                  "elapsed_simple-wb": (1229.53, 768.05), "elapsed_mmap-strm": (4126.44, 4597.03),
                  "kswapd_fsmark": (84, 85), "kswapd_simple-wb": (92, 81), "kswapd_mmap-strm": (60, 51),
                  "await_fsmark": (5404.53, 4473.87), "await_simple-wb": (2541.35, 1453.54),
                  "await_mmap-strm": (3400.25, 3852.53)},
}


def seed_row(c: Config) -> str:
    """The seed's row name of a configuration (at the seed's memory)."""
    if c.device == "usb":
        return f"USB-{c.mb}M"
    return f"{c.mb}M{c.tag}" if c.tag in ("", "1P") else f"{c.mb}M-{c.tag}"


def memory_mb(mb: int, scale: float) -> int:
    """The seed's `mb` scaled, in whole 4 MB (at least the simulator's 64 MB)."""
    return max(64, int(mb * scale) // 4 * 4)


def fsmark_files(m: int, threads: int) -> int:
    """fs_mark's files per thread a loop (`-n`) at `m` MB over `threads`: the seed's 150 at
    512 MB scaled with the memory ("about 3xRAM" of 10 MiB files) and shared among the
    threads, so that the total stays about 3 × RAM (at least one file a thread)."""
    return max(1, round(FSMARK_FILES_AT_512 * m / 512 / threads))


def overrides(test: str, c: Config, scale: float, duration: float | None) -> list[str]:
    """`--set`s for one point: the memory (the file's [sweep] replaced by this one value), the
    CPUs, fs_mark's threads and files per thread, simple-writeback's jobs and file per job
    (4 × MemTotal over the jobs) or mmap-strm's tasks and file per task (10 × MemTotal over
    them) scaled with the memory, and the run length (mmap-strm's: its limit, or `duration`
    if longer)."""
    m = memory_mb(c.mb, scale)
    out = [_core.sweep_override(f"machine.memory_mb_per_node={m}"), f"machine.cpus_per_node={c.cpus}"]
    length = DEFAULT_DURATION_S if duration is None else duration
    if test == "fsmark":
        out.append(f"workload.threads={c.fsmark_threads}")
        out.append(f"workload.files={fsmark_files(m, c.fsmark_threads)}")
    elif test == "mmap-strm":
        out.append(f"workload.tasks={c.mmap_strm_tasks}")
        out.append(f"workload.size_mb={10 * m // c.mmap_strm_tasks}")
        length = max(length, MMAP_STRM_LIMIT_S[c.device] * max(1.0, scale))
    else:
        out.append(f"workload.tasks={c.simple_wb_jobs}")
        out.append(f"workload.file_mb={4 * m // c.simple_wb_jobs}")
        # The whole simple-writeback test ends by itself; the limit only stops one that
        # would not.
        length = SIMPLE_WB_LIMIT_S if duration is None else duration
    out.append(f"run.duration_s={length}")
    return out


@dataclass(frozen=True)
class Key:
    """A run: its configuration (`Config.run_config` of the test), test and kernel."""

    config: Config
    test: str
    kernel: str

    @property
    def scenario(self) -> Path:
        return SCENARIO_DIR / f"{self.test}-{self.config.device}-{self.kernel}.toml"

    @property
    def label(self) -> str:
        return f"{config_name(self.config)}/{self.test}-{self.kernel}"

    @property
    def sim(self) -> tuple[str, str, str]:
        """Its key in `Sim`."""
        return (config_name(self.config), self.test, self.kernel)


def config_name(c: Config) -> str:
    """`raid-512-1p`, `raid-512`, `raid-512-4x`, `usb-1024`: a configuration as `--configs`
    names it."""
    return f"{c.device}-{c.mb}" + (f"-{c.tag.lower()}" if c.tag else "")


def keys(configs: list[str] | None = None) -> list[Key]:
    """The runs of the configurations named (`config_name`; None: all), in CONFIGS order,
    each once (an X configuration's simple-writeback is the plain one's run)."""
    out: list[Key] = []
    for c in CONFIGS:
        if configs is not None and config_name(c) not in configs:
            continue
        for t in TESTS:
            for k in KERNELS:
                key = Key(c.run_config(t), t, k)
                if key not in out:
                    out.append(key)
    return out


Row = dict[str, float | None]


def _avg_wait_ms(run: RunDir) -> float | None:
    """iostat's `w_await` averaged over the samples with writes (the seed's "Avg wait ms" is
    iostat's `await` of the device)."""
    waits = [s["w_await_ms"] for s in run.iostat if s.get("wkB_s", 0) > 0]
    return sum(waits) / len(waits) if waits else None


def columns_of(run: RunDir, test: str) -> Row:
    """A simulated point's numbers: fs_mark's Files/s (its mean over the loops done; with
    none done, the files the window made over its length, flagged `files_partial`), the
    elapsed time (fs_mark's 25 loops when finished; simple-writeback's whole test, its
    rounds of CPU factors 1 to 64, when finished; mmap-strm's last task's, once every task
    has finished), kswapd efficiency (pgsteal_kswapd·100 / pgscan_kswapd; simple-writeback's
    in integer division, as mmtests-vmstat), Avg wait,
    `nr_vmscan_write` and direct reclaim's `->writepage` calls (model-internal)."""
    m = run.result.get("metrics", {})
    row: Row = {
        "kswapd": _efficiency("kswapd")(run),
        "await": _avg_wait_ms(run),
        "nr_vmscan_write": float(run.delta.get("nr_vmscan_write", 0)),
        "direct_writepage": float(run.result.get("model", {}).get("vmscan_write_file_direct", 0)),
        "pgscan_direct": float(run.delta.get("pgscan_direct", 0)),
    }
    if test == "mmap-strm":
        done = m.get("task_elapsed_s") or []
        row["elapsed"] = m.get("elapsed_s") if len(done) == m.get("tasks") else None
    elif test == "fsmark":
        loops = m.get("loops_done") or 0
        row["files_partial"] = 0.0 if loops else 1.0
        if loops:
            row["files_s"] = m.get("files_per_sec_mean")
        else:
            row["files_s"] = m.get("files", 0) / run.elapsed_s if run.elapsed_s else None
        row["elapsed"] = m.get("elapsed_s") if m.get("completed") else None
    else:
        # The whole test (every round, each followed by the shellpack's `sleep 1`), as
        # mmtests' Total Elapsed Time; None if the run stopped it first. Kswapd efficiency
        # as mmtests-vmstat computes it over the test: KSWAPD_STEAL*100/KSWAPD_SCAN, integer
        # division, 100 when kswapd scanned nothing (the run's window is the whole test).
        row["elapsed"] = m.get("elapsed_s") if m.get("completed") else None
        scanned = run.delta.get("pgscan_kswapd", 0)
        row["kswapd"] = float(run.delta.get("pgsteal_kswapd", 0) * 100 // scanned) if scanned else 100.0
        row["throughput_kB_s"] = m.get("throughput_kB_s")
    return row


# Simulated rows: (run configuration's name, test, kernel) → Row (`Key.sim`).
Sim = dict[tuple[str, str, str], Row]


def mmtests_pct(base: float | None, patched: float | None) -> float | None:
    """mmtests' percentage as the seed prints it beside Files/s: (patched − base) / patched."""
    if base is None or patched is None or not patched:
        return None
    return (patched - base) * 100.0 / patched


def _f(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"


def _change(a: float | None, b: float | None) -> str:
    return f"{(b - a) * 100 / a:+.1f}%" if a and b is not None else "—"


def _get(sim: Sim, c: Config, test: str, kernel: str, key: str) -> float | None:
    """A number of configuration `c`'s run of `test` (`Config.run_config`)."""
    return sim.get((config_name(c.run_config(test)), test, kernel), {}).get(key)


def table(sim: Sim, c: Config, scale: float, duration: float) -> Table:
    """One configuration: the seed's rows (baseline, patched) beside the simulated ones."""
    device = c.device
    name = seed_row(c)
    seed = SEED[name]
    m = memory_mb(c.mb, scale)
    where = "USB stick" if device == "usb" else "4-disk RAID-0"
    cpus = "1 CPU" if c.cpus == 1 else f"{c.cpus} CPUs"
    shared = f" ({config_name(c.run_config('simple-wb'))}'s runs of it and mmap-strm)" if c.run_config("simple-wb") != c else ""
    t = Table(title=f"Seed 001, {where}, {m} MB, {cpus}, fs_mark {c.fsmark_threads} thread{'s' if c.fsmark_threads > 1 else ''} × "
                    f"{fsmark_files(m, c.fsmark_threads)} files, simple-wb {c.simple_wb_jobs} dd job{'s' if c.simple_wb_jobs > 1 else ''}{shared} "
                    f"(seed's {name}-xfs), {duration:g} s runs", title_justify="left")  # fmt: skip
    for h in ("", "seed base", "seed patched", "seed change", "sim base", "sim patched", "sim change"):
        t.add_column(h, justify="left" if not h else "right")

    def get(test: str, kernel: str, key: str) -> float | None:
        return _get(sim, c, test, kernel, key)

    b, p = get("fsmark", "baseline", "files_s"), get("fsmark", "patched", "files_s")
    partial = " *" if get("fsmark", "baseline", "files_partial") or get("fsmark", "patched", "files_partial") else ""
    sp = mmtests_pct(b, p)
    t.add_row(f"Files/s mean{partial}", f"{seed['files_s'][0]:.2f} ( 0.00%)", f"{seed['files_s'][1]:.2f} ({seed['files_pct'][1]:5.2f}%)", "",
              f"{_f(b)} ( 0.00%)" if b is not None else "—", f"{_f(p)} ({sp:5.2f}%)" if sp is not None else _f(p), "")  # fmt: skip
    labels = {"fsmark": "Elapsed Time fsmark (s)", "simple-wb": "Elapsed Time simple-wb (s)",
              "mmap-strm": "Elapsed Time mmap-strm (s)"}  # fmt: skip
    for test in TESTS:
        sb, spat = seed[f"elapsed_{test}"]
        b, p = get(test, "baseline", "elapsed"), get(test, "patched", "elapsed")
        t.add_row(labels[test], f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), _f(b), _f(p), _change(b, p))
    for test in TESTS:
        sb, spat = seed[f"kswapd_{test}"]
        t.add_row(f"Kswapd efficiency {test}", f"{sb}%", f"{spat}%", "",
                  _pct(get(test, "baseline", "kswapd")), _pct(get(test, "patched", "kswapd")), "")  # fmt: skip
    if device == "usb":
        for test in TESTS:
            sb, spat = seed[f"await_{test}"]
            b, p = get(test, "baseline", "await"), get(test, "patched", "await")
            t.add_row(f"Avg wait ms {test}", f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), _f(b), _f(p), _change(b, p))
    for test in TESTS:
        t.add_row(f"nr_vmscan_write {test}", "", "", "",
                  _f(get(test, "baseline", "nr_vmscan_write"), 0), _f(get(test, "patched", "nr_vmscan_write"), 0), "")  # fmt: skip
        t.add_row(f"direct reclaim ->writepage {test} †", "", "", "",
                  _f(get(test, "baseline", "direct_writepage"), 0), _f(get(test, "patched", "direct_writepage"), 0), "")  # fmt: skip
    return t


NOTES = (
    "* Files/s: no fs_mark loop finished in the run; the files made over the run's seconds.\n"
    "† Not a kernel counter: page-cache folios direct reclaim handed to ->writepage (result.json's\n"
    "  model.vmscan_write_file_direct); a kernel's comes from a trace (`reclaimlab trace report`,\n"
    "  'Direct reclaim write file' rows; simulated runs: --set run.trace=true).\n"
    "Seed's rows: its XFS summary. 1P = 1 CPU and 1 fs_mark thread; plain = 4 CPUs and 4 threads\n"
    "(NUM_CPU, a choice: 1X); 4X, 16X = 16, 64 threads on 4 CPUs (the seed's author: \"2X == 2 x\n"
    "NUM_CPU fsmark threads\"); an X configuration's simple-wb and mmap-strm are the plain one's\n"
    "runs. mmap-strm: NUM_CPU usemem tasks writing 10 × RAM of sparse MAP_SHARED files. fs_mark's\n"
    "files are shared among its threads, about 3 × RAM a loop. mmtests' percentage beside\n"
    "Files/s is (patched − baseline) / patched."
)


def check_targets(sim: Sim, scale: float = 1.0) -> list[Target]:
    """Issue 34's targets on the points run: Files/s higher with the patch at every RAID-0
    512/1024 MB configuration (1P, plain, 4X, 16X) and on the USB stick; simple-wb elapsed
    shorter with the patch everywhere (each simple-wb run once: an X configuration's is the
    plain one's); USB Avg wait lower for fs_mark and simple-wb; direct reclaim's
    `->writepage` calls zero with the patch. A point without its number is not met. Each is
    named by the seed's configuration and the memory simulated (`scale`)."""
    out: list[Target] = []
    names = {config_name(c): c for c in CONFIGS}

    def at(c: Config) -> str:
        return f"{config_name(c)} ({memory_mb(c.mb, scale)} MB)"

    def pair(c: Config, test: str, key: str) -> tuple[float | None, float | None]:
        return (_get(sim, c, test, "baseline", key), _get(sim, c, test, "patched", key))

    ran = {(name, test) for name, test, _ in sim}
    for c in CONFIGS:
        if (config_name(c), "fsmark") not in ran or (c.device == "raid" and c.mb == 4608):
            continue  # the seed's 4608 MB fs_mark results "are not statistically significant"
        b, p = pair(c, "fsmark", "files_s")
        out.append(Target(f"Files/s higher with the patch, {at(c)}", b is not None and p is not None and p > b,
                          f"{_f(b)} → {_f(p)} ({_change(b, p)})"))  # fmt: skip
    for c in CONFIGS:
        if (config_name(c), "simple-wb") not in ran:
            continue
        b, p = pair(c, "simple-wb", "elapsed")
        out.append(Target(f"simple-wb elapsed shorter with the patch, {at(c)}", b is not None and p is not None and p < b,
                          f"{_f(b)} → {_f(p)} s ({_change(b, p)})"))  # fmt: skip
    for c in CONFIGS:
        if c.device != "usb":
            continue
        for test in ("fsmark", "simple-wb"):
            if (config_name(c), test) not in ran:
                continue
            b, p = pair(c, test, "await")
            out.append(Target(f"Avg wait lower with the patch, {at(c)}, {test}", b is not None and p is not None and p < b,
                              f"{_f(b)} → {_f(p)} ms ({_change(b, p)})"))  # fmt: skip
    patched = [(k, r.get("direct_writepage")) for k, r in sim.items() if k[2] == "patched" and k[0] in names]
    calls = sum(v or 0 for _, v in patched)
    out.append(Target("direct reclaim ->writepage zero with the patch (model count †)", bool(patched) and calls == 0,
                      f"{calls:.0f} calls over {len(patched)} patched runs"))  # fmt: skip
    return out


def targets_table(targets: list[Target]) -> Table:
    return seed000.targets_table(targets, f"Targets: {sum(x.ok for x in targets)} of {len(targets)} met")


# Run-to-run variation (`reclaimlab reproduce seed001 --seeds N`): each point run with seeds
# 1..N (`seed = s` in its scenario; the devices draw only with a jitter, e.g. --set
# machine.devices.0.latency_jitter=0.05), the tables printing the mean of the N runs and a
# table of each target's change per seed.


def mean_sim(sims: list[Sim]) -> Sim:
    """Each number's mean over the seeds' runs of a point; None where a run lacks it (a
    mean over fewer runs than asked would hide a run that did not finish)."""
    out: Sim = {}
    for key in sims[0]:
        rows = [s[key] for s in sims if key in s]
        names = {name for row in rows for name in row}
        mean: Row = {}
        for name in names:
            vals = [row.get(name) for row in rows]
            mean[name] = None if len(rows) < len(sims) or any(v is None for v in vals) else sum(vals) / len(vals)  # type: ignore[arg-type]
        out[key] = mean
    return out


def mean_sd(xs: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (n − 1; 0 for one value)."""
    n = len(xs)
    mean = sum(xs) / n
    sd = (sum((x - mean) ** 2 for x in xs) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return mean, sd


@dataclass(frozen=True)
class Spread:
    """One quantity's change with the patch at one configuration, per seed: `changes` in per
    cent of the baseline (`unit` "%") or in percentage points (kswapd efficiency, "pt"),
    None for a seed whose run lacks the number. `want` is the target's direction (-1 lower,
    +1 higher, 0 for a row that is not a target)."""

    name: str
    changes: list[float | None]
    unit: str
    want: int

    @property
    def complete(self) -> list[float]:
        return [x for x in self.changes if x is not None]

    @property
    def met(self) -> int:
        """Seeds whose change is in the target's direction (strictly)."""
        return sum(1 for x in self.changes if x is not None and x * self.want > 0)

    @property
    def verdict(self) -> str:
        """`met in k of N` for a target; for another row whether one sign holds in all N."""
        n = len(self.changes)
        if self.want:
            return f"met in {self.met} of {n}"
        xs = self.complete
        if len(xs) < n:
            return f"{n - len(xs)} of {n} runs lack it"
        if all(x > 0 for x in xs):
            return f"+ in all {n}"
        if all(x < 0 for x in xs):
            return f"− in all {n}"
        return "sign varies"


def spreads(sims: list[Sim], scale: float = 1.0) -> list[Spread]:
    """The targets of `check_targets` (but the model-count one) and mmap-strm's Elapsed Time
    and Kswapd efficiency rows, each with its change per seed (`sims`: one `Sim` a seed)."""

    def change(sim: Sim, c: Config, test: str, key: str, points: bool) -> float | None:
        b, p = _get(sim, c, test, "baseline", key), _get(sim, c, test, "patched", key)
        if b is None or p is None:
            return None
        if points:
            return p - b
        return (p - b) * 100.0 / b if b else None

    def at(c: Config) -> str:
        return f"{config_name(c)} ({memory_mb(c.mb, scale)} MB)"

    ran = {(name, test) for sim in sims for name, test, _ in sim}
    out: list[Spread] = []

    def add(name: str, c: Config, test: str, key: str, want: int, points: bool = False) -> None:
        out.append(Spread(name, [change(s, c, test, key, points) for s in sims], "pt" if points else "%", want))

    for c in CONFIGS:
        if (config_name(c), "fsmark") in ran and not (c.device == "raid" and c.mb == 4608):
            add(f"Files/s higher with the patch, {at(c)}", c, "fsmark", "files_s", +1)
    for c in CONFIGS:
        if (config_name(c), "simple-wb") in ran:
            add(f"simple-wb elapsed shorter with the patch, {at(c)}", c, "simple-wb", "elapsed", -1)
    for c in CONFIGS:
        if c.device == "usb":
            for test in ("fsmark", "simple-wb"):
                if (config_name(c), test) in ran:
                    add(f"Avg wait lower with the patch, {at(c)}, {test}", c, test, "await", -1)
    for c in CONFIGS:
        if (config_name(c), "mmap-strm") in ran:
            add(f"mmap-strm Elapsed Time, {at(c)}", c, "mmap-strm", "elapsed", 0)
            add(f"mmap-strm Kswapd efficiency, {at(c)}", c, "mmap-strm", "kswapd", 0, points=True)
    return out


def spread_table(rows: list[Spread], title: str) -> Table:
    """Each quantity's change per seed, their mean ± sd, and the verdict over the seeds."""
    t = Table(title=title, title_justify="left")
    for h in ("quantity", "change per seed", "mean ± sd", "over the seeds"):
        t.add_column(h, justify="left" if h in ("quantity", "change per seed", "over the seeds") else "right")
    for r in rows:
        per = ", ".join("—" if x is None else f"{x:+.1f}" for x in r.changes)
        xs = r.complete
        if xs:
            mean, sd = mean_sd(xs)
            stat = f"{mean:+.2f} ± {sd:.2f} {r.unit}"
        else:
            stat = "—"
        t.add_row(r.name, f"{per} {r.unit}", stat, r.verdict)
    return t
