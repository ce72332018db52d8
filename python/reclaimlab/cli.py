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
    from reclaimlab.simulate.cli import bench, demo, reproduce, run

    for command in (run, demo, bench, reproduce):
        cli.add_command(command)
    try:  # sub-command groups owned by other parts of the package
        from reclaimlab.tracing.cli import trace

        cli.add_command(trace)
    except ImportError:
        pass
    try:
        from reclaimlab.live.cli import live

        cli.add_command(live)
    except ImportError:
        pass


_register()


def main() -> None:
    cli()
