"""End-to-end speed of `reclaimlab trace report`: the whole command, interpreter start-up
included, on a large real trace, with one decoding thread and with all CPUs.

    python -m reclaimlab.tracing.bench [--copies 20] [--runs 5] [--dir DIR]

builds the input from the bundled real 6.18 trace (tests/data/vmscan-6.18-memcg-hugetlb.
trace.zst, decompressed with the `zstd` command, then COPIES copies concatenated: their
timestamps go back at each copy's start, which the analysis takes as it comes), runs the
report once untimed (the file is then in the page cache), then RUNS times per setting, and
prints the median wall time and GB/s (10^9 bytes per second). Part of `make bench`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACE = Path(__file__).resolve().parents[3] / "tests" / "data" / "vmscan-6.18-memcg-hugetlb.trace.zst"


def build_input(directory: Path, copies: int) -> Path:
    zstd = shutil.which("zstd")
    if zstd is None:
        sys.exit("bench: needs the zstd command to decompress the bundled trace (Debian: apt-get install zstd)")
    one = subprocess.run([zstd, "-dc", str(TRACE)], check=True, capture_output=True).stdout
    big = directory / f"vmscan-6.18-x{copies}.trace"
    with big.open("wb") as f:
        for _ in range(copies):
            f.write(one)
    return big


def time_runs(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall and median user+sys seconds of `cmd` (stdout discarded)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        after = os.times()
        cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=20, help="copies of the bundled trace (default 20: 477 MB)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per setting (the median is printed)")
    ap.add_argument("--dir", type=Path, help="where to build the input (default: a temporary directory, removed)")
    args = ap.parse_args()
    exe = shutil.which("reclaimlab") or sys.exit("bench: reclaimlab is not on PATH (make develop)")
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        big = build_input(Path(d), args.copies)
        size = big.stat().st_size
        print(f"trace report, whole command: {big.name} {size / 1e6:.0f} MB, {cores} CPUs, median of {args.runs}")
        subprocess.run([exe, "trace", "report", str(big)], check=True, stdout=subprocess.DEVNULL)
        wall, cpu = time_runs([exe, "--version"], args.runs)
        print(f"  start-up (reclaimlab --version)  {wall:6.3f} s wall  {cpu:6.3f} s cpu")
        for jobs in sorted({1, cores}):
            wall, cpu = time_runs([exe, "trace", "report", "-j", str(jobs), str(big)], args.runs)
            print(f"  -j {jobs:<2}                            {wall:6.3f} s wall  {cpu:6.3f} s cpu  {size / wall / 1e9:5.2f} GB/s")


if __name__ == "__main__":
    main()
