//! Workingset detection for anonymous folios (mm/workingset.c, 5.9 on): reclaim leaves a
//! shadow of each anon folio it evicts in the folio's swap slot, and a swap-in that finds
//! one decides whether the folio was evicted too soon.
//!
//! An lruvec's `nonresident_age` counts its evictions and activations: refaults activated,
//! and folios reclaim put back on the active list (`move_folios_to_lru()`), its child
//! cgroups' included (the age is hierarchical). The shadow records the age at eviction, the
//! lruvec it was evicted from (the reclaim's target: a memory cgroup's for memcg reclaim,
//! the node's for global reclaim) and PG_workingset. At a refault, the refault distance (the
//! age now less the age then) is how much the lruvec has evicted and activated since; if it
//! is no more than the workingset the folio competed with (the file lists plus, with swap
//! space left, the active anon list: `workingset_test_recent()`), the folio would have stayed
//! resident with that much more memory, and it starts on the active list.
//! `workingset_refault_anon`, `workingset_activate_anon` and `workingset_restore_anon` count
//! refaults, those activated, and those activated that were workingset pages when evicted.
//!
//! Before 5.9 (`variant.anon_lru_before_5_9`) anon folios left no shadows: `do_swap_page()`
//! activated the folio it mapped instead, if it had reached the LRU (`mm::memory`).
//!
//! Departures: page-cache folios leave no shadows in the model (no `workingset_*_file`), and
//! their evictions and activations do not age the lruvec, so refault distances count anon
//! evictions and activations only (exact when there is no page cache, as in usemem runs). A
//! refault is charged to the faulting task's cgroup, where the kernel takes the cgroup the
//! swap entry records (they differ only when cgroups share swapped pages).
//! The kernel compresses the age into a shadow of fewer bits (`bucket_order`); the model
//! keeps it whole.

use crate::kernel::Kernel;
use crate::mm::lru::{LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::pg;

/// A shadow is present (a slot without one holds 0).
const SHADOW_PRESENT: u64 = 1 << 63;
/// PG_workingset was set at eviction.
const SHADOW_WORKINGSET: u64 = 1 << 62;
const LRUVEC_SHIFT: u32 = 40;
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

    /// `workingset_eviction()` of anon folio `p`, reclaimed for `target_memcg`: its shadow.
    pub fn workingset_eviction(&mut self, p: u32, target_memcg: u16) -> u64 {
        let nid = self.mem.zones[self.page_zone(p)].nid;
        let lv = self.mem_cgroup_lruvec(target_memcg, nid);
        let age = self.memcg.lruvecs[lv].nonresident_age & AGE_MASK;
        self.workingset_age_nonresident(lv, 1);
        let workingset = if self.mem.pages.flags(p) & pg::WORKINGSET != 0 {
            SHADOW_WORKINGSET
        } else {
            0
        };
        SHADOW_PRESENT | workingset | (lv as u64) << LRUVEC_SHIFT | age
    }

    /// `workingset_test_recent()` for an anon folio's `shadow`: (whether its refault
    /// distance fits in the workingset, whether it was a workingset page).
    pub fn workingset_test_recent(&self, shadow: u64) -> (bool, bool) {
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
                workingset_size += l.total(LRU_ACTIVE_FILE) + l.total(LRU_INACTIVE_FILE);
                if swap_left {
                    workingset_size += l.total(LRU_ACTIVE_ANON);
                }
            }
        }
        (distance <= workingset_size, shadow & SHADOW_WORKINGSET != 0)
    }

    /// `workingset_refault()` of anon folio `p` of `memcg`, read back from a slot that held
    /// `shadow`, before it goes on an LRU: counted, and activated if it was evicted recently
    /// (PG_workingset restored if it had it). Returns the flags the caller sets on the folio
    /// (PG_active, PG_workingset).
    pub fn workingset_refault(&mut self, p: u32, memcg: u16, shadow: u64) -> u16 {
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].workingset.refault_anon += 1;
        let (recent, workingset) = self.workingset_test_recent(shadow);
        if !recent {
            return 0;
        }
        let lv = self.mem_cgroup_lruvec(memcg, nid);
        self.workingset_age_nonresident(lv, 1);
        let ws = &mut self.mem.nodes[nid as usize].workingset;
        ws.activate_anon += 1;
        if workingset {
            ws.restore_anon += 1;
            // lru_note_cost_refault(): the restored folio's I/O counts as anon cost.
            self.memcg.lruvecs[lv].note_cost(false, 1, 0);
            pg::ACTIVE | pg::WORKINGSET
        } else {
            pg::ACTIVE
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::lru::LRU_ACTIVE_ANON;
    use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
    use crate::mm::page::pg;
    use crate::testing::kernel_with;

    #[test]
    fn a_refault_within_the_workingset_is_activated_and_one_beyond_it_is_not() {
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let page =
            |k: &mut crate::kernel::Kernel| k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
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
            k.workingset_refault(p, ROOT_MEM_CGROUP, shadow),
            pg::ACTIVE | pg::WORKINGSET
        );
        let ws = k.mem.nodes[0].workingset;
        assert_eq!(
            (ws.refault_anon, ws.activate_anon, ws.restore_anon),
            (1, 1, 1)
        );
        // The activation aged the lruvec too: the same shadow is now 4 behind, beyond the
        // workingset, and refaults without activation.
        let q = page(&mut k);
        assert_eq!(k.workingset_refault(q, ROOT_MEM_CGROUP, shadow), 0);
        let ws = k.mem.nodes[0].workingset;
        assert_eq!(
            (ws.refault_anon, ws.activate_anon, ws.restore_anon),
            (2, 1, 1)
        );
    }
}
