//! Unit tests of lumpy reclaim (`mm::vmscan_lumpy`): the cursor loop of 2.6.36 and 2.6.37
//! on hand-built blocks, `set_lumpy_reclaim_mode` and `should_reclaim_stall` against the
//! kernels' rules.

use super::*;
use crate::testing::*;

/// A kernel of 64 MiB with `variant.high_order_reclaim = v`.
fn lumpy_kernel(v: &str) -> Kernel {
    kernel_with(
        64,
        16,
        &format!("[variant]\nhigh_order_reclaim = \"{v}\"\n"),
    )
}

/// An order-4 block (16 pages, naturally aligned) off ZONE_NORMAL's free lists: its first
/// pfn.
fn block(k: &mut Kernel) -> u32 {
    let normal = zone_of(k, ZONE_NORMAL);
    let b = k.mem.zones[normal].rmqueue(&mut k.mem.pages, 4).unwrap();
    assert_eq!(b % 16, 0);
    b
}

/// Page `p` as page cache on list `lru` of lruvec 0 (PG_active on an active list).
fn on_lru(k: &mut Kernel, p: u32, lru: usize) {
    let z = k.page_zonenum(p);
    k.mem.pages.fields_mut(p).owner = 0;
    if is_active_lru(lru) {
        k.mem.pages.set(p, pg::ACTIVE);
    }
    k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, lru, z);
    k.mem.nodes[0].nr_file_pages += 1;
}

fn lru_pages(k: &Kernel) -> u64 {
    (0..NR_LRU_LISTS).map(|l| k.memcg.lruvecs[0].total(l)).sum()
}

fn isolate(k: &mut Kernel, order: u32, nr_to_scan: u64) -> (LumpyIsolate, Isolated, Vec<u32>) {
    let mut sc = ScanControl::new(false, 32, order, ZONE_NORMAL);
    sc.lumpy_reclaim_mode = LumpyMode::Async;
    let mut tail = Isolated::empty(LRU_INACTIVE_FILE);
    let mut lumpy = Vec::new();
    let r = k.isolate_lru_pages_lumpy(0, nr_to_scan, LRU_INACTIVE_FILE, &sc, &mut tail, &mut lumpy);
    (r, tail, lumpy)
}

#[test]
fn a_block_all_on_the_lru_is_isolated_whole_from_either_list() {
    for v in ["lumpy", "lowlumpy"] {
        let mut k = lumpy_kernel(v);
        let b = block(&mut k);
        // The tail page is the block's 7th; five others are active, two dirty.
        on_lru(&mut k, b + 6, LRU_INACTIVE_FILE);
        for i in (0..16).filter(|&i| i != 6) {
            let lru = if i % 3 == 0 {
                LRU_ACTIVE_FILE
            } else {
                LRU_INACTIVE_FILE
            };
            on_lru(&mut k, b + i, lru);
        }
        k.mem.pages.set(b + 1, pg::DIRTY);
        k.mem.pages.set(b + 15, pg::DIRTY);
        let (r, tail, lumpy) = isolate(&mut k, 4, 32);
        let want = LumpyIsolate {
            nr_scanned: 16,
            nr_taken: 16,
            nr_lumpy_taken: 15,
            nr_lumpy_dirty: 2,
            nr_lumpy_failed: 0,
            nr_cursor: 15,
        };
        assert_eq!(r, want, "{v}");
        assert_eq!(tail.pages(), &[b + 6]);
        let want: Vec<u32> = (0..16).filter(|&i| i != 6).map(|i| b + i).collect();
        assert_eq!(lumpy, want);
        // Off every list, each counted isolated once: every page in one place.
        assert_eq!(lru_pages(&k), 0);
        assert_eq!(k.mem.nodes[0].nr_isolated, [0, 16]);
        assert!((b..b + 16).all(|p| k.mem.pages.flags(p) & pg::LRU == 0));
        assert_eq!(k.check_page_places(&[]), Ok(()));
        assert_eq!(k.check_lists(), Ok(()));
    }
}

/// The block `b`: page 0 the tail, page 3 free (back on the buddy lists), page 9 held by
/// someone (owned, off the LRU), the rest on the inactive file list.
fn block_with_a_hole_and_a_held_page(k: &mut Kernel) -> u32 {
    let b = block(k);
    for i in (0..16).filter(|&i| i != 3 && i != 9) {
        on_lru(k, b + i, LRU_INACTIVE_FILE);
    }
    let normal = zone_of(k, ZONE_NORMAL);
    k.mem.zones[normal].free_one_page(&mut k.mem.pages, b + 3, 0);
    k.mem.pages.fields_mut(b + 9).owner = 0;
    b
}

#[test]
fn lowlumpy_passes_a_free_page_and_abandons_the_block_at_a_held_one() {
    let mut k = lumpy_kernel("lowlumpy");
    let b = block_with_a_hole_and_a_held_page(&mut k);
    let (r, tail, lumpy) = isolate(&mut k, 4, 1);
    // 1, 2 taken; 3 free: on; 4..=8 taken; 9 in use: one failure, the rest left.
    let want = LumpyIsolate {
        nr_scanned: 8,
        nr_taken: 8,
        nr_lumpy_taken: 7,
        nr_lumpy_dirty: 0,
        nr_lumpy_failed: 1,
        nr_cursor: 9,
    };
    assert_eq!(r, want);
    assert_eq!(tail.pages(), &[b]);
    assert_eq!(lumpy, [1, 2, 4, 5, 6, 7, 8].map(|i| b + i));
    assert_eq!(lru_pages(&k), 6, "pages 10..16 stay on the LRU");
    assert!((b + 10..b + 16).all(|p| k.mem.pages.flags(p) & pg::LRU != 0));
    assert_eq!(k.mem.nodes[0].nr_isolated, [0, 8]);
    assert_eq!(k.check_page_places(&[b + 9]), Ok(()));
}

#[test]
fn lumpy_goes_on_past_a_page_it_cannot_take_counting_it_and_not_a_free_one() {
    let mut k = lumpy_kernel("lumpy");
    let b = block_with_a_hole_and_a_held_page(&mut k);
    let (r, _, lumpy) = isolate(&mut k, 4, 1);
    let want = LumpyIsolate {
        nr_scanned: 14,
        nr_taken: 14,
        nr_lumpy_taken: 13,
        nr_lumpy_dirty: 0,
        nr_lumpy_failed: 1,
        nr_cursor: 15,
    };
    assert_eq!(r, want);
    let want: Vec<u32> = (1..16)
        .filter(|&i| i != 3 && i != 9)
        .map(|i| b + i)
        .collect();
    assert_eq!(lumpy, want);
    assert_eq!(lru_pages(&k), 0);
    assert_eq!(k.check_page_places(&[b + 9]), Ok(()));
}

#[test]
fn order_zero_reclaim_takes_no_neighbours() {
    let mut k = lumpy_kernel("lumpy");
    let b = block(&mut k);
    for i in 0..16 {
        on_lru(&mut k, b + i, LRU_INACTIVE_FILE);
    }
    let (r, tail, lumpy) = isolate(&mut k, 0, 4);
    assert_eq!(
        r,
        LumpyIsolate {
            nr_scanned: 4,
            nr_taken: 4,
            ..Default::default()
        }
    );
    assert_eq!(tail.pages(), &[b, b + 1, b + 2, b + 3], "the oldest first");
    assert!(lumpy.is_empty());
    assert_eq!(lru_pages(&k), 12);
}

#[test]
fn the_lumpy_mode_follows_order_and_priority() {
    let k = lumpy_kernel("lowlumpy");
    let mode = |order, priority| {
        let mut sc = ScanControl::new(false, 32, order, ZONE_NORMAL);
        sc.priority = priority;
        k.set_lumpy_reclaim_mode(&sc)
    };
    // Never for order 0; a costly order at once; a small order > 0 below DEF_PRIORITY − 2.
    assert_eq!(mode(0, DEF_PRIORITY), LumpyMode::None);
    assert_eq!(mode(0, 0), LumpyMode::None);
    assert_eq!(mode(4, DEF_PRIORITY), LumpyMode::Async);
    assert_eq!(mode(9, DEF_PRIORITY), LumpyMode::Async);
    assert_eq!(mode(3, DEF_PRIORITY - 2), LumpyMode::None);
    assert_eq!(mode(3, DEF_PRIORITY - 3), LumpyMode::Async);
    assert_eq!(mode(1, 0), LumpyMode::Async);
}

#[test]
fn direct_reclaim_stalls_as_should_reclaim_stall_says() {
    let sc = |kswapd, order, priority, mode| {
        let mut sc = ScanControl::new(kswapd, 32, order, ZONE_NORMAL);
        sc.priority = priority;
        sc.lumpy_reclaim_mode = mode;
        sc
    };
    use LumpyMode::{Async, None};
    // A costly order stalls at any priority (≤ DEF_PRIORITY) when a page was not freed.
    assert!(should_reclaim_stall(
        10,
        9,
        &sc(false, 9, DEF_PRIORITY, Async)
    ));
    assert!(!should_reclaim_stall(
        10,
        10,
        &sc(false, 9, DEF_PRIORITY, Async)
    ));
    assert!(
        !should_reclaim_stall(10, 9, &sc(true, 9, 0, Async)),
        "kswapd"
    );
    assert!(
        !should_reclaim_stall(10, 9, &sc(false, 9, 0, None)),
        "lumpy mode dropped"
    );
    // A small order only at DEF_PRIORITY / 3 = 4 or below.
    assert!(should_reclaim_stall(10, 0, &sc(false, 2, 4, Async)));
    assert!(!should_reclaim_stall(10, 0, &sc(false, 2, 5, Async)));
}

#[test]
fn lumpy_reclaim_of_large_folios_is_refused_by_name() {
    let text = "[machine]\nmemory_mb_per_node = 64\n[workload]\nkind = \"dd\"\ntasks = 1\n\
                [variant]\nhigh_order_reclaim = \"lowlumpy\"\nlarge_folio_readahead = true\n";
    let e = crate::Scenario::parse(text, "t.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("high_order_reclaim") && e.contains("large_folio_readahead"),
        "{e}"
    );
    let text = text.replace("\"lowlumpy\"", "\"lumpier\"");
    let e = crate::Scenario::parse(&text, "t.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("lumpier") && e.contains("lowlumpy"), "{e}");
}
