"""`reclaimlab run`, `demo`, `reproduce` and `bench`: the simulator's commands."""

from __future__ import annotations

import json
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.markup import escape

from reclaimlab import _core
from reclaimlab.rundir import RunDir, label_dir, read_rundir
from reclaimlab.scenarios import SCENARIO_DIR
from reclaimlab.seeds import seed000, seed001, seed002, seed003, seed004
from reclaimlab.simulate.capacity import CapacityError, fit_jobs
from reclaimlab.simulate.runner import Point, PointsFailed, ScenarioError, point_dir, points, run_points
from reclaimlab.summary import print_summary

console = Console(width=140)


def _fail(msg: str) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True)
    sys.exit(2)


class IntList(click.ParamType):
    """Comma-separated integers, each from `lo` to `hi` (`hi` None: no bound)."""

    name = "N,N,…"

    def __init__(self, lo: int, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list):
            return value
        bounds = f"from {self.lo} to {self.hi}" if self.hi is not None else f"of at least {self.lo}"
        try:
            out = [int(x) for x in str(value).split(",") if x.strip()]
        except ValueError:
            self.fail(f"{value!r}: expected comma-separated integers {bounds}", param, ctx)
        if not out or any(n < self.lo or (self.hi is not None and n > self.hi) for n in out):
            self.fail(f"{value!r}: expected comma-separated integers {bounds}", param, ctx)
        return out


JOBS = click.IntRange(min=1)
POSITIVE = click.FloatRange(min=0, min_open=True)


def _run_points(pts: list[Point], out: Path, force: bool, jobs: int | None, quiet: bool = False, ray: str | None = None) -> list[Path]:
    """`run_points`, resumable with this very command; a directory in the way, a point bigger
    than this host or Ray missing an error line (exit 2), failed points their report (exit 1)."""
    from reclaimlab.simulate.ray_backend import RayUnavailable

    try:
        return run_points(pts, out, force=force, jobs=jobs, quiet=quiet, ray_address=ray, resume=_resume_command(out))
    except (FileExistsError, CapacityError, RayUnavailable) as e:
        _fail(str(e))
    except PointsFailed as e:
        console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(1)


def _resume_command(out: Path) -> str:
    """This command line again, to go on with a sweep that stopped: without --force (which
    would run every point again), into the same directory."""
    args = [a for a in sys.argv[1:] if a != "--force"]
    if not any(a in ("-o", "--out") or a.startswith(("--out=", "-o")) for a in args):
        args += ["-o", str(out)]
    return shlex.join(["reclaimlab", *args])


def _ray_address(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--ray` followed by the command's argument takes that argument as its address (click
    cannot know the value was left out): say so rather than run against a cluster named
    after a scenario file, or complain that the argument is missing."""
    if value is not None and (value.endswith(".toml") or Path(value).exists() or value.startswith("seed")):
        raise click.BadParameter(
            f"{value!r} was taken as the cluster's address; put --ray after it, or give the address: --ray auto {value}"
        )
    return value


# `--ray [ADDRESS]`: the option's value is optional, `auto` when it is left out.
RAY_OPTION = click.option(
    "--ray", "ray", is_flag=False, flag_value="auto", default=None, metavar="[ADDRESS]", callback=_ray_address,
    help="Run the points as tasks on a Ray cluster (pip install 'reclaimlab[ray]'): ADDRESS of its head, "
         "`auto` (the default: the cluster this host belongs to) or `local` (one started here); -j does not apply. "
         "See docs/scale-out.md.",
)  # fmt: skip


def _default_out(name: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{name}-{stamp}"


@click.command()
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a scenario key (TOML value), e.g. --set workload.tasks=16 (a quoted key stays whole: --set 'sweep.\"workload.tasks\"=[1,2]').")
@click.option("--sweep", "sweeps", multiple=True, metavar="KEY=V,V,…", help="Sweep KEY over these values (TOML values), adding or replacing that axis of the file's [sweep]; several give their product, e.g. --sweep workload.tasks=1,2,4.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory (default runs/<name>-<time>). A sweep rerun into it skips the points already complete.")
@click.option("--force", is_flag=True, help="Overwrite run directories that already hold results (a sweep: run every point again).")
@click.option("-j", "--jobs", type=JOBS, default=None, help="Points simulated in parallel (default: all CPUs, fewer if this host's memory does not hold them).")
@click.option("--live-and-sim", is_flag=True, help="Also run SCENARIO on this machine's kernel (root; it sets the scenario's sysctls, constrains memory, drops caches, and undoes it all): OUT/live/, then OUT/sim/, then compare them. A `from = \"host\"` scenario simulates each point from the pageblocks its live twin started with. -j applies to the simulation.")
@click.option("--json", "as_json", is_flag=True, help="Print each point's label, run directory and result.json as JSON instead of the table.")
@RAY_OPTION
def run(scenario: str, overrides: tuple[str, ...], sweeps: tuple[str, ...], out: Path | None, force: bool, jobs: int | None, live_and_sim: bool, as_json: bool, ray: str | None) -> None:
    """Simulate SCENARIO (a TOML file) and write its run directory; a sweep writes one
    directory per point. With --live-and-sim, also run it live and set the two side by side."""
    if as_json and live_and_sim:
        raise click.UsageError("--json does not apply to --live-and-sim (compare the two with `reclaimlab compare --json`)")
    if ray is not None and live_and_sim:
        raise click.UsageError("--ray does not apply to --live-and-sim (the live run is this machine's)")
    try:
        overrides = (*overrides, *(_core.sweep_override(axis) for axis in sweeps))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--sweep") from None
    if _core.needs_host_profile(scenario, list(overrides)):
        from reclaimlab.host import ProbeError, ensure_profile

        try:
            ensure_profile(console.print)
        except (ProbeError, OSError) as e:
            _fail(f"the host profile for `machine.from = \"host\"`: {e}")
    try:
        pts = points(scenario, overrides)
    except ScenarioError as e:
        _fail(str(e))
        return
    name = Path(scenario).stem
    out = out or _default_out(name)
    if live_and_sim:
        _live_and_sim(scenario, overrides, pts, out, force, jobs)
        return
    rundirs = _run_points(pts, out, force, jobs, quiet=as_json, ray=ray)
    if as_json:
        results = [{"label": p.label, "run_dir": str(d), "result": read_rundir(d).result} for p, d in zip(pts, rundirs)]
        click.echo(json.dumps(results, indent=2))
        return
    _print_results([read_rundir(d) for d in rundirs], name)
    console.print(f"run directory: {out}")


def _live_and_sim(scenario: str, overrides: tuple[str, ...], pts: list[Point], out: Path, force: bool, jobs: int | None) -> None:
    """The scenario run live into OUT/live/ and simulated into OUT/sim/ (both checked before
    either starts), then `reclaimlab compare OUT/live OUT/sim`. A scenario of this machine
    (`from = "host"`) simulates each point from the pageblocks its live twin started with.
    Run again after its simulation stopped, it keeps a complete live side of the same
    scenario and goes on with the simulation."""
    from reclaimlab.compare import compare, load_input, rich_tables
    from reclaimlab.live.backend import BackendError
    from reclaimlab.live.cli import backend
    from reclaimlab.interrupts import Terminated, signal_of
    from reclaimlab.live.runner import LiveError, preflight
    from reclaimlab.live.runner import run as live_run
    from reclaimlab.live.scenario import ScenarioError as LiveScenarioError
    from reclaimlab.live.scenario import load
    from reclaimlab._core import check_run_dir_free

    try:
        live_sweep = load(scenario, overrides)
    except LiveScenarioError as e:
        _fail(str(e))
        return
    live_backend = backend()
    problems = [p for _, point in live_sweep.points() for p in preflight(live_backend, point)]
    if problems:
        _fail("the live run cannot start:\n  - " + "\n  - ".join(dict.fromkeys(problems)))
    live_dirs = [(label_dir(out / "live", label), point) for label, point in live_sweep.points()]
    # A live side already complete for this very scenario is kept (the command run again after
    # its simulation stopped goes on with the simulation); anything else in the way is refused.
    live_done = not force and all(
        (d / "result.json").exists() and (d / "scenario.toml").exists() and (d / "scenario.toml").read_text() == point.toml
        for d, point in live_dirs
    )
    if not force:
        try:
            if not live_done:
                for d, _ in live_dirs:
                    check_run_dir_free(d)
            check_run_dir_free(out / "sim", True)
        except FileExistsError as e:
            _fail(str(e))
    try:
        fit_jobs(pts, 1)  # the simulation's points fit this host, checked before the live run
    except CapacityError as e:
        _fail(str(e))
    if live_done:
        console.print(f"{out / 'live'} holds this scenario's live run, complete: simulating only")
    else:
        try:
            live_run(live_backend, live_sweep, out / "live", log=lambda s: console.print(s, markup=False, highlight=False), force=force)
        except (LiveError, BackendError) as e:
            _fail(f"live run failed: {e}")
        except (KeyboardInterrupt, Terminated) as e:
            console.print("live run interrupted; every change was undone")
            sys.exit(128 + signal_of(e))
    if _core.needs_host_profile(scenario, list(overrides)):
        try:
            pts = [_from_live_start(scenario, overrides, p, out / "live") for p in pts]
        except ScenarioError as e:
            _fail(str(e))
    _run_points(pts, out / "sim", force, jobs)
    for table in rich_tables(compare([load_input(out / "live"), load_input(out / "sim")])):
        console.print(table)
    console.print(f"run directories: {out}/live, {out}/sim")


def _from_live_start(scenario: str, overrides: tuple[str, ...], point: Point, live_out: Path) -> Point:
    """`point` of a `from = "host"` scenario with the machine's pageblocks its live twin met
    as its window started (`pageblocks.json`, written by the live runner after the drop and
    the squeeze), in place of those the host profile keeps: a host's free memory is broken up
    as what ran before left it, which the profile's census, taken once, does not follow
    (docs/fidelity/host.md, "dd-squeeze: the state each run starts from"). `point` as it
    was where the live run wrote none."""
    f = point_dir(live_out, point) / "pageblocks.json"
    if not f.exists():
        console.print(f"{point.label or 'the point'}: the live run recorded no pageblocks (no readable /proc/pagetypeinfo); simulated from the host profile's")
        return point
    try:
        override = _core.pageblocks_override(f.read_text())
        twin = [p for p in points(scenario, [*overrides, override]) if p.label == point.label]
    except (OSError, UnicodeDecodeError, ValueError, ScenarioError) as e:
        raise ScenarioError(f"{f}: {e}") from None
    if len(twin) != 1:
        raise ScenarioError(f"{f}: no point {point.label!r} in the scenario with these pageblocks")
    return twin[0]


def _print_results(runs: list[RunDir], title: str) -> None:
    """The workload's table (`workload_columns`), one row per point by task count."""
    by_tasks = sorted(runs, key=lambda r: (r.result["metrics"].get("tasks", 0), r.path.name))
    print_summary(by_tasks, title, console)


def _seed000_points(tests: list[int], tasks: list[int] | None, memory_scale: float, duration: float | None, sets: tuple[str, ...] = ()) -> list[tuple[int, Point]]:
    out = []
    for test in tests:
        for p in points(seed000.scenario_dir() / f"test{test}.toml", [*sets, *seed000.overrides(memory_scale, duration)]):
            n = int(p.label.split("=")[1]) if p.label else None
            if tasks is None or n in tasks:
                out.append((test, p.with_label(f"test{test}/{p.label}")))
    return out


def _reproduce(tests: list[int], tasks: list[int] | None, scale: float, duration: float | None, out: Path, force: bool, jobs: int | None, suffix: str, sets: tuple[str, ...] = (), ray: str | None = None) -> None:
    try:
        tagged = _seed000_points(tests, tasks, scale, duration, sets)
    except ScenarioError as e:
        _fail(str(e))
        return
    rundirs = _run_points([p for _, p in tagged], out, force, jobs, ray=ray)
    rows: dict[int, list[seed000.Row]] = {test: [] for test in tests}
    for (test, _), rundir in zip(tagged, rundirs):
        rows[test].append(seed000.columns_of(read_rundir(rundir)))
    tables = [seed000.table(test, rows[test], suffix) for test in tests]
    tables.append(seed000.targets_table(seed000.check_targets(rows)))
    seed000.print_tables(tables, console)
    console.print("Counts (dr, pgscan) are scaled to the seed's 300 s stage.")
    console.print(f"run directories: {out}")


def _reproduce_seed002(scale: float, duration: float | None, sets: tuple[str, ...], out: Path, force: bool, jobs: int | None, ray: str | None = None) -> None:
    """Seed 002's sweep (cluster, vma) simulated, its table beside the seed's, the targets."""
    try:
        pts = points(str(seed002.SCENARIO), [*seed002.overrides(scale, duration), *sets])
    except ScenarioError as e:
        _fail(str(e))
        return
    rundirs = _run_points(pts, out, force, jobs, ray=ray)
    rows = {}
    for p, d in zip(pts, rundirs):
        policy = p.label.rpartition("=")[2]
        rows[policy] = seed002.columns_of(read_rundir(d))
    suffix = "" if scale == 1.0 else f" (memory ×{scale:g})"
    if duration is not None:
        suffix += f", {duration:g} s"
    if sets:
        suffix += " — " + ", ".join(sets)
    console.print(seed002.table(rows, suffix))
    console.print(seed002.targets_table(seed002.check_targets(rows)))
    console.print(f"run directories: {out}")


def _reproduce_seed001(scale: float, duration: float | None, sets: tuple[str, ...], out: Path, force: bool, jobs: int | None, configs: list[str] | None, ray: str | None = None, seeds: int | None = None) -> None:
    """Seed 001's points (RAID-0 at three memory sizes in the seed's thread configurations,
    and the USB stick; fs_mark and simple-writeback; baseline and patched) simulated, the
    seed's rows beside, the targets. With `seeds`, every point is run with `seed = 1..seeds`
    (OUT/seed-N/), the tables and targets are the runs' means, and a last table gives each
    target's change per seed with its mean ± sd and in how many seeds it is met."""
    keys = seed001.keys(configs)
    runs = [None] if seeds is None else list(range(1, seeds + 1))
    try:
        pts = []
        for s in runs:
            for key in keys:
                extra = [] if s is None else [f"seed={s}"]
                (p,) = points(key.scenario, [*seed001.overrides(key.test, key.config, scale, duration), *sets, *extra])
                pts.append(p.with_label(key.label if s is None else f"seed-{s}/{key.label}"))
    except ScenarioError as e:
        _fail(str(e))
        return
    rundirs = _run_points(pts, out, force, jobs, ray=ray)
    sims: list[seed001.Sim] = [{} for _ in runs]
    for i, (key, d) in enumerate(zip([k for _ in runs for k in keys], rundirs)):
        sims[i // len(keys)][key.sim] = seed001.columns_of(read_rundir(d), key.test)
    sim = sims[0] if seeds is None else seed001.mean_sim(sims)
    length = seed001.DEFAULT_DURATION_S if duration is None else duration
    if seeds is not None:
        console.print(f"Simulated numbers: the mean of each point's {seeds} runs (seed = 1..{seeds}).", highlight=False, markup=False)
    for c in seed001.CONFIGS:
        if configs is None or seed001.config_name(c) in configs:
            console.print(seed001.table(sim, c, scale, length))
    console.print(seed001.NOTES, highlight=False, markup=False)
    console.print(seed001.targets_table(seed001.check_targets(sim, scale)))
    if seeds is not None:
        title = f"Over {seeds} seeds: each target's change with the patch per seed (1..{seeds}), and mmap-strm's rows"
        console.print(seed001.spread_table(seed001.spreads(sims, scale), title))
    if sets:
        console.print("with " + ", ".join(sets), highlight=False, markup=False)
    console.print(f"run directories: {out}")


def _reproduce_seed004(scale: float, duration: float | None, sets: tuple[str, ...], out: Path, force: bool, jobs: int | None, ray: str | None = None) -> None:
    """Seed 004's stutter (zonelist cache on, off) simulated, its table beside the seed's,
    the mechanism's counters, the targets."""
    try:
        pts = []
        for kernel in seed004.KERNELS:
            (p,) = points(seed004.scenario(kernel), [*seed004.overrides(scale, duration), *sets])
            pts.append(p.with_label(kernel))
    except ScenarioError as e:
        _fail(str(e))
        return
    rundirs = _run_points(pts, out, force, jobs, ray=ray)
    sim = {kernel: seed004.columns_of(read_rundir(d)) for kernel, d in zip(seed004.KERNELS, rundirs)}
    length = (f"until the copy ends, at most {duration:g} s" if duration is not None
              else "until the copy ends, at most the scenarios' 120 s")
    title = f"Seed 004, stutter mmap latency (ms), 2 nodes × {seed004.node_mb(scale)} MB (×{scale:g}), {length}"
    console.print(seed004.table(sim, title))
    console.print(seed004.NOTES, highlight=False, markup=False)
    console.print(seed004.targets_table(seed004.check_targets(sim, scale)))
    if sets:
        console.print("with " + ", ".join(sets), highlight=False, markup=False)
    console.print(f"run directories: {out}")


def _reproduce_seed003(scale: float, duration: float | None, sets: tuple[str, ...], out: Path, force: bool, jobs: int | None, ray: str | None = None) -> None:
    """Seed 003's stress-highalloc and micro-mapped-file-stream on its four kernels simulated,
    traced: the success table and the vmstat table beside the seed's, the reclaim
    statistics of the runs' own traces, the targets."""
    from reclaimlab.tracing import report

    try:
        pts = []
        for kernel in seed003.KERNELS:
            (p,) = points(seed003.scenario(kernel), [*seed003.overrides(scale, duration), "run.trace=true", *sets])
            pts.append(p.with_label(kernel))
        # --set's workload keys are stress-highalloc's; the rest go to both benchmarks.
        mfs_sets = [s for s in sets if not s.startswith("workload.")]
        for kernel in seed003.KERNELS:
            mfs = [*seed003.mapped_file_stream_overrides(scale, duration), *seed003.KERNEL_SETS[kernel], "run.trace=true", *mfs_sets]
            (p,) = points(seed003.MAPPED_FILE_STREAM, mfs)
            pts.append(p.with_label(f"mapped-file-stream-{kernel}"))
    except ScenarioError as e:
        _fail(str(e))
        return
    all_dirs = _run_points(pts, out, force, jobs, ray=ray)
    n = len(seed003.KERNELS)
    rundirs, mfs_dirs = all_dirs[:n], all_dirs[n:]
    sim = {kernel: seed003.columns_of(read_rundir(d)) for kernel, d in zip(seed003.KERNELS, rundirs)}

    def traced(dirs: list[Path]) -> list[report.TraceInput]:
        inputs = [report.resolve_input(str(d)) for d in dirs]
        for i, kernel in zip(inputs, seed003.KERNELS):
            i.name = kernel
        return inputs

    inputs = traced(rundirs)
    trace_text = report.render(inputs)
    trace = seed003.trace_summary(report.render(inputs, as_json=True))
    mfs_inputs = traced(mfs_dirs)
    mfs_trace_text = report.render(mfs_inputs)
    mfs_trace = seed003.trace_summary(report.render(mfs_inputs, as_json=True))
    mfs = {kernel: seed003.mapped_file_stream_columns(read_rundir(d).delta) for kernel, d in zip(seed003.KERNELS, mfs_dirs)}
    title = (f"Seed 003, X86-64 STRESS-HIGHALLOC (% Success), {seed003.memory_mb(scale)} MB (×{scale:g}), "
             f"{seed003.highalloc_numpages(sim)} attempts a pass")  # fmt: skip
    console.print(seed003.success_table(sim, title))
    console.print(seed003.NOTES, highlight=False, markup=False)
    console.print("\nstress-highalloc, simulated: " + seed003.vmscan_sections(trace_text), highlight=False, markup=False)
    console.print(seed003.mapped_file_stream_table(mfs))
    console.print("\nmicro-mapped-file-stream, simulated: " + seed003.vmscan_sections(mfs_trace_text), highlight=False, markup=False)
    targets = seed003.check_targets(sim, trace, scale) + seed003.check_mapped_file_stream_targets(mfs, mfs_trace, scale)
    console.print(seed003.targets_table(targets))
    if sets:
        console.print("with " + ", ".join(sets), highlight=False, markup=False)
    console.print(f"run directories: {out}")


@click.command()
@click.argument("seed", type=click.Choice(["seed000", "seed001", "seed002", "seed003", "seed004"]))
@click.option("--tests", default="1,2,3,4", show_default=True, type=IntList(1, 4), help="Which of the seed's tests (seed000).")
@click.option("--tasks", default=None, type=IntList(1), help="Only these dd task counts (comma-separated); default: the seed's (seed000).")
@click.option("--scale", default=1.0, show_default=True, type=POSITIVE, help="Memory scale, above 0 (1 = the seed's machine: 756 GB for seed000; 512, 1024 and 4608 MB with fs_mark's files and simple-wb's file for seed001; 32 GB, the usemem sizes and the swap file for seed002; for seed003 the seed's 3 GB, with the file read, the memhogs, swap and the pass time limit; for seed004 the scenarios' 2 × 1 GiB, with the memhog, the copied file and swap).")
@click.option("--duration", default=None, type=POSITIVE, help="Measured seconds per stage (default: the seed's 300; seed001: simulated seconds a run, default 60; seed003: the most simulated seconds a run lasts, default 900 × the scale, at least 900; a run ends with its rest pass; seed004: the most simulated seconds a run lasts, default the scenarios' 120; a run ends when its copy does).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a key of every test's scenario, e.g. --set variant.readahead_noretry=true.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite existing run directories.")
@click.option("-j", "--jobs", type=JOBS, default=None, help="Points simulated in parallel (default: all CPUs, fewer if this host's memory does not hold them).")
@click.option("--configs", default=None, metavar="NAME,…", help="seed001: only these configurations, of " + ", ".join(seed001.config_name(c) for c in seed001.CONFIGS) + " (default: all).")
@click.option("--seeds", default=None, type=click.IntRange(min=1), metavar="N",
              help="seed001: run every point N times, with seed = 1..N (OUT/seed-N/), print the runs' means and each target's change per seed "
                   "(mean ± sd, met in how many). The model draws only where a scenario asks it to: give the devices a jitter, "
                   "e.g. --set machine.devices.0.latency_jitter=0.05.")  # fmt: skip
@RAY_OPTION
def reproduce(seed: str, tests: list[int], tasks: list[int] | None, scale: float, duration: float | None, sets: tuple[str, ...], out: Path | None, force: bool, jobs: int | None, configs: str | None, seeds: int | None, ray: str | None) -> None:
    """Reproduce a seed document's tables: simulated rows with the seed's rows beneath."""
    chosen = None
    if configs is not None:
        known = [seed001.config_name(c) for c in seed001.CONFIGS]
        chosen = [c.strip() for c in configs.split(",") if c.strip()]
        if seed != "seed001" or not chosen or any(c not in known for c in chosen):
            raise click.BadParameter(f"{configs!r}: expected seed001's configurations, comma-separated, of {', '.join(known)}", param_hint="--configs")
    if seeds is not None:
        if seed != "seed001":
            raise click.BadParameter(f"{seeds}: --seeds applies to seed001 only", param_hint="--seeds")
        if any(s.split("=", 1)[0].strip() == "seed" for s in sets):
            raise click.BadParameter("--seeds sets each run's seed (1..N); drop --set seed=…", param_hint="--seeds")
    if seed == "seed002":
        _reproduce_seed002(scale, duration, sets, out or _default_out(seed), force, jobs, ray)
        return
    if seed == "seed003":
        _reproduce_seed003(scale, duration, sets, out or _default_out(seed), force, jobs, ray)
        return
    if seed == "seed004":
        _reproduce_seed004(scale, duration, sets, out or _default_out(seed), force, jobs, ray)
        return
    if seed == "seed001":
        _reproduce_seed001(scale, duration, sets, out or _default_out(seed), force, jobs, chosen, ray, seeds)
        return
    suffix = "" if scale == 1.0 else f" (memory ×{scale:g})"
    if sets:
        suffix += " — " + ", ".join(sets)
    _reproduce(tests, tasks, scale, duration, out or _default_out(seed), force, jobs, suffix, sets, ray)


@click.command()
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path))
@click.option("-j", "--jobs", type=JOBS, default=None, help="Points simulated in parallel.")
def demo(out: Path | None, jobs: int | None) -> None:
    """A small seed experiment: seed 000's 1 vs 4 kswapd threads per node, at 1/8 of its
    memory and 5 s per stage (sampled every second, so that `sy` has samples), with the
    seed's own rows beneath."""
    console.print("[bold]reclaimlab demo[/bold]: seed 000 Test 3 (1 kswapd/node) vs Test 4 (4 kswapd/node), scaled down")
    _reproduce([3, 4], [16, 40, 64, 90], 1 / 8, 5.0, out or _default_out("demo"), True, jobs, " — memory ×1/8, 5 s stages",
               ("run.sample_interval_s=1",))  # fmt: skip


# `reclaimlab bench`'s scenario; its options set these keys.
BENCH_SCENARIO = SCENARIO_DIR / "bench" / "dd.toml"
# `reclaimlab bench --writeback`'s: dd writers against the dirty limits and the flushers.
BENCH_WRITEBACK = SCENARIO_DIR / "bench" / "dd-write.toml"
# `reclaimlab bench --numa`'s: dd readers on four nodes in two sockets, remote fallback.
BENCH_NUMA = SCENARIO_DIR / "bench" / "numa.toml"
# `reclaimlab bench --highalloc`'s: huge pages compacted for in memory of anon and page cache.
BENCH_HIGHALLOC = SCENARIO_DIR / "bench" / "highalloc.toml"
# The benchmarks that are a shipped scenario as it is: option → (file, what it simulates).
BENCH_FILES = {
    "writeback": (BENCH_WRITEBACK, "2 nodes × 8 GiB, 16 buffered dd writers of 4 GiB files, dirty limits and flushers, 10 s"),
    "numa": (BENCH_NUMA, "4 nodes × 4 GiB in two sockets, 64 buffered dd readers, the zonelist cache on, 10 s"),
    "highalloc": (BENCH_HIGHALLOC, "1 node of 8 GiB filled by anon memory and page cache at once, the hugetlb pool grown a 2 MiB page every 10 ms (compaction), 10 s"),
}


@click.command()
@click.option("--swap", is_flag=True, help="The swap benchmark instead: seed 002's usemem pair at 1/8 of its memory, 10 s (the other options do not apply).")
@click.option("--writeback", is_flag=True, help="The writeback benchmark instead: 16 dd writers on 2 nodes × 8 GiB, 10 s (scenarios/bench/dd-write.toml; the other options do not apply).")
@click.option("--numa", is_flag=True, help="The NUMA benchmark instead: 64 dd readers on 4 nodes × 4 GiB in two sockets, the zonelist cache on, 10 s (scenarios/bench/numa.toml; the other options do not apply).")
@click.option("--highalloc", is_flag=True, help="The compaction benchmark instead: huge pages allocated every 10 ms in 8 GiB of anon memory and page cache, 10 s (scenarios/bench/highalloc.toml; the other options do not apply).")
@click.option("--memory-gb", default=16.0, show_default=True, type=click.FloatRange(min=1, min_open=True),
              help="Simulated memory per node, above 1 (node 0 has a 1 GiB DMA32 zone).")
@click.option("--tasks", default=90, show_default=True, type=click.IntRange(min=1), help="dd readers.")
@click.option("--duration", default=10.0, show_default=True, type=POSITIVE, help="Simulated seconds measured.")
@click.option("--kswapd-threads", default=1, show_default=True, type=click.IntRange(1, 16))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench(swap: bool, writeback: bool, numa: bool, highalloc: bool, memory_gb: float, tasks: int, duration: float, kswapd_threads: int, as_json: bool) -> None:
    """Simulator speed: page events per second on one core, peak memory per simulated page,
    and wall time of a seed-000 Test 3 point, or with --swap of seed 002's experiment
    scaled down, with --writeback of dd writers, with --numa of dd readers on four nodes, or
    with --highalloc of compaction for huge pages (see docs/benchmarks.md)."""
    import tempfile

    chosen = [name for name, on in (("writeback", writeback), ("numa", numa), ("highalloc", highalloc)) if on]
    if swap + len(chosen) > 1:
        raise click.UsageError("--swap, --writeback, --numa and --highalloc are separate benchmarks: give one")
    try:
        if chosen:
            (point,) = points(BENCH_FILES[chosen[0]][0], [])
        elif swap:
            point = next(p for p in points(seed002.SCENARIO, seed002.overrides(*seed002.BENCH)) if p.label.endswith("=vma"))
        else:
            sets = [f"machine.memory_mb_per_node={int(memory_gb * 1024)}", f"workload.tasks={tasks}",
                    f"variant.kswapd_threads={kswapd_threads}", f"run.duration_s={duration}"]  # fmt: skip
            (point,) = points(BENCH_SCENARIO, sets)
        fit_jobs([point], 1)
    except (CapacityError, ScenarioError) as e:
        _fail(str(e))
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        try:
            res = json.loads(_core.run_scenario(point, Path(d) / "run", False))
        except ValueError as e:
            _fail(str(e))
        wall = time.perf_counter() - t0
    model = res["model"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    figures = {
        "wall_s": round(wall, 3),
        "simulated_s": round(res["window_start_s"] + res["elapsed_s"], 3),
        "page_events": model["page_events"],
        "page_events_per_s": round(model["page_events"] / wall),
        "managed_pages": model["managed_pages"],
        "peak_rss_bytes_per_page": round(peak / model["managed_pages"], 2),
        "state_bytes_per_page": round(model["page_state_bytes"] / model["managed_pages"], 3),
    }
    if swap:
        simulated = model["managed_pages"] + model.get("virtual_pages", 0)
        figures["virtual_pages"] = model.get("virtual_pages", 0)
        figures["swap_slots"] = model.get("swap_slots", 0)
        figures["state_bytes_per_simulated_page"] = round(model["page_state_bytes"] / simulated, 3)
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    if swap:
        console.print("scenario: seed 002 at 1/8 of its memory (2 nodes × 2 GiB, 4 + 8 usemem, 8 GiB swap), VMA readahead, 10 s")
    elif chosen:
        console.print(f"scenario: {BENCH_FILES[chosen[0]][1]}")
    else:
        console.print(f"scenario: 2 nodes × {memory_gb:g} GiB, {tasks} buffered dd readers, {kswapd_threads} kswapd/node, {duration:g} s measured")
    console.print(f"wall time            {figures['wall_s']:.2f} s for {figures['simulated_s']:.1f} simulated s")
    console.print(f"page events          {figures['page_events']:,} ({figures['page_events_per_s'] / 1e6:.1f} M/s on one core)")
    console.print(f"state per page       {figures['state_bytes_per_page']:.2f} bytes per page frame (page descriptors, list heads, pfn→zone table, page tables, swap map)")
    if swap:
        console.print(f"state per sim. page  {figures['state_bytes_per_simulated_page']:.2f} bytes per page frame or virtual page ({figures['virtual_pages']:,} virtual pages, {figures['swap_slots']:,} swap slots)")
    console.print(f"peak RSS per page    {figures['peak_rss_bytes_per_page']:.1f} bytes (whole process, interpreter included)")
