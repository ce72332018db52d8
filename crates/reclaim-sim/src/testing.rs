//! Helpers for the unit tests: small machines, pages placed by hand, and a kswapd thread
//! and a dd reader run event by event.

use crate::engine::EventKind;
use crate::kernel::Kernel;
use crate::mm::kswapd::kswapd_run;
use crate::mm::lru::LRU_INACTIVE_FILE;
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::MAX_NR_ZONES;
use crate::process::Sim;
use crate::{workload, Scenario};

/// One node of `mb` MiB, `dma32_mb` of it ZONE_DMA32 and the rest ZONE_NORMAL, all free.
pub fn kernel(mb: u64, dma32_mb: u64) -> Kernel {
    kernel_with(mb, dma32_mb, "")
}

/// `swapon` of a swap area of `slots` slots (the header included) on device 0, priority 0,
/// per-CPU cluster allocation; its index.
pub fn swapon(k: &mut Kernel, slots: u32) -> usize {
    let nr_cpus = k.cpus.nr_cpus();
    k.swap.swapon(crate::mm::swapfile::SwapInfo::new(
        slots,
        0,
        Some(0),
        false,
        crate::variant::SwapAlloc::Cluster,
        nr_cpus,
    ))
}

/// As [`kernel`], with more scenario text (a `[variant]` table, say).
pub fn kernel_with(mb: u64, dma32_mb: u64, extra: &str) -> Kernel {
    let text = format!(
        "[machine]\nmemory_mb_per_node = {mb}\ndma32_mb = {dma32_mb}\n[workload]\nkind = \"dd\"\ntasks = 1\n{extra}"
    );
    kernel_of(&text)
}

/// The kernel of a whole scenario's text, all memory free.
pub fn kernel_of(text: &str) -> Kernel {
    let s = Scenario::parse(text, "t.toml", &[]).unwrap();
    Kernel::new(
        &s.machine,
        &s.effective_sysctl(),
        &s.costs,
        &s.variant,
        s.seed,
    )
}

pub fn zone_of(k: &Kernel, zone_idx: usize) -> usize {
    k.mem.nodes[0]
        .zones
        .iter()
        .copied()
        .find(|&zi| k.mem.zones[zi].zone_idx == zone_idx)
        .unwrap()
}

/// Puts page `p` (of node 0) at the head of node 0's inactive file list, as page cache.
pub fn add_to_lru(k: &mut Kernel, p: u32) {
    let z = k.page_zonenum(p);
    k.mem.pages.fields_mut(p).owner = 0;
    k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, LRU_INACTIVE_FILE, z);
    k.mem.nodes[0].nr_file_pages += 1;
}

/// `n` order-0 pages taken off zone `zi`'s free lists, allocated and nowhere else.
pub fn take_pages(k: &mut Kernel, zi: usize, n: u32) -> Vec<u32> {
    (0..n)
        .map(|_| k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap())
        .collect()
}

/// A new file `mapping` on device 0 in directory `dir`, `pages` its page cache from index
/// 0, all written and dirty (`wb_new_inode`, `filemap_add_folios`, `generic_perform_write`).
pub fn write_new_file(k: &mut Kernel, mapping: u32, dir: u32, pages: &[u32]) {
    k.wb_new_inode(mapping, 0, dir);
    k.filemap_add_folios(mapping, 0, pages, 0);
    k.generic_perform_write(mapping, 0, pages, 0);
}

/// Takes pages off zone `zi`'s free lists until `free` are left: the first `lru` become
/// clean, unreferenced page cache on the inactive file list (reclaimable), the rest stay
/// allocated and are returned.
pub fn fill_zone(k: &mut Kernel, zi: usize, free: u64, lru: u64) -> Vec<u32> {
    let mut held = Vec::new();
    let mut on_lru = 0;
    while k.mem.zones[zi].nr_free_pages > free {
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        if on_lru < lru {
            add_to_lru(k, p);
            on_lru += 1;
        } else {
            held.push(p);
        }
    }
    held
}

/// A kswapd thread for node 0 (on its last CPU), asleep on kswapd_wait as runs start it.
pub fn add_kswapd(sim: &mut Sim) -> u32 {
    let cpn = sim.k().cpus.nr_cpus_per_node;
    kswapd_run(sim, 0, 1, cpn);
    *sim.k().mem.nodes[0].kswapd.last().unwrap()
}

/// A buffered dd reader (the dd workload with one task) on CPU 0, due to run at time 0.
pub fn add_dd(sim: &mut Sim) -> u32 {
    add_dd_with(sim, 2)
}

/// As [`add_dd`], with `readahead_depth` windows in flight.
pub fn add_dd_with(sim: &mut Sim, readahead_depth: i64) -> u32 {
    let id = sim.k().sched.tasks.len() as u32;
    let mut table = toml::Table::new();
    table.insert("tasks".into(), 1.into());
    table.insert("readahead_depth".into(), readahead_depth.into());
    let mut dd = workload::dd::REGISTRATION.build.expect("dd is simulated")(&table);
    dd.start(sim);
    id
}

/// Runs the next queued event; returns the id of the task it ran, if it ran one.
pub fn run_next(sim: &mut Sim) -> Option<u32> {
    let (t, ev) = sim.k().sched.queue.pop().expect("an event");
    match ev {
        EventKind::Task(id) => {
            sim.run_task(id, t);
            Some(id)
        }
        EventKind::Io(bio) => {
            sim.complete_io(bio, t);
            None
        }
        other => panic!("unexpected event {other:?}"),
    }
}

pub fn allocstalls(k: &Kernel) -> u64 {
    (0..MAX_NR_ZONES)
        .map(|z| k.stats.events.v[VmEvent::AllocstallDma as usize + z])
        .sum()
}
