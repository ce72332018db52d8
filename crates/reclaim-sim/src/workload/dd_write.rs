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
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::process::{cond_resched, fatal_signal_pending, Cx, Sim};
use crate::sched::TaskClass;

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
    Ok(resolved)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<DdWriteParams>(table).expect("a resolved table");
    Box::new(DdWrite {
        params,
        progress: Rc::default(),
        at_window_start: Vec::new(),
        window_start: 0,
        writers: Vec::new(),
    })
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
    /// The writers' tasks.
    writers: Vec<u32>,
    at_window_start: Vec<u64>,
    window_start: Ns,
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
        self.ends_by_itself() && super::all_exited(sim, &self.writers)
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
        m
    }
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
    k.filemap_add_folios(mapping, folios, cx.cpu);
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
            k.filemap_add_large_folio(mapping, p, cx.cpu);
            k.generic_perform_write(mapping, index as u32, &[p], cx.node);
        }
        let nr = 1u64 << order;
        index += nr;
        balance_dirty_pages_ratelimited(cx, t, nr).await;
    }
}

/// dd if=/dev/zero of=file bs=block_kb: `write()` calls of a block each, file after file.
async fn dd_write(cx: Cx, w: Writer, progress: Rc<RefCell<Vec<Progress>>>) {
    let mut t = DirtyTask::new(w.dev);
    cx.k().wb.wbs[w.dev].nr_dirtiers += 1;
    let mut folios = Vec::with_capacity(SWAP_CLUSTER_MAX as usize);
    for file in 0..w.files {
        let mapping = w.first_mapping + file;
        let started = {
            let mut k = cx.k();
            k.wb_new_inode(mapping, w.dev);
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
