//! Zones: watermarks (`__setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`,
//! `calculate_min_free_kbytes`), the watermark check (`__zone_watermark_ok`) and a buddy
//! allocator over per-order, per-migratetype free lists (`free_area[order].free_list[mt]`).
//! Models mm/page_alloc.c of Linux 6.2 (the per-order check, `__rmqueue`, the fallback and
//! block stealing) with the 6.x NR_PAGE_ORDERS = 11. NR_FREE_PAGES is read as the kernel
//! reads it, without the per-CPU deltas (`zone_page_state`) or with them
//! (`zone_page_state_snapshot`, `zone_watermark_ok_safe`); the deltas and the per-CPU page
//! lists are `mm::pcp`'s.
//!
//! Fragmentation: each pageblock (pageblock_order 9, 2 MiB) has a migratetype, MOVABLE,
//! UNMOVABLE or RECLAIMABLE, in a flat per-zone array (the kernel's `pageblock_flags`
//! bitmap); every pageblock boots MOVABLE (`memmap_init_zone` marks them so). A freed block
//! goes on the list of its pageblock's type (`get_pfnblock_migratetype`); an allocation
//! takes the smallest block of its own type (`__rmqueue_smallest`) and, if there is none,
//! falls back to another type's largest block in the kernel's `fallbacks[]` order
//! (`__rmqueue_fallback`, `find_suitable_fallback`, `can_steal_fallback`), stealing the
//! free pages of that block's pageblock and claiming the pageblock when half of it is free
//! or alike (`steal_suitable_fallback`, `move_freepages_block`). The type of a free block is
//! kept in its head page's `lru` field (the kernel finds it by the list it is on).
//!
//! With ALLOC_NOFRAGMENT (5.0+, the fast path's flag when the preferred zone is Normal and
//! DMA32 exists: `mm::page_alloc`), a fallback takes only blocks of pageblock order or more.
//!
//! Watermark boosting (5.0+, "mm: reclaim small amounts of memory when an external
//! fragmentation event occurs"; 6.6 here): a fallback that takes a block smaller than a
//! pageblock raises `watermark_boost` by a pageblock, up to `watermark_boost_factor`/10000 of
//! the high watermark (`boost_watermark`), every watermark read through `wmark_pages`
//! includes it, and with ALLOC_KSWAPD the zone is flagged ZONE_BOOSTED_WATERMARK so that the
//! allocation wakes kswapd (`mm::page_alloc`), whose boosted reclaim takes the boost back
//! (`mm::kswapd`).
//!
//! A freed block goes to the head of its list, or with `variant.buddy_merge_likely` to the
//! tail when it is likely to merge further (`__free_one_page()`'s `buddy_merge_likely()`).
//!
//! Not modelled: the HIGHATOMIC, CMA and ISOLATE types and the highatomic reserves, boot
//! memory freed to the lists' tails (`__free_pages_core()`'s FPI_TO_TAIL, 5.10+: the model
//! frees it to the heads, so its lists start highest address first), 6.9's conversion of a buddy pageblock on a cross-type merge (6.2 merges the
//! mergeable types and files the result by the freeing page's type, as here), and ZONE_DMA
//! (16 MiB, too small to matter here).

use super::page::{pg, ListId, Pages, NO_OWNER};
use super::page_alloc::{AllocFlags, ALLOC_KSWAPD, ALLOC_NOFRAGMENT};
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

/// `pageblock_order` (x86-64 with hugetlb: HUGETLB_PAGE_ORDER) and its pages.
pub const PAGEBLOCK_ORDER: u32 = 9;
pub const PAGEBLOCK_NR_PAGES: u32 = 1 << PAGEBLOCK_ORDER;

/// `pageblock_start_pfn()`: the first page frame of `pfn`'s pageblock.
#[inline]
pub const fn pageblock_start_pfn(pfn: u32) -> u32 {
    pfn & !(PAGEBLOCK_NR_PAGES - 1)
}

/// `pageblock_end_pfn()`: the first page frame after `pfn`'s pageblock.
#[inline]
pub const fn pageblock_end_pfn(pfn: u32) -> u32 {
    pageblock_start_pfn(pfn) + PAGEBLOCK_NR_PAGES
}

/// `pageblock_aligned()`.
#[inline]
pub const fn pageblock_aligned(pfn: u32) -> bool {
    pfn & (PAGEBLOCK_NR_PAGES - 1) == 0
}

/// `enum migratetype` (6.2 order). The model has the three MIGRATE_PCPTYPES only.
pub const MIGRATE_UNMOVABLE: usize = 0;
pub const MIGRATE_MOVABLE: usize = 1;
pub const MIGRATE_RECLAIMABLE: usize = 2;
pub const MIGRATE_TYPES: usize = 3;
/// `migratetype_names` as /proc/pagetypeinfo prints them.
pub const MIGRATETYPE_NAMES: [&str; MIGRATE_TYPES] = ["Unmovable", "Movable", "Reclaimable"];
/// `fallbacks[]` (mm/page_alloc.c, 6.2): the types an allocation of each type falls back
/// to, in order.
pub const FALLBACKS: [[usize; 2]; MIGRATE_TYPES] = [
    [MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE],
    [MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE],
    [MIGRATE_UNMOVABLE, MIGRATE_MOVABLE],
];
/// The free lists of one zone: one per order and migratetype.
pub const NR_FREE_LISTS: usize = NR_PAGE_ORDERS * MIGRATE_TYPES;
/// `free_area[order].free_list[migratetype]`.
pub type FreeLists = [[ListId; MIGRATE_TYPES]; NR_PAGE_ORDERS];

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
    /// `free_area[order].nr_free` (every migratetype's blocks).
    pub nr_free: [u64; NR_PAGE_ORDERS],
    /// The blocks on each `free_list[mt]` of each order, indexed `[mt][order]`.
    pub nr_free_mt: [[u64; NR_PAGE_ORDERS]; MIGRATE_TYPES],
    /// `free_area[order].free_list[mt]` in `Pages`.
    pub free_lists: FreeLists,
    /// Each pageblock's migratetype (the kernel's `pageblock_flags`), from the zone's start.
    pub pageblock_mt: Vec<u8>,
    /// The pageblocks of each migratetype (what /proc/pagetypeinfo counts by walking them).
    pub nr_pageblock_mt: [u64; MIGRATE_TYPES],
    /// Each pageblock's PB_migrate_skip bit (`pageblock_flags`' fourth bit), 64 a word:
    /// compaction's skip hints (`mm::compaction`). A bit per 2 MiB, so not counted in
    /// `Kernel::page_state_bytes`.
    pub pageblock_skip: Vec<u64>,
    /// Where the free scanner starts next (`compact_cached_free_pfn`) and where async
    /// (`[0]`) and sync (`[1]`) compaction's migrate scanner does
    /// (`compact_cached_migrate_pfn`).
    pub compact_cached_free_pfn: u32,
    pub compact_cached_migrate_pfn: [u32; 2],
    /// Where `__reset_isolation_suitable` last found a source and a target pageblock
    /// (`compact_init_migrate_pfn`, `compact_init_free_pfn`).
    pub compact_init_migrate_pfn: u32,
    pub compact_init_free_pfn: u32,
    /// Deferred compaction (`defer_compaction`): compactions skipped since the last
    /// failure, the log2 of how many to skip, and the lowest order that failed.
    pub compact_considered: u32,
    pub compact_defer_shift: u32,
    pub compact_order_failed: i32,
    /// A direct compaction's scanners met: kswapd clears the skip bits when it next
    /// sleeps (`compact_blockskip_flush`).
    pub compact_blockskip_flush: bool,
    /// `zone->watermark_boost` (5.0+): pages added to every watermark after fallbacks
    /// (`boost_watermark`), taken back when kswapd's boosted reclaim ends (`balance_pgdat`).
    pub watermark_boost: u64,
    /// ZONE_BOOSTED_WATERMARK of `zone->flags`: a fallback boosted the zone for an
    /// allocation that may wake kswapd; `rmqueue()` clears it and wakes kswapd.
    pub boosted_watermark: bool,
    /// ZONE_CONGESTED of `zone->flags` (2.6.37, seed 003's patch 8): reclaim found every
    /// dirty page of a batch from the zone backed by a congested bdi; kswapd clears it once
    /// the zone meets its high watermark (mm/congestion.rs).
    pub reclaim_congested: bool,
    /// ZONE_RECLAIM_ACTIVE of `zone->flags` (5.14+): kswapd is in `balance_pgdat()` for
    /// this zone (`set_reclaim_active` … `clear_reclaim_active`), which lowers the per-CPU
    /// lists' `high` (`nr_pcp_high`, mm/pcp.rs) so that pages freed by reclaim reach the
    /// buddy lists sooner.
    pub reclaim_active: bool,
    /// `vm.watermark_boost_factor` (the kernel's global `watermark_boost_factor`, 0:
    /// boosting off), each zone's copy set at boot, so that a fallback, which sees only its
    /// zone, can boost it.
    pub watermark_boost_factor: u64,
    /// `variant.buddy_merge_likely`: a freed block whose merged block's buddy is free goes
    /// to the tail of its list (`__free_one_page()`'s `buddy_merge_likely()`).
    pub buddy_merge_likely: bool,
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
    /// The node's kcompactd thread, started by a workload that allocates above order 0
    /// (`mm::compaction::kcompactd_run`), asleep on `kcompactd_wait`; what it is asked to
    /// compact for (`kcompactd_max_order`, `kcompactd_highest_zoneidx`).
    pub kcompactd: Option<u32>,
    pub kcompactd_wait: WaitQueue,
    pub kcompactd_max_order: u32,
    pub kcompactd_highest_zoneidx: usize,
    /// NR_ISOLATED_ANON, NR_ISOLATED_FILE.
    pub nr_isolated: [u64; 2],
    /// NR_FILE_PAGES.
    pub nr_file_pages: u64,
    /// NR_FILE_THPS in huge pages, as /proc/vmstat's `nr_file_hugepages` prints it: the
    /// page cache's folios of HPAGE_PMD_ORDER (`folio_test_pmd_mappable()`, counted by
    /// `__filemap_add_folio()` and `filemap_unaccount_folio()`).
    pub nr_file_thps: u64,
    /// NR_ANON_MAPPED.
    pub nr_anon_mapped: u64,
    /// NR_FILE_MAPPED (`nr_mapped`): page-cache pages mapped by a page table.
    pub nr_file_mapped: u64,
    /// NR_VMSCAN_WRITE (cumulative).
    pub nr_vmscan_write: u64,
    /// WORKINGSET_REFAULT_ANON, WORKINGSET_ACTIVATE_ANON, WORKINGSET_RESTORE_ANON.
    pub workingset: super::vmstat::WorkingsetStats,
    /// `pgdat->min_unmapped_pages` (`vm.min_unmapped_ratio` of the node's pages).
    pub min_unmapped_pages: u64,
    /// PGDAT_RECLAIM_LOCKED: a task is in `__node_reclaim()` on this node.
    pub reclaim_locked: bool,
}

/// The free lists of one zone: list ids `first .. first + NR_FREE_LISTS` of `pages`, order
/// by order, each order's migratetypes in turn.
pub fn free_lists(pages: &Pages, first: u32) -> FreeLists {
    std::array::from_fn(|o| {
        std::array::from_fn(|mt| pages.list(first + (o * MIGRATE_TYPES + mt) as u32))
    })
}

/// `gfp_migratetype()`: the migratetype an allocation's gfp asks for (`__GFP_MOVABLE`,
/// `__GFP_RECLAIMABLE`, neither: unmovable).
#[inline]
pub fn gfp_migratetype(gfp: super::gfp::Gfp) -> usize {
    use super::gfp::{__GFP_MOVABLE, __GFP_RECLAIMABLE};
    if gfp & __GFP_MOVABLE != 0 {
        MIGRATE_MOVABLE
    } else if gfp & __GFP_RECLAIMABLE != 0 {
        MIGRATE_RECLAIMABLE
    } else {
        MIGRATE_UNMOVABLE
    }
}

/// `can_steal_fallback()` (6.2): whether an allocation of `order` and type `start_mt` that
/// falls back to a block of another type may take that block's whole pageblock.
pub fn can_steal_fallback(order: u32, start_mt: usize) -> bool {
    order >= PAGEBLOCK_ORDER / 2 || start_mt == MIGRATE_RECLAIMABLE || start_mt == MIGRATE_UNMOVABLE
}

impl Zone {
    /// An empty zone (no free pages yet, watermarks unset) of `managed_pages` pages from
    /// `start_pfn`, with its free lists.
    pub fn new(
        zone_idx: usize,
        nid: u32,
        start_pfn: u32,
        managed_pages: u64,
        free_lists: FreeLists,
    ) -> Zone {
        let nr_pageblocks = managed_pages.div_ceil(u64::from(PAGEBLOCK_NR_PAGES));
        let mut z = Zone {
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
            nr_free_mt: [[0; NR_PAGE_ORDERS]; MIGRATE_TYPES],
            free_lists,
            pageblock_mt: vec![MIGRATE_MOVABLE as u8; nr_pageblocks as usize],
            nr_pageblock_mt: [0, nr_pageblocks, 0],
            pageblock_skip: vec![0; nr_pageblocks.div_ceil(64) as usize],
            compact_cached_free_pfn: 0,
            compact_cached_migrate_pfn: [0; 2],
            compact_init_migrate_pfn: 0,
            compact_init_free_pfn: 0,
            compact_considered: 0,
            compact_defer_shift: 0,
            compact_order_failed: 0,
            compact_blockskip_flush: false,
            watermark_boost: 0,
            boosted_watermark: false,
            reclaim_congested: false,
            reclaim_active: false,
            watermark_boost_factor: 0,
            buddy_merge_likely: false,
        };
        // The kernel's zone starts zeroed, which on x86-64 puts the cached scanners outside
        // every zone (pfn 0 is in none) and the first compaction resets them; the model's
        // first zone starts at pfn 0, so they start reset.
        z.reset_cached_positions();
        z
    }

    /// `reset_cached_positions()`: both scanners back to the zone's ends.
    pub fn reset_cached_positions(&mut self) {
        self.compact_cached_migrate_pfn = [self.start_pfn; 2];
        self.compact_cached_free_pfn = pageblock_start_pfn(self.end_pfn().saturating_sub(1));
    }

    /// `get_pageblock_skip()`: the skip bit of the pageblock of `pfn`.
    #[inline]
    pub fn get_pageblock_skip(&self, pfn: u32) -> bool {
        let b = ((pfn - self.start_pfn) >> PAGEBLOCK_ORDER) as usize;
        self.pageblock_skip[b / 64] & (1 << (b % 64)) != 0
    }

    /// `set_pageblock_skip()`.
    pub fn set_pageblock_skip(&mut self, pfn: u32) {
        let b = ((pfn - self.start_pfn) >> PAGEBLOCK_ORDER) as usize;
        self.pageblock_skip[b / 64] |= 1 << (b % 64);
    }

    /// `clear_pageblock_skip()`.
    pub fn clear_pageblock_skip(&mut self, pfn: u32) {
        let b = ((pfn - self.start_pfn) >> PAGEBLOCK_ORDER) as usize;
        self.pageblock_skip[b / 64] &= !(1 << (b % 64));
    }

    /// `wmark_pages(z, i)` (5.0+): `_watermark[i]` plus `watermark_boost`. The few readers
    /// of the unboosted mark (`__isolate_free_page`, `zone_watermark_fast`'s exception) read
    /// `watermark[i]`.
    #[inline]
    pub fn wmark_pages(&self, i: usize) -> u64 {
        self.watermark[i] + self.watermark_boost
    }

    /// `boost_watermark()` (mm/page_alloc.c, 6.6): after a fallback that took part of
    /// another type's pageblock, raise `watermark_boost` by a pageblock, up to
    /// `mult_frac(high watermark, watermark_boost_factor, 10000)` and at least a pageblock.
    /// False (nothing raised) when the factor is 0, in a zone of fewer than four pageblocks,
    /// and while the high watermark is still 0 (boot).
    pub fn boost_watermark(&mut self) -> bool {
        if self.watermark_boost_factor == 0 {
            return false;
        }
        let pageblock = u64::from(PAGEBLOCK_NR_PAGES);
        if pageblock * 4 > self.managed_pages {
            return false;
        }
        // mult_frac(x, n, d): (x / d) * n + ((x % d) * n) / d.
        let high = self.watermark[WMARK_HIGH];
        let n = self.watermark_boost_factor;
        let max_boost = (high / 10_000) * n + ((high % 10_000) * n) / 10_000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(pageblock);
        self.watermark_boost = (self.watermark_boost + pageblock).min(max_boost);
        true
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

    /// The migratetype of the pageblock of `pfn` (`get_pfnblock_migratetype`).
    #[inline]
    pub fn get_pageblock_migratetype(&self, pfn: u32) -> usize {
        self.pageblock_mt[((pfn - self.start_pfn) >> PAGEBLOCK_ORDER) as usize] as usize
    }

    /// `set_pageblock_migratetype()`.
    pub fn set_pageblock_migratetype(&mut self, pfn: u32, mt: usize) {
        let b = &mut self.pageblock_mt[((pfn - self.start_pfn) >> PAGEBLOCK_ORDER) as usize];
        self.nr_pageblock_mt[*b as usize] -= 1;
        self.nr_pageblock_mt[mt] += 1;
        *b = mt as u8;
    }

    /// `__rmqueue()` (6.2, without CMA): a block of `order` for an allocation of type `mt`,
    /// from its own lists (`__rmqueue_smallest`) or, when they have none, after a fallback
    /// has moved another type's block onto them (`__rmqueue_fallback`; with
    /// ALLOC_NOFRAGMENT in `alloc_flags`, only a block of pageblock order or more).
    pub fn __rmqueue(
        &mut self,
        pages: &mut Pages,
        order: u32,
        mt: usize,
        alloc_flags: AllocFlags,
    ) -> Option<u32> {
        loop {
            let found = if self.nr_free_mt[mt][order as usize] > 0 {
                Some(order as usize) // the common case: no split
            } else {
                (order as usize + 1..NR_PAGE_ORDERS).find(|&o| self.nr_free_mt[mt][o] > 0)
            };
            if let Some(o) = found {
                return Some(self.take_block(pages, o, order as usize, mt));
            }
            if !self.rmqueue_fallback(pages, order, mt, alloc_flags) {
                return None;
            }
        }
    }

    /// A movable block of `order` (`__rmqueue(zone, order, MIGRATE_MOVABLE)`): what the
    /// page cache and anonymous memory allocate.
    pub fn rmqueue(&mut self, pages: &mut Pages, order: u32) -> Option<u32> {
        self.__rmqueue(pages, order, MIGRATE_MOVABLE, 0)
    }

    /// The first block on the order-`o` list of type `mt`, split down to `order` (`expand`:
    /// each split-off upper half goes back on its list). Inlined: it is the allocation run's
    /// inner step.
    #[inline(always)]
    fn take_block(&mut self, pages: &mut Pages, o: usize, order: usize, mt: usize) -> u32 {
        let page = pages
            .first(self.free_lists[o][mt])
            .expect("nr_free_mt counts a block");
        self.del_from_free_list(pages, page, o);
        let mut high = o;
        while high > order {
            high -= 1;
            let buddy = page + (1u32 << high);
            self.add_to_free_list(pages, buddy, high, mt);
        }
        self.nr_free_pages -= 1u64 << order;
        page
    }

    /// `find_suitable_fallback(area, order, mt, only_stealable = false)`: the first type of
    /// `fallbacks[mt]` with a block of order `o`, and whether the allocation may steal its
    /// pageblock.
    pub fn find_suitable_fallback(&self, o: usize, mt: usize) -> Option<(usize, bool)> {
        if self.nr_free[o] == 0 {
            return None;
        }
        let fallback = FALLBACKS[mt]
            .into_iter()
            .find(|&f| self.nr_free_mt[f][o] > 0)?;
        Some((fallback, can_steal_fallback(o as u32, mt)))
    }

    /// `__rmqueue_fallback()` (6.2): find the largest block of a
    /// fallback type (roughly, the pageblock with the most free pages) — or, for a movable
    /// allocation that could not take the whole pageblock, the smallest, which fragments
    /// nothing for good — and move it, with its pageblock's other free pages if it may steal
    /// them, onto the lists of type `start_mt`. False if no other type has a block of
    /// `order` or more — of pageblock order or more with ALLOC_NOFRAGMENT in `alloc_flags`
    /// (do not mix types within a pageblock while another zone may still serve).
    pub fn rmqueue_fallback(
        &mut self,
        pages: &mut Pages,
        order: u32,
        start_mt: usize,
        alloc_flags: AllocFlags,
    ) -> bool {
        let min_order = if alloc_flags & ALLOC_NOFRAGMENT != 0 {
            PAGEBLOCK_ORDER.max(order)
        } else {
            order
        };
        let mut found = None;
        for o in (min_order as usize..NR_PAGE_ORDERS).rev() {
            let Some((f, can_steal)) = self.find_suitable_fallback(o, start_mt) else {
                continue;
            };
            found = Some((o, f, can_steal));
            if !can_steal && start_mt == MIGRATE_MOVABLE && o > order as usize {
                // find_smallest:
                found = (order as usize..NR_PAGE_ORDERS).find_map(|o| {
                    let (f, can_steal) = self.find_suitable_fallback(o, start_mt)?;
                    Some((o, f, can_steal))
                });
            }
            break;
        }
        let Some((o, f, can_steal)) = found else {
            return false;
        };
        let page = pages
            .first(self.free_lists[o][f])
            .expect("a fallback block");
        self.steal_suitable_fallback(pages, page, o, start_mt, can_steal, alloc_flags);
        true
    }

    /// `steal_suitable_fallback()` (6.2; 6.6's watermark boost) for the free block `page`
    /// of order `o`: a block of a pageblock or more changes its pageblocks' type; otherwise
    /// the zone's watermarks are boosted (`boost_watermark`, and ZONE_BOOSTED_WATERMARK set
    /// when `alloc_flags` has ALLOC_KSWAPD), then, if `whole_block`, every free page of its
    /// pageblock moves to `start_mt`'s lists and the pageblock becomes `start_mt` when at
    /// least half of it is free or alike (for a movable allocation, pages on an LRU; for
    /// another type in a movable pageblock, every page that is neither); else the block
    /// alone moves.
    pub fn steal_suitable_fallback(
        &mut self,
        pages: &mut Pages,
        page: u32,
        o: usize,
        start_mt: usize,
        whole_block: bool,
        alloc_flags: AllocFlags,
    ) {
        let old_block_type = self.get_pageblock_migratetype(page);
        if o >= PAGEBLOCK_ORDER as usize {
            // change_pageblock_range()
            for b in 0..1u32 << (o - PAGEBLOCK_ORDER as usize) {
                self.set_pageblock_migratetype(page + b * PAGEBLOCK_NR_PAGES, start_mt);
            }
            self.move_to_free_list(pages, page, o, start_mt);
            return;
        }
        // Boost watermarks to increase reclaim pressure and so reduce the likelihood of
        // future fallbacks; wake kswapd now, as the node may be balanced overall.
        if self.boost_watermark() && alloc_flags & ALLOC_KSWAPD != 0 {
            self.boosted_watermark = true;
        }
        if !whole_block {
            self.move_to_free_list(pages, page, o, start_mt);
            return;
        }
        let (free_pages, movable_pages) = self.move_freepages_block(pages, page, start_mt);
        if free_pages == 0 {
            self.move_to_free_list(pages, page, o, start_mt);
            return;
        }
        let alike_pages = if start_mt == MIGRATE_MOVABLE {
            movable_pages
        } else if old_block_type == MIGRATE_MOVABLE {
            PAGEBLOCK_NR_PAGES - (free_pages + movable_pages)
        } else {
            0
        };
        if free_pages + alike_pages >= 1 << (PAGEBLOCK_ORDER - 1) {
            self.set_pageblock_migratetype(page, start_mt);
        }
    }

    /// `move_freepages_block()` (6.2): every free block of `page`'s pageblock onto the lists
    /// of `mt` (`move_freepages`, each to its list's tail); returns the free pages moved and
    /// the pages that are not free and are on an LRU (`PageLRU`: movable, the kernel
    /// assumes). Nothing moves, and (0, 0) is returned, when the pageblock is not all in the
    /// zone. A walk of the pageblock's page frames: fallbacks only, not the order-0 path.
    pub fn move_freepages_block(&mut self, pages: &mut Pages, page: u32, mt: usize) -> (u32, u32) {
        let start = page & !(PAGEBLOCK_NR_PAGES - 1);
        let end = start + PAGEBLOCK_NR_PAGES;
        if start < self.start_pfn || end > self.end_pfn() {
            return (0, 0);
        }
        let (mut moved, mut movable) = (0, 0);
        let mut pfn = start;
        while pfn < end {
            let f = *pages.fields(pfn);
            if f.flags & pg::BUDDY == 0 {
                movable += u32::from(f.flags & pg::LRU != 0);
                pfn += 1;
                continue;
            }
            self.move_to_free_list(pages, pfn, f.order as usize, mt);
            pfn += 1 << f.order;
            moved += 1 << f.order;
        }
        (moved, movable)
    }

    /// `__isolate_free_page()` (6.6) of the free block `page` of `order`, for compaction's
    /// free scanner: refused (0) unless the zone would stay above its min watermark plus the
    /// block (`zone_watermark_ok` at order 0); otherwise off its free list and out of the
    /// zone's free pages (the caller moves NR_FREE_PAGES on its CPU), and a block of half a
    /// pageblock or more makes its pageblocks movable. Returns the pages taken.
    pub fn __isolate_free_page(&mut self, pages: &mut Pages, page: u32, order: u32) -> u32 {
        // 6.6 reads the unboosted min watermark here (`zone->_watermark[WMARK_MIN]`).
        let watermark = self.watermark[WMARK_MIN] + (1 << order);
        if !self.zone_watermark_ok(0, watermark, 0) {
            return 0;
        }
        self.del_from_free_list(pages, page, order as usize);
        self.nr_free_pages -= 1 << order;
        if order >= PAGEBLOCK_ORDER - 1 {
            let end = page + (1 << order) - 1;
            let mut p = page;
            while p < end {
                if self.get_pageblock_migratetype(p) != MIGRATE_MOVABLE {
                    self.set_pageblock_migratetype(p, MIGRATE_MOVABLE);
                }
                p += PAGEBLOCK_NR_PAGES;
            }
        }
        1 << order
    }

    /// `n` consecutive order-0 `__rmqueue()` calls of type `mt`, their pages appended to
    /// `out`; returns how many there were pages for. Each call takes the first block of the
    /// lowest non-empty order of `mt`'s lists, after a fallback if they are all empty. When
    /// that block is no larger than what is still wanted, the calls would split it and take
    /// every piece in address order, leaving the lists below it as empty as they were: the
    /// block is taken whole. When it is larger, the lists below it are empty, and the calls
    /// would split it, take its first `left` pages in address order (each split's upper half
    /// coming back off its list as the next call's smallest block) and leave the rest on the
    /// lists as the aligned blocks that cover it, one per order: the block is taken and that
    /// rest put back directly. Either way the lists, counters and page fields end as the
    /// single calls leave them, without writing each split-off buddy.
    #[inline]
    pub fn rmqueue_order0_run(
        &mut self,
        pages: &mut Pages,
        n: usize,
        mt: usize,
        alloc_flags: AllocFlags,
        out: &mut impl Extend<u32>,
    ) -> usize {
        let mut left = n;
        while left > 0 {
            let Some(o) = (0..NR_PAGE_ORDERS).find(|&o| self.nr_free_mt[mt][o] > 0) else {
                if self.rmqueue_fallback(pages, 0, mt, alloc_flags) {
                    continue;
                }
                break;
            };
            let size = 1usize << o;
            let page = self.take_block(pages, o, o, mt);
            let taken = size.min(left);
            // Pages inside a free block are as a split would leave them once taken.
            debug_assert!((page + 1..page + size as u32).all(|p| {
                let f = pages.fields(p);
                f.flags == 0 && f.order == 0 && f.owner == NO_OWNER
            }));
            if taken < size {
                self.expand_rest(pages, page, o, taken as u32, mt);
            }
            out.extend(page..page + taken as u32);
            left -= taken;
        }
        n - left
    }

    /// The rest of an order-`o` block at `page` once its first `taken` pages are gone, put
    /// back on the (empty) lists of `mt` below `o` as the aligned blocks that cover it,
    /// lowest first.
    #[inline]
    fn expand_rest(&mut self, pages: &mut Pages, page: u32, o: usize, taken: u32, mt: usize) {
        let end = page + (1u32 << o);
        let mut at = page + taken;
        while at < end {
            let order = (at - page).trailing_zeros() as usize;
            debug_assert!(order < o && self.nr_free_mt[mt][order] == 0);
            self.add_to_free_list(pages, at, order, mt);
            at += 1 << order;
        }
        self.nr_free_pages += u64::from((1u32 << o) - taken);
    }

    /// Free a block of `order` and merge it with its buddies (`__free_one_page`), onto the
    /// lists of its pageblock's type (`free_one_page` with `get_pfnblock_migratetype`). The
    /// three types merge with each other across pageblocks (`migratetype_is_mergeable`).
    #[inline]
    pub fn free_one_page(&mut self, pages: &mut Pages, page: u32, order: u32) {
        let mt = self.get_pageblock_migratetype(page);
        self.free_one_page_mt(pages, page, order, mt);
    }

    fn free_one_page_mt(&mut self, pages: &mut Pages, page: u32, order: u32, mt: usize) {
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
        let tail = self.buddy_merge_likely && self.buddy_merge_likely(pages, pfn, o);
        self.__add_to_free_list(pages, self.start_pfn + pfn, o, mt, tail);
    }

    /// `buddy_merge_likely()` (6.6): whether the block of order `o` at zone offset `pfn`,
    /// merged as far as it goes, would merge on twice once its buddy is freed: the buddy of
    /// the order-`o + 1` block that contains both is free. Such a block goes to the tail of
    /// its list, where allocations (which take from the head) leave it longest. Not for the
    /// two highest orders (`order >= MAX_ORDER - 1`).
    fn buddy_merge_likely(&self, pages: &Pages, pfn: u32, o: usize) -> bool {
        if o >= NR_PAGE_ORDERS - 2 {
            return false;
        }
        let higher = pfn & !(1u32 << o);
        let higher_buddy = higher ^ (1u32 << (o + 1));
        if u64::from(higher_buddy) >= self.managed_pages {
            return false;
        }
        let d = pages.fields(self.start_pfn + higher_buddy);
        d.flags & pg::BUDDY != 0 && d.order as usize == o + 1
    }

    /// `free_one_page(p, 0)` for each page of `freed` in turn, all of this zone. A page that
    /// starts an aligned block of 2^k pages which all follow it in order is freed as one
    /// order-k block: the single frees would build that block by merges whose intermediate
    /// blocks go on the lower lists and come off them again, and the block's last page
    /// would then merge on from order k exactly as the block does, onto the list of its own
    /// pageblock's type (the block's last pageblock). The lists, counters and page fields
    /// end the same, without writing those intermediate blocks.
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
                let last = page + (1 << order) - 1;
                let mt = self.get_pageblock_migratetype(last);
                self.free_one_page_mt(pages, page, order, mt);
                page += 1 << order;
            }
            i += run;
        }
    }

    /// `add_to_free_list()`: at the head of the order-`o` list of type `mt`.
    #[inline]
    fn add_to_free_list(&mut self, pages: &mut Pages, page: u32, o: usize, mt: usize) {
        self.__add_to_free_list(pages, page, o, mt, false);
    }

    /// `__add_to_free_list()`: at the head of the order-`o` list of type `mt`, or its tail.
    #[inline]
    fn __add_to_free_list(
        &mut self,
        pages: &mut Pages,
        page: u32,
        o: usize,
        mt: usize,
        tail: bool,
    ) {
        let d = pages.fields_mut(page);
        d.flags = pg::BUDDY;
        d.order = o as u8;
        d.owner = NO_OWNER;
        d.lru = mt as u8;
        if tail {
            pages.add_tail(self.free_lists[o][mt], page);
        } else {
            pages.add_head(self.free_lists[o][mt], page);
        }
        self.nr_free[o] += 1;
        self.nr_free_mt[mt][o] += 1;
    }

    /// `del_page_from_free_list()`: off the list of the type it is on.
    #[inline]
    fn del_from_free_list(&mut self, pages: &mut Pages, page: u32, o: usize) {
        pages.unlink(page);
        let d = pages.fields_mut(page);
        let mt = d.lru as usize;
        d.flags = 0;
        d.order = 0;
        d.lru = 0;
        self.nr_free[o] -= 1;
        self.nr_free_mt[mt][o] -= 1;
    }

    /// `move_freelist_tail()` (mm/compaction.c, 6.6): the blocks from the head of the
    /// order-`o` list of type `mt` up to and including `page` move to its tail, so that the
    /// next search from the head starts past them (nothing moves when `page` is last: the
    /// kernel's `list_is_first(freelist, &page->buddy_list)` tests `freelist->prev`).
    pub fn move_freelist_tail(&mut self, pages: &mut Pages, o: usize, mt: usize, page: u32) {
        let list = self.free_lists[o][mt];
        debug_assert!({
            let f = pages.fields(page);
            f.flags & pg::BUDDY != 0 && f.order as usize == o && f.lru as usize == mt
        });
        if pages.tail(list) == Some(page) {
            return;
        }
        while let Some(first) = pages.first(list) {
            pages.unlink(first);
            pages.add_tail(list, first);
            if first == page {
                break;
            }
        }
    }

    /// `move_freelist_head()` (mm/compaction.c, 6.6): the blocks before `page` on the
    /// order-`o` list of type `mt` move to its tail, so that `page` is first and a search
    /// from the tail next meets the blocks this one did not read (nothing moves when `page`
    /// is first: the kernel's `list_is_last(freelist, &page->lru)` tests `freelist->next`).
    pub fn move_freelist_head(&mut self, pages: &mut Pages, o: usize, mt: usize, page: u32) {
        let list = self.free_lists[o][mt];
        debug_assert!({
            let f = pages.fields(page);
            f.flags & pg::BUDDY != 0 && f.order as usize == o && f.lru as usize == mt
        });
        while let Some(first) = pages.first(list) {
            if first == page {
                break;
            }
            pages.unlink(first);
            pages.add_tail(list, first);
        }
    }

    /// `move_to_free_list()`: the free block `page` of order `o` to the tail of the list of
    /// type `mt`.
    fn move_to_free_list(&mut self, pages: &mut Pages, page: u32, o: usize, mt: usize) {
        pages.unlink(page);
        let old = pages.fields(page).lru as usize;
        pages.fields_mut(page).lru = mt as u8;
        pages.add_tail(self.free_lists[o][mt], page);
        self.nr_free_mt[old][o] -= 1;
        self.nr_free_mt[mt][o] += 1;
    }

    /// Check the free lists and pageblocks (slow: tests and debug checks): each list holds
    /// what its counters say, every block on it is a free block of its order and type, and
    /// the pageblocks counted by type add up to the zone's.
    pub fn check_free_lists(&self, pages: &Pages) -> Result<(), String> {
        let mut free = 0;
        for o in 0..NR_PAGE_ORDERS {
            let mut total = 0;
            for (mt, name) in MIGRATETYPE_NAMES.iter().enumerate() {
                let mut walked = 0;
                for p in pages.iter(self.free_lists[o][mt]) {
                    let f = pages.fields(p);
                    if f.flags != pg::BUDDY || f.order as usize != o || f.lru as usize != mt {
                        return Err(format!(
                            "zone {} order {o} {name}: pfn {p} is not a free block of its list",
                            self.zone_idx
                        ));
                    }
                    walked += 1;
                }
                if walked != self.nr_free_mt[mt][o] {
                    return Err(format!(
                        "zone {} order {o} {name}: walked {walked} != counted {}",
                        self.zone_idx, self.nr_free_mt[mt][o]
                    ));
                }
                total += walked;
            }
            if total != self.nr_free[o] {
                return Err(format!(
                    "zone {} order {o}: walked {total} != nr_free {}",
                    self.zone_idx, self.nr_free[o]
                ));
            }
            free += total << o;
        }
        if free != self.nr_free_pages {
            return Err(format!(
                "zone {}: free lists hold {free} != NR_FREE_PAGES {}",
                self.zone_idx, self.nr_free_pages
            ));
        }
        let mut blocks = [0u64; MIGRATE_TYPES];
        for &mt in &self.pageblock_mt {
            blocks[mt as usize] += 1;
        }
        if blocks != self.nr_pageblock_mt
            || blocks.iter().sum::<u64>() != self.pageblock_mt.len() as u64
        {
            return Err(format!(
                "zone {}: pageblocks by type {blocks:?} != counted {:?}",
                self.zone_idx, self.nr_pageblock_mt
            ));
        }
        Ok(())
    }
}

/// The kernel's zone names (`zone_names[]`), as /proc files print them.
pub const ZONE_PROC_NAMES: [&str; MAX_NR_ZONES] = ["DMA", "DMA32", "Normal", "Movable"];

/// The migratetypes /proc/pagetypeinfo prints (`migratetype_names[]` with memory isolation
/// and without CMA, as this project's host kernel is built: docs/model.md); the model's
/// blocks and free pages are all of the first three.
pub const PROC_MIGRATETYPE_NAMES: [&str; 5] = [
    "Unmovable",
    "Movable",
    "Reclaimable",
    "HighAtomic",
    "Isolate",
];

/// `/proc/buddyinfo` (`frag_show_print()`, mm/vmstat.c 6.x): per zone, the free blocks of
/// each order.
pub fn buddyinfo(zones: &[Zone]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for z in zones.iter().filter(|z| z.managed_pages > 0) {
        let _ = write!(
            out,
            "Node {}, zone {:>8} ",
            z.nid, ZONE_PROC_NAMES[z.zone_idx]
        );
        for n in z.nr_free {
            let _ = write!(out, "{n:>6} ");
        }
        out.push('\n');
    }
    out
}

/// `/proc/pagetypeinfo` (`pagetypeinfo_show()`, mm/vmstat.c 6.x), node by node: the free
/// blocks of each migratetype and order (counted up to 100000, as the kernel's walk of each
/// list stops there, with `>` before a capped count), then the pageblocks of each type.
/// Not printed: the mixed-block counts (`pagetypeinfo_showmixedcount`, only with
/// CONFIG_PAGE_OWNER).
pub fn pagetypeinfo(zones: &[Zone]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut nids: Vec<u32> = zones.iter().map(|z| z.nid).collect();
    nids.dedup();
    for nid in nids {
        let node = || {
            zones
                .iter()
                .filter(move |z| z.nid == nid && z.managed_pages > 0)
        };
        let _ = write!(
            out,
            "Page block order: {PAGEBLOCK_ORDER}\nPages per block:  {PAGEBLOCK_NR_PAGES}\n\n"
        );
        let _ = write!(out, "{:<43} ", "Free pages count per migrate type at order");
        for o in 0..NR_PAGE_ORDERS {
            let _ = write!(out, "{o:>6} ");
        }
        out.push('\n');
        for z in node() {
            for (mt, name) in PROC_MIGRATETYPE_NAMES.iter().enumerate() {
                let zone = ZONE_PROC_NAMES[z.zone_idx];
                let _ = write!(out, "Node {nid:>4}, zone {zone:>8}, type {name:>12} ");
                for o in 0..NR_PAGE_ORDERS {
                    let n = z.nr_free_mt.get(mt).map_or(0, |c| c[o]);
                    let (mark, n) = if n >= 100_000 {
                        (">", 100_000)
                    } else {
                        ("", n)
                    };
                    let _ = write!(out, "{mark}{n:>6} ");
                }
                out.push('\n');
            }
        }
        let _ = write!(out, "\n{:<23}", "Number of blocks type ");
        for name in PROC_MIGRATETYPE_NAMES {
            let _ = write!(out, "{name:>12} ");
        }
        out.push('\n');
        for z in node() {
            let _ = write!(out, "Node {nid}, zone {:>8} ", ZONE_PROC_NAMES[z.zone_idx]);
            for mt in 0..PROC_MIGRATETYPE_NAMES.len() {
                let n = z.nr_pageblock_mt.get(mt).copied().unwrap_or(0);
                let _ = write!(out, "{n:>12} ");
            }
            out.push('\n');
        }
    }
    out
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
        z.watermark_boost = 0;
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
        Zone::new(
            ZONE_NORMAL,
            0,
            0,
            pages,
            free_lists(&Pages::new(0, NR_FREE_LISTS as u32), 0),
        )
    }

    /// A zone of all of `pages`, its free lists the array's first lists.
    fn zone_on(pages: &Pages) -> Zone {
        let n = u64::from(pages.nr_pages());
        Zone::new(ZONE_NORMAL, 0, 0, n, free_lists(pages, 0))
    }

    /// The order-0 list of a 16-page zone after freeing `freed` in turn, head first.
    fn order0_list(merge_likely: bool, freed: &[u32]) -> Vec<u32> {
        let mut pages = Pages::new(16, NR_FREE_LISTS as u32);
        let mut z = zone_on(&pages);
        z.buddy_merge_likely = merge_likely;
        for &p in freed {
            z.free_one_page(&mut pages, p, 0);
        }
        assert_eq!(z.check_free_lists(&pages), Ok(()));
        pages.iter(z.free_lists[0][MIGRATE_MOVABLE]).collect()
    }

    #[test]
    fn a_block_likely_to_merge_goes_to_the_tail() {
        // Pages 2 and 3 merge into an order-1 block; then page 8 (buddy 9 not free: its
        // order-1 block's buddy, 10–11, is not free either) goes to the head; then page 0:
        // its buddy 1 is not free, and the order-1 block 0–1 would merge with 2–3, which is
        // free: buddy_merge_likely(), the tail.
        assert_eq!(order0_list(true, &[2, 3, 8, 0]), [8, 0]);
        assert_eq!(order0_list(false, &[2, 3, 8, 0]), [0, 8]);
        // Page 4: its order-1 block 4–5 would merge with 6–7, not free: the head.
        assert_eq!(order0_list(true, &[2, 3, 8, 4]), [4, 8]);
    }

    /// The order-0 list [0, 4, 8] (pages 8, 4, 0 freed: no two are buddies) after `rotate`
    /// with page `moved`.
    fn three_block_list_after(
        moved: u32,
        rotate: fn(&mut Zone, &mut Pages, usize, usize, u32),
    ) -> Vec<u32> {
        let mut pages = Pages::new(16, NR_FREE_LISTS as u32);
        let mut z = zone_on(&pages);
        for p in [8, 4, 0] {
            z.free_one_page(&mut pages, p, 0);
        }
        rotate(&mut z, &mut pages, 0, MIGRATE_MOVABLE, moved);
        assert_eq!(z.check_free_lists(&pages), Ok(()));
        pages.iter(z.free_lists[0][MIGRATE_MOVABLE]).collect()
    }

    #[test]
    fn move_freelist_tail_rotates_the_list_past_the_page() {
        let list_after = |moved| three_block_list_after(moved, Zone::move_freelist_tail);
        assert_eq!(list_after(0), [4, 8, 0]);
        assert_eq!(list_after(4), [8, 0, 4]);
        assert_eq!(list_after(8), [0, 4, 8], "the last: nothing moves");
    }

    #[test]
    fn move_freelist_head_rotates_the_list_to_the_page() {
        let list_after = |moved| three_block_list_after(moved, Zone::move_freelist_head);
        assert_eq!(list_after(0), [0, 4, 8], "the first: nothing moves");
        assert_eq!(list_after(4), [4, 8, 0]);
        assert_eq!(list_after(8), [8, 0, 4]);
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
        let mut pages = Pages::new(2048, NR_FREE_LISTS as u32);
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

    /// A zone of 4 max-order blocks whose 8 pageblocks have the migratetypes `types`, after
    /// `ops`: each `(0, k)` allocates `k` movable pages one by one, `(1, k)` and `(2, k)`
    /// `k % 64` unmovable or reclaimable ones, each `(3, i)` frees the `i`-th allocated page
    /// still held.
    fn churned_zone(types: &[usize], ops: &[(u8, usize)]) -> (Zone, Pages, Vec<u32>) {
        let mut pages = Pages::new(4096, NR_FREE_LISTS as u32);
        let mut z = zone_on(&pages);
        for (b, &mt) in types.iter().enumerate() {
            z.set_pageblock_migratetype(b as u32 * PAGEBLOCK_NR_PAGES, mt);
        }
        for p in (0..4096).step_by(MAX_ORDER_NR_PAGES as usize) {
            z.free_one_page(&mut pages, p, (NR_PAGE_ORDERS - 1) as u32);
        }
        let mut held = Vec::new();
        for &(op, k) in ops {
            let (mt, k) = match op {
                0 => (MIGRATE_MOVABLE, k),
                1 => (MIGRATE_UNMOVABLE, k % 64),
                2 => (MIGRATE_RECLAIMABLE, k % 64),
                _ => {
                    if !held.is_empty() {
                        let p = held.swap_remove(k % held.len());
                        z.free_one_page(&mut pages, p, 0);
                    }
                    continue;
                }
            };
            held.extend((0..k).map_while(|_| z.__rmqueue(&mut pages, 0, mt, 0)));
        }
        (z, pages, held)
    }

    /// The two churned zones hold the same counters, the same free lists in the same order,
    /// the same pageblock types and the same page fields; both pass the free-list checks.
    fn same_zone_state(
        (z1, p1): (&Zone, &Pages),
        (z2, p2): (&Zone, &Pages),
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        proptest::prop_assert_eq!(z1.check_free_lists(p1), Ok(()));
        proptest::prop_assert_eq!(z2.check_free_lists(p2), Ok(()));
        proptest::prop_assert_eq!(z1.nr_free, z2.nr_free);
        proptest::prop_assert_eq!(z1.nr_free_mt, z2.nr_free_mt);
        proptest::prop_assert_eq!(z1.nr_free_pages, z2.nr_free_pages);
        proptest::prop_assert_eq!(&z1.pageblock_mt, &z2.pageblock_mt);
        for o in 0..NR_PAGE_ORDERS {
            for mt in 0..MIGRATE_TYPES {
                let (l1, l2) = (z1.free_lists[o][mt], z2.free_lists[o][mt]);
                proptest::prop_assert!(p1.iter(l1).eq(p2.iter(l2)), "free list {} {}", o, mt);
            }
        }
        for p in 0..4096 {
            proptest::prop_assert_eq!(p1.flags(p), p2.flags(p));
            proptest::prop_assert_eq!(p1.fields(p).order, p2.fields(p).order);
            proptest::prop_assert_eq!(p1.fields(p).owner, p2.fields(p).owner);
            proptest::prop_assert_eq!(p1.fields(p).lru, p2.fields(p).lru);
        }
        Ok(())
    }

    fn ops() -> impl proptest::strategy::Strategy<Value = Vec<(u8, usize)>> {
        proptest::collection::vec((0u8..4, 0usize..200), 0..120)
    }

    fn types() -> impl proptest::strategy::Strategy<Value = Vec<usize>> {
        proptest::collection::vec(
            proptest::prop_oneof![3 => proptest::strategy::Just(MIGRATE_MOVABLE), 1 => 0usize..3],
            8,
        )
    }

    proptest::proptest! {
        /// Taking a run of order-0 pages at once leaves the zone exactly as that many
        /// `__rmqueue(0, mt)` calls do, fallbacks and steals included, with or without
        /// ALLOC_NOFRAGMENT: the same pages in the
        /// same order, the same free lists in the same order, the same counters, pageblock
        /// types and page fields.
        #[test]
        fn a_run_of_order0_pages_is_what_single_rmqueues_give(
            types in types(),
            ops in ops(),
            n in 0usize..300,
            mt in 0usize..MIGRATE_TYPES,
            nofragment in proptest::bool::ANY,
        ) {
            let (mut z1, mut p1, _) = churned_zone(&types, &ops);
            let (mut z2, mut p2, _) = churned_zone(&types, &ops);
            // Boosting on, a pageblock a fallback: both ways boost alike.
            for z in [&mut z1, &mut z2] {
                z.watermark[WMARK_HIGH] = 100;
                z.watermark_boost_factor = 150_000;
            }
            let flags = ALLOC_KSWAPD | if nofragment { ALLOC_NOFRAGMENT } else { 0 };
            let one_by_one: Vec<u32> =
                (0..n).map_while(|_| z1.__rmqueue(&mut p1, 0, mt, flags)).collect();
            let mut run = Vec::new();
            let got = z2.rmqueue_order0_run(&mut p2, n, mt, flags, &mut run);
            proptest::prop_assert_eq!(got, run.len());
            proptest::prop_assert_eq!(&run, &one_by_one);
            proptest::prop_assert_eq!(z1.watermark_boost, z2.watermark_boost);
            proptest::prop_assert_eq!(z1.boosted_watermark, z2.boosted_watermark);
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
            types in types(),
            ops in ops(),
            picks in proptest::collection::vec((0usize..4096, 1usize..70), 0..8),
        ) {
            let (mut z1, mut p1, mut held) = churned_zone(&types, &ops);
            let (mut z2, mut p2, _) = churned_zone(&types, &ops);
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

        /// Allocating and freeing any mix of types keeps every page in one place (on one free
        /// list as part of one block, or held) and the pageblock counts adding up.
        #[test]
        fn every_page_is_free_once_or_held(types in types(), ops in ops()) {
            let (z, pages, held) = churned_zone(&types, &ops);
            proptest::prop_assert_eq!(z.check_free_lists(&pages), Ok(()));
            let mut seen = vec![0u8; 4096];
            for o in 0..NR_PAGE_ORDERS {
                for mt in 0..MIGRATE_TYPES {
                    for p in pages.iter(z.free_lists[o][mt]) {
                        for q in p..p + (1 << o) {
                            seen[q as usize] += 1;
                        }
                    }
                }
            }
            for &p in &held {
                seen[p as usize] += 1;
            }
            proptest::prop_assert!(seen.iter().all(|&n| n == 1));
        }
    }

    #[test]
    fn the_fallback_order_is_the_kernels() {
        // mm/page_alloc.c (6.2) `fallbacks[MIGRATE_TYPES][3]`, MIGRATE_TYPES ending each row:
        //   [MIGRATE_UNMOVABLE]   = { MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE,   MIGRATE_TYPES },
        //   [MIGRATE_MOVABLE]     = { MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE, MIGRATE_TYPES },
        //   [MIGRATE_RECLAIMABLE] = { MIGRATE_UNMOVABLE,   MIGRATE_MOVABLE,   MIGRATE_TYPES },
        // with UNMOVABLE 0, MOVABLE 1, RECLAIMABLE 2 (`enum migratetype`).
        assert_eq!(
            (MIGRATE_UNMOVABLE, MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE),
            (0, 1, 2)
        );
        assert_eq!(FALLBACKS, [[2, 1], [2, 0], [0, 1]]);
        // gfp_migratetype(): (gfp & GFP_MOVABLE_MASK) >> GFP_MOVABLE_SHIFT.
        use crate::mm::gfp::*;
        assert_eq!(gfp_migratetype(GFP_HIGHUSER_MOVABLE), MIGRATE_MOVABLE);
        assert_eq!(gfp_migratetype(GFP_KERNEL), MIGRATE_UNMOVABLE);
        assert_eq!(
            gfp_migratetype(GFP_KERNEL | __GFP_RECLAIMABLE),
            MIGRATE_RECLAIMABLE
        );
        // can_steal_fallback(): order ≥ pageblock_order / 2 = 4, or a non-movable request.
        assert!(!can_steal_fallback(0, MIGRATE_MOVABLE));
        assert!(!can_steal_fallback(3, MIGRATE_MOVABLE));
        assert!(can_steal_fallback(4, MIGRATE_MOVABLE));
        assert!(can_steal_fallback(9, MIGRATE_MOVABLE));
        assert!(can_steal_fallback(0, MIGRATE_UNMOVABLE));
        assert!(can_steal_fallback(0, MIGRATE_RECLAIMABLE));
    }

    /// A zone of `n` pages, all allocated, with pageblock types `types`: pages are then
    /// freed by hand.
    fn empty_zone(n: u32, types: &[usize]) -> (Zone, Pages) {
        let pages = Pages::new(n, NR_FREE_LISTS as u32);
        let mut z = zone_on(&pages);
        for (b, &mt) in types.iter().enumerate() {
            z.set_pageblock_migratetype(b as u32 * PAGEBLOCK_NR_PAGES, mt);
        }
        (z, pages)
    }

    #[test]
    fn a_fallback_takes_the_first_type_in_the_table_with_a_block() {
        // Pageblock 0 movable, 1 unmovable, 2 reclaimable; one order-2 block free in each.
        let (mut z, mut pages) = empty_zone(2048, &[1, 0, 2, 1]);
        for b in 0..3 {
            z.free_one_page(&mut pages, b * PAGEBLOCK_NR_PAGES, 2);
        }
        // Unmovable has its own block; movable falls back to reclaimable first.
        assert_eq!(
            z.find_suitable_fallback(2, MIGRATE_MOVABLE),
            Some((2, false))
        );
        assert_eq!(
            z.find_suitable_fallback(2, MIGRATE_UNMOVABLE),
            Some((2, true))
        );
        assert_eq!(
            z.find_suitable_fallback(2, MIGRATE_RECLAIMABLE),
            Some((0, true))
        );
        assert_eq!(z.find_suitable_fallback(3, MIGRATE_MOVABLE), None);
        assert_eq!(z.check_free_lists(&pages), Ok(()));
    }

    #[test]
    fn a_whole_free_max_order_block_changes_both_pageblocks() {
        let (mut z, mut pages) = empty_zone(1024, &[1, 1]);
        z.free_one_page(&mut pages, 0, 10);
        let p = z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, 0).unwrap();
        assert_eq!(p, 0);
        assert_eq!(z.pageblock_mt, vec![0, 0]);
        assert_eq!(z.nr_pageblock_mt, [2, 0, 0]);
        // The rest of the block was split onto the unmovable lists.
        assert_eq!(
            (0..10)
                .map(|o| z.nr_free_mt[MIGRATE_UNMOVABLE][o])
                .sum::<u64>(),
            10
        );
        assert_eq!(z.check_free_lists(&pages), Ok(()));
    }

    #[test]
    fn a_movable_request_that_cannot_steal_splits_the_smallest_block() {
        // Pageblock 0 unmovable, with free blocks of order 3 and order 1; nothing movable free.
        let (mut z, mut pages) = empty_zone(512, &[0]);
        z.free_one_page(&mut pages, 256, 3);
        z.free_one_page(&mut pages, 2, 1);
        let p = z.__rmqueue(&mut pages, 0, MIGRATE_MOVABLE, 0).unwrap();
        // The largest fallback (order 3 < pageblock_order / 2) cannot be stolen whole by a
        // movable request, so find_smallest takes the order-1 block; the pageblock stays
        // unmovable.
        assert_eq!(p, 2);
        assert_eq!(z.pageblock_mt, vec![MIGRATE_UNMOVABLE as u8]);
        assert_eq!(
            z.nr_free_mt[MIGRATE_MOVABLE][0], 1,
            "the buddy, on the movable list"
        );
        assert_eq!(z.nr_free_mt[MIGRATE_UNMOVABLE][3], 1);
        // A fallback block of order ≥ 4 may be stolen whole: with 256 + 8 free of 512 the
        // movable request claims the pageblock (`can_steal_fallback` of the block's order),
        // and the retried `__rmqueue_smallest` splits the smallest block it moved.
        let (mut z, mut pages) = empty_zone(512, &[0]);
        z.free_one_page(&mut pages, 256, 8);
        z.free_one_page(&mut pages, 8, 3);
        assert_eq!(z.__rmqueue(&mut pages, 0, MIGRATE_MOVABLE, 0), Some(8));
        assert_eq!(z.pageblock_mt, vec![MIGRATE_MOVABLE as u8]);
        assert_eq!(
            z.nr_free_mt[MIGRATE_UNMOVABLE], [0; NR_PAGE_ORDERS],
            "all moved"
        );
        assert_eq!(z.check_free_lists(&pages), Ok(()));
    }

    #[test]
    fn nofragment_falls_back_to_whole_pageblocks_only() {
        // A movable pageblock with an order-3 block free, an unmovable one with an order-8
        // block free, nothing reclaimable: a reclaimable request must fall back, and both
        // blocks are below pageblock order, so ALLOC_NOFRAGMENT refuses; without it the
        // largest (order 8) is taken.
        let (mut z, mut pages) = empty_zone(1024, &[1, 0]);
        z.free_one_page(&mut pages, 8, 3);
        z.free_one_page(&mut pages, 512 + 256, 8);
        assert_eq!(
            z.__rmqueue(&mut pages, 0, MIGRATE_RECLAIMABLE, ALLOC_NOFRAGMENT),
            None
        );
        assert_eq!(z.nr_free_pages, 8 + 256, "nothing taken");
        assert_eq!(
            z.__rmqueue(&mut pages, 0, MIGRATE_RECLAIMABLE, 0),
            Some(512 + 256)
        );
        // A whole free pageblock may still be taken under NOFRAGMENT.
        let (mut z, mut pages) = empty_zone(1024, &[1, 1]);
        z.free_one_page(&mut pages, 512, 9);
        assert_eq!(
            z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, ALLOC_NOFRAGMENT),
            Some(512)
        );
        assert_eq!(z.pageblock_mt, vec![1, 0]);
    }

    #[test]
    fn an_unmovable_request_claims_a_pageblock_half_free_or_alike() {
        // Movable pageblock 0 with 256 pages free (order 8 at 256): free ≥ 256, claimed.
        let (mut z, mut pages) = empty_zone(1024, &[1, 1]);
        z.free_one_page(&mut pages, 256, 8);
        // Pageblock 1: 128 pages free, 300 on an LRU (movable), 84 neither: 128 + 84 < 256,
        // its free pages move but the pageblock stays movable.
        z.free_one_page(&mut pages, 512 + 384, 7);
        for p in 512..512 + 300 {
            pages.set(p, pg::LRU);
        }
        assert_eq!(
            z.move_freepages_block(&mut pages, 600, MIGRATE_MOVABLE),
            (128, 300)
        );
        let p = z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, 0).unwrap();
        assert_eq!(p, 256, "the largest fallback block first");
        assert_eq!(z.pageblock_mt, vec![0, 1]);
        // The remaining 255 pages are on the unmovable lists; take them, then the next
        // unmovable request falls back to pageblock 1.
        for _ in 0..255 {
            z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, 0).unwrap();
        }
        let q = z.__rmqueue(&mut pages, 0, MIGRATE_UNMOVABLE, 0).unwrap();
        assert_eq!(q, 512 + 384);
        assert_eq!(
            z.pageblock_mt,
            vec![0, 1],
            "128 free + 84 alike < 256: not claimed"
        );
        assert_eq!(
            z.nr_free_mt[MIGRATE_UNMOVABLE].iter().sum::<u64>(),
            7,
            "the rest moved"
        );
        // Without the LRU pages, 128 free + 384 alike: claimed.
        let (mut z, mut pages) = empty_zone(512, &[1]);
        z.free_one_page(&mut pages, 384, 7);
        z.__rmqueue(&mut pages, 0, MIGRATE_RECLAIMABLE, 0).unwrap();
        assert_eq!(z.pageblock_mt, vec![MIGRATE_RECLAIMABLE as u8]);
        assert_eq!(z.check_free_lists(&pages), Ok(()));
    }

    #[test]
    fn order_checks_on_hand_built_free_lists() {
        // Free: order-3 blocks in an unmovable and a reclaimable pageblock, order-0 pages in
        // a movable one: 2·8 + 100 = 116 free pages.
        let (mut z, mut pages) = empty_zone(1536, &[0, 2, 1]);
        z.free_one_page(&mut pages, 8, 3);
        z.free_one_page(&mut pages, 512 + 8, 3);
        for p in (1024..1224).step_by(2) {
            z.free_one_page(&mut pages, p, 0);
        }
        assert_eq!(z.nr_free_pages, 116);
        // __zone_watermark_ok: free − (2^order − 1) must exceed the mark, and some list of
        // order ≥ the request's, of any of the three types, must be non-empty.
        assert!(z.watermark_ok(3, 100, ZONE_NORMAL, 116)); // 116 − 7 = 109 > 100
        assert!(!z.watermark_ok(3, 109, ZONE_NORMAL, 116)); // 109 ≤ 109
        assert!(!z.watermark_ok(4, 10, ZONE_NORMAL, 116)); // no block of order ≥ 4
        assert!(z.watermark_ok(1, 10, ZONE_NORMAL, 116)); // order 3 serves order 1
        assert!(z.watermark_ok(0, 115, ZONE_NORMAL, 116));
        assert!(!z.watermark_ok(0, 116, ZONE_NORMAL, 116));
        // The lowmem reserve of the allocation's highest zone adds to the mark.
        z.lowmem_reserve[ZONE_MOVABLE] = 10;
        assert!(!z.watermark_ok(3, 100, ZONE_MOVABLE, 116));
    }

    #[test]
    fn order_check_needs_a_large_enough_block() {
        let mut pages = Pages::new(1024, NR_FREE_LISTS as u32);
        let mut z = zone_on(&pages);
        for p in (0..1024).step_by(2) {
            z.free_one_page(&mut pages, p, 0); // every other page: nothing merges
        }
        assert!(z.zone_watermark_ok(0, 10, ZONE_NORMAL));
        assert!(!z.zone_watermark_ok(1, 10, ZONE_NORMAL));
    }

    #[test]
    fn buddyinfo_and_pagetypeinfo_have_the_kernels_layout() {
        let (mut z, mut pages) = empty_zone(1024, &[0, 1]);
        z.free_one_page(&mut pages, 8, 3);
        z.free_one_page(&mut pages, 512, 9);
        let zones = [z];
        assert_eq!(
            buddyinfo(&zones),
            "Node 0, zone   Normal      0      0      0      1      0      0      0      0      0      1      0 \n"
        );
        let text = pagetypeinfo(&zones);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Page block order: 9");
        assert_eq!(lines[1], "Pages per block:  512");
        // This host's /proc/pagetypeinfo, read 2026-11-27, has the same columns.
        assert_eq!(
            lines[3],
            "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 "
        );
        assert_eq!(
            lines[4],
            "Node    0, zone   Normal, type    Unmovable      0      0      0      1      0      0      0      0      0      0      0 "
        );
        assert_eq!(
            lines[10],
            "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate "
        );
        assert_eq!(
            lines[11],
            "Node 0, zone   Normal            1            1            0            0            0 "
        );
    }

    #[test]
    fn lowmem_reserve_protects_lower_zones() {
        let r = setup_per_zone_lowmem_reserve(&[0, 786_432, 8_388_608, 0]);
        assert_eq!(r[ZONE_DMA32][ZONE_NORMAL], 8_388_608 / 256);
        assert_eq!(r[ZONE_NORMAL][ZONE_MOVABLE], 0);
        assert_eq!(r[ZONE_DMA][ZONE_NORMAL], 0);
    }
}
