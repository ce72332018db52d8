"""`python -m reclaimlab.live.helpers NAME ...`: one workload task as its own process.

Each helper runs a Rust function of the extension (`reclaimlab._core.live`) that owns the
process for the task's whole life and prints its result on stdout. Being a separate process
lets the run put it in a memory cgroup, time it with wait4(2) and kill it.
"""

from __future__ import annotations

import argparse
import sys

MiB = 1 << 20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reclaimlab.live.helpers")
    sub = p.add_subparsers(dest="name", required=True)
    u = sub.add_parser("usemem", help="vm-scalability usemem, one task")
    u.add_argument("--size-mb", type=int, required=True)
    u.add_argument("--random", action="store_true")
    u.add_argument("--repeats", type=int, default=1)
    u.add_argument("--runtime-s", type=float, default=0.0)
    u.add_argument("--start-at-ns", type=int, default=0, help="CLOCK_MONOTONIC time to begin at (0: at once)")
    pr = sub.add_parser("mmap-latency", help="stutter's mmap latency probe")
    pr.add_argument("--duration-s", type=float, required=True)
    pr.add_argument("--pages", type=int, default=32768)
    m = sub.add_parser("memhog", help="stutter's memhog")
    m.add_argument("--size-mb", type=int, required=True)
    m.add_argument("--hold-s", type=float, default=3600.0)
    f = sub.add_parser("mapped-file-stream", help="mmtests micro/mapped-file-stream, one task")
    f.add_argument("--path", required=True)
    f.add_argument("--size-mb", type=int, required=True)
    f.add_argument("--write", action="store_true", help="store a word a page (vmscan-file-mmap-write)")
    fm = sub.add_parser("fs_mark", help="fs_mark's loop, one thread (-S0)")
    fm.add_argument("--dir", required=True)
    fm.add_argument("--dirs", type=int, required=True)
    fm.add_argument("--files-per-dir", type=int, required=True)
    fm.add_argument("--files", type=int, required=True)
    fm.add_argument("--loops", type=int, required=True)
    fm.add_argument("--file-size", type=int, required=True)
    fm.add_argument("--block-bytes", type=int, required=True)
    a = p.parse_args(argv)

    if a.name == "fs_mark":  # pure Python: no extension needed
        from reclaimlab.live import fs_mark

        fs_mark.main_loop(a.dir, dirs=a.dirs, files_per_dir=a.files_per_dir, files=a.files, loops=a.loops,
                          file_size=a.file_size, block_bytes=a.block_bytes)  # fmt: skip
        return 0

    from reclaimlab import _core

    live = _core.live
    if a.name == "usemem":
        print(live.usemem(a.size_mb * MiB, a.random, a.repeats, a.runtime_s, a.start_at_ns), flush=True)
    elif a.name == "mmap-latency":
        live.mmap_latency_probe(a.duration_s, a.pages)
    elif a.name == "memhog":
        live.memhog(a.size_mb * MiB, a.hold_s)
    elif a.name == "mapped-file-stream":
        print(live.mapped_file_stream(a.path, a.size_mb * MiB, a.write), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
