//! Compaction in a whole run (scenarios/sim/highalloc.toml): huge-page allocations under a
//! load of anon and page cache compact, directly and in kcompactd; the trace's compaction
//! events agree with vmstat; every page ends in one place; the same scenario and seed give
//! the same bytes. (The scanners, deferral and single allocations on hand-built zones are
//! mm::compaction's unit tests.)

use std::ops::ControlFlow;

mod common;
use common::{field, Shared};

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const HIGHALLOC: &str = include_str!("../../../scenarios/sim/highalloc.toml");

/// The highalloc scenario, traced, with `sets`; the kernel at the end, the output and the
/// trace.
fn run(sets: &[&str]) -> (Kernel, RunOutput, String) {
    let mut all = vec!["run.trace=true".to_string()];
    all.extend(sets.iter().map(|s| s.to_string()));
    let s = Scenario::parse(HIGHALLOC, "scenarios/sim/highalloc.toml", &all).expect("scenario");
    let buf = Shared::default();
    let (k, out) = simulate(&s, Some(Box::new(buf.clone())), &mut |_| {
        ControlFlow::Continue(())
    })
    .expect("a run to its end");
    let trace = String::from_utf8(buf.bytes()).unwrap();
    (k, out, trace)
}

#[test]
fn huge_page_allocations_under_load_compact_and_the_trace_agrees_with_vmstat() {
    let (k, out, trace) = run(&[]);
    let d = |e| out.delta(e);
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    let m = &result["metrics"];
    assert!(m["nr_hugepages"].as_u64().unwrap() > 0, "{m}");
    assert!(d(VmEvent::CompactStall) > 0);
    assert!(d(VmEvent::CompactSuccess) > 0);
    assert!(d(VmEvent::PgmigrateSuccess) > 0);
    assert!(d(VmEvent::CompactDaemonWake) > 0, "kswapd woke kcompactd");
    assert_eq!(
        d(VmEvent::CompactStall),
        d(VmEvent::CompactSuccess) + d(VmEvent::CompactFail)
    );
    assert!(out.vmstat_after.contains("\ncompact_stall "));
    assert!(out.tasks_json.contains("\"kcompactd0\""));
    // Each isolation and migration is traced as vmstat counts it (a compaction still
    // running at the end has scanned pages not yet counted).
    let (mut isolated, mut migrated, mut mscan, mut fscan) = (0, 0, 0, 0);
    let (mut begins, mut ends) = (0, 0);
    for line in trace.lines() {
        let (_, rest) = line.split_once(": ").expect("context");
        let (event, fields) = rest.split_once(": ").expect("event");
        match event {
            "mm_compaction_isolate_migratepages" => {
                isolated += field(fields, "nr_taken");
                mscan += field(fields, "nr_scanned");
            }
            "mm_compaction_isolate_freepages" => {
                isolated += field(fields, "nr_taken");
                fscan += field(fields, "nr_scanned");
            }
            "mm_compaction_migratepages" => migrated += field(fields, "nr_migrated"),
            "mm_compaction_begin" => begins += 1,
            "mm_compaction_end" => ends += 1,
            _ => {}
        }
    }
    assert_eq!(isolated, d(VmEvent::CompactIsolated));
    assert_eq!(migrated, d(VmEvent::PgmigrateSuccess));
    assert!(mscan >= d(VmEvent::CompactMigrateScanned) && mscan > 0);
    assert!(fscan >= d(VmEvent::CompactFreeScanned) && fscan > 0);
    assert!(
        begins > 0 && ends <= begins && begins - ends <= 2,
        "{begins} {ends}"
    );
    // Every page is in one place at the end (debug builds check the counts during the run).
    assert_eq!(k.check_page_places(&[]), Ok(()));
    assert_eq!(k.check_lists(), Ok(()));
    assert_eq!(k.check_conservation(0), Ok(()));
}

#[test]
fn a_compacting_run_is_deterministic() {
    let sets = ["run.duration_s=2.0"];
    let (_, a, ta) = run(&sets);
    let (_, b, tb) = run(&sets);
    assert!(a.delta(VmEvent::PgmigrateSuccess) > 0);
    for (x, y) in [
        (&a.vmstat_before, &b.vmstat_before),
        (&a.vmstat_after, &b.vmstat_after),
        (&a.vmstat_samples, &b.vmstat_samples),
        (&a.iostat_samples, &b.iostat_samples),
        (&a.cpu_samples, &b.cpu_samples),
        (&a.psi_samples, &b.psi_samples),
        (&a.tasks_json, &b.tasks_json),
        (&a.result_json, &b.result_json),
        (&a.zoneinfo, &b.zoneinfo),
        (&a.buddyinfo, &b.buddyinfo),
        (&a.pagetypeinfo, &b.pagetypeinfo),
        (&ta, &tb),
    ] {
        assert_eq!(x, y);
    }
}
