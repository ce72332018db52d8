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
use crate::mm::page::{pg, NO_OWNER};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{MAX_NR_ZONES, WMARK_HIGH};

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

/// A batch isolated by `shrink_inactive_list` and not yet put back.
#[derive(Clone, Debug)]
pub struct Isolated {
    pages: [u32; SWAP_CLUSTER_MAX as usize],
    n: usize,
    lru: usize,
    nr_scanned: u64,
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
    batch: Option<Isolated>,
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

    /// `prepare_kswapd_sleep()`: hopeless or balanced nodes let kswapd sleep.
    pub fn prepare_kswapd_sleep(&self, nid: u32, order: u32, highest_zoneidx: usize) -> bool {
        self.nodes[nid as usize].kswapd_failures >= MAX_RECLAIM_RETRIES
            || self.pgdat_balanced(nid, order, highest_zoneidx)
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
        let waiters = std::mem::take(&mut self.nodes[nid as usize].kswapd_wait);
        let now = self.now;
        for &t in &waiters {
            if let crate::kernel::TaskKind::Kswapd(k) = &mut self.tasks[t as usize].kind {
                k.woken = true;
            }
            self.wake_task(t, now);
        }
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
                let raise_priority = b.sc.nr_scanned < b.sc.nr_to_reclaim;
                if raise_priority || delta == 0 {
                    b.sc.priority -= 1;
                }
                (sys, false)
            }
        }
    }

    /// `try_to_free_pages()` entry: the allocating task on node `nid` starts direct reclaim.
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
        self.trace_direct_reclaim_begin(tid, order);
        // do_try_to_free_pages(): retry label.
        self.events
            .count_zid(VmEvent::AllocstallDma, reclaim_idx, 1);
        DirectReclaim {
            sc,
            nodes,
            node_pos: 0,
            shrink: None,
        }
    }

    /// One step of direct reclaim. Returns CPU time and, when done, the pages reclaimed.
    pub fn try_to_free_pages_step(
        &mut self,
        d: &mut DirectReclaim,
        tid: u32,
        cpu_node: u32,
    ) -> (Ns, Option<u64>) {
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
            batch: None,
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
        if let Some(batch) = s.batch.take() {
            let (sys, reclaimed) = self.shrink_inactive_list_finish(s.nid, &batch, sc, cpu_node);
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
                let (sys, batch) = self.shrink_inactive_list_start(s.nid, n, lru, sc, cpu_node);
                s.batch = batch;
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
        let mut skip_head: Vec<u32> = Vec::new();
        while scan < nr_to_scan {
            let Some(p) = self.pages.tail(list) else {
                break;
            };
            let zi = self.page_zone(p);
            let zone_idx = self.zones[zi].zone_idx;
            total_scan += 1;
            self.pages.unlink(p);
            if zone_idx > sc.reclaim_idx {
                skipped[zone_idx] += 1;
                skip_head.push(p);
                continue;
            }
            scan += 1;
            self.pages.clear(p, pg::LRU);
            self.nodes[nid as usize].lruvec.zone_size[zone_idx][lru] -= 1;
            dst.pages[dst.n] = p;
            dst.n += 1;
        }
        for (z, &n) in skipped.iter().enumerate() {
            if n > 0 {
                self.events.count_zid(VmEvent::PgskipDma, z, n);
            }
        }
        for p in skip_head.into_iter().rev() {
            self.pages.add_head(list, p);
        }
        (total_scan, dst.n as u64)
    }

    /// `shrink_inactive_list()` first half: isolate a batch under lru_lock and count it.
    fn shrink_inactive_list_start(
        &mut self,
        nid: u32,
        nr_to_scan: u64,
        lru: usize,
        sc: &mut ScanControl,
        cpu_node: u32,
    ) -> (Ns, Option<Isolated>) {
        let mut batch = Isolated {
            pages: [0; SWAP_CLUSTER_MAX as usize],
            n: 0,
            lru,
            nr_scanned: 0,
        };
        let (nr_scanned, nr_taken) = self.isolate_lru_folios(nid, nr_to_scan, lru, sc, &mut batch);
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
        (lock.total(), (nr_taken > 0).then_some(batch))
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
            let zi = self.page_zone(freed[i]);
            let mut j = i;
            while j < nr_freed && self.page_zone(freed[j]) == zi {
                j += 1;
            }
            let at = self.now + sys;
            sys += self
                .zone_lock(zi, cpu_node, (j - i) as u64 * buddy_ns, at)
                .total();
            for &p in &freed[i..j] {
                let z = &mut self.zones[zi];
                z.free_one_page(&mut self.pages, p, 0);
            }
            i = j;
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
        let d = &mut self.pages.desc[p as usize];
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
        let d = &mut self.pages.desc[p as usize];
        d.flags |= pg::LRU;
        d.lru = lru as u8;
        self.pages.add_head(list, p);
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
