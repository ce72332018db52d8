//! The state of memory cgroups (`struct mem_cgroup`, include/linux/memcontrol.h): each one's
//! limits, usage and events. Their code (charging, memory.high, memcg reclaim's entry) is
//! `mm::memcontrol`; the kernel state holds them with their lruvecs (`Kernel::memcg`).

use serde::Serialize;

use super::lru::Lruvec;

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
    /// memory.events `high`: reclaim for a task that took the cgroup above memory.high.
    pub high: u64,
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
            high: self.high - before.high,
        }
    }
}

/// `struct mem_cgroup`: its limit and usage in pages, and its events.
#[derive(Clone, Debug)]
pub struct MemCgroup {
    /// memory.max (u64::MAX: none).
    pub limit: u64,
    /// memory.high (u64::MAX: none).
    pub high: u64,
    /// memory.current.
    pub usage: u64,
    pub events: MemcgEvents,
}

impl MemCgroup {
    pub fn new(limit: u64) -> MemCgroup {
        MemCgroup {
            limit,
            high: u64::MAX,
            usage: 0,
            events: MemcgEvents::default(),
        }
    }
}

/// The memory cgroups and their lruvecs (the kernel's `mem_cgroup_per_node`).
pub struct MemCgroups {
    /// Memory cgroups by id, the root first.
    pub groups: Vec<MemCgroup>,
    /// One per (memory cgroup, node): `lruvecs[memcg · nr_nodes + nid]`.
    pub lruvecs: Vec<Lruvec>,
    /// The cgroup the workload's tasks run in (the root unless `memory.mode = "cgroup"`).
    pub workload: u16,
}

impl MemCgroups {
    /// The root cgroup alone (no limit), with each node's lruvec, `root_lruvecs`.
    pub fn new(root_lruvecs: Vec<Lruvec>) -> MemCgroups {
        MemCgroups {
            groups: vec![MemCgroup::new(u64::MAX)],
            lruvecs: root_lruvecs,
            workload: ROOT_MEM_CGROUP,
        }
    }

    /// The acquisitions of every lruvec's lru_lock, and those of them that had to wait.
    pub fn lru_lock_counts(&self) -> (u64, u64) {
        self.lruvecs.iter().fold((0, 0), |(acq, cont), l| {
            (acq + l.lru_lock.acquisitions, cont + l.lru_lock.contended)
        })
    }
}
