//! `struct address_space` (include/linux/fs.h) of a file of known size: its page-cache index
//! `i_pages`, which holds for each page of the file the folio that caches it, the shadow
//! entry its eviction left (mm/workingset.c, 6.x), or nothing. The kernel's is an xarray
//! (lib/xarray.c); the model's is one 8-byte entry per page of the file, so the shadows live
//! in the mapping and cost nothing per page of memory. Files of unknown size (a dd reader's
//! endless file) have none.
//!
//! The xarray's nodes (`struct xa_node`, XA_CHUNK_SIZE = 64 slots) are counted, not built:
//! a node of 64 consecutive indices that holds shadows and no folio is a shadow node, on the
//! `shadow_nodes` list_lru (`workingset_update_node`), oldest first; `workingset_nodes`
//! counts them. The shadow-node shrinker (`count_shadow_nodes`, `shadow_lru_isolate`) keeps
//! them to `node_present_pages >> (XA_CHUNK_SHIFT - 3)`: past that, the oldest shadow node's
//! shadows are dropped (`workingset_nodereclaim`).
//!
//! Departures: one list of shadow nodes for the machine, bounded by all its present pages
//! (the kernel's list_lru is per node and memcg, and each node's bound is its own); the bound
//! is kept at each eviction, where the kernel's `shrink_slab` trims the excess over a few
//! reclaim passes.

use std::collections::VecDeque;

/// `XA_CHUNK_SHIFT`: 64 slots a node.
pub const XA_CHUNK_SHIFT: u32 = 6;
/// An entry with this bit is a shadow (`xa_is_value`; `workingset.rs` sets it in every
/// shadow); otherwise a non-zero entry is a folio's pfn + 1.
const VALUE: u64 = 1 << 63;

/// An `i_pages` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    None,
    Folio(u32),
    Shadow(u64),
}

/// The counts of an `xa_node`: entries (`count`) and shadows among them (`nr_values`), and
/// its place on the shadow-node list (`lru_seq`, 0: not on it).
#[derive(Clone, Copy, Debug, Default)]
struct XaNode {
    count: u8,
    nr_values: u8,
    lru_seq: u32,
}

/// One file's page-cache index, and the VMAs that map it.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    i_pages: Vec<u64>,
    nodes: Vec<XaNode>,
    /// `i_mmap`: the shared VMAs mapping the file (the kernel's is an interval tree; a
    /// file here has a few VMAs at most, so a list).
    i_mmap: Vec<u32>,
}

impl AddressSpace {
    /// The empty index of a file of `nr_pages` pages.
    pub fn new(nr_pages: u64) -> AddressSpace {
        let nr_nodes = nr_pages.div_ceil(1 << XA_CHUNK_SHIFT);
        AddressSpace {
            i_pages: vec![0; nr_pages as usize],
            nodes: vec![XaNode::default(); nr_nodes as usize],
            i_mmap: Vec::new(),
        }
    }

    /// The file's size in pages.
    pub fn nr_pages(&self) -> u64 {
        self.i_pages.len() as u64
    }

    /// `xa_load()` of `index`.
    pub fn load(&self, index: u64) -> Entry {
        match self.i_pages[index as usize] {
            0 => Entry::None,
            e if e & VALUE != 0 => Entry::Shadow(e),
            e => Entry::Folio((e - 1) as u32),
        }
    }
}

/// The bits of a mapping id below its range: each workload numbers its files from its own
/// base, a multiple of 2^24 (dd readers 0, dd-write 2^24, fs_mark and stutter's source
/// 3 · 2^24), and within a range from the base up.
const RANGE_SHIFT: u32 = 24;

/// The page cache of a host's files that no workload reads, found between the free
/// fragments of its movable pageblocks (`mm::boot_memory`): a file with no index, the last
/// range but one.
pub const OTHER_FILES_MAPPING: u32 = 0xfe << RANGE_SHIFT;

/// The address spaces of the files of known size, by mapping id, and the shadow-node list.
/// Indexed by the id's range and its offset within it (`RANGE_SHIFT`): one array indexed by
/// the whole id would hold tens of millions of empty entries below the higher ranges' files.
#[derive(Clone, Debug, Default)]
pub struct AddressSpaces {
    ranges: Vec<Vec<Option<AddressSpace>>>,
    /// `shadow_nodes`: (mapping, node, its `lru_seq`), oldest first; an entry whose node has
    /// left the list since (another `lru_seq`) is stale and skipped.
    shadow_nodes: VecDeque<(u32, u32, u32)>,
    next_seq: u32,
    /// `workingset_nodes`: shadow nodes on the list.
    pub nr_shadow_nodes: u64,
    /// `workingset_nodereclaim`: shadow nodes the shrinker freed.
    pub nodereclaim: u64,
    /// The shrinker's bound on shadow nodes (`count_shadow_nodes`).
    pub max_shadow_nodes: u64,
}

impl AddressSpaces {
    /// No file of known size yet; the shrinker bound from the machine's present pages.
    pub fn new(present_pages: u64) -> AddressSpaces {
        AddressSpaces {
            max_shadow_nodes: present_pages >> (XA_CHUNK_SHIFT - 3),
            next_seq: 1,
            ..AddressSpaces::default()
        }
    }

    /// Give `mapping` an index of `nr_pages` pages (a file of known size).
    pub fn create(&mut self, mapping: u32, nr_pages: u64) {
        let (r, i) = Self::split(mapping);
        if self.ranges.len() <= r {
            self.ranges.resize(r + 1, Vec::new());
        }
        let range = &mut self.ranges[r];
        if range.len() <= i {
            range.resize(i + 1, None);
        }
        range[i] = Some(AddressSpace::new(nr_pages));
    }

    /// The range and offset of `mapping`'s id.
    #[inline]
    fn split(mapping: u32) -> (usize, usize) {
        (
            (mapping >> RANGE_SHIFT) as usize,
            (mapping & ((1 << RANGE_SHIFT) - 1)) as usize,
        )
    }

    /// `mapping`'s index, if its file has a known size.
    #[inline]
    pub fn get(&self, mapping: u32) -> Option<&AddressSpace> {
        let (r, i) = Self::split(mapping);
        self.ranges.get(r)?.get(i)?.as_ref()
    }

    /// `mapping`'s index, which the caller knows its file has.
    #[inline]
    fn tracked_mut(&mut self, mapping: u32) -> &mut AddressSpace {
        let (r, i) = Self::split(mapping);
        self.ranges[r][i].as_mut().expect("a tracked mapping")
    }

    /// `i_mmap` of `mapping`: the VMAs that map it (none for a file without an index).
    #[inline]
    pub fn i_mmap(&self, mapping: u32) -> &[u32] {
        self.get(mapping).map_or(&[], |s| &s.i_mmap)
    }

    /// `vma_interval_tree_insert()`: VMA `vma` maps `mapping`, a file of known size.
    pub fn i_mmap_insert(&mut self, mapping: u32, vma: u32) {
        let space = self.tracked_mut(mapping);
        debug_assert!(!space.i_mmap.contains(&vma));
        space.i_mmap.push(vma);
    }

    /// `vma_interval_tree_remove()`: VMA `vma` no longer maps `mapping`.
    pub fn i_mmap_remove(&mut self, mapping: u32, vma: u32) {
        let space = self.tracked_mut(mapping);
        space.i_mmap.retain(|&v| v != vma);
    }

    /// Whether `mapping` has an index (cheap: false at the first bounds check while no file
    /// has one).
    #[inline]
    pub fn tracks(&self, mapping: u32) -> bool {
        self.get(mapping).is_some()
    }

    /// Store `entry` (0, a shadow, or pfn + 1) at `index`, `index + 1`, … `index + nr − 1` of
    /// `mapping`, keeping each node's counts and its place on the shadow-node list
    /// (`workingset_update_node`); returns the last entry replaced that was a shadow (0:
    /// none). With `adding`, every entry replaced must be empty or a shadow. The mapping's
    /// index is looked up once for the run (a large folio's indices are stored together).
    fn store_run(&mut self, mapping: u32, index: u64, nr: u64, entry: u64, adding: bool) -> u64 {
        let (r, i) = Self::split(mapping);
        let AddressSpaces {
            ranges,
            shadow_nodes,
            next_seq,
            nr_shadow_nodes,
            ..
        } = self;
        let space = ranges[r][i].as_mut().expect("a tracked mapping");
        let kind = |e: u64| (u8::from(e != 0), u8::from(e & VALUE != 0));
        let (c1, v1) = kind(entry);
        let mut shadow = 0;
        for index in index..index + nr {
            let old = std::mem::replace(&mut space.i_pages[index as usize], entry);
            debug_assert!(
                !adding || old == 0 || old & VALUE != 0,
                "a cached page added again"
            );
            if old & VALUE != 0 {
                shadow = old;
            }
            let n = (index >> XA_CHUNK_SHIFT) as u32;
            let node = &mut space.nodes[n as usize];
            let (c0, v0) = kind(old);
            node.count = node.count - c0 + c1;
            node.nr_values = node.nr_values - v0 + v1;
            let shadow_node = node.nr_values > 0 && node.count == node.nr_values;
            match (node.lru_seq != 0, shadow_node) {
                (false, true) => {
                    node.lru_seq = *next_seq;
                    shadow_nodes.push_back((mapping, n, *next_seq));
                    *next_seq = next_seq.wrapping_add(1).max(1);
                    *nr_shadow_nodes += 1;
                }
                (true, false) => {
                    node.lru_seq = 0;
                    *nr_shadow_nodes -= 1;
                }
                _ => {}
            }
        }
        shadow
    }

    /// `__filemap_add_folio()`: folio `pfn` caches `index` of `mapping`; returns the shadow
    /// it replaces (0: none).
    pub fn add_folio(&mut self, mapping: u32, index: u64, pfn: u32) -> u64 {
        self.store_run(mapping, index, 1, u64::from(pfn) + 1, true)
    }

    /// `folio_migrate_mapping()`'s `xas_store()`: the folio cached at `index` of `mapping`
    /// is now at page frame `pfn` (the node's counts stay: a folio for a folio).
    pub fn replace_folio(&mut self, mapping: u32, index: u64, pfn: u32) {
        let space = self.tracked_mut(mapping);
        let e = &mut space.i_pages[index as usize];
        debug_assert!(*e != 0 && *e & VALUE == 0, "a cached folio");
        *e = u64::from(pfn) + 1;
    }

    /// `__filemap_remove_folio()` → `page_cache_delete()`: the folio at `index` of `mapping`
    /// leaves, `shadow` (0: none) in its place; then the shrinker's bound.
    pub fn delete_folio(&mut self, mapping: u32, index: u64, shadow: u64) {
        debug_assert!(shadow == 0 || shadow & VALUE != 0);
        self.store_run(mapping, index, 1, shadow, false);
        while self.nr_shadow_nodes > self.max_shadow_nodes {
            self.shadow_lru_isolate();
        }
    }

    /// `__filemap_add_folio()` of a large folio `pfn` of `nr` pages at `index`, `index + 1`,
    /// … of `mapping` (a multi-index entry: each of its indices loads the folio); returns
    /// the shadow it replaces (0: none), the last it finds, as `xas_for_each_conflict()`
    /// leaves `old`: one shadow, one refault, per folio.
    ///
    /// Departure: the kernel's multi-index entry of an order ≥ 6 folio sits in an upper node
    /// of the xarray; the model fills every index's slot, so its leaf nodes, and the shadow
    /// nodes its eviction leaves, are counted as an order-0 folio's would be.
    pub fn add_large_folio(&mut self, mapping: u32, index: u64, nr: u64, pfn: u32) -> u64 {
        self.store_run(mapping, index, nr, u64::from(pfn) + 1, true)
    }

    /// `__filemap_remove_folio()` of the large folio of `nr` pages at `index` of `mapping`:
    /// its one `shadow` (0: none) in its place, at each index it covered; then the
    /// shrinker's bound.
    pub fn delete_large_folio(&mut self, mapping: u32, index: u64, nr: u64, shadow: u64) {
        debug_assert!(shadow == 0 || shadow & VALUE != 0);
        self.store_run(mapping, index, nr, shadow, false);
        while self.nr_shadow_nodes > self.max_shadow_nodes {
            self.shadow_lru_isolate();
        }
    }

    /// `shadow_lru_isolate()` of the oldest shadow node: its shadows are dropped.
    fn shadow_lru_isolate(&mut self) {
        while let Some((mapping, n, seq)) = self.shadow_nodes.pop_front() {
            let space = self.get(mapping).expect("tracked");
            if space.nodes[n as usize].lru_seq != seq {
                continue; // left the list since
            }
            let first = u64::from(n) << XA_CHUNK_SHIFT;
            let last = (first + (1 << XA_CHUNK_SHIFT)).min(space.nr_pages());
            for index in first..last {
                if self.get(mapping).expect("tracked").i_pages[index as usize] != 0 {
                    self.store_run(mapping, index, 1, 0, false);
                }
            }
            self.nodereclaim += 1;
            return;
        }
    }

    /// Bytes the indexes take (beside the page state: per page of the files, not of memory).
    pub fn state_bytes(&self) -> u64 {
        self.ranges
            .iter()
            .flatten()
            .flatten()
            .map(|s| s.i_pages.len() as u64 * 8 + s.nodes.len() as u64 * 8)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHADOW: u64 = VALUE | 42;

    #[test]
    fn shadow_nodes_are_counted_and_bounded_oldest_first() {
        let mut a = AddressSpaces::new(16); // at most 16 >> 3 = 2 shadow nodes
        a.create(3, 200); // 4 nodes: 64, 64, 64, 8
        for i in 0..200 {
            a.add_folio(3, i, 1000 + i as u32);
        }
        assert_eq!(a.get(3).unwrap().load(5), Entry::Folio(1005));
        // Node 0 loses its folios: a shadow node once the last goes.
        for i in 0..64 {
            assert_eq!(a.nr_shadow_nodes, 0);
            a.delete_folio(3, i, SHADOW);
        }
        assert_eq!(a.nr_shadow_nodes, 1);
        assert_eq!(a.get(3).unwrap().load(5), Entry::Shadow(SHADOW));
        // A refault puts a folio back: no longer a shadow node.
        assert_eq!(a.add_folio(3, 5, 7), SHADOW);
        assert_eq!(a.nr_shadow_nodes, 0);
        a.delete_folio(3, 5, SHADOW);
        // Nodes 1 and 2 follow: three shadow nodes, one over the bound; the oldest, node 0
        // (back on the list when index 5 was evicted again, before the others), is freed.
        for i in 64..192 {
            a.delete_folio(3, i, SHADOW);
        }
        assert_eq!(a.nr_shadow_nodes, 2);
        assert_eq!(a.nodereclaim, 1);
        assert_eq!(
            a.get(3).unwrap().load(5),
            Entry::None,
            "node 0 was the oldest"
        );
        assert_eq!(a.get(3).unwrap().load(100), Entry::Shadow(SHADOW));
        // Deleting without a shadow leaves nothing and no shadow node.
        a.delete_folio(3, 195, 0);
        assert_eq!(a.get(3).unwrap().load(195), Entry::None);
        assert!(!a.tracks(2) && a.tracks(3));
    }
}
