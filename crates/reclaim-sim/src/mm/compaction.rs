//! What reclaim asks of compaction before compaction exists in the model: whether it could
//! run (`compaction_suitable`, with the fragmentation index), whether reclaim has done
//! enough for it (`compaction_ready`), and the gap it wants (`compact_gap`). Models
//! mm/compaction.c and mm/vmscan.c of Linux 6.x (6.4+: `compaction_suitable` returns a bool
//! and checks the order-0 watermark at min, or low for costly orders, plus the gap).
//!
//! Not modelled yet: compaction itself (`try_to_compact_pages`, the migrate and free
//! scanners, deferral, kcompactd, page migration) — so reclaim for order > 0 stops where the
//! kernel would hand over to compaction, and the allocation then fails or retries as the
//! slow path says (`mm::page_alloc`).

use super::page_alloc::PAGE_ALLOC_COSTLY_ORDER;
use super::zone::{Zone, NR_PAGE_ORDERS, WMARK_HIGH, WMARK_LOW, WMARK_MIN};
use crate::kernel::Kernel;

/// `sysctl_extfrag_threshold` (vm.extfrag_threshold) default: a costly request is worth
/// compacting for only when its fragmentation index is above this.
pub const EXTFRAG_THRESHOLD: i32 = 500;

/// `compact_gap(order)`: the free pages compaction wants beyond the watermark, twice the
/// request (the migration targets it isolates).
pub fn compact_gap(order: u32) -> u64 {
    2u64 << order
}

/// `fragmentation_index()` (`fill_contig_page_info` + `__fragmentation_index`): −1000 if a
/// free block of `order` exists, 0 with nothing free; otherwise 0 … 1000, towards 0 when a
/// failure would be for lack of memory and towards 1000 when it would be for fragmentation.
pub fn fragmentation_index(zone: &Zone, order: u32) -> i32 {
    let requested = 1u64 << order;
    let (mut free_pages, mut blocks_total, mut blocks_suitable) = (0u64, 0u64, 0u64);
    for o in 0..NR_PAGE_ORDERS {
        let blocks = zone.nr_free[o];
        blocks_total += blocks;
        free_pages += blocks << o;
        if o as u32 >= order {
            blocks_suitable += blocks << (o as u32 - order);
        }
    }
    if blocks_total == 0 {
        return 0;
    }
    if blocks_suitable > 0 {
        return -1000;
    }
    1000 - ((1000 + free_pages * 1000 / requested) / blocks_total) as i32
}

/// `__compaction_suitable()`: enough order-0 free pages for compaction's migration
/// targets — the min watermark (low for costly orders) plus `compact_gap`, as
/// `__zone_watermark_ok` at order 0 with free pages `free`.
fn __compaction_suitable(zone: &Zone, order: u32, highest_zoneidx: usize, free: u64) -> bool {
    let wmark = if order > PAGE_ALLOC_COSTLY_ORDER {
        WMARK_LOW
    } else {
        WMARK_MIN
    };
    let watermark = zone.wmark_pages(wmark) + compact_gap(order);
    zone.watermark_ok(0, watermark, highest_zoneidx, free as i64)
}

/// `compaction_suitable()` (6.4+): the watermark test at NR_FREE_PAGES (`zone_page_state`),
/// and for costly orders a fragmentation index above `EXTFRAG_THRESHOLD` (a failure that is
/// for lack of memory is reclaim's to fix, not compaction's).
pub fn compaction_suitable(zone: &Zone, order: u32, highest_zoneidx: usize) -> bool {
    if !__compaction_suitable(zone, order, highest_zoneidx, zone.zone_page_state_free()) {
        return false;
    }
    if order > PAGE_ALLOC_COSTLY_ORDER {
        let fragindex = fragmentation_index(zone, order);
        if (0..=EXTFRAG_THRESHOLD).contains(&fragindex) {
            return false;
        }
    }
    true
}

/// `compaction_ready()` (mm/vmscan.c, 6.x): reclaim for `order` may leave zone `zone` to
/// compaction when the allocation would already pass its min watermark, or compaction is
/// suitable and the zone is above its high watermark plus the gap.
pub fn compaction_ready(zone: &Zone, order: u32, reclaim_idx: usize) -> bool {
    if zone.zone_watermark_ok(order, zone.wmark_pages(WMARK_MIN), reclaim_idx) {
        return true;
    }
    if !compaction_suitable(zone, order, reclaim_idx) {
        return false;
    }
    let watermark = zone.wmark_pages(WMARK_HIGH) + compact_gap(order);
    zone.zone_watermark_ok_safe(0, watermark, reclaim_idx)
}

impl Kernel {
    /// `should_continue_reclaim()` (mm/vmscan.c, 6.x) after a pass of `shrink_node()` on
    /// node `nid` that reclaimed `nr_reclaimed`: only in reclaim/compaction mode (order > 0,
    /// and costly or priority below DEF_PRIORITY − 2), go round again unless nothing was
    /// reclaimed, a zone up to `reclaim_idx` already passes its min watermark at the order
    /// or compaction is suitable there, or the inactive lists (anon only with swap) hold no
    /// more than `compact_gap(order)`.
    pub fn should_continue_reclaim(
        &self,
        nid: u32,
        nr_reclaimed: u64,
        order: u32,
        priority: i32,
        reclaim_idx: usize,
    ) -> bool {
        use super::lru::{LRU_INACTIVE_ANON, LRU_INACTIVE_FILE};
        use super::vmscan::DEF_PRIORITY;
        let in_reclaim_compaction =
            order > 0 && (order > PAGE_ALLOC_COSTLY_ORDER || priority < DEF_PRIORITY - 2);
        if !in_reclaim_compaction || nr_reclaimed == 0 {
            return false;
        }
        for &zi in &self.mem.nodes[nid as usize].zones {
            let z = &self.mem.zones[zi];
            if z.zone_idx > reclaim_idx || z.managed_pages == 0 {
                continue;
            }
            if z.zone_watermark_ok(order, z.wmark_pages(WMARK_MIN), reclaim_idx)
                || compaction_suitable(z, order, reclaim_idx)
            {
                return false;
            }
        }
        let anon = self.swap.nr_swap_pages() > 0;
        let inactive: u64 = (0..self.memcg.groups.len() as u16)
            .map(|memcg| {
                let lv = &self.memcg.lruvecs[self.mem_cgroup_lruvec(memcg, nid)];
                lv.total(LRU_INACTIVE_FILE) + if anon { lv.total(LRU_INACTIVE_ANON) } else { 0 }
            })
            .sum();
        inactive > compact_gap(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page::Pages;
    use crate::mm::zone::{free_lists, NR_FREE_LISTS, ZONE_NORMAL};

    fn zone_with(blocks: &[(u32, u32)]) -> (Zone, Pages) {
        let mut pages = Pages::new(4096, NR_FREE_LISTS as u32);
        let mut z = Zone::new(ZONE_NORMAL, 0, 0, 4096, free_lists(&pages, 0));
        for &(pfn, order) in blocks {
            z.free_one_page(&mut pages, pfn, order);
        }
        (z, pages)
    }

    #[test]
    fn fragmentation_index_known_values() {
        // Nothing free: 0.
        assert_eq!(fragmentation_index(&zone_with(&[]).0, 9), 0);
        // A block of the order: −1000.
        assert_eq!(fragmentation_index(&zone_with(&[(0, 9)]).0, 9), -1000);
        // 64 order-0 pages, every other one (no merges), asked for order 9:
        // 1000 − (1000 + 64·1000/512) / 64 = 1000 − (1000 + 125) / 64 = 1000 − 17 = 983.
        let singles: Vec<(u32, u32)> = (0..64).map(|i| (2 * i, 0)).collect();
        assert_eq!(fragmentation_index(&zone_with(&singles).0, 9), 983);
        // Two order-8 blocks in different pageblocks, order 9: 512 pages free in 2 blocks:
        // 1000 − (1000 + 1000) / 2 = 0 — as much memory as asked, in two pieces.
        assert_eq!(
            fragmentation_index(&zone_with(&[(0, 8), (1024, 8)]).0, 9),
            0
        );
    }

    #[test]
    fn compaction_suitable_needs_the_gap_and_for_costly_orders_fragmentation() {
        // 2048 pages free as 128 order-4 blocks that cannot merge: every other order-4
        // block of the zone.
        let holes: Vec<(u32, u32)> = (0..128).map(|i| (32 * i, 4)).collect();
        let (mut z, _p) = zone_with(&holes);
        z.watermark = [100, 200, 300, 400];
        // Order 9, costly: low 200 + gap 1024 < 2048 free; fragindex = 1000 − (1000 +
        // 2048·1000/512)/128 = 1000 − 39 = 961 > 500: suitable.
        assert_eq!(fragmentation_index(&z, 9), 961);
        assert!(compaction_suitable(&z, 9, ZONE_NORMAL));
        // With the low watermark at 1100, 1100 + 1024 ≥ 2048: not suitable.
        z.watermark = [100, 1100, 1200, 1300];
        assert!(!compaction_suitable(&z, 9, ZONE_NORMAL));
        // Order 2 (not costly): min 100 + gap 8, suitable whatever the index.
        assert!(compaction_suitable(&z, 2, ZONE_NORMAL));
        // compaction_ready: order 4 already passes min.
        assert!(compaction_ready(&z, 4, ZONE_NORMAL));
        // order 9: suitable needs low 1100 + 1024: no.
        assert!(!compaction_ready(&z, 9, ZONE_NORMAL));
        z.watermark = [100, 200, 300, 400];
        // suitable, and 2048 free > high 300 + gap 1024: ready.
        assert!(compaction_ready(&z, 9, ZONE_NORMAL));
        z.watermark = [100, 200, 1100, 1200];
        assert!(!compaction_ready(&z, 9, ZONE_NORMAL), "below high + gap");
    }

    #[test]
    fn reclaim_continues_for_compaction_only_while_it_helps() {
        use crate::testing::{fill_zone, kernel};
        let mut k = kernel(64, 0);
        // 100 pages free (below min, and below low + compact_gap(9)), 4000 clean pages on
        // the inactive list.
        fill_zone(&mut k, 0, 100, 4000);
        assert!(k.mem.zones[0].wmark_pages(WMARK_MIN) > 100);
        let z = &k.mem.zones[0];
        assert!(!compaction_suitable(z, 9, ZONE_NORMAL));
        assert!(k.should_continue_reclaim(0, 32, 9, 12, ZONE_NORMAL));
        // Not in reclaim/compaction mode: order 0, or a non-costly order at priority ≥ 10.
        assert!(!k.should_continue_reclaim(0, 32, 0, 5, ZONE_NORMAL));
        assert!(!k.should_continue_reclaim(0, 32, 2, 10, ZONE_NORMAL));
        assert!(k.should_continue_reclaim(0, 32, 2, 9, ZONE_NORMAL));
        // Nothing reclaimed in the pass: stop.
        assert!(!k.should_continue_reclaim(0, 0, 9, 12, ZONE_NORMAL));
        // No more inactive pages than compact_gap(order): stop (order 10's gap is 2048 <
        // 4000: go on; with 1000 inactive, order 9's 1024 stops it).
        assert!(k.should_continue_reclaim(0, 32, 10, 12, ZONE_NORMAL));
        let mut k = kernel(64, 0);
        fill_zone(&mut k, 0, 100, 1000);
        assert!(
            !k.should_continue_reclaim(0, 32, 9, 12, ZONE_NORMAL),
            "1000 ≤ 1024"
        );
    }
}
