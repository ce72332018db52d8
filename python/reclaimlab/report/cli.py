"""`reclaimlab report DIR… -o report.html`. Nothing heavier than click is imported until the
command runs, so the CLI starts as fast without plotly's import."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file to write.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT (and plotly.min.js beside it) if it exists.")
@click.option("--plotlyjs", type=click.Choice(["embed", "beside"]), default="embed", show_default=True,
              help="Embed plotly's JavaScript in the page (one file, about 5 MB), or write plotly.min.js beside it.")
@click.option("--title", help="The page's title (default: the inputs' names).")
@click.option("--tolerance", default=1.5, show_default=True, type=click.FloatRange(min=1.0, min_open=True),
              help="Flag simulated/live ratios outside ×TOLERANCE (as `reclaimlab compare`).")  # fmt: skip
def report_command(inputs: tuple[Path, ...], output: Path, force: bool, plotlyjs: str, title: str | None, tolerance: float) -> None:
    """An HTML report of run or sweep directories, simulated or live: plots, then the
    comparison tables of `reclaimlab compare` (the first input is the baseline). Across a
    sweep, the throughput, direct reclaims, kswapd CPU and sy against the swept value, one
    line per input; per point, the inputs overlaid: the vmstat rates over time (free pages
    against the watermarks, pgscan/pgsteal by kswapd and direct reclaim, allocstall),
    per-task CPU, CPU over time and device throughput; for traced runs, the direct-reclaim
    stall histogram. The page opens without a network: plotly's JavaScript is embedded, or
    written beside it with --plotlyjs beside."""
    from reclaimlab.compare import CompareError, compare, load_inputs
    from reclaimlab.rundir import DamagedRunDir

    beside = output.parent / "plotly.min.js"
    if output.exists() and not force:
        raise click.UsageError(f"{output} exists; pass --force to overwrite it")
    try:
        loaded = load_inputs(inputs)
        c = compare(loaded, tolerance)
    except DamagedRunDir as e:
        raise click.ClickException(str(e)) from None
    except CompareError as e:
        raise click.UsageError(str(e))
    for w in c.warnings():
        click.echo(f"warning: {w}", err=True)

    from plotly.offline import get_plotlyjs

    from reclaimlab.report.page import render_page

    js = get_plotlyjs() if plotlyjs == "beside" else None
    if js is not None and beside.exists() and not force and beside.read_text() != js:
        raise click.UsageError(f"{beside} exists and is not this plotly's; pass --force to overwrite it")
    page = render_page(loaded, c, title=title, plotlyjs=plotlyjs)
    output.parent.mkdir(parents=True, exist_ok=True)
    if js is not None:
        beside.write_text(js)
    output.write_text(page)
    click.echo(f"report: {output}", err=True)
