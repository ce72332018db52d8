//! The vmscan statistics of trace-vmscan-postprocess.pl (2.6.36 and 2023 versions,
//! WORKLOADS.md §3) and of mmtests' ftrace reports, computed in one streaming pass.
//!
//! Each line is decoded (`Scan`: counts that do not depend on order, and a compact event)
//! and then applied to the state that does (per-task pairing, kswapd intervals, the
//! concurrency tracker, process order). A text in memory can be decoded in blocks by
//! several threads and applied in input order ([`Analyzer::read_bytes`]); the result is
//! the same as one pass.
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
use crate::event::{CompactionScanner, CongestionWait, Event, ThrottleReason};
use crate::line::{parse_line, Parsed};
use crate::reader::split_blocks;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Read};
use std::sync::{Condvar, Mutex, PoisonError};

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
    /// The closed wake periods (wake → last activity) of the current awake interval, for
    /// the union of awake time when no sleep closes the interval (then they are its estimate).
    kswapd_periods: Vec<(u64, u64)>,
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

/// Compactions run by one kind of task (allocating tasks' direct compaction, or
/// kcompactd): how they ended and what their scanners and migration did, from
/// mm_compaction_end, _deferred, _isolate_migratepages, _isolate_freepages,
/// _fast_isolate_freepages and _migratepages.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompactionStats {
    /// Compactions of a zone by `status` (`compact_result`: success, partial_skipped,
    /// complete, contended, …).
    pub ended: BTreeMap<String, u64>,
    /// Zones passed over because compaction failed there recently (mm_compaction_deferred).
    pub deferred: u64,
    /// The migrate scanner: pages scanned and folios' pages isolated.
    pub migrate_scanned: u64,
    pub migrate_isolated: u64,
    /// The free scanner's linear scan: pages scanned and free pages taken as targets.
    pub free_scanned: u64,
    pub free_isolated: u64,
    /// The free scanner's search of the free lists (5.1+): blocks read and pages taken.
    pub fast_free_scanned: u64,
    pub fast_free_isolated: u64,
    /// Pages migrated, and those that failed to.
    pub migrated: u64,
    pub migrate_failed: u64,
}

/// The index into `Analysis::compaction_by` of the task named `comm`:
/// `[allocating tasks, kcompactd]`.
fn compactor(comm: &[u8]) -> usize {
    comm.starts_with(b"kcompactd") as usize
}

/// One more of `key` in `counts` (the key copied only the first time).
fn count_one(counts: &mut BTreeMap<String, u64>, key: &str) {
    match counts.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
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
    /// Compaction by who ran it: `[allocating tasks, kcompactd]`.
    pub compaction_by: [CompactionStats; 2],
    /// Folios inserted into the page cache (mm_filemap_add_to_page_cache), by order.
    pub page_cache_added: BTreeMap<u32, u64>,
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
    /// The order-free counts of the lines (merged from blocks in a parallel read).
    scan: Scan,
    procs: Vec<Process>,
    /// Live state per pid: `task_of` maps a pid to its slot in `tasks`; `last` caches the
    /// previous line's (pid, slot), since events come in runs from one task.
    tasks: Vec<Task>,
    task_of: PidMap<u32>,
    concurrency: Tracker,
    last: Option<(u32, u32)>,
}

/// A decoded event line: what the order-sensitive part of the analysis needs of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rec<'a> {
    ts: u64,
    comm: Comm<'a>,
    pid: u32,
    act: Act<'a>,
}

/// A task name, copied when short (as the kernel's are: at most 15 bytes). The thread that
/// applies a block's events then finds the name in the event itself rather than in the line,
/// which another thread decoded and is not in this thread's cache.
#[derive(Clone, Copy, Debug)]
enum Comm<'a> {
    Short { len: u8, bytes: [u8; 16] },
    Long(&'a [u8]),
}

impl<'a> Comm<'a> {
    #[inline]
    fn new(comm: &'a [u8]) -> Self {
        match comm.len() {
            len @ 0..=16 => {
                let mut bytes = [0; 16];
                bytes[..len].copy_from_slice(comm);
                Comm::Short {
                    len: len as u8,
                    bytes,
                }
            }
            _ => Comm::Long(comm),
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            Comm::Short { len, bytes } => &bytes[..*len as usize],
            Comm::Long(c) => c,
        }
    }
}

/// What the order-sensitive pass uses of an event: a few words, so that the decoded
/// events of a block in flight stay small (an [`Event`] keeps every field of its line).
#[derive(Clone, Copy, Debug)]
enum Act<'a> {
    DirectBegin {
        order: i32,
    },
    DirectEnd,
    MemcgBegin {
        order: i32,
    },
    MemcgEnd,
    NodeBegin,
    NodeEnd,
    WakeupKswapd {
        order: i32,
    },
    KswapdWake {
        order: i32,
    },
    KswapdSleep,
    Isolate {
        counts: bool,
        file: Option<bool>,
        scanned: u64,
        taken: u64,
    },
    ShrinkInactive {
        nid: i32,
        file: bool,
        scanned: u64,
        reclaimed: u64,
    },
    ReclaimPages {
        scanned: u64,
        reclaimed: u64,
    },
    ShrinkActive {
        taken: u64,
    },
    Write {
        file: bool,
        sync: bool,
    },
    Throttled {
        reason: u32,
        timeout_us: i64,
        delayed_us: i64,
    },
    CongestionWait {
        timeout_us: u64,
        delayed_us: u64,
    },
    WaitIffCongested {
        timeout_us: u64,
        delayed_us: u64,
    },
    SlabStart,
    SlabEnd {
        retval: i32,
    },
    Compaction {
        kind: &'a str,
    },
    CompactionIsolate {
        scanner: CompactionScanner,
        scanned: u64,
        taken: u64,
    },
    CompactionMigrate {
        migrated: u64,
        failed: u64,
    },
    CompactionEnd {
        status: &'a str,
    },
    FilemapAdd {
        order: u32,
    },
}

// Decoded events in flight are a few words each (an `Event` is 112 bytes).
const _: () = assert!(std::mem::size_of::<Act<'static>>() <= 24);

impl<'a> Act<'a> {
    #[inline]
    fn of(ev: &Event<'a>) -> Self {
        match *ev {
            Event::DirectReclaimBegin(b) => Act::DirectBegin { order: b.order },
            Event::DirectReclaimEnd { .. } => Act::DirectEnd,
            Event::MemcgReclaimBegin(b) | Event::MemcgSoftlimitReclaimBegin(b) => {
                Act::MemcgBegin { order: b.order }
            }
            Event::MemcgReclaimEnd { .. } | Event::MemcgSoftlimitReclaimEnd { .. } => Act::MemcgEnd,
            Event::NodeReclaimBegin { .. } => Act::NodeBegin,
            Event::NodeReclaimEnd { .. } => Act::NodeEnd,
            Event::WakeupKswapd { order, .. } => Act::WakeupKswapd { order },
            Event::KswapdWake { order, .. } => Act::KswapdWake { order },
            Event::KswapdSleep { .. } => Act::KswapdSleep,
            Event::LruIsolate(iso) => Act::Isolate {
                counts: iso.counts_as_scan(),
                file: iso.is_file(),
                scanned: iso.nr_scanned,
                taken: iso.nr_taken,
            },
            Event::LruShrinkInactive(s) => Act::ShrinkInactive {
                nid: s.nid,
                file: s.flags.is_file(),
                scanned: s.nr_scanned,
                reclaimed: s.nr_reclaimed,
            },
            Event::ReclaimPages(s) => Act::ReclaimPages {
                scanned: s.nr_scanned,
                reclaimed: s.nr_reclaimed,
            },
            Event::LruShrinkActive(s) => Act::ShrinkActive { taken: s.nr_taken },
            Event::WriteFolio(w) | Event::Writepage(w) => Act::Write {
                file: w.flags.is_file(),
                sync: w.flags.is_sync(),
            },
            Event::Throttled(th) => Act::Throttled {
                reason: th.reason.0,
                timeout_us: th.usec_timeout,
                delayed_us: th.usec_delayed,
            },
            Event::CongestionWait(CongestionWait {
                usec_timeout,
                usec_delayed,
            }) => Act::CongestionWait {
                timeout_us: usec_timeout,
                delayed_us: usec_delayed,
            },
            Event::WaitIffCongested(CongestionWait {
                usec_timeout,
                usec_delayed,
            }) => Act::WaitIffCongested {
                timeout_us: usec_timeout,
                delayed_us: usec_delayed,
            },
            Event::ShrinkSlabStart(_) => Act::SlabStart,
            Event::ShrinkSlabEnd(e) => Act::SlabEnd { retval: e.retval },
            Event::Compaction { kind, .. } => Act::Compaction { kind },
            Event::CompactionIsolate {
                scanner,
                nr_scanned,
                nr_taken,
                ..
            } => Act::CompactionIsolate {
                scanner,
                scanned: nr_scanned,
                taken: nr_taken,
            },
            Event::CompactionMigrate {
                nr_migrated,
                nr_failed,
            } => Act::CompactionMigrate {
                migrated: nr_migrated,
                failed: nr_failed,
            },
            Event::CompactionEnd { status, .. } => Act::CompactionEnd { status },
            Event::FilemapAdd(a) => Act::FilemapAdd { order: a.order },
        }
    }
}

/// The part of the analysis that does not depend on the order of the lines: line, comment,
/// event, unknown-event and malformed counts, bytes, lost events, events by name. A
/// parallel read keeps one per block and adds them up in block order (the malformed line
/// numbers are block-relative there, shifted by the lines of the blocks before).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    lines: u64,
    comment_lines: u64,
    events: u64,
    unknown_events: u64,
    malformed: u64,
    malformed_lines: Vec<u64>,
    lost_events: u64,
    bytes: u64,
    unknown: HashMap<Box<[u8]>, u64>,
    /// Decoded events by name: a short list searched by pointer (names are `'static`).
    known: Vec<(&'static str, u64)>,
}

impl Scan {
    fn malformed(&mut self, lineno: u64, max: usize) {
        self.malformed += 1;
        if self.malformed_lines.len() < max {
            self.malformed_lines.push(lineno);
        }
    }

    /// A line longer than [`crate::reader::MAX_LINE`]: counted, malformed, its bytes not.
    fn too_long(&mut self, lineno: u64, max: usize) {
        self.lines += 1;
        self.malformed(lineno, max);
    }

    /// Counts one line (without `\n`) and decodes it; `Some` for a known event.
    #[inline]
    fn line<'a>(&mut self, lineno: u64, bytes: &'a [u8], max: usize) -> Option<Rec<'a>> {
        self.lines += 1;
        self.bytes += bytes.len() as u64 + 1;
        let l = match parse_line(bytes) {
            Parsed::Event(l) => l,
            Parsed::Comment => {
                self.comment_lines += 1;
                return None;
            }
            Parsed::Lost(n) => {
                self.lost_events += n;
                return None;
            }
            Parsed::Malformed => {
                self.malformed(lineno, max);
                return None;
            }
        };
        let ev = match Event::parse(l.event, l.fields) {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                self.unknown_events += 1;
                match self.unknown.get_mut(l.event) {
                    Some(n) => *n += 1,
                    None => {
                        self.unknown.insert(l.event.into(), 1);
                    }
                }
                return None;
            }
            Err(_) => {
                self.malformed(lineno, max);
                return None;
            }
        };
        self.events += 1;
        let name = ev.name();
        match self
            .known
            .iter_mut()
            .find(|(k, _)| std::ptr::eq(*k, name) || *k == name)
        {
            Some((_, n)) => *n += 1,
            None => self.known.push((name, 1)),
        }
        Some(Rec {
            ts: l.ts_ns,
            comm: Comm::new(l.comm),
            pid: l.pid,
            act: Act::of(&ev),
        })
    }

    /// Adds the counts of the lines that follow `line_offset` lines already counted.
    fn merge(&mut self, o: Scan, line_offset: u64, max: usize) {
        self.lines += o.lines;
        self.comment_lines += o.comment_lines;
        self.events += o.events;
        self.unknown_events += o.unknown_events;
        self.malformed += o.malformed;
        for no in o.malformed_lines {
            if self.malformed_lines.len() >= max {
                break;
            }
            self.malformed_lines.push(line_offset + no);
        }
        self.lost_events += o.lost_events;
        self.bytes += o.bytes;
        for (k, v) in o.unknown {
            *self.unknown.entry(k).or_default() += v;
        }
        for (name, v) in o.known {
            match self.known.iter_mut().find(|(k, _)| *k == name) {
                Some((_, n)) => *n += v,
                None => self.known.push((name, v)),
            }
        }
    }
}

/// One block of a parallel read: its counts and its events in line order.
struct Block<'a> {
    scan: Scan,
    recs: Vec<Rec<'a>>,
}

/// Bytes per block of a parallel read: large enough that handing blocks over costs
/// nothing, small enough that the blocks in flight stay a few MB.
const BLOCK: usize = 1 << 20;

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
            scan: Scan::default(),
            concurrency: Tracker::default(),
            last: None,
        }
    }

    /// Feeds one line (without `\n`).
    pub fn line(&mut self, lineno: u64, bytes: &[u8]) {
        if let Some(r) = self.scan.line(lineno, bytes, self.opts.max_malformed_lines) {
            self.apply(&r);
        }
    }

    /// The order-sensitive part of a decoded event line.
    #[inline]
    fn apply(&mut self, r: &Rec<'_>) {
        let p = &mut self.a.parse;
        if p.first_ts_ns.is_none() {
            p.first_ts_ns = Some(r.ts);
            self.concurrency.start(r.ts);
        }
        p.last_ts_ns = Some(p.last_ts_ns.map_or(r.ts, |t| t.max(r.ts)));
        self.event(r.ts, r.comm.as_bytes(), r.pid, r.act);
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

    fn event(&mut self, ts: u64, comm: &[u8], pid: u32, act: Act<'_>) {
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
        match act {
            Act::DirectBegin { order } => {
                conc.advance(ts);
                if t.direct_begin.is_some() {
                    self.a.direct_unfinished += 1;
                } else {
                    conc.direct_begin();
                }
                t.stall_nodes = 0;
                t.stall_scanned = 0;
                p.direct_reclaims += 1;
                *p.direct_by_order.entry(order).or_default() += 1;
                t.direct_begin = Some((ts, order));
            }
            Act::DirectEnd => match t.direct_begin.take() {
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
            Act::MemcgBegin { order } => {
                p.memcg_reclaims += 1;
                t.memcg_begin = Some((ts, order));
            }
            Act::MemcgEnd => match t.memcg_begin.take() {
                Some((b, order)) => p.memcg_stalls.push(Stall {
                    order,
                    ns: ts.saturating_sub(b),
                }),
                None => self.a.memcg_unpaired_ends += 1,
            },
            Act::NodeBegin => t.node_begin = true,
            Act::NodeEnd => t.node_begin = false,
            Act::WakeupKswapd { order } => {
                p.wakeup_kswapd += 1;
                *p.wakeup_by_order.entry(order).or_default() += 1;
            }
            Act::KswapdWake { order } => {
                p.is_kswapd = true;
                let s = &mut t.kswapd;
                let rewake = s.awake_since.is_some();
                match s.awake_since {
                    Some(_) => {
                        p.kswapd_rewakeups += 1;
                        *p.rewake_by_order.entry(order).or_default() += 1;
                        s.est_closed_ns += s.period_last.saturating_sub(s.period_start);
                        t.kswapd_periods.push((s.period_start, s.period_last));
                    }
                    None => {
                        p.kswapd_wakeups += 1;
                        *p.wake_by_order.entry(order).or_default() += 1;
                        s.awake_since = Some(ts);
                        s.implicit = false;
                        s.est_closed_ns = 0;
                        t.kswapd_periods.clear();
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
            Act::KswapdSleep => {
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
                    conc.kswapd_awake(since, ts);
                }
                s.asleep = true;
                s.est_closed_ns = 0;
                t.kswapd_periods.clear();
            }
            Act::Isolate {
                counts,
                file,
                scanned,
                taken,
            } => {
                kswapd_activity = true;
                if counts {
                    match file {
                        Some(true) => work.scanned_file += scanned,
                        Some(false) => work.scanned_anon += scanned,
                        None => work.scanned_unknown += scanned,
                    }
                    work.taken += taken;
                }
            }
            Act::ShrinkInactive {
                nid,
                file,
                scanned,
                reclaimed,
            } => {
                kswapd_activity = true;
                if t.direct_begin.is_some() {
                    t.stall_nodes |= node_bit(nid);
                    t.stall_scanned += scanned;
                }
                if file {
                    work.reclaimed_file += reclaimed;
                } else {
                    work.reclaimed_anon += reclaimed;
                }
            }
            Act::ReclaimPages { scanned, reclaimed } => {
                // reclaim_pages() does not isolate through lru_isolate; it reports both.
                p.other.scanned_unknown += scanned;
                p.other.reclaimed_anon += reclaimed;
            }
            Act::ShrinkActive { taken } => {
                kswapd_activity = true;
                work.refill += taken;
            }
            Act::Write { file, sync } => {
                kswapd_activity = true;
                match (file, sync) {
                    (true, true) => work.write_file_sync += 1,
                    (false, true) => work.write_anon_sync += 1,
                    (true, false) => work.write_file_async += 1,
                    (false, false) => work.write_anon_async += 1,
                }
            }
            Act::Throttled {
                reason,
                timeout_us,
                delayed_us,
            } => {
                for (bit, waits) in self.a.throttled.iter_mut().enumerate() {
                    if reason & (1 << bit) != 0 {
                        waits[k(p.is_kswapd)].add(timeout_us, delayed_us);
                    }
                }
            }
            Act::CongestionWait {
                timeout_us,
                delayed_us,
            } => self.a.congestion_wait[k(p.is_kswapd)].add(timeout_us as i64, delayed_us as i64),
            Act::WaitIffCongested {
                timeout_us,
                delayed_us,
            } => {
                self.a.wait_iff_congested[k(p.is_kswapd)].add(timeout_us as i64, delayed_us as i64)
            }
            Act::SlabStart => {
                kswapd_activity = true;
                t.slab_begin = Some(ts);
            }
            Act::SlabEnd { retval } => {
                kswapd_activity = true;
                let s = &mut self.a.slab[k(p.is_kswapd)];
                s.calls += 1;
                s.freed += retval.max(0) as u64;
                if let Some(b) = t.slab_begin.take() {
                    let d = ts.saturating_sub(b);
                    s.time_ns += d;
                    s.max_ns = s.max_ns.max(d);
                }
            }
            Act::Compaction { kind } => {
                count_one(&mut self.a.compaction_events, kind);
                match kind {
                    "begin" => t.compaction_begin = Some(ts),
                    "deferred" => self.a.compaction_by[compactor(comm)].deferred += 1,
                    _ => {}
                }
            }
            Act::CompactionEnd { status } => {
                if let Some(b) = t.compaction_begin.take() {
                    self.a.compactions += 1;
                    self.a.compaction_time_ns += ts.saturating_sub(b);
                }
                count_one(&mut self.a.compaction_by[compactor(comm)].ended, status);
            }
            Act::CompactionIsolate {
                scanner,
                scanned,
                taken,
            } => {
                let c = &mut self.a.compaction_by[compactor(comm)];
                let (s, i) = match scanner {
                    CompactionScanner::Migrate => (&mut c.migrate_scanned, &mut c.migrate_isolated),
                    CompactionScanner::Free => (&mut c.free_scanned, &mut c.free_isolated),
                    CompactionScanner::FastFree => {
                        (&mut c.fast_free_scanned, &mut c.fast_free_isolated)
                    }
                };
                *s += scanned;
                *i += taken;
            }
            Act::CompactionMigrate { migrated, failed } => {
                let c = &mut self.a.compaction_by[compactor(comm)];
                c.migrated += migrated;
                c.migrate_failed += failed;
            }
            Act::FilemapAdd { order } => {
                *self.a.page_cache_added.entry(order).or_default() += 1;
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
                t.kswapd_periods.clear();
            }
            s.period_last = ts;
        }
    }

    /// Reads a whole input (any [`std::io::Read`], already decompressed).
    pub fn read<R: Read + ?Sized>(&mut self, r: &mut R) -> io::Result<()> {
        crate::reader::for_each_line(r, |no, l, long| {
            if long {
                self.scan.too_long(no, self.opts.max_malformed_lines);
            } else {
                self.line(no, l);
            }
        })?;
        Ok(())
    }

    /// Reads a whole input held in memory, as [`Analyzer::read`] would (lines numbered
    /// from 1), with `jobs` threads (0: one per available core). The result is the same
    /// whatever `jobs`: the lines are split into blocks at line ends, `jobs` threads decode
    /// the blocks (the part that costs), and the decoded events are applied to the
    /// order-sensitive state (per-task begin/end pairing, kswapd wake/sleep, the
    /// concurrency tracker, first-seen order of the processes) one block after another in
    /// the order of the input, while the threads decode the next blocks.
    pub fn read_bytes(&mut self, data: &[u8], jobs: usize) {
        self.read_blocks(data, &split_blocks(data, BLOCK), all_cores(jobs))
    }

    /// Reads a whole stream (already decompressed), as [`Analyzer::read`] would, with
    /// `jobs` threads (0: one per core; 1 is [`Analyzer::read`]). The stream is read in
    /// batches of whole lines of about `batch` bytes (a longer line makes its batch longer,
    /// up to [`crate::reader::MAX_LINE`], past which it is skipped as `read` skips it); the
    /// next batch is read while the threads decode the current one as
    /// [`Analyzer::read_bytes`] does. Two batches are in memory at a time.
    pub fn read_stream<R: Read + ?Sized>(
        &mut self,
        r: &mut R,
        jobs: usize,
        batch: usize,
    ) -> io::Result<()> {
        let jobs = all_cores(jobs);
        if jobs <= 1 {
            return self.read(r);
        }
        let max = self.opts.max_malformed_lines;
        let mut batches = Batches::new(r, batch);
        let mut lines = 0u64; // lines read so far
        let mut next = batches.next()?;
        while let Some(b) = next.take() {
            match b {
                Batch::TooLong => {
                    lines += 1;
                    self.scan.too_long(lines, max);
                    next = batches.next()?;
                }
                Batch::Lines(text) => {
                    let bounds = split_blocks(&text, BLOCK);
                    let before = self.scan.lines;
                    next = std::thread::scope(|s| {
                        s.spawn(|| self.read_blocks_from(&text, &bounds, jobs, lines));
                        batches.next()
                    })?;
                    lines += self.scan.lines - before;
                    batches.recycle(text);
                }
            }
        }
        Ok(())
    }

    /// [`Analyzer::read_bytes`] over the given blocks (`bounds`: ascending offsets from 0
    /// to `data.len()`, each inner one just after a `\n`, as [`split_blocks`] gives):
    /// public so that tests can split anywhere.
    pub fn read_blocks(&mut self, data: &[u8], bounds: &[usize], jobs: usize) {
        self.read_blocks_from(data, bounds, jobs, 0)
    }

    /// [`Analyzer::read_blocks`] of text that follows `first` lines already read.
    fn read_blocks_from<'a>(&mut self, data: &'a [u8], bounds: &[usize], jobs: usize, first: u64) {
        let max = self.opts.max_malformed_lines;
        let n = bounds.len().saturating_sub(1);
        let block = |i: usize| &data[bounds[i]..bounds[i + 1]];
        let mut offset = first; // lines before the next block to apply
        let jobs = jobs.min(n); // no more threads than blocks
        if jobs <= 1 {
            for i in 0..n {
                let mut scan = Scan::default();
                crate::reader::for_each_line_in(block(i), |no, l, long| {
                    if long {
                        scan.too_long(no, max);
                    } else if let Some(r) = scan.line(no, l, max) {
                        self.apply(&r);
                    }
                });
                let lines = scan.lines;
                self.scan.merge(scan, offset, max);
                offset += lines;
            }
            return;
        }
        // Decodes block i into `recs` (an emptied buffer of an applied block, or new).
        let decode = |i: usize, mut recs: Vec<Rec<'a>>| {
            let b = block(i);
            let mut scan = Scan::default();
            recs.reserve(b.len() / 128);
            crate::reader::for_each_line_in(b, |no, l, long| {
                if long {
                    scan.too_long(no, max);
                } else if let Some(r) = scan.line(no, l, max) {
                    recs.push(r);
                }
            });
            Block { scan, recs }
        };
        // Blocks decoded and not yet applied stay within `window` of the next to apply.
        let window = 4 * jobs;
        struct Shared<'a> {
            ready: Vec<Option<Block<'a>>>,
            next_claim: usize,
            applied: usize,
            /// Buffers of applied blocks, reused (fresh ones cost page faults).
            spare: Vec<Vec<Rec<'a>>>,
            /// A thread panicked: the others stop waiting, and the scope re-raises the panic.
            failed: bool,
        }
        let shared = Mutex::new(Shared {
            ready: (0..n).map(|_| None).collect(),
            next_claim: 0,
            applied: 0,
            spare: Vec::new(),
            failed: false,
        });
        let cv = Condvar::new();
        let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
        let on_panic = || {
            OnUnwind(|| {
                lock().failed = true;
                cv.notify_all();
            })
        };
        let claim = |s: &mut Shared<'a>| {
            (s.next_claim < n && s.next_claim < s.applied + window).then(|| {
                s.next_claim += 1;
                (s.next_claim - 1, s.spare.pop().unwrap_or_default())
            })
        };
        std::thread::scope(|scope| {
            for _ in 1..jobs {
                scope.spawn(|| loop {
                    let _guard = on_panic();
                    let mut s = lock();
                    let (i, buf) = loop {
                        if s.failed || s.next_claim >= n {
                            return;
                        }
                        match claim(&mut s) {
                            Some(c) => break c,
                            None => s = cv.wait(s).unwrap_or_else(PoisonError::into_inner),
                        }
                    };
                    drop(s);
                    let b = decode(i, buf);
                    lock().ready[i] = Some(b);
                    cv.notify_all();
                });
            }
            // This thread applies the blocks in order, and decodes one when the next to
            // apply is not ready yet.
            let _guard = on_panic();
            loop {
                let mut s = lock();
                if s.applied == n || s.failed {
                    break;
                }
                let a = s.applied;
                if let Some(b) = s.ready[a].take() {
                    s.applied += 1;
                    drop(s);
                    cv.notify_all();
                    let Block { scan, mut recs } = b;
                    for r in &recs {
                        self.apply(r);
                    }
                    let lines = scan.lines;
                    self.scan.merge(scan, offset, max);
                    offset += lines;
                    recs.clear();
                    lock().spare.push(recs);
                } else if let Some((i, buf)) = claim(&mut s) {
                    drop(s);
                    let b = decode(i, buf);
                    lock().ready[i] = Some(b);
                    cv.notify_all();
                } else {
                    drop(cv.wait(s).unwrap_or_else(PoisonError::into_inner));
                }
            }
        });
    }

    /// Closes open intervals and aggregates.
    pub fn finish(mut self) -> Analysis {
        let scan = std::mem::take(&mut self.scan);
        let p = &mut self.a.parse;
        p.lines = scan.lines;
        p.comment_lines = scan.comment_lines;
        p.events = scan.events;
        p.unknown_events = scan.unknown_events;
        p.malformed = scan.malformed;
        p.malformed_lines = scan.malformed_lines;
        p.lost_events = scan.lost_events;
        p.bytes = scan.bytes;
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
                for &(a, b) in t
                    .kswapd_periods
                    .iter()
                    .chain([(s.period_start, s.period_last)].iter())
                {
                    self.concurrency.kswapd_awake(a, b);
                }
            }
            if t.direct_begin.is_some() {
                self.a.direct_unfinished += 1;
            }
        }
        self.a.concurrency = std::mem::take(&mut self.concurrency).finish(last);
        self.a.parse.events_by_name = scan
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
        self.a.parse.unknown_by_name = scan
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

/// `jobs`, with 0 meaning one per available core.
fn all_cores(jobs: usize) -> usize {
    if jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        jobs
    }
}

/// Bytes per batch of a streamed parallel read ([`Analyzer::read_stream`]).
pub const STREAM_BATCH: usize = 8 << 20;

/// What [`Batches`] reads next.
enum Batch {
    /// Whole lines (the last one may lack its `\n` at the end of the stream).
    Lines(Vec<u8>),
    /// One line of [`crate::reader::MAX_LINE`] bytes or more, skipped.
    TooLong,
}

/// A stream cut into batches of whole lines.
struct Batches<'r, R: ?Sized> {
    r: &'r mut R,
    batch: usize,
    /// The start of a line that the last batch did not end.
    carry: Vec<u8>,
    spare: Vec<u8>,
    eof: bool,
}

impl<'r, R: Read + ?Sized> Batches<'r, R> {
    fn new(r: &'r mut R, batch: usize) -> Self {
        Batches {
            r,
            batch: batch.max(1),
            carry: Vec::new(),
            spare: Vec::new(),
            eof: false,
        }
    }

    /// Appends up to `want` bytes of the stream to `buf` (fewer only at its end); 0 at its
    /// end.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
        let n = (&mut *self.r).take(want as u64).read_to_end(buf)?;
        if n == 0 {
            self.eof = true;
        }
        Ok(n)
    }

    fn next(&mut self) -> io::Result<Option<Batch>> {
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        // What the last batch left: the start of a line, or after a skipped line the rest
        // of its chunk (whole lines, maybe).
        buf.append(&mut self.carry);
        let mut last_nl = memchr::memrchr(b'\n', &buf);
        // Reads of at most 1 MiB, fewer when the batch size is smaller (tests).
        let step = self.batch.min(crate::reader::CHUNK);
        loop {
            if buf.len() >= self.batch || self.eof {
                if let Some(nl) = last_nl {
                    self.carry.extend_from_slice(&buf[nl + 1..]);
                    buf.truncate(nl + 1);
                    return Ok(Some(Batch::Lines(buf)));
                }
                if self.eof {
                    return Ok((!buf.is_empty()).then_some(Batch::Lines(buf)));
                }
                if buf.len() >= crate::reader::MAX_LINE {
                    // No line end in MAX_LINE bytes from a line's start: skip to its end.
                    loop {
                        buf.clear();
                        if self.fill(&mut buf, step)? == 0 {
                            break;
                        }
                        if let Some(nl) = memchr::memchr(b'\n', &buf) {
                            self.carry.extend_from_slice(&buf[nl + 1..]);
                            break;
                        }
                    }
                    self.spare = buf;
                    return Ok(Some(Batch::TooLong));
                }
            }
            let from = buf.len();
            // Past the batch size (a line longer than a batch), read whole steps, not bytes.
            let want = if from >= self.batch {
                step
            } else {
                (self.batch - from).min(step)
            };
            self.fill(&mut buf, want)?;
            if let Some(i) = memchr::memrchr(b'\n', &buf[from..]) {
                last_nl = Some(from + i);
            }
        }
    }

    /// Hands back a batch's buffer for the next batch.
    fn recycle(&mut self, buf: Vec<u8>) {
        self.spare = buf;
    }
}

/// Analyses a whole in-memory input with `jobs` threads (0: one per core); see
/// [`Analyzer::read_bytes`].
pub fn analyze_bytes(data: &[u8], opts: Options, jobs: usize) -> Analysis {
    let mut an = Analyzer::new(opts);
    an.read_bytes(data, jobs);
    an.finish()
}

/// Analyses a path (`-`: stdin) with `jobs` threads (0: one per core). A plain file is
/// mapped into memory and decoded in place ([`Analyzer::read_bytes`]); gzip and zstd files,
/// stdin and files that cannot be mapped are read (and decompressed) by this thread in
/// batches of [`STREAM_BATCH`] bytes while the others decode the previous batch
/// ([`Analyzer::read_stream`]). The result is the same whatever the way and `jobs`.
pub fn analyze_path(path: &str, opts: Options, jobs: usize) -> io::Result<Analysis> {
    let mut an = Analyzer::new(opts);
    if path == "-" {
        an.read_stream(&mut crate::reader::open_input(path)?, jobs, STREAM_BATCH)?;
        return Ok(an.finish());
    }
    let file = std::fs::File::open(path)?;
    match crate::reader::map_plain(&file)? {
        Some(map) => an.read_bytes(&map, jobs),
        None => an.read_stream(
            &mut crate::reader::decompress(Box::new(file))?,
            jobs,
            STREAM_BATCH,
        )?,
    }
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

/// Runs its closure when dropped during a panic: a thread of the parallel analysis tells the
/// others to stop waiting for it.
struct OnUnwind<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)()
        }
    }
}
