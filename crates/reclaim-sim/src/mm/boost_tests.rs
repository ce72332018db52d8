//! Unit tests of watermark boosting (5.0+, 6.6 here): `boost_watermark()` against its
//! formula on hand-built zones, the fallback that boosts a zone and the allocation that then
//! wakes kswapd (`rmqueue()`'s ZONE_BOOSTED_WATERMARK), and kswapd's boosted reclaim in
//! `balance_pgdat()`: it reclaims the boost without writing or swapping, and the boost is
//! taken back at its end.

use crate::kernel::Kernel;
use crate::mm::gfp::{__GFP_KSWAPD_RECLAIM, GFP_KERNEL};
use crate::mm::lru::LRU_INACTIVE_ANON;
use crate::mm::page::{pg, Pages};
use crate::mm::page_alloc::{
    AllocContext, ALLOC_KSWAPD, ALLOC_NOFRAGMENT, ALLOC_WMARK_LOW, ALLOC_WMARK_MIN,
};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::*;
use crate::process::Sim;
use crate::testing::*;

/// A zone of `pages` pages from pfn 0 with every page allocated and a high watermark of
/// `high`, boosting with `factor`.
fn zone(pages: u32, high: u64, factor: u64) -> (Zone, Pages) {
    let p = Pages::new(pages, NR_FREE_LISTS as u32);
    let mut z = Zone::new(ZONE_NORMAL, 0, 0, u64::from(pages), free_lists(&p, 0));
    z.watermark[WMARK_HIGH] = high;
    z.watermark_boost_factor = factor;
    (z, p)
}

#[test]
fn the_boost_grows_a_pageblock_at_a_time_up_to_its_share_of_the_high_watermark() {
    // mult_frac(3660, 15000, 10000) = 0 · 15000 + 3660 · 15000 / 10000 = 5490: ten
    // pageblocks (5120), then the cap.
    let (mut z, _) = zone(4096, 3660, 15_000);
    for n in 1..=10 {
        assert!(z.boost_watermark());
        assert_eq!(z.watermark_boost, 512 * n);
    }
    assert!(z.boost_watermark());
    assert_eq!(z.watermark_boost, 5490);
    assert!(z.boost_watermark(), "boosted, at the cap");
    assert_eq!(z.watermark_boost, 5490);
    assert_eq!(z.wmark_pages(WMARK_HIGH), 3660 + 5490);
    assert_eq!(z.watermark[WMARK_HIGH], 3660, "the mark itself stays");
    // mult_frac(12345, 15000, 10000) = 1 · 15000 + 2345 · 15000 / 10000 = 15000 + 3517.
    let (mut z, _) = zone(4096, 12_345, 15_000);
    z.watermark_boost = 18_000;
    z.boost_watermark();
    assert_eq!(z.watermark_boost, 18_512);
    z.boost_watermark();
    assert_eq!(z.watermark_boost, 18_517);
    // A cap below a pageblock is raised to one: mult_frac(100, 15000, 10000) = 150.
    let (mut z, _) = zone(4096, 100, 15_000);
    z.boost_watermark();
    z.boost_watermark();
    assert_eq!(z.watermark_boost, 512);
    // No boost: the factor 0, a zone of fewer than four pageblocks, a high watermark
    // still 0 (boot), or a cap of 0 (mult_frac(1, 5000, 10000) = 0).
    for (pages, high, factor) in [(4096, 3660, 0), (2047, 3660, 15_000), (4096, 0, 15_000)] {
        let (mut z, _) = zone(pages, high, factor);
        assert!(!z.boost_watermark(), "{pages} {high} {factor}");
        assert_eq!(z.watermark_boost, 0);
    }
    let (mut z, _) = zone(4096, 1, 5000);
    assert!(!z.boost_watermark());
    // Exactly four pageblocks is enough.
    let (mut z, _) = zone(2048, 3660, 15_000);
    assert!(z.boost_watermark());
}

#[test]
fn a_fallback_below_a_pageblock_boosts_and_flags_the_zone_only_for_kswapd_waking_requests() {
    for (flags, flagged) in [(ALLOC_KSWAPD, true), (0, false)] {
        let (mut z, mut pages) = zone(4096, 3660, 15_000);
        // Eight free pages of the first (movable) pageblock: an order-3 block.
        for p in 0..8 {
            z.free_one_page(&mut pages, p, 0);
        }
        let p = z
            .__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, flags)
            .unwrap();
        assert_eq!(z.watermark_boost, 512);
        assert_eq!(z.boosted_watermark, flagged);
        // The pageblock is claimed (8 free + 504 neither free nor on an LRU ≥ 256).
        assert_eq!(z.get_pageblock_migratetype(p), MIGRATE_UNMOVABLE);
    }
    // A fallback of a whole pageblock or more boosts nothing.
    let (mut z, mut pages) = zone(4096, 3660, 15_000);
    z.free_one_page(&mut pages, 0, PAGEBLOCK_ORDER);
    z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, ALLOC_KSWAPD)
        .unwrap();
    assert_eq!((z.watermark_boost, z.boosted_watermark), (0, false));
    // Nor does ALLOC_NOFRAGMENT's refusal of the smaller block.
    let (mut z, mut pages) = zone(4096, 3660, 15_000);
    z.free_one_page(&mut pages, 0, 3);
    assert_eq!(
        z.__rmqueue(
            &mut pages,
            0,
            MIGRATE_UNMOVABLE,
            ALLOC_KSWAPD | ALLOC_NOFRAGMENT
        ),
        None
    );
    assert_eq!(z.watermark_boost, 0);
}

/// A 64 MiB node (Normal only) with a kswapd asleep, `sysctl` in the scenario, and its zone
/// fragmented: the first half of every pageblock free (an order-8 block each), the rest
/// allocated, so that free pages are far above the high watermark but no movable block of a
/// pageblock is free. Returns the simulation, kswapd's id and the zone.
fn fragmented(sysctl: &str) -> (Sim, u32, usize) {
    let mut sim = Sim::new(kernel_with(64, 0, sysctl));
    let kswapd = add_kswapd(&mut sim);
    let normal = {
        let mut guard = sim.k();
        let k = &mut *guard;
        let normal = zone_of(k, ZONE_NORMAL);
        fill_zone(k, normal, 0, 0);
        let z = &mut k.mem.zones[normal];
        let mut pb = z.start_pfn;
        while pb + PAGEBLOCK_NR_PAGES <= z.end_pfn() {
            z.free_one_page(&mut k.mem.pages, pb, PAGEBLOCK_ORDER - 1);
            pb += PAGEBLOCK_NR_PAGES;
        }
        normal
    };
    (sim, kswapd, normal)
}

#[test]
fn an_unmovable_allocation_that_falls_back_wakes_kswapd_on_a_balanced_node() {
    let (sim, kswapd, normal) = fragmented("");
    let mut guard = sim.k();
    let k = &mut *guard;
    let z = &k.mem.zones[normal];
    let (high, free) = (z.watermark[WMARK_HIGH], z.nr_free_pages);
    assert_eq!(free, 32 * 256);
    assert!(free > high + 512, "balanced even boosted: {free} {high}");
    assert!(k.pgdat_balanced(0, 0, ZONE_NORMAL));
    assert!(k.mem.nodes[0].kswapd_wait.is_active(), "kswapd asleep");
    // The fast path: ALLOC_NOFRAGMENT refuses the order-8 blocks, the walk starts again
    // without it and steals from the first.
    let ac = AllocContext::new(GFP_KERNEL, 0, 0);
    let flags = ALLOC_WMARK_LOW | k.alloc_flags_nofragment(&ac);
    assert_eq!(flags, ALLOC_WMARK_LOW | ALLOC_NOFRAGMENT | ALLOC_KSWAPD);
    let p = k.get_page(&ac, flags, 0).unwrap();
    let z = &k.mem.zones[normal];
    assert_eq!(z.get_pageblock_migratetype(p), MIGRATE_UNMOVABLE);
    // mult_frac(high, 15000, 10000) ≥ 512 here, so one pageblock.
    assert!(high * 3 / 2 >= 512);
    assert_eq!(z.watermark_boost, 512);
    assert_eq!(z.wmark_pages(WMARK_HIGH), high + 512);
    assert!(!z.boosted_watermark, "rmqueue() cleared the flag");
    // rmqueue()'s wakeup_kswapd(zone, 0, 0, ZONE_NORMAL): balanced but boosted, so woken.
    assert!(!k.mem.nodes[0].kswapd_wait.is_active());
    assert!(k.sched.tasks[kswapd as usize].next_at.is_some());
    assert!(k.pgdat_watermark_boosted(0, ZONE_NORMAL));
    assert_eq!(k.mem.nodes[0].kswapd_highest_zoneidx, ZONE_NORMAL);
    assert_eq!(k.mem.nodes[0].kswapd_order, 0);
}

#[test]
fn without_kswapd_reclaim_or_with_factor_0_kswapd_sleeps_on() {
    // GFP without __GFP_KSWAPD_RECLAIM: the zone is boosted, but nothing wakes kswapd.
    let (sim, _, normal) = fragmented("");
    {
        let mut k = sim.k();
        let ac = AllocContext::new(GFP_KERNEL & !__GFP_KSWAPD_RECLAIM, 0, 0);
        let flags = ALLOC_WMARK_LOW | k.alloc_flags_nofragment(&ac);
        assert_eq!(flags & ALLOC_KSWAPD, 0);
        k.get_page(&ac, flags, 0).unwrap();
        assert_eq!(k.mem.zones[normal].watermark_boost, 512);
        assert!(!k.mem.zones[normal].boosted_watermark);
        assert!(k.mem.nodes[0].kswapd_wait.is_active());
    }
    // vm.watermark_boost_factor = 0: the same fallback boosts nothing, kswapd sleeps on.
    let (sim, _, normal) = fragmented("[sysctl]\nwatermark_boost_factor = 0\n");
    let mut k = sim.k();
    let ac = AllocContext::new(GFP_KERNEL, 0, 0);
    for _ in 0..300 {
        let flags = ALLOC_WMARK_LOW | k.alloc_flags_nofragment(&ac);
        k.get_page(&ac, flags, 0).unwrap();
    }
    let z = &k.mem.zones[normal];
    assert!(
        z.nr_pageblock_mt[MIGRATE_UNMOVABLE] >= 2,
        "fallbacks happened"
    );
    assert_eq!((z.watermark_boost, z.boosted_watermark), (0, false));
    assert!(k.mem.nodes[0].kswapd_wait.is_active());
}

#[test]
fn a_gfp_high_order0_allocation_at_min_ignores_the_boost() {
    let (sim, _, normal) = fragmented("");
    let mut guard = sim.k();
    let k = &mut *guard;
    // Free pages between the unboosted and the boosted min watermark (halved: __GFP_HIGH).
    let z = &mut k.mem.zones[normal];
    z.watermark_boost = 4096;
    let min = z.watermark[WMARK_MIN];
    let target = min - min / 2 + 10;
    assert!(target <= (min + 4096) - (min + 4096) / 2);
    fill_zone(k, normal, target, 0);
    k.drain_all_pages();
    let movable = |gfp| AllocContext::new(gfp, 0, 0);
    let high = movable(crate::mm::gfp::GFP_HIGHUSER_MOVABLE | crate::mm::gfp::__GFP_HIGH);
    let alloc_high = ALLOC_WMARK_MIN | crate::mm::page_alloc::ALLOC_HIGH;
    // At the low watermark (boosted) it fails; at min with __GFP_HIGH the unboosted mark
    // applies and it passes; without the boost it would have passed at min too.
    assert_eq!(k.get_page(&high, ALLOC_WMARK_LOW, 0), None);
    assert!(k.get_page(&high, alloc_high, 0).is_some());
    // Without __GFP_HIGH, the boosted min watermark holds.
    let plain = movable(crate::mm::gfp::GFP_HIGHUSER_MOVABLE);
    k.drain_all_pages();
    assert_eq!(k.get_page(&plain, ALLOC_WMARK_MIN, 0), None);
}

/// A 512 MiB node (Normal only) with swap, whose kswapd writes every dirty page-cache folio
/// it meets when it may (`kswapd_writes_fs = "always"`): `file` page-cache folios, the 8
/// oldest dirty and the others clean, and 40 000 inactive anon folios on the LRU, free
/// pages well above the high watermark, and the zone boosted by `boost` as fallbacks
/// would. kswapd is woken by the boost and run until it sleeps again. Returns the kernel.
fn boosted_kswapd(boost: u64) -> Kernel {
    boosted_kswapd_with(boost, 60_000)
}

fn boosted_kswapd_with(boost: u64, file: u64) -> Kernel {
    let mut sim = Sim::new(kernel_with(
        512,
        0,
        "[variant]\nkswapd_writes_fs = \"always\"\n",
    ));
    let kswapd = add_kswapd(&mut sim);
    {
        let mut guard = sim.k();
        let k = &mut *guard;
        swapon(k, 65_536);
        let normal = zone_of(k, ZONE_NORMAL);
        let high = k.mem.zones[normal].watermark[WMARK_HIGH];
        let held = fill_zone(k, normal, high + boost + 4096, file);
        let list = k.memcg.lruvecs[0].list(crate::mm::lru::LRU_INACTIVE_FILE);
        let oldest: Vec<u32> = k.mem.pages.iter(list).collect();
        assert_eq!(k.mem.pages.tail(list), oldest.last().copied());
        for &p in oldest.iter().rev().take(8) {
            k.mem.pages.set(p, pg::DIRTY);
        }
        for &a in &held[..40_000] {
            k.mem.pages.set(a, pg::ANON);
            k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, a, LRU_INACTIVE_ANON, ZONE_NORMAL);
        }
        k.mem.zones[normal].watermark_boost = boost;
        assert!(k.pgdat_balanced(0, 0, ZONE_NORMAL));
        k.wakeup_kswapd(0, 0, ZONE_NORMAL, 0);
        assert_eq!(
            k.sched.tasks[kswapd as usize].next_at.is_some(),
            boost > 0,
            "woken only when boosted"
        );
    }
    for _ in 0..1_000_000 {
        let asleep = {
            let k = sim.k();
            k.mem.nodes[0].kswapd_wait.is_active() && k.stats.events.get(VmEvent::Pageoutrun) > 0
        };
        if asleep || sim.k().sched.queue.is_empty() {
            break;
        }
        run_next(&mut sim);
    }
    sim.into_kernel()
}

#[test]
fn boosted_kswapd_reclaims_the_boost_without_writing_or_swapping_and_clears_it() {
    let k = boosted_kswapd(1024);
    let normal = zone_of(&k, ZONE_NORMAL);
    let ev = &k.stats.events;
    assert_eq!(ev.get(VmEvent::Pageoutrun), 1);
    let stolen = ev.get(VmEvent::PgstealKswapd);
    // nr_boost_reclaim = 1024 pages, then the balanced node ends it: at least the boost,
    // and no more than one pass (at most DEF_PRIORITY − 2's scan) beyond it.
    assert!((1024..1024 + 200).contains(&stolen), "{stolen}");
    // may_swap off: no anon scanned, no slot taken; may_writepage off: the dirty folios it
    // met (the oldest) were kept, unwritten.
    assert_eq!(ev.get(VmEvent::PgscanAnon), 0);
    assert_eq!(ev.get(VmEvent::PswpOut), 0);
    assert_eq!(k.swap.areas[0].inuse_pages, 1);
    assert_eq!(k.mem.nodes[0].nr_vmscan_write, 0);
    assert!(
        ev.get(VmEvent::PgscanFile) >= 8 + stolen,
        "the dirty tail was scanned"
    );
    // The boost is taken back and kcompactd asked for a pageblock.
    assert_eq!(k.mem.zones[normal].watermark_boost, 0);
    assert_eq!(k.mem.nodes[0].kcompactd_max_order, PAGEBLOCK_ORDER);
    assert_eq!(k.mem.nodes[0].kswapd_failures, 0);
    assert_eq!(k.check_lists(), Ok(()));
}

#[test]
fn an_unboosted_balanced_node_leaves_kswapd_asleep() {
    let k = boosted_kswapd(0);
    assert_eq!(k.stats.events.get(VmEvent::Pageoutrun), 0);
    assert_eq!(k.stats.events.get(VmEvent::PgscanFile), 0);
}

#[test]
fn boosted_reclaim_is_deterministic() {
    let (a, b) = (boosted_kswapd(1024), boosted_kswapd(1024));
    assert_eq!(a.stats.events.v, b.stats.events.v);
    assert_eq!(a.now, b.now);
}

#[test]
fn a_boost_with_nothing_to_reclaim_stops_at_once_counts_a_failure_and_is_cleared() {
    // Nothing on the LRU: the first pass reclaims nothing, so the boosted reclaim stops
    // (it may not write, and could loop for ever), and the boost is cleared all the same.
    let mut sim = Sim::new(kernel(64, 0));
    add_kswapd(&mut sim);
    let normal = {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        k.mem.zones[normal].watermark_boost = 512;
        k.wakeup_kswapd(0, 0, ZONE_NORMAL, 0);
        normal
    };
    for _ in 0..10_000 {
        if sim.k().mem.nodes[0].kswapd_wait.is_active() {
            break;
        }
        run_next(&mut sim);
    }
    let k = sim.k();
    assert_eq!(k.stats.events.get(VmEvent::Pageoutrun), 1);
    assert_eq!(k.mem.zones[normal].watermark_boost, 0);
    assert_eq!(k.mem.nodes[0].kswapd_failures, 1);
}

#[test]
fn boosted_kswapd_with_only_anon_to_reclaim_swaps_nothing_and_stops() {
    // No page cache: may_swap off leaves nothing to scan (SCAN_FILE), the first pass
    // reclaims nothing and the boosted reclaim stops, the boost cleared all the same.
    let k = boosted_kswapd_with(1024, 0);
    let ev = &k.stats.events;
    assert_eq!(ev.get(VmEvent::Pageoutrun), 1);
    assert_eq!(ev.get(VmEvent::PgscanAnon), 0);
    assert_eq!(ev.get(VmEvent::PswpOut), 0);
    assert_eq!(k.swap.areas[0].inuse_pages, 1);
    assert_eq!(k.mem.zones[zone_of(&k, ZONE_NORMAL)].watermark_boost, 0);
    assert_eq!(k.mem.nodes[0].kswapd_failures, 1);
}
