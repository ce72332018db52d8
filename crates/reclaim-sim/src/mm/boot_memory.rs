//! The memory a machine at rest starts a run with: the kernel's own, in non-movable
//! pageblocks, and the movable pageblocks other memory breaks up (`[machine] pageblocks`,
//! from /proc/pagetypeinfo; a host's profile brings its own).
//!
//! A machine that has run for a while is not the empty one `free_area_init()` boots: slab,
//! page tables and boot-time allocations sit in pageblocks of MIGRATE_UNMOVABLE and
//! MIGRATE_RECLAIMABLE type, spread over each zone, with free blocks of every order between
//! them. Those pageblocks can never be freed whole, and no compaction can empty them; what
//! is left of a zone's memory for order-9 allocations is the movable pageblocks. A live run
//! that squeezes memory with hugetlb pages takes those movable pageblocks first, so the
//! memory left to the workload is largely these fragmented ones.
//!
//! /proc/pagetypeinfo gives, per zone, how many pageblocks each type has and how many free
//! blocks of each order are on each type's free lists, not where they lie. The model
//! places them:
//! - the non-movable pageblocks spread evenly over the zone, their types interleaved in
//!   proportion (a smooth weighted round robin), a choice: boot allocations lie low and
//!   slab wherever the allocator stole a pageblock, which no counter records;
//! - each type's free blocks inside its own pageblocks, largest first, each where a buddy
//!   allocator would have left it: an aligned block whose buddy holds at least one page in
//!   use, so that no two of them merge and the free lists read exactly the counts given;
//! - every other page of those pageblocks in use by the kernel (`pg::SLAB`) for the whole
//!   run: not on an LRU, never reclaimed, migrated or freed;
//! - MIGRATE_HIGHATOMIC pageblocks held whole: the model has no high-atomic reserve, and an
//!   ordinary allocation cannot reach one (`zone->nr_reserved_highatomic` is kept out of
//!   its watermark check);
//! - free blocks of pageblock order and above on a non-movable type's lists are not placed
//!   (they stay in use): the model's non-movable pageblocks are never wholly free.
//!
//! Movable pageblocks start free, as on a machine just booted, except where the counts
//! name free blocks below pageblock order on the MIGRATE_MOVABLE lists (`free_movable`): on
//! a host, other memory (processes', page cache a drop leaves) breaks movable pageblocks up,
//! and its free fragments are what a live squeeze's hugetlb pool cannot take (this
//! development VM: 150–900 k free pages of its Normal zone in blocks below order 9 after the
//! squeeze, depending on what ran before; 286 k at rest one day, 867 k right after a probe;
//! docs/fidelity/host.md, "Why live compacts" and the section after it). The model places them
//! as it places the non-movable types' free blocks, in movable pageblocks taken in an order
//! that spreads them over the zone (bit-reversed); every other page of those pageblocks is
//! other processes' memory, an anonymous folio on the active anon list that no task owns or
//! maps (`other_memory_onto_lru`): compaction migrates it, reclaim takes it only to swap.
//! On a host some such pageblocks also hold a page no compaction can move (slab, page
//! tables, other kernel memory: 13–71 % of those with a page on an LRU on this development
//! VM, depending on what ran before, /proc/kpageflags); the profile counts them
//! (`fragment_blocks`, `fragment_blocks_unmovable`), and the model holds that share of its
//! fragmented movable pageblocks, spread evenly over them, as the kernel's: their other
//! pages stay in use for the whole run, where a compaction meets them and gives the
//! pageblock up. The profile also counts those whose other memory includes page cache
//! (`fragment_blocks_file`), which a compaction without `__GFP_FS` (readahead's) cannot
//! move but reclaim can free; the model makes that share's other memory clean page cache
//! of files no workload reads (`OTHER_FILES_MAPPING`), on the inactive file list.
//! Departures: each fragmented pageblock's other memory is of one kind (the kernel's, page
//! cache or anon), where a host's mixes them; the fragments are packed into as few
//! pageblocks as the counts allow (the placement's smallest-region-first rule, which can
//! leave a single page between them), so
//! the other memory, and what compaction must move to empty a pageblock, are as small as
//! the counts allow; /proc/pagetypeinfo does not say over how many pageblocks a host spreads
//! them. A host's other memory is a mix (mapped anon, tmpfs, page cache that is mapped or
//! dirty), none of it touched during the run; the model's is unmapped anon, so its
//! migration costs no page-table work (`MIGRATE_UNMAP_REMAP_NS`) and its swap-out no unmap
//! (`swap_out_ns` is charged per unmapped folio). The free memory the squeeze leaves beside
//! the fragments, and how many the squeeze's own compaction removes or adds, are not
//! modelled: the squeeze takes whole blocks only (`mm::hugetlb`).

use crate::machine::ZonePageblocks;
use crate::mm::address_space::OTHER_FILES_MAPPING;
use crate::mm::lru::{Lruvec, LRU_ACTIVE_ANON, LRU_INACTIVE_FILE};
use crate::mm::page::{pg, Pages, NO_OWNER};
use crate::mm::zone::{
    Zone, MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE, NR_PAGE_ORDERS,
    PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER,
};

/// MIGRATE_HIGHATOMIC in [`type_sequence`]'s result: held whole as `MIGRATE_UNMOVABLE`.
const HIGHATOMIC: usize = usize::MAX;

/// Where one zone's held pageblocks (non-movable, and movable ones with fragments) and the
/// free blocks in them lie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneLayout {
    /// Each held pageblock's first pfn and its migratetype (MIGRATE_UNMOVABLE for a
    /// high-atomic one), in pfn order.
    pub blocks: Vec<(u32, usize)>,
    /// The free blocks inside them: first pfn and order.
    pub free: Vec<(u32, u32)>,
    /// The movable pageblocks among `blocks` whose other memory is the kernel's, in pfn
    /// order (`fragment_blocks_unmovable`).
    pub unmovable_fragment_blocks: Vec<u32>,
    /// Those of the others whose other memory is page cache, in pfn order
    /// (`fragment_blocks_file`).
    pub file_fragment_blocks: Vec<u32>,
    /// Pages of free blocks the counts asked for that could not be placed (see the module).
    pub unplaced_pages: u64,
}

/// The migratetypes of `n` pageblocks, `counts[t]` of type `types[t]`, interleaved in
/// proportion: a smooth weighted round robin (each step credits every type its count and
/// picks the most credited, which then pays `n`), so each type is spread over the sequence.
fn type_sequence(counts: &[(usize, u32)]) -> Vec<usize> {
    let n: i64 = counts.iter().map(|&(_, c)| i64::from(c)).sum();
    let mut credit = vec![0i64; counts.len()];
    (0..n)
        .map(|_| {
            for (c, &(_, w)) in credit.iter_mut().zip(counts) {
                *c += i64::from(w);
            }
            let best = (0..counts.len())
                .max_by_key(|&t| (credit[t], -(t as i64)))
                .unwrap();
            credit[best] -= n;
            counts[best].0
        })
        .collect()
}

/// A part of a pageblock not yet given out, of `order` pages; [`Placer`] keeps apart those
/// that may become one free block whole and those that must keep a page in use (their
/// buddy is, or will be, free whole).
#[derive(Clone, Copy)]
struct Region {
    start: u32,
    order: u32,
}

/// Free blocks placed in a type's pageblocks, as a buddy allocator leaves them.
struct Placer {
    /// `stacks[order][whole]`: the regions of that order.
    stacks: Vec<[Vec<Region>; 2]>,
}

impl Placer {
    /// The pageblocks at `starts`, none of which may be free whole.
    fn new(starts: impl Iterator<Item = u32>) -> Placer {
        let mut stacks: Vec<[Vec<Region>; 2]> =
            (0..=PAGEBLOCK_ORDER).map(|_| [vec![], vec![]]).collect();
        // Reversed so that the first pageblock given is given out first.
        let mut whole_blocks: Vec<Region> = starts
            .map(|start| Region {
                start,
                order: PAGEBLOCK_ORDER,
            })
            .collect();
        whole_blocks.reverse();
        stacks[PAGEBLOCK_ORDER as usize][0] = whole_blocks;
        Placer { stacks }
    }

    /// A free block of `order`, from the smallest region that may hold it (one that must
    /// keep a page in use before one that need not, at the same order), split as
    /// `expand()` splits: the half that is not the block goes back as a region, free whole
    /// only if the block's own half is not free whole (else they would merge).
    fn place(&mut self, order: u32) -> Option<u32> {
        let (mut region, whole) = (order..=PAGEBLOCK_ORDER).find_map(|r| {
            // A region that must keep a page in use can hold a block only below its order.
            let kinds: &[usize] = if r > order { &[0, 1] } else { &[1] };
            kinds
                .iter()
                .find_map(|&w| self.stacks[r as usize][w].pop().map(|reg| (reg, w == 1)))
        })?;
        if region.order == order {
            debug_assert!(whole);
            return Some(region.start);
        }
        while region.order > order {
            region.order -= 1;
            let hi = Region {
                start: region.start + (1 << region.order),
                order: region.order,
            };
            let hi_whole = region.order > order;
            self.stacks[hi.order as usize][usize::from(hi_whole)].push(hi);
        }
        Some(region.start)
    }

    /// [`Placer::place`] for each free block below pageblock order that `counts` (by order)
    /// names, largest first, into `layout.free`; those with no room count in
    /// `layout.unplaced_pages`.
    fn place_all(&mut self, counts: &[u64], layout: &mut ZoneLayout) {
        for order in (0..counts.len().min(PAGEBLOCK_ORDER as usize) as u32).rev() {
            for _ in 0..counts[order as usize] {
                match self.place(order) {
                    Some(pfn) => layout.free.push((pfn, order)),
                    None => layout.unplaced_pages += 1 << order,
                }
            }
        }
    }
}

/// Where zone `z`'s non-movable pageblocks (`b`), its movable pageblocks with fragments,
/// and their free blocks lie.
pub fn zone_layout(z: &Zone, b: &ZonePageblocks) -> ZoneLayout {
    let nr_blocks = (z.managed_pages / u64::from(PAGEBLOCK_NR_PAGES)) as u32;
    let types = type_sequence(&[
        (MIGRATE_UNMOVABLE, b.unmovable),
        (MIGRATE_RECLAIMABLE, b.reclaimable),
        (HIGHATOMIC, b.highatomic),
    ]);
    let k = types.len() as u64;
    let blocks: Vec<(u32, usize)> = types
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let idx = ((2 * i as u64 + 1) * u64::from(nr_blocks) / (2 * k)) as u32;
            (z.start_pfn + idx * PAGEBLOCK_NR_PAGES, t)
        })
        .collect();
    let mut layout = ZoneLayout::default();
    for (mt, counts) in [
        (MIGRATE_UNMOVABLE, &b.free_unmovable),
        (MIGRATE_RECLAIMABLE, &b.free_reclaimable),
    ] {
        let mut placer = Placer::new(blocks.iter().filter(|&&(_, t)| t == mt).map(|&(s, _)| s));
        placer.place_all(counts, &mut layout);
        // Free blocks of pageblock order and above would be a pageblock wholly free.
        layout.unplaced_pages += (PAGEBLOCK_ORDER as usize..counts.len().min(NR_PAGE_ORDERS))
            .map(|o| counts[o] << o)
            .sum::<u64>();
    }
    let mut blocks: Vec<(u32, usize)> = blocks
        .into_iter()
        .map(|(s, t)| {
            (
                s,
                if t == HIGHATOMIC {
                    MIGRATE_UNMOVABLE
                } else {
                    t
                },
            )
        })
        .collect();
    let fragmented = place_movable(z, &blocks, &b.free_movable, &mut layout);
    layout.unmovable_fragment_blocks =
        take_share(&fragmented, b.fragment_blocks_unmovable, b.fragment_blocks);
    let others: Vec<u32> = fragmented
        .iter()
        .copied()
        .filter(|s| layout.unmovable_fragment_blocks.binary_search(s).is_err())
        .collect();
    layout.file_fragment_blocks = take_share(
        &others,
        b.fragment_blocks_file,
        b.fragment_blocks - b.fragment_blocks_unmovable,
    );
    blocks.extend(fragmented.into_iter().map(|s| (s, MIGRATE_MOVABLE)));
    blocks.sort_unstable();
    layout.free.sort_unstable();
    layout.blocks = blocks;
    layout
}

/// The movable free blocks below pageblock order (`counts`, by order) placed in movable
/// pageblocks — those of zone `z` not among the non-movable `taken` — taken in an order
/// that spreads them over the zone ([`spread`]); their free blocks go to `layout`. Returns
/// the pageblocks used, whose other pages the model holds.
fn place_movable(
    z: &Zone,
    taken: &[(u32, usize)],
    counts: &[u64],
    layout: &mut ZoneLayout,
) -> Vec<u32> {
    if counts
        .iter()
        .take(PAGEBLOCK_ORDER as usize)
        .all(|&c| c == 0)
    {
        return vec![];
    }
    let nr_blocks = (z.managed_pages / u64::from(PAGEBLOCK_NR_PAGES)) as u32;
    let movable: Vec<u32> = (0..nr_blocks)
        .map(|i| z.start_pfn + i * PAGEBLOCK_NR_PAGES)
        .filter(|s| taken.binary_search_by_key(s, |&(t, _)| t).is_err())
        .collect();
    let mut placer = Placer::new(spread(movable.len()).into_iter().map(|i| movable[i]));
    placer.place_all(counts, layout);
    let mut untouched: Vec<u32> = placer.stacks[PAGEBLOCK_ORDER as usize][0]
        .iter()
        .map(|r| r.start)
        .collect();
    untouched.sort_unstable();
    movable
        .into_iter()
        .filter(|s| untouched.binary_search(s).is_err())
        .collect()
}

/// `num` in every `den` of `items` (none if `den` is 0), spread evenly over them: item `i`
/// is taken when `⌊(i + 1)·num/den⌋` steps past `⌊i·num/den⌋`.
fn take_share(items: &[u32], num: u32, den: u32) -> Vec<u32> {
    if den == 0 {
        return vec![];
    }
    let (num, den) = (u64::from(num), u64::from(den));
    items
        .iter()
        .enumerate()
        .filter(|&(i, _)| {
            let i = i as u64;
            (i + 1) * num / den != i * num / den
        })
        .map(|(_, &s)| s)
        .collect()
}

/// `0 .. n` in bit-reversed order (of the next power of two, those ≥ `n` left out): each
/// prefix spreads evenly over the range (0, n/2, n/4, 3n/4, …).
fn spread(n: usize) -> Vec<usize> {
    if n <= 1 {
        return (0..n).collect();
    }
    let bits = usize::BITS - (n - 1).leading_zeros();
    (0..1usize << bits)
        .map(|i| i.reverse_bits() >> (usize::BITS - bits))
        .filter(|&i| i < n)
        .collect()
}

/// Boot zone `z` with `layout`: its held pageblocks typed, their free blocks freed and every
/// other page of them the kernel's (`pg::SLAB`; [`other_memory_onto_lru`] then takes the
/// movable ones' back), the rest of the zone freed as `free_area_init()` frees it. Returns
/// the pages held.
pub fn boot_zone(z: &mut Zone, pages: &mut Pages, layout: &ZoneLayout) -> u64 {
    for &(start, mt) in &layout.blocks {
        z.set_pageblock_migratetype(start, mt);
        for p in start..start + PAGEBLOCK_NR_PAGES {
            pages.fields_mut(p).flags = pg::SLAB;
        }
    }
    let mut kernel = layout.blocks.len() as u64 * u64::from(PAGEBLOCK_NR_PAGES);
    for &(start, order) in &layout.free {
        for p in start..start + (1 << order) {
            pages.fields_mut(p).flags = 0;
        }
        kernel -= 1 << order;
    }
    // The movable pageblocks, in the largest aligned blocks they make.
    let mut pfn = z.start_pfn;
    let end = z.end_pfn();
    let reserved = |p: u32| layout.blocks.binary_search_by_key(&p, |&(s, _)| s).is_ok();
    while pfn < end {
        let order = if pfn.is_multiple_of(2 * PAGEBLOCK_NR_PAGES)
            && pfn + 2 * PAGEBLOCK_NR_PAGES <= end
            && !reserved(pfn)
            && !reserved(pfn + PAGEBLOCK_NR_PAGES)
        {
            PAGEBLOCK_ORDER + 1
        } else {
            PAGEBLOCK_ORDER
        };
        if !reserved(pfn) {
            debug_assert_eq!(z.get_pageblock_migratetype(pfn), MIGRATE_MOVABLE);
            z.free_one_page(pages, pfn, order);
        }
        pfn += 1 << order;
    }
    for &(start, order) in &layout.free {
        z.free_one_page(pages, start, order);
    }
    kernel
}

/// The other memory of the fragmented movable pageblocks, once booted: how many pages
/// went onto the LRU as anon and as page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtherMemory {
    pub anon: u64,
    pub file: u64,
}

/// The pages of the movable pageblocks `layout` holds in zone `z` that are not free, but
/// for the pageblocks whose other memory is the kernel's: on a host, other processes'
/// memory and the page cache of files no workload reads. In a page-cache pageblock each is
/// a clean folio of [`OTHER_FILES_MAPPING`] (a file with no index: reclaim frees it without
/// a shadow) at the head of `lruvec`'s inactive file list; elsewhere an anonymous folio that
/// no page table maps and no task owns at the head of its active anon list, which
/// compaction can migrate and reclaim can take only to swap, as a host's idle processes'
/// memory. Run after [`boot_zone`], which held them as the kernel's.
pub fn other_memory_onto_lru(
    z: &Zone,
    pages: &mut Pages,
    layout: &ZoneLayout,
    lruvec: &mut Lruvec,
) -> OtherMemory {
    let mut n = OtherMemory::default();
    for &(start, mt) in &layout.blocks {
        if mt != MIGRATE_MOVABLE
            || layout
                .unmovable_fragment_blocks
                .binary_search(&start)
                .is_ok()
        {
            continue;
        }
        let file = layout.file_fragment_blocks.binary_search(&start).is_ok();
        for p in start..start + PAGEBLOCK_NR_PAGES {
            if pages.flags(p) != pg::SLAB {
                continue;
            }
            let f = pages.fields_mut(p);
            if file {
                f.flags = 0;
                f.owner = OTHER_FILES_MAPPING;
                lruvec.add_folio(pages, p, LRU_INACTIVE_FILE, z.zone_idx);
                n.file += 1;
            } else {
                f.flags = pg::ANON | pg::ACTIVE;
                f.owner = NO_OWNER;
                lruvec.add_folio(pages, p, LRU_ACTIVE_ANON, z.zone_idx);
                n.anon += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::lru::NR_LRU_LISTS;
    use crate::mm::zone::{free_lists, MIGRATE_TYPES, NR_FREE_LISTS, ZONE_NORMAL};

    fn zone(nr_pages: u64) -> (Zone, Pages) {
        let pages = Pages::new(nr_pages as u32, NR_FREE_LISTS as u32);
        let lists = free_lists(&pages, 0);
        (Zone::new(ZONE_NORMAL, 0, 0, nr_pages, lists), pages)
    }

    #[test]
    fn types_interleave_in_proportion() {
        let seq = type_sequence(&[(0, 2), (2, 4), (9, 2)]);
        assert_eq!(seq.len(), 8);
        assert_eq!(seq.iter().filter(|&&t| t == 2).count(), 4);
        // Never two of the minority types in a row.
        assert!(
            seq.windows(2).all(|w| !(w[0] == w[1] && w[0] != 2)),
            "{seq:?}"
        );
        assert!(type_sequence(&[(0, 0), (2, 0)]).is_empty());
    }

    /// The free lists of a booted zone read back exactly the counts asked for, the
    /// pageblock types count up, and every page is free or the kernel's.
    #[test]
    fn the_free_lists_read_back_the_counts() {
        let (mut z, mut pages) = zone(64 * 512);
        let b = ZonePageblocks {
            zone: "Normal".into(),
            unmovable: 5,
            reclaimable: 7,
            highatomic: 2,
            free_unmovable: vec![109, 98, 33, 17, 8, 4, 2, 1, 1, 1],
            free_reclaimable: vec![527, 203, 60, 14, 3, 1, 0, 1],
            ..Default::default()
        };
        let layout = zone_layout(&z, &b);
        // The one order-9 unmovable block is not placed (a pageblock wholly free).
        assert_eq!(layout.unplaced_pages, 512);
        let kernel = boot_zone(&mut z, &mut pages, &layout);
        for (mt, want) in [
            (MIGRATE_UNMOVABLE, &b.free_unmovable),
            (MIGRATE_RECLAIMABLE, &b.free_reclaimable),
        ] {
            for (o, &n) in want.iter().enumerate().take(PAGEBLOCK_ORDER as usize) {
                assert_eq!(z.nr_free_mt[mt][o], n, "type {mt} order {o}");
            }
        }
        assert_eq!(z.nr_pageblock_mt[MIGRATE_UNMOVABLE], 5 + 2);
        assert_eq!(z.nr_pageblock_mt[MIGRATE_RECLAIMABLE], 7);
        assert_eq!(z.nr_pageblock_mt[MIGRATE_MOVABLE], 64 - 14);
        // The movable pageblocks are all free, in blocks of order 9 and 10.
        let movable_free: u64 = (0..NR_PAGE_ORDERS)
            .map(|o| z.nr_free_mt[MIGRATE_MOVABLE][o] << o)
            .sum();
        assert_eq!(movable_free, 50 * 512);
        assert!((0..PAGEBLOCK_ORDER as usize).all(|o| z.nr_free_mt[MIGRATE_MOVABLE][o] == 0));
        let slab = (0..64 * 512)
            .filter(|&p| pages.flags(p) & pg::SLAB != 0)
            .count() as u64;
        assert_eq!(slab, kernel);
        let free: u64 = (0..MIGRATE_TYPES)
            .flat_map(|mt| (0..NR_PAGE_ORDERS).map(move |o| (mt, o)))
            .map(|(mt, o)| z.nr_free_mt[mt][o] << o)
            .sum();
        assert_eq!(free + kernel, 64 * 512);
        assert_eq!(free, z.nr_free_pages);
        // Spread: no two non-movable pageblocks side by side here (14 of 64).
        let starts: Vec<u32> = layout.blocks.iter().map(|&(s, _)| s).collect();
        assert!(
            starts.windows(2).all(|w| w[1] - w[0] >= 4 * 512),
            "{starts:?}"
        );
    }

    /// A pageblock can give out all but one of its pages as free blocks that do not merge.
    #[test]
    fn a_pageblock_holds_free_blocks_down_to_one_page_in_use() {
        let (z, _) = zone(4 * 512);
        let b = ZonePageblocks {
            zone: "Normal".into(),
            unmovable: 1,
            // 256 + 128 + … + 1 = 511: one pageblock's worth but a page.
            free_unmovable: vec![1; 9],
            ..Default::default()
        };
        let layout = zone_layout(&z, &b);
        assert_eq!(layout.unplaced_pages, 0);
        assert_eq!(layout.free.len(), 9);
        // A tenth order-0 block has no room left.
        let more = ZonePageblocks {
            free_unmovable: vec![2, 1, 1, 1, 1, 1, 1, 1, 1],
            ..b
        };
        assert_eq!(zone_layout(&z, &more).unplaced_pages, 1);
    }

    /// Movable fragments lie in movable pageblocks spread over the zone, read back exactly
    /// on the Movable lists; the rest of those pageblocks is held, every other movable
    /// pageblock free whole.
    #[test]
    fn movable_fragments_break_up_spread_pageblocks() {
        let (mut z, mut pages) = zone(64 * 512);
        let b = ZonePageblocks {
            zone: "Normal".into(),
            unmovable: 4,
            free_unmovable: vec![10, 5],
            // Four order-8 blocks need four pageblocks, the small ones fit beside them.
            free_movable: vec![30, 9, 4, 2, 1, 0, 0, 3, 4, 7, 2],
            ..Default::default()
        };
        let layout = zone_layout(&z, &b);
        assert_eq!(layout.unplaced_pages, 0);
        let held: Vec<u32> = layout
            .blocks
            .iter()
            .filter(|&&(_, t)| t == MIGRATE_MOVABLE)
            .map(|&(s, _)| s)
            .collect();
        assert_eq!(held.len(), 4, "{held:?}");
        assert!(held.windows(2).all(|w| w[1] - w[0] >= 8 * 512), "{held:?}");
        let kernel = boot_zone(&mut z, &mut pages, &layout);
        for (o, &n) in b
            .free_movable
            .iter()
            .enumerate()
            .take(PAGEBLOCK_ORDER as usize)
        {
            assert_eq!(z.nr_free_mt[MIGRATE_MOVABLE][o], n, "order {o}");
        }
        assert_eq!(z.nr_pageblock_mt[MIGRATE_MOVABLE], 60);
        // 4 unmovable and 4 movable pageblocks held, less the fragments in them.
        let fragments: u64 = (0..PAGEBLOCK_ORDER as usize)
            .map(|o| {
                (b.free_movable[o] << o) + (b.free_unmovable.get(o).copied().unwrap_or(0) << o)
            })
            .sum();
        assert_eq!(kernel, 8 * 512 - fragments);
        assert_eq!(z.nr_free_pages + kernel, 64 * 512);
        // The 56 pageblocks left whole are free in blocks of order 9 and 10.
        let whole: u64 = (PAGEBLOCK_ORDER as usize..NR_PAGE_ORDERS)
            .map(|o| z.nr_free_mt[MIGRATE_MOVABLE][o] << o)
            .sum();
        assert_eq!(whole, 56 * 512);
    }

    #[test]
    fn a_measured_share_of_fragmented_pageblocks_holds_kernel_memory() {
        // ⌊(i + 1)·5/7⌋ for i = 0 … 6: 0, 1, 2, 2, 3, 4, 5: taken where it steps.
        assert_eq!(
            take_share(&[10, 11, 12, 13, 14, 15, 16], 5, 7),
            [11, 12, 14, 15, 16]
        );
        assert_eq!(take_share(&[1, 2, 3], 0, 4), Vec::<u32>::new());
        assert_eq!(take_share(&[1, 2, 3], 4, 4), [1, 2, 3]);
        assert_eq!(take_share(&[1, 2, 3], 0, 0), Vec::<u32>::new());
        // 16 movable pageblocks broken up by one order-8 fragment each, 3 in 4 of them
        // holding a kernel page as well: 12 keep their other pages as the kernel's, the
        // other 4's go onto the active anon list.
        let nr_pages = 64 * 512;
        let mut pages = Pages::new(nr_pages, (NR_FREE_LISTS + NR_LRU_LISTS) as u32);
        let mut z = Zone::new(ZONE_NORMAL, 0, 0, nr_pages.into(), free_lists(&pages, 0));
        let lists = std::array::from_fn(|l| pages.list((NR_FREE_LISTS + l) as u32));
        let mut lruvec = Lruvec::new(0, 0, lists);
        let b = ZonePageblocks {
            zone: "Normal".into(),
            free_movable: vec![0, 0, 0, 0, 0, 0, 0, 0, 16],
            fragment_blocks: 400,
            fragment_blocks_unmovable: 300,
            ..Default::default()
        };
        let layout = zone_layout(&z, &b);
        assert_eq!(layout.blocks.len(), 16);
        assert_eq!(layout.unmovable_fragment_blocks.len(), 12);
        assert!(layout.unmovable_fragment_blocks.is_sorted());
        let kernel = boot_zone(&mut z, &mut pages, &layout);
        assert_eq!(kernel, 16 * 256);
        let other = other_memory_onto_lru(&z, &mut pages, &layout, &mut lruvec);
        assert_eq!(
            other,
            OtherMemory {
                anon: 4 * 256,
                file: 0
            }
        );
        for &s in &layout.unmovable_fragment_blocks {
            let held = (s..s + PAGEBLOCK_NR_PAGES).filter(|&p| pages.flags(p) == pg::SLAB);
            assert_eq!(held.count(), 256, "pageblock {s}");
        }
    }

    #[test]
    fn spread_takes_every_index_once_halving_the_gaps() {
        assert_eq!(spread(8), vec![0, 4, 2, 6, 1, 5, 3, 7]);
        assert_eq!(spread(5), vec![0, 4, 2, 1, 3]);
        let mut all = spread(1000);
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
        assert!(spread(0).is_empty());
    }
}
