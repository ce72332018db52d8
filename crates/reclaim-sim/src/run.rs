//! Running a scenario: build the machine, start the tasks, advance the event queue through
//! the warm-up and the measured window, and collect the run directory's contents.

use std::io::Write;

use crate::engine::{EventKind, Ns, NSEC_PER_SEC};
use crate::kernel::Kernel;
use crate::mm::hugetlb::hugetlb_reserve;
use crate::mm::kswapd::kswapd_run;
use crate::mm::swapfile::SwapInfo;
use crate::mm::vmstat::VmEvent;
use crate::process::Sim;
use crate::rundir::{baseline, finish, Baseline, RunOutput, Samples};
use crate::scenario::{MemoryMode, Scenario, StartAt, StopAt, SwapKind};
use crate::workload::{self, WithBackground, Workload};

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
    let build = |kind: &str, params: &toml::Table| {
        let registration = workload::lookup(kind).expect("a checked scenario");
        let build = registration
            .build
            .expect("a scenario checked for the simulator");
        build(params)
    };
    let mut params = s.workload.params.clone();
    params.remove("background");
    let mut w = build(&s.workload.kind, &params);
    if let Some(bg) = s.workload.background() {
        let mut bg = bg.clone();
        let kind = bg.remove("kind").and_then(|k| k.as_str().map(String::from));
        let bg = build(kind.as_deref().unwrap_or_default(), &bg);
        w = Box::new(WithBackground {
            foreground: w,
            background: bg,
        });
    }
    w.start(&mut sim);
    (sim, w)
}

/// Run a scenario. `progress` is called with the fraction of simulated time done; `trace`
/// receives tracepoint text when the scenario enables tracing.
pub fn run(
    s: &Scenario,
    trace: Option<Box<dyn Write>>,
    progress: &mut dyn FnMut(f64),
) -> RunOutput {
    simulate(s, trace, progress).1
}

/// `run`, also handing back the simulated kernel as it was at the end (for checks).
pub fn simulate(
    s: &Scenario,
    trace: Option<Box<dyn Write>>,
    progress: &mut dyn FnMut(f64),
) -> (Kernel, RunOutput) {
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
        (baseline(k), end_at)
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
    loop {
        let mut k = sim.k();
        if steps > 0 {
            if check_invariants && steps.is_multiple_of(4096) {
                if let Err(e) = k.check_conservation(0) {
                    panic!("invariant broken at t={}: {e}", k.now);
                }
            }
            if base.is_none() {
                let started = match s.run.start_at {
                    StartAt::KswapdWake => k.first_kswapd_wake.is_some(),
                    StartAt::Start => true,
                };
                if started || k.now >= warmup_limit {
                    start_met = started;
                    let (b, end) = begin_window(&mut k, &mut work, &mut tracer);
                    base = Some(b);
                    end_at = end;
                }
            } else if let (StopAt::KswapdScan, Some(b)) = (s.run.stop_at, &base) {
                if k.events.get(VmEvent::PgscanKswapd) > b.vmstat.event(VmEvent::PgscanKswapd) {
                    break;
                }
            }
            if k.now >= next_progress {
                let done = match &base {
                    Some(b) => (k.now - b.at) as f64 / duration as f64,
                    None => 0.0,
                };
                progress(done.clamp(0.0, 1.0));
                next_progress = k.now + (horizon / 200).max(1);
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
                    samples.take(&k, prev, b.at);
                    last_sample = Some(baseline(&k));
                    k.sched.queue.push(t + interval, EventKind::Sample);
                }
            }
            EventKind::End => {
                k.now = t;
                break;
            }
        }
    }
    progress(1.0);
    let mut k = sim.into_kernel();
    if let Some(t) = k.tracer.as_mut() {
        t.flush();
    }
    let base = base.unwrap_or_else(|| baseline(&k));
    let mut out = finish(s, &k, &base, samples, start_met, work.as_ref());
    out.trace_error = k
        .tracer
        .as_ref()
        .and_then(|t| t.error.as_ref())
        .map(|e| format!("writing the trace: {e}"));
    (k, out)
}
