//! Compaction (mm/compaction.c of Linux 6.6, read at 6.6.57), and what reclaim asks of it.
//!
//! **Reclaim's questions**: whether compaction could run (`compaction_suitable`, with the
//! fragmentation index), whether reclaim has done enough for it (`compaction_ready`), and the
//! gap it wants (`compact_gap`); 6.4+: `compaction_suitable` returns a bool and checks the
//! order-0 watermark at min, or low for costly orders, plus the gap.
//!
//! **Direct compaction** from the allocator's slow path (`mm::page_alloc`:
//! `__alloc_pages_direct_compact` → `try_to_compact_pages` → `compact_zone_order` →
//! `compact_zone`) and **kcompactd** (`kcompactd_run`, woken by kswapd with
//! `wakeup_kcompactd`, `kcompactd_do_work`). `compact_zone` runs the migrate scanner
//! (`isolate_migratepages`: from the zone's start upward, pageblock by pageblock, isolating
//! movable LRU folios and stepping over free blocks by their order) and the free scanner
//! (`isolate_freepages`: from the zone's end downward, taking free blocks split into order-0
//! migration targets), migrates what the one isolated into what the other found
//! (`mm::migrate`), and stops when the scanners meet (COMPACT_COMPLETE, or
//! COMPACT_PARTIAL_SKIPPED when it did not start from the zone's ends) or when a free block of
//! the order is on the requested migratetype's lists, or one it may steal
//! (`__compact_finished`: COMPACT_SUCCESS). Pageblock skip bits (`isolation_suitable`,
//! `update_pageblock_skip`, `test_and_set_skip`, cleared by `__reset_isolation_suitable`
//! when kswapd goes to sleep or compaction restarts after deferral), the cached scanner
//! positions, the three priorities (async, sync-light, sync-full: `compact_priority`) and
//! deferral (`defer_compaction`, `compaction_deferred`, `compaction_defer_reset`) are the
//! kernel's. A compaction yields its CPU after each round of isolation and migration (the
//! kernel's `cond_resched()` in `isolate_migratepages_block`).
//!
//! Costs: each page descriptor a scanner reads, `COMPACT_SCAN_NS` (a free block or compound
//! page stepped over at its head is one read, though the kernel's scanned counts, and the
//! model's, count its pages); lru_lock for the folios
//! isolated (`costs.isolate_ns` each) and put back (`costs.putback_ns`); zone->lock for each
//! free block taken (`costs.buddy_ns`); migration as `mm::migrate` says.
//!
//! **Contention** (6.x `compact_lock_irqsave()`, `__compact_finished()`): an async
//! compaction that finds zone->lock or an lru_lock held by another CPU when it goes to take
//! it marks itself contended (`cc->contended`), spins for the lock all the same, finishes
//! the pageblock it is in, and then ends COMPACT_CONTENDED unless a free block of the order
//! is there by then; the allocator's slow path goes on to direct reclaim after it. The model
//! tries each lock once per call of a scanner's block function (at its first folio or free
//! block), where the kernel drops and retakes it every COMPACT_CLUSTER_MAX frames, so it has
//! fewer chances to find it held; the trylock fails where a hold booked on the lock covers
//! the moment (`SpinLock::is_locked_at`). Since 5.1 `need_resched()` no longer ends an
//! async compaction; that `try_to_compact_pages()` stops at it before the next zone is not
//! modelled.
//!
//! The scanners' fast searches of the free lists (5.1+) are switches:
//! `variant.fast_find_migrateblock` (`fast_find_migrateblock`) and
//! `variant.fast_isolate_freepages` (`fast_isolate_freepages`, `fast_isolate_around`);
//! without them the scanners are linear, as before 5.1 (and in 2.6.36, seed 003's kernel).
//!
//! Departures: no page capture (`compaction_capture`): a compaction that frees a
//! block of the order leaves it on the free lists for the allocation's next attempt; no
//! proactive compaction (`vm.compaction_proactiveness` as 0) and no /proc/sys/vm/compact_memory;
//! `too_many_isolated` is not modelled, nor a fatal signal ending a compaction; compound
//! pages (the hugetlb pool's) are skipped as the kernel skips them, large folios too (6.6;
//! 6.9 migrates them); dirty page-cache folios are never isolated (the model's dirty lists name pfns, so
//! it has no `migrate_folio` for them), where the kernel's MIGRATE_SYNC would migrate them;
//! `mm_compaction_suitable` is traced by compaction's own calls, not by reclaim's.

use super::gfp::{Gfp, __GFP_IO, GFP_KERNEL};
use super::lru::is_file_lru;
use super::migrate::{MigrateStats, NewFolio};
use super::page::{pg, PageFields};
use super::page_alloc::{
    alloc_flags_mark, zone_usable, AllocContext, AllocFlags, PAGE_ALLOC_COSTLY_ORDER,
};
use super::vmstat::VmEvent;
use super::zone::{
    gfp_migratetype, pageblock_aligned, pageblock_end_pfn, pageblock_start_pfn, Zone,
    MIGRATE_MOVABLE, NR_PAGE_ORDERS, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER, WMARK_HIGH, WMARK_LOW,
    WMARK_MIN,
};
use crate::engine::Ns;
use crate::hw::lock::SpinLock;
use crate::kernel::Kernel;
use crate::process::{cond_resched, psi_memstall_enter, psi_memstall_leave, schedule, Cx, Sim};
use crate::sched::TaskClass;

/// `sysctl_extfrag_threshold` (vm.extfrag_threshold) default: a costly request is worth
/// compacting for only when its fragmentation index is above this.
pub const EXTFRAG_THRESHOLD: i32 = 500;

/// COMPACT_CLUSTER_MAX (SWAP_CLUSTER_MAX): the folios isolated for one round of migration.
pub const COMPACT_CLUSTER_MAX: u64 = 32;

/// COMPACT_MAX_DEFER_SHIFT: compaction is skipped at most 2^6 = 64 times after failures.
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;

/// COMPACTION_HPAGE_ORDER (x86-64: HPAGE_PMD_ORDER).
pub const COMPACTION_HPAGE_ORDER: u32 = 9;

/// A compaction scanner looking at one page frame (`pfn_to_page()` and a test of its
/// flags): a 64-byte page descriptor read in pfn order, which the hardware prefetcher
/// streams. A guess; not measured on a host.
pub const COMPACT_SCAN_NS: Ns = 5;

/// `enum compact_priority`: how hard direct compaction tries (lower is harder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactPriority {
    /// MIN_COMPACT_PRIORITY: the whole zone, skip hints and pageblock types ignored.
    SyncFull = 0,
    /// MIN_COMPACT_COSTLY_PRIORITY, DEF_COMPACT_PRIORITY: MIGRATE_SYNC_LIGHT.
    SyncLight = 1,
    /// INIT_COMPACT_PRIORITY: MIGRATE_ASYNC.
    Async = 2,
}

pub const MIN_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncFull;
pub const MIN_COMPACT_COSTLY_PRIORITY: CompactPriority = CompactPriority::SyncLight;
pub const DEF_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncLight;
pub const INIT_COMPACT_PRIORITY: CompactPriority = CompactPriority::Async;

/// `enum compact_result`, in the kernel's order (`try_to_compact_pages` keeps the largest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactResult {
    NotSuitableZone,
    /// Not started: too few free pages for migration targets (reclaim's to fix).
    Skipped,
    /// Not started: deferred after recent failures.
    Deferred,
    NoSuitablePage,
    Continue,
    /// The scanners met over the whole zone.
    Complete,
    /// The scanners met over part of the zone (they started from cached positions).
    PartialSkipped,
    Contended,
    /// A free block of the order is there for the allocation.
    Success,
}

impl CompactResult {
    /// `COMPACTION_STATUS` of include/trace/events/mmflags.h.
    pub fn name(self) -> &'static str {
        match self {
            CompactResult::NotSuitableZone => "not_suitable_zone",
            CompactResult::Skipped => "skipped",
            CompactResult::Deferred => "deferred",
            CompactResult::NoSuitablePage => "no_suitable_page",
            CompactResult::Continue => "continue",
            CompactResult::Complete => "complete",
            CompactResult::PartialSkipped => "partial_skipped",
            CompactResult::Contended => "contended",
            CompactResult::Success => "success",
        }
    }
}

/// `enum migrate_mode` (the compaction ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MigrateMode {
    Async,
    SyncLight,
    Sync,
}

/// `struct compact_control`: one compaction of one zone.
#[derive(Clone, Debug)]
pub struct CompactControl {
    /// `freepages`: the order-0 pages the free scanner isolated, the next target last (the
    /// kernel's list head).
    pub freepages: Vec<u32>,
    /// `migratepages`: the heads of the isolated folios, in the order they were isolated
    /// (the last is the list's head, migrated first).
    pub migratepages: Vec<u32>,
    /// Pages of the folios on `migratepages`.
    pub nr_migratepages: u64,
    /// Where the free scanner goes on from, downward, and where the migrate scanner does,
    /// upward.
    pub free_pfn: u32,
    pub migrate_pfn: u32,
    pub total_migrate_scanned: u64,
    pub total_free_scanned: u64,
    /// Page descriptors the scanners read or prepare, which their CPU time is charged for:
    /// one per page looked at, and each page of a free block the free scanner takes
    /// (`split_map_pages`); the scanned counts above also count the pages of a free block or
    /// compound page stepped over at its head, as the kernel's do, which no scanner reads.
    pub frames_looked: u64,
    /// The zone (an index into `Memory::zones`).
    pub zone: usize,
    pub order: u32,
    pub gfp_mask: Gfp,
    /// `gfp_migratetype(gfp_mask)`.
    pub migratetype: usize,
    pub alloc_flags: AllocFlags,
    pub highest_zoneidx: usize,
    pub mode: MigrateMode,
    /// For an allocation (not kcompactd).
    pub direct_compaction: bool,
    /// From the zone's ends, not the cached positions.
    pub whole_zone: bool,
    pub ignore_skip_hint: bool,
    /// Free pages of any pageblock type are targets.
    pub ignore_block_suitable: bool,
    /// Scan the current pageblock to its end (`finish_pageblock`).
    pub finish_pageblock: bool,
    /// An async compaction found zone->lock or an lru_lock held when it went to take it
    /// (`compact_lock_irqsave()`'s failed `spin_trylock_irqsave()`): it takes the lock all
    /// the same, finishes the pageblock, and then ends COMPACT_CONTENDED.
    pub contended: bool,
    /// The CPU the compaction runs on.
    pub cpu: u32,
    /// `fast_search_fail`: fast searches of the free lists for a migration source that
    /// found none; each halves the next one's scan limit (`freelist_scan_limit()`).
    pub fast_search_fail: u32,
    /// `fast_start_pfn`: the lowest free block a fast search found, where a linear scan
    /// starts after a failed one (0: none yet; `u32::MAX`: used).
    pub fast_start_pfn: u32,
    /// `search_order`: the order of the free lists the free scanner's fast search reads
    /// first, the order it last took a block from or the next after a search that found
    /// none (`next_search_order()`); the request's order at the start.
    pub search_order: i32,
}

impl CompactControl {
    /// A compaction of zone `zi` for an allocation of `order` with `gfp_mask`, on `cpu`.
    pub fn new(zi: usize, order: u32, gfp_mask: Gfp, mode: MigrateMode, cpu: u32) -> Self {
        CompactControl {
            freepages: Vec::new(),
            migratepages: Vec::new(),
            nr_migratepages: 0,
            free_pfn: 0,
            migrate_pfn: 0,
            total_migrate_scanned: 0,
            total_free_scanned: 0,
            frames_looked: 0,
            zone: zi,
            order,
            gfp_mask,
            migratetype: gfp_migratetype(gfp_mask),
            alloc_flags: 0,
            highest_zoneidx: super::gfp::gfp_zone(gfp_mask),
            mode,
            direct_compaction: false,
            whole_zone: false,
            ignore_skip_hint: false,
            ignore_block_suitable: false,
            finish_pageblock: false,
            contended: false,
            cpu,
            fast_search_fail: 0,
            fast_start_pfn: 0,
            search_order: order as i32,
        }
    }

    /// `cc->nr_freepages`.
    pub fn nr_freepages(&self) -> u64 {
        self.freepages.len() as u64
    }

    /// `compact_lock_irqsave()`'s trylock (6.x) at `at`: an async compaction that finds
    /// `lock` held is contended from then on. The kernel then spins for the lock all the
    /// same; the model books the hold when the scanner's block is done. Departures: the
    /// probe sees the holds booked by the tasks whose steps have run, not those a later step
    /// books into an earlier gap, and it comes when the block's scan starts, before its
    /// frames are charged, so it finds fewer holds than the kernel's trylock.
    pub fn compact_lock_irqsave(&mut self, lock: &SpinLock, at: Ns) {
        if self.mode == MigrateMode::Async && !self.contended && lock.is_locked_at(at) {
            self.contended = true;
        }
    }
}

/// `compaction_alloc()`: the free scanner as migration's source of new folios.
impl NewFolio for CompactControl {
    fn get_new_folio(&mut self, k: &mut Kernel, _src: u32) -> Option<u32> {
        k.compaction_alloc(self)
    }
}

/// What `isolate_migratepages()` found (`isolate_migrate_t`; ISOLATE_ABORT needs contention
/// or a fatal signal, neither modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolateMigrate {
    None,
    Success,
}

/// `isolate_mode_t` of the migrate scanner: ISOLATE_ASYNC_MIGRATE (skip folios that cannot
/// be migrated without blocking: under writeback, dirty without `migrate_folio`) unless the
/// migration is MIGRATE_SYNC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsolateMode {
    pub async_migrate: bool,
}

/// `next_search_order()`: the fast free search's next order, round-robin down from
/// `search_order`; when it wraps back to `search_order`, that moves one down (wrapping too)
/// and the search ends (−1).
fn next_search_order(cc: &mut CompactControl, order: i32) -> i32 {
    let mut order = order - 1;
    if order < 0 {
        order = cc.order as i32 - 1;
    }
    if order == cc.search_order {
        cc.search_order -= 1;
        if cc.search_order < 0 {
            cc.search_order = cc.order as i32 - 1;
        }
        return -1;
    }
    order
}

/// `freelist_scan_limit()`: how many free blocks a fast search reads, halved by each
/// search before it that found none (`fast_search_fail`).
fn freelist_scan_limit(cc: &CompactControl) -> u64 {
    (COMPACT_CLUSTER_MAX >> cc.fast_search_fail.min(63)) + 1
}

/// `block_start_pfn(pfn, order)`.
#[inline]
fn block_start_pfn(pfn: u32, order: u32) -> u32 {
    pfn & !((1 << order) - 1)
}

/// `block_end_pfn(pfn, order)`: ALIGN(pfn + 1, 1 << order).
#[inline]
fn block_end_pfn(pfn: u32, order: u32) -> u32 {
    block_start_pfn(pfn, order) + (1 << order)
}

/// `PageCompound()` and `compound_order()` of the page with fields `f`: None if it is in no
/// compound page; a head's order (a large folio's, a hugetlb page's: its `order` field, which
/// a free block's also is), 0 for a tail (`compound_order()` reads PG_head on the page given).
#[inline]
fn compound_order(f: &PageFields) -> Option<u32> {
    if f.flags & pg::TAIL != 0 {
        Some(0)
    } else if f.flags & pg::BUDDY == 0 && f.order > 0 {
        Some(u32::from(f.order))
    } else {
        None
    }
}

/// `compact_scanners_met()`: the free scanner has reached the migrate scanner's pageblock.
#[inline]
pub fn compact_scanners_met(cc: &CompactControl) -> bool {
    (cc.free_pfn >> PAGEBLOCK_ORDER) <= (cc.migrate_pfn >> PAGEBLOCK_ORDER)
}

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
pub fn __compaction_suitable(zone: &Zone, order: u32, highest_zoneidx: usize, free: u64) -> bool {
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

/// Where a compaction of one zone is between its rounds (`compact_zone()`'s locals).
#[derive(Clone, Copy, Debug)]
pub struct ZoneScan {
    /// The pageblock migrated from last, to flush once the scanner has left it (the
    /// kernel's `last_migrated_pfn`, 0 for none; here None, as the model's first zone
    /// starts at pfn 0).
    last_migrated_pfn: Option<u32>,
    /// Keep the sync scanner's cached position with the async one's while nothing is
    /// isolated.
    update_cached: bool,
}

// --- deferral --------------------------------------------------------------------------

impl Kernel {
    /// `defer_compaction()`: compaction of zone `zi` failed at `order`; skip the next
    /// 2^(shift + 1) attempts, up to 64.
    pub fn defer_compaction(&mut self, zi: usize, order: u32) {
        let z = &mut self.mem.zones[zi];
        z.compact_considered = 0;
        z.compact_defer_shift += 1;
        if (order as i32) < z.compact_order_failed {
            z.compact_order_failed = order as i32;
        }
        if z.compact_defer_shift > COMPACT_MAX_DEFER_SHIFT {
            z.compact_defer_shift = COMPACT_MAX_DEFER_SHIFT;
        }
        self.trace_compaction_defer("defer_compaction", zi, order);
    }

    /// `compaction_deferred()`: whether this attempt at `order` on zone `zi` is skipped
    /// (counting it as considered).
    pub fn compaction_deferred(&mut self, zi: usize, order: u32) -> bool {
        let z = &mut self.mem.zones[zi];
        let defer_limit = 1u32 << z.compact_defer_shift;
        if (order as i32) < z.compact_order_failed {
            return false;
        }
        z.compact_considered += 1;
        if z.compact_considered >= defer_limit {
            z.compact_considered = defer_limit;
            return false;
        }
        self.trace_compaction_defer("deferred", zi, order);
        true
    }

    /// `compaction_defer_reset()`: compaction at `order` succeeded on zone `zi` (the
    /// allocation too, with `alloc_success`).
    pub fn compaction_defer_reset(&mut self, zi: usize, order: u32, alloc_success: bool) {
        let z = &mut self.mem.zones[zi];
        if alloc_success {
            z.compact_considered = 0;
            z.compact_defer_shift = 0;
        }
        if order as i32 >= z.compact_order_failed {
            z.compact_order_failed = order as i32 + 1;
        }
        self.trace_compaction_defer("defer_reset", zi, order);
    }

    /// `compaction_restarting()`: compaction at `order` is tried again after the longest
    /// deferral.
    pub fn compaction_restarting(&self, zi: usize, order: u32) -> bool {
        let z = &self.mem.zones[zi];
        if (order as i32) < z.compact_order_failed {
            return false;
        }
        z.compact_defer_shift == COMPACT_MAX_DEFER_SHIFT
            && z.compact_considered >= 1 << z.compact_defer_shift
    }
}

// --- skip hints ------------------------------------------------------------------------

impl Kernel {
    /// `isolation_suitable()`: the pageblock of `pfn` is to be scanned.
    fn isolation_suitable(&self, cc: &CompactControl, pfn: u32) -> bool {
        cc.ignore_skip_hint || !self.mem.zones[cc.zone].get_pageblock_skip(pfn)
    }

    /// `pageblock_skip_persistent()`: `pfn` is in a compound page of a pageblock or more (a
    /// huge page: never worth scanning).
    fn pageblock_skip_persistent(&self, pfn: u32) -> bool {
        let f = self.mem.pages.fields(pfn);
        // compound_head()
        let head = if f.flags & pg::TAIL != 0 {
            self.mem.pages.fields(f.owner)
        } else {
            f
        };
        compound_order(head).is_some_and(|order| order >= PAGEBLOCK_ORDER)
    }

    /// `__reset_isolation_pfn()` for the pageblock of `pfn`: clear its skip bit if a page
    /// every 2^PAGE_ALLOC_COSTLY_ORDER is on an LRU (`check_source`) or free
    /// (`check_target`); with both, a block already clear counts at once. Returns whether
    /// the block may serve.
    fn __reset_isolation_pfn(
        &mut self,
        zi: usize,
        pfn: u32,
        check_source: bool,
        check_target: bool,
    ) -> bool {
        if self.pageblock_skip_persistent(pfn) {
            return false;
        }
        let z = &self.mem.zones[zi];
        if check_source && check_target && !z.get_pageblock_skip(pfn) {
            return true;
        }
        if !check_source && check_target && z.get_pageblock_migratetype(pfn) != MIGRATE_MOVABLE {
            return false;
        }
        let start = pageblock_start_pfn(pfn).max(z.start_pfn);
        let end = (pageblock_end_pfn(pfn) - 1).min(z.end_pfn() - 1);
        let mut page = start;
        let mut sampled = 0;
        let found = loop {
            if page > end {
                break false;
            }
            sampled += 1;
            let flags = self.mem.pages.flags(page);
            if (check_source && flags & pg::LRU != 0) || (check_target && flags & pg::BUDDY != 0) {
                break true;
            }
            page += 1 << PAGE_ALLOC_COSTLY_ORDER;
        };
        self.charge(sampled * COMPACT_SCAN_NS);
        if found {
            self.mem.zones[zi].clear_pageblock_skip(pfn);
        }
        found
    }

    /// `__reset_isolation_suitable()` of zone `zi`, if a direct compaction's scanners met
    /// since the last one (`compact_blockskip_flush`): from both ends towards the middle,
    /// clear the skip bits of pageblocks that could serve as sources (from the start) or
    /// targets (from the end), and restart the scanners at the first of each.
    pub fn __reset_isolation_suitable(&mut self, zi: usize) {
        let z = &mut self.mem.zones[zi];
        if !z.compact_blockskip_flush {
            return;
        }
        z.compact_blockskip_flush = false;
        let mut migrate_pfn = z.start_pfn;
        let mut free_pfn = z.end_pfn() - 1;
        let mut reset_migrate = free_pfn;
        let mut reset_free = migrate_pfn;
        let (mut source_set, mut free_set) = (false, false);
        while migrate_pfn < free_pfn {
            if self.__reset_isolation_pfn(zi, migrate_pfn, true, source_set)
                && migrate_pfn < reset_migrate
            {
                source_set = true;
                reset_migrate = migrate_pfn;
                let z = &mut self.mem.zones[zi];
                z.compact_init_migrate_pfn = reset_migrate;
                z.compact_cached_migrate_pfn = [reset_migrate; 2];
            }
            if self.__reset_isolation_pfn(zi, free_pfn, free_set, true) && free_pfn > reset_free {
                free_set = true;
                reset_free = free_pfn;
                let z = &mut self.mem.zones[zi];
                z.compact_init_free_pfn = reset_free;
                z.compact_cached_free_pfn = reset_free;
            }
            migrate_pfn += PAGEBLOCK_NR_PAGES;
            free_pfn = free_pfn.saturating_sub(PAGEBLOCK_NR_PAGES);
        }
        if reset_migrate >= reset_free {
            let z = &mut self.mem.zones[zi];
            z.compact_cached_migrate_pfn = [migrate_pfn; 2];
            z.compact_cached_free_pfn = free_pfn;
        }
    }

    /// `reset_isolation_suitable()` of node `nid`: each of its zones whose skip bits a
    /// finished direct compaction left to clear (kswapd, going to sleep).
    pub fn reset_isolation_suitable(&mut self, nid: u32) {
        for i in 0..self.mem.nodes[nid as usize].zones.len() {
            let zi = self.mem.nodes[nid as usize].zones[i];
            if self.mem.zones[zi].compact_blockskip_flush {
                self.__reset_isolation_suitable(zi);
            }
        }
    }

    /// `test_and_set_skip()`: mark the pageblock of `pfn` as being scanned (skipped by other
    /// compactions); whether it already was.
    fn test_and_set_skip(&mut self, cc: &CompactControl, pfn: u32) -> bool {
        if cc.ignore_skip_hint {
            return false;
        }
        let z = &mut self.mem.zones[cc.zone];
        let skip = z.get_pageblock_skip(pfn);
        if !skip {
            z.set_pageblock_skip(pfn);
        }
        skip
    }

    /// `update_cached_migrate()`: where async and sync compaction's migrate scanners start
    /// next, past the pageblock of `pfn`.
    fn update_cached_migrate(&mut self, cc: &CompactControl, pfn: u32) {
        let z = &mut self.mem.zones[cc.zone];
        let pfn = pageblock_end_pfn(pfn);
        if pfn > z.compact_cached_migrate_pfn[0] {
            z.compact_cached_migrate_pfn[0] = pfn;
        }
        if cc.mode != MigrateMode::Async && pfn > z.compact_cached_migrate_pfn[1] {
            z.compact_cached_migrate_pfn[1] = pfn;
        }
    }

    /// `update_pageblock_skip()`: the free scanner found nothing to take in the pageblock of
    /// `page`; it restarts below `pfn` next time.
    fn update_pageblock_skip(&mut self, cc: &CompactControl, page: u32, pfn: u32) {
        let z = &mut self.mem.zones[cc.zone];
        z.set_pageblock_skip(page);
        if pfn < z.compact_cached_free_pfn {
            z.compact_cached_free_pfn = pfn;
        }
    }
}

// --- the free scanner ------------------------------------------------------------------

impl Kernel {
    /// `isolate_freepages_block()` from `*start_pfn` to `end_pfn` (one pageblock) every
    /// `stride` page frames: each free block is taken whole (`__isolate_free_page`) and
    /// split into order-0 targets, until there are as many as folios to migrate, or the
    /// watermark refuses one. Compound pages are stepped over. `*start_pfn` is left where
    /// the scan stopped; returns the pages taken.
    fn isolate_freepages_block(
        &mut self,
        cc: &mut CompactControl,
        start_pfn: &mut u32,
        end_pfn: u32,
        stride: u32,
    ) -> u64 {
        let zi = cc.zone;
        let mut nr_scanned = 0u64;
        let mut total_isolated = 0u64;
        let mut nr_blocks = 0u64;
        let mut blockpfn = *start_pfn;
        while blockpfn < end_pfn {
            nr_scanned += 1;
            cc.frames_looked += 1;
            let f = *self.mem.pages.fields(blockpfn);
            if let Some(order) = compound_order(&f) {
                let rest = (1u32 << order) - 1;
                blockpfn += rest;
                nr_scanned += u64::from(rest);
            } else if f.flags & pg::BUDDY != 0 {
                if nr_blocks == 0 {
                    // The first free block taken under zone->lock (`compact_lock_irqsave()`).
                    let at = self.clock();
                    cc.compact_lock_irqsave(&self.mem.zone_lock[zi], at);
                }
                let isolated = self.isolate_free_block(cc, blockpfn, u32::from(f.order));
                if isolated == 0 {
                    break;
                }
                nr_blocks += 1;
                nr_scanned += u64::from(isolated) - 1;
                total_isolated += u64::from(isolated);
                if cc.nr_migratepages <= cc.nr_freepages() {
                    blockpfn += isolated;
                    break;
                }
                blockpfn += isolated - 1;
            }
            blockpfn += stride;
        }
        let blockpfn = blockpfn.min(end_pfn);
        if nr_blocks > 0 {
            let at = self.clock();
            let cpu_node = self.cpus.node_of(cc.cpu);
            let lock = self.zone_lock(zi, cpu_node, nr_blocks * self.costs.buddy_ns, at);
            self.charge(lock.total());
        }
        self.trace_compaction_isolate(
            "isolate_freepages",
            *start_pfn,
            blockpfn,
            nr_scanned,
            total_isolated,
        );
        *start_pfn = blockpfn;
        cc.total_free_scanned += nr_scanned;
        self.count(VmEvent::CompactIsolated, total_isolated);
        total_isolated
    }

    /// The free block at `pfn` of `order` taken whole as migration targets
    /// (`__isolate_free_page()`, its free pages off this CPU's count, then
    /// `split_map_pages()`'s order-0 targets, each a page descriptor prepared); returns the
    /// pages taken, 0 when the watermark refuses it.
    fn isolate_free_block(&mut self, cc: &mut CompactControl, pfn: u32, order: u32) -> u32 {
        let zi = cc.zone;
        let z = &mut self.mem.zones[zi];
        let isolated = z.__isolate_free_page(&mut self.mem.pages, pfn, order);
        if isolated == 0 {
            return 0;
        }
        // __mod_zone_freepage_state(zone, -(1 << order)) on this CPU.
        self.percpu
            .pcp
            .mod_free(z, zi, cc.cpu, -i64::from(isolated));
        cc.freepages.extend(pfn..pfn + isolated);
        self.mem.compaction_freepages += u64::from(isolated);
        cc.frames_looked += u64::from(isolated) - 1;
        isolated
    }

    /// `suitable_migration_target()`: the pageblock of `pfn` may give migration targets: not
    /// a free block of a pageblock or more (which is what compaction makes), and movable
    /// (or any type, with `ignore_block_suitable`).
    fn suitable_migration_target(&self, cc: &CompactControl, pfn: u32) -> bool {
        let f = self.mem.pages.fields(pfn);
        if f.flags & pg::BUDDY != 0 && u32::from(f.order) >= PAGEBLOCK_ORDER {
            return false;
        }
        cc.ignore_block_suitable
            || self.mem.zones[cc.zone].get_pageblock_migratetype(pfn) == MIGRATE_MOVABLE
    }

    /// `isolate_freepages()`: the free scanner, from `cc.free_pfn` down, pageblock by
    /// pageblock, to the end of the migrate scanner's pageblock, until it holds as many
    /// targets as there are pages to migrate. Async compaction looks at every 32nd page
    /// frame of a block at first, halving the stride down to 1 once it finds pages.
    fn isolate_freepages(&mut self, cc: &mut CompactControl) {
        if self.variant.fast_isolate_freepages {
            self.fast_isolate_freepages(cc);
            if cc.nr_freepages() > 0 {
                return;
            }
        }
        let z = &self.mem.zones[cc.zone];
        let mut isolate_start_pfn = cc.free_pfn;
        let mut block_start_pfn = pageblock_start_pfn(isolate_start_pfn);
        let mut block_end_pfn = (block_start_pfn + PAGEBLOCK_NR_PAGES).min(z.end_pfn());
        let low_pfn = pageblock_end_pfn(cc.migrate_pfn);
        let mut stride = if cc.mode == MigrateMode::Async {
            COMPACT_CLUSTER_MAX as u32
        } else {
            1
        };
        while block_start_pfn >= low_pfn {
            if self.suitable_migration_target(cc, block_start_pfn)
                && self.isolation_suitable(cc, block_start_pfn)
            {
                let nr_isolated =
                    self.isolate_freepages_block(cc, &mut isolate_start_pfn, block_end_pfn, stride);
                if isolate_start_pfn == block_end_pfn {
                    self.update_pageblock_skip(
                        cc,
                        block_start_pfn,
                        block_start_pfn - PAGEBLOCK_NR_PAGES,
                    );
                }
                if cc.nr_freepages() >= cc.nr_migratepages {
                    if isolate_start_pfn >= block_end_pfn {
                        // Restart at the previous pageblock if more can be taken next time.
                        isolate_start_pfn = block_start_pfn - PAGEBLOCK_NR_PAGES;
                    }
                    break;
                } else if isolate_start_pfn < block_end_pfn {
                    // Isolation failed early (the watermark): do not go on.
                    break;
                }
                stride = if nr_isolated > 0 {
                    1
                } else {
                    (stride << 1).min(COMPACT_CLUSTER_MAX as u32)
                };
            }
            block_end_pfn = block_start_pfn;
            block_start_pfn -= PAGEBLOCK_NR_PAGES;
            isolate_start_pfn = block_start_pfn;
        }
        cc.free_pfn = isolate_start_pfn;
    }

    /// `fast_isolate_freepages()` (6.6, with `variant.fast_isolate_freepages`): before the
    /// linear free scanner, the movable free lists below the request's order are read from
    /// their tails, the order a block was last taken from first and the others round-robin
    /// down (`next_search_order()`), for a block in the top quarter of the scanners'
    /// distance (`low_pfn`), or failing that the highest one read in the top half
    /// (`min_pfn`); up to `freelist_scan_limit() / 2` blocks, or a pageblock's 256 when the
    /// scan starts (`free_pfn` at or above the zone's `compact_init_free_pfn`, which is 0
    /// until a reset of the skip bits sets it), halved at each new highest block in the top
    /// half and for each next order. The list is rotated so that its unread blocks are read
    /// first next time (`move_freelist_head()`), and the block found is taken whole. A
    /// search that takes none counts in `fast_search_fail`; when the scan starts, the free
    /// scanner goes on from the highest pageblock it read if that is in the top half (a
    /// direct compaction: from `min_pfn` if not). The zone's cached free scanner moves below
    /// the highest pageblock read when that is at or above it. Then the rest of the
    /// pageblock of the block taken, or of where the free scanner was sent, is scanned for
    /// targets (`fast_isolate_around()`, not in async direct compaction). Departures: the
    /// zone->lock hold of each order's search is not booked, only the blocks taken (as the
    /// linear scanner's); each block read is charged as a page descriptor read; kcompactd
    /// starts each zone with a fresh `search_order` and `fast_search_fail` (the kernel's
    /// keeps one control across the node's zones).
    fn fast_isolate_freepages(&mut self, cc: &mut CompactControl) {
        let zi = cc.zone;
        let (zone_start, zone_end, init_free_pfn) = {
            let z = &self.mem.zones[zi];
            (z.start_pfn, z.end_pfn(), z.compact_init_free_pfn)
        };
        if cc.order == 0 {
            return;
        }
        let mut limit = (freelist_scan_limit(cc) >> 1).max(1);
        let mut nr_scanned = 0u64;
        let mut total_isolated = 0u64;
        let mut highest = 0u32;
        let mut page = None;
        let scan_start = cc.free_pfn >= init_free_pfn;
        if scan_start {
            limit = u64::from(PAGEBLOCK_NR_PAGES >> 1);
        }
        // A free scanner already below the migrate scanner (it ran out inside a migrate
        // round): the kernel's unsigned distance wraps and puts both marks past every pfn,
        // so the search reads blocks but takes none.
        let (low_pfn, min_pfn) = if cc.free_pfn < cc.migrate_pfn {
            (u32::MAX, u32::MAX)
        } else {
            let distance = cc.free_pfn - cc.migrate_pfn;
            (
                pageblock_start_pfn(cc.free_pfn - (distance >> 2)),
                pageblock_start_pfn(cc.free_pfn - (distance >> 1)),
            )
        };
        cc.search_order = cc.search_order.min(cc.order as i32 - 1);
        let mut order = cc.search_order;
        while page.is_none() && order >= 0 {
            let o = order as usize;
            let mut order_scanned = 0u64;
            if self.mem.zones[zi].nr_free[o] > 0 {
                let z = &mut self.mem.zones[zi];
                let list = z.free_lists[o][MIGRATE_MOVABLE];
                let mut high_pfn = 0u32;
                // The block the walk stopped at; a walk to the list's end leaves it as it was.
                let mut stopped_at = None;
                for pfn in self.mem.pages.iter_rev(list) {
                    order_scanned += 1;
                    nr_scanned += 1;
                    cc.frames_looked += 1;
                    if pfn >= highest {
                        highest = pageblock_start_pfn(pfn).max(zone_start);
                    }
                    if pfn >= low_pfn {
                        cc.fast_search_fail = 0;
                        cc.search_order = order;
                        page = Some(pfn);
                        stopped_at = page;
                        break;
                    }
                    if pfn >= min_pfn && pfn > high_pfn {
                        high_pfn = pfn;
                        limit >>= 1;
                    }
                    if order_scanned >= limit {
                        stopped_at = Some(pfn);
                        break;
                    }
                }
                if page.is_none() && high_pfn != 0 {
                    page = Some(high_pfn);
                    stopped_at = page;
                }
                if let Some(freepage) = stopped_at {
                    z.move_freelist_head(&mut self.mem.pages, o, MIGRATE_MOVABLE, freepage);
                }
                if let Some(p) = page {
                    let isolated = self.isolate_free_block(cc, p, o as u32);
                    if isolated > 0 {
                        nr_scanned += u64::from(isolated) - 1;
                        total_isolated += u64::from(isolated);
                        let at = self.clock();
                        let cpu_node = self.cpus.node_of(cc.cpu);
                        let lock = self.zone_lock(zi, cpu_node, self.costs.buddy_ns, at);
                        self.charge(lock.total());
                    } else {
                        // Isolation failed (the watermark): the search ends.
                        order = cc.search_order + 1;
                        page = None;
                    }
                }
                if cc.nr_freepages() >= cc.nr_migratepages {
                    break;
                }
                if order_scanned >= limit {
                    limit = (limit >> 1).max(1);
                }
            }
            order = next_search_order(cc, order);
        }
        self.trace_compaction_isolate(
            "fast_isolate_freepages",
            min_pfn,
            cc.free_pfn,
            nr_scanned,
            total_isolated,
        );
        if page.is_none() {
            cc.fast_search_fail += 1;
            if scan_start {
                if highest >= min_pfn {
                    page = Some(highest);
                    cc.free_pfn = highest;
                } else if cc.direct_compaction && min_pfn < zone_end {
                    // pfn_valid(min_pfn); the zones are pageblock-aligned, so its
                    // pageblock is the zone's.
                    page = Some(min_pfn.max(zone_start));
                    cc.free_pfn = min_pfn;
                }
            }
        }
        let z = &mut self.mem.zones[zi];
        if highest != 0 && highest >= z.compact_cached_free_pfn {
            z.compact_cached_free_pfn = highest - PAGEBLOCK_NR_PAGES;
        }
        cc.total_free_scanned += nr_scanned;
        self.count(VmEvent::CompactIsolated, total_isolated);
        if let Some(p) = page {
            self.fast_isolate_around(cc, p);
        }
    }

    /// `fast_isolate_around()`: after the fast search, the rest of the pageblock of `pfn`
    /// is scanned for targets, every page frame, unless there are enough or this is an
    /// async direct compaction; a pageblock scanned to its end is marked skipped.
    fn fast_isolate_around(&mut self, cc: &mut CompactControl, pfn: u32) {
        if cc.nr_freepages() >= cc.nr_migratepages
            || (cc.direct_compaction && cc.mode == MigrateMode::Async)
        {
            return;
        }
        let z = &self.mem.zones[cc.zone];
        let mut start_pfn = pageblock_start_pfn(pfn).max(z.start_pfn);
        let end_pfn = pageblock_end_pfn(pfn).min(z.end_pfn());
        self.isolate_freepages_block(cc, &mut start_pfn, end_pfn, 1);
        if start_pfn == end_pfn {
            self.mem.zones[cc.zone].set_pageblock_skip(pfn);
        }
    }

    /// `compaction_alloc()`: the next target, after a round of the free scanner if there is
    /// none.
    pub fn compaction_alloc(&mut self, cc: &mut CompactControl) -> Option<u32> {
        if cc.freepages.is_empty() {
            self.isolate_freepages(cc);
        }
        let dst = cc.freepages.pop()?;
        self.mem.compaction_freepages -= 1;
        Some(dst)
    }

    /// `release_freepages()`: the targets not used go back to the allocator (`__free_page`
    /// each, onto the CPU's per-CPU list, the list's head first); returns the highest pfn.
    fn release_freepages(&mut self, cc: &mut CompactControl) -> u32 {
        let mut high_pfn = 0;
        while let Some(p) = cc.freepages.pop() {
            self.free_folio(p, cc.cpu);
            self.mem.compaction_freepages -= 1;
            high_pfn = high_pfn.max(p);
        }
        high_pfn
    }
}

// --- the migrate scanner ---------------------------------------------------------------

impl Kernel {
    /// Whether the LRU folio at `head` may be isolated for migration in `mode`: not a file
    /// folio in a context without `__GFP_FS`, not under writeback, and not dirty unless it
    /// can move without blocking (the folio lock taken, and anon: a page-cache folio has no
    /// `migrate_folio` here) (`isolate_migratepages_block`'s tests before it clears PG_lru).
    fn folio_isolatable(&self, cc: &CompactControl, head: u32, mode: IsolateMode) -> bool {
        let flags = self.mem.pages.flags(head);
        let file = flags & pg::ANON == 0;
        // folio_mapping(): a page-cache folio's file, an anon folio's swap cache.
        let has_mapping = file || flags & pg::SWAPCACHE != 0;
        if cc.gfp_mask & super::gfp::__GFP_FS == 0 && has_mapping {
            return false;
        }
        if mode.async_migrate && flags & pg::WRITEBACK != 0 {
            return false;
        }
        if flags & pg::DIRTY != 0 && (mode.async_migrate || file) {
            // folio_trylock(), then `!mapping || mapping->a_ops->migrate_folio`.
            if flags & pg::LOCKED != 0 || file {
                return false;
            }
        }
        true
    }

    /// Isolates the folio at `head` of `order` for migration (`lruvec_del_folio()` and
    /// NR_ISOLATED_*): it leaves its LRU list for `cc.migratepages`. The one way in for a
    /// folio of any order; returns its pages.
    pub fn isolate_migratepage(&mut self, cc: &mut CompactControl, head: u32, order: u32) -> u64 {
        let f = *self.mem.pages.fields(head);
        debug_assert!(f.flags & pg::LRU != 0);
        let nr = 1u64 << order;
        let lv = self.folio_lruvec(head);
        let zone_idx = self.page_zonenum(head);
        let lru = f.lru as usize;
        self.memcg.lruvecs[lv].del_folio(&mut self.mem.pages, head, lru, zone_idx);
        let nid = self.memcg.lruvecs[lv].nid as usize;
        self.mem.nodes[nid].nr_isolated[is_file_lru(lru) as usize] += nr;
        cc.migratepages.push(head);
        cc.nr_migratepages += nr;
        nr
    }

    /// `isolate_migratepages_block()` from `low_pfn` to `end_pfn` (within one pageblock):
    /// isolate the movable LRU folios there, up to COMPACT_CLUSTER_MAX (the whole block
    /// with `finish_pageblock`), stepping over free blocks and compound pages by their
    /// order. An async direct compaction gives up on an order-aligned block as soon as a
    /// page of it cannot be isolated (putting back what it took there): the block could not
    /// become free. The pageblock is marked skipped when nothing was isolated in it, or as
    /// soon as something is (`test_and_set_skip`); a block another compaction marked is
    /// left. `cc.migrate_pfn` is left where the scan stopped.
    fn isolate_migratepages_block(
        &mut self,
        cc: &mut CompactControl,
        mut low_pfn: u32,
        end_pfn: u32,
        mode: IsolateMode,
    ) {
        let zone_start = self.mem.zones[cc.zone].start_pfn;
        let start_pfn = low_pfn;
        let (mut nr_scanned, mut nr_isolated, mut nr_taken) = (0u64, 0u64, 0u64);
        let mut valid_page: Option<u32> = None;
        let mut skip_updated = false;
        let mut first_lv = None;
        cc.migrate_pfn = low_pfn;
        let skip_on_failure = cc.direct_compaction && cc.mode == MigrateMode::Async;
        let mut next_skip_pfn = if skip_on_failure {
            block_end_pfn(low_pfn, cc.order)
        } else {
            0
        };
        let mut aborted = false;
        while low_pfn < end_pfn {
            if skip_on_failure && low_pfn >= next_skip_pfn {
                // Every page of the previous order-aligned block was isolated: migrate.
                if nr_isolated > 0 {
                    break;
                }
                next_skip_pfn = block_end_pfn(low_pfn, cc.order);
            }
            nr_scanned += 1;
            cc.frames_looked += 1;
            if valid_page.is_none() && (pageblock_aligned(low_pfn) || low_pfn == zone_start) {
                if !self.isolation_suitable(cc, low_pfn) {
                    low_pfn = end_pfn;
                    aborted = true;
                    break;
                }
                valid_page = Some(low_pfn);
            }
            let f = *self.mem.pages.fields(low_pfn);
            let failed = if f.flags & pg::BUDDY != 0 {
                // A free block: skip it (order 0 is the loop's own step).
                let rest = (1u32 << f.order) - 1;
                low_pfn += rest;
                nr_scanned += u64::from(rest);
                false
            } else if let Some(order) = compound_order(&f) {
                // A compound page (a huge page, or a large folio, which 6.6 does not
                // compact; a tail's order is 0): stepped over, a failure.
                let rest = (1u32 << order) - 1;
                low_pfn += rest;
                nr_scanned += u64::from(rest);
                true
            } else if f.flags & pg::LRU == 0 || !self.folio_isolatable(cc, low_pfn, mode) {
                true
            } else {
                // The first folio taken under the lruvec's lock (`compact_lock_irqsave()`,
                // whose trylock an async compaction may find taken): mark the block as
                // being scanned, or leave it if another compaction did.
                if first_lv.is_none() {
                    let lv = self.folio_lruvec(low_pfn);
                    let at = self.clock();
                    cc.compact_lock_irqsave(&self.memcg.lruvecs[lv].lru_lock, at);
                    first_lv = Some(lv);
                }
                if !skip_updated {
                    if let Some(v) = valid_page {
                        skip_updated = true;
                        if self.test_and_set_skip(cc, v) && !cc.finish_pageblock {
                            low_pfn = end_pfn;
                            aborted = true;
                            break;
                        }
                    }
                }
                let nr = self.isolate_migratepage(cc, low_pfn, 0);
                nr_isolated += nr;
                nr_taken += nr;
                nr_scanned += nr - 1;
                // Enough for a round, unless the block is to be scanned whole or a lock was
                // contended: then isolate quickly, to remove one source of contention.
                if cc.nr_migratepages >= COMPACT_CLUSTER_MAX
                    && !cc.finish_pageblock
                    && !cc.contended
                {
                    low_pfn += 1;
                    break;
                }
                false
            };
            if failed && skip_on_failure {
                // The order-aligned block cannot be freed: release what was taken in it.
                if nr_isolated > 0 {
                    let mut taken = std::mem::take(&mut cc.migratepages);
                    self.putback_movable_pages(&mut taken, cc.cpu);
                    cc.migratepages = taken;
                    cc.nr_migratepages = 0;
                    nr_isolated = 0;
                }
                if low_pfn < next_skip_pfn {
                    low_pfn = next_skip_pfn - 1;
                    next_skip_pfn += 1 << cc.order;
                }
            }
            low_pfn += 1;
        }
        if !aborted {
            low_pfn = low_pfn.min(end_pfn);
        }
        if low_pfn == end_pfn && (nr_isolated == 0 || cc.finish_pageblock) {
            if let (Some(v), false) = (valid_page, skip_updated) {
                self.mem.zones[cc.zone].set_pageblock_skip(v);
            }
            self.update_cached_migrate(cc, low_pfn);
        }
        if let Some(lv) = first_lv {
            let at = self.clock();
            let cpu_node = self.cpus.node_of(cc.cpu);
            let lock = self.lru_lock(lv, cpu_node, nr_taken * self.costs.isolate_ns, at);
            self.charge(lock.total());
        }
        self.trace_compaction_isolate(
            "isolate_migratepages",
            start_pfn,
            low_pfn,
            nr_scanned,
            nr_isolated,
        );
        cc.total_migrate_scanned += nr_scanned;
        self.count(VmEvent::CompactIsolated, nr_isolated);
        cc.migrate_pfn = low_pfn;
    }

    /// `suitable_migration_source()`: the pageblock of `pfn` may be compacted. An async
    /// direct compaction takes only pageblocks of its own type (any movable one for a
    /// movable request), so that it does not move pages into a mixed block.
    fn suitable_migration_source(&self, cc: &CompactControl, pfn: u32) -> bool {
        if self.pageblock_skip_persistent(pfn) {
            return false;
        }
        if cc.mode != MigrateMode::Async || !cc.direct_compaction {
            return true;
        }
        let block_mt = self.mem.zones[cc.zone].get_pageblock_migratetype(pfn);
        block_mt == cc.migratetype
    }

    /// `fast_find_migrateblock()` (6.6, with `variant.fast_find_migrateblock`): where the
    /// migrate scanner goes on from. At a pageblock boundary, for an order above
    /// PAGE_ALLOC_COSTLY_ORDER (and a movable request, if direct), the first
    /// `freelist_scan_limit()` blocks of the movable free lists of order − 1 down to
    /// PAGE_ALLOC_COSTLY_ORDER are searched for one below `high_pfn` (half the scanners'
    /// distance from a scanner at the zone's start, an eighth otherwise) whose pageblock is
    /// not marked skipped: its pageblock is mostly free, so few folios need migrating to
    /// free it whole. The list is rotated past the block found (`move_freelist_tail()`);
    /// a search that finds none counts in `fast_search_fail` and resumes the linear scan,
    /// from the lowest block an earlier search found (`reinit_migrate_pfn()`).
    /// Departures: the search's zone->lock holds are not booked on the lock; each block it
    /// reads is charged as a page descriptor read; kcompactd starts each zone with a fresh
    /// `fast_search_fail` and `search_order` (the kernel's keeps one control across the
    /// node's zones).
    fn fast_find_migrateblock(&mut self, cc: &mut CompactControl) -> u32 {
        let pfn = cc.migrate_pfn;
        let z = &self.mem.zones[cc.zone];
        if !self.variant.fast_find_migrateblock
            || cc.ignore_skip_hint
            || cc.finish_pageblock
            || (pfn != z.start_pfn && pfn != pageblock_start_pfn(pfn))
            || cc.order <= PAGE_ALLOC_COSTLY_ORDER
            || (cc.direct_compaction && cc.migratetype != MIGRATE_MOVABLE)
        {
            return pfn;
        }
        let mut distance = cc.free_pfn.saturating_sub(cc.migrate_pfn) >> 1;
        if cc.migrate_pfn != z.start_pfn {
            distance >>= 2;
        }
        let high_pfn = pageblock_start_pfn(cc.migrate_pfn + distance);
        let limit = freelist_scan_limit(cc);
        let mut nr_scanned = 0;
        let mut found = None;
        let mut order = cc.order as usize - 1;
        while order >= PAGE_ALLOC_COSTLY_ORDER as usize && found.is_none() && nr_scanned < limit {
            let z = &mut self.mem.zones[cc.zone];
            if z.nr_free[order] > 0 {
                let list = z.free_lists[order][MIGRATE_MOVABLE];
                let mut rotate = None;
                for free_pfn in self.mem.pages.iter(list) {
                    let at_limit = nr_scanned >= limit;
                    nr_scanned += 1;
                    if at_limit {
                        rotate = Some(free_pfn);
                        break;
                    }
                    if free_pfn < high_pfn {
                        if z.get_pageblock_skip(free_pfn) {
                            continue;
                        }
                        rotate = Some(free_pfn);
                        found = Some(free_pfn);
                        break;
                    }
                }
                if let Some(page) = rotate {
                    z.move_freelist_tail(&mut self.mem.pages, order, MIGRATE_MOVABLE, page);
                }
            }
            order -= 1;
        }
        cc.total_migrate_scanned += nr_scanned;
        cc.frames_looked += nr_scanned;
        match found {
            Some(free_pfn) => {
                // update_fast_start_pfn()
                if cc.fast_start_pfn != u32::MAX {
                    if cc.fast_start_pfn == 0 {
                        cc.fast_start_pfn = free_pfn;
                    }
                    cc.fast_start_pfn = cc.fast_start_pfn.min(free_pfn);
                }
                cc.fast_search_fail = 0;
                pageblock_start_pfn(free_pfn).max(self.mem.zones[cc.zone].start_pfn)
            }
            None => {
                cc.fast_search_fail += 1;
                // reinit_migrate_pfn()
                if cc.fast_start_pfn != 0 && cc.fast_start_pfn != u32::MAX {
                    cc.migrate_pfn = cc.fast_start_pfn;
                    cc.fast_start_pfn = u32::MAX;
                }
                cc.migrate_pfn
            }
        }
    }

    /// `isolate_migratepages()`: the migrate scanner, from where `fast_find_migrateblock()`
    /// says up to the free scanner, one pageblock at a time: pageblocks marked skipped or
    /// unsuitable are passed (a block the fast search found is not tested for its skip
    /// bit again), and the first other one is scanned (`isolate_migratepages_block`).
    pub fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> IsolateMigrate {
        let zone_start = self.mem.zones[cc.zone].start_pfn;
        let mode = IsolateMode {
            async_migrate: cc.mode != MigrateMode::Sync,
        };
        let mut low_pfn = self.fast_find_migrateblock(cc);
        let mut fast_find_block = low_pfn != cc.migrate_pfn && cc.fast_search_fail == 0;
        let mut block_start_pfn = pageblock_start_pfn(low_pfn).max(zone_start);
        let mut block_end_pfn = pageblock_end_pfn(low_pfn);
        while block_end_pfn <= cc.free_pfn {
            let skipped = (pageblock_aligned(low_pfn) || low_pfn == zone_start)
                && !fast_find_block
                && !self.isolation_suitable(cc, low_pfn);
            if !skipped {
                if self.suitable_migration_source(cc, block_start_pfn) {
                    self.isolate_migratepages_block(cc, low_pfn, block_end_pfn, mode);
                    break;
                }
                self.update_cached_migrate(cc, block_end_pfn);
            }
            fast_find_block = false;
            low_pfn = block_end_pfn;
            cc.migrate_pfn = low_pfn;
            block_start_pfn = block_end_pfn;
            block_end_pfn += PAGEBLOCK_NR_PAGES;
        }
        if cc.nr_migratepages > 0 {
            IsolateMigrate::Success
        } else {
            IsolateMigrate::None
        }
    }
}

// --- compact_zone ----------------------------------------------------------------------

impl Kernel {
    /// `__compact_finished()` and `compact_finished()` (with `mm_compaction_finished`):
    /// COMPLETE (or PARTIAL_SKIPPED) when the scanners meet, SUCCESS at a pageblock boundary
    /// when a free block of the order is on the request's migratetype's lists or may be
    /// stolen from another's, CONTINUE otherwise.
    pub fn compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        let ret = self.__compact_finished(cc);
        self.trace_compaction_zone_result("finished", cc.zone, cc.order, ret);
        if ret == CompactResult::NoSuitablePage {
            CompactResult::Continue
        } else {
            ret
        }
    }

    fn __compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        if compact_scanners_met(cc) {
            let z = &mut self.mem.zones[cc.zone];
            z.reset_cached_positions();
            // kswapd clears the skip bits when it next sleeps (a direct compaction's only:
            // kcompactd's have no allocation behind them).
            if cc.direct_compaction {
                z.compact_blockskip_flush = true;
            }
            return if cc.whole_zone {
                CompactResult::Complete
            } else {
                CompactResult::PartialSkipped
            };
        }
        // Finish scanning a pageblock: fewer fallbacks later.
        if !pageblock_aligned(cc.migrate_pfn) {
            return CompactResult::Continue;
        }
        let z = &self.mem.zones[cc.zone];
        for order in cc.order as usize..NR_PAGE_ORDERS {
            if z.nr_free_mt[cc.migratetype][order] > 0 {
                return CompactResult::Success;
            }
            // find_suitable_fallback(only_stealable = true).
            if z.find_suitable_fallback(order, cc.migratetype)
                .is_some_and(|(_, can_steal)| can_steal)
            {
                return CompactResult::Success;
            }
        }
        if cc.contended {
            return CompactResult::Contended;
        }
        CompactResult::NoSuitablePage
    }

    /// The start of `compact_zone()`: nothing to do if the allocation would already succeed
    /// (SUCCESS) or compaction is not suitable (SKIPPED); otherwise the skip bits are
    /// cleared if compaction restarts after the longest deferral, the scanners placed (the
    /// zone's ends, or where the last compaction left them), `mm_compaction_begin`, and the
    /// CPU's LRU-add batch drained.
    pub fn compact_zone_start(
        &mut self,
        cc: &mut CompactControl,
    ) -> Result<ZoneScan, CompactResult> {
        cc.total_migrate_scanned = 0;
        cc.total_free_scanned = 0;
        cc.nr_migratepages = 0;
        cc.fast_start_pfn = 0;
        debug_assert!(cc.freepages.is_empty() && cc.migratepages.is_empty());
        cc.migratetype = gfp_migratetype(cc.gfp_mask);
        let zi = cc.zone;
        let z = &self.mem.zones[zi];
        let watermark = alloc_flags_mark(z, cc.alloc_flags);
        if z.zone_watermark_ok(cc.order, watermark, cc.highest_zoneidx) {
            return Err(CompactResult::Success);
        }
        let suitable = compaction_suitable(z, cc.order, cc.highest_zoneidx);
        self.trace_compaction_suitable(zi, cc.order, cc.highest_zoneidx, suitable);
        if !suitable {
            return Err(CompactResult::Skipped);
        }
        if self.compaction_restarting(zi, cc.order) {
            self.__reset_isolation_suitable(zi);
        }
        let sync = cc.mode != MigrateMode::Async;
        let z = &mut self.mem.zones[zi];
        let (start_pfn, end_pfn) = (z.start_pfn, z.end_pfn());
        if cc.whole_zone {
            cc.migrate_pfn = start_pfn;
            cc.free_pfn = pageblock_start_pfn(end_pfn - 1);
        } else {
            cc.migrate_pfn = z.compact_cached_migrate_pfn[usize::from(sync)];
            cc.free_pfn = z.compact_cached_free_pfn;
            if cc.free_pfn < start_pfn || cc.free_pfn >= end_pfn {
                cc.free_pfn = pageblock_start_pfn(end_pfn - 1);
                z.compact_cached_free_pfn = cc.free_pfn;
            }
            if cc.migrate_pfn < start_pfn || cc.migrate_pfn >= end_pfn {
                cc.migrate_pfn = start_pfn;
                z.compact_cached_migrate_pfn = [start_pfn; 2];
            }
            if cc.migrate_pfn <= z.compact_init_migrate_pfn {
                cc.whole_zone = true;
            }
        }
        let update_cached =
            !sync && z.compact_cached_migrate_pfn[0] == z.compact_cached_migrate_pfn[1];
        self.trace_compaction_begin(cc, sync);
        // lru_add_drain(): this CPU's LRU-add batch onto the LRU.
        self.folio_batch_move_lru(cc.cpu);
        Ok(ZoneScan {
            last_migrated_pfn: None,
            update_cached,
        })
    }

    /// One round of `compact_zone()`'s loop: `compact_finished()`, then isolate a batch of
    /// folios and migrate them (putting back those that failed, and with an async or
    /// sync-light compaction scanning the rest of a pageblock where one failed), then flush
    /// the CPU's lists once the scanner has left the order-aligned block it migrated from.
    /// Returns the result once compaction is over.
    pub fn compact_zone_round(
        &mut self,
        cc: &mut CompactControl,
        st: &mut ZoneScan,
    ) -> Option<CompactResult> {
        let ret = self.compact_finished(cc);
        if ret != CompactResult::Continue {
            return Some(ret);
        }
        let scanned = cc.frames_looked;
        let iteration_start_pfn = cc.migrate_pfn;
        cc.finish_pageblock = st.last_migrated_pfn.map(pageblock_start_pfn)
            == Some(pageblock_start_pfn(iteration_start_pfn));
        loop {
            match self.isolate_migratepages(cc) {
                IsolateMigrate::None => {
                    if st.update_cached {
                        let z = &mut self.mem.zones[cc.zone];
                        z.compact_cached_migrate_pfn[1] = z.compact_cached_migrate_pfn[0];
                    }
                    break;
                }
                IsolateMigrate::Success => {
                    st.update_cached = false;
                    let zone_start = self.mem.zones[cc.zone].start_pfn;
                    st.last_migrated_pfn =
                        Some(zone_start.max(pageblock_start_pfn(cc.migrate_pfn - 1)));
                }
            }
            let stats = self.migrate_pages_for(cc);
            self.trace_compaction_migratepages(
                stats.nr_succeeded,
                cc.nr_migratepages - stats.nr_succeeded,
            );
            cc.nr_migratepages = 0;
            if stats.err() {
                let mut left = std::mem::take(&mut cc.migratepages);
                self.putback_movable_pages(&mut left, cc.cpu);
                cc.migratepages = left;
                if stats.enomem && !compact_scanners_met(cc) {
                    self.charge_scans(cc, scanned);
                    return Some(CompactResult::Contended);
                }
                // Scan the rest of the pageblock, which marks it skipped.
                if !pageblock_aligned(cc.migrate_pfn)
                    && !cc.ignore_skip_hint
                    && !cc.finish_pageblock
                    && cc.mode < MigrateMode::Sync
                {
                    cc.finish_pageblock = true;
                    // Draining the per-CPU lists does not help a huge page if a page of
                    // the block failed.
                    if cc.order == COMPACTION_HPAGE_ORDER {
                        st.last_migrated_pfn = None;
                    }
                    continue;
                }
            }
            break;
        }
        // check_drain: flush the pages freed from the block migrated from, so they merge.
        if cc.order > 0 {
            if let Some(last) = st.last_migrated_pfn {
                if last < block_start_pfn(cc.migrate_pfn, cc.order) {
                    // lru_add_drain_cpu_zone()
                    self.folio_batch_move_lru(cc.cpu);
                    self.drain_pages_zone(cc.cpu, cc.zone);
                    st.last_migrated_pfn = None;
                }
            }
        }
        self.charge_scans(cc, scanned);
        None
    }

    /// The scanners' CPU time for the page descriptors they read since `before` (their
    /// `frames_looked` then).
    fn charge_scans(&mut self, cc: &CompactControl, before: u64) {
        self.charge((cc.frames_looked - before) * COMPACT_SCAN_NS);
    }

    /// `migrate_pages(&cc->migratepages, compaction_alloc, …)`: the isolated folios into
    /// targets of the free scanner.
    fn migrate_pages_for(&mut self, cc: &mut CompactControl) -> MigrateStats {
        let mut from = std::mem::take(&mut cc.migratepages);
        let cpu = cc.cpu;
        let stats = self.migrate_pages(&mut from, cc, cpu);
        cc.migratepages = from;
        stats
    }

    /// The end of `compact_zone()`: the targets not used go back (the free scanner then
    /// restarts no lower than the highest of them), the scanned pages are counted
    /// (`compact_migrate_scanned`, `compact_free_scanned`), `mm_compaction_end`.
    pub fn compact_zone_end(&mut self, cc: &mut CompactControl, ret: CompactResult) {
        if !cc.freepages.is_empty() {
            let free_pfn = pageblock_start_pfn(self.release_freepages(cc));
            let z = &mut self.mem.zones[cc.zone];
            if free_pfn > z.compact_cached_free_pfn {
                z.compact_cached_free_pfn = free_pfn;
            }
        }
        self.count(VmEvent::CompactMigrateScanned, cc.total_migrate_scanned);
        self.count(VmEvent::CompactFreeScanned, cc.total_free_scanned);
        let sync = cc.mode != MigrateMode::Async;
        self.trace_compaction_end(cc, sync, ret);
        debug_assert!(cc.migratepages.is_empty());
    }

    /// `compact_zone()` without yielding: the rounds run back to back (tests, and callers
    /// that hold the kernel).
    pub fn compact_zone_sync(&mut self, cc: &mut CompactControl) -> CompactResult {
        let mut st = match self.compact_zone_start(cc) {
            Ok(st) => st,
            Err(ret) => return ret,
        };
        let ret = loop {
            if let Some(ret) = self.compact_zone_round(cc, &mut st) {
                break ret;
            }
        };
        self.compact_zone_end(cc, ret);
        ret
    }
}

/// `compact_zone()` (mm/compaction.c, 6.6): compact zone `cc.zone` for `cc.order`, a round
/// of isolation and migration per time slice.
pub async fn compact_zone(cx: &Cx, cc: &mut CompactControl) -> CompactResult {
    let start = cx.k().compact_zone_start(cc);
    let mut st = match start {
        Ok(st) => st,
        Err(ret) => return ret,
    };
    let ret = loop {
        let round = cx.k().compact_zone_round(cc, &mut st);
        if let Some(ret) = round {
            break ret;
        }
        cond_resched(cx).await;
    };
    cx.k().compact_zone_end(cc, ret);
    ret
}

/// `compact_zone_order()`: direct compaction of zone `zi` at priority `prio` (async, or
/// sync-light; sync-full ignores the skip bits and pageblock types and scans the whole
/// zone).
async fn compact_zone_order(
    cx: &Cx,
    zi: usize,
    ac: &AllocContext,
    prio: CompactPriority,
    alloc_flags: AllocFlags,
) -> CompactResult {
    let mode = if prio == CompactPriority::Async {
        MigrateMode::Async
    } else {
        MigrateMode::SyncLight
    };
    let mut cc = CompactControl::new(zi, ac.order, ac.gfp, mode, cx.cpu);
    cc.alloc_flags = alloc_flags;
    cc.highest_zoneidx = ac.highest_zoneidx;
    cc.direct_compaction = true;
    cc.whole_zone = prio == MIN_COMPACT_PRIORITY;
    cc.ignore_skip_hint = prio == MIN_COMPACT_PRIORITY;
    cc.ignore_block_suitable = prio == MIN_COMPACT_PRIORITY;
    compact_zone(cx, &mut cc).await
}

/// `try_to_compact_pages()` (6.6): direct compaction for the allocation `ac` at priority
/// `prio`, each zone of its zonelist in turn until one succeeds; a zone where compaction
/// was recently deferred is passed (unless at sync-full), and a sync compaction that
/// scanned a zone without success defers the next ones there. Returns the best result.
pub async fn try_to_compact_pages(
    cx: &Cx,
    ac: &AllocContext,
    alloc_flags: AllocFlags,
    prio: CompactPriority,
) -> CompactResult {
    // gfp_compaction_allowed(): migration may need I/O.
    if ac.gfp & __GFP_IO == 0 {
        return CompactResult::Skipped;
    }
    let zones: Vec<usize> = {
        let mut k = cx.k();
        k.trace_compaction_try_to_compact_pages(ac.order, ac.gfp, prio);
        k.mem.zonelists[ac.nid as usize]
            .iter()
            .copied()
            .filter(|&zi| zone_usable(ac, &k.mem.zones[zi]))
            .collect()
    };
    let mut rc = CompactResult::Skipped;
    for zi in zones {
        if prio > MIN_COMPACT_PRIORITY && cx.k().compaction_deferred(zi, ac.order) {
            rc = rc.max(CompactResult::Deferred);
            continue;
        }
        let status = compact_zone_order(cx, zi, ac, prio, alloc_flags).await;
        rc = rc.max(status);
        let mut k = cx.k();
        if status == CompactResult::Success {
            // The allocation should succeed here, which the caller confirms.
            k.compaction_defer_reset(zi, ac.order, false);
            break;
        }
        if prio != CompactPriority::Async
            && matches!(
                status,
                CompactResult::Complete | CompactResult::PartialSkipped
            )
        {
            k.defer_compaction(zi, ac.order);
        }
    }
    rc
}

impl Kernel {
    /// `compaction_zonelist_suitable()`: whether reclaim could make compaction suitable in a
    /// zone of `ac`'s zonelist (a share of its reclaimable pages, 1/order, counted free).
    pub fn compaction_zonelist_suitable(&self, ac: &AllocContext) -> bool {
        self.mem.zonelists[ac.nid as usize].iter().any(|&zi| {
            let z = &self.mem.zones[zi];
            if !zone_usable(ac, z) {
                return false;
            }
            let available = self.zone_reclaimable_pages(zi) / u64::from(ac.order)
                + z.zone_page_state_snapshot_free();
            __compaction_suitable(z, ac.order, ac.highest_zoneidx, available)
        })
    }
}

// --- kcompactd -------------------------------------------------------------------------

/// `kcompactd_run()`: start node `nid`'s kcompactd, asleep on `kcompactd_wait`, on the
/// node's next-to-last CPU (kswapd's is the last). A workload that allocates above order 0
/// starts it (the kernel's runs from boot; one that never compacts does nothing), as the
/// flushers start with a workload that writes.
pub fn kcompactd_run(sim: &mut Sim, nid: u32) {
    let (cpn, running) = {
        let k = sim.k();
        (
            k.cpus.nr_cpus_per_node,
            k.mem.nodes[nid as usize].kcompactd.is_some(),
        )
    };
    if running {
        return;
    }
    let cpu = nid * cpn + (cpn - 1 - 1.min(cpn - 1));
    let id = sim.spawn(
        format!("kcompactd{nid}"),
        cpu,
        TaskClass::Kcompactd,
        move |cx| kcompactd(cx, nid),
    );
    let mut k = sim.k();
    let pgdat = &mut k.mem.nodes[nid as usize];
    pgdat.kcompactd = Some(id);
    pgdat.kcompactd_wait.add(id);
}

/// [`kcompactd_run`] on every node: for a workload whose allocations are of high order (large
/// folios, huge pages). The model starts kcompactd only then, so that runs without such
/// allocations print no compaction counters.
pub fn kcompactd_run_nodes(sim: &mut Sim) {
    let nodes = sim.k().mem.nodes.len() as u32;
    for nid in 0..nodes {
        kcompactd_run(sim, nid);
    }
}

/// `kcompactd()`: asleep until asked to compact (`kcompactd_work_requested()`:
/// `kcompactd_max_order > 0`), then `kcompactd_do_work()` in a memory stall; again.
async fn kcompactd(cx: Cx, nid: u32) {
    loop {
        loop {
            {
                let mut k = cx.k();
                if k.mem.nodes[nid as usize].kcompactd_max_order > 0 {
                    break;
                }
                k.mem.nodes[nid as usize].kcompactd_wait.add(cx.tid);
            }
            schedule(&cx).await;
        }
        let pflags = psi_memstall_enter(&cx);
        kcompactd_do_work(&cx, nid).await;
        psi_memstall_leave(&cx, pflags);
        cx.k().trace_compaction_kcompactd_sleep(nid);
    }
}

/// `kcompactd_do_work()`: sync-light compaction of each zone of the node up to the
/// requested zone index, for the requested order, where it is not deferred, the order is
/// not already there at the min watermark, and compaction is suitable. A zone scanned
/// without success has its per-CPU lists drained and is deferred.
async fn kcompactd_do_work(cx: &Cx, nid: u32) {
    let (order, highest_zoneidx, zones) = {
        let mut k = cx.k();
        let pgdat = &k.mem.nodes[nid as usize];
        let (order, hz) = (pgdat.kcompactd_max_order, pgdat.kcompactd_highest_zoneidx);
        let zones = pgdat.zones.clone();
        k.trace_compaction_kcompactd_wake("kcompactd_wake", nid, order, hz);
        k.count(VmEvent::CompactDaemonWake, 1);
        (order, hz, zones)
    };
    for zi in zones {
        {
            let mut k = cx.k();
            let z = &k.mem.zones[zi];
            let zone_idx = z.zone_idx;
            if zone_idx > highest_zoneidx || z.managed_pages == 0 {
                continue;
            }
            if k.compaction_deferred(zi, order) {
                continue;
            }
            let z = &k.mem.zones[zi];
            if z.zone_watermark_ok(order, z.wmark_pages(WMARK_MIN), zone_idx) {
                continue;
            }
            let suitable = compaction_suitable(z, order, zone_idx);
            k.trace_compaction_suitable(zi, order, zone_idx, suitable);
            if !suitable {
                continue;
            }
        }
        let mut cc = CompactControl::new(zi, order, GFP_KERNEL, MigrateMode::SyncLight, cx.cpu);
        cc.highest_zoneidx = highest_zoneidx;
        let status = compact_zone(cx, &mut cc).await;
        let mut k = cx.k();
        if status == CompactResult::Success {
            k.compaction_defer_reset(zi, order, false);
        } else if matches!(
            status,
            CompactResult::PartialSkipped | CompactResult::Complete
        ) {
            // Free pages stranded on per-CPU lists might merge into the order.
            k.drain_all_pages_zone(zi);
            k.defer_compaction(zi, order);
        }
        k.count(
            VmEvent::CompactDaemonMigrateScanned,
            cc.total_migrate_scanned,
        );
        k.count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
    }
    let mut k = cx.k();
    let top = k.node_highest_zoneidx(nid);
    let pgdat = &mut k.mem.nodes[nid as usize];
    if pgdat.kcompactd_max_order <= order {
        pgdat.kcompactd_max_order = 0;
    }
    if pgdat.kcompactd_highest_zoneidx >= highest_zoneidx {
        pgdat.kcompactd_highest_zoneidx = top;
    }
}

impl Kernel {
    /// `pgdat->nr_zones - 1`: the highest zone index of node `nid`.
    fn node_highest_zoneidx(&self, nid: u32) -> usize {
        self.mem.nodes[nid as usize]
            .zones
            .iter()
            .map(|&zi| self.mem.zones[zi].zone_idx)
            .max()
            .unwrap_or(0)
    }

    /// `kcompactd_node_suitable()`: a zone of node `nid` up to the requested index lacks the
    /// requested order at its min watermark and could be compacted.
    fn kcompactd_node_suitable(&self, nid: u32) -> bool {
        let pgdat = &self.mem.nodes[nid as usize];
        let (order, hz) = (pgdat.kcompactd_max_order, pgdat.kcompactd_highest_zoneidx);
        pgdat.zones.iter().any(|&zi| {
            let z = &self.mem.zones[zi];
            z.zone_idx <= hz
                && z.managed_pages > 0
                && !z.zone_watermark_ok(order, z.wmark_pages(WMARK_MIN), hz)
                && compaction_suitable(z, order, hz)
        })
    }

    /// `wakeup_kcompactd()`: ask node `nid`'s kcompactd for `order` (the highest asked so
    /// far) up to `highest_zoneidx` (the lowest), and wake it if it sleeps and a zone needs
    /// it.
    pub fn wakeup_kcompactd(&mut self, nid: u32, order: u32, highest_zoneidx: usize) {
        if order == 0 {
            return;
        }
        let pgdat = &mut self.mem.nodes[nid as usize];
        pgdat.kcompactd_max_order = pgdat.kcompactd_max_order.max(order);
        if pgdat.kcompactd_highest_zoneidx > highest_zoneidx {
            pgdat.kcompactd_highest_zoneidx = highest_zoneidx;
        }
        if !pgdat.kcompactd_wait.is_active() {
            return;
        }
        if !self.kcompactd_node_suitable(nid) {
            return;
        }
        self.trace_compaction_kcompactd_wake("wakeup_kcompactd", nid, order, highest_zoneidx);
        let now = self.now;
        self.mem.nodes[nid as usize]
            .kcompactd_wait
            .wake_up_all(&mut self.sched, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page::Pages;
    use crate::mm::zone::{free_lists, NR_FREE_LISTS, ZONE_NORMAL};
    use crate::testing::{allocstalls, take_pages};

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

    // --- compaction itself ---------------------------------------------------------------

    use crate::mm::gfp::{__GFP_COMP, __GFP_NOWARN, __GFP_RETRY_MAYFAIL, GFP_HIGHUSER_MOVABLE};
    use crate::mm::lru::{LRU_ACTIVE_ANON, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE};

    /// What a page frame of a hand-built zone is.
    #[derive(Clone, Copy, PartialEq)]
    enum Place {
        Free,
        /// Clean page cache on the inactive file list.
        Lru,
        /// Anonymous memory, mapped by a page-table entry of task 0's one VMA (the frame's
        /// pfn its index), on the inactive anon list.
        Anon,
        /// Allocated and on no list: a kernel page, unmovable.
        Pinned,
    }

    /// A 64 MiB node whose first 16 MiB are ZONE_DMA32 (pfns 0–4095: 8 pageblocks), every
    /// page frame of it as `layout` says; every page of ZONE_NORMAL is allocated, so the
    /// allocator and compaction find nothing there. Returns the kernel and the pages held
    /// (the pinned ones and ZONE_NORMAL's).
    fn hand_built(layout: impl Fn(u32) -> Place) -> (Kernel, Vec<u32>) {
        let mut k = crate::testing::kernel(64, 16);
        assert_eq!(k.mem.zones[0].zone_idx, crate::mm::zone::ZONE_DMA32);
        assert_eq!(k.mem.zones[0].managed_pages, 4096);
        for zi in 0..2 {
            while k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).is_some() {}
        }
        let mut held: Vec<u32> = (4096..k.mem.pages.nr_pages()).collect();
        let vma = k.mm.mmap(0, 4096);
        let base = k.mm.vmas[vma as usize].start;
        for p in 0..4096 {
            match layout(p) {
                Place::Free => k.mem.zones[0].free_one_page(&mut k.mem.pages, p, 0),
                Place::Lru => crate::testing::add_to_lru(&mut k, p),
                Place::Anon => {
                    k.mm.ptes[(base + p) as usize] = crate::mm::vma::mk_pte(p);
                    let f = k.mem.pages.fields_mut(p);
                    f.owner = base + p;
                    f.flags = pg::ANON | pg::MAPPED | pg::DIRTY;
                    let zone_idx = k.page_zonenum(p);
                    k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, LRU_INACTIVE_ANON, zone_idx);
                    k.mem.nodes[0].nr_anon_mapped += 1;
                }
                Place::Pinned => held.push(p),
            }
        }
        assert_eq!(k.check_lists(), Ok(()));
        (k, held)
    }

    /// The pfns on node 0's inactive file list, sorted.
    fn lru_pfns(k: &Kernel) -> Vec<u32> {
        let mut v: Vec<u32> = k
            .mem
            .pages
            .iter(k.memcg.lruvecs[0].list(LRU_INACTIVE_FILE))
            .collect();
        v.sort_unstable();
        v
    }

    fn ev(k: &Kernel, e: VmEvent) -> u64 {
        k.stats.events.get(e)
    }

    /// Every page in one place, the lists and counts right.
    fn check(k: &Kernel, held: &[u32]) {
        assert_eq!(k.check_page_places(held), Ok(()));
        assert_eq!(k.check_lists(), Ok(()));
        assert_eq!(k.check_conservation(held.len() as u64), Ok(()));
    }

    #[test]
    fn the_scanners_meet_and_stop_as_the_kernels_do() {
        // Each pageblock starts with a kernel page; blocks 0 and 1 have 16 page-cache pages
        // after it (pfns 1–16 and 513–528); everything else is free. No pageblock can
        // become free, so a sync-light direct compaction for order 9 runs until its
        // scanners meet.
        let (mut k, held) = hand_built(|p| {
            let (block, off) = (p / 512, p % 512);
            match off {
                0 => Place::Pinned,
                1..=16 if block < 2 => Place::Lru,
                _ => Place::Free,
            }
        });
        let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::SyncLight, 0);
        cc.direct_compaction = true;
        let ret = k.compact_zone_sync(&mut cc);
        // By hand (mm/compaction.c, 6.6):
        // round 1: the migrate scanner isolates pfns 1–16 of block 0 and steps over its free
        //   blocks by their order to 512 (512 frames looked at); the free scanner starts at
        //   the last block (3584), stride 1: the kernel page, then the free blocks of order
        //   0, 1, 2, 3 and 4 at 3585, 3586, 3588, 3592, 3600 (31 pages ≥ 16 to migrate:
        //   stop at 3616; 32 frames). The last folio isolated goes first, to the last page
        //   isolated: 16 → 3615, …, 1 → 3600. The scanner has left block 0: drain.
        // round 2: block 1's 16 folios: 528 … 514 to the 15 targets left (3599 … 3585);
        //   for 513 the free scanner goes on at 3616: the order-5 block 3616–3647 (32
        //   frames, enough: it stops at 3648) → 3647.
        // rounds 3–7: blocks 2–6 hold nothing to isolate: each is marked skipped and the
        //   migrate scanner goes on, up to the free scanner's block (3584 ≤ 3648 < 4096).
        // round 8: the scanners meet (3648 >> 9 = 7 ≤ 3584 >> 9): COMPLETE (the whole zone:
        //   the migrate scanner started at compact_init_migrate_pfn, 0).
        assert_eq!(ret, CompactResult::Complete);
        assert_eq!(cc.migrate_pfn, 3584);
        assert_eq!(cc.free_pfn, 3648);
        assert_eq!(cc.total_migrate_scanned, 7 * 512);
        assert_eq!(cc.total_free_scanned, 32 + 32);
        assert_eq!(ev(&k, VmEvent::CompactMigrateScanned), 7 * 512);
        assert_eq!(ev(&k, VmEvent::CompactFreeScanned), 64);
        assert_eq!(ev(&k, VmEvent::CompactIsolated), 16 + 31 + 16 + 32);
        assert_eq!(ev(&k, VmEvent::PgmigrateSuccess), 32);
        assert_eq!(ev(&k, VmEvent::PgmigrateFail), 0);
        let mut want: Vec<u32> = (3585..3616).collect();
        want.push(3647);
        assert_eq!(
            lru_pfns(&k),
            want,
            "the page cache is at the top of the zone"
        );
        let z = &k.mem.zones[0];
        // Skip bits: blocks 0 and 1 as their first folio was taken, 2–6 for having nothing;
        // the free scanner never finished block 7.
        let skipped: Vec<bool> = (0..8).map(|b| z.get_pageblock_skip(b * 512)).collect();
        assert_eq!(skipped, [true, true, true, true, true, true, true, false]);
        // The scanners met: the next compaction starts at the ends again, and kswapd is to
        // clear the skip bits when it sleeps.
        assert_eq!(z.compact_cached_migrate_pfn, [0, 0]);
        assert_eq!(z.compact_cached_free_pfn, 3584);
        assert!(z.compact_blockskip_flush);
        // The 31 targets not used were freed; every page is in one place.
        assert_eq!(k.mem.compaction_freepages, 0);
        check(&k, &held);
        // kswapd going to sleep (`__reset_isolation_suitable`): from both ends at once,
        // sampling every 8th page, the low blocks are cleared if one has a page on an LRU (a
        // source; both kinds once one was found), the high ones if one is free (a
        // target): block 7 (3648 is free), then 6, 5 and 4 (each a free block's head at
        // offset 8); blocks 0–3 hold no page-cache page and stay skipped. No source found:
        // the scanners are left met in the middle (2048 and 2047).
        k.reset_isolation_suitable(0);
        let z = &k.mem.zones[0];
        let skipped: Vec<bool> = (0..8).map(|b| z.get_pageblock_skip(b * 512)).collect();
        assert_eq!(
            skipped,
            [true, true, true, true, false, false, false, false]
        );
        assert!(!z.compact_blockskip_flush);
        assert_eq!(z.compact_init_free_pfn, 4095);
        assert_eq!(z.compact_cached_migrate_pfn, [2048, 2048]);
        assert_eq!(z.compact_cached_free_pfn, 2047);
    }

    /// Blocks 0 and 1 full of page cache, block 2 with 16 page-cache pages (pfns
    /// 1024–1039) and the rest free, blocks 3–7 free but for a kernel page at their start:
    /// kcompactd's sync-light compaction for order 9 from the zone's start. Returns the
    /// result, the pages migrated and the pageblocks left wholly free.
    fn compact_mostly_free_block_2(fast: bool) -> (CompactResult, u64, Vec<u32>) {
        let (mut k, held) = hand_built(|p| match (p / 512, p % 512) {
            (0 | 1, _) => Place::Lru,
            (2, off) if off < 16 => Place::Lru,
            (2, _) => Place::Free,
            (_, 0) => Place::Pinned,
            _ => Place::Free,
        });
        k.variant.fast_find_migrateblock = fast;
        let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::SyncLight, 0);
        let ret = k.compact_zone_sync(&mut cc);
        check(&k, &held);
        let z = &k.mem.zones[0];
        let order9 = k.mem.pages.iter(z.free_lists[9][MIGRATE_MOVABLE]).collect();
        (ret, ev(&k, VmEvent::PgmigrateSuccess), order9)
    }

    #[test]
    fn the_fast_search_starts_the_migrate_scanner_at_a_mostly_free_pageblock() {
        // fast_find_migrateblock(): at the zone's start, high_pfn is half the scanners'
        // distance, pageblock_start_pfn((3584 - 0) / 2) = 1536. The order-8 list holds the
        // free halves of blocks 7 … 2 (the last freed first): five at or above 1536 are
        // passed, block 2's (1280) is taken, so the scanner starts at 1024 and migrates its
        // 16 pages, and block 2 is free whole.
        assert_eq!(
            compact_mostly_free_block_2(true),
            (CompactResult::Success, 16, vec![1024])
        );
        // Without it the scanner starts at block 0 and migrates all of it first.
        assert_eq!(
            compact_mostly_free_block_2(false),
            (CompactResult::Success, 512, vec![0])
        );
    }

    /// The free scanner's rounds in the zone `layout` builds, for a sync-light compaction
    /// (`direct` or kcompactd's) for order 9 with 32 pages to migrate, from the scanners'
    /// places `at` (migrate, free): for each round, the first target taken, how many, the
    /// free scanner's place after it and the pages it scanned. Each round's targets go
    /// back before the next (to their list's head).
    fn free_scanner_rounds_at(
        layout: impl Fn(u32) -> Place,
        fast: bool,
        direct: bool,
        at: (u32, u32),
        rounds: usize,
    ) -> Vec<(u32, u64, u32, u64)> {
        let (mut k, held) = hand_built(layout);
        k.variant.fast_isolate_freepages = fast;
        let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::SyncLight, 0);
        cc.direct_compaction = direct;
        (cc.migrate_pfn, cc.free_pfn) = at;
        cc.nr_migratepages = 32;
        let mut out = Vec::new();
        for _ in 0..rounds {
            cc.total_free_scanned = 0;
            k.isolate_freepages(&mut cc);
            let first = cc.freepages.first().copied().unwrap_or(0);
            out.push((first, cc.nr_freepages(), cc.free_pfn, cc.total_free_scanned));
            let taken = std::mem::take(&mut cc.freepages);
            k.mem.compaction_freepages -= taken.len() as u64;
            for p in taken {
                k.mem.zones[0].free_one_page(&mut k.mem.pages, p, 0);
            }
        }
        check(&k, &held);
        out
    }

    /// [`free_scanner_rounds_at`] from the zone's ends (migrate scanner at 0, free scanner
    /// at the last pageblock, 3584).
    fn free_scanner_rounds(
        layout: impl Fn(u32) -> Place,
        fast: bool,
        direct: bool,
        rounds: usize,
    ) -> Vec<(u32, u64, u32, u64)> {
        free_scanner_rounds_at(layout, fast, direct, (0, 3584), rounds)
    }

    /// Blocks 0 and 1 full of page cache; blocks 2–4 free but for a kernel page at their
    /// start (each a free order-8 upper half, 1280, 1792 and 2304, and its lower half's
    /// orders 7 … 0); block 5's upper half free (2816, order 8); blocks 6 and 7 all kernel
    /// pages.
    fn free_in_blocks_2_to_5(p: u32) -> Place {
        match (p / 512, p % 512) {
            (0 | 1, _) => Place::Lru,
            (2..=4, 0) => Place::Pinned,
            (2..=4, _) => Place::Free,
            (5, off) if off >= 256 => Place::Free,
            _ => Place::Pinned,
        }
    }

    /// As [`free_in_blocks_2_to_5`] with blocks 3–5 all kernel pages: the free pages are
    /// all in block 2, below the top half of the scanners' distance.
    fn free_in_block_2(p: u32) -> Place {
        match (p / 512, p % 512) {
            (0 | 1, _) => Place::Lru,
            (2, off) if off > 0 => Place::Free,
            _ => Place::Pinned,
        }
    }

    #[test]
    fn the_fast_free_search_takes_targets_from_the_free_lists() {
        // fast_isolate_freepages(): free_pfn 3584, migrate_pfn 0: low_pfn (the top quarter)
        // pageblock_start_pfn(3584 - 896) = 2560, min_pfn (the top half) 1536; the scan
        // starts at the zone's end (the zone's compact_init_free_pfn is 0), so up to 256
        // blocks are read. The order-8 list, read from its tail, is 1280 (below min_pfn),
        // 1792 and 2304 (in the top half: each halves the limit), 2816 (in the top
        // quarter): taken, 256 targets; four blocks read and 255 pages more counted for
        // the block taken. The free scanner stays at the zone's end.
        // The block freed again goes to the list's head, where the next search read it
        // last: 1280, 1792, 2304 and 2816 again, the same round.
        assert_eq!(
            free_scanner_rounds(free_in_blocks_2_to_5, true, false, 2),
            [(2816, 256, 3584, 259), (2816, 256, 3584, 259)]
        );
        // The linear scanner reads block 7's 512 kernel pages, then, finding nothing, every
        // second frame of block 6 (256) and every fourth of block 5's lower half (64), takes
        // the order-8 block at 2816 (256 counted) and goes on from block 4 next time (block
        // 5 was scanned to its end).
        assert_eq!(
            free_scanner_rounds(free_in_blocks_2_to_5, false, false, 1),
            [(2816, 256, 2048, 512 + 256 + 64 + 256)]
        );
    }

    #[test]
    fn a_fast_free_search_that_finds_nothing_moves_a_direct_compaction_to_the_top_half() {
        // Every list holds one block of block 2 (1280 at order 8, 1152 at 7, … 1025 at 0),
        // all below min_pfn 1536: the search reads the nine lists round-robin from order 8
        // and takes nothing. A direct compaction then goes on from min_pfn: the rest of
        // its pageblock (block 3, 512 kernel pages: marked skipped), then the linear scanner
        // from there, passing block 3, takes block 2's blocks from 1025 up, orders 0 to 5
        // (63 pages; 64 counted), and stops at 1088.
        assert_eq!(
            free_scanner_rounds(free_in_block_2, true, true, 1),
            [(1025, 63, 1088, 9 + 512 + 64)]
        );
        // kcompactd's stays at the zone's end: the linear scanner reads blocks 7 … 3, each
        // with twice the stride of the one before (512, 256, 128, 64, 32 frames), then in
        // block 2, every 32nd frame: the kernel page and the order-5 block at 1056.
        assert_eq!(
            free_scanner_rounds(free_in_block_2, true, false, 1),
            [(1056, 32, 1088, 9 + 512 + 256 + 128 + 64 + 32 + 1 + 32)]
        );
    }

    #[test]
    fn a_free_scanner_below_the_migrate_scanner_takes_nothing_from_the_free_lists() {
        // The free scanner ran out inside a migrate round and stopped at 2048, below the
        // migrate scanner at 2100: the kernel's unsigned distance wraps, so no block is in
        // the top quarter or half. The search reads every list whole (order 8: 1280, 1792,
        // 2304, 2816; orders 7 … 0: one block in each of blocks 2–4, 28 in all) and takes
        // nothing, not even 2304 in the migrate scanner's own pageblock; the linear scanner
        // has no pageblock left.
        assert_eq!(
            free_scanner_rounds_at(free_in_blocks_2_to_5, true, true, (2100, 2048), 1),
            [(0, 0, 2048, 28)]
        );
    }

    #[test]
    fn deferral_backs_off_and_resets_as_the_kernels_does() {
        let mut k = crate::testing::kernel(64, 0);
        // A zone starts with nothing deferred (compact_order_failed 0: every order counts).
        assert!(!k.compaction_deferred(0, 9));
        // After the n-th failure in a row, 2^n − 1 attempts are skipped and the 2^n-th runs
        // (compact_defer_shift = n, at most COMPACT_MAX_DEFER_SHIFT = 6: 63 skipped).
        for n in 1..=8u32 {
            k.defer_compaction(0, 9);
            let z = &k.mem.zones[0];
            assert_eq!((z.compact_considered, z.compact_defer_shift), (0, n.min(6)));
            let mut skipped = 0;
            while k.compaction_deferred(0, 9) {
                skipped += 1;
            }
            assert_eq!(skipped, (1 << n.min(6)) - 1, "after failure {n}");
            assert_eq!(k.mem.zones[0].compact_considered, 1 << n.min(6));
            assert_eq!(k.compaction_restarting(0, 9), n >= 6);
        }
        // A success at order 9 (the allocation not yet made) moves compact_order_failed
        // past it: order 9 is no longer deferred, order 10 still is (and is counted).
        k.compaction_defer_reset(0, 9, false);
        let z = &k.mem.zones[0];
        assert_eq!(
            (
                z.compact_considered,
                z.compact_defer_shift,
                z.compact_order_failed
            ),
            (64, 6, 10)
        );
        assert!(!k.compaction_deferred(0, 9));
        k.mem.zones[0].compact_considered = 0;
        assert!(k.compaction_deferred(0, 10));
        assert_eq!(k.mem.zones[0].compact_considered, 1);
        // The allocation succeeded: the back-off is forgotten.
        k.compaction_defer_reset(0, 9, true);
        let z = &k.mem.zones[0];
        assert_eq!((z.compact_considered, z.compact_defer_shift), (0, 0));
        assert!(!k.compaction_deferred(0, 10));
        // A failure at a lower order lowers compact_order_failed to it.
        k.defer_compaction(0, 5);
        let z = &k.mem.zones[0];
        assert_eq!((z.compact_order_failed, z.compact_defer_shift), (5, 1));
        assert!(k.compaction_deferred(0, 5));
        assert!(!k.compaction_deferred(0, 4), "below compact_order_failed");
    }

    /// Allocates one order-9 page as the hugetlb pool asks for it (`__GFP_RETRY_MAYFAIL`),
    /// on `k`'s node 0 from a task on CPU 0, run to its end.
    fn alloc_huge_page(k: Kernel) -> (Kernel, Option<u32>) {
        use crate::process::Sim;
        use std::{cell::RefCell, rc::Rc};
        let mut sim = Sim::new(k);
        let done = Rc::new(RefCell::new(None));
        let out = Rc::clone(&done);
        let id = sim.spawn("sh".into(), 0, TaskClass::Workload, move |cx| async move {
            let gfp = GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOWARN | __GFP_RETRY_MAYFAIL;
            let page = crate::mm::page_alloc::alloc_pages(&cx, gfp, 9, 0).await;
            *out.borrow_mut() = Some(page);
        });
        sim.k().sched.wake(id, 0);
        for _ in 0..100_000 {
            if done.borrow().is_some() {
                break;
            }
            crate::testing::run_next(&mut sim);
        }
        let page = done.borrow_mut().take().expect("the allocation returned");
        (sim.into_kernel(), page)
    }

    #[test]
    fn an_order9_allocation_in_a_fragmented_movable_zone_succeeds_after_compaction() {
        // Every pageblock: 64 page-cache pages, then 448 free pages (blocks of order 6, 7
        // and 8): 3584 pages free and none of order 9.
        let (k, held) = hand_built(|p| {
            if p % 512 < 64 {
                Place::Lru
            } else {
                Place::Free
            }
        });
        let (mut k, page) = alloc_huge_page(k);
        // The slow path's async compaction before reclaim (INIT_COMPACT_PRIORITY):
        // round 1: pfns 0–31 of block 0 (32 folios); the free scanner, stride 32, looks at
        //   3584 and 3616 (page cache) and takes the order-6 block at 3648 (66 frames).
        // round 2: the rest of block 0 (finish_pageblock: the scanner resumed inside the
        //   block it migrated from), pfns 32–63, into the targets left; the scanner leaves
        //   the block: the CPU's lists drain and block 0 merges into an order-9 block.
        // round 3: __compact_finished finds it: COMPACT_SUCCESS, and the allocation takes it.
        assert_eq!(page, Some(0));
        assert_eq!(ev(&k, VmEvent::CompactStall), 1);
        assert_eq!(ev(&k, VmEvent::CompactSuccess), 1);
        assert_eq!(ev(&k, VmEvent::CompactFail), 0);
        assert_eq!(ev(&k, VmEvent::PgmigrateSuccess), 64);
        assert_eq!(ev(&k, VmEvent::CompactMigrateScanned), 512);
        assert_eq!(ev(&k, VmEvent::CompactFreeScanned), 66);
        assert_eq!(ev(&k, VmEvent::CompactIsolated), 32 + 64 + 32);
        assert_eq!(allocstalls(&k), 0, "no reclaim was needed");
        // The page cache of block 0 is at 3648–3711 now; the huge page is a compound page.
        let lru = lru_pfns(&k);
        assert_eq!(lru.len(), 8 * 64);
        assert!(lru.iter().all(|&p| p >= 512));
        assert!((3648..3712).all(|p| lru.binary_search(&p).is_ok()));
        assert_eq!(k.mem.pages.fields(0).order, 9);
        assert!((1..512).all(|t| k.mem.pages.flags(t) == pg::TAIL));
        let z = &k.mem.zones[0];
        assert_eq!(
            (
                z.compact_considered,
                z.compact_defer_shift,
                z.compact_order_failed
            ),
            (0, 0, 10),
            "compaction_defer_reset(order 9, alloc_success)"
        );
        assert!(!z.compact_blockskip_flush);
        assert_eq!(k.check_page_places(&held), Ok(()));
        assert_eq!(k.check_conservation(held.len() as u64 + 512), Ok(()));
        k.free_pages(0, 9, MIGRATE_MOVABLE, 0);
        k.drain_all_pages();
        check(&k, &held);
    }

    #[test]
    fn an_order9_allocation_fails_where_every_pageblock_holds_an_unmovable_page() {
        // As above, with a kernel page at offset 64 of every pageblock.
        let (k, held) = hand_built(|p| match p % 512 {
            0..=63 => Place::Lru,
            64 => Place::Pinned,
            _ => Place::Free,
        });
        let (mut k, page) = alloc_huge_page(k);
        assert_eq!(page, None);
        // Async compaction, then reclaim (which leaves the zone to compaction: it is ready),
        // then sync-light compaction: each stalls and fails; a sync-light failure defers.
        let stalls = ev(&k, VmEvent::CompactStall);
        assert!(stalls >= 2, "{stalls}");
        assert_eq!(ev(&k, VmEvent::CompactFail), stalls);
        assert_eq!(ev(&k, VmEvent::CompactSuccess), 0);
        assert!(
            ev(&k, VmEvent::PgmigrateSuccess) > 0,
            "pages moved, to no avail"
        );
        let z = &k.mem.zones[0];
        assert!(z.compact_defer_shift >= 1);
        assert_eq!(z.compact_order_failed, 0);
        assert_eq!(z.nr_free[9] + z.nr_free[10], 0);
        k.drain_all_pages();
        check(&k, &held);
    }

    /// Another CPU takes `lock` at `now` and holds it for a millisecond.
    fn hold_a_millisecond(lock: &mut SpinLock, now: Ns, costs: &crate::hw::lock::LockCosts) {
        lock.acquire(now, now, 0, 1_000_000, costs);
    }

    #[test]
    fn an_async_compaction_that_finds_a_lock_held_ends_contended() {
        // Every pageblock: 16 page-cache pages, then a kernel page at offset 256, the rest
        // free. An async direct compaction for order 9 isolates each block's 16 folios, meets
        // the kernel page, puts them back and gives the block up (`skip_on_failure`); nothing
        // migrates and no block frees.
        let layout = |p: u32| match p % 512 {
            0..=15 => Place::Lru,
            256 => Place::Pinned,
            _ => Place::Free,
        };
        let compact = |mode: MigrateMode, held_by_another_cpu: bool| {
            let (mut k, held) = hand_built(layout);
            if held_by_another_cpu {
                hold_a_millisecond(&mut k.memcg.lruvecs[0].lru_lock, k.now, &k.lock_costs);
            }
            let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, mode, 0);
            cc.direct_compaction = true;
            let ret = k.compact_zone_sync(&mut cc);
            check(&k, &held);
            (ret, cc)
        };
        // Unhindered, it goes block by block until the scanners meet.
        let (ret, cc) = compact(MigrateMode::Async, false);
        assert_eq!(ret, CompactResult::Complete);
        assert!(!cc.contended);
        // With the lock held when it comes to isolate block 0's folios, its trylock fails:
        // it takes the lock all the same, finishes block 0, and at the pageblock boundary
        // (`__compact_finished`, no free order-9 block) ends COMPACT_CONTENDED.
        let (ret, cc) = compact(MigrateMode::Async, true);
        assert_eq!(ret, CompactResult::Contended);
        assert!(cc.contended);
        assert_eq!(cc.migrate_pfn, 512, "one pageblock scanned");
        // A sync-light compaction spins for the lock without counting it contention.
        let (ret, cc) = compact(MigrateMode::SyncLight, true);
        assert!(!cc.contended);
        assert_ne!(ret, CompactResult::Contended);
    }

    /// Pageblock 0 holds `lru` page-cache pages and is otherwise free; every other pageblock
    /// ends in a kernel page, free before it: only block 0 can be emptied.
    fn first_block_holds(lru: u32, p: u32) -> Place {
        match p {
            _ if p < lru => Place::Lru,
            _ if p % 512 == 511 && p > 511 => Place::Pinned,
            _ => Place::Free,
        }
    }

    #[test]
    fn a_contended_compaction_isolates_its_block_in_one_round() {
        // Block 0 holds 64 page-cache pages and is otherwise free; every other pageblock
        // ends in a kernel page, free before it. An async direct compaction for order 9
        // migrates the 64 out and block 0 is free. Unhindered it
        // isolates COMPACT_CLUSTER_MAX folios a round (two rounds, then SUCCESS); with the
        // lru_lock held when it comes, it isolates the whole block at once (one round).
        let rounds = |held_by_another_cpu: bool| {
            let (mut k, held) = hand_built(|p| first_block_holds(64, p));
            if held_by_another_cpu {
                hold_a_millisecond(&mut k.memcg.lruvecs[0].lru_lock, k.now, &k.lock_costs);
            }
            let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::Async, 0);
            cc.direct_compaction = true;
            let mut st = k.compact_zone_start(&mut cc).expect("compaction runs");
            let mut n = 0;
            let ret = loop {
                if let Some(ret) = k.compact_zone_round(&mut cc, &mut st) {
                    break ret;
                }
                n += 1;
            };
            k.compact_zone_end(&mut cc, ret);
            check(&k, &held);
            assert_eq!(
                ret,
                CompactResult::Success,
                "SUCCESS comes before CONTENDED"
            );
            assert_eq!(ev(&k, VmEvent::PgmigrateSuccess), 64);
            (n, cc.contended)
        };
        assert_eq!(rounds(false), (2, false));
        assert_eq!(rounds(true), (1, true));
    }

    #[test]
    fn the_free_scanner_finding_zone_lock_held_contends_too() {
        // As above, the lru_lock free and zone->lock held: the free scanner's trylock fails.
        let contended = |held: bool| {
            let (mut k, _) = hand_built(|p| first_block_holds(16, p));
            if held {
                hold_a_millisecond(&mut k.mem.zone_lock[0], k.now, &k.lock_costs);
            }
            let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::Async, 0);
            cc.direct_compaction = true;
            let ret = k.compact_zone_sync(&mut cc);
            (ret, cc.contended)
        };
        assert_eq!(contended(false), (CompactResult::Success, false));
        assert_eq!(contended(true), (CompactResult::Success, true));
    }

    #[test]
    fn a_migrated_folio_is_found_at_its_new_pfn() {
        use crate::mm::vma::{mk_pte, pte_kind, swp_entry, PteKind};
        let mut k = crate::testing::kernel_with(64, 0, "");
        crate::testing::swapon(&mut k, 1025);
        let memcg = k.mem_cgroup_create(1 << 20);
        // A page-cache folio of a file of known size, at index 7.
        k.address_spaces.create(3, 64);
        let file = k.mem.zones[0].rmqueue(&mut k.mem.pages, 0).unwrap();
        k.filemap_add_folios(3, 7, &[file], 0);
        k.filemap_index_folios(3, 7, &[file]);
        k.mem.pages.clear(file, pg::LOCKED);
        // A mapped anon folio in the swap cache (written, then mapped again), charged to a
        // cgroup, on the active anon list; its page-table entry not young.
        let vma = k.mm.mmap(0, 4);
        let idx = k.mm.vmas[vma as usize].start + 2;
        let anon = k.mem.zones[0].rmqueue(&mut k.mem.pages, 0).unwrap();
        let (area, slot) = k.swap.get_swap_page(0).unwrap();
        k.swap.areas[area].cache[slot as usize] = anon;
        k.mem.page_ext.swap_mut()[anon as usize] = swp_entry(area, slot);
        k.mm.ptes[idx as usize] = mk_pte(anon);
        k.mm.test_and_clear_young(idx);
        k.mem_cgroup_commit_charge(anon, memcg);
        let f = k.mem.pages.fields_mut(anon);
        f.owner = idx;
        f.flags = pg::ANON | pg::MAPPED | pg::SWAPCACHE | pg::DIRTY | pg::ACTIVE;
        let lv = k.folio_lruvec(anon);
        let zone_idx = k.page_zonenum(anon);
        k.memcg.lruvecs[lv].add_folio(&mut k.mem.pages, anon, LRU_ACTIVE_ANON, zone_idx);
        // Isolate both and move each to a free page.
        let mut cc = CompactControl::new(0, 9, GFP_HIGHUSER_MOVABLE, MigrateMode::SyncLight, 0);
        for p in [file, anon] {
            assert_eq!(k.isolate_migratepage(&mut cc, p, 0), 1);
        }
        assert_eq!(k.mem.nodes[0].nr_isolated, [1, 1]);
        let dst = take_pages(&mut k, 0, 2);
        k.migrate_folio(file, dst[0], 0);
        k.migrate_folio(anon, dst[1], 0);
        assert_eq!(k.mem.nodes[0].nr_isolated, [0, 0]);
        // The page cache finds the file folio at its new pfn, with its index and flags.
        let space = k.address_spaces.get(3).unwrap();
        assert_eq!(
            space.load(7),
            crate::mm::address_space::Entry::Folio(dst[0])
        );
        assert_eq!(k.mem.page_ext.index.as_ref().unwrap()[dst[0] as usize], 7);
        let f = k.mem.pages.fields(dst[0]);
        assert_eq!((f.owner, f.flags), (3, pg::LRU));
        assert_eq!(f.lru as usize, LRU_INACTIVE_FILE);
        // The anon folio: its page-table entry (still not young), its swap-cache slot, its
        // cgroup, its list.
        assert_eq!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present {
                pfn: dst[1],
                young: false
            }
        );
        assert_eq!(k.swap.areas[area].cache[slot as usize], dst[1]);
        assert_eq!(k.folio_swap_entry(dst[1]), (area, slot));
        assert_eq!(k.mem.page_ext.folio_memcg(dst[1]), memcg);
        assert_eq!(
            k.memcg.groups[memcg as usize].usage, 1,
            "the charge moved, not doubled"
        );
        let f = k.mem.pages.fields(dst[1]);
        assert_eq!(f.owner, idx);
        assert_eq!(f.lru as usize, LRU_ACTIVE_ANON);
        assert!(k
            .mem
            .pages
            .iter(k.memcg.lruvecs[lv].list(LRU_ACTIVE_ANON))
            .eq([dst[1]]));
        // The old pages are free, on CPU 0's list, charged to nobody.
        assert_eq!(
            k.mem.page_ext.folio_memcg(anon),
            crate::mm::mem_cgroup::ROOT_MEM_CGROUP
        );
        for p in [file, anon] {
            let f = k.mem.pages.fields(p);
            assert_eq!((f.owner, f.flags), (crate::mm::page::NO_OWNER, 0));
        }
        assert_eq!(k.percpu.pcp.total(), 2);
        assert_eq!(k.check_lists(), Ok(()));
    }

    #[test]
    fn kcompactd_woken_for_an_order_compacts_the_zone_for_it() {
        use crate::mm::vma::{pte_kind, PteKind};
        use crate::process::Sim;
        // Every pageblock: 64 pages of anonymous memory (no swap: reclaim cannot free them),
        // then 448 free pages.
        let (k, held) = hand_built(|p| {
            if p % 512 < 64 {
                Place::Anon
            } else {
                Place::Free
            }
        });
        let mut sim = Sim::new(k);
        kcompactd_run(&mut sim, 0);
        let id = sim.k().mem.nodes[0].kcompactd.unwrap();
        assert_eq!(sim.k().sched.tasks[id as usize].comm, "kcompactd0");
        // What kswapd does as it goes to sleep after reclaim for order 9 (or wakeup_kswapd
        // for an allocation that may not reclaim): kcompactd is asked for order 9.
        sim.k().wakeup_kcompactd(0, 9, crate::mm::zone::ZONE_NORMAL);
        assert!(!sim.k().mem.nodes[0].kcompactd_wait.contains(id), "woken");
        for _ in 0..10_000 {
            if sim.k().mem.nodes[0].kcompactd_wait.contains(id) {
                break;
            }
            crate::testing::run_next(&mut sim);
        }
        let mut k = sim.into_kernel();
        assert!(k.mem.nodes[0].kcompactd_wait.contains(id), "asleep again");
        // kcompactd_do_work(): DMA32 (Normal has nothing free: not suitable), sync-light,
        // not a direct compaction: block 0's 64 pages move to the top of the zone (as in
        // the allocation test above, without the async pass's stride), and block 0 is free.
        assert_eq!(ev(&k, VmEvent::CompactDaemonWake), 1);
        assert_eq!(ev(&k, VmEvent::PgmigrateSuccess), 64);
        assert_eq!(ev(&k, VmEvent::CompactDaemonMigrateScanned), 512);
        assert_eq!(ev(&k, VmEvent::CompactMigrateScanned), 512);
        assert_eq!(ev(&k, VmEvent::CompactStall), 0, "no allocation stalled");
        k.drain_all_pages();
        assert_eq!(k.mem.zones[0].nr_free[9], 1);
        assert_eq!(
            k.mem.zones[0].compact_order_failed, 10,
            "compaction_defer_reset"
        );
        assert!(
            !k.mem.zones[0].compact_blockskip_flush,
            "kcompactd leaves no flush"
        );
        assert_eq!(k.mem.nodes[0].kcompactd_max_order, 0, "done");
        // The anon folios are where their page-table entries say.
        let vma_start = k.mm.vmas[0].start;
        for p in 0..64u32 {
            let PteKind::Present { pfn, .. } = pte_kind(k.mm.ptes[(vma_start + p) as usize]) else {
                panic!("pte {p} not present");
            };
            assert!(pfn >= 512, "page {p} still at {pfn}");
            let f = k.mem.pages.fields(pfn);
            assert_eq!((f.owner, f.flags & pg::ANON), (vma_start + p, pg::ANON));
        }
        check(&k, &held);
    }
}
