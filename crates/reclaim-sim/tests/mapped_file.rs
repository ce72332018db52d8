//! mmtests' mapped-file-stream, simulated (`scenarios/sim/mapped-file-stream.toml`): every
//! page of the sparse file is one hole fault and no I/O, every page reclaimed was kept once
//! for its fault's young entry, NR_FILE_MAPPED is the present file entries, and the run is
//! deterministic.

use std::ops::ControlFlow;

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const SCENARIO: &str = include_str!("../../../scenarios/sim/mapped-file-stream.toml");

/// The scenario on a machine of `mb` MiB (64 of them DMA32) streaming a file of `file_mb`.
fn run(mb: u64, file_mb: u64) -> (Kernel, RunOutput) {
    let sets = [
        format!("machine.memory_mb_per_node={mb}"),
        "machine.dma32_mb=64".to_string(),
        format!("workload.size_mb={file_mb}"),
    ];
    let s = Scenario::parse(SCENARIO, "mapped-file-stream.toml", &sets).expect("scenario");
    simulate(&s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

fn vmstat(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in vmstat"))
}

#[test]
fn the_stream_faults_each_page_once_and_reclaims_each_on_its_second_trip() {
    let (k, out) = run(128, 512);
    let pages = 512 * 256;
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    assert_eq!(result["metrics"]["pages"], pages);
    assert!(!result["timed_out"].as_bool().unwrap_or(false));
    let ev = |e: VmEvent| k.stats.events.get(e);
    // One hole fault per page: major (nothing cached), no read from any device.
    assert_eq!(ev(VmEvent::Pgfault), pages);
    assert_eq!(ev(VmEvent::Pgmajfault), pages);
    assert_eq!(ev(VmEvent::PgpginKb), 0);
    // A file 4 × memory: most of it reclaimed, all from the file lists.
    let steal = ev(VmEvent::PgstealFile);
    assert!(steal > pages / 2, "reclaimed {steal} of {pages}");
    assert_eq!(ev(VmEvent::PgstealAnon), 0);
    // Each folio reclaimed was first kept for its young entry, so scanned at least twice.
    let scan = ev(VmEvent::PgscanFile);
    assert!(scan >= 2 * steal, "scanned {scan}, reclaimed {steal}");
    assert_eq!(ev(VmEvent::PgscanKswapd) + ev(VmEvent::PgscanDirect), scan);
    // Used once: nothing activated.
    assert_eq!(ev(VmEvent::Pgactivate), 0);
    // Every cached page of the file is mapped (reclaim unmaps what it frees), and
    // NR_FILE_MAPPED is the present file entries.
    let after = &out.vmstat_after;
    assert_eq!(vmstat(after, "nr_mapped"), vmstat(after, "nr_file_pages"));
    assert_eq!(vmstat(&out.vmstat_before, "nr_mapped"), 0);
    let nr_mapped: u64 = k.mem.nodes.iter().map(|n| n.nr_file_mapped).sum();
    assert_eq!(nr_mapped, k.nr_file_mapped_walk());
    assert_eq!(nr_mapped, vmstat(after, "nr_mapped"));
    k.check_page_places(&[]).unwrap();
}

#[test]
fn runs_are_deterministic() {
    let (_, a) = run(96, 384);
    let (_, b) = run(96, 384);
    assert_eq!(a.vmstat_after, b.vmstat_after);
    assert_eq!(a.result_json, b.result_json);
    assert_eq!(a.vmstat_samples, b.vmstat_samples);
}
