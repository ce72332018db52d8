//! The run directory's contents (docs/rundir.md): the window's counters and samples, each
//! task's CPU, the result, and writing them out.

use crate::mm::mem_cgroup::{MemcgEvents, ROOT_MEM_CGROUP};
use serde::Serialize;
use std::path::{Path, PathBuf};

use crate::engine::{Ns, NSEC_PER_SEC};
use crate::hw::block::DiskStats;
use crate::kernel::Kernel;
use crate::mm::vmstat::{VmEvent, VmstatSnapshot};
use crate::mm::zone::{MAX_NR_ZONES, WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO};
use crate::scenario::Scenario;
use crate::workload::{Metrics, Workload};

pub(crate) fn secs(ns: Ns) -> f64 {
    ns as f64 / NSEC_PER_SEC as f64
}

/// Everything a run directory holds, as text.
pub struct RunOutput {
    pub scenario_toml: String,
    pub vmstat_before: String,
    pub vmstat_after: String,
    pub vmstat_samples: String,
    pub iostat_samples: String,
    pub cpu_samples: String,
    pub psi_samples: String,
    /// /proc/buddyinfo every sample interval, each block after a `time:` line.
    pub buddyinfo_samples: String,
    /// /proc/pressure/memory at the window's end.
    pub pressure_memory: String,
    pub tasks_json: String,
    pub result_json: String,
    pub zoneinfo: String,
    /// /proc/buddyinfo at the window's start and end, and /proc/pagetypeinfo at its end
    /// (`mm::zone`).
    pub buddyinfo_before: String,
    pub buddyinfo: String,
    pub pagetypeinfo: String,
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
    /// Base pages held by hugetlb pages a memory squeeze reserved (absent without one).
    #[serde(skip_serializing_if = "is_zero")]
    pub hugetlb_pages: u64,
    /// Virtual pages the tasks mapped (page-table entries; absent without anon memory).
    #[serde(skip_serializing_if = "is_zero")]
    pub virtual_pages: u64,
    /// Swap slots of the swap areas (absent without swap).
    #[serde(skip_serializing_if = "is_zero")]
    pub swap_slots: u64,
    /// Not a kernel counter: page-cache folios direct reclaim handed to `->writepage` in the
    /// window (`Writeback::vmscan_write_file_direct`; absent when none). A kernel's is
    /// derived from a trace: `reclaimlab trace report`'s "Direct reclaim write file"
    /// rows.
    #[serde(skip_serializing_if = "is_zero")]
    pub vmscan_write_file_direct: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
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
    /// The workload ends by itself but had not when `run.duration_s` was up, so the run
    /// stopped it (a live run's `timed_out`, at `live.timeout_s`). Written only when true.
    #[serde(skip_serializing_if = "is_false")]
    pub timed_out: bool,
    pub metrics: Metrics,
    /// The share of the window the system's tasks stalled on memory, from the SOME and FULL
    /// `total=` counters of /proc/pressure/memory (percent).
    pub psi_memory_some_pct: f64,
    pub psi_memory_full_pct: f64,
    /// The workload's memory cgroup (`memory.mode = "cgroup"`): memory.max, memory.current
    /// at the end, and its events over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<MemcgResult>,
    pub model: ModelStats,
}

/// `RunResult::memcg`.
#[derive(Clone, Debug, Serialize)]
pub struct MemcgResult {
    pub max_bytes: u64,
    /// memory.high, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_bytes: Option<u64>,
    pub current_bytes: u64,
    pub events: MemcgEvents,
}

/// The state the measured window (or a sample interval) counts from.
pub(crate) struct Baseline {
    pub(crate) at: Ns,
    pub(crate) vmstat: VmstatSnapshot,
    task_cpu: Vec<(u64, u64)>,
    disks: Vec<DiskStats>,
    sys_ns: u64,
    user_ns: u64,
    lock_acq: u64,
    lock_contended: u64,
    oom_retries: u64,
    vmscan_write_file_direct: u64,
    memcg_events: Vec<MemcgEvents>,
    /// /proc/pressure/memory's SOME and FULL totals (ns), read then.
    psi_total: [Ns; 2],
    /// Σ of the CPUs' iowait time (ns), read then.
    iowait_ns: Ns,
    /// /proc/buddyinfo then, for the window's start ([`window_start`]): how the free memory
    /// the window starts with is broken up. None for a sample interval's baseline.
    buddyinfo: Option<String>,
}

/// The counters at `k.now`; the pressure totals as a read of /proc/pressure/memory then
/// would aggregate them.
pub(crate) fn baseline(k: &mut Kernel) -> Baseline {
    let now = k.now;
    k.block.sync(now);
    let (lock_acq, lock_contended) = k.memcg.lru_lock_counts();
    let psi_total = k.psi.read(k.now);
    Baseline {
        psi_total,
        iowait_ns: k.psi.iowait_ns(k.now),
        buddyinfo: None,
        at: k.now,
        vmstat: k.vmstat(),
        task_cpu: k
            .sched
            .tasks
            .iter()
            .map(|t| (t.user_ns, t.sys_ns))
            .collect(),
        disks: k.block.devices.iter().map(|d| d.stats).collect(),
        sys_ns: k.cpus.total_sys_ns,
        user_ns: k.cpus.total_user_ns,
        lock_acq,
        lock_contended,
        oom_retries: k.stats.nr_oom_retries,
        vmscan_write_file_direct: k.wb.vmscan_write_file_direct,
        memcg_events: k.memcg.groups.iter().map(|m| m.events).collect(),
    }
}

/// The baseline the measured window counts from: [`baseline`] with /proc/buddyinfo as the
/// window starts (`buddyinfo.before`), which a sample interval's baseline does without.
pub(crate) fn window_start(k: &mut Kernel) -> Baseline {
    Baseline {
        buddyinfo: Some(crate::mm::zone::buddyinfo(&k.mem.zones)),
        ..baseline(k)
    }
}

#[derive(Default)]
pub(crate) struct Samples {
    vmstat: String,
    iostat: String,
    cpu: String,
    psi: String,
    buddyinfo: String,
}

/// One line of psi.samples (docs/rundir.md).
#[derive(Serialize)]
struct PsiSample {
    t: f64,
    some_pct: f64,
    full_pct: f64,
    some_avg10: f64,
    full_avg10: f64,
    some_total_us: u64,
    full_total_us: u64,
}

/// The share of `dt_ns` that the stall time `stall_ns` is, in percent.
fn stall_pct(stall_ns: Ns, dt_ns: Ns) -> f64 {
    stall_ns as f64 * 100.0 / dt_ns.max(1) as f64
}

/// One line of cpu.samples (docs/rundir.md).
#[derive(Serialize)]
struct CpuSample {
    t: f64,
    us_pct: f64,
    sy_pct: f64,
    id_pct: f64,
    wa_pct: f64,
}

/// One line of iostat.samples (docs/rundir.md).
#[derive(Serialize)]
struct IostatSample<'a> {
    t: f64,
    device: &'a str,
    #[serde(rename = "rkB_s")]
    rkb_s: f64,
    #[serde(rename = "wkB_s")]
    wkb_s: f64,
    r_await_ms: f64,
    w_await_ms: f64,
    aqu_sz: f64,
    util_pct: f64,
    /// A device with flash dies: the share of the dies' time spent programming, the share of
    /// reads that found their die programming, and their mean wait for it per read.
    #[serde(skip_serializing_if = "Option::is_none")]
    programming_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reads_found_programming_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_program_wait_us: Option<f64>,
}

/// `x` rounded to `digits` decimals, so the JSON shows what the figure's precision is.
fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

fn push_json_line<T: Serialize>(out: &mut String, record: &T) {
    out.push_str(&serde_json::to_string(record).expect("a sample serialises"));
    out.push('\n');
}

impl Samples {
    pub(crate) fn take(&mut self, k: &mut Kernel, prev: &Baseline, window_start: Ns) {
        let now = k.now;
        k.block.sync(now);
        let dt = secs(k.now - prev.at).max(1e-9);
        let t = secs(k.now - window_start);
        let total = k.psi.read(k.now);
        let avg10 = |s: usize| k.psi.avg[s][0] as f64 / 2048.0;
        push_json_line(
            &mut self.psi,
            &PsiSample {
                t: round(t, 3),
                some_pct: round(stall_pct(total[0] - prev.psi_total[0], k.now - prev.at), 2),
                full_pct: round(stall_pct(total[1] - prev.psi_total[1], k.now - prev.at), 2),
                some_avg10: round(avg10(0), 2),
                full_avg10: round(avg10(1), 2),
                some_total_us: total[0] / 1000,
                full_total_us: total[1] / 1000,
            },
        );
        self.vmstat.push_str(&format!("time: {t:.3}\n"));
        // After nr_free_pages (the kernel's reading, without the per-CPU deltas), a line no
        // kernel has: every free page, the per-CPU lists' included.
        let text = k.vmstat().to_proc_text();
        let (first, rest) = text.split_at(text.find('\n').map_or(0, |i| i + 1));
        self.vmstat.push_str(first);
        self.vmstat
            .push_str(&format!("nr_free_pages_true {}\n", k.nr_free_pages_true()));
        self.vmstat.push_str(rest);
        self.buddyinfo.push_str(&format!("time: {t:.3}\n"));
        self.buddyinfo
            .push_str(&crate::mm::zone::buddyinfo(&k.mem.zones));
        let ncpu = k.cpus.nr_cpus() as f64;
        let sy = secs(k.cpus.total_sys_ns - prev.sys_ns) / (dt * ncpu) * 100.0;
        let us = secs(k.cpus.total_user_ns - prev.user_ns) / (dt * ncpu) * 100.0;
        let wa = secs(k.psi.iowait_ns(k.now) - prev.iowait_ns) / (dt * ncpu) * 100.0;
        let id = (100.0 - sy - us - wa).max(0.0);
        push_json_line(
            &mut self.cpu,
            &CpuSample {
                t: round(t, 3),
                us_pct: round(us, 2),
                sy_pct: round(sy, 2),
                id_pct: round(id, 2),
                wa_pct: round(wa, 2),
            },
        );
        let await_ms = |ios: u64, ticks: f64| {
            if ios > 0 {
                ticks * 1000.0 / ios as f64
            } else {
                0.0
            }
        };
        for (d, p) in k.block.devices.iter().zip(&prev.disks) {
            let (s, p) = (&d.stats, p);
            let rkb = (s.rd_bytes - p.rd_bytes) as f64 / 1024.0 / dt;
            let wkb = (s.wr_bytes - p.wr_bytes) as f64 / 1024.0 / dt;
            let rticks = secs(s.rd_ticks_ns - p.rd_ticks_ns);
            let wticks = secs(s.wr_ticks_ns - p.wr_ticks_ns);
            let r_await = await_ms(s.rd_ios - p.rd_ios, rticks);
            let w_await = await_ms(s.wr_ios - p.wr_ios, wticks);
            let util = (secs(s.busy_ns - p.busy_ns) / dt * 100.0).min(100.0);
            let reads = (s.rd_ios - p.rd_ios) as f64;
            let dies = (d.nr_dies() > 0).then(|| {
                let per_read = |x: f64| if reads > 0.0 { x / reads } else { 0.0 };
                (
                    round(
                        secs(s.program_ns - p.program_ns) / (dt * d.nr_dies() as f64) * 100.0,
                        1,
                    ),
                    round(
                        per_read((s.die_busy_reads - p.die_busy_reads) as f64) * 100.0,
                        1,
                    ),
                    round(per_read((s.die_wait_ns - p.die_wait_ns) as f64) / 1e3, 1),
                )
            });
            push_json_line(
                &mut self.iostat,
                &IostatSample {
                    t: round(t, 3),
                    device: &d.name,
                    rkb_s: round(rkb, 1),
                    wkb_s: round(wkb, 1),
                    r_await_ms: round(r_await, 3),
                    w_await_ms: round(w_await, 3),
                    aqu_sz: round((rticks + wticks) / dt, 2),
                    util_pct: round(util, 1),
                    programming_pct: dies.map(|d| d.0),
                    reads_found_programming_pct: dies.map(|d| d.1),
                    read_program_wait_us: dies.map(|d| d.2),
                },
            );
        }
    }
}

/// `/proc/zoneinfo` at the window's end, in the kernel's layout (`zoneinfo_show_print()`),
/// with the lines the model has: each zone's free pages (`zone_page_state`, without the
/// per-CPU deltas), watermark boost, watermarks (boost included, as `min_wmark_pages()` and
/// the others print them), managed pages and per-CPU pagesets.
fn zoneinfo(k: &Kernel) -> String {
    const NAMES: [&str; MAX_NR_ZONES] = ["DMA", "DMA32", "Normal", "Movable"];
    let mut out = String::new();
    for (zi, z) in k.mem.zones.iter().enumerate() {
        let w = |i: usize| z.wmark_pages(i);
        out.push_str(&format!(
            "Node {}, zone {:>8}\n  pages free     {}\n        boost    {}\n        min      {}\n        low      {}\n        high     {}\n        promo    {}\n        managed  {}\n",
            z.nid,
            NAMES[z.zone_idx],
            z.zone_page_state_free(),
            z.watermark_boost,
            w(WMARK_MIN),
            w(WMARK_LOW),
            w(WMARK_HIGH),
            w(WMARK_PROMO),
            z.managed_pages,
        ));
        k.percpu.pcp.zoneinfo_pagesets(zi, &mut out);
    }
    out
}

pub(crate) fn finish(
    s: &Scenario,
    k: &mut Kernel,
    base: &Baseline,
    samples: Samples,
    start_met: bool,
    timed_out: bool,
    work: &dyn Workload,
) -> RunOutput {
    let elapsed = secs(k.now - base.at).max(1e-9);
    let after = k.vmstat();
    let pressure_memory = k.psi.show(k.now);
    let psi_pct = |s: usize| {
        round(
            stall_pct(k.psi.total[s] - base.psi_total[s], k.now - base.at),
            2,
        )
    };
    let (psi_memory_some_pct, psi_memory_full_pct) = (psi_pct(0), psi_pct(1));
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
    let (lock_acq, lock_cont) = k.memcg.lru_lock_counts();
    let (lock_acq, lock_cont) = (lock_acq - base.lock_acq, lock_cont - base.lock_contended);
    let page_events = [
        VmEvent::PgallocDma,
        VmEvent::PgallocDma32,
        VmEvent::PgallocNormal,
        VmEvent::PgallocMovable,
        VmEvent::PgscanKswapd,
        VmEvent::PgscanDirect,
        VmEvent::Pgfree,
        VmEvent::Pgfault,
        VmEvent::PswpIn,
        VmEvent::PswpOut,
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
        timed_out,
        metrics: work.metrics(elapsed),
        psi_memory_some_pct,
        psi_memory_full_pct,
        memcg: (k.memcg.workload != ROOT_MEM_CGROUP).then(|| {
            let id = k.memcg.workload as usize;
            let m = &k.memcg.groups[id];
            MemcgResult {
                max_bytes: m.limit * 4096,
                high_bytes: (m.high != u64::MAX).then(|| m.high * 4096),
                current_bytes: m.usage * 4096,
                events: m.events.since(&base.memcg_events[id]),
            }
        }),
        model: ModelStats {
            page_events,
            managed_pages: k.managed_pages(),
            page_state_bytes: k.page_state_bytes(),
            lru_lock_contended_pct: if lock_acq > 0 {
                lock_cont as f64 * 100.0 / lock_acq as f64
            } else {
                0.0
            },
            oom_retries: k.stats.nr_oom_retries - base.oom_retries,
            hugetlb_pages: k.mem.hugetlb_pages,
            virtual_pages: k.mm.ptes.len() as u64,
            swap_slots: k.swap.total_swap_pages(),
            vmscan_write_file_direct: k.wb.vmscan_write_file_direct - base.vmscan_write_file_direct,
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
        psi_samples: samples.psi,
        buddyinfo_samples: samples.buddyinfo,
        pressure_memory,
        tasks_json: serde_json::to_string_pretty(&tasks_file).unwrap_or_default() + "\n",
        result_json: serde_json::to_string_pretty(&result).unwrap_or_default() + "\n",
        zoneinfo: zoneinfo(k),
        buddyinfo_before: base
            .buddyinfo
            .clone()
            .expect("the window's baseline (window_start)"),
        buddyinfo: crate::mm::zone::buddyinfo(&k.mem.zones),
        pagetypeinfo: crate::mm::zone::pagetypeinfo(&k.mem.zones),
        result,
        before: base.vmstat.clone(),
        after,
        tasks: tasks_file,
        trace_error: None,
    }
}

/// What a directory about to receive a run holds (hidden entries, such as another run's
/// staging directory, do not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// Nothing: it is absent or empty.
    Nothing,
    /// A run (`result.json`, or `scenario.toml` of a run that was stopped), or a sweep: only
    /// directories that hold runs or nothing.
    Runs,
    /// Something else, which a run must never replace.
    Other,
}

fn holds(dir: &Path) -> std::io::Result<Holds> {
    if !dir.exists() {
        return Ok(Holds::Nothing);
    }
    if !dir.is_dir() {
        return Ok(Holds::Other);
    }
    if dir.join("result.json").exists() || dir.join("scenario.toml").exists() {
        return Ok(Holds::Runs);
    }
    let mut found = Holds::Nothing;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if is_hidden(&path) {
            continue;
        }
        match holds(&path)? {
            Holds::Other => return Ok(Holds::Other),
            Holds::Runs => found = Holds::Runs,
            Holds::Nothing if path.is_dir() => {}
            Holds::Nothing => return Ok(Holds::Other),
        }
    }
    Ok(found)
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Refuse a run directory that already holds a run or a sweep, unless `overwrite` (then it
/// is replaced whole), and one that holds anything else in any case: nothing a user wrote is
/// overwritten without `--force`, nor removed with it. The one place this is checked.
pub fn check_run_dir_free(dir: &Path, overwrite: bool) -> std::io::Result<()> {
    let refuse = |why: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} {why}", dir.display()),
        ))
    };
    match holds(dir)? {
        Holds::Nothing => Ok(()),
        Holds::Runs if overwrite => Ok(()),
        Holds::Runs => {
            refuse("already holds a run; choose another directory or pass --force")
        }
        Holds::Other => refuse(
            "holds files that are not runs; choose another directory (--force replaces only a run or a sweep)",
        ),
    }
}

/// A hidden sibling of `dir` for one of this process's steps: `.<name>.<what>-<pid>`.
fn sibling(dir: &Path, what: &str) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = format!(
        ".{}.{what}-{}",
        name.unwrap_or_default(),
        std::process::id()
    );
    dir.with_file_name(name)
}

/// Where a run directory (or a sweep) is written until it is complete: the hidden sibling
/// `.<name>.partial-<pid>`, created empty (its parents too).
pub fn staging_dir(dir: &Path) -> std::io::Result<PathBuf> {
    remove_stale_staging(dir)?;
    let staging = sibling(dir, "partial");
    std::fs::create_dir_all(&staging)?;
    Ok(staging)
}

/// Remove the `.<name>.partial-<pid>` siblings of `dir` that killed runs left: those whose
/// process no longer exists (or is this one, a pid reused). A live process's staging is its
/// run in progress and stays. `.old-<pid>` siblings are left alone: a run killed while
/// replacing another leaves the user's previous run there.
fn remove_stale_staging(dir: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(());
    };
    let prefix = format!(".{}.partial-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    }) else {
        return Ok(()); // no parent yet: nothing left behind
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if pid == std::process::id() || !alive {
            std::fs::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
}

/// Put a complete run directory (or sweep) into place: `staging` is renamed to `dir`. With
/// `overwrite` what `dir` held is replaced whole: moved aside to `.<name>.old-<pid>`, the
/// new one renamed in, then the old one removed; without it, `dir` must be absent or empty.
pub fn commit_run_dir(staging: &Path, dir: &Path, overwrite: bool) -> std::io::Result<()> {
    check_run_dir_free(dir, overwrite)?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if !dir.exists() {
        return std::fs::rename(staging, dir);
    }
    if std::fs::read_dir(dir)?.next().is_none() {
        std::fs::remove_dir(dir)?;
        return std::fs::rename(staging, dir);
    }
    let old = sibling(dir, "old");
    std::fs::rename(dir, &old)?;
    if let Err(e) = std::fs::rename(staging, dir) {
        std::fs::rename(&old, dir)?;
        return Err(e);
    }
    std::fs::remove_dir_all(&old)
}

/// Write a run directory's files (docs/rundir.md) into `dir`, made if needed; the caller has
/// checked it (`check_run_dir_free`) and writes into a `staging_dir` to be complete or absent.
pub fn write_run_dir(out: &RunOutput, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let files = [
        ("scenario.toml", &out.scenario_toml),
        ("vmstat.before", &out.vmstat_before),
        ("vmstat.after", &out.vmstat_after),
        ("vmstat.samples", &out.vmstat_samples),
        ("iostat.samples", &out.iostat_samples),
        ("cpu.samples", &out.cpu_samples),
        ("psi.samples", &out.psi_samples),
        ("buddyinfo.samples", &out.buddyinfo_samples),
        ("pressure_memory", &out.pressure_memory),
        ("tasks.json", &out.tasks_json),
        ("zoneinfo", &out.zoneinfo),
        ("buddyinfo.before", &out.buddyinfo_before),
        ("buddyinfo", &out.buddyinfo),
        ("pagetypeinfo", &out.pagetypeinfo),
        ("result.json", &out.result_json),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("reclaim-rundir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn a_run(dir: &Path, files: &[&str]) {
        std::fs::create_dir_all(dir).unwrap();
        for f in files {
            std::fs::write(dir.join(f), *f).unwrap();
        }
    }

    #[test]
    fn a_run_or_a_sweep_needs_overwrite_and_anything_else_is_refused() {
        let root = scratch("check");
        assert!(check_run_dir_free(&root.join("absent"), false).is_ok());
        assert!(check_run_dir_free(&root, false).is_ok(), "empty");
        a_run(&root.join("run"), &["result.json"]);
        a_run(&root.join("stopped"), &["scenario.toml"]);
        a_run(&root.join("sweep/a=1"), &["result.json"]);
        std::fs::create_dir_all(root.join("sweep/.a=2.partial-1")).unwrap();
        for held in ["run", "stopped", "sweep"] {
            let e = check_run_dir_free(&root.join(held), false).unwrap_err();
            assert!(e.to_string().contains("--force"), "{held}: {e}");
            assert!(check_run_dir_free(&root.join(held), true).is_ok(), "{held}");
        }
        a_run(&root.join("mine"), &["notes.txt"]);
        for overwrite in [false, true] {
            let e = check_run_dir_free(&root.join("mine"), overwrite).unwrap_err();
            assert!(e.to_string().contains("not runs"), "{e}");
        }
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn commit_replaces_a_run_whole_and_leaves_no_hidden_directory() {
        let root = scratch("commit");
        let dir = root.join("out");
        a_run(&dir, &["result.json", "scenario.toml", "trace.txt"]);
        let staging = staging_dir(&dir).unwrap();
        assert_eq!(staging.parent(), dir.parent());
        assert!(is_hidden(&staging));
        a_run(&staging, &["result.json", "scenario.toml"]);
        assert!(
            commit_run_dir(&staging, &dir, false).is_err(),
            "a run is replaced with overwrite only"
        );
        commit_run_dir(&staging, &dir, true).unwrap();
        assert!(
            !dir.join("trace.txt").exists(),
            "the old run's files are gone"
        );
        let names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out"]);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_killed_runs_staging_is_removed_and_a_live_ones_kept() {
        let root = scratch("stale");
        let dir = root.join("out");
        // pid 1 is alive (init); a pid above the kernel's pid_max is never alive.
        let live = root.join(".out.partial-1");
        let dead = root.join(".out.partial-99999999");
        let other = root.join(".other.partial-99999999");
        let old = root.join(".out.old-99999999");
        for d in [&live, &dead, &other, &old] {
            a_run(d, &["result.json"]);
        }
        let staging = staging_dir(&dir).unwrap();
        assert!(staging.exists() && live.exists() && other.exists() && old.exists());
        assert!(!dead.exists(), "a dead process's staging is removed");
        let _ = std::fs::remove_dir_all(root);
    }
}
