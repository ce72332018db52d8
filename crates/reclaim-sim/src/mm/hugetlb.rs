//! Reserving hugetlb pages, as a live run's memory squeeze does (`[memory] mode = "squeeze"`:
//! `vm.nr_hugepages` raised until about `free_mb` is left). The pages are taken at boot and
//! never used or freed; the zones keep their managed size, so the watermarks are those of the
//! whole machine, as on the live kernel, while free memory starts at `free_mb`.

use crate::kernel::Kernel;

/// The order of a 2 MiB huge page (`HUGETLB_PAGE_ORDER` on x86-64).
pub const HUGETLB_PAGE_ORDER: u32 = 9;

/// `set_max_huge_pages()` (mm/hugetlb.c, 6.x) for as many pages as leave `free_pages` free:
/// `alloc_pool_huge_folio()` takes one page at a time from the nodes in turn
/// (`for_each_node_mask_to_alloc`), each from its node's zones highest first (the pool's
/// `htlb_alloc_mask` is GFP_HIGHUSER, with `__GFP_THISNODE`). Returns the pages reserved.
///
/// Departure: the kernel checks each allocation against the zone's watermarks and can
/// reclaim or compact for it; at boot, with all memory free and `free_pages` above the
/// watermarks (a live squeeze keeps at least its margin free), the blocks are simply taken.
pub fn hugetlb_reserve(k: &mut Kernel, free_pages: u64) -> u64 {
    let per_page = 1u64 << HUGETLB_PAGE_ORDER;
    let want = k.nr_free_pages().saturating_sub(free_pages) / per_page;
    let mut got = 0;
    let nr_nodes = k.nodes.len();
    let mut exhausted = vec![false; nr_nodes];
    let mut nid = 0;
    while got < want && !exhausted.iter().all(|&e| e) {
        if !exhausted[nid] {
            let zones = k.nodes[nid].zones.clone();
            let taken = zones.iter().rev().any(|&zi| {
                k.zones[zi]
                    .rmqueue(&mut k.pages, HUGETLB_PAGE_ORDER)
                    .is_some()
            });
            if taken {
                got += 1;
            } else {
                exhausted[nid] = true;
            }
        }
        nid = (nid + 1) % nr_nodes;
    }
    k.hugetlb_pages += got * per_page;
    got
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{kernel, zone_of};

    #[test]
    fn a_squeeze_leaves_the_free_memory_asked_for_and_the_watermarks_as_they_were() {
        let mut k = kernel(1024, 256);
        let marks: Vec<[u64; 4]> = k.zones.iter().map(|z| z.watermark).collect();
        let free_pages = 300 * 256;
        let got = hugetlb_reserve(&mut k, free_pages);
        let per_page = 1 << HUGETLB_PAGE_ORDER;
        assert_eq!(k.hugetlb_pages, got * per_page);
        let free = k.nr_free_pages();
        assert!(free >= free_pages && free < free_pages + per_page, "{free}");
        assert_eq!(
            marks,
            k.zones.iter().map(|z| z.watermark).collect::<Vec<_>>()
        );
        // The highest zone is taken first: Normal is emptied before DMA32 is touched.
        let dma32 = zone_of(&k, crate::mm::zone::ZONE_DMA32);
        assert_eq!(k.zones[dma32].nr_free_pages, 256 * 256, "DMA32 untouched");
    }

    #[test]
    fn the_nodes_give_their_pages_in_turn() {
        let text = "[machine]\nnodes = 2\nmemory_mb_per_node = 256\n[workload]\nkind = \"dd\"\ntasks = 1\n";
        let s = crate::Scenario::parse(text, "t.toml", &[]).unwrap();
        let mut k = Kernel::new(&s.machine, &s.effective_sysctl(), &s.costs, &s.variant, 1);
        hugetlb_reserve(&mut k, 256 * 256);
        let free: Vec<u64> = k.zones.iter().map(|z| z.nr_free_pages).collect();
        assert_eq!(free, vec![128 * 256, 128 * 256], "each node keeps half");
    }
}
