//! mm/swap.c (6.x): the LRU-side helpers page users call: `folio_add_lru()` through the
//! per-CPU LRU-add batch (`mm::lru::LruAddBatch`), whose drains are what lru_lock costs a
//! page-cache filler, and `folio_mark_accessed()`.

use crate::kernel::Kernel;
use crate::mm::lru::{LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_ANON};
use crate::mm::page::{folio_nr_pages, pg};
use crate::mm::vmstat::VmEvent;

impl Kernel {
    /// `folio_add_lru()` for `n` folios of lruvec `lv` on `cpu`'s batch, as `n` calls: the
    /// batch drains (`folio_batch_move_lru`) whenever it fills, and the lock time of the
    /// drains is charged to the running slice.
    pub fn folio_add_lru_run(&mut self, cpu: u32, lv: usize, n: usize) {
        let mut left = n;
        while left > 0 {
            left -= self.percpu.lru_add[cpu as usize].push(lv, left);
            if self.percpu.lru_add[cpu as usize].is_full() {
                self.folio_batch_move_lru(cpu);
            }
        }
    }

    /// `folio_batch_move_lru()` of `cpu`'s LRU-add batch: one lru_lock acquisition per run
    /// of folios of the same lruvec (`folio_lruvec_relock_irqsave` relocks only when the
    /// lruvec changes), held `lru_add_ns` per folio.
    pub fn folio_batch_move_lru(&mut self, cpu: u32) {
        let cpu_node = self.cpus.node_of(cpu);
        let c = cpu as usize;
        for i in 0..self.percpu.lru_add[c].nr_runs() {
            let (lv, n) = self.percpu.lru_add[c].run(i);
            let hold = n * self.costs.lru_add_ns;
            let at = self.clock();
            let lock = self.lru_lock(lv, cpu_node, hold, at);
            self.charge(lock.total());
        }
        self.percpu.lru_add[c].clear();
        if self.percpu.lru_add_anon[c].is_empty() {
            return; // no anon folio waits (a page-cache filler's drains)
        }
        let mut anon = std::mem::take(&mut self.percpu.lru_add_anon[c]);
        for &p in &anon {
            let lv = self.folio_lruvec(p);
            let zone_idx = self.page_zonenum(p);
            let lru = if self.mem.pages.flags(p) & pg::ACTIVE != 0 {
                LRU_ACTIVE_ANON
            } else {
                LRU_INACTIVE_ANON
            };
            self.memcg.lruvecs[lv].add_folio(&mut self.mem.pages, p, lru, zone_idx);
        }
        anon.clear();
        self.percpu.lru_add_anon[c] = anon;
    }

    /// `folio_add_lru()` of anon folio `p` (new, or read from swap) by the task on `cpu`: it
    /// waits in the CPU's batch, off the LRU and out of reclaim's reach, and joins the list
    /// with the batch's other folios when it drains. The order folios reach the LRU in (a
    /// process's faults in runs of the batch's size) is the order reclaim writes them to swap
    /// in, which decides what cluster readahead reads. (Page-cache folios go on the list at
    /// once: `LruAddBatch`'s departure.)
    pub fn folio_add_lru_anon(&mut self, cpu: u32, p: u32) {
        let lv = self.folio_lruvec(p);
        self.percpu.lru_add_anon[cpu as usize].push(p);
        self.folio_add_lru_run(cpu, lv, 1);
    }

    /// `folio_mark_accessed()`: the two-step activation inactive,unreferenced →
    /// inactive,referenced → active,unreferenced. A use-once page (one touch, as a streaming
    /// read gives) stays inactive and referenced, and reclaim frees it as RECLAIM_CLEAN.
    /// Returns whether the folio was activated (the caller charges the lru_lock it takes).
    /// Folios off the LRU (isolated by reclaim) are left alone, as `folio_activate` does.
    pub fn folio_mark_accessed(&mut self, p: u32) -> bool {
        // The first step, taken by every page of a streaming read, is one flag write.
        let f = self.mem.pages.fields_mut(p);
        let flags = f.flags;
        if flags & pg::REFERENCED == 0 {
            f.flags = flags | pg::REFERENCED;
            return false;
        }
        self.folio_activate(p, flags)
    }

    /// A read into `folios` has completed: each folio still owned by `owner` is unlocked,
    /// marked uptodate and then `folio_mark_accessed()`, in order. Returns the pages of those
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
            self.mem.pages.prefetch_ahead(folios, i);
            let f = self.mem.pages.fields_mut(p);
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
            let nr = folio_nr_pages(self.mem.pages.fields(p));
            activated += nr * u64::from(self.folio_activate(p, self.mem.pages.flags(p)));
        }
        activated
    }

    /// `activate_page()` (mm/swap.c, before 5.9) of folio `p`: onto the active list if it
    /// is on an inactive one. A folio off the LRU (still in a CPU's LRU-add batch, or
    /// isolated by reclaim) is left alone, as the kernel's `PageLRU()` check leaves it. The
    /// kernel defers the move through a per-CPU batch of its own (`activate_page_pvecs`);
    /// the model moves it at once.
    pub fn activate_page(&mut self, p: u32) {
        self.folio_activate(p, self.mem.pages.flags(p));
    }

    /// The second step of `folio_mark_accessed()` for a referenced folio with `flags`.
    fn folio_activate(&mut self, p: u32, flags: u16) -> bool {
        if flags & pg::ACTIVE != 0 || flags & pg::LRU == 0 {
            return false;
        }
        let lru = self.mem.pages.fields(p).lru as usize;
        let zone_idx = self.page_zonenum(p);
        let lv = self.folio_lruvec(p);
        let lruvec = &mut self.memcg.lruvecs[lv];
        lruvec.del_folio(&mut self.mem.pages, p, lru, zone_idx);
        self.mem.pages.set(p, pg::ACTIVE);
        self.mem.pages.clear(p, pg::REFERENCED);
        let active = if lru >= LRU_INACTIVE_ANON + 2 {
            LRU_ACTIVE_FILE
        } else {
            lru + 1
        };
        lruvec.add_folio(&mut self.mem.pages, p, active, zone_idx);
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        self.count(VmEvent::Pgactivate, nr);
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_ADD_BATCH, LRU_INACTIVE_FILE};
    use crate::mm::page::pg;
    use crate::testing::kernel_of;

    fn two_node_kernel() -> Kernel {
        kernel_of(
            "[machine]\nnodes = 2\nmemory_mb_per_node = 256\n[workload]\nkind = \"dd\"\ntasks = 1\n",
        )
    }

    #[test]
    fn lru_add_batch_carries_its_remainder_between_callers() {
        let mut k = two_node_kernel();
        // 32 + 16 folios, as one readahead window filled in two allocation batches: the
        // batch drains at 15, 30 and 45 folios, and 3 wait for the next caller.
        k.folio_add_lru_run(0, 0, 32);
        k.folio_add_lru_run(0, 0, 16);
        assert_eq!(k.memcg.lruvecs[0].lru_lock.acquisitions, 3);
        assert_eq!(k.percpu.lru_add[0].len(), 3);
        assert_eq!(k.slice, 3 * LRU_ADD_BATCH * k.costs.lru_add_ns);
        assert_eq!(k.memcg.lruvecs[1].lru_lock.acquisitions, 0);
        assert!(k.percpu.lru_add[1].is_empty(), "each CPU has its own batch");
    }

    #[test]
    fn lru_add_batch_locks_each_run_of_a_lruvec_once() {
        let mut k = two_node_kernel();
        // 5 folios of node 0, 5 of node 1, 5 of node 0: three relocks, each for its own run.
        for lv in [0, 1, 0] {
            k.folio_add_lru_run(0, lv, 5);
        }
        assert!(k.percpu.lru_add[0].is_empty());
        assert_eq!(k.memcg.lruvecs[0].lru_lock.acquisitions, 2);
        assert_eq!(k.memcg.lruvecs[1].lru_lock.acquisitions, 1);
        assert_eq!(
            k.memcg.lruvecs[1].lru_lock.hold_ns,
            5 * 2 * k.costs.lru_add_ns
        ); // remote: ×2
    }

    #[test]
    fn a_run_drains_as_single_adds_do() {
        // Runs of folios from alternating nodes, across several drains and remainders.
        let runs = [
            (0usize, 7usize),
            (1, 20),
            (0, 3),
            (0, 31),
            (1, 1),
            (0, 15),
            (1, 9),
        ];
        let (mut k1, mut k2) = (two_node_kernel(), two_node_kernel());
        k1.now = 1000;
        k2.now = 1000;
        for (lv, n) in runs {
            for _ in 0..n {
                k1.folio_add_lru_run(0, lv, 1);
            }
            k2.folio_add_lru_run(0, lv, n);
            assert_eq!(k1.slice, k2.slice);
            assert_eq!(k1.percpu.lru_add[0].len(), k2.percpu.lru_add[0].len());
        }
        for lv in 0..2 {
            let (l1, l2) = (
                &k1.memcg.lruvecs[lv].lru_lock,
                &k2.memcg.lruvecs[lv].lru_lock,
            );
            assert_eq!(l1.acquisitions, l2.acquisitions);
            assert_eq!(l1.hold_ns, l2.hold_ns);
        }
        assert!(k1.memcg.lruvecs[1].lru_lock.acquisitions > 1);
    }

    /// A page of zone list 0 on node 0's inactive file list.
    fn page_on_lru(k: &mut Kernel, lru: usize) -> u32 {
        let zi = k.mem.zonelists[0][0];
        let p = k.mem.zones[zi].rmqueue(&mut k.mem.pages, 0).unwrap();
        let z = k.page_zonenum(p);
        k.memcg.lruvecs[0].add_folio(&mut k.mem.pages, p, lru, z);
        p
    }

    #[test]
    fn two_touches_activate_a_page() {
        let mut k = kernel_of("[workload]\nkind = \"dd\"\ntasks = 1\n");
        let p = page_on_lru(&mut k, LRU_INACTIVE_FILE);
        assert!(!k.folio_mark_accessed(p));
        assert!(k.mem.pages.flags(p) & pg::REFERENCED != 0);
        assert_eq!(k.memcg.lruvecs[0].total(LRU_INACTIVE_FILE), 1);
        assert!(k.folio_mark_accessed(p));
        assert_eq!(k.memcg.lruvecs[0].total(LRU_INACTIVE_FILE), 0);
        assert_eq!(k.memcg.lruvecs[0].total(LRU_ACTIVE_FILE), 1);
        assert_eq!(
            k.mem.pages.flags(p) & (pg::ACTIVE | pg::REFERENCED),
            pg::ACTIVE
        );
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
            let mut window = Vec::new();
            for i in 0..20u32 {
                let lru = if i % 5 == 2 {
                    LRU_ACTIVE_FILE
                } else {
                    LRU_INACTIVE_FILE
                };
                let p = page_on_lru(&mut k, lru);
                let f = k.mem.pages.fields_mut(p);
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
            if one.mem.pages.fields(p).owner == OWNER {
                one.mem.pages.clear(p, pg::LOCKED);
                one.mem.pages.set(p, pg::UPTODATE);
                activated += u64::from(one.folio_mark_accessed(p));
            }
        }
        assert_eq!(activated, 4, "the referenced folios on the inactive list");
        assert_eq!(
            all.folio_mark_accessed_after_read(&mut folios, OWNER),
            activated
        );
        for &p in &window {
            assert_eq!(one.mem.pages.flags(p), all.mem.pages.flags(p), "folio {p}");
            assert_eq!(one.mem.pages.fields(p).lru, all.mem.pages.fields(p).lru);
        }
        for lru in [LRU_INACTIVE_FILE, LRU_ACTIVE_FILE] {
            let list = one.memcg.lruvecs[0].list(lru);
            assert!(
                one.mem.pages.iter(list).eq(all.mem.pages.iter(list)),
                "list {lru}"
            );
            assert_eq!(
                one.memcg.lruvecs[0].total(lru),
                all.memcg.lruvecs[0].total(lru)
            );
        }
    }
}
