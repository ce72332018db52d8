//! mm/swap.c (6.x): the LRU-side helpers page users call, and the per-CPU LRU-add batch
//! ([`LruAddBatch`]) whose drains are what lru_lock costs a page-cache filler.

use crate::engine::Ns;
use crate::kernel::Kernel;
use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_ANON};
use crate::mm::page::pg;
use crate::mm::vmstat::VmEvent;

/// Folios per per-CPU LRU-add batch: a batch is moved to the LRU under one lru_lock
/// acquisition when it fills (`PAGEVEC_SIZE`, 15 in the seed's 4.16 kernel; the 6.x
/// `folio_batch` keeps the size).
pub const LRU_ADD_BATCH: u64 = 15;

/// The per-CPU `cpu_fbatches.lru_add` batch (`folio_add_lru()` → `folio_batch_move_lru()`):
/// folios collect in it and move to the LRU under lru_lock when it fills, the lock taken
/// once per run of folios from the same node (`folio_lruvec_relock_irqsave` relocks only
/// when the lruvec changes). It carries over from one caller to the next, as the kernel's
/// per-CPU batch does; a task bound to one CPU owns one.
///
/// Departure: the model puts each folio on its LRU list when it is added (the list state is
/// exact) and defers only the lock's cost to the drain; in the kernel the up to 14 folios
/// still in the batch are invisible to reclaim until then.
#[derive(Debug, Default, Clone)]
pub struct LruAddBatch {
    /// The batch's folios as runs of one node: `(nid, folios)`, in the order they came.
    runs: [(u8, u8); LRU_ADD_BATCH as usize],
    nr_runs: u8,
    /// Folios in the runs (their sum), kept so a fill tests full-ness without summing.
    len: u8,
}

impl LruAddBatch {
    /// Adds one folio of node `nid`; when the batch is full, drains it and returns the CPU
    /// time of the lru_lock acquisitions (spinning included) for a CPU on `cpu_node` whose
    /// clock is at `at`.
    pub fn add(&mut self, k: &mut Kernel, nid: u32, cpu_node: u32, at: Ns) -> Ns {
        self.add_run(k, nid, 1, cpu_node, at)
    }

    /// `n` folios of node `nid`, as `n` calls of [`LruAddBatch::add`] with the clock moved
    /// on by each drain's time: returns the CPU time of the drains.
    pub fn add_run(&mut self, k: &mut Kernel, nid: u32, n: usize, cpu_node: u32, at: Ns) -> Ns {
        let mut sys = 0;
        let mut left = n;
        while left > 0 {
            let take = left.min(LRU_ADD_BATCH as usize - self.len as usize);
            self.push(nid as u8, take as u8);
            left -= take;
            if u64::from(self.len) == LRU_ADD_BATCH {
                sys += self.drain(k, cpu_node, at + sys);
            }
        }
        sys
    }

    /// `n` more folios of node `nid` at the end of the batch.
    #[inline]
    fn push(&mut self, nid: u8, n: u8) {
        match self.runs[..self.nr_runs as usize].last_mut() {
            Some((last, count)) if *last == nid => *count += n,
            _ => {
                self.runs[self.nr_runs as usize] = (nid, n);
                self.nr_runs += 1;
            }
        }
        self.len += n;
    }

    /// `folio_batch_move_lru()`: one lru_lock acquisition per run of same-node folios, held
    /// `lru_add_ns` per folio. Returns the CPU time.
    pub fn drain(&mut self, k: &mut Kernel, cpu_node: u32, at: Ns) -> Ns {
        let mut sys = 0;
        for &(nid, run) in &self.runs[..self.nr_runs as usize] {
            let hold = u64::from(run) * k.costs.lru_add_ns;
            sys += k.lru_lock(u32::from(nid), cpu_node, hold, at + sys).total();
        }
        self.nr_runs = 0;
        self.len = 0;
        sys
    }

    /// Folios waiting in the batch.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Kernel {
    /// `folio_mark_accessed()`: the two-step activation inactive,unreferenced →
    /// inactive,referenced → active,unreferenced. A use-once page (one touch, as a streaming
    /// read gives) stays inactive and referenced, and reclaim frees it as RECLAIM_CLEAN.
    /// Returns whether the folio was activated (the caller charges the lru_lock it takes).
    /// Folios off the LRU (isolated by reclaim) are left alone, as `folio_activate` does.
    pub fn folio_mark_accessed(&mut self, p: u32) -> bool {
        // The first step, taken by every page of a streaming read, is one flag write.
        let f = self.pages.fields_mut(p);
        let flags = f.flags;
        if flags & pg::REFERENCED == 0 {
            f.flags = flags | pg::REFERENCED;
            return false;
        }
        self.folio_activate(p, flags)
    }

    /// A read into `folios` has completed: each folio still owned by `owner` is unlocked,
    /// marked uptodate and then `folio_mark_accessed()`, in order. Returns how many were
    /// activated (the caller charges the lru_lock). `folios` is reordered.
    ///
    /// The first step of `folio_mark_accessed()`, which every folio of a streaming read
    /// takes, touches only the folio's flags; it is done for the whole window in one pass,
    /// and the folios already referenced are activated after it, in their order. The result
    /// is the same as one call per folio: an activation changes only its own folio's flags.
    pub fn folio_mark_accessed_after_read(&mut self, folios: &mut [u32], owner: u32) -> u64 {
        let mut referenced = 0;
        for i in 0..folios.len() {
            let p = folios[i];
            let f = self.pages.fields_mut(p);
            if f.owner != owner {
                continue;
            }
            let flags = (f.flags & !pg::LOCKED) | pg::UPTODATE;
            if flags & pg::REFERENCED == 0 {
                f.flags = flags | pg::REFERENCED;
            } else {
                f.flags = flags;
                folios[referenced] = p;
                referenced += 1;
            }
        }
        let mut activated = 0;
        for &p in &folios[..referenced] {
            activated += u64::from(self.folio_activate(p, self.pages.flags(p)));
        }
        activated
    }

    /// The second step of `folio_mark_accessed()` for a referenced folio with `flags`.
    fn folio_activate(&mut self, p: u32, flags: u16) -> bool {
        if flags & (pg::UNEVICTABLE | pg::ACTIVE) != 0 || flags & pg::LRU == 0 {
            return false;
        }
        let lru = self.pages.fields(p).lru as usize;
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
    use super::{LruAddBatch, LRU_ADD_BATCH};
    use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
    use crate::mm::page::pg;
    use crate::{kernel::Kernel, Scenario};

    fn two_node_kernel() -> Kernel {
        let s = Scenario::parse(
            "[machine]\nnodes = 2\nmemory_mb_per_node = 256\n[workload]\nkind = \"dd\"\ntasks = 1\n",
            "t.toml",
            &[],
        )
        .unwrap();
        Kernel::new(&s)
    }

    #[test]
    fn lru_add_batch_carries_its_remainder_between_callers() {
        let mut k = two_node_kernel();
        let mut b = LruAddBatch::default();
        // 32 + 16 folios, as one readahead window filled in two allocation batches: the
        // batch drains at 15, 30 and 45 folios, and 3 wait for the next caller.
        let mut sys = 0;
        for _ in 0..48 {
            sys += b.add(&mut k, 0, 0, sys);
        }
        assert_eq!(k.nodes[0].lru_lock.acquisitions, 3);
        assert_eq!(b.len(), 3);
        assert_eq!(sys, 3 * LRU_ADD_BATCH * k.costs.lru_add_ns);
        assert_eq!(k.nodes[1].lru_lock.acquisitions, 0);
    }

    #[test]
    fn lru_add_batch_locks_each_run_of_a_node_once() {
        let mut k = two_node_kernel();
        let mut b = LruAddBatch::default();
        // 5 folios of node 0, 5 of node 1, 5 of node 0: three relocks, each for its own run.
        for i in 0..LRU_ADD_BATCH {
            let nid = u32::from((5..10).contains(&i));
            b.add(&mut k, nid, 0, 0);
        }
        assert!(b.is_empty());
        assert_eq!(k.nodes[0].lru_lock.acquisitions, 2);
        assert_eq!(k.nodes[1].lru_lock.acquisitions, 1);
        assert_eq!(k.nodes[1].lru_lock.hold_ns, 5 * 2 * k.costs.lru_add_ns); // remote: ×2
    }

    #[test]
    fn a_run_drains_as_single_adds_do() {
        // Runs of folios from alternating nodes, across several drains and remainders.
        let runs = [
            (0u32, 7usize),
            (1, 20),
            (0, 3),
            (0, 31),
            (1, 1),
            (0, 15),
            (1, 9),
        ];
        let (mut k1, mut k2) = (two_node_kernel(), two_node_kernel());
        let (mut b1, mut b2) = (LruAddBatch::default(), LruAddBatch::default());
        let (mut sys1, mut sys2) = (0, 0);
        for (nid, n) in runs {
            for _ in 0..n {
                sys1 += b1.add(&mut k1, nid, 0, 1000 + sys1);
            }
            sys2 += b2.add_run(&mut k2, nid, n, 0, 1000 + sys2);
            assert_eq!(sys1, sys2);
            assert_eq!(b1.len(), b2.len());
        }
        for nid in 0..2 {
            let (l1, l2) = (&k1.nodes[nid].lru_lock, &k2.nodes[nid].lru_lock);
            assert_eq!(l1.acquisitions, l2.acquisitions);
            assert_eq!(l1.hold_ns, l2.hold_ns);
        }
        assert!(k1.nodes[1].lru_lock.acquisitions > 1);
    }

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

    /// A window's folios after its read: fresh (the streaming case), referenced (read
    /// before), active, isolated (off the LRU) and another file's, interleaved. One pass
    /// for the window leaves every folio, list and counter as unlock + uptodate +
    /// `folio_mark_accessed()` per folio does.
    #[test]
    fn a_window_marked_after_its_read_is_what_single_calls_give() {
        const OWNER: u32 = 3;
        let setup = || {
            let mut k = two_node_kernel();
            let zi = k.zonelists[0][0];
            let mut window = Vec::new();
            for i in 0..20u32 {
                let p = k.zones[zi].rmqueue(&mut k.pages, 0).unwrap();
                let lru = if i % 5 == 2 {
                    LRU_ACTIVE_FILE
                } else {
                    LRU_INACTIVE_FILE
                };
                k.lru_add_locked(0, p, lru);
                let f = k.pages.fields_mut(p);
                f.owner = if i % 5 == 4 { OWNER + 1 } else { OWNER };
                f.flags |= pg::LOCKED;
                if i % 5 == 1 || i % 5 == 3 {
                    f.flags |= pg::REFERENCED;
                }
                if i % 5 == 3 {
                    f.flags &= !pg::LRU;
                }
                window.push(p);
            }
            (k, window)
        };
        let (mut one, window) = setup();
        let (mut all, mut folios) = setup();
        let mut activated = 0;
        for &p in &window {
            if one.pages.fields(p).owner == OWNER {
                one.pages.clear(p, pg::LOCKED);
                one.pages.set(p, pg::UPTODATE);
                activated += u64::from(one.folio_mark_accessed(p));
            }
        }
        assert_eq!(activated, 4, "the referenced folios on the inactive list");
        assert_eq!(
            all.folio_mark_accessed_after_read(&mut folios, OWNER),
            activated
        );
        for &p in &window {
            assert_eq!(one.pages.flags(p), all.pages.flags(p), "folio {p}");
            assert_eq!(one.pages.fields(p).lru, all.pages.fields(p).lru);
        }
        for lru in [LRU_INACTIVE_FILE, LRU_ACTIVE_FILE] {
            let list = one.nodes[0].lruvec.list(lru);
            assert!(one.pages.iter(list).eq(all.pages.iter(list)), "list {lru}");
            assert_eq!(
                one.nodes[0].lruvec.total(lru),
                all.nodes[0].lruvec.total(lru)
            );
        }
    }
}
