//! Address spaces: VMAs (`struct vm_area_struct`) and their page tables, one 4-byte entry
//! per virtual page in one flat array for all of them. An entry is empty (`pte_none`),
//! present (a pfn and the accessed bit, `pte_young`) or a swap entry (the slot its page was
//! written to). A VMA is anonymous and private, or a shared mapping of a file of known size
//! (`VmFile`: `vm_file`, `vm_pgoff`). An anon folio's owner is the index of the entry that maps it,
//! which makes its reverse map (`folio_referenced`, `try_to_unmap`) one array access; a
//! file folio's owner stays its mapping, and its reverse map goes through the mapping's
//! VMAs (`i_mmap`, `mm::rmap`).
//!
//! Departure: no page-table pages, PMDs or TLB (reclaim charges only a TLB flush's IPIs,
//! `mm::vmscan_folio`); the dirty bit is kept on the folio
//! (`pg::DIRTY`, set by each write), where `try_to_unmap` would move it.

/// A page-table entry.
pub type Pte = u32;

const PTE_PRESENT: Pte = 1 << 31;
/// `_PAGE_ACCESSED`: set by the hardware on each access, cleared by `folio_referenced`.
const PTE_YOUNG: Pte = 1 << 30;
const PFN_MASK: Pte = PTE_YOUNG - 1;
/// Swap entries: the area (`swp_type`) in bits 28–29, the slot (`swp_offset`) below, plus
/// one so that an entry is never `pte_none`.
const SWP_TYPE_SHIFT: u32 = 28;
const SWP_OFFSET_MASK: Pte = (1 << SWP_TYPE_SHIFT) - 1;
/// Swap areas a page table can name.
pub const MAX_SWAPFILES: usize = 4;
/// The largest slot a swap entry can hold.
pub const MAX_SWAP_OFFSET: u32 = SWP_OFFSET_MASK - 1;

/// What a page-table entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PteKind {
    None,
    /// The page frame and whether it was accessed since the last check.
    Present {
        pfn: u32,
        young: bool,
    },
    /// Swapped out: the area and slot.
    Swap {
        area: usize,
        slot: u32,
    },
}

#[inline]
pub fn pte_kind(pte: Pte) -> PteKind {
    if pte & PTE_PRESENT != 0 {
        PteKind::Present {
            pfn: pte & PFN_MASK,
            young: pte & PTE_YOUNG != 0,
        }
    } else if pte == 0 {
        PteKind::None
    } else {
        PteKind::Swap {
            area: (pte >> SWP_TYPE_SHIFT) as usize,
            slot: (pte & SWP_OFFSET_MASK) - 1,
        }
    }
}

/// `mk_pte()` of a freshly faulted page: present and young.
#[inline]
pub fn mk_pte(pfn: u32) -> Pte {
    debug_assert!(pfn <= PFN_MASK);
    PTE_PRESENT | PTE_YOUNG | pfn
}

/// `swp_entry()`: a swap entry as a swap-cache folio holds it (`folio->swap`).
#[inline]
pub fn swp_entry(area: usize, slot: u32) -> u32 {
    debug_assert!(area < MAX_SWAPFILES && slot <= MAX_SWAP_OFFSET);
    ((area as u32) << SWP_TYPE_SHIFT) | slot
}

/// `swp_type()` and `swp_offset()` of swap entry `entry`: its area and slot.
#[inline]
pub fn swp_type_offset(entry: u32) -> (usize, u32) {
    ((entry >> SWP_TYPE_SHIFT) as usize, entry & SWP_OFFSET_MASK)
}

/// `swp_entry_to_pte(swp_entry(area, slot))`.
#[inline]
pub fn swp_pte(area: usize, slot: u32) -> Pte {
    debug_assert!(area < MAX_SWAPFILES && slot <= MAX_SWAP_OFFSET);
    ((area as Pte) << SWP_TYPE_SHIFT) | (slot + 1)
}

/// The present entry `pte` pointing at page frame `pfn` instead, its accessed bit kept:
/// `remove_migration_pte()` once a migrated folio is at its new place.
#[inline]
pub fn pte_remap(pte: Pte, pfn: u32) -> Pte {
    debug_assert!(pte_present(pte) && pfn <= PFN_MASK);
    (pte & !PFN_MASK) | pfn
}

/// `pte_pfn()` of a present entry; `None` for any other.
#[inline]
pub fn pte_pfn(pte: Pte) -> Option<u32> {
    pte_present(pte).then_some(pte & PFN_MASK)
}

#[inline]
pub fn pte_present(pte: Pte) -> bool {
    pte & PTE_PRESENT != 0
}

/// `pte_mkyoung()`: the entry with its accessed bit set.
#[inline]
pub fn pte_mkyoung(pte: Pte) -> Pte {
    pte | PTE_YOUNG
}

/// The per-VMA swap readahead state (`vma->swap_readahead_info`): the last fault's page,
/// the window it read, and the readahead hits since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapRaInfo {
    pub prev_fault: u32,
    pub win: u32,
    pub hits: u32,
}

/// `vm_flags` bits the model reads (the kernel's are wider; these are their names).
pub mod vm {
    /// VM_EXEC: an executable mapping (`shrink_active_list` keeps its referenced file
    /// folios active, `folio_check_references` activates them after one use).
    pub const EXEC: u8 = 1 << 0;
    /// VM_RAND_READ (`madvise(MADV_RANDOM)`): no fault readahead.
    pub const RAND_READ: u8 = 1 << 1;
    /// Not a kernel flag: a mapping its task only writes (without MADV_RANDOM, whose faults
    /// the model lets skip read-around: `Kernel::mmap_file`).
    pub const WRITE_ONLY: u8 = 1 << 2;
}

/// An anonymous private mapping, or a shared mapping of a file (its file in
/// `PageTables::files`).
#[derive(Clone, Debug)]
pub struct Vma {
    /// The task whose address space it is.
    pub owner_task: u32,
    /// Its first page's entry in `PageTables::ptes` (`vm_start`).
    pub start: u32,
    pub nr_pages: u32,
    pub swap_readahead_info: SwapRaInfo,
}

/// What a shared file VMA maps: `vm_file` (the file's mapping), `vm_pgoff` and the
/// `vm_flags` the model reads. Kept beside the VMAs (`PageTables::files`, a few at most),
/// so that `Vma` stays as small as anonymous memory needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmFile {
    pub vma: u32,
    pub mapping: u32,
    /// `vm_pgoff`: the file page its first page maps.
    pub pgoff: u32,
    /// [`vm`] bits.
    pub vm_flags: u8,
}

/// The `owner_task` of a VMA that was unmapped (`mm::mmap`): its entries are empty and free
/// for the next `mmap` of its size.
pub const VMA_DEAD: u32 = u32::MAX;

/// Every VMA and page-table entry of the machine.
#[derive(Default)]
pub struct PageTables {
    pub ptes: Vec<Pte>,
    pub vmas: Vec<Vma>,
    /// The dead VMAs whose entries a new mapping may take, most recently unmapped last.
    pub free_vmas: Vec<u32>,
    /// The shared file VMAs' files.
    pub files: Vec<VmFile>,
    /// A file has been mapped: /proc/vmstat prints `nr_mapped` (`VmstatSnapshot::nr_mapped`).
    pub file_mapped: bool,
}

impl PageTables {
    /// The first VMA task `tid` owns (the workloads map one each at their start): its id.
    pub fn task_vma(&self, tid: u32) -> Option<u32> {
        self.vmas
            .iter()
            .position(|v| v.owner_task == tid)
            .map(|v| v as u32)
    }

    /// `mmap(MAP_PRIVATE | MAP_ANONYMOUS)` of `nr_pages` by task `tid`: a VMA whose entries
    /// are empty, a dead one of the same size if there is one (the most recently unmapped),
    /// else a new one at the end of the array. Returns its id.
    pub fn mmap(&mut self, tid: u32, nr_pages: u32) -> u32 {
        if let Some(j) = self
            .free_vmas
            .iter()
            .rposition(|&v| self.vmas[v as usize].nr_pages == nr_pages)
        {
            let v = self.free_vmas.remove(j);
            let vma = &mut self.vmas[v as usize];
            debug_assert_eq!(vma.owner_task, VMA_DEAD);
            vma.owner_task = tid;
            vma.swap_readahead_info = SwapRaInfo::default();
            return v;
        }
        let start = u32::try_from(self.ptes.len())
            .ok()
            .filter(|s| s.checked_add(nr_pages).is_some())
            .expect("more virtual pages than the model's 32-bit page-table index holds");
        self.ptes.resize(self.ptes.len() + nr_pages as usize, 0);
        self.vmas.push(Vma {
            owner_task: tid,
            start,
            nr_pages,
            swap_readahead_info: SwapRaInfo::default(),
        });
        (self.vmas.len() - 1) as u32
    }

    /// `mmap(MAP_SHARED)` of `nr_pages` of file `mapping` from its page `pgoff` by task
    /// `tid`, with `vm_flags`: a VMA as [`PageTables::mmap`] makes, with its file. The
    /// caller adds it to the mapping's `i_mmap` (`Kernel::mmap_file`).
    pub fn mmap_file(
        &mut self,
        tid: u32,
        nr_pages: u32,
        mapping: u32,
        pgoff: u32,
        vm_flags: u8,
    ) -> u32 {
        self.file_mapped = true;
        let vma = self.mmap(tid, nr_pages);
        self.files.push(VmFile {
            vma,
            mapping,
            pgoff,
            vm_flags,
        });
        vma
    }

    /// The file VMA `vma` maps, if it is a file VMA (cheap while no file is mapped).
    #[inline]
    pub fn vm_file(&self, vma: u32) -> Option<VmFile> {
        self.files.iter().find(|f| f.vma == vma).copied()
    }

    /// `vma_address()`: the entry of file VMA `f` mapping page `index` of its file, if the
    /// VMA covers it.
    #[inline]
    pub fn vma_address(&self, f: &VmFile, index: u32) -> Option<u32> {
        let v = &self.vmas[f.vma as usize];
        let off = index.checked_sub(f.pgoff)?;
        (off < v.nr_pages).then_some(v.start + off)
    }

    /// The end of `munmap()` of `vma`, whose entries the caller emptied: the VMA is dead,
    /// and dead VMAs at the end of the array give their entries back.
    pub fn munmap(&mut self, vma: u32) {
        let v = &mut self.vmas[vma as usize];
        debug_assert_ne!(v.owner_task, VMA_DEAD, "VMA {vma} is live");
        debug_assert!(self.ptes[v.start as usize..(v.start + v.nr_pages) as usize]
            .iter()
            .all(|&p| p == 0));
        v.owner_task = VMA_DEAD;
        self.files.retain(|f| f.vma != vma);
        self.free_vmas.push(vma);
        while let Some(last) = self.vmas.last() {
            if last.owner_task != VMA_DEAD {
                break;
            }
            let id = (self.vmas.len() - 1) as u32;
            self.ptes.truncate(last.start as usize);
            self.vmas.pop();
            self.free_vmas.retain(|&v| v != id);
        }
    }

    /// The VMA holding entry `i` (VMAs are laid out in `ptes` in the order they were made).
    pub fn vma_of(&self, i: u32) -> usize {
        let v = self.vmas.partition_point(|v| v.start <= i) - 1;
        debug_assert!(i < self.vmas[v].start + self.vmas[v].nr_pages);
        v
    }

    /// Bytes of page-table and VMA state.
    pub fn state_bytes(&self) -> u64 {
        PageTables::state_bytes_for(self.vmas.len() as u64, self.ptes.len() as u64)
    }

    /// Bytes of page-table and VMA state for `nr_vmas` VMAs of `nr_pages` pages in all.
    pub fn state_bytes_for(nr_vmas: u64, nr_pages: u64) -> u64 {
        nr_pages * std::mem::size_of::<Pte>() as u64 + nr_vmas * std::mem::size_of::<Vma>() as u64
    }

    /// `ptep_test_and_clear_young()` of entry `i`: was it accessed since the last check?
    #[inline]
    pub fn test_and_clear_young(&mut self, i: u32) -> bool {
        let pte = &mut self.ptes[i as usize];
        let young = *pte & (PTE_PRESENT | PTE_YOUNG) == PTE_PRESENT | PTE_YOUNG;
        *pte &= !PTE_YOUNG;
        young
    }

    /// The hardware's access of present entry `i`: the accessed bit is set.
    #[inline]
    pub fn mark_young(&mut self, i: u32) {
        let pte = &mut self.ptes[i as usize];
        *pte = pte_mkyoung(*pte);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        assert_eq!(pte_kind(0), PteKind::None);
        let p = mk_pte(12345);
        assert_eq!(
            pte_kind(p),
            PteKind::Present {
                pfn: 12345,
                young: true
            }
        );
        assert_eq!(pte_kind(swp_pte(0, 0)), PteKind::Swap { area: 0, slot: 0 });
        assert_eq!(
            pte_kind(swp_pte(3, MAX_SWAP_OFFSET)),
            PteKind::Swap {
                area: 3,
                slot: MAX_SWAP_OFFSET
            }
        );
        let mut pt = PageTables::default();
        let v = pt.mmap(7, 4);
        let i = pt.vmas[v as usize].start + 2;
        pt.ptes[i as usize] = p;
        assert!(pt.test_and_clear_young(i));
        assert!(!pt.test_and_clear_young(i));
        pt.mark_young(i);
        assert!(pt.test_and_clear_young(i));
        pt.ptes[i as usize] = swp_pte(0, 5);
        assert!(!pt.test_and_clear_young(i), "a swap entry is never young");
        assert_eq!(
            pte_kind(pt.ptes[i as usize]),
            PteKind::Swap { area: 0, slot: 5 }
        );
    }
}
