//! The page cache (mm/filemap.c, mm/readahead.c, 6.x): adding folios to a mapping and the
//! LRU, and a task's sequential buffered `read()` of a file, `filemap_read()` with ondemand
//! readahead.
//!
//! A sequential reader keeps up to `depth` readahead windows of `ra_pages` in flight (the
//! synchronous window and the asynchronous one ahead of it, as ondemand readahead settles to
//! on a sequential stream). Building a window allocates its folios
//! (`page_cache_ra_unbounded` → `filemap_alloc_folio`), adds them to the page cache and the
//! LRU, and submits one read; when the read completes and the reader reaches the window, its
//! folios are copied to user space and marked accessed once (`folio_mark_accessed`:
//! inactive, referenced — a use-once stream).
//!
//! Departure: a window's folios stay locked until they are copied (the kernel unlocks them
//! when the read completes, but the reader holds references on them until it has copied
//! them, which keeps reclaim off them just the same).
//!
//! Readahead's allocations use `readahead_gfp_mask()` (`__GFP_NORETRY | __GFP_NOWARN`) when
//! `variant.readahead_noretry` is on: an allocation that fails after one round of direct
//! reclaim ends the window there, and when a window cannot get even its first folio the
//! reader reads that folio synchronously (`filemap_create_folio`, with the mapping's own gfp
//! mask) and copies it before reading further ahead. Off, readahead allocates with the
//! mapping's mask and retries as long as any allocation would.
//!
//! With `variant.readahead_nofs` readahead allocates inside `memalloc_nofs_save()`, as
//! `page_cache_ra_unbounded()` and `page_cache_ra_order()` do since 5.8 (`current_gfp_context()`
//! takes `__GFP_FS` off its allocations): their direct compaction cannot migrate page-cache
//! folios (`isolate_migratepages_block()`: a folio with a mapping and no `__GFP_FS`), and
//! their throttled direct reclaim waits at most a second (`throttle_direct_reclaim()`).
//! The synchronous read of a missing folio (`filemap_create_folio`) allocates outside
//! `memalloc_nofs_save()`, with the mapping's mask. Reclaim itself does not look at
//! `__GFP_FS` here: for global reclaim 6.x's writeback handling does not depend on it, and
//! the model has no filesystem shrinkers.
//!
//! With `variant.large_folio_readahead` the windows are read into large folios as 6.18's
//! `page_cache_ra_order()` allocates them (`SequentialReader::readahead_large`): a large
//! folio is one LRU entry and one page-cache entry over its indices, counted by its pages.
//! Only readahead makes large folios: the written page cache (dd writers, fs_mark, dirty
//! folios) and anon memory stay order 0.

use std::collections::VecDeque;

use crate::hw::block::Op;
use crate::kernel::Kernel;
use crate::mm::address_space::Entry;
use crate::mm::gfp::{Gfp, __GFP_FS, __GFP_NORETRY, __GFP_NOWARN, GFP_HIGHUSER_MOVABLE};
use crate::mm::huge_memory::folio_test_pmd_mappable;
use crate::mm::lru::{LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
use crate::mm::mem_cgroup::ROOT_MEM_CGROUP;
use crate::mm::page::{folio_nr_pages, pg};
use crate::mm::page_alloc::alloc_pages;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::process::{psi_memstall_enter, psi_memstall_leave, wait_on_bio, Cx};

/// `mapping_gfp_mask()` of a regular file's page cache (`inode_init_always`).
pub const MAPPING_GFP: Gfp = GFP_HIGHUSER_MOVABLE;

/// `readahead_gfp_mask()`.
pub const fn readahead_gfp_mask(mapping_gfp: Gfp) -> Gfp {
    mapping_gfp | __GFP_NORETRY | __GFP_NOWARN
}

impl Kernel {
    /// `filemap_add_folio()` for freshly allocated order-0 `folios` of `mapping` at `index`,
    /// `index + 1`, … (the file offsets `mm_filemap_add_to_page_cache` prints), by the task
    /// on `cpu`: each joins the page cache, locked for its read, and, through `cpu`'s
    /// LRU-add batch, the head of its node's inactive file list. The CPU time is charged.
    #[inline]
    pub fn filemap_add_folios(&mut self, mapping: u32, index: u64, folios: &[u32], cpu: u32) {
        // The folios' `index`, where the array exists, is written next (`filemap_index_folios`
        // for a read, `generic_perform_write` for a write): 4 bytes a page, scattered, not
        // touched since the folios were last in use. Asked for now, their misses overlap one
        // another and the insertion's work instead of stalling those loops a page at a time.
        for &p in folios {
            self.mem.page_ext.prefetch_index(p);
        }
        let cpu_node = self.cpus.node_of(cpu);
        let work = self.mem.nodes[cpu_node as usize]
            .memory
            .scale(folios.len() as u64 * self.costs.page_cache_insert_ns);
        self.charge(work);
        // Runs of folios of one zone: an allocation run comes from whole free blocks.
        let mut i = 0;
        while i < folios.len() {
            let (zi, n) = self.zone_run(&folios[i..]);
            let (nid, zone_idx) = (self.mem.zones[zi].nid, self.mem.zones[zi].zone_idx);
            let lv = self.mem_cgroup_lruvec(ROOT_MEM_CGROUP, nid);
            let run = &folios[i..i + n];
            self.memcg.lruvecs[lv].add_folio_run(
                &mut self.mem.pages,
                run,
                LRU_INACTIVE_FILE,
                zone_idx,
                mapping,
                pg::LOCKED,
            );
            self.mem.nodes[nid as usize].nr_file_pages += n as u64;
            self.folio_add_lru_run(cpu, lv, n);
            i += n;
        }
        if self.tracer.is_some() {
            for (i, &p) in (index..).zip(folios) {
                self.trace_filemap_add(mapping, p, i, 0);
            }
        }
    }

    /// `__filemap_add_folio()`'s index of `folios` at `index`, `index + 1`, … of `mapping`, a
    /// file of known size: each takes its place in the mapping (`folio->index`); one that
    /// replaces a shadow is a refault (`workingset_refault()`), and goes to the active list if
    /// its refault distance fits in the workingset (PG_workingset restored if it was).
    /// Returns whether a restored workingset folio is among them (its read is a memory stall).
    pub fn filemap_index_folios(&mut self, mapping: u32, index: u64, folios: &[u32]) -> bool {
        let mut thrashing = false;
        for (i, &p) in (index..).zip(folios) {
            self.mem.page_ext.index_mut()[p as usize] = i as u32;
            let shadow = self.address_spaces.add_folio(mapping, i, p);
            if shadow == 0 {
                continue;
            }
            thrashing |= self.page_cache_refault(p, shadow);
        }
        thrashing
    }

    /// `filemap_add_folio()` of large folio `p` at `index` of `mapping` (its order on its
    /// head, set by `prep_compound_folio`), by the task on `cpu`: it joins the page cache
    /// locked for its read and the head of its node's inactive file list as one entry of
    /// `1 << order` pages, which count in the list's size and NR_FILE_PAGES.
    /// `folio_add_lru()` of a large folio drains the CPU's batch at once
    /// (`folio_batch_add_and_move`: "!folio_test_large"). The insertion's CPU time is one
    /// folio's: the xarray takes one multi-index entry.
    pub fn filemap_add_large_folio(&mut self, mapping: u32, index: u64, p: u32, cpu: u32) {
        let cpu_node = self.cpus.node_of(cpu);
        let work = self.mem.nodes[cpu_node as usize]
            .memory
            .scale(self.costs.page_cache_insert_ns);
        self.charge(work);
        let zi = self.page_zone(p);
        let (nid, zone_idx) = (self.mem.zones[zi].nid, self.mem.zones[zi].zone_idx);
        let lv = self.mem_cgroup_lruvec(ROOT_MEM_CGROUP, nid);
        let order = u32::from(self.mem.pages.fields(p).order);
        self.trace_filemap_add(mapping, p, index, order);
        let f = self.mem.pages.fields_mut(p);
        f.owner = mapping;
        f.flags = pg::LOCKED;
        let nr = folio_nr_pages(f);
        self.memcg.lruvecs[lv].add_folio(&mut self.mem.pages, p, LRU_INACTIVE_FILE, zone_idx);
        let pgdat = &mut self.mem.nodes[nid as usize];
        pgdat.nr_file_pages += nr;
        pgdat.nr_file_thps += u64::from(folio_test_pmd_mappable(nr));
        self.folio_add_lru_run(cpu, lv, 1);
        self.folio_batch_move_lru(cpu);
    }

    /// `__filemap_add_folio()`'s index of large folio `p` at `index` of `mapping`, a file
    /// of known size: one multi-index entry over its pages; the shadow it replaces, if any,
    /// is one refault of the folio (`workingset_refault()`), activated as
    /// [`Kernel::filemap_index_folios`] says. Returns whether it is a restored workingset
    /// folio.
    pub fn filemap_index_large_folio(&mut self, mapping: u32, index: u64, p: u32) -> bool {
        self.mem.page_ext.index_mut()[p as usize] = index as u32;
        let nr = folio_nr_pages(self.mem.pages.fields(p));
        let shadow = self.address_spaces.add_large_folio(mapping, index, nr, p);
        if shadow == 0 {
            return false;
        }
        self.page_cache_refault(p, shadow)
    }

    /// A page-cache folio `p` just added over `shadow`: `workingset_refault()`, and if that
    /// activates it, lru_add's PG_active puts it on the active list. Returns whether it is
    /// a restored workingset folio (thrashing).
    fn page_cache_refault(&mut self, p: u32, shadow: u64) -> bool {
        let flags = self.workingset_refault(p, ROOT_MEM_CGROUP, shadow, true);
        if flags & pg::ACTIVE != 0 {
            let zone_idx = self.page_zonenum(p);
            let lv = self.folio_lruvec(p);
            let lruvec = &mut self.memcg.lruvecs[lv];
            lruvec.del_folio(&mut self.mem.pages, p, LRU_INACTIVE_FILE, zone_idx);
            self.mem.pages.set(p, flags);
            lruvec.add_folio(&mut self.mem.pages, p, LRU_ACTIVE_FILE, zone_idx);
        }
        flags & pg::WORKINGSET != 0
    }
}

/// `do_read_fault()` → `filemap_fault()` (mm/memory.c, mm/filemap.c, 6.6) for a read of
/// page `addr` of shared file VMA `vma`, whose entry is empty, by the task of `cx`.
///
/// * The file page is cached (`filemap_get_folio()` finds it): it is mapped, a minor fault
///   (charged `swapin_map_ns`, the map of a folio found without I/O).
/// * It is not: a major fault (`PGMAJFAULT`, counted whether or not I/O follows, as the
///   kernel's). `do_sync_mmap_readahead()` returns at once for the VMA's VM_RAND_READ
///   (`madvise(MADV_RANDOM)`), so one folio is allocated with the mapping's gfp mask and
///   added to the page cache and the inactive file list (`__filemap_get_folio(FGP_CREAT)` →
///   `filemap_add_folio()`, a shadow there being a refault); its read
///   (`filemap_read_folio()` → `->read_folio`) finds a hole in the sparse file and zero-fills
///   it with no I/O, charged as the anon fault's zeroing is (`anon_fault_ns`: fault entry and
///   exit, `clear_page`, rmap). The folio is uptodate, unlocked and mapped, its entry young,
///   and not PG_referenced (the fault does not `folio_mark_accessed()`).
///
/// Departures: every page not cached is a hole (the files the model maps are sparse; a
/// page written through a mapping and evicted would be read back from the device, which is
/// not modelled: the one workload that writes through a mapping stores to each page once); no fault-around
/// (`do_fault_around()` maps only folios already cached beside the fault, and a stream
/// faulting each page once finds none); no read-around for a VMA without VM_RAND_READ
/// (`Kernel::mmap_file` makes one only for a stream that writes, `vm::WRITE_ONLY`); the folio is charged to the root cgroup, as all of the
/// model's page cache is.
pub async fn filemap_fault(cx: &Cx, vma: u32, addr: u32) -> crate::mm::memory::Fault {
    use crate::mm::memory::Fault;
    use crate::mm::vma::mk_pte;
    use crate::mm::vmstat::VmEvent;
    let (mapping, index, idx) = {
        let k = cx.k();
        let f = k.mm.vm_file(vma).expect("a file VMA");
        (
            f.mapping,
            f.pgoff + addr,
            k.mm.vmas[vma as usize].start + addr,
        )
    };
    let cached = |k: &Kernel| match k
        .address_spaces
        .get(mapping)
        .map(|s| s.load(u64::from(index)))
    {
        Some(Entry::Folio(p)) => Some(p),
        _ => None,
    };
    {
        let mut k = cx.k();
        if k.mm.ptes[idx as usize] != 0 {
            return Fault::None;
        }
        if let Some(p) = cached(&k) {
            let map = k.costs.swapin_map_ns;
            k.charge(map);
            k.mm.ptes[idx as usize] = mk_pte(p);
            k.folio_add_file_rmap(p);
            k.count(VmEvent::Pgfault, 1);
            return Fault::Minor;
        }
        k.count(VmEvent::Pgmajfault, 1);
    }
    let p = alloc_pages(cx, MAPPING_GFP, 0, cx.node)
        .await
        .expect("order-0 user allocations retry until they succeed");
    let mut k = cx.k();
    if k.mm.ptes[idx as usize] != 0 || cached(&k).is_some() {
        // Another fault mapped or cached it meanwhile (`filemap_add_folio()` fails with
        // -EEXIST and the fault retries): the caller finds it.
        k.free_folio(p, cx.cpu);
        return Fault::None;
    }
    k.filemap_add_folios(mapping, u64::from(index), &[p], cx.cpu);
    // A hole's read waits for no I/O, so a refault of a workingset folio is no stall.
    k.filemap_index_folios(mapping, u64::from(index), &[p]);
    let zero = k.costs.anon_fault_ns;
    k.charge(zero);
    let f = k.mem.pages.fields_mut(p);
    f.flags = (f.flags & !pg::LOCKED) | pg::UPTODATE;
    k.mm.ptes[idx as usize] = mk_pte(p);
    k.folio_add_file_rmap(p);
    k.count(VmEvent::Pgfault, 1);
    Fault::Major
}

impl Kernel {
    /// `mmap(MAP_SHARED)` of pages `pgoff..pgoff + nr_pages` of `mapping`, a file of known
    /// size, by task `tid`, with `vm_flags` (`vm::RAND_READ` after `madvise(MADV_RANDOM)`):
    /// the VMA, on the mapping's `i_mmap`. Returns its id. A VMA without VM_RAND_READ is
    /// only for writes (`vm::WRITE_ONLY` asks for it): its faults do not read around
    /// (`do_sync_mmap_readahead()`, which would add a window of holes at once), a departure
    /// the writing stream accepts; a read fault there would need it.
    pub fn mmap_file(
        &mut self,
        tid: u32,
        nr_pages: u32,
        mapping: u32,
        pgoff: u32,
        vm_flags: u8,
    ) -> u32 {
        use crate::mm::vma::vm;
        assert!(
            vm_flags & (vm::RAND_READ | vm::WRITE_ONLY) != 0,
            "a file mapping read without MADV_RANDOM: fault read-around is not modelled"
        );
        let size = self
            .address_spaces
            .get(mapping)
            .expect("a mapped file has a known size (`AddressSpaces::create`)")
            .nr_pages();
        assert!(
            u64::from(pgoff) + u64::from(nr_pages) <= size,
            "a mapping past the file's end"
        );
        let v = self.mm.mmap_file(tid, nr_pages, mapping, pgoff, vm_flags);
        self.address_spaces.i_mmap_insert(mapping, v);
        v
    }
}

/// A sequential reader's readahead window in pages, for the device's `read_ahead_kb` of
/// `ra_pages` pages, read() calls of `req_pages` and the device's optimal I/O of `io_pages`.
///
/// With `variant.ractl_max_pages`, the window a stream settles to in the kernel: the
/// sync window is `get_init_ra_size(req_pages, max_pages)` (the read's size rounded up to
/// a power of two, times 4 or 2 while small, else the maximum) and each async one
/// `get_next_ra_size()` (4 times the last below a sixteenth of the maximum, then twice),
/// both up to `ractl_max_pages()`: `ra_pages`, or, for a read() larger than that, the
/// read's size up to `io_pages` if that is larger too (4.10+). Departure: a stream's first
/// windows are already that size (with 4 MiB reads and `read_ahead_kb` 8192 the kernel's
/// first window is whole too).
///
/// Without it, the model's own rule before the switch, which no kernel has: `ra_pages`, at
/// most one read() (seed 000's effective window was fitted with it).
fn readahead_window(ra_pages: u64, req_pages: u64, io_pages: u64, ractl_max_pages: bool) -> usize {
    let window = if !ractl_max_pages {
        ra_pages.min(req_pages)
    } else if req_pages > ra_pages && io_pages > ra_pages {
        req_pages.min(io_pages)
    } else {
        ra_pages
    };
    window.max(1) as usize
}

impl Kernel {
    /// [`readahead_window`] of a reader of `device` whose read() calls are `bs_kb` KiB, from
    /// `read_ahead_kb`, the device's `max_request_kb` (`bdi->io_pages`) and
    /// `variant.ractl_max_pages`.
    pub fn readahead_window_pages(&self, device: usize, bs_kb: u64) -> usize {
        let io_pages = self.block.devices[device].max_request_bytes / 4096;
        readahead_window(
            self.sysctl.read_ahead_kb / 4,
            bs_kb / 4,
            io_pages,
            self.variant.ractl_max_pages,
        )
    }
}

/// `MAX_PAGECACHE_ORDER` on x86-64 with 4 KiB pages: `HPAGE_PMD_ORDER` (the xarray's
/// `MAX_XAS_ORDER` is larger).
pub const MAX_PAGECACHE_ORDER: u32 = 9;

/// A task's sequential buffered read of one file (mapping `mapping` on device `device`).
pub struct SequentialReader {
    mapping: u32,
    device: usize,
    ra_pages: usize,
    depth: usize,
    /// The gfp mask readahead allocates order-0 folios with.
    ra_gfp: Gfp,
    /// Readahead allocates inside `memalloc_nofs_save()` (`variant.readahead_nofs`).
    memalloc_nofs: bool,
    /// Windows read or being read, oldest first (their I/Os, which hold their folios),
    /// whether a window holds a restored workingset folio (waiting for it is a stall), and
    /// its pages.
    in_flight: VecDeque<(u32, bool, u64)>,
    /// The file's size in pages (0: endless, no index), and the next page to read ahead or
    /// find cached; at the end of the file the reader starts again at 0 (dd in a loop).
    file_pages: u64,
    index: u64,
    /// Whether the window being built holds a restored workingset folio.
    filling_thrashing: bool,
    /// The next page is cached but windows before it are in flight: copy them first.
    hit_waits: bool,
    /// Folios of the window being built, and their pages.
    filling: Vec<u32>,
    filling_pages: usize,
    /// A folio read synchronously is in flight: read no further ahead until it is copied.
    sync_read: Option<u32>,
    /// `variant.large_folio_readahead`: the window state of `page_cache_ra_order()`.
    large: Option<LargeRa>,
}

/// The state of a reader's readahead with large folios (`variant.large_folio_readahead`):
/// `struct file_ra_state`'s `order` and the window being built.
#[derive(Clone, Copy, Debug, Default)]
struct LargeRa {
    /// `ra->order`: the order of the last window's folios.
    order: u32,
    /// The next window is a synchronous one (`page_cache_sync_ra()`: `ra->order = 0`): the
    /// stream's first, the first after cached pages that no window being built covered
    /// (`after_hit`), or after a window cut short by a failed allocation; otherwise
    /// asynchronous (`page_cache_async_ra()`: `ra->order += 2`).
    sync_next: bool,
    /// Pages of the window not yet added (0: no window is being built).
    window_left: usize,
    /// An order > 0 folio of this window could not be allocated, or would cover a cached
    /// page, or the reader copied cached pages inside the window (`after_hit`): the rest of
    /// the window is read in order-0 folios (`do_page_cache_ra()`).
    fallback: bool,
}

impl SequentialReader {
    /// A reader of `mapping` on `device` with `depth` windows of `ra_pages` pages.
    pub fn new(mapping: u32, device: usize, ra_pages: usize, depth: usize, noretry: bool) -> Self {
        SequentialReader {
            mapping,
            device,
            ra_pages,
            depth,
            ra_gfp: if noretry {
                readahead_gfp_mask(MAPPING_GFP)
            } else {
                MAPPING_GFP
            },
            memalloc_nofs: false,
            in_flight: VecDeque::new(),
            filling: Vec::with_capacity(ra_pages),
            filling_pages: 0,
            sync_read: None,
            large: None,
            file_pages: 0,
            index: 0,
            filling_thrashing: false,
            hit_waits: false,
        }
    }

    /// The reader allocates large folios as `page_cache_ra_order()` does
    /// (`variant.large_folio_readahead`).
    pub fn with_large_folios(mut self, on: bool) -> Self {
        self.large = on.then_some(LargeRa {
            sync_next: true,
            ..LargeRa::default()
        });
        self
    }

    /// The reader allocates inside `memalloc_nofs_save()`, as `page_cache_ra_unbounded()` and
    /// `page_cache_ra_order()` have since 5.8 (`variant.readahead_nofs`).
    pub fn with_nofs(mut self, on: bool) -> Self {
        self.memalloc_nofs = on;
        self
    }

    /// `current_gfp_context()`: `gfp` without `__GFP_FS` inside the reader's
    /// `memalloc_nofs_save()` scope.
    fn current_gfp_context(&self, gfp: Gfp) -> Gfp {
        if self.memalloc_nofs {
            gfp & !__GFP_FS
        } else {
            gfp
        }
    }

    /// A reader of a file of `file_pages` pages (its page-cache index made in `k`), which it
    /// reads from the start again at its end, finding pages of the last pass still cached
    /// (hits) or their shadows (refaults).
    pub fn with_file(mut self, k: &mut Kernel, file_pages: u64) -> Self {
        if file_pages > 0 {
            k.address_spaces.create(self.mapping, file_pages);
        }
        self.file_pages = file_pages;
        self
    }

    /// Whether the reader reads further ahead before it copies: fewer than `depth` windows
    /// are in flight, no synchronous read is awaited, and no cached page waits for the
    /// windows before it.
    pub fn wants_readahead(&self) -> bool {
        self.in_flight.len() < self.depth && self.sync_read.is_none() && !self.hit_waits
    }

    /// Of a file of known size, the pages from the next one that the window being built may
    /// take, at most `want`: up to the first cached page or the end of the file (the
    /// kernel's `page_cache_ra_unbounded` submits what it has at a cached page, and reads
    /// no page that is cached).
    fn uncached_run(&self, k: &Kernel, want: usize) -> usize {
        let Some(space) = k.address_spaces.get(self.mapping) else {
            return want;
        };
        let start = self.index + self.filling_pages as u64;
        let end = (start + want as u64).min(self.file_pages);
        (start..end)
            .take_while(|&i| !matches!(space.load(i), Entry::Folio(_)))
            .count()
    }

    /// The cached pages from the next one on (at most a window's, up to the end of the file),
    /// found by `filemap_get_pages()` with no I/O.
    fn cached_run(&self, k: &Kernel, folios: &mut Vec<u32>) {
        let Some(space) = k.address_spaces.get(self.mapping) else {
            return;
        };
        let end = (self.index + self.ra_pages as u64).min(self.file_pages);
        let mut i = self.index;
        while i < end {
            match space.load(i) {
                Entry::Folio(p) => {
                    folios.push(p);
                    i += folio_nr_pages(k.mem.pages.fields(p));
                }
                _ => break,
            }
        }
    }

    /// Readahead of a file of known size at a cached page: with no window in flight before
    /// it, the cached pages are copied now (a hit: no I/O) and the bytes returned; otherwise
    /// the reader copies the windows in flight first (`hit_waits`).
    fn read_cached(&mut self, cx: &Cx) -> Option<u64> {
        if self.file_pages == 0 || !self.filling.is_empty() {
            return None;
        }
        let mut k = cx.k();
        let mut folios = Vec::new();
        self.cached_run(&k, &mut folios);
        if folios.is_empty() {
            return None;
        }
        if !self.in_flight.is_empty() {
            self.hit_waits = true;
            return Some(0);
        }
        let n = if self.large.is_some() {
            folios
                .iter()
                .map(|&p| folio_nr_pages(k.mem.pages.fields(p)))
                .sum()
        } else {
            folios.len() as u64
        };
        self.index = (self.index + n) % self.file_pages;
        self.copy(&mut k, cx, &mut folios, n, false);
        self.after_hit(n as usize);
        Some(n * 4096)
    }

    /// With large folios: the reader has copied `n` cached pages at the readahead position.
    /// Inside a window being built (whose first page readahead read, so it carries the
    /// PG_readahead mark) the kernel's readahead passed over them: `filemap_add_folio()`
    /// found them (-EEXIST), the rest of that window is read in order-0 folios
    /// (`page_cache_ra_order()`'s fallback, `page_cache_ra_unbounded()` skipping present
    /// folios), and the reader reaching the mark starts the next window asynchronously,
    /// `ra->order` kept. Cached pages that reach past the window, or start where no window
    /// is being built, are met by the next window's first page instead, which then carries
    /// no mark, and the model reads the page after them synchronously
    /// (`page_cache_sync_ra()`, `ra->order` = 0). Departures: the kernel reads the rest of
    /// that next window in order-0 folios, unmarked, and only then synchronously, so the
    /// model's ramp restarts up to a window early and unaligned; and the mark of a
    /// synchronous window is `req_count` pages into it (`async_size = size − req_count`),
    /// not on its first page, so cached pages over it lose the mark in the kernel only.
    fn after_hit(&mut self, n: usize) {
        let Some(ra) = &mut self.large else {
            return;
        };
        if n <= ra.window_left {
            ra.window_left -= n;
            ra.fallback |= ra.window_left > 0;
        } else {
            self.end_window();
        }
    }

    /// `page_cache_ra_unbounded()` for up to SWAP_CLUSTER_MAX more folios of the window
    /// being built; the window's read is submitted once it is whole (or cut short). The
    /// allocations that need no direct reclaim are taken in one batch
    /// (`Kernel::alloc_pages_batch`), each as its own `alloc_pages()` call would be served;
    /// the next one, if any, enters the slow path. Of a file of known size, a cached next
    /// page is a hit instead (copied if nothing is in flight before it: returns the bytes).
    ///
    /// With `variant.large_folio_readahead` the window's folios are those of
    /// [`SequentialReader::readahead_large`]; its order-0 folios come here.
    pub async fn readahead(&mut self, cx: &Cx) -> u64 {
        if let Some(bytes) = self.read_cached(cx) {
            return bytes;
        }
        let mut want = if self.large.is_some() {
            match self.readahead_large(cx).await {
                Some(want) => want,
                None => return 0,
            }
        } else {
            (SWAP_CLUSTER_MAX as usize).min(self.ra_pages - self.filling.len())
        };
        if self.file_pages > 0 {
            want = self.uncached_run(&cx.k(), want);
            if want == 0 {
                // A cached page: what the window has so far is read (`read_pages()`), and
                // the reader copies the cached pages when it reaches them (`after_hit`).
                self.submit(&mut cx.k());
                return 0;
            }
        }
        let first = self.filling.len();
        let got = {
            let mut k = cx.k();
            let gfp = self.current_gfp_context(self.ra_gfp);
            let got = k.alloc_pages_batch(gfp, cx.node, cx.cpu, want, &mut self.filling);
            self.add(&mut k, first, cx.cpu);
            got
        };
        if got == want {
            return 0;
        }
        let page = alloc_pages(cx, self.current_gfp_context(self.ra_gfp), 0, cx.node).await;
        let mut k = cx.k();
        match page {
            Some(p) => {
                self.filling.push(p);
                self.add(&mut k, self.filling.len() - 1, cx.cpu);
            }
            None if !self.filling.is_empty() => {
                self.submit(&mut k);
                self.end_window();
            }
            None => {
                // Not even the window's first folio: the reader creates it itself.
                drop(k);
                let p = alloc_pages(cx, MAPPING_GFP, 0, cx.node).await;
                let p = p.expect("an allocation without __GFP_NORETRY retries until it succeeds");
                let mut k = cx.k();
                self.filling.push(p);
                self.add(&mut k, 0, cx.cpu);
                self.sync_read = self.submit(&mut k);
                if self.large.is_some() {
                    // A window whose last page this was is submitted by `add` already.
                    self.sync_read = self.sync_read.or(self.in_flight.back().map(|w| w.0));
                    self.end_window();
                }
            }
        }
        0
    }

    /// `page_cache_ra_order()` (mm/readahead.c, 6.18) one folio at a time, with
    /// `page_cache_sync_ra()` / `page_cache_async_ra()` choosing each window's order: the
    /// synchronous window (the stream's first, the first after cached pages no window
    /// covered, and the first after a cut window) has `ra->order = 0`; each asynchronous one `ra->order + 2`, its end rounded down to
    /// `1 << min(order, ffs(ra_pages) - 1)`; then `new_order = min(order,
    /// MAX_PAGECACHE_ORDER, ilog2(size))` is stored back in `ra->order`. Each folio takes
    /// `new_order`, lowered to the index's alignment (`__ffs(index)`) and to what is left of
    /// the window (and the file); it is allocated with `readahead_gfp_mask()`
    /// (`ra_alloc_folio()` → `filemap_alloc_folio()`). An order-0 folio is left to the
    /// order-0 path (returns `Some(want)`); otherwise the folio is added and `None` returned.
    ///
    /// When the allocation fails, or the folio would cover a page already cached
    /// (`filemap_add_folio()`: -EEXIST), the window built so far is submitted (`read_pages`)
    /// and the rest of it read in order-0 folios (`do_page_cache_ra()`), `ra->order` kept.
    ///
    /// The allocation is of a costly order (> PAGE_ALLOC_COSTLY_ORDER from order 4) with
    /// `__GFP_NORETRY`: the slow path (mm/page_alloc.rs) first tries
    /// `__alloc_pages_direct_compact()` (INIT_COMPACT_PRIORITY) and, for a costly
    /// `__GFP_NORETRY` request, gives up at once when compaction was skipped (too few free
    /// pages) or deferred, before any reclaim; otherwise it reclaims once, compacts once more
    /// (async) and gives up. (The dd workload starts kcompactd when its readahead allocates
    /// large folios.)
    async fn readahead_large(&mut self, cx: &Cx) -> Option<usize> {
        let mut ra = self.large.expect("large folio readahead");
        let start = self.index + self.filling_pages as u64;
        if ra.window_left == 0 {
            let mut size = self.ra_pages;
            if ra.sync_next || start == 0 {
                ra.order = 0;
            } else {
                ra.order += 2;
                let align = 1u64 << ra.order.min(self.ra_pages.trailing_zeros());
                let end = start + size as u64;
                let aligned_end = end & !(align - 1);
                if aligned_end > start {
                    size -= (end - aligned_end) as usize;
                }
            }
            ra.order = ra.order.min(MAX_PAGECACHE_ORDER).min(size.ilog2());
            if self.file_pages > 0 {
                size = size.min((self.file_pages - start) as usize);
            }
            ra.window_left = size;
            ra.sync_next = false;
            ra.fallback = false;
        }
        self.large = Some(ra);
        if ra.fallback || ra.order == 0 {
            return Some((SWAP_CLUSTER_MAX as usize).min(ra.window_left));
        }
        let mut order = ra.order;
        if start & ((1u64 << order) - 1) != 0 {
            order = start.trailing_zeros();
        }
        let limit = start + ra.window_left as u64 - 1;
        while order > 0 && start + (1u64 << order) - 1 > limit {
            order -= 1;
        }
        if order == 0 {
            return Some(1);
        }
        let nr = 1usize << order;
        let page = if self.file_pages > 0 && self.uncached_run(&cx.k(), nr) < nr {
            None
        } else {
            let gfp = self.current_gfp_context(readahead_gfp_mask(MAPPING_GFP));
            alloc_pages(cx, gfp, order, cx.node).await
        };
        let mut k = cx.k();
        let Some(p) = page else {
            self.large.as_mut().expect("large").fallback = true;
            self.submit(&mut k);
            return None;
        };
        k.prep_compound_folio(p, order);
        k.filemap_add_large_folio(self.mapping, start, p, cx.cpu);
        if self.file_pages > 0 {
            self.filling_thrashing |= k.filemap_index_large_folio(self.mapping, start, p);
        }
        self.filling.push(p);
        self.filling_pages += nr;
        let ra = self.large.as_mut().expect("large");
        ra.window_left -= nr;
        if ra.window_left == 0 || start + nr as u64 == self.file_pages {
            self.submit(&mut k);
        }
        None
    }

    /// With large folios: the window being built ends here (cut short by a failed
    /// allocation, or the reader copied cached pages past it), and the next one is
    /// synchronous.
    fn end_window(&mut self) {
        if let Some(ra) = &mut self.large {
            ra.window_left = 0;
            ra.fallback = false;
            ra.sync_next = true;
        }
    }

    /// Add `filling[first..]` to the page cache (and, of a file of known size, its index);
    /// submit the window once it is whole or reaches the end of the file.
    fn add(&mut self, k: &mut Kernel, first: usize, cpu: u32) {
        let start = self.index + self.filling_pages as u64;
        k.filemap_add_folios(self.mapping, start, &self.filling[first..], cpu);
        let n = self.filling.len() - first;
        let mut eof = false;
        if self.file_pages > 0 {
            let folios = &self.filling[first..];
            self.filling_thrashing |= k.filemap_index_folios(self.mapping, start, folios);
            eof = start + folios.len() as u64 == self.file_pages;
        }
        self.filling_pages += n;
        let whole = match &mut self.large {
            None => self.filling.len() == self.ra_pages,
            Some(ra) => {
                ra.window_left = ra.window_left.saturating_sub(n);
                ra.window_left == 0
            }
        };
        if whole || eof {
            self.submit(k);
        }
    }

    /// `read_pages()`: submit the window being built as one read; returns its I/O.
    fn submit(&mut self, k: &mut Kernel) -> Option<u32> {
        if self.filling.is_empty() {
            return None;
        }
        let bio = k.block.bios.alloc(self.device, Op::Read);
        let pages = std::mem::take(&mut self.filling_pages) as u64;
        let bytes = pages * 4096;
        if self.file_pages > 0 {
            self.index = (self.index + pages) % self.file_pages;
        } else {
            // An endless file's index: the folios' alignment and the offsets traced.
            self.index += pages;
        }
        std::mem::swap(&mut k.block.bios[bio].pages, &mut self.filling);
        k.submit_bio(bio, bytes);
        let thrashing = std::mem::take(&mut self.filling_thrashing);
        self.in_flight.push_back((bio, thrashing, pages));
        Some(bio)
    }

    /// `filemap_read()` of the oldest window: wait for its read, mark its folios accessed
    /// and copy them to user space. Returns the bytes copied (0 if nothing was in flight).
    pub async fn read(&mut self, cx: &Cx) -> u64 {
        let Some(&(bio, thrashing, n)) = self.in_flight.front() else {
            return 0;
        };
        // folio_wait_bit_common(): waiting for a restored workingset folio's read stalls.
        let pflags = thrashing.then(|| psi_memstall_enter(cx));
        wait_on_bio(cx, bio).await;
        if let Some(pflags) = pflags {
            psi_memstall_leave(cx, pflags);
        }
        self.in_flight.pop_front();
        self.hit_waits = false;
        if self.sync_read == Some(bio) {
            self.sync_read = None;
        }
        let mut k = cx.k();
        let mut folios = std::mem::take(&mut k.block.bios[bio].pages);
        self.copy(&mut k, cx, &mut folios, n, true);
        folios.clear();
        k.block.bios[bio].pages = folios;
        let now = k.now;
        k.block.bios.put(bio, now);
        n * 4096
    }

    /// The copy of `folios` to user space: unlocked if their read (`dma`) just ended, marked
    /// accessed (`folio_mark_accessed()`: a second access activates), the memory traffic and
    /// the copy's CPU time. With `variant.workingset` an activation ages the lruvec
    /// (`workingset_activation()`).
    /// `n` is their pages.
    fn copy(&self, k: &mut Kernel, cx: &Cx, folios: &mut [u32], n: u64, dma: bool) {
        // The read's DMA and the copy's read hit the folios' node, the copy's write ours.
        let now = k.now;
        let page_node = folios
            .first()
            .map_or(cx.node, |&p| k.mem.zones[k.page_zone(p)].nid);
        let activated = k.folio_mark_accessed_after_read(folios, self.mapping);
        k.mem.nodes[page_node as usize]
            .memory
            .add(now, (1 + u64::from(dma)) * n * 4096);
        k.mem.nodes[cx.node as usize].memory.add(now, n * 4096);
        let copy = k.mem.nodes[page_node as usize]
            .memory
            .scale(n * k.costs.copy_to_user_ns);
        k.charge(copy);
        if activated > 0 {
            let lv = k.mem_cgroup_lruvec(ROOT_MEM_CGROUP, page_node);
            let at = k.clock();
            let hold = activated * k.costs.lru_add_ns;
            let lock = k.lru_lock(lv, cx.node, hold, at);
            k.charge(lock.total());
            if k.variant.workingset {
                k.workingset_age_nonresident(lv, activated);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::readahead_window;
    use crate::mm::vmstat::VmEvent;
    use crate::mm::zone::{WMARK_MIN, ZONE_NORMAL};
    use crate::process::Sim;
    use crate::testing::*;

    /// One 64 MiB node whose Normal zone has `above_min` free pages above its min watermark
    /// and nothing reclaimable, and a buffered reader with `depth` windows of 32 pages.
    fn squeezed(noretry: bool, above_min: u64, depth: i64) -> (Sim, u32, Vec<u32>) {
        let variant = format!("[variant]\nreadahead_noretry = {noretry}\n");
        let mut sim = Sim::new(kernel_with(64, 0, &variant));
        let held = {
            let mut k = sim.k();
            let normal = zone_of(&k, ZONE_NORMAL);
            let min = k.mem.zones[normal].wmark_pages(WMARK_MIN);
            fill_zone(&mut k, normal, min + above_min, 0)
        };
        let dd = add_dd_with(&mut sim, depth);
        (sim, dd, held)
    }

    /// Runs events until `done` holds (at most `limit` of them).
    fn run_until(sim: &mut Sim, limit: usize, mut done: impl FnMut(&Sim) -> bool) -> bool {
        for _ in 0..limit {
            if done(sim) {
                return true;
            }
            run_next(sim);
        }
        done(sim)
    }

    fn pgpgin_kb(sim: &Sim) -> u64 {
        sim.k().stats.events.get(VmEvent::PgpginKb)
    }

    #[test]
    fn a_noretry_window_is_cut_where_its_allocation_fails() {
        // Five pages above min, but the watermark checks read NR_FREE_PAGES without the
        // CPU's delta: refills of pcp->batch = 3 (16384 pages: 16 / 4 = 4 → 3) leave it at
        // min + 5 until the third refill's −9 passes the threshold 6 (4 CPUs, fls 3, a zone
        // under 128 MiB: 2 · 3 · 1) and folds. The window gets 7 pages, two below min; its
        // next allocation finds nothing to reclaim (the 7 are locked for their read) and
        // gives up.
        let (mut sim, _, _) = squeezed(true, 5, 2);
        assert!(run_until(&mut sim, 10_000, |s| pgpgin_kb(s) > 0));
        assert_eq!(pgpgin_kb(&sim), 7 * 4, "a window of the seven pages read");
        let k = sim.k();
        assert_eq!(k.block.bios.nr_in_use(), 1);
        assert_eq!(
            allocstalls(&k),
            1,
            "one round of direct reclaim, then no retry"
        );
        assert_eq!(k.stats.nr_oom_retries, 0);
    }

    #[test]
    fn without_noretry_the_window_waits_for_its_pages() {
        let (mut sim, _, _) = squeezed(false, 5, 2);
        assert!(run_until(&mut sim, 10_000, |s| s.k().stats.nr_oom_retries > 0));
        assert_eq!(
            pgpgin_kb(&sim),
            0,
            "no read submitted: the allocation retries"
        );
        assert!(
            allocstalls(&sim.k()) > 16,
            "retried after each failed reclaim"
        );
    }

    #[test]
    fn a_folio_readahead_cannot_get_is_read_synchronously_before_reading_ahead() {
        // Depth 3, so that without a synchronous read the reader would read ahead again
        // before copying.
        let (mut sim, _, mut held) = squeezed(true, 5, 3);
        assert!(run_until(&mut sim, 10_000, |s| pgpgin_kb(s) > 0));
        // The next window cannot get its first folio under __GFP_NORETRY: the reader
        // allocates it with the mapping's mask, which retries until memory is freed.
        assert!(run_until(&mut sim, 100_000, |s| s.k().stats.nr_oom_retries > 0));
        assert_eq!(pgpgin_kb(&sim), 28, "seven pages: see the test above");
        {
            let mut guard = sim.k();
            let k = &mut *guard;
            let normal = zone_of(k, ZONE_NORMAL);
            for p in held.drain(..200) {
                k.mem.zones[normal].free_one_page(&mut k.mem.pages, p, 0);
            }
        }
        assert!(run_until(&mut sim, 10_000, |s| pgpgin_kb(s) > 28));
        assert_eq!(pgpgin_kb(&sim), 28 + 4, "the one folio, read on its own");
        // It is copied, after the cut window before it, before anything more is read.
        assert!(run_until(&mut sim, 100_000, |s| pgpgin_kb(s) > 32));
        assert_eq!(
            sim.k().block.bios.nr_in_use(),
            1,
            "both earlier reads were copied before the next window was read"
        );
    }

    #[test]
    fn readahead_window_is_read_ahead_kb_whatever_the_read_size() {
        // This machine: read_ahead_kb 8192 (2048 pages), bs 4 MiB, max_sectors_kb 4096.
        assert_eq!(readahead_window(2048, 1024, 1024, true), 2048);
        // The model's rule before: at most one read().
        assert_eq!(readahead_window(2048, 1024, 1024, false), 1024);
        // Reads smaller than the window do not shrink it.
        assert_eq!(readahead_window(32, 8, 1024, true), 32);
    }

    #[test]
    fn a_read_larger_than_the_window_reads_ahead_up_to_the_devices_io_size() {
        // ractl_max_pages(): req_size > ra_pages and io_pages > ra_pages.
        assert_eq!(readahead_window(32, 1024, 128, true), 128);
        assert_eq!(readahead_window(32, 64, 128, true), 64);
        // io_pages no larger than the window: the window.
        assert_eq!(readahead_window(256, 1024, 128, true), 256);
        // Seed 000's fitted window, without the switch.
        assert_eq!(readahead_window(48, 1024, 128, false), 48);
    }
}
