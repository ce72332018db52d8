//! `munmap()` of VMAs (mm/mmap.c and mm/memory.c, 6.6); a shared file VMA's entries are
//! cleared and its folios stay in the page cache (`Kernel::unmap_file_vma`). Of anonymous
//! private VMAs: `do_vmi_munmap()`
//! → `unmap_region()` → `unmap_vmas()` → `zap_pte_range()` over the VMA's page-table entries,
//! then `free_pgtables()` and the VMA's removal.
//!
//! * A present entry (`zap_present_pte`, or `zap_huge_pmd` for a PMD-mapped transparent huge
//!   page): the folio is unmapped (`folio_remove_rmap_*`), and once the TLB is flushed
//!   `tlb_finish_mmu()` → `free_pages_and_swap_cache()` drains the CPU's LRU-add batch
//!   (`lru_add_drain()`), takes a swap-cache folio out of the swap cache if nothing holds it
//!   (`free_swap_cache()` → `folio_free_swap()`; not while its write to swap is in flight) and
//!   drops the last reference (`release_pages()`: off its LRU list under lru_lock, uncharged
//!   from its cgroup, freed; a large folio to the buddy lists as one block of its order).
//! * A swap entry (`free_swap_and_cache()`): the page table's reference on the slot goes
//!   (`swap_free`); if only the swap cache still holds the slot, its folio is taken out of
//!   the cache and freed (`__try_to_reclaim_swap()` with TTRS_UNMAPPED | TTRS_FULL: trylock,
//!   not mapped, not under writeback), else it stays for reclaim to free.
//!
//! The VMA's entries in the flat page-table array are left empty and the VMA is dead: the
//! next `mmap()` of the same size reuses its entries (`PageTables::mmap`), and a dead VMA at
//! the end of the array gives its entries back, so a task that maps and unmaps in a loop
//! keeps the array's size bounded.
//!
//! Departure: the kernel zaps a folio that reclaim or compaction has isolated at once and the
//! isolator frees it when it lets go (its reference was the last); the model's isolated
//! folios are named by their owner, the page-table entry, so `munmap` waits
//! (`MUNMAP_ISOLATED_WAIT_NS` at a time) until no folio of the VMA is isolated, which is at
//! most one reclaim batch's `shrink_folio_list` or one compaction's migration. The zap itself
//! is charged per present folio as `release_pages()`'s work under lru_lock (`putback_ns`)
//! plus its free (`buddy_ns`); the page-table walk and TLB flush are not charged.

use crate::engine::{Ns, NSEC_PER_USEC};
use crate::kernel::Kernel;
use crate::mm::page::{folio_nr_pages, pg, NO_OWNER};
use crate::mm::swapfile::{NO_PAGE, SWAP_HAS_CACHE};
use crate::mm::vma::{pte_kind, PteKind, VmFile};
use crate::mm::vmstat::VmEvent;
use crate::process::{sleep_until, Cx};

/// How long `munmap` sleeps while a folio of its VMA is isolated before it looks again.
pub const MUNMAP_ISOLATED_WAIT_NS: Ns = 10 * NSEC_PER_USEC;

/// `munmap()` of VMA `vma` by its task: waits until no folio of it is isolated, then zaps
/// it in one go.
pub async fn munmap(cx: &Cx, vma: u32) {
    loop {
        let busy = {
            let mut k = cx.k();
            k.lru_add_drain(cx.cpu);
            k.vma_folio_isolated(vma)
        };
        if !busy {
            break;
        }
        let at = cx.k().clock() + MUNMAP_ISOLATED_WAIT_NS;
        sleep_until(cx, at).await;
    }
    cx.k().do_vmi_munmap(vma, cx.cpu);
}

impl Kernel {
    /// `lru_add_drain()` on `cpu`: its LRU-add batch moves to the LRU now.
    pub fn lru_add_drain(&mut self, cpu: u32) {
        if !self.percpu.lru_add[cpu as usize].is_empty() {
            self.folio_batch_move_lru(cpu);
        }
    }

    /// Whether a folio mapped by `vma` is off the LRU for reasons other than an LRU-add
    /// batch (reclaim or compaction has it isolated). A folio waiting in another CPU's
    /// batch is moved to the LRU with that batch.
    pub fn vma_folio_isolated(&mut self, vma: u32) -> bool {
        if self.mm.vm_file(vma).is_some() {
            // A page-cache folio's owner is its mapping, which the zap leaves as it is.
            return false;
        }
        let v = &self.mm.vmas[vma as usize];
        let (start, end) = (v.start as usize, (v.start + v.nr_pages) as usize);
        for i in start..end {
            let PteKind::Present { pfn, .. } = pte_kind(self.mm.ptes[i]) else {
                continue;
            };
            let flags = self.mem.pages.flags(pfn);
            if flags & (pg::LRU | pg::TAIL) != 0 {
                continue;
            }
            let batched = (0..self.percpu.lru_add_anon.len())
                .find(|&c| self.percpu.lru_add_anon[c].contains(&pfn));
            match batched {
                Some(c) => self.folio_batch_move_lru(c as u32),
                None => return true,
            }
        }
        false
    }

    /// `do_vmi_munmap()` of `vma`, none of whose folios is isolated or in another CPU's
    /// LRU-add batch, by a task on `cpu`: every entry zapped (`cpu`'s batch drained first),
    /// the VMA dead and its entries free for reuse.
    pub fn do_vmi_munmap(&mut self, vma: u32, cpu: u32) {
        self.lru_add_drain(cpu);
        if let Some(f) = self.mm.vm_file(vma) {
            self.unmap_file_vma(f);
            self.mm.munmap(vma);
            return;
        }
        let v = &self.mm.vmas[vma as usize];
        let (start, end) = (v.start as usize, (v.start + v.nr_pages) as usize);
        let mut i = start;
        while i < end {
            let pte = self.mm.ptes[i];
            self.mm.ptes[i] = 0;
            i += 1;
            match pte_kind(pte) {
                PteKind::None => {}
                PteKind::Present { pfn, .. } => {
                    let f = self.mem.pages.fields(pfn);
                    debug_assert_eq!(f.flags & pg::TAIL, 0, "a huge page is zapped from its head");
                    // A PMD-mapped huge page goes whole (`zap_huge_pmd`), its entries with it.
                    let tails = folio_nr_pages(f) as usize - 1;
                    self.mm.ptes[i..i + tails].fill(0);
                    i += tails;
                    self.zap_present_folio(pfn, cpu);
                }
                PteKind::Swap { area, slot } => self.free_swap_and_cache(area, slot, cpu),
            }
        }
        self.mm.munmap(vma);
    }

    /// The zap of shared file VMA `vma` (`zap_pte_range()` over a file mapping): off the
    /// file's `i_mmap`, each present entry cleared and its folio unmapped if no other entry
    /// maps it (`folio_remove_rmap_pte()`); the folios stay in the page cache. A young
    /// entry marks its folio accessed where the VMA has recency (6.3+'s `vma_has_recency()`:
    /// not VM_RAND_READ; before it, `variant.vma_has_recency = false`, any VMA the model
    /// makes). Not charged, as the rest of the page-table walk is not.
    fn unmap_file_vma(&mut self, f: VmFile) {
        self.address_spaces.i_mmap_remove(f.mapping, f.vma);
        let v = &self.mm.vmas[f.vma as usize];
        for i in v.start..v.start + v.nr_pages {
            let pte = std::mem::take(&mut self.mm.ptes[i as usize]);
            if let PteKind::Present { pfn, young } = pte_kind(pte) {
                let recency =
                    !self.variant.vma_has_recency || crate::mm::rmap::vma_has_recency(f.vm_flags);
                if young && recency {
                    self.folio_mark_accessed(pfn);
                }
                self.folio_remove_file_rmap(pfn);
            }
        }
    }

    /// The zap of present folio `p` (its head): unmapped, out of the swap cache if it may
    /// leave it, and freed; a folio whose write to swap is still in flight stays in the swap
    /// cache, unmapped, for reclaim.
    fn zap_present_folio(&mut self, p: u32, cpu: u32) {
        let f = *self.mem.pages.fields(p);
        debug_assert!(
            f.flags & pg::ANON != 0 && f.flags & pg::MAPPED != 0,
            "pfn {p} is a mapped anon folio: {f:?}"
        );
        let nr = folio_nr_pages(&f);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_anon_mapped -= nr;
        if f.flags & pg::SWAPCACHE != 0 {
            let (area, slot) = self.folio_swap_entry(p);
            if f.flags & pg::WRITEBACK != 0 {
                let f = self.mem.pages.fields_mut(p);
                f.owner = slot;
                f.flags &= !pg::MAPPED;
                return;
            }
            self.delete_from_swap_cache(p, area, slot);
        }
        self.release_folio(p, cpu);
    }

    /// `release_pages()` of anon folio `p`, unmapped and out of the swap cache, on an LRU
    /// list: off it under lru_lock, uncharged, freed by the task on `cpu`.
    fn release_folio(&mut self, p: u32, cpu: u32) {
        let f = *self.mem.pages.fields(p);
        debug_assert!(f.flags & pg::LRU != 0, "pfn {p} is on an LRU list");
        let nr = folio_nr_pages(&f);
        let lv = self.folio_lruvec(p);
        let zone_idx = self.page_zonenum(p);
        self.memcg.lruvecs[lv].del_folio(&mut self.mem.pages, p, f.lru as usize, zone_idx);
        let now = self.clock();
        let cpu_node = self.cpus.node_of(cpu);
        let lock = self.lru_lock(lv, cpu_node, self.costs.putback_ns, now);
        let buddy = self.costs.buddy_ns;
        self.charge(lock.total() + buddy);
        if nr > 1 {
            self.mem_cgroup_uncharge_folio(p);
            self.free_large_folio(p, cpu);
            self.count(VmEvent::Pgfree, nr);
        } else {
            let f = self.mem.pages.fields_mut(p);
            f.owner = NO_OWNER;
            f.flags = 0;
            self.free_folio(p, cpu);
        }
    }

    /// `free_swap_and_cache()` of swap entry (`area`, `slot`) as its page-table entry is
    /// zapped.
    fn free_swap_and_cache(&mut self, area: usize, slot: u32, cpu: u32) {
        let si = &mut self.swap.areas[area];
        si.swap_free(slot);
        if si.swap_map[slot as usize] != SWAP_HAS_CACHE {
            return;
        }
        let p = si.cache[slot as usize];
        if p == NO_PAGE {
            return;
        }
        // __try_to_reclaim_swap(): folio_trylock(), !folio_mapped(), folio_free_swap()
        // (not under writeback); an isolated folio is left to its isolator.
        let flags = self.mem.pages.flags(p);
        if flags & (pg::LOCKED | pg::WRITEBACK | pg::MAPPED) != 0 || flags & pg::LRU == 0 {
            return;
        }
        self.delete_from_swap_cache(p, area, slot);
        self.release_folio(p, cpu);
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::mm::page::pg;
    use crate::mm::swapfile::NO_PAGE;
    use crate::mm::vma::{mk_pte, pte_kind, swp_pte, PteKind, VMA_DEAD};
    use crate::testing::{kernel_with, swapon};

    /// A movable page allocated on node 0 by CPU 0 (`get_page_from_freelist`).
    fn page(k: &mut Kernel) -> u32 {
        use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
        use crate::mm::page_alloc::{AllocContext, ALLOC_WMARK_MIN};
        let ac = AllocContext::new(GFP_HIGHUSER_MOVABLE, 0, 0);
        k.get_page(&ac, ALLOC_WMARK_MIN, 0).unwrap()
    }

    /// A slot of area 0 referenced by one page-table entry, as `try_to_unmap` leaves it.
    fn swapped_slot(k: &mut Kernel) -> u32 {
        let si = &mut k.swap.areas[0];
        let slot = si.get_swap_page(0).unwrap();
        si.swap_duplicate(slot);
        slot
    }

    /// A 64-page VMA of task 0 in every state an entry can be in: pages 0..24 present
    /// (new anon folios), 24..32 present and still in the swap cache (their slot kept, as a
    /// fault that reads a page alone since 5.18 leaves it), 32..48 swapped out (the swap
    /// cache let go), 48..56 swapped out with an unmapped swap-cache folio (read ahead),
    /// 56..64 empty. Every folio is on the LRU.
    fn populated() -> (Kernel, u32) {
        let mut k = kernel_with(64, 0, "");
        swapon(&mut k, 2048);
        let vma = k.mm.mmap(0, 64);
        let start = k.mm.vmas[vma as usize].start;
        for a in 0..32 {
            let p = page(&mut k);
            k.map_new_anon_folio(p, start + a, 0, 0, 0);
            if a >= 24 {
                let si = &mut k.swap.areas[0];
                let slot = si.get_swap_page(0).unwrap();
                si.cache[slot as usize] = p;
                k.mem.page_ext.swap_mut()[p as usize] = crate::mm::vma::swp_entry(0, slot);
                k.mem.pages.set(p, pg::SWAPCACHE);
            }
        }
        for a in 32..56 {
            let slot = swapped_slot(&mut k);
            k.swap.areas[0].put_swap_folio(slot);
            k.mm.ptes[(start + a) as usize] = swp_pte(0, slot);
            if a >= 48 {
                let p = page(&mut k);
                assert!(k.add_to_swap_cache_for_read(p, 0, slot, false, 0, 0));
                k.mem.pages.clear(p, pg::LOCKED);
            }
        }
        k.folio_batch_move_lru(0);
        (k, vma)
    }

    #[test]
    fn munmap_frees_every_page_and_slot_of_the_vma() {
        let (mut k, vma) = populated();
        let held = 32 + 8;
        let free_before = k.nr_free_pages_true();
        let inuse = k.swap.areas[0].inuse_pages;
        assert!(inuse >= 8 + 24);
        k.check_conservation(0).unwrap();
        k.do_vmi_munmap(vma, 0);
        // Every folio is back on a free list: the 32 mapped and the 8 read-ahead ones.
        assert_eq!(k.nr_free_pages_true(), free_before + held);
        assert_eq!(inuse - k.swap.areas[0].inuse_pages, 32, "every slot freed");
        assert!(k.swap.areas[0].cache.iter().all(|&p| p == NO_PAGE));
        assert_eq!(k.mem.nodes[0].nr_anon_mapped, 0);
        let on_lru: u64 = (0..5).map(|l| k.memcg.lruvecs[0].total(l)).sum();
        assert_eq!(on_lru, 0);
        k.check_conservation(0).unwrap();
        k.check_page_places(&[]).unwrap();
        // The VMA was the array's last: its entries are given back.
        assert!(k.mm.ptes.is_empty() && k.mm.vmas.is_empty());
        assert_eq!(k.stats.events.get(crate::mm::vmstat::VmEvent::Pgfree), held);
    }

    #[test]
    fn a_folio_under_writeback_or_locked_stays_in_the_swap_cache_for_reclaim() {
        let (mut k, vma) = populated();
        let start = k.mm.vmas[vma as usize].start;
        // Page 24: mapped, in the swap cache, its write in flight; page 48: its read ahead
        // still locked.
        let PteKind::Present { pfn: wb, .. } = pte_kind(k.mm.ptes[start as usize + 24]) else {
            panic!()
        };
        k.mem.pages.set(wb, pg::WRITEBACK);
        let PteKind::Swap { slot: s48, .. } = pte_kind(k.mm.ptes[start as usize + 48]) else {
            panic!()
        };
        let locked = k.swap.areas[0].cache[s48 as usize];
        k.mem.pages.set(locked, pg::LOCKED);
        let free_before = k.nr_free_pages_true();
        let inuse = k.swap.areas[0].inuse_pages;
        k.do_vmi_munmap(vma, 0);
        assert_eq!(k.nr_free_pages_true(), free_before + 38);
        assert_eq!(
            inuse - k.swap.areas[0].inuse_pages,
            30,
            "all but the two folios' slots"
        );
        for p in [wb, locked] {
            let f = *k.mem.pages.fields(p);
            assert_eq!(
                f.flags & (pg::SWAPCACHE | pg::MAPPED | pg::LRU),
                pg::SWAPCACHE | pg::LRU
            );
            let (area, slot) = k.folio_swap_entry(p);
            assert_eq!(
                (area, f.owner),
                (0, slot),
                "an unmapped swap-cache folio names its slot"
            );
            assert!(!k.swap.areas[0].swapped(slot), "no page table refers to it");
        }
        k.check_conservation(0).unwrap();
    }

    #[test]
    fn an_isolated_folio_holds_munmap_back_and_a_batched_one_is_drained() {
        let (mut k, vma) = populated();
        let start = k.mm.vmas[vma as usize].start;
        assert!(!k.vma_folio_isolated(vma));
        // A new folio waits in CPU 1's LRU-add batch: drained, not waited for.
        let p = page(&mut k);
        k.map_new_anon_folio(p, start + 60, 0, 1, 0);
        assert_eq!(k.mem.pages.flags(p) & pg::LRU, 0);
        assert!(!k.vma_folio_isolated(vma));
        assert_ne!(k.mem.pages.flags(p) & pg::LRU, 0);
        // Reclaim isolates page 0's folio (off the list, no batch holds it).
        let PteKind::Present { pfn, .. } = pte_kind(k.mm.ptes[start as usize]) else {
            panic!()
        };
        let lv = k.folio_lruvec(pfn);
        let (lru, z) = (k.mem.pages.fields(pfn).lru as usize, k.page_zonenum(pfn));
        k.memcg.lruvecs[lv].del_folio(&mut k.mem.pages, pfn, lru, z);
        assert!(k.vma_folio_isolated(vma));
        k.memcg.lruvecs[lv].add_folio(&mut k.mem.pages, pfn, lru, z);
        assert!(!k.vma_folio_isolated(vma));
    }

    #[test]
    fn a_loop_of_mmap_and_munmap_reuses_the_same_entries() {
        let mut k = kernel_with(64, 0, "");
        let keep = k.mm.mmap(1, 16);
        let mut first = None;
        for round in 0..100u32 {
            let a = k.mm.mmap(2, 32);
            let b = k.mm.mmap(2, 8);
            let start = k.mm.vmas[a as usize].start;
            for i in 0..4 {
                let p = page(&mut k);
                k.map_new_anon_folio(p, start + i, 0, 0, 0);
            }
            let s = *first.get_or_insert((a, start, k.mm.ptes.len()));
            assert_eq!((a, start, k.mm.ptes.len()), s, "round {round}");
            k.do_vmi_munmap(a, 0);
            assert_eq!(k.mm.vmas[a as usize].owner_task, VMA_DEAD);
            assert_eq!(
                k.mm.ptes.len(),
                16 + 32 + 8,
                "a dead VMA inside the array stays"
            );
            k.do_vmi_munmap(b, 0);
            assert_eq!(k.mm.ptes.len(), 16, "dead VMAs at the end are given back");
        }
        assert_eq!(k.mm.vmas.len(), 1);
        assert_eq!(k.mm.vmas[keep as usize].owner_task, 1);
        assert!(k.mm.free_vmas.is_empty());
        k.folio_batch_move_lru(0);
        k.check_conservation(0).unwrap();
        assert_eq!(k.mm.ptes[0], 0);
        let _ = mk_pte;
    }
}
