//! Lumpy reclaim (`variant.high_order_reclaim = "lumpy" | "lowlumpy"`): mm/vmscan.c of
//! 2.6.36 and of 2.6.37, which has seed 003's patches 3–6 ("vmscan: narrowing synchronous
//! lumpy reclaim condition", "vmscan: isolated_lru_pages() stop neighbour search if
//! neighbour cannot be isolated", and the removal of `congestion_wait()` from the sync pass).
//!
//! `set_lumpy_reclaim_mode()`: a batch is lumpy for an order above PAGE_ALLOC_COSTLY_ORDER,
//! or for any order > 0 once priority is below DEF_PRIORITY − 2. A lumpy batch
//! (`shrink_inactive_list()` with `ISOLATE_BOTH`):
//!
//! 1. `isolate_lru_pages()`: each page taken from the tail of the inactive list is followed by
//!    a walk of its naturally aligned block of `sc.order` (the cursor loop): each other page
//!    of the block in the same zone that is on an LRU, active or inactive, file or anon, is
//!    taken too (`nr_lumpy_taken`, `nr_lumpy_dirty`), counting towards `nr_to_scan`.
//!    2.6.36 skips a page it cannot take and goes on (a failure, `nr_lumpy_failed`, unless
//!    the page is free); 2.6.37 goes on past a free page but abandons the block at the first
//!    other one (a hole, another zone, an anon page with no swap left, or a page not on an
//!    LRU), one failure per block. What was taken of an abandoned block stays taken, as in
//!    both kernels.
//! 2. `clear_active_flags()`: active pages taken lose PG_active (`pgdeactivate`).
//! 3. `shrink_page_list()`, references ignored (`page_check_references` returns
//!    PAGEREF_RECLAIM). 2.6.37 drops lumpy mode for the rest of the batch at a page kept for
//!    any reason but writeback (`disable_lumpy_reclaim_mode`; mm/vmscan_folio.rs).
//! 4. `should_reclaim_stall()`: direct reclaim (not kswapd), still in lumpy mode, that
//!    could not free everything it took, at a priority at or below DEF_PRIORITY (costly
//!    orders) or DEF_PRIORITY / 3, waits on the writeback of each page it kept
//!    (`wait_on_page_writeback`) and shrinks them again (`LUMPY_MODE_SYNC`,
//!    `PAGEOUT_IO_SYNC` in 2.6.36).
//!
//! Departures: the batch is shrunk in pieces of up to SWAP_CLUSTER_MAX folios of one lruvec
//! and one type (the model's `shrink_folio_list` takes such batches), each with its own
//! `mm_vmscan_lru_shrink_inactive`; between the two passes the kept pages wait on their
//! LRU lists rather than on the reclaimer's private list, and the second pass takes back
//! those still there; 2.6.36's `congestion_wait(BLK_RW_ASYNC, HZ/10)` before the sync pass
//! is taken with a congestion variant (`variant.reclaim_wait`, mm/congestion.rs), not with
//! 5.16+'s `reclaim_throttle`, which has no congestion to wait for; the sync pass's
//! `lock_page()` (rather than a trylock) is not modelled, nor its wait on the writes it
//! starts itself (of pages dirtied again between the passes: traced `RECLAIM_WB_SYNC`,
//! kept); the rest of the kernel (allocator,
//! compaction, kswapd) is the model's 6.x one; with lumpy reclaim, reclaim for a costly
//! order neither stops where compaction could run (`compaction_ready`) nor goes on for it
//! (`should_continue_reclaim`), both 2.6.38's. Lumpy mode stays off when folios can be
//! large (large page-cache folios, THP faults): 2.6.36 had neither.

use super::*;
use crate::hw::block::BLK_RW_ASYNC;
use crate::mm::congestion::congestion_wait;
use crate::mm::page::NO_OWNER;
use crate::process::io_schedule;
use crate::variant::HighOrderReclaim;

/// What one lumpy `isolate_lru_pages()` did: the counters of 2.6.36's
/// `mm_vmscan_lru_isolate`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LumpyIsolate {
    /// Pages scanned: the tail pages, the neighbours taken, and skipped pages of zones
    /// above `reclaim_idx` (6.x).
    pub nr_scanned: u64,
    /// Pages taken, tail pages and neighbours.
    pub nr_taken: u64,
    pub nr_lumpy_taken: u64,
    pub nr_lumpy_dirty: u64,
    pub nr_lumpy_failed: u64,
    /// Block pages the cursor looked at (lru_lock hold time).
    pub nr_cursor: u64,
}

impl Kernel {
    /// `set_lumpy_reclaim_mode()` (2.6.37; 2.6.36's in `shrink_zone`, the same rule): the
    /// mode of a batch at the start of `shrink_inactive_list()`.
    pub(crate) fn set_lumpy_reclaim_mode(&self, sc: &ScanControl) -> LumpyMode {
        if self.variant.large_folios() || self.thp_faults_possible() {
            return LumpyMode::None;
        }
        if sc.order > PAGE_ALLOC_COSTLY_ORDER || (sc.order > 0 && sc.priority < DEF_PRIORITY - 2) {
            LumpyMode::Async
        } else {
            LumpyMode::None
        }
    }

    /// Is page frame `pfn` free (`page_count() == 0` for the cursor loop)? The head of a
    /// free block on a buddy list, or a page with no owner, no flags and order 0: inside a
    /// free block, or on a per-CPU list (whose pages carry no mark). Departure: an order-0
    /// kernel allocation, which the model leaves without owner or flags, reads as free too
    /// (the model's workloads make none).
    pub(crate) fn page_is_free(&self, pfn: u32) -> bool {
        let f = self.mem.pages.fields(pfn);
        f.owner == NO_OWNER && (f.flags & pg::BUDDY != 0 || (f.flags == 0 && f.order == 0))
    }

    /// `isolate_lru_pages()` of 2.6.36 (`"lumpy"`) or 2.6.37 (`"lowlumpy"`) with
    /// `ISOLATE_BOTH`: tail pages of `lru` of lruvec `lv` into `tail`, their block
    /// neighbours into `lumpy` (module doc, step 1). Every page taken leaves its list
    /// (`del_folio`) and counts in its node's NR_ISOLATED_*.
    pub(crate) fn isolate_lru_pages_lumpy(
        &mut self,
        lv: usize,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        tail: &mut Isolated,
        lumpy: &mut Vec<u32>,
    ) -> LumpyIsolate {
        let abort = self.variant.high_order_reclaim == HighOrderReclaim::Lowlumpy;
        let list = self.memcg.lruvecs[lv].list(lru);
        let nr_pages = self.mem.pages.nr_pages();
        let no_swap = self.swap.nr_swap_pages() == 0;
        let mut r = LumpyIsolate::default();
        let mut scan = 0u64;
        let mut skipped = [0u64; MAX_NR_ZONES];
        let mut taken = [0u64; MAX_NR_ZONES];
        let mut skip_head: Vec<u32> = Vec::new();
        while scan < nr_to_scan && tail.n < tail.pages.len() {
            let Some(p) = self.mem.pages.tail(list) else {
                break;
            };
            let zone_idx = self.page_zonenum(p);
            self.mem.pages.unlink(p);
            if zone_idx > sc.reclaim_idx {
                skipped[zone_idx] += 1;
                r.nr_scanned += 1;
                skip_head.push(p);
                continue;
            }
            self.mem.pages.clear(p, pg::LRU);
            taken[zone_idx] += 1;
            tail.pages[tail.n] = p;
            tail.n += 1;
            scan += 1;
            r.nr_taken += 1;
            let zone = self.page_zone(p);
            let start = p & !((1u32 << sc.order) - 1);
            let end = start + (1u32 << sc.order);
            let mut failed = false;
            for pfn in start..end {
                if pfn == p {
                    continue;
                }
                r.nr_cursor += 1;
                // pfn_valid_within(), page_zone_id(), and no swap for an anon page.
                if pfn >= nr_pages {
                    failed = abort;
                    break;
                }
                let f = *self.mem.pages.fields(pfn);
                let unfit = self.page_zone(pfn) != zone
                    || (no_swap && f.flags & (pg::ANON | pg::SWAPCACHE) == pg::ANON);
                if unfit {
                    if abort {
                        failed = true;
                        break;
                    }
                    continue;
                }
                // __isolate_lru_page(ISOLATE_BOTH): on an LRU, an order-0 folio.
                if f.flags & pg::LRU != 0 && f.flags & pg::TAIL == 0 && f.order == 0 {
                    let clv = self.folio_lruvec(pfn);
                    let czone = self.page_zonenum(pfn);
                    self.memcg.lruvecs[clv].del_folio(
                        &mut self.mem.pages,
                        pfn,
                        f.lru as usize,
                        czone,
                    );
                    let nid = self.memcg.lruvecs[clv].nid as usize;
                    let file = f.flags & pg::ANON == 0;
                    self.mem.nodes[nid].nr_isolated[file as usize] += 1;
                    lumpy.push(pfn);
                    r.nr_lumpy_taken += 1;
                    r.nr_lumpy_dirty += u64::from(f.flags & pg::DIRTY != 0);
                    r.nr_taken += 1;
                    scan += 1;
                    continue;
                }
                let free = self.page_is_free(pfn);
                if abort {
                    if free {
                        continue;
                    }
                    failed = true;
                    break;
                }
                r.nr_lumpy_failed += u64::from(!free);
            }
            r.nr_lumpy_failed += u64::from(failed);
        }
        r.nr_scanned += scan;
        let nid = self.memcg.lruvecs[lv].nid as usize;
        self.mem.nodes[nid].nr_isolated[is_file_lru(lru) as usize] += tail.n as u64;
        self.isolate_done(lv, lru, list, &taken, &skipped, skip_head);
        r
    }

    /// The rest of a lumpy batch's isolation under lru_lock (taken from a CPU on
    /// `cpu_node`): the lock's hold, the tracepoint, the scan counters, and
    /// `clear_active_flags()` of the neighbours taken.
    #[allow(clippy::too_many_arguments)]
    fn lumpy_isolated(
        &mut self,
        lv: usize,
        cpu_node: u32,
        nr_to_scan: u64,
        lru: usize,
        sc: &mut ScanControl,
        r: &LumpyIsolate,
        lumpy: &[u32],
    ) {
        let now = self.clock();
        let hold = (r.nr_scanned + r.nr_cursor).max(1) * self.costs.isolate_ns;
        let lock = self.lru_lock(lv, cpu_node, hold, now);
        self.charge(lock.total());
        self.trace_lru_isolate(
            sc.reclaim_idx,
            sc.order,
            nr_to_scan,
            r.nr_scanned,
            r.nr_taken,
            lru,
            Some([r.nr_lumpy_taken, r.nr_lumpy_dirty, r.nr_lumpy_failed]),
        );
        let mut nr_active = 0;
        let mut nr_anon = 0;
        for &p in lumpy {
            nr_active += u64::from(self.mem.pages.test_and_clear(p, pg::ACTIVE));
            nr_anon += u64::from(self.mem.pages.flags(p) & pg::ANON != 0);
        }
        self.count(VmEvent::Pgdeactivate, nr_active);
        if sc.kswapd && r.nr_scanned > 0 {
            self.stats.first_kswapd_scan.get_or_insert(now);
        }
        self.count_reclaim(lv, sc, VmEvent::pgscan(sc.kswapd), r.nr_scanned);
        let file = is_file_lru(lru);
        let nr_lumpy = lumpy.len() as u64;
        let (same, other) = if file {
            (nr_lumpy - nr_anon, nr_anon)
        } else {
            (nr_anon, nr_lumpy - nr_anon)
        };
        self.count(VmEvent::pgscan_type(file), r.nr_scanned - nr_lumpy + same);
        self.count(VmEvent::pgscan_type(!file), other);
        sc.nr_scanned += r.nr_scanned;
    }

    /// The pieces `shrink_folio_list` takes: the tail pages (`lru`'s type, of `lv`, with
    /// the scan count), then the neighbours grouped by lruvec and type in the order taken,
    /// up to SWAP_CLUSTER_MAX a piece.
    fn lumpy_pieces(&self, lv: usize, tail: Isolated, lumpy: &[u32]) -> Vec<(usize, Isolated)> {
        let mut pieces = Vec::new();
        if tail.n > 0 {
            pieces.push((lv, tail));
        }
        let first = pieces.len();
        for &p in lumpy {
            let clv = self.folio_lruvec(p);
            let clru = if self.mem.pages.flags(p) & pg::ANON != 0 {
                LRU_INACTIVE_ANON
            } else {
                LRU_INACTIVE_FILE
            };
            let open = pieces[first..]
                .iter()
                .position(|(l, b)| *l == clv && b.lru == clru && b.n < b.pages.len());
            let i = match open {
                Some(i) => first + i,
                None => {
                    pieces.push((clv, Isolated::empty(clru)));
                    pieces.len() - 1
                }
            };
            let b = &mut pieces[i].1;
            b.pages[b.n] = p;
            b.n += 1;
            b.nr_scanned += 1;
            b.nr_taken += 1;
        }
        pieces
    }

    /// Back to their lists' lruvecs under lru_lock for a second pass: each of `kept` still
    /// on an LRU (order 0), PG_active cleared (`clear_active_flags`); into `out`. The
    /// lock is taken from a CPU on `cpu_node`.
    fn lumpy_retake(&mut self, lv: usize, cpu_node: u32, kept: &[u32], out: &mut Vec<u32>) {
        let mut nr_active = 0;
        for &p in kept {
            let f = *self.mem.pages.fields(p);
            if f.flags & pg::LRU == 0 || f.flags & pg::TAIL != 0 || f.order != 0 {
                continue;
            }
            let clv = self.folio_lruvec(p);
            let zone_idx = self.page_zonenum(p);
            self.memcg.lruvecs[clv].del_folio(&mut self.mem.pages, p, f.lru as usize, zone_idx);
            nr_active += u64::from(self.mem.pages.test_and_clear(p, pg::ACTIVE));
            let nid = self.memcg.lruvecs[clv].nid as usize;
            let file = f.flags & pg::ANON == 0;
            self.mem.nodes[nid].nr_isolated[file as usize] += 1;
            out.push(p);
        }
        self.count(VmEvent::Pgdeactivate, nr_active);
        let now = self.clock();
        let hold = (out.len() as u64).max(1) * self.costs.isolate_ns;
        let lock = self.lru_lock(lv, cpu_node, hold, now);
        self.charge(lock.total());
    }
}

/// `should_reclaim_stall()` (2.6.36–2.6.37): does direct reclaim wait on the writeback of
/// what it could not free and shrink the list again?
pub(crate) fn should_reclaim_stall(nr_taken: u64, nr_freed: u64, sc: &ScanControl) -> bool {
    if sc.kswapd || sc.lumpy_reclaim_mode == LumpyMode::None || nr_freed >= nr_taken {
        return false;
    }
    let lumpy_stall_priority = if sc.order > PAGE_ALLOC_COSTLY_ORDER {
        DEF_PRIORITY
    } else {
        DEF_PRIORITY / 3
    };
    sc.priority <= lumpy_stall_priority
}

/// Shrink `pieces` in turn (each after the device wait its type needs); returns the pages
/// reclaimed, and the pages kept (back on an LRU) into `kept`.
async fn shrink_lumpy_pieces(
    cx: &Cx,
    pieces: &[(usize, Isolated)],
    sc: &mut ScanControl,
    kept: &mut Vec<u32>,
) -> u64 {
    let mut nr_reclaimed = 0;
    for (clv, b) in pieces {
        if !is_file_lru(b.lru) {
            swap_wait_for_tag(cx).await;
        } else {
            file_wait_for_request(cx).await;
        }
        {
            let mut k = cx.k();
            nr_reclaimed += k.shrink_folio_list(*clv, b, sc, cx.node);
            kept.extend(
                b.pages()
                    .iter()
                    .copied()
                    .filter(|&p| k.mem.pages.flags(p) & pg::LRU != 0),
            );
        }
        cond_resched(cx).await;
    }
    nr_reclaimed
}

/// `shrink_inactive_list()` of a lumpy batch (the module doc's steps 1–4); returns the
/// pages reclaimed.
pub(super) async fn shrink_inactive_list_lumpy(
    cx: &Cx,
    nr_to_scan: u64,
    lv: usize,
    lru: usize,
    sc: &mut ScanControl,
) -> u64 {
    let mut tail = Isolated::empty(lru);
    let mut lumpy = Vec::new();
    let r = {
        let mut k = cx.k();
        let r = k.isolate_lru_pages_lumpy(lv, nr_to_scan, lru, sc, &mut tail, &mut lumpy);
        k.lumpy_isolated(lv, cx.node, nr_to_scan, lru, sc, &r, &lumpy);
        r
    };
    tail.nr_scanned = r.nr_scanned - r.nr_lumpy_taken;
    tail.nr_taken = tail.n as u64;
    cond_resched(cx).await;
    if r.nr_taken == 0 {
        return 0;
    }
    let pieces = cx.k().lumpy_pieces(lv, tail, &lumpy);
    let mut kept = Vec::new();
    let nr_reclaimed = shrink_lumpy_pieces(cx, &pieces, sc, &mut kept).await;
    if !should_reclaim_stall(r.nr_taken, nr_reclaimed, sc) {
        return nr_reclaimed;
    }
    sc.lumpy_reclaim_mode = LumpyMode::Sync;
    let nap = {
        let k = cx.k();
        k.variant.high_order_reclaim == HighOrderReclaim::Lumpy
            && k.variant.reclaim_wait.congestion()
    };
    if nap {
        // 2.6.36 naps before the sync pass (the seed's patches removed it in 2.6.37).
        congestion_wait(cx, BLK_RW_ASYNC, CONGESTION_NAP).await;
    }
    // wait_on_page_writeback() of each page kept.
    for &p in &kept {
        loop {
            {
                let mut k = cx.k();
                if k.mem.pages.flags(p) & pg::WRITEBACK == 0 {
                    break;
                }
                k.folio_waitqueue(p).add(cx.tid);
            }
            io_schedule(cx).await;
        }
    }
    let mut again = Vec::new();
    cx.k().lumpy_retake(lv, cx.node, &kept, &mut again);
    if again.is_empty() {
        cx.k().stats.lumpy_sync[0] += 1;
        return nr_reclaimed;
    }
    let pieces = cx.k().lumpy_pieces(lv, Isolated::empty(lru), &again);
    kept.clear();
    let nr_sync = shrink_lumpy_pieces(cx, &pieces, sc, &mut kept).await;
    let mut k = cx.k();
    k.stats.lumpy_sync[0] += 1;
    k.stats.lumpy_sync[1] += nr_sync;
    nr_reclaimed + nr_sync
}

#[cfg(test)]
#[path = "vmscan_lumpy_tests.rs"]
mod tests;
