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
//! Departure: the charge is checked before the page is allocated and counted when the
//! folio is committed (`commit_charge`), so tasks faulting at once can overshoot the limit
//! by a page each, as the kernel's per-CPU charge stock (64 pages) lets it overshoot.

use serde::Serialize;

use crate::kernel::{Kernel, MAX_RECLAIM_RETRIES};
use crate::mm::lru::{Lruvec, NR_LRU_LISTS};
use crate::mm::vmscan::try_to_free_mem_cgroup_pages;
use crate::process::Cx;

/// The root memory cgroup's id (`root_mem_cgroup`).
pub const ROOT_MEM_CGROUP: u16 = 0;

/// A cgroup's event counters: memory.stat's reclaim and fault items and memory.events'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemcgEvents {
    pub pgscan_kswapd: u64,
    pub pgscan_direct: u64,
    pub pgsteal_kswapd: u64,
    pub pgsteal_direct: u64,
    /// memory.events `max`: charges that found the cgroup at its limit.
    pub max: u64,
    /// memory.events `oom`: reclaim gave up (the OOM killer is not modelled).
    pub oom: u64,
}

impl MemcgEvents {
    /// The counts since `before`.
    pub fn since(&self, before: &MemcgEvents) -> MemcgEvents {
        MemcgEvents {
            pgscan_kswapd: self.pgscan_kswapd - before.pgscan_kswapd,
            pgscan_direct: self.pgscan_direct - before.pgscan_direct,
            pgsteal_kswapd: self.pgsteal_kswapd - before.pgsteal_kswapd,
            pgsteal_direct: self.pgsteal_direct - before.pgsteal_direct,
            max: self.max - before.max,
            oom: self.oom - before.oom,
        }
    }
}

/// `struct mem_cgroup`: its limit and usage in pages, and its events.
#[derive(Clone, Debug)]
pub struct MemCgroup {
    /// memory.max (u64::MAX: none).
    pub limit: u64,
    /// memory.current.
    pub usage: u64,
    pub events: MemcgEvents,
}

impl MemCgroup {
    pub fn new(limit: u64) -> MemCgroup {
        MemCgroup {
            limit,
            usage: 0,
            events: MemcgEvents::default(),
        }
    }
}

/// `try_charge()` of one page to `memcg` by the task of `cx`: while the cgroup is at its
/// limit, reclaim from it (`try_to_free_mem_cgroup_pages`, SWAP_CLUSTER_MAX pages a pass);
/// MAX_RECLAIM_RETRIES passes that reclaim nothing end in the (unmodelled) OOM killer.
pub async fn try_charge(cx: &Cx, memcg: u16) {
    if memcg == ROOT_MEM_CGROUP {
        return;
    }
    let mut nr_retries = MAX_RECLAIM_RETRIES;
    loop {
        {
            let mut k = cx.k();
            let m = &mut k.memcgs[memcg as usize];
            if m.usage < m.limit {
                return;
            }
            m.events.max += 1;
        }
        let nr_reclaimed = try_to_free_mem_cgroup_pages(cx, memcg, 1).await;
        {
            let k = cx.k();
            let m = &k.memcgs[memcg as usize];
            if m.usage < m.limit {
                return;
            }
        }
        // A pass that reclaimed something retries for free (other chargers took the room).
        if nr_reclaimed > 0 {
            continue;
        }
        if nr_retries == 0 {
            cx.k().memcgs[memcg as usize].events.oom += 1;
            return;
        }
        nr_retries -= 1;
    }
}

impl Kernel {
    /// Create a child of the root cgroup with memory.max `limit` pages: its lruvecs (one
    /// per node, their lists added to the page array) follow the root's. Returns its id.
    pub fn mem_cgroup_create(&mut self, limit: u64) -> u16 {
        let id = u16::try_from(self.memcgs.len()).expect("fewer than 65536 cgroups");
        for nid in 0..self.nodes.len() as u32 {
            let first = self.pages.add_lists(NR_LRU_LISTS as u32);
            let lists = std::array::from_fn(|l| self.pages.list(first + l as u32));
            self.lruvecs.push(Lruvec::new(nid, id, lists));
        }
        debug_assert_eq!(
            self.lruvecs.len(),
            self.memcgs.len() * self.nodes.len() + self.nodes.len()
        );
        self.memcgs.push(MemCgroup::new(limit));
        id
    }

    /// `commit_charge()`: folio `p` belongs to `memcg` (`folio_memcg`), whose lruvecs it
    /// joins, and counts in its usage. The root's folios need no side array.
    pub fn mem_cgroup_commit_charge(&mut self, p: u32, memcg: u16) {
        if memcg != ROOT_MEM_CGROUP {
            self.page_ext.memcg_mut()[p as usize] = memcg;
            self.memcgs[memcg as usize].usage += 1;
        }
    }

    /// `mem_cgroup_uncharge()` of folio `p` as it is freed: it leaves its cgroup.
    pub fn mem_cgroup_uncharge_folio(&mut self, p: u32) {
        if let Some(m) = self.page_ext.memcg.as_mut() {
            let memcg = std::mem::replace(&mut m[p as usize], ROOT_MEM_CGROUP);
            if memcg != ROOT_MEM_CGROUP {
                self.memcgs[memcg as usize].usage -= 1;
            }
        }
    }

    /// Whether reclaim on behalf of `target` is memcg reclaim (`cgroup_reclaim()`).
    pub fn is_cgroup_reclaim(target: u16) -> bool {
        target != ROOT_MEM_CGROUP
    }
}
