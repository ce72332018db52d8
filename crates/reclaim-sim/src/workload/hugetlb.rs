//! Growing the hugetlb pool while the machine runs: one task writing `vm.nr_hugepages`, as
//! a user (or stress-highalloc, live) does. From `start_s`, every `interval_s`, it asks for
//! `step` more huge pages than its last write, up to `pages`; each write is
//! `set_max_huge_pages()` (`mm::hugetlb`): order-9 allocations one at a time through the
//! page allocator's slow path, reclaim and compaction included, until the pool has the pages
//! asked for or an allocation fails. The pool's pages are never freed. The workload starts
//! the nodes' kcompactd threads (compaction is what it exercises).
//!
//! Simulated only so far: a live run would write /proc/sys/vm/nr_hugepages and restore it
//! after, which python/reclaimlab/live does not do yet.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Column, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};
use crate::mm::compaction::kcompactd_run_nodes;
use crate::mm::hugetlb::HugetlbPool;
use crate::process::{sleep_until, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "hugetlb",
    about: "a task growing the hugetlb pool, one write of vm.nr_hugepages after another (order-9 allocations; simulated only)",
    resolve,
    build: Some(build),
    columns: &[
        Column {
            header: "huge pages",
            source: "metrics.nr_hugepages",
        },
        Column {
            header: "success %",
            source: "metrics.alloc_success_pct",
        },
        Column {
            header: "write ms max",
            source: "metrics.write_ms_max",
        },
        Column {
            header: "compact_stall",
            source: "vmstat.compact_stall",
        },
        Column {
            header: "compact_success",
            source: "vmstat.compact_success",
        },
        Column {
            header: "pgmigrate_success",
            source: "vmstat.pgmigrate_success",
        },
    ],
    mappings: super::no_mappings,
    live: false,
};

/// The `[workload]` keys of `kind = "hugetlb"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HugetlbParams {
    /// The pool's size the last write asks for.
    #[serde(default = "one")]
    pages: u64,
    /// Huge pages each write asks for beyond the one before.
    #[serde(default = "one")]
    step: u64,
    /// When the first write comes (simulated seconds from the start).
    #[serde(default = "default_start_s")]
    start_s: f64,
    /// Seconds from one write's start to the next one's (a write that takes longer is
    /// followed at once).
    #[serde(default = "default_interval_s")]
    interval_s: f64,
    /// The CPU the writing task runs on (modulo the machine's CPUs, as workloads place
    /// more tasks than CPUs).
    #[serde(default)]
    cpu: u32,
}

fn one() -> u64 {
    1
}
fn default_start_s() -> f64 {
    1.0
}
fn default_interval_s() -> f64 {
    0.1
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<HugetlbParams>(table)?;
    positive("pages", p.pages)?;
    positive("step", p.step)?;
    for (key, v) in [("start_s", p.start_s), ("interval_s", p.interval_s)] {
        if !v.is_finite() || v < 0.0 {
            return Err(WorkloadError::new(key, "expected seconds ≥ 0"));
        }
    }
    Ok(resolved)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<HugetlbParams>(table).expect("a resolved table");
    Box::new(Hugetlb {
        params,
        pool: Rc::default(),
        state: Rc::default(),
        at_window_start: Counts::default(),
        window_start: 0,
        task: None,
    })
}

/// The pool's buddy allocations.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    success: u64,
    fail: u64,
}

#[derive(Debug, Default)]
struct State {
    /// The count the last write asked for.
    requested: u64,
    /// (start, duration) of each write.
    writes: Vec<(Ns, Ns)>,
}

struct Hugetlb {
    params: HugetlbParams,
    pool: Rc<RefCell<HugetlbPool>>,
    state: Rc<RefCell<State>>,
    at_window_start: Counts,
    window_start: Ns,
    /// The writing task.
    task: Option<u32>,
}

/// The pool's buddy allocations so far.
fn counts(pool: &HugetlbPool) -> Counts {
    Counts {
        success: pool.htlb_buddy_alloc_success,
        fail: pool.htlb_buddy_alloc_fail,
    }
}

impl Workload for Hugetlb {
    fn start(&mut self, sim: &mut Sim) {
        kcompactd_run_nodes(sim);
        let p = self.params.clone();
        let (pool, state) = (Rc::clone(&self.pool), Rc::clone(&self.state));
        let cpu = p.cpu % sim.k().cpus.nr_cpus();
        let id = sim.spawn("sh".into(), cpu, TaskClass::Workload, move |cx| {
            write_nr_hugepages(cx, p, pool, state)
        });
        let start = (self.params.start_s * NSEC_PER_SEC as f64) as Ns;
        sim.k().sched.wake(id, start);
        self.task = Some(id);
    }

    fn ends_by_itself(&self) -> bool {
        true
    }

    fn finished(&self, sim: &Sim) -> bool {
        self.task.is_some_and(|t| sim.exited(t))
    }

    fn window_started(&mut self, now: Ns) {
        self.at_window_start = counts(&self.pool.borrow());
        self.window_start = now;
    }

    fn metrics(&self, _elapsed_s: f64) -> Metrics {
        let (pool, state) = (self.pool.borrow(), self.state.borrow());
        let now = counts(&pool);
        let (success, fail) = (
            now.success - self.at_window_start.success,
            now.fail - self.at_window_start.fail,
        );
        let ms: Vec<f64> = state
            .writes
            .iter()
            .filter(|&&(start, _)| start >= self.window_start)
            .map(|&(_, d)| d as f64 / NSEC_PER_MSEC as f64)
            .collect();
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        let mut m = Metrics::new();
        m.insert("nr_hugepages".into(), pool.pages.len().into());
        m.insert("requested".into(), state.requested.into());
        m.insert("writes".into(), ms.len().into());
        m.insert("htlb_buddy_alloc_success".into(), success.into());
        m.insert("htlb_buddy_alloc_fail".into(), fail.into());
        let pct = if success + fail > 0 {
            success as f64 * 100.0 / (success + fail) as f64
        } else {
            0.0
        };
        m.insert("alloc_success_pct".into(), round(pct).into());
        let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
        m.insert("write_ms_mean".into(), round(mean).into());
        m.insert(
            "write_ms_max".into(),
            round(ms.iter().copied().fold(0.0, f64::max)).into(),
        );
        m
    }
}

/// The writing task: `echo N > /proc/sys/vm/nr_hugepages` for N = step, 2·step, … up to
/// `pages`, `interval_s` apart (`set_max_huge_pages()` each); then it exits.
async fn write_nr_hugepages(
    cx: Cx,
    p: HugetlbParams,
    pool: Rc<RefCell<HugetlbPool>>,
    state: Rc<RefCell<State>>,
) {
    let interval = (p.interval_s * NSEC_PER_SEC as f64) as Ns;
    let mut count = 0;
    loop {
        count = (count + p.step).min(p.pages);
        let start = cx.k().clock();
        state.borrow_mut().requested = count;
        HugetlbPool::set_max_huge_pages(&pool, &cx, count).await;
        let took = cx.k().clock() - start;
        state.borrow_mut().writes.push((start, took));
        if count == p.pages {
            return;
        }
        sleep_until(&cx, start + interval).await;
    }
}
