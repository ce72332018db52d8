//! The hugetlb pool. Two ways in:
//!
//! - Reserving pages at setup, as a live run's memory squeeze does (`[memory] mode =
//!   "squeeze"`: `vm.nr_hugepages` raised until about `free_mb` is available). The pages are
//!   taken at boot and never used or freed; the zones keep their managed size, so the
//!   watermarks are those of the whole machine, as on the live kernel, while available
//!   memory starts at `free_mb` ([`hugetlb_reserve`]).
//! - A task writing `nr_hugepages` while the machine runs (`set_max_huge_pages`, mm/hugetlb.c
//!   6.x): one huge page at a time through the page allocator at order 9, slow path, reclaim
//!   and all, each node in turn ([`HugetlbPool`]). This is how stress-highalloc asks for
//!   huge pages on the live machine.

use std::cell::RefCell;

use crate::kernel::Kernel;
use crate::mm::gfp::{
    Gfp, __GFP_COMP, __GFP_NOWARN, __GFP_RETRY_MAYFAIL, __GFP_THISNODE, GFP_HIGHUSER_MOVABLE,
};
use crate::mm::page_alloc::alloc_pages;
use crate::mm::zone::{MIGRATE_MOVABLE, WMARK_HIGH, WMARK_LOW, ZONE_NORMAL};
use crate::process::{cond_resched, Cx};

/// The order of a 2 MiB huge page (`HUGETLB_PAGE_ORDER` on x86-64).
pub const HUGETLB_PAGE_ORDER: u32 = 9;

/// `set_max_huge_pages()` (mm/hugetlb.c, 6.x) for as many pages as leave `available_pages`
/// available, as the live squeeze reads `MemAvailable`: with no page cache yet, that is the
/// free pages less `totalreserve_pages` (`calculate_totalreserve_pages()`: each zone's high
/// watermark and largest lowmem reserve). `alloc_pool_huge_folio()` takes one page at a time
/// from the nodes in turn (`for_each_node_mask_to_alloc`), each from its node's zones highest
/// first (the pool's `htlb_alloc_mask` is GFP_HIGHUSER, so ZONE_NORMAL is the highest zone
/// index, with `__GFP_THISNODE`), where the allocator's fast path would: the zone stays above
/// its low watermark plus its lowmem reserve (`zone_watermark_ok()`). Returns the huge pages
/// reserved.
///
/// Departure: the kernel would enter the slow path (direct reclaim, compaction) for a node
/// whose zones all sit at their low watermark, down to min; with nothing to reclaim at boot,
/// the model stops there instead.
pub fn hugetlb_reserve(k: &mut Kernel, available_pages: u64) -> u64 {
    let per_page = 1u64 << HUGETLB_PAGE_ORDER;
    let target = available_pages + totalreserve_pages(k);
    let want = k.nr_free_pages().saturating_sub(target) / per_page;
    let mut got = 0;
    let nr_nodes = k.mem.nodes.len();
    let mut exhausted = vec![false; nr_nodes];
    let mut nid = 0;
    while got < want && !exhausted.iter().all(|&e| e) {
        if !exhausted[nid] {
            let zones = k.mem.nodes[nid].zones.clone();
            let zone = zones.iter().rev().copied().find(|&zi| {
                let z = &k.mem.zones[zi];
                z.zone_watermark_ok(HUGETLB_PAGE_ORDER, z.watermark[WMARK_LOW], ZONE_NORMAL)
            });
            match zone.and_then(|zi| k.mem.zones[zi].rmqueue(&mut k.mem.pages, HUGETLB_PAGE_ORDER))
            {
                Some(p) => {
                    k.prep_compound_folio(p, HUGETLB_PAGE_ORDER);
                    got += 1;
                }
                None => exhausted[nid] = true,
            }
        }
        nid = (nid + 1) % nr_nodes;
    }
    k.mem.hugetlb_pages += got * per_page;
    got
}

/// `htlb_alloc_mask()` of a 2 MiB hstate on x86-64 (`hugepage_movable_supported`: its pages
/// can migrate) with `__GFP_THISNODE`, as `alloc_pool_huge_folio` asks.
pub const HTLB_ALLOC_GFP: Gfp = GFP_HIGHUSER_MOVABLE | __GFP_THISNODE;

/// The runtime part of the pool (`struct hstate`, one size): the huge pages allocated while
/// the machine runs, the node to try next (`next_nid_to_alloc`) and the nodes on which the
/// last hard try failed (`node_alloc_noretry`).
#[derive(Debug, Default)]
pub struct HugetlbPool {
    /// First pfns of the pool's huge pages, oldest first.
    pub pages: Vec<u32>,
    pub next_nid_to_alloc: u32,
    pub node_alloc_noretry: Vec<bool>,
    /// HTLB_BUDDY_PGALLOC, HTLB_BUDDY_PGALLOC_FAIL: buddy allocations tried for the pool.
    pub htlb_buddy_alloc_success: u64,
    pub htlb_buddy_alloc_fail: u64,
}

/// `alloc_buddy_hugetlb_folio()` (6.x) on node `nid`: `__GFP_COMP | __GFP_NOWARN`, and
/// `__GFP_RETRY_MAYFAIL` if `try_hard` (unless the last hard try on this node failed with no
/// success since: the pool's `node_alloc_noretry`, which the caller keeps, so a loop of
/// allocations does not reclaim hard again and again on a node that has nothing to give).
/// Returns the huge page's first pfn.
pub async fn alloc_buddy_hugetlb_folio(cx: &Cx, gfp: Gfp, nid: u32, try_hard: bool) -> Option<u32> {
    let mut gfp = gfp | __GFP_COMP | __GFP_NOWARN;
    if try_hard {
        gfp |= __GFP_RETRY_MAYFAIL;
    }
    alloc_pages(cx, gfp, HUGETLB_PAGE_ORDER, nid).await
}

impl HugetlbPool {
    /// `alloc_pool_huge_folio()`: one huge page from the nodes in turn
    /// (`for_each_node_mask_to_alloc`, starting at `next_nid_to_alloc`), the first node
    /// that gives one; counts HTLB_BUDDY_PGALLOC or HTLB_BUDDY_PGALLOC_FAIL per try. False
    /// if no node could. (The kernel's two vm events are kept in the pool, not in
    /// /proc/vmstat's model, whose lines would change for every run.) The pool is borrowed
    /// around each allocation, never across it, so that others read it meanwhile.
    pub async fn alloc_pool_huge_folio(pool: &RefCell<HugetlbPool>, cx: &Cx) -> bool {
        let nr_nodes = cx.k().mem.nodes.len() as u32;
        pool.borrow_mut()
            .node_alloc_noretry
            .resize(nr_nodes as usize, false);
        for _ in 0..nr_nodes {
            let (nid, try_hard) = {
                let mut p = pool.borrow_mut();
                let nid = p.next_nid_to_alloc % nr_nodes;
                p.next_nid_to_alloc = (nid + 1) % nr_nodes;
                (nid, !p.node_alloc_noretry[nid as usize])
            };
            let page = alloc_buddy_hugetlb_folio(cx, HTLB_ALLOC_GFP, nid, try_hard).await;
            let mut p = pool.borrow_mut();
            // A hard try that failed, or an easy one that succeeded, changes the node's mark.
            if page.is_none() == try_hard {
                p.node_alloc_noretry[nid as usize] = try_hard;
            }
            if let Some(page) = page {
                cx.k().mem.hugetlb_pages += 1 << HUGETLB_PAGE_ORDER;
                p.htlb_buddy_alloc_success += 1;
                p.pages.push(page);
                return true;
            }
            p.htlb_buddy_alloc_fail += 1;
        }
        false
    }

    /// `set_max_huge_pages()` raising the pool to `count` huge pages, as a write of
    /// `nr_hugepages` does: allocate one at a time until there are `count` or an allocation
    /// fails, with `cond_resched()` between them. Returns the pool's size after. (Lowering
    /// it frees the newest pages: [`HugetlbPool::shrink`].)
    pub async fn set_max_huge_pages(pool: &RefCell<HugetlbPool>, cx: &Cx, count: u64) -> u64 {
        while (pool.borrow().pages.len() as u64) < count {
            if !HugetlbPool::alloc_pool_huge_folio(pool, cx).await {
                break;
            }
            cond_resched(cx).await;
        }
        let n = pool.borrow().pages.len() as u64;
        n
    }

    /// `set_max_huge_pages()` lowering the pool to `count`: each surplus huge page is freed
    /// (`update_and_free_hugetlb_folio` → `__free_pages`, order 9), the newest first: to
    /// the freeing CPU's per-CPU list with 6.x's high-order lists (`mm::pcp`), else to its
    /// zone's buddy lists under zone->lock. (The squeeze's reservation at setup takes whole
    /// blocks off the buddy lists directly, [`hugetlb_reserve`], where the kernel's would
    /// refill per-CPU lists and leave a block parked on each CPU that reserved.)
    pub fn shrink(&mut self, k: &mut Kernel, count: u64, cpu: u32) {
        while self.pages.len() as u64 > count {
            let p = self.pages.pop().expect("a page above count");
            k.free_pages(p, HUGETLB_PAGE_ORDER, MIGRATE_MOVABLE, cpu);
            k.mem.hugetlb_pages -= 1 << HUGETLB_PAGE_ORDER;
        }
    }
}

/// `calculate_totalreserve_pages()`: per zone its largest lowmem reserve plus its high
/// watermark, at most its managed pages.
pub fn totalreserve_pages(k: &Kernel) -> u64 {
    k.mem
        .zones
        .iter()
        .map(|z| {
            let reserve = z.lowmem_reserve.iter().copied().max().unwrap_or(0);
            (reserve + z.watermark[WMARK_HIGH]).min(z.managed_pages)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::testing::{kernel, kernel_of, take_pages, zone_of};

    #[test]
    fn a_squeeze_leaves_the_memory_asked_for_available_and_the_watermarks_as_they_were() {
        let mut k = kernel(1024, 256);
        let marks: Vec<[u64; 4]> = k.mem.zones.iter().map(|z| z.watermark).collect();
        let available = 300 * 256;
        let got = hugetlb_reserve(&mut k, available);
        let per_page = 1 << HUGETLB_PAGE_ORDER;
        assert_eq!(k.mem.hugetlb_pages, got * per_page);
        let free = k.nr_free_pages() - totalreserve_pages(&k);
        assert!(free >= available && free < available + per_page, "{free}");
        assert_eq!(
            marks,
            k.mem.zones.iter().map(|z| z.watermark).collect::<Vec<_>>()
        );
        // The highest zone is taken first: DMA32 keeps everything while Normal can give.
        let dma32 = zone_of(&k, crate::mm::zone::ZONE_DMA32);
        assert_eq!(
            k.mem.zones[dma32].nr_free_pages,
            256 * 256,
            "DMA32 untouched"
        );
    }

    #[test]
    fn no_zone_is_taken_below_its_low_watermark_and_reserve() {
        let mut k = kernel(1024, 256);
        hugetlb_reserve(&mut k, 0);
        for z in &k.mem.zones {
            let floor = z.watermark[WMARK_LOW] + z.lowmem_reserve[ZONE_NORMAL];
            assert!(
                z.nr_free_pages > floor,
                "zone {} at {}",
                z.zone_idx,
                z.nr_free_pages
            );
            assert!(
                z.nr_free_pages <= floor + 2 * 512,
                "zone {} kept too much",
                z.zone_idx
            );
        }
    }

    /// Run a task that sets the pool of `pool` to `count` huge pages on `k`, until it is
    /// done; returns the kernel and the pool.
    fn write_nr_hugepages(k: Kernel, pool: HugetlbPool, count: u64) -> (Kernel, HugetlbPool) {
        use crate::process::Sim;
        use crate::sched::TaskClass;
        use std::rc::Rc;
        let mut sim = Sim::new(k);
        let done = Rc::new(RefCell::new(None));
        let out = Rc::clone(&done);
        let id = sim.spawn("sh".into(), 0, TaskClass::Workload, move |cx| async move {
            let pool = RefCell::new(pool);
            HugetlbPool::set_max_huge_pages(&pool, &cx, count).await;
            *out.borrow_mut() = Some(pool.into_inner());
        });
        sim.k().sched.wake(id, 0);
        for _ in 0..1_000_000 {
            if done.borrow().is_some() {
                break;
            }
            crate::testing::run_next(&mut sim);
        }
        let pool = done.borrow_mut().take().expect("the write finished");
        (sim.into_kernel(), pool)
    }

    #[test]
    fn a_write_of_nr_hugepages_allocates_huge_pages_until_the_min_watermark() {
        let k = kernel(64, 0);
        let (mut k, mut pool) = write_nr_hugepages(k, HugetlbPool::default(), 40);
        let got = pool.pages.len() as u64;
        assert!(got > 0 && got < 32, "{got} of 32 possible");
        assert_eq!(k.mem.hugetlb_pages, got * 512);
        assert!(pool.pages.iter().all(|&p| p % 512 == 0));
        let mut sorted = pool.pages.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len() as u64, got, "distinct pages");
        assert_eq!(pool.htlb_buddy_alloc_success, got);
        assert_eq!(pool.htlb_buddy_alloc_fail, 1, "the last try failed");
        assert_eq!(pool.node_alloc_noretry, vec![true]);
        // The failing try met the min watermark at order 9 (free − 511 ≤ min).
        let z = &k.mem.zones[0];
        assert!(z.nr_free_pages < z.wmark_pages(crate::mm::zone::WMARK_MIN) + 512);
        assert_eq!(k.check_conservation(0), Ok(()));
        assert_eq!(k.check_lists(), Ok(()));
        // Lowering the pool gives every page back, merged into max-order blocks again.
        pool.shrink(&mut k, 0, 0);
        k.drain_all_pages();
        assert_eq!(k.mem.hugetlb_pages, 0);
        let z = &k.mem.zones[0];
        assert_eq!(z.nr_free_pages, z.managed_pages);
        assert_eq!(z.nr_free[10], z.managed_pages / 1024);
        assert_eq!(k.check_lists(), Ok(()));
    }

    #[test]
    fn a_fragmented_zone_gives_no_huge_page_however_much_is_free() {
        let mut k = kernel(64, 0);
        // Take every page, then free all but the first of each pageblock: 16320 pages free,
        // no free block of order 9.
        let n = k.mem.zones[0].managed_pages as u32;
        let all = take_pages(&mut k, 0, n);
        for &p in all.iter().filter(|&&p| p % 512 != 0) {
            k.mem.zones[0].free_one_page(&mut k.mem.pages, p, 0);
        }
        assert_eq!(k.mem.zones[0].nr_free[9] + k.mem.zones[0].nr_free[10], 0);
        let free = k.mem.zones[0].nr_free_pages;
        let (k, pool) = write_nr_hugepages(k, HugetlbPool::default(), 1);
        assert!(pool.pages.is_empty());
        assert_eq!(pool.htlb_buddy_alloc_fail, 1);
        assert_eq!(
            pool.node_alloc_noretry,
            vec![true],
            "the next try will not try hard"
        );
        assert_eq!(k.mem.zones[0].nr_free_pages + k.percpu.pcp.total(), free);
        assert_eq!(k.check_lists(), Ok(()));
    }

    #[test]
    fn the_nodes_give_their_pages_in_turn() {
        let text = "[machine]\nnodes = 2\nmemory_mb_per_node = 256\n[workload]\nkind = \"dd\"\ntasks = 1\n";
        let mut k = kernel_of(text);
        let reserve = totalreserve_pages(&k);
        hugetlb_reserve(&mut k, 256 * 256 - reserve);
        let free: Vec<u64> = k.mem.zones.iter().map(|z| z.nr_free_pages).collect();
        assert_eq!(free, vec![128 * 256, 128 * 256], "each node keeps half");
    }
}
