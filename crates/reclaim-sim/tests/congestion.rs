//! The congestion waits of reclaim (`variant.reclaim_wait`, seed 003's patches 7 and 8) on
//! seed 001's simple-writeback USB scenario, shrunk to 192 MiB so that reclaim starts
//! within 30 simulated seconds, and on seed 003's micro-mapped-file-stream at 512 MiB: each
//! variant emits its own tracepoints, which parse with reclaim-trace and fill the report's
//! congestion table, at the callers each patch changed; runs repeat byte for byte.

mod common;
use common::Shared;

use reclaim_sim::{RunOutput, Scenario};
use reclaim_trace::analysis::{analyze, Analysis, Options};
use reclaim_trace::report::{render_text, Input};

const USB: &str = include_str!("../../../scenarios/seed001/simple-wb-usb-baseline.toml");

/// The traced run with `reclaim_wait`: its trace and output.
fn traced(reclaim_wait: &str) -> (Vec<u8>, RunOutput) {
    let sets = [
        "machine.memory_mb_per_node=192".to_string(),
        "run.duration_s=30".to_string(),
        "run.trace=true".to_string(),
        format!("variant.reclaim_wait={reclaim_wait}"),
    ];
    let s = Scenario::parse(USB, "scenarios/seed001/simple-wb-usb-baseline.toml", &sets)
        .expect("scenario");
    let buf = Shared::default();
    let out = reclaim_sim::run(&s, Some(Box::new(buf.clone())), &mut |_| {});
    (buf.bytes(), out)
}

fn analysis(trace: &[u8]) -> Analysis {
    let a = analyze(&mut &trace[..], Options::default()).unwrap();
    assert_eq!(a.parse.malformed, 0, "{:?}", a.parse.malformed_lines);
    assert_eq!(a.parse.unknown_events, 0);
    a
}

/// Lines of event `name` in `trace`, and the sum of their `usec_delayed`.
fn events(trace: &[u8], name: &str) -> (u64, u64) {
    let text = std::str::from_utf8(trace).unwrap();
    let pat = format!(" {name}: ");
    text.lines()
        .filter(|l| l.contains(&pat))
        .fold((0, 0), |(n, us), l| {
            (
                n + 1,
                us + common::field(l.split(&pat).nth(1).unwrap(), "usec_delayed"),
            )
        })
}

const DIRECT: usize = 0;
const KSWAPD: usize = 1;

#[test]
fn congestion_wait_naps_fill_the_congest_rows() {
    let (trace, out) = traced("congestion_wait");
    assert!(out.allocstall() > 0, "the run must reclaim directly");
    let a = analysis(&trace);
    let (n, us) = events(&trace, "writeback_congestion_wait");
    let cw = a.congestion_wait;
    assert!(cw[DIRECT].number > 0 && cw[KSWAPD].number > 0, "{cw:?}");
    // Every line lands in the table, its time in whole jiffies (4 ms at HZ=250).
    assert_eq!(cw[DIRECT].number + cw[KSWAPD].number, n);
    assert_eq!(cw[DIRECT].time_us + cw[KSWAPD].time_us, us);
    assert_eq!(us % 4000, 0);
    // No nap outlasts its timeout (kswapd's HZ/10, direct reclaim's HZ/10 or HZ/50). Here
    // the stick's queue stays congested for the whole run (the writers' 3.1-sized chunks
    // keep it full), so none is woken early; the early wake at a request freed below the
    // off threshold is mm/congestion.rs's unit tests'.
    assert!(cw[KSWAPD].full <= cw[KSWAPD].number, "{cw:?}");
    assert!(cw[KSWAPD].time_us <= cw[KSWAPD].number * 100_000, "{cw:?}");
    assert!(cw[DIRECT].time_us <= cw[DIRECT].number * 100_000, "{cw:?}");
    assert_eq!(
        a.wait_iff_congested[DIRECT].number + a.wait_iff_congested[KSWAPD].number,
        0
    );
    assert_eq!(events(&trace, "mm_vmscan_throttled").0, 0);
    let text = render_text(&[Input {
        name: "congestion_wait".into(),
        analysis: &a,
        vmstat: None,
        user_sys_s: None,
    }]);
    let row = text
        .lines()
        .find(|l| l.starts_with("KSwapd number congest     waited"))
        .expect("the congestion table");
    assert!(row.ends_with(&format!(" {}", cw[KSWAPD].number)), "{row}");
}

#[test]
fn the_allocators_naps_wait_conditionally_with_patch_7_or_8() {
    for variant in ["wait_iff_congested", "zone_congested"] {
        let (trace, _) = traced(variant);
        let a = analysis(&trace);
        let (cw, wic) = (a.congestion_wait, a.wait_iff_congested);
        // The writers' direct naps here are all the allocator's retries, which both patches
        // turn into wait_iff_congested(); kswapd keeps congestion_wait (the seed: "kswapd
        // is still hitting congestion_wait()").
        assert!(wic[DIRECT].number > 0, "{variant}: {wic:?}");
        assert_eq!(cw[DIRECT].number, 0, "{variant}");
        assert!(cw[KSWAPD].number > 0, "{variant}: {cw:?}");
        assert_eq!(wic[KSWAPD].number, 0, "{variant}");
        assert_eq!(
            events(&trace, "writeback_wait_iff_congested").0,
            wic[DIRECT].number
        );
    }
}

const MFS: &str = include_str!("../../../scenarios/seed003/mapped-file-stream.toml");

/// Seed 003's micro-mapped-file-stream at 512 MiB, traced, with `reclaim_wait`: its direct
/// reclaim naps in do_try_to_free_pages() (it scans below DEF_PRIORITY - 2 and falls short).
fn mfs_trace(reclaim_wait: &str) -> Vec<u8> {
    let sets = [
        "machine.memory_mb_per_node=512",
        "swap.size_mb=170",
        "workload.size_mb=2048",
        "run.trace=true",
        "variant.high_order_reclaim=lowlumpy",
    ]
    .map(String::from)
    .into_iter()
    .chain([format!("variant.reclaim_wait={reclaim_wait}")])
    .collect::<Vec<_>>();
    let s =
        Scenario::parse(MFS, "scenarios/seed003/mapped-file-stream.toml", &sets).expect("scenario");
    let buf = Shared::default();
    reclaim_sim::run(&s, Some(Box::new(buf.clone())), &mut |_| {});
    buf.bytes()
}

/// The direct reclaimers' (not kswapd's) lines of event `name` with `usec_timeout`.
fn direct_naps(trace: &[u8], name: &str, usec_timeout: u64) -> usize {
    let pat = format!(" {name}: usec_timeout={usec_timeout} ");
    std::str::from_utf8(trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&pat) && !l.trim_start().starts_with("kswapd"))
        .count()
}

#[test]
fn patch_7_leaves_direct_reclaims_nap_a_congestion_wait_and_patch_8_turns_it() {
    const NAP: u64 = 100_000; // do_try_to_free_pages(): HZ/10
    const RETRY: u64 = 20_000; // the allocator's retry: HZ/50
    let traceonly = mfs_trace("congestion_wait");
    let cw = "writeback_congestion_wait";
    let wic = "writeback_wait_iff_congested";
    assert!(direct_naps(&traceonly, cw, NAP) > 0);
    assert!(direct_naps(&traceonly, cw, RETRY) > 0);
    assert_eq!(
        direct_naps(&traceonly, wic, NAP) + direct_naps(&traceonly, wic, RETRY),
        0
    );
    // Patch 7 as posted: the allocator's retry waits conditionally, direct reclaim's nap
    // stays a congestion_wait().
    let patch7 = mfs_trace("wait_iff_congested");
    assert!(direct_naps(&patch7, cw, NAP) > 0);
    assert_eq!(direct_naps(&patch7, cw, RETRY), 0);
    assert!(direct_naps(&patch7, wic, RETRY) > 0);
    assert_eq!(direct_naps(&patch7, wic, NAP), 0);
    // Patch 8: both conditional; with no congested bdi, neither sleeps.
    let patch8 = mfs_trace("zone_congested");
    assert_eq!(
        direct_naps(&patch8, cw, NAP) + direct_naps(&patch8, cw, RETRY),
        0
    );
    assert!(direct_naps(&patch8, wic, NAP) > 0);
    let a = analysis(&patch8);
    assert_eq!(a.wait_iff_congested[DIRECT].time_us, 0);
}

#[test]
fn zone_congested_waits_no_longer_than_wait_iff_congested() {
    // The dd writers reclaim for their own device (current->backing_dev_info), so they
    // never keep a page for congestion: no zone is marked, and patch 8 never sleeps.
    let (trace, _) = traced("zone_congested");
    let a = analysis(&trace);
    assert_eq!(a.wait_iff_congested[DIRECT].time_us, 0);
    assert_eq!(a.wait_iff_congested[DIRECT].full, 0);
}

#[test]
fn reclaim_throttle_has_no_congestion_waits() {
    let (trace, _) = traced("reclaim_throttle");
    let a = analysis(&trace);
    for k in [DIRECT, KSWAPD] {
        assert_eq!(a.congestion_wait[k].number, 0);
        assert_eq!(a.wait_iff_congested[k].number, 0);
    }
}

#[test]
fn congestion_runs_repeat() {
    let (t1, o1) = traced("congestion_wait");
    let (t2, o2) = traced("congestion_wait");
    assert!(t1 == t2, "the traces differ");
    assert_eq!(o1.vmstat_after, o2.vmstat_after);
}

#[test]
fn a_bad_reclaim_wait_is_named() {
    let err = Scenario::parse(
        USB,
        "usb.toml",
        &["variant.reclaim_wait=sometimes".to_string()],
    )
    .expect_err("an error");
    let msg = err.to_string();
    assert!(msg.contains("reclaim_wait"), "{msg}");
    assert!(
        msg.contains("congestion_wait") && msg.contains("reclaim_throttle"),
        "{msg}"
    );
}

const RAID: &str = include_str!("../../../scenarios/seed001/simple-wb-raid-baseline.toml");

/// Seed 001's simple-writeback on the RAID-0 (baseline: reclaim writes), shrunk to 256 MiB
/// and 20 s, traced, with `reclaim_wait` and `variant.writeback_isolated_wait`: its
/// reclaimers meet batches under writeback (the USB stick's 30 s above meet none).
fn raid_traced(reclaim_wait: &str, writeback_isolated_wait: bool) -> (Vec<u8>, RunOutput) {
    let sets = [
        "machine.memory_mb_per_node=256".to_string(),
        "run.duration_s=20".to_string(),
        "run.trace=true".to_string(),
        format!("variant.reclaim_wait={reclaim_wait}"),
        format!("variant.writeback_isolated_wait={writeback_isolated_wait}"),
    ];
    let s = Scenario::parse(
        RAID,
        "scenarios/seed001/simple-wb-raid-baseline.toml",
        &sets,
    )
    .expect("scenario");
    let buf = Shared::default();
    let out = reclaim_sim::run(&s, Some(Box::new(buf.clone())), &mut |_| {});
    (buf.bytes(), out)
}

#[test]
fn patch_6_waits_at_the_end_of_shrink_inactive_list_only_with_its_switch() {
    // With "congestion_wait" nothing else calls wait_iff_congested() (direct reclaim's and
    // kswapd's naps and the allocator's retries are congestion_wait()): every
    // writeback_wait_iff_congested line is shrink_inactive_list()'s, HZ/10.
    let (off, _) = raid_traced("congestion_wait", false);
    assert_eq!(events(&off, "writeback_wait_iff_congested").0, 0);
    let (on, out) = raid_traced("congestion_wait", true);
    let text = std::str::from_utf8(&on).unwrap();
    let pat = " writeback_wait_iff_congested: ";
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(pat)).collect();
    assert!(!lines.is_empty(), "the rule never fired");
    assert!(
        lines.iter().all(|l| l.contains("usec_timeout=100000 ")),
        "{:?}",
        lines.first()
    );
    // Both kinds of reclaimer meet batches under writeback, and the report's table counts
    // every line.
    let a = analysis(&on);
    let wic = a.wait_iff_congested;
    assert!(wic[DIRECT].number > 0 && wic[KSWAPD].number > 0, "{wic:?}");
    assert_eq!(wic[DIRECT].number + wic[KSWAPD].number, lines.len() as u64);
    // Without ZONE_CONGESTED to ask for, it sleeps while the RAID's bdi is congested.
    assert!(wic[DIRECT].time_us + wic[KSWAPD].time_us > 0, "{wic:?}");
    assert!(out.allocstall() > 0);
    // With patch 8's waits, kswapd's own nap is congestion_wait(): its
    // writeback_wait_iff_congested lines are all shrink_inactive_list()'s.
    let (off, _) = raid_traced("zone_congested", false);
    assert_eq!(analysis(&off).wait_iff_congested[KSWAPD].number, 0);
    let (on, _) = raid_traced("zone_congested", true);
    assert!(analysis(&on).wait_iff_congested[KSWAPD].number > 0);
}

#[test]
fn patch_6_without_a_congestion_wait_is_named() {
    for (sets, want) in [
        (
            vec![
                "variant.writeback_isolated_wait=true",
                "variant.reclaim_wait=reclaim_throttle",
            ],
            "reclaim_wait",
        ),
        (
            vec![
                "variant.writeback_isolated_wait=true",
                "variant.reclaim_wait=zone_congested",
                "variant.high_order_reclaim=lumpy",
            ],
            "high_order_reclaim",
        ),
    ] {
        let sets: Vec<String> = sets.into_iter().map(String::from).collect();
        let err = Scenario::parse(USB, "usb.toml", &sets).expect_err("an error");
        let msg = err.to_string();
        assert!(msg.contains("usb.toml"), "{msg}");
        assert!(msg.contains("variant.writeback_isolated_wait"), "{msg}");
        assert!(msg.contains(want) && msg.contains("expected"), "{msg}");
    }
}
