"""Seed 001 (no filesystem writeback from direct reclaim, 3.2): its XFS rows beside
simulated runs of scenarios/seed001/, baseline (3.1) and patched (the series).

The points: fs_mark and simple-writeback on the 4-disk RAID-0 at 512, 1024 and 4608 MB, and
on the USB stick at 1024 MB, each baseline and patched; `--scale` multiplies the memory and,
as the seed scales them with it, fs_mark's files per loop (about 3 × RAM of 10 MiB files)
and simple-writeback's file per job (4 × MemTotal over 4 jobs). mmap-strm is not simulated.
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

# (device, memory in MB at scale 1): the seed's configurations that scenarios/seed001 has.
CONFIGS = [("raid", 512), ("raid", 1024), ("raid", 4608), ("usb", 1024)]
TESTS = ("fsmark", "simple-wb")
KERNELS = ("baseline", "patched")

# The seed's numbers (its summary of XFS results), baseline then patched. Keys: the seed's
# row names. Files/s carries mmtests' percentage as printed ((patched − baseline) / patched).
# 1P, plain, 4X and 16X are its fs_mark thread configurations, which the seed does not
# spell out; the simulated fs_mark runs `-t 1` and is set beside the 1P rows.
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


def seed_row(device: str, mb: int) -> str:
    """The seed's row name beside a simulated configuration (at the seed's memory)."""
    return f"USB-{mb}M" if device == "usb" else f"{mb}M1P"


def memory_mb(mb: int, scale: float) -> int:
    """The seed's `mb` scaled, in whole 4 MB (at least the simulator's 64 MB)."""
    return max(64, int(mb * scale) // 4 * 4)


def overrides(test: str, mb: int, scale: float, duration: float | None) -> list[str]:
    """`--set`s for one point: the memory (the file's [sweep] replaced by this one value),
    fs_mark's files per loop or simple-writeback's file per job scaled with it, and the run
    length."""
    m = memory_mb(mb, scale)
    out = [_core.sweep_override(f"machine.memory_mb_per_node={m}")]
    if test == "fsmark":
        out.append(f"workload.files={max(1, round(FSMARK_FILES_AT_512 * m / 512))}")
        length = DEFAULT_DURATION_S if duration is None else duration
    else:
        out.append(f"workload.file_mb={m}")
        # The whole simple-writeback test ends by itself; the limit only stops one that
        # would not.
        length = SIMPLE_WB_LIMIT_S if duration is None else duration
    out.append(f"run.duration_s={length}")
    return out


@dataclass(frozen=True)
class Key:
    device: str
    mb: int  # at scale 1 (the seed's)
    test: str
    kernel: str

    @property
    def scenario(self) -> Path:
        return SCENARIO_DIR / f"{self.test}-{self.device}-{self.kernel}.toml"

    @property
    def label(self) -> str:
        return f"{config_name(self.device, self.mb)}/{self.test}-{self.kernel}"


def config_name(device: str, mb: int) -> str:
    """`raid-512`: a configuration as `--configs` names it."""
    return f"{device}-{mb}"


def keys(configs: list[str] | None = None) -> list[Key]:
    """The points of the configurations named (`config_name`; None: all), in CONFIGS order."""
    return [Key(d, mb, t, k) for d, mb in CONFIGS if configs is None or config_name(d, mb) in configs
            for t in TESTS for k in KERNELS]  # fmt: skip


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
    rounds of CPU factors 1 to 64, when finished), kswapd efficiency (pgsteal_kswapd·100 /
    pgscan_kswapd; simple-writeback's in integer division, as mmtests-vmstat), Avg wait,
    `nr_vmscan_write` and direct reclaim's `->writepage` calls (model-internal)."""
    m = run.result.get("metrics", {})
    row: Row = {
        "kswapd": _efficiency("kswapd")(run),
        "await": _avg_wait_ms(run),
        "nr_vmscan_write": float(run.delta.get("nr_vmscan_write", 0)),
        "direct_writepage": float(run.result.get("model", {}).get("vmscan_write_file_direct", 0)),
        "pgscan_direct": float(run.delta.get("pgscan_direct", 0)),
    }
    if test == "fsmark":
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


# Simulated rows: (device, mb, test, kernel) → Row.
Sim = dict[tuple[str, int, str, str], Row]


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


def table(sim: Sim, device: str, mb: int, scale: float, duration: float) -> Table:
    """One configuration: the seed's rows (baseline, patched) beside the simulated ones."""
    name = seed_row(device, mb)
    seed = SEED[name]
    m = memory_mb(mb, scale)
    where = "USB stick" if device == "usb" else "4-disk RAID-0"
    t = Table(title=f"Seed 001, {where}, {m} MB (seed's {name}-xfs), {duration:g} s runs", title_justify="left")
    for h in ("", "seed base", "seed patched", "seed change", "sim base", "sim patched", "sim change"):
        t.add_column(h, justify="left" if not h else "right")

    def get(test: str, kernel: str, key: str) -> float | None:
        return sim.get((device, mb, test, kernel), {}).get(key)

    b, p = get("fsmark", "baseline", "files_s"), get("fsmark", "patched", "files_s")
    partial = " *" if get("fsmark", "baseline", "files_partial") or get("fsmark", "patched", "files_partial") else ""
    sp = mmtests_pct(b, p)
    t.add_row(f"Files/s mean{partial}", f"{seed['files_s'][0]:.2f} ( 0.00%)", f"{seed['files_s'][1]:.2f} ({seed['files_pct'][1]:5.2f}%)", "",
              f"{_f(b)} ( 0.00%)" if b is not None else "—", f"{_f(p)} ({sp:5.2f}%)" if sp is not None else _f(p), "")  # fmt: skip
    for test in ("fsmark", "simple-wb"):
        sb, spat = seed[f"elapsed_{test}"]
        b, p = get(test, "baseline", "elapsed"), get(test, "patched", "elapsed")
        label = "Elapsed Time fsmark (s)" if test == "fsmark" else "Elapsed Time simple-wb (s)"
        t.add_row(label, f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), _f(b), _f(p), _change(b, p))
    sb, spat = seed["elapsed_mmap-strm"]
    t.add_row("Elapsed Time mmap-strm (s)", f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), "not simulated", "not simulated", "")
    for test in ("fsmark", "simple-wb", "mmap-strm"):
        sb, spat = seed[f"kswapd_{test}"]
        if test == "mmap-strm":
            t.add_row(f"Kswapd efficiency {test}", f"{sb}%", f"{spat}%", "", "not simulated", "not simulated", "")
            continue
        t.add_row(f"Kswapd efficiency {test}", f"{sb}%", f"{spat}%", "",
                  _pct(get(test, "baseline", "kswapd")), _pct(get(test, "patched", "kswapd")), "")  # fmt: skip
    if device == "usb":
        for test in ("fsmark", "simple-wb", "mmap-strm"):
            sb, spat = seed[f"await_{test}"]
            if test == "mmap-strm":
                t.add_row(f"Avg wait ms {test}", f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), "not simulated", "not simulated", "")
                continue
            b, p = get(test, "baseline", "await"), get(test, "patched", "await")
            t.add_row(f"Avg wait ms {test}", f"{sb:.2f}", f"{spat:.2f}", _change(sb, spat), _f(b), _f(p), _change(b, p))
    for test in ("fsmark", "simple-wb"):
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
    "Seed's rows: its XFS summary; the 1P rows (the one thread count known, fs_mark -t 1) beside\n"
    "the RAID-0 runs. mmtests' percentage beside Files/s is (patched − baseline) / patched."
)


def check_targets(sim: Sim, scale: float = 1.0) -> list[Target]:
    """Issue 34's targets on the points run: Files/s higher with the patch at every RAID-0
    512/1024 MB configuration and on the USB stick; simple-wb elapsed shorter with the patch
    everywhere; USB Avg wait lower for fs_mark and simple-wb; direct reclaim's `->writepage`
    calls zero with the patch. A point without its number is not met. Each is named by the
    seed's configuration and the memory simulated (`scale`)."""
    out: list[Target] = []

    def at(d: str, mb: int) -> str:
        return f"{config_name(d, mb)} ({memory_mb(mb, scale)} MB)"

    def pair(device: str, mb: int, test: str, key: str) -> tuple[float | None, float | None]:
        return (sim.get((device, mb, test, "baseline"), {}).get(key), sim.get((device, mb, test, "patched"), {}).get(key))

    present = sorted({(d, mb) for d, mb, _, _ in sim}, key=lambda c: CONFIGS.index(c))
    for d, mb in present:
        if d == "raid" and mb == 4608:
            continue  # the seed's 4608 MB fs_mark results "are not statistically significant"
        b, p = pair(d, mb, "fsmark", "files_s")
        out.append(Target(f"Files/s higher with the patch, {at(d, mb)}", b is not None and p is not None and p > b,
                          f"{_f(b)} → {_f(p)} ({_change(b, p)})"))  # fmt: skip
    for d, mb in present:
        b, p = pair(d, mb, "simple-wb", "elapsed")
        out.append(Target(f"simple-wb elapsed shorter with the patch, {at(d, mb)}", b is not None and p is not None and p < b,
                          f"{_f(b)} → {_f(p)} s ({_change(b, p)})"))  # fmt: skip
    for d, mb in present:
        if d != "usb":
            continue
        for test in ("fsmark", "simple-wb"):
            b, p = pair(d, mb, test, "await")
            out.append(Target(f"Avg wait lower with the patch, {at(d, mb)}, {test}", b is not None and p is not None and p < b,
                              f"{_f(b)} → {_f(p)} ms ({_change(b, p)})"))  # fmt: skip
    patched = [(k, r.get("direct_writepage")) for k, r in sim.items() if k[3] == "patched"]
    calls = sum(v or 0 for _, v in patched)
    out.append(Target("direct reclaim ->writepage zero with the patch (model count †)", bool(patched) and calls == 0,
                      f"{calls:.0f} calls over {len(patched)} patched runs"))  # fmt: skip
    return out


def targets_table(targets: list[Target]) -> Table:
    return seed000.targets_table(targets, f"Targets: {sum(x.ok for x in targets)} of {len(targets)} met")
