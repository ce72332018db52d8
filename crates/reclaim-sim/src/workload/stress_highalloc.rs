//! mmtests' stress-highalloc (seed 003; docs WORKLOADS.md §1.2, shellpack
//! `shellpack-bench-stress-highalloc` and `stap-scripts/highalloc.stp` @361ce3ce^): passes of
//! single 2 MiB allocation attempts, one at a time, while a kernel-compile-like background
//! runs, then once more at rest; each pass reports its `% Success` and the attempts' latency.
//!
//! The background is the scenario's `[[workload.background]]` (a large file read in a loop,
//! small files written, an anonymous memhog: mmtests' `make -j1` trees stand in for them).
//! One task (`sh`, as a user writing `vm.nr_hugepages`) runs the passes:
//!
//! * from `warmup_s` (mmtests waits 5 minutes for the compiles to get going), **pass
//!   `load-1`**: `numpages` attempts, `numpages = MemTotal / 2 MiB × percent / 100`
//!   (`HIGHALLOC_COUNT`, integer arithmetic, MemTotal being the zones' managed pages as
//!   /proc/meminfo's is); the attempts start `2 MiB / mb_per_sec` apart (`MS_DELAY`, 125 ms
//!   at mmtests' 16 MB/s; one that overruns is followed at once);
//! * each attempt is one write of `nr_hugepages + 1`: `set_max_huge_pages()` →
//!   `alloc_pool_huge_folio()` (mm::hugetlb, as the `hugetlb` workload grows the pool),
//!   order 9, `htlb_alloc_mask` with `__GFP_RETRY_MAYFAIL`; it succeeds when the pool grew.
//!   The pages taken stay in the pool for the rest of the pass (mmtests keeps every page it
//!   got until the pass ends) and are freed after it (`nr_hugepages` written back to 0:
//!   [`HugetlbPool::shrink`]);
//! * `pass_gap_s` later (mmtests' `sleep 5`), **`load-2`** (and so on to `load_passes`);
//! * `rest_after_s` after the last load pass (mmtests' 180 s), the background is killed
//!   (`killall -KILL`: SIGKILL to every other workload task, [`Kernel::send_sigkill`]) and,
//!   once all of them have exited, **pass `rest`**. Then the task exits and the run ends.
//!
//! Metrics (per pass, keyed by pass name): `highalloc_success_pct` (`success × 100 /
//! attempts`, integer division, as the stap script's `% Success` line), `highalloc_attempt_ms`
//! (p50, p90, p99 and max of the attempts' latencies; quantiles by
//! `reclaim_trace::report::quantile`, mmtests' VMR/Stat), and `highalloc_attempts`.
//!
//! Departures: mmtests' stap script calls `alloc_pages(GFP_HIGHUSER_MOVABLE, 9)` in the
//! kernel; the model (and a live run, python/reclaimlab/live/workloads.py) goes through the
//! hugetlb pool, which asks with `__GFP_RETRY_MAYFAIL | __GFP_THISNODE` (2.6.36's hugetlb
//! path asked `__GFP_REPEAT`, the stap script's `GFP_ALLOC_LIKE_HUGETLB`). The attempts
//! count against the attempts made, which is mmtests' `numpages` when the pass completes
//! (a run cut short by `run.duration_s` reports the attempts it made). At rest, mmtests
//! also writes and reads a file of MemTotal, drops caches and lowers `min_free_kbytes` to
//! 1024 before the pass; the model only stops the background. mmtests gives up a pass
//! stuck 600 s on a success or 1200 s on a failure; the model does not, but may end a pass
//! after `pass_limit_s` (a bound on the run's length, not mmtests': 0 by default).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Column, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};
use crate::kernel::Kernel;
use crate::mm::compaction::kcompactd_run_nodes;
use crate::mm::hugetlb::{HugetlbPool, HUGETLB_PAGE_ORDER};
use crate::process::{sleep_until, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "stress-highalloc",
    about: "mmtests stress-highalloc: passes of single 2 MiB allocations under load and at rest (seed 003)",
    resolve,
    build: Some(build),
    columns: &[
        Column {
            header: "load-1 %",
            source: "metrics.highalloc_success_pct.load-1",
        },
        Column {
            header: "load-2 %",
            source: "metrics.highalloc_success_pct.load-2",
        },
        Column {
            header: "rest %",
            source: "metrics.highalloc_success_pct.rest",
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
    live: true,
};

/// The `[workload]` keys of `kind = "stress-highalloc"` (defaults: mmtests'
/// config-global-dhp__stress-highalloc-performance and the shellpack's constants).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressHighallocParams {
    /// Share of MemTotal asked for per pass, in per cent (`HIGHALLOC_PERCENTAGE`).
    #[serde(default = "default_percent")]
    pub percent: u64,
    /// The allocation rate that spaces the attempts (`HIGHALLOC_ALLOC_RATE`, MB/s).
    #[serde(default = "default_mb_per_sec")]
    pub mb_per_sec: f64,
    /// Passes under load before the background is stopped (mmtests: 2).
    #[serde(default = "default_load_passes")]
    pub load_passes: u64,
    /// Seconds from the start before the first pass (mmtests: 10 × 30 s).
    #[serde(default = "default_warmup_s")]
    pub warmup_s: f64,
    /// Seconds between one load pass's end and the next one's start (mmtests: `sleep 5`).
    #[serde(default = "default_pass_gap_s")]
    pub pass_gap_s: f64,
    /// Seconds after the last load pass before the background is killed (mmtests: 180).
    #[serde(default = "default_rest_after_s")]
    pub rest_after_s: f64,
    /// The CPU the allocating task runs on (modulo the machine's CPUs).
    #[serde(default)]
    pub cpu: u32,
    /// Seconds a pass may last: no attempt starts after (0: no limit, mmtests'). Bounds a
    /// run's length where attempts take seconds each.
    #[serde(default)]
    pub pass_limit_s: f64,
}

fn default_percent() -> u64 {
    95
}
fn default_mb_per_sec() -> f64 {
    16.0
}
fn default_load_passes() -> u64 {
    2
}
fn default_warmup_s() -> f64 {
    300.0
}
fn default_pass_gap_s() -> f64 {
    5.0
}
fn default_rest_after_s() -> f64 {
    180.0
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<StressHighallocParams>(table)?;
    positive("percent", p.percent)?;
    if p.percent > 100 {
        return Err(WorkloadError::new(
            "percent",
            "expected a share of memory, 1 to 100",
        ));
    }
    positive("load_passes", p.load_passes)?;
    if !p.mb_per_sec.is_finite() || p.mb_per_sec <= 0.0 {
        return Err(WorkloadError::new("mb_per_sec", "expected MB/s above 0"));
    }
    for (key, v) in [
        ("warmup_s", p.warmup_s),
        ("pass_gap_s", p.pass_gap_s),
        ("rest_after_s", p.rest_after_s),
        ("pass_limit_s", p.pass_limit_s),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(WorkloadError::new(key, "expected seconds ≥ 0"));
        }
    }
    Ok(resolved)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<StressHighallocParams>(table).expect("a resolved table");
    Box::new(StressHighalloc {
        params,
        pool: Rc::default(),
        passes: Rc::default(),
        numpages: Rc::default(),
        task: None,
    })
}

/// The model's huge page in bytes (2 MiB).
pub const HPAGE_BYTES: u64 = 4096 << HUGETLB_PAGE_ORDER;

/// `HIGHALLOC_COUNT`: attempts per pass, `MemTotal / hugepagesize × percent / 100`
/// (a live run passes its machine's Hugepagesize).
pub fn highalloc_count(memtotal_bytes: u64, hpage_bytes: u64, percent: u64) -> u64 {
    memtotal_bytes / hpage_bytes.max(1) * percent / 100
}

/// `MS_DELAY` in ns: `(PAGESIZE << order) / (MB_PER_SEC × 1048576 / 1000)` ms, the time a
/// huge page takes at the allocation rate.
pub fn attempt_interval_ns(hpage_bytes: u64, mb_per_sec: f64) -> Ns {
    let ms = hpage_bytes as f64 / (mb_per_sec * 1_048_576.0 / 1000.0);
    (ms * NSEC_PER_MSEC as f64).round() as Ns
}

/// The name of pass `i` (0-based) of `load_passes` under load, then `rest`.
pub fn pass_name(i: u64, load_passes: u64) -> String {
    if i < load_passes {
        format!("load-{}", i + 1)
    } else {
        "rest".into()
    }
}

/// One pass: its name and each attempt's (success, latency).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pass {
    pub name: String,
    pub attempts: Vec<(bool, Ns)>,
}

impl Pass {
    /// `% Success`: successes × 100 / attempts, integer division (the stap script's).
    pub fn success_pct(&self) -> u64 {
        let ok = self.attempts.iter().filter(|a| a.0).count() as u64;
        ok * 100 / (self.attempts.len() as u64).max(1)
    }

    /// The attempts' latencies in ms: p50, p90, p99 (mmtests' quantile) and max, rounded
    /// to µs.
    pub fn latency_ms(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut ms: Vec<f64> = self
            .attempts
            .iter()
            .map(|a| a.1 as f64 / NSEC_PER_MSEC as f64)
            .collect();
        ms.sort_by(f64::total_cmp);
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        let q = |p| {
            if ms.is_empty() {
                0.0
            } else {
                round(reclaim_trace::report::quantile(&ms, p))
            }
        };
        let mut m = serde_json::Map::new();
        m.insert("p50".into(), q(0.50).into());
        m.insert("p90".into(), q(0.90).into());
        m.insert("p99".into(), q(0.99).into());
        m.insert(
            "max".into(),
            round(ms.last().copied().unwrap_or(0.0)).into(),
        );
        m
    }
}

/// result.json's metrics of the passes, each keyed by pass name; `numpages` is what each
/// pass asks for.
pub fn pass_metrics(passes: &[Pass], numpages: u64) -> Metrics {
    let mut pct = serde_json::Map::new();
    let mut lat = serde_json::Map::new();
    let mut n = serde_json::Map::new();
    for p in passes {
        pct.insert(p.name.clone(), p.success_pct().into());
        lat.insert(p.name.clone(), p.latency_ms().into());
        n.insert(p.name.clone(), p.attempts.len().into());
    }
    let mut m = Metrics::new();
    m.insert("highalloc_numpages".into(), numpages.into());
    m.insert("highalloc_success_pct".into(), pct.into());
    m.insert("highalloc_attempt_ms".into(), lat.into());
    m.insert("highalloc_attempts".into(), n.into());
    m
}

/// MemTotal in bytes: the zones' managed pages (`totalram_pages()`).
fn memtotal_bytes(k: &Kernel) -> u64 {
    k.mem.zones.iter().map(|z| z.managed_pages).sum::<u64>() * 4096
}

struct StressHighalloc {
    params: StressHighallocParams,
    pool: Rc<RefCell<HugetlbPool>>,
    passes: Rc<RefCell<Vec<Pass>>>,
    /// Attempts each pass asks for (known once the task has read MemTotal).
    numpages: Rc<Cell<u64>>,
    task: Option<u32>,
}

impl Workload for StressHighalloc {
    fn start(&mut self, sim: &mut Sim) {
        kcompactd_run_nodes(sim);
        let p = self.params.clone();
        let (pool, passes, numpages) = (
            Rc::clone(&self.pool),
            Rc::clone(&self.passes),
            Rc::clone(&self.numpages),
        );
        let cpu = p.cpu % sim.k().cpus.nr_cpus();
        let id = sim.spawn("sh".into(), cpu, TaskClass::Workload, move |cx| {
            highalloc(cx, p, pool, passes, numpages)
        });
        let start = (self.params.warmup_s * NSEC_PER_SEC as f64) as Ns;
        sim.k().sched.wake(id, start);
        self.task = Some(id);
    }

    fn ends_by_itself(&self) -> bool {
        true
    }

    fn finished(&self, sim: &Sim) -> bool {
        self.task.is_some_and(|t| sim.exited(t))
    }

    /// The passes are the measurement: the metrics are every pass's, whatever the window.
    fn window_started(&mut self, _now: Ns) {}

    fn metrics(&self, _elapsed_s: f64) -> Metrics {
        pass_metrics(&self.passes.borrow(), self.numpages.get())
    }
}

/// The allocating task: the passes, the killall between the load passes and the rest one.
async fn highalloc(
    cx: Cx,
    p: StressHighallocParams,
    pool: Rc<RefCell<HugetlbPool>>,
    passes: Rc<RefCell<Vec<Pass>>>,
    numpages_out: Rc<Cell<u64>>,
) {
    let numpages = highalloc_count(memtotal_bytes(&cx.k()), HPAGE_BYTES, p.percent);
    numpages_out.set(numpages);
    let interval = attempt_interval_ns(HPAGE_BYTES, p.mb_per_sec);
    let secs = |s: f64| (s * NSEC_PER_SEC as f64) as Ns;
    for i in 0..=p.load_passes {
        if i == p.load_passes {
            let at = cx.k().clock() + secs(p.rest_after_s);
            sleep_until(&cx, at).await;
            killall(&cx).await;
        } else if i > 0 {
            let at = cx.k().clock() + secs(p.pass_gap_s);
            sleep_until(&cx, at).await;
        }
        passes.borrow_mut().push(Pass {
            name: pass_name(i, p.load_passes),
            attempts: Vec::with_capacity(numpages as usize),
        });
        let limit = (p.pass_limit_s > 0.0).then(|| cx.k().clock() + secs(p.pass_limit_s));
        run_pass(&cx, &pool, &passes, numpages, interval, limit).await;
    }
}

/// One pass: `numpages` attempts `interval` apart, each a write of `nr_hugepages + 1`,
/// none started at or after `limit`; then the pool is emptied.
async fn run_pass(
    cx: &Cx,
    pool: &RefCell<HugetlbPool>,
    passes: &RefCell<Vec<Pass>>,
    numpages: u64,
    interval: Ns,
    limit: Option<Ns>,
) {
    for _ in 0..numpages {
        let start = cx.k().clock();
        if limit.is_some_and(|l| start >= l) {
            break;
        }
        let before = pool.borrow().pages.len() as u64;
        let after = HugetlbPool::set_max_huge_pages(pool, cx, before + 1).await;
        let took = cx.k().clock() - start;
        passes
            .borrow_mut()
            .last_mut()
            .expect("the pass was pushed")
            .attempts
            .push((after > before, took));
        sleep_until(cx, start + interval).await;
    }
    let mut k = cx.k();
    let cpu = cx.cpu;
    pool.borrow_mut().shrink(&mut k, 0, cpu);
}

/// How often the killing task looks whether its victims have exited.
const KILLALL_POLL_NS: Ns = 10 * NSEC_PER_MSEC;

/// `killall -KILL`: SIGKILL to every other workload task, then wait until all have exited.
async fn killall(cx: &Cx) {
    let victims: Vec<u32> = {
        let mut k = cx.k();
        let v: Vec<u32> = (0..k.sched.tasks.len() as u32)
            .filter(|&t| {
                let task = &k.sched.tasks[t as usize];
                t != cx.tid && task.class == TaskClass::Workload && !task.exited
            })
            .collect();
        for &t in &v {
            k.send_sigkill(t);
        }
        v
    };
    loop {
        let left = {
            let k = cx.k();
            victims.iter().any(|&t| !k.sched.tasks[t as usize].exited)
        };
        if !left {
            return;
        }
        let at = cx.k().clock() + KILLALL_POLL_NS;
        sleep_until(cx, at).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmtests_derives_the_count_and_the_delay_from_memtotal_and_the_rate() {
        // HIGHALLOC_COUNT at the seed's 3 GB and 95 %: 1536 huge pages × 95 / 100 = 1459.2,
        // integer arithmetic: 1459. MS_DELAY at 16 MB/s: 2097152 / 16777.216 = 125 ms.
        assert_eq!(highalloc_count(3072 << 20, HPAGE_BYTES, 95), 1459);
        assert_eq!(highalloc_count(1536 << 20, HPAGE_BYTES, 95), 729);
        // A part page is not asked for.
        assert_eq!(highalloc_count((3 << 20) - 1, HPAGE_BYTES, 100), 1);
        assert_eq!(attempt_interval_ns(HPAGE_BYTES, 16.0), 125 * NSEC_PER_MSEC);
        assert_eq!(attempt_interval_ns(HPAGE_BYTES, 32.0), 62_500_000);
        // PPC64's 16 MB pages at 16 MB/s: one a second.
        assert_eq!(attempt_interval_ns(16 << 20, 16.0), NSEC_PER_SEC);
        assert_eq!(pass_name(0, 2), "load-1");
        assert_eq!(pass_name(1, 2), "load-2");
        assert_eq!(pass_name(2, 2), "rest");
        assert_eq!(pass_name(3, 3), "rest");
    }

    #[test]
    fn a_scripted_pass_gives_mmtests_success_and_quantiles() {
        let ms = NSEC_PER_MSEC;
        // 7 attempts, 5 succeed: 500 / 7 = 71 (integer division, the stap script's).
        let pass = Pass {
            name: "load-1".into(),
            attempts: vec![
                (true, ms),
                (false, 40 * ms),
                (true, 3 * ms),
                (true, 2 * ms),
                (false, 7 * ms),
                (true, 5 * ms),
                (true, 1500 * ms),
            ],
        };
        assert_eq!(pass.success_pct(), 71);
        // Sorted: 1 2 3 5 7 40 1500 ms, L = 6; x[int(6p + 0.5)]: p50 x[3] = 5, p90 x[5] = 40,
        // p99 x[6] = 1500.
        let lat = pass.latency_ms();
        assert_eq!(lat["p50"], 5.0);
        assert_eq!(lat["p90"], 40.0);
        assert_eq!(lat["p99"], 1500.0);
        assert_eq!(lat["max"], 1500.0);
        let rest = Pass {
            name: "rest".into(),
            attempts: vec![(true, 250_000), (false, 1_234_567)],
        };
        assert_eq!(rest.success_pct(), 50);
        let m = pass_metrics(&[pass, rest], 7);
        assert_eq!(m["highalloc_numpages"], 7);
        assert_eq!(m["highalloc_success_pct"]["load-1"], 71);
        assert_eq!(m["highalloc_success_pct"]["rest"], 50);
        assert_eq!(m["highalloc_attempts"]["rest"], 2);
        // L = 1: p50 x[int(1.0)] = x[1]; rounded to µs.
        assert_eq!(m["highalloc_attempt_ms"]["rest"]["p50"], 1.235);
        assert_eq!(m["highalloc_attempt_ms"]["rest"]["max"], 1.235);
        // No attempts: 0 %, zeros.
        let empty = Pass::default();
        assert_eq!(empty.success_pct(), 0);
        assert_eq!(empty.latency_ms()["p99"], 0.0);
    }

    #[test]
    fn bad_keys_are_named() {
        let table = |s: &str| s.parse::<toml::Table>().unwrap();
        assert_eq!(resolve(&table("percent = 0")).unwrap_err().key, "percent");
        assert_eq!(resolve(&table("percent = 101")).unwrap_err().key, "percent");
        assert_eq!(
            resolve(&table("mb_per_sec = 0.0")).unwrap_err().key,
            "mb_per_sec"
        );
        assert_eq!(
            resolve(&table("load_passes = 0")).unwrap_err().key,
            "load_passes"
        );
        assert_eq!(
            resolve(&table("pass_limit_s = -1.0")).unwrap_err().key,
            "pass_limit_s"
        );
        assert_eq!(resolve(&table("passes = 2")).unwrap_err().key, "passes");
        let r = resolve(&table("")).unwrap();
        assert_eq!(r["percent"].as_integer(), Some(95));
        assert_eq!(r["warmup_s"].as_float(), Some(300.0));
        assert_eq!(r["rest_after_s"].as_float(), Some(180.0));
    }
}
