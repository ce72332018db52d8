"""The `reclaimlab` command line. `main()` reads like a table of contents: each
sub-command lives in the module that owns its subject."""

from __future__ import annotations

import click

from reclaimlab import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reclaimlab")
def cli() -> None:
    """A laboratory for Linux page reclaim: simulate the kernel's reclaim,
    run the same workloads on the live kernel, and report both alike."""


def _register() -> None:
    from reclaimlab.compare import compare_command
    from reclaimlab.host import host
    from reclaimlab.live.cli import live
    from reclaimlab.report.cli import report_command
    from reclaimlab.simulate.cli import bench, demo, reproduce, run
    from reclaimlab.tracing.cli import trace

    for command in (run, demo, reproduce, bench, live, trace, compare_command, report_command, host):
        cli.add_command(command)


_register()


def main() -> None:
    cli()
