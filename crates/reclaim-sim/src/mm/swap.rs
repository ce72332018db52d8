//! mm/swap.c (6.x): the LRU-side helpers page users call. Batching (the per-CPU folio
//! batches that `lru_add_drain` empties) shows only in the cost model: callers charge one
//! lru_lock acquisition per batch of [`LRU_ADD_BATCH`] folios.

use crate::kernel::Kernel;
use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_ANON};
use crate::mm::page::pg;
use crate::mm::vmstat::VmEvent;

/// Folios per per-CPU LRU-add batch: a batch is moved to the LRU under one lru_lock
/// acquisition when it fills (`PAGEVEC_SIZE`, 15 in the seed's 4.16 kernel; the 6.x
/// `folio_batch` keeps the size).
pub const LRU_ADD_BATCH: u64 = 15;

impl Kernel {
    /// `folio_mark_accessed()`: the two-step activation inactive,unreferenced →
    /// inactive,referenced → active,unreferenced. A use-once page (one touch, as a streaming
    /// read gives) stays inactive and referenced, and reclaim frees it as RECLAIM_CLEAN.
    /// Returns whether the folio was activated (the caller charges the lru_lock it takes).
    /// Folios off the LRU (isolated by reclaim) are left alone, as `folio_activate` does.
    pub fn folio_mark_accessed(&mut self, p: u32) -> bool {
        let flags = self.pages.flags(p);
        if flags & pg::REFERENCED == 0 {
            self.pages.set(p, pg::REFERENCED);
            return false;
        }
        if flags & (pg::UNEVICTABLE | pg::ACTIVE) != 0 || flags & pg::LRU == 0 {
            return false;
        }
        let lru = self.pages.desc[p as usize].lru as usize;
        let zone = &self.zones[self.page_zone(p)];
        let (zone_idx, nid) = (zone.zone_idx, zone.nid);
        self.lru_del_locked(nid, p, lru, zone_idx);
        self.pages.set(p, pg::ACTIVE);
        self.pages.clear(p, pg::REFERENCED);
        let active = if lru >= LRU_INACTIVE_ANON + 2 {
            LRU_ACTIVE_FILE
        } else {
            lru + 1
        };
        self.lru_add_locked(nid, p, active);
        self.count(VmEvent::Pgactivate, 1);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
    use crate::mm::page::pg;
    use crate::{kernel::Kernel, Scenario};

    #[test]
    fn two_touches_activate_a_page() {
        let s = Scenario::parse("[workload]\nkind = \"dd\"\ntasks = 1\n", "t.toml", &[]).unwrap();
        let mut k = Kernel::new(&s);
        let zi = k.zonelists[0][0];
        let p = k.zones[zi].rmqueue(&mut k.pages, 0).unwrap();
        k.lru_add_locked(0, p, LRU_INACTIVE_FILE);
        assert!(!k.folio_mark_accessed(p));
        assert!(k.pages.flags(p) & pg::REFERENCED != 0);
        assert_eq!(k.nodes[0].lruvec.total(LRU_INACTIVE_FILE), 1);
        assert!(k.folio_mark_accessed(p));
        assert_eq!(k.nodes[0].lruvec.total(LRU_INACTIVE_FILE), 0);
        assert_eq!(k.nodes[0].lruvec.total(LRU_ACTIVE_FILE), 1);
        assert_eq!(k.pages.flags(p) & (pg::ACTIVE | pg::REFERENCED), pg::ACTIVE);
        assert!(
            !k.folio_mark_accessed(p),
            "already active: only PG_referenced is set"
        );
    }
}
