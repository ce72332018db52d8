//! Transparent huge pages for anonymous faults (mm/huge_memory.c and mm/mempolicy.c, 6.6):
//! `do_huge_pmd_anonymous_page()` when `/sys/kernel/mm/transparent_hugepage/enabled` allows
//! the VMA a huge page (`sysctl.transparent_hugepage`), with the gfp
//! `vma_thp_gfp_mask()` gives for `transparent_hugepage/defrag`
//! (`sysctl.transparent_hugepage_defrag`), allocated as `vma_alloc_folio(..., hugepage)`
//! does: first on the local node only without reclaim retries (`__GFP_THISNODE |
//! __GFP_NORETRY`), then, if the gfp allows direct reclaim, from the whole zonelist (5.4+;
//! with `variant.thp_fault_local_only`, 4.0–5.3's `alloc_pages_vma()`, the local attempt
//! is the only one: 4.3's `GFP_TRANSHUGE` carried `__GFP_NORETRY` and no kswapd wake-up
//! itself, so its one attempt is the model's first with the same gfp). A
//! failed allocation counts `thp_fault_fallback` and the fault maps one page
//! (`do_anonymous_page`); a successful one counts `thp_fault_alloc`, zeroes the 512 pages
//! (`clear_huge_page`) and maps the folio with one PMD. khugepaged is off.
//!
//! The model's page tables have no PMD level: a huge page's 512 entries are present, each
//! pointing at its page of the folio, and the folio's owner is the first of them; its range
//! is the naturally aligned 512 entries from the VMA's start (6.7's alignment of anonymous
//! mappings of 2 MiB and more; 6.6 aligns none, so a VMA's first and last partial huge
//! ranges fault order-0 pages there). The range must be wholly inside the VMA and its
//! entries all empty (`pmd_none`): a range with a page already faulted in (a fallback) has a
//! page table and stays order 0.
//!
//! In reclaim, an anon huge page is split (`split_folio_to_list` → `__split_huge_page`,
//! `thp_split_page`) as `isolate_lru_folios` takes it off the inactive list: its 512 pages
//! become order-0 folios, each mapped by its own entry, in the head's place on the list
//! (head nearest the tail, then the tails in order, as `lru_add_page_tail` puts them) and
//! reclaimed one by one. Departures: 6.6 isolates the folio whole and splits it in
//! `shrink_folio_list` (after `add_to_swap` fails for it without CONFIG_THP_SWAP, or
//! swaps it out whole with it); compaction steps over it (6.6 migrates it); munmap frees it
//! whole (`zap_huge_pmd`), as the kernel does. A VMA is never madvised (no workload calls
//! `madvise(MADV_HUGEPAGE)`), so `enabled = madvise` maps no huge page and the `defrag`
//! modes read the un-madvised branch of `vma_thp_gfp_mask`. A task in a memory cgroup
//! faults order-0 pages only (the model's charge is per page).

use crate::kernel::Kernel;
use crate::mm::gfp::*;
use crate::mm::lru::folio_lru_list;
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::{folio_nr_pages, pg};
use crate::mm::page_alloc::alloc_pages;
use crate::mm::vma::mk_pte;
use crate::mm::vmstat::VmEvent;
use crate::process::Cx;
use crate::sysctl::{ThpDefrag, ThpEnabled};

/// `HPAGE_PMD_ORDER` on x86-64: a huge page is 2 MiB, 512 base pages.
pub const HPAGE_PMD_ORDER: u32 = 9;
pub const HPAGE_PMD_NR: u32 = 1 << HPAGE_PMD_ORDER;

/// `folio_test_pmd_mappable()`: a folio of `nr_pages` pages is of HPAGE_PMD_ORDER or
/// larger (what NR_FILE_THPS and NR_ANON_THPS count).
#[inline]
pub fn folio_test_pmd_mappable(nr_pages: u64) -> bool {
    nr_pages >= u64::from(HPAGE_PMD_NR)
}

/// `vma_thp_gfp_mask()` (6.6) for a VMA madvised MADV_HUGEPAGE (`madvised`) or not, under
/// `defrag`.
pub fn vma_thp_gfp_mask(defrag: ThpDefrag, madvised: bool) -> Gfp {
    match defrag {
        // Always do synchronous compaction.
        ThpDefrag::Always => GFP_TRANSHUGE | if madvised { 0 } else { __GFP_NORETRY },
        // Kick kcompactd and fail quickly.
        ThpDefrag::Defer => GFP_TRANSHUGE_LIGHT | __GFP_KSWAPD_RECLAIM,
        // Synchronous compaction if madvised, otherwise kick kcompactd.
        ThpDefrag::DeferMadvise => {
            GFP_TRANSHUGE_LIGHT
                | if madvised {
                    __GFP_DIRECT_RECLAIM
                } else {
                    __GFP_KSWAPD_RECLAIM
                }
        }
        // Only do synchronous compaction if madvised.
        ThpDefrag::Madvise => GFP_TRANSHUGE_LIGHT | if madvised { __GFP_DIRECT_RECLAIM } else { 0 },
        ThpDefrag::Never => GFP_TRANSHUGE_LIGHT,
    }
}

impl Kernel {
    /// Whether any anonymous fault may map a huge page (`enabled = always`; the model's VMAs
    /// are never madvised).
    #[inline]
    pub fn thp_faults_possible(&self) -> bool {
        self.sysctl.transparent_hugepage == ThpEnabled::Always
    }

    /// The first entry of the huge-page range holding page `addr` of `vma`, if a fault there
    /// may map a huge page (`thp_vma_allowable_order` and `pmd_none`): enabled, the range
    /// inside the VMA, every entry of it empty.
    pub fn thp_fault_range(&self, vma: u32, addr: u32) -> Option<u32> {
        if !self.thp_faults_possible() {
            return None;
        }
        let v = &self.mm.vmas[vma as usize];
        let haddr = addr & !(HPAGE_PMD_NR - 1);
        if haddr + HPAGE_PMD_NR > v.nr_pages {
            return None;
        }
        let first = v.start + haddr;
        let range = &self.mm.ptes[first as usize..(first + HPAGE_PMD_NR) as usize];
        range.iter().all(|&p| p == 0).then_some(first)
    }

    /// `map_anon_folio_pmd()`: huge folio `p`, just allocated and zeroed, mapped at the range
    /// whose first entry is `first`: anon, dirty, on the LRU (`folio_add_lru_vma`, whose
    /// batch a large folio drains at once) and counted in NR_ANON_MAPPED by its pages.
    pub(crate) fn map_anon_thp(&mut self, p: u32, first: u32, cpu: u32) {
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        let f = self.mem.pages.fields_mut(p);
        f.owner = first;
        f.flags = pg::ANON | pg::MAPPED | pg::DIRTY | pg::UPTODATE;
        self.folio_add_lru_anon(cpu, p);
        self.folio_batch_move_lru(cpu);
        for i in 0..nr as u32 {
            self.mm.ptes[(first + i) as usize] = mk_pte(p + i);
        }
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem.nodes[nid as usize].nr_anon_mapped += nr;
        self.count(VmEvent::Pgfault, 1);
    }

    /// `__split_huge_page()` of anon huge folio `p` at the tail of its LRU list, for
    /// reclaim: its pages become order-0 folios with the head's flags (each owned by its
    /// own entry, in its cgroup), the head at the list's tail and the tails in order after
    /// it. Counts `thp_split_page`.
    pub fn split_anon_thp_on_lru(&mut self, lv: usize, p: u32) {
        let f = *self.mem.pages.fields(p);
        debug_assert!(f.flags & pg::ANON != 0 && f.flags & pg::LRU != 0 && f.order > 0);
        debug_assert_eq!(
            f.flags & pg::SWAPCACHE,
            0,
            "an anon huge page never enters swap"
        );
        let nr = folio_nr_pages(&f) as u32;
        let lru = folio_lru_list(f.flags);
        let zone_idx = self.page_zonenum(p);
        self.memcg.lruvecs[lv].del_folio(&mut self.mem.pages, p, lru, zone_idx);
        let memcg = self
            .mem
            .page_ext
            .memcg
            .as_ref()
            .map_or(ROOT_MEM_CGROUP, |m| m[p as usize]);
        let list = self.memcg.lruvecs[lv].list(lru);
        for i in (0..nr).rev() {
            let t = p + i;
            let d = self.mem.pages.fields_mut(t);
            d.owner = f.owner + i;
            d.flags = f.flags;
            d.order = 0;
            d.lru = lru as u8;
            if let Some(m) = self.mem.page_ext.memcg.as_mut() {
                m[t as usize] = memcg;
            }
            self.mem.pages.add_tail(list, t);
        }
        self.memcg.lruvecs[lv].zone_size[zone_idx][lru] += u64::from(nr);
        self.count(VmEvent::ThpSplitPage, 1);
    }
}

/// `do_huge_pmd_anonymous_page()` for a write fault at the range whose first entry is
/// `first`, by a task charged to the root cgroup: allocate the huge folio (local node
/// first, or only: `variant.thp_fault_local_only`), zero it and map it. Returns false on a
/// fallback (`thp_fault_fallback`): the caller maps one page.
pub async fn do_huge_pmd_anonymous_page(cx: &Cx, first: u32) -> bool {
    let gfp = {
        let k = cx.k();
        vma_thp_gfp_mask(k.sysctl.transparent_hugepage_defrag, false)
    };
    // vma_alloc_folio(gfp, HPAGE_PMD_ORDER, vma, haddr, true), default policy.
    let mut folio = alloc_pages(
        cx,
        gfp | __GFP_THISNODE | __GFP_NORETRY,
        HPAGE_PMD_ORDER,
        cx.node,
    )
    .await;
    if folio.is_none() && gfp & __GFP_DIRECT_RECLAIM != 0 && !cx.k().variant.thp_fault_local_only {
        folio = alloc_pages(cx, gfp, HPAGE_PMD_ORDER, cx.node).await;
    }
    let mut k = cx.k();
    let Some(p) = folio else {
        k.count(VmEvent::ThpFaultFallback, 1);
        return false;
    };
    if k.mm.ptes[first as usize..(first + HPAGE_PMD_NR) as usize]
        .iter()
        .any(|&e| e != 0)
    {
        // Another fault mapped a page there meanwhile: pmd no longer none.
        k.free_large_folio(p, cx.cpu);
        k.count(VmEvent::Pgfree, u64::from(HPAGE_PMD_NR));
        return false;
    }
    // clear_huge_page(): 2 MiB written through the node's memory, then the fault's own work.
    let nid = k.mem.zones[k.page_zone(p)].nid as usize;
    let now = k.clock();
    let clear_ns = k.costs.clear_page_ns * u64::from(HPAGE_PMD_NR - 1);
    let memory = &mut k.mem.nodes[nid].memory;
    memory.add(now, u64::from(HPAGE_PMD_NR) * 4096);
    let clear = memory.scale(clear_ns);
    let cost = k.costs.anon_fault_ns + clear;
    k.charge(cost);
    k.count(VmEvent::ThpFaultAlloc, 1);
    k.map_anon_thp(p, first, cx.cpu);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page_alloc::{AllocContext, ALLOC_WMARK_MIN};
    use crate::mm::vma::{pte_kind, PteKind};

    /// A huge page allocated on node 0 and mapped at page 512 of a new 2048-page VMA.
    fn mapped_thp() -> (Kernel, u32, u32, u32) {
        let mut k =
            crate::testing::kernel_with(64, 0, "[sysctl]\ntransparent_hugepage = \"always\"\n");
        let vma = k.mm.mmap(0, 2048);
        let first = k.thp_fault_range(vma, 700).expect("an empty aligned range");
        assert_eq!(first, k.mm.vmas[vma as usize].start + 512);
        let ac = AllocContext::new(GFP_TRANSHUGE, HPAGE_PMD_ORDER, 0);
        let p = k.get_page(&ac, ALLOC_WMARK_MIN, 0).unwrap();
        k.map_anon_thp(p, first, 0);
        assert_eq!(k.thp_fault_range(vma, 700), None, "its entries are present");
        (k, vma, first, p)
    }

    #[test]
    fn a_huge_page_maps_512_entries_and_munmap_frees_it_whole() {
        let (mut k, vma, first, p) = mapped_thp();
        for i in 0..HPAGE_PMD_NR {
            let e = pte_kind(k.mm.ptes[(first + i) as usize]);
            assert!(matches!(e, PteKind::Present { pfn, .. } if pfn == p + i));
        }
        assert_eq!(k.mem.nodes[0].nr_anon_mapped, 512);
        assert_eq!(
            k.memcg.lruvecs[0].total(crate::mm::lru::LRU_INACTIVE_ANON),
            512
        );
        k.check_large_folios().unwrap();
        let free = k.nr_free_pages_true();
        k.do_vmi_munmap(vma, 0);
        assert_eq!(k.nr_free_pages_true(), free + 512);
        assert_eq!(k.mem.nodes[0].nr_anon_mapped, 0);
        assert!(k.mm.ptes.is_empty());
        k.check_large_folios().unwrap();
        k.check_conservation(0).unwrap();
    }

    #[test]
    fn a_split_leaves_512_order_0_folios_in_the_heads_place_head_first() {
        let (mut k, _, first, p) = mapped_thp();
        let list = k.memcg.lruvecs[0].list(crate::mm::lru::LRU_INACTIVE_ANON);
        k.split_anon_thp_on_lru(0, p);
        assert_eq!(
            k.memcg.lruvecs[0].total(crate::mm::lru::LRU_INACTIVE_ANON),
            512
        );
        // From the tail: the head, then its tails in order.
        let from_tail: Vec<u32> = k.mem.pages.iter(list).collect::<Vec<_>>();
        let mut from_tail = from_tail;
        from_tail.reverse();
        assert_eq!(from_tail, (p..p + 512).collect::<Vec<_>>());
        for i in 0..512 {
            let f = k.mem.pages.fields(p + i);
            assert_eq!((f.owner, f.order), (first + i, 0));
            assert_eq!(
                f.flags & (pg::TAIL | pg::LRU | pg::MAPPED),
                pg::LRU | pg::MAPPED
            );
        }
        assert_eq!(k.stats.events.get(VmEvent::ThpSplitPage), 1);
        k.check_large_folios().unwrap();
        k.check_conservation(0).unwrap();
    }

    /// A THP fault by a task of node 0 whose node has no free page: whether it fails
    /// (`thp_fault_fallback`) or maps a folio, and the folio's node.
    fn thp_fault_on_a_full_node(local_only: bool) -> (bool, Option<u32>, u64) {
        let mut k = crate::testing::kernel_of(&format!(
            "[machine]\nnodes = 2\ncpus_per_node = 1\nmemory_mb_per_node = 64\ndma32_mb = 0\n\
             [sysctl]\ntransparent_hugepage = \"always\"\ntransparent_hugepage_defrag = \"always\"\n\
             [variant]\nthp_fault_local_only = {local_only}\n[workload]\nkind = \"dd\"\ntasks = 1\n"
        ));
        // Node 0 full of held pages: nothing to reclaim or migrate there.
        for zi in k.mem.nodes[0].zones.clone() {
            crate::testing::fill_zone(&mut k, zi, 0, 0);
        }
        let vma = k.mm.mmap(0, 1024);
        let first = k.thp_fault_range(vma, 0).expect("an empty aligned range");
        let mut sim = crate::process::Sim::new(k);
        let done = std::rc::Rc::new(std::cell::Cell::new(None));
        let seen = std::rc::Rc::clone(&done);
        let tid = sim.spawn(
            "t".into(),
            0,
            crate::sched::TaskClass::Workload,
            move |cx| async move {
                seen.set(Some(do_huge_pmd_anonymous_page(&cx, first).await));
            },
        );
        sim.k().sched.wake(tid, 0);
        while !sim.k().sched.queue.is_empty() {
            crate::testing::run_next(&mut sim);
        }
        let k = sim.k();
        let node = match pte_kind(k.mm.ptes[first as usize]) {
            PteKind::Present { pfn, .. } => Some(k.mem.zones[k.page_zone(pfn)].nid),
            _ => None,
        };
        let mapped = done.get().expect("the fault returned");
        (mapped, node, k.stats.events.get(VmEvent::ThpFaultFallback))
    }

    #[test]
    fn a_thp_fault_goes_remote_since_5_4_and_stays_on_its_node_before() {
        // 5.4+: the local attempt fails, the all-node one takes node 1's memory.
        assert_eq!(thp_fault_on_a_full_node(false), (true, Some(1), 0));
        // 4.0-5.3 (seed 004's 4.3-rc1): the local attempt is the only one.
        assert_eq!(thp_fault_on_a_full_node(true), (false, None, 1));
    }

    /// `vma_thp_gfp_mask` for each `defrag` mode, from include/linux/gfp_types.h's masks.
    #[test]
    fn thp_gfp_follows_each_defrag_mode() {
        let light = GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | __GFP_NOWARN;
        let light = light & !__GFP_RECLAIM;
        let cases = [
            (
                ThpDefrag::Always,
                false,
                light | __GFP_DIRECT_RECLAIM | __GFP_NORETRY,
            ),
            (ThpDefrag::Always, true, light | __GFP_DIRECT_RECLAIM),
            (ThpDefrag::Defer, false, light | __GFP_KSWAPD_RECLAIM),
            (ThpDefrag::Defer, true, light | __GFP_KSWAPD_RECLAIM),
            (ThpDefrag::DeferMadvise, false, light | __GFP_KSWAPD_RECLAIM),
            (ThpDefrag::DeferMadvise, true, light | __GFP_DIRECT_RECLAIM),
            (ThpDefrag::Madvise, false, light),
            (ThpDefrag::Madvise, true, light | __GFP_DIRECT_RECLAIM),
            (ThpDefrag::Never, false, light),
            (ThpDefrag::Never, true, light),
        ];
        for (defrag, madvised, want) in cases {
            assert_eq!(
                vma_thp_gfp_mask(defrag, madvised),
                want,
                "{defrag:?} madvised={madvised}: {}",
                show_gfp_flags(vma_thp_gfp_mask(defrag, madvised))
            );
        }
        // No mode wakes kswapd and reclaims directly for an un-madvised VMA but `always`,
        // which gives up after one round.
        assert_ne!(
            vma_thp_gfp_mask(ThpDefrag::Always, false) & __GFP_NORETRY,
            0
        );
    }
}
