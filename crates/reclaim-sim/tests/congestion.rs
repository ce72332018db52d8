//! The congestion waits of reclaim (`variant.reclaim_wait`, seed 003's patches 7 and 8) on
//! seed 001's simple-writeback USB scenario, shrunk to 256 MiB so that reclaim starts
//! within 30 simulated seconds: each variant emits its own tracepoints, which parse with
//! reclaim-trace and fill the report's congestion table; runs repeat byte for byte.

mod common;
use common::Shared;

use reclaim_sim::{RunOutput, Scenario};
use reclaim_trace::analysis::{analyze, Analysis, Options};
use reclaim_trace::report::{render_text, Input};

const USB: &str = include_str!("../../../scenarios/seed001/simple-wb-usb-baseline.toml");

/// The traced run with `reclaim_wait`: its trace and output.
fn traced(reclaim_wait: &str) -> (Vec<u8>, RunOutput) {
    let sets = [
        "machine.memory_mb_per_node=256".to_string(),
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
    // Some naps end early, woken by a request freed below the off threshold.
    assert!(cw[KSWAPD].full < cw[KSWAPD].number, "{cw:?}");
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
fn wait_iff_congested_replaces_direct_reclaims_naps_only() {
    for variant in ["wait_iff_congested", "zone_congested"] {
        let (trace, _) = traced(variant);
        let a = analysis(&trace);
        let (cw, wic) = (a.congestion_wait, a.wait_iff_congested);
        // Direct reclaim and the allocator wait conditionally; kswapd keeps
        // congestion_wait (the seed: "kswapd is still hitting congestion_wait()").
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
