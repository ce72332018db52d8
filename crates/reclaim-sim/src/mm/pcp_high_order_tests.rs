//! Unit tests of 6.x's per-CPU lists of pageblock-order blocks (`mm::pcp`,
//! `PcpEra::high_order_lists`): a refill takes two blocks and parks one, a parked block is
//! invisible to the watermark check and to the other CPUs until a drain, a freed block joins
//! the freeing CPU's list and a drain at `high` returns the oldest first, a drain from the
//! order-0 list goes on into the blocks, a block freed while kswapd reclaims goes straight
//! back, and without the switch every block comes from and goes to the buddy lists.

use crate::kernel::Kernel;
use crate::mm::gfp::{__GFP_COMP, GFP_HIGHUSER_MOVABLE};
use crate::mm::page_alloc::{AllocContext, ALLOC_WMARK_LOW};
use crate::mm::zone::{PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER, ZONE_NORMAL};
use crate::testing::{kernel_of, zone_of};

/// One node of `mb` MiB of ZONE_NORMAL on `cpus` CPUs, all free, with `variant` text.
fn machine_of(mb: u64, cpus: u32, variant: &str) -> (Kernel, usize) {
    let k = kernel_of(&format!(
        "[machine]\nmemory_mb_per_node = {mb}\ndma32_mb = 0\ncpus_per_node = {cpus}\n\
         [workload]\nkind = \"dd\"\ntasks = 1\n{variant}"
    ));
    let normal = zone_of(&k, ZONE_NORMAL);
    (k, normal)
}

/// [`machine_of`] on two CPUs.
fn machine(mb: u64, variant: &str) -> (Kernel, usize) {
    machine_of(mb, 2, variant)
}

fn large_folio() -> AllocContext {
    AllocContext::new(GFP_HIGHUSER_MOVABLE | __GFP_COMP, PAGEBLOCK_ORDER, 0)
}

/// A pageblock-order folio of zone `zi`, taken straight off the buddy lists.
fn large_folio_of(k: &mut Kernel, zi: usize) -> u32 {
    let p = k.mem.zones[zi]
        .rmqueue(&mut k.mem.pages, PAGEBLOCK_ORDER)
        .unwrap();
    k.prep_compound_folio(p, PAGEBLOCK_ORDER);
    p
}

/// `pcp->count` of `cpu`'s list of zone `zi`.
fn pcp_count(k: &Kernel, zi: usize, cpu: u32) -> u32 {
    k.percpu.pcp.pcp_count(k.percpu.pcp.idx(zi, cpu))
}

/// Blocks of pageblock order and above on zone `zi`'s buddy lists, in pages.
fn whole_free(k: &Kernel, zi: usize) -> u64 {
    let z = &k.mem.zones[zi];
    (PAGEBLOCK_ORDER as usize..z.nr_free_mt[0].len())
        .map(|o| z.nr_free_mt.iter().map(|mt| mt[o]).sum::<u64>() << o)
        .sum()
}

#[test]
fn a_refill_takes_two_blocks_and_parks_one_for_its_cpu() {
    let (mut k, normal) = machine(256, "");
    let free = k.mem.zones[normal].nr_free_pages;
    let p = k.get_page(&large_folio(), ALLOC_WMARK_LOW, 0).unwrap();
    assert_eq!(
        k.mem.pages.fields(p).order as u32,
        PAGEBLOCK_ORDER,
        "a compound folio"
    );
    // rmqueue_bulk(order 9, max(batch >> 9, 2) = 2): both blocks leave the buddy lists.
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free - 2 * PAGEBLOCK_NR_PAGES as u64
    );
    assert_eq!(pcp_count(&k, normal, 0), PAGEBLOCK_NR_PAGES);
    assert_eq!(pcp_count(&k, normal, 1), 0);
    // The other CPU cannot have it: its own refill takes two more.
    k.get_page(&large_folio(), ALLOC_WMARK_LOW, 1).unwrap();
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free - 4 * PAGEBLOCK_NR_PAGES as u64
    );
    // CPU 0's next one is its parked block: no refill, the buddy lists untouched.
    let parked = k.percpu.pcp.thp_blocks(k.percpu.pcp.idx(normal, 0))[0];
    let q = k.get_page(&large_folio(), ALLOC_WMARK_LOW, 0).unwrap();
    assert_eq!(q, parked);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free - 4 * PAGEBLOCK_NR_PAGES as u64
    );
    assert_eq!(pcp_count(&k, normal, 0), 0);
    assert_eq!(k.check_conservation(3 * PAGEBLOCK_NR_PAGES as u64), Ok(()));
}

#[test]
fn a_parked_block_is_invisible_to_the_watermark_check_until_a_drain() {
    let (mut k, normal) = machine(256, "");
    // Take whole blocks off the buddy lists until two are left, plenty of order-0 pages
    // besides (the order-0 part of the watermark check passes throughout).
    let mut held = Vec::new();
    while whole_free(&k, normal) > 2 * PAGEBLOCK_NR_PAGES as u64 {
        held.push(
            k.mem.zones[normal]
                .rmqueue(&mut k.mem.pages, PAGEBLOCK_ORDER)
                .unwrap(),
        );
    }
    for &b in &held[..8] {
        // Give back all of eight blocks but one page each: fragments, no whole block.
        for p in b + 1..b + PAGEBLOCK_NR_PAGES {
            k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
        }
    }
    assert_eq!(whole_free(&k, normal), 2 * PAGEBLOCK_NR_PAGES as u64);
    k.get_page(&large_folio(), ALLOC_WMARK_LOW, 0).unwrap();
    assert_eq!(whole_free(&k, normal), 0, "the refill took both");
    assert_eq!(pcp_count(&k, normal, 0), PAGEBLOCK_NR_PAGES);
    // __zone_watermark_ok() reads the buddy lists: the block on CPU 0's list does not count,
    // for CPU 0 either.
    assert_eq!(k.get_page(&large_folio(), ALLOC_WMARK_LOW, 0), None);
    assert_eq!(k.get_page(&large_folio(), ALLOC_WMARK_LOW, 1), None);
    // drain_all_pages() (the slow path's after a failed direct reclaim) gives it back.
    k.drain_all_pages();
    assert_eq!(whole_free(&k, normal), PAGEBLOCK_NR_PAGES as u64);
    assert!(k.get_page(&large_folio(), ALLOC_WMARK_LOW, 1).is_some());
}

#[test]
fn a_freed_block_joins_the_freeing_cpus_list_and_high_drains_the_oldest_first() {
    // 1 GiB on one CPU: `high` is the zone's low watermark, between two and three blocks.
    let (mut k, normal) = machine_of(1024, 1, "");
    let i = k.percpu.pcp.idx(normal, 0);
    let (high, batch) = (k.percpu.pcp.high[i], k.percpu.pcp.batch[i]);
    assert!(
        (2 * PAGEBLOCK_NR_PAGES..3 * PAGEBLOCK_NR_PAGES).contains(&high),
        "high {high}: two blocks fit, a third reaches it"
    );
    let folios: Vec<u32> = (0..3).map(|_| large_folio_of(&mut k, normal)).collect();
    let free = k.mem.zones[normal].nr_free_pages;
    k.free_large_folio(folios[0], 0);
    k.free_large_folio(folios[1], 0);
    assert_eq!(pcp_count(&k, normal, 0), 2 * PAGEBLOCK_NR_PAGES);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages, free,
        "parked, not on the buddy lists"
    );
    // The third reaches high: free_pcppages_bulk(nr_pcp_free() = batch pages), this list
    // first, from its tail (list_last_entry): the first block freed, whole.
    assert!(batch < PAGEBLOCK_NR_PAGES);
    k.free_large_folio(folios[2], 0);
    assert_eq!(k.percpu.pcp.thp_blocks(i), &[folios[1], folios[2]]);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free + PAGEBLOCK_NR_PAGES as u64
    );
    assert_eq!(k.check_lists(), Ok(()));
    assert_eq!(k.check_conservation(0), Ok(()));
    assert_eq!(k.check_page_places(&[]), Ok(()));
}

#[test]
fn without_high_order_lists_blocks_come_from_and_go_to_the_buddy_lists() {
    let (mut k, normal) = machine(256, "[variant]\npcp_before_5_14 = true\n");
    let free = k.mem.zones[normal].nr_free_pages;
    let p = k.get_page(&large_folio(), ALLOC_WMARK_LOW, 0).unwrap();
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free - PAGEBLOCK_NR_PAGES as u64
    );
    assert_eq!(k.percpu.pcp.total(), 0);
    k.free_large_folio(p, 0);
    assert_eq!(k.mem.zones[normal].nr_free_pages, free);
    assert_eq!(k.percpu.pcp.total(), 0);
}

/// A 1 GiB zone on one CPU with the blocks `n` order-9 folios freed on CPU 0 left (parked on
/// its list while under `high`), and the folios.
fn parked_blocks(n: usize) -> (Kernel, usize, Vec<u32>) {
    let (mut k, normal) = machine_of(1024, 1, "");
    let folios: Vec<u32> = (0..n).map(|_| large_folio_of(&mut k, normal)).collect();
    for &p in &folios {
        k.free_large_folio(p, 0);
    }
    (k, normal, folios)
}

#[test]
fn a_drain_from_the_order0_list_goes_on_into_the_blocks() {
    let (mut k, normal, folios) = parked_blocks(2);
    let pages: Vec<u32> = (0..100)
        .map(|_| k.mem.zones[normal].rmqueue(&mut k.mem.pages, 0).unwrap())
        .collect();
    for &p in &pages {
        k.free_folio(p, 0);
    }
    assert_eq!(pcp_count(&k, normal, 0), 2 * PAGEBLOCK_NR_PAGES + 100);
    let free = k.mem.zones[normal].nr_free_pages;
    // 150 pages from the order-0 list first: its 100, then one block (the tail's, the
    // first freed), whole: 612 pages in all.
    k.free_pcppages_bulk(normal, 0, 150, false);
    let i = k.percpu.pcp.idx(normal, 0);
    assert_eq!(k.percpu.pcp.thp_blocks(i), &[folios[1]]);
    assert_eq!(k.percpu.pcp.count[i], 0);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free + 100 + PAGEBLOCK_NR_PAGES as u64
    );
    // drain_pages_zone() empties both lists.
    k.drain_pages_zone(0, normal);
    assert_eq!(pcp_count(&k, normal, 0), 0);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free + 100 + 2 * PAGEBLOCK_NR_PAGES as u64
    );
    assert_eq!(k.check_page_places(&[]), Ok(()));
}

#[test]
fn while_kswapd_reclaims_a_freed_block_goes_straight_back() {
    // ZONE_RECLAIM_ACTIVE: nr_pcp_high() = min(batch << 2, high) = 252 < 512, so the free
    // that adds the block drains it (nr_pcp_free(): batch = 63 pages, a block whole).
    let (mut k, normal, _) = parked_blocks(0);
    let p = large_folio_of(&mut k, normal);
    let free = k.mem.zones[normal].nr_free_pages;
    k.mem.zones[normal].reclaim_active = true;
    k.free_large_folio(p, 0);
    assert_eq!(pcp_count(&k, normal, 0), 0);
    assert_eq!(
        k.mem.zones[normal].nr_free_pages,
        free + PAGEBLOCK_NR_PAGES as u64
    );
}
