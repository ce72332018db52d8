//! Running a scenario: build the machine, start the tasks, advance the event queue through
//! the warm-up and the measured window, and collect the run directory's contents.

use serde::Serialize;
use std::io::Write;
use std::path::Path;

use crate::engine::{EventKind, Ns, NSEC_PER_SEC};
use crate::hw::block::DiskStats;
use crate::kernel::{Kernel, TaskKind};
use crate::mm::vmscan::KswapdTask;
use crate::mm::vmstat::{VmEvent, VmstatSnapshot};
use crate::scenario::{Scenario, StartAt, StopAt, Workload};
use crate::workload::dd::DdTask;

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
    /// The first error writing the trace, if any (the run itself is complete regardless).
    pub trace_error: Option<String>,
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

/// The seed-000 columns and the counters behind them, over the measured window.
#[derive(Clone, Debug, Serialize)]
pub struct DdMetrics {
    pub tasks: u32,
    pub direct: bool,
    /// iostat rkB/s summed over devices.
    pub throughput_kb_s: f64,
    /// Highest per-sample system CPU %, over all CPUs (vmstat `sy`).
    pub sy: f64,
    /// Mean CPU % of one dd task (top).
    pub dd_cpu: f64,
    /// Mean CPU % of a kswapd thread, per node.
    pub kswapd_cpu: Vec<f64>,
    /// Δ Σ allocstall_*.
    pub dr: u64,
    pub pgscan_kswapd: u64,
    pub pgscan_direct: u64,
    pub pgsteal_kswapd: u64,
    pub pgsteal_direct: u64,
    pub pageoutrun: u64,
    pub kswapd_low_wmark_hit_quickly: u64,
    pub kswapd_high_wmark_hit_quickly: u64,
    pub alloc_failures: u64,
    pub lru_lock_contended_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub kind: &'static str,
    pub scenario: String,
    pub workload: &'static str,
    /// When the measured window started and how long it lasted (simulated seconds).
    pub window_start_s: f64,
    pub elapsed_s: f64,
    /// The window's start condition was never met; the window is then the whole run.
    pub start_condition_met: bool,
    pub metrics: DdMetrics,
    /// Simulated page events (allocations + scans + frees), for speed measurements.
    pub page_events: u64,
    pub managed_pages: u64,
    /// Simulator memory that grows with the machine's memory, in bytes (for benchmarks).
    pub page_state_bytes: u64,
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
}

fn baseline(k: &Kernel) -> Baseline {
    Baseline {
        at: k.now,
        vmstat: k.vmstat(),
        task_cpu: k.tasks.iter().map(|t| (t.user_ns, t.sys_ns)).collect(),
        disks: k.devices.iter().map(|d| d.stats).collect(),
        sys_ns: k.cpus.total_sys_ns,
        user_ns: k.cpus.total_user_ns,
        lock_acq: k.nodes.iter().map(|n| n.lru_lock.acquisitions).sum(),
        lock_contended: k.nodes.iter().map(|n| n.lru_lock.contended).sum(),
    }
}

fn secs(ns: Ns) -> f64 {
    ns as f64 / NSEC_PER_SEC as f64
}

/// Build the machine and its tasks.
fn setup(s: &Scenario) -> Kernel {
    let mut k = Kernel::new(s);
    let nodes = s.machine.nodes;
    let cpn = s.machine.cpus_per_node;
    // kswapd threads run on the last CPUs of their node.
    for nid in 0..nodes {
        for t in 0..s.variant.kswapd_threads {
            let comm = if s.variant.kswapd_threads == 1 {
                format!("kswapd{nid}")
            } else {
                format!("kswapd{nid}:{t}")
            };
            let cpu = nid * cpn + (cpn - 1 - (t % cpn));
            let id = k.add_task(comm, cpu, TaskKind::Kswapd(Box::new(KswapdTask::new(nid))));
            k.nodes[nid as usize].kswapd.push(id);
            k.nodes[nid as usize].kswapd_wait.push(id);
        }
    }
    match &s.workload {
        Workload::Dd(dd) => {
            let ndev = k.devices.len();
            for i in 0..dd.tasks {
                // Alternate nodes; fill each node's CPUs from the first.
                let nid = i % nodes;
                let cpu = nid * cpn + (i / nodes) % cpn;
                let task = DdTask::new(
                    i,
                    i as usize % ndev,
                    dd.direct,
                    dd.block_kb,
                    s.sysctl.read_ahead_kb,
                    dd.readahead_depth,
                );
                let id = k.add_task("dd".into(), cpu, TaskKind::Dd(Box::new(task)));
                k.wake_task(id, i as Ns * 1000);
            }
            k.nr_mappings = dd.tasks;
        }
    }
    k
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
    let mut k = setup(s);
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
    if s.run.start_at == StartAt::Start {
        k.tracer = tracer.take();
        base = Some(baseline(&k));
        end_at = duration;
        k.queue.push(interval, EventKind::Sample);
        k.queue.push(duration, EventKind::End);
    }
    let mut next_progress: Ns = 0;
    let horizon = if s.run.start_at == StartAt::Start {
        duration
    } else {
        duration + warmup_limit / 4
    };
    let check_invariants = cfg!(debug_assertions);
    let mut steps: u64 = 0;
    while let Some((t, ev)) = k.queue.pop() {
        if t > end_at {
            k.now = end_at;
            break;
        }
        match ev {
            EventKind::Task(id) => k.run_task(id, t),
            EventKind::Sample => {
                k.now = t;
                if let Some(b) = &base {
                    let prev = last_sample.as_ref().unwrap_or(b);
                    samples.take(&k, prev, b.at);
                    last_sample = Some(baseline(&k));
                    k.queue.push(t + interval, EventKind::Sample);
                }
            }
            EventKind::End => {
                k.now = t;
                break;
            }
        }
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
                k.tracer = tracer.take();
                base = Some(baseline(&k));
                end_at = k.now + duration;
                k.queue.push(k.now + interval, EventKind::Sample);
                k.queue.push(end_at, EventKind::End);
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
    if let Some(t) = k.tracer.as_mut() {
        t.flush();
    }
    let base = base.unwrap_or_else(|| baseline(&k));
    let mut out = finish(s, &k, &base, samples, start_met);
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
    sy_max: f64,
    n: u32,
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
        self.sy_max = self.sy_max.max(sy);
        self.n += 1;
        self.cpu.push_str(&format!(
            "{{\"t\": {t:.3}, \"us_pct\": {us:.2}, \"sy_pct\": {sy:.2}, \"id_pct\": {id:.2}, \"wa_pct\": 0.00}}\n"
        ));
        for (d, p) in k.devices.iter().zip(&prev.disks) {
            let ios = d.stats.rd_ios - p.rd_ios;
            let rkb = (d.stats.rd_bytes - p.rd_bytes) as f64 / 1024.0 / dt;
            let ticks = secs(d.stats.rd_ticks_ns - p.rd_ticks_ns);
            let await_ms = if ios > 0 {
                ticks * 1000.0 / ios as f64
            } else {
                0.0
            };
            let util = (secs(d.stats.busy_ns - p.busy_ns) / dt * 100.0).min(100.0);
            self.iostat.push_str(&format!(
                "{{\"t\": {t:.3}, \"device\": \"{}\", \"rkB_s\": {rkb:.1}, \"wkB_s\": 0.0, \"r_await_ms\": {await_ms:.3}, \"w_await_ms\": 0.000, \"aqu_sz\": {:.2}, \"util_pct\": {util:.1}}}\n",
                d.name,
                ticks / dt
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
) -> RunOutput {
    let elapsed = secs(k.now - base.at).max(1e-9);
    let after = k.vmstat();
    let delta = |e: VmEvent| after.event(e) - base.vmstat.event(e);
    let mut tasks = Vec::new();
    let mut dd_cpu = Vec::new();
    let mut kswapd_cpu: Vec<Vec<f64>> = vec![vec![]; k.nodes.len()];
    let mut alloc_failures = 0;
    for (t, &(u0, s0)) in k.tasks.iter().zip(&base.task_cpu) {
        let user_s = secs(t.user_ns - u0);
        let sys_s = secs(t.sys_ns - s0);
        let cpu_pct = (user_s + sys_s) / elapsed * 100.0;
        let kind = match &t.kind {
            TaskKind::Dd(dd) => {
                dd_cpu.push(cpu_pct);
                alloc_failures += dd.alloc_failures;
                "workload"
            }
            TaskKind::Kswapd(ks) => {
                kswapd_cpu[ks.nid as usize].push(cpu_pct);
                "kswapd"
            }
            TaskKind::Running => "other",
        };
        tasks.push(TaskCpu {
            pid: t.pid,
            comm: t.comm.clone(),
            kind,
            node: t.node,
            user_s,
            sys_s,
            cpu_pct,
        });
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let read_bytes: u64 = k
        .devices
        .iter()
        .zip(&base.disks)
        .map(|(d, b)| d.stats.rd_bytes - b.rd_bytes)
        .sum();
    let sy = if samples.n > 0 {
        samples.sy_max
    } else {
        secs(k.cpus.total_sys_ns - base.sys_ns) / (elapsed * k.cpus.nr_cpus() as f64) * 100.0
    };
    let dr = (0..4)
        .map(|z| {
            after.events[VmEvent::AllocstallDma as usize + z]
                - base.vmstat.events[VmEvent::AllocstallDma as usize + z]
        })
        .sum();
    let lock_acq: u64 =
        k.nodes.iter().map(|n| n.lru_lock.acquisitions).sum::<u64>() - base.lock_acq;
    let lock_cont: u64 =
        k.nodes.iter().map(|n| n.lru_lock.contended).sum::<u64>() - base.lock_contended;
    let Workload::Dd(dd) = &s.workload;
    let metrics = DdMetrics {
        tasks: dd.tasks,
        direct: dd.direct,
        throughput_kb_s: read_bytes as f64 / 1024.0 / elapsed,
        sy,
        dd_cpu: mean(&dd_cpu),
        kswapd_cpu: kswapd_cpu.iter().map(|v| mean(v)).collect(),
        dr,
        pgscan_kswapd: delta(VmEvent::PgscanKswapd),
        pgscan_direct: delta(VmEvent::PgscanDirect),
        pgsteal_kswapd: delta(VmEvent::PgstealKswapd),
        pgsteal_direct: delta(VmEvent::PgstealDirect),
        pageoutrun: delta(VmEvent::Pageoutrun),
        kswapd_low_wmark_hit_quickly: delta(VmEvent::KswapdLowWmarkHitQuickly),
        kswapd_high_wmark_hit_quickly: delta(VmEvent::KswapdHighWmarkHitQuickly),
        alloc_failures,
        lru_lock_contended_pct: if lock_acq > 0 {
            lock_cont as f64 * 100.0 / lock_acq as f64
        } else {
            0.0
        },
    };
    let page_events = [
        VmEvent::PgallocDma,
        VmEvent::PgallocDma32,
        VmEvent::PgallocNormal,
        VmEvent::PgallocMovable,
    ]
    .iter()
    .map(|&e| after.event(e))
    .sum::<u64>()
        + after.event(VmEvent::PgscanKswapd)
        + after.event(VmEvent::PgscanDirect)
        + after.event(VmEvent::Pgfree);
    let result = RunResult {
        kind: "sim",
        scenario: s.name.clone(),
        workload: "dd",
        window_start_s: secs(base.at),
        elapsed_s: elapsed,
        start_condition_met: start_met,
        metrics,
        page_events,
        managed_pages: k.managed_pages(),
        page_state_bytes: k.page_state_bytes(),
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
        trace_error: None,
    }
}

/// Write a run directory (docs/rundir.md). Refuses to overwrite a directory that already
/// holds a result unless `overwrite` is set.
pub fn write_run_dir(out: &RunOutput, dir: &Path, overwrite: bool) -> std::io::Result<()> {
    if dir.join("result.json").exists() && !overwrite {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already holds a run (result.json); choose another directory or pass --force",
                dir.display()
            ),
        ));
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
