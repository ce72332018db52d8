//! Page reclaim: mm/vmscan.c of Linux 6.x (read at ~6.14, classic LRU, MGLRU off), broken into
//! resumable steps. The kernel's loops (`balance_pgdat`'s priority loop, `shrink_lruvec`'s
//! rounds over the lists) keep their state in `Balance`, `DirectReclaim` and `ShrinkLruvec`, so
//! that a reclaimer yields after every SWAP_CLUSTER_MAX batch: other tasks run, allocate and
//! contend for `lru_lock` between two batches, as they do on a real machine.
//!
//! Left out so far (each noted where it would act): anon pages and swap, dirty/writeback
//! folios and their throttling, memcg, slab shrinkers, compaction, watermark boosting, and the
//! workingset shadow entries (seed 000 ran with them disabled).

use crate::engine::{Ns, HZ, NSEC_PER_SEC};
use crate::kernel::{Kernel, Next, MAX_RECLAIM_RETRIES};
use crate::mm::lru::*;
use crate::mm::page::{pg, PageFields, NO_OWNER};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{MAX_NR_ZONES, WMARK_HIGH, WMARK_MIN, ZONE_NORMAL};

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: i32 = 12;
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
    pub may_writepage: bool,
    pub may_unmap: bool,
    pub may_swap: bool,
    /// DEACTIVATE_ANON | DEACTIVATE_FILE: may the active lists be aged.
    pub may_deactivate: u8,
    pub skipped_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    /// Reclaim on behalf of kswapd (counters `*_kswapd`) rather than direct reclaim.
    pub kswapd: bool,
    /// Incremented by the number of inactive pages that were scanned.
    pub nr_scanned: u64,
    /// Number of pages freed so far during a call to shrink_zones().
    pub nr_reclaimed: u64,
}

impl ScanControl {
    fn new(kswapd: bool, nr_to_reclaim: u64, order: u32, reclaim_idx: usize) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            order,
            reclaim_idx,
            priority: DEF_PRIORITY,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            may_deactivate: 0,
            skipped_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            kswapd,
            nr_scanned: 0,
            nr_reclaimed: 0,
        }
    }
}

/// A batch isolated by `shrink_inactive_list` and not yet put back (none while `n` is 0). It
/// lives in its `ShrinkLruvec` and is filled in place: moved by value, its 128-byte page
/// array was copied twice per batch.
#[derive(Clone, Debug)]
pub struct Isolated {
    pages: [u32; SWAP_CLUSTER_MAX as usize],
    n: usize,
    lru: usize,
    nr_scanned: u64,
}

impl Isolated {
    /// An empty batch for folios isolated from `lru`.
    fn empty(lru: usize) -> Isolated {
        Isolated {
            pages: [0; SWAP_CLUSTER_MAX as usize],
            n: 0,
            lru,
            nr_scanned: 0,
        }
    }
}

/// `shrink_node()` → `shrink_lruvec()` of one node, in progress.
#[derive(Clone, Debug)]
pub struct ShrinkLruvec {
    nid: u32,
    targets: [u64; NR_EVICTABLE],
    nr: [u64; NR_EVICTABLE],
    nr_to_reclaim: u64,
    nr_reclaimed: u64,
    proportional_reclaim: bool,
    /// The next list of the current round (0..NR_EVICTABLE).
    lru: usize,
    batch: Isolated,
    reclaimed_at_start: u64,
}

enum Balance {
    /// Looking at the priority loop's head.
    Top,
    Shrinking(Box<ShrinkLruvec>),
}

/// kswapd's `balance_pgdat()` in progress.
pub struct BalancePgdat {
    nid: u32,
    sc: ScanControl,
    highest_zoneidx: usize,
    nr_reclaimed_at_pass: u64,
    state: Balance,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KswapdState {
    /// Asleep on kswapd_wait until woken.
    Sleeping,
    /// In `kswapd_try_to_sleep`'s HZ/10 nap, on kswapd_wait.
    Napping {
        until: Ns,
    },
    Balancing,
}

/// One kswapd thread ("kswapd<nid>" or, with several threads, "kswapd<nid>:<i>").
pub struct KswapdTask {
    pub nid: u32,
    state: KswapdState,
    balance: Option<BalancePgdat>,
    alloc_order: u32,
    reclaim_order: u32,
    highest_zoneidx: usize,
    /// Set by `wakeup_kswapd` when it takes this thread off kswapd_wait.
    pub woken: bool,
}

impl KswapdTask {
    pub fn new(nid: u32) -> KswapdTask {
        KswapdTask {
            nid,
            state: KswapdState::Sleeping,
            balance: None,
            alloc_order: 0,
            reclaim_order: 0,
            highest_zoneidx: MAX_NR_ZONES - 1,
            woken: false,
        }
    }

    /// One step of `kswapd()`.
    pub fn step(&mut self, k: &mut Kernel, id: u32, _cpu: u32, cpu_node: u32) -> Next {
        match self.state {
            KswapdState::Sleeping => {
                if !self.woken {
                    return Next::Wait { sys: 0 };
                }
                self.woken = false;
                self.wake_and_balance(k)
            }
            KswapdState::Napping { until } => {
                let pgdat = &mut k.nodes[self.nid as usize];
                if self.woken {
                    // remaining > 0: woken during the nap by an allocation below the low mark.
                    self.woken = false;
                    if k.now < until {
                        pgdat.kswapd_order = pgdat.kswapd_order.max(self.reclaim_order);
                        k.count(VmEvent::KswapdLowWmarkHitQuickly, 1);
                    } else {
                        k.count(VmEvent::KswapdHighWmarkHitQuickly, 1);
                    }
                    return self.wake_and_balance(k);
                }
                if k.now < until {
                    return Next::Wait { sys: 0 };
                }
                if k.prepare_kswapd_sleep(self.nid, self.reclaim_order, self.highest_zoneidx) {
                    // Full sleep; we stay on kswapd_wait.
                    k.trace_kswapd_sleep(id, self.nid);
                    self.state = KswapdState::Sleeping;
                    return Next::Wait { sys: 0 };
                }
                k.nodes[self.nid as usize].kswapd_wait.retain(|&t| t != id);
                k.count(VmEvent::KswapdHighWmarkHitQuickly, 1);
                self.wake_and_balance(k)
            }
            KswapdState::Balancing => {
                let mut b = self.balance.take().expect("balancing without state");
                let (sys, done) = k.balance_pgdat_step(&mut b, cpu_node);
                if !done {
                    self.balance = Some(b);
                    return Next::Run { sys };
                }
                self.reclaim_order = b.sc.order;
                // kswapd_try_to_sleep(): nap if the node is balanced, else go straight back.
                if k.prepare_kswapd_sleep(self.nid, self.reclaim_order, self.highest_zoneidx) {
                    let until = k.now + sys + NSEC_PER_SEC / HZ * (HZ / 10);
                    self.state = KswapdState::Napping { until };
                    k.nodes[self.nid as usize].kswapd_wait.push(id);
                    return Next::Sleep { sys, at: until };
                }
                k.count(VmEvent::KswapdHighWmarkHitQuickly, 1);
                let next = self.wake_and_balance(k);
                match next {
                    Next::Run { sys: s2 } => Next::Run { sys: sys + s2 },
                    other => other,
                }
            }
        }
    }

    /// The top of kswapd()'s loop after a (possibly aborted) sleep: read and reset the
    /// requested order and zone, emit kswapd_wake, enter balance_pgdat().
    fn wake_and_balance(&mut self, k: &mut Kernel) -> Next {
        let pgdat = &mut k.nodes[self.nid as usize];
        self.alloc_order = pgdat.kswapd_order;
        if pgdat.kswapd_highest_zoneidx != MAX_NR_ZONES {
            self.highest_zoneidx = pgdat.kswapd_highest_zoneidx;
        }
        pgdat.kswapd_order = 0;
        pgdat.kswapd_highest_zoneidx = MAX_NR_ZONES;
        k.first_kswapd_wake.get_or_insert(k.now);
        k.trace_kswapd_wake(self.nid, self.highest_zoneidx, self.alloc_order);
        self.balance =
            Some(k.balance_pgdat_begin(self.nid, self.alloc_order, self.highest_zoneidx));
        self.state = KswapdState::Balancing;
        Next::Run { sys: 0 }
    }
}

/// `try_to_free_pages()` → `do_try_to_free_pages()` → `shrink_zones()`, in progress.
pub struct DirectReclaim {
    pub sc: ScanControl,
    /// Nodes of the zonelist in order, each once (shrink_zones shrinks a node once per pass).
    nodes: Vec<u32>,
    node_pos: usize,
    shrink: Option<ShrinkLruvec>,
    /// `throttle_direct_reclaim()` put the task to sleep on this node's `pfmemalloc_wait`;
    /// do_try_to_free_pages() starts once `allow_direct_reclaim()` holds on a wake-up.
    throttled: Option<u32>,
}

impl DirectReclaim {
    /// Asleep in `throttle_direct_reclaim()`: the task is off its CPU until kswapd wakes it.
    pub fn is_throttled(&self) -> bool {
        self.throttled.is_some()
    }
}

impl Kernel {
    /// `pgdat_balanced()`: any managed zone ≤ highest_zoneidx meets its high watermark.
    pub fn pgdat_balanced(&self, nid: u32, order: u32, highest_zoneidx: usize) -> bool {
        let mut any_managed = false;
        for &zi in &self.nodes[nid as usize].zones {
            let z = &self.zones[zi];
            if z.zone_idx > highest_zoneidx || z.managed_pages == 0 {
                continue;
            }
            any_managed = true;
            if z.zone_watermark_ok(order, z.wmark_pages(WMARK_HIGH), highest_zoneidx) {
                return true;
            }
        }
        !any_managed
    }

    /// `prepare_kswapd_sleep()`: first wake every task throttled on pfmemalloc_wait (a kswapd
    /// about to sleep must leave none behind; a premature wake-up makes them wake kswapd and
    /// sleep again), then let kswapd sleep if the node is hopeless or balanced.
    pub fn prepare_kswapd_sleep(&mut self, nid: u32, order: u32, highest_zoneidx: usize) -> bool {
        if !self.nodes[nid as usize].pfmemalloc_wait.is_empty() {
            self.wake_up_pfmemalloc_wait(nid);
        }
        self.nodes[nid as usize].kswapd_failures >= MAX_RECLAIM_RETRIES
            || self.pgdat_balanced(nid, order, highest_zoneidx)
    }

    /// `zone_reclaimable_pages()`: the zone's file LRU pages (anon pages need swap, which is
    /// not modelled).
    pub fn zone_reclaimable_pages(&self, zi: usize) -> u64 {
        let z = &self.zones[zi];
        let lruvec = &self.nodes[z.nid as usize].lruvec;
        lruvec.zone_size[z.zone_idx][LRU_INACTIVE_FILE]
            + lruvec.zone_size[z.zone_idx][LRU_ACTIVE_FILE]
    }

    /// `allow_direct_reclaim()`: may direct reclaim proceed on node `nid`, or should it wait
    /// for kswapd? It may while the free pages of the node's zones up to ZONE_NORMAL that have
    /// reclaimable pages exceed half their summed min watermarks (the pfmemalloc reserve), when
    /// there is no such reserve, or when the node is hopeless. Otherwise a sleeping kswapd is
    /// woken, its zone request capped at ZONE_NORMAL: kswapd must be awake while tasks are
    /// throttled.
    pub fn allow_direct_reclaim(&mut self, nid: u32) -> bool {
        let pgdat = &self.nodes[nid as usize];
        if pgdat.kswapd_failures >= MAX_RECLAIM_RETRIES {
            return true;
        }
        let mut pfmemalloc_reserve = 0;
        let mut free_pages = 0;
        for &zi in &pgdat.zones {
            let z = &self.zones[zi];
            if z.zone_idx > ZONE_NORMAL || z.managed_pages == 0 {
                continue;
            }
            if self.zone_reclaimable_pages(zi) == 0 {
                continue;
            }
            pfmemalloc_reserve += z.wmark_pages(WMARK_MIN);
            free_pages += z.nr_free_pages;
        }
        if pfmemalloc_reserve == 0 {
            return true;
        }
        let wmark_ok = free_pages > pfmemalloc_reserve / 2;
        if !wmark_ok && !pgdat.kswapd_wait.is_empty() {
            let pgdat = &mut self.nodes[nid as usize];
            if pgdat.kswapd_highest_zoneidx > ZONE_NORMAL {
                pgdat.kswapd_highest_zoneidx = ZONE_NORMAL;
            }
            // wake_up_interruptible(&pgdat->kswapd_wait): no wakeup_kswapd tracepoint.
            self.wake_up_kswapd_wait(nid);
        }
        wmark_ok
    }

    /// `throttle_direct_reclaim()` at the top of try_to_free_pages(): if the node of the first
    /// zonelist zone ≤ ZONE_NORMAL does not allow direct reclaim, count PGSCAN_DIRECT_THROTTLE
    /// and put task `tid` on that node's pfmemalloc_wait; returns the node it waits on.
    ///
    /// The caller is a page-cache allocation (`__GFP_FS`), so the wait is
    /// `wait_event_killable()` without a timeout; the `!__GFP_FS` wait of at most HZ, the
    /// kthread exemption and fatal signals do not arise here. wait_event tests the condition
    /// once more before sleeping; at the same instant it would give the same answer, so that
    /// test is folded into this one.
    fn throttle_direct_reclaim(
        &mut self,
        tid: u32,
        nid: u32,
        highest_zoneidx: usize,
    ) -> Option<u32> {
        let first = self.zonelists[nid as usize].iter().find(|&&zi| {
            let idx = self.zones[zi].zone_idx;
            idx <= highest_zoneidx && idx <= ZONE_NORMAL
        });
        let pgdat = self.zones[*first?].nid;
        if self.allow_direct_reclaim(pgdat) {
            return None;
        }
        self.count(VmEvent::PgscanDirectThrottle, 1);
        self.nodes[pgdat as usize].pfmemalloc_wait.push(tid);
        Some(pgdat)
    }

    /// `wake_up_all(&pgdat->pfmemalloc_wait)`: every throttled task runs again now and
    /// re-tests `allow_direct_reclaim()` (wait_event semantics).
    fn wake_up_pfmemalloc_wait(&mut self, nid: u32) {
        let waiters = std::mem::take(&mut self.nodes[nid as usize].pfmemalloc_wait);
        let now = self.now;
        for &t in &waiters {
            self.wake_task(t, now);
        }
    }

    /// Wake every kswapd thread on the node's kswapd_wait (taking them off it).
    fn wake_up_kswapd_wait(&mut self, nid: u32) {
        let waiters = std::mem::take(&mut self.nodes[nid as usize].kswapd_wait);
        let now = self.now;
        for &t in &waiters {
            if let crate::kernel::TaskKind::Kswapd(k) = &mut self.tasks[t as usize].kind {
                k.woken = true;
            }
            self.wake_task(t, now);
        }
    }

    /// `wakeup_kswapd()` for a zone of node `nid`: merge the request, then wake every thread
    /// waiting on kswapd_wait unless the node is balanced or hopeless.
    pub fn wakeup_kswapd(&mut self, nid: u32, order: u32, highest_zoneidx: usize) {
        let pgdat = &mut self.nodes[nid as usize];
        if pgdat.kswapd_highest_zoneidx == MAX_NR_ZONES
            || pgdat.kswapd_highest_zoneidx < highest_zoneidx
        {
            pgdat.kswapd_highest_zoneidx = highest_zoneidx;
        }
        pgdat.kswapd_order = pgdat.kswapd_order.max(order);
        if pgdat.kswapd_wait.is_empty() {
            return;
        }
        if pgdat.kswapd_failures >= MAX_RECLAIM_RETRIES
            || self.pgdat_balanced(nid, order, highest_zoneidx)
        {
            return;
        }
        self.trace_wakeup_kswapd(nid, highest_zoneidx, order);
        self.wake_up_kswapd_wait(nid);
    }

    /// `balance_pgdat()` setup.
    fn balance_pgdat_begin(
        &mut self,
        nid: u32,
        order: u32,
        highest_zoneidx: usize,
    ) -> BalancePgdat {
        self.count(VmEvent::Pageoutrun, 1);
        let sc = ScanControl::new(true, 0, order, highest_zoneidx);
        BalancePgdat {
            nid,
            sc,
            highest_zoneidx,
            nr_reclaimed_at_pass: 0,
            state: Balance::Top,
        }
    }

    /// One step of `balance_pgdat()`: a batch of `shrink_node()`, or the loop's bookkeeping.
    /// Returns the CPU time used and whether balance_pgdat() returned.
    fn balance_pgdat_step(&mut self, b: &mut BalancePgdat, cpu_node: u32) -> (Ns, bool) {
        let nid = b.nid;
        match &mut b.state {
            Balance::Top => {
                if b.sc.priority < 1 {
                    if b.sc.nr_reclaimed == 0 {
                        self.nodes[nid as usize].kswapd_failures += 1;
                    }
                    return (0, true);
                }
                b.sc.reclaim_idx = b.highest_zoneidx;
                if self.pgdat_balanced(nid, b.sc.order, b.highest_zoneidx) {
                    return (0, true);
                }
                // kswapd_shrink_node(): reclaim up to the high watermarks.
                b.sc.nr_to_reclaim = self.nodes[nid as usize]
                    .zones
                    .iter()
                    .map(|&zi| &self.zones[zi])
                    .filter(|z| z.zone_idx <= b.sc.reclaim_idx && z.managed_pages > 0)
                    .map(|z| z.wmark_pages(WMARK_HIGH).max(SWAP_CLUSTER_MAX))
                    .sum();
                b.sc.nr_scanned = 0;
                b.nr_reclaimed_at_pass = b.sc.nr_reclaimed;
                let s = self.shrink_node_begin(nid, &mut b.sc);
                b.state = Balance::Shrinking(Box::new(s));
                (self.costs.shrink_node_overhead_ns, false)
            }
            Balance::Shrinking(s) => {
                let (sys, done) = self.shrink_lruvec_step(s, &mut b.sc, cpu_node);
                if !done {
                    return (sys, false);
                }
                let s = match std::mem::replace(&mut b.state, Balance::Top) {
                    Balance::Shrinking(s) => s,
                    Balance::Top => unreachable!(),
                };
                self.shrink_node_end(&s, &b.sc);
                let delta = b.sc.nr_reclaimed - b.nr_reclaimed_at_pass;
                if b.sc.order > 0 && delta >= 2u64 << b.sc.order {
                    b.sc.order = 0;
                }
                // Tasks throttled on pfmemalloc_wait go on as soon as the reserve is met.
                if !self.nodes[nid as usize].pfmemalloc_wait.is_empty()
                    && self.allow_direct_reclaim(nid)
                {
                    self.wake_up_pfmemalloc_wait(nid);
                }
                let raise_priority = b.sc.nr_scanned < b.sc.nr_to_reclaim;
                if raise_priority || delta == 0 {
                    b.sc.priority -= 1;
                }
                (sys, false)
            }
        }
    }

    /// `try_to_free_pages()` entry: the allocating task on node `nid` starts direct reclaim,
    /// unless `throttle_direct_reclaim()` puts it to sleep first (`DirectReclaim::is_throttled`:
    /// the caller goes off CPU until woken, then drives `try_to_free_pages_step` as usual).
    pub fn try_to_free_pages_begin(
        &mut self,
        tid: u32,
        nid: u32,
        order: u32,
        reclaim_idx: usize,
    ) -> DirectReclaim {
        let sc = ScanControl::new(false, SWAP_CLUSTER_MAX, order, reclaim_idx);
        let mut nodes: Vec<u32> = Vec::with_capacity(self.nodes.len());
        for &zi in &self.zonelists[nid as usize] {
            let z = &self.zones[zi];
            if z.zone_idx <= reclaim_idx && !nodes.contains(&z.nid) {
                nodes.push(z.nid);
            }
        }
        let throttled = self.throttle_direct_reclaim(tid, nid, reclaim_idx);
        let d = DirectReclaim {
            sc,
            nodes,
            node_pos: 0,
            shrink: None,
            throttled,
        };
        if throttled.is_none() {
            self.direct_reclaim_begin(tid, &d.sc);
        }
        d
    }

    /// try_to_free_pages() after throttling: the `mm_vmscan_direct_reclaim_begin` tracepoint,
    /// then do_try_to_free_pages()'s retry label (ALLOCSTALL).
    fn direct_reclaim_begin(&mut self, tid: u32, sc: &ScanControl) {
        self.trace_direct_reclaim_begin(tid, sc.order);
        self.events
            .count_zid(VmEvent::AllocstallDma, sc.reclaim_idx, 1);
    }

    /// One step of direct reclaim. Returns CPU time and, when done, the pages reclaimed.
    pub fn try_to_free_pages_step(
        &mut self,
        d: &mut DirectReclaim,
        tid: u32,
        cpu_node: u32,
    ) -> (Ns, Option<u64>) {
        if let Some(pgdat) = d.throttled {
            // Woken on pfmemalloc_wait: wait_event tests the condition again and sleeps on if
            // it still fails.
            if !self.allow_direct_reclaim(pgdat) {
                // wake_up_all emptied the queue, and only it wakes a throttled task.
                let wait = &mut self.nodes[pgdat as usize].pfmemalloc_wait;
                debug_assert!(!wait.contains(&tid), "task {tid} woken while queued");
                wait.push(tid);
                return (0, None);
            }
            d.throttled = None;
            self.direct_reclaim_begin(tid, &d.sc);
        }
        if let Some(s) = d.shrink.as_mut() {
            let (sys, done) = self.shrink_lruvec_step(s, &mut d.sc, cpu_node);
            if !done {
                return (sys, None);
            }
            let s = d.shrink.take().expect("shrink state");
            self.shrink_node_end(&s, &d.sc);
            d.node_pos += 1;
            return (sys, None);
        }
        if d.node_pos < d.nodes.len() {
            let nid = d.nodes[d.node_pos];
            d.shrink = Some(self.shrink_node_begin(nid, &mut d.sc));
            return (self.costs.shrink_node_overhead_ns, None);
        }
        // End of shrink_zones(): the do { } while (--priority >= 0) test.
        d.node_pos = 0;
        if d.sc.nr_reclaimed >= d.sc.nr_to_reclaim || d.sc.priority == 0 {
            self.trace_direct_reclaim_end(tid, d.sc.nr_reclaimed);
            return (0, Some(d.sc.nr_reclaimed));
        }
        d.sc.priority -= 1;
        d.sc.nr_scanned = 0;
        (0, None)
    }

    /// `shrink_node()` up to the call of `shrink_lruvec()`: `prepare_scan_control()` and
    /// `get_scan_count()`.
    fn shrink_node_begin(&mut self, nid: u32, sc: &mut ScanControl) -> ShrinkLruvec {
        let lruvec = &self.nodes[nid as usize].lruvec;
        // prepare_scan_control(): refaults are not modelled (no shadow entries), so the
        // deactivation bits follow inactive_is_low() alone.
        sc.may_deactivate = 0;
        if lruvec.inactive_is_low(LRU_INACTIVE_ANON, sc.reclaim_idx) {
            sc.may_deactivate |= DEACTIVATE_ANON;
        }
        if lruvec.inactive_is_low(LRU_INACTIVE_FILE, sc.reclaim_idx) {
            sc.may_deactivate |= DEACTIVATE_FILE;
        }
        let inactive_file = lruvec.total(LRU_INACTIVE_FILE);
        sc.cache_trim_mode =
            (inactive_file >> sc.priority) > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        let targets = self.get_scan_count(nid, sc);
        ShrinkLruvec {
            nid,
            targets,
            nr: targets,
            nr_to_reclaim: sc.nr_to_reclaim,
            nr_reclaimed: 0,
            proportional_reclaim: !sc.kswapd && sc.priority == DEF_PRIORITY,
            lru: 0,
            batch: Isolated::empty(LRU_INACTIVE_FILE),
            reclaimed_at_start: sc.nr_reclaimed,
        }
    }

    /// The end of `shrink_node()`: progress resets kswapd_failures.
    fn shrink_node_end(&mut self, s: &ShrinkLruvec, sc: &ScanControl) {
        if sc.nr_reclaimed > s.reclaimed_at_start {
            self.nodes[s.nid as usize].kswapd_failures = 0;
        }
    }

    /// `get_scan_count()` (6.x). No swap is modelled yet, so the balance is SCAN_FILE; the
    /// SCAN_FRACT arithmetic is kept for when anon reclaim is possible.
    fn get_scan_count(&self, nid: u32, sc: &ScanControl) -> [u64; NR_EVICTABLE] {
        let lruvec = &self.nodes[nid as usize].lruvec;
        let swap_space = false;
        #[derive(PartialEq)]
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        let balance = if !sc.may_swap || !swap_space {
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
        let mut nr = [0u64; NR_EVICTABLE];
        for (lru, slot) in nr.iter_mut().enumerate() {
            let size = lruvec.lru_size(lru, sc.reclaim_idx);
            let scan = size >> sc.priority;
            let file = is_file_lru(lru);
            *slot = match balance {
                Balance::Equal => scan,
                Balance::Fract => scan * if file { fp } else { ap } / (ap + fp).max(1),
                Balance::File => {
                    if file {
                        scan
                    } else {
                        0
                    }
                }
                Balance::Anon => {
                    if file {
                        0
                    } else {
                        scan
                    }
                }
            };
        }
        nr
    }

    /// One step of `shrink_lruvec()`: one `shrink_list()` call of ≤ SWAP_CLUSTER_MAX pages,
    /// or the second half of an inactive batch (putback), or the end-of-round adjustment.
    fn shrink_lruvec_step(
        &mut self,
        s: &mut ShrinkLruvec,
        sc: &mut ScanControl,
        cpu_node: u32,
    ) -> (Ns, bool) {
        if s.batch.n > 0 {
            let (sys, reclaimed) = self.shrink_inactive_list_finish(s.nid, &s.batch, sc, cpu_node);
            s.batch.n = 0;
            s.nr_reclaimed += reclaimed;
            sc.nr_reclaimed += reclaimed;
            return (sys, false);
        }
        loop {
            if s.lru == 0
                && s.nr[LRU_INACTIVE_ANON] == 0
                && s.nr[LRU_ACTIVE_FILE] == 0
                && s.nr[LRU_INACTIVE_FILE] == 0
            {
                // Loop done; the anon-aging tail of shrink_lruvec() needs swap (not modelled).
                return (0, true);
            }
            while s.lru < NR_EVICTABLE {
                let lru = s.lru;
                s.lru += 1;
                if s.nr[lru] == 0 {
                    continue;
                }
                let n = s.nr[lru].min(SWAP_CLUSTER_MAX);
                s.nr[lru] -= n;
                if is_active_lru(lru) {
                    let bit = if is_file_lru(lru) {
                        DEACTIVATE_FILE
                    } else {
                        DEACTIVATE_ANON
                    };
                    if sc.may_deactivate & bit == 0 {
                        sc.skipped_deactivate = true;
                        continue;
                    }
                    return (self.shrink_active_list(s.nid, n, lru, sc, cpu_node), false);
                }
                let sys =
                    self.shrink_inactive_list_start(s.nid, n, lru, sc, cpu_node, &mut s.batch);
                return (sys, false);
            }
            s.lru = 0;
            // End of a round: once enough is reclaimed, scan the other type only in
            // proportion to what is left of the smaller one (kswapd and non-DEF_PRIORITY).
            if s.nr_reclaimed < s.nr_to_reclaim || s.proportional_reclaim {
                continue;
            }
            let nr_file = s.nr[LRU_INACTIVE_FILE] + s.nr[LRU_ACTIVE_FILE];
            let nr_anon = s.nr[LRU_INACTIVE_ANON] + s.nr[LRU_ACTIVE_ANON];
            if nr_file == 0 || nr_anon == 0 {
                return (0, true);
            }
            let (smaller, other, pct) = if nr_file > nr_anon {
                let target = s.targets[LRU_INACTIVE_ANON] + s.targets[LRU_ACTIVE_ANON] + 1;
                (LRU_INACTIVE_ANON, LRU_INACTIVE_FILE, nr_anon * 100 / target)
            } else {
                let target = s.targets[LRU_INACTIVE_FILE] + s.targets[LRU_ACTIVE_FILE] + 1;
                (LRU_INACTIVE_FILE, LRU_INACTIVE_ANON, nr_file * 100 / target)
            };
            s.nr[smaller] = 0;
            s.nr[smaller + 1] = 0;
            for lru in [other, other + 1] {
                let scanned = s.targets[lru] - s.nr[lru];
                let v = s.targets[lru] * (100 - pct) / 100;
                s.nr[lru] = v - v.min(scanned);
            }
            s.proportional_reclaim = true;
        }
    }

    /// `isolate_lru_folios()` under lru_lock: up to `nr_to_scan` folios from the tail of `lru`.
    /// Folios of zones above reclaim_idx are skipped (counted in total_scan, not in scan).
    fn isolate_lru_folios(
        &mut self,
        nid: u32,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        dst: &mut Isolated,
    ) -> (u64, u64) {
        let list = self.nodes[nid as usize].lruvec.list(lru);
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
            let (got, refused) = self
                .pages
                .walk_tail(list, &mut dst.pages[n..n + want], |p| {
                    let zone_idx = self.zones[self.page_zone(p)].zone_idx;
                    taken[zone_idx] += u64::from(zone_idx <= reclaim_idx);
                    zone_idx <= reclaim_idx
                });
            self.pages.cut_tail(list, &dst.pages[n..n + got], pg::LRU);
            n += got;
            scan += got as u64;
            total_scan += got as u64;
            // A folio of a zone above reclaim_idx, now the tail: onto folios_skipped.
            let Some(p) = refused else {
                break;
            };
            self.pages.unlink(p);
            total_scan += 1;
            skipped[self.zones[self.page_zone(p)].zone_idx] += 1;
            skip_head.push(p);
        }
        dst.n = n;
        // update_lru_sizes(): the per-zone counts, once for the batch.
        let zone_size = &mut self.nodes[nid as usize].lruvec.zone_size;
        for (z, &t) in taken.iter().enumerate() {
            zone_size[z][lru] -= t;
        }
        for (z, &n) in skipped.iter().enumerate() {
            if n > 0 {
                self.events.count_zid(VmEvent::PgskipDma, z, n);
            }
        }
        // list_splice() of the folios_skipped list (each list_move()d to its head) back onto
        // the head: the oldest skipped folio stays the nearest the tail.
        for p in skip_head {
            self.pages.add_head(list, p);
        }
        (total_scan, dst.n as u64)
    }

    /// `shrink_inactive_list()` first half: isolate a batch under lru_lock into `batch` (left
    /// empty if nothing was taken) and count it.
    fn shrink_inactive_list_start(
        &mut self,
        nid: u32,
        nr_to_scan: u64,
        lru: usize,
        sc: &mut ScanControl,
        cpu_node: u32,
        batch: &mut Isolated,
    ) -> Ns {
        batch.n = 0;
        batch.lru = lru;
        let (nr_scanned, nr_taken) = self.isolate_lru_folios(nid, nr_to_scan, lru, sc, batch);
        let file = is_file_lru(lru);
        let now = self.now;
        let lock = self.lru_lock(
            nid,
            cpu_node,
            nr_scanned.max(1) * self.costs.isolate_ns,
            now,
        );
        self.trace_lru_isolate(
            sc.reclaim_idx,
            sc.order,
            nr_to_scan,
            nr_scanned,
            nr_taken,
            lru,
        );
        self.nodes[nid as usize].nr_isolated[file as usize] += nr_taken;
        self.count(
            if sc.kswapd {
                VmEvent::PgscanKswapd
            } else {
                VmEvent::PgscanDirect
            },
            nr_scanned,
        );
        self.count(
            if file {
                VmEvent::PgscanFile
            } else {
                VmEvent::PgscanAnon
            },
            nr_scanned,
        );
        if sc.kswapd && nr_scanned > 0 {
            self.first_kswapd_scan.get_or_insert(now);
        }
        sc.nr_scanned += nr_scanned;
        batch.nr_scanned = nr_scanned;
        lock.total()
    }

    /// `shrink_inactive_list()` second half: `shrink_folio_list()` decides each folio, freed
    /// folios go back to the buddy allocator (zone->lock), the rest back to the LRU head
    /// (`move_folios_to_lru`, lru_lock). Returns CPU time and pages reclaimed.
    fn shrink_inactive_list_finish(
        &mut self,
        nid: u32,
        batch: &Isolated,
        sc: &ScanControl,
        cpu_node: u32,
    ) -> (Ns, u64) {
        let file = is_file_lru(batch.lru);
        let mut freed: [u32; SWAP_CLUSTER_MAX as usize] = [0; SWAP_CLUSTER_MAX as usize];
        let mut nr_freed = 0;
        let mut kept: [u32; SWAP_CLUSTER_MAX as usize] = [0; SWAP_CLUSTER_MAX as usize];
        let mut nr_kept = 0;
        let mut nr_activate = 0u64;
        let mut nr_ref_keep = 0u64;
        for &p in &batch.pages[..batch.n] {
            match self.shrink_folio(p) {
                FolioFate::Free => {
                    freed[nr_freed] = p;
                    nr_freed += 1;
                }
                FolioFate::Keep => {
                    kept[nr_kept] = p;
                    nr_kept += 1;
                }
                FolioFate::KeepReferenced => {
                    nr_ref_keep += 1;
                    kept[nr_kept] = p;
                    nr_kept += 1;
                }
                FolioFate::Activate => {
                    self.pages.set(p, pg::ACTIVE);
                    nr_activate += 1;
                    kept[nr_kept] = p;
                    nr_kept += 1;
                }
            }
        }
        let c = &self.costs;
        // Memory-bound: struct page, mapping and xarray cache misses, slower as the node's
        // memory load grows (hw/memory.rs), as the copy to user space is.
        let mut sys = self.nodes[nid as usize]
            .memory
            .scale(batch.n as u64 * c.shrink_folio_ns);
        // Free the reclaimed folios zone by zone under zone->lock (free_unref_folios).
        let buddy_ns = c.buddy_ns;
        let mut i = 0;
        while i < nr_freed {
            let (zi, n) = self.zone_run(&freed[i..nr_freed]);
            let at = self.now + sys;
            sys += self
                .zone_lock(zi, cpu_node, n as u64 * buddy_ns, at)
                .total();
            self.zones[zi].free_order0_run(&mut self.pages, &freed[i..i + n]);
            i += n;
        }
        // move_folios_to_lru(): lru_lock is taken even for an empty list.
        let at = self.now + sys;
        sys += self
            .lru_lock(
                nid,
                cpu_node,
                (nr_kept as u64).max(1) * self.costs.putback_ns,
                at,
            )
            .total();
        for &p in &kept[..nr_kept] {
            let lru = if self.pages.flags(p) & pg::ACTIVE != 0 {
                batch.lru + 1
            } else {
                batch.lru
            };
            self.lru_add_locked(nid, p, lru);
        }
        let reclaimed = nr_freed as u64;
        let pgdat = &mut self.nodes[nid as usize];
        pgdat.nr_isolated[file as usize] -= batch.n as u64;
        pgdat.nr_file_pages -= if file { reclaimed } else { 0 };
        pgdat
            .lruvec
            .note_cost(file, 0, batch.nr_scanned - reclaimed.min(batch.nr_scanned));
        self.count(
            if sc.kswapd {
                VmEvent::PgstealKswapd
            } else {
                VmEvent::PgstealDirect
            },
            reclaimed,
        );
        self.count(
            if file {
                VmEvent::PgstealFile
            } else {
                VmEvent::PgstealAnon
            },
            reclaimed,
        );
        self.count(VmEvent::Pgfree, reclaimed);
        self.count(VmEvent::Pgactivate, nr_activate);
        self.trace_lru_shrink_inactive(
            nid,
            batch.nr_scanned,
            reclaimed,
            nr_activate,
            nr_ref_keep,
            sc.priority,
            file,
        );
        (sys, reclaimed)
    }

    /// `shrink_folio_list()` for one folio, and `folio_check_references()`. Clean unmapped
    /// page-cache folios only (dirty, mapped and anon folios arrive with the writeback and
    /// swap models).
    fn shrink_folio(&mut self, p: u32) -> FolioFate {
        let flags = self.pages.flags(p);
        if flags & pg::LOCKED != 0 {
            return FolioFate::Keep; // trylock failed: a read is in flight
        }
        if flags & pg::UNEVICTABLE != 0 {
            return FolioFate::Activate;
        }
        // folio_check_references(): no PTEs map a page-cache page that read() filled, so
        // referenced_ptes == 0; a file folio with PG_referenced is RECLAIM_CLEAN, one without
        // is RECLAIM. Either way a clean folio is freed.
        let mapped = flags & pg::MAPPED != 0;
        let referenced = self.pages.test_and_clear(p, pg::REFERENCED);
        if mapped {
            if referenced {
                return FolioFate::Activate;
            }
            self.pages.set(p, pg::REFERENCED);
            return FolioFate::KeepReferenced;
        }
        // __remove_mapping(): out of the page cache (no shadow entry: workingset off).
        let d = self.pages.fields_mut(p);
        d.owner = NO_OWNER;
        d.flags = 0;
        FolioFate::Free
    }

    /// `shrink_active_list()`: every folio that is not an executable mapped file folio is
    /// deactivated (PG_workingset set, head of the inactive list).
    fn shrink_active_list(
        &mut self,
        nid: u32,
        nr_to_scan: u64,
        lru: usize,
        sc: &ScanControl,
        cpu_node: u32,
    ) -> Ns {
        let list = self.nodes[nid as usize].lruvec.list(lru);
        let mut taken = 0u64;
        while taken < nr_to_scan {
            let Some(p) = self.pages.tail(list) else {
                break;
            };
            let zone_idx = self.zones[self.page_zone(p)].zone_idx;
            self.lru_del_locked(nid, p, lru, zone_idx);
            self.pages.clear(p, pg::ACTIVE);
            self.pages.set(p, pg::WORKINGSET);
            self.lru_add_locked(nid, p, lru - 1);
            taken += 1;
        }
        self.count(VmEvent::Pgrefill, taken);
        self.count(VmEvent::Pgdeactivate, taken);
        self.trace_lru_shrink_active(nid, taken, 0, taken, 0, sc.priority, is_file_lru(lru));
        let now = self.now;
        let c = &self.costs;
        let hold = taken.max(1) * c.isolate_ns;
        let hold2 = taken.max(1) * c.putback_ns;
        let a = self.lru_lock(nid, cpu_node, hold, now).total();
        a + self.lru_lock(nid, cpu_node, hold2, now + a).total()
    }

    /// `lruvec_add_folio()` (caller holds lru_lock): the head of `lru`.
    #[inline]
    pub fn lru_add_locked(&mut self, nid: u32, p: u32, lru: usize) {
        let zone_idx = self.zones[self.page_zone(p)].zone_idx;
        let pgdat = &mut self.nodes[nid as usize];
        let list = pgdat.lruvec.list(lru);
        pgdat.lruvec.zone_size[zone_idx][lru] += 1;
        let d = self.pages.fields_mut(p);
        d.flags |= pg::LRU;
        d.lru = lru as u8;
        self.pages.add_head(list, p);
    }

    /// `lruvec_add_folio()` for each folio of `run`, all of zone `zi`, in turn (the page-cache
    /// fill adds its allocation runs this way): each folio's owner becomes `owner` and its
    /// flags `flags` with PG_lru. The same lists and counters as one `lru_add_locked` per
    /// folio after setting those fields, with the list and counters updated once per run.
    pub fn lru_add_run_locked(
        &mut self,
        zi: usize,
        run: &[u32],
        lru: usize,
        owner: u32,
        flags: u16,
    ) {
        let (nid, zone_idx) = (self.zones[zi].nid, self.zones[zi].zone_idx);
        debug_assert!(run.iter().all(|&p| self.page_zone(p) == zi));
        // Allocated pages have order 0 (`take_block` clears the block's head; the pages
        // inside a free block keep 0), which the fields written here keep.
        debug_assert!(run.iter().all(|&p| self.pages.fields(p).order == 0));
        let pgdat = &mut self.nodes[nid as usize];
        let list = pgdat.lruvec.list(lru);
        pgdat.lruvec.zone_size[zone_idx][lru] += run.len() as u64;
        let f = PageFields {
            owner,
            flags: flags | pg::LRU,
            order: 0,
            lru: lru as u8,
        };
        self.pages.add_head_run(list, run, f);
    }

    #[inline]
    pub(crate) fn lru_del_locked(&mut self, nid: u32, p: u32, lru: usize, zone_idx: usize) {
        self.pages.unlink(p);
        self.pages.clear(p, pg::LRU);
        self.nodes[nid as usize].lruvec.zone_size[zone_idx][lru] -= 1;
    }
}

enum FolioFate {
    Free,
    Keep,
    KeepReferenced,
    Activate,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EventKind;
    use crate::kernel::TaskKind;
    use crate::mm::zone::{ZONE_DMA32, ZONE_MOVABLE};
    use crate::workload::dd::DdTask;
    use crate::Scenario;

    /// One node of `mb` MiB, `dma32_mb` of it ZONE_DMA32 and the rest ZONE_NORMAL, all free.
    fn kernel(mb: u64, dma32_mb: u64) -> Kernel {
        let text = format!(
            "[machine]\nmemory_mb_per_node = {mb}\ndma32_mb = {dma32_mb}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
        );
        Kernel::new(&Scenario::parse(&text, "t.toml", &[]).unwrap())
    }

    fn zone_of(k: &Kernel, zone_idx: usize) -> usize {
        k.nodes[0]
            .zones
            .iter()
            .copied()
            .find(|&zi| k.zones[zi].zone_idx == zone_idx)
            .unwrap()
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
                k.pages.fields_mut(p).owner = 0;
                k.lru_add_locked(0, p, LRU_INACTIVE_FILE);
                k.nodes[0].nr_file_pages += 1;
                on_lru += 1;
            } else {
                held.push(p);
            }
        }
        held
    }

    /// A kswapd thread for node 0, asleep on kswapd_wait as `run` starts it.
    fn add_kswapd(k: &mut Kernel) -> u32 {
        let id = k.add_task(
            "kswapd0".into(),
            3,
            TaskKind::Kswapd(Box::new(KswapdTask::new(0))),
        );
        k.nodes[0].kswapd.push(id);
        k.nodes[0].kswapd_wait.push(id);
        id
    }

    /// A buffered dd reader on CPU 0, due to run at time 0.
    fn add_dd(k: &mut Kernel) -> u32 {
        let dd = DdTask::new(0, 0, false, 1024, 128, 2);
        let id = k.add_task("dd".into(), 0, TaskKind::Dd(Box::new(dd)));
        k.nr_mappings = 1;
        k.wake_task(id, 0);
        id
    }

    /// Runs the next queued task event; returns the task's id.
    fn run_next(k: &mut Kernel) -> u32 {
        let (t, ev) = k.queue.pop().expect("an event");
        let EventKind::Task(id) = ev else {
            panic!("unexpected event {ev:?}")
        };
        k.run_task(id, t);
        id
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
            k.lru_add_locked(0, p, LRU_INACTIVE_FILE);
            pages.push(p);
        }
        // Tail first: the three Normal folios, then the DMA32 one, which is taken; the
        // Normal ones are above reclaim_idx and skipped.
        let sc = ScanControl::new(false, 32, 0, ZONE_DMA32);
        let mut batch = Isolated::empty(LRU_INACTIVE_FILE);
        let (total_scan, taken) = k.isolate_lru_folios(0, 1, LRU_INACTIVE_FILE, &sc, &mut batch);
        assert_eq!((total_scan, taken), (4, 1));
        assert_eq!(batch.pages[0], pages[3]);
        let list = k.nodes[0].lruvec.list(LRU_INACTIVE_FILE);
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
        let mut k = kernel(64, 16);
        let normal = zone_of(&k, ZONE_NORMAL);
        let dma32 = zone_of(&k, ZONE_DMA32);
        let min = k.zones[normal].wmark_pages(WMARK_MIN);
        assert!(min > 100, "min {min}");
        // Nothing reclaimable anywhere: no reserve, never throttled.
        let mut held = fill_zone(&mut k, normal, 0, 0);
        assert!(k.allow_direct_reclaim(0));
        // Normal has reclaimable pages and exactly min/2 free; DMA32 (all free) has none and
        // is left out of both sums.
        for p in held.drain(..(min / 2) as usize) {
            k.zones[normal].free_one_page(&mut k.pages, p, 0);
        }
        for &p in &held[..10] {
            k.pages.fields_mut(p).owner = 0;
            k.lru_add_locked(0, p, LRU_INACTIVE_FILE);
        }
        held.drain(..10);
        let kswapd = add_kswapd(&mut k);
        k.nodes[0].kswapd_highest_zoneidx = ZONE_MOVABLE;
        assert!(
            !k.allow_direct_reclaim(0),
            "free == reserve/2 is not enough"
        );
        // kswapd must be awake while tasks are throttled: woken, its request capped at Normal.
        assert!(k.nodes[0].kswapd_wait.is_empty());
        assert_eq!(k.nodes[0].kswapd_highest_zoneidx, ZONE_NORMAL);
        assert_eq!(k.tasks[kswapd as usize].next_at, Some(0));
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
        assert_eq!(k.queue.len(), 1, "kswapd's one wake-up");
        // DMA32 becomes reclaimable: its min joins the reserve and its free pages the sum.
        let q = k.zones[dma32].rmqueue(&mut k.pages, 0).unwrap();
        k.lru_add_locked(0, q, LRU_INACTIVE_FILE);
        assert!(k.allow_direct_reclaim(0));
    }

    #[test]
    fn throttled_reclaimer_sleeps_until_kswapd_restores_the_reserve() {
        let mut k = kernel(64, 0);
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
        fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        let kswapd = add_kswapd(&mut k);
        let dd = add_dd(&mut k);
        // The reader's allocation fails at low and min: it wakes kswapd, enters
        // try_to_free_pages and is throttled before do_try_to_free_pages.
        assert_eq!(run_next(&mut k), dd);
        assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
        assert_eq!(allocstalls(&k), 0);
        assert_eq!(k.nodes[0].pfmemalloc_wait, vec![dd]);
        assert_eq!(k.tasks[dd as usize].next_at, None, "off CPU until woken");
        assert!(k.tasks[kswapd as usize].next_at.is_some(), "kswapd woken");
        // kswapd reclaims pass by pass; the reader runs again only when a pass ends with
        // free > reserve/2, and then reclaims itself without being throttled again.
        let mut woken_at = None;
        for _ in 0..100_000 {
            if allocstalls(&k) > 0 {
                break;
            }
            let waiting = !k.nodes[0].pfmemalloc_wait.is_empty();
            let id = run_next(&mut k);
            if waiting && k.nodes[0].pfmemalloc_wait.is_empty() {
                assert_eq!(id, kswapd, "only kswapd wakes the throttled reader");
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
        assert!(woken_at.is_some(), "never woken");
        assert!(k.events.get(VmEvent::PgstealKswapd) >= 20);
        assert_eq!(allocstalls(&k), 1, "the woken reader went on into reclaim");
        assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
    }

    #[test]
    fn a_premature_wake_up_sends_the_reader_back_to_sleep() {
        // No kswapd thread: only prepare_kswapd_sleep's unconditional wake_up_all wakes.
        let mut k = kernel(64, 0);
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
        let mut held = fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        let dd = add_dd(&mut k);
        run_next(&mut k);
        assert_eq!(k.nodes[0].pfmemalloc_wait, vec![dd]);
        assert!(!k.prepare_kswapd_sleep(0, 0, ZONE_NORMAL));
        assert!(k.nodes[0].pfmemalloc_wait.is_empty());
        assert_eq!(run_next(&mut k), dd);
        assert_eq!(
            k.nodes[0].pfmemalloc_wait,
            vec![dd],
            "still throttled: asleep again"
        );
        assert_eq!(k.tasks[dd as usize].next_at, None);
        assert_eq!(
            k.events.get(VmEvent::PgscanDirectThrottle),
            1,
            "counted once"
        );
        assert_eq!(allocstalls(&k), 0);
        for p in held.drain(..40) {
            k.zones[normal].free_one_page(&mut k.pages, p, 0);
        }
        k.prepare_kswapd_sleep(0, 0, ZONE_NORMAL);
        assert_eq!(run_next(&mut k), dd);
        assert!(k.nodes[0].pfmemalloc_wait.is_empty());
        assert_eq!(allocstalls(&k), 1);
        assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 1);
    }

    #[test]
    fn a_hopeless_node_does_not_throttle() {
        let mut k = kernel(64, 0);
        let normal = zone_of(&k, ZONE_NORMAL);
        let reserve = k.zones[normal].wmark_pages(WMARK_MIN);
        fill_zone(&mut k, normal, reserve / 2 - 20, 8000);
        k.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES - 1;
        assert!(!k.allow_direct_reclaim(0));
        k.nodes[0].kswapd_failures = MAX_RECLAIM_RETRIES;
        assert!(k.allow_direct_reclaim(0));
        let dd = add_dd(&mut k);
        run_next(&mut k);
        assert_eq!(k.events.get(VmEvent::PgscanDirectThrottle), 0);
        assert!(k.nodes[0].pfmemalloc_wait.is_empty());
        assert_eq!(allocstalls(&k), 1, "straight into do_try_to_free_pages");
        assert!(k.tasks[dd as usize].next_at.is_some());
    }
}
