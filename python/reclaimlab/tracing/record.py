"""`reclaimlab trace record [-o DIR] -- COMMAND`: trace reclaim while a command runs.

Enables the vmscan (and writeback/compaction, where present) events in a tracefs instance of
its own, runs the command, and writes trace.txt, vmstat.before/after, tasks.json and
result.json into a run directory. The tracing state it found is restored on every exit path,
including ^C and SIGTERM (through the same journal as `reclaimlab live`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import click

from reclaimlab.interrupts import Terminated, signals_blocked, signals_unwind
from reclaimlab.live.backend import KernelBackend, RealBackend
from reclaimlab.live.journal import Journal, JournalError, journal_path
from reclaimlab.live.samplers import nr_cpus
from reclaimlab.live.tracefs import DEFAULT_EVENTS, TraceSession
from reclaimlab.rundir import write_json, write_scenario, write_vmstat


def record_command(
    backend: KernelBackend, argv: list[str], outdir: Path, events: list[str] | tuple[str, ...] = DEFAULT_EVENTS
) -> int:
    """Trace `argv` into `outdir`; returns the command's exit code."""
    if backend.euid() != 0:
        raise click.ClickException("tracing needs root: run it as root (sudo)")
    outdir.mkdir(parents=True, exist_ok=True)
    # As in `live run`: signals are exceptions from before the journal exists until the
    # restore is over, and held during it.
    with signals_unwind():
        try:
            journal = Journal.create(journal_path(), scenario="trace-record")
        except JournalError as e:
            raise click.ClickException(str(e))
        backend.journal = journal
        try:
            return _traced(backend, argv, outdir, events)
        finally:
            with signals_blocked():
                for line in backend.restore(journal):
                    click.echo(f"restore: {line}", err=True)
            backend.journal = None


def _traced(backend: KernelBackend, argv: list[str], outdir: Path, events: list[str] | tuple[str, ...]) -> int:
    session = TraceSession(backend, list(events))
    session.start(outdir / "trace.txt")
    before = backend.read_text("/proc/vmstat")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv)
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except BaseException:
        proc.terminate()  # ^C reached the command too; this covers a SIGTERM sent to us alone
        _, status, ru = os.wait4(proc.pid, 0)
        raise
    finally:
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - t0
        after = backend.read_text("/proc/vmstat")
        session.stop()
        write_vmstat(outdir / "vmstat.before", before)
        write_vmstat(outdir / "vmstat.after", after)
        write_scenario(outdir / "scenario.toml", {"name": "trace-record", "workload": {"kind": "command", "argv": argv}})
        cpu = round((ru.ru_utime + ru.ru_stime) * 100 / elapsed, 2) if elapsed > 0 else 0.0
        task = {"pid": proc.pid, "comm": os.path.basename(argv[0]), "kind": "workload", "node": None,
                "user_s": round(ru.ru_utime, 3), "sys_s": round(ru.ru_stime, 3), "cpu_pct": cpu}  # fmt: skip
        write_json(outdir / "tasks.json", {"elapsed_s": round(elapsed, 3), "nr_cpus": nr_cpus(backend), "tasks": [task]})
        metrics = {"exit_code": proc.returncode, "command": shlex.join(argv), "events": session.enabled}
        write_json(outdir / "result.json", {"kind": "live", "scenario": "trace-record", "workload": "command",
                                            "elapsed_s": round(elapsed, 3), "metrics": metrics})  # fmt: skip
    return proc.returncode


@click.command("record", context_settings={"ignore_unknown_options": True})
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), help="run directory (default runs/trace-<time>)")
@click.option("-e", "--event", "events", multiple=True, help="subsystem or subsystem:event (default vmscan, writeback, compaction)")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(output: Path | None, events: tuple[str, ...], command: tuple[str, ...]) -> None:
    """Trace reclaim events while COMMAND runs (give it after --)."""
    out = output or Path("runs") / f"trace-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        rc = record_command(RealBackend(), list(command), out, events or DEFAULT_EVENTS)
    except (KeyboardInterrupt, Terminated):
        click.echo("interrupted; tracing state restored", err=True)
        sys.exit(130)
    click.echo(f"trace: {out / 'trace.txt'} ({(out / 'trace.txt').stat().st_size} bytes); command exited {rc}", err=True)
    sys.exit(rc if rc >= 0 else 128 - rc)
