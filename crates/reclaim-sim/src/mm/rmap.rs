//! The reverse map (mm/rmap.c, 6.6): from a mapped folio to the page-table entries that map
//! it. An anon folio is mapped once (no fork), by the entry its owner names. A page-cache
//! folio keeps its mapping as owner and its file index in the `index` side array
//! (`mm::page_ext`); its entries are found as `rmap_walk_file()` finds them: each VMA on the
//! mapping's `i_mmap` that covers the index maps it at `vma_address()`, if that entry holds
//! the folio. `folio_mapcount` is not kept: whether a page-cache folio is still mapped is
//! the walk's answer (`PG_MAPPED`, counted in NR_FILE_MAPPED, stands for `folio_mapped()`).
//!
//! Departures: no mmap lock or `i_mmap_rwsem` (no `referenced_ptes == -1` contention
//! result), no VM_LOCKED; the TLB flush after unmapping a clean file entry is batched to the
//! end of the list (`try_to_unmap_flush()`) and not charged, as no other CPU runs the
//! mappings' tasks' page tables in the workloads that map files.

use crate::kernel::Kernel;
use crate::mm::page::pg;
use crate::mm::vma::{pte_pfn, pte_remap, vm};

/// `vma_has_recency()` (6.3+) of a file VMA with `vm_flags`: not VM_RAND_READ (the model
/// makes no VM_SEQ_READ mapping and no FMODE_NOREUSE file).
#[inline]
pub fn vma_has_recency(vm_flags: u8) -> bool {
    vm_flags & vm::RAND_READ == 0
}

impl Kernel {
    /// `folio_referenced()` of mapped folio `p` (its flags `flags`): how many of the entries
    /// mapping it were young (each cleared by the check, `ptep_clear_flush_young`), and the
    /// `vm_flags` of the VMAs whose entries were (`pra->vm_flags`).
    #[inline]
    pub(crate) fn folio_referenced(&mut self, p: u32, flags: u16) -> (u32, u8) {
        debug_assert!(flags & pg::MAPPED != 0);
        let owner = self.mem.pages.fields(p).owner;
        if flags & pg::ANON != 0 {
            // Anon VMAs carry none of the `vm` flags the model reads.
            return (u32::from(self.mm.test_and_clear_young(owner)), 0);
        }
        self.folio_referenced_file(p, owner)
    }

    /// `folio_referenced()` of a mapped page-cache folio of `mapping`: `rmap_walk_file()`
    /// with `folio_referenced_one()` on each entry that maps it, skipping (6.3+,
    /// `variant.vma_has_recency`) the VMAs without recency, whose young bits stay set.
    #[inline(never)]
    fn folio_referenced_file(&mut self, p: u32, mapping: u32) -> (u32, u8) {
        let index = self.folio_index(p);
        let (mut referenced, mut vm_flags) = (0, 0);
        let recency = self.variant.vma_has_recency;
        for &v in self.address_spaces.i_mmap(mapping) {
            let f = self.mm.vm_file(v).expect("a VMA on i_mmap maps a file");
            if recency && !vma_has_recency(f.vm_flags) {
                continue;
            }
            let Some(i) = self.mm.vma_address(&f, index) else {
                continue;
            };
            if pte_pfn(self.mm.ptes[i as usize]) == Some(p) && self.mm.test_and_clear_young(i) {
                referenced += 1;
                vm_flags |= f.vm_flags;
            }
        }
        (referenced, vm_flags)
    }

    /// `folio->index` of page-cache folio `p` of a file of known size.
    #[inline]
    fn folio_index(&self, p: u32) -> u32 {
        self.mem
            .page_ext
            .index
            .as_ref()
            .expect("a mapped file's folios are indexed")[p as usize]
    }

    /// The entries of the VMAs on `mapping`'s `i_mmap` that map page-cache folio `p`, each
    /// given to `f` (`rmap_walk_file()`).
    fn rmap_walk_file(&mut self, p: u32, mut f: impl FnMut(&mut u32)) {
        let mapping = self.mem.pages.fields(p).owner;
        let index = self.folio_index(p);
        for &v in self.address_spaces.i_mmap(mapping) {
            let vf = self.mm.vm_file(v).expect("a VMA on i_mmap maps a file");
            if let Some(i) = self.mm.vma_address(&vf, index) {
                let pte = &mut self.mm.ptes[i as usize];
                if pte_pfn(*pte) == Some(p) {
                    f(pte);
                }
            }
        }
    }

    /// `folio_add_file_rmap_pte()` for page-cache folio `p`, just mapped by an entry: the
    /// first mapping makes it `folio_mapped()` and counts it in NR_FILE_MAPPED.
    pub(crate) fn folio_add_file_rmap(&mut self, p: u32) {
        if self.mem.pages.flags(p) & pg::MAPPED != 0 {
            return;
        }
        self.mem.pages.set(p, pg::MAPPED);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_file_mapped += 1;
    }

    /// `folio_remove_rmap_pte()` for page-cache folio `p`, one of whose entries was just
    /// cleared: unmapped if no other entry maps it, and out of NR_FILE_MAPPED.
    pub(crate) fn folio_remove_file_rmap(&mut self, p: u32) {
        let mut mapped = false;
        self.rmap_walk_file(p, |_| mapped = true);
        if !mapped {
            self.folio_unmapped_file(p);
        }
    }

    fn folio_unmapped_file(&mut self, p: u32) {
        self.mem.pages.clear(p, pg::MAPPED);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_file_mapped -= 1;
    }

    /// `try_to_unmap()` of mapped page-cache folio `p` (clean: mapped writes are not
    /// modelled, so no dirty bit moves to the folio): every entry mapping it cleared
    /// (`try_to_unmap_one()` → `ptep_clear_flush()`), the folio no longer mapped.
    pub(crate) fn try_to_unmap_file(&mut self, p: u32) {
        self.rmap_walk_file(p, |pte| *pte = 0);
        self.folio_unmapped_file(p);
    }

    /// `remove_migration_ptes()` for mapped page-cache folio `src` moving to `dst`: every
    /// entry that mapped `src` maps `dst`, its accessed bit kept.
    pub(crate) fn remap_file_folio(&mut self, src: u32, dst: u32) {
        self.rmap_walk_file(src, |pte| *pte = pte_remap(*pte, dst));
    }

    /// The present file entries of the machine (tests and debug checks): what NR_FILE_MAPPED
    /// counts, each page-cache folio mapped once or more counted once.
    pub fn nr_file_mapped_walk(&self) -> u64 {
        let mut pfns: Vec<u32> = Vec::new();
        for f in &self.mm.files {
            let v = &self.mm.vmas[f.vma as usize];
            let (s, e) = (v.start as usize, (v.start + v.nr_pages) as usize);
            pfns.extend(self.mm.ptes[s..e].iter().filter_map(|&pte| pte_pfn(pte)));
        }
        pfns.sort_unstable();
        pfns.dedup();
        pfns.len() as u64
    }
}
