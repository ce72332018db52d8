"""`reclaimlab trace report`: seed 003's reclaim statistics from any vmscan trace.

Inputs are trace files (plain, gzip or zstd), `-` for stdin, or run directories (simulated,
live or `trace record`), one report column each. A run directory also supplies
/proc/vmstat before and after (the report then sets each trace total beside the counter it
should equal) and the workload's user+sys CPU time (for "Percentage Time Spent Direct
Reclaim"). A bare trace file named `X.trace[.txt][.zst|.gz]` picks up `X.vmstat.before` and
`X.vmstat.after` beside it when they exist. The parsing and the report are Rust
(crates/reclaim-trace); this module resolves inputs and writes the output.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from reclaimlab import _core
from reclaimlab.rundir import DamagedRunDir, find_rundirs, is_rundir, read_rundir, unique_names


@dataclass
class TraceInput:
    name: str
    path: str
    vmstat: tuple[str, str] | None = None
    user_sys_s: float | None = None

    def as_core(self) -> tuple[str, str, tuple[str, str] | None, float | None]:
        return (self.name, self.path, self.vmstat, self.user_sys_s)


_TRACE_SUFFIX = re.compile(r"\.trace(\.txt)?(\.zst|\.gz)?$|\.txt(\.zst|\.gz)?$")


def resolve_inputs(arg: str) -> list[TraceInput]:
    """A path argument as report inputs: a sweep directory gives one per traced point;
    click.ClickException naming a run directory's file that cannot be read."""
    try:
        return _resolve_inputs(arg)
    except DamagedRunDir as e:
        raise click.ClickException(str(e)) from None


def _resolve_inputs(arg: str) -> list[TraceInput]:
    path = Path(arg)
    if arg != "-" and path.is_dir() and not is_rundir(path):
        points = [p for p in find_rundirs(path) if read_rundir(p).trace_path is not None]
        if not points:
            raise click.UsageError(f"{path} holds no traced run directory (simulated runs: --set run.trace=true)")
        return [resolve_input(str(p)) for p in points]
    return [resolve_input(arg)]


def resolve_input(arg: str) -> TraceInput:
    """A path argument as a report input; raises click.UsageError saying what is wrong."""
    if arg == "-":
        return TraceInput(name="stdin", path="-")
    path = Path(arg)
    if path.is_dir():
        if not is_rundir(path):
            raise click.UsageError(f"{path} is a directory but not a run directory (no result.json and scenario.toml)")
        rd = read_rundir(path)
        if rd.trace_path is None:
            raise click.UsageError(
                f"{path} has no trace.txt: the run was not traced (simulated runs: --set run.trace=true)"
            )
        before = (path / "vmstat.before").read_text()
        after = (path / "vmstat.after").read_text()
        workload = rd.tasks_of_kind("workload")
        cpu = sum(float(t.get("user_s", 0)) + float(t.get("sys_s", 0)) for t in workload) if workload else None
        return TraceInput(name=path.name, path=str(rd.trace_path), vmstat=(before, after), user_sys_s=cpu)
    if not path.exists():
        raise click.UsageError(f"{path}: no such file")
    stem = _TRACE_SUFFIX.sub("", path.name)
    before, after = path.with_name(f"{stem}.vmstat.before"), path.with_name(f"{stem}.vmstat.after")
    vmstat = (before.read_text(), after.read_text()) if before.exists() and after.exists() else None
    return TraceInput(name=stem or path.name, path=str(path), vmstat=vmstat)


def render(inputs: list[TraceInput], ignore_pid: bool = False, as_json: bool = False, jobs: int = 0,
           refuse_malformed: bool = False) -> str:
    """The report of `inputs`; `jobs` threads decode each plain trace file (0: one per core).
    With `refuse_malformed`, an input most of whose lines are malformed is an error (with
    the counts) instead of a report of zeros."""
    for i, name in zip(inputs, unique_names([i.name for i in inputs])):
        i.name = name
    try:
        return _core.trace_report([i.as_core() for i in inputs], ignore_pid=ignore_pid, as_json=as_json, jobs=jobs,
                                  refuse_malformed=refuse_malformed)  # fmt: skip
    except (OSError, ValueError) as e:
        raise click.ClickException(str(e)) from e


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--ignore-pid", is_flag=True, help="One row per task name, pids merged (mmtests' mode).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: summary, stall statistics, full analysis.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to a file instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Threads decoding each trace (default: all CPUs); the report is the same for any number. With more than one, a plain file is mapped into memory and must not be truncated or rewritten while it is read.",
)
def report(paths: tuple[str, ...], ignore_pid: bool, as_json: bool, output: Path | None, force: bool, jobs: int | None) -> None:
    """Reclaim statistics of vmscan traces, one column per PATH.

    PATH is a trace file (plain, .gz or .zst: /sys/kernel/tracing/trace output, trace_pipe
    captures, `trace-cmd report` text), `-` for stdin, a run directory holding trace.txt,
    or a sweep directory (one column per traced point).
    Prints "FTrace Reclaim Statistics: vmscan" with trace-vmscan-postprocess.pl's Summary
    rows and mmtests' derived rows, the congestion or throttling waits, per-process
    direct-reclaim and kswapd tables, and the direct-reclaim stall latencies by order.
    Damaged lines are counted and skipped, with their line numbers; an input most of whose
    lines are damaged is refused with the counts (exit 1).
    """
    if paths.count("-") > 1:
        raise click.UsageError("stdin ('-') can be given once")
    if output is not None and output.exists() and not force:
        raise click.UsageError(f"{output} exists; pass --force to overwrite it")
    text = render([i for p in paths for i in resolve_inputs(p)], ignore_pid=ignore_pid, as_json=as_json, jobs=jobs or 0,
                  refuse_malformed=True)  # fmt: skip
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
        click.echo(f"report: {output}", err=True)
