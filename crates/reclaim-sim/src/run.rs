//! Running a scenario: build the machine, start the tasks, advance the event queue through
//! the warm-up and the measured window, and collect the run directory's contents.

use serde::Serialize;
use std::io::Write;
use std::path::Path;

use crate::engine::{EventKind, Ns, NSEC_PER_SEC};
use crate::hw::block::DiskStats;
use crate::kernel::Kernel;
use crate::mm::kswapd::kswapd_run;
use crate::mm::vmstat::{VmEvent, VmstatSnapshot};
use crate::mm::zone::MAX_NR_ZONES;
use crate::process::Sim;
use crate::scenario::{Scenario, StartAt, StopAt};
use crate::workload::{self, Metrics, Workload};

/// Everything a run directory holds, as text.
pub struct RunOutput {
    pub scenario_toml: String,
    pub vmstat_before: String,
    pub vmstat_after: String,
    pub vmstat_samples: String,
    pub iostat_samples: String,
    pub cpu_samples: String,
    pub tasks_json: String,
    pub result_json: String,
    pub result: RunResult,
    /// The counters at the window's start and end, and each task's CPU over it.
    pub before: VmstatSnapshot,
    pub after: VmstatSnapshot,
    pub tasks: TasksFile,
    /// The first error writing the trace, if any (the run itself is complete regardless).
    pub trace_error: Option<String>,
}

impl RunOutput {
    /// Δ of a /proc/vmstat event counter over the measured window.
    pub fn delta(&self, e: VmEvent) -> u64 {
        self.after.event(e) - self.before.event(e)
    }

    /// Δ Σ allocstall_* (direct reclaims) over the window.
    pub fn allocstall(&self) -> u64 {
        (0..MAX_NR_ZONES)
            .map(|z| {
                let i = VmEvent::AllocstallDma as usize + z;
                self.after.events[i] - self.before.events[i]
            })
            .sum()
    }

    /// Mean CPU % of the tasks of `kind` ("workload", "kswapd") on `node`, if any.
    pub fn cpu_pct(&self, kind: &str, node: u32) -> Option<f64> {
        let v: Vec<f64> = self
            .tasks
            .tasks
            .iter()
            .filter(|t| t.kind == kind && t.node == node)
            .map(|t| t.cpu_pct)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskCpu {
    pub pid: u32,
    pub comm: String,
    pub kind: &'static str,
    pub node: u32,
    pub user_s: f64,
    pub sys_s: f64,
    pub cpu_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TasksFile {
    pub elapsed_s: f64,
    pub nr_cpus: u32,
    pub tasks: Vec<TaskCpu>,
}

/// What the run says about the model itself (for benchmarks and diagnosis), beside the
/// workload's metrics.
#[derive(Clone, Debug, Serialize)]
pub struct ModelStats {
    /// Simulated page events (allocations + scans + frees), for speed measurements.
    pub page_events: u64,
    pub managed_pages: u64,
    /// Simulator memory that grows with the machine's memory, in bytes (for benchmarks).
    pub page_state_bytes: u64,
    /// Share of lru_lock acquisitions in the window that had to wait.
    pub lru_lock_contended_pct: f64,
    /// Allocations in the window whose retries ran out (`Kernel::nr_oom_retries`).
    pub oom_retries: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub kind: &'static str,
    pub scenario: String,
    pub workload: String,
    /// When the measured window started and how long it lasted (simulated seconds).
    pub window_start_s: f64,
    pub elapsed_s: f64,
    /// The window's start condition was never met; the window is then the whole run.
    pub start_condition_met: bool,
    pub metrics: Metrics,
    pub model: ModelStats,
}

struct Baseline {
    at: Ns,
    vmstat: VmstatSnapshot,
    task_cpu: Vec<(u64, u64)>,
    disks: Vec<DiskStats>,
    sys_ns: u64,
    user_ns: u64,
    lock_acq: u64,
    lock_contended: u64,
    oom_retries: u64,
}

fn baseline(k: &Kernel) -> Baseline {
    Baseline {
        at: k.now,
        vmstat: k.vmstat(),
        task_cpu: k
            .sched
            .tasks
            .iter()
            .map(|t| (t.user_ns, t.sys_ns))
            .collect(),
        disks: k.devices.iter().map(|d| d.stats).collect(),
        sys_ns: k.cpus.total_sys_ns,
        user_ns: k.cpus.total_user_ns,
        lock_acq: k.lruvecs.iter().map(|l| l.lru_lock.acquisitions).sum(),
        lock_contended: k.lruvecs.iter().map(|l| l.lru_lock.contended).sum(),
        oom_retries: k.nr_oom_retries,
    }
}

fn secs(ns: Ns) -> f64 {
    ns as f64 / NSEC_PER_SEC as f64
}

/// Build the machine, start its kswapd threads and the workload.
fn setup(s: &Scenario) -> (Sim, Box<dyn Workload>) {
    let mut sim = Sim::new(Kernel::new(
        &s.machine, &s.sysctl, &s.costs, &s.variant, s.seed,
    ));
    for nid in 0..s.machine.nodes {
        kswapd_run(
            &mut sim,
            nid,
            s.variant.kswapd_threads,
            s.machine.cpus_per_node,
        );
    }
    let registration = workload::lookup(&s.workload.kind).expect("a checked scenario");
    let mut w = (registration.build)(&s.workload.params);
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
    let mut steps: u64 = 0;
    loop {
        let Some((t, ev)) = sim.k().sched.queue.pop() else {
            break;
        };
        if t > end_at {
            sim.k().now = end_at;
            break;
        }
        match ev {
            EventKind::Task(id) => sim.run_task(id, t),
            EventKind::Io(bio) => {
                let mut k = sim.k();
                k.now = t;
                k.bio_endio(bio, t);
            }
            EventKind::Sample => {
                let mut k = sim.k();
                k.now = t;
                if let Some(b) = &base {
                    let prev = last_sample.as_ref().unwrap_or(b);
                    samples.take(&k, prev, b.at);
                    last_sample = Some(baseline(&k));
                    k.sched.queue.push(t + interval, EventKind::Sample);
                }
            }
            EventKind::End => {
                sim.k().now = t;
                break;
            }
        }
        let mut k = sim.k();
        steps += 1;
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

#[derive(Default)]
struct Samples {
    vmstat: String,
    iostat: String,
    cpu: String,
}

impl Samples {
    fn take(&mut self, k: &Kernel, prev: &Baseline, window_start: Ns) {
        let dt = secs(k.now - prev.at).max(1e-9);
        let t = secs(k.now - window_start);
        self.vmstat.push_str(&format!("time: {t:.3}\n"));
        self.vmstat.push_str(&k.vmstat().to_proc_text());
        let ncpu = k.cpus.nr_cpus() as f64;
        let sy = secs(k.cpus.total_sys_ns - prev.sys_ns) / (dt * ncpu) * 100.0;
        let us = secs(k.cpus.total_user_ns - prev.user_ns) / (dt * ncpu) * 100.0;
        let id = (100.0 - sy - us).max(0.0);
        self.cpu.push_str(&format!(
            "{{\"t\": {t:.3}, \"us_pct\": {us:.2}, \"sy_pct\": {sy:.2}, \"id_pct\": {id:.2}, \"wa_pct\": 0.00}}\n"
        ));
        let await_ms = |ios: u64, ticks: f64| {
            if ios > 0 {
                ticks * 1000.0 / ios as f64
            } else {
                0.0
            }
        };
        for (d, p) in k.devices.iter().zip(&prev.disks) {
            let (s, p) = (&d.stats, p);
            let rkb = (s.rd_bytes - p.rd_bytes) as f64 / 1024.0 / dt;
            let wkb = (s.wr_bytes - p.wr_bytes) as f64 / 1024.0 / dt;
            let rticks = secs(s.rd_ticks_ns - p.rd_ticks_ns);
            let wticks = secs(s.wr_ticks_ns - p.wr_ticks_ns);
            let r_await = await_ms(s.rd_ios - p.rd_ios, rticks);
            let w_await = await_ms(s.wr_ios - p.wr_ios, wticks);
            let util = (secs(s.busy_ns - p.busy_ns) / dt * 100.0).min(100.0);
            self.iostat.push_str(&format!(
                "{{\"t\": {t:.3}, \"device\": \"{}\", \"rkB_s\": {rkb:.1}, \"wkB_s\": {wkb:.1}, \"r_await_ms\": {r_await:.3}, \"w_await_ms\": {w_await:.3}, \"aqu_sz\": {:.2}, \"util_pct\": {util:.1}}}\n",
                d.name,
                (rticks + wticks) / dt
            ));
        }
    }
}

fn finish(
    s: &Scenario,
    k: &Kernel,
    base: &Baseline,
    samples: Samples,
    start_met: bool,
    work: &dyn Workload,
) -> RunOutput {
    let elapsed = secs(k.now - base.at).max(1e-9);
    let after = k.vmstat();
    let tasks = k
        .sched
        .tasks
        .iter()
        .zip(&base.task_cpu)
        .map(|(t, &(u0, s0))| {
            let user_s = secs(t.user_ns - u0);
            let sys_s = secs(t.sys_ns - s0);
            TaskCpu {
                pid: t.pid,
                comm: t.comm.clone(),
                kind: t.class.name(),
                node: t.node,
                user_s,
                sys_s,
                cpu_pct: (user_s + sys_s) / elapsed * 100.0,
            }
        })
        .collect();
    let lock_acq: u64 = k
        .lruvecs
        .iter()
        .map(|l| l.lru_lock.acquisitions)
        .sum::<u64>()
        - base.lock_acq;
    let lock_cont: u64 =
        k.lruvecs.iter().map(|l| l.lru_lock.contended).sum::<u64>() - base.lock_contended;
    let page_events = [
        VmEvent::PgallocDma,
        VmEvent::PgallocDma32,
        VmEvent::PgallocNormal,
        VmEvent::PgallocMovable,
        VmEvent::PgscanKswapd,
        VmEvent::PgscanDirect,
        VmEvent::Pgfree,
    ]
    .iter()
    .map(|&e| after.event(e))
    .sum::<u64>();
    let result = RunResult {
        kind: "sim",
        scenario: s.name.clone(),
        workload: s.workload.kind.clone(),
        window_start_s: secs(base.at),
        elapsed_s: elapsed,
        start_condition_met: start_met,
        metrics: work.metrics(elapsed),
        model: ModelStats {
            page_events,
            managed_pages: k.managed_pages(),
            page_state_bytes: k.page_state_bytes(),
            lru_lock_contended_pct: if lock_acq > 0 {
                lock_cont as f64 * 100.0 / lock_acq as f64
            } else {
                0.0
            },
            oom_retries: k.nr_oom_retries - base.oom_retries,
        },
    };
    let tasks_file = TasksFile {
        elapsed_s: elapsed,
        nr_cpus: k.cpus.nr_cpus(),
        tasks,
    };
    RunOutput {
        scenario_toml: s.to_toml(),
        vmstat_before: base.vmstat.to_proc_text(),
        vmstat_after: after.to_proc_text(),
        vmstat_samples: samples.vmstat,
        iostat_samples: samples.iostat,
        cpu_samples: samples.cpu,
        tasks_json: serde_json::to_string_pretty(&tasks_file).unwrap_or_default() + "\n",
        result_json: serde_json::to_string_pretty(&result).unwrap_or_default() + "\n",
        result,
        before: base.vmstat.clone(),
        after,
        tasks: tasks_file,
        trace_error: None,
    }
}

/// Refuse a run directory that already holds a run (its `result.json`): nothing a user
/// wrote is overwritten without `--force`. The one place this is checked.
pub fn check_run_dir_free(dir: &Path) -> std::io::Result<()> {
    if dir.join("result.json").exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already holds a run (result.json); choose another directory or pass --force",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Write a run directory (docs/rundir.md). Refuses to overwrite a directory that already
/// holds a result unless `overwrite` is set.
pub fn write_run_dir(out: &RunOutput, dir: &Path, overwrite: bool) -> std::io::Result<()> {
    if !overwrite {
        check_run_dir_free(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let files = [
        ("scenario.toml", &out.scenario_toml),
        ("vmstat.before", &out.vmstat_before),
        ("vmstat.after", &out.vmstat_after),
        ("vmstat.samples", &out.vmstat_samples),
        ("iostat.samples", &out.iostat_samples),
        ("cpu.samples", &out.cpu_samples),
        ("tasks.json", &out.tasks_json),
        ("result.json", &out.result_json),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}
