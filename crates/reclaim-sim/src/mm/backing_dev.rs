//! Writeback state (include/linux/backing-dev-defs.h, include/linux/writeback.h and the
//! node stat items of mmzone.h, 6.x): the dirty and writeback page counts per node, the
//! PGDAT_DIRTY / PGDAT_WRITEBACK flags kswapd sets, the reclaim throttle's wait queue, the
//! inodes with dirty pages (`b_dirty`, each with its pages in the order they were dirtied),
//! and one `bdi_writeback` per block device with its flusher and its write bandwidth
//! estimate. State only: the code is `mm::page_writeback` (dirtying, the dirty limits,
//! `balance_dirty_pages`, the flushers) and `mm::vmscan_folio` (reclaim's side).
//!
//! Departure: an inode's dirty pages are a queue of `(folio, index, dirtied_when)`, so that
//! kupdate's expiry is per page (the kernel's `dirtied_when` is per inode, its older pages
//! written with the newer ones); an entry whose folio was cleaned meanwhile (reclaim wrote
//! it) is skipped when the flusher reaches it.

use std::collections::VecDeque;

use crate::engine::Ns;
use crate::machine::Fs;
use crate::sched::WaitQueue;

/// `pgdat->flags` bits the writeback side reads.
pub const PGDAT_DIRTY: u8 = 1 << 0;
pub const PGDAT_WRITEBACK: u8 = 1 << 1;

/// A node's writeback counters (node stat items) and flags.
#[derive(Debug, Default)]
pub struct NodeWriteback {
    /// NR_FILE_DIRTY (`nr_dirty`): dirty page-cache folios, not under writeback.
    pub nr_dirty: u64,
    /// NR_WRITEBACK (`nr_writeback`): page-cache folios under writeback.
    pub nr_writeback: u64,
    /// NR_DIRTIED (`nr_dirtied`, cumulative): folios that became dirty.
    pub nr_dirtied: u64,
    /// NR_WRITTEN (`nr_written`, cumulative): folios whose writeback completed.
    pub nr_written: u64,
    /// NR_VMSCAN_IMMEDIATE (`nr_vmscan_immediate_reclaim`, cumulative): dirty file folios
    /// reclaim left to the flushers with PG_reclaim.
    pub nr_vmscan_immediate: u64,
    /// Of `nr_vmscan_write` (`PgData`), the page-cache folios (the rest are swap writes).
    pub nr_vmscan_write_file: u64,
    /// PGDAT_DIRTY | PGDAT_WRITEBACK.
    pub flags: u8,
    /// `pgdat->reclaim_wait[VMSCAN_THROTTLE_WRITEBACK]`.
    pub reclaim_wait: WaitQueue,
    /// `pgdat->nr_reclaim_throttled`.
    pub nr_reclaim_throttled: u64,
    /// NR_THROTTLED_WRITTEN when the first throttled task began to wait.
    pub nr_reclaim_start: u64,
    /// NR_THROTTLED_WRITTEN: folios written while reclaimers were throttled.
    pub nr_throttled_written: u64,
}

/// An inode with dirty pages: its mapping, its device, and its dirty folios in the order
/// they were dirtied.
#[derive(Debug)]
pub struct Inode {
    pub mapping: u32,
    pub dev: usize,
    /// Its writer has closed it: it leaves the list once its pages are written.
    pub closed: bool,
    /// `(folio, index, dirtied_when)`.
    pub dirty: VecDeque<(u32, u32, Ns)>,
    /// The allocation group of its directory (mm::page_writeback, "Blocks").
    pub ag: u32,
    /// Pages up to the highest one ever dirtied (`i_size` of a file written from its
    /// start, in pages).
    pub i_size: u32,
    /// Its extents in file order, covering its first pages without a gap: `(first page,
    /// pages, byte offset on the device)`.
    pub extents: Vec<(u32, u32, u64)>,
}

impl Inode {
    /// Pages below this have blocks; the rest of `i_size` is delayed allocation.
    #[inline]
    pub fn allocated_to(&self) -> u32 {
        self.extents
            .last()
            .map_or(0, |&(first, len, _)| first + len)
    }

    /// Make room for `n` more dirty entries and ask for the cache lines they will be written
    /// to. The list is a ring as long as the inode's dirty pages, so the slots after its tail
    /// were last touched a whole ring ago and are misses; a `write()` appends its folios'
    /// entries one after another. A hint beside the `reserve`: where the next slots wrap to
    /// the ring's start, the lines asked for are simply not used.
    #[inline]
    pub fn prefetch_dirty_tail(&mut self, n: usize) {
        self.dirty.reserve(n);
        let (front, back) = self.dirty.as_slices();
        let tail = if back.is_empty() { front } else { back };
        let next = tail.as_ptr_range().end.cast::<u8>();
        let bytes = n * std::mem::size_of::<(u32, u32, Ns)>();
        for off in (0..bytes).step_by(64) {
            crate::mm::page::prefetch_line(next.wrapping_add(off));
        }
    }
}

/// A device's `bdi_writeback`: its flusher and what it has been asked to do.
#[derive(Debug, Default)]
pub struct BdiWriteback {
    /// The flusher task (`wb_workfn`'s worker), once started.
    pub flusher: Option<u32>,
    /// The flusher sleeps here between works (`wb_wakeup`).
    pub wait: WaitQueue,
    /// A WB_REASON_VMSCAN work is queued: write this many pages (`get_nr_dirty_pages()` when
    /// reclaim asked).
    pub vmscan_pages: u64,
    /// `wb->last_old_flush`: when the last kupdate pass ran (or the device's first page was
    /// dirtied), from which the next one is due.
    pub last_old_flush: Ns,
    /// `wb->write_bandwidth`, pages per second.
    pub write_bandwidth: u64,
    /// `wb->avg_write_bandwidth`: `write_bandwidth` smoothed once more against spikes
    /// (`wb_update_write_bandwidth()`), pages per second; the flushers' chunk size
    /// follows it (`writeback_chunk_size()`).
    pub avg_write_bandwidth: u64,
    /// `wb->bw_time_stamp` and `wb->written_stamp`.
    pub bw_time_stamp: Ns,
    pub written_stamp: u64,
    /// Folios written on this device (`WB_WRITTEN`).
    pub written: u64,
    /// Tasks dirtying pages of this device's files (the rate limit is shared among them).
    pub nr_dirtiers: u32,
    /// The next inode to write (round robin over the device's inodes, as `b_io` turns).
    pub next_inode: usize,
    /// The next free byte of each allocation group on the device's filesystem, from the
    /// group's start (mm::page_writeback, "Blocks").
    pub ag_next: [u64; AG_COUNT],
    /// BDI_async_congested and BDI_sync_congested of `bdi->state` (2.6.36), indexed by
    /// BLK_RW_ASYNC / BLK_RW_SYNC (mm/congestion.rs).
    pub congested: [bool; 2],
}

/// The machine's writeback state (`Kernel::wb`).
#[derive(Debug, Default)]
pub struct Writeback {
    /// A page-cache folio has been dirtied since boot: reclaim's dirty bookkeeping is
    /// skipped on machines where none ever was.
    pub dirtied: bool,
    pub nodes: Vec<NodeWriteback>,
    pub wbs: Vec<BdiWriteback>,
    pub inodes: Vec<Inode>,
    /// Bytes the flushers and reclaim wrote (the invariant checked in debug builds:
    /// written + still dirty + truncated = dirtied).
    pub written_by_flusher: u64,
    pub written_by_reclaim: u64,
    /// Bytes of dirty folios whose file was deleted before they were written
    /// (`folio_cancel_dirty()` in truncation, mm/truncate.rs; the kernel counts them per
    /// task, `cancelled_write_bytes` of /proc/PID/io, and in no vmstat counter).
    pub truncated: u64,
    /// `[machine] fs`: what `->writepage` does with a folio reclaim hands it.
    pub fs: Fs,
    /// Model-internal, no kernel counter: the page-cache folios direct reclaim handed to
    /// `->writepage` (`pageout()` calls, a folio the filesystem redirtied included, as
    /// 3.1's `nr_vmscan_write` counts it). trace-vmscan-postprocess derives the same number
    /// from `mm_vmscan_writepage` events in direct reclaim ("Direct reclaim write file
    /// async I/O"); `nr_vmscan_write` itself does not tell kswapd from direct reclaim.
    pub vmscan_write_file_direct: u64,
    /// `nr_bdi_congested[]` (2.6.36+seed 003's patch 7): the devices congested in each
    /// direction.
    pub nr_bdi_congested: [u32; 2],
    /// `congestion_wqh[]`: the tasks in `congestion_wait()` / `wait_iff_congested()`, woken
    /// by `clear_bdi_congested()` in each direction.
    pub congestion_wqh: [WaitQueue; 2],
}

/// Allocation groups of a device's filesystem: `mkfs.xfs`'s default `agcount` for a
/// filesystem under 4 TiB.
pub const AG_COUNT: usize = 4;

/// INIT_BW: a device's write bandwidth before it is measured, 100 MiB/s in pages.
pub const INIT_BW: u64 = 100 << (20 - 12);

impl Writeback {
    pub fn new(nr_nodes: usize, nr_devices: usize) -> Writeback {
        Writeback {
            nodes: (0..nr_nodes).map(|_| NodeWriteback::default()).collect(),
            wbs: (0..nr_devices)
                .map(|_| BdiWriteback {
                    write_bandwidth: INIT_BW,
                    avg_write_bandwidth: INIT_BW,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Σ NR_FILE_DIRTY over nodes.
    pub fn nr_dirty(&self) -> u64 {
        self.nodes.iter().map(|n| n.nr_dirty).sum()
    }

    /// Σ NR_WRITEBACK over nodes.
    pub fn nr_writeback(&self) -> u64 {
        self.nodes.iter().map(|n| n.nr_writeback).sum()
    }

    /// The inode of `mapping`, if it has one.
    pub fn inode(&self, mapping: u32) -> Option<usize> {
        self.inodes.iter().position(|i| i.mapping == mapping)
    }
}
