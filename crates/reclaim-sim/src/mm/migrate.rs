//! Page migration (mm/migrate.c, Linux 6.6): `migrate_pages()` moves isolated folios to new
//! page frames that a callback hands out (`new_folio_t`; compaction's `compaction_alloc`),
//! and `putback_movable_pages()` returns the folios it could not move to their LRU lists.
//!
//! A folio is moved as the kernel's `migrate_folio_unmap()` and `migrate_folio_move()` move
//! it, in one step: its mapped page-table entry, its place in its file's page-cache index or
//! in the swap cache, its flags, owner, side-array fields (`folio->index`, `folio->swap`,
//! its memory cgroup) and its LRU list all go to the new page frame, which joins the head of
//! that list (`folio_add_lru()`), and the old one is freed to the CPU's per-CPU list. The
//! rest of the model finds it there: owners and entries name the new pfn.
//!
//! Costs: `MIGRATE_FOLIO_NS` a folio, `MIGRATE_UNMAP_REMAP_NS` more for a mapped one, and the
//! copy, `MIGRATE_COPY_NS` a page, scaled by the node's memory load and counted in its
//! traffic.
//!
//! Departures: a folio that is locked (its read in flight) or under writeback fails at once,
//! where the kernel retries it up to NR_MAX_MIGRATE_PAGES_RETRY passes (nothing unlocks it
//! within the model's pass, so the outcome is the same) and a sync migration by a task
//! without PF_MEMALLOC (kcompactd) would sleep on its lock; a folio always moves whole (no
//! split); the new folio joins its LRU list at once rather than through the CPU's LRU-add
//! batch; no migration tracepoints (`mm_migrate_pages`).

use crate::engine::Ns;
use crate::kernel::Kernel;
use crate::mm::lru::{folio_lru_list, is_file_lru};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::{folio_nr_pages, pg};
use crate::mm::vma::pte_remap;
use crate::mm::vmstat::VmEvent;

/// Migrating one folio, less its copy and its page-table work (`migrate_folio_unmap()` and
/// `migrate_folio_move()`): the folio lock, freezing its reference count, moving its
/// mapping's entry and its flags (`folio_migrate_mapping()`, `folio_migrate_flags()`) and
/// putting the new folio on the LRU. A guess, sized as `costs.page_cache_insert_ns`'
/// default (350 ns), which also stores a folio in an xarray with its accounting; not
/// measured on a host.
pub const MIGRATE_FOLIO_NS: Ns = 350;

/// The page-table work of migrating a mapped folio: `try_to_migrate()` and
/// `remove_migration_ptes()`, two reverse-map walks to its entry (each
/// `costs.folio_referenced_ns`' default, 300 ns, the model's figure for one walk), the entry
/// made a migration entry and then the new folio's, and a local TLB flush (100 ns each, a
/// guess).
pub const MIGRATE_UNMAP_REMAP_NS: Ns = 800;

/// `folio_copy()` of one 4 KiB page: a cache-cold copy, as `costs.copy_to_user_ns`' default
/// (700 ns, copy_page_to_iter of 4 KiB).
pub const MIGRATE_COPY_NS: Ns = 700;

/// Where `migrate_pages()` gets each new folio (`new_folio_t`).
pub trait NewFolio {
    /// A free folio for `src`'s contents, or None (`-ENOMEM`: migration stops).
    fn get_new_folio(&mut self, k: &mut Kernel, src: u32) -> Option<u32>;
}

/// What one `migrate_pages()` call did (`struct migrate_pages_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MigrateStats {
    pub nr_succeeded: u64,
    pub nr_failed_pages: u64,
    /// A new folio could not be had (`-ENOMEM`): the folios after it were not tried.
    pub enomem: bool,
}

impl MigrateStats {
    /// `migrate_pages()` returned non-zero: some folios are still on the list.
    pub fn err(&self) -> bool {
        self.enomem || self.nr_failed_pages > 0
    }
}

impl Kernel {
    /// `migrate_pages()` of the isolated folios on `from` (their heads; the last one is the
    /// list's head and goes first, as the kernel walks its list), each to a folio `new`
    /// gives. Folios that moved leave `from`; those that failed, and those not tried after
    /// `new` ran out, stay for the caller to put back, the failed ones first (nearest the
    /// head). The task doing it runs on `cpu`. Counts PGMIGRATE_SUCCESS and PGMIGRATE_FAIL.
    pub fn migrate_pages(
        &mut self,
        from: &mut Vec<u32>,
        new: &mut impl NewFolio,
        cpu: u32,
    ) -> MigrateStats {
        let mut stats = MigrateStats::default();
        let mut failed = Vec::new();
        while let Some(src) = from.pop() {
            let f = *self.mem.pages.fields(src);
            let nr = folio_nr_pages(&f);
            if f.flags & (pg::LOCKED | pg::WRITEBACK) != 0 {
                // migrate_folio_unmap(): the trylock fails, or the folio is under
                // writeback, which only MIGRATE_SYNC waits for: -EAGAIN until the passes
                // run out, then a failure.
                stats.nr_failed_pages += nr;
                failed.push(src);
                continue;
            }
            let Some(dst) = new.get_new_folio(self, src) else {
                stats.nr_failed_pages += nr;
                stats.enomem = true;
                failed.push(src);
                break;
            };
            self.migrate_folio(src, dst, cpu);
            stats.nr_succeeded += nr;
        }
        // list_splice(&ret_folios, from): the failed folios at the head, in the order they
        // failed.
        from.extend(failed.iter().rev());
        self.count(VmEvent::PgmigrateSuccess, stats.nr_succeeded);
        self.count(VmEvent::PgmigrateFail, stats.nr_failed_pages);
        stats
    }

    /// Moves isolated order-0 folio `src` to the free page `dst` (`migrate_folio_unmap()`,
    /// `move_to_new_folio()`, `remove_migration_ptes()`, `migrate_folio_done()`): `dst`
    /// takes `src`'s fields, side-array fields and mapping entry, and the head of its LRU
    /// list; `src` is freed to the per-CPU list of `cpu`, where the migration runs.
    pub fn migrate_folio(&mut self, src: u32, dst: u32, cpu: u32) {
        let f = *self.mem.pages.fields(src);
        debug_assert_eq!(
            (f.flags & (pg::LRU | pg::BUDDY | pg::TAIL), f.order),
            (0, 0),
            "an isolated order-0 folio"
        );
        debug_assert_eq!(self.page_zone(src), self.page_zone(dst));
        let mapped = f.flags & pg::MAPPED != 0;
        if f.flags & pg::ANON != 0 {
            if mapped {
                let pte = &mut self.mm.ptes[f.owner as usize];
                *pte = pte_remap(*pte, dst);
            }
            if f.flags & pg::SWAPCACHE != 0 {
                let (area, slot) = self.folio_swap_entry(src);
                debug_assert_eq!(self.swap.areas[area].cache[slot as usize], src);
                self.swap.areas[area].cache[slot as usize] = dst;
            }
        } else if self.address_spaces.tracks(f.owner) {
            if mapped {
                self.remap_file_folio(src, dst);
            }
            let index = self.mem.page_ext.index_mut()[src as usize];
            self.address_spaces
                .replace_folio(f.owner, u64::from(index), dst);
        }
        let ext = &mut self.mem.page_ext;
        for a in [ext.index.as_deref_mut(), ext.swap.as_deref_mut()]
            .into_iter()
            .flatten()
        {
            a[dst as usize] = a[src as usize];
        }
        if let Some(a) = ext.mapcount.as_deref_mut() {
            a[dst as usize] = a[src as usize];
        }
        if let Some(a) = ext.memcg.as_deref_mut() {
            // mem_cgroup_migrate(): the charge moves with the folio.
            a[dst as usize] = std::mem::replace(&mut a[src as usize], ROOT_MEM_CGROUP);
        }
        *self.mem.pages.fields_mut(dst) = f;
        let lru = folio_lru_list(f.flags);
        let lv = self.folio_lruvec(dst);
        let zone_idx = self.page_zonenum(dst);
        self.memcg.lruvecs[lv].add_folio(&mut self.mem.pages, dst, lru, zone_idx);
        let zi = self.page_zone(src);
        let nid = self.mem.zones[zi].nid as usize;
        self.mem.nodes[nid].nr_isolated[is_file_lru(lru) as usize] -= 1;
        // The copy: a read and a write of 4 KiB on the node.
        let now = self.clock();
        let memory = &mut self.mem.nodes[nid].memory;
        memory.add(now, 2 * 4096);
        let copy = memory.scale(MIGRATE_COPY_NS);
        let pte_work = if mapped { MIGRATE_UNMAP_REMAP_NS } else { 0 };
        self.charge(MIGRATE_FOLIO_NS + pte_work + copy);
        // folio_put(): the last reference (its charge moved: nothing to uncharge).
        self.free_folio(src, cpu);
    }

    /// `putback_movable_pages()` of the isolated folios on `list` (head first: the list's
    /// last entry): each back to the head of its LRU list (`folio_putback_lru()`), under
    /// lru_lock, by a task on `cpu`. `list` is left empty.
    pub fn putback_movable_pages(&mut self, list: &mut Vec<u32>, cpu: u32) {
        let Some(&head) = list.last() else {
            return;
        };
        let first_lv = self.folio_lruvec(head);
        let n = list.len() as u64;
        while let Some(p) = list.pop() {
            let f = *self.mem.pages.fields(p);
            let lru = folio_lru_list(f.flags);
            let lv = self.folio_lruvec(p);
            let zone_idx = self.page_zonenum(p);
            self.memcg.lruvecs[lv].add_folio(&mut self.mem.pages, p, lru, zone_idx);
            let nid = self.memcg.lruvecs[lv].nid as usize;
            self.mem.nodes[nid].nr_isolated[is_file_lru(lru) as usize] -= folio_nr_pages(&f);
        }
        let cpu_node = self.cpus.node_of(cpu);
        let at = self.clock();
        let lock = self.lru_lock(first_lv, cpu_node, n * self.costs.putback_ns, at);
        self.charge(lock.total());
    }
}
