//! Parallel dd readers (seed 000): each task reads its own file sequentially in `bs`-sized
//! read() calls, from the device it was assigned round-robin, for the whole run.
//!
//! * `iflag=direct`: each read is one request of `bs` bytes DMAed into the user buffer; the
//!   page cache is not touched.
//! * buffered: reads go through the page cache (`mm::filemap::SequentialReader`): readahead
//!   windows of `read_ahead_kb` (as the kernel sizes them with `variant.ractl_max_pages`,
//!   at most `bs` without: `Kernel::readahead_window_pages`), `readahead_depth` of them in flight, in
//!   large folios with `variant.large_folio_readahead`; a window's copy marks each folio it
//!   spans accessed once.
//!
//! Tasks alternate between nodes and fill each node's CPUs from the first, as the seed's
//! script starts them; each reads its own file (mapping).

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{resolve_params, Column, Metrics, Registration, Workload, WorkloadError};
use crate::engine::Ns;
use crate::hw::block::Op;
use crate::mm::compaction::kcompactd_run_nodes;
use crate::mm::filemap::SequentialReader;
use crate::mm::mempolicy::{Mempolicy, MpolMode};
use crate::process::{cond_resched, fatal_signal_pending, wait_on_bio, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "dd",
    about: "parallel dd readers, one file per task, buffered or O_DIRECT (seed 000)",
    resolve,
    build: Some(build),
    columns: &[
        Column {
            header: "dd",
            source: "metrics.tasks",
        },
        Column {
            header: "sy",
            source: "cpu.sy_max",
        },
        Column {
            header: "dd_cpu",
            source: "tasks.workload_cpu",
        },
        Column {
            header: "kswapd0",
            source: "tasks.kswapd_cpu.0",
        },
        Column {
            header: "kswapd1",
            source: "tasks.kswapd_cpu.1",
        },
        Column {
            header: "throughput",
            source: "metrics.throughput_kB_s",
        },
        Column {
            header: "dr",
            source: "vmstat.allocstall_*",
        },
        Column {
            header: "pgscan_kswapd",
            source: "vmstat.pgscan_kswapd",
        },
        Column {
            header: "pgscan_direct",
            source: "vmstat.pgscan_direct",
        },
    ],
    mappings: super::no_mappings,
    live: true,
};

/// The most dd tasks a scenario may start (far beyond any machine's CPUs).
const MAX_TASKS: u32 = 1_000_000;

/// The `[workload]` keys of `kind = "dd"`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdParams {
    pub tasks: u32,
    /// `bs` in KiB.
    #[serde(default = "default_block_kb")]
    pub block_kb: u64,
    /// `iflag=direct`: bypass the page cache.
    #[serde(default)]
    pub direct: bool,
    /// How many readahead windows may be in flight ahead of the reader (sync + async).
    #[serde(default = "default_ra_depth")]
    pub readahead_depth: u32,
    /// Each task's file, in MiB; a reader that reaches its end starts again at the start, as
    /// a live run restarts dd, and finds the pages of its last pass that are still cached
    /// (hits, no I/O) or their shadows (refaults, with `variant.workingset`). 0 (the
    /// default): an endless file, never read twice (no page-cache index). O_DIRECT readers
    /// ignore it.
    #[serde(default)]
    pub file_mb: u64,
    /// Live runs: where the files are made (zero-filled, before memory is constrained).
    #[serde(default = "default_dir")]
    pub dir: String,
    /// Live runs: existing files to read instead, one per task.
    #[serde(default)]
    pub files: Vec<String>,
    /// Each task's memory policy (`set_mempolicy(2)`, `mm::mempolicy`): "default",
    /// "bind", "interleave" or "preferred".
    #[serde(default, skip_serializing_if = "MpolMode::is_default")]
    pub mempolicy: MpolMode,
    /// The policy's nodes (one for "preferred").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<u32>,
}

pub(crate) fn default_dir() -> String {
    "/var/tmp/reclaimlab".into()
}

fn default_block_kb() -> u64 {
    4096
}
fn default_ra_depth() -> u32 {
    2
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<DdParams>(table)?;
    if p.tasks == 0 {
        return Err(WorkloadError::new("tasks", "expected at least one task"));
    }
    if p.tasks > MAX_TASKS {
        return Err(WorkloadError::new(
            "tasks",
            "expected at most 1000000 tasks",
        ));
    }
    if p.block_kb < 4 || p.block_kb % 4 != 0 {
        return Err(WorkloadError::new(
            "block_kb",
            "expected a multiple of 4 KiB",
        ));
    }
    if p.readahead_depth == 0 {
        return Err(WorkloadError::new("readahead_depth", "expected at least 1"));
    }
    super::check_mempolicy(p.mempolicy, &p.nodes)?;
    Ok(resolved)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<DdParams>(table).expect("a resolved table");
    Box::new(Dd {
        params,
        bytes: Rc::default(),
        at_window_start: Vec::new(),
    })
}

/// The running workload: its parameters and each task's bytes read so far.
struct Dd {
    params: DdParams,
    /// Bytes returned to user space by each task's completed read() calls.
    bytes: Rc<RefCell<Vec<u64>>>,
    at_window_start: Vec<u64>,
}

impl Workload for Dd {
    fn start(&mut self, sim: &mut Sim) {
        let (nodes, cpn, ndev, noretry, nofs, large) = {
            let k = sim.k();
            (
                k.mem.nodes.len() as u32,
                k.cpus.nr_cpus_per_node,
                k.block.devices.len(),
                k.variant.readahead_noretry,
                k.variant.readahead_nofs,
                k.variant.large_folio_readahead,
            )
        };
        if large && !self.params.direct {
            // Readahead allocates large folios, compacting for them.
            kcompactd_run_nodes(sim);
        }
        let p = &self.params;
        *self.bytes.borrow_mut() = vec![0; p.tasks as usize];
        for i in 0..p.tasks {
            let cpu = super::task_cpu(i, nodes, cpn);
            let file = File {
                slot: i as usize,
                mapping: i,
                device: i as usize % ndev,
                block_bytes: p.block_kb * 1024,
            };
            let ra_pages = sim.k().readahead_window_pages(file.device, p.block_kb);
            let bytes = Rc::clone(&self.bytes);
            let id = if p.direct {
                sim.spawn("dd".into(), cpu, TaskClass::Workload, move |cx| {
                    dd_direct(cx, file, bytes)
                })
            } else {
                let reader = SequentialReader::new(
                    file.mapping,
                    file.device,
                    ra_pages,
                    p.readahead_depth as usize,
                    noretry,
                )
                .with_large_folios(large)
                .with_nofs(nofs)
                .with_file(&mut sim.k(), p.file_mb * 256);
                sim.spawn("dd".into(), cpu, TaskClass::Workload, move |cx| {
                    dd_buffered(cx, file, reader, bytes)
                })
            };
            let mut k = sim.k();
            // set_mempolicy() before the task's first read.
            k.sched.tasks[id as usize].mempolicy = Mempolicy::new(p.mempolicy, &p.nodes);
            k.sched.wake(id, i as Ns * 1000);
        }
    }

    fn window_started(&mut self, _now: Ns) {
        self.at_window_start = self.bytes.borrow().clone();
    }

    fn metrics(&self, elapsed_s: f64) -> Metrics {
        let task_bytes: Vec<u64> = self
            .bytes
            .borrow()
            .iter()
            .zip(&self.at_window_start)
            .map(|(b, a)| b - a)
            .collect();
        let bytes: u64 = task_bytes.iter().sum();
        let mut m = Metrics::new();
        m.insert("tasks".into(), self.params.tasks.into());
        m.insert("direct".into(), self.params.direct.into());
        m.insert("bytes".into(), bytes.into());
        m.insert(
            "throughput_kB_s".into(),
            (bytes as f64 / 1024.0 / elapsed_s).into(),
        );
        m.insert("task_bytes".into(), task_bytes.into());
        m
    }
}

/// One dd's file: its slot in the workload, its mapping and device, and `bs`.
#[derive(Clone, Copy)]
struct File {
    slot: usize,
    mapping: u32,
    device: usize,
    block_bytes: u64,
}

/// `dd iflag=direct`: each read() is one `bs` request straight into the user buffer.
async fn dd_direct(cx: Cx, file: File, bytes: Rc<RefCell<Vec<u64>>>) {
    loop {
        let bio = {
            let mut k = cx.k();
            let setup = k.costs.syscall_ns + k.costs.dio_request_ns;
            k.charge(setup);
            let bio = k.block.bios.alloc(file.device, Op::Read);
            k.submit_bio(bio, file.block_bytes);
            bio
        };
        wait_on_bio(&cx, bio).await;
        {
            let mut k = cx.k();
            let now = k.now;
            k.block.bios.put(bio, now);
        }
        bytes.borrow_mut()[file.slot] += file.block_bytes;
        if fatal_signal_pending(&cx) {
            return;
        }
    }
}

/// Buffered dd: read ahead while fewer windows than the depth are in flight, otherwise copy
/// the oldest; a read() call returns once `bs` bytes have been copied.
async fn dd_buffered(
    cx: Cx,
    file: File,
    mut reader: SequentialReader,
    bytes: Rc<RefCell<Vec<u64>>>,
) {
    let mut copied_in_block = 0;
    loop {
        // Readahead copies only the cached pages of a file of known size (hits).
        let copied = if reader.wants_readahead() {
            reader.readahead(&cx).await
        } else {
            reader.read(&cx).await
        };
        copied_in_block += copied;
        if fatal_signal_pending(&cx) {
            return;
        }
        if copied > 0 {
            let mut k = cx.k();
            while copied_in_block >= file.block_bytes {
                copied_in_block -= file.block_bytes;
                bytes.borrow_mut()[file.slot] += file.block_bytes;
                let syscall = k.costs.syscall_ns;
                k.charge(syscall);
            }
        }
        cond_resched(&cx).await;
    }
}
