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
use reclaim_sim::mm::zone::WMARK_HIGH;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const HIGHALLOC: &str = include_str!("../../../scenarios/sim/highalloc.toml");
const SMALL: &str = include_str!("../../../scenarios/small.toml");

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
        (&a.buddyinfo_before, &b.buddyinfo_before),
        (&a.buddyinfo, &b.buddyinfo),
        (&a.pagetypeinfo, &b.pagetypeinfo),
        (&ta, &tb),
    ] {
        assert_eq!(x, y);
    }
}

/// Free pages in /proc/buddyinfo text: each order's count of blocks times its size.
fn buddyinfo_free_pages(text: &str) -> u64 {
    text.lines()
        .flat_map(|l| l.split_whitespace().skip(4).enumerate())
        .map(|(order, n)| n.parse::<u64>().expect("a count") << order)
        .sum()
}

/// `buddyinfo.before` is the free memory the measured window starts with: all of the
/// machine's when the window starts at boot, the little kswapd wakes for when it starts at
/// kswapd's first wake; `buddyinfo` is the window's end.
#[test]
fn the_window_starts_with_the_free_blocks_of_its_start() {
    let (_, at_boot, _) = run(&["run.duration_s=1.0"]);
    let (k, at_wake, _) = run(&["run.duration_s=1.0", "run.start_at=\"kswapd_wake\""]);
    let boot = buddyinfo_free_pages(&at_boot.buddyinfo_before);
    let wake = buddyinfo_free_pages(&at_wake.buddyinfo_before);
    let high: u64 = k.mem.zones.iter().map(|z| z.watermark[WMARK_HIGH]).sum();
    assert!(
        boot > k.managed_pages() / 2,
        "{boot} of {}",
        k.managed_pages()
    );
    assert!(
        wake < 2 * high,
        "{wake} free at kswapd's wake, high watermarks {high}"
    );
    assert_ne!(at_boot.buddyinfo_before, at_boot.buddyinfo);
    assert!(at_boot.buddyinfo_before.starts_with("Node 0, zone "));
}

/// A machine that starts with the kernel's own pageblocks (`[machine] pageblocks`, as a
/// host at rest has them): their kernel pages stay for the whole run (a movable
/// allocation's fallback may claim such a pageblock once page cache fills its free part, as
/// the kernel's `steal_suitable_fallback` does), and every page ends in one place.
#[test]
fn the_kernels_pageblocks_stay_the_kernels_through_a_compacting_run() {
    let blocks = "machine.pageblocks=[{zone = \"Normal\", unmovable = 40, reclaimable = 60, \
                  free_unmovable = [300, 120, 40, 10, 2], free_reclaimable = [900, 300, 60, 8]}]";
    let (k, out, _) = run(&[blocks]);
    let (_, plain, _) = run(&[]);
    let slab = (0..k.mem.pages.nr_pages())
        .filter(|&p| k.mem.pages.flags(p) & reclaim_sim::mm::page::pg::SLAB != 0)
        .count() as u64;
    let free_placed = 300 + 240 + 160 + 80 + 32 + 900 + 600 + 240 + 64;
    assert_eq!(k.mem.kernel_pages, 100 * 512 - free_placed);
    assert_eq!(
        slab, k.mem.kernel_pages,
        "no kernel page was freed or migrated"
    );
    assert_eq!(k.check_page_places(&[]), Ok(()));
    // The fragmented machine's memory is the plain one's less the kernel's: fewer pages
    // free at the start.
    let free = |o: &reclaim_sim::RunOutput| -> u64 {
        let line = o
            .vmstat_before
            .lines()
            .find(|l| l.starts_with("nr_free_pages "))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(
        free(&plain) - free(&out),
        k.mem.kernel_pages,
        "{} {}",
        free(&plain),
        free(&out)
    );
}

/// A host's movable pageblocks broken up by other memory (`free_movable`, fragments below
/// pageblock order): the pages between the fragments are anonymous memory no task owns,
/// which reclaim without swap leaves and compaction migrates, so that some leave the
/// pageblocks they started in; none is lost, and every page ends in one place.
#[test]
fn the_memory_between_movable_fragments_is_anon_that_compaction_moves() {
    // 60 pageblocks half free (order 8), 30 of them with an order-7 block in the other
    // half: 30 · 128 + 30 · 256 pages between the fragments.
    let blocks =
        "machine.pageblocks=[{zone = \"Normal\", free_movable = [0, 0, 0, 0, 0, 0, 0, 30, 60]}]";
    let (k, out, _) = run(&[blocks]);
    let others: Vec<u32> = (0..k.mem.pages.nr_pages())
        .filter(|&p| {
            let f = k.mem.pages.fields(p);
            f.flags & reclaim_sim::mm::page::pg::ANON != 0
                && f.owner == reclaim_sim::mm::page::NO_OWNER
        })
        .collect();
    assert_eq!(others.len(), 30 * 128 + 30 * 256);
    assert_eq!(k.mem.kernel_pages, 0, "none of them is the kernel's");
    assert_eq!(k.check_page_places(&[]), Ok(()));
    let zone = k
        .mem
        .zones
        .iter()
        .find(|z| z.zone_idx == reclaim_sim::mm::zone::ZONE_NORMAL)
        .unwrap();
    let s = Scenario::parse(HIGHALLOC, "highalloc.toml", &[blocks.to_string()]).unwrap();
    let layout = reclaim_sim::mm::boot_memory::zone_layout(zone, &s.machine.pageblocks[0]);
    let held: Vec<u32> = layout.blocks.iter().map(|&(start, _)| start).collect();
    assert_eq!(held.len(), 60);
    let moved = others
        .iter()
        .filter(|&&p| held.binary_search(&(p & !511)).is_err())
        .count();
    assert!(moved > 0, "compaction migrated none of them");
    assert!(out.delta(VmEvent::PgmigrateSuccess) >= moved as u64);
}

/// With swap and anon reclaim under way, the memory between movable fragments stays on the
/// active anon list while the inactive one is not low (`inactive_is_low()`: the swapped
/// processes' pages are inactive, 6.x's `lru_cache_add_inactive_or_unevictable`), as a
/// host's idle processes' memory does; every page still ends in one place
/// (scenarios/small.toml's machine, two usemem tasks larger than memory).
#[test]
fn with_swap_the_memory_between_fragments_stays_active_while_inactive_anon_is_not_low() {
    let sets = [
        "workload.kind=\"usemem\"",
        "workload.tasks=2",
        "workload.size_mb=1200",
        "swap.kind=\"file\"",
        "swap.size_mb=2048",
        "machine.pageblocks=[{zone = \"Normal\", free_movable = [0, 0, 0, 0, 0, 0, 0, 30, 60]}]",
    ]
    .map(String::from);
    let s = Scenario::parse(SMALL, "scenarios/small.toml", &sets).expect("scenario");
    let (k, out) = simulate(&s, None, &mut |_| ControlFlow::Continue(())).expect("a run");
    let others = (0..k.mem.pages.nr_pages())
        .filter(|&p| {
            let f = k.mem.pages.fields(p);
            f.flags & reclaim_sim::mm::page::pg::ANON != 0
                && f.owner == reclaim_sim::mm::page::NO_OWNER
        })
        .count();
    assert!(out.delta(VmEvent::PswpOut) > 0, "the run swapped");
    assert_eq!(others, 30 * 128 + 30 * 256);
    assert_eq!(out.delta(VmEvent::Pgdeactivate), 0);
    assert_eq!(k.check_page_places(&[]), Ok(()));
}

/// A host's measured shares of fragmented pageblocks: a quarter hold kernel memory, which
/// stays the kernel's for the whole run; half of the rest page cache of files no workload
/// reads, clean on the inactive file list, which reclaim frees (without a shadow: the file
/// has no index) and which counts in NR_FILE_PAGES at the start; every page ends in one
/// place.
#[test]
fn kernel_memory_and_page_cache_between_fragments_in_the_measured_shares() {
    let blocks = "machine.pageblocks=[{zone = \"Normal\", free_movable = [0, 0, 0, 0, 0, 0, 0, 0, 60], fragment_blocks = 400, fragment_blocks_unmovable = 100, fragment_blocks_file = 150}]";
    let s = Scenario::parse(HIGHALLOC, "highalloc.toml", &[blocks.to_string()]).unwrap();
    let k0 = Kernel::new(&s.machine, &s.effective_sysctl(), &s.costs, &s.variant, 1);
    let zone = k0
        .mem
        .zones
        .iter()
        .find(|z| z.zone_idx == reclaim_sim::mm::zone::ZONE_NORMAL)
        .unwrap();
    let layout = reclaim_sim::mm::boot_memory::zone_layout(zone, &s.machine.pageblocks[0]);
    assert_eq!(layout.blocks.len(), 60);
    assert_eq!(layout.unmovable_fragment_blocks.len(), 15);
    assert_eq!(
        layout.file_fragment_blocks.len(),
        22,
        "150 of 300, of the 45 left"
    );
    assert_eq!(k0.mem.kernel_pages, 15 * 256);
    let file_at_start = 22 * 256;
    let nr_file: u64 = k0.mem.nodes.iter().map(|n| n.nr_file_pages).sum();
    assert_eq!(nr_file, file_at_start);
    let other_files = |k: &Kernel| {
        (0..k.mem.pages.nr_pages())
            .filter(|&p| {
                let f = k.mem.pages.fields(p);
                f.owner == reclaim_sim::mm::address_space::OTHER_FILES_MAPPING
                    && f.flags & reclaim_sim::mm::page::pg::LRU != 0
            })
            .count() as u64
    };
    assert_eq!(other_files(&k0), file_at_start);
    let (k, _, _) = run(&[blocks]);
    assert_eq!(
        k.mem.kernel_pages,
        15 * 256,
        "the kernel's stays the kernel's"
    );
    assert!(
        other_files(&k) < file_at_start,
        "reclaim freed some of the other files' page cache"
    );
    assert_eq!(k.check_page_places(&[]), Ok(()));
    assert_eq!(k.check_lists(), Ok(()));
    assert_eq!(k.check_conservation(0), Ok(()));
}
