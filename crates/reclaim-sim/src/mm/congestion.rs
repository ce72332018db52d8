//! The congestion waits of reclaim before 5.16 (seed 003's patches 7 and 8;
//! `variant.reclaim_wait`): the block queue's congestion state (block/blk-core.c, 2.6.36),
//! the bdi's congested bits and the wait queues it wakes (mm/backing-dev.c, 2.6.36 and
//! 2.6.37), `congestion_wait()` and `wait_iff_congested()`, and where reclaim and the page
//! allocator call them.
//!
//! **Congestion** (2.6.36): a queue counts the requests allocated in each direction
//! (`hw::block::RequestList`); `get_request()` sets the bdi congested once the count reaches
//! `nr_congestion_on` (113 of 128), and `__freed_request()` clears it at each request freed
//! below `nr_congestion_off` (103), waking every task on `congestion_wqh[sync]` whether the
//! bit was set or not — so `congestion_wait()` sleeps until a request completes on a queue
//! that is not congested, or its timeout ("Sleep until uncongested or a write happens").
//! Only the async direction is counted (reclaim waits on BLK_RW_ASYNC only), from the writes
//! the flushers, dirtiers, reclaim and swap-out submit (each completes in an event).
//!
//! **The waits**, by variant:
//! - `congestion_wait` (2.6.36): `congestion_wait(BLK_RW_ASYNC, HZ/10)` in
//!   `do_try_to_free_pages()` after a priority pass that scanned below DEF_PRIORITY − 2,
//!   and in kswapd's `balance_pgdat()` when it has scanned and is below DEF_PRIORITY − 2 (not
//!   when a zone is below its min watermark: KSWAPD_SKIP_CONGESTION_WAIT, a counter the
//!   model's vmstat does not print); `congestion_wait(BLK_RW_ASYNC, HZ/50)` in the page
//!   allocator's slow path before each retry (`should_alloc_retry()`). Each emits
//!   `writeback_congestion_wait`.
//! - `wait_iff_congested` (patch 7): the allocator's waits become `wait_iff_congested()`:
//!   it sleeps as `congestion_wait()` does only while some bdi is congested
//!   (`nr_bdi_congested[sync]`), and otherwise only `cond_resched()`s;
//!   `writeback_wait_iff_congested` either way. `do_try_to_free_pages()` and kswapd keep
//!   `congestion_wait()` (the posted patch leaves both; patch 8 converts the first; the
//!   seed: "kswapd is still hitting congestion_wait()", and its waitcongest kernel's direct
//!   reclaim still "congest waited" 64 times on micro-mapped-file-stream).
//! - `zone_congested` (patch 8, 2.6.37): `do_try_to_free_pages()`'s nap becomes
//!   `wait_iff_congested()` too, and `wait_iff_congested(zone, …)` sleeps only if the
//!   zone (the zonelist's preferred zone) is also ZONE_CONGESTED: `shrink_page_list()` marks
//!   a zone when every dirty page of a batch was kept because its bdi was congested
//!   (`nr_dirty == nr_congested`, `may_write_to_queue()` → PAGE_KEEP_CONGESTED), and kswapd
//!   clears it when the zone meets its high watermark.
//! - seed 001's patch 6 (3.2, `variant.writeback_isolated_wait`, with any congestion
//!   variant): `wait_iff_congested(zone, BLK_RW_ASYNC, HZ/10)` at the end of
//!   `shrink_inactive_list()` for a batch with enough pages under writeback
//!   (`vmscan::writeback_isolated_throttle`).
//! - every congestion variant: `pageout()` does not queue a write to a congested bdi
//!   (`may_write_to_queue()`, 2.6.36) unless the reclaimer is kswapd (PF_SWAPWRITE), is
//!   writing a file on that bdi itself (`current->backing_dev_info`), or reclaims for an
//!   order above PAGE_ALLOC_COSTLY_ORDER; and kswapd's 5.16+ `reclaim_throttle()` is gone.
//!
//! Departures: 2.6.36's `shrink_inactive_list()` also naps in `congestion_wait()` while
//! `too_many_isolated()`, and before lumpy reclaim's synchronous pass
//! (`should_reclaim_stall()`); the model has neither. The LRU is per node here, per zone in
//! 2.6.36: a batch marks the zones its dirty pages came from. Patch 8 as posted picked the
//! zonelist zone with the most pages under writeback for `do_try_to_free_pages()`'s wait,
//! and set ZONE_CONGESTED also for a batch with no dirty page; 2.6.37 as merged takes the
//! preferred zone and asks for a dirty page, as here. Jiffies are `now / JIFFY`, the
//! tracepoints' times whole jiffies as the kernel's.

use crate::engine::{Ns, JIFFY, NSEC_PER_USEC};
use crate::hw::block::BLK_RW_ASYNC;
use crate::kernel::Kernel;
use crate::mm::zone::WMARK_HIGH;
use crate::process::{cond_resched, schedule_timeout, Cx};
use crate::variant::ReclaimWait;

/// `jiffies_to_usecs()` of `ns` taken as `jiffies(end) - jiffies(start)`.
fn jiffies_usecs(start: Ns, end: Ns) -> u64 {
    (end / JIFFY - start / JIFFY) * JIFFY / NSEC_PER_USEC
}

impl Kernel {
    /// `get_request()` for write `bio` of `bytes` (async), as it is submitted: its requests
    /// join its device's request list, congesting the bdi at the on threshold.
    pub(crate) fn blk_get_requests(&mut self, bio: u32, bytes: u64) {
        let dev = self.block.bios[bio].dev;
        let d = &mut self.block.devices[dev];
        let n = d.nr_requests(bytes);
        self.block.bios[bio].nr_requests = n;
        if d.rl.get_request(BLK_RW_ASYNC, n) {
            self.set_bdi_congested(dev, BLK_RW_ASYNC);
        }
    }

    /// `__freed_request()` of write `bio`'s requests as it completes: below the off
    /// threshold, `clear_bdi_congested()`.
    pub(crate) fn blk_freed_requests(&mut self, bio: u32) {
        let b = &mut self.block.bios[bio];
        let (dev, n) = (b.dev, b.nr_requests);
        b.nr_requests = 0;
        if self.block.devices[dev].rl.freed_request(BLK_RW_ASYNC, n) {
            self.clear_bdi_congested(dev, BLK_RW_ASYNC);
        }
    }

    /// `set_bdi_congested()` (2.6.36 with patch 7's count): device `dev` congested in
    /// direction `sync`.
    pub fn set_bdi_congested(&mut self, dev: usize, sync: usize) {
        let wb = &mut self.wb.wbs[dev];
        if !wb.congested[sync] {
            wb.congested[sync] = true;
            self.wb.nr_bdi_congested[sync] += 1;
        }
    }

    /// `clear_bdi_congested()`: device `dev` is not congested in direction `sync`, and
    /// every task on `congestion_wqh[sync]` wakes (whether it was congested or not).
    pub fn clear_bdi_congested(&mut self, dev: usize, sync: usize) {
        let wb = &mut self.wb.wbs[dev];
        if wb.congested[sync] {
            wb.congested[sync] = false;
            self.wb.nr_bdi_congested[sync] -= 1;
        }
        let now = self.now;
        let wqh = &mut self.wb.congestion_wqh[sync];
        if wqh.is_active() {
            wqh.wake_up_all(&mut self.sched, now);
        }
    }

    /// `bdi_write_congested()`: device `dev` is congested for async writes.
    pub fn bdi_write_congested(&self, dev: usize) -> bool {
        self.wb.wbs[dev].congested[BLK_RW_ASYNC]
    }

    /// `may_write_to_queue()` (mm/vmscan.c, 2.6.36) for a dirty page-cache page of device
    /// `dev` reclaimed for `order`, by kswapd or not: false when the bdi is congested, the
    /// reclaimer is not kswapd (PF_SWAPWRITE), is not writing a file of that device itself
    /// (`current->backing_dev_info`), and the order is not above PAGE_ALLOC_COSTLY_ORDER
    /// (patch 8's QUEUEWRITE_CONGESTED: the page is kept and counts in `nr_congested`).
    pub(crate) fn may_write_to_queue(&self, dev: usize, kswapd: bool, order: u32) -> bool {
        kswapd
            || !self.bdi_write_congested(dev)
            || self.sched.tasks[self.current as usize].backing_dev_info == Some(dev)
            || order > crate::mm::page_alloc::PAGE_ALLOC_COSTLY_ORDER
    }

    /// `first_zones_zonelist()`: the first zone (index into `mem.zones`) of node `nid`'s
    /// zonelist at or below `highest_zoneidx`, the allocation's preferred zone.
    pub fn preferred_zone(&self, nid: u32, highest_zoneidx: usize) -> Option<usize> {
        self.mem.zonelists[nid as usize]
            .iter()
            .copied()
            .find(|&zi| self.mem.zones[zi].zone_idx <= highest_zoneidx)
    }

    /// Patch 8's clearing in `balance_pgdat()`: each managed zone of node `nid` up to
    /// `highest_zoneidx` that meets its high watermark for `order` is no longer
    /// ZONE_CONGESTED ("as pressure is relieved, speculatively avoid congestion waits").
    pub fn clear_balanced_zones_congested(&mut self, nid: u32, order: u32, highest_zoneidx: usize) {
        for i in 0..self.mem.nodes[nid as usize].zones.len() {
            let zi = self.mem.nodes[nid as usize].zones[i];
            let z = &mut self.mem.zones[zi];
            if z.reclaim_congested
                && z.zone_idx <= highest_zoneidx
                && z.zone_watermark_ok_safe(order, z.wmark_pages(WMARK_HIGH), highest_zoneidx)
            {
                z.reclaim_congested = false;
            }
        }
    }
}

/// `io_schedule_timeout()` on `congestion_wqh[sync]` (the sleep of both waits): asleep in
/// iowait until a `clear_bdi_congested()` wakes it or `timeout` passes.
async fn sleep_on_congestion(cx: &Cx, sync: usize, timeout: Ns) {
    {
        let mut k = cx.k();
        k.wb.congestion_wqh[sync].add(cx.tid);
        k.sched.tasks[cx.tid as usize].in_iowait = true;
    }
    schedule_timeout(cx, timeout).await;
    let mut k = cx.k();
    k.wb.congestion_wqh[sync].remove(cx.tid);
    k.sched.tasks[cx.tid as usize].in_iowait = false;
}

/// `congestion_wait(sync, timeout)` (mm/backing-dev.c, 2.6.36): sleep until a bdi leaves
/// congestion in direction `sync` (any request freed below a queue's off threshold), or
/// `timeout`; `writeback_congestion_wait`.
pub async fn congestion_wait(cx: &Cx, sync: usize, timeout: Ns) {
    let start = cx.k().clock();
    sleep_on_congestion(cx, sync, timeout).await;
    let mut k = cx.k();
    let end = k.clock();
    k.trace_congestion_wait(jiffies_usecs(0, timeout), jiffies_usecs(start, end));
}

/// `wait_iff_congested(zone, sync, timeout)` (patch 7; patch 8 adds the zone): sleep as
/// `congestion_wait()` does only if a bdi is congested in direction `sync` and, with
/// `variant.reclaim_wait = "zone_congested"`, zone `zi` is ZONE_CONGESTED; otherwise
/// `cond_resched()` and return. `writeback_wait_iff_congested` either way.
pub async fn wait_iff_congested(cx: &Cx, zi: Option<usize>, sync: usize, timeout: Ns) {
    let (start, sleep) = {
        let k = cx.k();
        let zone_ok = match k.variant.reclaim_wait {
            ReclaimWait::ZoneCongested => zi.is_some_and(|zi| k.mem.zones[zi].reclaim_congested),
            _ => true,
        };
        (k.clock(), k.wb.nr_bdi_congested[sync] > 0 && zone_ok)
    };
    if sleep {
        sleep_on_congestion(cx, sync, timeout).await;
    } else {
        cond_resched(cx).await;
    }
    let mut k = cx.k();
    let end = k.clock();
    k.trace_wait_iff_congested(jiffies_usecs(0, timeout), jiffies_usecs(start, end));
}

/// Who takes a reclaim nap: `do_try_to_free_pages()` after a priority pass, or the page
/// allocator before a retry. Seed 003's patch 7 changed only the allocator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Napper {
    DirectReclaim,
    AllocRetry,
}

/// The nap of direct reclaim and of the page allocator's retry for the kernel variant:
/// `congestion_wait(BLK_RW_ASYNC, timeout)` (2.6.36), `wait_iff_congested(BLK_RW_ASYNC,
/// timeout)` for the allocator only (patch 7 as posted in September 2010: its diff turns the
/// two `congestion_wait()`s of mm/page_alloc.c and leaves `do_try_to_free_pages()`'s "Take a
/// nap" as it was), or `wait_iff_congested(zone, …)` for both (patch 8, which converts
/// `do_try_to_free_pages()`; the zone is the preferred one, as 2.6.37 merged it).
/// Nothing with `reclaim_throttle`.
pub async fn reclaim_congestion_nap(
    cx: &Cx,
    who: Napper,
    nid: u32,
    highest_zoneidx: usize,
    timeout: Ns,
) {
    let (wait, zi) = {
        let k = cx.k();
        (
            k.variant.reclaim_wait,
            k.preferred_zone(nid, highest_zoneidx),
        )
    };
    match (wait, who) {
        (ReclaimWait::ReclaimThrottle, _) => {}
        (ReclaimWait::CongestionWait, _)
        | (ReclaimWait::WaitIffCongested, Napper::DirectReclaim) => {
            congestion_wait(cx, BLK_RW_ASYNC, timeout).await
        }
        (ReclaimWait::WaitIffCongested, Napper::AllocRetry) | (ReclaimWait::ZoneCongested, _) => {
            wait_iff_congested(cx, zi, BLK_RW_ASYNC, timeout).await
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;
    use crate::engine::{HZ, NSEC_PER_MSEC};
    use crate::hw::block::{blk_queue_congestion_threshold, EndIo, Op, RequestList, BLK_RW_SYNC};
    use crate::process::Sim;
    use crate::sched::TaskClass;
    use crate::testing::{kernel_of, run_next};

    /// A 64 MiB machine with one slow disk: a 4 KiB write is one request and takes the
    /// disk exactly 1 ms (4.096 MB/s, no latency), so the i-th of writes queued together
    /// completes at i ms.
    fn machine(wait: &str) -> Kernel {
        kernel_of(&format!(
            r#"[machine]
memory_mb_per_node = 64
dma32_mb = 0
devices = [{{ name = "sdb", bandwidth_mb_s = 20, write_bandwidth_mb_s = 4.096, latency_us = 0, max_request_kb = 4 }}]
[workload]
kind = "dd"
tasks = 1
[variant]
reclaim_wait = "{wait}"
"#
        ))
    }

    /// `n` single-page async writes to device 0, submitted at time 0 (each completes in an
    /// event, as writeback's do).
    fn queue_writes(k: &mut Kernel, n: u64) {
        for i in 0..n {
            let bio = k.block.bios.alloc(0, Op::Write);
            k.block.bios[bio].end_io = EndIo::Writeback;
            k.submit_bio_endio_at(bio, 4096, i * 4096);
        }
    }

    /// Runs `wait` in a task woken at time 0 on `k` (after `n` writes queued), every event
    /// to the end; returns when the wait returned.
    fn wait_returns_at<F>(mut k: Kernel, n: u64, wait: F) -> Ns
    where
        F: FnOnce(
                Rc<crate::process::Cx>,
            ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
            + 'static,
    {
        queue_writes(&mut k, n);
        let mut sim = Sim::new(k);
        let back = Rc::new(Cell::new(Ns::MAX));
        let seen = Rc::clone(&back);
        let tid = sim.spawn("t".into(), 0, TaskClass::Workload, move |cx| async move {
            let cx = Rc::new(cx);
            wait(Rc::clone(&cx)).await;
            seen.set(cx.k().clock());
        });
        sim.k().sched.wake(tid, 0);
        while !sim.k().sched.queue.is_empty() {
            run_next(&mut sim);
        }
        let k = sim.k();
        // Every request freed, no bdi left congested.
        assert_eq!(k.block.devices[0].rl.count, [0, 0]);
        assert_eq!(k.wb.nr_bdi_congested, [0, 0]);
        back.get()
    }

    const HZ_10: Ns = JIFFY * (HZ / 10);

    fn congestion_wait_of(
        cx: Rc<crate::process::Cx>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
        Box::pin(async move { congestion_wait(&cx, BLK_RW_ASYNC, HZ_10).await })
    }

    fn wait_iff_congested_of(
        zi: usize,
    ) -> impl FnOnce(Rc<crate::process::Cx>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
    {
        move |cx| {
            Box::pin(async move { wait_iff_congested(&cx, Some(zi), BLK_RW_ASYNC, HZ_10).await })
        }
    }

    #[test]
    fn the_congestion_thresholds_are_blk_queue_congestion_thresholds() {
        // nr_requests - nr_requests/8 + 1 and nr_requests - nr_requests/8 - nr_requests/16 - 1:
        // 128 - 16 + 1 = 113, 128 - 16 - 8 - 1 = 103.
        assert_eq!(blk_queue_congestion_threshold(128), (113, 103));
        // 512 - 64 + 1 = 449, 512 - 64 - 32 - 1 = 415.
        assert_eq!(blk_queue_congestion_threshold(512), (449, 415));
        // 4: on 4 - 0 + 1 = 5, capped at 4; off 4 - 0 - 0 - 1 = 3.
        assert_eq!(blk_queue_congestion_threshold(4), (4, 3));
        // 1: on capped at 1, off floored at 1.
        assert_eq!(blk_queue_congestion_threshold(1), (1, 1));
    }

    #[test]
    fn a_queue_is_congested_from_113_requests_until_below_103() {
        let mut rl = RequestList::new(128);
        assert!(!rl.get_request(BLK_RW_ASYNC, 112));
        // The 113th: count + 1 >= 113 before it is counted.
        assert!(rl.get_request(BLK_RW_ASYNC, 1));
        assert_eq!(rl.count, [113, 0]);
        // Freed down to 103: not below the off threshold.
        assert!(!rl.freed_request(BLK_RW_ASYNC, 10));
        assert!(rl.freed_request(BLK_RW_ASYNC, 1));
        assert_eq!(rl.count[BLK_RW_ASYNC], 102);
        // The other direction is apart.
        assert!(!rl.get_request(BLK_RW_SYNC, 100));
        assert_eq!(rl.count, [102, 100]);
    }

    #[test]
    fn writes_congest_the_bdi_and_their_completions_clear_it() {
        let mut k = machine("congestion_wait");
        queue_writes(&mut k, 112);
        assert_eq!(k.wb.nr_bdi_congested[BLK_RW_ASYNC], 0);
        queue_writes(&mut k, 1);
        assert!(k.bdi_write_congested(0));
        assert_eq!(k.wb.nr_bdi_congested[BLK_RW_ASYNC], 1);
        // reclaim_throttle (6.x) counts nothing.
        let mut k = machine("reclaim_throttle");
        queue_writes(&mut k, 200);
        assert_eq!(k.block.devices[0].rl.count, [0, 0]);
        assert!(!k.bdi_write_congested(0));
    }

    #[test]
    fn congestion_wait_returns_when_the_congestion_clears() {
        // 113 writes: congested. The 11th completion (11 ms) leaves 102 < 103: cleared,
        // the sleeper woken, 89 ms before its timeout.
        let t = wait_returns_at(machine("congestion_wait"), 113, congestion_wait_of);
        assert_eq!(t, 11 * NSEC_PER_MSEC);
    }

    #[test]
    fn congestion_wait_returns_at_a_write_on_an_uncongested_queue_or_the_timeout() {
        // 2.6.36 wakes the sleepers at every request freed below the off threshold,
        // congested or not: one write, done at 1 ms.
        let t = wait_returns_at(machine("congestion_wait"), 1, congestion_wait_of);
        assert_eq!(t, NSEC_PER_MSEC);
        // Nothing in flight: the whole HZ/10.
        let t = wait_returns_at(machine("congestion_wait"), 0, congestion_wait_of);
        assert_eq!(t, HZ_10);
    }

    #[test]
    fn wait_iff_congested_sleeps_only_while_a_bdi_is_congested() {
        let zi = crate::testing::zone_of(&machine("wait_iff_congested"), 2);
        // One write in flight, no bdi congested: it returns at once (cond_resched).
        let t = wait_returns_at(machine("wait_iff_congested"), 1, wait_iff_congested_of(zi));
        assert!(t < NSEC_PER_MSEC, "{t}");
        // Congested: asleep until the congestion clears.
        let t = wait_returns_at(
            machine("wait_iff_congested"),
            113,
            wait_iff_congested_of(zi),
        );
        assert_eq!(t, 11 * NSEC_PER_MSEC);
    }

    #[test]
    fn wait_iff_congested_with_patch_8_also_asks_for_a_congested_zone() {
        let zi = crate::testing::zone_of(&machine("zone_congested"), 2);
        // A congested bdi, the zone not marked: no sleep.
        let t = wait_returns_at(machine("zone_congested"), 113, wait_iff_congested_of(zi));
        assert!(t < NSEC_PER_MSEC, "{t}");
        // Marked ZONE_CONGESTED: it sleeps until the bdi clears.
        let mut k = machine("zone_congested");
        k.mem.zones[zi].reclaim_congested = true;
        let t = wait_returns_at(k, 113, wait_iff_congested_of(zi));
        assert_eq!(t, 11 * NSEC_PER_MSEC);
    }

    #[test]
    fn may_write_to_queue_refuses_only_a_congested_bdi_to_others_than_its_writers() {
        let mut k = machine("zone_congested");
        let tid = k.add_task("t".into(), 0, TaskClass::Workload);
        k.current = tid;
        assert!(k.may_write_to_queue(0, false, 0));
        queue_writes(&mut k, 113);
        assert!(!k.may_write_to_queue(0, false, 0));
        // kswapd (PF_SWAPWRITE), a costly order, the device's own writer.
        assert!(k.may_write_to_queue(0, true, 0));
        assert!(k.may_write_to_queue(0, false, 4));
        k.sched.tasks[tid as usize].backing_dev_info = Some(0);
        assert!(k.may_write_to_queue(0, false, 0));
    }
}
