//! Property tests of the parser and analysis: no input makes them panic; every line is
//! counted exactly once (comment, event, unknown event or malformed); events printed by the
//! writer parse back to themselves under any task name, pid, CPU, timestamp and context
//! layout, names that look like the context's own fields included; a `#` line is a comment
//! only from the first column; the analysis totals equal the sums of what was generated; and
//! the concurrency view of overlapping stalls equals a direct count over them; and the
//! analysis of a trace split into blocks at any line ends, decoded by any number of threads,
//! equals the sequential one.

use proptest::prelude::*;
use reclaim_trace::analysis::{analyze, analyze_bytes, Analysis, Analyzer, Options};
use reclaim_trace::event::{
    CompactionScanner, Event, FilemapAdd, Lru, LruIsolate, ReclaimBegin, ReclaimFlags,
    ShrinkInactive, ShrinkSlabEnd, ShrinkSlabStart, ThrottleReason, Throttled,
};
use reclaim_trace::line::{parse_line, Parsed};
use reclaim_trace::report::{render_json, render_text, Input, Summary};
use reclaim_trace::writer::{Context, TraceWriter};

fn run(text: &[u8]) -> Analysis {
    analyze(&mut &text[..], Options::default()).expect("in-memory read")
}

/// Every line lands in exactly one bucket (no `[LOST` lines are generated here).
fn accounted(a: &Analysis) -> bool {
    let p = &a.parse;
    p.lines == p.comment_lines + p.events + p.unknown_events + p.malformed
}

fn comm() -> impl Strategy<Value = String> {
    // Real names: letters, digits, '-', '/', ':', '.', spaces inside ("Web Content").
    "[a-zA-Z0-9_][a-zA-Z0-9_ /:.-]{0,14}[a-zA-Z0-9_]".prop_map(|s| s)
}

/// Names as `prctl(PR_SET_NAME)` allows them, up to the writer's 16 columns (the kernel's
/// limit is 15 bytes): pieces that look like the context's own fields (`[3]`, `-42`, `(7)`,
/// `1.5:`, `name:`), `#`, `:` and blanks, up to a whole fake context (`-1 [0] 1.0: e:`).
fn awkward_comm() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z0-9_/.<>]{1,4}",
        Just(" ".to_string()),
        Just("#".to_string()),
        Just(":".to_string()),
        (0..1000u32).prop_map(|n| format!("[{n}]")),
        (0..100_000u32).prop_map(|n| format!("-{n}")),
        (0..100_000u32).prop_map(|n| format!("({n})")),
        (0..100u32, 0..1_000_000u32).prop_map(|(s, us)| format!("{s}.{us:06}:")),
        "[a-z_]{1,3}:",
        (0..100u32, 0..10u32).prop_map(|(pid, cpu)| format!("-{pid} [{cpu}] 1.0: e:")),
    ];
    prop::collection::vec(piece, 1..8).prop_map(|pieces| {
        let mut name = pieces.concat();
        name.truncate(16);
        name
    })
}

/// Events with and without flags text, of the kinds the simulator writes.
fn event() -> impl Strategy<Value = Event<'static>> {
    prop_oneof![
        isolate().prop_map(Event::LruIsolate),
        shrink_inactive().prop_map(Event::LruShrinkInactive),
        (0..2i32, 0..10i32).prop_map(|(nid, order)| Event::KswapdWake {
            nid,
            zid: None,
            order
        }),
        (0..10i32).prop_map(|order| Event::DirectReclaimBegin(ReclaimBegin {
            order,
            gfp_flags: "GFP_HIGHUSER_MOVABLE|__GFP_COMP",
            may_writepage: None,
        })),
        (0..1000u64).prop_map(|nr_reclaimed| Event::DirectReclaimEnd { nr_reclaimed }),
    ]
}

/// Rewrites a line the writer printed (6.x context) into another layout the parser reads:
/// `flags` 0 keeps the 6.x irq-info `.....`, 1 puts the 4-character field of ≤5.10, 2 drops
/// the column; `tgid` adds a record-tgid column (`(%7d) `, or `(-------) ` when unknown);
/// `strip` removes the task field's padding, so a name may start the line.
fn relayout(
    line: &str,
    (name, pid, cpu): (&str, u32, u32),
    flags: usize,
    tgid: Option<Option<u32>>,
    strip: bool,
) -> String {
    let task = format!("{name:>16}-{pid:<7} ");
    let rest = line
        .strip_prefix(task.as_str())
        .and_then(|r| r.strip_prefix(format!("[{cpu:03}] ..... ").as_str()))
        .expect("the writer's 6.x layout");
    let task = if strip { task.trim_start() } else { &task };
    let tgid = match tgid {
        None => String::new(),
        Some(Some(t)) => format!("({t:7}) "),
        Some(None) => "(-------) ".to_string(),
    };
    let flags = ["..... ", "d.h1 ", ""][flags];
    format!("{task}{tgid}[{cpu:03}] {flags}{rest}")
}

fn isolate() -> impl Strategy<Value = LruIsolate> {
    (0..4i32, 0..10i32, 0..64u64, 0..4096u64, 0..64u64, 0..4usize).prop_map(
        |(cz, order, req, scanned, taken, lru)| LruIsolate {
            classzone: Some(cz),
            isolate_mode: None,
            order,
            nr_requested: req,
            nr_scanned: scanned,
            nr_skipped: 0,
            nr_taken: taken,
            lru: Some(Lru::ALL[lru]),
            file: None,
            contig_taken: None,
            contig_dirty: None,
            contig_failed: None,
        },
    )
}

fn shrink_inactive() -> impl Strategy<Value = ShrinkInactive> {
    (0..2i32, 0..4096u64, 0..4096u64, 0..13i32, any::<bool>()).prop_map(
        |(nid, scanned, reclaimed, priority, file)| ShrinkInactive {
            nid,
            zid: None,
            nr_scanned: scanned,
            nr_reclaimed: reclaimed,
            nr_dirty: 0,
            nr_writeback: 0,
            nr_congested: 0,
            nr_immediate: 0,
            nr_activate_anon: 0,
            nr_activate_file: 0,
            nr_ref_keep: 0,
            nr_unmap_fail: 0,
            priority,
            flags: ReclaimFlags(
                if file {
                    ReclaimFlags::FILE
                } else {
                    ReclaimFlags::ANON
                } | ReclaimFlags::ASYNC,
            ),
        },
    )
}

/// One generated step of a direct reclaim: isolations then shrinks, inside begin/end.
#[derive(Clone, Debug)]
struct Reclaim {
    pid: u32,
    kswapd: bool,
    isolations: Vec<LruIsolate>,
    shrinks: Vec<ShrinkInactive>,
}

fn reclaim() -> impl Strategy<Value = Reclaim> {
    (
        1..50u32,
        any::<bool>(),
        prop::collection::vec(isolate(), 0..4),
        prop::collection::vec(shrink_inactive(), 0..4),
    )
        .prop_map(|(pid, kswapd, isolations, shrinks)| Reclaim {
            pid,
            kswapd,
            isolations,
            shrinks,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_and_every_line_is_counted(
        lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..40)
    ) {
        let mut text = Vec::new();
        for l in &lines {
            let _ = parse_line(l);
            text.extend(l.iter().copied().filter(|&c| c != b'\n'));
            text.push(b'\n');
        }
        let a = run(&text);
        if !text.windows(6).any(|w| w == b"[LOST ") {
            prop_assert!(accounted(&a), "{:?}", a.parse);
        }
        // The report of anything that parsed renders without panicking.
        let cols = [Input { name: "x".into(), analysis: &a, vmstat: None, user_sys_s: None }];
        let _ = render_text(&cols);
        let _ = render_json(&cols);
    }

    #[test]
    fn arbitrary_field_text_never_panics(name in 0usize..27, fields in prop::collection::vec(any::<u8>(), 0..300)) {
        const NAMES: [&[u8]; 27] = [
            b"mm_vmscan_kswapd_sleep", b"mm_vmscan_kswapd_wake", b"mm_vmscan_wakeup_kswapd",
            b"mm_vmscan_direct_reclaim_begin", b"mm_vmscan_direct_reclaim_end",
            b"mm_vmscan_memcg_reclaim_begin", b"mm_vmscan_memcg_reclaim_end",
            b"mm_vmscan_memcg_softlimit_reclaim_begin", b"mm_vmscan_memcg_softlimit_reclaim_end",
            b"mm_vmscan_node_reclaim_begin", b"mm_vmscan_node_reclaim_end",
            b"mm_vmscan_lru_isolate", b"mm_vmscan_lru_shrink_inactive",
            b"mm_vmscan_lru_shrink_active", b"mm_vmscan_reclaim_pages", b"mm_vmscan_write_folio",
            b"mm_vmscan_writepage", b"mm_vmscan_throttled", b"writeback_congestion_wait",
            b"writeback_wait_iff_congested", b"mm_shrink_slab_start", b"mm_shrink_slab_end",
            b"mm_compaction_begin", b"mm_compaction_end", b"mm_compaction_", b"unknown_event",
            b"mm_filemap_add_to_page_cache",
        ];
        let _ = Event::parse(NAMES[name], &fields);
    }

    #[test]
    fn corrupted_valid_lines_are_parsed_or_counted(
        r in reclaim(), pos in any::<prop::sample::Index>(), byte in any::<u8>()
    ) {
        let mut w = TraceWriter::new(Vec::new());
        let ctx = Context { comm: "dd", pid: r.pid, cpu: 3, ts_ns: 1_000_000_000 };
        for iso in &r.isolations {
            w.write(ctx, &Event::LruIsolate(*iso));
        }
        let mut text = w.into_inner();
        if !text.is_empty() {
            let i = pos.index(text.len());
            text[i] = byte;
        }
        let a = run(&text);
        prop_assert!(text.windows(6).any(|w| w == b"[LOST ") || accounted(&a));
    }

    #[test]
    fn written_lines_parse_back_in_every_context_layout(
        name in comm(), pid in 0..4_194_304u32, cpu in 0..512u32, secs in 0..100_000u64,
        usecs in 0..1_000_000u64, iso in isolate(), layout in 0..4usize
    ) {
        let ts_ns = secs * 1_000_000_000 + usecs * 1_000;
        let ev = Event::LruIsolate(iso);
        let mut w = TraceWriter::new(Vec::new());
        w.write(Context { comm: &name, pid, cpu, ts_ns }, &ev);
        let line = String::from_utf8(w.into_inner()).unwrap();
        let line = line.trim_end_matches('\n');
        // The writer prints the 6.x layout; rewrite its context into the other layouts the
        // parser reads: 4-character irq flags (≤5.10), no irq-info column, a tgid column.
        let (ctx, rest) = line.split_once("] ..... ").unwrap();
        let line = match layout {
            0 => line.to_string(),
            1 => format!("{ctx}] d.h1 {rest}"),
            2 => format!("{ctx}] {rest}"),
            _ => {
                let (task, cpu_field) = ctx.rsplit_once(" [").unwrap();
                format!("{task} (  {pid}) [{cpu_field}] ..... {rest}")
            }
        };
        let Parsed::Event(l) = parse_line(line.as_bytes()) else {
            return Err(TestCaseError::fail(format!("unparsed: {line}")));
        };
        prop_assert_eq!(l.comm, name.as_bytes());
        prop_assert_eq!((l.pid, l.cpu, l.ts_ns), (pid, cpu, ts_ns));
        prop_assert_eq!(Event::parse(l.event, l.fields), Ok(Some(ev)));
    }

    /// Whatever the name holds (`#` first, `[n]`, `-digits`, `:`, a fake context), the
    /// CPU field found is the real one: pid, tgid, CPU, timestamp, irq-info, event name and
    /// fields come back, in every context layout.
    #[test]
    fn names_like_context_fields_keep_the_context(
        name in awkward_comm(),
        pid in prop_oneof![0..4_194_304u32, any::<u32>()],
        cpu in 0..4096u32,
        secs in 0..1_000_000u64,
        usecs in 0..1_000_000u64,
        ev in event(),
        flags in 0..3usize,
        tgid in prop::option::of(prop::option::of(any::<u32>())),
        strip in any::<bool>(),
    ) {
        let ts_ns = secs * 1_000_000_000 + usecs * 1_000;
        let mut w = TraceWriter::new(Vec::new());
        w.write(Context { comm: &name, pid, cpu, ts_ns }, &ev);
        let written = String::from_utf8(w.into_inner()).unwrap();
        let line = relayout(written.trim_end_matches('\n'), (&name, pid, cpu), flags, tgid, strip);
        let Parsed::Event(l) = parse_line(line.as_bytes()) else {
            return Err(TestCaseError::fail(format!("unparsed: {line:?}")));
        };
        prop_assert_eq!(l.comm, name.trim_matches(' ').as_bytes(), "{:?}", line);
        prop_assert_eq!((l.pid, l.tgid, l.cpu, l.ts_ns), (pid, tgid.flatten(), cpu, ts_ns), "{:?}", line);
        prop_assert_eq!(l.irq_flags, ["....." , "d.h1", ""][flags].as_bytes());
        let name_written = ev.full_name();
        prop_assert_eq!(l.event, name_written.as_bytes());
        prop_assert_eq!(Event::parse(l.event, l.fields), Ok(Some(ev)));
    }

    /// ftrace's header lines start with `#` in the first column and hold no CPU field: any
    /// such line is a comment. Behind a blank, the `#` begins a task name, and the line
    /// (with no CPU field, so no event) is not hidden as a comment.
    #[test]
    fn hash_lines_are_comments_only_from_the_first_column(text in r"[^\n\[]{0,80}") {
        let header = format!("#{text}");
        prop_assert_eq!(parse_line(header.as_bytes()), Parsed::Comment);
        let indented = format!(" #{text}");
        // (trace-cmd's `… bytes in size` preamble line is a comment wherever it starts.)
        prop_assume!(!indented.trim_end().ends_with(" bytes in size"));
        prop_assert_eq!(parse_line(indented.as_bytes()), Parsed::Malformed);
    }

    /// The positional 6.x readers and the key-scanning reader for other layouts agree: the
    /// same fields in reverse order (which only the general reader accepts) decode equally.
    #[test]
    fn fast_and_general_field_readers_agree(iso in isolate(), si in shrink_inactive()) {
        for ev in [Event::LruIsolate(iso), Event::LruShrinkInactive(si)] {
            let text = ev.to_string();
            let reversed: Vec<&str> = text.split(' ').rev().collect();
            let reversed = reversed.join(" ");
            prop_assert_eq!(Event::parse(ev.name().as_bytes(), text.as_bytes()), Ok(Some(ev)));
            prop_assert_eq!(Event::parse(ev.name().as_bytes(), reversed.as_bytes()), Ok(Some(ev)));
        }
    }

    #[test]
    fn totals_equal_what_was_generated(reclaims in prop::collection::vec(reclaim(), 0..30)) {
        let mut w = TraceWriter::new(Vec::new());
        let (mut direct_scanned, mut direct_reclaimed, mut direct_n) = (0, 0, 0);
        let (mut kswapd_scanned, mut kswapd_reclaimed) = (0, 0);
        let mut ts = 1_000_000_000u64;
        for r in &reclaims {
            let (comm, pid) = if r.kswapd { ("kswapd0", 1) } else { ("dd worker", 100 + r.pid) };
            let mut put = |ev: Event<'_>| {
                ts += 1_000;
                w.write(Context { comm, pid, cpu: 0, ts_ns: ts }, &ev);
            };
            if !r.kswapd {
                put(Event::DirectReclaimBegin(ReclaimBegin {
                    order: 0, gfp_flags: "GFP_HIGHUSER_MOVABLE", may_writepage: None,
                }));
                direct_n += 1;
            }
            for iso in &r.isolations {
                put(Event::LruIsolate(*iso));
            }
            for s in &r.shrinks {
                put(Event::LruShrinkInactive(*s));
            }
            if !r.kswapd {
                put(Event::DirectReclaimEnd { nr_reclaimed: 0 });
            }
            let scanned: u64 = r.isolations.iter().filter(|i| i.counts_as_scan()).map(|i| i.nr_scanned).sum();
            let reclaimed: u64 = r.shrinks.iter().map(|s| s.nr_reclaimed).sum();
            if r.kswapd {
                kswapd_scanned += scanned;
                kswapd_reclaimed += reclaimed;
            } else {
                direct_scanned += scanned;
                direct_reclaimed += reclaimed;
            }
        }
        let a = run(&w.into_inner());
        prop_assert_eq!(a.parse.malformed, 0);
        prop_assert!(accounted(&a));
        let s = Summary::of(&a);
        prop_assert_eq!(s.direct_reclaims, direct_n);
        prop_assert_eq!((s.direct.scanned(), s.direct.reclaimed()), (direct_scanned, direct_reclaimed));
        prop_assert_eq!((s.kswapd.scanned(), s.kswapd.reclaimed()), (kswapd_scanned, kswapd_reclaimed));
        // Each begin met its end: one stall per direct reclaim, none left open.
        let stalls: usize = a.processes.iter().map(|p| p.direct_stalls.len()).sum();
        prop_assert_eq!(stalls as u64, direct_n);
        prop_assert_eq!(a.direct_unfinished + a.direct_unpaired_ends, 0);
    }
}

/// A direct reclaim by its own task: begins at `begin`, lasts `len` ns (both whole µs, as
/// trace text prints them), and shrinks the
/// inactive lists of the given nodes (`(nid, nr_scanned)`) in between.
#[derive(Clone, Debug)]
struct Overlapping {
    begin: u64,
    len: u64,
    shrinks: Vec<(i32, u64)>,
}

fn overlapping() -> impl Strategy<Value = Overlapping> {
    (
        // Trace text has microsecond timestamps: times are whole µs.
        (0..10_000u64).prop_map(|us| us * 1_000),
        (10..5_000u64).prop_map(|us| us * 1_000),
        prop::collection::vec((0..4i32, 0..100u64), 0..5),
    )
        .prop_map(|(begin, len, shrinks)| Overlapping {
            begin,
            len,
            shrinks,
        })
}

proptest! {
    #[test]
    fn concurrency_of_overlapping_stalls_is_what_they_give(
        stalls in prop::collection::vec(overlapping(), 1..20),
        template in shrink_inactive(),
    ) {
        // Every event of every stall, each on its own pid, written in time order.
        let base = 1_000_000_000u64;
        let mut events: Vec<(u64, usize, Event<'static>)> = Vec::new();
        for (i, st) in stalls.iter().enumerate() {
            let begin = base + st.begin;
            events.push((begin, i, Event::DirectReclaimBegin(ReclaimBegin {
                order: 0, gfp_flags: "GFP_HIGHUSER_MOVABLE", may_writepage: None,
            })));
            for (k, &(nid, scanned)) in st.shrinks.iter().enumerate() {
                let ev = ShrinkInactive { nid, nr_scanned: scanned, ..template };
                events.push((begin + 1_000 * (1 + k as u64), i, Event::LruShrinkInactive(ev)));
            }
            events.push((begin + st.len, i, Event::DirectReclaimEnd { nr_reclaimed: 0 }));
        }
        // Same time: ends before begins, so a count never includes a stall that has ended.
        events.sort_by_key(|(ts, i, ev)| (*ts, !matches!(ev, Event::DirectReclaimEnd { .. }), *i));
        let mut w = TraceWriter::new(Vec::new());
        for (ts, i, ev) in &events {
            w.write(Context { comm: "dd", pid: 100 + *i as u32, cpu: 0, ts_ns: *ts }, ev);
        }
        let c = run(&w.into_inner()).concurrency;

        let first = events.first().unwrap().0;
        let last = events.last().unwrap().0;
        prop_assert_eq!(c.span_ns(), last - first);
        prop_assert_eq!(c.task_ns, stalls.iter().map(|s| s.len).sum::<u64>());
        // The most at once, counted at each begin.
        let most = stalls.iter().map(|a| {
            stalls.iter().filter(|b| b.begin <= a.begin && a.begin < b.begin + b.len).count()
        }).max().unwrap();
        prop_assert_eq!(c.max_tasks as usize, most);
        let mut by_nodes = [0u64; 5];
        for st in &stalls {
            let mut nids: Vec<i32> = st.shrinks.iter().map(|s| s.0).collect();
            nids.sort_unstable();
            nids.dedup();
            by_nodes[nids.len().min(4)] += 1;
        }
        prop_assert_eq!(c.stalls_by_nodes, by_nodes);
        let scanned: u64 = stalls.iter().flat_map(|s| &s.shrinks).map(|s| s.1).sum();
        prop_assert_eq!(c.stall_pages_scanned, scanned);
    }
}

/// The tasks of a mixed trace: two kswapds, tasks that share a name, a pid reused under
/// another name, a pid whose name the kernel had not recorded (`<...>`).
const TASKS: [(&str, u32); 7] = [
    ("kswapd0", 50),
    ("kswapd1", 51),
    ("dd", 100),
    ("dd", 101),
    ("cc1", 100),
    ("<...>", 101),
    ("Web Content", 102),
];

/// Every kind of event whose meaning depends on the events before it (reclaim begin/end,
/// kswapd wake/sleep, compaction and slab begin/end) and some that are only counted.
fn mixed_event() -> impl Strategy<Value = Event<'static>> {
    let begin = |order| ReclaimBegin {
        order,
        gfp_flags: "GFP_HIGHUSER_MOVABLE",
        may_writepage: None,
    };
    prop_oneof![
        3 => isolate().prop_map(Event::LruIsolate),
        3 => shrink_inactive().prop_map(Event::LruShrinkInactive),
        2 => (0..4i32).prop_map(move |o| Event::DirectReclaimBegin(begin(o))),
        2 => (0..100u64).prop_map(|nr_reclaimed| Event::DirectReclaimEnd { nr_reclaimed }),
        1 => (0..4i32).prop_map(move |o| Event::MemcgReclaimBegin(begin(o))),
        1 => Just(Event::MemcgReclaimEnd { nr_reclaimed: 3 }),
        1 => Just(Event::NodeReclaimBegin { nid: 0, order: 0, gfp_flags: "GFP_KERNEL" }),
        1 => Just(Event::NodeReclaimEnd { nr_reclaimed: 1 }),
        2 => (0..2i32, 0..4i32).prop_map(|(nid, order)| Event::KswapdWake { nid, zid: None, order }),
        1 => (0..2i32).prop_map(|nid| Event::KswapdSleep { nid }),
        1 => (0..4i32).prop_map(|order| Event::WakeupKswapd { nid: 0, zid: Some(2), order, gfp_flags: None }),
        1 => Just(Event::ShrinkSlabStart(ShrinkSlabStart {
            shrink: "super_cache_scan+0x0/0x1a0", shr: 0xffff8881, nid: 0,
            nr_objects_to_shrink: 10, gfp_flags: "GFP_KERNEL", cache_items: 100, delta: 5,
            total_scan: 15, priority: 12,
        })),
        1 => (-1..50i32).prop_map(|retval| Event::ShrinkSlabEnd(ShrinkSlabEnd {
            shrink: "super_cache_scan+0x0/0x1a0", shr: 0xffff8881, nid: 0, unused_scan: 0,
            new_scan: 3, total_scan: 15, retval,
        })),
        1 => prop_oneof![Just("begin"), Just("deferred")].prop_map(|kind| {
            Event::Compaction { kind, fields: "zone_start=0x1000 migrate_pfn=0x1000 free_pfn=0x2000 zone_end=0x3000, mode=sync" }
        }),
        1 => prop_oneof![
            Just(("success", "zone_start=0x1000 migrate_pfn=0x1200 free_pfn=0x2000 zone_end=0x3000, mode=sync status=success")),
            Just(("contended", "zone_start=0x1000 migrate_pfn=0x1200 free_pfn=0x2000 zone_end=0x3000, mode=async status=contended")),
        ].prop_map(|(status, fields)| Event::CompactionEnd { status, fields }),
        1 => (0..3usize).prop_map(|s| Event::CompactionIsolate {
            scanner: [CompactionScanner::Migrate, CompactionScanner::Free, CompactionScanner::FastFree][s],
            nr_scanned: 512,
            nr_taken: 32,
            fields: "range=(0x1000 ~ 0x1200) nr_scanned=512 nr_taken=32",
        }),
        1 => (0..32u64).prop_map(|n| Event::CompactionMigrate { nr_migrated: n, nr_failed: 32 - n }),
        1 => (1..16u32, 0..200i64).prop_map(|(r, d)| Event::Throttled(Throttled {
            nid: 0, usec_timeout: 100, usec_delayed: d, reason: ThrottleReason(r),
        })),
        1 => (0..10u32, 0..1u64 << 20).prop_map(|(order, index)| Event::FilemapAdd(FilemapAdd {
            dev_major: 254, dev_minor: 1, ino: 0x10a, pfn: index << 3, ofs: index << 12, order,
        })),
    ]
}

/// One line of a mixed trace.
#[derive(Clone, Debug)]
enum MixedLine {
    /// An event of `TASKS[task]`, `dt` µs after the previous line (or `dt` µs *before* it
    /// when `back`: concatenated captures, per-CPU buffers merged out of order).
    Event {
        task: usize,
        ev: Event<'static>,
        dt: u64,
        back: bool,
    },
    /// An event line cut short at a byte (a damaged line, or one that still parses).
    Cut {
        task: usize,
        ev: Event<'static>,
        at: usize,
    },
    /// Comments, blank lines, lost-event notes, unknown events, garbage.
    Raw(String),
}

fn mixed_line() -> impl Strategy<Value = MixedLine> {
    prop_oneof![
        20 => (0..TASKS.len(), mixed_event(), 0..3_000u64, prop::bool::weighted(0.05))
            .prop_map(|(task, ev, dt, back)| MixedLine::Event { task, ev, dt, back }),
        2 => (0..TASKS.len(), mixed_event(), 0..120usize)
            .prop_map(|(task, ev, at)| MixedLine::Cut { task, ev, at }),
        1 => prop_oneof![
            Just("# tracer: nop".to_string()),
            Just(String::new()),
            Just("CPU:1 [LOST 7 EVENTS]".to_string()),
            Just("          <idle>-0       [001] d..2. 1234.000001: sched_switch: prev_comm=swapper".to_string()),
            "[ -~]{0,60}",
        ].prop_map(MixedLine::Raw),
    ]
}

/// The text of a mixed trace (a last line without its `\n` when `open_end`).
/// One event of `TASKS[task]` at `ts_ns`, as the kernel prints it (with its newline).
fn event_line(task: usize, ev: &Event<'_>, ts_ns: u64) -> Vec<u8> {
    let (comm, pid) = TASKS[task];
    let mut w = TraceWriter::new(Vec::new());
    w.write(
        Context {
            comm,
            pid,
            cpu: 1,
            ts_ns,
        },
        ev,
    );
    w.into_inner()
}

fn mixed_text(lines: &[MixedLine], open_end: bool) -> Vec<u8> {
    let mut ts = 5_000_000_000u64;
    let mut text = Vec::new();
    for l in lines {
        match l {
            MixedLine::Event { task, ev, dt, back } => {
                ts = if *back {
                    ts.saturating_sub(dt * 1_000)
                } else {
                    ts + dt * 1_000
                };
                text.extend(event_line(*task, ev, ts));
            }
            MixedLine::Cut { task, ev, at } => {
                let line = event_line(*task, ev, ts);
                text.extend_from_slice(&line[..(*at).min(line.len() - 1)]);
                text.push(b'\n');
            }
            MixedLine::Raw(s) => {
                text.extend_from_slice(s.as_bytes());
                text.push(b'\n');
            }
        }
    }
    if open_end && text.last() == Some(&b'\n') {
        text.pop();
    }
    text
}

/// Everything an analysis says: its whole JSON form and the text report.
fn everything(a: &Analysis) -> (String, String) {
    let cols = [Input {
        name: "x".into(),
        analysis: a,
        vmstat: None,
        user_sys_s: None,
    }];
    (serde_json::to_string(a).unwrap(), render_text(&cols))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Per-task begin/end pairs, kswapd wake/sleep intervals, the concurrency tracker, the
    /// first-seen order of the processes, the first and last timestamps and the numbers of
    /// the damaged lines come out the same whichever line ends the blocks start at (a
    /// stall may begin in one block and end in a later one) and however many threads
    /// decode them; and the same when they come from a stream read in batches.
    #[test]
    fn blocks_and_threads_give_the_sequential_analysis(
        lines in prop::collection::vec(mixed_line(), 0..300),
        open_end in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        jobs in 1..5usize,
        ignore_pid in any::<bool>(),
        max_malformed_lines in 0..6usize,
        batch in 1..3000usize,
        step in 1..400usize,
    ) {
        let text = mixed_text(&lines, open_end);
        let opts = Options { ignore_pid, max_malformed_lines };
        let sequential = analyze(&mut &text[..], opts.clone()).unwrap();
        let want = everything(&sequential);
        // Block bounds at any line starts (0 to 8 cuts: 1 to 9 blocks, some may be empty).
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.iter().enumerate().filter(|(_, &c)| c == b'\n').map(|(i, _)| i + 1))
            .filter(|&i| i < text.len())
            .collect();
        let mut bounds: Vec<usize> = if starts.is_empty() {
            Vec::new()
        } else {
            cuts.iter().map(|c| starts[c.index(starts.len())]).collect()
        };
        bounds.push(0);
        bounds.push(text.len());
        bounds.sort_unstable();
        let mut an = Analyzer::new(opts.clone());
        an.read_blocks(&text, &bounds, jobs);
        prop_assert_eq!(&everything(&an.finish()), &want, "bounds {:?}, jobs {}", bounds, jobs);
        // The public entry, its own blocks.
        prop_assert_eq!(&everything(&analyze_bytes(&text, opts.clone(), jobs)), &want);
        // A stream (compressed file, stdin) read in batches of about `batch` bytes, by reads
        // of at most `step` bytes, while the threads decode the batch before.
        let mut an = Analyzer::new(opts);
        an.read_stream(&mut Trickle { data: &text, step }, jobs, batch).unwrap();
        prop_assert_eq!(&everything(&an.finish()), &want, "batch {}, step {}", batch, step);
    }
}

/// A reader that returns at most `step` bytes a call, as a pipe or a decompressor may.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Lines at and past the length limit, at the ends of batches and of the stream, are counted
/// and numbered in a streamed parallel read as in the sequential one.
#[test]
fn too_long_lines_in_a_streamed_read_are_the_sequential_ones() {
    use reclaim_trace::reader::MAX_LINE;
    let good = b"              dd-7       [000] .....   1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n";
    let mut text = Vec::new();
    text.extend_from_slice(good);
    text.extend(std::iter::repeat_n(b'x', MAX_LINE - 1));
    text.push(b'\n');
    text.extend_from_slice(good);
    text.extend(std::iter::repeat_n(b'y', MAX_LINE + 5));
    text.push(b'\n');
    text.extend_from_slice(good);
    text.extend(std::iter::repeat_n(b'z', MAX_LINE + 7));
    let opts = Options::default();
    let want = everything(&analyze(&mut &text[..], opts.clone()).unwrap());
    assert!(
        want.0.contains("\"malformed_lines\":[2,4,6]"),
        "{}",
        &want.0[..300]
    );
    for (batch, step) in [
        (4096, 1 << 20),
        (100_000, 4096),
        (MAX_LINE, 1 << 20),
        (3 * MAX_LINE, 1 << 20),
    ] {
        let mut an = Analyzer::new(opts.clone());
        an.read_stream(&mut Trickle { data: &text, step }, 2, batch)
            .unwrap();
        assert_eq!(everything(&an.finish()), want, "batch {batch}, step {step}");
    }
}
