//! Dirty pages and their writeback (mm/page-writeback.c and fs/fs-writeback.c, 6.x; the
//! seed-001 era's dirty throttling as a switch): a `write()` dirtying page-cache folios
//! (`generic_perform_write()` → `folio_mark_dirty()`), the dirty limits
//! (`global_dirtyable_memory()`, `domain_dirty_limits()`), the throttling of dirtiers
//! (`balance_dirty_pages()`), the per-device flushers (`wb_workfn()`: background writeback,
//! the periodic kupdate pass, the work reclaim queues with `wakeup_flusher_threads()`), and
//! the end of a page-cache folio's writeback (`folio_end_writeback()`). Reclaim's side,
//! `pageout()` of a dirty file folio and what it does with folios under writeback, is
//! `mm::vmscan_folio`; the state is `mm::backing_dev`.
//!
//! **Dirty limits** are the kernel's formulas: dirtyable memory is free pages less
//! `totalreserve_pages` plus the file LRU, plus one (no highmem); `thresh = dirty_ratio ·
//! PAGE_SIZE / 100 · avail / PAGE_SIZE` or `dirty_bytes` in pages, `bg_thresh` likewise, and
//! half of `thresh` if it is not below it. `nr_dirty_threshold` and
//! `nr_dirty_background_threshold` in vmstat are computed when read, as /proc/vmstat does.
//!
//! **Throttling** (`variant.dirty_throttle`):
//! - `"ratelimit"` (3.2+, the default), simplified: a dirtier enters `balance_dirty_pages()`
//!   every `nr_dirtied_pause` pages; below the freerun ceiling `(thresh + bg_thresh) / 2`
//!   it goes on and its next check is `dirty_poll_interval()` pages away; above it, it
//!   sleeps `pages_dirtied / task_ratelimit`, at most `max_pause` (200 ms), where
//!   `task_ratelimit = write_bw / nr_dirtiers · pos_ratio` and `pos_ratio` is the global
//!   control line `1 + ((setpoint − dirty) / (limit − setpoint))³` (clamped to [0, 2],
//!   setpoint halfway between the freerun ceiling and the limit, the limit `thresh`).
//!   Departures: the balanced rate is taken as reached (`dirty_ratelimit = write_bw / N`
//!   for N dirtiers of the device, where the kernel converges to it), there is no per-wb
//!   share of the limit (`wb_position_ratio`), and `write_bw` is `wb_update_write_bandwidth`'s
//!   estimate from the device's completed writes, updated every 200 ms over a 4 s period;
//!   no think-time credit, no `dirty_limit` tracking of a falling threshold;
//! - `"threshold"` (before 3.2): while `dirty > (thresh + bg_thresh) / 2` and over
//!   `thresh`, the dirtier writes `write_chunk` (`sync_writeback_pages()`: 1.5 ×
//!   `ratelimit_pages`) of its own device's pages itself (3.1's `writeback_inodes_wb()`:
//!   the device's inodes in turn, each up to `writeback_chunk_size()` of the pages still
//!   owed, so at least 4 MiB of the first) and waits for them (departure: the kernel waited
//!   only for free requests in the block queue), then sleeps `pause` (1 jiffy, doubling to
//!   HZ/10); it checks every `ratelimit_pages` pages (8 when the limit was exceeded), which
//!   is 3.1's `writeback_set_ratelimit()`: the page cache's pages over `ncpus · 32`, at
//!   least 16 and at most 4 MiB (3.2 made it `dirty_thresh / (ncpus · 32)`, uncapped, for
//!   the rate-controlled path, whose checks `dirty_poll_interval()` spaces instead).
//!
//! **Flushers** (fs/fs-writeback.c, one `bdi_writeback` per device, started by a workload
//! that writes): asleep until woken, or until `dirty_writeback_centisecs` after the last
//! kupdate pass while the device has dirty pages. Each pass writes, in the order of
//! `wb_do_writeback()`: the pages reclaim asked for (`wb_check_start_all`, all dirty pages
//! when it asked), background writeback while global `nr_dirty` is above `bg_thresh`
//! (`wb_over_bg_thresh`, without the per-wb part), then kupdate: pages dirtied more than
//! `dirty_expire_centisecs` ago. It writes an inode's oldest dirty pages in chunks of
//! `writeback_chunk_size()` (3.1+): half a second at the device's smoothed write bandwidth,
//! at most an eighth of the dirty limit, plus MIN_WRITEBACK_PAGES (4 MiB) rounded down to a
//! multiple of it; the device's inodes in turn (`b_io`); each run of pages consecutive in
//! the file and in its blocks is one I/O at those blocks (a rotating disk seeks between
//! runs, `hw::block`), and it submits the next chunk once the one before the last
//! has completed (two chunks in flight: the block layer's queue). Its CPU time per folio is
//! `costs.page_cache_insert_ns` (a guess: tagging, clearing dirty, adding to a bio). A large
//! folio (`variant.large_folio_writes`) is dirtied, written and ended whole: the counts are
//! its pages, its work one folio's.
//!
//! **Blocks** (the filesystem's delayed allocation, xfs and ext4 alike): a file's pages get
//! their blocks when they are first written back, not when they are dirtied. The first
//! write of a page without blocks allocates the file's whole delayed range, from the end of
//! its blocks to `i_size` (`xfs_bmapi_convert_delalloc()` converts the delalloc extent
//! around the page, which for a file written from its start is that range), at the next
//! free block of the allocation group of the file's directory (xfs's inode64 allocator
//! spreads new directories over `agcount` groups; a file's data go to its directory's
//! group), extending the file's last extent when that is where it ends. So the data of
//! files written in one directory reach the disk in the order the flushers write them, as
//! on a freshly made filesystem, and a page reclaim writes lands at its place in its
//! file's extent. Departures: groups never fill and freed blocks are never reused (no
//! free-space search, no fragmentation), no speculative preallocation beyond `i_size`,
//! and a file whose inode has left the flushers' list (closed and clean) gets new blocks
//! if it is written again.
//!
//! Departures: no `fsync`/`sync`, no per-inode `dirtied_when` (expiry is per page), the
//! chunk's dirty limit is `thresh` (no `global_wb_domain.dirty_limit` falling slowly behind
//! a falling threshold), one flusher per device, and writes complete without the
//! filesystem's other work (no journal, no metadata writes).

use crate::engine::{Ns, HZ, JIFFY, NSEC_PER_SEC};
use crate::hw::block::{EndIo, Op};
use crate::kernel::Kernel;
use crate::mm::backing_dev::{Inode, AG_COUNT};
use crate::mm::hugetlb::totalreserve_pages;
use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
use crate::mm::page::{folio_nr_pages, pg, PREFETCH_AHEAD};
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::mm::zone::WMARK_HIGH;
use crate::process::{cond_resched, schedule, sleep_until, Cx, Sim};
use crate::sched::TaskClass;
use crate::variant::DirtyThrottle;

pub const PAGE_SIZE: u64 = 4096;
/// MIN_WRITEBACK_PAGES (fs/fs-writeback.c): 4 MiB of pages, the unit a flusher's chunk of
/// one inode is rounded to, and its least size (`writeback_chunk_size()`).
pub const MIN_WRITEBACK_PAGES: usize = 1024;
/// DIRTY_SCOPE (include/linux/writeback.h): a flusher's chunk is at most this fraction of
/// the dirty limit.
const DIRTY_SCOPE: u64 = 8;
/// 3.1's cap on `ratelimit_pages`: 4 MiB of pages (`writeback_set_ratelimit()`).
const RATELIMIT_PAGES_MAX: u64 = (4096 * 1024) / PAGE_SIZE;
/// `max_pause` of `balance_dirty_pages()`: MAX_PAUSE, HZ/5.
const MAX_PAUSE: Ns = HZ / 5 * JIFFY;
/// BANDWIDTH_INTERVAL: the write bandwidth is re-estimated at most this often.
const BANDWIDTH_INTERVAL: Ns = HZ / 5 * JIFFY;
/// The estimate's period: `roundup_pow_of_two(3 * HZ)` jiffies.
const BANDWIDTH_PERIOD: Ns = 1024 * JIFFY;
/// Where the filesystem's allocation groups start on its device (apart from swap, at the
/// start), and how far apart they are.
const AG_AREA: u64 = 1 << 42;
const AG_SPAN: u64 = 1 << 39;

/// A dirtier's state across its writes (`current->nr_dirtied`, `nr_dirtied_pause`,
/// the seed era's `ratelimit` and `pause`).
#[derive(Clone, Debug)]
pub struct DirtyTask {
    pub dev: usize,
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    /// Time spent asleep in `balance_dirty_pages()`.
    pub paused_ns: Ns,
}

impl DirtyTask {
    pub fn new(dev: usize) -> DirtyTask {
        DirtyTask {
            dev,
            nr_dirtied: 0,
            nr_dirtied_pause: 32,
            paused_ns: 0,
        }
    }
}

/// What a flusher does next (`wb_do_writeback()`'s order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// WB_REASON_VMSCAN: this many pages, any age.
    Vmscan,
    /// WB_REASON_BACKGROUND: while over the background threshold.
    Background,
    /// WB_REASON_PERIODIC: pages dirtied before this time.
    Kupdate(Ns),
}

impl Kernel {
    /// `global_dirtyable_memory()`: free pages (NR_FREE_PAGES as read) less the reserves,
    /// plus the file LRU, plus one.
    pub fn global_dirtyable_memory(&self) -> u64 {
        let mut x = self.global_nr_free_pages();
        x -= x.min(totalreserve_pages(self));
        for lv in &self.memcg.lruvecs {
            x += lv.total(LRU_INACTIVE_FILE) + lv.total(LRU_ACTIVE_FILE);
        }
        x + 1
    }

    /// `global_dirty_limits()`: `(bg_thresh, thresh)` in pages.
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        domain_dirty_limits(
            self.global_dirtyable_memory(),
            self.sysctl.dirty_ratio,
            self.sysctl.dirty_bytes,
            self.sysctl.dirty_background_ratio,
            self.sysctl.dirty_background_bytes,
        )
    }

    /// A new file `mapping` on device `dev`, written from its start (`inode` for the
    /// flushers), in directory `dir` (its blocks come from that directory's allocation
    /// group: module doc, "Blocks").
    pub fn wb_new_inode(&mut self, mapping: u32, dev: usize, dir: u32) {
        self.wb.inodes.push(Inode {
            mapping,
            dev,
            closed: false,
            dirty: std::collections::VecDeque::with_capacity(MIN_WRITEBACK_PAGES),
            ag: dir % AG_COUNT as u32,
            i_size: 0,
            extents: Vec::new(),
        });
    }

    /// The device byte offset of page `index` of inode `i`, its blocks allocated first if
    /// it has none (`xfs_map_blocks()` → `xfs_bmapi_convert_delalloc()`; module doc,
    /// "Blocks"), and how many pages from it on lie contiguous on the device.
    fn wb_map_blocks(&mut self, i: usize, index: u32) -> (u64, u32) {
        let inode = &mut self.wb.inodes[i];
        let start = inode.allocated_to();
        if index >= start {
            let len = inode.i_size.max(index + 1) - start;
            let next = &mut self.wb.wbs[inode.dev].ag_next[inode.ag as usize];
            let offset = AG_AREA + u64::from(inode.ag) * AG_SPAN + *next;
            *next += u64::from(len) * PAGE_SIZE;
            match inode.extents.last_mut() {
                Some(last) if last.2 + u64::from(last.1) * PAGE_SIZE == offset => last.1 += len,
                _ => inode.extents.push((start, len, offset)),
            }
        }
        let k = inode.extents.partition_point(|e| e.0 <= index) - 1;
        let (first, len, offset) = inode.extents[k];
        (
            offset + u64::from(index - first) * PAGE_SIZE,
            first + len - index,
        )
    }

    /// The writer of `mapping` closed it: its inode goes once its pages are written.
    pub fn wb_close_inode(&mut self, mapping: u32) {
        if let Some(i) = self.wb.inode(mapping) {
            self.wb.inodes[i].closed = true;
            if self.wb.inodes[i].dirty.is_empty() {
                self.wb.inodes.remove(i);
            }
        }
    }

    /// `generic_perform_write()` of new `folios` at `index` and on of `mapping` (each folio
    /// at the index after the last one's pages), in the page cache and locked
    /// (`filemap_add_folios`, `filemap_add_large_folio`): the copy from user space, then
    /// each is marked dirty (`folio_mark_dirty()` → `__folio_mark_dirty()`: NR_FILE_DIRTY
    /// and NR_DIRTIED by its pages, the inode's dirty list) and unlocked. Written folios are
    /// not marked accessed (FGP_WRITEBEGIN has no FGP_ACCESSED in 6.x; not verified against
    /// every filesystem). The first dirty page of a device with none starts its flusher's
    /// kupdate timer (`wb_wakeup_delayed`).
    pub fn generic_perform_write(
        &mut self,
        mapping: u32,
        index: u32,
        folios: &[u32],
        cpu_node: u32,
    ) {
        let Some(i) = self.wb.inode(mapping) else {
            panic!("a write to a file without an inode");
        };
        self.wb.inodes[i].prefetch_dirty_tail(folios.len());
        let n: u64 = folios
            .iter()
            .map(|&p| folio_nr_pages(self.mem.pages.fields(p)))
            .sum();
        let now = self.clock();
        let page_node = folios
            .first()
            .map_or(cpu_node, |&p| self.mem.zones[self.page_zone(p)].nid);
        self.mem.nodes[page_node as usize]
            .memory
            .add(self.now, n * PAGE_SIZE);
        self.mem.nodes[cpu_node as usize]
            .memory
            .add(self.now, n * PAGE_SIZE);
        let copy = self.mem.nodes[page_node as usize]
            .memory
            .scale(n * self.costs.copy_to_user_ns);
        self.charge(copy);
        self.wb.dirtied = true;
        let dev = self.wb.inodes[i].dev;
        let was_clean = self.wb_device_clean(dev);
        let mut at = index;
        for &p in folios {
            let f = self.mem.pages.fields_mut(p);
            debug_assert_eq!(f.owner, mapping);
            f.flags = (f.flags & !pg::LOCKED) | pg::UPTODATE;
            self.mem.page_ext.index_mut()[p as usize] = at;
            at += self.__folio_mark_dirty(i, p, at, now) as u32;
        }
        if was_clean {
            self.wb_wakeup_delayed(dev, now);
        }
    }

    /// `folio_mark_dirty()` of page-cache folio `p` of `mapping` by a write fault on a
    /// shared mapping (`do_shared_fault()` or `wp_page_shared()` → `fault_dirty_shared_page()`,
    /// 6.x): dirty as a `write()`'s folio is, if it is not already. Returns whether it was
    /// clean. The caller, which holds the task's `nr_dirtied`, then calls
    /// `balance_dirty_pages_ratelimited()` (`DirtyTask`).
    pub fn fault_dirty_shared_page(&mut self, mapping: u32, p: u32) -> bool {
        let f = self.mem.pages.fields(p);
        debug_assert_eq!(f.owner, mapping);
        if f.flags & pg::DIRTY != 0 {
            return false;
        }
        debug_assert_eq!(f.flags & pg::WRITEBACK, 0);
        let Some(i) = self.wb.inode(mapping) else {
            panic!("a write fault on a file without an inode");
        };
        let now = self.clock();
        self.wb.dirtied = true;
        let dev = self.wb.inodes[i].dev;
        let was_clean = self.wb_device_clean(dev);
        let index = self.mem.page_ext.index_mut()[p as usize];
        self.__folio_mark_dirty(i, p, index, now);
        if was_clean {
            self.wb_wakeup_delayed(dev, now);
        }
        true
    }

    /// Whether no inode of `dev` has a dirty page.
    fn wb_device_clean(&self, dev: usize) -> bool {
        self.wb
            .inodes
            .iter()
            .all(|i| i.dev != dev || i.dirty.is_empty())
    }

    /// `__folio_mark_dirty()` of folio `p`, page `at` of inode `i`'s file, at `now`:
    /// PG_dirty, NR_FILE_DIRTY and NR_DIRTIED by its pages, and the inode's dirty list.
    /// Returns its pages. Inlined into its loops: called for every folio written.
    #[inline(always)]
    fn __folio_mark_dirty(&mut self, i: usize, p: u32, at: u32, now: Ns) -> u64 {
        let f = self.mem.pages.fields_mut(p);
        f.flags |= pg::DIRTY;
        let nr = folio_nr_pages(f);
        let nid = self.mem.zones[self.page_zone(p)].nid;
        let node = &mut self.wb.nodes[nid as usize];
        node.nr_dirty += nr;
        node.nr_dirtied += nr;
        let inode = &mut self.wb.inodes[i];
        inode.dirty.push_back((p, at, now));
        inode.i_size = inode.i_size.max(at + nr as u32);
        nr
    }

    /// `wb_wakeup_delayed()`: the first dirty page of device `dev` starts its flusher's
    /// kupdate timer.
    fn wb_wakeup_delayed(&mut self, dev: usize, now: Ns) {
        let at = now + self.dirty_writeback_interval();
        let wb = &mut self.wb.wbs[dev];
        wb.last_old_flush = wb.last_old_flush.max(now);
        if let Some(t) = wb.flusher {
            if wb.wait.contains(t) {
                self.sched.wake(t, at);
            }
        }
    }

    /// `dirty_writeback_centisecs` in ns.
    fn dirty_writeback_interval(&self) -> Ns {
        Ns::from(self.sysctl.dirty_writeback_centisecs) * 10_000_000
    }

    /// `wb_wakeup()`: the flusher of `dev` runs now if it sleeps.
    pub fn wb_wakeup(&mut self, dev: usize) {
        let now = self.clock();
        let wb = &mut self.wb.wbs[dev];
        if let Some(t) = wb.flusher {
            if wb.wait.contains(t) {
                wb.wait.remove(t);
                self.sched.tasks[t as usize].woken = true;
                self.sched.wake(t, now);
            }
        }
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)`: each device with dirty pages is asked to
    /// write all of them (`wb_start_writeback` → `wb_check_start_all`), once until done.
    pub fn wakeup_flusher_threads(&mut self) {
        let nr = self.wb.nr_dirty();
        for dev in 0..self.wb.wbs.len() {
            let has_dirty = self
                .wb
                .inodes
                .iter()
                .any(|i| i.dev == dev && !i.dirty.is_empty());
            if !has_dirty || self.wb.wbs[dev].vmscan_pages > 0 {
                continue;
            }
            self.wb.wbs[dev].vmscan_pages = nr;
            self.wb_wakeup(dev);
        }
    }

    /// `folio_end_writeback()` of page-cache folio `p`: NR_WRITEBACK down, NR_WRITTEN up;
    /// a folio reclaim marked (PG_reclaim) is rotated to the inactive tail
    /// (`folio_rotate_reclaimable`, `pgrotated`); throttled reclaimers are woken once 32
    /// pages per throttled task have been written since the first began to wait
    /// (`__acct_reclaim_writeback`).
    pub(crate) fn folio_end_writeback_file(&mut self, p: u32, dev: usize) {
        debug_assert!(self.mem.pages.flags(p) & pg::WRITEBACK != 0);
        self.mem.pages.clear(p, pg::WRITEBACK);
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        if self.mem.pages.test_and_clear(p, pg::RECLAIM) {
            self.folio_rotate_reclaimable(p);
        }
        let nid = self.mem.zones[self.page_zone(p)].nid as usize;
        let now = self.now;
        let node = &mut self.wb.nodes[nid];
        node.nr_writeback -= nr;
        node.nr_written += nr;
        self.wb.wbs[dev].written += nr;
        if node.nr_reclaim_throttled > 0 {
            node.nr_throttled_written += nr;
            let written = node.nr_throttled_written - node.nr_reclaim_start;
            if written > SWAP_CLUSTER_MAX * node.nr_reclaim_throttled {
                node.reclaim_wait.wake_up_all(&mut self.sched, now);
            }
        }
        self.folio_wake(p);
    }

    /// Submit page-cache folios `run` of inode `i`, from page `index` on (each folio's pages
    /// after the last's), already under writeback: one write for each stretch whose blocks
    /// lie contiguous on the device (one, unless the run crosses from one extent to
    /// another). Returns when the last completes.
    pub(crate) fn submit_file_write(&mut self, i: usize, index: u32, run: &[u32]) -> Ns {
        let dev = self.wb.inodes[i].dev;
        let mut done_at = 0;
        let (mut k, mut at) = (0, index);
        while k < run.len() {
            let (offset, mut contiguous) = self.wb_map_blocks(i, at);
            let start = k;
            let mut pages = 0u64;
            while k < run.len() {
                let nr = folio_nr_pages(self.mem.pages.fields(run[k]));
                if k > start && nr > u64::from(contiguous) {
                    break;
                }
                contiguous = contiguous.saturating_sub(nr as u32);
                pages += nr;
                k += 1;
            }
            at += pages as u32;
            let bio = self.block.bios.alloc(dev, Op::Write);
            let b = &mut self.block.bios[bio];
            b.end_io = EndIo::Writeback;
            b.pages.extend_from_slice(&run[start..k]);
            self.submit_bio_endio_at(bio, pages * PAGE_SIZE, offset);
            done_at = done_at.max(self.block.bios[bio].done_at);
        }
        done_at
    }

    /// Take folio `p` from dirty to under writeback (`folio_clear_dirty_for_io()` and
    /// `folio_start_writeback()`). Inlined into its loops: called for every folio written.
    #[inline(always)]
    pub(crate) fn folio_start_writeback(&mut self, p: u32) {
        let f = self.mem.pages.fields_mut(p);
        debug_assert!(f.flags & pg::DIRTY != 0 && f.flags & pg::BUDDY == 0);
        f.flags = (f.flags & !pg::DIRTY) | pg::WRITEBACK;
        let nr = folio_nr_pages(f);
        let nid = self.mem.zones[self.page_zone(p)].nid as usize;
        let node = &mut self.wb.nodes[nid];
        node.nr_dirty -= nr;
        node.nr_writeback += nr;
    }

    /// `writeback_sb_inodes()` for one chunk on `dev`: the next inode (in turn) with a
    /// dirty page dirtied at or before `before`, up to `max` of its oldest such pages
    /// (stale entries, folios cleaned meanwhile, are dropped); each run of consecutive pages
    /// one write. Returns the pages written and when the last write completes, or `None`
    /// if no inode has such a page.
    pub(crate) fn writeback_chunk(
        &mut self,
        dev: usize,
        before: Ns,
        max: usize,
    ) -> Option<(u64, Ns)> {
        let nr_inodes = self.wb.inodes.len();
        // The run being built (each turn starts with none): zeroed once, not per inode.
        let mut run: [u32; 128] = [0; 128];
        // The inode each turn looks at: one after the last turn's, or the same index when
        // that turn removed its inode (closed, and its last entries stale), wrapping over
        // the inodes left. (Before, each turn after one that wrote nothing advanced by the
        // turn number as well, skipping inodes: with many files a chunk could find none of
        // the dirty pages there were, and the flusher spun.)
        let mut cursor = self.wb.wbs[dev].next_inode;
        for _ in 0..nr_inodes {
            let left = self.wb.inodes.len();
            if left == 0 {
                break;
            }
            let i = cursor % left;
            if self.wb.inodes[i].dev != dev {
                cursor = i + 1;
                continue;
            }
            let mapping = self.wb.inodes[i].mapping;
            let mut written = 0u64;
            let mut done_at = 0;
            // The run's folios, their first page's index and their pages.
            let (mut nr_run, mut run_index, mut run_pages) = (0usize, 0u32, 0u32);
            let mut nr_folios = 0u64;
            // Mapped folios: `folio_clear_dirty_for_io()` → `folio_mkclean()` walks each one's
            // reverse map to write-protect and clean its entries.
            let mut nr_mkclean = 0u64;
            // The inode's dirty list, walked by position and cut once at the end rather than
            // popped entry by entry; held outside `self` meanwhile, which nothing called here
            // reads (the folios' flags and counters, the bios).
            let mut dirty = std::mem::take(&mut self.wb.inodes[i].dirty);
            for &(p, _, _) in dirty.iter().take(PREFETCH_AHEAD) {
                self.mem.pages.prefetch(p);
                self.mem.page_ext.prefetch_index(p);
            }
            let mut k = 0;
            while written < max as u64 {
                let Some(&(p, index, when)) = dirty.get(k) else {
                    break;
                };
                if let Some(&(ahead, _, _)) = dirty.get(k + PREFETCH_AHEAD) {
                    // The folio's descriptor and its `index`, both read below: each is a
                    // miss where dirty pages lie scattered over memory.
                    self.mem.pages.prefetch(ahead);
                    self.mem.page_ext.prefetch_index(ahead);
                }
                let f = *self.mem.pages.fields(p);
                let live = f.owner == mapping
                    && f.flags & (pg::DIRTY | pg::WRITEBACK | pg::BUDDY) == pg::DIRTY
                    && self.mem.page_ext.index_mut()[p as usize] == index;
                if live && when > before {
                    break;
                }
                k += 1;
                if !live {
                    continue;
                }
                if nr_run == run.len() || (nr_run > 0 && index != run_index + run_pages) {
                    done_at = self.submit_file_write(i, run_index, &run[..nr_run]);
                    (nr_run, run_pages) = (0, 0);
                }
                if nr_run == 0 {
                    run_index = index;
                }
                self.folio_start_writeback(p);
                nr_mkclean += u64::from(f.flags & pg::MAPPED != 0);
                let nr = folio_nr_pages(&f);
                run[nr_run] = p;
                nr_run += 1;
                run_pages += nr as u32;
                written += nr;
                nr_folios += 1;
            }
            dirty.drain(..k);
            self.wb.inodes[i].dirty = dirty;
            if nr_run > 0 {
                done_at = self.submit_file_write(i, run_index, &run[..nr_run]);
            }
            let inode = &self.wb.inodes[i];
            let next = if inode.closed && inode.dirty.is_empty() {
                self.wb.inodes.remove(i);
                i
            } else {
                i + 1
            };
            self.wb.wbs[dev].next_inode = next;
            cursor = next;
            if written > 0 {
                let work = self.costs.page_cache_insert_ns * nr_folios
                    + self.costs.folio_referenced_ns * nr_mkclean;
                self.charge(work);
                self.wb.written_by_flusher += written * PAGE_SIZE;
                return Some((written, done_at));
            }
        }
        None
    }

    /// `writeback_chunk_size()` (fs/fs-writeback.c, 3.1 to 6.x) of a work of `nr_pages` on
    /// `dev`: the pages a flusher writes of one inode before it turns to the next. Half a
    /// second at the device's `avg_write_bandwidth`, at most the dirty limit over
    /// DIRTY_SCOPE and the work's pages, then MIN_WRITEBACK_PAGES more rounded down to a
    /// multiple of it: at least 4 MiB, whatever the work asked for (the kernel stops a
    /// work only between inodes). Before 3.1 the chunk was MAX_WRITEBACK_PAGES, 4 MiB.
    pub(crate) fn writeback_chunk_size(&self, dev: usize, nr_pages: u64) -> usize {
        let (_, thresh) = self.global_dirty_limits();
        let pages = (self.wb.wbs[dev].avg_write_bandwidth / 2)
            .min(thresh / DIRTY_SCOPE)
            .min(nr_pages);
        let unit = MIN_WRITEBACK_PAGES as u64;
        ((pages.saturating_add(unit)) / unit * unit) as usize
    }

    /// 3.1's `writeback_inodes_wb(wb, nr_pages)` as the seed era's dirtier calls it: the
    /// device's inodes in turn from where the flushers left off, each written up to
    /// `writeback_chunk_size()` of the pages still owed (so one inode with enough dirty
    /// pages takes the whole work and more), until `nr_pages` are written or no inode has
    /// dirty pages older than `before`. The pages written and when the last I/O completes.
    pub(crate) fn writeback_inodes_wb(
        &mut self,
        dev: usize,
        before: Ns,
        nr_pages: u64,
    ) -> Option<(u64, Ns)> {
        let mut done: Option<(u64, Ns)> = None;
        let mut left = nr_pages;
        while left > 0 {
            let chunk = self.writeback_chunk_size(dev, left);
            let Some((written, done_at)) = self.writeback_chunk(dev, before, chunk) else {
                break;
            };
            done = Some(done.map_or((written, done_at), |(w, at)| (w + written, at.max(done_at))));
            left = left.saturating_sub(written);
        }
        done
    }

    /// `writeback_set_ratelimit()` (mm/page-writeback.c, 2.6.x to 3.1): the pages a CPU
    /// dirties between two calls of the seed era's `balance_dirty_pages()`,
    /// `vm_total_pages / (num_online_cpus() * 32)`, at least 16 and at most 4 MiB ("the
    /// balance_dirty_pages() caller will write six megabyte chunks, max").
    /// `vm_total_pages` is `nr_free_pagecache_pages()`: each zone's pages above its high
    /// watermark (its managed pages here, where 3.1 counted present ones).
    pub(crate) fn writeback_set_ratelimit(&self) -> u64 {
        let vm_total_pages: u64 = self
            .mem
            .zones
            .iter()
            .map(|z| z.managed_pages.saturating_sub(z.watermark[WMARK_HIGH]))
            .sum();
        let ncpus = u64::from(self.cpus.nr_cpus());
        (vm_total_pages / (ncpus * 32)).clamp(16, RATELIMIT_PAGES_MAX)
    }

    /// `wb_update_write_bandwidth()`: every BANDWIDTH_INTERVAL, the pages the device wrote
    /// since the last update fold into its estimate over BANDWIDTH_PERIOD, and the estimate
    /// into `avg_write_bandwidth`, which moves an eighth of the way towards it only when
    /// the last two estimates agree on the direction (the kernel's filter of spikes).
    pub(crate) fn wb_update_bandwidth(&mut self, dev: usize) {
        let now = self.clock();
        let wb = &mut self.wb.wbs[dev];
        let elapsed = now.saturating_sub(wb.bw_time_stamp);
        if elapsed < BANDWIDTH_INTERVAL {
            return;
        }
        let written = wb.written - wb.written_stamp;
        let per_s = |pages: u64, ns: Ns| {
            (u128::from(pages) * u128::from(NSEC_PER_SEC) / u128::from(ns.max(1))) as u64
        };
        if wb.bw_time_stamp == 0 || elapsed > BANDWIDTH_PERIOD {
            if written > 0 {
                wb.write_bandwidth = per_s(written, elapsed);
                wb.avg_write_bandwidth = wb.write_bandwidth;
            }
        } else {
            let old = wb.write_bandwidth;
            let bw = u128::from(old) * u128::from(BANDWIDTH_PERIOD - elapsed)
                + u128::from(written) * u128::from(NSEC_PER_SEC);
            let bw = (bw / u128::from(BANDWIDTH_PERIOD)) as u64;
            let avg = &mut wb.avg_write_bandwidth;
            if *avg > old && old >= bw {
                *avg -= (*avg - old) >> 3;
            }
            if *avg < old && old <= bw {
                *avg += (old - *avg) >> 3;
            }
            wb.write_bandwidth = bw;
        }
        wb.write_bandwidth = wb.write_bandwidth.max(1);
        wb.avg_write_bandwidth = wb.avg_write_bandwidth.max(1);
        wb.bw_time_stamp = now;
        wb.written_stamp = wb.written;
    }

    /// The flusher's next work on `dev` (`wb_do_writeback()`'s order), if any. A device
    /// without dirty pages has none (`wb_has_dirty_io()`), whatever the global count: its
    /// flusher sleeps rather than spin while other devices' pages keep the count over the
    /// background threshold.
    fn wb_next_work(&mut self, dev: usize) -> Option<Work> {
        if !self.wb_has_dirty_io(dev) {
            self.wb.wbs[dev].vmscan_pages = 0;
            return None;
        }
        if self.wb.wbs[dev].vmscan_pages > 0 {
            return Some(Work::Vmscan);
        }
        let (bg_thresh, _) = self.global_dirty_limits();
        if self.wb.nr_dirty() > bg_thresh {
            return Some(Work::Background);
        }
        let now = self.clock();
        let interval = self.dirty_writeback_interval();
        let wb = &mut self.wb.wbs[dev];
        if interval > 0 && now >= wb.last_old_flush + interval {
            wb.last_old_flush = now;
            let expire = Ns::from(self.sysctl.dirty_expire_centisecs) * 10_000_000;
            return Some(Work::Kupdate(now.saturating_sub(expire)));
        }
        None
    }

    /// Whether `dev` has dirty pages.
    fn wb_has_dirty_io(&self, dev: usize) -> bool {
        self.wb
            .inodes
            .iter()
            .any(|i| i.dev == dev && !i.dirty.is_empty())
    }

    /// Bytes dirtied, written, still dirty, and truncated dirty: the invariant the debug
    /// checks hold (`written_by_flusher + written_by_reclaim + dirty + truncated =
    /// dirtied`, a folio under writeback counted written), and every writeback started
    /// either completed or in flight: returns `Err` if either does not hold.
    pub fn check_writeback(&self) -> Result<(), String> {
        let dirtied: u64 = self.wb.nodes.iter().map(|n| n.nr_dirtied).sum::<u64>() * PAGE_SIZE;
        let written = self.wb.written_by_flusher + self.wb.written_by_reclaim;
        let dirty = self.wb.nr_dirty() * PAGE_SIZE;
        let truncated = self.wb.truncated;
        if written + dirty + truncated != dirtied {
            return Err(format!(
                "writeback not conserved: written {written} (flushers {} + reclaim {}) + dirty {dirty} + truncated {truncated} != dirtied {dirtied}",
                self.wb.written_by_flusher, self.wb.written_by_reclaim
            ));
        }
        let started: u64 = written / PAGE_SIZE;
        let completed: u64 = self.wb.nodes.iter().map(|n| n.nr_written).sum();
        if completed + self.wb.nr_writeback() != started {
            return Err(format!(
                "writeback: {completed} completed + {} in flight != {started} started",
                self.wb.nr_writeback()
            ));
        }
        Ok(())
    }
}

/// `domain_dirty_limits()` of the global domain for `avail` dirtyable pages: `(bg_thresh,
/// thresh)`. A `_bytes` setting, if not 0, overrides its ratio.
pub fn domain_dirty_limits(
    avail: u64,
    ratio: u32,
    bytes: u64,
    bg_ratio: u32,
    bg_bytes: u64,
) -> (u64, u64) {
    let ratio = u64::from(ratio) * PAGE_SIZE / 100;
    let bg_ratio = u64::from(bg_ratio) * PAGE_SIZE / 100;
    let thresh = if bytes > 0 {
        bytes.div_ceil(PAGE_SIZE)
    } else {
        ratio * avail / PAGE_SIZE
    };
    let mut bg_thresh = if bg_bytes > 0 {
        bg_bytes.div_ceil(PAGE_SIZE)
    } else {
        bg_ratio * avail / PAGE_SIZE
    };
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    (bg_thresh, thresh)
}

/// `dirty_poll_interval()`: pages a task may dirty before it checks again, below the
/// freerun ceiling.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

/// Start the flusher of each device (the `bdi_writeback` worker; a kworker in the kernel),
/// asleep until a dirtier wakes it; on the last CPU of the last node, the next device's on
/// the CPU before. Only a workload that writes starts them, so runs that dirty nothing
/// schedule nothing new.
pub fn wb_start_flushers(sim: &mut Sim) {
    let (ndev, ncpus) = {
        let k = sim.k();
        (k.block.devices.len(), k.cpus.nr_cpus())
    };
    for dev in 0..ndev {
        if sim.k().wb.wbs[dev].flusher.is_some() {
            continue;
        }
        let cpu = ncpus - 1 - (dev as u32 % ncpus);
        let comm = format!("kworker/u{}:{dev}+flush", ncpus * 2);
        let id = sim.spawn(comm, cpu, TaskClass::Flusher, move |cx| wb_workfn(cx, dev));
        let mut k = sim.k();
        k.wb.wbs[dev].flusher = Some(id);
        k.wb.wbs[dev].wait.add(id);
    }
}

/// `wb_workfn()` → `wb_do_writeback()` for device `dev`, for ever: each work in turn
/// (module doc), a chunk at a time, at most two chunks in flight; asleep when there is
/// nothing to do, until woken or until the next kupdate pass is due while pages are dirty.
async fn wb_workfn(cx: Cx, dev: usize) {
    let mut in_flight: Ns = 0;
    loop {
        let work = cx.k().wb_next_work(dev);
        let mut wrote = false;
        let Some(work) = work else {
            let until = {
                let mut k = cx.k();
                k.wb.wbs[dev].wait.add(cx.tid);
                let interval = k.dirty_writeback_interval();
                (k.wb_has_dirty_io(dev) && interval > 0)
                    .then(|| k.wb.wbs[dev].last_old_flush + interval)
            };
            match until {
                Some(t) => sleep_until(&cx, t).await,
                None => schedule(&cx).await,
            }
            cx.k().wb.wbs[dev].wait.remove(cx.tid);
            continue;
        };
        loop {
            let chunk = {
                let mut k = cx.k();
                let before = match work {
                    Work::Kupdate(t) => t,
                    _ => k.clock(),
                };
                let nr_pages = match work {
                    Work::Vmscan => k.wb.wbs[dev].vmscan_pages,
                    _ => u64::MAX,
                };
                let max = k.writeback_chunk_size(dev, nr_pages);
                let chunk = k.writeback_chunk(dev, before, max);
                if work == Work::Vmscan {
                    let wb = &mut k.wb.wbs[dev];
                    let n = chunk.map_or(wb.vmscan_pages, |c| c.0);
                    wb.vmscan_pages -= n.min(wb.vmscan_pages);
                }
                k.wb_update_bandwidth(dev);
                chunk
            };
            let Some((_, done_at)) = chunk else {
                break;
            };
            wrote = true;
            // Two chunks in flight: wait for the one before this.
            if in_flight > cx.k().clock() {
                sleep_until(&cx, in_flight).await;
            } else {
                cond_resched(&cx).await;
            }
            in_flight = done_at;
            let more = {
                let k = cx.k();
                match work {
                    Work::Vmscan => k.wb.wbs[dev].vmscan_pages > 0,
                    Work::Background => {
                        let (bg_thresh, _) = k.global_dirty_limits();
                        k.wb.nr_dirty() > bg_thresh
                    }
                    Work::Kupdate(_) => true,
                }
            };
            if !more {
                break;
            }
        }
        if !wrote {
            // Dirty pages, none of them the work's (all newer than kupdate's cut-off, say):
            // give the CPU up before looking again.
            cond_resched(&cx).await;
        }
    }
}

/// `balance_dirty_pages_ratelimited()` after the task dirtied `n` more pages: it enters
/// `balance_dirty_pages()` once it has dirtied `nr_dirtied_pause` since the last time.
pub async fn balance_dirty_pages_ratelimited(cx: &Cx, t: &mut DirtyTask, n: u64) {
    t.nr_dirtied += n;
    if t.nr_dirtied < t.nr_dirtied_pause {
        return;
    }
    let throttle = cx.k().variant.dirty_throttle;
    match throttle {
        DirtyThrottle::Ratelimit => balance_dirty_pages(cx, t).await,
        DirtyThrottle::Threshold => balance_dirty_pages_threshold(cx, t).await,
    }
}

/// `balance_dirty_pages()` (3.2+, simplified: module doc).
async fn balance_dirty_pages(cx: &Cx, t: &mut DirtyTask) {
    loop {
        let pause = {
            let mut k = cx.k();
            let (bg_thresh, thresh) = k.global_dirty_limits();
            let nr_dirty = k.wb.nr_dirty();
            let dirty = nr_dirty + k.wb.nr_writeback();
            if nr_dirty > bg_thresh {
                k.wb_wakeup(t.dev);
            }
            let freerun = (thresh + bg_thresh) / 2;
            if dirty <= freerun {
                t.nr_dirtied = 0;
                t.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
                return;
            }
            k.wb_update_bandwidth(t.dev);
            let wb = &k.wb.wbs[t.dev];
            let dirtiers = u64::from(wb.nr_dirtiers.max(1));
            let limit = thresh.max(freerun + 1);
            let setpoint = (freerun + limit) / 2;
            let x = (setpoint as f64 - dirty as f64) / ((limit - setpoint).max(1) as f64);
            let pos_ratio = (1.0 + x * x * x).clamp(0.0, 2.0);
            let rate = wb.write_bandwidth as f64 / dirtiers as f64 * pos_ratio;
            let pause = if dirty >= limit || rate < 1.0 {
                MAX_PAUSE
            } else {
                ((t.nr_dirtied as f64 / rate * NSEC_PER_SEC as f64) as Ns).min(MAX_PAUSE)
            };
            // The next check after about a max_pause/2 worth of pages at the rate.
            t.nr_dirtied_pause = ((rate * 0.1) as u64).clamp(1, MIN_WRITEBACK_PAGES as u64);
            t.nr_dirtied = 0;
            (pause, dirty < limit)
        };
        let (pause, below_limit) = pause;
        let until = cx.k().clock() + pause;
        io_sleep_until(cx, until).await;
        t.paused_ns += pause;
        if below_limit {
            return;
        }
    }
}

/// The seed era's `balance_dirty_pages()` (before 3.2; module doc).
async fn balance_dirty_pages_threshold(cx: &Cx, t: &mut DirtyTask) {
    let mut pause = JIFFY;
    loop {
        let write_chunk = {
            let mut k = cx.k();
            let (bg_thresh, thresh) = k.global_dirty_limits();
            let nr_dirty = k.wb.nr_dirty();
            let dirty = nr_dirty + k.wb.nr_writeback();
            let ratelimit = k.writeback_set_ratelimit();
            // Over the freerun ceiling and over the limit (the kernel's `dirty_exceeded`
            // without the per-bdi share).
            if dirty <= thresh {
                t.nr_dirtied = 0;
                t.nr_dirtied_pause = ratelimit;
                if nr_dirty > bg_thresh {
                    k.wb_wakeup(t.dev);
                }
                return;
            }
            t.nr_dirtied_pause = 8;
            ratelimit + ratelimit / 2
        };
        // The dirtier writes a chunk of its device's pages itself.
        let now = cx.k().clock();
        let chunk = cx.k().writeback_inodes_wb(t.dev, now, write_chunk);
        t.nr_dirtied = 0;
        if let Some((written, done_at)) = chunk {
            // The request queue's wait (`get_request_wait`), taken as the wait for the
            // chunk's own writes.
            io_sleep_until(cx, done_at).await;
            t.paused_ns += done_at.saturating_sub(now);
            if written >= write_chunk {
                return;
            }
        }
        let until = cx.k().clock() + pause;
        io_sleep_until(cx, until).await;
        t.paused_ns += pause;
        pause = (pause * 2).min(HZ / 10 * JIFFY);
    }
}

/// `io_schedule_timeout()`: asleep until `at`, counted in iowait.
async fn io_sleep_until(cx: &Cx, at: Ns) {
    cx.k().sched.tasks[cx.tid as usize].in_iowait = true;
    sleep_until(cx, at).await;
    cx.k().sched.tasks[cx.tid as usize].in_iowait = false;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{kernel_of, kernel_with, take_pages, write_new_file};

    #[test]
    fn a_chunk_writes_runs_of_consecutive_pages_and_skips_folios_cleaned_meanwhile() {
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 6);
        k.wb_new_inode(7, 0, 0);
        k.filemap_add_folios(7, 0, &pages, 0);
        k.generic_perform_write(7, 0, &pages[..4], 0);
        k.generic_perform_write(7, 10, &pages[4..], 0);
        assert_eq!(k.vmstat().stat("nr_dirty"), 6);
        assert!(pages
            .iter()
            .all(|&p| k.mem.pages.flags(p) & pg::LOCKED == 0));
        // Reclaim wrote page 1 (index 1) meanwhile.
        k.folio_start_writeback(pages[1]);
        k.wb.written_by_reclaim += PAGE_SIZE;
        let now = k.clock();
        let (written, _) = k.writeback_chunk(0, now, MIN_WRITEBACK_PAGES).unwrap();
        assert_eq!(written, 5);
        // Index 0, then 2–3, then 10–11: three writes.
        assert_eq!(k.block.bios.nr_in_use(), 3);
        assert_eq!(k.vmstat().stat("nr_dirty"), 0);
        assert_eq!(k.vmstat().stat("nr_writeback"), 6);
        k.check_writeback().unwrap();
        // Nothing left to write; a page dirtied later than `before` waits.
        assert_eq!(k.writeback_chunk(0, now, MIN_WRITEBACK_PAGES), None);
    }

    #[test]
    fn the_seed_eras_ratelimit_is_the_page_cache_over_32_per_cpu_between_16_pages_and_4_mib() {
        // writeback_set_ratelimit() (3.1) by hand: nr_free_pagecache_pages() is each zone's
        // pages above its high watermark.
        let above_high = |k: &Kernel| -> u64 {
            k.mem
                .zones
                .iter()
                .map(|z| z.managed_pages - z.watermark[WMARK_HIGH])
                .sum()
        };
        let kernel_cpus = |mb: u64, cpus: u32| {
            kernel_of(&format!(
                "[machine]\nmemory_mb_per_node = {mb}\ncpus_per_node = {cpus}\n\
                 [workload]\nkind = \"dd\"\ntasks = 1\n"
            ))
        };
        // 512 MiB on 4 CPUs (the seed's plain rows): under the cap.
        let k = kernel_cpus(512, 4);
        let pages = above_high(&k);
        assert!(pages / 128 < 1024, "{pages}");
        assert_eq!(k.writeback_set_ratelimit(), pages / 128);
        // 512 MiB on one CPU (the 1P rows): 4 MiB, the cap.
        let k = kernel_cpus(512, 1);
        assert!(above_high(&k) / 32 > 1024);
        assert_eq!(k.writeback_set_ratelimit(), 1024);
        // 64 MiB on 64 CPUs: the floor of 16.
        let k = kernel_cpus(64, 64);
        assert!(above_high(&k) / (64 * 32) < 16);
        assert_eq!(k.writeback_set_ratelimit(), 16);
    }

    #[test]
    fn the_dirtiers_writeback_takes_inodes_in_turn_until_the_pages_owed_are_written() {
        // writeback_inodes_wb(wb, nr_pages) as 3.1's balance_dirty_pages() calls it: three
        // files of 1 500 dirty pages, 2 000 pages owed. The first file's chunk,
        // writeback_chunk_size(2 000), is 2 048 pages: all 1 500 go. 500 are still owed;
        // the second file's chunk, writeback_chunk_size(500), is 1 024 (at least 4 MiB,
        // the kernel stopping a work only between inodes): 1 024 go, and the work is done.
        let mut k = kernel_with(512, 0, "");
        let zi = k.mem.zonelists[0][0];
        for m in 0..3u32 {
            let pages = take_pages(&mut k, zi, 1500);
            write_new_file(&mut k, 10 + m, 0, &pages);
        }
        let (_, thresh) = k.global_dirty_limits();
        assert!(thresh / DIRTY_SCOPE >= 2000, "thresh {thresh}");
        assert_eq!(k.writeback_chunk_size(0, 2000), 2048);
        assert_eq!(k.writeback_chunk_size(0, 500), 1024);
        let now = k.clock();
        let (written, _) = k.writeback_inodes_wb(0, now, 2000).unwrap();
        assert_eq!(written, 1500 + 1024);
        assert_eq!(k.vmstat().stat("nr_writeback"), 2524);
        assert_eq!(k.vmstat().stat("nr_dirty"), 4500 - 2524);
        k.check_writeback().unwrap();
    }

    #[test]
    fn the_chunk_is_half_a_second_of_bandwidth_bounded_by_the_dirty_limit_in_4_mib_units() {
        // writeback_chunk_size(): round_down(min(avg_bw / 2, dirty_limit / 8, nr_pages)
        // + 1024, 1024), by hand for a 64 MiB machine (16 384 pages).
        let mut k = kernel_with(64, 0, "");
        let (_, thresh) = k.global_dirty_limits();
        assert!(thresh / DIRTY_SCOPE < 1024, "thresh {thresh}");
        // INIT_BW (25 600 pages/s) halves to 12 800, above an eighth of this small limit:
        // the limit's eighth plus 1024, rounded down: one unit.
        assert_eq!(k.writeback_chunk_size(0, u64::MAX), 1024);
        // A work of 10 pages still gets a whole unit: the kernel stops only between inodes.
        assert_eq!(k.writeback_chunk_size(0, 10), 1024);
        // A large dirty limit (dirty_bytes 4 GiB: 1 048 576 pages, an eighth 131 072) and a
        // slow device: 5 000 pages/s halves to 2 500, + 1024 = 3 524, rounds to 3 072.
        k.sysctl.dirty_bytes = 4 << 30;
        k.wb.wbs[0].avg_write_bandwidth = 5_000;
        assert_eq!(k.writeback_chunk_size(0, u64::MAX), 3072);
        // A fast one: the dirty limit's eighth bounds it, 131 072 + 1024 → 132 096.
        k.wb.wbs[0].avg_write_bandwidth = 1 << 20;
        assert_eq!(k.writeback_chunk_size(0, u64::MAX), 132_096);
        // The work's own pages bound it too: 5 000 + 1024 → 5 120.
        assert_eq!(k.writeback_chunk_size(0, 5_000), 5_120);
    }

    #[test]
    fn the_average_bandwidth_follows_the_estimate_only_when_two_agree() {
        // wb_update_write_bandwidth()'s second filter, by hand: avg moves an eighth of the
        // way to the old estimate only if the new estimate lies beyond the old one.
        let mut k = kernel_with(64, 0, "");
        let period = BANDWIDTH_PERIOD;
        let interval = period / 4;
        {
            let wb = &mut k.wb.wbs[0];
            wb.bw_time_stamp = 1;
            wb.write_bandwidth = 8_000;
            wb.avg_write_bandwidth = 4_000;
        }
        // A quarter period writing at 16 000 pages/s: bw = (8 000 · 3/4 + 16 000 · 1/4)
        // = 10 000 ≥ old 8 000 > avg 4 000, so avg += (8 000 − 4 000) / 8 = 4 500.
        k.now = 1 + interval;
        k.wb.wbs[0].written = 16_000 * interval / NSEC_PER_SEC;
        k.wb_update_bandwidth(0);
        assert_eq!(k.wb.wbs[0].write_bandwidth, 10_000);
        assert_eq!(k.wb.wbs[0].avg_write_bandwidth, 4_500);
        // Then nothing written: bw = 10 000 · 3/4 = 7 500 < old 10 000, which is above
        // avg: no agreement, avg stays.
        k.now += interval;
        k.wb_update_bandwidth(0);
        assert_eq!(k.wb.wbs[0].write_bandwidth, 7_500);
        assert_eq!(k.wb.wbs[0].avg_write_bandwidth, 4_500);
    }

    #[test]
    fn blocks_are_allocated_at_writeback_in_the_order_written_in_each_directory_group() {
        // Delayed allocation: files 1 and 2 in directory 0, file 3 in directory 1; file 2
        // is written back first, so its blocks come first in group 0, file 1's after them;
        // file 3's start its own group.
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        for (mapping, dir) in [(1u32, 0u32), (2, 0), (3, 1)] {
            let pages = take_pages(&mut k, zi, 4);
            write_new_file(&mut k, mapping, dir, &pages);
        }
        let inode = |k: &Kernel, m: u32| k.wb.inode(m).unwrap();
        let (i1, i2, i3) = (inode(&k, 1), inode(&k, 2), inode(&k, 3));
        // Dirty, not yet written: no blocks.
        assert!(k.wb.inodes[i1].extents.is_empty());
        assert_eq!(k.wb.inodes[i1].i_size, 4);
        let group0 = AG_AREA;
        assert_eq!(k.wb_map_blocks(i2, 1), (group0 + PAGE_SIZE, 3));
        assert_eq!(k.wb_map_blocks(i1, 0), (group0 + 4 * PAGE_SIZE, 4));
        assert_eq!(
            k.wb_map_blocks(i3, 3),
            (AG_AREA + AG_SPAN + 3 * PAGE_SIZE, 1)
        );
        // A page written again maps to the same block; nothing more is allocated.
        assert_eq!(k.wb_map_blocks(i2, 1), (group0 + PAGE_SIZE, 3));
        assert_eq!(k.wb.wbs[0].ag_next[0], 8 * PAGE_SIZE);
    }

    #[test]
    fn a_page_reclaim_writes_gets_its_place_in_the_files_extent_and_later_pages_follow_on() {
        // Reclaim writes page 2 of a file with pages 0–5 dirty: the whole delayed range,
        // 0–5, is allocated then (the page at its place in it); pages dirtied after that,
        // 6–7, are a new range, allocated when next written, after what the group gave
        // meanwhile to another file: a second extent.
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 10);
        k.wb_new_inode(1, 0, 0);
        k.wb_new_inode(2, 0, 0);
        k.filemap_add_folios(1, 0, &pages[..8], 0);
        k.generic_perform_write(1, 0, &pages[..6], 0);
        let i = k.wb.inode(1).unwrap();
        k.folio_start_writeback(pages[2]);
        k.submit_file_write(i, 2, &[pages[2]]);
        assert_eq!(k.wb.inodes[i].extents, vec![(0, 6, AG_AREA)]);
        // File 2 takes the next two pages' worth of blocks.
        k.filemap_add_folios(2, 0, &pages[8..], 0);
        k.generic_perform_write(2, 0, &pages[8..], 0);
        let i2 = k.wb.inode(2).unwrap();
        assert_eq!(k.wb_map_blocks(i2, 0), (AG_AREA + 6 * PAGE_SIZE, 2));
        k.generic_perform_write(1, 6, &pages[6..8], 0);
        let i = k.wb.inode(1).unwrap();
        assert_eq!(k.wb_map_blocks(i, 7), (AG_AREA + 9 * PAGE_SIZE, 1));
        assert_eq!(
            k.wb.inodes[i].extents,
            vec![(0, 6, AG_AREA), (6, 2, AG_AREA + 8 * PAGE_SIZE)]
        );
        // A run across the two extents goes out as two writes.
        let before = k.block.bios.nr_in_use();
        for &p in &pages[4..8] {
            if p != pages[2] {
                k.folio_start_writeback(p);
            }
        }
        k.submit_file_write(i, 4, &pages[4..8]);
        assert_eq!(k.block.bios.nr_in_use(), before + 2);
    }

    #[test]
    fn a_turn_that_removes_its_inode_wraps_over_the_inodes_left() {
        // Three files on device 0; the flusher's turn is at the third, closed, whose one
        // dirty entry reclaim has written meanwhile (stale). That turn writes nothing and
        // removes the inode, leaving two: the next turn's index (2) is past them and wraps
        // to the first, whose pages go out. (Before the fix: an index out of bounds, the
        // panic of seed 001's simple-wb USB run.)
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 5);
        for (mapping, range) in [(1u32, 0..2), (2, 2..4), (3, 4..5)] {
            write_new_file(&mut k, mapping, 0, &pages[range]);
        }
        k.folio_start_writeback(pages[4]);
        k.wb.written_by_reclaim += PAGE_SIZE;
        k.wb_close_inode(3);
        assert_eq!(k.wb.inodes.len(), 3);
        k.wb.wbs[0].next_inode = 2;
        let now = k.clock();
        let (written, _) = k.writeback_chunk(0, now, MIN_WRITEBACK_PAGES).unwrap();
        assert_eq!(written, 2);
        let left: Vec<u32> = k.wb.inodes.iter().map(|i| i.mapping).collect();
        assert_eq!(left, vec![1, 2]);
        assert!(pages[..2]
            .iter()
            .all(|&p| k.mem.pages.flags(p) & pg::WRITEBACK != 0));
        assert!(pages[2..4]
            .iter()
            .all(|&p| k.mem.pages.flags(p) & pg::DIRTY != 0));
        // The next chunk takes the second file's.
        let (written, _) = k.writeback_chunk(0, now, MIN_WRITEBACK_PAGES).unwrap();
        assert_eq!(written, 2);
        assert_eq!(k.vmstat().stat("nr_dirty"), 0);
        k.check_writeback().unwrap();
    }

    #[test]
    fn a_chunk_looks_at_every_inode_in_turn() {
        // Six open files on device 0, dirty pages in the fifth only, the turn at the first.
        // Each turn takes the inode after the last: the fifth's pages go out. (Before, each
        // turn after one that wrote nothing also skipped ahead by its number, visiting
        // inodes 0, 2, 5, 3, 2, 2 of 0-5, and the chunk found nothing.)
        let mut k = kernel_with(64, 0, "");
        let zi = k.mem.zonelists[0][0];
        let pages = take_pages(&mut k, zi, 3);
        for mapping in 0..6u32 {
            k.wb_new_inode(mapping, 0, 0);
        }
        k.filemap_add_folios(4, 0, &pages, 0);
        k.generic_perform_write(4, 0, &pages, 0);
        k.wb.wbs[0].next_inode = 0;
        let now = k.clock();
        let (written, _) = k.writeback_chunk(0, now, MIN_WRITEBACK_PAGES).unwrap();
        assert_eq!(written, 3);
        assert_eq!(k.wb.wbs[0].next_inode, 5);
    }

    #[test]
    fn the_poll_interval_is_the_square_root_of_the_distance_to_the_limit() {
        assert_eq!(dirty_poll_interval(0, 1 << 20), 1 << 10);
        assert_eq!(dirty_poll_interval(1000, 1000 + 255), 1 << 3);
        assert_eq!(dirty_poll_interval(2000, 1000), 1);
    }
}
