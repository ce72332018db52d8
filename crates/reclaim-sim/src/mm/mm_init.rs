//! Booting the memory: the page array, each node's zones with all their memory free
//! (`free_area_init()`, mm/mm_init.c, 6.x), the boot-time watermarks and lowmem reserves
//! (`init_per_zone_wmark_min()`), the nodes' root lruvecs, and the zonelists
//! (`build_all_zonelists()`), into `Memory`, the kernel's part that holds them. One node's memory is one pfn range; node 0 starts with
//! ZONE_DMA32 when `[machine] dma32_mb` is set, and every node has a ZONE_NORMAL.

use crate::hw::lock::SpinLock;
use crate::hw::memory::MemoryBandwidth;
use crate::machine::{whole_blocks, Machine};
use crate::mm::boot_memory;
use crate::mm::lru::{Lruvec, NR_LRU_LISTS};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::numa::{build_node_orders, Zlc};
use crate::mm::page::Pages;
use crate::mm::page_ext::PageExt;
use crate::mm::zone::{
    calculate_min_free_kbytes, free_lists, setup_per_zone_lowmem_reserve, setup_per_zone_wmarks,
    zonelist_kswapd_nodes, PgData, Zone, MAX_NR_ZONES, MAX_ORDER_NR_PAGES, NR_FREE_LISTS,
    NR_PAGE_ORDERS, ZONE_DMA32, ZONE_NORMAL,
};
use crate::sched::WaitQueue;
use crate::sysctl::Sysctl;
use crate::variant::Variant;

/// Wait queues tasks sleep on until a folio is unlocked or its writeback ends, hashed by
/// pfn (`folio_waitqueue()`: the kernel's `folio_wait_table` of 256 queues).
pub const PAGE_WAIT_TABLE_SIZE: usize = 256;

/// The kernel's memory (`Kernel::mem`): the nodes and their zones, the page array and what
/// hangs off each page frame, as boot builds them and the allocator and reclaim change them.
pub struct Memory {
    /// `mem_map`: every page frame's state and the lists it is on.
    pub pages: Pages,
    /// Per-page state beside the page array (`mm::page_ext`).
    pub page_ext: PageExt,
    /// `folio_wait_table`: tasks waiting for a folio's unlock or writeback end.
    pub page_wait: Vec<WaitQueue>,
    pub zones: Vec<Zone>,
    /// Each zone's `zone->lock`.
    pub zone_lock: Vec<SpinLock>,
    /// `pg_data_t` of each node.
    pub nodes: Vec<PgData>,
    /// `node_zonelists[ZONELIST_FALLBACK]` per node: zone indices, local node first and the
    /// others nearest first (`mm::numa`), each node's zones from the highest type down.
    pub zonelists: Vec<Vec<usize>>,
    /// The zonelist cache of each node's fallback zonelist (`variant.zonelist_cache`).
    pub zlc: Vec<Zlc>,
    /// `[nid · MAX_NR_ZONES + highest_zoneidx]`: the nodes whose kswapd an allocation from
    /// `nid`'s zonelist wakes ([`zonelist_kswapd_nodes`]).
    pub kswapd_wake_nodes: Vec<Vec<u32>>,
    /// pfn → zone lookup: the zone index of each MAX_ORDER block.
    pub block_zone: Vec<u8>,
    /// `min_free_kbytes` as boot set it (the sysctl's value, or the kernel's own).
    pub min_free_kbytes: u64,
    /// Base pages held by reserved hugetlb pages (`mm::hugetlb`, a memory squeeze).
    pub hugetlb_pages: u64,
    /// Pages the kernel's own memory holds from the start (`pg::SLAB`, `mm::boot_memory`).
    pub kernel_pages: u64,
    /// Free pages compactions in progress hold as migration targets (their
    /// `cc->freepages`): off the free lists and out of NR_FREE_PAGES.
    pub compaction_freepages: u64,
    /// `node_distance(a, b)` at `[a · nodes + b]` (`mm::numa::node_distance`).
    pub node_distance: Vec<u32>,
    /// `policy_zone`: the highest populated zone type below ZONE_MOVABLE
    /// (`check_highest_zone()` in `build_zonelists()`), the lowest an MPOL_BIND applies to.
    pub policy_zone: usize,
}

/// The page frames of machine `m`: each node's memory in whole MAX_ORDER blocks.
pub fn nr_page_frames(m: &Machine) -> u32 {
    (whole_blocks(m.memory_mb_per_node) * m.nodes as u64) as u32
}

/// The zones of machine `m`: one per node, and ZONE_DMA32 on node 0 when it has one.
pub fn nr_zones(m: &Machine) -> u32 {
    m.nodes + u32::from(whole_blocks(m.dma32_mb) > 0)
}

/// `free_area_init()` and the rest of the memory's boot for machine `m`.
/// Returns the memory and each node's root lruvec (which `MemCgroups` holds).
pub fn free_area_init(m: &Machine, sysctl: &Sysctl, variant: &Variant) -> (Memory, Vec<Lruvec>) {
    let node_pages = whole_blocks(m.memory_mb_per_node);
    let dma32_pages = whole_blocks(m.dma32_mb);
    let nr_pages = nr_page_frames(m);
    let nr_lists_lru = m.nodes * NR_LRU_LISTS as u32;
    let mut pages = Pages::new(nr_pages, nr_lists_lru + nr_zones(m) * NR_FREE_LISTS as u32);
    let mut zones = Vec::new();
    let mut nodes = Vec::new();
    let mut pfn = 0u32;
    for nid in 0..m.nodes {
        let start = pfn;
        let mut zids = Vec::new();
        let mut layout = vec![];
        if nid == 0 && dma32_pages > 0 {
            layout.push((ZONE_DMA32, dma32_pages));
            layout.push((ZONE_NORMAL, node_pages - dma32_pages));
        } else {
            layout.push((ZONE_NORMAL, node_pages));
        }
        for (zone_idx, nr) in layout {
            let zi = zones.len();
            let lists = free_lists(&pages, nr_lists_lru + (zi * NR_FREE_LISTS) as u32);
            let mut zone = Zone::new(zone_idx, nid, pfn, nr, lists);
            zone.buddy_merge_likely = variant.buddy_merge_likely;
            zones.push(zone);
            zids.push(zi);
            pfn += nr as u32;
        }
        nodes.push(PgData {
            node_id: nid,
            zones: zids,
            start_pfn: start,
            end_pfn: pfn,
            memory: MemoryBandwidth::new(m.memory_bandwidth_mb_s_per_node),
            kswapd: vec![],
            kswapd_wait: WaitQueue::default(),
            kswapd_order: 0,
            kswapd_highest_zoneidx: MAX_NR_ZONES,
            kswapd_failures: 0,
            pfmemalloc_wait: WaitQueue::default(),
            kcompactd: None,
            kcompactd_wait: WaitQueue::default(),
            kcompactd_max_order: 0,
            // kcompactd() sets it to `pgdat->nr_zones - 1` as it starts: the node's
            // highest zone.
            kcompactd_highest_zoneidx: ZONE_NORMAL,
            nr_isolated: [0; 2],
            nr_file_pages: 0,
            nr_file_thps: 0,
            nr_anon_mapped: 0,
            nr_file_mapped: 0,
            nr_vmscan_write: 0,
            workingset: Default::default(),
            min_unmapped_pages: 0,
            reclaim_locked: false,
        });
    }
    let mut lruvecs: Vec<Lruvec> = (0..m.nodes)
        .map(|nid| {
            let base = nid * NR_LRU_LISTS as u32;
            let lists = std::array::from_fn(|l| pages.list(base + l as u32));
            Lruvec::new(nid, ROOT_MEM_CGROUP, lists)
        })
        .collect();
    let mut block_zone = vec![0u8; (nr_pages / MAX_ORDER_NR_PAGES) as usize];
    let mut kernel_pages = 0;
    for (zi, z) in zones.iter_mut().enumerate() {
        let mut p = z.start_pfn;
        while p < z.end_pfn() {
            block_zone[(p / MAX_ORDER_NR_PAGES) as usize] = zi as u8;
            p += MAX_ORDER_NR_PAGES;
        }
        let name = if z.zone_idx == ZONE_DMA32 {
            "DMA32"
        } else {
            "Normal"
        };
        match m
            .pageblocks
            .iter()
            .find(|b| b.node == z.nid && b.zone == name)
        {
            Some(b) => {
                let layout = boot_memory::zone_layout(z, b);
                kernel_pages += boot_memory::boot_zone(z, &mut pages, &layout);
                let lruvec = &mut lruvecs[z.nid as usize];
                let other = boot_memory::other_memory_onto_lru(z, &mut pages, &layout, lruvec);
                kernel_pages -= other.anon + other.file;
                nodes[z.nid as usize].nr_file_pages += other.file;
            }
            None => {
                let mut p = z.start_pfn;
                while p < z.end_pfn() {
                    z.free_one_page(&mut pages, p, (NR_PAGE_ORDERS - 1) as u32);
                    p += MAX_ORDER_NR_PAGES;
                }
            }
        }
    }
    // Boot-time watermarks: min_free_kbytes from all (low) memory, then the reserves.
    let lowmem_kbytes: u64 = zones.iter().map(|z| z.managed_pages * 4).sum();
    let min_free_kbytes = if sysctl.min_free_kbytes > 0 {
        sysctl.min_free_kbytes
    } else {
        calculate_min_free_kbytes(lowmem_kbytes, variant.min_free_kbytes_cap)
    };
    setup_per_zone_wmarks(&mut zones, min_free_kbytes, sysctl.watermark_scale_factor);
    for z in &mut zones {
        z.watermark_boost_factor = sysctl.watermark_boost_factor;
    }
    for node in &nodes {
        let mut managed = [0u64; MAX_NR_ZONES];
        for &zi in &node.zones {
            managed[zones[zi].zone_idx] = zones[zi].managed_pages;
        }
        let reserve = setup_per_zone_lowmem_reserve(&managed);
        for &zi in &node.zones {
            zones[zi].lowmem_reserve = reserve[zones[zi].zone_idx];
        }
    }
    // build_zonelists_in_node_order(): each node of the order, its zones from the highest.
    let zonelists: Vec<Vec<usize>> = build_node_orders(&m.node_distances, m.nodes)
        .iter()
        .map(|order| {
            order
                .iter()
                .flat_map(|&n| nodes[n as usize].zones.iter().rev().copied())
                .collect()
        })
        .collect();
    // setup_min_unmapped_ratio(): each zone's share, rounded down, summed per node.
    for z in &zones {
        nodes[z.nid as usize].min_unmapped_pages +=
            z.managed_pages * u64::from(sysctl.min_unmapped_ratio) / 100;
    }
    let node_distance = (0..m.nodes)
        .flat_map(|a| (0..m.nodes).map(move |b| (a, b)))
        .map(|(a, b)| crate::mm::numa::node_distance(&m.node_distances, a, b))
        .collect();
    let policy_zone = zones
        .iter()
        .filter(|z| z.managed_pages > 0 && z.zone_idx != crate::mm::zone::ZONE_MOVABLE)
        .map(|z| z.zone_idx)
        .max()
        .unwrap_or(0);
    let zlc = zonelists.iter().map(|zl| Zlc::new(zl.len())).collect();
    let kswapd_wake_nodes = zonelists
        .iter()
        .flat_map(|zl| (0..MAX_NR_ZONES).map(|hz| zonelist_kswapd_nodes(&zones, zl, hz)))
        .collect();
    let zone_lock = zones.iter().map(|z| SpinLock::new(z.nid)).collect();
    let memory = Memory {
        page_ext: PageExt::new(nr_pages),
        pages,
        page_wait: vec![WaitQueue::default(); PAGE_WAIT_TABLE_SIZE],
        zones,
        zone_lock,
        nodes,
        zonelists,
        zlc,
        kswapd_wake_nodes,
        block_zone,
        min_free_kbytes,
        hugetlb_pages: 0,
        kernel_pages,
        compaction_freepages: 0,
        node_distance,
        policy_zone,
    };
    (memory, lruvecs)
}
