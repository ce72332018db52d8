//! Lumpy reclaim in a whole run (scenarios/sim/highalloc.toml with
//! `variant.high_order_reclaim = "lumpy" | "lowlumpy"`): the hugetlb pool's order-9
//! allocations reclaim whole blocks, traced with 2.6.36's contig_* counters; the trace's
//! isolations add up to vmstat's pgscan; every page ends in one place; the same scenario and
//! seed give the same bytes. (The cursor loop on hand-built blocks is mm::vmscan_lumpy's
//! unit tests.)

use std::ops::ControlFlow;

mod common;
use common::{field, Shared};

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const HIGHALLOC: &str = include_str!("../../../scenarios/sim/highalloc.toml");

/// The highalloc scenario, traced, with `variant.high_order_reclaim = v`.
fn run(v: &str) -> (Kernel, RunOutput, String) {
    run_text(HIGHALLOC, v, &[])
}

/// Scenario `text`, traced, for 2 s, with `variant.high_order_reclaim = v` and `more`.
fn run_text(text: &str, v: &str, more: &[&str]) -> (Kernel, RunOutput, String) {
    let mut sets = vec![
        "run.trace=true".to_string(),
        "run.duration_s=2.0".to_string(),
        format!("variant.high_order_reclaim={v}"),
    ];
    sets.extend(more.iter().map(|s| s.to_string()));
    let s = Scenario::parse(text, "scenarios/sim/highalloc.toml", &sets).expect("scenario");
    let buf = Shared::default();
    let (k, out) = simulate(&s, Some(Box::new(buf.clone())), &mut |_| {
        ControlFlow::Continue(())
    })
    .expect("a run to its end");
    (k, out, String::from_utf8(buf.bytes()).unwrap())
}

/// Σ over the lru_isolate events of (nr_scanned, nr_taken, contig_taken, contig_failed,
/// events with contig_*, contig_dirty).
fn isolations(trace: &str) -> [u64; 6] {
    let mut s = [0; 6];
    for line in trace.lines() {
        let (_, rest) = line.split_once(": ").expect("context");
        let (event, fields) = rest.split_once(": ").expect("event");
        if event != "mm_vmscan_lru_isolate" {
            continue;
        }
        s[0] += field(fields, "nr_scanned");
        s[1] += field(fields, "nr_taken");
        if fields.contains("contig_taken=") {
            let taken = field(fields, "contig_taken");
            assert!(taken < field(fields, "nr_taken"), "{fields}");
            assert!(field(fields, "contig_dirty") <= taken, "{fields}");
            s[2] += taken;
            s[3] += field(fields, "contig_failed");
            s[4] += 1;
            s[5] += field(fields, "contig_dirty");
        }
    }
    s
}

#[test]
fn lumpy_reclaim_takes_whole_blocks_and_the_trace_agrees_with_vmstat() {
    for v in ["lumpy", "lowlumpy"] {
        let (k, out, trace) = run(v);
        let [scanned, taken, contig_taken, _, lumpy_events, _] = isolations(&trace);
        assert!(lumpy_events > 0 && contig_taken > 0, "{v}");
        assert!(taken <= scanned);
        // Every page the isolations scanned, neighbours included, is in pgscan.
        let pgscan = out.delta(VmEvent::PgscanKswapd) + out.delta(VmEvent::PgscanDirect);
        assert_eq!(scanned, pgscan, "{v}");
        let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
        assert!(
            result["metrics"]["nr_hugepages"].as_u64().unwrap() > 0,
            "{v}"
        );
        assert_eq!(k.check_page_places(&[]), Ok(()));
        assert_eq!(k.check_lists(), Ok(()));
        assert_eq!(k.check_conservation(0), Ok(()));
    }
    // The compaction kernel prints no lumpy counters.
    let (_, _, trace) = run("compaction");
    assert_eq!(isolations(&trace)[4], 0);
}

#[test]
fn lowlumpy_abandons_blocks_that_lumpy_goes_on_with() {
    // Per block a failure at most in 2.6.37; 2.6.36 counts each page it could not take.
    let (_, _, lumpy) = run("lumpy");
    let (_, _, low) = run("lowlumpy");
    let [_, _, _, failed_low, events_low, _] = isolations(&low);
    assert!(failed_low > 0);
    for line in low.lines().filter(|l| l.contains("contig_failed=")) {
        let fields = line.rsplit_once(": ").unwrap().1;
        let tails = field(fields, "nr_taken") - field(fields, "contig_taken");
        assert!(field(fields, "contig_failed") <= tails, "{line}");
    }
    assert!(events_low > 0 && isolations(&lumpy)[4] > 0);
}

#[test]
fn a_lumpy_run_is_deterministic() {
    for v in ["lumpy", "lowlumpy"] {
        let (_, a, ta) = run(v);
        let (_, b, tb) = run(v);
        for (x, y) in [
            (&a.vmstat_after, &b.vmstat_after),
            (&a.vmstat_samples, &b.vmstat_samples),
            (&a.tasks_json, &b.tasks_json),
            (&a.result_json, &b.result_json),
            (&a.buddyinfo, &b.buddyinfo),
            (&ta, &tb),
        ] {
            assert_eq!(x, y, "{v}");
        }
    }
}

/// highalloc with its dd readers replaced by writers of 256 MiB files, new files until the
/// run stops.
fn writers() -> String {
    let text = HIGHALLOC.replace(
        "kind = \"dd\"\n",
        "kind = \"dd-write\"\nfile_mb = 256\njobs = 0\n",
    );
    assert_ne!(text, HIGHALLOC);
    text
}

#[test]
fn lumpy_naps_before_its_sync_pass_where_the_kernel_had_congestion_waits() {
    // 2.6.36 calls congestion_wait(BLK_RW_ASYNC, HZ/10) before each synchronous pass; the
    // run's direct reclaimers make one such nap a pass at least (their other HZ/10 naps,
    // after a priority pass that fell short, come on top).
    let sets = [
        "variant.direct_reclaim_writes_fs=true",
        "variant.reclaim_wait=congestion_wait",
    ];
    let (k, _, trace) = run_text(&writers(), "lumpy", &sets);
    let naps = trace
        .lines()
        .filter(|l| !l.trim_start().starts_with("kswapd"))
        .filter(|l| l.contains("writeback_congestion_wait: usec_timeout=100000"))
        .count() as u64;
    let [passes, _] = k.stats.lumpy_sync;
    assert!(
        passes > 0 && naps >= passes,
        "{naps} naps, {passes} sync passes"
    );
    // 5.16+'s reclaim_throttle has no congestion to wait for: no nap.
    let (k, _, trace) = run_text(&writers(), "lumpy", &sets[..1]);
    assert!(k.stats.lumpy_sync[0] > 0);
    assert!(!trace.contains("writeback_congestion_wait"));
}

#[test]
fn direct_reclaim_waits_on_writeback_and_shrinks_again() {
    // The dd readers of highalloc replaced by writers, whose dirty page cache direct
    // reclaim writes itself (2.6.36): lumpy batches keep folios under writeback, and
    // should_reclaim_stall() sends them round again once written.
    let text = writers();
    let writes = ["variant.direct_reclaim_writes_fs=true"];
    for v in ["lumpy", "lowlumpy"] {
        let (k, out, trace) = run_text(&text, v, &writes);
        let [passes, reclaimed] = k.stats.lumpy_sync;
        assert!(
            passes > 0 && reclaimed > 0,
            "{v}: {passes} passes, {reclaimed} reclaimed"
        );
        assert!(reclaimed <= out.delta(VmEvent::PgstealDirect));
        let [_, _, _, _, lumpy_events, contig_dirty] = isolations(&trace);
        assert!(lumpy_events > 0 && contig_dirty > 0, "{v}");
        assert_eq!(k.check_page_places(&[]), Ok(()));
        assert_eq!(k.check_conservation(0), Ok(()));
    }
    let (k, _, _) = run_text(&text, "compaction", &writes);
    assert_eq!(k.stats.lumpy_sync, [0, 0]);
}
