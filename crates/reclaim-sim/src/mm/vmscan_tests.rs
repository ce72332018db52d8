//! Unit tests of `mm::vmscan`: isolation, and the throttling of direct reclaim
//! (`throttle_direct_reclaim`, `allow_direct_reclaim`) with a kswapd thread and a page-cache
//! reader running as processes.

use super::*;
use crate::engine::EventKind;
use crate::mm::kswapd::kswapd_run;
use crate::mm::zone::{ZONE_DMA32, ZONE_MOVABLE};
use crate::process::Sim;
use crate::{workload, Scenario};

/// One node of `mb` MiB, `dma32_mb` of it ZONE_DMA32 and the rest ZONE_NORMAL, all free.
fn kernel(mb: u64, dma32_mb: u64) -> Kernel {
    let text = format!(
        "[machine]\nmemory_mb_per_node = {mb}\ndma32_mb = {dma32_mb}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
    );
    let s = Scenario::parse(&text, "t.toml", &[]).unwrap();
    Kernel::new(&s.machine, &s.sysctl, &s.costs, &s.variant, s.seed)
}

fn zone_of(k: &Kernel, zone_idx: usize) -> usize {
    k.nodes[0]
        .zones
        .iter()
        .copied()
        .find(|&zi| k.zones[zi].zone_idx == zone_idx)
        .unwrap()
}

/// Puts page `p` (of node 0) at the head of node 0's inactive file list, as page cache.
fn add_to_lru(k: &mut Kernel, p: u32) {
    let z = k.page_zonenum(p);
    k.pages.fields_mut(p).owner = 0;
    k.lruvecs[0].add_folio(&mut k.pages, p, LRU_INACTIVE_FILE, z);
    k.nodes[0].nr_file_pages += 1;
}

/// Takes pages off zone `zi`'s free lists until `free` are left: the first `lru` become
/// clean, unreferenced page cache on the inactive file list (reclaimable), the rest stay
/// allocated and are returned.
fn fill_zone(k: &mut Kernel, zi: usize, free: u64, lru: u64) -> Vec<u32> {
    let mut held = Vec::new();
    let mut on_lru = 0;
    while k.zones[zi].nr_free_pages > free {
        let p = k.zones[zi].rmqueue(&mut k.pages, 0).unwrap();
        if on_lru < lru {
            add_to_lru(k, p);
            on_lru += 1;
        } else {
            held.push(p);
        }
    }
    held
}

/// A kswapd thread for node 0 (on its last CPU), asleep on kswapd_wait as runs start it.
fn add_kswapd(sim: &mut Sim) -> u32 {
    let cpn = sim.k().cpus.nr_cpus_per_node;
    kswapd_run(sim, 0, 1, cpn);
    *sim.k().nodes[0].kswapd.last().unwrap()
}

/// A buffered dd reader (the dd workload with one task) on CPU 0, due to run at time 0.
fn add_dd(sim: &mut Sim) -> u32 {
    let id = sim.k().sched.tasks.len() as u32;
    let mut table = toml::Table::new();
    table.insert("tasks".into(), 1.into());
    let mut dd = (workload::dd::REGISTRATION.build)(&table);
    dd.start(sim);
    id
}

/// Runs the next queued event; returns the id of the task it ran, if it ran one.
fn run_next(sim: &mut Sim) -> Option<u32> {
    let (t, ev) = sim.k().sched.queue.pop().expect("an event");
    match ev {
        EventKind::Task(id) => {
            sim.run_task(id, t);
            Some(id)
        }
        EventKind::Io(bio) => {
            sim.k().bio_endio(bio, t);
            None
        }
        other => panic!("unexpected event {other:?}"),
    }
}

fn allocstalls(k: &Kernel) -> u64 {
    (0..MAX_NR_ZONES)
        .map(|z| k.events.v[VmEvent::AllocstallDma as usize + z])
        .sum()
}

#[test]
fn skipped_folios_go_back_in_their_order() {
    let mut k = kernel(64, 16);
    let normal = zone_of(&k, ZONE_NORMAL);
    let dma32 = zone_of(&k, ZONE_DMA32);
    let mut pages = Vec::new();
    for zi in [normal, normal, normal, dma32] {
        let p = k.zones[zi].rmqueue(&mut k.pages, 0).unwrap();
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
    let list = k.lruvecs[0].list(LRU_INACTIVE_FILE);
    assert_eq!(
        k.pages.tail(list),
        Some(pages[0]),
        "oldest skipped is the tail"
    );
    assert_eq!(k.pages.first(list), Some(pages[2]));
    assert_eq!(k.events.v[VmEvent::PgskipDma as usize + ZONE_NORMAL], 3);
}

#[test]
fn allow_direct_reclaim_needs_more_than_half_the_min_reserve() {
    let mut sim = Sim::new(kernel(64, 16));
    let kswapd = add_kswapd(&mut sim);
    let mut guard = sim.k();
    let k = &mut *guard;
    let normal = zone_of(k, ZONE_NORMAL);
    let dma32 = zone_of(k, ZONE_DMA32);
    let min = k.zones[normal].wmark_pages(WMARK_MIN);
    assert!(min > 100, "min {min}");
    // Nothing reclaimable anywhere: no reserve, never throttled.
    let mut held = fill_zone(k, normal, 0, 0);
    assert!(k.allow_direct_reclaim(0));
    // Normal has reclaimable pages and exactly min/2 free; DMA32 (all free) has none and
    // is left out of both sums.
    for p in held.drain(..(min / 2) as usize) {
        k.zones[normal].free_one_page(&mut k.pages, p, 0);
    }
    for p in held.drain(..10) {
        add_to_lru(k, p);
    }
    k.nodes[0].kswapd_highest_zoneidx = ZONE_MOVABLE;
    assert!(
        !k.allow_direct_reclaim(0),
        "free == reserve/2 is not enough"
    );
    // kswapd must be awake while tasks are throttled: woken, its request capped at Normal.
    assert!(!k.nodes[0].kswapd_wait.is_active());
    assert_eq!(k.nodes[0].kswapd_highest_zoneidx, ZONE_NORMAL);
    assert_eq!(k.sched.tasks[kswapd as usize].next_at, Some(0));
    assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 0);
    // One more free page passes.
    let p = held.pop().unwrap();
    k.zones[normal].free_one_page(&mut k.pages, p, 0);
    assert!(k.allow_direct_reclaim(0));
    // Back below with kswapd already awake (off kswapd_wait): nothing more is woken, and
    // the zone request is left alone.
    k.zones[normal].rmqueue(&mut k.pages, 0).unwrap();
    k.nodes[0].kswapd_highest_zoneidx = ZONE_DMA32;
    assert!(!k.allow_direct_reclaim(0));
    assert_eq!(k.nodes[0].kswapd_highest_zoneidx, ZONE_DMA32);
    assert_eq!(k.sched.queue.len(), 1, "kswapd's one wake-up");
    // DMA32 becomes reclaimable: its min joins the reserve and its free pages the sum.
    let q = k.zones[dma32].rmqueue(&mut k.pages, 0).unwrap();
    add_to_lru(k, q);
    assert!(k.allow_direct_reclaim(0));
}

#[test]
fn throttled_reclaimer_sleeps_until_kswapd_restores_the_reserve() {
    let mut sim = Sim::new(kernel(64, 0));
    let (normal, reserve) = {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
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
        assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
        assert_eq!(allocstalls(&k), 0);
        assert_eq!(k.nodes[0].pfmemalloc_wait.waiters(), &[dd]);
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
        let waiting = sim.k().nodes[0].pfmemalloc_wait.is_active();
        let id = run_next(&mut sim);
        let k = sim.k();
        if waiting && !k.nodes[0].pfmemalloc_wait.is_active() {
            assert_eq!(id, Some(kswapd), "only kswapd wakes the throttled reader");
            assert!(k.zones[normal].nr_free_pages > reserve / 2);
            // Mid-balance (after a kswapd_shrink_node pass), not prepare_kswapd_sleep.
            assert!(!k.pgdat_balanced(0, 0, ZONE_NORMAL));
            woken_at.get_or_insert(k.now);
        }
        if woken_at.is_none() {
            assert_eq!(k.events.get(VmEvent::PgscanDirect), 0);
            assert!(k.events.get(VmEvent::PgscanKswapd) < 8000);
        }
    }
    let k = sim.k();
    assert!(woken_at.is_some(), "never woken");
    assert!(k.events.get(VmEvent::PgstealKswapd) >= 20);
    assert_eq!(allocstalls(&k), 1, "the woken reader went on into reclaim");
    assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
}

#[test]
fn a_premature_wake_up_sends_the_reader_back_to_sleep() {
    // No kswapd thread: only prepare_kswapd_sleep's unconditional wake_up_all wakes.
    let mut sim = Sim::new(kernel(64, 0));
    let (normal, mut held) = {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
        let held = fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        (normal, held)
    };
    let dd = add_dd(&mut sim);
    run_next(&mut sim);
    assert_eq!(sim.k().nodes[0].pfmemalloc_wait.waiters(), &[dd]);
    assert!(!sim.k().prepare_kswapd_sleep(0, 0, ZONE_NORMAL));
    assert!(!sim.k().nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(run_next(&mut sim), Some(dd));
    {
        let k = sim.k();
        assert_eq!(
            k.nodes[0].pfmemalloc_wait.waiters(),
            &[dd],
            "still throttled: asleep again"
        );
        assert_eq!(k.sched.tasks[dd as usize].next_at, None);
        assert_eq!(
            k.events.get(VmEvent::PgscanDirectThrottle),
            1,
            "counted once"
        );
        assert_eq!(allocstalls(&k), 0);
    }
    {
        let mut guard = sim.k();
        let k = &mut *guard;
        for p in held.drain(..40) {
            k.zones[normal].free_one_page(&mut k.pages, p, 0);
        }
        k.prepare_kswapd_sleep(0, 0, ZONE_NORMAL);
    }
    assert_eq!(run_next(&mut sim), Some(dd));
    let k = sim.k();
    assert!(!k.nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(allocstalls(&k), 1);
    assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
}

#[test]
fn a_hopeless_node_does_not_throttle() {
    let mut sim = Sim::new(kernel(64, 0));
    {
        let mut k = sim.k();
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
        fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        k.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES - 1;
        assert!(!k.allow_direct_reclaim(0));
        k.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES;
        assert!(k.allow_direct_reclaim(0));
    }
    let dd = add_dd(&mut sim);
    run_next(&mut sim);
    let k = sim.k();
    assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 0);
    assert!(!k.nodes[0].pfmemalloc_wait.is_active());
    assert_eq!(allocstalls(&k), 1, "straight into do_try_to_free_pages");
    assert!(k.sched.tasks[dd as usize].next_at.is_some());
}
