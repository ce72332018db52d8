"""`reclaimlab live …`: run a scenario on this machine's kernel, restore, check support."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from reclaimlab.interrupts import Terminated
from reclaimlab.live.backend import BackendError, KernelBackend, RealBackend
from reclaimlab.live.journal import journal_path
from reclaimlab.live.runner import LiveError, restore, run
from reclaimlab.live.scenario import ScenarioError, load
from reclaimlab.rundir import read_rundir
from reclaimlab.summary import print_summary


def backend() -> KernelBackend:
    return RealBackend()


@click.group()
def live() -> None:
    """Run scenarios on this machine's kernel (needs root; every change is undone)."""


@live.command("run")
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), help="run directory (default runs/live/<scenario>-<time>)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a scenario key, e.g. sysctl.vma_ra_enabled=false")
@click.option("--force", is_flag=True, help="overwrite run directories that already hold a run")
def run_command(scenario: Path, output: Path | None, sets: tuple[str, ...], force: bool) -> None:
    """Run SCENARIO's workload live and write its run directory."""
    console = Console(stderr=True)
    try:
        sc = load(scenario, sets)
    except ScenarioError as e:
        raise click.UsageError(str(e))
    out = output or Path("runs/live") / f"{sc.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console, transient=True)
    bars: dict[str, TaskID] = {}

    def tick(label: str, elapsed: float, planned: float | None) -> None:
        if label not in bars:
            bars[label] = progress.add_task(f"{sc.name} {label}", total=planned)
        progress.update(bars[label], completed=elapsed if planned else None)

    try:
        with progress if console.is_terminal else contextlib.nullcontext():
            points = run(backend(), sc, out, log=lambda s: console.print(s, markup=False, highlight=False, soft_wrap=True),
                         tick=tick if console.is_terminal else None, force=force)  # fmt: skip
    except (LiveError, BackendError) as e:
        console.print(f"live run failed: {e}", markup=False, soft_wrap=True)
        sys.exit(1)
    except (KeyboardInterrupt, Terminated):
        console.print("interrupted; every change was undone", markup=False, soft_wrap=True)
        sys.exit(130)
    print_summary([read_rundir(p.rundir) for p in points], title=f"{sc.name} (live)")
    console.print(f"run directory: {out}", markup=False)


@live.command("restore")
def restore_command() -> None:
    """Undo what a killed live run left behind (from its journal)."""
    try:
        found = restore(backend(), log=click.echo)
    except LiveError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    if not found:
        click.echo(f"nothing to restore: no journal at {journal_path()}")
    else:
        click.echo("restored")


@live.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the features as JSON: [{feature, ok, detail}].")
def check_command(as_json: bool) -> None:
    """Say what this machine supports for live runs."""
    import json

    from reclaimlab.live.checks import capabilities

    rows = capabilities(backend())
    if as_json:
        click.echo(json.dumps([{"feature": name, "ok": ok, "detail": detail} for name, ok, detail in rows], indent=2))
        return
    table = Table(title="live-run support on this machine")
    table.add_column("feature")
    table.add_column("ok")
    table.add_column("detail")
    for name, ok, detail in rows:
        table.add_row(name, "yes" if ok else "no", detail)
    Console().print(table)
