//! kswapd (the kswapd half of mm/vmscan.c, Linux 6.x): the per-node reclaim thread, its
//! sleep and wake-up, and `balance_pgdat()`, which reclaims through `vmscan::shrink_node`.
//! With several threads per node (`variant.kswapd_threads`, seed 000's RFC) each runs the
//! unchanged `kswapd()` on the same pgdat and waits on the same `kswapd_wait`.

use crate::engine::{HZ, NSEC_PER_SEC};
use crate::hw::block::BLK_RW_ASYNC;
use crate::kernel::{Kernel, MAX_RECLAIM_RETRIES};
use crate::mm::congestion::congestion_wait;
use crate::mm::gfp::Gfp;
use crate::mm::lru::{inactive_is_low, LRU_ACTIVE_ANON, LRU_INACTIVE_ANON};
use crate::mm::vmscan::{shrink_node, ScanControl, CONGESTION_NAP, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::{MAX_NR_ZONES, PAGEBLOCK_ORDER, WMARK_HIGH, WMARK_MIN};
use crate::process::{
    cond_resched, psi_memstall_enter, psi_memstall_leave, schedule, schedule_timeout, Cx, Sim,
};
use crate::sched::TaskClass;
use crate::variant::ReclaimWait;

/// `kswapd_run()`: start node `nid`'s kswapd threads on the last CPUs of the node, asleep on
/// `kswapd_wait` (as after boot, with every node balanced). With several threads
/// (`vm.kswapd_threads`, seed 000's RFC) each runs the unchanged `kswapd()` on the same pgdat.
pub fn kswapd_run(sim: &mut Sim, nid: u32, threads: u32, cpus_per_node: u32) {
    for t in 0..threads {
        let comm = if threads == 1 {
            format!("kswapd{nid}")
        } else {
            format!("kswapd{nid}:{t}")
        };
        let cpu = nid * cpus_per_node + (cpus_per_node - 1 - (t % cpus_per_node));
        let id = sim.spawn(comm, cpu, TaskClass::Kswapd, move |cx| kswapd(cx, nid));
        let mut k = sim.k();
        k.mem.nodes[nid as usize].kswapd.push(id);
        k.mem.nodes[nid as usize].kswapd_wait.add(id);
    }
}

/// `kswapd()`: read and reset the node's request, balance the node, try to sleep; again.
/// The thread first runs when woken, at the top of the loop.
async fn kswapd(cx: Cx, nid: u32) {
    let mut highest_zoneidx = MAX_NR_ZONES - 1;
    // Woken from the sleep it started in: kswapd_try_to_sleep()'s pressure thresholds.
    cx.k().set_pgdat_percpu_threshold(nid, true);
    loop {
        let alloc_order = {
            let mut k = cx.k();
            let pgdat = &mut k.mem.nodes[nid as usize];
            let alloc_order = pgdat.kswapd_order;
            if pgdat.kswapd_highest_zoneidx != MAX_NR_ZONES {
                highest_zoneidx = pgdat.kswapd_highest_zoneidx;
            }
            pgdat.kswapd_order = 0;
            pgdat.kswapd_highest_zoneidx = MAX_NR_ZONES;
            let now = k.now;
            k.stats.first_kswapd_wake.get_or_insert(now);
            k.trace_kswapd_wake(nid, highest_zoneidx, alloc_order);
            alloc_order
        };
        // balance_pgdat() runs in a memory stall (its psi_memstall_enter/leave, 6.x).
        let pflags = psi_memstall_enter(&cx);
        let reclaim_order = balance_pgdat(&cx, nid, alloc_order, highest_zoneidx).await;
        psi_memstall_leave(&cx, pflags);
        kswapd_try_to_sleep(&cx, nid, alloc_order, reclaim_order, highest_zoneidx).await;
    }
}

/// `kswapd_try_to_sleep()`: if the node is balanced, clear the compaction skip bits a
/// direct compaction left (`reset_isolation_suitable`), ask kcompactd to compact for the
/// order kswapd was woken for (`wakeup_kcompactd`), and nap HZ/10 on `kswapd_wait`; woken
/// during the nap, go back to work (`kswapd_low_wmark_hit_quickly`); otherwise, if it is
/// still balanced, sleep until woken (`mm_vmscan_kswapd_sleep`). Not balanced at either
/// check: back to work (`kswapd_high_wmark_hit_quickly`).
async fn kswapd_try_to_sleep(
    cx: &Cx,
    nid: u32,
    alloc_order: u32,
    reclaim_order: u32,
    highest_zoneidx: usize,
) {
    {
        let mut k = cx.k();
        if !k.prepare_kswapd_sleep(nid, reclaim_order, highest_zoneidx) {
            k.count(VmEvent::KswapdHighWmarkHitQuickly, 1);
            return;
        }
        k.reset_isolation_suitable(nid);
        k.wakeup_kcompactd(nid, alloc_order, highest_zoneidx);
        k.mem.nodes[nid as usize].kswapd_wait.add(cx.tid);
    }
    let remaining = schedule_timeout(cx, NSEC_PER_SEC / HZ * (HZ / 10)).await;
    let sleep = {
        let mut k = cx.k();
        if remaining > 0 {
            let pgdat = &mut k.mem.nodes[nid as usize];
            pgdat.kswapd_order = pgdat.kswapd_order.max(reclaim_order);
            k.count(VmEvent::KswapdLowWmarkHitQuickly, 1);
            return;
        }
        let sleep = k.prepare_kswapd_sleep(nid, reclaim_order, highest_zoneidx);
        if sleep {
            k.trace_kswapd_sleep(nid);
            k.mem.nodes[nid as usize].kswapd_wait.add(cx.tid);
        } else {
            k.mem.nodes[nid as usize].kswapd_wait.remove(cx.tid);
            k.count(VmEvent::KswapdHighWmarkHitQuickly, 1);
        }
        sleep
    };
    if sleep {
        // vmstat deltas hide up to nr_online_cpus · threshold pages: the normal (larger)
        // threshold while kswapd sleeps, the pressure one while it is awake (4.16, 6.x).
        cx.k().set_pgdat_percpu_threshold(nid, false);
        schedule(cx).await;
        cx.k().set_pgdat_percpu_threshold(nid, true);
    }
}

/// `balance_pgdat()`: reclaim from the node, priority by priority, until a zone up to
/// `highest_zoneidx` meets its high watermark; returns the order reclaimed for.
///
/// Watermark boosting (6.6, since 5.0): the boosts of the node's zones up to
/// `highest_zoneidx` are summed into `nr_boost_reclaim`, pages to reclaim even on a balanced
/// node. While it is not 0 reclaim neither writes nor swaps (`may_writepage`, `may_swap`
/// off), stays at DEF_PRIORITY − 2 or above, and stops at a pass that reclaims nothing; an
/// unbalanced node drops the boost's reclaim and restarts at DEF_PRIORITY as plain
/// reclaim. At the end each zone's boost is lowered by what it was at the start (the
/// boosts stay in the watermarks meanwhile, so that allocations near them stall or reclaim
/// until kswapd is done) and kcompactd is woken for a pageblock.
///
/// With a congestion variant (`variant.reclaim_wait`, 2.6.36–2.6.37) each pass ends with
/// 2.6.36's nap (`kswapd_congestion_nap`), and patch 8's ZONE_CONGESTED is cleared on the
/// balanced zones at each pass.
async fn balance_pgdat(cx: &Cx, nid: u32, order: u32, highest_zoneidx: usize) -> u32 {
    let zone_boosts = {
        let mut k = cx.k();
        k.count(VmEvent::Pageoutrun, 1);
        k.update_reclaim_active(nid, highest_zoneidx, true);
        k.pgdat_zone_boosts(nid, highest_zoneidx)
    };
    // Account for the reclaim boost.
    let mut nr_boost_reclaim: u64 = zone_boosts.iter().sum();
    let boosted = nr_boost_reclaim > 0;
    let mut sc = ScanControl::new(true, 0, order, highest_zoneidx);
    let wait = cx.k().variant.reclaim_wait;
    let mut total_scanned = 0;
    cond_resched(cx).await;
    loop {
        let mut raise_priority = true;
        let priority = sc.priority;
        {
            let mut k = cx.k();
            if sc.priority < 1 {
                break;
            }
            if wait == ReclaimWait::ZoneCongested {
                k.clear_balanced_zones_congested(nid, sc.order, highest_zoneidx);
            }
            sc.reclaim_idx = highest_zoneidx;
            // An imbalanced node: ignore the boost, restart as plain reclaim.
            let balanced = k.pgdat_balanced(nid, sc.order, highest_zoneidx);
            if !balanced && nr_boost_reclaim > 0 {
                nr_boost_reclaim = 0;
                sc.priority = DEF_PRIORITY;
            }
            // Not boosting: reclaim only while no eligible zone is balanced.
            if nr_boost_reclaim == 0 && balanced {
                return k.balance_pgdat_out(nid, &sc, boosted, &zone_boosts, highest_zoneidx);
            }
            // Limit the priority of boosting to avoid reclaim writeback.
            if nr_boost_reclaim > 0 && sc.priority == DEF_PRIORITY - 2 {
                raise_priority = false;
            }
            // No writeback or swap for boosted reclaim: relieve pressure, do not issue
            // sub-optimal I/O from reclaim context.
            sc.may_writepage = nr_boost_reclaim == 0;
            sc.may_swap = nr_boost_reclaim == 0;
            sc.nr_scanned = 0;
        }
        let nr_reclaimed = sc.nr_reclaimed;
        kswapd_age_node(cx, nid, &sc).await;
        if sc.priority < DEF_PRIORITY - 2 {
            sc.may_writepage = true;
        }
        kswapd_shrink_node(cx, nid, &mut sc).await;
        {
            let mut k = cx.k();
            // Fall back to order-0 once enough was reclaimed for the high-order request.
            // Departure: 4.16's and 6.6's kswapd_shrink_node() test balance_pgdat()'s
            // running sc->nr_reclaimed, not one pass's (docs/model.md, "Fragmentation").
            let delta = sc.nr_reclaimed - nr_reclaimed;
            if sc.order > 0 && delta >= 2u64 << sc.order {
                sc.order = 0;
            }
            // Tasks throttled on pfmemalloc_wait go on as soon as the reserve is met.
            if k.mem.nodes[nid as usize].pfmemalloc_wait.is_active() && k.allow_direct_reclaim(nid)
            {
                k.wake_up_pfmemalloc_wait(nid);
            }
            if sc.nr_scanned >= sc.nr_to_reclaim {
                raise_priority = false;
            }
            nr_boost_reclaim -= nr_boost_reclaim.min(delta);
            // A boost's reclaim that made no progress stops: it may not queue I/O, and
            // could loop for ever.
            if nr_boost_reclaim > 0 && delta == 0 {
                break;
            }
            if raise_priority || delta == 0 {
                sc.priority -= 1;
            }
        }
        total_scanned += sc.nr_scanned;
        if wait.congestion() && total_scanned > 0 && priority < DEF_PRIORITY - 2 {
            kswapd_congestion_nap(cx, nid, sc.order, highest_zoneidx).await;
        }
        cond_resched(cx).await;
    }
    let mut k = cx.k();
    if sc.nr_reclaimed == 0 {
        k.mem.nodes[nid as usize].kswapd_failures += 1;
    }
    k.balance_pgdat_out(nid, &sc, boosted, &zone_boosts, highest_zoneidx)
}

/// 2.6.36's nap in `balance_pgdat()` (every congestion variant: seed 003's patches left
/// kswapd's `congestion_wait()` alone), after a priority pass once kswapd has scanned below
/// DEF_PRIORITY − 2: patch 8's ZONE_CONGESTED cleared on the zones now balanced; then, if
/// the node is still unbalanced, `congestion_wait(BLK_RW_ASYNC, HZ/10)` unless a zone is
/// below its min watermark (KSWAPD_SKIP_CONGESTION_WAIT: "Hurry up!").
async fn kswapd_congestion_nap(cx: &Cx, nid: u32, order: u32, highest_zoneidx: usize) {
    {
        let mut k = cx.k();
        if k.variant.reclaim_wait == ReclaimWait::ZoneCongested {
            k.clear_balanced_zones_congested(nid, order, highest_zoneidx);
        }
        if k.pgdat_balanced(nid, order, highest_zoneidx) {
            return;
        }
        let under_min = k.mem.nodes[nid as usize].zones.iter().any(|&zi| {
            let z = &k.mem.zones[zi];
            z.zone_idx <= highest_zoneidx
                && z.managed_pages > 0
                && !z.zone_watermark_ok(order, z.wmark_pages(WMARK_MIN), highest_zoneidx)
        });
        if under_min {
            return;
        }
    }
    congestion_wait(cx, BLK_RW_ASYNC, CONGESTION_NAP).await;
}

/// `kswapd_age_node()` → `age_active_anon()`: with swap present, deactivate
/// SWAP_CLUSTER_MAX active anon folios while the inactive anon list is low, so that anon
/// reclaim has candidates (the LRU's aging even when kswapd reclaims file pages).
async fn kswapd_age_node(cx: &Cx, nid: u32, sc: &ScanControl) {
    let nr_memcgs = {
        let k = cx.k();
        if !k.can_age_anon_pages() {
            return;
        }
        let sizes = k.target_lruvec_sizes(nid, crate::mm::mem_cgroup::ROOT_MEM_CGROUP);
        if !inactive_is_low(&sizes, LRU_INACTIVE_ANON, MAX_NR_ZONES - 1) {
            return;
        }
        k.memcg.groups.len() as u16
    };
    for memcg in 0..nr_memcgs {
        let mut k = cx.k();
        let lv = k.mem_cgroup_lruvec(memcg, nid);
        k.shrink_active_list(lv, SWAP_CLUSTER_MAX, LRU_ACTIVE_ANON, sc, cx.node);
    }
    cond_resched(cx).await;
}

/// `kswapd_shrink_node()`: reclaim up to the high watermarks of the eligible zones.
async fn kswapd_shrink_node(cx: &Cx, nid: u32, sc: &mut ScanControl) {
    {
        let k = cx.k();
        sc.nr_to_reclaim = k.mem.nodes[nid as usize]
            .zones
            .iter()
            .map(|&zi| &k.mem.zones[zi])
            .filter(|z| z.zone_idx <= sc.reclaim_idx && z.managed_pages > 0)
            .map(|z| z.wmark_pages(WMARK_HIGH).max(SWAP_CLUSTER_MAX))
            .sum();
    }
    shrink_node(cx, nid, sc).await;
}

impl Kernel {
    /// Each of node `nid`'s zones' `watermark_boost` (in the node's zone order), 0 for a
    /// zone above `highest_zoneidx` or not managed: `balance_pgdat()`'s `zone_boosts`.
    fn pgdat_zone_boosts(&self, nid: u32, highest_zoneidx: usize) -> [u64; MAX_NR_ZONES] {
        let mut boosts = [0; MAX_NR_ZONES];
        for (i, &zi) in self.mem.nodes[nid as usize].zones.iter().enumerate() {
            let z = &self.mem.zones[zi];
            if z.zone_idx <= highest_zoneidx && z.managed_pages > 0 {
                boosts[i] = z.watermark_boost;
            }
        }
        boosts
    }

    /// `balance_pgdat()`'s `out:` (6.6): if reclaim was boosted, lower each zone's boost by
    /// what it was when balancing started (a fallback may have raised it since) and wake
    /// kcompactd for a pageblock, as there is now likely room to defragment. Returns the
    /// order kswapd stopped reclaiming at.
    fn balance_pgdat_out(
        &mut self,
        nid: u32,
        sc: &ScanControl,
        boosted: bool,
        zone_boosts: &[u64; MAX_NR_ZONES],
        highest_zoneidx: usize,
    ) -> u32 {
        self.update_reclaim_active(nid, highest_zoneidx, false);
        if boosted {
            for (i, &boost) in zone_boosts.iter().enumerate() {
                if boost == 0 {
                    continue;
                }
                let zi = self.mem.nodes[nid as usize].zones[i];
                let z = &mut self.mem.zones[zi];
                z.watermark_boost -= z.watermark_boost.min(boost);
            }
            self.wakeup_kcompactd(nid, PAGEBLOCK_ORDER, highest_zoneidx);
        }
        sc.order
    }

    /// `update_reclaim_active()` (5.14+): ZONE_RECLAIM_ACTIVE set (`set_reclaim_active`, at
    /// `balance_pgdat()`'s start) or cleared (`clear_reclaim_active`, at its end) on node
    /// `nid`'s managed zones up to `highest_zoneidx`. Kept in every era; only the per-CPU
    /// lists of 5.14+ read it (`PerCpuPages::nr_pcp_high`).
    pub fn update_reclaim_active(&mut self, nid: u32, highest_zoneidx: usize, active: bool) {
        for &zi in &self.mem.nodes[nid as usize].zones {
            let z = &mut self.mem.zones[zi];
            if z.zone_idx <= highest_zoneidx && z.managed_pages > 0 {
                z.reclaim_active = active;
            }
        }
    }

    /// `pgdat_watermark_boosted()` (6.6): any managed zone of node `nid` up to
    /// `highest_zoneidx` has a watermark boost.
    pub fn pgdat_watermark_boosted(&self, nid: u32, highest_zoneidx: usize) -> bool {
        self.mem.nodes[nid as usize].zones.iter().any(|&zi| {
            let z = &self.mem.zones[zi];
            z.zone_idx <= highest_zoneidx && z.managed_pages > 0 && z.watermark_boost > 0
        })
    }

    /// `set_pgdat_percpu_threshold()` of node `nid`'s zones: the pressure thresholds
    /// (`calculate_pressure_threshold`) or the normal ones.
    pub fn set_pgdat_percpu_threshold(&mut self, nid: u32, pressure: bool) {
        let zis = &self.mem.nodes[nid as usize].zones;
        self.percpu
            .pcp
            .set_pgdat_percpu_threshold(&self.mem.zones, zis, pressure);
    }

    /// `pgdat_balanced()`: any managed zone ≤ highest_zoneidx meets its high watermark
    /// (`zone_watermark_ok_safe`, 4.16 and 6.x), boost included (`high_wmark_pages`).
    pub fn pgdat_balanced(&self, nid: u32, order: u32, highest_zoneidx: usize) -> bool {
        let mut any_managed = false;
        for &zi in &self.mem.nodes[nid as usize].zones {
            let z = &self.mem.zones[zi];
            if z.zone_idx > highest_zoneidx || z.managed_pages == 0 {
                continue;
            }
            any_managed = true;
            if z.zone_watermark_ok_safe(order, z.wmark_pages(WMARK_HIGH), highest_zoneidx) {
                return true;
            }
        }
        !any_managed
    }

    /// `prepare_kswapd_sleep()`: first wake every task throttled on pfmemalloc_wait (a kswapd
    /// about to sleep must leave none behind; a premature wake-up makes them wake kswapd and
    /// sleep again), then let kswapd sleep if the node is hopeless or balanced (clearing
    /// PGDAT_DIRTY and PGDAT_WRITEBACK: `clear_pgdat_congested()`). 6.6 asks only
    /// `pgdat_balanced()` here, against the boosted high watermarks; whether a zone is
    /// boosted (`pgdat_watermark_boosted`) is asked by `wakeup_kswapd()` alone.
    pub fn prepare_kswapd_sleep(&mut self, nid: u32, order: u32, highest_zoneidx: usize) -> bool {
        if self.mem.nodes[nid as usize].pfmemalloc_wait.is_active() {
            self.wake_up_pfmemalloc_wait(nid);
        }
        if self.mem.nodes[nid as usize].kswapd_failures >= MAX_RECLAIM_RETRIES {
            return true;
        }
        let balanced = self.pgdat_balanced(nid, order, highest_zoneidx);
        if balanced {
            self.wb.nodes[nid as usize].flags = 0;
        }
        balanced
    }

    /// `wakeup_kswapd()` for a zone of node `nid`: merge the request, then wake every thread
    /// waiting on kswapd_wait unless the node is hopeless, or balanced and not boosted
    /// (`pgdat_watermark_boosted`, 5.0+); then, for an allocation that cannot reclaim
    /// itself, wake kcompactd: the memory may be there, only not together.
    pub fn wakeup_kswapd(&mut self, nid: u32, order: u32, highest_zoneidx: usize, gfp: Gfp) {
        let pgdat = &mut self.mem.nodes[nid as usize];
        if pgdat.kswapd_highest_zoneidx == MAX_NR_ZONES
            || pgdat.kswapd_highest_zoneidx < highest_zoneidx
        {
            pgdat.kswapd_highest_zoneidx = highest_zoneidx;
        }
        pgdat.kswapd_order = pgdat.kswapd_order.max(order);
        if !pgdat.kswapd_wait.is_active() {
            return;
        }
        if pgdat.kswapd_failures >= MAX_RECLAIM_RETRIES
            || (self.pgdat_balanced(nid, order, highest_zoneidx)
                && !self.pgdat_watermark_boosted(nid, highest_zoneidx))
        {
            if gfp & crate::mm::gfp::__GFP_DIRECT_RECLAIM == 0 {
                self.wakeup_kcompactd(nid, order, highest_zoneidx);
            }
            return;
        }
        self.trace_wakeup_kswapd(nid, highest_zoneidx, order, gfp);
        let now = self.now;
        self.mem.nodes[nid as usize]
            .kswapd_wait
            .wake_up_all(&mut self.sched, now);
    }
}

#[cfg(test)]
#[path = "boost_tests.rs"]
mod boost_tests;
