"""`reclaimlab trace`: reclaim tracing. `record` captures the vmscan tracepoints around a
command on the live kernel (python/reclaimlab/tracing/record.py); `report` turns any vmscan
trace, real or simulated, into seed 003's reclaim statistics (python/reclaimlab/tracing/report.py).
Each is imported when it runs: `report` does not load the live runner that `record` needs."""

from __future__ import annotations

import click

from reclaimlab.cli import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy={
        "record": "reclaimlab.tracing.record:record",
        "report": "reclaimlab.tracing.report:report",
    },
)
def trace() -> None:
    """Reclaim tracing: capture vmscan tracepoints on the live kernel, report on any trace."""
