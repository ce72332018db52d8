//! Workingset detection (mm/workingset.c, 6.x): reclaim leaves a shadow of each anon folio
//! it evicts in the folio's swap slot (5.9 on), and, with `variant.workingset`, of each
//! page-cache folio of a file of known size in its mapping (`mm::address_space`); a swap-in
//! or a page-cache read that finds one decides whether the folio was evicted too soon.
//!
//! An lruvec's `nonresident_age` counts its evictions and activations: refaults activated,
//! and folios reclaim put back on the active list (`move_folios_to_lru()`), its child
//! cgroups' included (the age is hierarchical). The shadow records the age at eviction, the
//! lruvec it was evicted from (the reclaim's target: a memory cgroup's for memcg reclaim,
//! the node's for global reclaim) and PG_workingset. At a refault, the refault distance (the
//! age now less the age then) is how much the lruvec has evicted and activated since; if it
//! is no more than the workingset the folio competed with (`workingset_test_recent()`: for
//! an anon folio the file lists plus, with swap space left, the active anon list; for a file
//! folio the active file list plus, with swap space left, both anon lists), the folio would
//! have stayed resident with that much more memory, and it starts on the active list.
//! `workingset_refault_*`, `workingset_activate_*` and `workingset_restore_*` (`_anon`,
//! `_file`) count refaults, those activated, and those activated that were workingset pages
//! when evicted.
//!
//! Before 5.9 (`variant.anon_lru_before_5_9`) anon folios left no shadows: `do_swap_page()`
//! activated the folio it mapped instead, if it had reached the LRU (`mm::memory`).
//!
//! Departures: without `variant.workingset` (seed 000's runs, and every run of an endless
//! dd file) page-cache folios leave no shadows and their evictions do not age the lruvec,
//! so refault distances count anon evictions and activations only (exact when there is no
//! page cache, as in usemem runs); with it, a page-cache activation by
//! `folio_mark_accessed` ages the lruvec (`workingset_activation`). A
//! refault is charged to the faulting task's cgroup, where the kernel takes the cgroup the
//! swap entry records (they differ only when cgroups share swapped pages).
//! The kernel compresses the age into a shadow of fewer bits (`bucket_order`); the model
//! keeps it whole.

use crate::kernel::Kernel;
use crate::mm::lru::{LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::{folio_nr_pages, pg};

/// A shadow is present (a slot without one holds 0).
const SHADOW_PRESENT: u64 = 1 << 63;
/// PG_workingset was set at eviction.
const SHADOW_WORKINGSET: u64 = 1 << 62;
const LRUVEC_SHIFT: u32 = 40;

/// Whether `shadow` (0: none) is of a folio that was workingset when evicted: its refault
/// restores PG_workingset, and waiting for its read is a memory stall.
pub fn shadow_is_workingset(shadow: u64) -> bool {
    shadow & SHADOW_WORKINGSET != 0
}
const AGE_MASK: u64 = (1 << LRUVEC_SHIFT) - 1;

impl Kernel {
    /// `workingset_age_nonresident()`: age lruvec `lv` and its ancestors by `nr`.
    pub fn workingset_age_nonresident(&mut self, lv: usize, nr: u64) {
        self.memcg.lruvecs[lv].nonresident_age += nr;
        let (memcg, nid) = (self.memcg.lruvecs[lv].memcg, self.memcg.lruvecs[lv].nid);
        if memcg != ROOT_MEM_CGROUP {
            let root = self.mem_cgroup_lruvec(ROOT_MEM_CGROUP, nid);
            self.memcg.lruvecs[root].nonresident_age += nr;
        }
    }

    /// `workingset_eviction()` of folio `p` (anon, or page cache), reclaimed for
    /// `target_memcg`: its shadow, which ages the lruvec.
    /// A large folio leaves one shadow and ages the lruvec by its pages.
    pub fn workingset_eviction(&mut self, p: u32, target_memcg: u16) -> u64 {
        let nid = self.mem.zones[self.page_zone(p)].nid;
        let lv = self.mem_cgroup_lruvec(target_memcg, nid);
        let age = self.memcg.lruvecs[lv].nonresident_age & AGE_MASK;
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        self.workingset_age_nonresident(lv, nr);
        let workingset = if self.mem.pages.flags(p) & pg::WORKINGSET != 0 {
            SHADOW_WORKINGSET
        } else {
            0
        };
        SHADOW_PRESENT | workingset | (lv as u64) << LRUVEC_SHIFT | age
    }

    /// `workingset_test_recent()` for a `shadow` of an anon or a `file` folio: (whether its
    /// refault distance fits in the workingset, whether it was a workingset page). The
    /// workingset (6.x): the active file list, plus the inactive file list for an anon folio;
    /// with swap space left, the active anon list, plus the inactive anon list for a file folio.
    pub fn workingset_test_recent(&self, shadow: u64, file: bool) -> (bool, bool) {
        debug_assert!(shadow & SHADOW_PRESENT != 0);
        let lv = ((shadow & !(SHADOW_PRESENT | SHADOW_WORKINGSET)) >> LRUVEC_SHIFT) as usize;
        let eviction = shadow & AGE_MASK;
        let refault = self.memcg.lruvecs[lv].nonresident_age & AGE_MASK;
        let distance = refault.wrapping_sub(eviction) & AGE_MASK;
        // lruvec_page_state() of the eviction lruvec: the root's is the whole node's.
        let (memcg, nid) = (self.memcg.lruvecs[lv].memcg, self.memcg.lruvecs[lv].nid);
        let swap_left = self.swap.areas.iter().any(|si| si.nr_free() > 0);
        let mut workingset_size = 0;
        for (i, l) in self.memcg.lruvecs.iter().enumerate() {
            if i == lv || (memcg == ROOT_MEM_CGROUP && l.nid == nid) {
                workingset_size += l.total(LRU_ACTIVE_FILE);
                if !file {
                    workingset_size += l.total(LRU_INACTIVE_FILE);
                }
                if swap_left {
                    workingset_size += l.total(LRU_ACTIVE_ANON);
                    if file {
                        workingset_size += l.total(LRU_INACTIVE_ANON);
                    }
                }
            }
        }
        (distance <= workingset_size, shadow & SHADOW_WORKINGSET != 0)
    }

    /// `workingset_refault()` of folio `p` (anon, or `file`) of `memcg`, read back where a
    /// shadow `shadow` was, before it goes on an LRU: counted, and activated if it was
    /// evicted recently (PG_workingset restored if it had it). Returns the flags the caller
    /// sets on the folio (PG_active, PG_workingset).
    /// A large folio's counts are its pages (`folio_nr_pages`, 6.x).
    pub fn workingset_refault(&mut self, p: u32, memcg: u16, shadow: u64, file: bool) -> u16 {
        let nid = self.mem.zones[self.page_zone(p)].nid;
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        self.mem.nodes[nid as usize].workingset.refault[usize::from(file)] += nr;
        let (recent, workingset) = self.workingset_test_recent(shadow, file);
        if !recent {
            return 0;
        }
        let lv = self.mem_cgroup_lruvec(memcg, nid);
        self.workingset_age_nonresident(lv, nr);
        let ws = &mut self.mem.nodes[nid as usize].workingset;
        ws.activate[usize::from(file)] += nr;
        if workingset {
            ws.restore[usize::from(file)] += nr;
            // lru_note_cost_refault(): the restored folio's I/O counts as its list's cost.
            self.memcg.lruvecs[lv].note_cost(file, nr, 0);
            pg::ACTIVE | pg::WORKINGSET
        } else {
            pg::ACTIVE
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::mm::lru::LRU_ACTIVE_ANON;
    use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
    use crate::mm::page::pg;
    use crate::testing::kernel_with;

    /// A free page of node 0's first zone, taken from the buddy lists.
    fn page(k: &mut Kernel) -> u32 {
        let zi = k.mem.zonelists[0][0];
        k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap()
    }

    #[test]
    fn a_refault_within_the_workingset_is_activated_and_one_beyond_it_is_not() {
        let mut k = kernel_with(64, 0, "");
        // Three pages on the active anon list make a workingset of 3 (no file pages).
        for _ in 0..3 {
            let p = page(&mut k);
            k.mem.pages.set(p, pg::ANON | pg::ACTIVE);
            k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, LRU_ACTIVE_ANON, 0);
        }
        k.swap.swapon(crate::mm::swapfile::SwapInfo::new(
            64,
            0,
            Some(0),
            false,
            crate::variant::SwapAlloc::Cluster,
            k.cpus.nr_cpus(),
        ));
        let evicted = page(&mut k);
        k.mem.pages.set(evicted, pg::ANON | pg::WORKINGSET);
        let shadow = k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        // Two more evictions: a refault distance of 3, within the workingset.
        for _ in 0..2 {
            k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        }
        let p = page(&mut k);
        assert_eq!(
            k.workingset_refault(p, ROOT_MEM_CGROUP, shadow, false),
            pg::ACTIVE | pg::WORKINGSET
        );
        let ws = k.mem.nodes[0].workingset;
        assert_eq!((ws.refault[0], ws.activate[0], ws.restore[0]), (1, 1, 1));
        // The activation aged the lruvec too: the same shadow is now 4 behind, beyond the
        // workingset, and refaults without activation.
        let q = page(&mut k);
        assert_eq!(k.workingset_refault(q, ROOT_MEM_CGROUP, shadow, false), 0);
        let ws = k.mem.nodes[0].workingset;
        assert_eq!((ws.refault[0], ws.activate[0], ws.restore[0]), (2, 1, 1));
    }

    #[test]
    fn a_file_refault_compares_its_distance_with_the_active_file_list() {
        use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
        let mut k = kernel_with(64, 0, "");
        // Two active and five inactive file pages, no swap: a file folio's workingset is 2
        // (the active file list), an anon folio's 7 (both file lists).
        for (lru, n) in [(LRU_ACTIVE_FILE, 2), (LRU_INACTIVE_FILE, 5)] {
            for _ in 0..n {
                let p = page(&mut k);
                k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, lru, 0);
            }
        }
        let evicted = page(&mut k);
        k.mem.pages.set(evicted, pg::WORKINGSET);
        // Four evictions, at ages 0, 1, 2, 3 (each ages the lruvec): the age is now 4.
        let s0 = k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        k.mem.pages.clear(evicted, pg::WORKINGSET);
        let s1 = k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        let s2 = k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        let s3 = k.workingset_eviction(evicted, ROOT_MEM_CGROUP);
        assert_eq!(
            k.workingset_test_recent(s0, true),
            (false, true),
            "distance 4 > 2"
        );
        assert_eq!(
            k.workingset_test_recent(s0, false),
            (true, true),
            "4 <= 7 for anon"
        );
        assert_eq!(k.workingset_test_recent(s1, true), (false, false), "3 > 2");
        assert_eq!(k.workingset_test_recent(s2, true), (true, false), "2 <= 2");
        // The refault of s2 activates its folio (not restored: it was not workingset) and
        // ages the lruvec to 5: s3 is now 2 behind and fits, s2 would be 3 and not.
        let p = page(&mut k);
        assert_eq!(
            k.workingset_refault(p, ROOT_MEM_CGROUP, s2, true),
            pg::ACTIVE
        );
        assert!(k.workingset_test_recent(s3, true).0);
        assert!(!k.workingset_test_recent(s2, true).0);
        let ws = k.mem.nodes[0].workingset;
        assert_eq!(
            (ws.refault, ws.activate, ws.restore),
            ([0, 1], [0, 1], [0, 0])
        );
    }
}
