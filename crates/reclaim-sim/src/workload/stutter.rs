//! mmtests' stutter (seeds 001 and 004): a memory hog and a large file copy while a probe
//! times mmap() page faults (shellpack `stutter-bench` @501fd3d1^, docs WORKLOADS.md §1.1).
//!
//! Simulated as the live run does it (python/reclaimlab/live/workloads.py `Stutter`), three
//! tasks on the CPUs the live run's would take (`task_cpu` 0, 1, 2; on a machine of two
//! CPUs the copy takes the memhog's, as fork balancing gives it there):
//!
//! * the **latency probe**, throughout the run: `nanosleep(5 ms)`, then `mmap` of
//!   `probe_pages` anonymous pages, a write of one word to each (a fault on each empty
//!   page, `mm::memory::handle_mm_fault`: a huge page where `transparent_hugepage` allows,
//!   and whatever allocation, reclaim and compaction it takes; `usemem_word_ns` for a word
//!   written to a page already present), and `munmap` (`mm::mmap`). A loop's latency is the
//!   time since the previous loop's end less the 5 ms, clamped at 0, so it includes any
//!   oversleep; latencies under 5 ms are averaged in batches of 1000 and reported as
//!   `count avg_ns` lines, a longer one alone after the partial batch, as the probe prints
//!   them, and the metrics expand each line into `count` samples (ExtractStutter);
//! * the **memhog**, each iteration: `mmap` of `memhog_mb` of anonymous memory and a write
//!   of one word per page (faults as the probe's), then it waits (`pause()`) at least
//!   `settle_s` from its start; once the copy is done it is killed (its VMA unmapped);
//! * the **copy**, each iteration once the memhog has settled: `cp source dest; sync`: the
//!   source file (`file_mb`, read through the page cache as dd does, `mm::filemap`) written
//!   to a new file in `block_kb` writes (`generic_perform_write`, dirty throttling, as
//!   dd-write's), then `sync`: the flushers are asked to write every dirty page
//!   (`wakeup_flusher_threads`) and the copy waits until none is dirty or under writeback.
//!
//! The run ends when the last iteration's copy is done, as the live run's does (its probe is
//! then stopped, and its memhog killed). Metrics are
//! the live run's: `iterations`, `mmap_latency_ms` (samples, mean, p50/p95/p99, max,
//! `delayed` over 5 ms, and `mmtests`, the latency table's rows from
//! `reclaim_trace::report::latency_rows`), `copy_elapsed_s` and `tput_MiB_s` per iteration
//! (`file_mb / (elapsed + 1)`, stutterthroughput's).
//!
//! Departures: `sync` is polled every `SYNC_POLL_NS` rather than woken by the last
//! writeback's completion; each iteration writes a new destination file (the live `cp`
//! truncates the same one, freeing its page cache); the source starts uncached (mmtests
//! drops caches before the probe starts).

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};
use crate::mm::filemap::SequentialReader;
use crate::mm::memory::handle_mm_fault;
use crate::mm::mmap::munmap;
use crate::mm::page_writeback::{wb_start_flushers, DirtyTask};
use crate::mm::swap_state::SwapinScratch;
use crate::mm::vma::pte_present;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::process::{cond_resched, schedule, sleep_until, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "stutter",
    about: "mmtests stutter: mmap latency while a hog and a file copy run (seeds 001, 004)",
    resolve,
    build: Some(build),
    columns: &[],
    mappings,
    live: true,
};

/// The `[workload]` keys of `kind = "stutter"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StutterParams {
    #[serde(default = "default_memhog_mb")]
    memhog_mb: u64,
    #[serde(default = "default_file_mb")]
    file_mb: u64,
    #[serde(default = "default_block_kb")]
    block_kb: u64,
    #[serde(default = "one")]
    iterations: u64,
    /// Pages the latency probe maps and faults.
    #[serde(default = "default_probe_pages")]
    probe_pages: u64,
    /// Seconds the probe runs alone before each iteration.
    #[serde(default = "default_settle_s")]
    settle_s: f64,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
}

fn one() -> u64 {
    1
}
fn default_memhog_mb() -> u64 {
    512
}
fn default_file_mb() -> u64 {
    1024
}
fn default_block_kb() -> u64 {
    2048
}
fn default_probe_pages() -> u64 {
    32768
}
fn default_settle_s() -> f64 {
    2.0
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<StutterParams>(table)?;
    positive("memhog_mb", p.memhog_mb)?;
    positive("file_mb", p.file_mb)?;
    positive("block_kb", p.block_kb)?;
    positive("iterations", p.iterations)?;
    positive("probe_pages", p.probe_pages)?;
    if p.settle_s.is_nan() || p.settle_s < 0.0 {
        return Err(WorkloadError::new("settle_s", "expected seconds ≥ 0"));
    }
    if p.block_kb % 4 != 0 {
        return Err(WorkloadError::new(
            "block_kb",
            "expected a multiple of 4 KiB",
        ));
    }
    if (p.memhog_mb * 256).saturating_add(p.probe_pages) >= u64::from(u32::MAX) / 2 {
        return Err(WorkloadError::new(
            "memhog_mb",
            "expected memhog_mb × 256 + probe_pages under 2^31 (the model's 32-bit page-table index)",
        ));
    }
    Ok(resolved)
}

/// The memhog's VMA and the probe's (each reused from one mapping to the next).
fn mappings(table: &toml::Table) -> (u64, u64) {
    let (p, _) = resolve_params::<StutterParams>(table).expect("a resolved table");
    (2, p.memhog_mb * 256 + p.probe_pages)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<StutterParams>(table).expect("a resolved table");
    Box::new(Stutter {
        params,
        state: Rc::default(),
        window: (0, 0),
    })
}

/// The latency probe's sleep (`nanosleep`) and its batching threshold.
const PROBE_DELAY_NS: Ns = 5 * NSEC_PER_MSEC;
/// `PRINT_THRESHOLD`: latencies under the delay are averaged over this many loops.
const PROBE_BATCH: u64 = 1000;
/// How often `sync` looks whether writeback is done.
pub const SYNC_POLL_NS: Ns = NSEC_PER_MSEC;
/// The source file's and the copies' mapping ids (dd readers use their task numbers,
/// dd-write's writers 2^24 up).
const SOURCE_MAPPING: u32 = 3 << 24;

/// What the three tasks share.
#[derive(Default)]
struct State {
    /// The probe's output lines: (count, mean latency in ns).
    lines: Vec<(u64, u64)>,
    /// The probe's batch not yet printed: (count, summed latency in ns). The run's end
    /// stops the probe, which prints it then, as the live probe does at SIGINT.
    pending: (u64, u64),
    /// The copies' elapsed times.
    copies: Vec<Ns>,
    /// The memhog has settled: the copy may start (iteration number + 1).
    copy_go: u64,
    /// The copy of that iteration is done: the memhog may be killed.
    copy_done: u64,
    /// Task ids: (memhog, copy).
    tids: (u32, u32),
}

struct Stutter {
    params: StutterParams,
    state: Rc<RefCell<State>>,
    /// At the window's start: (probe lines, copies).
    window: (usize, usize),
}

impl Workload for Stutter {
    fn start(&mut self, sim: &mut Sim) {
        wb_start_flushers(sim);
        let (nodes, cpn, thp) = {
            let k = sim.k();
            (
                k.mem.nodes.len() as u32,
                k.cpus.nr_cpus_per_node,
                k.thp_faults_possible(),
            )
        };
        if thp {
            for nid in 0..nodes {
                crate::mm::compaction::kcompactd_run(sim, nid);
            }
        }
        let first = sim
            .k()
            .sched
            .tasks
            .iter()
            .filter(|t| t.class == TaskClass::Workload)
            .count() as u32;
        let cpu = |i: u32| super::task_cpu(first + i, nodes, cpn);
        let p = self.params.clone();
        let state = Rc::clone(&self.state);
        let probe = sim.spawn(
            "mmap-latency".into(),
            cpu(0),
            TaskClass::Workload,
            move |cx| latency_probe(cx, p.probe_pages as u32, state),
        );
        let p = self.params.clone();
        let state = Rc::clone(&self.state);
        let memhog = sim.spawn("memhog".into(), cpu(1), TaskClass::Workload, move |cx| {
            memhog(cx, p, state)
        });
        let p = self.params.clone();
        let state = Rc::clone(&self.state);
        let reader = {
            let (noretry, nofs, large, ra_pages) = {
                let k = sim.k();
                (
                    k.variant.readahead_noretry,
                    k.variant.readahead_nofs,
                    k.variant.large_folio_readahead,
                    k.readahead_window_pages(0, p.block_kb),
                )
            };
            SequentialReader::new(SOURCE_MAPPING, 0, ra_pages, 2, noretry)
                .with_large_folios(large)
                .with_nofs(nofs)
                .with_file(&mut sim.k(), p.file_mb * 256)
        };
        // `cp` is forked once the memhog has settled, and fork balancing
        // (`select_task_rq_fair`, SD_BALANCE_FORK) puts it on an idle CPU: a third one if
        // the machine has it, else the memhog's, idle while the memhog waits in pause().
        // The model balances no load, so it places the copy there from the start.
        let copy_cpu = if cpu(2) != cpu(0) { cpu(2) } else { cpu(1) };
        let copy = sim.spawn("cp".into(), copy_cpu, TaskClass::Workload, move |cx| {
            copy(cx, p, reader, state)
        });
        self.state.borrow_mut().tids = (memhog, copy);
        let mut k = sim.k();
        k.sched.wake(probe, 0);
        k.sched.wake(memhog, 1000);
    }

    fn ends_by_itself(&self) -> bool {
        true
    }

    fn finished(&self, sim: &Sim) -> bool {
        sim.exited(self.state.borrow().tids.1)
    }

    fn window_started(&mut self, _now: Ns) {
        let s = self.state.borrow();
        self.window = (s.lines.len(), s.copies.len());
    }

    fn metrics(&self, _elapsed_s: f64) -> Metrics {
        let s = self.state.borrow();
        let mut lat: Vec<f64> = Vec::new();
        let (count, sum) = s.pending;
        let last = (count > 0).then(|| (count, sum / count));
        for &(count, avg) in s.lines[self.window.0..].iter().chain(&last) {
            lat.extend(std::iter::repeat_n(avg as f64 / 1e6, count as usize));
        }
        let delayed = lat.iter().filter(|&&x| x > 5.0).count();
        let mean = if lat.is_empty() {
            0.0
        } else {
            lat.iter().sum::<f64>() / lat.len() as f64
        };
        lat.sort_by(f64::total_cmp);
        let round = |v: f64| (v * 1e4).round() / 1e4;
        let q = |p| {
            if lat.is_empty() {
                0.0
            } else {
                round(reclaim_trace::report::quantile(&lat, p))
            }
        };
        let mut rows = serde_json::Map::new();
        for (label, v) in reclaim_trace::report::LATENCY_ROWS
            .iter()
            .zip(reclaim_trace::report::latency_rows(&lat))
        {
            rows.insert((*label).into(), round(v).into());
        }
        let mut m_lat = serde_json::Map::new();
        m_lat.insert("samples".into(), lat.len().into());
        m_lat.insert("mean".into(), round(mean).into());
        m_lat.insert("p50".into(), q(0.50).into());
        m_lat.insert("p95".into(), q(0.95).into());
        m_lat.insert("p99".into(), q(0.99).into());
        m_lat.insert(
            "max".into(),
            round(lat.last().copied().unwrap_or(0.0)).into(),
        );
        m_lat.insert("delayed".into(), delayed.into());
        m_lat.insert("mmtests".into(), rows.into());
        let copies: Vec<f64> = s.copies[self.window.1..]
            .iter()
            .map(|&t| t as f64 / NSEC_PER_SEC as f64)
            .collect();
        let file_mib = self.params.file_mb as f64;
        let mut m = Metrics::new();
        m.insert("iterations".into(), copies.len().into());
        m.insert("mmap_latency_ms".into(), m_lat.into());
        let r3 = |v: f64| (v * 1e3).round() / 1e3;
        let r2 = |v: f64| (v * 1e2).round() / 1e2;
        m.insert(
            "copy_elapsed_s".into(),
            copies.iter().map(|&t| r3(t)).collect::<Vec<_>>().into(),
        );
        m.insert(
            "tput_MiB_s".into(),
            copies
                .iter()
                .map(|&t| r2(file_mib / (t + 1.0)))
                .collect::<Vec<_>>()
                .into(),
        );
        m
    }
}

/// Map `nr_pages` for the task, write a word to each page (faulting it in), and return the
/// VMA.
async fn map_and_touch(cx: &Cx, nr_pages: u32, scratch: &mut SwapinScratch) -> u32 {
    let (vma, base, memcg) = {
        let mut k = cx.k();
        let vma = k.mm.mmap(cx.tid, nr_pages);
        (vma, k.mm.vmas[vma as usize].start, k.memcg.workload)
    };
    let mut addr = 0;
    while addr < nr_pages {
        // Present pages: one word each, charged together up to a fault.
        {
            let mut k = cx.k();
            let mut n = 0;
            while addr < nr_pages && pte_present(k.mm.ptes[(base + addr) as usize]) {
                k.mm.mark_young(base + addr);
                addr += 1;
                n += 1;
            }
            let word = k.costs.usemem_word_ns;
            k.charge_user(n * word);
        }
        if addr < nr_pages {
            handle_mm_fault(cx, vma, addr, memcg, scratch).await;
            addr += 1;
            if addr % 512 == 0 {
                cond_resched(cx).await;
            }
        }
    }
    vma
}

/// The latency probe: sleep, map and touch, unmap, time, for ever.
async fn latency_probe(cx: Cx, nr_pages: u32, state: Rc<RefCell<State>>) {
    let mut scratch = SwapinScratch::default();
    let mut prev = cx.k().clock();
    loop {
        let wake = cx.k().clock() + PROBE_DELAY_NS;
        sleep_until(&cx, wake).await;
        let vma = map_and_touch(&cx, nr_pages, &mut scratch).await;
        munmap(&cx, vma).await;
        let now = cx.k().clock();
        let latency = (now - prev).saturating_sub(PROBE_DELAY_NS);
        prev = now;
        let mut s = state.borrow_mut();
        if latency >= PROBE_DELAY_NS {
            let (count, sum) = std::mem::take(&mut s.pending);
            if count > 0 {
                s.lines.push((count, sum / count));
            }
            s.lines.push((1, latency));
        } else {
            s.pending.0 += 1;
            s.pending.1 += latency;
            if s.pending.0 == PROBE_BATCH {
                let (count, sum) = std::mem::take(&mut s.pending);
                s.lines.push((count, sum / count));
            }
        }
    }
}

/// Sleep until `ready` says so (woken by the other task).
async fn wait_for(cx: &Cx, state: &Rc<RefCell<State>>, ready: impl Fn(&State) -> bool) {
    while !ready(&state.borrow()) {
        schedule(cx).await;
    }
}

/// The memhog, once per iteration: map and touch, settle, let the copy run, be killed.
async fn memhog(cx: Cx, p: StutterParams, state: Rc<RefCell<State>>) {
    let mut scratch = SwapinScratch::default();
    let nr_pages = (p.memhog_mb * 256) as u32;
    let settle = (p.settle_s * NSEC_PER_SEC as f64) as Ns;
    for iter in 1..=p.iterations {
        let started = cx.k().clock();
        let vma = map_and_touch(&cx, nr_pages, &mut scratch).await;
        sleep_until(&cx, started + settle).await;
        let copy_tid = {
            let mut s = state.borrow_mut();
            s.copy_go = iter;
            s.tids.1
        };
        {
            let mut k = cx.k();
            let now = k.clock();
            k.sched.wake(copy_tid, now);
        }
        wait_for(&cx, &state, |s| s.copy_done >= iter).await;
        // SIGKILL: exit_mmap() unmaps the memory.
        munmap(&cx, vma).await;
    }
}

/// `cp source dest; sync`, once per iteration, when the memhog has settled.
async fn copy(cx: Cx, p: StutterParams, mut reader: SequentialReader, state: Rc<RefCell<State>>) {
    let mut t = DirtyTask::new(0);
    cx.k().wb.wbs[0].nr_dirtiers += 1;
    let mut folios = Vec::with_capacity(SWAP_CLUSTER_MAX as usize);
    let file_bytes = p.file_mb << 20;
    let block_pages = p.block_kb / 4;
    for iter in 1..=p.iterations {
        wait_for(&cx, &state, |s| s.copy_go >= iter).await;
        let dest = SOURCE_MAPPING + iter as u32;
        let started = {
            let mut k = cx.k();
            k.wb_new_inode(dest, 0, 0);
            k.clock()
        };
        let (mut read, mut written) = (0u64, 0u64);
        while written < file_bytes {
            // read(): what the page cache gives, then write() it in blocks.
            if read < file_bytes {
                let copied = if reader.wants_readahead() {
                    reader.readahead(&cx).await
                } else {
                    reader.read(&cx).await
                };
                read = (read + copied).min(file_bytes);
            }
            while read - written >= block_pages * 4096 || (read == file_bytes && written < read) {
                let index = written / 4096;
                let end = (index + block_pages).min(read / 4096);
                {
                    let mut k = cx.k();
                    let syscall = 2 * k.costs.syscall_ns;
                    k.charge(syscall);
                }
                crate::workload::dd_write::write_block(&cx, &mut t, &mut folios, dest, index, end)
                    .await;
                written = end * 4096;
            }
            cond_resched(&cx).await;
        }
        cx.k().wb_close_inode(dest);
        // sync: write back everything dirty and wait for it.
        loop {
            let done = {
                let mut k = cx.k();
                let done = k.wb.nr_dirty() + k.wb.nr_writeback() == 0;
                if !done {
                    k.wakeup_flusher_threads();
                }
                done
            };
            if done {
                break;
            }
            let at = cx.k().clock() + SYNC_POLL_NS;
            sleep_until(&cx, at).await;
        }
        let memhog = {
            let mut s = state.borrow_mut();
            let now = cx.k().clock();
            s.copies.push(now - started);
            s.copy_done = iter;
            s.tids.0
        };
        let mut k = cx.k();
        let now = k.clock();
        k.sched.wake(memhog, now);
    }
}
