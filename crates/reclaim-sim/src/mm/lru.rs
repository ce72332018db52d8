//! The lruvec: five lists threaded through the page array, with per-zone sizes
//! (`lru_zone_size`), the decayed reclaim costs that `get_scan_count` balances, and the
//! `lru_lock` that guards them. There is one per (node, memory cgroup), as in the kernel;
//! `Kernel::mem_cgroup_lruvec` finds it. The list primitives (`lruvec_add_folio`,
//! `lruvec_del_folio`) are here. Models include/linux/mm_inline.h and mm/swap.c (6.x) for the
//! classic two-list LRU (MGLRU off). The per-CPU LRU-add batch's contents are here too; its
//! drain, which takes the locks, is in `mm::swap`.

use super::page::{folio_nr_pages, pg, ListId, PageFields, Pages};
use super::zone::MAX_NR_ZONES;
use crate::hw::lock::SpinLock;

pub const LRU_INACTIVE_ANON: usize = 0;
pub const LRU_ACTIVE_ANON: usize = 1;
pub const LRU_INACTIVE_FILE: usize = 2;
pub const LRU_ACTIVE_FILE: usize = 3;
pub const LRU_UNEVICTABLE: usize = 4;
pub const NR_LRU_LISTS: usize = 5;
pub const NR_EVICTABLE: usize = 4;
pub const LRU_NAMES: [&str; NR_LRU_LISTS] = [
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
];

#[inline]
pub fn is_file_lru(lru: usize) -> bool {
    lru == LRU_INACTIVE_FILE || lru == LRU_ACTIVE_FILE
}

#[inline]
pub fn is_active_lru(lru: usize) -> bool {
    lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE
}

/// `folio_lru_list()`: the list a folio with `flags` belongs on (file or anon, PG_active).
#[inline]
pub fn folio_lru_list(flags: u16) -> usize {
    let base = if flags & pg::ANON != 0 {
        LRU_INACTIVE_ANON
    } else {
        LRU_INACTIVE_FILE
    };
    base + usize::from(flags & pg::ACTIVE != 0)
}

/// Per-zone list sizes (`lru_zone_size`): a lruvec's, or the sum of a cgroup subtree's.
pub type ZoneSizes = [[u64; NR_LRU_LISTS]; MAX_NR_ZONES];

/// Pages on `lru` in zones ≤ `zone_idx` of `sizes`.
pub fn lru_size(sizes: &ZoneSizes, lru: usize, zone_idx: usize) -> u64 {
    (0..=zone_idx.min(MAX_NR_ZONES - 1))
        .map(|z| sizes[z][lru])
        .sum()
}

/// `inactive_is_low()` (6.x) over `sizes`: the inactive list is low when
/// `inactive·ratio < active`, with `ratio = int_sqrt(10·GB)` of the pair's size (1 under
/// 1 GB).
pub fn inactive_is_low(sizes: &ZoneSizes, inactive_lru: usize, reclaim_idx: usize) -> bool {
    let inactive = lru_size(sizes, inactive_lru, reclaim_idx);
    let active = lru_size(sizes, inactive_lru + 1, reclaim_idx);
    let gb = (inactive + active) >> (30 - 12);
    let ratio = if gb > 0 {
        super::zone::int_sqrt(10 * gb)
    } else {
        1
    };
    inactive * ratio < active
}

#[derive(Clone, Debug)]
pub struct Lruvec {
    /// The node (`lruvec_pgdat`) and memory cgroup id (`lruvec_memcg`) it belongs to.
    pub nid: u32,
    pub memcg: u16,
    lists: [ListId; NR_LRU_LISTS],
    /// `lru_zone_size[zone][lru]`.
    pub zone_size: ZoneSizes,
    pub anon_cost: u64,
    pub file_cost: u64,
    /// `lruvec->nonresident_age`: evictions and refault activations here and in child
    /// cgroups (`mm::workingset`).
    pub nonresident_age: u64,
    /// `lruvec->lru_lock` (per node before 5.11, when it was `pgdat->lru_lock`; with only
    /// the root memory cgroup the two are the same lock).
    pub lru_lock: SpinLock,
}

impl Lruvec {
    /// The lruvec of node `nid` and memory cgroup `memcg`, its lists `lists`.
    pub fn new(nid: u32, memcg: u16, lists: [ListId; NR_LRU_LISTS]) -> Lruvec {
        Lruvec {
            nid,
            memcg,
            lists,
            zone_size: [[0; NR_LRU_LISTS]; MAX_NR_ZONES],
            anon_cost: 0,
            file_cost: 0,
            nonresident_age: 0,
            lru_lock: SpinLock::new(nid),
        }
    }

    #[inline]
    pub fn list(&self, lru: usize) -> ListId {
        self.lists[lru]
    }

    /// `lruvec_lru_size(lruvec, lru, zone_idx)`: pages on `lru` in zones ≤ `zone_idx`.
    pub fn lru_size(&self, lru: usize, zone_idx: usize) -> u64 {
        lru_size(&self.zone_size, lru, zone_idx)
    }

    pub fn total(&self, lru: usize) -> u64 {
        self.lru_size(lru, MAX_NR_ZONES - 1)
    }

    /// `inactive_is_low()` (6.x): the inactive list is low when `inactive·ratio < active`,
    /// with `ratio = int_sqrt(10·GB)` of the list pair's size (1 under 1 GB).
    pub fn inactive_is_low(&self, inactive_lru: usize, reclaim_idx: usize) -> bool {
        inactive_is_low(&self.zone_size, inactive_lru, reclaim_idx)
    }

    /// `lru_note_cost()` (6.x, mm/swap.c): `cost = nr_io·SWAP_CLUSTER_MAX + nr_rotated`, and
    /// both costs halve once they exceed a quarter of the LRU.
    pub fn note_cost(&mut self, file: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * 32 + nr_rotated;
        if file {
            self.file_cost += cost;
        } else {
            self.anon_cost += cost;
        }
        let lrusize: u64 = (0..NR_EVICTABLE).map(|l| self.total(l)).sum();
        if self.file_cost + self.anon_cost > lrusize / 4 {
            self.file_cost /= 2;
            self.anon_cost /= 2;
        }
    }

    /// `lruvec_add_folio()` (caller holds lru_lock): folio `p` of zone `zone_idx` goes to the
    /// head of `lru`, with PG_lru; the list's size grows by its pages (`folio_nr_pages`).
    #[inline]
    pub fn add_folio(&mut self, pages: &mut Pages, p: u32, lru: usize, zone_idx: usize) {
        let d = pages.fields_mut(p);
        self.zone_size[zone_idx][lru] += folio_nr_pages(d);
        d.flags |= pg::LRU;
        d.lru = lru as u8;
        pages.add_head(self.lists[lru], p);
    }

    /// `lruvec_add_folio()` for each folio of `run`, all of zone `zone_idx`, in turn: each
    /// folio's owner becomes `owner` and its flags `flags` with PG_lru. The same list and
    /// counters as one `add_folio` per folio after setting those fields, with the list and
    /// counters updated once per run.
    pub fn add_folio_run(
        &mut self,
        pages: &mut Pages,
        run: &[u32],
        lru: usize,
        zone_idx: usize,
        owner: u32,
        flags: u16,
    ) {
        // Allocated pages have order 0 (`take_block` clears the block's head; the pages
        // inside a free block keep 0), which the fields written here keep.
        debug_assert!(run.iter().all(|&p| pages.fields(p).order == 0));
        self.zone_size[zone_idx][lru] += run.len() as u64;
        let f = PageFields {
            owner,
            flags: flags | pg::LRU,
            order: 0,
            lru: lru as u8,
        };
        pages.add_head_run(self.lists[lru], run, f);
    }

    /// `lruvec_del_folio()` (caller holds lru_lock): folio `p` of zone `zone_idx` leaves
    /// `lru`, and PG_lru; the list's size shrinks by its pages.
    #[inline]
    pub fn del_folio(&mut self, pages: &mut Pages, p: u32, lru: usize, zone_idx: usize) {
        pages.unlink(p);
        pages.clear(p, pg::LRU);
        self.zone_size[zone_idx][lru] -= folio_nr_pages(pages.fields(p));
    }
}

/// Folios per per-CPU LRU-add batch: a batch is moved to the LRU under one lru_lock
/// acquisition when it fills (`PAGEVEC_SIZE`, 15 in the seed's 4.16 kernel; the 6.x
/// `folio_batch` keeps the size).
pub const LRU_ADD_BATCH: u64 = 15;

/// The per-CPU `cpu_fbatches.lru_add` batch (`folio_add_lru()`): folios collect in it and
/// move to the LRU under lru_lock when it fills (`mm::swap`), the lock taken once per run of
/// folios of the same lruvec. It carries over from one caller to the next, as the kernel's
/// per-CPU batch does.
///
/// Departure: the model puts each folio on its LRU list when it is added (the list state is
/// exact) and defers only the lock's cost to the drain; in the kernel the up to 14 folios
/// still in the batch are invisible to reclaim until then.
///
/// One cache line per CPU's batch (62 bytes, aligned), as the kernel's per-CPU data is.
#[derive(Debug, Default, Clone)]
#[repr(align(64))]
pub struct LruAddBatch {
    /// The batch's folios as runs of one lruvec: `(lruvec index, folios)`, in the order they
    /// came.
    runs: [(u16, u8); LRU_ADD_BATCH as usize],
    nr_runs: u8,
    /// Folios in the runs (their sum), kept so a fill tests full-ness without summing.
    len: u8,
}

impl LruAddBatch {
    /// Up to `n` more folios of lruvec `lv` at the end of the batch: as many as fit before
    /// it is full. Returns how many went in.
    #[inline]
    pub fn push(&mut self, lv: usize, n: usize) -> usize {
        let take = n.min(LRU_ADD_BATCH as usize - self.len as usize);
        let lv = lv as u16;
        match self.runs[..self.nr_runs as usize].last_mut() {
            Some((last, count)) if *last == lv => *count += take as u8,
            _ => {
                self.runs[self.nr_runs as usize] = (lv, take as u8);
                self.nr_runs += 1;
            }
        }
        self.len += take as u8;
        take
    }

    pub fn is_full(&self) -> bool {
        u64::from(self.len) == LRU_ADD_BATCH
    }

    /// Runs in the batch.
    #[inline]
    pub fn nr_runs(&self) -> usize {
        self.nr_runs as usize
    }

    /// Run `i`: `(lruvec index, folios)`.
    #[inline]
    pub fn run(&self, i: usize) -> (usize, u64) {
        let (lv, n) = self.runs[i];
        (usize::from(lv), u64::from(n))
    }

    /// Empty the batch (after its runs moved to the LRU).
    #[inline]
    pub fn clear(&mut self) {
        self.nr_runs = 0;
        self.len = 0;
    }

    /// Folios waiting in the batch.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_ratio_follows_the_table() {
        let pages = Pages::new(0, 5);
        let mut l = Lruvec::new(0, 0, std::array::from_fn(|i| pages.list(i as u32)));
        let gib = 1u64 << 18; // pages per GiB
                              // 10 GiB: ratio 10, so 1 GiB inactive against 9 GiB active is not low, 0.8 is.
        l.zone_size[2][LRU_INACTIVE_FILE] = gib;
        l.zone_size[2][LRU_ACTIVE_FILE] = 9 * gib;
        assert!(!l.inactive_is_low(LRU_INACTIVE_FILE, 2));
        l.zone_size[2][LRU_INACTIVE_FILE] = gib * 8 / 10;
        l.zone_size[2][LRU_ACTIVE_FILE] = 9 * gib + gib / 5;
        assert!(l.inactive_is_low(LRU_INACTIVE_FILE, 2));
        // Zones above reclaim_idx are not counted.
        assert_eq!(l.lru_size(LRU_ACTIVE_FILE, 1), 0);
    }

    #[test]
    fn a_full_batch_takes_no_more() {
        let mut b = LruAddBatch::default();
        assert_eq!(b.push(0, 10), 10);
        assert_eq!(b.push(1, 10), 5);
        assert!(b.is_full());
        let runs: Vec<_> = (0..b.nr_runs()).map(|i| b.run(i)).collect();
        assert_eq!(runs, vec![(0, 10), (1, 5)]);
        b.clear();
        assert!(b.is_empty());
    }
}
