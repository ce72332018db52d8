//! How direct reclaim overlaps in time: how many tasks stall at once, how many nodes each
//! stall scans, and whether kswapd sleeps while tasks stall.
//!
//! trace-vmscan-postprocess.pl and mmtests report only totals and per-stall latencies. Those
//! cannot tell apart two regimes with the same totals: free memory pinned at the min
//! watermark, with a steady number of tasks in reclaim, each freeing pages the others take
//! at once; and reclaim in herds, where every allocating task stalls within a few
//! milliseconds, together they overshoot the high watermark, kswapd goes to sleep, and no
//! task stalls until free memory is back at min. Seed 000's tables point to the second on the
//! seed's machine (docs/fidelity/seed000.md), and this view is what a trace must show to
//! settle it.
//!
//! The count of tasks in direct reclaim changes only at `mm_vmscan_direct_reclaim_begin`
//! and `_end`; the nodes a stall scanned are the `nid`s of the
//! `mm_vmscan_lru_shrink_inactive` events between them. A kswapd is asleep from its last
//! reclaim event before a wake until that wake: `kswapd_try_to_sleep()` first naps for
//! HZ/10 with no tracepoint, and emits `mm_vmscan_kswapd_sleep` only if it then sleeps for
//! good, so a nap that ends early shows only as a gap before the next
//! `mm_vmscan_kswapd_wake`. Before a kswapd's first event its state is unknown and it counts
//! as awake.

use serde::Serialize;

/// Lower bounds of the buckets of "tasks in direct reclaim": 0, 1, 2–3, 4–7, … , ≥ 64.
pub const TASK_BUCKETS: [u32; 8] = [0, 1, 2, 4, 8, 16, 32, 64];

/// Finished stalls are counted by the nodes they scanned: 0, 1, 2, 3 and ≥ 4.
pub const NODE_BUCKETS: usize = 5;

/// The bucket of `TASK_BUCKETS` that `n` tasks fall in.
pub fn task_bucket(n: u32) -> usize {
    TASK_BUCKETS.iter().rposition(|&b| n >= b).unwrap_or(0)
}

/// The label of bucket `i` of `TASK_BUCKETS`: "0", "1", "2-3", …, "64+".
pub fn task_bucket_label(i: usize) -> String {
    match (TASK_BUCKETS[i], TASK_BUCKETS.get(i + 1)) {
        (lo, None) => format!("{lo}+"),
        (lo, Some(&next)) if next == lo + 1 => lo.to_string(),
        (lo, Some(&next)) => format!("{lo}-{}", next - 1),
    }
}

/// Overlap statistics of one trace, from its first event to its last.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Concurrency {
    /// Trace time with k tasks in direct reclaim, by `TASK_BUCKETS` bucket of k.
    pub time_ns_by_tasks: [u64; TASK_BUCKETS.len()],
    /// ∫ (tasks in direct reclaim) dt, in task·ns: divided by the traced time, the mean.
    pub task_ns: u64,
    /// Most tasks in direct reclaim at once.
    pub max_tasks: u32,
    /// Trace time with a task in direct reclaim while a kswapd was asleep.
    pub direct_with_kswapd_asleep_ns: u64,
    /// Trace time with a kswapd asleep (one kswapd asleep counts once, as do several): from
    /// its last reclaim event before a sleep or a re-wake to that wake (or the trace's end).
    pub kswapd_asleep_ns: u64,
    /// Trace time with at least one kswapd awake (several awake at once count once): the
    /// union of every kswapd's awake intervals, measured or estimated as its awake time is.
    pub kswapd_any_awake_ns: u64,
    /// Finished stalls by the number of nodes they scanned (0, 1, 2, 3, ≥ 4).
    pub stalls_by_nodes: [u64; NODE_BUCKETS],
    /// Pages scanned by the inactive-list shrinks of those stalls.
    pub stall_pages_scanned: u64,
    /// Σ over those stalls of the nodes each scanned.
    pub stall_node_visits: u64,
}

impl Concurrency {
    /// Finished stalls.
    pub fn stalls(&self) -> u64 {
        self.stalls_by_nodes.iter().sum()
    }

    /// Traced time, ns.
    pub fn span_ns(&self) -> u64 {
        self.time_ns_by_tasks.iter().sum()
    }

    /// Mean tasks in direct reclaim over the traced time.
    pub fn mean_tasks(&self) -> f64 {
        ratio(self.task_ns as f64, self.span_ns() as f64)
    }

    /// Traced time with at least one task in direct reclaim, ns.
    pub fn busy_ns(&self) -> u64 {
        self.span_ns() - self.time_ns_by_tasks[0]
    }

    /// Mean tasks in direct reclaim over the time at least one was.
    pub fn mean_tasks_while_any(&self) -> f64 {
        ratio(self.task_ns as f64, self.busy_ns() as f64)
    }

    /// Mean pages scanned per finished stall.
    pub fn pages_per_stall(&self) -> f64 {
        ratio(self.stall_pages_scanned as f64, self.stalls() as f64)
    }

    /// Mean pages a stall scanned on each node it visited.
    pub fn pages_per_node_visit(&self) -> f64 {
        ratio(
            self.stall_pages_scanned as f64,
            self.stall_node_visits as f64,
        )
    }
}

fn ratio(n: f64, d: f64) -> f64 {
    if d > 0.0 {
        n / d
    } else {
        0.0
    }
}

/// The running state behind [`Concurrency`]: fed by the analyser at each change.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    c: Concurrency,
    in_direct: u32,
    /// Time up to which the integrals are taken (the trace's first event, to begin with).
    since: u64,
    /// Intervals with a task in direct reclaim, in time order and disjoint; the last one is
    /// open while `in_direct > 0`.
    busy: Vec<(u64, u64)>,
    /// Intervals in which one kswapd slept (from several kswapds they may overlap).
    kswapd_idle: Vec<(u64, u64)>,
    /// Intervals in which one kswapd was awake (from several kswapds they may overlap).
    kswapd_awake: Vec<(u64, u64)>,
}

impl Tracker {
    /// The trace's first event is at `ts`.
    pub fn start(&mut self, ts: u64) {
        self.since = ts;
    }

    /// Integrate the current state up to `ts`. Events out of order by a little (per-CPU
    /// buffers merged) never move time back.
    pub fn advance(&mut self, ts: u64) {
        if ts > self.since {
            let d = ts - self.since;
            self.c.time_ns_by_tasks[task_bucket(self.in_direct)] += d;
            self.c.task_ns += self.in_direct as u64 * d;
            self.since = ts;
        }
    }

    /// A stall began (the caller has advanced to its time).
    pub fn direct_begin(&mut self) {
        if self.in_direct == 0 {
            self.busy.push((self.since, self.since));
        }
        self.in_direct += 1;
        self.c.max_tasks = self.c.max_tasks.max(self.in_direct);
    }

    /// A stall that began in the trace ended (the caller has advanced to its time), having
    /// scanned `scanned` pages on the nodes of the bitmask `nodes`.
    pub fn direct_end(&mut self, nodes: u64, scanned: u64) {
        self.in_direct = self.in_direct.saturating_sub(1);
        if self.in_direct == 0 {
            if let Some(last) = self.busy.last_mut() {
                last.1 = self.since;
            }
        }
        let n = nodes.count_ones() as usize;
        self.c.stalls_by_nodes[n.min(NODE_BUCKETS - 1)] += 1;
        self.c.stall_node_visits += n as u64;
        self.c.stall_pages_scanned += scanned;
    }

    /// One kswapd slept from `from` to `to`.
    pub fn kswapd_idle(&mut self, from: u64, to: u64) {
        if to > from {
            self.kswapd_idle.push((from, to));
        }
    }

    /// One kswapd was awake from `from` to `to`.
    pub fn kswapd_awake(&mut self, from: u64, to: u64) {
        if to > from {
            self.kswapd_awake.push((from, to));
        }
    }

    /// Closes the trace at `last` and computes the kswapd rows: the union of the kswapds'
    /// idle intervals, and its overlap with the time a task was in direct reclaim; the union
    /// of their awake intervals.
    pub fn finish(mut self, last: u64) -> Concurrency {
        self.advance(last);
        if self.in_direct > 0 {
            if let Some(b) = self.busy.last_mut() {
                b.1 = self.since;
            }
        }
        let idle = union(std::mem::take(&mut self.kswapd_idle));
        self.c.kswapd_asleep_ns = idle.iter().map(|(a, b)| b - a).sum();
        self.c.direct_with_kswapd_asleep_ns = overlap(&idle, &self.busy);
        let awake = union(std::mem::take(&mut self.kswapd_awake));
        self.c.kswapd_any_awake_ns = awake.iter().map(|(a, b)| b - a).sum();
        self.c
    }
}

/// The union of intervals, as sorted disjoint intervals.
fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of the intersection of two lists of sorted disjoint intervals.
fn overlap(x: &[(u64, u64)], y: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        let lo = x[i].0.max(y[j].0);
        let hi = x[i].1.min(y[j].1);
        total += hi.saturating_sub(lo);
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// A node's bit in a stall's bitmask (nodes ≥ 63 share the last bit).
pub fn node_bit(nid: i32) -> u64 {
    1u64 << nid.clamp(0, 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_count_once() {
        assert_eq!(task_bucket(0), 0);
        assert_eq!(task_bucket(1), 1);
        assert_eq!(task_bucket(3), 2);
        assert_eq!(task_bucket(4), 3);
        assert_eq!(task_bucket(63), 6);
        assert_eq!(task_bucket(1000), 7);
        let labels: Vec<String> = (0..TASK_BUCKETS.len()).map(task_bucket_label).collect();
        assert_eq!(
            labels,
            ["0", "1", "2-3", "4-7", "8-15", "16-31", "32-63", "64+"]
        );
    }

    #[test]
    fn time_is_split_by_how_many_tasks_stall() {
        let mut t = Tracker::default();
        // 0..10: none; 10..30: one; 30..35: two; 35..40: one; 40..50: none.
        t.advance(10);
        t.direct_begin();
        t.advance(30);
        t.direct_begin();
        t.advance(35);
        t.direct_end(0b1, 100);
        t.advance(40);
        t.direct_end(0b11, 300);
        t.advance(50);
        let c = &t.c;
        assert_eq!(c.time_ns_by_tasks[..3], [20, 25, 5]);
        assert_eq!(c.task_ns, 20 + 5 * 2 + 5);
        assert_eq!(c.max_tasks, 2);
        assert_eq!(c.stalls_by_nodes, [0, 1, 1, 0, 0]);
        assert_eq!(c.pages_per_stall(), 200.0);
        assert_eq!(c.pages_per_node_visit(), 400.0 / 3.0);
        assert_eq!(c.mean_tasks_while_any(), 35.0 / 30.0);
    }

    #[test]
    fn kswapd_sleep_overlaps_only_while_tasks_stall() {
        let mut t = Tracker::default();
        t.advance(10);
        t.direct_begin();
        t.advance(20);
        t.direct_end(0, 0);
        t.advance(30);
        t.direct_begin();
        // Two kswapds asleep over 0..15 and 5..25 (union 0..25); stalls over 10..20, 30..40.
        t.kswapd_idle(0, 15);
        t.kswapd_idle(5, 25);
        t.kswapd_idle(7, 7);
        let c = t.finish(40);
        assert_eq!(c.kswapd_asleep_ns, 25);
        assert_eq!(c.direct_with_kswapd_asleep_ns, 10);
        assert_eq!(c.stalls_by_nodes[0], 1);
        assert_eq!(c.time_ns_by_tasks[..2], [20, 20]);
    }

    #[test]
    fn intervals_merge_and_intersect() {
        assert_eq!(
            union(vec![(5, 9), (0, 2), (1, 3), (9, 10)]),
            [(0, 3), (5, 10)]
        );
        assert_eq!(overlap(&[(0, 3), (5, 10)], &[(2, 6), (8, 20)]), 1 + 1 + 2);
        assert_eq!(overlap(&[], &[(0, 1)]), 0);
    }

    #[test]
    fn time_never_runs_back() {
        let mut t = Tracker::default();
        t.start(50);
        t.advance(100);
        t.advance(90);
        t.advance(120);
        assert_eq!(t.c.span_ns(), 70);
    }
}
