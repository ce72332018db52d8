"""Placeholder so this branch's CLI imports; the simulator's commands replace it on merge."""

from __future__ import annotations

import click


def _absent(name: str) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> None:
        raise click.UsageError(f"`reclaimlab {name}` (the simulator) is not part of this branch")

    return command


run, demo, bench, reproduce = (_absent(n) for n in ("run", "demo", "bench", "reproduce"))
