//! Zones: watermarks (`__setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`,
//! `calculate_min_free_kbytes`), the watermark check (`__zone_watermark_ok`) and a buddy
//! allocator over per-order free lists. Models mm/page_alloc.c of Linux 6.2 (the per-order
//! check) with the 6.x NR_PAGE_ORDERS = 11. NR_FREE_PAGES is read as the kernel reads it,
//! without the per-CPU deltas (`zone_page_state`) or with them (`zone_page_state_snapshot`,
//! `zone_watermark_ok_safe`); the deltas and the per-CPU page lists are `mm::pcp`'s. Not
//! modelled: migratetypes and
//! pageblocks (and so watermark boosting, which a migratetype fallback triggers), CMA,
//! highatomic reserves, and ZONE_DMA (16 MiB, too small to matter here).

use super::page::{pg, ListId, Pages, NO_OWNER};
use crate::hw::memory::MemoryBandwidth;
use crate::sched::WaitQueue;

pub const ZONE_DMA: usize = 0;
pub const ZONE_DMA32: usize = 1;
pub const ZONE_NORMAL: usize = 2;
pub const ZONE_MOVABLE: usize = 3;
pub const MAX_NR_ZONES: usize = 4;
pub const ZONE_NAMES: [&str; MAX_NR_ZONES] = ["dma", "dma32", "normal", "movable"];

/// NR_PAGE_ORDERS (MAX_ORDER + 1 in 6.x; MAX_ORDER exclusive in 6.2 terms).
pub const NR_PAGE_ORDERS: usize = 11;
pub const MAX_ORDER_NR_PAGES: u32 = 1 << (NR_PAGE_ORDERS - 1);

pub const WMARK_MIN: usize = 0;
pub const WMARK_LOW: usize = 1;
pub const WMARK_HIGH: usize = 2;
pub const WMARK_PROMO: usize = 3;

/// `sysctl_lowmem_reserve_ratio` defaults: DMA 256, DMA32 256, NORMAL 32, MOVABLE 0.
pub const LOWMEM_RESERVE_RATIO: [u64; MAX_NR_ZONES] = [256, 256, 32, 0];

#[derive(Debug)]
pub struct Zone {
    /// ZONE_DMA32, ZONE_NORMAL, …
    pub zone_idx: usize,
    pub nid: u32,
    pub start_pfn: u32,
    pub managed_pages: u64,
    /// `_watermark[WMARK_MIN..=WMARK_PROMO]`.
    pub watermark: [u64; 4],
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    /// The pages on the buddy lists: NR_FREE_PAGES with every CPU's delta folded in (what
    /// `zone_page_state_snapshot` reads). Pages on per-CPU lists are not in it.
    pub nr_free_pages: u64,
    /// Σ over CPUs of `vm_stat_diff[NR_FREE_PAGES]` (`mm::pcp`): the global count that
    /// `zone_page_state` reads is `nr_free_pages − percpu_diff`.
    pub percpu_diff: i64,
    /// `zone->percpu_drift_mark` (0: unset).
    pub percpu_drift_mark: u64,
    /// `free_area[order].nr_free`.
    pub nr_free: [u64; NR_PAGE_ORDERS],
    /// `free_area[order].free_list` in `Pages`.
    pub free_lists: [ListId; NR_PAGE_ORDERS],
}

/// A NUMA node: `pg_data_t`.
#[derive(Debug)]
pub struct PgData {
    pub node_id: u32,
    /// Indices into `Kernel::zones` of this node's zones, lowest zone type first.
    pub zones: Vec<usize>,
    pub start_pfn: u32,
    pub end_pfn: u32,
    pub memory: MemoryBandwidth,
    /// Task ids of this node's kswapd threads.
    pub kswapd: Vec<u32>,
    /// kswapd threads asleep or napping in `kswapd_try_to_sleep`.
    pub kswapd_wait: WaitQueue,
    pub kswapd_order: u32,
    /// MAX_NR_ZONES is the "no request" sentinel.
    pub kswapd_highest_zoneidx: usize,
    pub kswapd_failures: u32,
    /// Direct reclaimers throttled by `throttle_direct_reclaim`; kswapd's `wake_up_all`
    /// empties it.
    pub pfmemalloc_wait: WaitQueue,
    /// NR_ISOLATED_ANON, NR_ISOLATED_FILE.
    pub nr_isolated: [u64; 2],
    /// NR_FILE_PAGES.
    pub nr_file_pages: u64,
    /// NR_ANON_MAPPED.
    pub nr_anon_mapped: u64,
    /// NR_VMSCAN_WRITE (cumulative).
    pub nr_vmscan_write: u64,
    /// WORKINGSET_REFAULT_ANON, WORKINGSET_ACTIVATE_ANON, WORKINGSET_RESTORE_ANON.
    pub workingset: super::vmstat::WorkingsetStats,
}

/// The free lists of one zone: list ids `first .. first + NR_PAGE_ORDERS` of `pages`.
pub fn free_lists(pages: &Pages, first: u32) -> [ListId; NR_PAGE_ORDERS] {
    std::array::from_fn(|o| pages.list(first + o as u32))
}

impl Zone {
    /// An empty zone (no free pages yet, watermarks unset) of `managed_pages` pages from
    /// `start_pfn`, with its free lists.
    pub fn new(
        zone_idx: usize,
        nid: u32,
        start_pfn: u32,
        managed_pages: u64,
        free_lists: [ListId; NR_PAGE_ORDERS],
    ) -> Zone {
        Zone {
            zone_idx,
            nid,
            start_pfn,
            managed_pages,
            watermark: [0; 4],
            lowmem_reserve: [0; MAX_NR_ZONES],
            nr_free_pages: 0,
            percpu_diff: 0,
            percpu_drift_mark: 0,
            nr_free: [0; NR_PAGE_ORDERS],
            free_lists,
        }
    }

    /// `wmark_pages(z, i)`. The kernel adds `watermark_boost`, which is never raised here
    /// (no migratetype fallbacks are modelled).
    #[inline]
    pub fn wmark_pages(&self, i: usize) -> u64 {
        self.watermark[i]
    }

    pub fn end_pfn(&self) -> u32 {
        self.start_pfn + self.managed_pages as u32
    }

    /// `__zone_watermark_ok()` (6.2) for callers without ALLOC_HIGH/HARDER/OOM, whose free
    /// pages include everything (no CMA, no highatomic reserve in this model).
    pub fn watermark_ok(
        &self,
        order: u32,
        mark: u64,
        highest_zoneidx: usize,
        free_pages: i64,
    ) -> bool {
        let free_pages = free_pages - ((1i64 << order) - 1);
        if free_pages <= (mark + self.lowmem_reserve[highest_zoneidx]) as i64 {
            return false;
        }
        if order == 0 {
            return true;
        }
        (order as usize..NR_PAGE_ORDERS).any(|o| self.nr_free[o] > 0)
    }

    /// `zone_page_state(zone, NR_FREE_PAGES)`: the global count, without the per-CPU
    /// deltas (0 if they make it negative, as the kernel's SMP read does).
    #[inline]
    pub fn zone_page_state_free(&self) -> u64 {
        (self.nr_free_pages as i64 - self.percpu_diff).max(0) as u64
    }

    /// `zone_page_state_snapshot(zone, NR_FREE_PAGES)`: the global count plus every CPU's
    /// delta, which is the buddy lists' true count.
    #[inline]
    pub fn zone_page_state_snapshot_free(&self) -> u64 {
        self.nr_free_pages
    }

    /// `zone_watermark_ok()`: the check against NR_FREE_PAGES as `zone_page_state` reads it.
    #[inline]
    pub fn zone_watermark_ok(&self, order: u32, mark: u64, highest_zoneidx: usize) -> bool {
        self.watermark_ok(
            order,
            mark,
            highest_zoneidx,
            self.zone_page_state_free() as i64,
        )
    }

    /// `zone_watermark_ok_safe()` (4.16, 6.x): below `percpu_drift_mark` the check reads the
    /// snapshot with every CPU's delta.
    #[inline]
    pub fn zone_watermark_ok_safe(&self, order: u32, mark: u64, highest_zoneidx: usize) -> bool {
        let mut free = self.zone_page_state_free();
        if self.percpu_drift_mark != 0 && free < self.percpu_drift_mark {
            free = self.zone_page_state_snapshot_free();
        }
        self.watermark_ok(order, mark, highest_zoneidx, free as i64)
    }

    /// Take a free block of `order` (`__rmqueue_smallest` with `expand`).
    pub fn rmqueue(&mut self, pages: &mut Pages, order: u32) -> Option<u32> {
        let o = if self.nr_free[order as usize] > 0 {
            order as usize // the common case: no split
        } else {
            (order as usize + 1..NR_PAGE_ORDERS).find(|&o| self.nr_free[o] > 0)?
        };
        Some(self.take_block(pages, o, order as usize))
    }

    /// The first block on the order-`o` list, split down to `order` (`expand`: each
    /// split-off upper half goes back on its list). Inlined: it is the allocation run's
    /// inner step.
    #[inline(always)]
    fn take_block(&mut self, pages: &mut Pages, o: usize, order: usize) -> u32 {
        let page = pages
            .first(self.free_lists[o])
            .expect("nr_free counts a block");
        self.del_from_free_list(pages, page, o);
        let mut high = o;
        while high > order {
            high -= 1;
            let buddy = page + (1u32 << high);
            self.add_to_free_list(pages, buddy, high);
        }
        self.nr_free_pages -= 1u64 << order;
        page
    }

    /// `n` consecutive order-0 `rmqueue()` calls, their pages appended to `out`; returns how
    /// many there were pages for. Each call takes the first block of the lowest non-empty
    /// order. When that block is no larger than what is still wanted, the calls would split
    /// it and take every piece in address order, leaving the lists below it as empty as they
    /// were: the block is taken whole. When it is larger, the lists below it are empty, and
    /// the calls would split it, take its first `left` pages in address order (each split's
    /// upper half coming back off its list as the next call's smallest block) and leave the
    /// rest on the lists as the aligned blocks that cover it, one per order: the block is
    /// taken and that rest put back directly. Either way the lists, counters and page
    /// fields end as the single calls leave them, without writing each split-off buddy.
    #[inline]
    pub fn rmqueue_order0_run(
        &mut self,
        pages: &mut Pages,
        n: usize,
        out: &mut impl Extend<u32>,
    ) -> usize {
        let mut left = n;
        while left > 0 {
            let Some(o) = (0..NR_PAGE_ORDERS).find(|&o| self.nr_free[o] > 0) else {
                break;
            };
            let size = 1usize << o;
            let page = self.take_block(pages, o, o);
            let taken = size.min(left);
            // Pages inside a free block are as a split would leave them once taken.
            debug_assert!((page + 1..page + size as u32).all(|p| {
                let f = pages.fields(p);
                f.flags == 0 && f.order == 0 && f.owner == NO_OWNER
            }));
            if taken < size {
                self.expand_rest(pages, page, o, taken as u32);
            }
            out.extend(page..page + taken as u32);
            left -= taken;
        }
        n - left
    }

    /// The rest of an order-`o` block at `page` once its first `taken` pages are gone, put
    /// back on the (empty) lists below `o` as the aligned blocks that cover it, lowest first.
    #[inline]
    fn expand_rest(&mut self, pages: &mut Pages, page: u32, o: usize, taken: u32) {
        let end = page + (1u32 << o);
        let mut at = page + taken;
        while at < end {
            let order = (at - page).trailing_zeros() as usize;
            debug_assert!(order < o && self.nr_free[order] == 0);
            self.add_to_free_list(pages, at, order);
            at += 1 << order;
        }
        self.nr_free_pages += u64::from((1u32 << o) - taken);
    }

    /// Free a block of `order` and merge it with its buddies (`__free_one_page`).
    pub fn free_one_page(&mut self, pages: &mut Pages, page: u32, order: u32) {
        self.nr_free_pages += 1u64 << order;
        let mut pfn = page - self.start_pfn;
        let mut o = order as usize;
        while o < NR_PAGE_ORDERS - 1 {
            let buddy_pfn = pfn ^ (1u32 << o);
            if buddy_pfn as u64 >= self.managed_pages {
                break;
            }
            let buddy = self.start_pfn + buddy_pfn;
            let d = pages.fields(buddy);
            if d.flags & pg::BUDDY == 0 || d.order as usize != o {
                break;
            }
            self.del_from_free_list(pages, buddy, o);
            pfn &= buddy_pfn;
            o += 1;
        }
        self.add_to_free_list(pages, self.start_pfn + pfn, o);
    }

    /// `free_one_page(p, 0)` for each page of `freed` in turn, all of this zone. A page that
    /// starts an aligned block of 2^k pages which all follow it in order is freed as one
    /// order-k block: the single frees would build that block by merges whose intermediate
    /// blocks go on the lower lists and come off them again, and the block's last page
    /// would then merge on from order k exactly as the block does. The lists, counters and
    /// page fields end the same, without writing those intermediate blocks.
    pub fn free_order0_run(&mut self, pages: &mut Pages, freed: &[u32]) {
        let mut i = 0;
        while i < freed.len() {
            let start = freed[i];
            let run = freed[i..]
                .iter()
                .zip(start..)
                .take_while(|(&p, want)| p == *want)
                .count();
            let end = start + run as u32;
            let mut page = start;
            while page < end {
                let order = (page - self.start_pfn)
                    .trailing_zeros()
                    .min((end - page).ilog2())
                    .min(NR_PAGE_ORDERS as u32 - 1);
                self.free_one_page(pages, page, order);
                page += 1 << order;
            }
            i += run;
        }
    }

    fn add_to_free_list(&mut self, pages: &mut Pages, page: u32, o: usize) {
        let d = pages.fields_mut(page);
        d.flags = pg::BUDDY;
        d.order = o as u8;
        d.owner = NO_OWNER;
        pages.add_head(self.free_lists[o], page);
        self.nr_free[o] += 1;
    }

    fn del_from_free_list(&mut self, pages: &mut Pages, page: u32, o: usize) {
        pages.unlink(page);
        let d = pages.fields_mut(page);
        d.flags = 0;
        d.order = 0;
        self.nr_free[o] -= 1;
    }
}

/// The nodes `wake_all_kswapds()` wakes for an allocation from `zonelist` with
/// `highest_zoneidx`: walking the zonelist's managed zones up to that index, each node whose
/// zone differs from the previous zone's node (the kernel's `last_pgdat` test). The
/// zonelist is fixed at boot, so the walk is done once per (node, index) and not per call.
pub fn zonelist_kswapd_nodes(
    zones: &[Zone],
    zonelist: &[usize],
    highest_zoneidx: usize,
) -> Vec<u32> {
    let mut nodes = Vec::new();
    let mut last = u32::MAX;
    for &zi in zonelist {
        let z = &zones[zi];
        if z.zone_idx > highest_zoneidx || z.managed_pages == 0 || z.nid == last {
            continue;
        }
        last = z.nid;
        nodes.push(z.nid);
    }
    nodes
}

/// `int_sqrt`: the integer square root, rounded down.
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `calculate_min_free_kbytes()`: `4·√lowmem_kbytes`, clamped to 128 KiB … `cap` (256 MiB
/// since v5.7, 64 MiB before).
pub fn calculate_min_free_kbytes(lowmem_kbytes: u64, cap: u64) -> u64 {
    int_sqrt(lowmem_kbytes * 16).clamp(128, cap.max(128))
}

/// `__setup_per_zone_wmarks()` (6.x) over every zone of every node. No highmem on 64-bit;
/// ZONE_MOVABLE is treated as highmem is: left out of `lowmem_pages`, with a small fixed
/// minimum, `clamp(managed/1024, SWAP_CLUSTER_MAX, 128)`.
pub fn setup_per_zone_wmarks(
    zones: &mut [Zone],
    min_free_kbytes: u64,
    watermark_scale_factor: u64,
) {
    let pages_min = min_free_kbytes >> 2; // PAGE_SHIFT - 10
    let lowmem_pages: u64 = zones
        .iter()
        .filter(|z| z.zone_idx != ZONE_MOVABLE)
        .map(|z| z.managed_pages)
        .sum();
    for z in zones.iter_mut() {
        let tmp = (pages_min * z.managed_pages)
            .checked_div(lowmem_pages)
            .unwrap_or(0);
        let d = std::cmp::max(tmp >> 2, z.managed_pages * watermark_scale_factor / 10_000);
        z.watermark[WMARK_MIN] = if z.zone_idx == ZONE_MOVABLE {
            (z.managed_pages / 1024).clamp(32, 128)
        } else {
            tmp
        };
        let tmp = z.watermark[WMARK_MIN];
        z.watermark[WMARK_LOW] = tmp + d;
        z.watermark[WMARK_HIGH] = tmp + 2 * d;
        z.watermark[WMARK_PROMO] = tmp + 3 * d;
    }
}

/// `setup_per_zone_lowmem_reserve()` for one node's zones (indexed by zone type; absent
/// zones have 0 managed pages).
pub fn setup_per_zone_lowmem_reserve(
    node_managed: &[u64; MAX_NR_ZONES],
) -> [[u64; MAX_NR_ZONES]; MAX_NR_ZONES] {
    let mut reserve = [[0u64; MAX_NR_ZONES]; MAX_NR_ZONES];
    for i in 0..MAX_NR_ZONES - 1 {
        let ratio = LOWMEM_RESERVE_RATIO[i];
        let mut managed = 0;
        for j in i + 1..MAX_NR_ZONES {
            managed += node_managed[j];
            reserve[i][j] = if ratio == 0 || node_managed[i] == 0 {
                0
            } else {
                managed / ratio
            };
        }
    }
    reserve
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone for the watermark arithmetic alone (its free lists are never used).
    fn zone(pages: u64) -> Zone {
        Zone::new(ZONE_NORMAL, 0, 0, pages, free_lists(&Pages::new(0, 11), 0))
    }

    /// A zone of all of `pages`, its free lists the array's first lists.
    fn zone_on(pages: &Pages) -> Zone {
        let n = u64::from(pages.nr_pages());
        Zone::new(ZONE_NORMAL, 0, 0, n, free_lists(pages, 0))
    }

    #[test]
    fn min_free_kbytes_matches_the_documented_table() {
        for (mb, kb) in [
            (16u64, 512u64),
            (64, 1024),
            (256, 2048),
            (1024, 4096),
            (4096, 8192),
            (16384, 16384),
        ] {
            assert_eq!(calculate_min_free_kbytes(mb * 1024, 262_144), kb, "{mb} MB");
        }
        assert_eq!(calculate_min_free_kbytes(1 << 40, 262_144), 262_144);
        // The seed-000 machine: 756 GiB gives 112 621 KiB, which v4.16 capped at 65 536.
        let seed = 756 * 1024 * 1024;
        assert_eq!(calculate_min_free_kbytes(seed, 262_144), 112_621);
        assert_eq!(calculate_min_free_kbytes(seed, 65_536), 65_536);
    }

    #[test]
    fn watermarks_match_the_worked_example() {
        // 16 GiB of lowmem, a Normal zone of 12 GiB: MIN 3072, LOW 6217, HIGH 9362, PROMO 12507.
        let mut zones = vec![zone(3_145_728), zone(1_048_576)];
        setup_per_zone_wmarks(&mut zones, 16384, 10);
        assert_eq!(zones[0].watermark, [3072, 6217, 9362, 12507]);
    }

    #[test]
    fn buddy_splits_and_merges_back() {
        let mut pages = Pages::new(2048, NR_PAGE_ORDERS as u32);
        let mut z = zone_on(&pages);
        for p in (0..2048).step_by(MAX_ORDER_NR_PAGES as usize) {
            z.free_one_page(&mut pages, p, (NR_PAGE_ORDERS - 1) as u32);
        }
        assert_eq!(z.nr_free_pages, 2048);
        assert_eq!(z.nr_free[10], 2);
        let a = z.rmqueue(&mut pages, 0).unwrap();
        let b = z.rmqueue(&mut pages, 0).unwrap();
        assert_eq!(z.nr_free_pages, 2046);
        assert_eq!(z.nr_free[10], 1);
        assert!((0..10).all(|o| z.nr_free[o] <= 1));
        z.free_one_page(&mut pages, a, 0);
        z.free_one_page(&mut pages, b, 0);
        assert_eq!(z.nr_free[10], 2);
        assert_eq!((0..10).map(|o| z.nr_free[o]).sum::<u64>(), 0);
    }

    /// A zone of 4 max-order blocks after `ops`: each `(true, k)` allocates `k` pages one
    /// by one, each `(false, i)` frees the `i`-th allocated page still held.
    fn churned_zone(ops: &[(bool, usize)]) -> (Zone, Pages, Vec<u32>) {
        let mut pages = Pages::new(4096, NR_PAGE_ORDERS as u32);
        let mut z = zone_on(&pages);
        for p in (0..4096).step_by(MAX_ORDER_NR_PAGES as usize) {
            z.free_one_page(&mut pages, p, (NR_PAGE_ORDERS - 1) as u32);
        }
        let mut held = Vec::new();
        for &(alloc, k) in ops {
            if alloc {
                held.extend((0..k).map_while(|_| z.rmqueue(&mut pages, 0)));
            } else if !held.is_empty() {
                let p = held.swap_remove(k % held.len());
                z.free_one_page(&mut pages, p, 0);
            }
        }
        (z, pages, held)
    }

    /// The two churned zones hold the same counters, the same free lists in the same order
    /// and the same page fields.
    fn same_zone_state(
        (z1, p1): (&Zone, &Pages),
        (z2, p2): (&Zone, &Pages),
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        proptest::prop_assert_eq!(z1.nr_free, z2.nr_free);
        proptest::prop_assert_eq!(z1.nr_free_pages, z2.nr_free_pages);
        for o in 0..NR_PAGE_ORDERS as u32 {
            let l = p1.list(o);
            proptest::prop_assert!(p1.iter(l).eq(p2.iter(l)), "free list of order {}", o);
        }
        for p in 0..4096 {
            proptest::prop_assert_eq!(p1.flags(p), p2.flags(p));
            proptest::prop_assert_eq!(p1.fields(p).order, p2.fields(p).order);
            proptest::prop_assert_eq!(p1.fields(p).owner, p2.fields(p).owner);
        }
        Ok(())
    }

    proptest::proptest! {
        /// Taking a run of order-0 pages at once leaves the zone exactly as that many
        /// `rmqueue(0)` calls do: the same pages in the same order, the same free lists in
        /// the same order, the same counters and page fields.
        #[test]
        fn a_run_of_order0_pages_is_what_single_rmqueues_give(
            ops in proptest::collection::vec((proptest::bool::weighted(0.4), 0usize..200), 0..120),
            n in 0usize..300,
        ) {
            let (mut z1, mut p1, _) = churned_zone(&ops);
            let (mut z2, mut p2, _) = churned_zone(&ops);
            let one_by_one: Vec<u32> = (0..n).map_while(|_| z1.rmqueue(&mut p1, 0)).collect();
            let mut run = Vec::new();
            let got = z2.rmqueue_order0_run(&mut p2, n, &mut run);
            proptest::prop_assert_eq!(got, run.len());
            proptest::prop_assert_eq!(&run, &one_by_one);
            same_zone_state((&z1, &p1), (&z2, &p2))?;
        }
    }

    proptest::proptest! {
        /// Freeing a batch of order-0 pages at once leaves the zone exactly as that many
        /// `free_one_page(p, 0)` calls in the batch's order do: the same free lists in the
        /// same order, the same counters and page fields. Batches are drawn as runs of
        /// consecutive held pages, as reclaim's isolation from the LRU tail gives them.
        #[test]
        fn a_batch_of_order0_frees_is_what_single_frees_give(
            ops in proptest::collection::vec((proptest::bool::weighted(0.6), 0usize..200), 0..120),
            picks in proptest::collection::vec((0usize..4096, 1usize..70), 0..8),
        ) {
            let (mut z1, mut p1, mut held) = churned_zone(&ops);
            let (mut z2, mut p2, _) = churned_zone(&ops);
            held.sort_unstable();
            let mut batch = Vec::new();
            for (start, len) in picks {
                if held.is_empty() {
                    break;
                }
                let at = start % held.len();
                let end = (at + len).min(held.len());
                batch.extend(held.drain(at..end));
            }
            for &p in &batch {
                z1.free_one_page(&mut p1, p, 0);
            }
            z2.free_order0_run(&mut p2, &batch);
            same_zone_state((&z1, &p1), (&z2, &p2))?;
        }
    }

    #[test]
    fn order_check_needs_a_large_enough_block() {
        let mut pages = Pages::new(1024, NR_PAGE_ORDERS as u32);
        let mut z = zone_on(&pages);
        for p in (0..1024).step_by(2) {
            z.free_one_page(&mut pages, p, 0); // every other page: nothing merges
        }
        assert!(z.zone_watermark_ok(0, 10, ZONE_NORMAL));
        assert!(!z.zone_watermark_ok(1, 10, ZONE_NORMAL));
    }

    #[test]
    fn lowmem_reserve_protects_lower_zones() {
        let r = setup_per_zone_lowmem_reserve(&[0, 786_432, 8_388_608, 0]);
        assert_eq!(r[ZONE_DMA32][ZONE_NORMAL], 8_388_608 / 256);
        assert_eq!(r[ZONE_NORMAL][ZONE_MOVABLE], 0);
        assert_eq!(r[ZONE_DMA][ZONE_NORMAL], 0);
    }
}
