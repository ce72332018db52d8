//! Swap I/O (mm/page_io.c, 6.x): `swap_read_folio()` and `swap_writepage()` as block I/Os,
//! and their completions, `end_swap_bio_read()` (the folio is uptodate and unlocked, and the
//! tasks waiting on it run) and `end_swap_bio_write()` (`folio_end_writeback()`: a folio
//! reclaim wrote, PG_reclaim, goes to the tail of the inactive list to be freed next).
//!
//! The kernel submits one bio per folio and the block plug merges adjacent ones: here each
//! run of adjacent slots is one I/O. A swap area without a block device (zram) is
//! synchronous: its reads and writes cost CPU time (compression) and complete at once.

use crate::hw::block::{EndIo, Op};
use crate::kernel::Kernel;
use crate::mm::page::pg;
use crate::mm::vmstat::VmEvent;

const PAGE_SIZE: u64 = 4096;

impl Kernel {
    /// `swap_read_folio()` of each `(slot, folio)` of `reads` (in slot order within runs),
    /// folios locked and in the swap cache of `area`. Counts `pswpin`.
    pub fn swap_read_folios(&mut self, area: usize, reads: &[(u32, u32)]) {
        self.count(VmEvent::PswpIn, reads.len() as u64);
        let Some(dev) = self.swap.areas[area].dev else {
            let ns = self.costs.zram_read_ns * reads.len() as u64;
            self.charge(ns);
            for &(_, p) in reads {
                self.end_swap_read(p);
            }
            return;
        };
        self.submit_swap_runs(dev, area, Op::Read, reads);
    }

    /// `swap_writepage()` of each `(slot, folio)` of `writes`, folios under writeback in
    /// the swap cache of `area`. Counts `pswpout` and `nr_vmscan_write`. Returns whether the
    /// writes completed already (a synchronous area).
    pub fn swap_writepages(&mut self, area: usize, nid: u32, writes: &[(u32, u32)]) -> bool {
        let n = writes.len() as u64;
        self.count(VmEvent::PswpOut, n);
        self.mem.nodes[nid as usize].nr_vmscan_write += n;
        let Some(dev) = self.swap.areas[area].dev else {
            let ns = self.costs.zram_write_ns * n;
            self.charge(ns);
            for &(_, p) in writes {
                self.mem.pages.clear(p, pg::WRITEBACK | pg::RECLAIM);
            }
            return true;
        };
        self.submit_swap_runs(dev, area, Op::Write, writes);
        false
    }

    /// One I/O per run of adjacent slots of `folios` of `area`, on its device `dev`.
    fn submit_swap_runs(&mut self, dev: usize, area: usize, op: Op, folios: &[(u32, u32)]) {
        let base = self.swap.areas[area].base;
        let end_io = match op {
            Op::Read => EndIo::SwapRead(area),
            Op::Write => EndIo::SwapWrite(area),
        };
        let mut i = 0;
        while i < folios.len() {
            let mut j = i + 1;
            while j < folios.len() && folios[j].0 == folios[j - 1].0 + 1 {
                j += 1;
            }
            let bio = self.block.bios.alloc(dev, op);
            let b = &mut self.block.bios[bio];
            b.end_io = end_io;
            b.pages.extend(folios[i..j].iter().map(|&(_, p)| p));
            let offset = base + u64::from(folios[i].0) * PAGE_SIZE;
            self.submit_bio_endio_at(bio, (j - i) as u64 * PAGE_SIZE, offset);
            i = j;
        }
    }

    /// The completion of swap I/O `bio` (`bio->bi_end_io`), which is then put.
    pub fn end_io(&mut self, bio: u32) {
        let end_io = self.block.bios[bio].end_io;
        let pages = std::mem::take(&mut self.block.bios[bio].pages);
        self.mem.pages.prefetch_first(&pages);
        for (k, &p) in pages.iter().enumerate() {
            self.mem.pages.prefetch_ahead(&pages, k);
            match end_io {
                EndIo::SwapRead(_) => self.end_swap_read(p),
                EndIo::SwapWrite(_) => self.folio_end_writeback(p),
                EndIo::Writeback => self.folio_end_writeback_file(p, self.block.bios[bio].dev),
                EndIo::None => {}
            }
        }
        self.block.bios[bio].pages = pages;
        if self.block.bios[bio].nr_requests > 0 {
            self.blk_freed_requests(bio);
        }
        let now = self.now;
        self.block.bios.put(bio, now);
    }

    /// `end_swap_bio_read()` of folio `p`: uptodate, unlocked, its waiters woken.
    fn end_swap_read(&mut self, p: u32) {
        let f = self.mem.pages.fields_mut(p);
        f.flags = (f.flags & !pg::LOCKED) | pg::UPTODATE;
        self.folio_wake(p);
    }

    /// `folio_end_writeback()` of folio `p`: PG_writeback clears; a folio reclaim wrote
    /// (PG_reclaim) is rotated to the tail of its inactive list (`folio_rotate_reclaimable`),
    /// where reclaim finds it next, clean.
    fn folio_end_writeback(&mut self, p: u32) {
        self.mem.pages.clear(p, pg::WRITEBACK);
        if self.mem.pages.test_and_clear(p, pg::RECLAIM) {
            self.folio_rotate_reclaimable(p);
        }
        self.folio_wake(p);
    }

    /// `folio_rotate_reclaimable()`: an inactive, unlocked, clean folio on the LRU moves to
    /// its list's tail (`pgrotated`). The lru_lock it takes in interrupt context is not
    /// charged to any task.
    pub(crate) fn folio_rotate_reclaimable(&mut self, p: u32) {
        let f = *self.mem.pages.fields(p);
        if f.flags & (pg::LOCKED | pg::DIRTY | pg::ACTIVE) != 0 || f.flags & pg::LRU == 0 {
            return;
        }
        let lv = self.folio_lruvec(p);
        let list = self.memcg.lruvecs[lv].list(f.lru as usize);
        self.mem.pages.unlink(p);
        self.mem.pages.add_tail(list, p);
        self.count(VmEvent::Pgrotated, 1);
    }
}
