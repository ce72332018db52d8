"""Placeholder `trace` group so `reclaimlab trace record` can be tried in this branch; the
tracing engineer's module replaces this file on merge (and adds `record` to its group)."""

from __future__ import annotations

import click

from reclaimlab.tracing.record import record


@click.group()
def trace() -> None:
    "Reclaim tracing."


trace.add_command(record)
