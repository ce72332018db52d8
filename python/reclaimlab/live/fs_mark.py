"""fs_mark's loop for live runs (seed 001): one thread's `-L` loops, each creating `-n` new
files of `-s` bytes in `-w`-sized `write()` calls and closing them, with no fsync (`-S0`).
Files go into `-D` subdirectories of the thread's directory, `-N` to a subdirectory before
the next, and are left there (the run removes the whole tree at its end).

Each loop prints one JSON line as it ends (`loop`, `files`, `usecs`, `files_per_sec`), so a
thread stopped mid-run has reported the loops it finished. fs_mark prints a loop's line once
all its threads have finished it, with their rates summed; the workload
(`reclaimlab.live.workloads.FsMark`) sums the threads' lines the same way. The names are
this module's own (fs_mark's are hex timestamps): `<dir>/<subdir:05d>/f<file:08d>`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Callable


def file_path(top: str, n: int, dirs: int, files_per_dir: int) -> str:
    """The path of the thread's `n`-th file: `files_per_dir` to a subdirectory, `dirs` of them
    in turn."""
    return f"{top}/{(n // files_per_dir) % dirs:05d}/f{n:08d}"


def write_file(path: str, size: int, buf: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        left = size
        view = memoryview(buf)
        while left > 0:
            left -= os.write(fd, view[: min(left, len(buf))])
    finally:
        os.close(fd)


def run(top: str, *, dirs: int, files_per_dir: int, files: int, loops: int, file_size: int,
        block_bytes: int, report: Callable[[dict[str, float]], None]) -> list[dict[str, float]]:  # fmt: skip
    """Run the loops in directory `top` (created if missing), calling `report` with each loop's
    result as it ends; returns them all."""
    os.makedirs(top, exist_ok=True)
    made: set[int] = set()
    buf = b"\xa5" * block_bytes  # not zeros, which a filesystem might not store
    results = []
    n = 0
    for loop in range(loops):
        start = time.monotonic()
        for _ in range(files):
            sub = (n // files_per_dir) % dirs
            if sub not in made:
                os.makedirs(f"{top}/{sub:05d}", exist_ok=True)
                made.add(sub)
            write_file(file_path(top, n, dirs, files_per_dir), file_size, buf)
            n += 1
        secs = max(time.monotonic() - start, 1e-9)
        r = {"loop": loop, "files": files, "usecs": round(secs * 1e6), "files_per_sec": round(files / secs, 3)}
        report(r)
        results.append(r)
    return results


def main_loop(top: str, **kw: int) -> None:
    run(top, report=lambda r: print(json.dumps(r), flush=True), **kw)  # type: ignore[arg-type]
