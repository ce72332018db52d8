//! Dirty pages and writeback (seed 001): the dirty limits against the kernel's formula and
//! this machine's /proc/vmstat, the invariants of a writing run (debug builds check them
//! during every run too), determinism, and one test per seed-001 switch showing it changes
//! what the seed says it changes. They start from scenarios/sim/dd-write.toml.

use std::ops::ControlFlow;

mod common;
use common::Shared;

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::page_writeback::domain_dirty_limits;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const DD_WRITE: &str = include_str!("../../../scenarios/sim/dd-write.toml");

/// The dd-write scenario for `duration` s, with `sets`.
fn scenario(duration: f64, sets: &[&str]) -> Scenario {
    let mut all = vec![format!("run.duration_s={duration:?}")];
    all.extend(sets.iter().map(|s| s.to_string()));
    Scenario::parse(DD_WRITE, "scenarios/sim/dd-write.toml", &all).expect("scenario")
}

/// The flushers lag: a 512 MiB machine that starts background writeback only at 85 % of
/// dirtyable memory (limit 90 %), so reclaim meets dirty folios at the inactive tail.
const LAGGING: [&str; 3] = [
    "machine.memory_mb_per_node=512",
    "sysctl.dirty_ratio=90",
    "sysctl.dirty_background_ratio=85",
];

fn run(s: &Scenario) -> (Kernel, RunOutput) {
    simulate(s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

fn stat(out: &RunOutput, name: &str) -> u64 {
    out.after.stat(name)
}

#[test]
fn the_dirty_limits_are_the_kernels_formula() {
    // 100 000 dirtyable pages, the defaults: ratio 20 → 20 * 4096 / 100 = 819 per page of
    // 4096, so 819 * 100000 / 4096 = 19995 (not 20000: the kernel's rounding);
    // background 10 → 409 * 100000 / 4096 = 9985.
    assert_eq!(domain_dirty_limits(100_000, 20, 0, 10, 0), (9985, 19995));
    // dirty_bytes overrides the ratio (rounded up to pages); a background threshold not
    // below the limit is halved.
    assert_eq!(
        domain_dirty_limits(100_000, 20, 10_000_000, 10, 0),
        (1221, 2442)
    );
    assert_eq!(domain_dirty_limits(100_000, 20, 0, 30, 0), (9997, 19995));
    assert_eq!(
        domain_dirty_limits(100_000, 20, 0, 0, 4096 * 50),
        (50, 19995)
    );
    // The simulated kernel at boot: dirtyable = free − totalreserve + file LRU + 1.
    let s = scenario(0.01, &[]);
    let k = Kernel::new(&s.machine, &s.effective_sysctl(), &s.costs, &s.variant, 1);
    let avail = k.global_dirtyable_memory();
    let reserve = reclaim_sim::mm::hugetlb::totalreserve_pages(&k);
    assert_eq!(avail, k.global_nr_free_pages() - reserve + 1);
    let (bg, thresh) = k.global_dirty_limits();
    assert_eq!(thresh, 40 * 4096 / 100 * avail / 4096);
    assert_eq!(bg, 10 * 4096 / 100 * avail / 4096);
    assert_eq!(k.vmstat().stat("nr_dirty_threshold"), thresh);
    assert_eq!(k.vmstat().stat("nr_dirty_background_threshold"), bg);
}

/// A `name value` line of a /proc file.
fn proc_value(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// `totalreserve_pages` from /proc/zoneinfo: per zone, its largest lowmem reserve (the
/// `protection:` line) plus its high watermark, at most its managed pages.
fn totalreserve_from_zoneinfo(text: &str) -> Option<u64> {
    let mut total = 0;
    for zone in text.split("\nNode ").skip(1) {
        let field = |name: &str| {
            zone.lines()
                .find_map(|l| l.trim().strip_prefix(name)?.trim().parse::<u64>().ok())
        };
        let (high, managed) = (field("high")?, field("managed")?);
        let protection = zone
            .lines()
            .find_map(|l| l.trim().strip_prefix("protection: ("))?
            .trim_end_matches(')')
            .split(", ")
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .max()?;
        total += (protection + high).min(managed);
    }
    Some(total)
}

#[test]
fn the_dirty_limits_match_this_machines_vmstat() {
    let (Ok(vmstat), Ok(zoneinfo)) = (
        std::fs::read_to_string("/proc/vmstat"),
        std::fs::read_to_string("/proc/zoneinfo"),
    ) else {
        eprintln!("no /proc/vmstat or /proc/zoneinfo: skipped");
        return;
    };
    let sysctl = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (Some(free), Some(active), Some(inactive), Some(thresh), Some(bg)) = (
        proc_value(&vmstat, "nr_free_pages"),
        proc_value(&vmstat, "nr_active_file"),
        proc_value(&vmstat, "nr_inactive_file"),
        proc_value(&vmstat, "nr_dirty_threshold"),
        proc_value(&vmstat, "nr_dirty_background_threshold"),
    ) else {
        eprintln!("/proc/vmstat lacks the dirty thresholds: skipped");
        return;
    };
    let (Some(reserve), Some(ratio), Some(bytes), Some(bg_ratio), Some(bg_bytes)) = (
        totalreserve_from_zoneinfo(&zoneinfo),
        sysctl("dirty_ratio"),
        sysctl("dirty_bytes"),
        sysctl("dirty_background_ratio"),
        sysctl("dirty_background_bytes"),
    ) else {
        eprintln!("no dirty sysctls or zoneinfo watermarks: skipped");
        return;
    };
    // The same inputs: highmem is not dirtyable on x86-64 (there is none).
    let avail = free - free.min(reserve) + active + inactive + 1;
    let (model_bg, model_thresh) =
        domain_dirty_limits(avail, ratio as u32, bytes, bg_ratio as u32, bg_bytes);
    eprintln!(
        "this machine: avail {avail} (free {free}, reserve {reserve}, file {}), \
         thresh {thresh} bg {bg}; model thresh {model_thresh} bg {model_bg}",
        active + inactive
    );
    // The counters move between the reads: within 1 %.
    let close = |a: u64, b: u64| a.abs_diff(b) * 100 <= b.max(100);
    assert!(
        close(model_thresh, thresh),
        "nr_dirty_threshold: model {model_thresh}, this machine {thresh} (avail {avail})"
    );
    assert!(
        close(model_bg, bg),
        "nr_dirty_background_threshold: model {model_bg}, this machine {bg}"
    );
}

#[test]
fn a_writing_run_keeps_its_invariants_and_stays_under_the_limit() {
    // Debug builds check, every 4096 events, that pages are conserved and that bytes
    // written by flushers and reclaim plus bytes still dirty are the bytes dirtied, and
    // that every writeback started has completed or is in flight.
    let s = scenario(6.0, &LAGGING);
    let (k, out) = run(&s);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    k.check_writeback().unwrap();
    assert!(stat(&out, "nr_dirtied") > 100_000, "the run must write");
    assert!(stat(&out, "nr_written") > 10_000, "the flushers must write");
    assert!(out.delta(VmEvent::PgscanKswapd) > 0, "the run must reclaim");
    let (_, thresh) = k.global_dirty_limits();
    let dirty = stat(&out, "nr_dirty") + stat(&out, "nr_writeback");
    // The limit moves with free memory; a dirtier may overshoot by what it dirtied since
    // its last check.
    assert!(
        dirty <= thresh + thresh / 20,
        "dirty {dirty} > limit {thresh}"
    );
    // Written pages went out as writes (pgpgout counts KiB).
    assert!(out.delta(VmEvent::PgpgoutKb) >= stat(&out, "nr_written") * 4);
}

#[test]
fn a_writing_run_is_deterministic() {
    let s = scenario(2.0, &LAGGING);
    let (_, a) = run(&s);
    let (_, b) = run(&s);
    assert_eq!(a.vmstat_after, b.vmstat_after);
    assert_eq!(a.vmstat_samples, b.vmstat_samples);
    assert_eq!(a.iostat_samples, b.iostat_samples);
    assert_eq!(a.result_json, b.result_json);
}

/// `nr_vmscan_write`, `nr_vmscan_immediate_reclaim`, `pgrotated`, the throughput and
/// direct reclaim's `->writepage` calls (`model.vmscan_write_file_direct`) of a lagging run
/// with `sets`.
fn outcome(sets: &[&str]) -> (u64, u64, u64, f64, u64) {
    let mut all = LAGGING.to_vec();
    all.extend_from_slice(sets);
    let (_, out) = run(&scenario(10.0, &all));
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    (
        stat(&out, "nr_vmscan_write"),
        stat(&out, "nr_vmscan_immediate_reclaim"),
        out.delta(VmEvent::Pgrotated),
        result["metrics"]["throughput_kB_s"].as_f64().unwrap(),
        result["model"]["vmscan_write_file_direct"]
            .as_u64()
            .unwrap_or(0),
    )
}

#[test]
fn direct_reclaim_writes_fs_writes_from_direct_reclaim() {
    // Patch 1: with it (the default) direct reclaim never writes page-cache folios (kswapd
    // may, under its PGDAT_DIRTY rule); without it direct reclaim writes single scattered
    // pages, which on a disk cost a seek each.
    let (.., after) = outcome(&[]);
    let (.., before) = outcome(&["variant.direct_reclaim_writes_fs=true"]);
    assert_eq!(after, 0, "no direct reclaim writes with the patch");
    assert!(before > 1000, "direct reclaim writes without it: {before}");
    // Whether the writers are faster with it is seed 001's target, judged by `reproduce
    // seed001` (docs/fidelity/seed001.md), not a property of the switch: on this lagging
    // 512 MiB run they are slower with it since the flushers write whole delayed extents
    // (156 against 175 MB/s).
}

#[test]
fn kswapd_writes_fs_lets_kswapd_write_when_the_rule_allows() {
    let (dirty_congested, ..) = outcome(&[]);
    let (always, ..) = outcome(&["variant.kswapd_writes_fs=always"]);
    let (in_trouble, ..) = outcome(&["variant.kswapd_writes_fs=when_in_trouble"]);
    // Today's rule: only while the node is flagged PGDAT_DIRTY, fewer than always.
    assert!(dirty_congested < always, "{dirty_congested} >= {always}");
    assert!(
        always > 1000,
        "kswapd writes every dirty folio it may: {always}"
    );
    // Patch 5: only below DEF_PRIORITY − 2; no more than `always`.
    assert!(in_trouble <= always, "{in_trouble} > {always}");
}

#[test]
fn dirty_tail_pg_reclaim_marks_dirty_folios_for_immediate_reclaim() {
    // Patch 7: dirty folios reclaim leaves get PG_reclaim (counted) and are rotated to the
    // inactive tail when written; without it none is counted, and only the folios kswapd
    // writes itself (`pageout()` sets PG_reclaim) are rotated.
    let (_, immediate, rotated, ..) = outcome(&[]);
    let (_, immediate_off, rotated_off, ..) = outcome(&["variant.dirty_tail_pg_reclaim=false"]);
    assert!(immediate > 1000 && rotated > 1000, "{immediate} {rotated}");
    assert_eq!(immediate_off, 0);
    assert!(rotated > rotated_off, "{rotated} <= {rotated_off}");
}

#[test]
fn reclaims_writes_fill_the_trace_reports_writeback_rows() {
    let mut sets = LAGGING.to_vec();
    sets.extend(["variant.direct_reclaim_writes_fs=true", "run.trace=true"]);
    let s = scenario(10.0, &sets);
    let buf = Shared::default();
    let (_, out) = simulate(&s, Some(Box::new(buf.clone())), &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    let trace = buf.bytes();
    let text = String::from_utf8_lossy(&trace);
    let writes = text.matches("mm_vmscan_write_folio:").count() as u64;
    assert!(text.contains("flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"));
    // Every reclaim write in the window is one event.
    let window = stat(&out, "nr_vmscan_write") - out.before.stat("nr_vmscan_write");
    assert!(window > 0, "no reclaim writes in the window");
    assert_eq!(writes, window);
    // `reclaimlab trace report`'s rows: "Direct reclaim write file async I/O" and the
    // kswapd one, from the same analysis.
    let a = reclaim_trace::analysis::analyze_bytes(&trace, Default::default(), 1);
    let summary = reclaim_trace::report::Summary::of(&a);
    assert_eq!(
        summary.direct.write_file_async + summary.kswapd.write_file_async,
        writes
    );
    assert!(summary.direct.write_file_async > 0);
}

#[test]
fn a_device_whose_pages_are_written_sleeps_while_another_keeps_the_machine_dirty() {
    // Three writers on two disks: device 0 has two, device 1 one. Each flusher works only
    // while its own device has dirty pages (it would otherwise spin on the global count).
    let devices = "machine.devices=[{ name = \"sd\", count = 2, bandwidth_mb_s = 150, \
                   latency_us = 100, max_request_kb = 512, seek_us = 8000, rotational = true }]";
    let s = scenario(4.0, &[devices, "workload.tasks=3"]);
    let (k, out) = run(&s);
    k.check_writeback().unwrap();
    assert!(stat(&out, "nr_written") > 10_000);
    let flushers: Vec<_> = out
        .tasks
        .tasks
        .iter()
        .filter(|t| t.kind == "flusher")
        .collect();
    assert_eq!(flushers.len(), 2);
    assert!(
        flushers.iter().all(|t| t.cpu_pct < 20.0),
        "a flusher spun: {flushers:?}"
    );
}

/// The highest `(nr_dirty + nr_writeback) / nr_dirty_threshold` of a run's samples.
fn peak_dirty_share(samples: &str) -> f64 {
    let mut peak = 0.0f64;
    for sample in samples.split("time: ").skip(1) {
        let v = |name: &str| proc_value(sample, name).unwrap_or(0) as f64;
        let thresh = v("nr_dirty_threshold");
        if thresh > 0.0 {
            peak = peak.max((v("nr_dirty") + v("nr_writeback")) / thresh);
        }
    }
    peak
}

#[test]
fn dirty_throttle_threshold_lets_dirtiers_run_to_the_limit() {
    // 3.2+ rate control pauses dirtiers above the freerun ceiling and holds them near the
    // setpoint, below the limit; the seed era's loop lets them run until the limit itself.
    let samples = |throttle: &str| {
        let sets = [
            "run.sample_interval_s=0.25".to_string(),
            format!("variant.dirty_throttle=\"{throttle}\""),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (_, out) = run(&scenario(8.0, &sets));
        peak_dirty_share(&out.vmstat_samples)
    };
    let (ratelimit, threshold) = (samples("ratelimit"), samples("threshold"));
    assert!(
        ratelimit < 0.9,
        "rate control: peak {ratelimit:.3} of the limit"
    );
    assert!(
        threshold > 0.97,
        "threshold loop: peak {threshold:.3} of the limit"
    );
}

/// A lagging run of the seed's era (3.1: kswapd and direct reclaim both call `pageout()`)
/// on filesystem `fs`: (`nr_vmscan_write` since boot, page-cache pages reclaim wrote, the
/// model-internal count of direct reclaim's `->writepage` calls, the window's
/// `vmscan_write_file_direct` of result.json).
fn seed_era_on(fs: &str) -> (u64, u64, u64, u64) {
    let mut sets = LAGGING.to_vec();
    let fs = format!("machine.fs=\"{fs}\"");
    sets.extend([
        "variant.direct_reclaim_writes_fs=true",
        "variant.kswapd_writes_fs=always",
        "variant.dirty_tail_pg_reclaim=false",
        &fs,
    ]);
    let (k, out) = run(&scenario(10.0, &sets));
    k.check_writeback().unwrap();
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    let window = result["model"]["vmscan_write_file_direct"]
        .as_u64()
        .unwrap_or(0);
    let file_calls: u64 = k.wb.nodes.iter().map(|n| n.nr_vmscan_write_file).sum();
    assert_eq!(stat(&out, "nr_vmscan_write"), file_calls, "no swap here");
    (
        file_calls,
        k.wb.written_by_reclaim / reclaim_sim::mm::page_writeback::PAGE_SIZE,
        k.wb.vmscan_write_file_direct,
        window,
    )
}

#[test]
fn fs_xfs_writes_for_kswapd_only_and_redirties_for_direct_reclaim() {
    // 3.1's xfs_vm_writepage(): PF_MEMALLOC without PF_KSWAPD is refused. Every call still
    // counts in nr_vmscan_write (3.1's pageout()), so the pages written are kswapd's calls.
    let (generic_calls, generic_written, generic_direct, _) = seed_era_on("generic");
    assert_eq!(
        generic_written, generic_calls,
        "a generic ->writepage writes all"
    );
    assert!(
        generic_direct > 1000,
        "direct reclaim calls pageout(): {generic_direct}"
    );
    let (calls, written, direct, window) = seed_era_on("xfs");
    assert!(
        direct > 1000 && window > 0 && window <= direct,
        "{direct} {window}"
    );
    assert!(
        calls > direct,
        "kswapd calls ->writepage too: {calls} {direct}"
    );
    assert_eq!(
        written,
        calls - direct,
        "xfs writes kswapd's folios, not direct reclaim's"
    );
}

#[test]
fn fs_ext4_and_btrfs_write_nothing_for_reclaim() {
    // ext4_writepage() redirties delalloc folios (every buffered write here is to a new
    // file), btrfs_writepage() everything under PF_MEMALLOC: nothing is written, though
    // 3.1's pageout() counts every call.
    for fs in ["ext4", "btrfs"] {
        let (calls, written, direct, _) = seed_era_on(fs);
        assert!(calls > 1000 && direct > 0, "{fs}: {calls} {direct}");
        assert_eq!(written, 0, "{fs} wrote {written} pages from reclaim");
    }
}

#[test]
fn fs_without_writepage_on_6x_activates_and_counts_nothing() {
    // 6.6: none of xfs, ext4, btrfs has a ->writepage; pageout() returns PAGE_ACTIVATE.
    // The 6.x rule with direct reclaim allowed to write (so that pageout() is reached).
    let sets = |fs: &str| {
        let mut v: Vec<String> = LAGGING.iter().map(|s| s.to_string()).collect();
        v.push("variant.direct_reclaim_writes_fs=true".into());
        v.push(format!("machine.fs=\"{fs}\""));
        v
    };
    let calls = |fs: &str| {
        let owned = sets(fs);
        let refs: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
        let (k, out) = run(&scenario(10.0, &refs));
        (stat(&out, "nr_vmscan_write"), k.wb.written_by_reclaim)
    };
    let (generic, _) = calls("generic");
    assert!(
        generic > 1000,
        "generic writes from direct reclaim: {generic}"
    );
    assert_eq!(calls("xfs"), (0, 0));
}

#[test]
fn fs_rejects_an_unknown_filesystem_naming_the_key() {
    let err = Scenario::parse(
        DD_WRITE,
        "scenarios/sim/dd-write.toml",
        &["machine.fs=\"zfs\"".to_string()],
    )
    .unwrap_err()
    .to_string();
    for want in ["scenarios/sim/dd-write.toml", "fs", "zfs", "xfs"] {
        assert!(err.contains(want), "{want:?} not in {err}");
    }
}

#[test]
fn the_trace_reports_direct_reclaim_writes_are_the_models_direct_count() {
    // What a kernel developer reads (trace-vmscan-postprocess's "Direct reclaim write file"
    // rows, from mm_vmscan_write_folio in direct reclaim) against the model's own count,
    // on 3.1's xfs, where direct reclaim's calls are redirtied but traced.
    let mut sets = LAGGING.to_vec();
    sets.extend([
        "variant.direct_reclaim_writes_fs=true",
        "variant.kswapd_writes_fs=always",
        "machine.fs=\"xfs\"",
        "run.trace=true",
    ]);
    let s = scenario(10.0, &sets);
    let buf = Shared::default();
    let (_, out) = simulate(&s, Some(Box::new(buf.clone())), &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    let model = result["model"]["vmscan_write_file_direct"]
        .as_u64()
        .unwrap();
    let trace = buf.bytes();
    let a = reclaim_trace::analysis::analyze_bytes(&trace, Default::default(), 1);
    let summary = reclaim_trace::report::Summary::of(&a);
    assert!(model > 0);
    assert_eq!(
        summary.direct.write_file_async + summary.direct.write_file_sync,
        model
    );
}
