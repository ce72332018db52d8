"""`reclaimlab scenarios`: the scenario files shipped in scenarios/ and the workloads a
scenario may name, each with its one-line description."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def shipped_scenarios(root: Path = SCENARIO_DIR) -> list[tuple[Path, str]]:
    """Every scenario file under `root` (a TOML file with a `name` or `description`; the
    seeds' reference tables are not scenarios), with its description, by path. Those in
    `bench/` are the benchmarks' (`reclaimlab bench`), said so."""
    from reclaimlab import _core

    found = []
    for path in sorted(root.rglob("*.toml")):
        heading = _core.scenario_heading(path)
        if heading is not None:
            name, description = heading
            about = description or name
            if path.parent == root / "bench":
                # `bench-numa` is `reclaimlab bench --numa`'s, `bench` the default's.
                option = f" --{name.removeprefix('bench-')}" if name.startswith("bench-") else ""
                about = f"benchmark ({name}): the scenario `reclaimlab bench{option}` simulates, docs/benchmarks.md"
            found.append((path, about))
    return found


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is below it, else absolute."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


@click.command("scenarios")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
def scenarios_command(as_json: bool) -> None:
    """The shipped scenarios (for `reclaimlab run` and `live run`) and the workloads a
    scenario's [workload] kind may name, with what each is."""
    from reclaimlab import _core

    files = [{"path": _shown(p), "description": d} for p, d in shipped_scenarios()]
    kinds = [{"kind": k, "description": about, "simulated": sim} for k, about, sim in _core.workload_kinds()]
    if as_json:
        click.echo(json.dumps({"scenarios": files, "workloads": kinds}, indent=2))
        return
    width = max((len(f["path"]) for f in files), default=0)
    click.echo("Scenarios:")
    for f in files:
        click.echo(f"  {f['path']:<{width}}  {f['description']}")
    width = max((len(k["kind"]) for k in kinds), default=0)
    click.echo("\nWorkloads ([workload] kind):")
    for k in kinds:
        live_only = not k["simulated"] and "live only" not in k["description"]
        click.echo(f"  {k['kind']:<{width}}  {k['description']}" + (" (live only)" if live_only else ""))
