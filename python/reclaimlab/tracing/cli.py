"""`reclaimlab trace`: reclaim tracing. `record` captures the vmscan tracepoints around a
command on the live kernel (python/reclaimlab/tracing/record.py); trace postprocessing
(`trace report`) joins this group when the trace parser lands."""

from __future__ import annotations

import click

from reclaimlab.tracing.record import record


@click.group()
def trace() -> None:
    """Reclaim tracing: capture vmscan tracepoints on the live kernel."""


trace.add_command(record)
