//! The page allocator (mm/page_alloc.c, 6.2 with the 6.x deltas noted): `alloc_pages()` →
//! `__alloc_pages()`, its fast path `get_page_from_freelist()` at the low watermark, and
//! `__alloc_pages_slowpath()`: wake the kswapds, try the min watermark, direct reclaim, and
//! retry while `should_reclaim_retry()` says reclaim may still help.
//!
//! Order-0 pages come from and go to the per-CPU page lists (`mm::pcp`): `rmqueue_pcplist()`
//! refills `pcp->batch` pages under zone->lock (`rmqueue_bulk()`) after the one watermark
//! check of the allocation that found the list empty, `free_unref_page()` parks a page on
//! the freeing CPU's list and `free_pcppages_bulk()` returns a batch under zone->lock once
//! the list reaches `pcp->high`, and a direct reclaim whose allocation still fails drains
//! every list once (`drain_all_pages()`) and retries. Watermark checks read NR_FREE_PAGES
//! without the per-CPU deltas (`zone_page_state`), except `should_reclaim_retry()`, which
//! reads the snapshot, as 4.16 and 6.x do.
//!
//! Every allocation takes blocks of its gfp's migratetype (`mm::zone`, fallbacks included);
//! an order > 0 request goes to the buddy lists (`rmqueue_buddy()`), a movable one of
//! pageblock order with 6.x's lists to the CPU's list of such blocks (`mm::pcp`), and the slow path
//! compacts for it as 6.6 does (`__alloc_pages_direct_compact()`, `mm::compaction`): async
//! compaction before reclaim for a costly order (or a non-movable one), compaction at
//! `compact_priority` after each round of reclaim, and `should_compact_retry()` once
//! `should_reclaim_retry()` gives up. It gives up on the request after one round of reclaim
//! and compaction for `__GFP_NORETRY` (a costly one before reclaim, if compaction was
//! skipped or deferred), at once for a costly order (> 3) without `__GFP_RETRY_MAYFAIL`,
//! and otherwise when neither `should_reclaim_retry()` (no zone whose free and reclaimable
//! pages could pass the min watermark at that order; a costly order's reclaim never counts
//! as progress) nor `should_compact_retry()` retries. The fast path adds
//! ALLOC_NOFRAGMENT where the kernel does (`alloc_flags_nofragment`, which also carries
//! ALLOC_KSWAPD), and an allocation whose fallback boosted a zone's watermarks
//! (`mm::zone::Zone::boost_watermark`, 5.0+) wakes kswapd at the end of its `rmqueue()`
//! (ZONE_BOOSTED_WATERMARK, 6.6). `__GFP_THISNODE` keeps the
//! allocation and `should_reclaim_retry()` to the node's own zones (ZONELIST_NOFALLBACK);
//! departure: its direct reclaim and kswapd wake-ups still follow the node's full zonelist,
//! which differs on machines of several nodes only.
//!
//! Not modelled: page capture by direct compaction (`compaction_capture()`), the OOM killer
//! (an allocation whose retries run out is counted in `Kernel::nr_oom_retries` and retries,
//! as it would after the killer freed memory), cpusets, `__GFP_MEMALLOC`/PF_MEMALLOC reserves,
//! highatomic reserves (`unreserve_highatomic_pageblock()` before the drain has none to
//! release), and 6.7's auto-tuned `high`. The per-CPU lists' `high` is lowered while kswapd
//! reclaims a zone (5.14+ `nr_pcp_high()` under ZONE_RECLAIM_ACTIVE, `mm::pcp`).

use crate::engine::Ns;
use crate::kernel::{Kernel, MAX_RECLAIM_RETRIES};
use crate::mm::compaction::{
    try_to_compact_pages, CompactPriority, CompactResult, DEF_COMPACT_PRIORITY,
    INIT_COMPACT_PRIORITY, MIN_COMPACT_COSTLY_PRIORITY, MIN_COMPACT_PRIORITY,
};
use crate::mm::congestion::{reclaim_congestion_nap, Napper};
use crate::mm::gfp::*;
use crate::mm::mempolicy::MpolMode;
use crate::mm::page::pg;
use crate::mm::percpu::STAT_INTERVAL_NS;
use crate::mm::vmscan::{node_reclaim_scan, try_to_free_pages, NodeReclaim};
use crate::mm::vmstat::{NumaStat, VmEvent};
use crate::mm::zone::{
    gfp_migratetype, MAX_NR_ZONES, MIGRATE_MOVABLE, PAGEBLOCK_ORDER, WMARK_LOW, WMARK_MIN,
    ZONE_DMA32, ZONE_NORMAL,
};
use crate::process::{cond_resched, psi_memstall_enter, psi_memstall_leave, Cx};
/// Orders above this are "costly": the slow path gives up on them sooner.
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;

/// `alloc_flags` (mm/internal.h): the watermark to check, and what may go below it.
pub type AllocFlags = u32;
pub const ALLOC_WMARK_MIN: AllocFlags = WMARK_MIN as u32;
pub const ALLOC_WMARK_LOW: AllocFlags = WMARK_LOW as u32;
pub const ALLOC_WMARK_MASK: AllocFlags = 0x3;
/// ALLOC_NOFRAGMENT (5.0+, 6.2 value): a fallback may take only whole pageblocks of another
/// migratetype while the zonelist's other local zones may still serve.
pub const ALLOC_NOFRAGMENT: AllocFlags = 0x100;
/// `__GFP_HIGH`: half the watermark may be used.
pub const ALLOC_HIGH: AllocFlags = 0x20;
/// The caller may wake kswapd (`__GFP_KSWAPD_RECLAIM`).
pub const ALLOC_KSWAPD: AllocFlags = 0x800;

/// `struct alloc_context`: what one allocation asks for.
#[derive(Clone, Copy, Debug)]
pub struct AllocContext {
    pub gfp: Gfp,
    pub order: u32,
    /// The preferred node: its zonelist is walked.
    pub nid: u32,
    /// `ac->nodemask`, one bit per node: the nodes whose zones the walk may use (an
    /// MPOL_BIND policy's, `policy_nodemask()`); 0 is the kernel's NULL, every node.
    pub nodemask: u64,
    /// `gfp_zone(gfp)`.
    pub highest_zoneidx: usize,
    /// `gfp_migratetype(gfp)`.
    pub migratetype: usize,
}

impl AllocContext {
    pub fn new(gfp: Gfp, order: u32, nid: u32) -> AllocContext {
        AllocContext {
            gfp,
            order,
            nid,
            nodemask: 0,
            highest_zoneidx: gfp_zone(gfp),
            migratetype: gfp_migratetype(gfp),
        }
    }

    /// The allocation with `nodemask` (`__alloc_pages(gfp, order, nid, nodemask)`).
    pub fn with_nodemask(self, nodemask: u64) -> AllocContext {
        AllocContext { nodemask, ..self }
    }
}

/// Whether the zonelist walk may use zone `z` (`for_next_zone_zonelist_nodemask`: at most
/// `highest_zoneidx`, on a node of the nodemask; `__GFP_THISNODE`'s ZONELIST_NOFALLBACK: the
/// preferred node's zones only).
#[inline]
pub fn zone_usable(ac: &AllocContext, z: &crate::mm::zone::Zone) -> bool {
    z.zone_idx <= ac.highest_zoneidx
        && (ac.gfp & __GFP_THISNODE == 0 || z.nid == ac.nid)
        && (ac.nodemask == 0 || ac.nodemask & (1 << z.nid) != 0)
}

/// The watermark `alloc_flags` select in zone `z` (`wmark_pages(zone, alloc_flags &
/// ALLOC_WMARK_MASK)`), less half for ALLOC_HIGH (`__zone_watermark_ok`'s
/// ALLOC_MIN_RESERVE): the mark `zone_watermark_ok()` checks for them.
#[inline]
pub fn alloc_flags_mark(z: &crate::mm::zone::Zone, alloc_flags: AllocFlags) -> u64 {
    let mark = z.wmark_pages((alloc_flags & ALLOC_WMARK_MASK) as usize);
    if alloc_flags & ALLOC_HIGH != 0 {
        mark - mark / 2
    } else {
        mark
    }
}

/// What a zonelist walk does at a zone where 6.6 calls `node_reclaim()`
/// ([`Kernel::get_page_from_freelist_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeReclaimAt {
    /// Stop there, leaving the reclaim to the next call.
    Stop,
    /// Stop there with the node's PGDAT_RECLAIM_LOCKED taken: the caller reclaims.
    Lock,
}

/// A zonelist walk's result: the pages it took, and where it stopped for `node_reclaim()`
/// (the zonelist entry and the alloc flags the walk had reached), if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub got: usize,
    pub node_reclaim: Option<(usize, AllocFlags)>,
}

/// `gfp_to_alloc_flags()`: the slow path's flags, at the min watermark.
fn gfp_to_alloc_flags(gfp: Gfp) -> AllocFlags {
    let mut flags = ALLOC_WMARK_MIN;
    if gfp & __GFP_HIGH != 0 {
        flags |= ALLOC_HIGH;
    }
    if gfp & __GFP_KSWAPD_RECLAIM != 0 {
        flags |= ALLOC_KSWAPD;
    }
    flags
}

/// `alloc_pages(gfp, order)` (mm/mempolicy.c, 6.6) by the task of `cx`, whose local node
/// (`numa_node_id()`) is `nid`: with the task's memory policy (`mm::mempolicy`; none for
/// `__GFP_THISNODE`), `__alloc_pages()` on `policy_node()` with `policy_nodemask()`, or for
/// MPOL_INTERLEAVE `alloc_page_interleave()` on `interleave_nodes()`, which counts
/// NUMA_INTERLEAVE_HIT when the page came from that node. Returns the first pfn of the
/// 2^order pages, or None if the allocation failed (see [`__alloc_pages`]).
pub async fn alloc_pages(cx: &Cx, gfp: Gfp, order: u32, nid: u32) -> Option<u32> {
    let (nid, nodemask, interleave) = {
        let mut k = cx.k();
        let policy_zone = k.mem.policy_zone;
        let pol = &mut k.sched.tasks[cx.tid as usize].mempolicy;
        if !pol.applies(gfp) {
            (nid, 0, false)
        } else if pol.mode == MpolMode::Interleave {
            (pol.interleave_nodes(), 0, true)
        } else {
            (
                pol.policy_node(nid),
                pol.policy_nodemask(gfp, policy_zone),
                false,
            )
        }
    };
    let page = __alloc_pages(cx, gfp, order, nid, nodemask).await;
    if interleave {
        let mut k = cx.k();
        if page.is_some_and(|p| k.mem.zones[k.page_zone(p)].nid == nid) {
            k.count_numa(nid, NumaStat::InterleaveHit, 1);
        }
    }
    page
}

/// `__alloc_pages(gfp, order, nid, nodemask)`: node `nid`'s zonelist, the zones of
/// `nodemask`'s nodes (0: every node); the fast path, then the slow path. Returns the first
/// pfn of the 2^order pages, or None if the allocation failed (`__GFP_NORETRY` after one
/// round of direct reclaim, no `__GFP_DIRECT_RECLAIM`, a costly order without
/// `__GFP_RETRY_MAYFAIL`, or `__GFP_RETRY_MAYFAIL` when the OOM killer would be next).
pub async fn __alloc_pages(cx: &Cx, gfp: Gfp, order: u32, nid: u32, nodemask: u64) -> Option<u32> {
    let ac = AllocContext::new(gfp, order, nid).with_nodemask(nodemask);
    let alloc_flags = {
        let mut k = cx.k();
        k.vmstat_update();
        ALLOC_WMARK_LOW | k.alloc_flags_nofragment(&ac)
    };
    let fast = get_page_from_freelist(cx, &ac, alloc_flags).await;
    if fast.is_some() {
        return fast;
    }
    __alloc_pages_slowpath(cx, &ac).await
}

/// `get_page_from_freelist()` for one allocation by the task of `cx`
/// ([`Kernel::get_page_from_freelist_at`]), with 6.6's `node_reclaim()` where the walk
/// stops for it: the node reclaimed ([`node_reclaim_scan`]), then, if that reclaimed
/// anything (NODE_RECLAIM_SOME or _SUCCESS) and the zone now passes `zone_watermark_ok()`,
/// the walk goes on from that zone (`try_this_zone`), else from the next.
async fn get_page_from_freelist(
    cx: &Cx,
    ac: &AllocContext,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let mut start = 0;
    let mut flags = alloc_flags;
    loop {
        let (i, f, zi) = {
            let mut k = cx.k();
            let mut page = OnePage::default();
            let walk = k.get_page_from_freelist_at(
                ac,
                flags,
                cx.cpu,
                1,
                &mut page,
                start,
                NodeReclaimAt::Lock,
            );
            let Some((i, f)) = walk.node_reclaim else {
                return page.0;
            };
            (i, f, k.mem.zonelists[ac.nid as usize][i])
        };
        let nid = cx.k().mem.zones[zi].nid;
        let ret = node_reclaim_scan(cx, nid, ac.gfp, ac.order).await;
        flags = f;
        let k = cx.k();
        let z = &k.mem.zones[zi];
        let mark = alloc_flags_mark(z, flags);
        let reclaimed = matches!(ret, NodeReclaim::Some | NodeReclaim::Success);
        start = if reclaimed && z.zone_watermark_ok(ac.order, mark, ac.highest_zoneidx) {
            i
        } else {
            i + 1
        };
    }
}

/// `__alloc_pages_slowpath()` (6.6 for order > 0's compaction).
async fn __alloc_pages_slowpath(cx: &Cx, ac: &AllocContext) -> Option<u32> {
    let gfp = ac.gfp;
    let can_direct_reclaim = gfp & __GFP_DIRECT_RECLAIM != 0;
    // gfp_compaction_allowed(): migration may need I/O.
    let can_compact = gfp & __GFP_IO != 0;
    let costly_order = ac.order > PAGE_ALLOC_COSTLY_ORDER;
    let alloc_flags = gfp_to_alloc_flags(gfp);
    let mut no_progress_loops = 0;
    let mut compact_priority = DEF_COMPACT_PRIORITY;
    let mut compact_result = CompactResult::Skipped;
    let mut compaction_retries = 0;
    // restart: wake the kswapds, then the min watermark.
    let page = wake_kswapds_and_get_page(cx, ac, alloc_flags).await;
    if page.is_some() {
        return page;
    }
    // A costly order (or an order > 0 that is not movable) tries async compaction before
    // reclaim: there may be free pages enough, only not together.
    if can_direct_reclaim
        && can_compact
        && (costly_order || (ac.order > 0 && ac.migratetype != MIGRATE_MOVABLE))
    {
        let page = __alloc_pages_direct_compact(
            cx,
            ac,
            alloc_flags,
            INIT_COMPACT_PRIORITY,
            &mut compact_result,
        )
        .await;
        if page.is_some() {
            return page;
        }
        if costly_order && gfp & __GFP_NORETRY != 0 {
            // A whole pageblock is not worth reclaim when compaction could not run or was
            // deferred; otherwise go on, compacting async only.
            if matches!(
                compact_result,
                CompactResult::Skipped | CompactResult::Deferred
            ) {
                return None;
            }
            compact_priority = INIT_COMPACT_PRIORITY;
        }
    }
    loop {
        // retry: wake the kswapds again so that they do not sleep while we loop.
        let page = wake_kswapds_and_get_page(cx, ac, alloc_flags).await;
        if page.is_some() {
            return page;
        }
        if !can_direct_reclaim {
            return None;
        }
        // __alloc_pages_direct_reclaim(): reclaim (__perform_reclaim() stalls in it:
        // psi_memstall_enter/leave), then one more attempt if it made progress; if that
        // fails, drain every CPU's lists once and try again.
        let pflags = psi_memstall_enter(cx);
        let progress = try_to_free_pages(cx, ac.nid, ac.order, gfp, ac.nodemask).await;
        psi_memstall_leave(cx, pflags);
        if progress > 0 {
            let page = get_page_from_freelist(cx, ac, alloc_flags).await;
            if page.is_some() {
                return page;
            }
            cx.k().drain_all_pages();
            let page = get_page_from_freelist(cx, ac, alloc_flags).await;
            if page.is_some() {
                return page;
            }
        }
        // Then direct compaction (order > 0 only).
        let page = __alloc_pages_direct_compact(
            cx,
            ac,
            alloc_flags,
            compact_priority,
            &mut compact_result,
        )
        .await;
        if page.is_some() {
            return page;
        }
        if gfp & __GFP_NORETRY != 0 {
            return None;
        }
        if costly_order && (!can_compact || gfp & __GFP_RETRY_MAYFAIL == 0) {
            return None;
        }
        let retry = {
            let k = cx.k();
            k.should_reclaim_retry(ac, progress > 0, &mut no_progress_loops)
                || (progress > 0
                    && can_compact
                    && k.should_compact_retry(
                        ac,
                        compact_result,
                        &mut compact_priority,
                        &mut compaction_retries,
                    ))
        };
        if !retry {
            // __alloc_pages_may_oom(): the OOM killer is skipped for __GFP_RETRY_MAYFAIL;
            // otherwise it would free memory (not modelled) and the allocation retries.
            if gfp & __GFP_RETRY_MAYFAIL != 0 {
                return None;
            }
            cx.k().stats.nr_oom_retries += 1;
            no_progress_loops = 0;
        }
        if retry && cx.k().variant.reclaim_wait.congestion() {
            // 2.6.36's should_alloc_retry(): "Wait for some write requests to complete
            // then retry", congestion_wait(BLK_RW_ASYNC, HZ/50) (wait_iff_congested() with
            // seed 003's patch 7, on the preferred zone with patch 8; mm/congestion.rs).
            reclaim_congestion_nap(
                cx,
                Napper::AllocRetry,
                ac.nid,
                ac.highest_zoneidx,
                ALLOC_RETRY_NAP,
            )
            .await;
            continue;
        }
        // should_reclaim_retry() ends with cond_resched() before the retry.
        cond_resched(cx).await;
    }
}

/// The slow path's first steps at `restart:` and `retry:`: `wake_all_kswapds()` when the
/// flags ask for it, then `get_page_from_freelist()` at `alloc_flags`' watermark.
async fn wake_kswapds_and_get_page(
    cx: &Cx,
    ac: &AllocContext,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    if alloc_flags & ALLOC_KSWAPD != 0 {
        cx.k().wake_all_kswapds(ac);
    }
    get_page_from_freelist(cx, ac, alloc_flags).await
}

/// HZ/50: the page allocator's nap before a retry in 2.6.36
/// (`congestion_wait(BLK_RW_ASYNC, HZ/50)`).
const ALLOC_RETRY_NAP: crate::engine::Ns = crate::engine::JIFFY * (crate::engine::HZ / 50);

/// `__alloc_pages_direct_compact()` (6.6): for order > 0, compact at `prio` in a memory
/// stall (`try_to_compact_pages`), then try the free lists again. Unless compaction was
/// skipped everywhere, counts a COMPACTSTALL and then a COMPACTSUCCESS (the zone's
/// deferral reset and its skip bits kept) or a COMPACTFAIL. `compact_result` is left with
/// what compaction did (untouched for order 0).
async fn __alloc_pages_direct_compact(
    cx: &Cx,
    ac: &AllocContext,
    alloc_flags: AllocFlags,
    prio: CompactPriority,
    compact_result: &mut CompactResult,
) -> Option<u32> {
    if ac.order == 0 {
        return None;
    }
    let pflags = psi_memstall_enter(cx);
    *compact_result = try_to_compact_pages(cx, ac, alloc_flags, prio).await;
    psi_memstall_leave(cx, pflags);
    if *compact_result == CompactResult::Skipped {
        return None;
    }
    cx.k().count(VmEvent::CompactStall, 1);
    // No page capture (compaction_capture): the free lists again.
    let page = get_page_from_freelist(cx, ac, alloc_flags).await;
    {
        let mut k = cx.k();
        if let Some(p) = page {
            let zi = k.page_zone(p);
            k.mem.zones[zi].compact_blockskip_flush = false;
            k.compaction_defer_reset(zi, ac.order, true);
            k.count(VmEvent::CompactSuccess, 1);
            return page;
        }
        k.count(VmEvent::CompactFail, 1);
    }
    cond_resched(cx).await;
    None
}

/// MAX_COMPACT_RETRIES: compactions that reported success the allocation may retry after.
pub const MAX_COMPACT_RETRIES: u32 = 16;

/// One allocation's result, for the functions that append pages to a collection.
#[derive(Default)]
struct OnePage(Option<u32>);

impl Extend<u32> for OnePage {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, pfns: I) {
        for p in pfns {
            debug_assert!(self.0.is_none(), "one page was asked for");
            self.0 = Some(p);
        }
    }
}

impl Kernel {
    /// `alloc_pages(gfp, 0)` on node `nid` called up to `want` times in a row, as far as the
    /// calls need no direct reclaim: the fast path at the low watermark, then the slow path's
    /// first steps (wake the kswapds, the min watermark) for the rest. The pages are appended
    /// to `out`, each as its own call would give it; returns how many. Fewer than `want`
    /// means the next call enters direct reclaim: the caller adds the pages it has (as the
    /// kernel's caller adds each before allocating the next) and then calls `alloc_pages`.
    ///
    /// The calls are the current task's, with its memory policy as [`alloc_pages`] applies
    /// it: an interleaving task's pages are taken one call at a time, each on the next node
    /// of the round robin (which moves only when the page was had). A walk that stops where
    /// `node_reclaim()` would scan ends the run there, for the next call's reclaim.
    pub fn alloc_pages_batch(
        &mut self,
        gfp: Gfp,
        nid: u32,
        cpu: u32,
        want: usize,
        out: &mut Vec<u32>,
    ) -> usize {
        let current = self.current as usize;
        let pol = self.sched.tasks[current].mempolicy;
        if !pol.applies(gfp) {
            return self.alloc_pages_batch_ac(&AllocContext::new(gfp, 0, nid), cpu, want, out);
        }
        if pol.mode != MpolMode::Interleave {
            let nodemask = pol.policy_nodemask(gfp, self.mem.policy_zone);
            let ac = AllocContext::new(gfp, 0, pol.policy_node(nid)).with_nodemask(nodemask);
            return self.alloc_pages_batch_ac(&ac, cpu, want, out);
        }
        let mut got = 0;
        while got < want {
            let il = self.sched.tasks[current].mempolicy.next_interleave_node();
            if self.alloc_pages_batch_ac(&AllocContext::new(gfp, 0, il), cpu, 1, out) == 0 {
                break;
            }
            self.sched.tasks[current].mempolicy.il_prev = il;
            let p = *out.last().expect("the page just taken");
            if self.mem.zones[self.page_zone(p)].nid == il {
                self.count_numa(il, NumaStat::InterleaveHit, 1);
            }
            got += 1;
        }
        got
    }

    /// [`Kernel::alloc_pages_batch`] of `ac` (its policy applied).
    #[inline(always)]
    fn alloc_pages_batch_ac(
        &mut self,
        ac: &AllocContext,
        cpu: u32,
        want: usize,
        out: &mut Vec<u32>,
    ) -> usize {
        let (ac, gfp) = (*ac, ac.gfp);
        self.vmstat_update();
        let alloc_flags = ALLOC_WMARK_LOW | self.alloc_flags_nofragment(&ac);
        let walk = self.get_page_from_freelist_at(
            &ac,
            alloc_flags,
            cpu,
            want,
            out,
            0,
            NodeReclaimAt::Stop,
        );
        let mut got = walk.got;
        if got < want && walk.node_reclaim.is_none() {
            let alloc_flags = gfp_to_alloc_flags(gfp);
            if alloc_flags & ALLOC_KSWAPD != 0 {
                self.wake_all_kswapds(&ac);
            }
            got += self.get_page_from_freelist(&ac, alloc_flags, cpu, want - got, out);
        }
        got
    }

    /// `alloc_flags_nofragment()` (6.6): ALLOC_KSWAPD when the gfp has
    /// `__GFP_KSWAPD_RECLAIM` (the fast path's only source of it, which a fallback's
    /// watermark boost reads), and ALLOC_NOFRAGMENT when the allocation's preferred zone (the
    /// first of its zonelist it may use) is ZONE_NORMAL and, on a machine of several nodes,
    /// its node has a populated ZONE_DMA32 (one node: assumed to). Only the fast path uses
    /// it. With `variant.alloc_nofragment` off (the kernels before 5.0, which had no
    /// ALLOC_NOFRAGMENT), ALLOC_KSWAPD only (the boost it serves is set by
    /// `vm.watermark_boost_factor`).
    pub fn alloc_flags_nofragment(&self, ac: &AllocContext) -> AllocFlags {
        let alloc_flags = if ac.gfp & __GFP_KSWAPD_RECLAIM != 0 {
            ALLOC_KSWAPD
        } else {
            0
        };
        if !self.variant.alloc_nofragment {
            return alloc_flags;
        }
        let zonelist = &self.mem.zonelists[ac.nid as usize];
        let Some(&zi) = zonelist
            .iter()
            .find(|&&zi| self.mem.zones[zi].zone_idx <= ac.highest_zoneidx)
        else {
            return alloc_flags;
        };
        let z = &self.mem.zones[zi];
        if z.zone_idx != ZONE_NORMAL {
            return alloc_flags;
        }
        if self.mem.nodes.len() > 1 {
            let dma32 = self.mem.nodes[z.nid as usize].zones.iter().any(|&d| {
                let d = &self.mem.zones[d];
                d.zone_idx == ZONE_DMA32 && d.managed_pages > 0
            });
            if !dma32 {
                return alloc_flags;
            }
        }
        alloc_flags | ALLOC_NOFRAGMENT
    }

    /// `get_page_from_freelist()` for one allocation of `ac.order`: its first pfn, or None.
    pub fn get_page(
        &mut self,
        ac: &AllocContext,
        alloc_flags: AllocFlags,
        cpu: u32,
    ) -> Option<u32> {
        let mut page = OnePage::default();
        self.get_page_from_freelist(ac, alloc_flags, cpu, 1, &mut page);
        page.0
    }

    /// `get_page_from_freelist()` for up to `want` allocations of `ac.order` in a row, as
    /// that many consecutive calls would return them: each comes from the first zone of the
    /// zonelist (≤ highest_zoneidx, on a node of `ac.nodemask`) that still passes the
    /// watermark (`zone_watermark_fast`, NR_FREE_PAGES without the per-CPU deltas). Appends
    /// their first pfns to `out` and returns how many. The CPU time (zone->lock whenever
    /// `cpu`'s per-CPU list needs a refill; once per block above order 0 but for the
    /// pageblock-order list's refills) is charged to the
    /// slice. With ALLOC_NOFRAGMENT, a zone of a node other than the preferred zone's, or
    /// the zonelist's end with pages still wanted, restarts the walk without it (so each
    /// call's own restart, in a run of calls: the pages already taken stay taken).
    ///
    /// With `variant.zonelist_cache` on a machine of several nodes, the walk is 4.3's: once
    /// a zone fails its watermark check (`zlc_setup()`: the cache starts being used), each
    /// zone that fails is marked full and zones marked full within the last second are
    /// skipped; a walk that used the cache and ends short is made once more without it. A
    /// zone that stops serving a run of calls has failed for the next call of the run, which
    /// would meet the same zones first. Each allocation counts `numa_hit`/`numa_miss` against
    /// the node of its zonelist's first usable zone and `numa_local`/`numa_other` against the
    /// CPU's node (`zone_statistics()`).
    ///
    /// With `vm.zone_reclaim_mode` set, a zone that fails its watermark check within
    /// RECLAIM_DISTANCE of the preferred zone's node is where 6.6 calls `node_reclaim()`;
    /// this synchronous walk does not reclaim: it skips the zone when `node_reclaim()` would
    /// not scan (NODE_RECLAIM_FULL, NODE_RECLAIM_NOSCAN) and otherwise stops there, short
    /// (see [`Kernel::get_page_from_freelist_at`]; `alloc_pages` reclaims and resumes).
    #[inline]
    pub fn get_page_from_freelist(
        &mut self,
        ac: &AllocContext,
        alloc_flags: AllocFlags,
        cpu: u32,
        want: usize,
        out: &mut impl Extend<u32>,
    ) -> usize {
        self.get_page_from_freelist_at(ac, alloc_flags, cpu, want, out, 0, NodeReclaimAt::Stop)
            .got
    }

    /// The zonelist walk of [`Kernel::get_page_from_freelist`] from entry `start` of the
    /// zonelist (the first is 0; `alloc_pages` resumes a walk after `node_reclaim()` at
    /// the zone it reclaimed, or the one after), with what to do where 6.6 would call
    /// `node_reclaim()` (`at`): stop there and say so, taking the node's
    /// PGDAT_RECLAIM_LOCKED for the caller's reclaim (`NodeReclaimAt::Lock`) or not
    /// (`NodeReclaimAt::Stop`, a run of calls whose next call reclaims).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn get_page_from_freelist_at(
        &mut self,
        ac: &AllocContext,
        mut alloc_flags: AllocFlags,
        cpu: u32,
        want: usize,
        out: &mut impl Extend<u32>,
        start: usize,
        at: NodeReclaimAt,
    ) -> Walk {
        let cpu_node = self.cpus.node_of(cpu);
        let wmark = (alloc_flags & ALLOC_WMARK_MASK) as usize;
        let hz = ac.highest_zoneidx;
        let nid = ac.nid as usize;
        let node_reclaim = self.node_reclaim_enabled();
        let mut zlc_active = false;
        let mut did_zlc_setup = false;
        let mut got = 0;
        let mut start = start;
        'retry: loop {
            let no_fallback = alloc_flags & ALLOC_NOFRAGMENT != 0;
            // ac->preferred_zoneref: the first usable zone, before `start` if resumed.
            let mut preferred_nid = self.mem.zonelists[nid][..start]
                .iter()
                .map(|&zi| &self.mem.zones[zi])
                .find(|z| zone_usable(ac, z))
                .map(|z| z.nid);
            let mut i = start;
            while i < self.mem.zonelists[nid].len() {
                if got == want {
                    break;
                }
                let zi = self.mem.zonelists[nid][i];
                let z = &self.mem.zones[zi];
                if !zone_usable(ac, z) {
                    i += 1;
                    continue;
                }
                let preferred = *preferred_nid.get_or_insert(z.nid);
                if zlc_active && !self.mem.zlc[nid].zlc_zone_worth_trying(i) {
                    i += 1;
                    continue;
                }
                if no_fallback && z.nid != preferred {
                    alloc_flags &= !ALLOC_NOFRAGMENT;
                    start = 0;
                    continue 'retry;
                }
                let mut mark = z.wmark_pages(wmark);
                if ac.order == 0
                    && alloc_flags & ALLOC_HIGH != 0
                    && wmark == WMARK_MIN
                    && z.watermark_boost > 0
                {
                    // zone_watermark_fast() (6.6): a __GFP_HIGH order-0 allocation at the
                    // min watermark that fails the boosted mark is checked again against
                    // the unboosted one; passing either is passing the lower.
                    mark = z.watermark[WMARK_MIN];
                }
                if alloc_flags & ALLOC_HIGH != 0 {
                    mark -= mark / 2;
                }
                let (zone_idx, zone_nid) = (z.zone_idx, z.nid);
                let limit = mark + z.lowmem_reserve[hz];
                if node_reclaim {
                    let wmark_ok = if ac.order == 0 {
                        z.zone_page_state_free() > limit
                    } else {
                        z.zone_watermark_ok(ac.order, mark, hz)
                    };
                    if !wmark_ok {
                        // The zone fails: node_reclaim() if it may, else the next zone.
                        if self.zone_allows_reclaim(preferred, zone_nid)
                            && self.node_reclaim_would_scan(zone_nid, ac.gfp, cpu_node, at)
                        {
                            return Walk {
                                got,
                                node_reclaim: Some((i, alloc_flags)),
                            };
                        }
                        i += 1;
                        continue;
                    }
                }
                let n = if ac.order == 0 && ac.migratetype == MIGRATE_MOVABLE {
                    let pcp = (zi, cpu, cpu_node);
                    self.rmqueue_pcplist_run(pcp, limit, alloc_flags, want - got, out)
                } else {
                    self.rmqueue_blocks(zi, ac, mark, alloc_flags, cpu, want - got, out)
                };
                self.stats
                    .events
                    .count_zid(VmEvent::PgallocDma, zone_idx, (n as u64) << ac.order);
                if n > 0 {
                    self.zone_statistics(preferred, zone_nid, cpu_node, n as u64);
                }
                got += n;
                if node_reclaim && n > 0 && got < want {
                    // The next call of the run meets this zone again, now failing.
                    continue;
                }
                if got < want && !no_fallback && self.zlc_used(ac) {
                    // The zone failed the next call: its watermark (this_zone_full after
                    // zlc_setup) or its free lists (this_zone_full if the cache is in use).
                    let z = &self.mem.zones[zi];
                    let wmark_ok = if ac.order == 0 {
                        z.zone_page_state_free() > limit
                    } else {
                        z.zone_watermark_ok(ac.order, mark, hz)
                    };
                    if !wmark_ok && !did_zlc_setup {
                        let now = self.clock();
                        self.mem.zlc[nid].zlc_setup(now);
                        zlc_active = true;
                        did_zlc_setup = true;
                    }
                    if zlc_active {
                        self.mem.zlc[nid].zlc_mark_zone_full(i);
                    }
                }
                i += 1;
            }
            start = 0;
            if no_fallback && got < want {
                alloc_flags &= !ALLOC_NOFRAGMENT;
                continue;
            }
            if zlc_active && got < want {
                // Disable the cache for a second scan of the zonelist.
                zlc_active = false;
                continue;
            }
            return Walk {
                got,
                node_reclaim: None,
            };
        }
    }

    /// Whether `node_reclaim()` (6.6) would scan node `nid` for an allocation with `gfp` by
    /// a task on a CPU of `cpu_node` ([`Kernel::node_reclaim_check`]), taking its
    /// PGDAT_RECLAIM_LOCKED with `NodeReclaimAt::Lock`.
    fn node_reclaim_would_scan(
        &mut self,
        nid: u32,
        gfp: Gfp,
        cpu_node: u32,
        at: NodeReclaimAt,
    ) -> bool {
        if at == NodeReclaimAt::Lock {
            return self.node_reclaim_check(nid, gfp, cpu_node) == NodeReclaim::Success;
        }
        let was = self.mem.nodes[nid as usize].reclaim_locked;
        let scan = self.node_reclaim_check(nid, gfp, cpu_node) == NodeReclaim::Success;
        self.mem.nodes[nid as usize].reclaim_locked = was;
        scan
    }

    /// Whether an allocation walks a zonelist with a cache (`variant.zonelist_cache`, a
    /// machine of several nodes, and not `__GFP_THISNODE`'s zonelist).
    #[inline]
    fn zlc_used(&self, ac: &AllocContext) -> bool {
        self.variant.zonelist_cache && self.mem.nodes.len() > 1 && ac.gfp & __GFP_THISNODE == 0
    }

    /// `zone_statistics()` (6.x; 4.3 counts the same per allocation): `n` allocations from a
    /// zone of node `zone_nid` for a zonelist whose first usable zone is on `preferred_nid`,
    /// made on a CPU of `cpu_node`.
    /// NUMA_FOREIGN is counted on the preferred zone's node, the others on the zone's
    /// (`__count_numa_events()`), each also in /proc/vmstat's sum.
    #[inline(always)]
    fn zone_statistics(&mut self, preferred_nid: u32, zone_nid: u32, cpu_node: u32, n: u64) {
        if zone_nid == preferred_nid {
            self.count_numa(zone_nid, NumaStat::Hit, n);
        } else {
            self.count_numa(zone_nid, NumaStat::Miss, n);
            self.count_numa(preferred_nid, NumaStat::Foreign, n);
        }
        let local = if zone_nid == cpu_node {
            NumaStat::Local
        } else {
            NumaStat::Other
        };
        self.count_numa(zone_nid, local, n);
    }

    /// `__count_numa_events(zone, item, n)` on a zone of node `nid`.
    #[inline(always)]
    pub fn count_numa(&mut self, nid: u32, item: NumaStat, n: u64) {
        self.stats.numastat[nid as usize][item as usize] += n;
        self.stats.events.count(item.event(), n);
    }

    /// `rmqueue_pcplist()` for up to `n` order-0 pages of zone `zi` in a row, each after
    /// `zone_watermark_fast()`: order 0 passes while NR_FREE_PAGES (without the per-CPU
    /// deltas) is above `limit` (the mark plus the lowmem reserve). Pages come from the head
    /// of `cpu`'s list; an allocation that finds it empty refills it (`rmqueue_bulk()`:
    /// `batch` pages under zone->lock, one NR_FREE_PAGES update on `cpu`) after its own
    /// check, so a refill can take the zone below the mark. Between refills NR_FREE_PAGES
    /// does not move, so every allocation from the list passes or fails together. A refill
    /// whose fallback boosted the zone ends as `rmqueue()` does (`rmqueue_boosted`).
    /// Returns how many pages were taken.
    #[inline]
    fn rmqueue_pcplist_run(
        &mut self,
        (zi, cpu, cpu_node): (usize, u32, u32),
        limit: u64,
        alloc_flags: AllocFlags,
        n: usize,
        out: &mut impl Extend<u32>,
    ) -> usize {
        let i = self.percpu.pcp.idx(zi, cpu);
        let mut taken = 0;
        while taken < n && self.mem.zones[zi].zone_page_state_free() > limit {
            let mut k = (n - taken).min(self.percpu.pcp.count[i] as usize);
            if k == 0 {
                let batch = self.percpu.pcp.batch[i];
                self.rmqueue_bulk_lock(zi, cpu_node, batch);
                let z = &mut self.mem.zones[zi];
                let got = z.rmqueue_order0_run(
                    &mut self.mem.pages,
                    batch as usize,
                    MIGRATE_MOVABLE,
                    alloc_flags,
                    &mut self.percpu.scratch,
                );
                let boosted = z.boosted_watermark;
                if got == 0 {
                    if boosted {
                        self.rmqueue_boosted(zi, alloc_flags);
                    }
                    break;
                }
                self.percpu.pcp.add_tail(i, &self.percpu.scratch);
                self.percpu.pcp.mod_free(z, zi, cpu, -(got as i64));
                if boosted {
                    self.rmqueue_boosted(zi, alloc_flags);
                }
                k = 1; // the refilling allocation; the next ones check the watermark again
            }
            self.percpu.pcp.take_head(i, k as u32, out);
            // rmqueue_pcplist(): `pcp->free_factor >>= 1` per allocation (6.2).
            let f = &mut self.percpu.pcp.free_factor[i];
            *f = f.checked_shr(k as u32).unwrap_or(0);
            taken += k;
        }
        taken
    }

    /// `rmqueue_bulk()`'s zone->lock for a refill of `n` blocks by a CPU of `cpu_node`,
    /// charged to the caller, and the scratch list emptied to receive them.
    fn rmqueue_bulk_lock(&mut self, zi: usize, cpu_node: u32, n: u32) {
        let hold = Ns::from(n) * self.costs.buddy_ns;
        let at = self.clock();
        let lock = self.zone_lock(zi, cpu_node, hold, at);
        self.charge(lock.total());
        self.percpu.scratch.clear();
    }

    /// `free_pcppages_bulk()`: `n` pages from the tails of `cpu`'s lists of zone `zi` back to
    /// the buddy lists under zone->lock, each `__free_one_page()` updating NR_FREE_PAGES on
    /// `cpu`: from the order-0 list, or the pageblock-order one first (`thp_first`, a free
    /// of such a block), until `n` pages are freed or the list is empty, then from the other
    /// (the kernel's round robin over its lists; a block counts its 512 pages, so the last
    /// one taken may free more than `n`).
    fn free_pcppages_bulk(&mut self, zi: usize, cpu: u32, n: u32, thp_first: bool) {
        let pcp = &self.percpu.pcp;
        let i = pcp.idx(zi, cpu);
        let n = n.min(pcp.pcp_count(i));
        let (order0, blocks) = {
            let (c0, nb) = (pcp.count[i], pcp.thp_blocks(i).len() as u32);
            let blocks_for = |left: u32| left.div_ceil(1 << PAGEBLOCK_ORDER).min(nb);
            if thp_first {
                let b = blocks_for(n);
                (n.saturating_sub(b << PAGEBLOCK_ORDER).min(c0), b)
            } else {
                let k = n.min(c0);
                (k, blocks_for(n - k))
            }
        };
        let scratch = &mut self.percpu.scratch;
        scratch.clear();
        self.percpu.pcp.take_tail(i, order0, scratch);
        let at = self.clock();
        let cpu_node = self.cpus.node_of(cpu);
        let hold = Ns::from(order0 + blocks) * self.costs.buddy_ns;
        let lock = self.zone_lock(zi, cpu_node, hold, at);
        self.charge(lock.total());
        let z = &mut self.mem.zones[zi];
        z.free_order0_run(&mut self.mem.pages, &self.percpu.scratch);
        self.percpu.pcp.mod_free_pages(z, zi, cpu, order0, 1);
        for _ in 0..blocks {
            let p = self
                .percpu
                .pcp
                .thp_take_tail(i)
                .expect("a block counted above");
            let z = &mut self.mem.zones[zi];
            z.free_one_page(&mut self.mem.pages, p, PAGEBLOCK_ORDER);
            self.percpu
                .pcp
                .mod_free(z, zi, cpu, 1i64 << PAGEBLOCK_ORDER);
        }
    }

    /// `free_unref_page_commit()` of `pages`, all of zone `zi`, on `cpu`: each goes to the
    /// head of the list; whenever the list reaches `nr_pcp_high()`, `free_pcppages_bulk()`
    /// returns `nr_pcp_free()` pages.
    fn free_unref_page_commit(&mut self, zi: usize, cpu: u32, pages: &[u32]) {
        for (k, &p) in pages.iter().enumerate() {
            self.mem.pages.prefetch_ahead(pages, k);
            let f = self.mem.pages.fields_mut(p);
            f.owner = crate::mm::page::NO_OWNER;
            f.flags = 0;
            f.order = 0;
        }
        let i = self.percpu.pcp.idx(zi, cpu);
        let high = self
            .percpu
            .pcp
            .nr_pcp_high(i, self.mem.zones[zi].reclaim_active);
        let mut rest = pages;
        while !rest.is_empty() {
            let pcp = &self.percpu.pcp;
            let room = high.saturating_sub(pcp.pcp_count(i)).max(1) as usize;
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.percpu.pcp.add_head(i, now);
            rest = later;
            if self.percpu.pcp.pcp_count(i) >= high {
                let n = self.percpu.pcp.nr_pcp_free(i, high);
                self.free_pcppages_bulk(zi, cpu, n, false);
            }
        }
    }

    /// `free_unref_page_list()` (4.16) / `free_unref_folios()` (6.x) on `cpu`: order-0
    /// folios freed together, zone run by zone run.
    pub fn free_unref_folios(&mut self, freed: &[u32], cpu: u32) {
        self.vmstat_update();
        let mut i = 0;
        while i < freed.len() {
            let (zi, n) = self.zone_run(&freed[i..]);
            self.free_unref_page_commit(zi, cpu, &freed[i..i + n]);
            i += n;
        }
    }

    /// `drain_all_pages(NULL)`: every CPU's lists back to the buddy lists. The kernel runs
    /// each CPU's drain there and waits for them all; the model runs them from the caller,
    /// one after another, at the caller's cost (a departure that overstates its wait).
    pub fn drain_all_pages(&mut self) {
        for zi in 0..self.mem.zones.len() {
            self.drain_all_pages_zone(zi);
        }
    }

    /// `drain_all_pages(zone)`: every CPU's list of zone `zi`, as `drain_all_pages()`.
    pub fn drain_all_pages_zone(&mut self, zi: usize) {
        for cpu in 0..self.percpu.pcp.nr_cpus as u32 {
            self.drain_pages_zone(cpu, zi);
        }
    }

    /// `drain_pages_zone(cpu, zone)`: `cpu`'s list of zone `zi` back to the buddy lists.
    pub fn drain_pages_zone(&mut self, cpu: u32, zi: usize) {
        let n = self.percpu.pcp.pcp_count(self.percpu.pcp.idx(zi, cpu));
        if n > 0 {
            self.free_pcppages_bulk(zi, cpu, n, false);
        }
    }

    /// `vmstat_update()`: once a second (`sysctl_stat_interval`) every CPU folds its deltas
    /// (`refresh_cpu_vm_stats`). Run lazily, by the first allocation or free after the
    /// second's end: nothing reads the counts between the two. Not modelled: its drain of
    /// remote nodes' per-CPU lists after three idle intervals (`drain_zone_pages`).
    #[inline]
    pub fn vmstat_update(&mut self) {
        let now = self.clock();
        if now >= self.percpu.next_vmstat_update {
            self.percpu.pcp.fold_all(&mut self.mem.zones);
            self.percpu.next_vmstat_update = (now / STAT_INTERVAL_NS + 1) * STAT_INTERVAL_NS;
        }
    }

    /// `rmqueue()` for up to `want` blocks of `ac.order` and `ac.migratetype` from zone `zi`
    /// while `__zone_watermark_ok()` passes: `rmqueue_buddy()`, one zone->lock acquisition
    /// each, or, for movable blocks of pageblock order with 6.x's lists,
    /// `rmqueue_pcplist()` ([`Kernel::rmqueue_pcplist_thp`]); returns how many. Unmovable
    /// and reclaimable order-0 pages come here too: the model's per-CPU lists are movable
    /// only (see `mm::pcp`). Each ends as `rmqueue()` does (`rmqueue_boosted`).
    #[allow(clippy::too_many_arguments)]
    fn rmqueue_blocks(
        &mut self,
        zi: usize,
        ac: &AllocContext,
        mark: u64,
        alloc_flags: AllocFlags,
        cpu: u32,
        want: usize,
        out: &mut impl Extend<u32>,
    ) -> usize {
        let (order, hz, mt) = (ac.order, ac.highest_zoneidx, ac.migratetype);
        let mut n = 0;
        let pcp_list = self.thp_pcp_allowed(order, mt);
        while n < want {
            let z = &self.mem.zones[zi];
            if !z.zone_watermark_ok(order, mark, hz) {
                break;
            }
            let page = if pcp_list {
                self.rmqueue_pcplist_thp(zi, cpu, alloc_flags)
            } else {
                self.rmqueue_buddy(zi, order, mt, alloc_flags, cpu)
            };
            let Some(page) = page else {
                break;
            };
            if order > 0 && ac.gfp & __GFP_COMP != 0 {
                self.prep_compound_folio(page, order);
            }
            out.extend(std::iter::once(page));
            n += 1;
        }
        n
    }

    /// `rmqueue_buddy()`: one block of `order` and migratetype `mt` from zone `zi`'s buddy
    /// lists under zone->lock, NR_FREE_PAGES lowered on `cpu`; None if there is none.
    fn rmqueue_buddy(
        &mut self,
        zi: usize,
        order: u32,
        mt: usize,
        alloc_flags: AllocFlags,
        cpu: u32,
    ) -> Option<u32> {
        let page = self.mem.zones[zi].__rmqueue(&mut self.mem.pages, order, mt, alloc_flags);
        if self.mem.zones[zi].boosted_watermark {
            self.rmqueue_boosted(zi, alloc_flags);
        }
        let page = page?;
        let at = self.clock();
        let cpu_node = self.cpus.node_of(cpu);
        let lock = self.zone_lock(zi, cpu_node, self.costs.buddy_ns, at);
        self.charge(lock.total());
        // __mod_zone_freepage_state(zone, -(1 << order)) on this CPU.
        let z = &mut self.mem.zones[zi];
        self.percpu.pcp.mod_free(z, zi, cpu, -(1i64 << order));
        Some(page)
    }

    /// Whether blocks of `order` and migratetype `mt` go through the per-CPU lists
    /// (`pcp_allowed_order()` for the one high order the model's lists hold, mm/pcp.rs).
    #[inline]
    fn thp_pcp_allowed(&self, order: u32, mt: usize) -> bool {
        order == PAGEBLOCK_ORDER && mt == MIGRATE_MOVABLE && self.percpu.pcp.era.high_order_lists
    }

    /// `rmqueue_pcplist()` of a pageblock-order block from `cpu`'s list of zone `zi`. An
    /// empty list is refilled first (`__rmqueue_pcplist` → `rmqueue_bulk()`: `max(batch >>
    /// order, 2)` blocks under one zone->lock, one NR_FREE_PAGES update on `cpu`); the blocks
    /// the allocation does not take stay parked on the list. None if the buddy lists had
    /// none.
    fn rmqueue_pcplist_thp(&mut self, zi: usize, cpu: u32, alloc_flags: AllocFlags) -> Option<u32> {
        let i = self.percpu.pcp.idx(zi, cpu);
        if self.percpu.pcp.thp_blocks(i).is_empty() {
            let batch = self.percpu.pcp.batch[i];
            let want = if batch > 1 {
                (batch >> PAGEBLOCK_ORDER).max(2)
            } else {
                batch
            };
            let cpu_node = self.cpus.node_of(cpu);
            self.rmqueue_bulk_lock(zi, cpu_node, want);
            let scratch = &mut self.percpu.scratch;
            let z = &mut self.mem.zones[zi];
            for _ in 0..want {
                let Some(p) = z.__rmqueue(
                    &mut self.mem.pages,
                    PAGEBLOCK_ORDER,
                    MIGRATE_MOVABLE,
                    alloc_flags,
                ) else {
                    break;
                };
                scratch.push(p);
            }
            let got = scratch.len() as i64;
            self.percpu.pcp.thp_add_tail(i, &self.percpu.scratch);
            self.percpu
                .pcp
                .mod_free(z, zi, cpu, -(got << PAGEBLOCK_ORDER));
            if self.mem.zones[zi].boosted_watermark {
                self.rmqueue_boosted(zi, alloc_flags);
            }
        }
        let page = self.percpu.pcp.thp_take_head(i)?;
        // rmqueue_pcplist(): `pcp->free_factor >>= 1` per allocation (6.2).
        self.percpu.pcp.free_factor[i] >>= 1;
        Some(page)
    }

    /// `free_unref_page_commit()` of the pageblock-order block `p` of zone `zi` on `cpu`: to
    /// the head of its list, `pcp->count` up by its pages; at `nr_pcp_high()`,
    /// `free_pcppages_bulk()` returns `nr_pcp_free()` pages, this list first. The caller
    /// has made its pages plain (tails cleared, the head's order 0) and counts PGFREE.
    fn free_unref_page_commit_thp(&mut self, zi: usize, cpu: u32, p: u32) {
        let i = self.percpu.pcp.idx(zi, cpu);
        let high = self
            .percpu
            .pcp
            .nr_pcp_high(i, self.mem.zones[zi].reclaim_active);
        self.percpu.pcp.thp_add_head(i, p);
        if self.percpu.pcp.pcp_count(i) >= high {
            let n = self.percpu.pcp.nr_pcp_free(i, high);
            self.free_pcppages_bulk(zi, cpu, n, true);
        }
    }

    /// The end of `rmqueue()` (6.6) in zone `zi`: with ALLOC_KSWAPD, a zone flagged
    /// ZONE_BOOSTED_WATERMARK by this allocation's fallback has the flag cleared and its
    /// node's kswapd woken for order 0 up to the zone's index (`wakeup_kswapd(zone, 0, 0,
    /// zone_idx(zone))`: no gfp, so a balanced node that is not boosted asks kcompactd for
    /// order 0, which is nothing).
    fn rmqueue_boosted(&mut self, zi: usize, alloc_flags: AllocFlags) {
        if alloc_flags & ALLOC_KSWAPD == 0 {
            return;
        }
        let z = &mut self.mem.zones[zi];
        z.boosted_watermark = false;
        let (nid, zone_idx) = (z.nid, z.zone_idx);
        self.wakeup_kswapd(nid, 0, zone_idx, 0);
    }

    /// `folio_put()` of a folio the task on `cpu` allocated and no longer needs:
    /// `free_unref_page()` onto `cpu`'s per-CPU list.
    pub fn free_folio(&mut self, p: u32, cpu: u32) {
        self.vmstat_update();
        let zi = self.page_zone(p);
        self.mem_cgroup_uncharge_folio(p);
        self.free_unref_page_commit(zi, cpu, &[p]);
        self.count(VmEvent::Pgfree, 1);
    }

    /// `__free_pages(page, order)` of a block allocated with migratetype `mt` by the task on
    /// `cpu`: a movable order-0 page goes to `cpu`'s per-CPU list (`free_unref_page`), and
    /// so does a block of pageblock order in a movable pageblock with 6.x's high-order
    /// lists; anything else straight back to its zone's buddy lists under zone->lock
    /// (`free_one_page`, onto its pageblock type's list), as the model's per-CPU lists hold
    /// movable pages only.
    pub fn free_pages(&mut self, p: u32, order: u32, mt: usize, cpu: u32) {
        if order == 0 && mt == MIGRATE_MOVABLE {
            self.free_folio(p, cpu);
            return;
        }
        self.vmstat_update();
        let zi = self.page_zone(p);
        // A huge page of the pool goes to the per-CPU list with 6.x's lists
        // (`free_unref_page`); anything else to the buddy lists under zone->lock.
        let to_pcp = self.thp_pcp_allowed(order, self.mem.zones[zi].get_pageblock_migratetype(p));
        if !to_pcp {
            let at = self.clock();
            let cpu_node = self.cpus.node_of(cpu);
            let lock = self.zone_lock(zi, cpu_node, self.costs.buddy_ns, at);
            self.charge(lock.total());
        }
        if order > 0 && self.mem.pages.fields(p).order > 0 {
            // A compound page (a huge page of the pool).
            self.free_tail_pages(p, order);
        }
        let f = self.mem.pages.fields_mut(p);
        f.owner = crate::mm::page::NO_OWNER;
        f.flags = 0;
        f.order = 0;
        if to_pcp {
            self.free_unref_page_commit_thp(zi, cpu, p);
        } else {
            let z = &mut self.mem.zones[zi];
            z.free_one_page(&mut self.mem.pages, p, order);
            self.percpu.pcp.mod_free(z, zi, cpu, 1i64 << order);
        }
        self.count(VmEvent::Pgfree, 1u64 << order);
    }

    /// `prep_compound_page()` (`folio_alloc()` → `prep_new_page()` with `__GFP_COMP`, 6.x) of the block of `order` at `p` just allocated: the head keeps
    /// the folio's order, every other page becomes a tail (`pg::TAIL`, its owner the head's
    /// pfn) that nothing takes for a free page or a folio of its own. Order 0: nothing to do.
    pub fn prep_compound_folio(&mut self, p: u32, order: u32) {
        if order == 0 {
            return;
        }
        self.mem.pages.fields_mut(p).order = order as u8;
        for t in p + 1..p + (1u32 << order) {
            let f = self.mem.pages.fields_mut(t);
            debug_assert_eq!(f.flags, 0, "a tail page of a block just allocated");
            f.flags = pg::TAIL;
            f.owner = p;
        }
    }

    /// `free_tail_page_prepare()` of each tail of the compound page `p` of `order`: plain
    /// pages again, for the buddy lists.
    fn free_tail_pages(&mut self, p: u32, order: u32) {
        for t in p + 1..p + (1u32 << order) {
            let f = self.mem.pages.fields_mut(t);
            debug_assert_eq!(f.flags, pg::TAIL, "pfn {t} is a tail of {p}");
            f.flags = 0;
            f.owner = crate::mm::page::NO_OWNER;
        }
    }

    /// The end of `free_unref_folios()` (6.x) for large folio `p`, reclaimed or put by the
    /// task on `cpu`: its tail pages are cleared (`free_tail_page_prepare`) and the folio
    /// goes back to its zone's buddy lists under zone->lock as one block of its order
    /// (`free_one_page()`, merging with its buddies). The caller counts PGFREE, as for
    /// [`Kernel::free_unref_folios`].
    /// A folio of pageblock order in a movable pageblock goes to `cpu`'s per-CPU list
    /// instead with 6.x's high-order lists (`free_unref_page_commit_thp`).
    /// Departure: 6.x keeps orders up to PAGE_ALLOC_COSTLY_ORDER on the per-CPU lists too
    /// (`pcp_allowed_order`); the model's lists hold order 0 and pageblock order only
    /// (`mm::pcp`), and its allocations of the orders between take blocks from the buddy
    /// lists, so frees go there alike.
    pub fn free_large_folio(&mut self, p: u32, cpu: u32) {
        let order = u32::from(self.mem.pages.fields(p).order);
        debug_assert!(order > 0);
        self.vmstat_update();
        self.free_tail_pages(p, order);
        let f = self.mem.pages.fields_mut(p);
        f.flags = 0;
        f.owner = crate::mm::page::NO_OWNER;
        f.order = 0;
        let zi = self.page_zone(p);
        let mt = self.mem.zones[zi].get_pageblock_migratetype(p);
        if self.thp_pcp_allowed(order, mt) {
            self.free_unref_page_commit_thp(zi, cpu, p);
            return;
        }
        let at = self.clock();
        let cpu_node = self.cpus.node_of(cpu);
        let lock = self.zone_lock(zi, cpu_node, self.costs.buddy_ns, at);
        self.charge(lock.total());
        let z = &mut self.mem.zones[zi];
        z.free_one_page(&mut self.mem.pages, p, order);
        self.percpu.pcp.mod_free(z, zi, cpu, 1i64 << order);
    }

    /// `wake_all_kswapds()`: wake the kswapd of each node in the zonelist (of the
    /// nodemask's nodes) once.
    pub fn wake_all_kswapds(&mut self, ac: &AllocContext) {
        let list = ac.nid as usize * MAX_NR_ZONES + ac.highest_zoneidx;
        for i in 0..self.mem.kswapd_wake_nodes[list].len() {
            let nid = self.mem.kswapd_wake_nodes[list][i];
            if ac.nodemask != 0 && ac.nodemask & (1 << nid) == 0 {
                continue;
            }
            self.wakeup_kswapd(nid, ac.order, ac.highest_zoneidx, ac.gfp);
        }
    }

    /// `should_compact_retry()` (6.6) after a compaction that gave `compact_result`: an
    /// order > 0 allocation retries when compaction was skipped for lack of free pages and
    /// reclaim could fix that (`compaction_zonelist_suitable`), when it succeeded but the
    /// allocation still failed (up to MAX_COMPACT_RETRIES times, a quarter of that for a
    /// costly order), or otherwise at the next priority, down to sync-light for a costly
    /// order and sync-full for the others.
    pub fn should_compact_retry(
        &self,
        ac: &AllocContext,
        compact_result: CompactResult,
        compact_priority: &mut CompactPriority,
        compaction_retries: &mut u32,
    ) -> bool {
        if ac.order == 0 {
            return false;
        }
        let costly = ac.order > PAGE_ALLOC_COSTLY_ORDER;
        if compact_result == CompactResult::Skipped {
            return self.compaction_zonelist_suitable(ac);
        }
        if compact_result == CompactResult::Success {
            let max_retries = if costly {
                MAX_COMPACT_RETRIES / 4
            } else {
                MAX_COMPACT_RETRIES
            };
            *compaction_retries += 1;
            if *compaction_retries <= max_retries {
                return true;
            }
        }
        let min_priority = if costly {
            MIN_COMPACT_COSTLY_PRIORITY
        } else {
            MIN_COMPACT_PRIORITY
        };
        if *compact_priority > min_priority {
            *compact_priority = match *compact_priority {
                CompactPriority::Async => CompactPriority::SyncLight,
                _ => CompactPriority::SyncFull,
            };
            *compaction_retries = 0;
            return true;
        }
        false
    }

    /// `should_reclaim_retry()`: retry while any zone could reach its min watermark with
    /// everything reclaimable (free pages read with `zone_page_state_snapshot`), and no more than MAX_RECLAIM_RETRIES passes in a row made no
    /// progress (costly orders always count as no progress).
    pub fn should_reclaim_retry(
        &self,
        ac: &AllocContext,
        progress: bool,
        no_progress_loops: &mut u32,
    ) -> bool {
        if progress && ac.order <= PAGE_ALLOC_COSTLY_ORDER {
            *no_progress_loops = 0;
        } else {
            *no_progress_loops += 1;
        }
        if *no_progress_loops > MAX_RECLAIM_RETRIES {
            return false;
        }
        let hz = ac.highest_zoneidx;
        self.mem.zonelists[ac.nid as usize].iter().any(|&zi| {
            let z = &self.mem.zones[zi];
            if !zone_usable(ac, z) {
                return false;
            }
            let free = z.zone_page_state_snapshot_free();
            let available = (self.zone_reclaimable_pages(zi) + free) as i64;
            z.watermark_ok(ac.order, z.wmark_pages(WMARK_MIN), hz, available)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::zone::{MIGRATE_UNMOVABLE, NR_PAGE_ORDERS};
    use crate::testing::kernel;

    #[test]
    fn a_kernel_allocation_claims_pageblocks_and_movable_ones_keep_to_theirs() {
        let mut k = kernel(64, 0);
        let nr_blocks = k.mem.zones[0].pageblock_mt.len() as u64;
        // The first unmovable page: no unmovable block is free, so it falls back to the
        // largest movable one (max order) and takes both of its pageblocks.
        let unmovable = AllocContext::new(GFP_KERNEL, 0, 0);
        let p = k.get_page(&unmovable, ALLOC_WMARK_LOW, 0).unwrap();
        let z = &k.mem.zones[0];
        assert_eq!(z.nr_pageblock_mt, [2, nr_blocks - 2, 0]);
        assert_eq!(z.get_pageblock_migratetype(p), MIGRATE_UNMOVABLE);
        // Movable pages (through the per-CPU list) come from movable pageblocks only.
        let movable = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        let mut pages = Vec::new();
        k.get_page_from_freelist(&movable, ALLOC_WMARK_LOW, 0, 2000, &mut pages);
        assert_eq!(pages.len(), 2000);
        let z = &k.mem.zones[0];
        assert!(pages
            .iter()
            .all(|&q| z.get_pageblock_migratetype(q) == MIGRATE_MOVABLE));
        // More unmovable pages come from the claimed pageblocks, not new ones.
        let more: Vec<u32> = (0..100)
            .map(|_| k.get_page(&unmovable, ALLOC_WMARK_LOW, 0).unwrap())
            .collect();
        assert_eq!(k.mem.zones[0].nr_pageblock_mt, [2, nr_blocks - 2, 0]);
        // Freed, they go back to the unmovable lists and merge into the max-order block;
        // the pageblocks stay unmovable (nothing gives them back).
        for q in std::iter::once(p).chain(more) {
            k.free_pages(q, 0, MIGRATE_UNMOVABLE, 0);
        }
        let z = &k.mem.zones[0];
        assert_eq!(z.nr_free_mt[MIGRATE_UNMOVABLE][NR_PAGE_ORDERS - 1], 1);
        assert_eq!(z.nr_pageblock_mt, [2, nr_blocks - 2, 0]);
        assert_eq!(k.check_lists(), Ok(()));
        assert_eq!(k.check_conservation(2000), Ok(()));
    }

    /// Zone `normal` with every page taken, then 8 pageblocks made unmovable and freed but
    /// for one page each: 8 · 511 free pages, none movable, no whole pageblock.
    fn normal_unmovable_pageblocks(k: &mut Kernel, normal: usize) {
        use crate::mm::zone::PAGEBLOCK_NR_PAGES;
        let n = k.mem.zones[normal].managed_pages;
        let start = k.mem.zones[normal].start_pfn;
        for _ in 0..n {
            k.mem.zones[normal].rmqueue(&mut k.mem.pages, 0).unwrap();
        }
        for b in 0..8 {
            let first = start + b * PAGEBLOCK_NR_PAGES;
            k.mem.zones[normal].set_pageblock_migratetype(first, MIGRATE_UNMOVABLE);
            for p in first + 1..first + PAGEBLOCK_NR_PAGES {
                k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
            }
        }
    }

    #[test]
    fn the_fast_path_leaves_normal_unfragmented_while_dma32_can_serve() {
        use crate::mm::zone::{ZONE_DMA32, ZONE_NORMAL};
        use crate::testing::zone_of;
        let mut k = kernel(64, 16);
        let (dma32, normal) = (zone_of(&k, ZONE_DMA32), zone_of(&k, ZONE_NORMAL));
        normal_unmovable_pageblocks(&mut k, normal);
        let movable = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        assert_eq!(
            k.alloc_flags_nofragment(&movable),
            ALLOC_NOFRAGMENT | ALLOC_KSWAPD
        );
        assert!(k.mem.zones[normal].zone_watermark_ok(
            0,
            k.mem.zones[normal].wmark_pages(WMARK_LOW),
            ZONE_NORMAL
        ));
        // The fast path (NOFRAGMENT): Normal's fallbacks are below pageblock order, refused;
        // DMA32 serves.
        let p = k
            .get_page(&movable, ALLOC_WMARK_LOW | ALLOC_NOFRAGMENT, 0)
            .unwrap();
        assert_eq!(k.page_zone(p), dma32);
        assert_eq!(k.mem.zones[normal].nr_pageblock_mt[MIGRATE_UNMOVABLE], 8);
        // Without it (the slow path's flags), Normal falls back into an unmovable block.
        k.drain_all_pages();
        let q = k.get_page(&movable, ALLOC_WMARK_MIN, 0).unwrap();
        assert_eq!(k.page_zone(q), normal);
        assert_eq!(k.check_lists(), Ok(()));
    }

    /// Two nodes of 64 MiB, node 0 with 32 MiB of DMA32, the zonelist cache as `zlc` says;
    /// node 0's Normal below its low watermark and its DMA32 with half its pages free, all
    /// order 0: a node-0 allocation of order 0 can be served locally (DMA32), one of order 9
    /// only by node 1. Returns the kernel and node 0's DMA32 zone.
    fn two_nodes_local_dma32_fragmented(zlc: bool) -> (Kernel, usize) {
        use crate::mm::zone::{ZONE_DMA32, ZONE_NORMAL};
        use crate::testing::{fill_zone, kernel_of, zone_of};
        let mut k = kernel_of(&format!(
            "[machine]\nnodes = 2\ncpus_per_node = 1\nmemory_mb_per_node = 64\ndma32_mb = 32\n\
             [variant]\nzonelist_cache = {zlc}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
        ));
        let (dma32, normal) = (zone_of(&k, ZONE_DMA32), zone_of(&k, ZONE_NORMAL));
        let low = k.mem.zones[normal].wmark_pages(WMARK_LOW);
        fill_zone(&mut k, normal, low / 2, 0);
        let n = k.mem.zones[dma32].managed_pages;
        let start = k.mem.zones[dma32].start_pfn;
        for _ in 0..n {
            k.mem.zones[dma32].rmqueue(&mut k.mem.pages, 0).unwrap();
        }
        for p in (start..start + n as u32).step_by(2) {
            k.mem.zones[dma32].free_one_page(&mut k.mem.pages, p, 0);
        }
        (k, dma32)
    }

    #[test]
    fn with_the_zonelist_cache_a_failed_thp_sends_order_0_allocations_to_the_remote_node() {
        let thp = AllocContext::new(GFP_TRANSHUGE_LIGHT, 9, 0);
        let movable = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        for zlc in [true, false] {
            let (mut k, dma32) = two_nodes_local_dma32_fragmented(zlc);
            // The huge page: node 0's zones fail its watermark check, node 1 serves it.
            let huge = k.get_page(&thp, ALLOC_WMARK_LOW, 0).unwrap();
            assert_eq!(k.mem.zones[k.page_zone(huge)].nid, 1);
            assert_eq!(k.mem.zlc[0].full, [zlc, zlc, false]);
            // An order-0 page: Normal fails; with the cache DMA32 is skipped as full.
            let p = k.get_page(&movable, ALLOC_WMARK_LOW, 0).unwrap();
            let remote = k.mem.zones[k.page_zone(p)].nid == 1;
            assert_eq!(remote, zlc);
            assert_eq!(k.page_zone(p) == dma32, !zlc);
            let ev = &k.stats.events;
            // The huge page and (with the cache) the order-0 page missed node 0.
            assert_eq!(ev.get(VmEvent::NumaMiss), 1 + u64::from(zlc));
            assert_eq!(ev.get(VmEvent::NumaForeign), ev.get(VmEvent::NumaMiss));
            assert_eq!(ev.get(VmEvent::NumaHit), u64::from(!zlc));
            assert_eq!(ev.get(VmEvent::NumaOther), ev.get(VmEvent::NumaMiss));
            assert_eq!(ev.get(VmEvent::NumaLocal), ev.get(VmEvent::NumaHit));
            // A second later the cache is forgotten at the first failure: DMA32 serves.
            k.now += 1_000_000_001;
            let q = k.get_page(&movable, ALLOC_WMARK_LOW, 0).unwrap();
            assert_eq!(k.page_zone(q), dma32);
            assert_eq!(k.check_lists(), Ok(()));
        }
    }

    /// Two nodes of 64 MiB, node 0 with 32 MiB of DMA32, `variant.alloc_nofragment` as
    /// `nofragment` says; node 0's Normal has 8 pageblocks made unmovable and freed but for
    /// one page each (8 · 511 free pages above its low watermark, none movable, no whole
    /// pageblock); node 0's DMA32 is free unless `dma32_full`.
    fn two_nodes_local_normal_unmovable(nofragment: bool, dma32_full: bool) -> Kernel {
        use crate::mm::zone::{ZONE_DMA32, ZONE_NORMAL};
        use crate::testing::{fill_zone, kernel_of, zone_of};
        let mut k = kernel_of(&format!(
            "[machine]\nnodes = 2\ncpus_per_node = 1\nmemory_mb_per_node = 64\ndma32_mb = 32\n\
             [variant]\nalloc_nofragment = {nofragment}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
        ));
        let (dma32, normal) = (zone_of(&k, ZONE_DMA32), zone_of(&k, ZONE_NORMAL));
        normal_unmovable_pageblocks(&mut k, normal);
        if dma32_full {
            fill_zone(&mut k, dma32, 0, 0);
        }
        k
    }

    #[test]
    fn before_5_0_a_movable_allocation_steals_in_its_first_zone_and_never_goes_remote_first() {
        use crate::mm::zone::{ZONE_DMA32, ZONE_NORMAL};
        use crate::testing::zone_of;
        let movable = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        for (nofragment, dma32_full) in [(true, false), (false, false), (true, true), (false, true)]
        {
            let mut k = two_nodes_local_normal_unmovable(nofragment, dma32_full);
            let (dma32, normal) = (zone_of(&k, ZONE_DMA32), zone_of(&k, ZONE_NORMAL));
            let flags = k.alloc_flags_nofragment(&movable);
            assert_eq!(flags & ALLOC_NOFRAGMENT != 0, nofragment);
            assert!(k.mem.zones[normal].zone_watermark_ok(
                0,
                k.mem.zones[normal].wmark_pages(WMARK_LOW),
                ZONE_NORMAL
            ));
            let p = k.get_page(&movable, ALLOC_WMARK_LOW | flags, 0).unwrap();
            // 5.0+ with DMA32 free: DMA32 serves and Normal's unmovable blocks stay whole.
            // Before 5.0, or with DMA32 full (the walk meets node 1's Normal, drops
            // ALLOC_NOFRAGMENT and starts again): Normal falls back and claims an unmovable
            // block (511 free pages of 512, more than half). Node 1 is never reached.
            let spreads = nofragment && !dma32_full;
            assert_eq!(k.page_zone(p), if spreads { dma32 } else { normal });
            let unmovable = k.mem.zones[normal].nr_pageblock_mt[MIGRATE_UNMOVABLE];
            assert_eq!(unmovable == 8, spreads, "unmovable pageblocks {unmovable}");
            let ev = &k.stats.events;
            assert_eq!(
                (ev.get(VmEvent::NumaHit), ev.get(VmEvent::NumaMiss)),
                (1, 0)
            );
            assert_eq!(k.check_lists(), Ok(()));
        }
    }

    #[test]
    fn a_walk_the_zonelist_cache_left_empty_handed_is_made_again_without_it() {
        let (mut k, dma32) = two_nodes_local_dma32_fragmented(true);
        // Every zone that could serve was found full less than a second ago.
        k.mem.zlc[0].zlc_mark_zone_full(1);
        k.mem.zlc[0].zlc_mark_zone_full(2);
        let movable = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        let p = k.get_page(&movable, ALLOC_WMARK_LOW, 0).unwrap();
        assert_eq!(k.page_zone(p), dma32);
        assert_eq!(k.stats.events.get(VmEvent::NumaHit), 1);
        // __GFP_THISNODE walks the node's own zonelist, which has no cache.
        let thisnode = AllocContext::new(GFP_HIGHUSER_MOVABLE | __GFP_THISNODE, 0, 0);
        k.mem.zlc[0].zlc_mark_zone_full(1);
        let q = k.get_page(&thisnode, ALLOC_WMARK_LOW, 0).unwrap();
        assert_eq!(k.page_zone(q), dma32);
    }
}

#[cfg(test)]
#[path = "pcp_high_order_tests.rs"]
mod pcp_high_order_tests;
