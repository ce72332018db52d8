//! mmtests' micro/mapped-file-stream (Johannes Weiner's, seeds 001 and 003): each task maps
//! its own sparse file of `size_mb` `MAP_SHARED`, `madvise(MADV_RANDOM)`, and reads one byte
//! of each page in turn, once. Every read faults (`mm::filemap::filemap_fault`): a hole, so
//! a new zero-filled page-cache folio, mapped once and never touched again — a stream of
//! used-once mapped file pages that reclaim must find through their page-table entries.
//! A task ends when it has read its last page; the run ends when every task has.
//!
//! With `write = true` it is mmtests' micro/vmscan-file-mmap-write, the seed-001 era's
//! "mmap-strm" (mmtests' pagereclaim-performance configuration of 2011 runs it as its
//! `micro` test): each task is `usemem -f sparse-N -j 4096 SIZE`, which maps its sparse
//! file `MAP_SHARED` and writes one word of each page in turn, once — a stream of
//! used-once dirty mapped file pages that the flushers and reclaim must write back. Each
//! write faults (`mm::memory::handle_mm_fault_shared_write`): a hole's new zero-filled
//! folio, dirtied by the fault (`fault_dirty_shared_page()`), after which the task calls
//! `balance_dirty_pages_ratelimited()`. mmtests sizes the files at 10 × MemTotal over
//! NUM_CPU tasks (`MICRO_VMSCAN_FILE_MMAP_OPS_SIZE`, `_NUM_THREADS`). File `i` is on device
//! `i % devices`, as dd-write's writers.
//!
//! mmtests sizes the file at 4 × MemTotal; both backends take `size_mb` (1024 unless given,
//! the live helper's default), so a scenario sets it to 4 × its memory to be mmtests'.
//! Metrics, as the live backend's: `pages` (pages read in the measured window),
//! `task_elapsed_s` (each task from its start to its last page, as mmtests' `time` of the
//! program), and `elapsed_s`, the longest of them.
//!
//! Departures: usemem does not `madvise(MADV_RANDOM)` (its VMA has recency: reclaim sees its
//! accessed bits, `vma_has_recency()`), so the kernel's write faults read
//! around (`do_sync_mmap_readahead()`: a window of holes added to the page cache at once,
//! the faults after it minor); the model adds each page at its own fault. The mixed phase
//! that the seed also names ("followed by streaming writes to a mix of anonymous and
//! file-backed mappings", micro/vmscan-mixed-mmap-ops) is not modelled: its passes read back
//! file pages written and evicted, and the model's faults know only holes. The read of a
//! present page costs `usemem_word_ns` (a cache and TLB miss; no
//! read in the stream finds its page present but one just faulted); a task that ends keeps
//! its mapping and its file's pages cached until the run ends (mmtests' child exits, and
//! its unlinked file is truncated then), which changes no event counter of the seed's
//! tables; the harness's wait for kswapd to sleep before reading vmstat is not modelled.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Column, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_SEC};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::memory::{handle_mm_fault, handle_mm_fault_shared_write};
use crate::mm::page_writeback::{balance_dirty_pages_ratelimited, wb_start_flushers, DirtyTask};
use crate::mm::swap_state::SwapinScratch;
use crate::mm::vma::{pte_present, vm};
use crate::process::{cond_resched, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "mapped-file-stream",
    about: "mmtests mapped-file-stream: one byte read (or, with write, one word stored) per page of mmap()ed sparse files (seeds 001, 003)",
    resolve,
    build: Some(build),
    columns: &[
        Column {
            header: "elapsed_s",
            source: "metrics.elapsed_s",
        },
        Column {
            header: "pgscan_kswapd",
            source: "vmstat.pgscan_kswapd",
        },
        Column {
            header: "pgscan_direct",
            source: "vmstat.pgscan_direct",
        },
        Column {
            header: "pgsteal",
            source: "vmstat.pgsteal_*",
        },
        Column {
            header: "allocstall",
            source: "vmstat.allocstall_*",
        },
    ],
    mappings,
    live: true,
};

/// The `[workload]` keys of `kind = "mapped-file-stream"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MappedFileStreamParams {
    #[serde(default = "one")]
    tasks: u64,
    /// MiB each task maps.
    #[serde(default = "default_size_mb")]
    size_mb: u64,
    /// Where a live run creates its files (simulated runs have no directory).
    #[serde(default = "super::dd::default_dir")]
    dir: String,
    /// Write a word of each page instead of reading a byte (usemem -f, vmscan-file-mmap-write).
    #[serde(default, skip_serializing_if = "is_false")]
    write: bool,
}

fn is_false(v: &bool) -> bool {
    !v
}

fn one() -> u64 {
    1
}
fn default_size_mb() -> u64 {
    1024
}

/// The tasks' files' mapping ids, `FIRST_MAPPING + task`: clear of the dd readers' (their
/// task numbers) and small, as a file of known size's index is found by its mapping id
/// (`AddressSpaces`), and below dd-write's (`1 << 24`).
const FIRST_MAPPING: u32 = 1 << 16;
/// Tasks a run may have (the mapping ids up to dd-write's).
const MAX_TASKS: u64 = (1 << 24) - FIRST_MAPPING as u64;

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<MappedFileStreamParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("size_mb", p.size_mb)?;
    if p.tasks > MAX_TASKS {
        return Err(WorkloadError::new(
            "tasks",
            format!("expected at most {MAX_TASKS} tasks"),
        ));
    }
    if p.tasks.saturating_mul(p.size_mb).saturating_mul(256) >= u64::from(u32::MAX) {
        return Err(WorkloadError::new(
            "size_mb",
            "expected tasks × size_mb under 16 TiB (the model's 32-bit page-table index)",
        ));
    }
    Ok(resolved)
}

/// Each task maps one VMA of `size_mb`.
fn mappings(table: &toml::Table) -> (u64, u64) {
    let (p, _) = resolve_params::<MappedFileStreamParams>(table).expect("a resolved table");
    (p.tasks, p.tasks * p.size_mb * 256)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<MappedFileStreamParams>(table).expect("a resolved table");
    Box::new(MappedFileStream {
        params,
        stats: Rc::default(),
        pages_at_window_start: 0,
        tasks: Vec::new(),
    })
}

#[derive(Clone, Copy, Default)]
struct TaskStats {
    pages: u64,
    started: Ns,
    ended: Option<Ns>,
}

struct MappedFileStream {
    params: MappedFileStreamParams,
    stats: Rc<RefCell<Vec<TaskStats>>>,
    pages_at_window_start: u64,
    tasks: Vec<u32>,
}

impl Workload for MappedFileStream {
    fn start(&mut self, sim: &mut Sim) {
        if self.params.write {
            wb_start_flushers(sim);
        }
        let p = &self.params;
        let write = p.write;
        let (nodes, cpn, first, ndev) = {
            let k = sim.k();
            let first = k
                .sched
                .tasks
                .iter()
                .filter(|t| t.class == TaskClass::Workload)
                .count() as u32;
            (
                k.mem.nodes.len() as u32,
                k.cpus.nr_cpus_per_node,
                first,
                k.block.devices.len(),
            )
        };
        let nr_pages = u32::try_from(p.size_mb * 256).expect("size_mb fits the page tables");
        *self.stats.borrow_mut() = vec![TaskStats::default(); p.tasks as usize];
        for i in 0..p.tasks as u32 {
            let cpu = super::task_cpu(first + i, nodes, cpn);
            let stats = Rc::clone(&self.stats);
            let id = sim.spawn(
                "mapped-file-stream".into(),
                cpu,
                TaskClass::Workload,
                move |cx| async move {
                    if write {
                        write_stream(cx, i as usize, nr_pages, stats).await
                    } else {
                        stream(cx, i as usize, nr_pages, stats).await
                    }
                },
            );
            let mut k = sim.k();
            // ftruncate() of a new file: sparse, every page a hole.
            let mapping = FIRST_MAPPING + i;
            k.address_spaces.create(mapping, u64::from(nr_pages));
            if write {
                k.wb_new_inode(mapping, i as usize % ndev, 0);
            }
            // mapped-file-stream.c madvise()s MADV_RANDOM; usemem -f gives no advice.
            let vm_flags = if write { vm::WRITE_ONLY } else { vm::RAND_READ };
            k.mmap_file(id, nr_pages, mapping, 0, vm_flags);
            k.sched.wake(id, Ns::from(i) * 1000);
            drop(k);
            self.tasks.push(id);
        }
    }

    fn ends_by_itself(&self) -> bool {
        true
    }

    fn finished(&self, sim: &Sim) -> bool {
        super::all_exited(sim, &self.tasks)
    }

    fn window_started(&mut self, _now: Ns) {
        self.pages_at_window_start = self.stats.borrow().iter().map(|t| t.pages).sum();
    }

    fn metrics(&self, _elapsed_s: f64) -> Metrics {
        let stats = self.stats.borrow();
        let pages: u64 = stats.iter().map(|t| t.pages).sum();
        let elapsed: Vec<f64> = stats
            .iter()
            .filter_map(|t| {
                t.ended
                    .map(|e| (e - t.started) as f64 / NSEC_PER_SEC as f64)
            })
            .collect();
        let mut m = Metrics::new();
        m.insert("tasks".into(), self.params.tasks.into());
        m.insert("pages".into(), (pages - self.pages_at_window_start).into());
        m.insert(
            "elapsed_s".into(),
            elapsed.iter().copied().fold(0.0, f64::max).into(),
        );
        m.insert("task_elapsed_s".into(), elapsed.into());
        m
    }
}

/// The VMA mapped for task `cx.tid` by `start`, and its first page-table entry.
fn task_vma(cx: &Cx) -> (u32, u32) {
    let k = cx.k();
    let vma = k.mm.task_vma(cx.tid).expect("start mapped the task's file");
    (vma, k.mm.vmas[vma as usize].start)
}

/// One task of vmscan-file-mmap-write: writes a word of each page of its VMA, faulting
/// each in, and throttled as a dirtier.
async fn write_stream(cx: Cx, slot: usize, nr_pages: u32, stats: Rc<RefCell<Vec<TaskStats>>>) {
    let (vma, base) = task_vma(&cx);
    let (dev, write_ns) = {
        let mut k = cx.k();
        let mapping = k.mm.vm_file(vma).expect("a file VMA").mapping;
        let dev = k.wb.inodes[k.wb.inode(mapping).expect("start made the inode")].dev;
        k.wb.wbs[dev].nr_dirtiers += 1;
        (dev, k.costs.usemem_word_ns)
    };
    let mut t = DirtyTask::new(dev);
    stats.borrow_mut()[slot].started = cx.k().clock();
    let mut addr = 0;
    while addr < nr_pages {
        let idx = base + addr;
        let present = pte_present(cx.k().mm.ptes[idx as usize]);
        if !present {
            let (_, dirtied) = handle_mm_fault_shared_write(&cx, vma, addr).await;
            if dirtied {
                balance_dirty_pages_ratelimited(&cx, &mut t, 1).await;
            }
        }
        {
            let mut k = cx.k();
            if !pte_present(k.mm.ptes[idx as usize]) {
                // Reclaimed while the fault slept in balance_dirty_pages(): the store faults
                // again (and, the model's faults knowing only holes, finds a hole even if
                // the folio was written back before it was freed).
                continue;
            }
            k.mm.mark_young(idx);
            k.charge_user(write_ns);
        }
        addr += 1;
        stats.borrow_mut()[slot].pages += 1;
        cond_resched(&cx).await;
    }
    cx.k().wb.wbs[dev].nr_dirtiers -= 1;
    stats.borrow_mut()[slot].ended = Some(cx.k().clock());
}

/// One task: reads a byte of each page of the VMA `start` mapped for it (found by its task
/// id), faulting each in.
async fn stream(cx: Cx, slot: usize, nr_pages: u32, stats: Rc<RefCell<Vec<TaskStats>>>) {
    let (vma, base) = task_vma(&cx);
    let read_ns = cx.k().costs.usemem_word_ns;
    stats.borrow_mut()[slot].started = cx.k().clock();
    let mut scratch = SwapinScratch::default();
    let mut addr = 0;
    while addr < nr_pages {
        let present = pte_present(cx.k().mm.ptes[(base + addr) as usize]);
        if !present {
            handle_mm_fault(&cx, vma, addr, ROOT_MEM_CGROUP, &mut scratch).await;
        }
        {
            let mut k = cx.k();
            let idx = base + addr;
            if !pte_present(k.mm.ptes[idx as usize]) {
                // Reclaimed before the read (or the fault found it being added): again.
                continue;
            }
            // The read: the hardware sets the accessed bit.
            k.mm.mark_young(idx);
            k.charge_user(read_ns);
        }
        addr += 1;
        stats.borrow_mut()[slot].pages += 1;
        cond_resched(&cx).await;
    }
    stats.borrow_mut()[slot].ended = Some(cx.k().clock());
}
