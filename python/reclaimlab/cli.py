"""The `reclaimlab` command line. `main()` reads like a table of contents: each
sub-command lives in the module that owns its subject, imported only when that command
runs (or when help lists it), so that a quick command such as `reclaimlab trace report`
does not pay for the simulator's and the live runner's imports."""

from __future__ import annotations

import importlib

import click

from reclaimlab import __version__


class LazyGroup(click.Group):
    """A group whose sub-commands are `module:attribute` names, imported on first use."""

    def __init__(self, *args: object, lazy: dict[str, str] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy.get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            module, attr = target.split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        """A run stopped by SIGINT or SIGTERM reports what it finished and exits 130 (143);
        any other command stopped by ^C exits 130 too."""
        from reclaimlab.interrupts import Interrupted

        try:
            return super().invoke(ctx)
        except Interrupted as e:
            click.echo(e.report(), err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    lazy={
        "run": "reclaimlab.simulate.cli:run",
        "demo": "reclaimlab.simulate.cli:demo",
        "reproduce": "reclaimlab.simulate.cli:reproduce",
        "bench": "reclaimlab.simulate.cli:bench",
        "live": "reclaimlab.live.cli:live",
        "trace": "reclaimlab.tracing.cli:trace",
        "compare": "reclaimlab.compare:compare_command",
        "report": "reclaimlab.report.cli:report_command",
        "host": "reclaimlab.host:host",
        "scenarios": "reclaimlab.scenarios:scenarios_command",
    },
)
@click.version_option(__version__, prog_name="reclaimlab")
def cli() -> None:
    """A laboratory for Linux page reclaim: simulate the kernel's reclaim,
    run the same workloads on the live kernel, and report both alike."""


def main() -> None:
    cli()
