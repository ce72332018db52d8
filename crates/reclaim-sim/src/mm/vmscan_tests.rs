//! Unit tests of `mm::vmscan`: isolation, and the throttling of direct reclaim
//! (`throttle_direct_reclaim`, `allow_direct_reclaim`) with a kswapd thread and a page-cache
//! reader running as processes.

use super::*;
use crate::mm::zone::{ZONE_DMA32, ZONE_MOVABLE};
use crate::process::Sim;
use crate::testing::*;

#[test]
fn skipped_folios_go_back_in_their_order() {
    let mut k = kernel(64, 16);
    let normal = zone_of(&k, ZONE_NORMAL);
    let dma32 = zone_of(&k, ZONE_DMA32);
    let mut pages = Vec::new();
    for zi in [normal, normal, normal, dma32] {
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        add_to_lru(&mut k, p);
        pages.push(p);
    }
    // Tail first: the three Normal folios, then the DMA32 one, which is taken; the
    // Normal ones are above reclaim_idx and skipped.
    let sc = ScanControl::new(false, 32, 0, ZONE_DMA32);
    let mut batch = Isolated::empty(LRU_INACTIVE_FILE);
    let (total_scan, taken) = k.isolate_lru_folios(0, 1, LRU_INACTIVE_FILE, &sc, &mut batch);
    assert_eq!((total_scan, taken), (4, 1));
    assert_eq!(batch.pages[0], pages[3]);
    let list = k.memcg.lruvecs[0].list(LRU_INACTIVE_FILE);
    assert_eq!(
        k.mem.pages.tail(list),
        Some(pages[0]),
        "oldest skipped is the tail"
    );
    assert_eq!(k.mem.pages.first(list), Some(pages[2]));
    assert_eq!(
        k.stats.events.v[VmEvent::PgskipDma as usize + ZONE_NORMAL],
        3
    );
}

#[test]
fn allow_direct_reclaim_needs_more_than_half_the_min_reserve() {
    let mut sim = Sim::new(kernel(64, 16));
    let kswapd = add_kswapd(&mut sim);
    let mut guard = sim.k();
    let k = &mut *guard;
    let normal = zone_of(k, ZONE_NORMAL);
    let dma32 = zone_of(k, ZONE_DMA32);
    let min = k.mem.zones[normal].wmark_pages(WMARK_MIN);
    assert!(min > 100, "min {min}");
    // Nothing reclaimable anywhere: no reserve, never throttled.
    let mut held = fill_zone(k, normal, 0, 0);
    assert!(k.allow_direct_reclaim(0));
    // Normal has reclaimable pages and exactly min/2 free; DMA32 (all free) has none and
    // is left out of both sums.
    for p in held.drain(..(min / 2) as usize) {
        k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
    }
    for p in held.drain(..10) {
        add_to_lru(k, p);
    }
    k.mem.nodes[0].kswapd_highest_zoneidx = ZONE_MOVABLE;
    assert!(
        !k.allow_direct_reclaim(0),
        "free == reserve/2 is not enough"
    );
    // kswapd must be awake while tasks are throttled: woken, its request capped at Normal.
    assert!(!k.mem.nodes[0].kswapd_wait.is_active());
    assert_eq!(k.mem.nodes[0].kswapd_highest_zoneidx, ZONE_NORMAL);
    assert_eq!(k.sched.tasks[kswapd as usize].next_at, Some(0));
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirectThrottle), 0);
    // One more free page passes.
    let p = held.pop().unwrap();
    k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
    assert!(k.allow_direct_reclaim(0));
    // Back below with kswapd already awake (off kswapd_wait): nothing more is woken, and
    // the zone request is left alone.
    k.mem.zones[normal].rmqueue(&mut k.mem.pages, 0).unwrap();
    k.mem.nodes[0].kswapd_highest_zoneidx = ZONE_DMA32;
    assert!(!k.allow_direct_reclaim(0));
    assert_eq!(k.mem.nodes[0].kswapd_highest_zoneidx, ZONE_DMA32);
    assert_eq!(k.sched.queue.len(), 1, "kswapd's one wake-up");
    // DMA32 becomes reclaimable: its min joins the reserve and its free pages the sum.
    let q = k.mem.zones[dma32].rmqueue(&mut k.mem.pages, 0).unwrap();
    add_to_lru(k, q);
    assert!(k.allow_direct_reclaim(0));
}

#[test]
fn throttled_reclaimer_sleeps_until_kswapd_restores_the_reserve() {
    let mut sim = Sim::new(kernel(64, 0));
    let (normal, reserve) = {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.mem.zones[normal].wmark_pages(WMARK_MIN);
        fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        (normal, reserve)
    };
    let kswapd = add_kswapd(&mut sim);
    let dd = add_dd(&mut sim);
    // The reader's allocation fails at low and min: it wakes kswapd, enters
    // try_to_free_pages and is throttled before do_try_to_free_pages.
    assert_eq!(run_next(&mut sim), Some(dd));
    {
        let k = sim.k();
        assert_eq!(k.stats.events.get(VmEvent::PgscanDirectThrottle), 1);
        assert_eq!(allocstalls(&k), 0);
        assert_eq!(k.mem.nodes[0].pfmemalloc_wait.waiters(), &[dd]);
        assert_eq!(
            k.sched.tasks[dd as usize].next_at, None,
            "off CPU until woken"
        );
        assert!(
            k.sched.tasks[kswapd as usize].next_at.is_some(),
            "kswapd woken"
        );
    }
    // kswapd reclaims pass by pass; the reader runs again only when a pass ends with
    // free > reserve/2, and then reclaims itself without being throttled again.
    let mut woken_at = None;
    for _ in 0..100_000 {
        if allocstalls(&sim.k()) > 0 {
            break;
        }
        let waiting = sim.k().mem.nodes[0].pfmemalloc_wait.is_active();
        let id = run_next(&mut sim);
        let k = sim.k();
        if waiting && !k.mem.nodes[0].pfmemalloc_wait.is_active() {
            assert_eq!(id, Some(kswapd), "only kswapd wakes the throttled reader");
            assert!(k.mem.zones[normal].nr_free_pages > reserve / 2);
            // Mid-balance (after a kswapd_shrink_node pass), not prepare_kswapd_sleep.
            assert!(!k.pgdat_balanced(0, 0, ZONE_NORMAL));
            woken_at.get_or_insert(k.now);
        }
        if woken_at.is_none() {
            assert_eq!(k.stats.events.get(VmEvent::PgscanDirect), 0);
            assert!(k.stats.events.get(VmEvent::PgscanKswapd) < 8000);
        }
    }
    let k = sim.k();
    assert!(woken_at.is_some(), "never woken");
    assert!(k.stats.events.get(VmEvent::PgstealKswapd) >= 20);
    assert_eq!(allocstalls(&k), 1, "the woken reader went on into reclaim");
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirectThrottle), 1);
}

#[test]
fn a_premature_wake_up_sends_the_reader_back_to_sleep() {
    // No kswapd thread: only prepare_kswapd_sleep's unconditional wake_up_all wakes.
    let mut sim = Sim::new(kernel(64, 0));
    let (normal, mut held) = {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.mem.zones[normal].wmark_pages(WMARK_MIN);
        let held = fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        (normal, held)
    };
    let dd = add_dd(&mut sim);
    run_next(&mut sim);
    assert_eq!(sim.k().mem.nodes[0].pfmemalloc_wait.waiters(), &[dd]);
    assert!(!sim.k().prepare_kswapd_sleep(0, 0, ZONE_NORMAL));
    assert!(!sim.k().mem.nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(run_next(&mut sim), Some(dd));
    {
        let k = sim.k();
        assert_eq!(
            k.mem.nodes[0].pfmemalloc_wait.waiters(),
            &[dd],
            "still throttled: asleep again"
        );
        assert_eq!(k.sched.tasks[dd as usize].next_at, None);
        assert_eq!(
            k.stats.events.get(VmEvent::PgscanDirectThrottle),
            1,
            "counted once"
        );
        assert_eq!(allocstalls(&k), 0);
    }
    {
        let mut guard = sim.k();
        let k = &mut *guard;
        for p in held.drain(..40) {
            k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
        }
        k.prepare_kswapd_sleep(0, 0, ZONE_NORMAL);
    }
    assert_eq!(run_next(&mut sim), Some(dd));
    let k = sim.k();
    assert!(!k.mem.nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(allocstalls(&k), 1);
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirectThrottle), 1);
}

#[test]
fn a_hopeless_node_does_not_throttle() {
    let mut sim = Sim::new(kernel(64, 0));
    {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.mem.zones[normal].wmark_pages(WMARK_MIN);
        fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        k.mem.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES - 1;
        assert!(!k.allow_direct_reclaim(0));
        k.mem.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES;
        assert!(k.allow_direct_reclaim(0));
    }
    let dd = add_dd(&mut sim);
    run_next(&mut sim);
    let k = sim.k();
    assert_eq!(k.stats.events.get(VmEvent::PgscanDirectThrottle), 0);
    assert!(!k.mem.nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(allocstalls(&k), 1, "straight into do_try_to_free_pages");
    assert!(k.sched.tasks[dd as usize].next_at.is_some());
}

#[test]
fn writeback_isolated_throttle_is_3_2s_threshold_at_each_priority() {
    use super::writeback_isolated_throttle as throttle;
    // 32 pages taken (SWAP_CLUSTER_MAX). DEF_PRIORITY: 32 >> 0 = 32, every page.
    assert!(!throttle(31, 32, DEF_PRIORITY));
    assert!(throttle(32, 32, DEF_PRIORITY));
    // DEF_PRIORITY - 1: 32 >> 1 = 16, half.
    assert!(!throttle(15, 32, DEF_PRIORITY - 1));
    assert!(throttle(16, 32, DEF_PRIORITY - 1));
    // DEF_PRIORITY - 2: 32 >> 2 = 8, a quarter ("kswapd in trouble").
    assert!(!throttle(7, 32, DEF_PRIORITY - 2));
    assert!(throttle(8, 32, DEF_PRIORITY - 2));
    // DEF_PRIORITY - 5: 32 >> 5 = 1; DEF_PRIORITY - 6: 32 >> 6 = 0, any page.
    assert!(throttle(1, 32, DEF_PRIORITY - 5));
    assert!(throttle(1, 32, DEF_PRIORITY - 6));
    // None under writeback: never, even at priority 0 (0 >= 32 >> 12 = 0, but
    // `nr_writeback &&` first).
    assert!(!throttle(0, 32, 0));
    assert!(!throttle(0, 0, DEF_PRIORITY));
    // An odd batch: 21 >> 2 = 5 at DEF_PRIORITY - 2.
    assert!(!throttle(4, 21, DEF_PRIORITY - 2));
    assert!(throttle(5, 21, DEF_PRIORITY - 2));
}
