//! Page faults (mm/memory.c, 6.x); a shared file mapping's go to `do_read_fault()` →
//! `filemap_fault()` (`mm::filemap`). On anonymous memory: `handle_mm_fault()` →
//! `do_anonymous_page()` for an empty entry (`do_huge_pmd_anonymous_page()` first where a
//! huge page may map it, `mm::huge_memory`), `do_swap_page()` for a swap entry. Faults are
//! write faults (usemem writes; a read fault on an empty entry would map the zero page).
//!
//! `do_swap_page()` looks the slot up in the swap cache (a readahead hit, if the folio was
//! read ahead), else reads it with `swapin_readahead()` (a major fault), waits for the
//! folio's lock (its read) and maps it. Being a write fault, it then frees the swap slot
//! (`should_try_to_free_swap()` → `folio_free_swap()`): the folio is dirty and reclaim will
//! give it a new slot. Since 5.18 only if the fault holds the folio's only reference besides
//! the swap cache's (`folio_ref_count() == 2`) or swap is more than half full: a folio read
//! alone and still in the CPU's LRU-add batch has one more, and keeps its slot
//! (`variant.swapcache_reuse_before_5_18` for the older rule). A synchronous area (zram)
//! with the slot's only user is read straight
//! into a new folio, bypassing the swap cache and readahead (SWP_SYNCHRONOUS_IO).

use crate::kernel::Kernel;
use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
use crate::mm::huge_memory::do_huge_pmd_anonymous_page;
use crate::mm::page::pg;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::swap_state::{swapin_readahead, SwapFault, SwapinScratch};
use crate::mm::swapfile::NO_PAGE;
use crate::mm::vma::{mk_pte, pte_kind, swp_pte, PteKind};
use crate::mm::vmstat::VmEvent;
use crate::mm::workingset::shadow_is_workingset;
use crate::process::{io_schedule, psi_memstall_enter, psi_memstall_leave, Cx};

/// What a fault did: nothing (the entry was present, or another fault served it), mapped a
/// new or cached folio (minor), or read from swap (major; for a file, found the page not
/// in the page cache, as `filemap_fault()` counts PGMAJFAULT whether or not it reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    Minor,
    Major,
}

/// `handle_mm_fault()` for a write to page `addr` of `vma` (a read, of a file VMA) by a task
/// charged to `memcg`,
/// then the return to user space, where a task that charged pages above its cgroup's
/// memory.high pays for them (`mem_cgroup_handle_over_high`).
pub async fn handle_mm_fault(
    cx: &Cx,
    vma: u32,
    addr: u32,
    memcg: u16,
    scratch: &mut SwapinScratch,
) -> Fault {
    let fault = __handle_mm_fault(cx, vma, addr, memcg, scratch).await;
    if memcg != crate::mm::mem_cgroup::ROOT_MEM_CGROUP {
        crate::mm::memcontrol::mem_cgroup_handle_over_high(cx, memcg).await;
    }
    fault
}

async fn __handle_mm_fault(
    cx: &Cx,
    vma: u32,
    addr: u32,
    memcg: u16,
    scratch: &mut SwapinScratch,
) -> Fault {
    let (pte, file) = {
        let k = cx.k();
        let v = &k.mm.vmas[vma as usize];
        (
            k.mm.ptes[(v.start + addr) as usize],
            k.mm.vm_file(vma).is_some(),
        )
    };
    if file {
        // A read of a shared file mapping (no swap entry in it: its folios are dropped).
        return match pte_kind(pte) {
            PteKind::None => crate::mm::filemap::filemap_fault(cx, vma, addr).await,
            _ => Fault::None,
        };
    }
    match pte_kind(pte) {
        PteKind::None => {
            let huge = if memcg == crate::mm::mem_cgroup::ROOT_MEM_CGROUP {
                cx.k().thp_fault_range(vma, addr)
            } else {
                None
            };
            match huge {
                Some(first) if do_huge_pmd_anonymous_page(cx, first).await => Fault::Minor,
                _ => do_anonymous_page(cx, vma, addr, memcg).await,
            }
        }
        PteKind::Swap { area, slot } => {
            let fault = SwapFault {
                area,
                slot,
                vma,
                addr,
            };
            do_swap_page(cx, fault, memcg, scratch).await
        }
        PteKind::Present { .. } => Fault::None,
    }
}

/// `handle_mm_fault()` with FAULT_FLAG_WRITE at page `addr` of shared file VMA `vma`. An
/// empty entry goes to `do_shared_fault()`: `filemap_fault()`, then `do_page_mkwrite()` and
/// `fault_dirty_shared_page()`, which marks the folio dirty. A present entry whose folio is
/// clean is write-protected (mapped by a read, or cleaned by `folio_mkclean()` at its
/// writeback) and goes to `do_wp_page()` → `wp_page_shared()`, which dirties it the same
/// way (a minor fault). Returns the fault and whether a folio became dirty; the caller, which
/// holds the task's `nr_dirtied` (`DirtyTask`), then calls
/// `balance_dirty_pages_ratelimited()` as `fault_dirty_shared_page()` does.
///
/// Departures: the filesystem's `->page_mkwrite` (block reservation) costs nothing, as the
/// model's filesystems do no work; a write to a folio under writeback waits for its end
/// (the kernel's `folio_wait_stable()` waits only on devices that need stable pages), as
/// the flushers' dirty lists cannot hold a folio dirtied while it is written.
pub async fn handle_mm_fault_shared_write(cx: &Cx, vma: u32, addr: u32) -> (Fault, bool) {
    let (idx, mapping) = {
        let k = cx.k();
        let f = k.mm.vm_file(vma).expect("a shared file VMA");
        (k.mm.vmas[vma as usize].start + addr, f.mapping)
    };
    let mut fault = Fault::None;
    if cx.k().mm.ptes[idx as usize] == 0 {
        fault = crate::mm::filemap::filemap_fault(cx, vma, addr).await;
    }
    loop {
        {
            let mut k = cx.k();
            let PteKind::Present { pfn: p, .. } = pte_kind(k.mm.ptes[idx as usize]) else {
                // Reclaimed since: the write faults again.
                return (fault, false);
            };
            let flags = k.mem.pages.flags(p);
            if flags & (pg::DIRTY | pg::WRITEBACK) != pg::WRITEBACK {
                let dirtied = k.fault_dirty_shared_page(mapping, p);
                if dirtied && fault == Fault::None {
                    // do_wp_page().
                    let wp = k.costs.swapin_map_ns;
                    k.charge(wp);
                    k.count(VmEvent::Pgfault, 1);
                    fault = Fault::Minor;
                }
                return (fault, dirtied);
            }
            k.folio_waitqueue(p).add(cx.tid);
        }
        io_schedule(cx).await;
    }
}

/// `do_anonymous_page()`: a zeroed folio, charged, on the inactive anon list, mapped.
async fn do_anonymous_page(cx: &Cx, vma: u32, addr: u32, memcg: u16) -> Fault {
    mem_cgroup_charge(cx, memcg).await;
    let p = alloc_pages(cx, GFP_HIGHUSER_MOVABLE, 0, cx.node)
        .await
        .expect("order-0 user allocations retry until they succeed");
    let mut k = cx.k();
    let idx = k.mm.vmas[vma as usize].start + addr;
    if k.mm.ptes[idx as usize] != 0 {
        // Another fault mapped it meanwhile.
        k.free_folio(p, cx.cpu);
        return Fault::None;
    }
    let fault = k.costs.anon_fault_ns;
    k.charge(fault);
    let active = if k.variant.anon_lru_before_5_9 {
        pg::ACTIVE
    } else {
        0
    };
    k.map_new_anon_folio(p, idx, memcg, cx.cpu, active);
    Fault::Minor
}

/// `do_swap_page()` for `fault`.
async fn do_swap_page(cx: &Cx, fault: SwapFault, memcg: u16, scratch: &mut SwapinScratch) -> Fault {
    let SwapFault {
        area,
        slot,
        vma,
        addr,
    } = fault;
    let mut result = Fault::Minor;
    loop {
        let cached = {
            let mut k = cx.k();
            let idx = k.mm.vmas[vma as usize].start + addr;
            if k.mm.ptes[idx as usize] != swp_pte(area, slot) {
                return Fault::None;
            }
            let cached = k.swap_cache_get_folio(area, slot, vma, addr);
            if cached.is_none() {
                k.count(VmEvent::Pgmajfault, 1);
                result = Fault::Major;
            }
            cached
        };
        let p = match cached {
            Some(p) => p,
            None if cx.k().swap.areas[area].dev.is_none() => {
                if swapin_synchronous(cx, fault, memcg).await {
                    return Fault::Major;
                }
                continue;
            }
            None => match swapin_readahead(cx, fault, memcg, scratch).await {
                Some(p) => p,
                None => continue,
            },
        };
        folio_wait_locked(cx, p, (fault.area, fault.slot)).await;
        if cx.k().swap_map_folio(p, fault) {
            return result;
        }
    }
}

/// The SWP_SYNCHRONOUS_IO path: a new folio read from the area at once and mapped, the
/// swap cache bypassed. Returns false if the entry changed while the folio was allocated.
async fn swapin_synchronous(cx: &Cx, fault: SwapFault, memcg: u16) -> bool {
    mem_cgroup_charge(cx, memcg).await;
    let p = alloc_pages(cx, GFP_HIGHUSER_MOVABLE, 0, cx.node)
        .await
        .expect("order-0 user allocations retry until they succeed");
    let mut k = cx.k();
    let idx = k.mm.vmas[fault.vma as usize].start + fault.addr;
    let si = &k.swap.areas[fault.area];
    if k.mm.ptes[idx as usize] != swp_pte(fault.area, fault.slot)
        || si.cache[fault.slot as usize] != NO_PAGE
    {
        k.free_folio(p, cx.cpu);
        return false;
    }
    k.count(VmEvent::PswpIn, 1);
    let cost = k.costs.zram_read_ns + k.costs.swapin_map_ns;
    k.charge(cost);
    let shadow = k.swap.areas[fault.area].take_shadow(fault.slot);
    let refault = if shadow != 0 {
        k.workingset_refault(p, memcg, shadow, false)
    } else {
        0
    };
    // Before 5.9 the folio went on the inactive list: do_swap_page()'s activate_page()
    // found it still in the LRU-add batch.
    k.map_new_anon_folio(p, idx, memcg, cx.cpu, refault);
    k.swap.areas[fault.area].swap_free(fault.slot);
    true
}

/// `folio_lock()`: sleep on folio `p`'s wait queue until its read has completed. The fault
/// holds no reference on `p`, so it stops waiting as soon as `p` is no longer the unmapped
/// swap-cache folio of `entry` (reclaim freed it and it was reused): the caller then sees
/// the change and retries the fault, as the kernel's does when the folio left the swap cache.
///
/// Waiting for the read of a folio that was workingset when evicted is a memory stall
/// (`folio_wait_bit_common()`: PG_locked, not uptodate, PG_workingset, which
/// `workingset_refault` restored from the shadow when the folio entered the swap cache; the
/// model reads the shadow, still in the slot until the folio is mapped).
pub async fn folio_wait_locked(cx: &Cx, p: u32, entry: (usize, u32)) {
    let thrashing = {
        let k = cx.k();
        k.mem.pages.flags(p) & pg::LOCKED != 0
            && shadow_is_workingset(k.swap.areas[entry.0].shadow(entry.1))
    };
    let pflags = thrashing.then(|| psi_memstall_enter(cx));
    folio_wait_unlocked(cx, p, entry).await;
    if let Some(pflags) = pflags {
        psi_memstall_leave(cx, pflags);
    }
}

async fn folio_wait_unlocked(cx: &Cx, p: u32, entry: (usize, u32)) {
    loop {
        {
            let mut k = cx.k();
            let f = *k.mem.pages.fields(p);
            let ours = f.flags & (pg::SWAPCACHE | pg::MAPPED) == pg::SWAPCACHE
                && k.folio_swap_entry(p) == entry;
            if f.flags & pg::LOCKED == 0 || !ours {
                return;
            }
            k.folio_waitqueue(p).add(cx.tid);
        }
        io_schedule(cx).await;
    }
}

/// `mem_cgroup_charge()` of one page to `memcg` before the fault allocates it: reclaim from
/// the cgroup while it is at its limit (`mm::memcontrol`; the model checks the charge first,
/// the kernel after the allocation).
async fn mem_cgroup_charge(cx: &Cx, memcg: u16) {
    crate::mm::memcontrol::try_charge(cx, memcg).await;
}

impl Kernel {
    /// `folio_add_new_anon_rmap()`, `folio_add_lru_vma()` and `set_pte_at()` of new folio
    /// `p` at page-table entry `idx`, charged to `memcg`: dirty, mapped, young, through the
    /// LRU-add batch onto the inactive anon list, or the active one with `active` (PG_active
    /// and PG_workingset: a new anon folio before 5.9, a recent refault since).
    pub(crate) fn map_new_anon_folio(
        &mut self,
        p: u32,
        idx: u32,
        memcg: u16,
        cpu: u32,
        active: u16,
    ) {
        let f = self.mem.pages.fields_mut(p);
        f.owner = idx;
        f.flags = pg::ANON | pg::MAPPED | pg::DIRTY | pg::UPTODATE | active;
        self.mem_cgroup_commit_charge(p, memcg);
        self.folio_add_lru_anon(cpu, p);
        self.mm.ptes[idx as usize] = mk_pte(p);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_anon_mapped += 1;
        self.count(VmEvent::Pgfault, 1);
    }

    /// `should_try_to_free_swap()` for a write fault on a swap-cache folio with `flags`: since
    /// v5.18, when swap is more than half full or the fault holds the folio's only reference
    /// besides the swap cache's. A folio off the LRU holds another: it waits in a CPU's
    /// LRU-add batch (a read of one page, which `swapin_readahead` does not drain) or reclaim
    /// has it isolated. Before v5.18 (`reuse_swap_page()`) the folio's references did not
    /// count.
    fn should_try_to_free_swap(&self, flags: u16) -> bool {
        self.variant.swapcache_reuse_before_5_18 || flags & pg::LRU != 0 || self.swap.vm_swap_full()
    }

    /// The end of `do_swap_page()` for folio `p`, found or read for `fault` and unlocked:
    /// if it is still the swap cache's folio for the entry (reclaim may have taken it while
    /// the task slept), map it and drop the entry's slot reference. A write fault then frees
    /// the slot if `should_try_to_free_swap` (→ `folio_free_swap`), unless the folio's write to
    /// it is still in flight: it then stays in the swap cache, mapped. Returns false if the
    /// fault must start again.
    ///
    /// Before 5.9 (`variant.anon_lru_before_5_9`) `do_swap_page()` then called
    /// `activate_page()` on the folio: a page faulted back in from swap went to the active
    /// list if it had reached the LRU (one read alone still waits in the LRU-add batch, and
    /// stays inactive). v5.9 ("mm/swap: implement workingset detection for anonymous LRU")
    /// dropped the call and left the decision to refault detection.
    pub fn swap_map_folio(&mut self, p: u32, fault: SwapFault) -> bool {
        let idx = self.mm.vmas[fault.vma as usize].start + fault.addr;
        let f = *self.mem.pages.fields(p);
        if self.mm.ptes[idx as usize] != swp_pte(fault.area, fault.slot)
            || f.flags & pg::SWAPCACHE == 0
            || f.flags & pg::MAPPED != 0
            || self.folio_swap_entry(p) != (fault.area, fault.slot)
            || f.flags & pg::LOCKED != 0
        {
            return false;
        }
        self.mm.ptes[idx as usize] = mk_pte(p);
        self.swap.areas[fault.area].swap_free(fault.slot);
        if f.flags & pg::WRITEBACK == 0 && self.should_try_to_free_swap(f.flags) {
            self.delete_from_swap_cache(p, fault.area, fault.slot);
        }
        let f = self.mem.pages.fields_mut(p);
        f.owner = idx;
        f.flags |= pg::MAPPED | pg::DIRTY;
        let map = self.costs.swapin_map_ns;
        self.charge(map);
        self.count(VmEvent::Pgfault, 1);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_anon_mapped += 1;
        if self.variant.anon_lru_before_5_9 {
            self.activate_page(p);
        }
        true
    }
}
