//! The vmscan statistics of trace-vmscan-postprocess.pl (2.6.36 and 2023 versions,
//! WORKLOADS.md §3) and of mmtests' ftrace reports, computed in one streaming pass.
//!
//! Differences from the Perl script (each is a defect there; docs/tracing.md lists them):
//! * state machines (reclaim begin/end, kswapd awake) are per pid; `--ignore-pid`
//!   aggregates finished per-pid statistics by name, so pids sharing a name never overwrite
//!   each other's stalls;
//! * pages scanned/reclaimed/written are attributed by the reclaim *context* the task was
//!   in (inside direct_reclaim_begin/end, inside memcg_reclaim_begin/end, or kswapd), not
//!   to every event of a process that once direct-reclaimed;
//! * `mm_vmscan_write_folio` (6.x) counts as a write like `mm_vmscan_writepage`;
//! * a reclaim begin is consumed by its end (the script never clears it);
//! * kswapd awake time is estimated from kswapd's own events where the trace has no
//!   `mm_vmscan_kswapd_sleep` to close a wake (6.x under sustained pressure emits none).

use crate::concurrency::{node_bit, Concurrency, Tracker};
use crate::event::{CongestionWait, Event, ThrottleReason};
use crate::line::{parse_line, Parsed};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Read};

/// FxHash-style hasher for pid keys (std's SipHash costs more than the parse of a line).
#[derive(Default)]
pub struct PidHasher(u64);
impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
type PidMap<V> = HashMap<u32, V, BuildHasherDefault<PidHasher>>;

/// Options of an analysis (the script's `--ignore-pid`, plus bounds).
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// Aggregate per-process rows by task name (the `-PID` suffix stripped).
    pub ignore_pid: bool,
    /// How many malformed line numbers to keep.
    pub max_malformed_lines: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ignore_pid: false,
            max_malformed_lines: 20,
        }
    }
}

/// Reclaim work in one context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    pub scanned_file: u64,
    pub scanned_anon: u64,
    /// Scanned on a layout that does not say file or anon (2.6.36).
    pub scanned_unknown: u64,
    /// `nr_taken` of the counted isolations (MGLRU's pgscan counts this).
    pub taken: u64,
    pub reclaimed_file: u64,
    pub reclaimed_anon: u64,
    pub write_file_sync: u64,
    pub write_anon_sync: u64,
    pub write_file_async: u64,
    pub write_anon_async: u64,
    /// `nr_taken` of shrink_active_list (pages moved off the active lists; pgrefill).
    pub refill: u64,
}

impl Work {
    pub fn scanned(&self) -> u64 {
        self.scanned_file + self.scanned_anon + self.scanned_unknown
    }
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed_file + self.reclaimed_anon
    }
    pub fn sync_io(&self) -> u64 {
        self.write_file_sync + self.write_anon_sync
    }
    pub fn async_io(&self) -> u64 {
        self.write_file_async + self.write_anon_async
    }
    fn add(&mut self, o: &Work) {
        self.scanned_file += o.scanned_file;
        self.scanned_anon += o.scanned_anon;
        self.scanned_unknown += o.scanned_unknown;
        self.taken += o.taken;
        self.reclaimed_file += o.reclaimed_file;
        self.reclaimed_anon += o.reclaimed_anon;
        self.write_file_sync += o.write_file_sync;
        self.write_anon_sync += o.write_anon_sync;
        self.write_file_async += o.write_file_async;
        self.write_anon_async += o.write_anon_async;
        self.refill += o.refill;
    }
}

/// Which reclaim a page-level event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Inside mm_vmscan_direct_reclaim_begin/end or node_reclaim_begin/end (pgscan_direct).
    Direct,
    /// kswapd (comm `kswapd*`), outside any other context (pgscan_kswapd).
    Kswapd,
    /// Inside memcg (limit or softlimit) reclaim begin/end (not in pgscan_kswapd/direct).
    Memcg,
    /// Anything else: MADV_PAGEOUT, DAMON, khugepaged, proactive reclaim via memory.reclaim…
    Other,
}

/// A (order, latency) sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stall {
    pub order: i32,
    pub ns: u64,
}

/// Accumulated waits of one kind (congestion_wait, wait_iff_congested, throttled reason).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Waits {
    pub number: u64,
    pub time_us: u64,
    /// Waits that slept their whole timeout (`usec_delayed >= usec_timeout`).
    pub full: u64,
}

impl Waits {
    fn add(&mut self, timeout_us: i64, delayed_us: i64) {
        self.number += 1;
        self.time_us += delayed_us.max(0) as u64;
        if delayed_us >= timeout_us {
            self.full += 1;
        }
    }
}

/// Per-process (per pid, or per name with `ignore_pid`) statistics.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Process {
    pub name: String,
    pub pids: Vec<u32>,
    pub direct_reclaims: u64,
    pub direct_by_order: BTreeMap<i32, u64>,
    pub wakeup_kswapd: u64,
    pub wakeup_by_order: BTreeMap<i32, u64>,
    pub direct: Work,
    pub direct_stalls: Vec<Stall>,
    pub memcg_reclaims: u64,
    pub memcg: Work,
    pub memcg_stalls: Vec<Stall>,
    pub other: Work,
    pub is_kswapd: bool,
    pub kswapd_wakeups: u64,
    pub kswapd_rewakeups: u64,
    pub wake_by_order: BTreeMap<i32, u64>,
    pub rewake_by_order: BTreeMap<i32, u64>,
    pub kswapd_sleeps: u64,
    pub kswapd: Work,
    /// Awake time measured wake → sleep (the script's only measure).
    pub awake_ns: u64,
    /// Awake time estimated where no kswapd_sleep closed a wake.
    pub awake_estimated_ns: u64,
    pub awake_periods: Vec<Stall>,
}

impl Process {
    pub fn direct_stall_ns(&self) -> u64 {
        self.direct_stalls.iter().map(|s| s.ns).sum()
    }
    fn merge(&mut self, o: &Process) {
        self.pids.extend_from_slice(&o.pids);
        self.direct_reclaims += o.direct_reclaims;
        merge_map(&mut self.direct_by_order, &o.direct_by_order);
        self.wakeup_kswapd += o.wakeup_kswapd;
        merge_map(&mut self.wakeup_by_order, &o.wakeup_by_order);
        self.direct.add(&o.direct);
        self.direct_stalls.extend_from_slice(&o.direct_stalls);
        self.memcg_reclaims += o.memcg_reclaims;
        self.memcg.add(&o.memcg);
        self.memcg_stalls.extend_from_slice(&o.memcg_stalls);
        self.other.add(&o.other);
        self.is_kswapd |= o.is_kswapd;
        self.kswapd_wakeups += o.kswapd_wakeups;
        self.kswapd_rewakeups += o.kswapd_rewakeups;
        merge_map(&mut self.wake_by_order, &o.wake_by_order);
        merge_map(&mut self.rewake_by_order, &o.rewake_by_order);
        self.kswapd_sleeps += o.kswapd_sleeps;
        self.kswapd.add(&o.kswapd);
        self.awake_ns += o.awake_ns;
        self.awake_estimated_ns += o.awake_estimated_ns;
        self.awake_periods.extend_from_slice(&o.awake_periods);
    }
}

fn merge_map(a: &mut BTreeMap<i32, u64>, b: &BTreeMap<i32, u64>) {
    for (k, v) in b {
        *a.entry(*k).or_default() += v;
    }
}

/// kswapd awake-state machine of one kswapd pid.
#[derive(Clone, Copy, Debug, Default)]
struct KswapdState {
    /// Start of the current awake interval (first wake, or first activity when implicit).
    awake_since: Option<u64>,
    /// The interval began with activity, not a wake (trace started while kswapd ran).
    implicit: bool,
    /// Known asleep (a sleep event was seen and no wake since).
    asleep: bool,
    /// Current wake period: its wake and the last activity in it.
    period_start: u64,
    period_last: u64,
    /// Estimated busy time of the closed periods of the current interval.
    est_closed_ns: u64,
    /// While asleep: since when (its last reclaim event before the sleep).
    idle_from: u64,
}

/// Per-pid live state.
#[derive(Clone, Debug, Default)]
struct Task {
    proc_idx: usize,
    direct_begin: Option<(u64, i32)>,
    memcg_begin: Option<(u64, i32)>,
    node_begin: bool,
    slab_begin: Option<u64>,
    compaction_begin: Option<u64>,
    kswapd: KswapdState,
    /// The open direct reclaim's nodes (bitmask) and pages scanned, from lru_shrink_inactive.
    stall_nodes: u64,
    stall_scanned: u64,
}

/// Parse counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ParseStats {
    pub lines: u64,
    pub comment_lines: u64,
    pub events: u64,
    pub events_by_name: BTreeMap<String, u64>,
    pub unknown_events: u64,
    pub unknown_by_name: BTreeMap<String, u64>,
    pub malformed: u64,
    /// Line numbers (1-based) of the first malformed lines.
    pub malformed_lines: Vec<u64>,
    pub lost_events: u64,
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
    pub bytes: u64,
}

/// Slab shrinker calls (mm_shrink_slab_start/end) by kswapd or other tasks.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SlabStats {
    pub calls: u64,
    pub time_ns: u64,
    pub max_ns: u64,
    pub freed: u64,
}

/// The result of an analysis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Analysis {
    pub options: Options,
    pub parse: ParseStats,
    /// Rows in first-seen order (merged by name with `ignore_pid`).
    pub processes: Vec<Process>,
    pub congestion_wait: [Waits; 2],
    pub wait_iff_congested: [Waits; 2],
    /// mm_vmscan_throttled by reason bit (WRITEBACK, ISOLATED, NOPROGRESS, CONGESTED),
    /// `[direct-or-other, kswapd]`.
    pub throttled: [[Waits; 2]; 4],
    pub slab: [SlabStats; 2],
    pub compaction_events: BTreeMap<String, u64>,
    pub compaction_time_ns: u64,
    pub compactions: u64,
    pub direct_unpaired_ends: u64,
    pub direct_unfinished: u64,
    pub memcg_unpaired_ends: u64,
    /// kswapd wakes never closed by a kswapd_sleep (their time is estimated).
    pub kswapd_unclosed_intervals: u64,
    /// How direct reclaim overlaps in time (tasks at once, nodes per stall, kswapd asleep).
    pub concurrency: Concurrency,
}

/// Index into `[non-kswapd, kswapd]` arrays.
fn k(is_kswapd: bool) -> usize {
    is_kswapd as usize
}

/// Streaming analyser: feed lines, then [`Analyzer::finish`].
pub struct Analyzer {
    opts: Options,
    a: Analysis,
    procs: Vec<Process>,
    /// Live state per pid: `task_of` maps a pid to its slot in `tasks`; `last` caches the
    /// previous line's (pid, slot), since events come in runs from one task.
    tasks: Vec<Task>,
    task_of: PidMap<u32>,
    concurrency: Tracker,
    last: Option<(u32, u32)>,
    unknown: HashMap<Box<[u8]>, u64>,
    /// Decoded events by name: a short list searched by pointer (names are `'static`).
    known: Vec<(&'static str, u64)>,
}

impl Analyzer {
    pub fn new(opts: Options) -> Self {
        Analyzer {
            a: Analysis {
                options: opts.clone(),
                ..Default::default()
            },
            opts,
            procs: Vec::new(),
            tasks: Vec::new(),
            task_of: PidMap::default(),
            concurrency: Tracker::default(),
            last: None,
            unknown: HashMap::new(),
            known: Vec::new(),
        }
    }

    fn malformed(&mut self, lineno: u64) {
        self.a.parse.malformed += 1;
        if self.a.parse.malformed_lines.len() < self.opts.max_malformed_lines {
            self.a.parse.malformed_lines.push(lineno);
        }
    }

    /// Feeds one line (without `\n`).
    pub fn line(&mut self, lineno: u64, bytes: &[u8]) {
        self.a.parse.lines += 1;
        self.a.parse.bytes += bytes.len() as u64 + 1;
        let l = match parse_line(bytes) {
            Parsed::Event(l) => l,
            Parsed::Comment => {
                self.a.parse.comment_lines += 1;
                return;
            }
            Parsed::Lost(n) => {
                self.a.parse.lost_events += n;
                return;
            }
            Parsed::Malformed => return self.malformed(lineno),
        };
        let ev = match Event::parse(l.event, l.fields) {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                self.a.parse.unknown_events += 1;
                match self.unknown.get_mut(l.event) {
                    Some(n) => *n += 1,
                    None => {
                        self.unknown.insert(l.event.into(), 1);
                    }
                }
                return;
            }
            Err(_) => return self.malformed(lineno),
        };
        self.a.parse.events += 1;
        let p = &mut self.a.parse;
        if p.first_ts_ns.is_none() {
            p.first_ts_ns = Some(l.ts_ns);
            self.concurrency.start(l.ts_ns);
        }
        p.last_ts_ns = Some(p.last_ts_ns.map_or(l.ts_ns, |t| t.max(l.ts_ns)));
        let name = ev.name();
        match self
            .known
            .iter_mut()
            .find(|(k, _)| std::ptr::eq(*k, name) || *k == name)
        {
            Some((_, n)) => *n += 1,
            None => self.known.push((name, 1)),
        }
        self.event(l.ts_ns, l.comm, l.pid, &ev);
    }

    /// Finds or creates the task of `pid` (rebinding it when the name changed: pid reuse);
    /// returns its slot in `tasks`.
    fn task(&mut self, comm: &[u8], pid: u32) -> usize {
        let unresolved = comm == b"<...>" || comm.is_empty();
        let new_proc = |procs: &mut Vec<Process>| {
            procs.push(Process {
                name: String::from_utf8_lossy(comm).into_owned(),
                pids: vec![pid],
                is_kswapd: comm.starts_with(b"kswapd"),
                ..Default::default()
            });
            procs.len() - 1
        };
        let slot = match self.last {
            Some((p, slot)) if p == pid => slot as usize,
            _ => {
                let tasks = &mut self.tasks;
                let procs = &mut self.procs;
                let slot = *self.task_of.entry(pid).or_insert_with(|| {
                    tasks.push(Task {
                        proc_idx: new_proc(procs),
                        ..Default::default()
                    });
                    (tasks.len() - 1) as u32
                });
                self.last = Some((pid, slot));
                slot as usize
            }
        };
        let t = &mut self.tasks[slot];
        let cur = &mut self.procs[t.proc_idx];
        if !unresolved && cur.name.as_bytes() != comm {
            if cur.name == "<...>" {
                cur.name = String::from_utf8_lossy(comm).into_owned();
                cur.is_kswapd = comm.starts_with(b"kswapd");
            } else {
                *t = Task {
                    proc_idx: new_proc(&mut self.procs),
                    ..Default::default()
                };
            }
        }
        slot
    }

    fn event(&mut self, ts: u64, comm: &[u8], pid: u32, ev: &Event<'_>) {
        let slot = self.task(comm, pid);
        let t = &mut self.tasks[slot];
        let p = &mut self.procs[t.proc_idx];
        let ctx = if t.direct_begin.is_some() || t.node_begin {
            Context::Direct
        } else if t.memcg_begin.is_some() {
            Context::Memcg
        } else if p.is_kswapd {
            Context::Kswapd
        } else {
            Context::Other
        };
        let work = match ctx {
            Context::Direct => &mut p.direct,
            Context::Memcg => &mut p.memcg,
            Context::Kswapd => &mut p.kswapd,
            Context::Other => &mut p.other,
        };
        let mut kswapd_activity = false;
        let conc = &mut self.concurrency;
        match ev {
            Event::DirectReclaimBegin(b) => {
                conc.advance(ts);
                if t.direct_begin.is_some() {
                    self.a.direct_unfinished += 1;
                } else {
                    conc.direct_begin();
                }
                t.stall_nodes = 0;
                t.stall_scanned = 0;
                p.direct_reclaims += 1;
                *p.direct_by_order.entry(b.order).or_default() += 1;
                t.direct_begin = Some((ts, b.order));
            }
            Event::DirectReclaimEnd { .. } => match t.direct_begin.take() {
                Some((b, order)) => {
                    conc.advance(ts);
                    conc.direct_end(t.stall_nodes, t.stall_scanned);
                    p.direct_stalls.push(Stall {
                        order,
                        ns: ts.saturating_sub(b),
                    })
                }
                None => self.a.direct_unpaired_ends += 1,
            },
            Event::MemcgReclaimBegin(b) | Event::MemcgSoftlimitReclaimBegin(b) => {
                p.memcg_reclaims += 1;
                t.memcg_begin = Some((ts, b.order));
            }
            Event::MemcgReclaimEnd { .. } | Event::MemcgSoftlimitReclaimEnd { .. } => {
                match t.memcg_begin.take() {
                    Some((b, order)) => p.memcg_stalls.push(Stall {
                        order,
                        ns: ts.saturating_sub(b),
                    }),
                    None => self.a.memcg_unpaired_ends += 1,
                }
            }
            Event::NodeReclaimBegin { .. } => t.node_begin = true,
            Event::NodeReclaimEnd { .. } => t.node_begin = false,
            Event::WakeupKswapd { order, .. } => {
                p.wakeup_kswapd += 1;
                *p.wakeup_by_order.entry(*order).or_default() += 1;
            }
            Event::KswapdWake { order, .. } => {
                p.is_kswapd = true;
                let s = &mut t.kswapd;
                let rewake = s.awake_since.is_some();
                match s.awake_since {
                    Some(_) => {
                        p.kswapd_rewakeups += 1;
                        *p.rewake_by_order.entry(*order).or_default() += 1;
                        s.est_closed_ns += s.period_last.saturating_sub(s.period_start);
                    }
                    None => {
                        p.kswapd_wakeups += 1;
                        *p.wake_by_order.entry(*order).or_default() += 1;
                        s.awake_since = Some(ts);
                        s.implicit = false;
                        s.est_closed_ns = 0;
                    }
                }
                if s.asleep {
                    conc.kswapd_idle(s.idle_from, ts);
                } else if rewake {
                    // A re-wake: kswapd napped (no tracepoint) since its last event.
                    conc.kswapd_idle(s.period_last, ts);
                }
                s.asleep = false;
                s.period_start = ts;
                s.period_last = ts;
            }
            Event::KswapdSleep { .. } => {
                p.is_kswapd = true;
                p.kswapd_sleeps += 1;
                let s = &mut t.kswapd;
                if !s.asleep {
                    // The HZ/10 nap before the sleep began after kswapd's last event.
                    s.idle_from = if s.awake_since.is_some() {
                        s.period_last
                    } else {
                        ts
                    };
                }
                if let Some(since) = s.awake_since.take() {
                    let d = ts.saturating_sub(since);
                    if s.implicit {
                        // Awake since before the trace: a lower bound only.
                        p.awake_estimated_ns += d;
                    } else {
                        p.awake_ns += d;
                    }
                    p.awake_periods.push(Stall { order: 0, ns: d });
                }
                s.asleep = true;
                s.est_closed_ns = 0;
            }
            Event::LruIsolate(iso) => {
                kswapd_activity = true;
                if iso.counts_as_scan() {
                    match iso.is_file() {
                        Some(true) => work.scanned_file += iso.nr_scanned,
                        Some(false) => work.scanned_anon += iso.nr_scanned,
                        None => work.scanned_unknown += iso.nr_scanned,
                    }
                    work.taken += iso.nr_taken;
                }
            }
            Event::LruShrinkInactive(s) => {
                kswapd_activity = true;
                if t.direct_begin.is_some() {
                    t.stall_nodes |= node_bit(s.nid);
                    t.stall_scanned += s.nr_scanned;
                }
                if s.flags.is_file() {
                    work.reclaimed_file += s.nr_reclaimed;
                } else {
                    work.reclaimed_anon += s.nr_reclaimed;
                }
            }
            Event::ReclaimPages(s) => {
                // reclaim_pages() does not isolate through lru_isolate; it reports both.
                p.other.scanned_unknown += s.nr_scanned;
                p.other.reclaimed_anon += s.nr_reclaimed;
            }
            Event::LruShrinkActive(s) => {
                kswapd_activity = true;
                work.refill += s.nr_taken;
            }
            Event::WriteFolio(w) | Event::Writepage(w) => {
                kswapd_activity = true;
                let f = w.flags;
                match (f.is_file(), f.is_sync()) {
                    (true, true) => work.write_file_sync += 1,
                    (false, true) => work.write_anon_sync += 1,
                    (true, false) => work.write_file_async += 1,
                    (false, false) => work.write_anon_async += 1,
                }
            }
            Event::Throttled(th) => {
                for (bit, waits) in self.a.throttled.iter_mut().enumerate() {
                    if th.reason.0 & (1 << bit) != 0 {
                        waits[k(p.is_kswapd)].add(th.usec_timeout, th.usec_delayed);
                    }
                }
            }
            Event::CongestionWait(CongestionWait {
                usec_timeout,
                usec_delayed,
            }) => self.a.congestion_wait[k(p.is_kswapd)]
                .add(*usec_timeout as i64, *usec_delayed as i64),
            Event::WaitIffCongested(CongestionWait {
                usec_timeout,
                usec_delayed,
            }) => self.a.wait_iff_congested[k(p.is_kswapd)]
                .add(*usec_timeout as i64, *usec_delayed as i64),
            Event::ShrinkSlabStart(_) => {
                kswapd_activity = true;
                t.slab_begin = Some(ts);
            }
            Event::ShrinkSlabEnd(e) => {
                kswapd_activity = true;
                let s = &mut self.a.slab[k(p.is_kswapd)];
                s.calls += 1;
                s.freed += e.retval.max(0) as u64;
                if let Some(b) = t.slab_begin.take() {
                    let d = ts.saturating_sub(b);
                    s.time_ns += d;
                    s.max_ns = s.max_ns.max(d);
                }
            }
            Event::Compaction { kind, .. } => {
                match self.a.compaction_events.get_mut(*kind) {
                    Some(n) => *n += 1,
                    None => {
                        self.a.compaction_events.insert(kind.to_string(), 1);
                    }
                }
                match *kind {
                    "begin" => t.compaction_begin = Some(ts),
                    "end" => {
                        if let Some(b) = t.compaction_begin.take() {
                            self.a.compactions += 1;
                            self.a.compaction_time_ns += ts.saturating_sub(b);
                        }
                    }
                    _ => {}
                }
            }
        }
        if kswapd_activity && ctx == Context::Kswapd {
            let s = &mut t.kswapd;
            if s.awake_since.is_none() {
                // Activity with no wake seen: the trace began (or events were lost) while
                // kswapd ran. Open an implicit interval; its time is an estimate.
                s.awake_since = Some(ts);
                s.implicit = true;
                if s.asleep {
                    self.concurrency.kswapd_idle(s.idle_from, ts);
                }
                s.asleep = false;
                s.est_closed_ns = 0;
                s.period_start = ts;
            }
            s.period_last = ts;
        }
    }

    /// Reads a whole input (any [`std::io::Read`], already decompressed).
    pub fn read<R: Read + ?Sized>(&mut self, r: &mut R) -> io::Result<()> {
        crate::reader::for_each_line(r, |no, l, long| {
            if long {
                self.a.parse.lines += 1;
                self.malformed(no);
            } else {
                self.line(no, l);
            }
        })?;
        Ok(())
    }

    /// Closes open intervals and aggregates.
    pub fn finish(mut self) -> Analysis {
        let last = self.a.parse.last_ts_ns.unwrap_or(0);
        for t in &self.tasks {
            let p = &mut self.procs[t.proc_idx];
            let s = &t.kswapd;
            // A kswapd asleep at the end, or idle since its last event, sleeps to the end.
            if s.asleep {
                self.concurrency.kswapd_idle(s.idle_from, last);
            } else if s.awake_since.is_some() {
                self.concurrency.kswapd_idle(s.period_last, last);
                self.a.kswapd_unclosed_intervals += 1;
                let est = s.est_closed_ns + s.period_last.saturating_sub(s.period_start);
                p.awake_estimated_ns += est;
            }
            if t.direct_begin.is_some() {
                self.a.direct_unfinished += 1;
            }
        }
        self.a.concurrency = std::mem::take(&mut self.concurrency).finish(last);
        self.a.parse.events_by_name = self
            .known
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        // Compaction events are listed by their full names below.
        self.a.parse.events_by_name.remove("mm_compaction_");
        for (k, v) in &self.a.compaction_events {
            self.a
                .parse
                .events_by_name
                .insert(format!("mm_compaction_{k}"), *v);
        }
        self.a.parse.unknown_by_name = self
            .unknown
            .iter()
            .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), *v))
            .collect();
        let procs = std::mem::take(&mut self.procs);
        self.a.processes = if self.opts.ignore_pid {
            let mut by_name: Vec<Process> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            for p in procs {
                match index.get(&p.name) {
                    Some(&i) => by_name[i].merge(&p),
                    None => {
                        index.insert(p.name.clone(), by_name.len());
                        by_name.push(p);
                    }
                }
            }
            by_name
        } else {
            procs
        };
        self.a
    }
}

/// Convenience: analyse a whole input.
pub fn analyze<R: Read + ?Sized>(r: &mut R, opts: Options) -> io::Result<Analysis> {
    let mut an = Analyzer::new(opts);
    an.read(r)?;
    Ok(an.finish())
}

impl Analysis {
    /// Sum of a context's work over all processes.
    pub fn total(&self, f: impl Fn(&Process) -> &Work) -> Work {
        let mut w = Work::default();
        for p in &self.processes {
            w.add(f(p));
        }
        w
    }
    pub fn sum(&self, f: impl Fn(&Process) -> u64) -> u64 {
        self.processes.iter().map(f).sum()
    }
    /// Trace span in seconds (first to last event).
    pub fn elapsed_s(&self) -> f64 {
        match (self.parse.first_ts_ns, self.parse.last_ts_ns) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        }
    }
    pub fn throttle_reason_name(bit: usize) -> &'static str {
        ThrottleReason::NAMES[bit].1
    }
}
