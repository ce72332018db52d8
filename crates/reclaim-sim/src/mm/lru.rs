//! The per-node lruvec: five lists threaded through the page array, with per-zone sizes
//! (`lru_zone_size`) and the decayed reclaim costs that `get_scan_count` balances. Models
//! include/linux/mm_inline.h and mm/swap.c (6.x) for the classic two-list LRU (MGLRU off).

use super::zone::MAX_NR_ZONES;

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

#[derive(Clone, Debug)]
pub struct Lruvec {
    /// List id of `lists[0]` in `Pages`.
    pub list_base: u32,
    /// `lru_zone_size[zone][lru]`.
    pub zone_size: [[u64; NR_LRU_LISTS]; MAX_NR_ZONES],
    pub anon_cost: u64,
    pub file_cost: u64,
    /// WORKINGSET_ACTIVATE_{ANON,FILE} as of the last `snapshot_refaults()`.
    pub refaults: [u64; 2],
}

impl Lruvec {
    pub fn new(list_base: u32) -> Lruvec {
        Lruvec {
            list_base,
            zone_size: [[0; NR_LRU_LISTS]; MAX_NR_ZONES],
            anon_cost: 0,
            file_cost: 0,
            refaults: [0; 2],
        }
    }

    #[inline]
    pub fn list(&self, lru: usize) -> u32 {
        self.list_base + lru as u32
    }

    /// `lruvec_lru_size(lruvec, lru, zone_idx)`: pages on `lru` in zones ≤ `zone_idx`.
    pub fn lru_size(&self, lru: usize, zone_idx: usize) -> u64 {
        (0..=zone_idx.min(MAX_NR_ZONES - 1))
            .map(|z| self.zone_size[z][lru])
            .sum()
    }

    pub fn total(&self, lru: usize) -> u64 {
        self.lru_size(lru, MAX_NR_ZONES - 1)
    }

    /// `inactive_is_low()` (6.x): the inactive list is low when `inactive·ratio < active`,
    /// with `ratio = int_sqrt(10·GB)` of the list pair's size (1 under 1 GB).
    pub fn inactive_is_low(&self, inactive_lru: usize, reclaim_idx: usize) -> bool {
        let inactive = self.lru_size(inactive_lru, reclaim_idx);
        let active = self.lru_size(inactive_lru + 1, reclaim_idx);
        let gb = (inactive + active) >> (30 - 12);
        let ratio = if gb > 0 {
            super::zone::int_sqrt(10 * gb)
        } else {
            1
        };
        inactive * ratio < active
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_ratio_follows_the_table() {
        let mut l = Lruvec::new(0);
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
}
