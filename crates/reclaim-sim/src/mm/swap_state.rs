//! The swap cache and swap readahead (mm/swap_state.c, 6.x): `swap_cache_get_folio()` (the
//! lookup that counts `swap_ra_hit`), `swapin_readahead()` with its two policies and
//! `__read_swap_cache_async()`, which puts a newly allocated folio for a slot in the swap
//! cache (`swap_ra` when it is read ahead of the fault).
//!
//! * `swap_cluster_readahead()`: the slots around the faulting one, a window of
//!   `swapin_nr_pages()` aligned to its size, whatever they hold (the order pages were
//!   reclaimed in, not the faulting task's access pattern). The window scales with the
//!   readahead hits counted machine-wide since the last fault (`swapin_readahead_hits`).
//! * `swap_vma_readahead()` (v4.14, the seed's patch series): the swapped-out pages around
//!   the fault inside its VMA and its page-table page, with the window and hits kept per VMA
//!   (`vma->swap_readahead_info`). On when `variant.swap_readahead = "vma"` and
//!   `sysctl.vma_ra_enabled`, and no rotational swap area is in use (`nr_rotate_swap`).
//!
//! Departures: each readahead folio is allocated as the kernel does (with reclaim allowed),
//! but the window's reads are submitted together after its last allocation (the kernel
//! submits each under a plug that is flushed if the task sleeps), so a window whose
//! allocation entered reclaim holds its folios locked without I/O until then; memory
//! policies are not modelled; the VMA window is aligned to its page-table page by the
//! page's index in the VMA (VMAs start 2 MiB-aligned).

use crate::kernel::Kernel;
use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
use crate::mm::page::pg;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::swapfile::NO_PAGE;
use crate::mm::vma::{pte_kind, swp_entry, swp_type_offset, PteKind, SwapRaInfo};
use crate::mm::vmstat::VmEvent;
use crate::process::Cx;

/// `SWAP_RA_ORDER_CEILING`: VMA readahead reads at most 2^5 pages.
pub const SWAP_RA_ORDER_CEILING: u32 = 5;
/// The most hits `vma->swap_readahead_info` keeps (`SWAP_RA_HITS_MASK`).
pub const SWAP_RA_HITS_MAX: u32 = 63;
/// Pages per page-table page (`PTRS_PER_PTE`): VMA readahead stays inside the fault's.
pub const PTRS_PER_PTE: u32 = 512;

/// `__swapin_nr_pages()`: the readahead window after `hits` hits, for a fault at `offset`
/// after one at `prev_offset` that read `prev_win` pages. "+ 2" is the kernel's own.
pub fn __swapin_nr_pages(
    prev_offset: u32,
    offset: u32,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: read ahead only after an adjacent fault.
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    // Don't shrink readahead too fast.
    pages.max(prev_win / 2)
}

impl Kernel {
    /// `swap_cache_get_folio()` for the fault at page `addr` of VMA `vma`: the folio at
    /// `slot` of `area` in the swap cache, if any. A folio read ahead and not yet found is a
    /// readahead hit (`swap_ra_hit`), which feeds the window of the policy in use.
    pub fn swap_cache_get_folio(
        &mut self,
        area: usize,
        slot: u32,
        vma: u32,
        addr: u32,
    ) -> Option<u32> {
        let p = self.swap.areas[area].cache[slot as usize];
        if p == NO_PAGE {
            return None;
        }
        let readahead = self.mem.pages.test_and_clear(p, pg::READAHEAD);
        let vma_ra = self.swap.use_vma_readahead();
        if vma_ra {
            let ra = &mut self.mm.vmas[vma as usize].swap_readahead_info;
            let hits = if readahead {
                (ra.hits + 1).min(SWAP_RA_HITS_MAX)
            } else {
                ra.hits
            };
            *ra = SwapRaInfo {
                prev_fault: addr,
                win: ra.win,
                hits,
            };
        }
        if readahead {
            self.count(VmEvent::SwapRaHit, 1);
            if !vma_ra {
                self.swap.readahead_hits += 1;
            }
        }
        Some(p)
    }

    /// `swapin_nr_pages()` (cluster readahead): the window for a fault at `offset`, from the
    /// hits machine-wide since the last window.
    fn swapin_nr_pages(&mut self, offset: u32) -> u32 {
        let max_pages = 1u32 << self.swap.page_cluster;
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.swap.readahead_hits);
        let s = &mut self.swap;
        let pages = __swapin_nr_pages(
            s.prev_offset,
            offset,
            hits,
            max_pages,
            s.last_readahead_pages,
        );
        if hits == 0 {
            s.prev_offset = offset;
        }
        s.last_readahead_pages = pages;
        pages
    }

    /// `swap_vma_ra_win()`: the window of VMA readahead for a fault at page `addr` of `vma`,
    /// as a range of its pages `[start, end)`, and the window size.
    fn swap_vma_ra_win(&mut self, vma: u32, addr: u32) -> (u32, u32, u32) {
        let max_win = 1u32 << self.swap.page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return (1, addr, addr + 1);
        }
        let v = &mut self.mm.vmas[vma as usize];
        let ra = v.swap_readahead_info;
        let win = __swapin_nr_pages(ra.prev_fault, addr, ra.hits, max_win, ra.win);
        v.swap_readahead_info = SwapRaInfo {
            prev_fault: addr,
            win,
            hits: 0,
        };
        if win == 1 {
            return (1, addr, addr + 1);
        }
        let left = if addr == ra.prev_fault.wrapping_add(1) {
            addr as i64
        } else if ra.prev_fault == addr.wrapping_add(1) {
            addr as i64 - win as i64 + 1
        } else {
            addr as i64 - ((win as i64 - 1) / 2)
        };
        let right = left + win as i64;
        let pmd_start = (addr / PTRS_PER_PTE * PTRS_PER_PTE) as i64;
        let start = left.max(0).max(pmd_start) as u32;
        let end = right
            .min(v.nr_pages as i64)
            .min(pmd_start + PTRS_PER_PTE as i64) as u32;
        (win, start, end)
    }

    /// The slots `swapin_readahead()` reads for a fault on `slot` of `area` at page `addr`
    /// of `vma`, into `out`: the window's slots in order (the faulting one among them, or
    /// last if the window is one page). Whether each is still worth reading is decided when
    /// its folio is allocated (`Kernel::add_to_swap_cache_for_read`).
    pub fn swapin_readahead_window(
        &mut self,
        area: usize,
        slot: u32,
        vma: u32,
        addr: u32,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        if self.swap.use_vma_readahead() {
            let (win, start, end) = self.swap_vma_ra_win(vma, addr);
            if win > 1 {
                let base = self.mm.vmas[vma as usize].start;
                for a in start..end {
                    if let PteKind::Swap { area: ar, slot: s } =
                        pte_kind(self.mm.ptes[(base + a) as usize])
                    {
                        out.push(swp_entry(ar, s));
                    }
                }
            }
        } else {
            let mask = self.swapin_nr_pages(slot) - 1;
            if mask > 0 {
                let start = (slot & !mask).max(1);
                let end = (slot | mask).min(self.swap.areas[area].max - 1);
                out.extend((start..=end).map(|s| swp_entry(area, s)));
            }
        }
        let target = swp_entry(area, slot);
        if !out.contains(&target) {
            out.push(target);
        }
    }

    /// `__read_swap_cache_async()` after its allocation: folio `p`, just allocated by the
    /// task on `cpu`, goes into the swap cache for `slot` of `area`, locked for its read,
    /// and onto the inactive anon list (the active one if the slot's shadow says it was
    /// evicted recently: `workingset_refault()`), unless the slot no longer needs reading
    /// (freed, or in the swap cache already), in which case `p` is freed. Returns whether it
    /// was added. A folio read ahead of the fault (`target` false) is marked PG_readahead
    /// (`swap_ra`).
    pub fn add_to_swap_cache_for_read(
        &mut self,
        p: u32,
        area: usize,
        slot: u32,
        target: bool,
        memcg: u16,
        cpu: u32,
    ) -> bool {
        let si = &mut self.swap.areas[area];
        if !si.swapped(slot) || si.cache[slot as usize] != NO_PAGE {
            self.free_folio(p, cpu);
            return false;
        }
        si.cache[slot as usize] = p;
        si.swap_map[slot as usize] |= crate::mm::swapfile::SWAP_HAS_CACHE;
        let shadow = si.take_shadow(slot);
        let mut flags = pg::ANON | pg::SWAPCACHE | pg::LOCKED;
        if !target {
            flags |= pg::READAHEAD;
            self.count(VmEvent::SwapRa, 1);
        }
        if shadow != 0 {
            flags |= self.workingset_refault(p, memcg, shadow, false);
        }
        let f = self.mem.pages.fields_mut(p);
        f.owner = slot;
        f.flags = flags;
        self.mem.page_ext.swap_mut()[p as usize] = swp_entry(area, slot);
        self.mem_cgroup_commit_charge(p, memcg);
        self.folio_add_lru_anon(cpu, p);
        let insert = self.costs.swap_cache_insert_ns;
        self.charge(insert);
        true
    }

    /// `folio->swap`: the area and slot of swap-cache folio `p`.
    #[inline]
    pub fn folio_swap_entry(&self, p: u32) -> (usize, u32) {
        debug_assert!(self.mem.pages.flags(p) & pg::SWAPCACHE != 0);
        swp_type_offset(self.mem.page_ext.swap.as_ref().map_or(0, |s| s[p as usize]))
    }

    /// `__delete_from_swap_cache()` + `put_swap_folio()`: folio `p` leaves the swap cache
    /// and lets go of its slot's cache reference.
    pub fn delete_from_swap_cache(&mut self, p: u32, area: usize, slot: u32) {
        let si = &mut self.swap.areas[area];
        debug_assert_eq!(si.cache[slot as usize], p);
        si.cache[slot as usize] = NO_PAGE;
        si.put_swap_folio(slot);
        self.mem.pages.clear(p, pg::SWAPCACHE | pg::READAHEAD);
    }
}

/// A faulting task's scratch space for readahead, kept between faults so that a fault
/// allocates nothing.
#[derive(Default)]
pub struct SwapinScratch {
    /// The window's swap entries (`swp_entry`).
    window: Vec<u32>,
    /// The folios read: (area, slot, folio).
    reads: Vec<(usize, u32, u32)>,
    /// One area's reads: (slot, folio).
    area_reads: Vec<(u32, u32)>,
}

/// `swapin_readahead()` for a fault on `slot` of `area` at page `addr` of `vma`: allocate a
/// folio for each slot of the window that is swapped out and not cached (charged to `memcg`),
/// put them in the swap cache, and submit their reads (one I/O per run of adjacent slots: the
/// block plug merges them). Returns the faulting slot's folio, locked until its read
/// completes, or None if the slot was swapped in by another fault meanwhile.
pub async fn swapin_readahead(
    cx: &Cx,
    fault: SwapFault,
    memcg: u16,
    scratch: &mut SwapinScratch,
) -> Option<u32> {
    let SwapFault {
        area,
        slot,
        vma,
        addr,
    } = fault;
    let SwapinScratch {
        window,
        reads,
        area_reads,
    } = scratch;
    cx.k()
        .swapin_readahead_window(area, slot, vma, addr, window);
    reads.clear();
    for &entry in window.iter() {
        let (a, s) = swp_type_offset(entry);
        let target = (a, s) == (area, slot);
        {
            let k = cx.k();
            let si = &k.swap.areas[a];
            if !si.swapped(s) || si.cache[s as usize] != NO_PAGE {
                continue;
            }
        }
        // mem_cgroup_swapin_charge_folio(): charged before it is read.
        crate::mm::memcontrol::try_charge(cx, memcg).await;
        let p = alloc_pages(cx, GFP_HIGHUSER_MOVABLE, 0, cx.node)
            .await
            .expect("order-0 user allocations retry until they succeed");
        if cx
            .k()
            .add_to_swap_cache_for_read(p, a, s, target, memcg, cx.cpu)
        {
            reads.push((a, s, p));
        }
    }
    let mut k = cx.k();
    // The reads, area by area (a VMA window may name slots of several).
    for a in 0..k.swap.areas.len() {
        area_reads.clear();
        area_reads.extend(reads.iter().filter(|r| r.0 == a).map(|&(_, s, p)| (s, p)));
        if !area_reads.is_empty() {
            k.swap_read_folios(a, area_reads);
        }
    }
    if window.len() > 1 {
        // lru_add_drain() after a readahead window: push the new folios onto the LRU now.
        // A one-page window skips it (the kernel's `goto skip`).
        k.folio_batch_move_lru(cx.cpu);
    }
    let p = k.swap.areas[area].cache[slot as usize];
    (p != NO_PAGE).then_some(p)
}

/// A fault on a swap entry: the entry's area and slot, and the VMA and page it is at.
#[derive(Clone, Copy, Debug)]
pub struct SwapFault {
    pub area: usize,
    pub slot: u32,
    pub vma: u32,
    pub addr: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::swapfile::{SwapInfo, SwapState};
    use crate::mm::vma::swp_pte;
    use crate::sysctl::Sysctl;
    use crate::testing::kernel_with;
    use crate::variant::{SwapAlloc, Variant};

    #[test]
    fn slots_come_from_the_highest_priority_area_then_from_equals_in_turn() {
        let mut swap = SwapState::new(&Sysctl::default(), &Variant::default());
        let area = |prio| SwapInfo::new(1 + 512, prio, Some(0), false, SwapAlloc::Cluster, 2);
        // swapon order: low, high, low again.
        assert_eq!(swap.swapon(area(5)), 0);
        assert_eq!(swap.swapon(area(10)), 1);
        assert_eq!(swap.swapon(area(5)), 2);
        let areas: Vec<usize> = (0..512 + 6)
            .map(|_| swap.get_swap_page(0).unwrap().0)
            .collect();
        assert!(
            areas[..512].iter().all(|&a| a == 1),
            "area 1 first, until full"
        );
        assert_eq!(areas[512..], [0, 2, 0, 2, 0, 2]);
        assert_eq!(swap.nr_swap_pages(), 2 * 512 - 6);
        // Full everywhere: none.
        while swap.get_swap_page(1).is_some() {}
        assert_eq!(swap.nr_swap_pages(), 0);
        // Default priorities (swapon without -p) fall in swapon order: the first fills
        // first, as the kernel's −2, −3, … do.
        let mut swap = SwapState::new(&Sysctl::default(), &Variant::default());
        swap.swapon(area(-1));
        swap.swapon(area(-1));
        assert_eq!((swap.areas[0].prio, swap.areas[1].prio), (-2, -3));
        let areas: Vec<usize> = (0..513).map(|_| swap.get_swap_page(0).unwrap().0).collect();
        assert!(areas[..512].iter().all(|&a| a == 0) && areas[512] == 1);
    }

    /// A machine with a 2048-slot swap area and a 64-page VMA swapped out by hand, page `a`
    /// to the next slot of CPU `cpu(a)`'s cluster (CPU 0: slots 512…, CPU 1: 1024…).
    fn swapped_out(readahead: &str, cpu: impl Fn(u32) -> u32) -> (Kernel, u32) {
        swapped_out_with(&format!("swap_readahead = \"{readahead}\""), cpu)
    }

    /// `swapped_out` with the given `[variant]` lines.
    fn swapped_out_with(variant: &str, cpu: impl Fn(u32) -> u32) -> (Kernel, u32) {
        let mut k = kernel_with(64, 0, &format!("[variant]\n{variant}\n"));
        crate::testing::swapon(&mut k, 2048);
        let vma = k.mm.mmap(0, 64);
        let start = k.mm.vmas[vma as usize].start;
        for a in 0..64 {
            let si = &mut k.swap.areas[0];
            let slot = si.get_swap_page(cpu(a)).unwrap();
            si.swap_duplicate(slot);
            si.put_swap_folio(slot);
            k.mm.ptes[(start + a) as usize] = swp_pte(0, slot);
        }
        (k, vma)
    }

    /// `do_swap_page()` for a write to page `addr`, its reads completing at once; a window
    /// of more than one page drains CPU 0's LRU-add batch, as `swapin_readahead` does.
    fn fault(k: &mut Kernel, vma: u32, addr: u32) {
        let idx = k.mm.vmas[vma as usize].start + addr;
        let PteKind::Swap { area, slot } = pte_kind(k.mm.ptes[idx as usize]) else {
            panic!("page {addr} is not swapped out");
        };
        if k.swap_cache_get_folio(area, slot, vma, addr).is_none() {
            let mut window = Vec::new();
            k.swapin_readahead_window(area, slot, vma, addr, &mut window);
            for &entry in &window {
                let (a, s) = swp_type_offset(entry);
                let si = &k.swap.areas[a];
                if !si.swapped(s) || si.cache[s as usize] != NO_PAGE {
                    continue;
                }
                let zi = k.mem.zonelists[0][0];
                let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
                assert!(k.add_to_swap_cache_for_read(p, a, s, (a, s) == (area, slot), 0, 0));
                k.mem.pages.clear(p, pg::LOCKED); // its read completes
            }
            if window.len() > 1 {
                k.folio_batch_move_lru(0);
            }
        }
        let p = k.swap.areas[area].cache[slot as usize];
        let f = SwapFault {
            area,
            slot,
            vma,
            addr,
        };
        assert!(k.swap_map_folio(p, f));
    }

    /// (swap_ra, swap_ra_hit) after faults on pages 0..=14 in order.
    fn sequential_faults(k: &mut Kernel, vma: u32) -> (u64, u64) {
        for a in 0..=14 {
            fault(k, vma, a);
        }
        (
            k.stats.events.get(VmEvent::SwapRa),
            k.stats.events.get(VmEvent::SwapRaHit),
        )
    }

    #[test]
    fn a_page_faulted_in_from_swap_is_activated_before_5_9_only() {
        use crate::mm::lru::{LRU_ACTIVE_ANON, LRU_INACTIVE_ANON};
        for before_5_9 in [false, true] {
            let v = format!("swap_readahead = \"vma\"\nanon_lru_before_5_9 = {before_5_9}");
            let (mut k, vma) = swapped_out_with(&v, |_| 0);
            // Faults on 0..=14: page 0 read alone (its folio waits in CPU 0's LRU-add
            // batch when it is mapped), the rest in VMA readahead windows, each window
            // drained onto the LRU before its page is mapped.
            sequential_faults(&mut k, vma);
            k.folio_batch_move_lru(0);
            let start = k.mm.vmas[vma as usize].start;
            let active: Vec<u32> = (0..=14)
                .filter(|&a| {
                    let PteKind::Present { pfn, .. } = pte_kind(k.mm.ptes[(start + a) as usize])
                    else {
                        panic!("page {a} is not mapped");
                    };
                    k.mem.pages.flags(pfn) & pg::ACTIVE != 0
                })
                .collect();
            // do_swap_page()'s activate_page() (before 5.9) moves every page it maps that is
            // on the LRU: all but page 0. Since 5.9 none (these slots hold no shadows).
            let expected: Vec<u32> = if before_5_9 {
                (1..=14).collect()
            } else {
                vec![]
            };
            assert_eq!(active, expected, "before_5_9 = {before_5_9}");
            // VMA readahead read nothing beyond page 14 (11 read ahead, 11 hit).
            let lv = &k.memcg.lruvecs[0];
            assert_eq!(lv.total(LRU_ACTIVE_ANON), expected.len() as u64);
            assert_eq!(lv.total(LRU_INACTIVE_ANON), 15 - expected.len() as u64);
            k.check_lists().unwrap();
        }
    }

    #[test]
    fn a_page_read_alone_keeps_its_slot_since_5_18_unless_swap_is_half_full() {
        // Interleaved slots: cluster readahead reads each page alone, and the folio waits in
        // CPU 0's LRU-add batch when its fault maps it. Since 5.18 that batch's reference
        // keeps `should_try_to_free_swap()` from freeing the slot; before, it was freed.
        for before_5_18 in [false, true] {
            let v = format!(
                "swap_readahead = \"cluster\"\nswapcache_reuse_before_5_18 = {before_5_18}"
            );
            let (mut k, vma) = swapped_out_with(&v, |a| a % 2);
            fault(&mut k, vma, 0);
            let idx = k.mm.vmas[vma as usize].start;
            let PteKind::Present { pfn, .. } = pte_kind(k.mm.ptes[idx as usize]) else {
                panic!("page 0 is not mapped");
            };
            let flags = k.mem.pages.flags(pfn);
            assert_eq!(flags & pg::LRU, 0, "still in the batch");
            assert_eq!(
                flags & pg::SWAPCACHE == 0,
                before_5_18,
                "before_5_18 = {before_5_18}"
            );
            assert!(flags & pg::DIRTY != 0);
            assert_eq!(k.swap.areas[0].inuse_pages, 1 + 64 - u32::from(before_5_18));
        }
        // Swap more than half full: freed either way.
        let (mut k, vma) = swapped_out_with("swap_readahead = \"cluster\"", |a| a % 2);
        while k.swap.nr_swap_pages() * 2 >= k.swap.total_swap_pages() {
            k.swap.get_swap_page(3).unwrap();
        }
        fault(&mut k, vma, 0);
        let idx = k.mm.vmas[vma as usize].start;
        let PteKind::Present { pfn, .. } = pte_kind(k.mm.ptes[idx as usize]) else {
            panic!("page 0 is not mapped");
        };
        assert_eq!(k.mem.pages.flags(pfn) & pg::SWAPCACHE, 0);
    }

    #[test]
    fn vma_readahead_reads_the_window_from_every_area_its_entries_name() {
        // The same VMA swapped out to two areas, even pages to 0, odd ones to 1: the windows
        // read both, as with one area (11 read ahead, 11 hit); the faulting entry's area
        // alone would give every other page.
        let (mut one, vma) = swapped_out("vma", |_| 0);
        let (mut two, _) = swapped_out("vma", |_| 0);
        let nr_cpus = two.cpus.nr_cpus();
        two.swap.swapon(SwapInfo::new(
            2048,
            0,
            None,
            false,
            SwapAlloc::Cluster,
            nr_cpus,
        ));
        let start = two.mm.vmas[vma as usize].start;
        for a in (1..64).step_by(2) {
            let PteKind::Swap { slot: old, .. } = pte_kind(two.mm.ptes[(start + a) as usize])
            else {
                panic!("page {a} is not swapped out");
            };
            two.swap.areas[0].swap_free(old);
            let si = &mut two.swap.areas[1];
            let slot = si.get_swap_page(0).unwrap();
            si.swap_duplicate(slot);
            si.put_swap_folio(slot);
            two.mm.ptes[(start + a) as usize] = swp_pte(1, slot);
        }
        assert_eq!(sequential_faults(&mut one, vma), (11, 11));
        assert_eq!(sequential_faults(&mut two, vma), (11, 11));
    }

    #[test]
    fn cluster_readahead_reads_a_sequential_stream_written_in_order() {
        // Pages in consecutive slots. Fault 0: one page. Fault 1: adjacent, a window of 2
        // aligned on 512 whose other slot is free. Fault 2: window 514–515, 515 read ahead;
        // fault 3 hits it. Fault 4: one hit → 4 pages (517–519 ahead), hit by 5–7. Fault 8:
        // three hits → 8 pages (521–527), hit by 9–14.
        let (mut k, vma) = swapped_out("cluster", |_| 0);
        assert_eq!(sequential_faults(&mut k, vma), (1 + 3 + 7, 1 + 3 + 6));
    }

    #[test]
    fn cluster_readahead_never_starts_when_slots_interleave() {
        // Even pages at 512…, odd ones at 1024…: no two faults in a row are adjacent slots.
        let (mut k, vma) = swapped_out("cluster", |a| a % 2);
        assert_eq!(sequential_faults(&mut k, vma), (0, 0));
    }

    #[test]
    fn vma_readahead_reads_the_pages_around_the_fault_whatever_their_slots() {
        // Fault 0: no previous fault → one page. Fault 1: adjacent → pages 1–2 (2 ahead), hit
        // by fault 2. Fault 3: one hit → 4 pages (4–6 ahead). Fault 7: three hits → 8 pages
        // (8–14 ahead), all hit by faults 8–14.
        for interleaved in [false, true] {
            let (mut k, vma) = swapped_out("vma", |a| if interleaved { a % 2 } else { 0 });
            assert_eq!(
                sequential_faults(&mut k, vma),
                (1 + 3 + 7, 1 + 3 + 7),
                "{interleaved}"
            );
            let ra = k.mm.vmas[vma as usize].swap_readahead_info;
            assert_eq!((ra.prev_fault, ra.win, ra.hits), (14, 8, 7));
        }
    }

    #[test]
    fn the_window_grows_with_hits_and_shrinks_slowly() {
        // No hits: one page, unless the fault is next to the previous one.
        assert_eq!(__swapin_nr_pages(10, 50, 0, 8, 0), 1);
        assert_eq!(__swapin_nr_pages(10, 11, 0, 8, 0), 2);
        assert_eq!(__swapin_nr_pages(10, 9, 0, 8, 0), 2);
        // hits + 2, rounded up to a power of two from 4, capped at the maximum.
        assert_eq!(__swapin_nr_pages(0, 50, 1, 8, 0), 4);
        assert_eq!(__swapin_nr_pages(0, 50, 3, 8, 0), 8);
        assert_eq!(__swapin_nr_pages(0, 50, 30, 8, 0), 8);
        assert_eq!(__swapin_nr_pages(0, 50, 30, 32, 0), 32);
        // Never below half the last window.
        assert_eq!(__swapin_nr_pages(10, 50, 0, 8, 8), 4);
    }
}
