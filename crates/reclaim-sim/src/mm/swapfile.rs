//! Swap areas (mm/swapfile.c, 6.x): `swapon`, the slot allocator that decides which slots
//! neighbour each other on the device, `swap_map` (each slot's users) and the swap cache's
//! index (mm/swap_state.c keeps it in an xarray; here a flat array per slot).
//!
//! Slot allocation, `variant.swap_alloc`:
//! * `"cluster"` (the kernel's for non-rotational devices since 3.14, and its only one since
//!   6.12): each CPU owns a cluster of SWAPFILE_CLUSTER slots and takes its slots in order;
//!   a full cluster is left for a free one, then for one with free slots (`nonfull`, oldest
//!   first). Slots freed make a cluster non-full, or free once all are.
//! * `"scan"` (`scan_swap_map()` of rotational devices before 6.12, simplified): one cursor
//!   for the whole area, `cluster_next`, moving forward to the next free slot and wrapping.
//!
//! When no cluster is free or non-full, a CPU scans the whole map for a free slot (the
//! fallback of `scan_swap_map_slots()` up to 6.11).
//!
//! Departure: the per-CPU swap slots cache (batches of 64 slots, removed in 6.13) and
//! large-folio (mTHP) allocations are not modelled; each anon folio is one page with one
//! mapping (no fork), so a slot has at most one page-table user besides the swap cache.

use std::collections::VecDeque;

use crate::sysctl::Sysctl;
use crate::variant::{SwapAlloc, SwapReadahead, Variant};

/// Slots per cluster (`SWAPFILE_CLUSTER`, HPAGE_PMD_NR on x86-64).
pub const SWAPFILE_CLUSTER: u32 = 512;
/// `swap_map` bit: the swap cache holds the slot's folio (or is about to).
pub const SWAP_HAS_CACHE: u8 = 0x40;
/// No page: a swap-cache index entry that is empty.
pub const NO_PAGE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClusterState {
    Free,
    /// On the `nonfull` list: some slots free, owned by no CPU.
    Nonfull,
    Full,
    /// A CPU takes its slots.
    Owned,
}

/// One swap area (`struct swap_info_struct`).
pub struct SwapInfo {
    /// `swapon -p`.
    pub prio: i32,
    /// The block device its I/O goes to (an index into `Kernel::devices`); `None` for a
    /// synchronous RAM device (zram), whose reads and writes complete as they are issued.
    pub dev: Option<usize>,
    /// SWP_ROTATION: on a rotational device VMA-based readahead is off (`nr_rotate_swap`).
    pub rotational: bool,
    /// Where slot 0 is on the device, in bytes (swap files on one device lie apart).
    pub base: u64,
    /// Slots, slot 0 (the header) included (`si->max`).
    pub max: u32,
    /// Users of each slot: page-table references in the low bits, SWAP_HAS_CACHE.
    pub swap_map: Box<[u8]>,
    /// The swap cache: the folio at each slot, or NO_PAGE.
    pub cache: Box<[u32]>,
    /// The shadow an evicted folio left in its slot (`mm::workingset`), or 0: the kernel
    /// keeps it in the swap cache's xarray in the folio's place. Empty unless
    /// `enable_shadows` (kernels before 5.9 left no anon shadows).
    shadow: Box<[u64]>,
    /// Slots in use (`si->inuse_pages`), the header included.
    pub inuse_pages: u32,
    alloc: SwapAlloc,
    cluster_used: Box<[u16]>,
    cluster_state: Box<[ClusterState]>,
    free_clusters: VecDeque<u32>,
    nonfull_clusters: VecDeque<u32>,
    /// Per CPU: its cluster and the next slot to try in it.
    percpu_cluster: Vec<Option<(u32, u32)>>,
    /// The scan allocator's cursor.
    cluster_next: u32,
}

impl SwapInfo {
    /// `swapon()` of an area of `nr_slots` slots (the header slot 0 is never used).
    pub fn new(
        nr_slots: u32,
        prio: i32,
        dev: Option<usize>,
        rotational: bool,
        alloc: SwapAlloc,
        nr_cpus: u32,
    ) -> SwapInfo {
        assert!(nr_slots >= 2, "a swap area needs a slot besides its header");
        let nr_clusters = nr_slots.div_ceil(SWAPFILE_CLUSTER);
        let mut swap_map = vec![0u8; nr_slots as usize].into_boxed_slice();
        swap_map[0] = 1; // the header
        let mut cluster_used = vec![0u16; nr_clusters as usize].into_boxed_slice();
        cluster_used[0] = 1;
        // The last cluster's slots beyond the area count as used, so it is never free.
        let tail = nr_clusters * SWAPFILE_CLUSTER - nr_slots;
        cluster_used[nr_clusters as usize - 1] += tail as u16;
        let cluster_state: Box<[ClusterState]> = cluster_used
            .iter()
            .map(|&u| {
                if u == 0 {
                    ClusterState::Free
                } else {
                    ClusterState::Nonfull
                }
            })
            .collect();
        let free_clusters = (0..nr_clusters)
            .filter(|&c| cluster_state[c as usize] == ClusterState::Free)
            .collect();
        let nonfull_clusters = (0..nr_clusters)
            .filter(|&c| cluster_state[c as usize] == ClusterState::Nonfull)
            .collect();
        SwapInfo {
            prio,
            dev,
            rotational,
            base: 0,
            max: nr_slots,
            swap_map,
            cache: vec![NO_PAGE; nr_slots as usize].into_boxed_slice(),
            shadow: Box::default(),
            inuse_pages: 1,
            alloc,
            cluster_used,
            cluster_state,
            free_clusters,
            nonfull_clusters,
            percpu_cluster: vec![None; nr_cpus as usize],
            cluster_next: 1,
        }
    }

    /// Keep the shadows evicted folios leave in their slots (5.9 on).
    pub fn enable_shadows(&mut self) {
        self.shadow = vec![0; self.max as usize].into_boxed_slice();
    }

    /// Whether evicted folios leave shadows here (`enable_shadows`).
    pub fn keeps_shadows(&self) -> bool {
        !self.shadow.is_empty()
    }

    /// The shadow in `slot` (0: none).
    pub fn shadow(&self, slot: u32) -> u64 {
        self.shadow.get(slot as usize).copied().unwrap_or(0)
    }

    /// Leave `shadow` in `slot`, whose folio is being evicted (`keeps_shadows`).
    pub fn set_shadow(&mut self, slot: u32, shadow: u64) {
        self.shadow[slot as usize] = shadow;
    }

    /// Take the shadow out of `slot` as a folio is read back into it (0: none).
    pub fn take_shadow(&mut self, slot: u32) -> u64 {
        self.shadow.get_mut(slot as usize).map_or(0, std::mem::take)
    }

    /// Free slots (this area's part of `nr_swap_pages`).
    pub fn nr_free(&self) -> u64 {
        u64::from(self.max - self.inuse_pages)
    }

    /// Bytes of per-slot state.
    pub fn state_bytes(&self) -> u64 {
        SwapInfo::state_bytes_for(self.max, self.keeps_shadows())
    }

    /// Bytes of per-slot state of an area of `nr_slots` slots, with or without shadows:
    /// swap_map 1, cache 4, shadow 8 a slot; 3 a cluster.
    pub fn state_bytes_for(nr_slots: u32, shadows: bool) -> u64 {
        let slots = u64::from(nr_slots);
        slots * 5
            + if shadows { slots * 8 } else { 0 }
            + u64::from(nr_slots.div_ceil(SWAPFILE_CLUSTER)) * 3
    }

    /// Is slot `slot` in use (by a page table or the swap cache)?
    #[inline]
    pub fn in_use(&self, slot: u32) -> bool {
        self.swap_map[slot as usize] != 0
    }

    /// Does a page table still refer to slot `slot` (`swap_entry_swapped`)?
    #[inline]
    pub fn swapped(&self, slot: u32) -> bool {
        self.swap_map[slot as usize] & !SWAP_HAS_CACHE != 0
    }

    /// `folio_alloc_swap()` → `get_swap_pages()` by a task on `cpu`: a free slot, its
    /// `swap_map` SWAP_HAS_CACHE (the folio joins the swap cache). None when the area is full.
    pub fn get_swap_page(&mut self, cpu: u32) -> Option<u32> {
        if self.inuse_pages == self.max {
            return None;
        }
        let slot = match self.alloc {
            SwapAlloc::Cluster => self.alloc_cluster_slot(cpu),
            SwapAlloc::Scan => self.scan_swap_map(),
        }?;
        debug_assert_eq!(self.swap_map[slot as usize], 0);
        self.swap_map[slot as usize] = SWAP_HAS_CACHE;
        self.inuse_pages += 1;
        let c = (slot / SWAPFILE_CLUSTER) as usize;
        self.cluster_used[c] += 1;
        if self.cluster_used[c] as u32 == SWAPFILE_CLUSTER
            && self.cluster_state[c] != ClusterState::Owned
        {
            self.cluster_state[c] = ClusterState::Full;
        }
        Some(slot)
    }

    /// The next free slot of `cpu`'s cluster, taking a new cluster when it has none left.
    fn alloc_cluster_slot(&mut self, cpu: u32) -> Option<u32> {
        loop {
            if let Some((c, next)) = self.percpu_cluster[cpu as usize] {
                let end = ((c + 1) * SWAPFILE_CLUSTER).min(self.max);
                if let Some(slot) = (next..end).find(|&s| self.swap_map[s as usize] == 0) {
                    self.percpu_cluster[cpu as usize] = Some((c, slot + 1));
                    return Some(slot);
                }
                // The cluster is used up as far as this CPU goes: let it go.
                self.percpu_cluster[cpu as usize] = None;
                self.cluster_state[c as usize] =
                    if self.cluster_used[c as usize] as u32 == SWAPFILE_CLUSTER {
                        ClusterState::Full
                    } else {
                        self.nonfull_clusters.push_back(c);
                        ClusterState::Nonfull
                    };
            }
            let Some(c) = self.take_cluster() else {
                // No free or non-full cluster: the free slots are in other CPUs' clusters.
                // Fall back to scanning the whole map (`scan_swap_map_slots`, up to 6.11).
                return self.scan_swap_map();
            };
            self.cluster_state[c as usize] = ClusterState::Owned;
            self.percpu_cluster[cpu as usize] = Some((c, c * SWAPFILE_CLUSTER));
        }
    }

    /// A free cluster, else the oldest non-full one (stale list entries are skipped).
    fn take_cluster(&mut self) -> Option<u32> {
        while let Some(c) = self.free_clusters.pop_front() {
            if self.cluster_state[c as usize] == ClusterState::Free {
                return Some(c);
            }
        }
        while let Some(c) = self.nonfull_clusters.pop_front() {
            if self.cluster_state[c as usize] == ClusterState::Nonfull
                && (self.cluster_used[c as usize] as u32) < SWAPFILE_CLUSTER
            {
                return Some(c);
            }
        }
        None
    }

    /// `scan_swap_map()`: the first free slot from `cluster_next` on, wrapping once.
    fn scan_swap_map(&mut self) -> Option<u32> {
        let start = self.cluster_next.max(1);
        let slot = (start..self.max)
            .chain(1..start)
            .find(|&s| self.swap_map[s as usize] == 0)?;
        self.cluster_next = if slot + 1 < self.max { slot + 1 } else { 1 };
        Some(slot)
    }

    /// `swap_duplicate()`: a page table takes a reference on `slot` (`try_to_unmap`).
    #[inline]
    pub fn swap_duplicate(&mut self, slot: u32) {
        debug_assert!(self.in_use(slot));
        self.swap_map[slot as usize] += 1;
    }

    /// `swap_free()`: a page table drops its reference on `slot`; the slot is freed when
    /// nothing else holds it.
    #[inline]
    pub fn swap_free(&mut self, slot: u32) {
        debug_assert!(self.swapped(slot));
        self.swap_map[slot as usize] -= 1;
        if self.swap_map[slot as usize] == 0 {
            self.free_slot(slot);
        }
    }

    /// `put_swap_folio()`: the swap cache lets go of `slot` (SWAP_HAS_CACHE cleared); the
    /// slot is freed when no page table refers to it.
    #[inline]
    pub fn put_swap_folio(&mut self, slot: u32) {
        debug_assert!(self.swap_map[slot as usize] & SWAP_HAS_CACHE != 0);
        self.swap_map[slot as usize] &= !SWAP_HAS_CACHE;
        if self.swap_map[slot as usize] == 0 {
            self.free_slot(slot);
        }
    }

    fn free_slot(&mut self, slot: u32) {
        self.inuse_pages -= 1;
        // swap_range_free() → clear_shadow_from_swap_cache().
        if let Some(s) = self.shadow.get_mut(slot as usize) {
            *s = 0;
        }
        let c = (slot / SWAPFILE_CLUSTER) as usize;
        self.cluster_used[c] -= 1;
        if self.alloc == SwapAlloc::Scan {
            return; // the scan allocator keeps no cluster lists
        }
        match self.cluster_state[c] {
            ClusterState::Owned => {}
            _ if self.cluster_used[c] == 0 => {
                self.cluster_state[c] = ClusterState::Free;
                self.free_clusters.push_back(c as u32);
            }
            ClusterState::Full => {
                self.cluster_state[c] = ClusterState::Nonfull;
                self.nonfull_clusters.push_back(c as u32);
            }
            ClusterState::Free | ClusterState::Nonfull => {}
        }
    }
}

/// Swap areas and the readahead state shared by all of them.
pub struct SwapState {
    /// Areas by `swp_type`, in swapon order.
    pub areas: Vec<SwapInfo>,
    /// `swap_avail_heads`: the areas by falling priority, those of equal priority in the
    /// order they take their next turn.
    avail: Vec<usize>,
    /// `least_priority`: the last default priority given.
    least_priority: i32,
    /// `swapin_readahead_hits`: hits of cluster readahead since the last window.
    pub readahead_hits: u32,
    /// `swapin_nr_pages()`'s `prev_offset` and `last_readahead_pages`.
    pub prev_offset: u32,
    pub last_readahead_pages: u32,
    /// `page_cluster`: readahead windows are at most 2^page_cluster pages.
    pub page_cluster: u32,
    /// `enable_vma_readahead` (the kernel's sysfs switch, and the model's variant).
    pub enable_vma_readahead: bool,
}

impl SwapState {
    pub fn new(sysctl: &Sysctl, variant: &Variant) -> SwapState {
        SwapState {
            areas: Vec::new(),
            avail: Vec::new(),
            least_priority: -1,
            readahead_hits: 0,
            prev_offset: 0,
            last_readahead_pages: 0,
            page_cluster: sysctl.page_cluster,
            enable_vma_readahead: sysctl.vma_ra_enabled
                && variant.swap_readahead == SwapReadahead::Vma,
        }
    }

    /// `swapon()` of area `si`: it takes the next `swp_type`, and its place in the
    /// allocation order behind the areas of higher or equal priority. A negative priority
    /// is the default (`swapon` without `-p`): the kernel's `setup_swap_info()` gives such
    /// areas −2, −3, … in swapon order, so the first fills first. Departure: the kernel
    /// lifts a default-priority area to the top on its own NUMA node (per-node
    /// `swap_avail_heads`); the model's areas belong to no node.
    pub fn swapon(&mut self, mut si: SwapInfo) -> usize {
        if si.prio < 0 {
            self.least_priority -= 1;
            si.prio = self.least_priority;
        }
        let area = self.areas.len();
        let at = self
            .avail
            .iter()
            .position(|&a| self.areas[a].prio < si.prio)
            .unwrap_or(self.avail.len());
        self.areas.push(si);
        self.avail.insert(at, area);
        area
    }

    /// `get_swap_pages()` for one slot: from the highest-priority area with one free, areas
    /// of equal priority taking turns (each is requeued behind its equals as it is tried,
    /// `plist_requeue`). Departures: the kernel's per-CPU swap slots cache (until 6.14)
    /// takes 64 slots from an area at a time, so equal areas alternate by batches, not by
    /// slots; and the kernel takes a full area off the list and puts it back behind its
    /// equals when a slot frees, where the model's keeps its place.
    pub fn get_swap_page(&mut self, cpu: u32) -> Option<(usize, u32)> {
        let mut tried = 0u32; // each area once
        let mut i = 0;
        while i < self.avail.len() {
            let area = self.avail[i];
            if tried & (1 << area) != 0 || self.areas[area].nr_free() == 0 {
                i += 1;
                continue;
            }
            tried |= 1 << area;
            let prio = self.areas[area].prio;
            let mut j = i;
            while j + 1 < self.avail.len() && self.areas[self.avail[j + 1]].prio == prio {
                self.avail.swap(j, j + 1);
                j += 1;
            }
            if let Some(slot) = self.areas[area].get_swap_page(cpu) {
                return Some((area, slot));
            }
            // Full after all: its next equal, if any, moved up into place i.
            if j == i {
                i += 1;
            }
        }
        None
    }

    /// `total_swap_pages`.
    pub fn total_swap_pages(&self) -> u64 {
        self.areas.iter().map(|a| u64::from(a.max - 1)).sum()
    }

    /// `get_nr_swap_pages()`: free slots.
    pub fn nr_swap_pages(&self) -> u64 {
        self.areas.iter().map(|a| a.nr_free()).sum()
    }

    /// `vm_swap_full()`: more than half the swap space in use.
    pub fn vm_swap_full(&self) -> bool {
        self.nr_swap_pages() * 2 < self.total_swap_pages()
    }

    /// `swap_use_vma_readahead()`.
    pub fn use_vma_readahead(&self) -> bool {
        self.enable_vma_readahead && !self.areas.iter().any(|a| a.rotational)
    }

    pub fn state_bytes(&self) -> u64 {
        self.areas.iter().map(|a| a.state_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(slots: u32, alloc: SwapAlloc) -> SwapInfo {
        SwapInfo::new(slots, 0, Some(0), false, alloc, 2)
    }

    #[test]
    fn each_cpu_fills_its_own_cluster_in_order() {
        let mut si = area(4 * SWAPFILE_CLUSTER, SwapAlloc::Cluster);
        // CPU 0 takes the first free cluster (cluster 0 holds the header, so it is
        // non-full and comes after the free ones), CPU 1 the next.
        let a: Vec<u32> = (0..3).map(|_| si.get_swap_page(0).unwrap()).collect();
        let b: Vec<u32> = (0..3).map(|_| si.get_swap_page(1).unwrap()).collect();
        assert_eq!(a, vec![512, 513, 514]);
        assert_eq!(b, vec![1024, 1025, 1026]);
        // Interleaved allocations stay in their clusters.
        assert_eq!(si.get_swap_page(0), Some(515));
        assert_eq!(si.inuse_pages, 1 + 7);
    }

    #[test]
    fn a_used_up_cluster_gives_way_to_a_free_then_a_nonfull_one() {
        let mut si = area(2 * SWAPFILE_CLUSTER, SwapAlloc::Cluster);
        for s in 512..1024 {
            assert_eq!(si.get_swap_page(0), Some(s));
        }
        // Cluster 1 is full; cluster 0 (header only) is the non-full one left.
        assert_eq!(si.get_swap_page(0), Some(1));
        // Free a slot of cluster 1: it becomes non-full and is taken after cluster 0.
        si.put_swap_folio(700);
        for s in 2..512 {
            assert_eq!(si.get_swap_page(0), Some(s));
        }
        assert_eq!(si.get_swap_page(0), Some(700));
        assert_eq!(si.get_swap_page(0), None, "the area is full");
        assert_eq!(si.nr_free(), 0);
    }

    #[test]
    fn with_every_cluster_taken_a_cpu_scans_for_a_free_slot() {
        let mut si = area(2 * SWAPFILE_CLUSTER, SwapAlloc::Cluster);
        assert_eq!(si.get_swap_page(0), Some(512)); // CPU 0 owns cluster 1
        for s in 1..512 {
            assert_eq!(si.get_swap_page(1), Some(s)); // CPU 1 fills cluster 0
        }
        // Cluster 0 is full and cluster 1 is CPU 0's: CPU 1 scans the map.
        assert_eq!(si.get_swap_page(1), Some(513));
        assert_eq!(
            si.get_swap_page(0),
            Some(514),
            "CPU 0 goes on in its cluster"
        );
    }

    #[test]
    fn the_scan_allocator_moves_one_cursor_for_everyone() {
        let mut si = area(8, SwapAlloc::Scan);
        assert_eq!(si.get_swap_page(0), Some(1));
        assert_eq!(si.get_swap_page(1), Some(2));
        assert_eq!(si.get_swap_page(0), Some(3));
        si.put_swap_folio(1);
        // The cursor goes on forward and wraps to the freed slot only at the end.
        let rest: Vec<u32> = (0..5).filter_map(|_| si.get_swap_page(0)).collect();
        assert_eq!(rest, vec![4, 5, 6, 7, 1]);
    }

    #[test]
    fn a_slot_is_freed_when_its_last_user_goes() {
        let mut si = area(SWAPFILE_CLUSTER, SwapAlloc::Cluster);
        let s = si.get_swap_page(0).unwrap();
        si.swap_duplicate(s); // try_to_unmap: the PTE refers to it
        si.put_swap_folio(s); // reclaim frees the folio: the PTE still holds the slot
        assert!(si.in_use(s) && si.swapped(s));
        si.swap_free(s); // the fault that swaps it in drops the PTE's reference
        assert!(!si.in_use(s));
        assert_eq!(si.inuse_pages, 1);
    }
}
