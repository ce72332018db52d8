//! Reserving hugetlb pages, as a live run's memory squeeze does (`[memory] mode = "squeeze"`:
//! `vm.nr_hugepages` raised until about `free_mb` is available). The pages are taken at boot
//! and never used or freed; the zones keep their managed size, so the watermarks are those of
//! the whole machine, as on the live kernel, while available memory starts at `free_mb`.

use crate::kernel::Kernel;
use crate::mm::zone::{WMARK_HIGH, WMARK_LOW, ZONE_NORMAL};

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
                Some(_) => got += 1,
                None => exhausted[nid] = true,
            }
        }
        nid = (nid + 1) % nr_nodes;
    }
    k.mem.hugetlb_pages += got * per_page;
    got
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
    use crate::testing::{kernel, kernel_of, zone_of};

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
