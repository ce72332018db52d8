//! vm-scalability's usemem (seed 002): N processes each map `size_mb` of anonymous memory and
//! write it, sequentially or at random words, `repeats` times or until `runtime_s`.
//!
//! A sequential pass writes each page's 512 words in turn (`usemem_page_ns` a present page);
//! a random pass writes one word at a random address per access (`usemem_word_ns`). An
//! access to a page that is not present faults (`mm::memory::handle_mm_fault`): a first
//! touch allocates, a swapped-out page is read back, through the swap cache and readahead.
//! Throughput counts bytes as usemem counts them: 8 per word written, plus an eighth of the
//! mapping's size when it is mapped (`do_unit()`'s `rw_bytes = bytes / 8`), which dominates
//! a random pass's count; latency is each access's, from
//! its start to its end, faults and waits included (the seed's latency table: a sequential
//! access is a page, a random one a word).
//!
//! Departure: a process that ends keeps its memory until the run ends (usemem's exit would
//! unmap it); the seed's runs end with the measurement.

use std::cell::RefCell;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Metrics, Registration, Workload, WorkloadError};
use crate::engine::{Ns, NSEC_PER_SEC, NSEC_PER_USEC};
use crate::mm::memory::handle_mm_fault;
use crate::mm::mempolicy::{Mempolicy, MpolMode};
use crate::mm::mmap::munmap;
use crate::mm::swap_state::SwapinScratch;
use crate::mm::vma::{pte_mkyoung, pte_present, Pte};
use crate::process::{cond_resched, fatal_signal_pending, Cx, Sim};
use crate::sched::TaskClass;

pub const REGISTRATION: Registration = Registration {
    kind: "usemem",
    about: "vm-scalability usemem: anonymous memory written sequentially or at random (seed 002)",
    resolve,
    build: Some(build),
    // Empty: the command line's usemem table (with ra_hit%) serves both backends.
    columns: &[],
    mappings,
    live: true,
};

/// The `[workload]` keys of `kind = "usemem"`.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsememParams {
    #[serde(default = "one")]
    tasks: u64,
    /// MiB each process maps and writes.
    #[serde(default = "default_size_mb")]
    size_mb: u64,
    /// Random words instead of a sequential pass.
    #[serde(default)]
    random: bool,
    /// Passes over the mapping (0: until `runtime_s`).
    #[serde(default = "one")]
    repeats: u64,
    /// Seconds after which a process stops (0: no limit).
    #[serde(default)]
    runtime_s: f64,
    /// Each task's memory policy (`set_mempolicy(2)`, `mm::mempolicy`): "default",
    /// "bind", "interleave" or "preferred".
    #[serde(default, skip_serializing_if = "MpolMode::is_default")]
    mempolicy: MpolMode,
    /// The policy's nodes (one for "preferred").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    nodes: Vec<u32>,
}

fn one() -> u64 {
    1
}
fn default_size_mb() -> u64 {
    256
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<UsememParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("size_mb", p.size_mb)?;
    if p.tasks.saturating_mul(p.size_mb).saturating_mul(256) >= u64::from(u32::MAX) {
        return Err(WorkloadError::new(
            "size_mb",
            "expected tasks × size_mb under 16 TiB (the model's 32-bit page-table index)",
        ));
    }
    if p.runtime_s.is_nan() || p.runtime_s < 0.0 {
        return Err(WorkloadError::new(
            "runtime_s",
            "expected seconds ≥ 0 (0: no limit)",
        ));
    }
    if p.repeats == 0 && p.runtime_s == 0.0 {
        return Err(WorkloadError::new(
            "repeats",
            "repeats = 0 (until runtime_s) needs runtime_s above 0",
        ));
    }
    super::check_mempolicy(p.mempolicy, &p.nodes)?;
    Ok(resolved)
}

/// Each process maps one VMA of `size_mb`.
fn mappings(table: &toml::Table) -> (u64, u64) {
    let (p, _) = resolve_params::<UsememParams>(table).expect("a resolved table");
    (p.tasks, p.tasks * p.size_mb * 256)
}

fn build(table: &toml::Table) -> Box<dyn Workload> {
    let (params, _) = resolve_params::<UsememParams>(table).expect("a resolved table");
    Box::new(Usemem {
        params,
        stats: Rc::default(),
        at_window_start: Vec::new(),
        tasks: Vec::new(),
    })
}

/// Latencies in a log-linear histogram: 64 buckets per power of two above 64 ns (≈1.6 %
/// resolution), exact below.
#[derive(Clone, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
}

const SUB_BITS: u32 = 6;

/// The percentiles of a usemem's `latency_us`.
pub const LATENCY_PERCENTILES: [u32; 7] = [50, 60, 70, 80, 90, 95, 99];

impl Histogram {
    fn bucket(v: Ns) -> usize {
        if v < (1 << SUB_BITS) {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
        let sub = (v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        ((e - SUB_BITS + 1) << SUB_BITS) as usize + sub as usize
    }

    /// The smallest value of bucket `b`.
    fn floor(b: usize) -> Ns {
        if b < (1 << SUB_BITS) {
            return b as Ns;
        }
        let e = (b >> SUB_BITS) as u32 + SUB_BITS - 1;
        let sub = (b & ((1 << SUB_BITS) - 1)) as Ns;
        (1 << e) | (sub << (e - SUB_BITS))
    }

    #[inline]
    pub fn record(&mut self, v: Ns) {
        self.record_n(v, 1);
    }

    /// `record(v)`, `n` times.
    #[inline]
    pub fn record_n(&mut self, v: Ns, n: u64) {
        if n == 0 {
            return;
        }
        let b = Self::bucket(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += n;
        self.total += n;
        self.sum_ns += u128::from(v) * u128::from(n);
    }

    /// What was recorded since `before` (an earlier copy of this histogram).
    fn since(&self, before: &Histogram) -> Histogram {
        let mut h = self.clone();
        for (c, b) in h.counts.iter_mut().zip(&before.counts) {
            *c -= b;
        }
        h.total -= before.total;
        h.sum_ns -= before.sum_ns;
        h
    }

    fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.total += other.total;
        self.sum_ns += other.sum_ns;
    }

    /// The value below which `pct` % of the samples fall (the floor of its bucket).
    pub fn percentile(&self, pct: f64) -> Ns {
        let rank = ((self.total as f64 * pct / 100.0).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::floor(b);
            }
        }
        0
    }

    /// The histogram of buckets as `buckets()` gives them, several histograms' added up (a
    /// bucket may come more than once), whose samples sum to `sum_ns`: a live usemem's tasks'.
    /// A value that is not a bucket's floor counts in the bucket that holds it.
    pub fn from_buckets(buckets: impl IntoIterator<Item = (Ns, u64)>, sum_ns: u128) -> Histogram {
        let mut h = Histogram::default();
        for (floor, n) in buckets {
            h.record_n(floor, n);
        }
        h.sum_ns = sum_ns;
        h
    }

    /// A usemem's `latency_us` metrics, simulated or live: the average and the
    /// `LATENCY_PERCENTILES` in µs (a percentile is its bucket's floor), and the samples.
    pub fn latency_us(&self) -> serde_json::Map<String, serde_json::Value> {
        let us = |ns: Ns| ns as f64 / NSEC_PER_USEC as f64;
        let mut lat = serde_json::Map::new();
        lat.insert("average".into(), (self.mean() / 1e3).into());
        for q in LATENCY_PERCENTILES {
            lat.insert(format!("p{q}"), us(self.percentile(q as f64)).into());
        }
        lat.insert("samples".into(), self.total.into());
        lat
    }

    /// The non-empty buckets as (lowest value in ns, count), lowest first: what a live
    /// usemem task reports, so that several tasks' histograms can be added up.
    pub fn buckets(&self) -> impl Iterator<Item = (Ns, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(b, &c)| (Self::floor(b), c))
    }

    /// Σ of the samples, in ns.
    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.total as f64
        }
    }
}

/// One process's counts.
#[derive(Clone, Default)]
struct TaskStats {
    bytes: u64,
    passes: u64,
    latency: Histogram,
}

struct Usemem {
    params: UsememParams,
    stats: Rc<RefCell<Vec<TaskStats>>>,
    at_window_start: Vec<TaskStats>,
    /// The processes' tasks.
    tasks: Vec<u32>,
}

impl Workload for Usemem {
    fn start(&mut self, sim: &mut Sim) {
        let p = self.params.clone();
        let (nodes, cpn, seed, first) = {
            let k = sim.k();
            let first = k
                .sched
                .tasks
                .iter()
                .filter(|t| t.class == TaskClass::Workload)
                .count() as u64;
            (
                u64::from(k.mem.nodes.len() as u32),
                u64::from(k.cpus.nr_cpus_per_node),
                k.seed,
                first,
            )
        };
        if sim.k().thp_faults_possible() {
            // Faults allocate huge pages, compacting for them: the nodes' kcompactd.
            for nid in 0..nodes as u32 {
                crate::mm::compaction::kcompactd_run(sim, nid);
            }
        }
        *self.stats.borrow_mut() = vec![TaskStats::default(); p.tasks as usize];
        let nr_pages = u32::try_from(p.size_mb * 256).expect("size_mb fits the page tables");
        for i in 0..p.tasks {
            // Processes alternate between nodes, after the workloads started before them.
            let n = first + i;
            let cpu = ((n % nodes) * cpn + (n / nodes) % cpn) as u32;
            let stats = Rc::clone(&self.stats);
            let params = p.clone();
            let rng_seed = seed ^ (0x5EED_0000 + n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let id = sim.spawn("usemem".into(), cpu, TaskClass::Workload, move |cx| {
                usemem(cx, i as usize, nr_pages, params, rng_seed, stats)
            });
            let mut k = sim.k();
            // set_mempolicy() before the process maps and touches its memory.
            k.sched.tasks[id as usize].mempolicy = Mempolicy::new(p.mempolicy, &p.nodes);
            let vma = k.mm.mmap(id, nr_pages);
            debug_assert_eq!(vma as u64, k.mm.vmas.len() as u64 - 1);
            k.sched.wake(id, n as Ns * 1000);
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
        self.at_window_start = self.stats.borrow().clone();
    }

    fn metrics(&self, elapsed_s: f64) -> Metrics {
        let stats = self.stats.borrow();
        let empty = TaskStats::default();
        let mut latency = Histogram::default();
        let mut task_kb_s = Vec::new();
        let mut bytes = 0;
        let mut passes = 0;
        for (i, t) in stats.iter().enumerate() {
            let before = self.at_window_start.get(i).unwrap_or(&empty);
            let b = t.bytes - before.bytes;
            bytes += b;
            passes += t.passes - before.passes;
            task_kb_s.push(b as f64 / 1024.0 / elapsed_s);
            latency.merge(&t.latency.since(&before.latency));
        }
        let mut m = Metrics::new();
        m.insert("tasks".into(), self.params.tasks.into());
        m.insert("random".into(), self.params.random.into());
        m.insert("bytes".into(), bytes.into());
        m.insert("passes".into(), passes.into());
        m.insert(
            "throughput_kB_s".into(),
            (bytes as f64 / 1024.0 / elapsed_s).into(),
        );
        m.insert("task_kB_s".into(), task_kb_s.into());
        m.insert("latency_us".into(), latency.latency_us().into());
        m
    }
}

/// How long a process writes present pages before it yields its CPU.
const QUANTUM_NS: Ns = 50 * NSEC_PER_USEC;

/// One usemem process: its VMA is the one `start` mapped for it (found by its task id).
async fn usemem(
    cx: Cx,
    slot: usize,
    nr_pages: u32,
    p: UsememParams,
    rng_seed: u64,
    stats: Rc<RefCell<Vec<TaskStats>>>,
) {
    let (vma, base, started, memcg) = {
        let k = cx.k();
        let vma =
            k.mm.task_vma(cx.tid)
                .expect("start mapped the process's VMA");
        (
            vma,
            k.mm.vmas[vma as usize].start,
            k.clock(),
            k.memcg.workload,
        )
    };
    let deadline = if p.runtime_s > 0.0 {
        started + (p.runtime_s * NSEC_PER_SEC as f64) as Ns
    } else {
        Ns::MAX
    };
    let mut rng = Pcg64Mcg::seed_from_u64(rng_seed);
    let mut scratch = SwapinScratch::default();
    // usemem.c do_unit(): `rw_bytes = bytes / 8` for the allocation, before any access.
    let mut local = Slice {
        bytes: u64::from(nr_pages) * 4096 / 8,
        ..Slice::default()
    };
    let (access_bytes, access_ns) = {
        let k = cx.k();
        if p.random {
            (8, k.costs.usemem_word_ns)
        } else {
            (4096, k.costs.usemem_page_ns)
        }
    };
    let mut pass = Pass {
        random: p.random,
        nr_pages,
        done: 0,
        accesses: if p.random {
            u64::from(nr_pages) * 512
        } else {
            u64::from(nr_pages)
        },
        bytes: access_bytes,
        ahead: [0; LOOKAHEAD],
        head: 0,
    };
    let mut addr = pass.start(&mut rng, &cx.k().mm.ptes, base);
    loop {
        // Present pages, written within one slice: counted and charged together.
        let fault_at = {
            let mut k = cx.k();
            let end = (k.clock() + QUANTUM_NS).min(deadline);
            let mut now = k.clock();
            let mut n = 0;
            let ptes = &mut k.mm.ptes;
            let fault_at = loop {
                if now >= end {
                    break None;
                }
                let pte = &mut ptes[(base + addr) as usize];
                if !pte_present(*pte) {
                    break Some(now);
                }
                *pte = pte_mkyoung(*pte);
                now += access_ns;
                n += 1;
                addr = pass.advance(&mut local.passes, &mut rng, ptes, base);
            };
            k.charge_user(n * access_ns);
            local.present += n;
            local.bytes += n * pass.bytes;
            fault_at
        };
        if let Some(t0) = fault_at {
            handle_mm_fault(&cx, vma, addr, memcg, &mut scratch).await;
            // The access itself, once the page is there.
            let mut k = cx.k();
            let idx = base + addr;
            if pte_present(k.mm.ptes[idx as usize]) {
                k.mm.mark_young(idx);
                k.charge_user(access_ns);
                let latency = k.clock() - t0;
                local.fault_latency = Some(latency);
                local.bytes += pass.bytes;
                addr = pass.advance(&mut local.passes, &mut rng, &k.mm.ptes, base);
            }
        }
        flush(&stats, slot, access_ns, &mut local);
        let finished = {
            let k = cx.k();
            k.clock() >= deadline || (p.repeats > 0 && stats.borrow()[slot].passes >= p.repeats)
        };
        if finished {
            return;
        }
        if fatal_signal_pending(&cx) {
            // do_exit() → exit_mmap(): the memory goes back.
            munmap(&cx, vma).await;
            return;
        }
        cond_resched(&cx).await;
    }
}

/// Pages a random pass draws ahead of its accesses, so that their page-table entries are
/// fetched while it writes the pages before them (the simulator's own memory latency: the
/// entries of a large random mapping miss every cache). The draws are the same, in order.
const LOOKAHEAD: usize = 16;

/// A process's way through its mapping: which page the next access writes, and how far
/// the pass has come.
struct Pass {
    random: bool,
    nr_pages: u32,
    /// Accesses done in this pass, and per pass (pages, or words when random).
    done: u64,
    accesses: u64,
    /// Bytes each access writes.
    bytes: u64,
    /// A random pass's next pages, `head` the next to write.
    ahead: [u32; LOOKAHEAD],
    head: usize,
}

impl Pass {
    /// The page of the first access; a random pass draws its first pages.
    fn start(&mut self, rng: &mut Pcg64Mcg, ptes: &[Pte], base: u32) -> u32 {
        if !self.random {
            return 0;
        }
        for i in 0..LOOKAHEAD {
            self.ahead[i] = self.draw(rng, ptes, base);
        }
        self.ahead[0]
    }

    /// A random page, its page-table entry prefetched.
    #[inline]
    fn draw(&self, rng: &mut Pcg64Mcg, ptes: &[Pte], base: u32) -> u32 {
        let page = rng.gen_range(0..self.nr_pages);
        prefetch(&ptes[(base + page) as usize]);
        page
    }

    /// An access is done (`passes` counts a pass it completes): the page of the next.
    #[inline]
    fn advance(&mut self, passes: &mut u64, rng: &mut Pcg64Mcg, ptes: &[Pte], base: u32) -> u32 {
        self.done += 1;
        if self.done == self.accesses {
            self.done = 0;
            *passes += 1;
        }
        if !self.random {
            return self.done as u32;
        }
        self.ahead[self.head] = self.draw(rng, ptes, base);
        self.head = (self.head + 1) % LOOKAHEAD;
        self.ahead[self.head]
    }
}

/// Ask the CPU to fetch `pte`'s cache line (a hint: no effect on what the program computes).
#[inline]
fn prefetch(pte: &Pte) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch of any address neither faults nor changes memory.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (pte as *const Pte).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = pte;
}

/// What one process did since its last `flush`, kept apart from the shared counts so that
/// its loop borrows them once per fault: its present pages' accesses (each of the same
/// latency) and at most one fault's.
#[derive(Default)]
struct Slice {
    bytes: u64,
    passes: u64,
    present: u64,
    fault_latency: Option<Ns>,
}

/// Move a process's counts since its last flush into the shared stats.
fn flush(stats: &Rc<RefCell<Vec<TaskStats>>>, slot: usize, access_ns: Ns, local: &mut Slice) {
    let mut s = stats.borrow_mut();
    let t = &mut s[slot];
    t.bytes += local.bytes;
    t.passes += local.passes;
    t.latency.record_n(access_ns, local.present);
    if let Some(latency) = local.fault_latency {
        t.latency.record(latency);
    }
    *local = Slice::default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_round_trip_within_their_resolution() {
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            100,
            1000,
            1_500,
            97_140,
            1_340_000,
            10_u64.pow(11),
        ] {
            let b = Histogram::bucket(v);
            let lo = Histogram::floor(b);
            assert!(lo <= v, "{v}: floor {lo}");
            assert!(v - lo <= v / 64, "{v}: floor {lo} too far");
            assert_eq!(Histogram::bucket(lo), b);
        }
        let mut h = Histogram::default();
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.percentile(50.0), 49_664); // the bucket floor of 50 µs
        assert!((h.mean() - 50_500.0).abs() < 1e-9);
    }

    #[test]
    fn record_n_is_n_records() {
        let (mut one, mut many) = (Histogram::default(), Histogram::default());
        for _ in 0..5 {
            one.record(1_600);
        }
        many.record_n(1_600, 5);
        many.record_n(99, 0);
        assert_eq!(one.counts, many.counts);
        assert_eq!((one.total, one.sum_ns), (many.total, many.sum_ns));
    }

    #[test]
    fn flushed_slices_add_up_to_every_access_recorded() {
        // A process flushes after each fault: its present accesses since the last flush,
        // all of one latency, and the fault's. The shared histogram is what recording every
        // access would give.
        let stats = Rc::new(RefCell::new(vec![TaskStats::default()]));
        let mut whole = Histogram::default();
        let mut slice = Slice::default();
        for (present, fault) in [
            (3, Some(97_000)),
            (0, Some(1_340_000)),
            (7, None),
            (1, Some(40)),
        ] {
            whole.record_n(400, present);
            slice.present += present;
            slice.bytes += present * 4096;
            if let Some(l) = fault {
                whole.record(l);
                slice.fault_latency = Some(l);
                slice.bytes += 4096;
            }
            flush(&stats, 0, 400, &mut slice);
            assert!(slice.present == 0 && slice.fault_latency.is_none() && slice.bytes == 0);
        }
        let t = &stats.borrow()[0];
        assert_eq!(t.latency.counts, whole.counts);
        assert_eq!(
            (t.latency.total, t.latency.sum_ns),
            (whole.total, whole.sum_ns)
        );
        assert_eq!(t.bytes, 14 * 4096);
    }

    #[test]
    fn a_random_pass_drawing_ahead_writes_the_pages_in_the_order_drawn() {
        let nr_pages = 1000;
        let ptes = vec![0; 2 * nr_pages as usize];
        let mut pass = Pass {
            random: true,
            nr_pages,
            done: 0,
            accesses: 3 * LOOKAHEAD as u64,
            bytes: 8,
            ahead: [0; LOOKAHEAD],
            head: 0,
        };
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let mut passes = 0;
        let mut pages = vec![pass.start(&mut rng, &ptes, nr_pages)];
        for _ in 1..5 * LOOKAHEAD {
            pages.push(pass.advance(&mut passes, &mut rng, &ptes, nr_pages));
        }
        let mut plain = Pcg64Mcg::seed_from_u64(7);
        let drawn: Vec<u32> = (0..5 * LOOKAHEAD)
            .map(|_| plain.gen_range(0..nr_pages))
            .collect();
        assert_eq!(pages, drawn);
        assert_eq!(passes, 1);
    }
}
