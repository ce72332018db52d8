//! Kernel variants: each change the seed documents describe, and each kernel behaviour that
//! differs between the seed's kernel and today's, is a switch here, so that a seed experiment
//! is a scenario file rather than code. One table, one place to add a variant.

use serde::{Deserialize, Serialize};

use crate::machine::Invalid;

/// Which swap readahead a kernel has (`variant.swap_readahead`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapReadahead {
    /// Only `swap_cluster_readahead()`: the kernels before v4.14 (seed 002's base).
    Cluster,
    /// `swap_vma_readahead()` as well, used unless `vma_ra_enabled` is off or a swap area
    /// is rotational (v4.14 on; seed 002's patch series).
    #[default]
    Vma,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Variant {
    /// Seed 000: kswapd threads per node (`vm.kswapd_threads`, 1–16). Every thread runs the
    /// unchanged `kswapd()` on the node's pgdat and waits on the same `kswapd_wait`, as in
    /// the RFC patch ("vmscan: Support multiple kswapd threads per node", 2018).
    pub kswapd_threads: u32,
    /// Readahead allocates with `readahead_gfp_mask()` (`__GFP_NORETRY | __GFP_NOWARN`, since
    /// v4.7): an allocation that fails after one round of direct reclaim cuts the window, and
    /// the reader reads a missing folio synchronously (mm/filemap.rs). Off: readahead
    /// allocates with the mapping's mask and retries like any page-cache allocation.
    pub readahead_noretry: bool,
    /// Readahead allocates inside `memalloc_nofs_save()` (since v5.8, `page_cache_ra_unbounded()`
    /// and later `page_cache_ra_order()`), so without `__GFP_FS`: direct compaction for it
    /// migrates no page-cache folio, and its throttled direct reclaim waits at most a second
    /// (mm/filemap.rs). Off: readahead allocates with `__GFP_FS`, as before v5.8.
    pub readahead_nofs: bool,
    /// The ceiling of the boot-time `min_free_kbytes` (`calculate_min_free_kbytes`):
    /// 262144 since v5.7, 65536 before (the seed-000 kernel's).
    pub min_free_kbytes_cap: u64,
    /// Seed 002: the kernel's swap readahead, `"cluster"` (before v4.14) or `"vma"`.
    pub swap_readahead: SwapReadahead,
    /// The swap slot allocator: `"cluster"` (per-CPU clusters) or `"scan"` (one cursor,
    /// `scan_swap_map`), mm/swapfile.rs.
    pub swap_alloc: SwapAlloc,
    /// The anon LRU before v5.9 ("mm/vmscan: protect the workingset on anonymous LRU"
    /// changed both): a new anonymous folio starts on the active list
    /// (`lru_cache_add_active_or_unevictable`) rather than the inactive one, and reclaim
    /// activates a swap-backed folio the first time it finds it referenced
    /// (`page_check_references`: `if (PageSwapBacked(page)) return PAGEREF_ACTIVATE`)
    /// rather than giving it a second trip round the inactive list. Seed 002's kernel (v4.13).
    pub anon_lru_before_5_9: bool,
    /// A write fault on a swap-cache folio frees its slot as the kernels before v5.18 did
    /// (`reuse_swap_page()`: no other page table or swap entry uses it). Since v5.18
    /// ("mm: streamline COW logic in do_swap_page()") `should_try_to_free_swap()` also asks
    /// that the fault hold the folio's only reference besides the swap cache's
    /// (`folio_ref_count() == 2`), which a folio still in a CPU's LRU-add batch, or isolated
    /// by reclaim, does not: below half-full swap it keeps its slot. Seed 002's kernel (v4.13).
    #[serde(skip_serializing_if = "is_false")]
    pub swapcache_reuse_before_5_18: bool,
    /// Page-cache workingset detection (mm/workingset.c, since 3.15; 6.x here): a page-cache
    /// folio evicted from a file of known size leaves a shadow entry in its mapping
    /// (`mm::address_space`), its eviction ages the lruvec, and a read that finds the shadow
    /// activates the folio if its refault distance fits in the workingset
    /// (`workingset_*_file`, `workingset_nodes`). Off: page-cache folios leave no shadows,
    /// as seed 000's runs had them disabled.
    #[serde(skip_serializing_if = "is_false")]
    pub workingset: bool,
    /// The per-CPU page lists as 4.16 sized and drained them (`mm::pcp`): `pcp->batch` from
    /// at most 512 KiB of pages (31 on a large zone), `pcp->high = 6 · batch`, and
    /// `free_pcppages_bulk()` freeing exactly `batch` pages once `count ≥ high`; no
    /// high-order lists. Off: 6.2's — batch from at most 1 MiB (63), `high` from
    /// `zone_highsize()` (the low watermark split over the node's CPUs), the freed batch
    /// scaled by `free_factor`, and (5.13) high-order lists, of which the model keeps the
    /// pageblock-order one (large folios, THP and hugetlb pages come from and go to it).
    /// Seed 000's kernel (v4.16).
    #[serde(skip_serializing_if = "is_false")]
    pub pcp_before_5_14: bool,
    /// Seed 001, patch 1 ("mm: vmscan: do not writeback filesystem pages in direct
    /// reclaim", 3.2): before it (`true`) direct reclaim calls `pageout()` on a dirty
    /// page-cache folio it may write; since (`false`, the default) it never does, and leaves
    /// the folio to the flushers (mm/vmscan_folio.rs).
    #[serde(skip_serializing_if = "is_false")]
    pub direct_reclaim_writes_fs: bool,
    /// Seed 001, patch 5 and after: when kswapd writes a dirty page-cache folio itself.
    /// `"always"` (before the seed), `"when_in_trouble"` (the seed's patch 5: only at a
    /// priority below DEF_PRIORITY − 2), `"dirty_congested"` (6.x, the default: only a
    /// folio already marked PG_reclaim, on a node flagged PGDAT_DIRTY because the dirty
    /// folios reclaim meets were all not yet queued for I/O).
    #[serde(skip_serializing_if = "KswapdWritesFs::is_default")]
    pub kswapd_writes_fs: KswapdWritesFs,
    /// Seed 001, patch 7 ("mm: vmscan: immediately reclaim end-of-LRU dirty pages when
    /// writeback completes"): a dirty page-cache folio reclaim does not write gets PG_reclaim
    /// (`nr_vmscan_immediate_reclaim`), and the end of its writeback rotates it to the
    /// inactive tail (`folio_rotate_reclaimable`, `pgrotated`). On by default (6.x).
    #[serde(skip_serializing_if = "is_true")]
    pub dirty_tail_pg_reclaim: bool,
    /// 6.3's `vma_has_recency()` (commit 8788f6781486, "mm: support POSIX_FADV_NOREUSE"):
    /// reclaim ignores the accessed bits of a VM_RAND_READ mapping (`madvise(MADV_RANDOM)`),
    /// in `folio_referenced()` (`invalid_folio_referenced_vma()`: the VMA is skipped and its
    /// entry's young bit left set) and at unmap (`zap_pte_range()` does not mark the folio
    /// accessed). Before it (`false`: seed 003's 2.6.36) only VM_SEQ_READ mappings were
    /// ignored, which the model's workloads never make. On by default (6.x).
    #[serde(skip_serializing_if = "is_true")]
    pub vma_has_recency: bool,
    /// How dirtiers are throttled (`balance_dirty_pages()`): `"ratelimit"` (3.2+ IO-less
    /// throttling, simplified; the default) or `"threshold"` (the seed era's loop, in which
    /// the dirtier writes pages itself and sleeps). mm/page_writeback.rs says how.
    #[serde(skip_serializing_if = "DirtyThrottle::is_default")]
    pub dirty_throttle: DirtyThrottle,
    /// Seed 004 ("mm, page_alloc: Delete the zonelist_cache", 4.4): before it (`true`)
    /// `get_page_from_freelist()` remembers, for a second, the zones of a node's zonelist
    /// that failed an allocation, and once a zone fails skips those for the rest of the walk
    /// (`mm::numa::Zlc`) — a zone that failed an order-9 watermark check is skipped by the
    /// order-0 allocations that follow. Since (`false`, the default) every zone is tried.
    /// Only machines of more than one node have it.
    #[serde(skip_serializing_if = "is_false")]
    pub zonelist_cache: bool,
    /// ALLOC_NOFRAGMENT in the allocator's fast path (`alloc_flags_nofragment()`, 5.0,
    /// "mm, page_alloc: spread allocations across zones before introducing fragmentation"):
    /// when the preferred zone is ZONE_NORMAL and its node has a populated ZONE_DMA32,
    /// `get_page_from_freelist()` first walks the local node's zones taking a page of another
    /// migratetype only as a whole pageblock, and walks again with every fallback once it
    /// reaches a remote node or the zonelist's end. On by default (6.x). Off (`false`), the
    /// kernels before 5.0 (seed 000's 4.16, seed 004's 4.3-rc1): one walk, each zone
    /// falling back to any migratetype's blocks (`__rmqueue_fallback`) before the next zone
    /// is tried.
    #[serde(skip_serializing_if = "is_true")]
    pub alloc_nofragment: bool,
    /// Large page-cache folios from readahead (mm/readahead.c `page_cache_ra_order()`, read
    /// at 6.18; since 5.18, the `ra->order` ramp since 6.16): a sequential reader's
    /// synchronous window is read in order-0 folios, each asynchronous window in folios of
    /// two orders more than the last, up to MAX_PAGECACHE_ORDER (9, the PMD order of x86-64
    /// with 4 KiB pages) and the window's size; reclaim then scans and frees them whole
    /// (mm/filemap.rs). Off: every page-cache folio is order 0, as before 5.18 (and for
    /// filesystems without large folio support).
    #[serde(skip_serializing_if = "is_false")]
    pub large_folio_readahead: bool,
    /// The readahead window as the kernel sizes it (mm/readahead.c `ractl_max_pages()`, read
    /// at 6.18): a sequential reader's window grows to the device's `read_ahead_kb` whatever
    /// the size of each read() (every kernel's ondemand readahead), or, for a read() larger
    /// than that, to the read's size up to the device's optimal I/O size (`bdi->io_pages`,
    /// its `max_sectors_kb`; since 4.10, commit 9491ae4aade6 "mm: don't cap request size
    /// based on read-ahead setting"). Off: `read_ahead_kb` capped at one read() (`bs`), the
    /// model's own rule before this switch, which no kernel has, with which seed 000's
    /// effective window (`read_ahead_kb` = 192) was fitted (mm/filemap.rs
    /// `Kernel::readahead_window_pages`).
    #[serde(skip_serializing_if = "is_false")]
    pub ractl_max_pages: bool,
    /// Compaction's migrate scanner starts at a pageblock found through the free lists
    /// (mm/compaction.c `fast_find_migrateblock()`, 5.1+, read at 6.6): for an order above
    /// PAGE_ALLOC_COSTLY_ORDER, a free movable block of order − 1 down to 3 in the first half
    /// of the scanners' distance (an eighth when the scanner does not start at the zone's
    /// start) names a pageblock
    /// already mostly free, which the scanner migrates first. Off: the migrate scanner is
    /// linear from its cached position, as before 5.1 (seeds 000, 003 and 004).
    #[serde(skip_serializing_if = "is_false")]
    pub fast_find_migrateblock: bool,
    /// Compaction's free scanner takes its migration targets from the free lists first
    /// (mm/compaction.c `fast_isolate_freepages()`, 5.1+, read at 6.6): a movable free block
    /// below the request's order in the top quarter of the scanners' distance (or the highest
    /// one read in the top half), searched from the lists' tails a few blocks at a time, then
    /// the rest of its pageblock (`fast_isolate_around()`); the linear scanner only when
    /// that finds none, from the highest pageblock read when the scan starts (the free
    /// scanner at or above where the last reset of the skip bits put it). Off: the free scanner is linear from its cached position, as before 5.1 (seeds
    /// 000, 003 and 004).
    #[serde(skip_serializing_if = "is_false")]
    pub fast_isolate_freepages: bool,
    /// A freed block goes to the tail of its free list when the buddy of the block it would
    /// next merge into is free (mm/page_alloc.c `__free_one_page()`'s
    /// `buddy_merge_likely()`, read at 6.6; the heuristic since 2.6.35, commit 6dda9d55bf54
    /// "page allocator: reduce fragmentation in buddy allocator by adding buddies that are
    /// merging to the tail of the free lists"): allocations take from the head, so the
    /// block is left to merge. It orders the lists the fast searches of compaction read.
    /// Off: every freed block goes to the head (the model's rule before this switch, kept
    /// by default so that the seeds' fitted results stand; every modelled kernel has it).
    #[serde(skip_serializing_if = "is_false")]
    pub buddy_merge_likely: bool,
    /// Large page-cache folios from `write()` (mm/filemap.c `__filemap_get_folio()` with
    /// `fgf_set_order()` of the write's length, read at 6.18; ext4 since 6.16, XFS since
    /// 5.18): each write allocates folios of the largest order its remaining length and the
    /// index's alignment allow, up to MAX_PAGECACHE_ORDER, falling back an order at a time
    /// (`__GFP_NORETRY` above order 0), and dirties, writes back and frees them whole
    /// (mm/page_writeback.rs). The kernel has one property per file
    /// (`mapping_large_folio_support()`) that readahead and writes both follow; the model
    /// has a switch per path, so that each one's effect can be measured. Off: order 0.
    #[serde(skip_serializing_if = "is_false")]
    pub large_folio_writes: bool,
    /// A THP fault allocates on its own node only (`alloc_pages_vma()`'s hugepage path,
    /// 4.0–5.3: `__alloc_pages_node(hpage_node, gfp | __GFP_THISNODE, order)` and no other
    /// attempt; seed 004's 4.3-rc1). Off (the default, 5.4+, "mm, thp: tweak
    /// reclaim/compaction effort of local-only and all-node allocations"): the local-only
    /// attempt is followed, when the gfp allows direct reclaim, by one from every node of
    /// the zonelist (mm/huge_memory.rs).
    #[serde(skip_serializing_if = "is_false")]
    pub thp_fault_local_only: bool,
    /// Seed 003, patches 7 and 8: how reclaim and the page allocator wait for writeback.
    /// `"congestion_wait"` (2.6.36: `congestion_wait(BLK_RW_ASYNC, …)`, asleep until a
    /// request completes on a queue below its congestion-off threshold, or the timeout),
    /// `"wait_iff_congested"` (patch 7: the allocator sleeps so only while some bdi is
    /// congested; direct reclaim's nap and kswapd keep `congestion_wait`), `"zone_congested"`
    /// (patch 8, 2.6.37: direct reclaim's nap too, and only when reclaim found the zone's
    /// dirty pages all on congested bdis, ZONE_CONGESTED), or `"reclaim_throttle"` (5.16+,
    /// the default: kswapd's `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`). mm/congestion.rs
    /// says where each waits.
    #[serde(skip_serializing_if = "ReclaimWait::is_default")]
    pub reclaim_wait: ReclaimWait,
    /// Seed 001, patch 6 (3.2, commit 92df3a723f84 "mm: vmscan: throttle reclaim if
    /// encountering too many dirty pages under writeback"): `shrink_inactive_list()` ends
    /// with `wait_iff_congested(zone, BLK_RW_ASYNC, HZ/10)` when the batch's folios under
    /// writeback are at least `nr_taken >> (DEF_PRIORITY - priority)`
    /// (`vmscan::writeback_isolated_throttle`). 3.2 to 5.15; 5.16 replaced it with
    /// `reclaim_throttle()`, so off by default, and valid only with a congestion
    /// `reclaim_wait` (the wait it takes is `wait_iff_congested()`, mm/congestion.rs).
    #[serde(skip_serializing_if = "is_false")]
    pub writeback_isolated_wait: bool,
    /// Seed 003, patches 3–6: how reclaim serves an order > 0 request. `"compaction"` (the
    /// default, 6.x): reclaim isolates order-0 LRU tails only and hands over to compaction
    /// (`compaction_ready`, `should_continue_reclaim`). `"lumpy"` (2.6.36): for a costly
    /// order, or any order > 0 below priority DEF_PRIORITY − 2, `isolate_lru_pages()` also
    /// takes every LRU page of each tail page's naturally aligned block, skipping the ones
    /// it cannot take, and direct reclaim waits on the writeback of what it could not free
    /// and shrinks the list again. `"lowlumpy"` (2.6.37, the seed's "lowlumpy" kernel): the
    /// block is abandoned at its first page that cannot be taken, and a failure other than
    /// writeback drops lumpy mode, so the synchronous pass happens only when writeback alone
    /// stood in the way. mm/vmscan_lumpy.rs says how.
    #[serde(skip_serializing_if = "HighOrderReclaim::is_default")]
    pub high_order_reclaim: HighOrderReclaim,
}

/// How reclaim waits for writeback (`variant.reclaim_wait`, mm/congestion.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReclaimWait {
    /// 2.6.36: `congestion_wait()` wherever reclaim naps.
    CongestionWait,
    /// Seed 003, patch 7: `wait_iff_congested()` without a zone (sleep only while a bdi is
    /// congested) in the allocator's retry; direct reclaim's and kswapd's
    /// `congestion_wait()` stay.
    WaitIffCongested,
    /// Seed 003, patch 8 (2.6.37): `wait_iff_congested(zone, …)` in direct reclaim's nap as
    /// well, which also asks that the zone be ZONE_CONGESTED.
    ZoneCongested,
    /// 5.16+: `reclaim_throttle()`; no bdi congestion (removed in 5.18).
    #[default]
    ReclaimThrottle,
}

impl ReclaimWait {
    fn is_default(&self) -> bool {
        *self == ReclaimWait::default()
    }

    /// The 2.6.36–2.6.37 waits, on the block queues' congestion state.
    pub fn congestion(self) -> bool {
        self != ReclaimWait::ReclaimThrottle
    }
}

/// How reclaim serves high-order requests (`variant.high_order_reclaim`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HighOrderReclaim {
    /// Order-0 reclaim, then compaction (2.6.38 on; 6.x).
    #[default]
    Compaction,
    /// 2.6.36's lumpy reclaim.
    Lumpy,
    /// 2.6.37's less aggressive lumpy reclaim (seed 003's patches 3–6).
    Lowlumpy,
}

impl HighOrderReclaim {
    fn is_default(&self) -> bool {
        *self == HighOrderReclaim::default()
    }

    /// Lumpy reclaim of either kernel.
    pub fn is_lumpy(self) -> bool {
        self != HighOrderReclaim::Compaction
    }
}

/// When kswapd writes dirty page-cache folios (`variant.kswapd_writes_fs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KswapdWritesFs {
    /// Every dirty page-cache folio it may write (before seed 001).
    Always,
    /// Only at a priority below DEF_PRIORITY − 2 (seed 001's patch 5, 3.2).
    WhenInTrouble,
    /// Only a folio with PG_reclaim on a node flagged PGDAT_DIRTY (6.x).
    #[default]
    DirtyCongested,
}

impl KswapdWritesFs {
    fn is_default(&self) -> bool {
        *self == KswapdWritesFs::default()
    }
}

/// How `balance_dirty_pages()` throttles dirtiers (`variant.dirty_throttle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirtyThrottle {
    /// 3.2+ pause-based rate control (simplified).
    #[default]
    Ratelimit,
    /// Before 3.2: the dirtier writes a chunk itself and sleeps while over the limit.
    Threshold,
}

impl DirtyThrottle {
    fn is_default(&self) -> bool {
        *self == DirtyThrottle::default()
    }
}

fn is_true(v: &bool) -> bool {
    *v
}

/// Keeps a resolved scenario's text as it was before a switch that is off by default existed.
fn is_false(v: &bool) -> bool {
    !*v
}

impl Variant {
    /// Whether page-cache folios can be larger than a page (either large-folio switch):
    /// reclaim's isolation and a bio's segments then read each folio's order.
    pub fn large_folios(&self) -> bool {
        self.large_folio_readahead || self.large_folio_writes
    }

    pub fn validate(&self) -> Result<(), Invalid> {
        if !(1..=16).contains(&self.kswapd_threads) {
            return Invalid::err("kswapd_threads", "expected 1 to 16 (MAX_KSWAPD_THREADS)");
        }
        if self.high_order_reclaim.is_lumpy() && self.large_folios() {
            return Invalid::err(
                "high_order_reclaim",
                "\"lumpy\" and \"lowlumpy\" model 2.6.36/2.6.37, whose page cache is order 0: \
                 expected large_folio_readahead and large_folio_writes off",
            );
        }
        if self.writeback_isolated_wait && !self.reclaim_wait.congestion() {
            return Invalid::err(
                "writeback_isolated_wait",
                "3.2's wait in shrink_inactive_list() is wait_iff_congested(), which needs the \
                 block queues' congestion state: expected reclaim_wait \"congestion_wait\", \
                 \"wait_iff_congested\" or \"zone_congested\" (not \"reclaim_throttle\"), or \
                 writeback_isolated_wait = false",
            );
        }
        if self.writeback_isolated_wait && self.high_order_reclaim.is_lumpy() {
            return Invalid::err(
                "writeback_isolated_wait",
                "\"lumpy\" and \"lowlumpy\" model 2.6.36/2.6.37, before 3.2's wait in \
                 shrink_inactive_list(): expected high_order_reclaim = \"compaction\", or \
                 writeback_isolated_wait = false",
            );
        }
        Ok(())
    }
}

impl Default for Variant {
    fn default() -> Self {
        Variant {
            kswapd_threads: 1,
            readahead_noretry: false,
            readahead_nofs: false,
            min_free_kbytes_cap: 262_144,
            swap_readahead: SwapReadahead::Vma,
            swap_alloc: SwapAlloc::Cluster,
            anon_lru_before_5_9: false,
            swapcache_reuse_before_5_18: false,
            workingset: false,
            pcp_before_5_14: false,
            direct_reclaim_writes_fs: false,
            kswapd_writes_fs: KswapdWritesFs::DirtyCongested,
            dirty_tail_pg_reclaim: true,
            vma_has_recency: true,
            dirty_throttle: DirtyThrottle::Ratelimit,
            zonelist_cache: false,
            alloc_nofragment: true,
            large_folio_readahead: false,
            ractl_max_pages: false,
            fast_find_migrateblock: false,
            fast_isolate_freepages: false,
            buddy_merge_likely: false,
            large_folio_writes: false,
            thp_fault_local_only: false,
            reclaim_wait: ReclaimWait::ReclaimThrottle,
            writeback_isolated_wait: false,
            high_order_reclaim: HighOrderReclaim::Compaction,
        }
    }
}

/// The swap slot allocator (`variant.swap_alloc`, `mm::swapfile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapAlloc {
    /// Per-CPU clusters (6.x).
    #[default]
    Cluster,
    /// One cursor over the area (`scan_swap_map`).
    Scan,
}
