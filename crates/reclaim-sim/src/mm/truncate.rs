//! Removing a file's page cache when the file is deleted (mm/truncate.c, 6.x:
//! `truncate_inode_pages_range()` from `evict()` of the last reference to an unlinked inode;
//! 3.1's is the same two passes): every folio of the mapping leaves the page cache and the
//! LRU and is freed. A dirty folio is not written: its dirty state is cancelled
//! (`folio_cancel_dirty()` → `folio_account_cleaned()`: NR_FILE_DIRTY down), and a folio under
//! writeback is waited for (`folio_wait_writeback()`), as is one another task holds off the
//! LRU (reclaim or compaction has it isolated and locked: `folio_lock()` sleeps until they
//! let it go). The inode then leaves the flushers' lists (`inode_io_list_del()`).
//!
//! Departures: the files the model deletes (dd-write's) have no page-cache index
//! (`mm::address_space` is for files of known size), so their folios are found by a walk
//! over every page descriptor for the mapping's folios, where the kernel walks the file's
//! xarray; the walk itself is not charged, only each folio's removal (`shrink_folio_ns`,
//! the cost of `__remove_mapping()` of a clean page-cache folio, and `isolate_ns` under
//! lru_lock, taken once per walk and lruvec where `release_pages()` takes it per batch of
//! 15). A task that must wait for a folio (under writeback, or isolated) waits for that one
//! and then walks again from the start, since a folio migrated meanwhile is at another pfn.

use crate::engine::JIFFY;
use crate::kernel::Kernel;
use crate::mm::huge_memory::folio_test_pmd_mappable;
use crate::mm::page::{folio_nr_pages, pg, NO_OWNER};
use crate::mm::page_writeback::PAGE_SIZE;
use crate::mm::vmstat::VmEvent;
use crate::process::{io_schedule, sleep_until, Cx};

/// A folio `truncate_inode_folios` could not take yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// Under writeback: its end wakes the folio's wait queue.
    Writeback(u32),
    /// Off the LRU, held by reclaim or compaction.
    Isolated(u32),
}

/// Whether page `f` is a page-cache folio (a head, not free, anon, swap cache or the
/// kernel's own) of `mapping`.
#[inline]
fn is_folio_of(f: &crate::mm::page::PageFields, mapping: u32) -> bool {
    const NOT_PAGE_CACHE: u16 = pg::ANON | pg::SWAPCACHE | pg::BUDDY | pg::TAIL | pg::SLAB;
    f.owner == mapping && f.flags & NOT_PAGE_CACHE == 0
}

impl Kernel {
    /// One pass of `truncate_inode_pages()` over `mapping` by the task on `cpu`: each of its
    /// folios on the LRU and not under writeback is removed (a dirty one's dirty state
    /// cancelled) and freed. Returns the first folio it could not take, if any (the caller
    /// waits for it and calls again), and the folios removed.
    pub fn truncate_inode_folios(&mut self, mapping: u32, cpu: u32) -> (Option<Busy>, u64) {
        let cpu_node = self.cpus.node_of(cpu);
        let mut busy = None;
        let mut removed = 0u64;
        let mut freed: Vec<u32> = Vec::with_capacity(64);
        // Folios taken off each lruvec's lists, for the lru_lock hold.
        let mut off_lru = vec![0u64; self.memcg.lruvecs.len()];
        let mut nr_cancelled = 0u64;
        for p in 0..self.mem.pages.nr_pages() {
            let f = *self.mem.pages.fields(p);
            if !is_folio_of(&f, mapping) {
                continue;
            }
            if f.flags & pg::WRITEBACK != 0 {
                busy.get_or_insert(Busy::Writeback(p));
                continue;
            }
            if f.flags & pg::LRU == 0 {
                busy.get_or_insert(Busy::Isolated(p));
                continue;
            }
            debug_assert_eq!(
                f.flags & (pg::MAPPED | pg::LOCKED),
                0,
                "a deleted file's folio is neither mapped nor locked"
            );
            let nr = folio_nr_pages(&f);
            let zi = self.page_zone(p);
            let (nid, zone_idx) = (self.mem.zones[zi].nid, self.mem.zones[zi].zone_idx);
            if f.flags & pg::DIRTY != 0 {
                // folio_cancel_dirty(): never written.
                self.wb.nodes[nid as usize].nr_dirty -= nr;
                nr_cancelled += nr;
            }
            let lv = self.folio_lruvec(p);
            self.memcg.lruvecs[lv].del_folio(&mut self.mem.pages, p, usize::from(f.lru), zone_idx);
            off_lru[lv] += 1;
            let pgdat = &mut self.mem.nodes[nid as usize];
            pgdat.nr_file_pages -= nr;
            pgdat.nr_file_thps -= u64::from(folio_test_pmd_mappable(nr));
            let g = self.mem.pages.fields_mut(p);
            g.owner = NO_OWNER;
            g.flags = 0;
            removed += 1;
            if nr > 1 {
                self.free_large_folio(p, cpu);
                self.count(VmEvent::Pgfree, nr);
            } else {
                freed.push(p);
                if freed.len() == freed.capacity() {
                    self.free_unref_folios(&freed, cpu);
                    self.count(VmEvent::Pgfree, freed.len() as u64);
                    freed.clear();
                }
            }
        }
        if !freed.is_empty() {
            self.free_unref_folios(&freed, cpu);
            self.count(VmEvent::Pgfree, freed.len() as u64);
        }
        self.wb.truncated += nr_cancelled * PAGE_SIZE;
        let work = removed * self.costs.shrink_folio_ns;
        self.charge(work);
        for (lv, &n) in off_lru.iter().enumerate() {
            if n > 0 {
                let hold = n * self.costs.isolate_ns;
                let at = self.clock();
                let lock = self.lru_lock(lv, cpu_node, hold, at);
                self.charge(lock.total());
            }
        }
        (busy, removed)
    }

    /// Whether `busy`, a folio of `mapping` a pass could not take, still cannot be taken.
    pub fn truncate_still_busy(&self, mapping: u32, busy: Busy) -> bool {
        let (Busy::Writeback(p) | Busy::Isolated(p)) = busy;
        let f = self.mem.pages.fields(p);
        is_folio_of(f, mapping) && (f.flags & pg::WRITEBACK != 0 || f.flags & pg::LRU == 0)
    }

    /// `inode_io_list_del()` at eviction: `mapping`'s inode, if the flushers still had it,
    /// leaves their lists (its dirty entries are stale once its folios are gone).
    pub fn inode_io_list_del(&mut self, mapping: u32) {
        if let Some(i) = self.wb.inode(mapping) {
            self.wb.inodes.remove(i);
        }
    }
}

/// `unlink()` of the last name of file `mapping`, with no other reference: `evict()` →
/// `truncate_inode_pages_final()` (module doc), by the task of `cx`. Returns the folios
/// removed.
pub async fn unlink_evict(cx: &Cx, mapping: u32) -> u64 {
    let mut removed = 0;
    loop {
        let busy = {
            let mut k = cx.k();
            let (busy, n) = k.truncate_inode_folios(mapping, cx.cpu);
            removed += n;
            busy
        };
        let Some(busy) = busy else {
            break;
        };
        // Wait for that folio, then walk again.
        loop {
            {
                let mut k = cx.k();
                if !k.truncate_still_busy(mapping, busy) {
                    break;
                }
                if let Busy::Writeback(p) = busy {
                    k.folio_waitqueue(p).add(cx.tid);
                }
            }
            match busy {
                // folio_wait_writeback(): woken by folio_end_writeback()'s folio_wake (or
                // another folio's of the same hashed queue: the loop looks again).
                Busy::Writeback(_) => io_schedule(cx).await,
                // folio_lock() of a folio reclaim or compaction holds: they unlock it without
                // a wake-up the model keeps, so the task looks again a jiffy later.
                Busy::Isolated(_) => {
                    let at = cx.k().clock() + JIFFY;
                    sleep_until(cx, at).await;
                }
            }
        }
    }
    cx.k().inode_io_list_del(mapping);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{kernel_with, take_pages, write_new_file};

    /// Six folios of file 7: two written (clean), two dirty, one under writeback, one of
    /// another file. A pass frees the clean and dirty ones (the dirty count cancelled, not
    /// written), reports the one under writeback and leaves the other file's; once its
    /// writeback ends, the next pass frees it, and nothing of file 7 is left.
    #[test]
    fn truncation_frees_clean_and_dirty_folios_and_waits_for_writeback() {
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 6);
        k.wb_new_inode(7, 0, 0);
        k.wb_new_inode(8, 0, 0);
        k.filemap_add_folios(7, 0, &pages[..5], 0);
        k.filemap_add_folios(8, 0, &pages[5..], 0);
        k.generic_perform_write(7, 0, &pages[..5], 0);
        k.generic_perform_write(8, 0, &pages[5..], 0);
        // Pages 0-1 written and clean; page 4 under writeback; pages 2-3 dirty.
        for &p in &[pages[0], pages[1], pages[4]] {
            k.folio_start_writeback(p);
            k.wb.written_by_flusher += PAGE_SIZE;
        }
        for &p in &pages[..2] {
            k.folio_end_writeback_file(p, 0);
        }
        let free_before = k.nr_free_pages();
        let file_before = k.mem.nodes[0].nr_file_pages;
        let (busy, removed) = k.truncate_inode_folios(7, 0);
        assert_eq!(busy, Some(Busy::Writeback(pages[4])));
        assert_eq!(removed, 4);
        assert_eq!(k.mem.nodes[0].nr_file_pages, file_before - 4);
        assert_eq!(k.vmstat().stat("nr_dirty"), 1, "file 8's page only");
        assert_eq!(k.wb.truncated, 2 * PAGE_SIZE);
        k.check_writeback().unwrap();
        k.drain_all_pages();
        assert_eq!(k.nr_free_pages(), free_before + 4);
        assert_eq!(k.mem.pages.fields(pages[5]).owner, 8);
        k.folio_end_writeback_file(pages[4], 0);
        let (busy, removed) = k.truncate_inode_folios(7, 0);
        assert_eq!((busy, removed), (None, 1));
        assert!((0..k.mem.pages.nr_pages()).all(|p| !is_folio_of(k.mem.pages.fields(p), 7)));
        k.inode_io_list_del(7);
        assert!(k.wb.inode(7).is_none() && k.wb.inode(8).is_some());
        k.check_writeback().unwrap();
    }

    /// A folio off the LRU (isolated by reclaim) is left for a later pass.
    #[test]
    fn an_isolated_folio_is_left_until_it_is_back() {
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        write_new_file(&mut k, 7, 0, &[p]);
        let lv = k.folio_lruvec(p);
        let lru = usize::from(k.mem.pages.fields(p).lru);
        let zone_idx = k.page_zonenum(p);
        k.memcg.lruvecs[lv].del_folio(&mut k.mem.pages, p, lru, zone_idx);
        assert_eq!(k.truncate_inode_folios(7, 0), (Some(Busy::Isolated(p)), 0));
        assert_eq!(k.vmstat().stat("nr_dirty"), 1);
        k.memcg.lruvecs[lv].add_folio(&mut k.mem.pages, p, lru, zone_idx);
        assert_eq!(k.truncate_inode_folios(7, 0), (None, 1));
        assert_eq!(k.vmstat().stat("nr_dirty"), 0);
        k.check_writeback().unwrap();
    }
}
