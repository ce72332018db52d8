//! simple-writeback (seed 001): N dd writers at once, each writing `file_mb` of a new file
//! in `bs`-sized `write()` calls; the mean per-job elapsed time.
//!
//! Simulated: each `write()` (`generic_perform_write()`, mm/page_writeback.rs) allocates
//! the new folios of its block in runs of up to SWAP_CLUSTER_MAX (the allocations that need
//! no direct reclaim in one batch, as readahead does), adds them to the page cache and the
//! inactive file list, copies into them and marks them dirty, then calls
//! `balance_dirty_pages_ratelimited()`. A writer that has written its file closes it and
//! starts the next one, `jobs` files in all (dd run again, as the live run does), then
//! exits; the run ends when every writer has (`jobs = 0`: new files until the run stops
//! it). A job's elapsed time is counted from its first write to its last (no `fsync`:
//! `conv` is the live run's only).
//! Writers start on the CPUs dd readers would (nodes in turn), each on device
//! `i % devices`; the first writer also starts the devices' flushers.
//!
//! **mmtests' simple-writeback** (`cpu_factors`, non-empty): the benchmark as
//! shellpacks/shellpack-bench-simple-writeback runs it (gormanm/mmtests 7ed65ad9, 2011; the
//! seed's), driven by its config's SIMPLE_WRITEBACK_MIN_CPU_FACTOR..MAX_CPU_FACTOR. A shell
//! (`sh`) runs one round per CPU factor, the factor doubling each round
//! (`CPU_FACTOR=$((CPU_FACTOR*2))`). A round starts `NR_JOBS = NUMCPUS × CPU_FACTOR` dd
//! jobs at once (`tasks` stands for NUMCPUS), each writing its own new file of
//! `FILESIZE / NR_JOBS / BS` blocks of BS bytes (`dd if=/dev/zero ibs=BS obs=BS count=…`,
//! FILESIZE = `file_mb × tasks` MiB, the config's `4 × MemTotal` when `file_mb` is a
//! quarter of it with 4 tasks; BS = `block_kb`), each timed by `/usr/bin/time` (a job's
//! elapsed time: its start to its exit). The shell then `wait`s for the jobs in order and
//! `rm`s each one's file once its job has exited (mm/truncate.rs: its page cache freed, dirty
//! pages never written), and after the last `sleep 1` before the next round. The test ends
//! after the last round's `sleep 1`; its elapsed time (`elapsed_s`) is mmtests' "Total
//! Elapsed Time" of the test (subreport/mmtests-duration: `/usr/bin/time` of the whole
//! run-single-test.sh, the benchmark run once with SKIP_FINEPROFILE and SKIP_COARSEPROFILE).
//! Departures: the shell's own work between rounds (reading /proc/vmstat, starting and
//! killing `vmstat`, the per-job report) is not modelled, only its `sleep 1`; the jobs'
//! processes all exist from the start, each asleep until its round launches it.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_SEC};
use crate::mm::compaction::kcompactd_run_nodes;
use crate::mm::filemap::{MAPPING_GFP, MAX_PAGECACHE_ORDER};
use crate::mm::gfp::{__GFP_NORETRY, __GFP_NOWARN};
use crate::mm::page_alloc::alloc_pages;
use crate::mm::page_writeback::{balance_dirty_pages_ratelimited, wb_start_flushers, DirtyTask};
use crate::mm::truncate::unlink_evict;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::process::{cond_resched, fatal_signal_pending, schedule, sleep_until, Cx, Sim};
use crate::sched::{TaskClass, WaitQueue};

pub const REGISTRATION: Registration = Registration {
    kind: "dd-write",
    about: "parallel dd writers, one file each (seed 001's simple-writeback)",
    resolve,
    build: Some(build),
    // The table is python/reclaimlab/summary.py's (its decimals and `+/-`), for both
    // backends, as usemem's.
    columns: &[],
    mappings: super::no_mappings,
    live: true,
};

/// The first mapping id of the writers' files (the dd readers' are their task numbers).
const FIRST_MAPPING: u32 = 1 << 24;
/// Files a writer may start (mapping ids per writer).
const FILES_PER_WRITER: u32 = 1 << 12;

/// The `[workload]` keys of `kind = "dd-write"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DdWriteParams {
    #[serde(default = "one")]
    tasks: u64,
    #[serde(default = "default_block_kb")]
    block_kb: u64,
    /// MiB each task writes.
    #[serde(default = "default_file_mb")]
    file_mb: u64,
    /// Files each writer writes, one after the other, before it exits (dd run `jobs` times);
    /// 0: new files until the run stops it.
    #[serde(default = "one")]
    jobs: u64,
    /// dd's `conv=` (e.g. `fdatasync`).
    #[serde(default)]
    conv: String,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
    /// mmtests' simple-writeback (module doc): one round per CPU factor, each double the one
    /// before, of `tasks × factor` dd jobs writing `file_mb × tasks` MiB between them.
    /// Empty: `tasks` writers of `jobs` files each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpu_factors: Vec<u64>,
}

/// The most dd jobs simple-writeback's rounds may start in all (each is a task).
const MAX_ROUND_JOBS: u64 = 16384;

/// One round of simple-writeback: its CPU factor, `NR_JOBS` and each job's
/// `FILESIZE_JOB_CHUNKS` (blocks of `block_kb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    pub cpu_factor: u64,
    pub jobs: u64,
    pub blocks: u64,
}

/// shellpack-bench-simple-writeback's rounds for `tasks` CPUs: `NR_JOBS = NUMCPUS ×
/// CPU_FACTOR`, `FILESIZE_JOB_CHUNKS = FILESIZE / NR_JOBS / BS` (shell integer division,
/// left to right) with `FILESIZE = file_mb × tasks` MiB and `BS = block_kb` KiB.
pub fn simple_writeback_rounds(
    tasks: u64,
    file_mb: u64,
    block_kb: u64,
    cpu_factors: &[u64],
) -> Vec<Round> {
    let filesize = (file_mb * tasks) << 20;
    let bs = block_kb << 10;
    cpu_factors
        .iter()
        .map(|&cpu_factor| {
            let jobs = tasks * cpu_factor;
            Round {
                cpu_factor,
                jobs,
                blocks: filesize / jobs / bs,
            }
        })
        .collect()
}

fn one() -> u64 {
    1
}
fn default_block_kb() -> u64 {
    1024
}
fn default_file_mb() -> u64 {
    1024
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<DdWriteParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("block_kb", p.block_kb)?;
    positive("file_mb", p.file_mb)?;
    if p.tasks > 4096 {
        return Err(WorkloadError::new("tasks", "expected at most 4096 writers"));
    }
    if p.block_kb % 4 != 0 {
        return Err(WorkloadError::new(
            "block_kb",
            "expected a multiple of 4 KiB",
        ));
    }
    if p.jobs > u64::from(FILES_PER_WRITER) {
        return Err(WorkloadError::new(
            "jobs",
            format!(
                "expected at most {FILES_PER_WRITER} files per writer (0: until the run stops)"
            ),
        ));
    }
    if p.file_mb > 64 * 1024 {
        return Err(WorkloadError::new(
            "file_mb",
            "expected at most 65536 (64 GiB)",
        ));
    }
    if !p.cpu_factors.is_empty() {
        check_cpu_factors(&p)?;
    }
    Ok(resolved)
}

/// `cpu_factors` as shellpack-bench-simple-writeback's loop makes them, with whole rounds.
fn check_cpu_factors(p: &DdWriteParams) -> Result<(), WorkloadError> {
    let f = &p.cpu_factors;
    let doubling = f[0] >= 1 && f.windows(2).all(|w| w[1] == w[0] * 2);
    if !doubling {
        return Err(WorkloadError::new(
            "cpu_factors",
            format!(
                "expected simple-writeback's CPU factors, from at least 1 each double the one before (CPU_FACTOR=$((CPU_FACTOR*2))), e.g. [1, 2, 4, 8, 16, 32, 64]; got {f:?}"
            ),
        ));
    }
    if p.jobs != 1 {
        return Err(WorkloadError::new(
            "jobs",
            "with cpu_factors each dd job writes one file: expected 1 (the default), or no cpu_factors",
        ));
    }
    let total: u64 = f.iter().map(|&c| p.tasks.saturating_mul(c)).sum();
    if total > MAX_ROUND_JOBS {
        return Err(WorkloadError::new(
            "cpu_factors",
            format!("expected at most {MAX_ROUND_JOBS} dd jobs over all rounds (tasks × Σ factors); got {total}"),
        ));
    }
    for r in simple_writeback_rounds(p.tasks, p.file_mb, p.block_kb, f) {
        if r.blocks == 0 {
            return Err(WorkloadError::new(
                "cpu_factors",
                format!(
                    "factor {}: {} jobs share file_mb × tasks = {} MiB, less than one {} KiB block each (dd count=0); expected file_mb × tasks ≥ jobs × block_kb / 1024",
                    r.cpu_factor, r.jobs, p.file_mb * p.tasks, p.block_kb
                ),
            ));
        }
    }
    Ok(())
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<DdWriteParams>(table).expect("a resolved table");
    Box::new(DdWrite {
        params,
        progress: Rc::default(),
        at_window_start: Vec::new(),
        window_start: 0,
        writers: Vec::new(),
        shell: None,
        bench: Rc::default(),
    })
}

/// simple-writeback's shell and its jobs: who has exited, the shell's wait, the rounds'
/// times.
#[derive(Debug, Default)]
struct Bench {
    /// Each job (all rounds', in order) has exited.
    exited: Vec<bool>,
    /// The shell, waiting in `wait $JOBPID`.
    wait: WaitQueue,
    test_start: Ns,
    test_end: Option<Ns>,
    /// Each round done: from its jobs' launch to the last one's file removed.
    rounds: Vec<(Ns, Ns)>,
}

/// A writer's progress: bytes written, and the elapsed time of each file it finished.
#[derive(Clone, Debug, Default)]
struct Progress {
    bytes: u64,
    jobs: Vec<Ns>,
    /// When each finished file's last write returned.
    ended: Vec<Ns>,
}

struct DdWrite {
    params: DdWriteParams,
    progress: Rc<RefCell<Vec<Progress>>>,
    /// The writers' tasks (with `cpu_factors`, every round's jobs, in order).
    writers: Vec<u32>,
    at_window_start: Vec<u64>,
    window_start: Ns,
    /// simple-writeback's shell (with `cpu_factors`).
    shell: Option<u32>,
    bench: Rc<RefCell<Bench>>,
}

impl Workload for DdWrite {
    fn start(&mut self, sim: &mut Sim) {
        wb_start_flushers(sim);
        let (nodes, cpn, ndev, large) = {
            let k = sim.k();
            (
                k.mem.nodes.len() as u32,
                k.cpus.nr_cpus_per_node,
                k.block.devices.len(),
                k.variant.large_folio_writes,
            )
        };
        if large {
            // Writes allocate large folios, compacting for them.
            kcompactd_run_nodes(sim);
        }
        if !self.params.cpu_factors.is_empty() {
            self.start_rounds(sim, nodes, cpn, ndev);
            return;
        }
        let p = &self.params;
        *self.progress.borrow_mut() = vec![Progress::default(); p.tasks as usize];
        for i in 0..p.tasks as u32 {
            let cpu = super::task_cpu(i, nodes, cpn);
            let w = Writer {
                slot: i as usize,
                dev: i as usize % ndev,
                first_mapping: FIRST_MAPPING + i * FILES_PER_WRITER,
                file_pages: p.file_mb * 256,
                block_pages: p.block_kb / 4,
                files: if p.jobs == 0 {
                    FILES_PER_WRITER
                } else {
                    p.jobs as u32
                },
            };
            let progress = Rc::clone(&self.progress);
            let id = sim.spawn("dd".into(), cpu, TaskClass::Workload, move |cx| {
                dd_write(cx, w, progress)
            });
            sim.k().sched.wake(id, Ns::from(i) * 1000);
            self.writers.push(id);
        }
    }

    fn ends_by_itself(&self) -> bool {
        self.params.jobs > 0
    }

    fn finished(&self, sim: &Sim) -> bool {
        match self.shell {
            Some(sh) => sim.exited(sh),
            None => self.ends_by_itself() && super::all_exited(sim, &self.writers),
        }
    }

    fn window_started(&mut self, now: Ns) {
        self.at_window_start = self.progress.borrow().iter().map(|p| p.bytes).collect();
        self.window_start = now;
    }

    fn metrics(&self, elapsed_s: f64) -> Metrics {
        let progress = self.progress.borrow();
        let bytes: u64 = progress
            .iter()
            .zip(&self.at_window_start)
            .map(|(p, a)| p.bytes - a)
            .sum();
        // Jobs that ended in the window.
        let jobs: Vec<f64> = progress
            .iter()
            .flat_map(|p| p.jobs.iter().zip(&p.ended))
            .filter(|&(_, &end)| end >= self.window_start)
            .map(|(&j, _)| j as f64 / NSEC_PER_SEC as f64)
            .collect();
        let mean = if jobs.is_empty() {
            0.0
        } else {
            jobs.iter().sum::<f64>() / jobs.len() as f64
        };
        let sd = if jobs.is_empty() {
            0.0
        } else {
            (jobs.iter().map(|j| (j - mean).powi(2)).sum::<f64>() / jobs.len() as f64).sqrt()
        };
        let round = |v: f64, d: i32| (v * 10f64.powi(d)).round() / 10f64.powi(d);
        let mut m = Metrics::new();
        m.insert("tasks".into(), self.params.tasks.into());
        m.insert("jobs".into(), jobs.len().into());
        m.insert("job_elapsed_mean_s".into(), round(mean, 3).into());
        let sd_pct = if mean > 0.0 { sd * 100.0 / mean } else { 0.0 };
        m.insert("job_elapsed_stddev_pct".into(), round(sd_pct, 2).into());
        m.insert("bytes".into(), bytes.into());
        m.insert(
            "throughput_kB_s".into(),
            round(bytes as f64 / 1024.0 / elapsed_s, 1).into(),
        );
        if !self.params.cpu_factors.is_empty() {
            self.round_metrics(&mut m);
        }
        m
    }
}

impl DdWrite {
    /// Spawn simple-writeback's shell and every round's jobs (asleep until the shell
    /// launches their round); the shell runs at once.
    fn start_rounds(&mut self, sim: &mut Sim, nodes: u32, cpn: u32, ndev: usize) {
        let p = &self.params;
        let rounds = simple_writeback_rounds(p.tasks, p.file_mb, p.block_kb, &p.cpu_factors);
        let total: u64 = rounds.iter().map(|r| r.jobs).sum();
        *self.progress.borrow_mut() = vec![Progress::default(); total as usize];
        self.bench.borrow_mut().exited = vec![false; total as usize];
        let mut job = 0u32;
        for r in &rounds {
            for i in 0..r.jobs as u32 {
                let w = Writer {
                    slot: job as usize,
                    dev: i as usize % ndev,
                    first_mapping: FIRST_MAPPING + job,
                    file_pages: r.blocks * p.block_kb / 4,
                    block_pages: p.block_kb / 4,
                    files: 1,
                };
                let progress = Rc::clone(&self.progress);
                let bench = Rc::clone(&self.bench);
                let cpu = super::task_cpu(i, nodes, cpn);
                let id = sim.spawn("dd".into(), cpu, TaskClass::Workload, move |cx| {
                    dd_job(cx, w, progress, bench)
                });
                self.writers.push(id);
                job += 1;
            }
        }
        let jobs = self.writers.clone();
        let bench = Rc::clone(&self.bench);
        let cpu = super::task_cpu(0, nodes, cpn);
        let sh = sim.spawn("sh".into(), cpu, TaskClass::Workload, move |cx| {
            simple_writeback(cx, rounds, jobs, bench)
        });
        sim.k().sched.wake(sh, 0);
        self.shell = Some(sh);
    }

    /// simple-writeback's metrics: the whole test's elapsed time (null until it completed)
    /// and each round's mean job elapsed time and its standard deviation in % of the mean,
    /// as mmtests reports them (subreport/simple-writeback's row per job count and `+/-`).
    fn round_metrics(&self, m: &mut Metrics) {
        let p = &self.params;
        let bench = self.bench.borrow();
        let progress = self.progress.borrow();
        let secs = |ns: Ns| ns as f64 / NSEC_PER_SEC as f64;
        let round = |v: f64, d: i32| (v * 10f64.powi(d)).round() / 10f64.powi(d);
        let elapsed = bench
            .test_end
            .map(|end| round(secs(end - bench.test_start), 3));
        m.insert("completed".into(), bench.test_end.is_some().into());
        m.insert("elapsed_s".into(), elapsed.into());
        let mut first = 0usize;
        let mut rounds = Vec::new();
        for (n, r) in simple_writeback_rounds(p.tasks, p.file_mb, p.block_kb, &p.cpu_factors)
            .iter()
            .enumerate()
        {
            let jobs = &progress[first..first + r.jobs as usize];
            first += r.jobs as usize;
            let times: Vec<f64> = jobs
                .iter()
                .flat_map(|j| j.jobs.iter().map(|&t| secs(t)))
                .collect();
            let mean = if times.is_empty() {
                0.0
            } else {
                times.iter().sum::<f64>() / times.len() as f64
            };
            // mmtests' `+/-` row: the standard deviation as a percentage of the mean.
            let sd_pct = if mean > 0.0 {
                let var =
                    times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / times.len() as f64;
                var.sqrt() * 100.0 / mean
            } else {
                0.0
            };
            let mut o = serde_json::Map::new();
            o.insert("cpu_factor".into(), r.cpu_factor.into());
            o.insert("jobs".into(), r.jobs.into());
            o.insert(
                "bytes_per_job".into(),
                (r.blocks * p.block_kb * 1024).into(),
            );
            o.insert("jobs_done".into(), times.len().into());
            o.insert("job_elapsed_mean_s".into(), round(mean, 3).into());
            o.insert("job_elapsed_stddev_pct".into(), round(sd_pct, 2).into());
            let took = bench.rounds.get(n).map(|&(a, b)| round(secs(b - a), 3));
            o.insert("elapsed_s".into(), took.into());
            rounds.push(serde_json::Value::Object(o));
        }
        m.insert("rounds".into(), rounds.into());
    }
}

/// shellpack-bench-simple-writeback's loop (module doc), by the shell task of `cx`: each
/// round's `jobs` (their tasks, in order) launched together, waited for in order, each one's
/// file removed once it has exited, then `sleep 1`.
async fn simple_writeback(cx: Cx, rounds: Vec<Round>, jobs: Vec<u32>, bench: Rc<RefCell<Bench>>) {
    bench.borrow_mut().test_start = cx.k().clock();
    let mut first = 0usize;
    for r in &rounds {
        let start = cx.k().clock();
        {
            // `dd … &` for JOB in `seq 1 $NR_JOBS`, a microsecond apart.
            let mut k = cx.k();
            for (i, &t) in jobs[first..first + r.jobs as usize].iter().enumerate() {
                k.sched.wake(t, start + i as Ns * 1000);
            }
        }
        for job in first..first + r.jobs as usize {
            // `wait $JOBPID`
            loop {
                let exited = {
                    let mut b = bench.borrow_mut();
                    if !b.exited[job] {
                        b.wait.add(cx.tid);
                    }
                    b.exited[job]
                };
                if exited {
                    break;
                }
                schedule(&cx).await;
            }
            // `rm $SHELLPACK_TEMP/file-$JOB`
            unlink_evict(&cx, FIRST_MAPPING + job as u32).await;
        }
        first += r.jobs as usize;
        let end = cx.k().clock();
        bench.borrow_mut().rounds.push((start, end));
        // `sleep 1`
        sleep_until(&cx, end + NSEC_PER_SEC).await;
    }
    bench.borrow_mut().test_end = Some(cx.k().clock());
}

/// One simple-writeback dd job: its file written, then its exit noted and the shell woken
/// if it waits.
async fn dd_job(
    cx: Cx,
    w: Writer,
    progress: Rc<RefCell<Vec<Progress>>>,
    bench: Rc<RefCell<Bench>>,
) {
    write_files(&cx, w, &progress).await;
    let mut k = cx.k();
    let now = k.clock();
    let mut b = bench.borrow_mut();
    b.exited[w.slot] = true;
    b.wait.wake_up_all(&mut k.sched, now);
}

/// One writer: its slot, its device, its files' mapping ids, and the sizes in pages.
#[derive(Clone, Copy)]
struct Writer {
    slot: usize,
    dev: usize,
    first_mapping: u32,
    file_pages: u64,
    block_pages: u64,
    /// Files it writes before it exits.
    files: u32,
}

/// `filemap_add_folios` and `generic_perform_write` of new `folios` at `index` of `mapping`.
fn write_folios(cx: &Cx, mapping: u32, index: u64, folios: &[u32]) {
    let mut k = cx.k();
    k.filemap_add_folios(mapping, index, folios, cx.cpu);
    k.generic_perform_write(mapping, index as u32, folios, cx.node);
}

/// One `write()` of the new pages `index..end` of `mapping`: page-cache folios allocated in
/// runs of up to SWAP_CLUSTER_MAX (the slow path, and perhaps direct reclaim, for the folio
/// a run could not get), copied into and dirtied, `balance_dirty_pages_ratelimited()` after
/// each run. `folios` is the caller's buffer.
pub(super) async fn write_block(
    cx: &Cx,
    t: &mut DirtyTask,
    folios: &mut Vec<u32>,
    mapping: u32,
    index: u64,
    end: u64,
) {
    // __generic_file_aio_write() (2.6.36): `current->backing_dev_info` is the file's
    // device for the write, so its own reclaim may queue writes there however congested
    // (`may_write_to_queue()`, mm/congestion.rs).
    cx.k().sched.tasks[cx.tid as usize].backing_dev_info = Some(t.dev);
    if cx.k().variant.large_folio_writes {
        write_block_large(cx, t, folios, mapping, index, end).await;
    } else {
        write_block_order0(cx, t, folios, mapping, index, end).await;
    }
    cx.k().sched.tasks[cx.tid as usize].backing_dev_info = None;
}

/// [`write_block`] in order-0 folios.
async fn write_block_order0(
    cx: &Cx,
    t: &mut DirtyTask,
    folios: &mut Vec<u32>,
    mapping: u32,
    mut index: u64,
    end: u64,
) {
    while index < end {
        let want = (end - index).min(SWAP_CLUSTER_MAX) as usize;
        folios.clear();
        let got = cx
            .k()
            .alloc_pages_batch(MAPPING_GFP, cx.node, cx.cpu, want, folios);
        if got > 0 {
            write_folios(cx, mapping, index, folios);
            index += got as u64;
        }
        if got < want {
            // The next folio needs the slow path (direct reclaim, perhaps).
            let p = alloc_pages(cx, MAPPING_GFP, 0, cx.node).await;
            let p = p.expect("a page-cache allocation retries until it succeeds");
            write_folios(cx, mapping, index, &[p]);
            index += 1;
        }
        let n = (got + usize::from(got < want)) as u64;
        balance_dirty_pages_ratelimited(cx, t, n).await;
    }
}

/// [`write_block`] with `variant.large_folio_writes`: `generic_perform_write()`'s loop of
/// 6.18, a folio at a time. Each step writes at most to the end of the MAX_PAGECACHE_ORDER
/// chunk it is in (`mapping_max_folio_size()`), and `write_begin` →
/// `__filemap_get_folio(FGP_WRITEBEGIN | fgf_set_order(len))` allocates a folio of order
/// `ilog2(len)` (in pages), lowered to the index's alignment (`__ffs(index)`), trying each
/// lower order in turn (order 1 skipped, `__GFP_NORETRY | __GFP_NOWARN` above order 0)
/// until one is had; the folio is added to the page cache, copied into and dirtied whole,
/// then `balance_dirty_pages_ratelimited()`. An order-0 folio takes the order-0 path.
async fn write_block_large(
    cx: &Cx,
    t: &mut DirtyTask,
    folios: &mut Vec<u32>,
    mapping: u32,
    mut index: u64,
    end: u64,
) {
    const CHUNK: u64 = 1 << MAX_PAGECACHE_ORDER;
    while index < end {
        let len = (CHUNK - (index & (CHUNK - 1))).min(end - index);
        let mut order = len.ilog2().min(MAX_PAGECACHE_ORDER);
        if index & ((1u64 << order) - 1) != 0 {
            order = index.trailing_zeros();
        }
        let mut folio = None;
        while order > 0 {
            if order == 1 {
                order = 0;
                break;
            }
            let gfp = MAPPING_GFP | __GFP_NORETRY | __GFP_NOWARN;
            folio = alloc_pages(cx, gfp, order, cx.node).await;
            if folio.is_some() {
                break;
            }
            order -= 1;
        }
        let Some(p) = folio else {
            // Order 0: one page through the order-0 path.
            write_block_order0(cx, t, folios, mapping, index, index + 1).await;
            index += 1;
            continue;
        };
        {
            let mut k = cx.k();
            k.prep_compound_folio(p, order);
            k.filemap_add_large_folio(mapping, index, p, cx.cpu);
            k.generic_perform_write(mapping, index as u32, &[p], cx.node);
        }
        let nr = 1u64 << order;
        index += nr;
        balance_dirty_pages_ratelimited(cx, t, nr).await;
    }
}

/// dd if=/dev/zero of=file bs=block_kb: `write()` calls of a block each, file after file.
async fn dd_write(cx: Cx, w: Writer, progress: Rc<RefCell<Vec<Progress>>>) {
    write_files(&cx, w, &progress).await;
}

/// [`dd_write`]'s files, by the task of `cx`.
async fn write_files(cx: &Cx, w: Writer, progress: &RefCell<Vec<Progress>>) {
    let cx = cx.clone();
    let mut t = DirtyTask::new(w.dev);
    cx.k().wb.wbs[w.dev].nr_dirtiers += 1;
    let mut folios = Vec::with_capacity(SWAP_CLUSTER_MAX as usize);
    for file in 0..w.files {
        let mapping = w.first_mapping + file;
        let started = {
            let mut k = cx.k();
            k.wb_new_inode(mapping, w.dev, 0);
            k.clock()
        };
        let mut index = 0u64;
        while index < w.file_pages {
            let block_end = (index + w.block_pages).min(w.file_pages);
            {
                let mut k = cx.k();
                let syscall = k.costs.syscall_ns;
                k.charge(syscall);
            }
            let block_start = index;
            write_block(&cx, &mut t, &mut folios, mapping, index, block_end).await;
            index = block_end;
            progress.borrow_mut()[w.slot].bytes += (block_end - block_start) * 4096;
            if fatal_signal_pending(&cx) {
                cx.k().wb.wbs[w.dev].nr_dirtiers -= 1;
                return;
            }
            cond_resched(&cx).await;
        }
        let mut k = cx.k();
        k.wb_close_inode(mapping);
        let now = k.clock();
        let mut pr = progress.borrow_mut();
        pr[w.slot].jobs.push(now - started);
        pr[w.slot].ended.push(now);
    }
    cx.k().wb.wbs[w.dev].nr_dirtiers -= 1;
}
