//! fs_mark (seed 001): `threads` writers, each creating `files` new files of `file_size`
//! bytes per loop, `loops` times, in `write()` calls of `block_kb`, with no fsync (`-S0`);
//! the files are left on disk. The seed's command is `fs_mark -D 100 -N 150 -n 150 -L 25 -t 1
//! -S0 -s 10485760`: `dirs` is `-D`, `files_per_dir` `-N`, `files` `-n`, `loops` `-L`,
//! `threads` `-t`, `sync` `-S` (0 only), `file_size` `-s`, `block_kb` `-w` (fs_mark's 16 KiB
//! buffer).
//!
//! Metrics as mmtests reads fs_mark's per-loop lines: the Files/s of each loop (each
//! thread's files over its time in that loop, summed over the threads), their mean, and the
//! elapsed time from the first write to the end of the last loop.
//!
//! Simulated: each file is a new inode (`wb_new_inode`) on the thread's device (`i %
//! devices`), in the thread's own directory (fs_mark makes one per thread: its files' blocks
//! come from that directory's allocation group, mm::page_writeback "Blocks"), written through dd-write's write path (`dd_write::write_block`: page-cache
//! folios allocated, copied into, dirtied, `balance_dirty_pages_ratelimited()`) and closed;
//! its pages stay in the page cache, so the cache grows, the flushers write it back and
//! reclaim meets it. Departures: the directories (`dirs`, `files_per_dir`) are names only
//! (no dentry, inode or journal cost: creating a file costs a syscall); the threads do not
//! wait for each other between loops (fs_mark's children run their loops apart too, but its
//! parent prints a loop's line when all have finished it).

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_SEC};
use crate::mm::compaction::kcompactd_run_nodes;
use crate::mm::page_writeback::{wb_start_flushers, DirtyTask};
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::process::{cond_resched, fatal_signal_pending, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "fs_mark",
    about: "fs_mark: threads creating files of a size, loop after loop, no fsync (seed 001)",
    resolve,
    build: Some(build),
    columns: COLUMNS,
    mappings: super::no_mappings,
    live: true,
};

const COLUMNS: &[super::Column] = &[
    super::Column {
        header: "files/s mean",
        source: "metrics.files_per_sec_mean",
    },
    super::Column {
        header: "elapsed s",
        source: "metrics.elapsed_s",
    },
    super::Column {
        header: "loops",
        source: "metrics.loops_done",
    },
    super::Column {
        header: "nr_vmscan_write",
        source: "vmstat.nr_vmscan_write",
    },
    super::Column {
        header: "immediate",
        source: "vmstat.nr_vmscan_immediate_reclaim",
    },
    super::Column {
        header: "allocstall",
        source: "vmstat.allocstall*",
    },
];

/// The first mapping id of fs_mark's files (dd-write's end below `2 << 24`).
const FIRST_MAPPING: u32 = 3 << 24;
/// Files a thread may create (mapping ids per thread).
const FILES_PER_THREAD: u64 = 1 << 20;
const MAX_THREADS: u64 = 64;

/// The `[workload]` keys of `kind = "fs_mark"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FsMarkParams {
    /// `-t`: threads.
    #[serde(default = "one")]
    threads: u64,
    /// `-D`: subdirectories of each thread's directory.
    #[serde(default = "default_dirs")]
    dirs: u64,
    /// `-N`: files in a subdirectory before the next.
    #[serde(default = "default_files")]
    files_per_dir: u64,
    /// `-n`: files each thread creates per loop.
    #[serde(default = "default_files")]
    files: u64,
    /// `-L`: loops.
    #[serde(default = "default_loops")]
    loops: u64,
    /// `-s`: bytes per file.
    #[serde(default = "default_file_size")]
    file_size: u64,
    /// `-S`: fsync mode; 0 (none) only.
    #[serde(default)]
    sync: u64,
    /// `-w`: KiB per `write()`.
    #[serde(default = "default_block_kb")]
    block_kb: u64,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
}

fn one() -> u64 {
    1
}
fn default_dirs() -> u64 {
    100
}
fn default_files() -> u64 {
    150
}
fn default_loops() -> u64 {
    25
}
fn default_file_size() -> u64 {
    10 << 20
}
fn default_block_kb() -> u64 {
    16
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<FsMarkParams>(table)?;
    positive("threads", p.threads)?;
    positive("dirs", p.dirs)?;
    positive("files_per_dir", p.files_per_dir)?;
    positive("files", p.files)?;
    positive("loops", p.loops)?;
    positive("file_size", p.file_size)?;
    positive("block_kb", p.block_kb)?;
    if p.threads > MAX_THREADS {
        return Err(WorkloadError::new(
            "threads",
            format!("expected at most {MAX_THREADS} threads"),
        ));
    }
    if p.files.saturating_mul(p.loops) > FILES_PER_THREAD {
        return Err(WorkloadError::new(
            "files",
            format!("expected files × loops at most {FILES_PER_THREAD} per thread"),
        ));
    }
    if p.file_size > 64 << 30 {
        return Err(WorkloadError::new(
            "file_size",
            "expected at most 68719476736 bytes (64 GiB)",
        ));
    }
    if p.sync != 0 {
        return Err(WorkloadError::new(
            "sync",
            "expected 0 (-S0, no fsync: the other modes are not modelled)",
        ));
    }
    if p.block_kb % 4 != 0 {
        return Err(WorkloadError::new(
            "block_kb",
            "expected a multiple of 4 KiB",
        ));
    }
    Ok(resolved)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<FsMarkParams>(table).expect("a resolved table");
    Box::new(FsMark {
        params,
        progress: Rc::default(),
        started: 0,
        window_start: 0,
        tasks: Vec::new(),
    })
}

/// A thread's progress: bytes written, and each loop it finished (its start, its end).
#[derive(Clone, Debug, Default)]
struct Progress {
    bytes: u64,
    files: u64,
    loops: Vec<(Ns, Ns)>,
}

struct FsMark {
    params: FsMarkParams,
    progress: Rc<RefCell<Vec<Progress>>>,
    started: Ns,
    window_start: Ns,
    /// The threads' tasks.
    tasks: Vec<u32>,
}

impl Workload for FsMark {
    fn start(&mut self, sim: &mut Sim) {
        wb_start_flushers(sim);
        if sim.k().variant.large_folio_writes {
            // Writes allocate large folios, compacting for them.
            kcompactd_run_nodes(sim);
        }
        let (nodes, cpn, ndev, now) = {
            let k = sim.k();
            (
                k.mem.nodes.len() as u32,
                k.cpus.nr_cpus_per_node,
                k.block.devices.len(),
                k.clock(),
            )
        };
        self.started = now;
        let p = &self.params;
        *self.progress.borrow_mut() = vec![Progress::default(); p.threads as usize];
        for i in 0..p.threads as u32 {
            let cpu = super::task_cpu(i, nodes, cpn);
            let th = Thread {
                slot: i as usize,
                dev: i as usize % ndev,
                first_mapping: FIRST_MAPPING + i * FILES_PER_THREAD as u32,
                files: p.files,
                loops: p.loops,
                file_size: p.file_size,
                block_pages: p.block_kb / 4,
            };
            let progress = Rc::clone(&self.progress);
            let id = sim.spawn("fs_mark".into(), cpu, TaskClass::Workload, move |cx| {
                fs_mark_thread(cx, th, progress)
            });
            sim.k().sched.wake(id, Ns::from(i) * 1000);
            self.tasks.push(id);
        }
    }

    fn ends_by_itself(&self) -> bool {
        true
    }

    fn finished(&self, sim: &Sim) -> bool {
        super::all_exited(sim, &self.tasks)
    }

    fn window_started(&mut self, now: Ns) {
        self.window_start = now;
    }

    fn metrics(&self, _elapsed_s: f64) -> Metrics {
        let progress = self.progress.borrow();
        let secs = |ns: Ns| ns as f64 / NSEC_PER_SEC as f64;
        let round = |v: f64, d: i32| (v * 10f64.powi(d)).round() / 10f64.powi(d);
        // Loops every thread finished, and of those the ones that ended in the window.
        let loops_done = progress.iter().map(|p| p.loops.len()).min().unwrap_or(0);
        let files = self.params.files as f64;
        let rates: Vec<f64> = (0..loops_done)
            .filter(|&l| progress.iter().all(|p| p.loops[l].1 >= self.window_start))
            .map(|l| {
                progress
                    .iter()
                    .map(|p| files / secs((p.loops[l].1 - p.loops[l].0).max(1)))
                    .sum::<f64>()
            })
            .collect();
        let mean = if rates.is_empty() {
            0.0
        } else {
            rates.iter().sum::<f64>() / rates.len() as f64
        };
        let last_end = progress
            .iter()
            .filter_map(|p| p.loops.last().map(|l| l.1))
            .max()
            .unwrap_or(self.started);
        let mut m = Metrics::new();
        m.insert("threads".into(), self.params.threads.into());
        m.insert("loops_done".into(), loops_done.into());
        m.insert(
            "completed".into(),
            (loops_done as u64 == self.params.loops).into(),
        );
        m.insert(
            "files".into(),
            progress.iter().map(|p| p.files).sum::<u64>().into(),
        );
        m.insert(
            "files_per_sec".into(),
            rates
                .iter()
                .map(|&r| round(r, 2))
                .collect::<Vec<f64>>()
                .into(),
        );
        m.insert("files_per_sec_mean".into(), round(mean, 2).into());
        m.insert(
            "elapsed_s".into(),
            round(secs(last_end - self.started), 3).into(),
        );
        m.insert(
            "bytes".into(),
            progress.iter().map(|p| p.bytes).sum::<u64>().into(),
        );
        m
    }
}

/// One thread: its slot, its device, its files' mapping ids and the loop's shape.
#[derive(Clone, Copy)]
struct Thread {
    slot: usize,
    dev: usize,
    first_mapping: u32,
    files: u64,
    loops: u64,
    file_size: u64,
    block_pages: u64,
}

/// fs_mark's thread: per loop, `files` times creat(), `write()`s of a block each, close().
async fn fs_mark_thread(cx: Cx, th: Thread, progress: Rc<RefCell<Vec<Progress>>>) {
    let mut t = DirtyTask::new(th.dev);
    cx.k().wb.wbs[th.dev].nr_dirtiers += 1;
    let mut folios = Vec::with_capacity(SWAP_CLUSTER_MAX as usize);
    let file_pages = th.file_size.div_ceil(4096);
    let mut mapping = th.first_mapping;
    for _ in 0..th.loops {
        let loop_start = cx.k().clock();
        for _ in 0..th.files {
            {
                // creat()
                let mut k = cx.k();
                k.wb_new_inode(mapping, th.dev, th.slot as u32);
                let syscall = k.costs.syscall_ns;
                k.charge(syscall);
            }
            let mut index = 0u64;
            while index < file_pages {
                let end = (index + th.block_pages).min(file_pages);
                {
                    let mut k = cx.k();
                    let syscall = k.costs.syscall_ns;
                    k.charge(syscall);
                }
                super::dd_write::write_block(&cx, &mut t, &mut folios, mapping, index, end).await;
                index = end;
                if fatal_signal_pending(&cx) {
                    return;
                }
                cond_resched(&cx).await;
            }
            {
                // close()
                let mut k = cx.k();
                k.wb_close_inode(mapping);
                let syscall = k.costs.syscall_ns;
                k.charge(syscall);
            }
            let mut pr = progress.borrow_mut();
            pr[th.slot].bytes += th.file_size;
            pr[th.slot].files += 1;
            mapping += 1;
        }
        let now = cx.k().clock();
        progress.borrow_mut()[th.slot].loops.push((loop_start, now));
    }
    cx.k().wb.wbs[th.dev].nr_dirtiers -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn the_defaults_are_the_seeds_command() {
        let r = resolve(&toml::Table::new()).unwrap();
        let want = table(
            r#"threads = 1
            dirs = 100
            files_per_dir = 150
            files = 150
            loops = 25
            file_size = 10485760
            sync = 0
            block_kb = 16
            dir = "/var/tmp/reclaimlab""#,
        );
        assert_eq!(r, want);
    }

    #[test]
    fn bad_keys_are_named() {
        let e = resolve(&table("files = 0")).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.message.as_str()),
            ("files", "expected at least 1")
        );
        let e = resolve(&table("threads = 65")).unwrap_err();
        assert_eq!(e.key, "threads");
        let e = resolve(&table("sync = 1")).unwrap_err();
        assert_eq!(e.key, "sync");
        assert!(e.message.starts_with("expected 0"), "{}", e.message);
        let e = resolve(&table("block_kb = 6")).unwrap_err();
        assert_eq!(e.key, "block_kb");
        let e = resolve(&table("files = 100000\nloops = 100")).unwrap_err();
        assert_eq!(e.key, "files");
        let e = resolve(&table("file_sise = 1")).unwrap_err();
        assert!(
            format!("{} {}", e.key, e.message).contains("file_sise"),
            "{e:?}"
        );
    }

    #[test]
    fn mapping_ids_stay_clear_of_dd_writes() {
        let last = FIRST_MAPPING as u64 + MAX_THREADS * FILES_PER_THREAD;
        assert!(last < u64::from(crate::mm::page::NO_OWNER));
        const { assert!(FIRST_MAPPING >= 2 << 24) };
    }
}
