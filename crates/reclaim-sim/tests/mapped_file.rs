//! mmtests' mapped-file-stream, simulated (`scenarios/sim/mapped-file-stream.toml`): every
//! page of the sparse file is one hole fault and no I/O, every page reclaimed was kept once
//! for its fault's young entry, NR_FILE_MAPPED is the present file entries, and the run is
//! deterministic. With `write = true` (vmscan-file-mmap-write, seed 001's mmap-strm) every
//! page is dirtied once by its fault and written back before it is reclaimed.

use std::ops::ControlFlow;

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vma::{pte_kind, PteKind};
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const SCENARIO: &str = include_str!("../../../scenarios/sim/mapped-file-stream.toml");

/// The scenario on a machine of `mb` MiB (64 of them DMA32) streaming a file of `file_mb`.
fn run(mb: u64, file_mb: u64) -> (Kernel, RunOutput) {
    run_with(mb, file_mb, &[])
}

fn run_with(mb: u64, file_mb: u64, extra: &[&str]) -> (Kernel, RunOutput) {
    let mut sets = vec![
        format!("machine.memory_mb_per_node={mb}"),
        "machine.dma32_mb=64".to_string(),
        format!("workload.size_mb={file_mb}"),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let s = Scenario::parse(SCENARIO, "mapped-file-stream.toml", &sets).expect("scenario");
    simulate(&s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

fn vmstat(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in vmstat"))
}

#[test]
fn the_stream_faults_each_page_once_and_before_6_3_reclaims_each_on_its_second_trip() {
    // Before 6.3 (seed 003's 2.6.36) reclaim counts the MADV_RANDOM mapping's young bits.
    let (k, out) = run_with(128, 512, &["variant.vma_has_recency=false"]);
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

#[test]
fn since_6_3_a_madv_random_mappings_accessed_bits_are_ignored_and_its_pages_go_on_their_first_trip()
{
    // 6.3's vma_has_recency(): folio_referenced() skips the VM_RAND_READ VMA (its young bit
    // stays set), so a used-once mapped page is reclaimed the first time reclaim meets it.
    let (k, out) = run(128, 512);
    let pages = 512 * 256;
    let ev = |e: VmEvent| k.stats.events.get(e);
    assert_eq!(ev(VmEvent::Pgmajfault), pages);
    let (steal, scan) = (ev(VmEvent::PgstealFile), ev(VmEvent::PgscanFile));
    assert!(steal > pages / 2, "reclaimed {steal} of {pages}");
    assert!(
        scan < steal + steal / 10,
        "scanned {scan}, reclaimed {steal}"
    );
    assert_eq!(ev(VmEvent::Pgactivate), 0);
    // The check left every mapped page's young bit set.
    let after = &out.vmstat_after;
    let vma =
        k.mm.vmas
            .iter()
            .position(|v| v.nr_pages == pages as u32)
            .unwrap();
    let v = &k.mm.vmas[vma];
    let young = (v.start..v.start + v.nr_pages)
        .filter(|&i| {
            matches!(
                pte_kind(k.mm.ptes[i as usize]),
                PteKind::Present { young: true, .. }
            )
        })
        .count() as u64;
    assert_eq!(young, vmstat(after, "nr_mapped"));
}

#[test]
fn writing_through_the_mapping_dirties_each_page_once_and_writes_it_back_before_freeing_it() {
    let (k, out) = run_with(128, 512, &["workload.write=true"]);
    let pages = 512 * 256;
    let result: serde_json::Value = serde_json::from_str(&out.result_json).unwrap();
    assert_eq!(result["metrics"]["pages"], pages);
    let ev = |e: VmEvent| k.stats.events.get(e);
    // One hole fault per page, which also dirties it (do_shared_fault); no read.
    assert_eq!(ev(VmEvent::Pgmajfault), pages);
    assert_eq!(ev(VmEvent::Pgfault), pages);
    assert_eq!(ev(VmEvent::PgpginKb), 0);
    let after = &out.vmstat_after;
    assert_eq!(vmstat(after, "nr_dirtied"), pages);
    // Dirtied = written + still dirty + under writeback, and what was written went out.
    let written = vmstat(after, "nr_written");
    assert_eq!(
        written + vmstat(after, "nr_dirty") + vmstat(after, "nr_writeback"),
        pages
    );
    assert!(written > pages / 2, "wrote {written} of {pages}");
    assert!(ev(VmEvent::PgpgoutKb) >= written * 4);
    k.check_writeback().unwrap();
    k.check_conservation(0).unwrap();
    // A file 4 × memory: most of it reclaimed, each folio only once written.
    let steal = ev(VmEvent::PgstealFile);
    assert!(steal > pages / 2, "reclaimed {steal} of {pages}");
    assert!(steal <= written, "reclaimed {steal}, written {written}");
    // The flushers, not reclaim, wrote most of it (6.x: kswapd writes only for a
    // PGDAT_DIRTY node, direct reclaim never).
    assert!(vmstat(after, "nr_vmscan_write") < written / 10);
}

#[test]
fn a_writing_stream_is_deterministic() {
    let a = run_with(128, 256, &["workload.write=true"]).1;
    let b = run_with(128, 256, &["workload.write=true"]).1;
    assert_eq!(a.vmstat_after, b.vmstat_after);
    assert_eq!(a.result_json, b.result_json);
}
