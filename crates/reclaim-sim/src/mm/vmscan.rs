//! Page reclaim: mm/vmscan.c of Linux 6.x (read at ~6.14, classic LRU, MGLRU off); its kswapd
//! half is `mm::kswapd`. The call chains are processes that read as the kernel's do:
//! `kswapd` → `balance_pgdat` → `kswapd_shrink_node` → `shrink_node`, and
//! `try_to_free_pages` → `do_try_to_free_pages` →
//! `shrink_zones` → `shrink_node` → `shrink_node_memcgs` → `shrink_lruvec` → `shrink_list` →
//! `shrink_inactive_list` → `shrink_folio_list`. A reclaimer ends its time slice after every
//! SWAP_CLUSTER_MAX batch (`cond_resched`), so other tasks run, allocate and contend for
//! `lru_lock` between two batches, as they do on a real machine; the kernel's own
//! `cond_resched()` is once per round of `shrink_lruvec`.
//!
//! Global and memcg reclaim (`try_to_free_mem_cgroup_pages`, the target cgroup's lruvecs
//! only) of file and anon folios; `get_scan_count` balances the two by `swappiness` and the
//! decayed costs. What becomes of each isolated folio is `shrink_folio_list`
//! (`mm::vmscan_folio`): freed, kept, activated, or written to swap. Anon evictions leave
//! workingset shadows (`mm::workingset`).
//!
//! Dirty page-cache folios (seed 001): `shrink_folio_list` counts the dirty and writeback
//! folios it meets (`sc->nr`, file folios only: swap-out's own writeback is throttled by the
//! device's tags instead), `shrink_inactive_list` wakes the flushers when every folio it
//! took was dirty and not queued for I/O, and kswapd's `shrink_node` flags the node
//! PGDAT_WRITEBACK / PGDAT_DIRTY and throttles itself (`reclaim_throttle(WRITEBACK)`) when
//! it met folios it had marked for immediate reclaim still under writeback.
//!
//! Reclaim for an order > 0 request stops where the kernel hands over to compaction
//! (`compaction_ready` in `shrink_zones`, `should_continue_reclaim` in `shrink_node`),
//! which `mm::compaction` does.
//!
//! The older waits, `congestion_wait` / `wait_iff_congested` (2.6.36–2.6.37, seed 003's
//! patches 7 and 8), replace kswapd's throttling with `variant.reclaim_wait`
//! (mm/congestion.rs).
//!
//! Left out so far (each noted where it would act): direct reclaim's CONGESTED, ISOLATED
//! and NOPROGRESS throttling, slab shrinkers, memory.min/low protection, the retry with
//! `force_deactivate`.

use crate::engine::{HZ, JIFFY};
use crate::hw::block::BLK_RW_ASYNC;
use crate::kernel::{Kernel, MAX_RECLAIM_RETRIES};
use crate::mm::backing_dev::{PGDAT_DIRTY, PGDAT_WRITEBACK};
use crate::mm::compaction::compaction_ready;
use crate::mm::congestion::{reclaim_congestion_nap, wait_iff_congested, Napper};
use crate::mm::gfp::{gfp_zone, Gfp, __GFP_DIRECT_RECLAIM, __GFP_FS};
use crate::mm::lru::*;
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::{folio_nr_pages, pg, ListId};
use crate::mm::page_alloc::PAGE_ALLOC_COSTLY_ORDER;
use crate::mm::vma::vm;
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{MAX_NR_ZONES, WMARK_MIN, ZONE_NORMAL};
use crate::process::{
    cond_resched, psi_memstall_enter, psi_memstall_leave, schedule, schedule_timeout, sleep_until,
    Cx,
};

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: i32 = 12;
/// HZ/10: the naps of direct reclaim and kswapd in 2.6.36's `do_try_to_free_pages()` and
/// `balance_pgdat()` (`congestion_wait(BLK_RW_ASYNC, HZ/10)`).
pub const CONGESTION_NAP: crate::engine::Ns = crate::engine::JIFFY * (crate::engine::HZ / 10);
const DEACTIVATE_ANON: u8 = 1;
const DEACTIVATE_FILE: u8 = 2;

/// `struct scan_control`.
#[derive(Clone, Debug)]
pub struct ScanControl {
    /// How many pages shrink_list() should reclaim.
    pub nr_to_reclaim: u64,
    /// Allocation order.
    pub order: u32,
    /// The highest zone to reclaim from.
    pub reclaim_idx: usize,
    /// Scan (total_size >> priority) pages at once.
    pub priority: i32,
    /// `sc->may_writepage`: reclaim may write dirty folios (`pageout()`). Off only for
    /// kswapd's boosted reclaim (`balance_pgdat`, 5.0+); the model has no laptop mode.
    pub may_writepage: bool,
    /// `sc->may_swap`: reclaim may scan anon folios (`get_scan_count`). Off only for
    /// kswapd's boosted reclaim.
    pub may_swap: bool,
    /// `sc->nodemask`: the nodes direct reclaim's zonelist walk may shrink (an MPOL_BIND
    /// allocation's), one bit per node; 0 is the kernel's NULL, every node.
    pub nodemask: u64,
    /// `sc->may_unmap`: reclaim may unmap mapped folios (`shrink_folio_list`). Off only
    /// for node reclaim without RECLAIM_UNMAP (`__node_reclaim`).
    pub may_unmap: bool,
    /// DEACTIVATE_ANON | DEACTIVATE_FILE: may the active lists be aged.
    pub may_deactivate: u8,
    /// An active list was not aged because `may_deactivate` said no. The kernel's
    /// `do_try_to_free_pages` then retries with `force_deactivate` when it reclaimed
    /// nothing; that retry is not modelled.
    pub skipped_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    /// Reclaim on behalf of kswapd (counters `*_kswapd`) rather than direct reclaim.
    pub kswapd: bool,
    /// The cgroup whose limit is reclaimed for (memcg reclaim), or the root (global).
    pub target_mem_cgroup: u16,
    /// Incremented by the number of inactive pages that were scanned.
    pub nr_scanned: u64,
    /// Number of pages freed so far during a call to shrink_zones().
    pub nr_reclaimed: u64,
    /// `sc->nr`: what `shrink_folio_list` met in the current `shrink_node` (file folios).
    pub nr: ReclaimNr,
    /// 3.2's `shrink_page_list()` out-parameter `nr_writeback` for the last batch: its
    /// folios under writeback, page cache and swap, in pages (counted only with
    /// `variant.writeback_isolated_wait`, the one reader).
    pub batch_nr_writeback: u64,
    /// The zone (index into `mem.zones`) most of the last batch's writeback pages came
    /// from, the zone of 3.2's `wait_iff_congested(zone, …)` (its LRU was per zone).
    pub batch_writeback_zone: Option<usize>,
    /// A zone was skipped for a costly order because compaction could run there
    /// (`compaction_ready`): direct reclaim stops.
    pub compaction_ready: bool,
    /// `sc->lumpy_reclaim_mode` (2.6.36–2.6.37, `variant.high_order_reclaim`): whether
    /// this batch isolates whole blocks and ignores references, and whether it waits on
    /// writeback (`LUMPY_MODE_SYNC`). Always `None` with `"compaction"`.
    pub lumpy_reclaim_mode: LumpyMode,
}

/// `enum lumpy_mode` (2.6.37; 2.6.36 had a bool and `enum pageout_io` for the sync pass).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LumpyMode {
    /// `LUMPY_MODE_NONE`: order-0 reclaim.
    #[default]
    None,
    /// `LUMPY_MODE_ASYNC`: lumpy isolation, no waiting.
    Async,
    /// `LUMPY_MODE_SYNC`: the second pass, waiting on writeback.
    Sync,
}

/// `sc->nr` and `struct reclaim_stat`: the dirty and writeback folios reclaim met.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReclaimNr {
    /// Dirty or under writeback.
    pub dirty: u64,
    /// Dirty, not under writeback (no I/O queued).
    pub unqueued_dirty: u64,
    /// Under writeback with PG_reclaim (marked before, still not written).
    pub congested: u64,
    /// Under writeback.
    pub writeback: u64,
    /// Under writeback, PG_reclaim, on a PGDAT_WRITEBACK node, met by kswapd.
    pub immediate: u64,
    pub taken: u64,
    pub file_taken: u64,
}

impl ReclaimNr {
    /// Add a batch's counts.
    pub fn add(&mut self, o: &ReclaimNr) {
        self.dirty += o.dirty;
        self.unqueued_dirty += o.unqueued_dirty;
        self.congested += o.congested;
        self.writeback += o.writeback;
        self.immediate += o.immediate;
        self.taken += o.taken;
        self.file_taken += o.file_taken;
    }
}

impl ScanControl {
    pub fn new(kswapd: bool, nr_to_reclaim: u64, order: u32, reclaim_idx: usize) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            order,
            reclaim_idx,
            priority: DEF_PRIORITY,
            may_writepage: true,
            may_swap: true,
            may_unmap: true,
            nodemask: 0,
            may_deactivate: 0,
            skipped_deactivate: false,
            cache_trim_mode: false,
            compaction_ready: false,
            lumpy_reclaim_mode: LumpyMode::None,
            file_is_tiny: false,
            kswapd,
            target_mem_cgroup: ROOT_MEM_CGROUP,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr: ReclaimNr::default(),
            batch_nr_writeback: 0,
            batch_writeback_zone: None,
        }
    }
}

/// A batch isolated by `shrink_inactive_list` (the kernel's `folio_list`).
#[derive(Clone, Debug)]
pub struct Isolated {
    pages: [u32; SWAP_CLUSTER_MAX as usize],
    n: usize,
    lru: usize,
    nr_scanned: u64,
    nr_taken: u64,
}

impl Isolated {
    /// The folios taken.
    pub fn pages(&self) -> &[u32] {
        &self.pages[..self.n]
    }

    /// Pages scanned to take them.
    pub fn nr_scanned(&self) -> u64 {
        self.nr_scanned
    }

    /// Pages taken (`nr_taken`: the folios' `folio_nr_pages()`).
    pub fn nr_taken(&self) -> u64 {
        self.nr_taken
    }

    /// The list they were taken from.
    pub fn lru(&self) -> usize {
        self.lru
    }

    /// An empty batch for folios isolated from `lru`.
    fn empty(lru: usize) -> Isolated {
        Isolated {
            pages: [0; SWAP_CLUSTER_MAX as usize],
            n: 0,
            lru,
            nr_scanned: 0,
            nr_taken: 0,
        }
    }
}

// --- direct reclaim --------------------------------------------------------------------------

/// `try_to_free_pages()`: direct reclaim for an allocation of `order` with `gfp` on node
/// `nid`'s zonelist, the nodes of `nodemask` only (`sc->nodemask`; 0: every node), after
/// `throttle_direct_reclaim()`. Returns the pages reclaimed.
pub async fn try_to_free_pages(cx: &Cx, nid: u32, order: u32, gfp: Gfp, nodemask: u64) -> u64 {
    let reclaim_idx = gfp_zone(gfp);
    let mut sc = ScanControl::new(false, SWAP_CLUSTER_MAX, order, reclaim_idx);
    sc.nodemask = nodemask;
    throttle_direct_reclaim(cx, nid, reclaim_idx, gfp).await;
    cx.k().trace_direct_reclaim_begin(order, gfp);
    let nr_reclaimed = do_try_to_free_pages(cx, nid, &mut sc).await;
    cx.k().trace_direct_reclaim_end(nr_reclaimed);
    nr_reclaimed
}

// --- node reclaim ----------------------------------------------------------------------------

/// `vm.zone_reclaim_mode` bits (`node_reclaim_mode`): reclaim the node before going off it,
/// and may that reclaim write dirty pages and unmap mapped ones.
pub const RECLAIM_ZONE: u32 = 1 << 0;
pub const RECLAIM_WRITE: u32 = 1 << 1;
pub const RECLAIM_UNMAP: u32 = 1 << 2;
/// `NODE_RECLAIM_PRIORITY`: node reclaim scans 1/16th of the node's lists first.
pub const NODE_RECLAIM_PRIORITY: i32 = 4;
/// `RECLAIM_DISTANCE` (`node_reclaim_distance`'s default): a zone farther than this from
/// the preferred zone's node is never node-reclaimed (`zone_allows_reclaim()`).
pub const RECLAIM_DISTANCE: u32 = 30;

/// `node_reclaim()`'s return codes (mm/internal.h: NODE_RECLAIM_NOSCAN -2, _FULL -1,
/// _SOME 0, _SUCCESS 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeReclaim {
    /// Did not scan: the allocation may not block, another task holds the node's
    /// PGDAT_RECLAIM_LOCKED, or the node has CPUs and is not the allocating CPU's.
    Noscan,
    /// Scanned nothing: too little reclaimable page cache on the node.
    Full,
    /// Scanned, but reclaimed fewer than the allocation's pages.
    Some,
    /// Reclaimed at least the allocation's pages.
    Success,
}

impl Kernel {
    /// `node_reclaim_enabled()`: any bit of `vm.zone_reclaim_mode`.
    #[inline]
    pub fn node_reclaim_enabled(&self) -> bool {
        self.sysctl.zone_reclaim_mode & (RECLAIM_ZONE | RECLAIM_WRITE | RECLAIM_UNMAP) != 0
    }

    /// `zone_allows_reclaim(local_zone, zone)` for zones of nodes `local_nid` and `nid`:
    /// within `node_reclaim_distance` (RECLAIM_DISTANCE) of each other.
    #[inline]
    pub fn zone_allows_reclaim(&self, local_nid: u32, nid: u32) -> bool {
        let nodes = self.mem.nodes.len();
        self.mem.node_distance[local_nid as usize * nodes + nid as usize] <= RECLAIM_DISTANCE
    }

    /// `node_pagecache_reclaimable()` (6.6): the node's page-cache pages node reclaim may
    /// take: with RECLAIM_UNMAP all of NR_FILE_PAGES, else the unmapped ones
    /// (`node_unmapped_file_pages()`: the file LRU pages less NR_FILE_MAPPED, which is 0
    /// in the model: no page-cache page is mapped), less NR_FILE_DIRTY without
    /// RECLAIM_WRITE.
    pub fn node_pagecache_reclaimable(&self, nid: u32) -> u64 {
        let mode = self.sysctl.zone_reclaim_mode;
        let reclaimable = if mode & RECLAIM_UNMAP != 0 {
            self.mem.nodes[nid as usize].nr_file_pages
        } else {
            let sizes = self.target_lruvec_sizes(nid, ROOT_MEM_CGROUP);
            sizes
                .iter()
                .map(|z| z[LRU_INACTIVE_FILE] + z[LRU_ACTIVE_FILE])
                .sum()
        };
        let delta = if mode & RECLAIM_WRITE == 0 {
            self.wb.nodes[nid as usize].nr_dirty
        } else {
            0
        };
        reclaimable - delta.min(reclaimable)
    }

    /// `node_reclaim(pgdat, gfp, order)`'s checks (6.6), made for a task on a CPU of
    /// `cpu_node`: NODE_RECLAIM_FULL when the node's reclaimable page cache is no more than
    /// `min_unmapped_pages` (and its reclaimable slab, which the model has none of, no more
    /// than `min_slab_pages`); NODE_RECLAIM_NOSCAN without `__GFP_DIRECT_RECLAIM`, for a
    /// node other than the CPU's (every node of the model has CPUs), or when
    /// PGDAT_RECLAIM_LOCKED is already set. Otherwise the bit is set (`test_and_set_bit`)
    /// and NODE_RECLAIM_SUCCESS returned, meaning "scan": the caller runs
    /// [`node_reclaim_scan`], which clears it.
    pub fn node_reclaim_check(&mut self, nid: u32, gfp: Gfp, cpu_node: u32) -> NodeReclaim {
        let pgdat = &self.mem.nodes[nid as usize];
        if self.node_pagecache_reclaimable(nid) <= pgdat.min_unmapped_pages {
            return NodeReclaim::Full;
        }
        if gfp & __GFP_DIRECT_RECLAIM == 0 {
            return NodeReclaim::Noscan;
        }
        if nid != cpu_node {
            return NodeReclaim::Noscan;
        }
        let pgdat = &mut self.mem.nodes[nid as usize];
        if pgdat.reclaim_locked {
            return NodeReclaim::Noscan;
        }
        pgdat.reclaim_locked = true;
        NodeReclaim::Success
    }
}

/// The rest of `node_reclaim()` (6.6) once [`Kernel::node_reclaim_check`] has taken the
/// node's PGDAT_RECLAIM_LOCKED: `__node_reclaim()`, the bit cleared, and
/// PGSCAN_ZONE_RECLAIM_FAILED (`zone_reclaim_failed`) counted when it reclaimed fewer than
/// the allocation's pages. Returns NODE_RECLAIM_SOME or NODE_RECLAIM_SUCCESS.
pub async fn node_reclaim_scan(cx: &Cx, nid: u32, gfp: Gfp, order: u32) -> NodeReclaim {
    let ok = __node_reclaim(cx, nid, gfp, order).await;
    let mut k = cx.k();
    k.mem.nodes[nid as usize].reclaim_locked = false;
    if !ok {
        k.count(VmEvent::PgscanZoneReclaimFailed, 1);
        return NodeReclaim::Some;
    }
    NodeReclaim::Success
}

/// `__node_reclaim()` (6.6): reclaim at least the allocation's 2^order pages from node
/// `nid` alone, `max(nr_pages, SWAP_CLUSTER_MAX)` asked for, `shrink_node()` at
/// NODE_RECLAIM_PRIORITY and then at each higher priority down to 0 until they are
/// reclaimed, writing dirty pages only with RECLAIM_WRITE and unmapping mapped ones only
/// with RECLAIM_UNMAP; in a memory stall, between `mm_vmscan_node_reclaim_begin` and
/// `_end`. Its scans count as direct reclaim's (`pgscan_direct`, `pgsteal_direct`; no
/// allocstall). Returns whether the allocation's pages were reclaimed.
async fn __node_reclaim(cx: &Cx, nid: u32, gfp: Gfp, order: u32) -> bool {
    let nr_pages = 1u64 << order;
    let mode = cx.k().sysctl.zone_reclaim_mode;
    let mut sc = ScanControl::new(false, nr_pages.max(SWAP_CLUSTER_MAX), order, gfp_zone(gfp));
    sc.priority = NODE_RECLAIM_PRIORITY;
    sc.may_writepage = mode & RECLAIM_WRITE != 0;
    sc.may_unmap = mode & RECLAIM_UNMAP != 0;
    cx.k().trace_node_reclaim_begin(nid, order, gfp);
    cond_resched(cx).await;
    let pflags = psi_memstall_enter(cx);
    let reclaimable = {
        let k = cx.k();
        k.node_pagecache_reclaimable(nid) > k.mem.nodes[nid as usize].min_unmapped_pages
    };
    if reclaimable {
        loop {
            shrink_node(cx, nid, &mut sc).await;
            if sc.nr_reclaimed >= nr_pages || sc.priority == 0 {
                break;
            }
            sc.priority -= 1;
        }
    }
    psi_memstall_leave(cx, pflags);
    cx.k().trace_node_reclaim_end(sc.nr_reclaimed);
    sc.nr_reclaimed >= nr_pages
}

/// `try_to_free_mem_cgroup_pages()`: memcg reclaim of `memcg` for `nr_pages` (at least
/// SWAP_CLUSTER_MAX) by a task charging it, from the cgroup's own lruvecs on the nodes of
/// the task's zonelist, every zone eligible. No throttling, no allocstall, no global
/// pgscan/pgsteal: the cgroup's events count it. Returns the pages reclaimed.
pub async fn try_to_free_mem_cgroup_pages(cx: &Cx, memcg: u16, nr_pages: u64) -> u64 {
    let mut sc = ScanControl::new(false, nr_pages.max(SWAP_CLUSTER_MAX), 0, MAX_NR_ZONES - 1);
    sc.target_mem_cgroup = memcg;
    do_try_to_free_pages(cx, cx.node, &mut sc).await
}

/// `throttle_direct_reclaim()`: if the node of the first zonelist zone ≤ ZONE_NORMAL does
/// not allow direct reclaim, count PGSCAN_DIRECT_THROTTLE and sleep on its
/// `pfmemalloc_wait` until `allow_direct_reclaim()` holds: with `__GFP_FS` without a timeout
/// (`wait_event_killable()`), without it for at most HZ (`wait_event_interruptible_timeout()`:
/// the caller may hold a filesystem lock kswapd waits for). The kthread exemption and
/// fatal signals do not arise here.
async fn throttle_direct_reclaim(cx: &Cx, nid: u32, highest_zoneidx: usize, gfp: Gfp) {
    let pgdat = {
        let mut k = cx.k();
        let first = k.mem.zonelists[nid as usize].iter().find(|&&zi| {
            let idx = k.mem.zones[zi].zone_idx;
            idx <= highest_zoneidx && idx <= ZONE_NORMAL
        });
        let Some(&zi) = first else {
            return;
        };
        let pgdat = k.mem.zones[zi].nid;
        if k.allow_direct_reclaim(pgdat) {
            return;
        }
        k.count(VmEvent::PgscanDirectThrottle, 1);
        pgdat
    };
    // The time left of a `!__GFP_FS` caller's HZ; None: no timeout.
    let mut left = (gfp & __GFP_FS == 0).then_some(JIFFY * HZ);
    loop {
        cx.k().mem.nodes[pgdat as usize].pfmemalloc_wait.add(cx.tid);
        if let Some(timeout) = left {
            let remaining = schedule_timeout(cx, timeout).await;
            cx.k().mem.nodes[pgdat as usize]
                .pfmemalloc_wait
                .remove(cx.tid);
            left = Some(remaining);
        } else {
            schedule(cx).await;
        }
        // ___wait_cond_timeout(): the condition is tested after a timeout too.
        if cx.k().allow_direct_reclaim(pgdat) || left == Some(0) {
            return;
        }
    }
}

/// `do_try_to_free_pages()`: `shrink_zones()` at falling priority until SWAP_CLUSTER_MAX
/// pages are reclaimed, compaction is ready, or priority 0 has been tried. Returns the pages
/// reclaimed, or 1 if none were but compaction is ready (progress, for the slow path).
/// With a congestion variant (`variant.reclaim_wait`, 2.6.36–2.6.37) a pass that scanned
/// below DEF_PRIORITY − 2 and fell short ends with a nap of HZ/10 (`congestion_wait()`, or
/// with seed 003's patch 8 `wait_iff_congested()` on the preferred zone; mm/congestion.rs).
async fn do_try_to_free_pages(cx: &Cx, nid: u32, sc: &mut ScanControl) -> u64 {
    let nodes = {
        let mut k = cx.k();
        if !Kernel::is_cgroup_reclaim(sc.target_mem_cgroup) {
            k.stats
                .events
                .count_zid(VmEvent::AllocstallDma, sc.reclaim_idx, 1);
        }
        k.zonelist_nodes(nid, sc.reclaim_idx, sc.nodemask)
    };
    let congestion = cx.k().variant.reclaim_wait.congestion();
    loop {
        cond_resched(cx).await;
        sc.nr_scanned = 0;
        shrink_zones(cx, &nodes, sc).await;
        if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.compaction_ready {
            break;
        }
        // Take a nap, wait for some writeback to complete (2.6.36–5.15; mm/congestion.rs).
        if congestion && sc.nr_scanned > 0 && sc.priority < DEF_PRIORITY - 2 {
            reclaim_congestion_nap(
                cx,
                Napper::DirectReclaim,
                nid,
                sc.reclaim_idx,
                CONGESTION_NAP,
            )
            .await;
        }
        if sc.priority == 0 {
            break;
        }
        sc.priority -= 1;
    }
    if sc.nr_reclaimed == 0 && sc.compaction_ready {
        return 1;
    }
    sc.nr_reclaimed
}

/// `shrink_zones()`: each node of the zonelist once. For global reclaim of a costly order,
/// a zone where compaction is ready (`compaction_ready`) is skipped and flags
/// `sc.compaction_ready`; a node is shrunk if any of its zones up to `reclaim_idx` is not
/// skipped.
async fn shrink_zones(cx: &Cx, nodes: &[u32], sc: &mut ScanControl) {
    // 2.6.36/2.6.37 (lumpy reclaim) have no hand-over to compaction here.
    let lumpy = cx.k().variant.high_order_reclaim.is_lumpy();
    for &nid in nodes {
        if sc.order > PAGE_ALLOC_COSTLY_ORDER
            && !lumpy
            && !Kernel::is_cgroup_reclaim(sc.target_mem_cgroup)
        {
            let k = cx.k();
            let mut shrink = false;
            for &zi in &k.mem.nodes[nid as usize].zones {
                let z = &k.mem.zones[zi];
                if z.zone_idx > sc.reclaim_idx || z.managed_pages == 0 {
                    continue;
                }
                if compaction_ready(z, sc.order, sc.reclaim_idx) {
                    sc.compaction_ready = true;
                } else {
                    shrink = true;
                }
            }
            if !shrink {
                continue;
            }
        }
        shrink_node(cx, nid, sc).await;
        cond_resched(cx).await;
    }
}

// --- shrinking a node ------------------------------------------------------------------------

/// `shrink_node()`: `prepare_scan_control()`, then the node's lruvecs, again while
/// `should_continue_reclaim()` says (reclaim for compaction at order > 0); progress resets
/// `kswapd_failures`.
pub async fn shrink_node(cx: &Cx, nid: u32, sc: &mut ScanControl) {
    loop {
        let nr_reclaimed = sc.nr_reclaimed;
        sc.nr = ReclaimNr::default();
        {
            let mut k = cx.k();
            k.prepare_scan_control(nid, sc);
            let overhead = k.costs.shrink_node_overhead_ns;
            k.charge(overhead);
        }
        shrink_node_memcgs(cx, nid, sc).await;
        if sc.kswapd && sc.nr.taken > 0 {
            // The flushers are behind: the whole batch of what kswapd took was under
            // writeback, or every file folio was dirty with no I/O queued.
            let mut k = cx.k();
            let node = &mut k.wb.nodes[nid as usize];
            if sc.nr.writeback > 0 && sc.nr.writeback == sc.nr.taken {
                node.flags |= PGDAT_WRITEBACK;
            }
            if sc.nr.unqueued_dirty > 0 && sc.nr.unqueued_dirty == sc.nr.file_taken {
                node.flags |= PGDAT_DIRTY;
            }
        }
        if sc.kswapd && sc.nr.immediate > 0 && !cx.k().variant.reclaim_wait.congestion() {
            reclaim_throttle_writeback(cx, nid).await;
        }
        let reclaimed = sc.nr_reclaimed - nr_reclaimed;
        if reclaimed > 0 {
            cx.k().mem.nodes[nid as usize].kswapd_failures = 0;
        }
        // `should_continue_reclaim()` is 2.6.38's, absent with lumpy reclaim.
        let again = sc.order > 0
            && !cx.k().variant.high_order_reclaim.is_lumpy()
            && cx.k().should_continue_reclaim(
                nid,
                reclaimed,
                sc.order,
                sc.priority,
                sc.reclaim_idx,
            );
        if !again {
            return;
        }
    }
}

/// `reclaim_throttle(pgdat, VMSCAN_THROTTLE_WRITEBACK)` (5.16+): sleep up to HZ/10 on the
/// node's `reclaim_wait`, woken early once 32 pages per throttled task have been written
/// (`__acct_reclaim_writeback`); `mm_vmscan_throttled`.
async fn reclaim_throttle_writeback(cx: &Cx, nid: u32) {
    const TIMEOUT: crate::engine::Ns = crate::engine::JIFFY * (crate::engine::HZ / 10);
    {
        let mut k = cx.k();
        let node = &mut k.wb.nodes[nid as usize];
        if node.nr_reclaim_throttled == 0 {
            node.nr_reclaim_start = node.nr_throttled_written;
        }
        node.nr_reclaim_throttled += 1;
        node.reclaim_wait.add(cx.tid);
    }
    let remaining = schedule_timeout(cx, TIMEOUT).await;
    let mut k = cx.k();
    let node = &mut k.wb.nodes[nid as usize];
    node.reclaim_wait.remove(cx.tid);
    node.nr_reclaim_throttled -= 1;
    k.trace_throttled(nid, TIMEOUT, TIMEOUT - remaining);
}

/// `shrink_node_memcgs()`: the lruvec on the node of each memory cgroup under the target
/// (`mem_cgroup_iter`): every cgroup for global reclaim, the target alone for memcg reclaim
/// (the model's cgroups have no children). Protections (memory.min/low) are not modelled.
async fn shrink_node_memcgs(cx: &Cx, nid: u32, sc: &mut ScanControl) {
    let nr_memcgs = cx.k().memcg.groups.len() as u16;
    for memcg in 0..nr_memcgs {
        if Kernel::is_cgroup_reclaim(sc.target_mem_cgroup) && memcg != sc.target_mem_cgroup {
            continue;
        }
        let lv = cx.k().mem_cgroup_lruvec(memcg, nid);
        shrink_lruvec(cx, lv, sc).await;
    }
}

/// `shrink_lruvec()`: scan each evictable list in rounds of up to SWAP_CLUSTER_MAX pages
/// towards `get_scan_count()`'s targets; once enough is reclaimed (kswapd, and direct reclaim
/// below DEF_PRIORITY), scan the other type only in proportion to what is left of the
/// smaller one.
async fn shrink_lruvec(cx: &Cx, lv: usize, sc: &mut ScanControl) {
    let targets = cx.k().get_scan_count(lv, sc);
    cond_resched(cx).await;
    let mut nr = targets;
    let nr_to_reclaim = sc.nr_to_reclaim;
    let mut nr_reclaimed = 0;
    let mut proportional_reclaim = !sc.kswapd && sc.priority == DEF_PRIORITY;
    while nr[LRU_INACTIVE_ANON] > 0 || nr[LRU_ACTIVE_FILE] > 0 || nr[LRU_INACTIVE_FILE] > 0 {
        // for_each_evictable_lru(lru): `lru` names the list, and indexes the targets.
        #[allow(clippy::needless_range_loop)]
        for lru in 0..NR_EVICTABLE {
            let nr_to_scan = nr[lru].min(SWAP_CLUSTER_MAX);
            if nr_to_scan > 0 {
                nr[lru] -= nr_to_scan;
                nr_reclaimed += shrink_list(cx, lru, nr_to_scan, lv, sc).await;
            }
        }
        if nr_reclaimed < nr_to_reclaim || proportional_reclaim {
            continue;
        }
        let nr_file = nr[LRU_INACTIVE_FILE] + nr[LRU_ACTIVE_FILE];
        let nr_anon = nr[LRU_INACTIVE_ANON] + nr[LRU_ACTIVE_ANON];
        if nr_file == 0 || nr_anon == 0 {
            break;
        }
        let (smaller, other, pct) = if nr_file > nr_anon {
            let target = targets[LRU_INACTIVE_ANON] + targets[LRU_ACTIVE_ANON] + 1;
            (LRU_INACTIVE_ANON, LRU_INACTIVE_FILE, nr_anon * 100 / target)
        } else {
            let target = targets[LRU_INACTIVE_FILE] + targets[LRU_ACTIVE_FILE] + 1;
            (LRU_INACTIVE_FILE, LRU_INACTIVE_ANON, nr_file * 100 / target)
        };
        nr[smaller] = 0;
        nr[smaller + 1] = 0;
        for lru in [other, other + 1] {
            let scanned = targets[lru] - nr[lru];
            let v = targets[lru] * (100 - pct) / 100;
            nr[lru] = v - v.min(scanned);
        }
        proportional_reclaim = true;
    }
    sc.nr_reclaimed += nr_reclaimed;
    // Even if not all anon was scanned, keep the inactive anon list full enough.
    let age = {
        let k = cx.k();
        k.can_age_anon_pages()
            && k.memcg.lruvecs[lv].inactive_is_low(LRU_INACTIVE_ANON, sc.reclaim_idx)
    };
    if age {
        cx.k()
            .shrink_active_list(lv, SWAP_CLUSTER_MAX, LRU_ACTIVE_ANON, sc, cx.node);
        cond_resched(cx).await;
    }
}

/// `shrink_list()`: age an active list (if `prepare_scan_control` allowed it) or shrink an
/// inactive one; returns the pages reclaimed.
async fn shrink_list(cx: &Cx, lru: usize, nr_to_scan: u64, lv: usize, sc: &mut ScanControl) -> u64 {
    if is_active_lru(lru) {
        let bit = if is_file_lru(lru) {
            DEACTIVATE_FILE
        } else {
            DEACTIVATE_ANON
        };
        if sc.may_deactivate & bit == 0 {
            sc.skipped_deactivate = true;
            return 0;
        }
        cx.k().shrink_active_list(lv, nr_to_scan, lru, sc, cx.node);
        cond_resched(cx).await;
        return 0;
    }
    shrink_inactive_list(cx, nr_to_scan, lv, lru, sc).await
}

/// `shrink_inactive_list()`: isolate a batch from the tail of `lru` under lru_lock, then
/// `shrink_folio_list()` it outside the lock, free what it reclaimed and put the rest back.
async fn shrink_inactive_list(
    cx: &Cx,
    nr_to_scan: u64,
    lv: usize,
    lru: usize,
    sc: &mut ScanControl,
) -> u64 {
    if cx.k().variant.high_order_reclaim.is_lumpy() {
        let mode = cx.k().set_lumpy_reclaim_mode(sc);
        sc.lumpy_reclaim_mode = mode;
        if mode != LumpyMode::None {
            return lumpy::shrink_inactive_list_lumpy(cx, nr_to_scan, lv, lru, sc).await;
        }
    }
    let mut batch = Isolated::empty(lru);
    cx.k()
        .isolate_batch(lv, nr_to_scan, sc, cx.node, &mut batch);
    cond_resched(cx).await;
    if batch.n == 0 {
        return 0;
    }
    if !is_file_lru(lru) {
        swap_wait_for_tag(cx).await;
    } else {
        file_wait_for_request(cx).await;
    }
    let nr_reclaimed = cx.k().shrink_folio_list(lv, &batch, sc, cx.node);
    let wait = cx.k().variant.writeback_isolated_wait
        && writeback_isolated_throttle(sc.batch_nr_writeback, batch.nr_taken(), sc.priority);
    if wait {
        wait_iff_congested(cx, sc.batch_writeback_zone, BLK_RW_ASYNC, CONGESTION_NAP).await;
    }
    cond_resched(cx).await;
    nr_reclaimed
}

/// The end of 3.2's `shrink_inactive_list()` (seed 001's patch 6, commit 92df3a723f84 "mm:
/// vmscan: throttle reclaim if encountering too many dirty pages under writeback";
/// `variant.writeback_isolated_wait`): `if (nr_writeback && nr_writeback >= (nr_taken >>
/// (DEF_PRIORITY-priority))) wait_iff_congested(zone, BLK_RW_ASYNC, HZ/10)`. At
/// DEF_PRIORITY every page taken must be under writeback, at DEF_PRIORITY − 1 half, at
/// DEF_PRIORITY − 2 a quarter, and from DEF_PRIORITY − 6 on, for SWAP_CLUSTER_MAX pages
/// taken, any one. The kernel kept it until 5.16's `reclaim_throttle()`.
///
/// Departures: 3.2's LRU is per zone, so a batch and its wait are of one zone; the model's
/// is per node, and the wait takes the zone most of the batch's writeback pages came from
/// (`ScanControl::batch_writeback_zone`; with `variant.reclaim_wait = "zone_congested"`
/// it sleeps only if that zone is ZONE_CONGESTED, as 3.2's). Lumpy reclaim's batches
/// (2.6.36/2.6.37 variants, before this patch) never take it (`Variant::validate`).
pub fn writeback_isolated_throttle(nr_writeback: u64, nr_taken: u64, priority: i32) -> bool {
    nr_writeback > 0 && nr_writeback >= nr_taken >> (DEF_PRIORITY - priority)
}

/// `pageout()` → `submit_bio()` sleeps in `blk_mq_get_tag()` while the swap device has all
/// its requests in flight: swap-out is throttled by the device, not queued without bound.
/// Checked once before each anon batch's `shrink_folio_list` (which submits at most a
/// batch's writes), on the device of the swap files (all on the machine's first device;
/// zram has no tags).
async fn swap_wait_for_tag(cx: &Cx) {
    loop {
        let until = {
            let mut k = cx.k();
            let now = k.clock();
            match k.swap.areas.iter().find_map(|a| a.dev) {
                Some(dev) => k.block.devices[dev].tags_full(now),
                None => None,
            }
        };
        match until {
            Some(t) => sleep_until(cx, t).await,
            None => return,
        }
    }
}

/// `pageout()` → `submit_bio()` of a dirty file folio sleeps in `get_request_wait()` (3.2)
/// while a disk behind an elevator has `nr_requests` queued (hw/elevator.rs): reclaim's
/// single-page writes queue without bound otherwise. Checked once before each file batch's
/// `shrink_folio_list`, on every device with an elevator (devices without one: nothing).
async fn file_wait_for_request(cx: &Cx) {
    loop {
        let until = {
            let mut k = cx.k();
            let now = k.clock();
            k.block.request_wait(now)
        };
        match until {
            Some(t) => sleep_until(cx, t).await,
            None => return,
        }
    }
}

impl Kernel {
    /// `zone_reclaimable_pages()`: the zone's file LRU pages, and its anon ones while swap
    /// space is left (`can_reclaim_anon_pages`), over every memory cgroup's lruvec of its
    /// node.
    pub fn zone_reclaimable_pages(&self, zi: usize) -> u64 {
        let z = &self.mem.zones[zi];
        let anon = self.swap.nr_swap_pages() > 0;
        (0..self.memcg.groups.len() as u16)
            .map(|memcg| {
                let lruvec = &self.memcg.lruvecs[self.mem_cgroup_lruvec(memcg, z.nid)];
                let sizes = &lruvec.zone_size[z.zone_idx];
                let mut nr = sizes[LRU_INACTIVE_FILE] + sizes[LRU_ACTIVE_FILE];
                if anon {
                    nr += sizes[LRU_INACTIVE_ANON] + sizes[LRU_ACTIVE_ANON];
                }
                nr
            })
            .sum()
    }

    /// The list sizes of the target lruvec of `sc` on node `nid` (`mem_cgroup_lruvec(
    /// sc->target_mem_cgroup, pgdat)`, whose counts are hierarchical): the target cgroup's,
    /// or for global reclaim the sum over every cgroup's lruvec of the node.
    pub fn target_lruvec_sizes(&self, nid: u32, target: u16) -> ZoneSizes {
        if Kernel::is_cgroup_reclaim(target) {
            return self.memcg.lruvecs[self.mem_cgroup_lruvec(target, nid)].zone_size;
        }
        let mut sizes = self.memcg.lruvecs[self.mem_cgroup_lruvec(ROOT_MEM_CGROUP, nid)].zone_size;
        for memcg in 1..self.memcg.groups.len() as u16 {
            let other = &self.memcg.lruvecs[self.mem_cgroup_lruvec(memcg, nid)].zone_size;
            for (z, o) in sizes.iter_mut().zip(other) {
                for (a, b) in z.iter_mut().zip(o) {
                    *a += b;
                }
            }
        }
        sizes
    }

    /// `can_age_anon_pages()`: aging the anon LRU is worth it while swap is present.
    pub fn can_age_anon_pages(&self) -> bool {
        self.swap.total_swap_pages() > 0
    }

    /// `allow_direct_reclaim()`: may direct reclaim proceed on node `nid`, or should it wait
    /// for kswapd? It may while the free pages of the node's zones up to ZONE_NORMAL that have
    /// reclaimable pages exceed half their summed min watermarks (the pfmemalloc reserve), when
    /// there is no such reserve, or when the node is hopeless. Otherwise a sleeping kswapd is
    /// woken, its zone request capped at ZONE_NORMAL: kswapd must be awake while tasks are
    /// throttled.
    pub fn allow_direct_reclaim(&mut self, nid: u32) -> bool {
        let pgdat = &self.mem.nodes[nid as usize];
        if pgdat.kswapd_failures >= MAX_RECLAIM_RETRIES {
            return true;
        }
        let mut pfmemalloc_reserve = 0;
        let mut free_pages = 0;
        for &zi in &pgdat.zones {
            let z = &self.mem.zones[zi];
            if z.zone_idx > ZONE_NORMAL || z.managed_pages == 0 {
                continue;
            }
            if self.zone_reclaimable_pages(zi) == 0 {
                continue;
            }
            pfmemalloc_reserve += z.wmark_pages(WMARK_MIN);
            free_pages += z.zone_page_state_free();
        }
        if pfmemalloc_reserve == 0 {
            return true;
        }
        let wmark_ok = free_pages > pfmemalloc_reserve / 2;
        if !wmark_ok && pgdat.kswapd_wait.is_active() {
            let pgdat = &mut self.mem.nodes[nid as usize];
            if pgdat.kswapd_highest_zoneidx > ZONE_NORMAL {
                pgdat.kswapd_highest_zoneidx = ZONE_NORMAL;
            }
            // wake_up_interruptible(&pgdat->kswapd_wait): no wakeup_kswapd tracepoint.
            let now = self.now;
            pgdat.kswapd_wait.wake_up_all(&mut self.sched, now);
        }
        wmark_ok
    }

    /// `wake_up_all(&pgdat->pfmemalloc_wait)`: every throttled task runs again now and
    /// re-tests `allow_direct_reclaim()` (wait_event semantics).
    pub fn wake_up_pfmemalloc_wait(&mut self, nid: u32) {
        let now = self.now;
        self.mem.nodes[nid as usize]
            .pfmemalloc_wait
            .wake_up_all(&mut self.sched, now);
    }

    /// The nodes of `nid`'s zonelist with a zone ≤ `reclaim_idx`, in zonelist order, each
    /// once (`shrink_zones` shrinks a node once per pass).
    fn zonelist_nodes(&self, nid: u32, reclaim_idx: usize, nodemask: u64) -> Vec<u32> {
        let mut nodes: Vec<u32> = Vec::with_capacity(self.mem.nodes.len());
        for &zi in &self.mem.zonelists[nid as usize] {
            let z = &self.mem.zones[zi];
            let allowed = nodemask == 0 || nodemask & (1 << z.nid) != 0;
            if z.zone_idx <= reclaim_idx && allowed && !nodes.contains(&z.nid) {
                nodes.push(z.nid);
            }
        }
        nodes
    }

    /// `prepare_scan_control()`: refaults are not modelled (no shadow entries), so the
    /// deactivation bits follow `inactive_is_low()` alone; cache_trim_mode when the inactive
    /// file list is worth scanning at this priority and need not be refilled.
    fn prepare_scan_control(&mut self, nid: u32, sc: &mut ScanControl) {
        let sizes = self.target_lruvec_sizes(nid, sc.target_mem_cgroup);
        sc.may_deactivate = 0;
        if inactive_is_low(&sizes, LRU_INACTIVE_ANON, sc.reclaim_idx) {
            sc.may_deactivate |= DEACTIVATE_ANON;
        }
        if inactive_is_low(&sizes, LRU_INACTIVE_FILE, sc.reclaim_idx) {
            sc.may_deactivate |= DEACTIVATE_FILE;
        }
        let total = |lru| lru_size(&sizes, lru, MAX_NR_ZONES - 1);
        let inactive_file = total(LRU_INACTIVE_FILE);
        sc.cache_trim_mode =
            (inactive_file >> sc.priority) > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        // Prevent the reclaimer from falling into the cache trap: as cache pages start out
        // inactive, every cache fault will tip the scan balance towards the file LRU. And
        // as the file LRU shrinks, so does the window for rotation from references. This
        // means we have a runaway feedback loop where a tiny thrashing file LRU becomes
        // infinitely more attractive than anon pages. Try to detect this based on file LRU
        // size (the kernel's comment).
        if Kernel::is_cgroup_reclaim(sc.target_mem_cgroup) {
            sc.file_is_tiny = false;
            return;
        }
        let file = inactive_file + total(LRU_ACTIVE_FILE);
        let anon = total(LRU_INACTIVE_ANON);
        let pgdat = &self.mem.nodes[nid as usize];
        let (free, total_high_wmark) = pgdat
            .zones
            .iter()
            .map(|&zi| &self.mem.zones[zi])
            .filter(|z| z.managed_pages > 0)
            .fold((0, 0), |(f, h), z| {
                let high = if z.zone_idx <= sc.reclaim_idx {
                    z.wmark_pages(crate::mm::zone::WMARK_HIGH)
                } else {
                    0
                };
                (f + z.zone_page_state_free(), h + high)
            });
        sc.file_is_tiny = file + free <= total_high_wmark
            && sc.may_deactivate & DEACTIVATE_ANON == 0
            && (anon >> sc.priority) > 0;
    }

    /// `get_scan_count()` (6.x): SCAN_FILE without free swap space (or for a cgroup with
    /// swappiness 0), SCAN_EQUAL at priority 0, SCAN_ANON when the file LRU is tiny,
    /// SCAN_FILE in cache-trim mode, and otherwise SCAN_FRACT by `swappiness` and the decayed
    /// costs of each type. Departure: the costs are the lruvec's own, where the kernel takes
    /// the target lruvec's, whose costs `lru_note_cost` also adds up the cgroup tree.
    fn get_scan_count(&self, lv: usize, sc: &ScanControl) -> [u64; NR_EVICTABLE] {
        let lruvec = &self.memcg.lruvecs[lv];
        let swap_space = self.swap.nr_swap_pages() > 0;
        #[derive(PartialEq)]
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        let balance = if !sc.may_swap || !swap_space {
            Balance::File
        } else if Kernel::is_cgroup_reclaim(sc.target_mem_cgroup) && self.sysctl.swappiness == 0 {
            // A cgroup with swappiness 0 swaps only as a last resort.
            Balance::File
        } else if sc.priority == 0 && self.sysctl.swappiness > 0 {
            Balance::Equal
        } else if sc.file_is_tiny {
            Balance::Anon
        } else if sc.cache_trim_mode {
            Balance::File
        } else {
            Balance::Fract
        };
        let swappiness = self.sysctl.swappiness as u64;
        let total_cost = lruvec.anon_cost + lruvec.file_cost;
        let anon_cost = total_cost + lruvec.anon_cost;
        let file_cost = total_cost + lruvec.file_cost;
        let total = anon_cost + file_cost;
        let ap = swappiness * (total + 1) / (anon_cost + 1);
        let fp = (200 - swappiness) * (total + 1) / (file_cost + 1);
        std::array::from_fn(|lru| {
            let scan = lruvec.lru_size(lru, sc.reclaim_idx) >> sc.priority;
            let file = is_file_lru(lru);
            match balance {
                Balance::Equal => scan,
                Balance::Fract => scan * if file { fp } else { ap } / (ap + fp).max(1),
                Balance::File if file => scan,
                Balance::Anon if !file => scan,
                Balance::File | Balance::Anon => 0,
            }
        })
    }

    /// `isolate_lru_folios()` under lru_lock: up to `nr_to_scan` folios from the tail of `lru`.
    /// Folios of zones above reclaim_idx are skipped (counted in total_scan, not in scan).
    /// Returns `(total_scan, taken)`.
    fn isolate_lru_folios(
        &mut self,
        lv: usize,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        dst: &mut Isolated,
    ) -> (u64, u64) {
        if self.variant.large_folios() || self.thp_faults_possible() {
            return self.isolate_lru_folios_nr_pages(lv, nr_to_scan, lru, sc, dst);
        }
        let list = self.memcg.lruvecs[lv].list(lru);
        let mut scan = 0;
        let mut total_scan = 0;
        let mut skipped = [0u64; MAX_NR_ZONES];
        let mut taken = [0u64; MAX_NR_ZONES];
        let mut skip_head: Vec<u32> = Vec::new();
        let mut n = dst.n;
        while scan < nr_to_scan {
            // A run of folios to take, walked from the tail and cut off the list at once.
            let want = (nr_to_scan - scan) as usize;
            let reclaim_idx = sc.reclaim_idx;
            let (got, refused) = {
                let (pages, mut zonenum) = self.pages_and_zonenum();
                let walked = pages.walk_tail(list, &mut dst.pages[n..n + want], pg::LRU, |p| {
                    let zone_idx = zonenum(p);
                    taken[zone_idx] += u64::from(zone_idx <= reclaim_idx);
                    zone_idx <= reclaim_idx
                });
                pages.cut_tail(list, &dst.pages[n..n + walked.0]);
                walked
            };
            n += got;
            scan += got as u64;
            total_scan += got as u64;
            // A folio of a zone above reclaim_idx, now the tail: onto folios_skipped.
            let Some(p) = refused else {
                break;
            };
            self.mem.pages.unlink(p);
            total_scan += 1;
            skipped[self.page_zonenum(p)] += 1;
            skip_head.push(p);
        }
        dst.n = n;
        self.isolate_done(lv, lru, list, &taken, &skipped, skip_head);
        (total_scan, dst.n as u64)
    }

    /// The end of an isolation pass: `update_lru_sizes()` (the per-zone counts of what was
    /// taken, once for the batch), `pgskip_*` for what was skipped, and the list_splice()
    /// of the folios_skipped list (each list_move()d to its head) back onto the head, so
    /// that the oldest skipped folio stays the nearest the tail.
    #[inline]
    fn isolate_done(
        &mut self,
        lv: usize,
        lru: usize,
        list: ListId,
        taken: &[u64; MAX_NR_ZONES],
        skipped: &[u64; MAX_NR_ZONES],
        skip_head: Vec<u32>,
    ) {
        let zone_size = &mut self.memcg.lruvecs[lv].zone_size;
        for (z, &t) in taken.iter().enumerate() {
            zone_size[z][lru] -= t;
        }
        for (z, &n) in skipped.iter().enumerate() {
            if n > 0 {
                self.stats.events.count_zid(VmEvent::PgskipDma, z, n);
            }
        }
        for p in skip_head {
            self.mem.pages.add_head(list, p);
        }
    }

    /// `isolate_lru_folios()` (6.x) where folios may be large: one folio at a time from the
    /// tail, each counted by its pages (`nr_pages = folio_nr_pages(folio)`) in `total_scan`,
    /// in `scan` unless its zone is above reclaim_idx (skipped), and in `nr_taken`; the loop
    /// ends once `scan` reaches `nr_to_scan`, so one order-9 folio ends a 32-page request
    /// at 512 scanned; an anon huge page is split first (`Kernel::split_anon_thp_on_lru`).
    /// Returns `(total_scan, nr_taken)`, in pages. The order-0 model's
    /// [`Kernel::isolate_lru_folios`] counts the same way, a run at a time.
    fn isolate_lru_folios_nr_pages(
        &mut self,
        lv: usize,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        dst: &mut Isolated,
    ) -> (u64, u64) {
        let list = self.memcg.lruvecs[lv].list(lru);
        let (mut scan, mut total_scan, mut nr_taken) = (0, 0, 0);
        let mut skipped = [0u64; MAX_NR_ZONES];
        let mut taken = [0u64; MAX_NR_ZONES];
        let mut skip_head: Vec<u32> = Vec::new();
        while scan < nr_to_scan && dst.n < dst.pages.len() {
            let Some(p) = self.mem.pages.tail(list) else {
                break;
            };
            let f = *self.mem.pages.fields(p);
            let zone_idx = self.page_zonenum(p);
            if f.order > 0 && f.flags & pg::ANON != 0 && zone_idx <= sc.reclaim_idx {
                // An anon huge page is split as it is taken (`mm::huge_memory`); its head,
                // now order 0, is the list's tail.
                self.split_anon_thp_on_lru(lv, p);
                continue;
            }
            let nr_pages = folio_nr_pages(&f);
            total_scan += nr_pages;
            self.mem.pages.unlink(p);
            if zone_idx > sc.reclaim_idx {
                skipped[zone_idx] += nr_pages;
                skip_head.push(p);
                continue;
            }
            scan += nr_pages;
            self.mem.pages.clear(p, pg::LRU);
            nr_taken += nr_pages;
            taken[zone_idx] += nr_pages;
            dst.pages[dst.n] = p;
            dst.n += 1;
        }
        self.isolate_done(lv, lru, list, &taken, &skipped, skip_head);
        (total_scan, nr_taken)
    }

    /// The first half of `shrink_inactive_list()`: isolate a batch under lru_lock into
    /// `batch` (left empty if nothing was taken) and count it.
    fn isolate_batch(
        &mut self,
        lv: usize,
        nr_to_scan: u64,
        sc: &mut ScanControl,
        cpu_node: u32,
        batch: &mut Isolated,
    ) {
        let lru = batch.lru;
        let (nr_scanned, nr_taken) = self.isolate_lru_folios(lv, nr_to_scan, lru, sc, batch);
        let file = is_file_lru(lru);
        let now = self.clock();
        let hold = nr_scanned.max(1) * self.costs.isolate_ns;
        let lock = self.lru_lock(lv, cpu_node, hold, now);
        self.charge(lock.total());
        self.trace_lru_isolate(
            sc.reclaim_idx,
            sc.order,
            nr_to_scan,
            nr_scanned,
            nr_taken,
            lru,
            None,
        );
        let nid = self.memcg.lruvecs[lv].nid;
        self.mem.nodes[nid as usize].nr_isolated[file as usize] += nr_taken;
        if sc.kswapd && nr_scanned > 0 {
            self.stats.first_kswapd_scan.get_or_insert(now);
        }
        self.count_reclaim(lv, sc, VmEvent::pgscan(sc.kswapd), nr_scanned);
        self.count(VmEvent::pgscan_type(file), nr_scanned);
        sc.nr_scanned += nr_scanned;
        batch.nr_scanned = nr_scanned;
        batch.nr_taken = nr_taken;
    }

    /// A PGSCAN_*/PGSTEAL_* count of reclaim on lruvec `lv`: in /proc/vmstat unless it is
    /// memcg reclaim, and always in the lruvec's cgroup's events (`__count_memcg_events`).
    pub(crate) fn count_reclaim(&mut self, lv: usize, sc: &ScanControl, e: VmEvent, n: u64) {
        if !Kernel::is_cgroup_reclaim(sc.target_mem_cgroup) {
            self.count(e, n);
        }
        let memcg = self.memcg.lruvecs[lv].memcg;
        if memcg != ROOT_MEM_CGROUP {
            let ev = &mut self.memcg.groups[memcg as usize].events;
            match e {
                VmEvent::PgscanKswapd => ev.pgscan_kswapd += n,
                VmEvent::PgscanDirect => ev.pgscan_direct += n,
                VmEvent::PgstealKswapd => ev.pgsteal_kswapd += n,
                VmEvent::PgstealDirect => ev.pgsteal_direct += n,
                _ => {}
            }
        }
    }

    /// `free_unref_page_list()` (4.16) / `free_unref_folios()` (6.x) of reclaimed folios:
    /// onto the reclaiming CPU's per-CPU lists (`mm::page_alloc`).
    pub(crate) fn free_isolated_folios(&mut self, freed: &[u32], _cpu_node: u32) {
        let cpu = self.sched.tasks[self.current as usize].cpu;
        self.free_unref_folios(freed, cpu);
    }

    /// `shrink_active_list()` (6.6): each folio is checked through the reverse map if it is
    /// mapped (`folio_referenced()`, clearing its entries' accessed bits); a referenced file
    /// folio of a VM_EXEC mapping gets another trip round the active list (to its head,
    /// `nr_rotated`), every other folio is deactivated (PG_workingset set, head of the
    /// inactive list). `nr_to_scan` and the counts are pages, a large folio counting all of
    /// its.
    pub(crate) fn shrink_active_list(
        &mut self,
        lv: usize,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        cpu_node: u32,
    ) {
        let list = self.memcg.lruvecs[lv].list(lru);
        let mut taken = 0u64;
        let mut mapped = 0u64;
        let mut nr_rotated = 0u64;
        while taken < nr_to_scan {
            let Some(p) = self.mem.pages.tail(list) else {
                break;
            };
            let zone_idx = self.page_zonenum(p);
            let nr_pages = folio_nr_pages(self.mem.pages.fields(p));
            taken += nr_pages;
            let flags = self.mem.pages.flags(p);
            let rotate = flags & pg::MAPPED != 0 && {
                mapped += 1;
                let (referenced, vm_flags) = self.folio_referenced(p, flags);
                referenced > 0 && vm_flags & vm::EXEC != 0 && flags & pg::ANON == 0
            };
            let lruvec = &mut self.memcg.lruvecs[lv];
            lruvec.del_folio(&mut self.mem.pages, p, lru, zone_idx);
            if rotate {
                nr_rotated += nr_pages;
                lruvec.add_folio(&mut self.mem.pages, p, lru, zone_idx);
                continue;
            }
            self.mem.pages.clear(p, pg::ACTIVE);
            self.mem.pages.set(p, pg::WORKINGSET);
            lruvec.add_folio(&mut self.mem.pages, p, lru - 1, zone_idx);
        }
        let nr_deactivate = taken - nr_rotated;
        self.count(VmEvent::Pgrefill, taken);
        self.count(VmEvent::Pgdeactivate, nr_deactivate);
        let nid = self.memcg.lruvecs[lv].nid;
        self.trace_lru_shrink_active(
            nid,
            taken,
            nr_rotated,
            nr_deactivate,
            nr_rotated,
            sc.priority,
            is_file_lru(lru),
        );
        let now = self.clock();
        let c = &self.costs;
        let hold = taken.max(1) * c.isolate_ns;
        let hold2 = taken.max(1) * c.putback_ns;
        let a = self.lru_lock(lv, cpu_node, hold, now).total();
        let b = self.lru_lock(lv, cpu_node, hold2, now + a).total();
        self.charge(a + b);
        if mapped > 0 {
            let rmap = self.costs.folio_referenced_ns * mapped;
            self.charge(rmap);
        }
    }
}

#[path = "vmscan_lumpy.rs"]
mod lumpy;

#[cfg(test)]
#[path = "vmscan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "large_folio_tests.rs"]
mod large_folio_tests;

#[cfg(test)]
#[path = "node_reclaim_tests.rs"]
mod node_reclaim_tests;
