//! Per-CPU state (the kernel's per-CPU areas): each CPU's page-list refill state
//! (`struct per_cpu_pages`, kept for its cost only: `mm::page_alloc`) and its LRU-add batch
//! (`cpu_fbatches.lru_add`, `mm::swap`), with the anon folios waiting in it. Arrays by CPU,
//! one per field, as the kernel's per-CPU variables are.

use super::lru::LruAddBatch;
use super::zone::PcpCredit;

pub struct PerCpu {
    /// `zone->per_cpu_pageset`: the per-CPU page list refill state (cost only).
    pub pcp: Vec<PcpCredit>,
    /// `cpu_fbatches.lru_add`.
    pub lru_add: Vec<LruAddBatch>,
    /// The anon folios waiting in `lru_add`, which join the LRU when it drains
    /// (`mm::swap::Kernel::folio_add_lru_anon`).
    pub lru_add_anon: Vec<Vec<u32>>,
}

impl PerCpu {
    /// The state of `nr_cpus` CPUs, every batch empty.
    pub fn new(nr_cpus: usize) -> PerCpu {
        PerCpu {
            pcp: vec![PcpCredit::default(); nr_cpus],
            lru_add: vec![LruAddBatch::default(); nr_cpus],
            lru_add_anon: vec![Vec::new(); nr_cpus],
        }
    }
}
