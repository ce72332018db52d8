//! Parallel dd readers (seed 000): each task reads its own file sequentially in `bs`-sized
//! read() calls, from the device it was assigned round-robin.
//!
//! * `iflag=direct`: each read is one request of `bs` bytes DMAed into the user buffer; the
//!   page cache is not touched.
//! * buffered: reads go through the page cache with readahead. The task keeps up to
//!   `readahead_depth` windows of `read_ahead_kb` in flight (the synchronous window and the
//!   asynchronous one ahead of it, as ondemand readahead settles to on a sequential stream).
//!   Issuing a window allocates its pages (page_cache_ra_unbounded → filemap_alloc_folio,
//!   add to the page cache and the LRU in batches) and submits one read; when it completes
//!   the pages are copied to user space and marked accessed once (`folio_mark_accessed`:
//!   inactive, referenced — a use-once stream).
//!
//! Departures: the pages of a window stay locked until they are copied (the kernel unlocks
//! them at I/O completion); readahead's `__GFP_NORETRY` is not honoured (a failed allocation
//! retries after direct reclaim instead of shrinking the window).

use std::collections::VecDeque;

use crate::engine::Ns;
use crate::kernel::{Kernel, Next};
use crate::mm::lru::LRU_INACTIVE_FILE;
use crate::mm::page::pg;
use crate::mm::page_alloc::{AllocWmark, PcpCredit};
use crate::mm::swap::LruAddBatch;
use crate::mm::vmscan::{DirectReclaim, SWAP_CLUSTER_MAX};
use crate::mm::zone::ZONE_MOVABLE;

/// gfp_zone(GFP_HIGHUSER_MOVABLE): page cache may use every zone (allocstall_movable).
const PAGECACHE_HIGHEST_ZONEIDX: usize = ZONE_MOVABLE;

struct Window {
    pages: Vec<u32>,
    done_at: Ns,
}

pub struct DdTask {
    pub mapping: u32,
    pub device: usize,
    direct: bool,
    block_bytes: u64,
    ra_pages: u32,
    ra_depth: u32,
    in_flight: VecDeque<Window>,
    /// Pages of the window being allocated.
    filling: Vec<u32>,
    spare: Vec<Vec<u32>>,
    pcp: PcpCredit,
    /// This task's CPU's LRU-add batch.
    lru_add: LruAddBatch,
    /// Pages copied in the current read() call.
    copied_in_block: u64,
    /// For O_DIRECT: when the outstanding request completes.
    dio_done_at: Option<Ns>,
    reclaim: Option<Box<DirectReclaim>>,
    no_progress_loops: u32,
    /// Bytes returned to user space by completed read() calls.
    pub bytes_read: u64,
    pub reads: u64,
    pub direct_reclaims: u64,
    /// Allocations that gave up (the OOM path is not modelled: the task keeps retrying).
    pub alloc_failures: u64,
}

impl DdTask {
    pub fn new(
        mapping: u32,
        device: usize,
        direct: bool,
        block_kb: u64,
        read_ahead_kb: u64,
        ra_depth: u32,
    ) -> DdTask {
        let ra_pages = (read_ahead_kb / 4).min(block_kb / 4).max(1) as u32;
        DdTask {
            mapping,
            device,
            direct,
            block_bytes: block_kb * 1024,
            ra_pages,
            ra_depth,
            in_flight: VecDeque::new(),
            filling: Vec::with_capacity(ra_pages as usize),
            spare: Vec::new(),
            pcp: PcpCredit::default(),
            lru_add: LruAddBatch::default(),
            copied_in_block: 0,
            dio_done_at: None,
            reclaim: None,
            no_progress_loops: 0,
            bytes_read: 0,
            reads: 0,
            direct_reclaims: 0,
            alloc_failures: 0,
        }
    }

    pub fn step(&mut self, k: &mut Kernel, id: u32, _cpu: u32, node: u32) -> Next {
        if self.direct {
            return self.step_direct(k);
        }
        if let Some(d) = self.reclaim.as_mut() {
            let (sys, done) = k.try_to_free_pages_step(d, id, node);
            let Some(progress) = done else {
                if d.is_throttled() {
                    // Still throttled after a wake-up: back to sleep on pfmemalloc_wait.
                    return Next::Wait { sys };
                }
                return Next::Run { sys };
            };
            self.reclaim = None;
            // After direct reclaim: one attempt at the min watermark, else retry the slow path.
            let at = k.now + sys;
            let before = self.filling.len();
            let cost = self.alloc_pages(k, node, AllocWmark::Min, at, 1);
            if self.filling.len() > before {
                self.no_progress_loops = 0;
                let c = self.add_to_page_cache(k, before, node, sys + cost);
                return Next::Run { sys: c };
            }
            if !k.should_reclaim_retry(
                node,
                PAGECACHE_HIGHEST_ZONEIDX,
                progress > 0,
                &mut self.no_progress_loops,
            ) {
                self.alloc_failures += 1;
                self.no_progress_loops = 0;
            }
            return Next::Run { sys: sys + cost };
        }
        if self.in_flight.len() < self.ra_depth as usize {
            return self.fill_window(k, id, node);
        }
        self.copy_window(k, node)
    }

    fn step_direct(&mut self, k: &mut Kernel) -> Next {
        let now = k.now;
        if let Some(done) = self.dio_done_at {
            if done > now {
                return Next::Sleep { sys: 0, at: done };
            }
            self.dio_done_at = None;
            self.bytes_read += self.block_bytes;
            self.reads += 1;
        }
        let sys = k.costs.syscall_ns + k.costs.dio_request_ns;
        let done = k.devices[self.device].submit_read(now + sys, self.block_bytes);
        self.dio_done_at = Some(done);
        Next::Sleep { sys, at: done }
    }

    /// Allocate up to SWAP_CLUSTER_MAX pages of the window being built; submit it when full.
    fn fill_window(&mut self, k: &mut Kernel, id: u32, node: u32) -> Next {
        let want =
            SWAP_CLUSTER_MAX.min((self.ra_pages as usize - self.filling.len()) as u64) as usize;
        let first = self.filling.len();
        let mut sys = self.alloc_pages(k, node, AllocWmark::Low, k.now, want);
        if self.filling.len() - first < want {
            // The slow path: wake the kswapds, then try the min watermark for the rest.
            k.wake_all_kswapds(node, 0, PAGECACHE_HIGHEST_ZONEIDX);
            let rest = want - (self.filling.len() - first);
            let at = k.now + sys;
            sys += self.alloc_pages(k, node, AllocWmark::Min, at, rest);
            if self.filling.len() - first < want {
                self.direct_reclaims += 1;
                self.reclaim = Some(Box::new(k.try_to_free_pages_begin(
                    id,
                    node,
                    0,
                    PAGECACHE_HIGHEST_ZONEIDX,
                )));
            }
        }
        let sys = self.add_to_page_cache(k, first, node, sys);
        if self.reclaim.as_ref().is_some_and(|d| d.is_throttled()) {
            // throttle_direct_reclaim(): asleep on pfmemalloc_wait until kswapd wakes us.
            return Next::Wait { sys };
        }
        Next::Run { sys }
    }

    /// `get_page_from_freelist()` for up to `want` page-cache pages onto `filling`, from the
    /// task's own node; returns the CPU time spent.
    fn alloc_pages(
        &mut self,
        k: &mut Kernel,
        node: u32,
        wmark: AllocWmark,
        at: Ns,
        want: usize,
    ) -> Ns {
        let hz = PAGECACHE_HIGHEST_ZONEIDX;
        k.get_pages_from_freelist(
            node,
            wmark,
            hz,
            node,
            &mut self.pcp,
            at,
            want,
            &mut self.filling,
        )
    }

    /// Add the pages `filling[first..]` to the page cache and, through the CPU's LRU-add
    /// batch, to the LRU; submit the window once it is full. `sys` is the CPU time used so
    /// far in this step; returns it with this work added.
    fn add_to_page_cache(&mut self, k: &mut Kernel, first: usize, node: u32, mut sys: Ns) -> Ns {
        let added = (self.filling.len() - first) as u64;
        sys += k.nodes[node as usize]
            .memory
            .scale(added * k.costs.page_cache_insert_ns);
        // Runs of pages of one zone: an allocation run comes from whole free blocks.
        let mut i = first;
        while i < self.filling.len() {
            let (zi, n) = k.zone_run(&self.filling[i..]);
            // add_to_page_cache_lru(): the pages join the mapping, locked for the read, at
            // the head of their node's inactive file list.
            let pnid = k.zones[zi].nid;
            let run = &self.filling[i..i + n];
            k.lru_add_run_locked(zi, run, LRU_INACTIVE_FILE, self.mapping, pg::LOCKED);
            k.nodes[pnid as usize].nr_file_pages += n as u64;
            sys += self.lru_add.add_run(k, pnid, n, node, k.now + sys);
            i += n;
        }
        if self.filling.len() == self.ra_pages as usize {
            self.submit_window(k, sys);
        }
        sys
    }

    fn submit_window(&mut self, k: &mut Kernel, sys: Ns) {
        let bytes = self.filling.len() as u64 * 4096;
        let done_at = k.devices[self.device].submit_read(k.now + sys, bytes);
        k.count(crate::mm::vmstat::VmEvent::PgpginKb, bytes / 1024);
        let next = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.ra_pages as usize));
        let pages = std::mem::replace(&mut self.filling, next);
        self.in_flight.push_back(Window { pages, done_at });
    }

    /// Wait for the oldest window, then copy it to user space. Not inlined: inlined into the
    /// event loop it made the whole run execute 4 % more instructions (cachegrind).
    #[inline(never)]
    fn copy_window(&mut self, k: &mut Kernel, node: u32) -> Next {
        let Some(w) = self.in_flight.front() else {
            return Next::Run { sys: 0 };
        };
        if w.done_at > k.now {
            return Next::Sleep {
                sys: 0,
                at: w.done_at,
            };
        }
        let mut w = self.in_flight.pop_front().expect("window");
        let n = w.pages.len() as u64;
        // The window's DMA and the copy's read hit the pages' node, the copy's write ours.
        let now = k.now;
        let page_node = w
            .pages
            .first()
            .map_or(node, |&p| k.zones[k.page_zone(p)].nid);
        // The read is done: unlock, then folio_mark_accessed() as the copy touches it.
        let activated = k.folio_mark_accessed_after_read(&mut w.pages, self.mapping);
        k.nodes[page_node as usize].memory.add(now, 2 * n * 4096);
        k.nodes[node as usize].memory.add(now, n * 4096);
        let mut sys = k.nodes[page_node as usize]
            .memory
            .scale(n * k.costs.copy_to_user_ns);
        if activated > 0 {
            let at = k.now + sys;
            sys += k
                .lru_lock(page_node, node, activated * k.costs.lru_add_ns, at)
                .total();
        }
        self.copied_in_block += n * 4096;
        while self.copied_in_block >= self.block_bytes {
            self.copied_in_block -= self.block_bytes;
            self.bytes_read += self.block_bytes;
            self.reads += 1;
            sys += k.costs.syscall_ns;
        }
        w.pages.clear();
        self.spare.push(w.pages);
        Next::Run { sys }
    }
}
