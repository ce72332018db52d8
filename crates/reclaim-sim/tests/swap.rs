//! Anonymous memory and swap end to end: readahead counters on hand-built fault sequences,
//! the swap invariants after a run, and determinism.

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::page::pg;
use reclaim_sim::mm::swapfile::{NO_PAGE, SWAP_HAS_CACHE};
use reclaim_sim::mm::vma::{pte_kind, PteKind};
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::scenario::Scenario;

mod common;
use common::USEMEM as SCENARIO;

fn run(sets: &[&str]) -> (Kernel, reclaim_sim::RunOutput) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = Scenario::parse(SCENARIO, "swap-test.toml", &sets).unwrap();
    reclaim_sim::run::simulate(&s, None, &mut |_| std::ops::ControlFlow::Continue(())).unwrap()
}

/// Every swap entry in a page table names a slot in use; every present entry maps a folio
/// that names it back; every swap-cache folio is where the index says and holds its slot's
/// cache reference; each slot's page-table count is the number of entries naming it.
fn check_swap(k: &Kernel) {
    let mut refs: Vec<Vec<u32>> = k
        .swap
        .areas
        .iter()
        .map(|si| vec![0u32; si.max as usize])
        .collect();
    for (i, &pte) in k.mm.ptes.iter().enumerate() {
        match pte_kind(pte) {
            PteKind::Swap { area, slot } => {
                let si = &k.swap.areas[area];
                assert!(
                    si.swapped(slot),
                    "entry {i} names free slot {slot} of {area}"
                );
                refs[area][slot as usize] += 1;
            }
            PteKind::Present { pfn, .. } => {
                let f = k.mem.pages.fields(pfn);
                assert_eq!(f.owner, i as u32, "pfn {pfn} does not name its entry");
                assert!(f.flags & pg::MAPPED != 0);
                // Mapped by a write fault while its write to swap was in flight: it keeps
                // its slot, and its copy there is stale.
                if f.flags & pg::SWAPCACHE != 0 {
                    assert!(f.flags & pg::DIRTY != 0, "pfn {pfn}");
                    let (area, slot) = k.folio_swap_entry(pfn);
                    assert_eq!(k.swap.areas[area].cache[slot as usize], pfn);
                }
            }
            PteKind::None => {}
        }
    }
    for (area, si) in k.swap.areas.iter().enumerate() {
        let mut in_use = 1; // the header
        for slot in 1..si.max {
            let map = si.swap_map[slot as usize];
            assert_eq!(
                u32::from(map & !SWAP_HAS_CACHE),
                refs[area][slot as usize],
                "slot {slot} of {area}"
            );
            let p = si.cache[slot as usize];
            assert_eq!(p != NO_PAGE, map & SWAP_HAS_CACHE != 0, "slot {slot}");
            // A shadow is left by an eviction in a slot still in use, in the folio's place:
            // since 5.9 every slot a page table names without a cached folio has one.
            if si.shadow(slot) != 0 {
                assert!(map != 0 && p == NO_PAGE, "slot {slot} has a shadow");
            } else if !k.variant.anon_lru_before_5_9 && map != 0 && p == NO_PAGE {
                panic!("slot {slot} holds an evicted folio's data but no shadow");
            }
            if p != NO_PAGE {
                let f = k.mem.pages.fields(p);
                assert!(f.flags & pg::SWAPCACHE != 0, "slot {slot}");
                assert_eq!(k.folio_swap_entry(p), (area, slot));
                assert!(f.flags & pg::MAPPED != 0 || f.owner == slot, "slot {slot}");
            }
            in_use += u32::from(map != 0);
        }
        assert_eq!(in_use, si.inuse_pages, "area {area}");
    }
}

#[test]
fn vma_readahead_hits_what_it_reads_and_the_invariants_hold() {
    let (k, out) = run(&["variant.swap_readahead=vma"]);
    check_swap(&k);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    let d = |e| out.after.event(e) - out.before.event(e);
    assert!(d(VmEvent::PswpOut) > 10_000, "the run swaps");
    assert!(d(VmEvent::SwapRa) > 1_000, "VMA readahead reads ahead");
    assert!(
        d(VmEvent::SwapRaHit) * 100 > d(VmEvent::SwapRa) * 95,
        "a sequential writer hits what VMA readahead read: {} of {}",
        d(VmEvent::SwapRaHit),
        d(VmEvent::SwapRa)
    );
    assert!(d(VmEvent::SwapRaHit) <= d(VmEvent::SwapRa) + k.stats.events.get(VmEvent::SwapRa));
}

#[test]
fn cluster_readahead_keeps_the_invariants_and_runs_are_deterministic() {
    let (k, a) = run(&["variant.swap_readahead=cluster"]);
    check_swap(&k);
    k.check_conservation(0).unwrap();
    let (_, b) = run(&["variant.swap_readahead=cluster"]);
    assert_eq!(a.result_json, b.result_json);
    assert_eq!(a.vmstat_after, b.vmstat_after);
    // The scan allocator runs the same workload to the same invariants.
    let (k, _) = run(&["variant.swap_alloc=scan"]);
    check_swap(&k);
}

#[test]
fn swap_more_than_half_full_keeps_the_invariants() {
    // 176 MiB of swap for the workload's 232 MiB on a 128 MiB machine: past half full, so
    // reclaim's activations may free swap (`activate_locked`'s `folio_free_swap()`).
    for sets in [
        &["swap.size_mb=176", "variant.swap_readahead=cluster"][..],
        &[
            "swap.size_mb=176",
            "variant.swap_readahead=vma",
            "variant.anon_lru_before_5_9=true",
        ],
    ] {
        let (k, out) = run(sets);
        assert!(k.swap.vm_swap_full(), "{sets:?}");
        assert!(out.after.event(VmEvent::PswpOut) - out.before.event(VmEvent::PswpOut) > 10_000);
        check_swap(&k);
        k.check_conservation(0).unwrap();
        k.check_lists().unwrap();
    }
}

#[test]
fn zram_swaps_synchronously_without_readahead() {
    let (k, out) = run(&["swap.kind=zram"]);
    check_swap(&k);
    let d = |e| out.after.event(e) - out.before.event(e);
    assert!(d(VmEvent::PswpIn) > 1_000 && d(VmEvent::PswpOut) > 1_000);
    assert_eq!(d(VmEvent::SwapRa), 0, "zram bypasses the swap cache");
    assert_eq!(k.block.devices[0].stats.wr_ios, 0, "no block I/O");
}

#[test]
fn a_cgroup_limit_is_reclaimed_by_memcg_reclaim_counted_in_the_cgroup() {
    // 64 MiB of limit on a 128 MiB machine: the cgroup's own reclaim, no global reclaim.
    let (k, out) = run(&["memory.mode=cgroup", "memory.limit_mb=64"]);
    check_swap(&k);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    let m = &k.memcg.groups[k.memcg.workload as usize];
    // Faulting tasks may overshoot by the page each is about to commit (and readahead's).
    assert!(
        m.usage <= m.limit + 64,
        "usage {} limit {}",
        m.usage,
        m.limit
    );
    let r = &out.result;
    let memcg = r.memcg.as_ref().expect("result.json reports the cgroup");
    assert!(memcg.events.pgscan_direct > 10_000, "{:?}", memcg.events);
    assert!(memcg.events.pgsteal_direct > 0 && memcg.events.max > 0);
    let d = |e| out.after.event(e) - out.before.event(e);
    assert_eq!(
        d(VmEvent::PgscanDirect),
        0,
        "memcg reclaim is not in /proc/vmstat's pgscan"
    );
    assert_eq!(
        d(VmEvent::AllocstallNormal) + d(VmEvent::AllocstallMovable),
        0
    );
    assert!(
        d(VmEvent::PgscanAnon) > 0,
        "pgscan_anon counts every reclaim"
    );
    assert!(d(VmEvent::PswpOut) > 1_000);
}

#[test]
fn new_anon_folios_start_inactive_since_5_9_and_active_before() {
    use reclaim_sim::mm::lru::{LRU_ACTIVE_ANON, LRU_INACTIVE_ANON};
    // 2 ms: the first touches, long before memory runs short.
    for (active, on, off) in [
        (false, LRU_INACTIVE_ANON, LRU_ACTIVE_ANON),
        (true, LRU_ACTIVE_ANON, LRU_INACTIVE_ANON),
    ] {
        let v = format!("variant.anon_lru_before_5_9={active}");
        let (k, _) = run(&[&v, "run.duration_s=0.002"]);
        let lv = &k.memcg.lruvecs[0];
        assert!(lv.total(on) > 100, "{v}: {} on the list", lv.total(on));
        assert_eq!(lv.total(off), 0, "{v}");
        k.check_lists().unwrap();
    }
}

#[test]
fn swap_ins_are_tested_against_their_shadows_since_5_9_only() {
    for before_5_9 in [false, true] {
        let v = format!("variant.anon_lru_before_5_9={before_5_9}");
        let (k, out) = run(&[&v]);
        check_swap(&k);
        let d = |name| out.after.stat(name) - out.before.stat(name);
        let (refault, activate, restore) = (
            d("workingset_refault_anon"),
            d("workingset_activate_anon"),
            d("workingset_restore_anon"),
        );
        let si = &k.swap.areas[0];
        let shadows = (1..si.max).filter(|&s| si.shadow(s) != 0).count();
        if before_5_9 {
            assert_eq!((refault, activate, restore, shadows), (0, 0, 0, 0), "{v}");
        } else {
            // Every slot a swap-in reads (the fault's and those read ahead) held a shadow:
            // one refault per page read. A window's folios join the swap cache (and refault)
            // one by one as they are allocated, and its reads are counted when they are
            // submitted together: windows still being allocated when the run ends have
            // refaulted without reads, at most a window (8 pages) for each of the run's 3 tasks.
            // Some are recent enough to start active.
            let pswpin = out.after.event(VmEvent::PswpIn) - out.before.event(VmEvent::PswpIn);
            assert!(
                pswpin <= refault && refault - pswpin <= 3 * 8,
                "{refault} {pswpin}"
            );
            assert!(
                0 < activate && activate < refault,
                "{activate} of {refault} activated"
            );
            assert!(restore <= activate);
            assert!(shadows > 1_000, "evicted folios leave shadows ({shadows})");
        }
    }
}

#[test]
fn a_rotational_swap_disk_turns_vma_readahead_off_unless_marked_otherwise() {
    const HDD: &str = r#"machine.devices=[{name="sda", bandwidth_mb_s=150, latency_us=0, seek_us=8000, rotational=true}]"#;
    let (k, _) = run(&[HDD, "variant.swap_readahead=vma", "run.duration_s=0.01"]);
    assert!(!k.swap.use_vma_readahead(), "nr_rotate_swap turns it off");
    let (k, _) = run(&[HDD, "swap.nonrotational=true", "run.duration_s=0.01"]);
    assert!(
        k.swap.use_vma_readahead(),
        "marked non-rotational for the run"
    );
    let (k, _) = run(&["variant.swap_readahead=cluster", "run.duration_s=0.01"]);
    assert!(!k.swap.use_vma_readahead(), "the kernels before v4.14");
    let (k, _) = run(&["sysctl.vma_ra_enabled=false", "run.duration_s=0.01"]);
    assert!(
        !k.swap.use_vma_readahead(),
        "/sys/kernel/mm/swap/vma_ra_enabled"
    );
}

#[test]
fn usemem_counts_bytes_as_usemem_does_an_eighth_of_the_mapping_plus_8_per_word() {
    // 0.2 s: the random background writes words, most of them faulting.
    let (_, out) = run(&["run.duration_s=0.2"]);
    let bg = &out.result.metrics["background"];
    let samples = bg["latency_us"]["samples"].as_u64().unwrap();
    let bytes = bg["bytes"].as_u64().unwrap();
    assert!(samples > 1_000);
    // One task of 40 MiB: 5 MiB for the allocation (do_unit's bytes / 8), then 8 per word.
    assert_eq!(bytes, 40 * 1024 * 1024 / 8 + 8 * samples);
    let fg = &out.result.metrics["bytes"];
    let fg_samples = out.result.metrics["latency_us"]["samples"]
        .as_u64()
        .unwrap();
    assert_eq!(
        fg.as_u64().unwrap(),
        2 * 96 * 1024 * 1024 / 8 + 4096 * fg_samples
    );
}

#[test]
fn usemem_writes_are_user_time_and_the_kernel_work_system_time() {
    let (k, out) = run(&["run.duration_s=0.5"]);
    let m = &out.result.metrics;
    let fg = m["latency_us"]["samples"].as_u64().unwrap();
    let bg = m["background"]["latency_us"]["samples"].as_u64().unwrap();
    let (mut user, mut sys) = (0, 0);
    for t in &k.sched.tasks {
        if t.class == reclaim_sim::sched::TaskClass::Workload {
            user += t.user_ns;
            sys += t.sys_ns;
        } else {
            assert_eq!(t.user_ns, 0, "{} ran in user mode", t.comm);
        }
    }
    // Each access's write is the process's own work; its faults are the kernel's.
    assert_eq!(
        user,
        fg * k.costs.usemem_page_ns + bg * k.costs.usemem_word_ns
    );
    assert!(sys > 0);
    assert_eq!(k.cpus.total_user_ns, user);
}

#[test]
fn a_zram_area_of_higher_priority_fills_before_the_swap_file_behind_it() {
    let sets = [
        "swap.kind=zram",
        "swap.size_mb=16",
        "swap.priority=100",
        r#"swap.also=[{kind="file", size_mb=512, priority=10}]"#,
    ];
    let (k, out) = run(&sets);
    check_swap(&k);
    let (zram, file) = (&k.swap.areas[0], &k.swap.areas[1]);
    assert!(zram.dev.is_none() && file.dev.is_some());
    // zram took slots until it was full (its folios come back and free theirs, so it need
    // not stay full), and the rest went to the file.
    let zram_slots = u64::from(zram.max - 1);
    let pswpout = out.after.event(VmEvent::PswpOut) - out.before.event(VmEvent::PswpOut);
    assert!(pswpout > 4 * zram_slots, "pswpout {pswpout}");
    assert!(file.inuse_pages > 1_000, "file {}", file.inuse_pages);
    assert!(
        u64::from(zram.inuse_pages) > 1 + zram_slots / 2,
        "zram {}",
        zram.inuse_pages
    );
    // Only the file's writes reach the disk.
    let written = k.block.devices[0].stats.wr_bytes / 4096;
    assert!(
        written < pswpout && written > 1_000,
        "{written} of {pswpout}"
    );
    // Same scenario, same bytes.
    let (_, again) = run(&sets);
    assert_eq!(out.result.metrics, again.result.metrics);
}

#[test]
fn memory_high_throttles_the_cgroup_below_its_limit() {
    // memory.high at 32 MiB under a 64 MiB memory.max: the tasks reclaim on their way back
    // to user space (memory.events high) and sleep while far above it, so the cgroup stays
    // near 32 MiB and seldom reaches its limit.
    let (k, out) = run(&[
        "memory.mode=cgroup",
        "memory.limit_mb=64",
        "memory.high_mb=32",
    ]);
    check_swap(&k);
    k.check_conservation(0).unwrap();
    let m = &k.memcg.groups[k.memcg.workload as usize];
    let memcg = out.result.memcg.as_ref().unwrap();
    assert_eq!(memcg.high_bytes, Some(32 << 20));
    assert!(memcg.events.high > 100, "{:?}", memcg.events);
    assert!(
        m.usage < m.limit - 4096,
        "usage {} high {}",
        m.usage,
        m.high
    );
    let (_, max_only) = run(&["memory.mode=cgroup", "memory.limit_mb=64"]);
    let capped = max_only.result.memcg.as_ref().unwrap();
    assert_eq!((capped.high_bytes, capped.events.high), (None, 0));
    assert!(
        memcg.events.max < capped.events.max / 10,
        "limit hits {} against {} without memory.high",
        memcg.events.max,
        capped.events.max
    );
}

#[test]
fn swap_files_lie_apart_on_their_device_and_share_its_rotational_flag() {
    let disk = r#"machine.devices=[{ name = "sda", bandwidth_mb_s = 200, latency_us = 100, seek_us = 4000, rotational = true }]"#;
    let also = r#"swap.also=[{kind="file", size_mb=64, priority=100}]"#;
    // The first area marks the disk non-rotational before its swapon: the second finds it so.
    let (k, _) = run(&[disk, "swap.nonrotational=true", also, "run.duration_s=0.3"]);
    let (a, b) = (&k.swap.areas[0], &k.swap.areas[1]);
    assert_eq!((a.base, b.base), (0, u64::from(a.max) * 4096));
    assert!(!a.rotational && !b.rotational && k.swap.use_vma_readahead());
    // Left rotational, both are, and VMA readahead is off.
    let (k, _) = run(&[disk, also, "run.duration_s=0.3"]);
    assert!(k.swap.areas.iter().all(|a| a.rotational) && !k.swap.use_vma_readahead());
}

/// Every present entry maps a page of a folio that names it: an order-0 folio its entry, a
/// huge page's head the first of its 512 entries, each in order (`mm::huge_memory`).
fn check_present_entries(k: &Kernel) -> u64 {
    let mut huge = 0;
    for (i, &pte) in k.mm.ptes.iter().enumerate() {
        let PteKind::Present { pfn, .. } = pte_kind(pte) else {
            continue;
        };
        let f = k.mem.pages.fields(pfn);
        let (head, off) = if f.flags & pg::TAIL != 0 {
            (f.owner, pfn - f.owner)
        } else {
            (pfn, 0)
        };
        let h = k.mem.pages.fields(head);
        assert_eq!(h.owner + off, i as u32, "pfn {pfn} does not name entry {i}");
        assert!(h.flags & pg::MAPPED != 0 && h.flags & pg::ANON != 0);
        if h.order > 0 {
            assert_eq!(h.order, 9);
            huge += u64::from(off == 0);
        }
    }
    huge
}

#[test]
fn thp_always_maps_huge_pages_that_reclaim_splits() {
    let sets = [
        "sysctl.transparent_hugepage=\"always\"",
        "sysctl.transparent_hugepage_defrag=\"always\"",
    ];
    let (k, out) = run(&sets);
    let d = |e| out.after.event(e) - out.before.event(e);
    let allocs = k.stats.events.get(VmEvent::ThpFaultAlloc);
    assert!(allocs > 0, "faults map huge pages");
    assert!(d(VmEvent::ThpSplitPage) > 0, "reclaim splits them");
    assert!(d(VmEvent::PswpOut) > 10_000, "and swaps their pages out");
    let huge = check_present_entries(&k);
    assert!(huge <= allocs);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    k.check_large_folios().unwrap();
    let text = out.after.to_proc_text();
    assert!(text.contains("\nthp_fault_alloc ") && text.contains("\nthp_split_page "));
    // Deterministic.
    let (_, again) = run(&sets);
    assert_eq!(again.after, out.after);
}

#[test]
fn thp_madvise_by_default_maps_no_huge_page_and_prints_no_thp_counter() {
    let (k, out) = run(&["run.duration_s=0.5"]);
    assert_eq!(k.stats.events.get(VmEvent::ThpFaultAlloc), 0);
    assert_eq!(check_present_entries(&k), 0);
    assert!(!out.after.to_proc_text().contains("thp_"));
}

#[test]
fn thp_defrag_never_falls_back_to_order_0_once_no_huge_page_is_free() {
    let sets = [
        "sysctl.transparent_hugepage=\"always\"",
        "sysctl.transparent_hugepage_defrag=\"never\"",
        "run.duration_s=1",
    ];
    let (k, _) = run(&sets);
    let ev = |e| k.stats.events.get(e);
    assert!(ev(VmEvent::ThpFaultAlloc) > 0);
    assert!(
        ev(VmEvent::ThpFaultFallback) > 0,
        "without reclaim or compaction, faults on a full machine fall back"
    );
    check_present_entries(&k);
    k.check_conservation(0).unwrap();
    k.check_large_folios().unwrap();
}
