"""`reclaimlab trace`: reclaim tracing. `record` captures the vmscan tracepoints around a
command on the live kernel (python/reclaimlab/tracing/record.py); `report` turns any vmscan
trace, real or simulated, into seed 003's reclaim statistics (python/reclaimlab/tracing/report.py)."""

from __future__ import annotations

import click

from reclaimlab.tracing.record import record
from reclaimlab.tracing.report import report


@click.group()
def trace() -> None:
    """Reclaim tracing: capture vmscan tracepoints on the live kernel, report on any trace."""


trace.add_command(record)
trace.add_command(report)
