//! Running a scenario: build the machine, start the tasks, advance the event queue through
//! the warm-up and the measured window, and collect the run directory's contents.

use std::io::Write;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::engine::{EventKind, Ns, NSEC_PER_SEC};
use crate::kernel::Kernel;
use crate::mm::hugetlb::hugetlb_reserve;
use crate::mm::kswapd::kswapd_run;
use crate::mm::lru::NR_LRU_LISTS;
use crate::mm::mm_init::{nr_page_frames, nr_zones};
use crate::mm::page::Pages;
use crate::mm::page_ext::PageExt;
use crate::mm::swapfile::SwapInfo;
use crate::mm::vma::PageTables;
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{MAX_ORDER_NR_PAGES, NR_FREE_LISTS, PAGEBLOCK_NR_PAGES};
use crate::process::Sim;
use crate::rundir::{baseline, finish, window_start, Baseline, RunOutput, Samples};
use crate::scenario::{MemoryMode, Scenario, StartAt, StopAt, SwapKind};
use crate::workload::{self, WithBackground, Workload, BACKGROUND_GRACE};

/// The bytes of per-page state a run of `s` comes to at most, computed from the scenario
/// without building the machine (what `Kernel::page_state_bytes` reports at a run's end, the
/// side arrays its swap areas and memory cgroup may need counted in use): the page
/// descriptors and list heads, the side arrays, the pfn → zone table, the pageblocks' types, the workload's page
/// tables and each swap area's slots. Checked
/// against built machines in tests/capacity.rs; the command line compares it with what the
/// host has before a run starts.
pub fn page_state_bytes_needed(s: &Scenario) -> u64 {
    let m = &s.machine;
    let nr_pages = nr_page_frames(m);
    let nr_memcgs = 1 + u64::from(s.memory.mode == MemoryMode::Cgroup);
    let nr_lists = nr_memcgs * u64::from(m.nodes) * NR_LRU_LISTS as u64
        + u64::from(nr_zones(m)) * NR_FREE_LISTS as u64;
    let (mut vmas, mut mapped) = (0, 0);
    // A buffered dd of a file of known size, and a mapped file's faults, index their
    // folios (`folio->index`).
    let indexed = workload_tables(s).iter().any(|(kind, p)| {
        let int = |key: &str| p.get(key).and_then(|v| v.as_integer());
        let direct = p.get("direct").and_then(|v| v.as_bool()) == Some(true);
        (kind == "dd" && int("file_mb").unwrap_or(0) > 0 && !direct) || kind == "mapped-file-stream"
    });
    for (kind, params) in workload_tables(s) {
        let (v, p) = (workload::lookup(&kind)
            .expect("a checked scenario")
            .mappings)(&params);
        vmas += v;
        mapped += p;
    }
    let shadows = !s.variant.anon_lru_before_5_9;
    let swap: u64 = s
        .swap
        .areas()
        .map(|a| SwapInfo::state_bytes_for((a.size_mb * 256) as u32, shadows))
        .sum();
    Pages::state_bytes_for(u64::from(nr_pages) + nr_lists)
        + PageExt::state_bytes_for(
            nr_pages,
            s.swap.areas().next().is_some(),
            nr_memcgs > 1,
            indexed,
        )
        + u64::from(nr_pages / MAX_ORDER_NR_PAGES)
        + u64::from(nr_pages / PAGEBLOCK_NR_PAGES)
        + PageTables::state_bytes_for(vmas, mapped)
        + swap
}

/// The workload's `(kind, resolved table)` and its backgrounds', as `setup` builds them.
fn workload_tables(s: &Scenario) -> Vec<(String, toml::Table)> {
    let mut params = s.workload.params.clone();
    params.remove("background");
    let mut tables = vec![(s.workload.kind.clone(), params)];
    for (_, bg) in s.workload.backgrounds() {
        let mut bg = bg.clone();
        let kind = bg.remove("kind").and_then(|k| k.as_str().map(String::from));
        tables.push((kind.unwrap_or_default(), bg));
    }
    tables
}

/// Build the machine, start its kswapd threads and the workload.
fn setup(s: &Scenario) -> (Sim, Box<dyn Workload>) {
    let mut kernel = Kernel::new(
        &s.machine,
        &s.effective_sysctl(),
        &s.costs,
        &s.variant,
        s.seed,
    );
    match s.memory.mode {
        MemoryMode::Squeeze => {
            hugetlb_reserve(&mut kernel, s.memory.free_mb * 256);
        }
        MemoryMode::Cgroup => {
            kernel.memcg.workload = kernel.mem_cgroup_create(s.memory.limit_mb * 256);
            if s.memory.high_mb > 0 {
                kernel.memcg.groups[kernel.memcg.workload as usize].high = s.memory.high_mb * 256;
            }
        }
        MemoryMode::None => {}
    }
    // swapon() of each area: a swap file on the machine's first device, or a zram device
    // (no block device: synchronous). Files lie one after the other on the device; once an
    // area marks the device non-rotational (before its swapon), the later ones find it so.
    let mut base = 0;
    let mut nonrotational = false;
    for swap in s.swap.areas() {
        let (dev, rotational) = match swap.kind {
            SwapKind::Zram => (None, false),
            _ => {
                nonrotational |= swap.nonrotational;
                (Some(0), s.machine.devices[0].rotational && !nonrotational)
            }
        };
        let nr_slots = (swap.size_mb * 256) as u32;
        let nr_cpus = kernel.cpus.nr_cpus();
        let mut area = SwapInfo::new(
            nr_slots,
            swap.priority,
            dev,
            rotational,
            s.variant.swap_alloc,
            nr_cpus,
        );
        if dev.is_some() {
            area.base = base;
            base += u64::from(nr_slots) * 4096;
        }
        if !s.variant.anon_lru_before_5_9 {
            area.enable_shadows(); // anon workingset detection, 5.9 on
        }
        kernel.swap.swapon(area);
    }
    let mut sim = Sim::new(kernel);
    for nid in 0..s.machine.nodes {
        kswapd_run(
            &mut sim,
            nid,
            s.variant.kswapd_threads,
            s.machine.cpus_per_node,
        );
    }
    let build = |(kind, params): &(String, toml::Table)| {
        let registration = workload::lookup(kind).expect("a checked scenario");
        let build = registration
            .build
            .expect("a scenario checked for the simulator");
        build(params)
    };
    let tables = workload_tables(s);
    let mut w = build(&tables[0]);
    if tables.len() > 1 {
        w = Box::new(WithBackground {
            foreground: w,
            background: tables[1..].iter().map(build).collect(),
            list: s.workload.background().is_none(),
        });
    }
    w.start(&mut sim);
    (sim, w)
}

/// How many events the loop runs between two looks at the wall clock: a few microseconds of
/// simulation, so the look costs nothing measurable.
const POLL_EVENTS: u64 = 1 << 12;
/// The most wall time between two calls of a run's `progress`, which is where the caller
/// stops it (a pending SIGINT): ^C stops a point within about this long.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A run its caller stopped (`progress` returned `ControlFlow::Break`): it has no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

/// Run a scenario to its end. `progress` is called with the fraction of simulated time done;
/// `trace` receives tracepoint text when the scenario enables tracing.
pub fn run(
    s: &Scenario,
    trace: Option<Box<dyn Write>>,
    progress: &mut dyn FnMut(f64),
) -> RunOutput {
    let mut go_on = |done| {
        progress(done);
        ControlFlow::Continue(())
    };
    match simulate(s, trace, &mut go_on) {
        Ok((_, out)) => out,
        Err(Interrupted) => unreachable!("never stopped"),
    }
}

/// `run`, which its caller may stop, also handing back the simulated kernel as it was at the
/// end (for checks). `progress` is called every 1/200 of the simulated time and at least
/// every `POLL_INTERVAL` of wall time; when it returns `Break` the run ends at once with
/// `Interrupted` (its trace, if any, is left unfinished).
pub fn simulate(
    s: &Scenario,
    trace: Option<Box<dyn Write>>,
    progress: &mut dyn FnMut(f64) -> ControlFlow<()>,
) -> Result<(Kernel, RunOutput), Interrupted> {
    let (mut sim, mut work) = setup(s);
    // Tracing covers the measured window only, so a trace's totals are the window's deltas.
    let mut tracer = if s.run.trace {
        trace.map(crate::tracepoints::Tracer::new)
    } else {
        None
    };
    let duration = (s.run.duration_s * NSEC_PER_SEC as f64) as Ns;
    let interval = (s.run.sample_interval_s * NSEC_PER_SEC as f64) as Ns;
    let warmup_limit = (s.run.warmup_limit_s * NSEC_PER_SEC as f64) as Ns;
    let mut base: Option<Baseline> = None;
    let mut start_met = true;
    let mut end_at = Ns::MAX;
    let mut samples = Samples::default();
    let mut last_sample: Option<Baseline> = None;
    let begin_window = |k: &mut Kernel,
                        work: &mut Box<dyn Workload>,
                        tracer: &mut Option<crate::tracepoints::Tracer>| {
        k.tracer = tracer.take();
        work.window_started(k.now);
        let end_at = k.now + duration;
        k.sched.queue.push(k.now + interval, EventKind::Sample);
        k.sched.queue.push(end_at, EventKind::End);
        (window_start(k), end_at)
    };
    if s.run.start_at == StartAt::Start {
        let (b, end) = begin_window(&mut sim.k(), &mut work, &mut tracer);
        base = Some(b);
        end_at = end;
    }
    let mut next_progress: Ns = 0;
    let horizon = if s.run.start_at == StartAt::Start {
        duration
    } else {
        duration + warmup_limit / 4
    };
    let check_invariants = cfg!(debug_assertions);
    // One borrow of the kernel per event: the bookkeeping after an event is done at the top
    // of the next iteration, with the same borrow that pops it.
    let mut steps: u64 = 0;
    let mut next_poll = Instant::now() + POLL_INTERVAL;
    // A workload that ends by itself ends the window when it has finished (its backgrounds
    // that end by themselves too, or BACKGROUND_GRACE after it), as a live run's does.
    let mut seen_exits = 0;
    let mut foreground_done_at: Option<Ns> = None;
    loop {
        let mut k = sim.k();
        if steps > 0 {
            if check_invariants && steps.is_multiple_of(4096) {
                if let Err(e) = k.check_conservation(0).and_then(|()| k.check_writeback()) {
                    panic!("invariant broken at t={}: {e}", k.now);
                }
            }
            if base.is_none() {
                let started = match s.run.start_at {
                    StartAt::KswapdWake => k.stats.first_kswapd_wake.is_some(),
                    StartAt::Start => true,
                };
                if started || k.now >= warmup_limit {
                    start_met = started;
                    let (b, end) = begin_window(&mut k, &mut work, &mut tracer);
                    base = Some(b);
                    end_at = end;
                }
            } else if let (StopAt::KswapdScan, Some(b)) = (s.run.stop_at, &base) {
                if k.stats.events.get(VmEvent::PgscanKswapd) > b.vmstat.event(VmEvent::PgscanKswapd)
                {
                    break;
                }
            }
            if sim.nr_exited() != seen_exits {
                seen_exits = sim.nr_exited();
                if work.finished(&sim) {
                    if base.is_none() {
                        // It finished before the window's start condition was met.
                        start_met = false;
                        base = Some(begin_window(&mut k, &mut work, &mut tracer).0);
                    }
                    let at = sim.last_exit_at().max(k.now);
                    let end = if work.background_finished(&sim) {
                        at
                    } else {
                        *foreground_done_at.get_or_insert(at) + BACKGROUND_GRACE
                    };
                    if end < end_at {
                        end_at = end;
                        k.sched.queue.push(end, EventKind::End);
                    }
                }
            }
            let simulated = k.now >= next_progress;
            if simulated || (steps.is_multiple_of(POLL_EVENTS) && Instant::now() >= next_poll) {
                let done = match &base {
                    Some(b) => (k.now - b.at) as f64 / duration as f64,
                    None => 0.0,
                };
                if progress(done.clamp(0.0, 1.0)).is_break() {
                    return Err(Interrupted);
                }
                if simulated {
                    next_progress = k.now + (horizon / 200).max(1);
                }
                next_poll = Instant::now() + POLL_INTERVAL;
            }
        }
        steps += 1;
        let Some((t, ev)) = k.sched.queue.pop() else {
            break;
        };
        if t > end_at {
            k.now = end_at;
            break;
        }
        match ev {
            EventKind::Task(id) => {
                drop(k);
                sim.run_task(id, t);
            }
            EventKind::Io(bio) => {
                drop(k);
                sim.complete_io(bio, t);
            }
            EventKind::Sample => {
                k.now = t;
                if let Some(b) = &base {
                    let prev = last_sample.as_ref().unwrap_or(b);
                    samples.take(&mut k, prev, b.at);
                    last_sample = Some(baseline(&mut k));
                    k.sched.queue.push(t + interval, EventKind::Sample);
                }
            }
            EventKind::End => {
                k.now = t;
                break;
            }
        }
    }
    if progress(1.0).is_break() {
        return Err(Interrupted);
    }
    // A workload that ends by itself but had not when the run's duration was up.
    let timed_out = work.ends_by_itself() && !work.finished(&sim);
    let mut k = sim.into_kernel();
    if let Some(t) = k.tracer.as_mut() {
        t.flush();
    }
    let base = base.unwrap_or_else(|| window_start(&mut k));
    let mut out = finish(
        s,
        &mut k,
        &base,
        samples,
        start_met,
        timed_out,
        work.as_ref(),
    );
    out.trace_error = k
        .tracer
        .as_ref()
        .and_then(|t| t.error.as_ref())
        .map(|e| format!("writing the trace: {e}"));
    Ok((k, out))
}
