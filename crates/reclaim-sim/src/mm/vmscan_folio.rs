//! `shrink_folio_list()` (mm/vmscan.c, 6.x, read at ~6.14): the fate of each folio
//! `shrink_inactive_list()` isolated, file or anon, in one function as the kernel's, then the
//! freed folios back to the buddy allocator (`free_unref_folios()`) and the others back to
//! the LRU (`move_folios_to_lru()`). For each folio, in the kernel's order:
//!
//! 1. locked (a read or a swap-in in flight: `folio_trylock()` fails): keep;
//! 2. under writeback: PG_reclaim, and activate (the kernel's "case 2"); a page-cache
//!    folio kswapd marked before, on a node flagged PGDAT_WRITEBACK, counts in
//!    `nr_immediate` ("case 1", which makes kswapd throttle itself in `shrink_node`). The
//!    dirty and writeback page-cache folios met are counted (`folio_check_dirty_writeback`:
//!    `nr_dirty`, `nr_unqueued_dirty`, `nr_congested`, `nr_writeback` of the tracepoint and
//!    `sc->nr`; swap-backed folios count as neither, and their swap writeback is left out of
//!    `nr_writeback` too: the model throttles swap-out by the device's tags);
//! 3. `folio_check_references()`: a mapped folio, anon or page cache, is checked through
//!    the reverse map (`folio_referenced()`, `mm::rmap`): young entries (cleared by the
//!    check) keep it with PG_referenced set, and activate it if PG_referenced was set
//!    already (a second trip round the inactive list), if more than one entry was young, or
//!    if it is a file folio of a VM_EXEC mapping; an anon one before v5.9 at once
//!    (`variant.anon_lru_before_5_9`). 2.6.36's `page_check_references` had neither the
//!    "more than one entry" nor the VM_EXEC rule (3.3's "vmscan: promote shared file mapped
//!    pages" and "vmscan: activate executable pages after first usage"): the same verdicts
//!    for folios mapped once by non-executable VMAs, the only ones the workloads map, so
//!    there is no switch. A folio with no young entry is reclaimed, referenced or not
//!    (PAGEREF_RECLAIM_CLEAN or PAGEREF_RECLAIM); so is every folio in lumpy reclaim;
//! 4. anon and not in the swap cache: `add_to_swap()` gives it a slot (no slot left:
//!    activate);
//! 5. mapped: `try_to_unmap()` replaces an anon folio's entry by the swap entry, and clears
//!    a page-cache folio's (each rmap walk of a mapped page-cache folio charged
//!    `folio_referenced_ns`, as the anon check's);
//! 6. dirty: `try_to_unmap_flush_dirty()`, then `pageout()` → `swap_writeout()`
//!    (`swap_writepage()` before 6.16): PG_writeback and PG_reclaim, the write submitted,
//!    the folio kept (its completion rotates it to the inactive tail). The flush waits for
//!    the TLBs of the CPUs the unmapped entry's mm is running on: a folio of a task running
//!    on another CPU costs a round of IPIs (`costs.tlb_flush_ipi_ns`, 0 unless measured: one
//!    round per folio, as each unmap leaves a writable entry pending; the interrupted CPU's
//!    own time is not charged). A dirty page-cache folio (seed 001) is written only by the
//!    reclaimers the kernel variant lets write: direct reclaim with
//!    `variant.direct_reclaim_writes_fs` (never since 3.2), kswapd by
//!    `variant.kswapd_writes_fs` (`always`; `when_in_trouble`: priority below
//!    DEF_PRIORITY − 2; `dirty_congested`, 6.x: PG_reclaim already set and the node
//!    PGDAT_DIRTY). A folio it may not write gets PG_reclaim and counts in
//!    `nr_vmscan_immediate_reclaim` (`variant.dirty_tail_pg_reclaim`, the seed's patch 7),
//!    and is activated (6.x) or kept on the inactive list (the seed's era, with
//!    `kswapd_writes_fs` other than `dirty_congested`). A referenced one is kept
//!    (PAGEREF_RECLAIM_CLEAN), and so is every dirty folio, anon or file, when the scan
//!    may not write (`sc.may_writepage` off: kswapd's boosted reclaim, 5.0+). One it may
//!    write goes to `pageout()`: PG_writeback and
//!    PG_reclaim, `nr_vmscan_write`, `mm_vmscan_write_folio`, and a write of that one page at
//!    its place in the file (a seek on a rotating disk), its CPU cost `costs.swap_out_ns`
//!    (taken as the same as a swap write's);
//! 7. clean: `__remove_mapping()` takes it out of the page cache (a shadow entry with
//!    `variant.workingset`, one for a large folio over all its indices) or the swap cache
//!    (`__delete_from_swap_cache()`, the slot staying with the page table's swap entry, and
//!    a shadow left in it), and the folio is freed.
//!
//! A large page-cache folio (`variant.large_folio_readahead`) is one folio of the batch: the
//! counts (`nr_taken`, reclaimed, activated, kept) are its pages (`folio_nr_pages`), its CPU
//! work one folio's, and a freed one goes back to the buddy lists as one block of its order
//! (`Kernel::free_large_folio`). Departure: the kernel's freeing touches each tail page
//! (`free_tail_page_prepare`), which the model does not charge.
//!
//! What `->writepage` then does is the filesystem's (`[machine] fs`, `machine::Fs`): written
//! (`generic`; xfs for kswapd in the seed's era), redirtied and kept (3.1's xfs for direct
//! reclaim, ext4's delalloc folios, btrfs; counted in `nr_vmscan_write` and traced all the
//! same, as 3.1's `pageout()` did), or activated with nothing written (6.x, where none of
//! xfs, ext4 and btrfs has a `->writepage`).
//!
//! Departures: swap-out waits for the device's tags (`vmscan::swap_wait_for_tag`) rather
//! than through `reclaim_throttle()`; a folio a filesystem redirties costs no more CPU than
//! one kept; reclaim does not `lru_add_drain()` the per-CPU batches
//! first, so up to 15 new anon folios per CPU stay out of its reach. An anon folio kept
//! locked counts in the tracepoint's `nr_ref_keep` (the kernel counts only PAGEREF_KEEP
//! there, as the file side here does).
//!
//! `activate_locked` frees the swap of a folio it activates when swap is more than half full
//! (`mem_cgroup_swap_full()` → `folio_free_swap()`): a folio mapped again while its write
//! was in flight gives its slot back if reclaim activates it after the write is done (a
//! folio under writeback keeps it). `mem_cgroup_swap_full()` is `vm_swap_full()` here: a
//! memory cgroup's own `swap.max` is not modelled, nor the slot allocator's own reclaim of
//! slots only the swap cache holds when swap is half full.

use crate::kernel::Kernel;
use crate::machine::Writepage;
use crate::mm::backing_dev::{PGDAT_DIRTY, PGDAT_WRITEBACK};
use crate::mm::huge_memory::folio_test_pmd_mappable;
use crate::mm::lru::{folio_lru_list, is_file_lru};
use crate::mm::page::{folio_nr_pages, pg, PageFields, NO_OWNER};
use crate::mm::vma::{swp_entry, swp_pte, vm};
use crate::mm::vmscan::{
    Isolated, LumpyMode, ReclaimNr, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX,
};
use crate::mm::vmstat::VmEvent;
use crate::mm::zone::MAX_NR_ZONES;
use crate::sched::Req;
use crate::variant::{HighOrderReclaim, KswapdWritesFs, ReclaimWait};

/// `shrink_folio_list()`'s verdict on one folio.
enum Verdict {
    /// Back to its list, locked by another (`keep_locked` after a failed trylock).
    KeepLocked,
    /// Back to the inactive list (`keep_locked`, PAGEREF_KEEP).
    Keep,
    /// To the active list (`activate_locked`).
    Activate,
    /// Write it out to its swap entry and keep it (`pageout()` → PAGE_SUCCESS).
    Pageout,
    /// A page-cache folio: write it out to its file and keep it (`pageout()`).
    FilePageout,
    /// Free it.
    Free,
}

const BATCH: usize = SWAP_CLUSTER_MAX as usize;

/// A folio of the put-back list that a synchronous write freed.
const FREED: u32 = u32::MAX;

/// What a batch's unmapping costs: the folios unmapped, and of those the ones whose TLB
/// flush needs another CPU.
#[derive(Default)]
struct Unmapped {
    folios: u64,
    remote_flushes: u64,
}

/// What `folio_verdict` reads and counts for a batch, in one place (one pointer through
/// the per-folio loop): the node's PGDAT_* flags, the unmapping costs, and the dirty and
/// writeback page-cache folios met (`struct reclaim_stat`).
#[derive(Default)]
struct BatchState {
    pgdat_flags: u8,
    unmapped: Unmapped,
    stat: ReclaimNr,
    /// 2.6.36's `nr_dirty` and patch 8's `nr_congested` (`variant.reclaim_wait`): dirty
    /// pages that reached the dirty step, and of those the page-cache ones kept because
    /// their bdi was congested (`may_write_to_queue()`); and the zones (a bit per
    /// `zone_idx`) the dirty ones came from.
    nr_dirty: u64,
    nr_congested: u64,
    dirty_zones: u8,
    /// Reverse-map walks of mapped page-cache folios (`folio_referenced`, `try_to_unmap`).
    file_rmap_walks: u64,
    /// 3.2's `nr_writeback` (`variant.writeback_isolated_wait`): the batch's pages under
    /// writeback, page cache and swap, by `zone_idx`.
    writeback_zone_pages: [u64; MAX_NR_ZONES],
}

impl Kernel {
    /// The second half of `shrink_inactive_list()`: `shrink_folio_list()` decides each folio
    /// of `batch` (outside the lock), the swap writes are submitted, the freed folios go back
    /// to the buddy allocator under zone->lock (`free_unref_folios`), the rest back to the
    /// LRU under lru_lock (`move_folios_to_lru`). Returns the pages reclaimed.
    pub(crate) fn shrink_folio_list(
        &mut self,
        lv: usize,
        batch: &Isolated,
        sc: &mut ScanControl,
        cpu_node: u32,
    ) -> u64 {
        let nid = self.memcg.lruvecs[lv].nid;
        let mut state = BatchState {
            pgdat_flags: self.wb.nodes[nid as usize].flags,
            ..Default::default()
        };
        // The index in `back` of each page-cache folio to write, as `writes`.
        let mut file_writes = [0u8; BATCH];
        let mut nr_file_writes = 0;
        let file = is_file_lru(batch.lru());
        let cpu = self.sched.tasks[self.current as usize].cpu;
        let mut freed = [0u32; BATCH];
        let mut nr_freed = 0;
        // Large folios freed (page cache, `variant.large_folio_readahead`), and the pages
        // of all freed.
        let mut freed_large = [0u32; BATCH];
        let mut nr_freed_large = 0;
        let mut reclaimed = 0u64;
        let mut back = [0u32; BATCH];
        let mut nr_back = 0;
        // The index in `back` of each folio to write (its swap entry says where): small, as
        // every call clears it.
        let mut writes = [0u8; BATCH];
        let mut nr_writes = 0;
        let (mut nr_activate, mut nr_ref_keep) = (0u64, 0u64);
        let mut nr_thps_freed = 0u64;
        for (k, &p) in batch.pages().iter().enumerate() {
            self.mem.pages.prefetch_ahead(batch.pages(), k);
            let verdict = self.folio_verdict(p, cpu, sc, &mut state);
            if sc.lumpy_reclaim_mode != LumpyMode::None {
                self.lumpy_keep(p, &verdict, sc);
            }
            // The folio's pages (`folio_nr_pages`): its order outlives the verdict.
            let nr_pages = folio_nr_pages(self.mem.pages.fields(p));
            match verdict {
                Verdict::Free => {
                    reclaimed += nr_pages;
                    if nr_pages > 1 {
                        freed_large[nr_freed_large] = p;
                        nr_freed_large += 1;
                        // filemap_unaccount_folio(): NR_FILE_THPS.
                        nr_thps_freed += u64::from(file && folio_test_pmd_mappable(nr_pages));
                    } else {
                        freed[nr_freed] = p;
                        nr_freed += 1;
                    }
                    continue;
                }
                Verdict::Pageout => {
                    writes[nr_writes] = nr_back as u8;
                    nr_writes += 1;
                }
                Verdict::FilePageout => {
                    file_writes[nr_file_writes] = nr_back as u8;
                    nr_file_writes += 1;
                }
                Verdict::Activate => {
                    self.activate_locked(p);
                    nr_activate += nr_pages;
                }
                Verdict::Keep => nr_ref_keep += nr_pages,
                Verdict::KeepLocked => nr_ref_keep += nr_pages * u64::from(!file),
            }
            back[nr_back] = p;
            nr_back += 1;
        }
        self.zone_congested_after_batch(nid, sc, &state);
        if self.variant.writeback_isolated_wait {
            self.note_batch_writeback(nid, sc, &state.writeback_zone_pages);
        }
        let BatchState {
            unmapped,
            mut stat,
            file_rmap_walks,
            ..
        } = state;
        let c = &self.costs;
        // Memory-bound: struct page, mapping and xarray cache misses, slower as the node's
        // memory load grows (hw/memory.rs), as the copy to user space is. An anon folio's
        // reverse map is walked (`folio_referenced()`); a page-cache folio's only if it is
        // mapped, once to check its references and once more to unmap it. The work is per
        // folio, however large; the counts below are of pages (`nr_taken`).
        let nr_folios = batch.pages().len() as u64;
        let nr = batch.nr_taken();
        let rmap_walks = if file { file_rmap_walks } else { nr_folios };
        let work = nr_folios * c.shrink_folio_ns
            + rmap_walks * c.folio_referenced_ns
            + (unmapped.folios + nr_file_writes as u64) * c.swap_out_ns
            + unmapped.remote_flushes * c.tlb_flush_ipi_ns;
        let work = self.mem.nodes[nid as usize].memory.scale(work);
        self.charge(work);
        // The writes, area by area, in the order reclaim chose them (a folio an earlier,
        // synchronous area freed is FREED in `back` by then).
        let nr_areas = if nr_writes > 0 {
            self.swap.areas.len()
        } else {
            0
        };
        for area in 0..nr_areas {
            let in_area = |k: &Self, p: u32| p != FREED && k.folio_swap_entry(p).0 == area;
            let mut group = [(0u32, 0u32); BATCH];
            let mut n = 0;
            for &i in &writes[..nr_writes] {
                let p = back[i as usize];
                if in_area(self, p) {
                    group[n] = (self.folio_swap_entry(p).1, p);
                    n += 1;
                }
            }
            if n == 0 {
                continue;
            }
            let written = self.swap_writepages(area, nid, &group[..n]);
            // pageout()'s mm_vmscan_write_folio once ->writepage has returned, for anon
            // folios as for page cache (RECLAIM_WB_ANON).
            if self.tracer.is_some() {
                let sync = sc.lumpy_reclaim_mode == LumpyMode::Sync;
                for &(_, p) in &group[..n] {
                    self.trace_write_folio(p, false, sync);
                }
            }
            if written {
                // A synchronous area wrote them already: clean, they are freed now (the
                // kernel's PAGE_SUCCESS without writeback, "try to free the folio below");
                // the putback below skips them.
                for &i in &writes[..nr_writes] {
                    let p = back[i as usize];
                    if in_area(self, p) {
                        let slot = self.folio_swap_entry(p).1;
                        self.remove_mapping(p, area, slot, sc.target_mem_cgroup);
                        freed[nr_freed] = p;
                        nr_freed += 1;
                        reclaimed += 1;
                        back[i as usize] = FREED;
                    }
                }
            }
        }
        if nr_file_writes > 0 {
            self.pageout_file_folios(&back, &file_writes[..nr_file_writes]);
        }
        self.free_isolated_folios(&freed[..nr_freed], cpu_node);
        for &p in &freed_large[..nr_freed_large] {
            self.free_large_folio(p, cpu);
        }
        // move_folios_to_lru(): lru_lock is taken even for an empty list. Kept folios go
        // back to the head of their list, activated ones to the active list, each
        // activation ageing the lruvec (5.9 on: workingset_age_nonresident).
        let at = self.clock();
        let hold = (nr_back as u64).max(1) * self.costs.putback_ns;
        let lock = self.lru_lock(lv, cpu_node, hold, at);
        self.charge(lock.total());
        for &p in &back[..nr_back] {
            if p == FREED {
                continue;
            }
            let zone_idx = self.page_zonenum(p);
            let lru = folio_lru_list(self.mem.pages.flags(p));
            self.memcg.lruvecs[lv].add_folio(&mut self.mem.pages, p, lru, zone_idx);
        }
        if !self.variant.anon_lru_before_5_9 && nr_activate > 0 {
            self.workingset_age_nonresident(lv, nr_activate);
        }
        let pgdat = &mut self.mem.nodes[nid as usize];
        pgdat.nr_isolated[file as usize] -= nr;
        if file {
            pgdat.nr_file_pages -= reclaimed;
            pgdat.nr_file_thps -= nr_thps_freed;
        }
        let nr_scanned = batch.nr_scanned();
        self.memcg.lruvecs[lv].note_cost(
            file,
            (nr_writes + nr_file_writes) as u64,
            nr_scanned - reclaimed.min(nr_scanned),
        );
        self.count_reclaim(lv, sc, VmEvent::pgsteal(sc.kswapd), reclaimed);
        self.count(VmEvent::pgsteal_type(file), reclaimed);
        self.count(VmEvent::Pgfree, reclaimed);
        self.count(VmEvent::Pgactivate, nr_activate);
        self.trace_lru_shrink_inactive(
            nid,
            nr_scanned,
            reclaimed,
            nr_activate,
            nr_ref_keep,
            sc.priority,
            file,
            &stat,
        );
        // Nothing to count on a machine where nothing was ever dirtied (the read-only
        // workloads): `sc->nr` stays 0, as it would.
        if self.wb.dirtied {
            self.account_dirty_batch(sc, &mut stat, file, nr);
        }
        reclaimed
    }

    /// The single-page writes of `pageout()` for the page-cache folios at `writes` in
    /// `back`, each at its place in its file. Out of line: reclaim of clean folios, the hot
    /// path, never comes here.
    #[cold]
    #[inline(never)]
    fn pageout_file_folios(&mut self, back: &[u32], writes: &[u8]) {
        for &i in writes {
            let p = back[i as usize];
            let mapping = self.mem.pages.fields(p).owner;
            let index = self.mem.page_ext.index_mut()[p as usize];
            let inode = self.wb.inode(mapping).expect("a dirty folio's inode");
            self.submit_file_write(inode, index, &[p]);
        }
    }

    /// The end of `shrink_inactive_list()` for a batch of `nr` folios (`file` or anon):
    /// wake the flushers if every folio taken was dirty with no I/O queued (they are not
    /// doing their job: `wakeup_flusher_threads(WB_REASON_VMSCAN)`), and add the batch's
    /// `stat` to `sc->nr`.
    #[inline(never)]
    fn account_dirty_batch(
        &mut self,
        sc: &mut ScanControl,
        stat: &mut ReclaimNr,
        file: bool,
        nr: u64,
    ) {
        if file && stat.unqueued_dirty == nr {
            self.wakeup_flusher_threads();
        }
        stat.taken = nr;
        if file {
            stat.file_taken = nr;
        }
        sc.nr.add(stat);
    }

    /// `activate_locked`: "not a candidate for swapping, so reclaim swap space" when swap is
    /// more than half full, then PG_active. `folio_free_swap()` frees the swap only of a
    /// folio not under writeback whose slot no page table names (a folio mapped again during
    /// its write).
    fn activate_locked(&mut self, p: u32) {
        self.activate_locked_free_swap(p);
        self.mem.pages.set(p, pg::ACTIVE);
    }

    /// `activate_locked`'s `folio_free_swap()` when `mem_cgroup_swap_full()`.
    fn activate_locked_free_swap(&mut self, p: u32) {
        let flags = self.mem.pages.fields(p).flags;
        if flags & pg::SWAPCACHE == 0 || flags & pg::WRITEBACK != 0 || !self.swap.vm_swap_full() {
            return;
        }
        let (area, slot) = self.folio_swap_entry(p);
        if self.swap.areas[area].swapped(slot) {
            return;
        }
        self.delete_from_swap_cache(p, area, slot);
        self.mem.pages.set(p, pg::DIRTY);
    }

    /// Steps 1–7 of the module's list for folio `p` (reclaimed by a task on `cpu` for
    /// `sc`); its node's flags are `b.pgdat_flags`, a folio unmapped here is counted in
    /// `b.unmapped`, the dirty and writeback page-cache folios in `b.stat`.
    fn folio_verdict(&mut self, p: u32, cpu: u32, sc: &ScanControl, b: &mut BatchState) -> Verdict {
        let f = self.mem.pages.fields_mut(p);
        let flags = f.flags;
        if flags & (pg::LOCKED | pg::WRITEBACK | pg::MAPPED | pg::ANON | pg::DIRTY) == 0 {
            // Steps 1-6 pass a clean, unmapped page-cache folio that is neither locked nor
            // under writeback (most of a page-cache reclaimer's): straight to step 7, through
            // the descriptor already in hand.
            let owner = f.owner;
            if self.address_spaces.tracks(owner) {
                return self.remove_indexed_page_cache_folio(p, owner, sc.target_mem_cgroup);
            }
            return remove_page_cache_folio(self.mem.pages.fields_mut(p));
        }
        if flags & pg::LOCKED != 0 {
            return Verdict::KeepLocked;
        }
        let page_cache = flags & pg::ANON == 0;
        if page_cache && flags & (pg::DIRTY | pg::WRITEBACK) != 0 {
            if let Some(v) = self.page_cache_dirty_writeback(p, flags, sc, b) {
                return v;
            }
        }
        if flags & pg::WRITEBACK != 0 {
            // A swap-backed folio under writeback (the page-cache ones returned above).
            if self.variant.writeback_isolated_wait {
                self.count_3_2_writeback(p, b);
            }
            self.mem.pages.set(p, pg::RECLAIM);
            return Verdict::Activate;
        }
        // folio_check_references().
        let referenced_folio = self.mem.pages.test_and_clear(p, pg::REFERENCED);
        // Lumpy reclaim ignores references (2.6.36 `page_check_references`: both tests
        // made, then PAGEREF_RECLAIM).
        let lumpy = sc.lumpy_reclaim_mode != LumpyMode::None;
        let referenced_folio = referenced_folio && !lumpy;
        if flags & pg::MAPPED != 0 && !sc.may_unmap {
            // Node reclaim without RECLAIM_UNMAP keeps a mapped folio (6.6 checks before
            // the dirty and writeback tests, and puts it back at isolation already,
            // `isolate_lru_folios()`; here one under writeback is activated first).
            return Verdict::Keep;
        }
        let anon = flags & pg::ANON != 0;
        if flags & pg::MAPPED != 0 {
            let (referenced_ptes, vm_flags) = self.folio_referenced(p, flags);
            b.file_rmap_walks += u64::from(!anon);
            if referenced_ptes > 0 && !lumpy {
                if anon && self.variant.anon_lru_before_5_9 {
                    return Verdict::Activate;
                }
                // Mapped folios start with the fault's reference: kept for another trip
                // round the inactive list, activated if used again (or by several
                // mappings, or executable file folios after one use).
                self.mem.pages.set(p, pg::REFERENCED);
                let exec_file = !anon && vm_flags & vm::EXEC != 0;
                return if referenced_folio || referenced_ptes > 1 || exec_file {
                    Verdict::Activate
                } else {
                    Verdict::Keep
                };
            }
        }
        // add_to_swap(): a slot, and the folio joins the swap cache, dirty (a folio mapped
        // again while its write was in flight is in it already).
        if anon && flags & pg::SWAPCACHE == 0 {
            let Some((area, slot)) = self.swap.get_swap_page(cpu) else {
                return Verdict::Activate;
            };
            self.swap.areas[area].cache[slot as usize] = p;
            self.mem.page_ext.swap_mut()[p as usize] = swp_entry(area, slot);
            self.mem.pages.set(p, pg::SWAPCACHE | pg::DIRTY);
        }
        if flags & pg::MAPPED != 0 {
            if anon {
                self.try_to_unmap(p, cpu, &mut b.unmapped);
            } else {
                self.try_to_unmap_file(p);
                b.file_rmap_walks += 1;
            }
        }
        if !anon {
            if flags & pg::DIRTY != 0 {
                return self.dirty_file_folio(p, flags, sc, referenced_folio, b);
            }
            let owner = self.mem.pages.fields(p).owner;
            if self.address_spaces.tracks(owner) {
                return self.remove_indexed_page_cache_folio(p, owner, sc.target_mem_cgroup);
            }
            return remove_page_cache_folio(self.mem.pages.fields_mut(p));
        }
        let (area, slot) = self.folio_swap_entry(p);
        if self.mem.pages.flags(p) & pg::DIRTY != 0 {
            if self.variant.reclaim_wait.congestion() {
                // Into the dirty step (swap's bdi is never congested: not nr_congested).
                self.count_2636_dirty(p, b);
            }
            if !sc.may_writepage {
                return Verdict::Keep;
            }
            // pageout() → swap_writepage().
            let f = self.mem.pages.fields_mut(p);
            f.flags = (f.flags & !pg::DIRTY) | pg::WRITEBACK | pg::RECLAIM;
            return Verdict::Pageout;
        }
        self.remove_mapping(p, area, slot, sc.target_mem_cgroup);
        Verdict::Free
    }

    /// 2.6.37's `shrink_page_list()` under lumpy reclaim (`variant.high_order_reclaim =
    /// "lowlumpy"`): a folio kept or activated for any reason but writeback
    /// (`keep_lumpy`: under writeback, or its write just started) ends lumpy mode for the
    /// rest of the batch (`disable_lumpy_reclaim_mode`), so there is no synchronous pass
    /// for it. 2.6.36 (`"lumpy"`) never drops the mode.
    fn lumpy_keep(&self, p: u32, verdict: &Verdict, sc: &mut ScanControl) {
        if self.variant.high_order_reclaim != HighOrderReclaim::Lowlumpy {
            return;
        }
        let kept = matches!(
            verdict,
            Verdict::Keep | Verdict::KeepLocked | Verdict::Activate | Verdict::FilePageout
        );
        if kept && self.mem.pages.flags(p) & pg::WRITEBACK == 0 {
            sc.lumpy_reclaim_mode = LumpyMode::None;
        }
    }

    /// `folio_check_dirty_writeback()`'s counts for page-cache folio `p` (flags `flags`),
    /// dirty or under writeback, and step 2 for one under writeback: case 1 (kswapd meets
    /// a folio it marked, on a PGDAT_WRITEBACK node: `nr_immediate`) or case 2
    /// (`nr_writeback`), both activated with PG_reclaim. `None` for a dirty one, which goes
    /// on to the references.
    #[inline(never)]
    fn page_cache_dirty_writeback(
        &mut self,
        p: u32,
        flags: u16,
        sc: &ScanControl,
        b: &mut BatchState,
    ) -> Option<Verdict> {
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        let stat = &mut b.stat;
        let (dirty, writeback) = (flags & pg::DIRTY != 0, flags & pg::WRITEBACK != 0);
        stat.dirty += nr;
        stat.unqueued_dirty += nr * u64::from(dirty && !writeback);
        stat.congested += nr * u64::from(writeback && flags & pg::RECLAIM != 0);
        if !writeback {
            return None;
        }
        if self.variant.writeback_isolated_wait {
            self.count_3_2_writeback(p, b);
        }
        if sc.kswapd && flags & pg::RECLAIM != 0 && b.pgdat_flags & PGDAT_WRITEBACK != 0 {
            b.stat.immediate += nr;
        } else {
            b.stat.writeback += nr;
            self.mem.pages.set(p, pg::RECLAIM);
        }
        Some(Verdict::Activate)
    }

    /// Step 6 for dirty page-cache folio `p` (its flags `flags` when reclaim found it,
    /// PG_referenced then `referenced`): left to the flushers, kept, or written by
    /// `pageout()` (the module's list).
    #[inline(never)]
    fn dirty_file_folio(
        &mut self,
        p: u32,
        flags: u16,
        sc: &ScanControl,
        referenced: bool,
        b: &mut BatchState,
    ) -> Verdict {
        let pgdat_flags = b.pgdat_flags;
        if self.variant.reclaim_wait.congestion() {
            self.count_2636_dirty(p, b);
        }
        let v = &self.variant;
        let may_write = if sc.kswapd {
            match v.kswapd_writes_fs {
                KswapdWritesFs::Always => true,
                KswapdWritesFs::WhenInTrouble => sc.priority < DEF_PRIORITY - 2,
                KswapdWritesFs::DirtyCongested => {
                    flags & pg::RECLAIM != 0 && pgdat_flags & PGDAT_DIRTY != 0
                }
            }
        } else {
            v.direct_reclaim_writes_fs
        };
        let nid = self.mem.zones[self.page_zone(p)].nid as usize;
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        if !may_write {
            let activate = v.kswapd_writes_fs == KswapdWritesFs::DirtyCongested;
            if v.dirty_tail_pg_reclaim {
                self.wb.nodes[nid].nr_vmscan_immediate += nr;
                self.mem.pages.set(p, pg::RECLAIM);
            }
            return if activate {
                Verdict::Activate
            } else {
                Verdict::Keep
            };
        }
        if referenced {
            // PAGEREF_RECLAIM_CLEAN: only a clean one would have been reclaimed.
            return Verdict::Keep;
        }
        if !sc.may_writepage {
            return Verdict::Keep;
        }
        if v.reclaim_wait.congestion() && !self.page_cache_may_write_to_queue(p, sc) {
            // PAGE_KEEP_CONGESTED (2.6.36's PAGE_KEEP): kept for a later pass.
            b.nr_congested += nr;
            return Verdict::Keep;
        }
        let v = &self.variant;
        // pageout(): folio_clear_dirty_for_io(), PG_reclaim, ->writepage() (`Fs::writepage`).
        let six = v.kswapd_writes_fs == KswapdWritesFs::DirtyCongested;
        match self.wb.fs.writepage(sc.kswapd, six) {
            Writepage::Writes => {}
            Writepage::Activate => return Verdict::Activate,
            Writepage::Redirty => {
                // redirty_page_for_writepage(): still dirty, PG_reclaim cleared (not under
                // writeback), counted and traced as 3.1's pageout() does, then kept.
                self.mem.pages.clear(p, pg::RECLAIM);
                self.count_vmscan_write_file(p, nid, sc);
                return Verdict::Keep;
            }
        }
        self.folio_start_writeback(p);
        self.mem.pages.set(p, pg::RECLAIM);
        self.wb.written_by_reclaim += nr * crate::mm::page_writeback::PAGE_SIZE;
        self.count_vmscan_write_file(p, nid, sc);
        Verdict::FilePageout
    }

    /// 3.2's `shrink_page_list()`: `if (PageWriteback(page)) { nr_writeback++; … }` for
    /// folio `p` (its pages), by its zone (`variant.writeback_isolated_wait`).
    #[cold]
    fn count_3_2_writeback(&mut self, p: u32, b: &mut BatchState) {
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        b.writeback_zone_pages[self.page_zonenum(p)] += nr;
    }

    /// The batch's `nr_writeback` (3.2's out-parameter) into `sc` for the end of
    /// `shrink_inactive_list()` (`vmscan::writeback_isolated_throttle`), with the zone of
    /// node `nid` most of them came from (the lowest `zone_idx` of a tie); `None` without
    /// any.
    #[cold]
    fn note_batch_writeback(&self, nid: u32, sc: &mut ScanControl, by_zone: &[u64; MAX_NR_ZONES]) {
        sc.batch_nr_writeback = by_zone.iter().sum();
        let mut most = 0;
        for (i, &n) in by_zone.iter().enumerate() {
            if n > by_zone[most] {
                most = i;
            }
        }
        sc.batch_writeback_zone = (sc.batch_nr_writeback > 0)
            .then(|| {
                self.mem.nodes[nid as usize]
                    .zones
                    .iter()
                    .copied()
                    .find(|&zi| self.mem.zones[zi].zone_idx == most)
            })
            .flatten();
    }

    /// 2.6.36's `nr_dirty++` for folio `p` entering `shrink_page_list()`'s dirty step, and
    /// its zone noted for patch 8's ZONE_CONGESTED.
    #[cold]
    fn count_2636_dirty(&mut self, p: u32, b: &mut BatchState) {
        b.nr_dirty += folio_nr_pages(self.mem.pages.fields(p));
        b.dirty_zones |= 1 << self.page_zonenum(p);
    }

    /// `may_write_to_queue()` (mm/congestion.rs) for dirty page-cache folio `p`: the device
    /// of its file.
    #[cold]
    fn page_cache_may_write_to_queue(&self, p: u32, sc: &ScanControl) -> bool {
        let mapping = self.mem.pages.fields(p).owner;
        let inode = self.wb.inode(mapping).expect("a dirty folio's inode");
        self.may_write_to_queue(self.wb.inodes[inode].dev, sc.kswapd, sc.order)
    }

    /// The end of 2.6.37's `shrink_page_list()` (seed 003's patch 8) for a batch of node
    /// `nid` that met `b`: "Tag a zone as congested if all the dirty pages encountered were
    /// backed by a congested BDI" (`nr_dirty && nr_dirty == nr_congested`, global reclaim),
    /// on the zones its dirty pages came from (the model's LRU is per node).
    #[inline]
    fn zone_congested_after_batch(&mut self, nid: u32, sc: &ScanControl, b: &BatchState) {
        if b.nr_dirty > 0
            && b.nr_dirty == b.nr_congested
            && self.variant.reclaim_wait == ReclaimWait::ZoneCongested
            && !Kernel::is_cgroup_reclaim(sc.target_mem_cgroup)
        {
            self.set_zones_congested(nid, b.dirty_zones);
        }
    }

    /// `zone_set_flag(zone, ZONE_CONGESTED)` on the zones of node `nid` whose bit is set
    /// in `zones` (a bit per `zone_idx`).
    #[cold]
    fn set_zones_congested(&mut self, nid: u32, zones: u8) {
        for i in 0..self.mem.nodes[nid as usize].zones.len() {
            let zi = self.mem.nodes[nid as usize].zones[i];
            let z = &mut self.mem.zones[zi];
            if zones & (1 << z.zone_idx) != 0 {
                z.reclaim_congested = true;
            }
        }
    }

    /// The end of `pageout()` for page-cache folio `p` on node `nid` after `->writepage`
    /// (written or redirtied): `nr_vmscan_write` by its pages, `mm_vmscan_write_folio`, and
    /// the model-internal count of direct reclaim's calls (`Writeback::vmscan_write_file_direct`).
    /// The write is traced synchronous in lumpy reclaim's second pass (2.6.36
    /// `trace_mm_vmscan_writepage(page, sync_writeback == PAGEOUT_IO_SYNC)`).
    fn count_vmscan_write_file(&mut self, p: u32, nid: usize, sc: &ScanControl) {
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        self.mem.nodes[nid].nr_vmscan_write += nr;
        self.wb.nodes[nid].nr_vmscan_write_file += nr;
        self.wb.vmscan_write_file_direct += u64::from(!sc.kswapd);
        self.trace_write_folio(p, true, sc.lumpy_reclaim_mode == LumpyMode::Sync);
    }

    /// `try_to_unmap()` of anon folio `p`, in the swap cache, by a task on `cpu`: its page
    /// table entry becomes the swap entry, which holds the slot, and the folio is dirty.
    fn try_to_unmap(&mut self, p: u32, cpu: u32, unmapped: &mut Unmapped) {
        let (area, slot) = self.folio_swap_entry(p);
        let idx = self.mem.pages.fields(p).owner;
        self.swap.areas[area].swap_duplicate(slot);
        self.mm.ptes[idx as usize] = swp_pte(area, slot);
        let f = self.mem.pages.fields_mut(p);
        f.owner = slot;
        f.flags = (f.flags & !pg::MAPPED) | pg::SWAPCACHE | pg::DIRTY;
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_anon_mapped -= 1;
        unmapped.folios += 1;
        // Dirty now, so written after try_to_unmap_flush_dirty(). x86's should_flush_tlb()
        // interrupts only a CPU whose loaded mm is the owner's and is not lazy: here, the
        // owner runnable on another CPU. Departure: runnable stands for running (a CPU's
        // other task may hold it), and the owner's one CPU for its mm_cpumask (the model does
        // not migrate tasks).
        if self.costs.tlb_flush_ipi_ns > 0 {
            let owner = &self.sched.tasks[self.mm.vmas[self.mm.vma_of(idx)].owner_task as usize];
            let remote = owner.cpu != cpu && matches!(owner.req, Req::Run);
            unmapped.remote_flushes += u64::from(remote);
        }
    }

    /// `__remove_mapping()` of clean swap-cache folio `p` at `slot` of `area`, reclaimed for
    /// `target_memcg`: out of the swap cache and its cgroup, ready to be freed, its shadow
    /// left in the slot if the area keeps shadows (`workingset_eviction()`, since 5.9).
    fn remove_mapping(&mut self, p: u32, area: usize, slot: u32, target_memcg: u16) {
        if self.swap.areas[area].keeps_shadows() {
            let shadow = self.workingset_eviction(p, target_memcg);
            self.swap.areas[area].set_shadow(slot, shadow);
        }
        self.delete_from_swap_cache(p, area, slot);
        self.mem_cgroup_uncharge_folio(p);
        let f = self.mem.pages.fields_mut(p);
        f.owner = NO_OWNER;
        f.flags = 0;
    }
}

impl Kernel {
    /// `__remove_mapping()` of clean, unmapped page-cache folio `p` of `mapping`, a file of
    /// known size, reclaimed for `target_memcg`: out of the mapping's index, a shadow left
    /// in its place with `variant.workingset` (`workingset_eviction()`, which ages the
    /// lruvec), nothing without.
    fn remove_indexed_page_cache_folio(
        &mut self,
        p: u32,
        mapping: u32,
        target_memcg: u16,
    ) -> Verdict {
        let index = self.mem.page_ext.index_mut()[p as usize];
        let shadow = if self.variant.workingset {
            self.workingset_eviction(p, target_memcg)
        } else {
            0
        };
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        if nr > 1 {
            // One shadow for the folio, over all its indices.
            self.address_spaces
                .delete_large_folio(mapping, u64::from(index), nr, shadow);
        } else {
            self.address_spaces
                .delete_folio(mapping, u64::from(index), shadow);
        }
        remove_page_cache_folio(self.mem.pages.fields_mut(p))
    }
}

/// `__remove_mapping()` of a clean, unmapped page-cache folio (its fields `f`): out of the page
/// cache (no shadow entry), ready to be freed.
#[inline]
fn remove_page_cache_folio(f: &mut PageFields) -> Verdict {
    // A folio is never freed dirty or under writeback.
    debug_assert_eq!(f.flags & (pg::DIRTY | pg::WRITEBACK), 0);
    f.owner = NO_OWNER;
    f.flags = 0;
    Verdict::Free
}

#[cfg(test)]
mod tests {
    use crate::mm::page::pg;
    use crate::mm::swapfile::NO_PAGE;
    use crate::mm::vma::{mk_pte, pte_kind, swp_entry, PteKind};
    use crate::testing::{kernel_with, swapon, take_pages, write_new_file};

    /// A folio mapped again while its write to swap was in flight, the write now done: in
    /// the swap cache, mapped, its slot named by no page table; and `used` of the area's
    /// 1024 slots in use in all. (Not DIRTY, as a real one would be, so that the test sees
    /// `folio_free_swap()` set it.)
    fn remapped_folio(used: u32) -> (crate::kernel::Kernel, u32, u32) {
        let mut k = kernel_with(64, 0, "");
        swapon(&mut k, 1 + 1024);
        let vma = k.mm.mmap(0, 1);
        let idx = k.mm.vmas[vma as usize].start;
        let zi = k.mem.zonelists[0][0];
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        let (area, slot) = k.swap.get_swap_page(0).unwrap();
        k.swap.areas[area].cache[slot as usize] = p;
        k.mem.page_ext.swap_mut()[p as usize] = swp_entry(area, slot);
        k.mm.ptes[idx as usize] = mk_pte(p);
        let f = k.mem.pages.fields_mut(p);
        f.owner = idx;
        f.flags |= pg::MAPPED | pg::SWAPCACHE;
        for _ in 1..used {
            k.swap.get_swap_page(0).unwrap();
        }
        (k, p, slot)
    }

    /// A mapped, dirty, not recently used anon folio of task `tid`'s own one-page VMA.
    fn mapped_folio(k: &mut crate::kernel::Kernel, tid: u32) -> u32 {
        let vma = k.mm.mmap(tid, 1);
        let idx = k.mm.vmas[vma as usize].start;
        let zi = k.mem.zonelists[0][0];
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        k.mm.ptes[idx as usize] = mk_pte(p);
        k.mm.test_and_clear_young(idx);
        let f = k.mem.pages.fields_mut(p);
        f.owner = idx;
        f.flags |= pg::ANON | pg::MAPPED | pg::DIRTY;
        let nid = k.mem.zones[zi].nid;
        k.mem.nodes[nid as usize].nr_anon_mapped += 1;
        p
    }

    #[test]
    fn a_folio_of_a_task_on_another_cpu_costs_a_tlb_shootdown_when_unmapped() {
        use super::{BatchState, Verdict};
        use crate::mm::vmscan::ScanControl;
        use crate::sched::{Req, TaskClass};
        for (ipi_ns, asleep) in [(0, false), (7_000, false), (7_000, true)] {
            let mut k = kernel_with(64, 0, &format!("[costs]\ntlb_flush_ipi_ns = {ipi_ns}\n"));
            swapon(&mut k, 1 + 64);
            let here = k.add_task("here".into(), 0, TaskClass::Workload);
            let there = k.add_task("there".into(), 1, TaskClass::Workload);
            k.sched.tasks[there as usize].req = if asleep { Req::Wait } else { Req::Run };
            let own = mapped_folio(&mut k, here);
            let other = mapped_folio(&mut k, there);
            let sc = ScanControl::new(false, 32, 0, 0);
            let mut b = BatchState::default();
            for p in [own, other] {
                let v = k.folio_verdict(p, 0, &sc, &mut b);
                assert!(matches!(v, Verdict::Pageout));
            }
            let unmapped = b.unmapped;
            assert_eq!(unmapped.folios, 2);
            // Reclaim on CPU 0: only the folio of the task running on CPU 1 needs its TLB
            // (asleep, its CPU has flushed or will at the switch back); with no cost set,
            // the model does not look.
            assert_eq!(unmapped.remote_flushes, u64::from(ipi_ns > 0 && !asleep));
        }
    }

    /// Seed 003's patch 8 on a 2.6.36 kernel (direct reclaim writes, `zone_congested`): a
    /// batch of `n` dirty page-cache folios of device 0, reclaimed directly (`kswapd` false)
    /// or by kswapd, with the bdi congested or not; returns the verdicts' pageouts and
    /// whether the zone came out ZONE_CONGESTED.
    fn dirty_batch(congested: bool, kswapd: bool) -> (usize, bool) {
        use super::{BatchState, Verdict};
        use crate::hw::block::BLK_RW_ASYNC;
        use crate::mm::vmscan::ScanControl;
        use crate::sched::TaskClass;
        let mut k = kernel_with(
            64,
            0,
            "[variant]\nreclaim_wait = \"zone_congested\"\ndirect_reclaim_writes_fs = true\n\
             kswapd_writes_fs = \"always\"\ndirty_tail_pg_reclaim = false\n",
        );
        let tid = k.add_task("t".into(), 0, TaskClass::Workload);
        k.current = tid;
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 4);
        write_new_file(&mut k, 7, 0, &pages);
        if congested {
            k.set_bdi_congested(0, BLK_RW_ASYNC);
        }
        let sc = ScanControl::new(kswapd, 32, 0, 3);
        let mut b = BatchState::default();
        let mut pageouts = 0;
        for &p in &pages {
            let v = k.folio_verdict(p, 0, &sc, &mut b);
            pageouts += usize::from(matches!(v, Verdict::FilePageout));
        }
        assert_eq!(b.nr_dirty, 4);
        k.zone_congested_after_batch(0, &sc, &b);
        (pageouts, k.mem.zones[zi].reclaim_congested)
    }

    #[test]
    fn a_batch_whose_dirty_pages_are_all_on_a_congested_bdi_marks_its_zone_congested() {
        // Direct reclaim, the bdi congested: every dirty page kept (may_write_to_queue()),
        // nr_dirty == nr_congested, ZONE_CONGESTED.
        assert_eq!(dirty_batch(true, false), (0, true));
        // Not congested: all written, the zone not marked.
        assert_eq!(dirty_batch(false, false), (4, false));
        // kswapd writes to a congested bdi (PF_SWAPWRITE): not marked.
        assert_eq!(dirty_batch(true, true), (4, false));
    }

    #[test]
    fn kswapd_clears_zone_congested_once_the_zone_meets_its_high_watermark() {
        let mut k = kernel_with(64, 0, "[variant]\nreclaim_wait = \"zone_congested\"\n");
        let zi = k.mem.zonelists[0][0];
        k.mem.zones[zi].reclaim_congested = true;
        let held = crate::testing::fill_zone(&mut k, zi, 10, 0);
        // Below the high watermark: stays.
        k.clear_balanced_zones_congested(0, 0, 3);
        assert!(k.mem.zones[zi].reclaim_congested);
        for p in held {
            k.mem.zones[zi].free_one_page(&mut k.mem.pages, p, 0);
        }
        k.clear_balanced_zones_congested(0, 0, 3);
        assert!(!k.mem.zones[zi].reclaim_congested);
    }

    #[test]
    fn activation_frees_the_swap_of_a_remapped_folio_only_when_swap_is_more_than_half_full() {
        // More than half in use: the slot is freed and the folio, out of the swap cache, is
        // dirty (its only copy is in memory now).
        let (mut k, p, slot) = remapped_folio(513);
        assert!(k.swap.vm_swap_full());
        k.activate_locked_free_swap(p);
        assert!(!k.swap.areas[0].in_use(slot));
        assert_eq!(k.swap.areas[0].cache[slot as usize], NO_PAGE);
        let flags = k.mem.pages.fields(p).flags;
        assert_eq!(flags & (pg::SWAPCACHE | pg::DIRTY), pg::DIRTY);
        assert_eq!(k.swap.nr_swap_pages(), 1024 - 512);
        // Half or less: it keeps its slot.
        let (mut k, p, slot) = remapped_folio(512);
        assert!(!k.swap.vm_swap_full());
        k.activate_locked_free_swap(p);
        assert!(k.swap.areas[0].in_use(slot));
        assert!(k.mem.pages.fields(p).flags & pg::SWAPCACHE != 0);
        // Under writeback, or with a page table naming the slot: kept, however full.
        let (mut k, p, slot) = remapped_folio(1024);
        k.mem.pages.set(p, pg::WRITEBACK);
        k.activate_locked_free_swap(p);
        assert!(k.swap.areas[0].in_use(slot));
        let (mut k, p, slot) = remapped_folio(1024);
        k.swap.areas[0].swap_duplicate(slot);
        k.activate_locked_free_swap(p);
        assert!(k.mem.pages.fields(p).flags & pg::SWAPCACHE != 0);
    }

    /// Mapping 9, a sparse file of `nr` pages, mapped whole by a new shared VMA of task 0
    /// with `vm_flags` (and MADV_RANDOM).
    /// These tests check the reference rules on a MADV_RANDOM mapping as they were before
    /// 6.3 (`variant.vma_has_recency = false`), when its accessed bits counted; the 6.3+
    /// rule has its own test.
    fn file_vma(k: &mut crate::kernel::Kernel, nr: u32, vm_flags: u8) -> u32 {
        use crate::mm::vma::vm;
        k.variant.vma_has_recency = false;
        if k.address_spaces.get(9).is_none() {
            k.address_spaces.create(9, u64::from(nr));
        }
        k.mmap_file(0, nr, 9, 0, vm::RAND_READ | vm_flags)
    }

    /// Page `index` of mapping 9 cached in a new folio and mapped by `vma`, as a hole
    /// fault leaves it: inactive file list, uptodate, mapped, its entry young.
    fn map_file_page(k: &mut crate::kernel::Kernel, vma: u32, index: u32) -> u32 {
        let zi = k.mem.zonelists[0][0];
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        k.filemap_add_folios(9, u64::from(index), &[p], 0);
        k.filemap_index_folios(9, u64::from(index), &[p]);
        k.mem.pages.clear(p, pg::LOCKED);
        k.mem.pages.set(p, pg::UPTODATE);
        map_again(k, vma, index, p);
        p
    }

    /// Folio `p`, page `index` of mapping 9, mapped by `vma` too, its entry young.
    fn map_again(k: &mut crate::kernel::Kernel, vma: u32, index: u32, p: u32) -> u32 {
        let f = k.mm.vm_file(vma).unwrap();
        let idx = k.mm.vma_address(&f, index).unwrap();
        k.mm.ptes[idx as usize] = mk_pte(p);
        k.folio_add_file_rmap(p);
        idx
    }

    /// `folio_verdict` of `p` by direct reclaim (`lumpy`: in lumpy reclaim's mode), and
    /// the rmap walks it made.
    fn file_verdict(k: &mut crate::kernel::Kernel, p: u32, lumpy: bool) -> (super::Verdict, u64) {
        use crate::mm::vmscan::{LumpyMode, ScanControl};
        let mut sc = ScanControl::new(false, 32, 0, 3);
        if lumpy {
            sc.lumpy_reclaim_mode = LumpyMode::Async;
        }
        let mut b = super::BatchState::default();
        let v = k.folio_verdict(p, 0, &sc, &mut b);
        (v, b.file_rmap_walks)
    }

    fn nr_file_mapped(k: &crate::kernel::Kernel) -> u64 {
        let n = k.mem.nodes[0].nr_file_mapped;
        assert_eq!(
            n,
            k.nr_file_mapped_walk(),
            "NR_FILE_MAPPED is the present file entries"
        );
        n
    }

    #[test]
    fn a_mapped_file_folio_used_once_is_kept_once_then_reclaimed_and_unmapped() {
        use super::Verdict;
        use crate::mm::address_space::Entry;
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, 0);
        let p = map_file_page(&mut k, vma, 5);
        let idx = k.mm.vmas[vma as usize].start + 5;
        assert_eq!(nr_file_mapped(&k), 1);
        // First trip: the fault's young entry keeps it, PG_referenced set, the bit cleared.
        let (v, walks) = file_verdict(&mut k, p, false);
        assert!(matches!(v, Verdict::Keep));
        assert_eq!(walks, 1);
        assert_ne!(k.mem.pages.flags(p) & pg::REFERENCED, 0);
        assert_eq!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present {
                pfn: p,
                young: false
            }
        );
        // Second trip, not used since: unmapped (a walk) and freed, out of the page cache.
        let (v, walks) = file_verdict(&mut k, p, false);
        assert!(matches!(v, Verdict::Free));
        assert_eq!(walks, 2);
        assert_eq!(k.mm.ptes[idx as usize], 0);
        assert_eq!(nr_file_mapped(&k), 0);
        assert_eq!(k.address_spaces.get(9).unwrap().load(5), Entry::None);
        assert_eq!(k.mem.pages.fields(p).flags, 0);
    }

    #[test]
    fn an_unmapped_page_cache_folio_is_reclaimed_at_once_with_no_rmap_walk() {
        use super::Verdict;
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, 0);
        let p = map_file_page(&mut k, vma, 2);
        // Unmapped again (munmap): the folio stays cached, unmapped.
        k.do_vmi_munmap(vma, 0);
        assert_eq!(k.mem.pages.flags(p) & pg::MAPPED, 0);
        assert_eq!(nr_file_mapped(&k), 0);
        let (v, walks) = file_verdict(&mut k, p, false);
        assert!(matches!(v, Verdict::Free));
        assert_eq!(walks, 0);
    }

    #[test]
    fn a_mapped_file_folio_is_activated_when_used_twice_mapped_twice_or_executable() {
        use super::Verdict;
        use crate::mm::vma::vm;
        // Used again after its first trip: activated on the second.
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, 0);
        let p = map_file_page(&mut k, vma, 1);
        assert!(matches!(file_verdict(&mut k, p, false).0, Verdict::Keep));
        k.mm.mark_young(k.mm.vmas[vma as usize].start + 1);
        assert!(matches!(
            file_verdict(&mut k, p, false).0,
            Verdict::Activate
        ));
        assert_eq!(nr_file_mapped(&k), 1);
        // Young in two mappings (`referenced_ptes > 1`): at once; both bits cleared.
        let mut k = kernel_with(64, 0, "");
        let a = file_vma(&mut k, 8, 0);
        let b = file_vma(&mut k, 8, 0);
        let p = map_file_page(&mut k, a, 3);
        let ib = map_again(&mut k, b, 3, p);
        assert_eq!(nr_file_mapped(&k), 1, "one folio, mapped twice");
        let (v, walks) = file_verdict(&mut k, p, false);
        assert!(matches!(v, Verdict::Activate));
        assert_eq!(walks, 1);
        assert!(!k.mm.test_and_clear_young(ib));
        // Executable (VM_EXEC): after one use.
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, vm::EXEC);
        let p = map_file_page(&mut k, vma, 0);
        assert!(matches!(
            file_verdict(&mut k, p, false).0,
            Verdict::Activate
        ));
        // Lumpy reclaim ignores references: unmapped and freed on its first trip.
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, 0);
        let p = map_file_page(&mut k, vma, 0);
        assert!(matches!(file_verdict(&mut k, p, true).0, Verdict::Free));
        assert_eq!(nr_file_mapped(&k), 0);
    }

    #[test]
    fn shrink_active_list_keeps_referenced_executable_file_folios_active_only() {
        use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
        use crate::mm::vma::vm;
        use crate::mm::vmscan::ScanControl;
        use crate::mm::vmstat::VmEvent;
        use crate::sched::TaskClass;
        let mut k = kernel_with(64, 0, "");
        let tid = k.add_task("t".into(), 0, TaskClass::Workload);
        k.current = tid;
        let exec = file_vma(&mut k, 4, vm::EXEC);
        let data = file_vma(&mut k, 4, 0);
        let pe = map_file_page(&mut k, exec, 0);
        let pd = map_file_page(&mut k, data, 1);
        for p in [pe, pd] {
            let z = k.page_zonenum(p);
            k.memcg.lruvecs[0].del_folio(&mut k.mem.pages, p, LRU_INACTIVE_FILE, z);
            k.mem.pages.set(p, pg::ACTIVE);
            k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, LRU_ACTIVE_FILE, z);
        }
        let sc = ScanControl::new(true, 32, 0, 3);
        k.shrink_active_list(0, 2, LRU_ACTIVE_FILE, &sc, 0);
        assert_ne!(k.mem.pages.flags(pe) & pg::ACTIVE, 0, "rotated");
        assert_eq!(
            k.mem.pages.flags(pd) & (pg::ACTIVE | pg::WORKINGSET),
            pg::WORKINGSET
        );
        assert_eq!(k.memcg.lruvecs[0].total(LRU_ACTIVE_FILE), 1);
        assert_eq!(k.stats.events.get(VmEvent::Pgrefill), 2);
        assert_eq!(k.stats.events.get(VmEvent::Pgdeactivate), 1);
        // Both checks cleared the accessed bits: the rotated folio needs a new use to stay.
        let start = |v: u32| k.mm.vmas[v as usize].start;
        let (ie, id) = (start(exec), start(data) + 1);
        assert!(!k.mm.test_and_clear_young(ie) && !k.mm.test_and_clear_young(id));
        k.shrink_active_list(0, 1, LRU_ACTIVE_FILE, &sc, 0);
        assert_eq!(k.mem.pages.flags(pe) & pg::ACTIVE, 0);
    }

    #[test]
    fn a_migrated_mapped_file_folio_is_mapped_at_its_new_place() {
        use crate::mm::address_space::Entry;
        use crate::mm::lru::LRU_INACTIVE_FILE;
        use crate::sched::TaskClass;
        let mut k = kernel_with(64, 0, "");
        let tid = k.add_task("t".into(), 0, TaskClass::Workload);
        k.current = tid;
        let vma = file_vma(&mut k, 8, 0);
        let src = map_file_page(&mut k, vma, 4);
        let z = k.page_zonenum(src);
        k.memcg.lruvecs[0].del_folio(&mut k.mem.pages, src, LRU_INACTIVE_FILE, z);
        k.mem.nodes[0].nr_isolated[1] += 1;
        let zi = k.page_zone(src);
        let dst = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        k.migrate_folio(src, dst, 0);
        let idx = k.mm.vmas[vma as usize].start + 4;
        assert_eq!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present {
                pfn: dst,
                young: true
            }
        );
        assert_eq!(k.address_spaces.get(9).unwrap().load(4), Entry::Folio(dst));
        assert_eq!(nr_file_mapped(&k), 1);
        let flags = k.mem.pages.flags(dst);
        assert_eq!(
            k.folio_referenced(dst, flags),
            (1, crate::mm::vma::vm::RAND_READ)
        );
    }

    /// Runs a task of `sim` that faults page `addr` of `vma` until it exits; the fault's
    /// result.
    fn fault(sim: &mut crate::process::Sim, vma: u32, addr: u32) -> crate::mm::memory::Fault {
        use crate::mm::memory::{handle_mm_fault, Fault};
        use crate::mm::swap_state::SwapinScratch;
        use crate::sched::TaskClass;
        use std::cell::Cell;
        use std::rc::Rc;
        let out = Rc::new(Cell::new(Fault::None));
        let o = Rc::clone(&out);
        let id = sim.spawn("f".into(), 0, TaskClass::Workload, move |cx| async move {
            let mut scratch = SwapinScratch::default();
            o.set(handle_mm_fault(&cx, vma, addr, 0, &mut scratch).await);
        });
        let now = sim.k().clock();
        sim.k().sched.wake(id, now);
        while !sim.exited(id) {
            crate::testing::run_next(sim);
        }
        out.get()
    }

    #[test]
    fn since_6_3_reclaim_skips_a_madv_random_mapping_and_leaves_its_accessed_bit() {
        use crate::mm::vma::vm;
        let mut k = kernel_with(64, 0, "");
        let vma = file_vma(&mut k, 8, 0);
        k.variant.vma_has_recency = true;
        let p = map_file_page(&mut k, vma, 2);
        let idx = k.mm.vmas[vma as usize].start + 2;
        let flags = k.mem.pages.flags(p);
        assert_eq!(k.folio_referenced(p, flags), (0, 0));
        assert_eq!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present {
                pfn: p,
                young: true
            }
        );
        // Before 6.3 the same check counts the entry and clears its bit.
        k.variant.vma_has_recency = false;
        assert_eq!(k.folio_referenced(p, flags), (1, vm::RAND_READ));
        assert_eq!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present {
                pfn: p,
                young: false
            }
        );
    }

    /// What a write fault returned, once it has (`handle_mm_fault_shared_write`).
    type WriteFaultOut = std::rc::Rc<std::cell::Cell<Option<(crate::mm::memory::Fault, bool)>>>;

    /// Starts a task of `sim` that write-faults page `addr` of shared file `vma` and runs
    /// up to `steps` events while it has not exited: its id and its result, `None` while it
    /// is still waiting.
    fn write_fault(
        sim: &mut crate::process::Sim,
        vma: u32,
        addr: u32,
        steps: usize,
    ) -> (u32, WriteFaultOut) {
        use crate::mm::memory::handle_mm_fault_shared_write;
        use crate::sched::TaskClass;
        use std::cell::Cell;
        use std::rc::Rc;
        let out = Rc::new(Cell::new(None));
        let o = Rc::clone(&out);
        let id = sim.spawn("w".into(), 0, TaskClass::Workload, move |cx| async move {
            o.set(Some(handle_mm_fault_shared_write(&cx, vma, addr).await));
        });
        let now = sim.k().clock();
        sim.k().sched.wake(id, now);
        for _ in 0..steps {
            if sim.exited(id) {
                break;
            }
            crate::testing::run_next(sim);
        }
        (id, out)
    }

    #[test]
    fn a_write_fault_dirties_a_hole_and_a_write_after_writeback_faults_and_dirties_again() {
        use crate::mm::memory::Fault;
        use crate::mm::vmstat::VmEvent;
        let mut sim = crate::process::Sim::new(kernel_with(64, 0, ""));
        let vma = file_vma(&mut sim.k(), 16, 0);
        sim.k().wb_new_inode(9, 0, 0);
        let idx = sim.k().mm.vmas[vma as usize].start + 3;
        let (_, out) = write_fault(&mut sim, vma, 3, 1000);
        assert_eq!(out.get(), Some((Fault::Major, true)));
        let p = match pte_kind(sim.k().mm.ptes[idx as usize]) {
            PteKind::Present { pfn, .. } => pfn,
            other => panic!("a present entry, not {other:?}"),
        };
        {
            let k = sim.k();
            assert_ne!(k.mem.pages.flags(p) & pg::DIRTY, 0);
            assert_eq!((k.wb.nodes[0].nr_dirty, k.wb.nodes[0].nr_dirtied), (1, 1));
            let i = k.wb.inode(9).unwrap();
            assert_eq!(
                k.wb.inodes[i].dirty.front().map(|d| (d.0, d.1)),
                Some((p, 3))
            );
        }
        // Mapped and dirty: the store needs no fault.
        let (_, out) = write_fault(&mut sim, vma, 3, 1000);
        assert_eq!(out.get(), Some((Fault::None, false)));
        // Under writeback: a write waits for its end, then dirties the folio again through
        // do_wp_page() (its entry was cleaned by folio_mkclean()).
        sim.k().folio_start_writeback(p);
        let faults = sim.k().stats.events.get(VmEvent::Pgfault);
        let (id, out) = write_fault(&mut sim, vma, 3, 1);
        assert!(
            !sim.exited(id) && out.get().is_none(),
            "it waits for the write"
        );
        sim.k().folio_end_writeback_file(p, 0);
        while !sim.exited(id) {
            crate::testing::run_next(&mut sim);
        }
        assert_eq!(out.get(), Some((Fault::Minor, true)));
        let k = sim.k();
        assert_eq!(
            k.mem.pages.flags(p) & (pg::DIRTY | pg::WRITEBACK),
            pg::DIRTY
        );
        assert_eq!(k.stats.events.get(VmEvent::Pgfault), faults + 1);
        assert_eq!((k.wb.nodes[0].nr_dirty, k.wb.nodes[0].nr_dirtied), (1, 2));
        assert_eq!(k.wb.nodes[0].nr_written, 1);
    }

    #[test]
    fn a_hole_fault_maps_a_new_page_cache_folio_with_no_io_and_refaults_after_reclaim() {
        use super::Verdict;
        use crate::mm::address_space::Entry;
        use crate::mm::lru::LRU_INACTIVE_FILE;
        use crate::mm::memory::Fault;
        use crate::mm::vmstat::VmEvent;
        let mut sim = crate::process::Sim::new(kernel_with(64, 0, ""));
        let vma = file_vma(&mut sim.k(), 16, 0);
        let idx = sim.k().mm.vmas[vma as usize].start + 7;
        let free = sim.k().nr_free_pages_true();
        assert_eq!(fault(&mut sim, vma, 7), Fault::Major);
        let k = sim.k();
        let PteKind::Present {
            pfn: p,
            young: true,
        } = pte_kind(k.mm.ptes[idx as usize])
        else {
            panic!("a young entry");
        };
        let f = *k.mem.pages.fields(p);
        assert_eq!(f.owner, 9);
        assert_eq!(
            f.flags & !pg::WORKINGSET,
            pg::LRU | pg::MAPPED | pg::UPTODATE,
            "on the LRU, mapped, uptodate; not locked, referenced or anon"
        );
        assert_eq!(f.lru as usize, LRU_INACTIVE_FILE);
        assert_eq!(k.mem.page_ext.index.as_ref().unwrap()[p as usize], 7);
        assert_eq!(k.address_spaces.get(9).unwrap().load(7), Entry::Folio(p));
        assert_eq!(k.mem.nodes[0].nr_file_pages, 1);
        assert_eq!(nr_file_mapped(&k), 1);
        assert_eq!(k.nr_free_pages_true(), free - 1);
        // A major fault, and no read: no bio, nothing paged in.
        assert_eq!(k.stats.events.get(VmEvent::Pgmajfault), 1);
        assert_eq!(k.stats.events.get(VmEvent::Pgfault), 1);
        assert_eq!(k.stats.events.get(VmEvent::PgpginKb), 0);
        k.check_page_places(&[]).unwrap();
        drop(k);
        // Present now: a second fault does nothing.
        assert_eq!(fault(&mut sim, vma, 7), Fault::None);
        // Reclaimed (kept once, then freed), its entry is none; the next fault finds a hole
        // again and maps a fresh folio.
        {
            let mut guard = sim.k();
            let k = &mut *guard;
            assert!(matches!(file_verdict(k, p, false).0, Verdict::Keep));
            assert!(matches!(file_verdict(k, p, false).0, Verdict::Free));
            assert_eq!(k.mm.ptes[idx as usize], 0);
            let z = k.page_zonenum(p);
            k.memcg.lruvecs[0].del_folio(&mut k.mem.pages, p, LRU_INACTIVE_FILE, z);
            k.mem.nodes[0].nr_file_pages -= 1;
            k.free_folio(p, 0);
        }
        assert_eq!(fault(&mut sim, vma, 7), Fault::Major);
        let k = sim.k();
        assert!(matches!(
            pte_kind(k.mm.ptes[idx as usize]),
            PteKind::Present { young: true, .. }
        ));
        assert_eq!(k.stats.events.get(VmEvent::Pgmajfault), 2);
        assert_eq!(k.stats.events.get(VmEvent::PgpginKb), 0);
        assert_eq!(nr_file_mapped(&k), 1);
        k.check_page_places(&[]).unwrap();
    }
}
