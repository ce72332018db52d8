//! Per-CPU state (the kernel's per-CPU areas): each zone's per-CPU page lists and NR_FREE_PAGES
//! deltas (`zone->per_cpu_pageset`, `zone->per_cpu_zonestats`: `mm::pcp`) and each CPU's
//! LRU-add batch (`cpu_fbatches.lru_add`, `mm::swap`), with the anon folios waiting in it.
//! Arrays by CPU, one per field, as the kernel's per-CPU variables are.

use super::lru::LruAddBatch;
use super::pcp::{PcpEra, PerCpuPages};
use super::zone::Zone;
use crate::engine::Ns;

/// `sysctl_stat_interval`: HZ, one second between `vmstat_update` runs on each CPU.
pub const STAT_INTERVAL_NS: Ns = 1_000_000_000;

pub struct PerCpu {
    /// The per-CPU page lists and vmstat deltas of every zone.
    pub pcp: PerCpuPages,
    /// When `vmstat_update` next folds every CPU's deltas (`round_jiffies_relative(HZ)`
    /// aligns each CPU's deferrable work to whole seconds, so all fold together here).
    pub next_vmstat_update: Ns,
    /// Pages in passage between a per-CPU list and the buddy lists (reused, never shrunk).
    pub scratch: Vec<u32>,
    /// `cpu_fbatches.lru_add`.
    pub lru_add: Vec<LruAddBatch>,
    /// The anon folios waiting in `lru_add`, which join the LRU when it drains
    /// (`mm::swap::Kernel::folio_add_lru_anon`).
    pub lru_add_anon: Vec<Vec<u32>>,
}

impl PerCpu {
    /// The state of `nr_cpus` CPUs (`cpus_of_node` on each node), every list and batch empty.
    pub fn new(nr_cpus: usize, zones: &mut [Zone], cpus_of_node: u32, era: PcpEra) -> PerCpu {
        PerCpu {
            pcp: PerCpuPages::new(zones, nr_cpus, cpus_of_node, era),
            next_vmstat_update: STAT_INTERVAL_NS,
            scratch: Vec::new(),
            lru_add: vec![LruAddBatch::default(); nr_cpus],
            lru_add_anon: vec![Vec::new(); nr_cpus],
        }
    }
}
