//! Memory cgroups (mm/memcontrol.c, 6.x, cgroup v2). The kernel keeps one lruvec per (memory
//! cgroup, node) and reclaims through `mem_cgroup_lruvec()` (`Kernel::mem_cgroup_lruvec`);
//! the model has that layout. The root cgroup (id 0) has no limit; a scenario with
//! `memory.mode = "cgroup"` runs its workload in one child cgroup with `memory.max`.
//!
//! A fault charges its page to the task's cgroup first (`try_charge`): at the limit the
//! charging task reclaims from the cgroup's own lruvecs (`try_to_free_mem_cgroup_pages`,
//! memcg reclaim), which counts in the cgroup's events, not in /proc/vmstat's
//! pgscan/pgsteal/allocstall, as on the real kernel. After MAX_RECLAIM_RETRIES passes that
//! leave no room, the cgroup's OOM killer would run: it is not modelled; the event is
//! counted and the charge goes through.
//!
//! memory.high (`memory.high_mb`): a charge that leaves the cgroup above it is owed by the
//! charging task, which pays on its way back to user space (`mem_cgroup_handle_over_high`,
//! here at the end of each fault): it reclaims the pages it charged above the line
//! (`reclaim_high`, memory.events `high`), then sleeps a penalty that grows with the square
//! of the overage (`calculate_high_delay`, in jiffies: none at `HZ / 100` or less, at most 2 s).
//!
//! Departure: the charge is checked before the page is allocated and counted when the
//! folio is committed (`commit_charge`), so tasks faulting at once can overshoot the limit
//! by a page each, as the kernel's per-CPU charge stock (64 pages) lets it overshoot.

use crate::engine::{HZ, JIFFY};
use crate::kernel::{Kernel, MAX_RECLAIM_RETRIES};
use crate::mm::lru::{Lruvec, NR_LRU_LISTS};
use crate::mm::mem_cgroup::{MemCgroup, ROOT_MEM_CGROUP};
use crate::mm::vmscan::{try_to_free_mem_cgroup_pages, SWAP_CLUSTER_MAX};
use crate::process::{sleep_until, Cx};

/// `try_charge()` of one page to `memcg` by the task of `cx`: while the cgroup is at its
/// limit, reclaim from it (`try_to_free_mem_cgroup_pages`, SWAP_CLUSTER_MAX pages a pass);
/// MAX_RECLAIM_RETRIES passes that reclaim nothing end in the (unmodelled) OOM killer.
pub async fn try_charge(cx: &Cx, memcg: u16) {
    if memcg == ROOT_MEM_CGROUP {
        return;
    }
    let mut nr_retries = MAX_RECLAIM_RETRIES;
    loop {
        if cx.k().mem_cgroup_charge_fits(memcg, cx.tid) {
            return;
        }
        cx.k().memcg.groups[memcg as usize].events.max += 1;
        let nr_reclaimed = try_to_free_mem_cgroup_pages(cx, memcg, 1).await;
        if cx.k().mem_cgroup_charge_fits(memcg, cx.tid) {
            return;
        }
        // A pass that reclaimed something retries for free (other chargers took the room).
        if nr_reclaimed > 0 {
            continue;
        }
        if nr_retries == 0 {
            cx.k().memcg.groups[memcg as usize].events.oom += 1;
            return;
        }
        nr_retries -= 1;
    }
}

/// `MEMCG_CHARGE_BATCH`: the pages a per-CPU charge stock takes from the cgroup at once.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// `MEMCG_MAX_HIGH_DELAY_JIFFIES`: 2 s.
const MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;

/// `calculate_high_delay()` for `nr_pages` charged above memory.high, in jiffies: the
/// overage (`(usage − high) / high`, 20 fractional bits) squared, scaled down by 2^14, times
/// the batches charged (`HZ·overage² >> 34` jiffies, rounded down, `· nr_pages /
/// MEMCG_CHARGE_BATCH`).
pub fn calculate_high_delay(usage: u64, high: u64, nr_pages: u64) -> u64 {
    if usage <= high || high == 0 {
        return 0;
    }
    let overage = (u128::from(usage - high) << 20) / u128::from(high);
    let jiffies = (overage * overage * u128::from(HZ)) >> 34;
    (jiffies * u128::from(nr_pages) / u128::from(MEMCG_CHARGE_BATCH)).min(u128::from(u64::MAX))
        as u64
}

/// `mem_cgroup_handle_over_high()`, on the task's way back to user space: if it has charged
/// a stock's worth of pages (MEMCG_CHARGE_BATCH) above memory.high, reclaim them from its
/// cgroup (`reclaim_high`, then SWAP_CLUSTER_MAX a retry) while that helps, then sleep the
/// penalty if it is over `HZ / 100` jiffies (2 at the model's HZ of 250: 8 ms).
///
/// Departure: the kernel's task owes pages a stock refill (64 pages) at a time, the model's
/// page by page; it pays once it owes a batch.
pub async fn mem_cgroup_handle_over_high(cx: &Cx, memcg: u16) {
    let nr_pages = {
        let mut k = cx.k();
        let t = &mut k.sched.tasks[cx.tid as usize];
        if t.memcg_nr_pages_over_high < MEMCG_CHARGE_BATCH {
            return;
        }
        std::mem::take(&mut t.memcg_nr_pages_over_high)
    };
    let mut nr_retries = MAX_RECLAIM_RETRIES;
    let mut in_retry = false;
    loop {
        let goal = if in_retry { SWAP_CLUSTER_MAX } else { nr_pages };
        let nr_reclaimed = reclaim_high(cx, memcg, goal).await;
        let penalty = {
            let k = cx.k();
            let m = &k.memcg.groups[memcg as usize];
            calculate_high_delay(m.usage, m.high, nr_pages).min(MAX_HIGH_DELAY_JIFFIES)
        };
        if penalty <= HZ / 100 {
            return;
        }
        if nr_reclaimed > 0 || nr_retries > 0 {
            if nr_reclaimed == 0 {
                nr_retries -= 1;
            }
            in_retry = true;
            continue;
        }
        let until = cx.k().clock() + penalty * JIFFY;
        sleep_until(cx, until).await;
        return;
    }
}

/// `reclaim_high()`: memcg reclaim of `nr_pages` from `memcg` if it is above memory.high
/// (memory.events `high`). Returns the pages reclaimed.
async fn reclaim_high(cx: &Cx, memcg: u16, nr_pages: u64) -> u64 {
    {
        let mut k = cx.k();
        let m = &mut k.memcg.groups[memcg as usize];
        if m.usage <= m.high {
            return 0;
        }
        m.events.high += 1;
    }
    try_to_free_mem_cgroup_pages(cx, memcg, nr_pages).await
}

impl Kernel {
    /// Whether one more page fits under `memcg`'s memory.max; if it does and takes the
    /// cgroup above memory.high, task `tid` owes it (`memcg_nr_pages_over_high`). The page
    /// counts in the usage once committed.
    fn mem_cgroup_charge_fits(&mut self, memcg: u16, tid: u32) -> bool {
        let m = &self.memcg.groups[memcg as usize];
        if m.usage >= m.limit {
            return false;
        }
        if m.usage >= m.high {
            self.sched.tasks[tid as usize].memcg_nr_pages_over_high += 1;
        }
        true
    }

    /// Create a child of the root cgroup with memory.max `limit` pages: its lruvecs (one
    /// per node, their lists added to the page array) follow the root's. Returns its id.
    pub fn mem_cgroup_create(&mut self, limit: u64) -> u16 {
        let id = u16::try_from(self.memcg.groups.len()).expect("fewer than 65536 cgroups");
        for nid in 0..self.mem.nodes.len() as u32 {
            let first = self.mem.pages.add_lists(NR_LRU_LISTS as u32);
            let lists = std::array::from_fn(|l| self.mem.pages.list(first + l as u32));
            self.memcg.lruvecs.push(Lruvec::new(nid, id, lists));
        }
        debug_assert_eq!(
            self.memcg.lruvecs.len(),
            self.memcg.groups.len() * self.mem.nodes.len() + self.mem.nodes.len()
        );
        self.memcg.groups.push(MemCgroup::new(limit));
        id
    }

    /// `commit_charge()`: folio `p` belongs to `memcg` (`folio_memcg`), whose lruvecs it
    /// joins, and counts in its usage. The root's folios need no side array.
    pub fn mem_cgroup_commit_charge(&mut self, p: u32, memcg: u16) {
        if memcg != ROOT_MEM_CGROUP {
            self.mem.page_ext.memcg_mut()[p as usize] = memcg;
            self.memcg.groups[memcg as usize].usage += 1;
        }
    }

    /// `mem_cgroup_uncharge()` of folio `p` as it is freed: it leaves its cgroup.
    pub fn mem_cgroup_uncharge_folio(&mut self, p: u32) {
        if let Some(m) = self.mem.page_ext.memcg.as_mut() {
            let memcg = std::mem::replace(&mut m[p as usize], ROOT_MEM_CGROUP);
            if memcg != ROOT_MEM_CGROUP {
                self.memcg.groups[memcg as usize].usage -= 1;
            }
        }
    }

    /// Whether reclaim on behalf of `target` is memcg reclaim (`cgroup_reclaim()`).
    pub fn is_cgroup_reclaim(target: u16) -> bool {
        target != ROOT_MEM_CGROUP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_delay_grows_with_the_square_of_the_overage() {
        let high = 1 << 20;
        assert_eq!(calculate_high_delay(high, high, 64), 0, "at the line: none");
        // 2 % over, a batch: (20 971/2^20)² · 250 >> 14 = 6.4 → 6 jiffies (24 ms).
        assert_eq!(calculate_high_delay(high + high / 50, high, 64), 6);
        // 1 %: a quarter, 1 jiffy, at most HZ/100: no sleep.
        assert_eq!(calculate_high_delay(high + high / 100, high, 64), 1);
        // Half the pages, half the delay (rounded down).
        assert_eq!(calculate_high_delay(high + high / 50, high, 32), 3);
        // Double the memory.high: 64 s, which the caller clamps at 2 s.
        assert_eq!(calculate_high_delay(2 * high, high, 64), 64 * HZ);
    }
}
