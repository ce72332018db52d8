//! The report of one or more analysed traces, side by side as mmtests compares kernels:
//! "FTrace Reclaim Statistics: vmscan" with the Summary rows of trace-vmscan-postprocess.pl
//! and mmtests' derived rows (WORKLOADS.md §2.6, §3), the congestion (≤5.15) or
//! `mm_vmscan_throttled` (5.16+) waits, the direct-reclaim and kswapd tables per process,
//! the direct-reclaim stall latency distribution by order with the row labels of
//! mmtests' MonitorFtraceallocstall, and how direct reclaim overlaps in time
//! (`concurrency`: tasks stalled at once, nodes per stall, kswapd asleep).
//!
//! Differences from the Perl script and mmtests are listed in docs/tracing.md. The
//! ones visible here: the per-process tables print one value per header (the 2023 script
//! prints more values than its format has fields, so columns shift); "Wake kswapd requests"
//! counts every requester (the script only counts tasks that also direct-reclaimed);
//! "Samples" is the number of stalls (mmtests prints the last index, one less); and kswapd
//! awake time that had to be estimated is marked `~` with a note saying why.

use crate::analysis::{Analysis, Process, Stall, Waits, Work};
use crate::concurrency::{task_bucket_label, NODE_BUCKETS, TASK_BUCKETS};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One input of the report: a name for its column and its analysis, plus the /proc/vmstat
/// counters before and after the traced window when the input came with them.
pub struct Input<'a> {
    pub name: String,
    pub analysis: &'a Analysis,
    pub vmstat: Option<VmstatDelta>,
    /// User + system CPU seconds of the traced workload, when known (the denominator of
    /// mmtests' "Percentage Time Spent Direct Reclaim", which the trace alone cannot give).
    pub user_sys_s: Option<f64>,
}

/// `after − before` of /proc/vmstat counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VmstatDelta(pub BTreeMap<String, i64>);

impl VmstatDelta {
    /// Parses two `/proc/vmstat` texts (`name value` per line; unparsable lines skipped).
    pub fn from_texts(before: &str, after: &str) -> VmstatDelta {
        fn parse(t: &str) -> BTreeMap<&str, i64> {
            t.lines()
                .filter_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    Some((k, v.trim().parse().ok()?))
                })
                .collect()
        }
        let b = parse(before);
        VmstatDelta(
            parse(after)
                .into_iter()
                .filter_map(|(k, a)| Some((k.to_string(), a - b.get(k)?)))
                .collect(),
        )
    }
    pub fn get(&self, k: &str) -> Option<i64> {
        self.0.get(k).copied()
    }
    /// Sum of the counters whose names start with `prefix` (e.g. `allocstall_`).
    pub fn sum_prefix(&self, prefix: &str) -> Option<i64> {
        let mut it = self
            .0
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .peekable();
        it.peek()?;
        Some(it.map(|(_, v)| v).sum())
    }
}

/// The Summary numbers of one trace (the script's totals, with the fixes above).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub direct_reclaims: u64,
    pub direct: Work,
    pub wake_kswapd_requests: u64,
    pub time_stalled_direct_s: f64,
    pub kswapd_wakeups: u64,
    pub kswapd_rewakeups: u64,
    pub kswapd: Work,
    /// Measured wake → sleep plus estimated time (see `kswapd_awake_estimated_s`).
    pub time_kswapd_awake_s: f64,
    /// The part of `time_kswapd_awake_s` estimated from kswapd's own events.
    pub kswapd_awake_estimated_s: f64,
    /// Time with at least one kswapd awake: `time_kswapd_awake_s` sums every kswapd
    /// thread's, which counts twice the time two threads are awake together.
    pub time_kswapd_any_awake_s: f64,
    pub memcg_reclaims: u64,
    pub memcg: Work,
    pub time_stalled_memcg_s: f64,
    /// Reclaim outside direct, kswapd and memcg contexts (proactive, MADV_PAGEOUT…).
    pub other: Work,
    pub total_scanned: u64,
    pub total_reclaimed: u64,
    pub pct_scanned_reclaimed: f64,
    pub pct_scanned_written: f64,
    pub pct_file_scanned_written: f64,
    /// The time at least one kswapd was awake over the trace span, at most 100 (the script
    /// divides the sum over kswapd threads, above 100 with several awake together).
    pub pct_time_kswapd_awake: f64,
    pub elapsed_s: f64,
}

fn pct(n: f64, d: f64) -> f64 {
    if d > 0.0 {
        n * 100.0 / d
    } else {
        0.0
    }
}

impl Summary {
    pub fn of(a: &Analysis) -> Summary {
        let direct = a.total(|p| &p.direct);
        let kswapd = a.total(|p| &p.kswapd);
        let ns = |f: &dyn Fn(&Process) -> u64| a.sum(f) as f64 / 1e9;
        let total_scanned = direct.scanned() + kswapd.scanned();
        let total_reclaimed = direct.reclaimed() + kswapd.reclaimed();
        // mmtests: kswapd async writes and all four direct write counts.
        let written = kswapd.async_io() + direct.async_io() + direct.sync_io();
        let file_written =
            kswapd.write_file_async + direct.write_file_async + direct.write_file_sync;
        let awake = ns(&|p| p.awake_ns + p.awake_estimated_ns);
        let any_awake = a.concurrency.kswapd_any_awake_ns as f64 / 1e9;
        let elapsed_s = a.elapsed_s();
        Summary {
            direct_reclaims: a.sum(|p| p.direct_reclaims),
            direct,
            wake_kswapd_requests: a.sum(|p| p.wakeup_kswapd),
            time_stalled_direct_s: ns(&|p| p.direct_stall_ns()),
            kswapd_wakeups: a.sum(|p| p.kswapd_wakeups),
            kswapd_rewakeups: a.sum(|p| p.kswapd_rewakeups),
            kswapd,
            time_kswapd_awake_s: awake,
            kswapd_awake_estimated_s: ns(&|p| p.awake_estimated_ns),
            time_kswapd_any_awake_s: any_awake,
            memcg_reclaims: a.sum(|p| p.memcg_reclaims),
            memcg: a.total(|p| &p.memcg),
            time_stalled_memcg_s: ns(&|p| p.memcg_stalls.iter().map(|s| s.ns).sum()),
            other: a.total(|p| &p.other),
            total_scanned,
            total_reclaimed,
            pct_scanned_reclaimed: pct(total_reclaimed as f64, total_scanned as f64),
            pct_scanned_written: pct(written as f64, total_scanned as f64),
            pct_file_scanned_written: pct(file_written as f64, total_scanned as f64),
            pct_time_kswapd_awake: pct(any_awake, elapsed_s),
            elapsed_s,
        }
    }
}

/// mmtests' quantile (VMR/Stat): `x[int(L·p + 0.5)]` of the ascending samples, `L = n − 1`.
/// `sorted` is not empty.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let l = sorted.len() - 1;
    sorted[((l as f64) * p + 0.5) as usize]
}

/// The row labels of mmtests' latency table (SummariseVariabletime @b1ba9223, lower is
/// better): stutter's mmap latency, in ms.
pub const LATENCY_ROWS: [&str; 17] = [
    "Min",
    "1st-qrtle",
    "2nd-qrtle",
    "3rd-qrtle",
    "Max-90%",
    "Max-93%",
    "Max-95%",
    "Max-99%",
    "Max",
    "Mean",
    "Best99%Mean",
    "Best95%Mean",
    "Best90%Mean",
    "Best50%Mean",
    "Best10%Mean",
    "Best5%Mean",
    "Best1%Mean",
];

/// The values of [`LATENCY_ROWS`] for the ascending samples `sorted` (all 0 for none):
/// [`quantile`] for the quartiles and `Max-P%`, and `BestP%Mean` as VMR/Stat's
/// `calc_lowest_mean(P)`: the mean of `x[0..=k]`, `k = int(n·P/100)`, or of every sample
/// when `k` is 0.
pub fn latency_rows(sorted: &[f64]) -> Vec<f64> {
    if sorted.is_empty() {
        return vec![0.0; LATENCY_ROWS.len()];
    }
    let n = sorted.len();
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let best = |pct: usize| {
        let k = n * pct / 100;
        if k == 0 {
            mean(sorted)
        } else {
            mean(&sorted[..=k.min(n - 1)])
        }
    };
    let mut rows = summary_rows(sorted).to_vec();
    rows.extend([99, 95, 90, 50, 10, 5, 1].map(best));
    rows
}

/// The rows mmtests' latency tables open with, for the ascending samples `sorted` (not
/// empty): Min, the quartiles and `Max-P%` ([`quantile`]), Max and Mean.
fn summary_rows(sorted: &[f64]) -> [f64; 10] {
    let q = |p| quantile(sorted, p);
    [
        sorted[0],
        q(0.25),
        q(0.50),
        q(0.75),
        q(0.90),
        q(0.93),
        q(0.95),
        q(0.99),
        sorted[sorted.len() - 1],
        sorted.iter().sum::<f64>() / sorted.len() as f64,
    ]
}

/// The row labels of mmtests' MonitorFtraceallocstall (latencies in ms).
pub const STALL_ROWS: [&str; 11] = [
    "Min",
    "1st-qrtle",
    "2nd-qrtle",
    "3rd-qrtle",
    "Max-90%",
    "Max-93%",
    "Max-95%",
    "Max-99%",
    "Max",
    "Mean",
    "Samples",
];
/// Its sample-count buckets, `[t_i, t_{i+1})` ms, the last open-ended.
pub const STALL_BUCKETS_MS: [u64; 7] = [0, 5, 10, 100, 500, 1000, 5000];

/// Latency statistics of a set of stalls, in ms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StallStats {
    /// Values for [`STALL_ROWS`] (all 0 when there are no samples).
    pub rows: Vec<f64>,
    /// Counts per [`STALL_BUCKETS_MS`] bucket.
    pub buckets: Vec<u64>,
}

impl StallStats {
    pub fn of(stalls: impl Iterator<Item = u64>) -> StallStats {
        let mut ms: Vec<f64> = stalls.map(|ns| ns as f64 / 1e6).collect();
        ms.sort_by(f64::total_cmp);
        let mut buckets = vec![0; STALL_BUCKETS_MS.len()];
        for &v in &ms {
            let i = STALL_BUCKETS_MS
                .iter()
                .rposition(|&t| v >= t as f64)
                .unwrap_or(0);
            buckets[i] += 1;
        }
        let rows = if ms.is_empty() {
            vec![0.0; STALL_ROWS.len()]
        } else {
            let mut rows = summary_rows(&ms).to_vec();
            rows.push(ms.len() as f64);
            rows
        };
        StallStats { rows, buckets }
    }
}

/// Direct-reclaim stall statistics of a trace: all orders, then each order seen.
pub fn stall_stats_by_order(a: &Analysis) -> Vec<(Option<i32>, StallStats)> {
    let all = || a.processes.iter().flat_map(|p| p.direct_stalls.iter());
    let mut orders: Vec<i32> = all().map(|s| s.order).collect();
    orders.sort_unstable();
    orders.dedup();
    let mut out = vec![(None, StallStats::of(all().map(|s| s.ns)))];
    for o in orders {
        let of_order = all().filter(|s: &&Stall| s.order == o).map(|s| s.ns);
        out.push((Some(o), StallStats::of(of_order)));
    }
    out
}

/// Everything `--json` prints for one input.
#[derive(Serialize)]
struct JsonInput<'a> {
    name: &'a str,
    summary: Summary,
    direct_stalls_ms: Vec<JsonStalls>,
    vmstat_agreement: Vec<Agreement>,
    analysis: &'a Analysis,
}

#[derive(Serialize)]
struct JsonStalls {
    order: Option<i32>,
    rows: BTreeMap<&'static str, f64>,
    buckets: BTreeMap<String, u64>,
}

/// A trace total beside the vmstat counter it should equal.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    pub what: &'static str,
    pub trace: u64,
    pub counter: &'static str,
    pub vmstat: i64,
}

/// The trace totals that the kernel counts in /proc/vmstat beside the tracepoint.
pub fn vmstat_agreement(a: &Analysis, v: &VmstatDelta) -> Vec<Agreement> {
    let s = Summary::of(a);
    let mut out = Vec::new();
    let mut add = |what, trace, counter, vmstat: Option<i64>| {
        if let Some(vmstat) = vmstat {
            out.push(Agreement {
                what,
                trace,
                counter,
                vmstat,
            });
        }
    };
    let scan_k = s.kswapd.scanned();
    add(
        "Kswapd pages scanned",
        scan_k,
        "pgscan_kswapd",
        v.get("pgscan_kswapd"),
    );
    let steal_k = s.kswapd.reclaimed();
    add(
        "Kswapd pages reclaimed",
        steal_k,
        "pgsteal_kswapd",
        v.get("pgsteal_kswapd"),
    );
    let scan_d = s.direct.scanned();
    add(
        "Direct reclaim pages scanned",
        scan_d,
        "pgscan_direct",
        v.get("pgscan_direct"),
    );
    let steal_d = s.direct.reclaimed();
    add(
        "Direct reclaim pages reclaimed",
        steal_d,
        "pgsteal_direct",
        v.get("pgsteal_direct"),
    );
    // allocstall_<zone> counts try_to_free_pages() calls, the direct_reclaim_begin events
    // of order-any page allocations (node reclaim and memcg reclaim do not count).
    let stalls = s.direct_reclaims;
    add(
        "Direct reclaims",
        stalls,
        "allocstall_*",
        v.sum_prefix("allocstall_"),
    );
    // 6.x kswapd() emits mm_vmscan_kswapd_wake before every balance_pgdat() call, and
    // balance_pgdat() counts PAGEOUTRUN once: wakes plus re-wakes are its runs.
    let runs = s.kswapd_wakeups + s.kswapd_rewakeups;
    add(
        "Kswapd wakeups + re-wakeups",
        runs,
        "pageoutrun",
        v.get("pageoutrun"),
    );
    // Compaction's counters, when the trace has its scanners' events: the free scanner's
    // pages scanned (its linear scan and its search of the free lists are both traced), the
    // pages both scanners isolated, and the pages migrated (on a machine where compaction is
    // all that migrates). The migrate scanner's pages scanned are not compared: its search
    // of the free lists (`fast_find_migrateblock()`) counts in compact_migrate_scanned
    // without a tracepoint.
    let c = &a.compaction_by;
    let sum = |f: &dyn Fn(&crate::analysis::CompactionStats) -> u64| f(&c[0]) + f(&c[1]);
    if sum(&|x| x.migrate_scanned + x.free_scanned + x.fast_free_scanned) > 0 {
        add(
            "Compaction free pages scanned",
            sum(&|x| x.free_scanned + x.fast_free_scanned),
            "compact_free_scanned",
            v.get("compact_free_scanned"),
        );
        add(
            "Compaction pages isolated",
            sum(&|x| x.migrate_isolated + x.free_isolated + x.fast_free_isolated),
            "compact_isolated",
            v.get("compact_isolated"),
        );
        add(
            "Pages migrated by compaction",
            sum(&|x| x.migrated),
            "pgmigrate_success",
            v.get("pgmigrate_success"),
        );
    }
    out
}

fn json_stalls(a: &Analysis) -> Vec<JsonStalls> {
    stall_stats_by_order(a)
        .into_iter()
        .map(|(order, st)| JsonStalls {
            order,
            rows: STALL_ROWS.iter().copied().zip(st.rows).collect(),
            buckets: bucket_labels().into_iter().zip(st.buckets).collect(),
        })
        .collect()
}

fn bucket_labels() -> Vec<String> {
    STALL_BUCKETS_MS
        .iter()
        .enumerate()
        .map(|(i, t)| match STALL_BUCKETS_MS.get(i + 1) {
            Some(n) => format!("[{t},{n})"),
            None => format!("[{t},max)"),
        })
        .collect()
}

/// The machine-readable report: one object per input.
pub fn render_json(inputs: &[Input<'_>]) -> serde_json::Value {
    let list: Vec<JsonInput<'_>> = inputs
        .iter()
        .map(|i| JsonInput {
            name: &i.name,
            summary: Summary::of(i.analysis),
            direct_stalls_ms: json_stalls(i.analysis),
            vmstat_agreement: i
                .vmstat
                .as_ref()
                .map(|v| vmstat_agreement(i.analysis, v))
                .unwrap_or_default(),
            analysis: i.analysis,
        })
        .collect();
    serde_json::json!({ "inputs": list })
}

/// Rows of `%-40s` label and one `%10s`-or-wider column per input (mmtests' layout).
struct Table<'a> {
    out: &'a mut String,
    width: usize,
}

impl Table<'_> {
    fn header(&mut self, names: &[&str]) {
        // mmtests splits run names on their first '-' into two header lines; one line
        // wide enough for each name is clearer and keeps columns aligned.
        let _ = write!(self.out, "{:40}", "");
        for n in names {
            let _ = write!(self.out, " {:>w$}", n, w = self.width);
        }
        self.out.push('\n');
    }
    fn row(&mut self, label: &str, cells: impl IntoIterator<Item = String>) {
        let _ = write!(self.out, "{label:<40}");
        for c in cells {
            let _ = write!(self.out, " {:>w$}", c, w = self.width);
        }
        self.out.push('\n');
    }
}

/// Formats with `f` each input's summary.
fn cells<T>(sums: &[Summary], f: impl Fn(&Summary) -> T) -> Vec<String>
where
    T: std::fmt::Display,
{
    sums.iter().map(|s| f(s).to_string()).collect()
}

/// A labelled row of counts, or of percentages, computed from a Summary.
type CountRow = (&'static str, fn(&Summary) -> u64);
type PctRow = (&'static str, fn(&Summary) -> f64);

/// The text report.
pub fn render_text(inputs: &[Input<'_>]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0).max(10);
    let sums: Vec<Summary> = inputs.iter().map(|i| Summary::of(i.analysis)).collect();
    let mut notes: Vec<String> = Vec::new();

    for i in inputs {
        let p = &i.analysis.parse;
        let _ = writeln!(
            out,
            "{}: {} lines, {} events decoded, {} of other types, {} malformed, {} lost, {:.2} s traced",
            i.name,
            p.lines,
            p.events,
            p.unknown_events,
            p.malformed,
            p.lost_events,
            i.analysis.elapsed_s()
        );
        if p.malformed > 0 {
            let shown: Vec<String> = p.malformed_lines.iter().map(|n| n.to_string()).collect();
            let more = if p.malformed as usize > shown.len() {
                ", …"
            } else {
                ""
            };
            let _ = writeln!(out, "  malformed lines skipped: {}{more}", shown.join(", "));
        }
        if p.lost_events > 0 {
            notes.push(format!(
                "{}: the ring buffer dropped {} events; totals are lower bounds",
                i.name, p.lost_events
            ));
        }
    }
    out.push('\n');

    out.push_str("FTrace Reclaim Statistics: vmscan\n\n");
    let mut t = Table {
        out: &mut out,
        width,
    };
    t.header(&names);
    let rows: [CountRow; 9] = [
        ("Direct reclaims", |s| s.direct_reclaims),
        ("Direct reclaim pages scanned", |s| s.direct.scanned()),
        ("Direct reclaim pages reclaimed", |s| s.direct.reclaimed()),
        ("Direct reclaim write file async I/O", |s| {
            s.direct.write_file_async
        }),
        ("Direct reclaim write anon async I/O", |s| {
            s.direct.write_anon_async
        }),
        ("Direct reclaim write file sync I/O", |s| {
            s.direct.write_file_sync
        }),
        ("Direct reclaim write anon sync I/O", |s| {
            s.direct.write_anon_sync
        }),
        ("Wake kswapd requests", |s| s.wake_kswapd_requests),
        ("Kswapd wakeups", |s| s.kswapd_wakeups),
    ];
    for (label, f) in rows {
        t.row(label, cells(&sums, f));
    }
    let rows: [CountRow; 6] = [
        ("Kswapd pages scanned", |s| s.kswapd.scanned()),
        ("Kswapd pages reclaimed", |s| s.kswapd.reclaimed()),
        ("Kswapd reclaim write file async I/O", |s| {
            s.kswapd.write_file_async
        }),
        ("Kswapd reclaim write anon async I/O", |s| {
            s.kswapd.write_anon_async
        }),
        ("Kswapd reclaim write file sync I/O", |s| {
            s.kswapd.write_file_sync
        }),
        ("Kswapd reclaim write anon sync I/O", |s| {
            s.kswapd.write_anon_sync
        }),
    ];
    for (label, f) in rows {
        t.row(label, cells(&sums, f));
    }
    t.row(
        "Time stalled direct reclaim (seconds)",
        cells(&sums, |s| format!("{:.2}", s.time_stalled_direct_s)),
    );
    t.row(
        "Time kswapd awake (seconds)",
        sums.iter().map(|s| {
            let mark = if s.kswapd_awake_estimated_s > 0.0 {
                "~"
            } else {
                ""
            };
            format!("{mark}{:.2}", s.time_kswapd_awake_s)
        }),
    );
    t.out.push('\n');
    t.row("Total pages scanned", cells(&sums, |s| s.total_scanned));
    t.row("Total pages reclaimed", cells(&sums, |s| s.total_reclaimed));
    let rows: [PctRow; 3] = [
        ("%age total pages scanned/reclaimed", |s| {
            s.pct_scanned_reclaimed
        }),
        ("%age total pages scanned/written", |s| {
            s.pct_scanned_written
        }),
        ("%age  file pages scanned/written", |s| {
            s.pct_file_scanned_written
        }),
    ];
    for (label, f) in rows {
        t.row(label, cells(&sums, |s| format!("{:.2}%", f(s))));
    }
    // mmtests: stalled × 100 / (user + sys + stalled).
    t.row(
        "Percentage Time Spent Direct Reclaim",
        inputs.iter().zip(&sums).map(|(i, s)| match i.user_sys_s {
            Some(cpu) => format!(
                "{:.2}%",
                pct(s.time_stalled_direct_s, cpu + s.time_stalled_direct_s)
            ),
            None => "-".to_string(),
        }),
    );
    t.row(
        "Percentage Time kswapd Awake",
        cells(&sums, |s| format!("{:.2}%", s.pct_time_kswapd_awake)),
    );

    // Rows the script does not have: what it cannot see or mixes up.
    t.out.push('\n');
    let rows: [CountRow; 6] = [
        ("Kswapd re-wakeups", |s| s.kswapd_rewakeups),
        ("Memcg reclaims", |s| s.memcg_reclaims),
        ("Memcg reclaim pages scanned", |s| s.memcg.scanned()),
        ("Memcg reclaim pages reclaimed", |s| s.memcg.reclaimed()),
        ("Other reclaim pages scanned", |s| s.other.scanned()),
        ("Other reclaim pages reclaimed", |s| s.other.reclaimed()),
    ];
    for (label, f) in rows {
        t.row(label, cells(&sums, f));
    }
    t.row(
        "Time stalled memcg reclaim (seconds)",
        cells(&sums, |s| format!("{:.2}", s.time_stalled_memcg_s)),
    );
    for (i, s) in inputs.iter().zip(&sums) {
        if s.kswapd_awake_estimated_s > 0.0 {
            notes.push(format!(
                "{}: ~ kswapd awake time includes {:.2} s estimated from kswapd's own \
                 events: {} wake(s) had no mm_vmscan_kswapd_sleep to close them (the \
                 kernel emits none while kswapd keeps finding work); each wake period is \
                 counted from the wake to kswapd's last reclaim event before the next wake",
                i.name, s.kswapd_awake_estimated_s, i.analysis.kswapd_unclosed_intervals
            ));
        }
    }

    let analyses: Vec<&Analysis> = inputs.iter().map(|i| i.analysis).collect();
    congestion_sections(&mut out, &names, width, &analyses);
    shrinker_section(&mut out, &names, width, &analyses);
    page_cache_section(&mut out, &names, width, &analyses);
    compaction_section(&mut out, &names, width, &analyses);

    if inputs.iter().any(|i| i.vmstat.is_some()) {
        out.push_str("\nTrace totals against /proc/vmstat deltas\n\n");
        for i in inputs {
            let Some(v) = &i.vmstat else { continue };
            let _ = writeln!(out, "{}:", i.name);
            for ag in vmstat_agreement(i.analysis, v) {
                let verdict = if ag.trace as i64 == ag.vmstat {
                    "equal".to_string()
                } else {
                    format!("differ by {}", ag.trace as i64 - ag.vmstat)
                };
                let _ = writeln!(
                    out,
                    "  {:<32} {:>12}   {:<20} {:>12}   {verdict}",
                    ag.what, ag.trace, ag.counter, ag.vmstat
                );
            }
        }
    }

    for i in inputs {
        process_tables(&mut out, i, inputs.len() > 1);
    }
    stall_sections(&mut out, &names, &analyses);
    concurrency_section(&mut out, &names, width, &analyses);

    if !notes.is_empty() {
        out.push_str("\nNotes\n");
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    for i in inputs {
        let a = i.analysis;
        if a.direct_unpaired_ends + a.direct_unfinished + a.memcg_unpaired_ends > 0 {
            let _ = writeln!(
                out,
                "- {}: {} direct reclaim end(s) without a begin, {} begin(s) without an end \
                 (the trace cut a stall), {} memcg end(s) without a begin",
                i.name, a.direct_unpaired_ends, a.direct_unfinished, a.memcg_unpaired_ends
            );
        }
    }
    out
}

/// "FTrace Reclaim Statistics: congestion_wait" (kernels up to 5.15) and the
/// `mm_vmscan_throttled` waits by reason that replaced it.
fn congestion_sections(out: &mut String, names: &[&str], width: usize, a: &[&Analysis]) {
    let any = |f: &dyn Fn(&Analysis) -> u64| a.iter().any(|x| f(x) > 0);
    let has_congestion = any(&|x| {
        (0..2)
            .map(|k| x.congestion_wait[k].number + x.wait_iff_congested[k].number)
            .sum()
    });
    let has_throttled = any(&|x| x.throttled.iter().flatten().map(|w| w.number).sum());
    let mut t = Table { out, width };
    let three = |t: &mut Table<'_>, who: &str, what: &str, f: &dyn Fn(&Analysis) -> Waits| {
        t.row(
            &format!("{who} number {what}"),
            a.iter().map(|x| f(x).number.to_string()),
        );
        t.row(
            &format!("{who} time   {what}"),
            a.iter().map(|x| format!("{}ms", f(x).time_us / 1000)),
        );
        t.row(
            &format!("{who} full   {what}"),
            a.iter().map(|x| f(x).full.to_string()),
        );
    };
    if has_congestion {
        t.out
            .push_str("\nFTrace Reclaim Statistics: congestion_wait\n");
        t.header(names);
        for (who, k) in [("Direct", 0), ("KSwapd", 1)] {
            three(&mut t, who, "congest     waited", &|x| x.congestion_wait[k]);
            three(&mut t, who, "conditional waited", &|x| {
                x.wait_iff_congested[k]
            });
        }
    }
    if has_throttled || !has_congestion {
        t.out
            .push_str("\nFTrace Reclaim Statistics: mm_vmscan_throttled\n");
        t.header(names);
        for (who, k) in [("Direct", 0), ("KSwapd", 1)] {
            for (bit, what) in ["writeback", "isolated", "noprogress", "congested"]
                .iter()
                .enumerate()
            {
                three(&mut t, who, &format!("throttled {what}"), &|x| {
                    x.throttled[bit][k]
                });
            }
        }
    }
}

/// Slab shrinker calls (mm_shrink_slab_start/end) and compaction runs
/// (mm_compaction_begin/end), printed when any input has them.
fn shrinker_section(out: &mut String, names: &[&str], width: usize, a: &[&Analysis]) {
    if !a
        .iter()
        .any(|x| x.slab[0].calls + x.slab[1].calls + x.compactions > 0)
    {
        return;
    }
    let mut t = Table { out, width };
    t.out
        .push_str("\nFTrace Reclaim Statistics: slab shrinkers and compaction\n");
    t.header(names);
    for (who, k) in [("kswapd", 1), ("not kswapd", 0)] {
        t.row(
            &format!("Slab shrinker calls {who}"),
            a.iter().map(|x| x.slab[k].calls.to_string()),
        );
        t.row(
            &format!("Slab shrinker time {who}"),
            a.iter()
                .map(|x| format!("{:.2}ms", x.slab[k].time_ns as f64 / 1e6)),
        );
        t.row(
            &format!("Slab shrinker max {who}"),
            a.iter()
                .map(|x| format!("{:.3}ms", x.slab[k].max_ns as f64 / 1e6)),
        );
        t.row(
            &format!("Slab objects freed {who}"),
            a.iter().map(|x| x.slab[k].freed.to_string()),
        );
    }
    t.row("Compactions", a.iter().map(|x| x.compactions.to_string()));
    t.row(
        "Compaction time",
        a.iter()
            .map(|x| format!("{:.2}ms", x.compaction_time_ns as f64 / 1e6)),
    );
}

/// Compaction by who ran it, allocating tasks (direct compaction) and kcompactd: how the
/// compactions of a zone ended (mm_compaction_end's `status`), zones passed over as
/// deferred, and what the migrate scanner, the free scanner's linear scan and its search of
/// the free lists scanned and took, and what migration moved. Printed when any input has
/// compaction events.
fn compaction_section(out: &mut String, names: &[&str], width: usize, a: &[&Analysis]) {
    let by = |x: &Analysis, who: usize| -> u64 {
        let c = &x.compaction_by[who];
        c.ended.values().sum::<u64>()
            + c.deferred
            + c.migrate_scanned
            + c.free_scanned
            + c.fast_free_scanned
    };
    if !a.iter().any(|x| by(x, 0) + by(x, 1) > 0) {
        return;
    }
    let statuses: std::collections::BTreeSet<&str> = a
        .iter()
        .flat_map(|x| x.compaction_by.iter())
        .flat_map(|c| c.ended.keys().map(String::as_str))
        .collect();
    let mut t = Table { out, width };
    t.out.push_str("\nFTrace Reclaim Statistics: compaction\n");
    t.header(names);
    for (who, k) in [("direct", 0), ("kcompactd", 1)] {
        let col = |f: &dyn Fn(&super::analysis::CompactionStats) -> u64| -> Vec<String> {
            a.iter()
                .map(|x| f(&x.compaction_by[k]).to_string())
                .collect()
        };
        for st in &statuses {
            t.row(
                &format!("Compactions {st} {who}"),
                col(&|c| c.ended.get(*st).copied().unwrap_or(0)),
            );
        }
        t.row(&format!("Compactions deferred {who}"), col(&|c| c.deferred));
        t.row(
            &format!("Migrate scanned {who}"),
            col(&|c| c.migrate_scanned),
        );
        t.row(
            &format!("Migrate isolated {who}"),
            col(&|c| c.migrate_isolated),
        );
        t.row(&format!("Free scanned {who}"), col(&|c| c.free_scanned));
        t.row(&format!("Free taken {who}"), col(&|c| c.free_isolated));
        t.row(
            &format!("Free list search read {who}"),
            col(&|c| c.fast_free_scanned),
        );
        t.row(
            &format!("Free list search taken {who}"),
            col(&|c| c.fast_free_isolated),
        );
        t.row(&format!("Pages migrated {who}"), col(&|c| c.migrated));
        t.row(
            &format!("Pages failed migration {who}"),
            col(&|c| c.migrate_failed),
        );
    }
}

/// Folios inserted into the page cache by order (mm_filemap_add_to_page_cache), and the
/// share of the inserted pages each order holds: how much of a large-folio reader's page
/// cache fell back to small folios. Printed when any input has the event.
fn page_cache_section(out: &mut String, names: &[&str], width: usize, a: &[&Analysis]) {
    let orders: std::collections::BTreeSet<u32> = a
        .iter()
        .flat_map(|x| x.page_cache_added.keys().copied())
        .collect();
    if orders.is_empty() {
        return;
    }
    let pages = |x: &Analysis| -> u64 { x.page_cache_added.iter().map(|(&o, &n)| n << o).sum() };
    let mut t = Table { out, width };
    t.out
        .push_str("\nFTrace Reclaim Statistics: page cache added (mm_filemap_add_to_page_cache)\n");
    t.header(names);
    t.row("Pages added", a.iter().map(|x| pages(x).to_string()));
    for &o in &orders {
        t.row(
            &format!("Folios added order-{o}"),
            a.iter()
                .map(|x| x.page_cache_added.get(&o).copied().unwrap_or(0).to_string()),
        );
    }
    for &o in &orders {
        t.row(
            &format!("Pages in order-{o} folios"),
            a.iter().map(|x| {
                let n = x.page_cache_added.get(&o).copied().unwrap_or(0) << o;
                format!("{:.1}%", 100.0 * n as f64 / pages(x).max(1) as f64)
            }),
        );
    }
}

fn orders(m: &BTreeMap<i32, u64>, what: &str) -> String {
    m.iter()
        .filter(|(_, n)| **n > 0)
        .map(|(o, n)| format!("{what}-{o}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn row_name(p: &Process, by_name: bool) -> String {
    if by_name {
        if p.pids.len() > 1 {
            format!("{} ({} pids)", p.name, p.pids.len())
        } else {
            p.name.clone()
        }
    } else {
        format!("{}-{}", p.name, p.pids.first().copied().unwrap_or(0))
    }
}

/// One row of the per-process tables: the name left-aligned in `w` columns, then seven
/// right-aligned cells, then the per-order tokens.
fn table_row<S: AsRef<str>>(out: &mut String, w: usize, cells: [S; 8], tail: &str) {
    const WIDTHS: [usize; 7] = [8, 9, 10, 10, 8, 8, 9];
    let _ = write!(out, "{:<w$}", cells[0].as_ref());
    for (c, width) in cells[1..].iter().zip(WIDTHS) {
        let _ = write!(out, " {:>width$}", c.as_ref());
    }
    if !tail.trim().is_empty() {
        let _ = write!(out, "   {}", tail.trim_end());
    }
    out.push('\n');
}

/// The script's direct-reclaimer and kswapd tables, one value under each header.
fn process_tables(out: &mut String, i: &Input<'_>, titled: bool) {
    let a = i.analysis;
    let by_name = a.options.ignore_pid;
    let mut direct: Vec<&Process> = a
        .processes
        .iter()
        .filter(|p| p.direct_reclaims > 0)
        .collect();
    // Worst stall time first; ties by name and pid so the output is deterministic.
    direct.sort_by(|x, y| {
        y.direct_stall_ns()
            .cmp(&x.direct_stall_ns())
            .then_with(|| x.name.cmp(&y.name))
            .then_with(|| x.pids.cmp(&y.pids))
    });
    let mut kswapd: Vec<&Process> = a
        .processes
        .iter()
        .filter(|p| p.is_kswapd && (p.kswapd_wakeups + p.kswapd.scanned() > 0))
        .collect();
    kswapd.sort_by(|x, y| x.name.cmp(&y.name).then_with(|| x.pids.cmp(&y.pids)));
    let names: Vec<String> = direct
        .iter()
        .chain(&kswapd)
        .map(|p| row_name(p, by_name))
        .collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0).max(16);
    if titled {
        let _ = writeln!(out, "\n== {} ==", i.name);
    }
    out.push('\n');
    table_row(
        out,
        w,
        [
            "Process", "Direct", "Wokeup", "Pages", "Pages", "Pages", "Pages", "Time",
        ],
        "",
    );
    table_row(
        out,
        w,
        [
            "details", "Rclms", "Kswapd", "Scanned", "Rclmed", "Sync-IO", "ASync-IO", "Stalled",
        ],
        "",
    );
    for (p, name) in direct.iter().zip(&names) {
        let cells = [
            name.clone(),
            p.direct_reclaims.to_string(),
            p.wakeup_kswapd.to_string(),
            p.direct.scanned().to_string(),
            p.direct.reclaimed().to_string(),
            p.direct.sync_io().to_string(),
            p.direct.async_io().to_string(),
            format!("{:.3}", p.direct_stall_ns() as f64 / 1e9),
        ];
        let tail = format!(
            "{} {}",
            orders(&p.direct_by_order, "direct"),
            orders(&p.wakeup_by_order, "wakeup")
        );
        table_row(out, w, cells, &tail);
    }
    if direct.is_empty() {
        let _ = writeln!(out, "(no direct reclaim)");
    }
    out.push('\n');
    table_row(
        out,
        w,
        [
            "Kswapd", "Kswapd", "Order", "Pages", "Pages", "Pages", "Pages", "Time",
        ],
        "",
    );
    table_row(
        out,
        w,
        [
            "Instance",
            "Wakeups",
            "Re-wakeup",
            "Scanned",
            "Rclmed",
            "Sync-IO",
            "ASync-IO",
            "Awake",
        ],
        "",
    );
    for (p, name) in kswapd.iter().zip(&names[direct.len()..]) {
        let mark = if p.awake_estimated_ns > 0 { "~" } else { "" };
        let cells = [
            name.clone(),
            p.kswapd_wakeups.to_string(),
            p.kswapd_rewakeups.to_string(),
            p.kswapd.scanned().to_string(),
            p.kswapd.reclaimed().to_string(),
            p.kswapd.sync_io().to_string(),
            p.kswapd.async_io().to_string(),
            format!(
                "{mark}{:.3}",
                (p.awake_ns + p.awake_estimated_ns) as f64 / 1e9
            ),
        ];
        let tail = format!(
            "{} {}",
            orders(&p.wake_by_order, "wake"),
            orders(&p.rewake_by_order, "rewake")
        );
        table_row(out, w, cells, &tail);
    }
    if kswapd.is_empty() {
        let _ = writeln!(out, "(no kswapd activity)");
    }
}

/// "Ftrace direct reclaim allocation stalls", all orders then per order, one column per
/// input.
fn stall_sections(out: &mut String, names: &[&str], a: &[&Analysis]) {
    let per: Vec<Vec<(Option<i32>, StallStats)>> =
        a.iter().map(|x| stall_stats_by_order(x)).collect();
    let mut orders: Vec<Option<i32>> = per.iter().flatten().map(|(o, _)| *o).collect();
    orders.sort_unstable();
    orders.dedup();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0).max(12);
    let labels = bucket_labels();
    for o in orders {
        let title = match o {
            None => "all orders".to_string(),
            Some(o) => format!("order-{o}"),
        };
        let _ = writeln!(
            out,
            "\nFtrace direct reclaim allocation stalls, {title} (ms)"
        );
        let _ = write!(out, "{:18}", "");
        for n in names {
            let _ = write!(out, " {n:>width$}");
        }
        out.push('\n');
        let get = |col: &Vec<(Option<i32>, StallStats)>| {
            col.iter()
                .find(|(x, _)| *x == o)
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| StallStats::of(std::iter::empty()))
        };
        let stats: Vec<StallStats> = per.iter().map(get).collect();
        for (r, label) in STALL_ROWS.iter().enumerate() {
            let _ = write!(out, "{label:<18}");
            for s in &stats {
                if *label == "Samples" {
                    let _ = write!(out, " {:>width$}", s.rows[r] as u64);
                } else {
                    let _ = write!(out, " {:>width$.4}", s.rows[r]);
                }
            }
            out.push('\n');
        }
        for (b, label) in labels.iter().enumerate() {
            let _ = write!(out, "{:<18}", format!("Samples{label}"));
            for s in &stats {
                let _ = write!(out, " {:>width$}", s.buckets[b]);
            }
            out.push('\n');
        }
    }
}

/// "Direct reclaim concurrency": how many tasks were in direct reclaim at once, over the
/// traced time; whether a kswapd slept while they stalled; how many nodes each stall's
/// inactive-list shrinks named, and the pages it scanned. Printed when an input has a
/// direct reclaim.
fn concurrency_section(out: &mut String, names: &[&str], width: usize, a: &[&Analysis]) {
    if a.iter().all(|x| x.concurrency.max_tasks == 0) {
        return;
    }
    let c: Vec<_> = a.iter().map(|x| &x.concurrency).collect();
    out.push_str("\nDirect reclaim concurrency\n\n");
    let mut t = Table { out, width };
    t.header(names);
    let pct_of_span = |ns: u64, span: u64| format!("{:.2}%", pct(ns as f64, span as f64));
    t.row(
        "Mean tasks in direct reclaim",
        c.iter().map(|c| format!("{:.2}", c.mean_tasks())),
    );
    t.row(
        "Mean tasks, while any in direct reclaim",
        c.iter().map(|c| format!("{:.2}", c.mean_tasks_while_any())),
    );
    t.row(
        "Most tasks in direct reclaim at once",
        c.iter().map(|c| c.max_tasks.to_string()),
    );
    for (b, &lo) in TASK_BUCKETS.iter().enumerate() {
        let what = match lo {
            1 => "task ",
            _ => "tasks",
        };
        t.row(
            &format!(
                "%age time {:>5} {what} in direct reclaim",
                task_bucket_label(b)
            ),
            c.iter()
                .map(|c| pct_of_span(c.time_ns_by_tasks[b], c.span_ns())),
        );
    }
    t.row(
        "%age time a kswapd asleep",
        c.iter()
            .map(|c| pct_of_span(c.kswapd_asleep_ns, c.span_ns())),
    );
    t.row(
        "%age direct reclaim time kswapd asleep",
        c.iter()
            .map(|c| pct_of_span(c.direct_with_kswapd_asleep_ns, c.busy_ns())),
    );
    for n in 0..NODE_BUCKETS {
        let label = match n {
            1 => "Stalls that scanned 1 node".to_string(),
            n if n == NODE_BUCKETS - 1 => format!("Stalls that scanned {n}+ nodes"),
            n => format!("Stalls that scanned {n} nodes"),
        };
        t.row(&label, c.iter().map(|c| c.stalls_by_nodes[n].to_string()));
    }
    t.row(
        "Mean pages scanned per stall",
        c.iter().map(|c| format!("{:.0}", c.pages_per_stall())),
    );
    t.row(
        "Mean pages scanned per node of a stall",
        c.iter().map(|c| format!("{:.0}", c.pages_per_node_visit())),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze, Options};

    const TRACE: &str = "\
# tracer: nop
              dd-100     [001] .....   10.000000: mm_vmscan_wakeup_kswapd: nid=0 order=0 gfp_flags=GFP_HIGHUSER_MOVABLE
         kswapd0-50      [002] .....   10.000010: mm_vmscan_kswapd_wake: nid=0 order=0
         kswapd0-50      [002] .....   10.000020: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file
         kswapd0-50      [002] .....   10.000030: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=30 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=2 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
              dd-100     [001] .....   10.001000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE
              dd-100     [001] .....   10.001010: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=32 nr_scanned=40 nr_skipped=0 nr_taken=32 lru=inactive_file
              dd-100     [001] .....   10.001020: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=40 nr_reclaimed=32 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=8 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
              dd-100     [001] .....   10.007000: mm_vmscan_direct_reclaim_end: nr_reclaimed=32
              dd-101     [003] .....   10.002000: mm_vmscan_direct_reclaim_begin: order=9 gfp_flags=GFP_HIGHUSER_MOVABLE
              dd-101     [003] .....   10.202000: mm_vmscan_direct_reclaim_end: nr_reclaimed=0
         kswapd0-50      [002] .....   11.000000: mm_vmscan_kswapd_sleep: nid=0
";

    fn analysis(ignore_pid: bool) -> Analysis {
        analyze(
            &mut TRACE.as_bytes(),
            Options {
                ignore_pid,
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn summary_rows_follow_the_script() {
        let s = Summary::of(&analysis(false));
        assert_eq!(s.direct_reclaims, 2);
        assert_eq!((s.direct.scanned(), s.direct.reclaimed()), (40, 32));
        assert_eq!((s.kswapd.scanned(), s.kswapd.reclaimed()), (32, 30));
        assert_eq!((s.kswapd_wakeups, s.wake_kswapd_requests), (1, 1));
        assert!((s.time_stalled_direct_s - 0.206).abs() < 1e-9);
        assert!((s.time_kswapd_awake_s - 0.99999).abs() < 1e-9);
        assert_eq!(s.kswapd_awake_estimated_s, 0.0);
        assert!((s.pct_scanned_reclaimed - 62.0 * 100.0 / 72.0).abs() < 1e-9);
    }

    #[test]
    fn latency_rows_follow_vmr_stat() {
        // 1..=20 ms: L = 19; q(.25) = x[int(4.75 + .5)] = x[5] = 6; q(.9) = x[17] = 18;
        // q(.99) = x[19] = 20. Best50%Mean: k = 10, mean of x[0..=10] = 6; Best10%Mean:
        // k = 2, mean of 1, 2, 3 = 2; Best1%Mean: k = 0, every sample's mean, 10.5.
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let r = latency_rows(&xs);
        let row = |name| r[LATENCY_ROWS.iter().position(|&l| l == name).unwrap()];
        assert_eq!(
            (row("Min"), row("1st-qrtle"), row("2nd-qrtle")),
            (1.0, 6.0, 11.0)
        );
        assert_eq!(
            (row("3rd-qrtle"), row("Max-90%"), row("Max-93%")),
            (15.0, 18.0, 19.0)
        );
        assert_eq!(
            (row("Max-95%"), row("Max-99%"), row("Max")),
            (19.0, 20.0, 20.0)
        );
        assert_eq!(
            (row("Mean"), row("Best50%Mean"), row("Best10%Mean")),
            (10.5, 6.0, 2.0)
        );
        assert_eq!((row("Best99%Mean"), row("Best1%Mean")), (10.5, 10.5));
        assert_eq!(latency_rows(&[]), vec![0.0; 17]);
    }

    #[test]
    fn stall_distribution_uses_mmtests_quantiles_and_buckets() {
        let by_order = stall_stats_by_order(&analysis(false));
        let orders: Vec<Option<i32>> = by_order.iter().map(|(o, _)| *o).collect();
        assert_eq!(orders, [None, Some(0), Some(9)]);
        let all = &by_order[0].1;
        // Stalls of 6 ms and 200 ms: L = 1, q(.25) = x[int(0.75)] = x[0], q(.5) = x[1].
        assert_eq!(all.rows[0], 6.0);
        assert_eq!(all.rows[1], 6.0);
        assert_eq!(all.rows[2], 200.0);
        assert_eq!(all.rows[8], 200.0);
        assert_eq!(all.rows[9], 103.0);
        assert_eq!(all.rows[10], 2.0);
        // [5,10) and [100,500).
        assert_eq!(all.buckets, [0, 1, 0, 1, 0, 0, 0]);
    }

    /// The text report of one input named "one", without vmstat.
    fn text_of(a: &Analysis) -> String {
        render_text(&[Input {
            name: "one".into(),
            analysis: a,
            vmstat: None,
            user_sys_s: None,
        }])
    }

    /// The last cell of the report line starting with `label`.
    fn last_cell(text: &str, label: &str) -> String {
        let l = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} in\n{text}"));
        l.split_whitespace().last().unwrap().to_string()
    }

    /// Folios by order and each order's share of the pages added; no section without the
    /// event.
    #[test]
    fn page_cache_section_counts_folios_and_their_pages() {
        let trace = "\
              dd-100     [001] .....   10.000000: mm_filemap_add_to_page_cache: dev 254:1 ino 10a pfn=0x200 ofs=0 order=9
              dd-100     [001] .....   10.000001: mm_filemap_add_to_page_cache: dev 254:1 ino 10a pfn=0x5 ofs=2097152 order=0
              dd-100     [001] .....   10.000002: mm_filemap_add_to_page_cache: dev 254:1 ino 10a pfn=0x9 ofs=2101248 order=0
              dd-100     [001] .....   10.000003: mm_filemap_add_to_page_cache: dev 254:1 ino 10a pfn=0x10 ofs=2105344 order=2
";
        let a = analyze(&mut trace.as_bytes(), Options::default()).unwrap();
        assert_eq!(a.page_cache_added, BTreeMap::from([(0, 2), (2, 1), (9, 1)]));
        let text = text_of(&a);
        let row = |label: &str| last_cell(&text, label);
        assert_eq!(row("Pages added"), "518");
        assert_eq!(row("Folios added order-0"), "2");
        assert_eq!(row("Folios added order-9"), "1");
        assert_eq!(row("Pages in order-9 folios"), "98.8%");
        assert_eq!(row("Pages in order-2 folios"), "0.8%");
        let none = text_of(&analysis(false));
        assert!(!none.contains("page cache added"));
    }

    /// Compactions by who ran them, their ends and scanners; no section without the events.
    #[test]
    fn compaction_section_splits_direct_and_kcompactd() {
        let trace = "\
              dd-100     [001] .....   10.000000: mm_compaction_begin: zone_start=0x100000 migrate_pfn=0x100000 free_pfn=0x63fe00 zone_end=0x640000, mode=async
              dd-100     [001] .....   10.000001: mm_compaction_isolate_migratepages: range=(0x100000 ~ 0x100200) nr_scanned=512 nr_taken=31
              dd-100     [001] .....   10.000002: mm_compaction_fast_isolate_freepages: range=(0x3a0000 ~ 0x63fe00) nr_scanned=259 nr_taken=256
              dd-100     [001] .....   10.000003: mm_compaction_migratepages: nr_migrated=30 nr_failed=1
              dd-100     [001] .....   10.000004: mm_compaction_end: zone_start=0x100000 migrate_pfn=0x100200 free_pfn=0x63fe00 zone_end=0x640000, mode=async status=contended
              dd-100     [001] .....   10.000005: mm_compaction_deferred: node=0 zone=Normal   order=9 order_failed=9 consider=1 limit=2
      kcompactd0-36      [000] .....   10.000006: mm_compaction_begin: zone_start=0x100000 migrate_pfn=0x100000 free_pfn=0x63ffff zone_end=0x640000, mode=sync
      kcompactd0-36      [000] .....   10.000007: mm_compaction_isolate_freepages: range=(0x63fe00 ~ 0x640000) nr_scanned=512 nr_taken=32
      kcompactd0-36      [000] .....   10.000008: mm_compaction_end: zone_start=0x100000 migrate_pfn=0x100200 free_pfn=0x63ffff zone_end=0x640000, mode=sync status=success
      kcompactd0-36      [000] .....   10.000009: mm_compaction_end: zone_start=0x100000 migrate_pfn=0x100200 free_pfn=0x63ffff zone_end=0x640000, mode=sync
";
        let a = analyze(&mut trace.as_bytes(), Options::default()).unwrap();
        // The last end has no status: malformed, counted and skipped.
        assert_eq!(a.parse.malformed, 1);
        assert_eq!(a.compactions, 2);
        let [direct, kcompactd] = &a.compaction_by;
        assert_eq!(direct.ended, BTreeMap::from([("contended".to_string(), 1)]));
        assert_eq!(
            (
                direct.deferred,
                direct.migrate_scanned,
                direct.migrate_isolated
            ),
            (1, 512, 31)
        );
        assert_eq!(
            (direct.fast_free_scanned, direct.fast_free_isolated),
            (259, 256)
        );
        assert_eq!((direct.migrated, direct.migrate_failed), (30, 1));
        assert_eq!(
            kcompactd.ended,
            BTreeMap::from([("success".to_string(), 1)])
        );
        assert_eq!((kcompactd.free_scanned, kcompactd.free_isolated), (512, 32));
        assert_eq!(a.parse.events_by_name.get("mm_compaction_end"), Some(&2));
        // The trace's totals against the kernel's counters: free pages scanned 259 + 512,
        // pages isolated 31 + 256 + 32, migrated 30 (the vmstat deltas one off each way).
        let v = VmstatDelta::from_texts(
            "compact_free_scanned 0\ncompact_isolated 0\npgmigrate_success 0\n",
            "compact_free_scanned 771\ncompact_isolated 320\npgmigrate_success 29\n",
        );
        let ag: Vec<(&str, u64, i64)> = vmstat_agreement(&a, &v)
            .iter()
            .map(|g| (g.counter, g.trace, g.vmstat))
            .collect();
        assert_eq!(
            ag,
            [
                ("compact_free_scanned", 771, 771),
                ("compact_isolated", 319, 320),
                ("pgmigrate_success", 30, 29)
            ]
        );
        let text = text_of(&a);
        let row = |label: &str| last_cell(&text, label);
        assert_eq!(row("Compactions contended direct"), "1");
        assert_eq!(row("Compactions success direct"), "0");
        assert_eq!(row("Compactions success kcompactd"), "1");
        assert_eq!(row("Free list search taken direct"), "256");
        assert_eq!(row("Pages failed migration direct"), "1");
        let none = text_of(&analysis(false));
        assert!(!none.contains("Statistics: compaction"));
    }

    #[test]
    fn text_report_has_the_seed_rows_and_aligned_tables() {
        let a = analysis(false);
        let text = render_text(&[Input {
            name: "one".into(),
            analysis: &a,
            vmstat: None,
            user_sys_s: Some(0.794),
        }]);
        for label in [
            "Direct reclaims ",
            "Direct reclaim pages scanned",
            "Kswapd wakeups",
            "Time stalled direct reclaim (seconds)",
            "Time kswapd awake (seconds)",
            "%age  file pages scanned/written",
            "FTrace Reclaim Statistics: mm_vmscan_throttled",
            "Ftrace direct reclaim allocation stalls, order-9 (ms)",
        ] {
            assert!(text.contains(label), "no {label:?} in\n{text}");
        }
        // 0.206 s stalled of 0.794 + 0.206 s.
        let pct = text
            .lines()
            .find(|l| l.starts_with("Percentage Time Spent Direct Reclaim"))
            .unwrap();
        assert!(pct.ends_with(" 20.60%"), "{pct}");
        // One value under each header: the dd-100 row has 8 columns then the order tokens.
        let row = text.lines().find(|l| l.starts_with("dd-100")).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cols[..8],
            ["dd-100", "1", "1", "40", "32", "0", "0", "0.006"]
        );
        assert_eq!(cols[8], "direct-0=1");
        // The worst staller is listed first.
        let first = text.lines().position(|l| l.starts_with("dd-101")).unwrap();
        let second = text.lines().position(|l| l.starts_with("dd-100")).unwrap();
        assert!(first < second);
    }

    #[test]
    fn vmstat_agreement_names_the_difference() {
        let a = analysis(false);
        let v = VmstatDelta::from_texts(
            "pgscan_kswapd 100\npgsteal_kswapd 0\npgscan_direct 0\npgsteal_direct 0\nallocstall_normal 5\n",
            "pgscan_kswapd 132\npgsteal_kswapd 30\npgscan_direct 41\npgsteal_direct 32\nallocstall_normal 7\n",
        );
        let ag = vmstat_agreement(&a, &v);
        let diff: Vec<(&str, i64)> = ag
            .iter()
            .map(|g| (g.counter, g.trace as i64 - g.vmstat))
            .collect();
        assert_eq!(
            diff,
            [
                ("pgscan_kswapd", 0),
                ("pgsteal_kswapd", 0),
                ("pgscan_direct", -1),
                ("pgsteal_direct", 0),
                ("allocstall_*", 0)
            ]
        );
    }

    /// Several kswapd threads of a node awake at once: the script's sum counts the overlap
    /// once per thread; the percentage counts the time any was awake, so at most 100.
    #[test]
    fn percentage_time_kswapd_awake_is_the_union_of_the_threads_awake_time() {
        let mut trace = String::new();
        // Four threads awake over the same second 10–11, a fifth 11.5–12, the trace 10–12.
        for pid in 50..54 {
            let _ = writeln!(
                trace,
                "       kswapd0:{}-{pid}    [002] .....   10.000000: mm_vmscan_kswapd_wake: nid=0 order=0",
                pid - 50
            );
        }
        for pid in 50..54 {
            let _ = writeln!(
                trace,
                "       kswapd0:{}-{pid}    [002] .....   11.000000: mm_vmscan_kswapd_sleep: nid=0",
                pid - 50
            );
        }
        let _ = writeln!(
            trace,
            "       kswapd1-60      [002] .....   11.500000: mm_vmscan_kswapd_wake: nid=1 order=0"
        );
        let _ = writeln!(
            trace,
            "       kswapd1-60      [002] .....   12.000000: mm_vmscan_kswapd_sleep: nid=1"
        );
        let s = Summary::of(&analyze(&mut trace.as_bytes(), Options::default()).unwrap());
        assert!(
            (s.time_kswapd_awake_s - 4.5).abs() < 1e-9,
            "{}",
            s.time_kswapd_awake_s
        );
        assert!(
            (s.time_kswapd_any_awake_s - 1.5).abs() < 1e-9,
            "{}",
            s.time_kswapd_any_awake_s
        );
        assert!(
            (s.pct_time_kswapd_awake - 75.0).abs() < 1e-9,
            "{}",
            s.pct_time_kswapd_awake
        );
    }

    /// 6.x under sustained pressure: wakes and work but no kswapd_sleep. The script would
    /// print 0.00 s; the report estimates each wake period from kswapd's own events.
    #[test]
    fn kswapd_awake_time_is_estimated_without_sleep_events() {
        let mut trace = String::new();
        for (i, t) in [(0u64, 20.0f64), (1, 20.5)] {
            let _ = writeln!(
                trace,
                "         kswapd0-50      [002] .....   {t:.6}: mm_vmscan_kswapd_wake: nid=0 order=0"
            );
            let _ = writeln!(
                trace,
                "         kswapd0-50      [002] .....   {:.6}: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file",
                t + 0.1 + i as f64 * 0.1
            );
        }
        let a = analyze(&mut trace.as_bytes(), Options::default()).unwrap();
        let s = Summary::of(&a);
        assert_eq!((s.kswapd_wakeups, s.kswapd_rewakeups), (1, 1));
        // Periods 20.0–20.1 and 20.5–20.7.
        assert!(
            (s.time_kswapd_awake_s - 0.3).abs() < 1e-6,
            "{}",
            s.time_kswapd_awake_s
        );
        assert_eq!(s.kswapd_awake_estimated_s, s.time_kswapd_awake_s);
        // One kswapd: its awake time is the time any kswapd was awake, estimated alike.
        assert!((s.time_kswapd_any_awake_s - 0.3).abs() < 1e-6);
        let text = render_text(&[Input {
            name: "t".into(),
            analysis: &a,
            vmstat: None,
            user_sys_s: None,
        }]);
        let row = text
            .lines()
            .find(|l| l.starts_with("Time kswapd awake (seconds)"))
            .unwrap();
        assert!(row.ends_with(" ~0.30"), "{row}");
        assert!(text.contains("had no mm_vmscan_kswapd_sleep"), "{text}");
    }
}
