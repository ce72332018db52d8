//! The simulated machine and kernel state: nodes (`pg_data_t`), zones, the page array,
//! lruvecs and memory cgroups, swap, per-CPU state, the block layer, the counters, and the
//! tasks. The code that runs on it lives elsewhere: reclaim in `mm::vmscan`, allocation in
//! `mm::page_alloc`, the page cache in `mm::filemap`, processes and their scheduling in
//! `process`, workloads in `workload`. This module imports none of them: only the state
//! types of `mm`, `hw` and `sched` (as the kernel's headers hold its structs), the settings
//! it is built from (`machine`, `variant`) and the boot of its memory (`mm::mm_init`), so no
//! module imports another in a circle. `Kernel::new` is the list of parts, each built by its
//! own module.

use crate::engine::{EventKind, Ns};
use crate::hw::block::{BlockLayer, Op};
use crate::hw::cpu::Cpus;
use crate::hw::lock::{Acquired, LockCosts};
use crate::machine::{Costs, Machine};
use crate::mm::address_space::AddressSpaces;
use crate::mm::backing_dev::Writeback;
use crate::mm::lru::NR_LRU_LISTS;
use crate::mm::mem_cgroup::MemCgroups;
use crate::mm::mm_init::{free_area_init, Memory, PAGE_WAIT_TABLE_SIZE};
use crate::mm::page::{pg, Pages};
use crate::mm::pcp::PcpEra;
use crate::mm::percpu::PerCpu;
use crate::mm::swapfile::SwapState;
use crate::mm::vma::PageTables;
use crate::mm::vmstat::{VmEvent, VmEvents, VmstatSnapshot, NR_STAT_ITEMS};
use crate::mm::zone::{Zone, MAX_ORDER_NR_PAGES};
use crate::psi::PsiGroup;
use crate::sched::{Sched, TaskClass, WaitQueue};
use crate::sysctl::Sysctl;
use crate::variant::Variant;

/// `kswapd_failures` at which a node is considered hopeless (MAX_RECLAIM_RETRIES).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// What a run counts and marks, beside the kernel's state: the vm events, and the moments
/// measurement windows start from.
#[derive(Default)]
pub struct Stats {
    /// `vm_event_states`: the events /proc/vmstat prints (`mm::vmstat`).
    pub events: VmEvents,
    /// Allocations whose retries ran out (`__alloc_pages_may_oom` would be next; the OOM
    /// killer is not modelled and the allocation retries).
    pub nr_oom_retries: u64,
    /// When kswapd first woke (for windows that start there).
    pub first_kswapd_wake: Option<Ns>,
    /// When kswapd first scanned.
    pub first_kswapd_scan: Option<Ns>,
    /// Each node's NUMA counters as /sys/devices/system/node/node<N>/numastat has them
    /// (`numa_hit`, `numa_miss`, `numa_foreign`, `interleave_hit`, `local_node`,
    /// `other_node`, indexed by `mm::vmstat::NumaStat`); /proc/vmstat's are their sums.
    pub numastat: Vec<[u64; crate::mm::vmstat::NR_NUMA_STATS]>,
    /// Lumpy reclaim's synchronous passes (`should_reclaim_stall()` said yes), and the
    /// pages they reclaimed: model-internal, not in /proc/vmstat (2.6.36 counts neither).
    pub lumpy_sync: [u64; 2],
}

pub struct Kernel {
    /// When the running slice started (the event that ran the current task).
    pub now: Ns,
    /// CPU time the current task has used in its running slice: work it does is charged
    /// here and ends, with the slice, when the task yields.
    pub slice: Ns,
    /// The part of `slice` spent in user mode (a workload's own work, not the kernel's).
    pub slice_user: Ns,
    /// The task whose process is running (for tracepoints and accounting).
    pub current: u32,
    /// Nodes, zones and the page array (`mm::mm_init::Memory`).
    pub mem: Memory,
    /// The VMAs and page tables of the tasks' address spaces (`mm::vma`).
    pub mm: PageTables,
    /// Swap areas, the swap cache and swap readahead's state (`mm::swap_state`).
    pub swap: SwapState,
    /// The scenario's seed, from which workloads seed their own generators.
    pub seed: u64,
    /// The memory cgroups and their lruvecs, one per (cgroup, node) (`mm::mem_cgroup`).
    pub memcg: MemCgroups,
    /// The counters and marks a run reports (`Stats`).
    pub stats: Stats,
    pub sched: Sched,
    pub cpus: Cpus,
    /// Memory pressure stall information, `psi_system` (`psi`).
    pub psi: PsiGroup,
    /// The page-cache indexes of files of known size (`mm::address_space`).
    pub address_spaces: AddressSpaces,
    /// Per-CPU state: page-list refills, LRU-add batches (`mm::percpu`).
    pub percpu: PerCpu,
    /// The block devices and the I/Os in flight (`hw::block`).
    pub block: BlockLayer,
    /// Dirty pages, writeback and the flushers (`mm::backing_dev`).
    pub wb: Writeback,
    pub costs: Costs,
    pub lock_costs: LockCosts,
    pub sysctl: Sysctl,
    pub variant: Variant,
    pub tracer: Option<reclaim_trace::writer::TraceWriter<Box<dyn std::io::Write>>>,
}

impl Kernel {
    /// Build the machine of a scenario: nodes, zones (all memory free), watermarks, devices
    /// (their jitter generators seeded from `seed`).
    pub fn new(
        m: &Machine,
        sysctl: &Sysctl,
        costs: &Costs,
        variant: &Variant,
        seed: u64,
    ) -> Kernel {
        let (mut mem, root_lruvecs) = free_area_init(m, sysctl, variant);
        let cpus = Cpus::new(m.nodes, m.cpus_per_node);
        let nr_cpus = cpus.nr_cpus() as usize;
        let era = PcpEra {
            before_5_14: variant.pcp_before_5_14,
            high_order_lists: !variant.pcp_before_5_14,
            high_fraction: 0,
        };
        let percpu = PerCpu::new(nr_cpus, &mut mem.zones, m.cpus_per_node, era);
        let nr_pages = mem.pages.nr_pages();
        Kernel {
            now: 0,
            slice: 0,
            slice_user: 0,
            current: 0,
            mem,
            mm: PageTables::default(),
            swap: SwapState::new(sysctl, variant),
            seed,
            memcg: MemCgroups::new(root_lruvecs),
            stats: Stats {
                numastat: vec![[0; crate::mm::vmstat::NR_NUMA_STATS]; m.nodes as usize],
                ..Stats::default()
            },
            sched: Sched::default(),
            cpus,
            psi: PsiGroup::new(nr_cpus as u32),
            address_spaces: AddressSpaces::new(u64::from(nr_pages)),
            percpu,
            block: BlockLayer::new(&m.devices, seed),
            wb: Writeback {
                fs: m.fs,
                ..Writeback::new(
                    m.nodes as usize,
                    m.devices.iter().map(|d| d.count as usize).sum(),
                )
            },
            costs: costs.clone(),
            lock_costs: LockCosts::new(
                costs.lock_handoff_ns,
                costs.lock_per_waiter_ns,
                costs.remote_factor,
            ),
            sysctl: sysctl.clone(),
            variant: variant.clone(),
            tracer: None,
        }
    }

    /// The current task's clock: when its running slice started plus the CPU time it has
    /// used since.
    #[inline]
    pub fn clock(&self) -> Ns {
        self.now + self.slice
    }

    /// The current task spends `ns` of CPU time.
    #[inline]
    pub fn charge(&mut self, ns: Ns) {
        self.slice += ns;
    }

    /// The current task spends `ns` of CPU time in user mode (its program's own work).
    #[inline]
    pub fn charge_user(&mut self, ns: Ns) {
        self.slice += ns;
        self.slice_user += ns;
    }

    /// `kill(pid, SIGKILL)`: the task's process returns at its next return to user space
    /// ([`crate::process::fatal_signal_pending`]). Departure: `signal_wake_up()` would cut
    /// short a killable sleep; here a sleeping task wakes when its sleep ends (a workload's
    /// sleeps in the kernel are short: throttling, I/O waits).
    pub fn send_sigkill(&mut self, tid: u32) {
        let t = &mut self.sched.tasks[tid as usize];
        if !t.exited {
            t.sigkill = true;
        }
    }

    /// A new task bound to `cpu`, not yet runnable (its process is `process::Sim::spawn`'s).
    pub fn add_task(&mut self, comm: String, cpu: u32, class: TaskClass) -> u32 {
        let id = self.sched.tasks.len() as u32;
        assert!(id <= crate::engine::MAX_EVENT_ID, "too many tasks");
        let node = self.cpus.node_of(cpu);
        self.sched.tasks.push(crate::sched::Task {
            pid: 100 + id,
            comm,
            cpu,
            node,
            class,
            user_ns: 0,
            sys_ns: 0,
            next_at: None,
            req: crate::sched::Req::Run,
            woken: false,
            memcg_nr_pages_over_high: 0,
            psi_flags: 0,
            in_memstall: false,
            in_iowait: false,
            backing_dev_info: None,
            sigkill: false,
            exited: false,
            mempolicy: Default::default(),
        });
        id
    }

    /// `page_zone()`: the zone index of a page frame.
    #[inline]
    pub fn page_zone(&self, pfn: u32) -> usize {
        self.mem.block_zone[(pfn / MAX_ORDER_NR_PAGES) as usize] as usize
    }

    /// `folio_zonenum()`: the zone type (ZONE_NORMAL, …) of a page frame.
    #[inline]
    pub fn page_zonenum(&self, pfn: u32) -> usize {
        zonenum(&self.mem.block_zone, &self.mem.zones, pfn)
    }

    /// The page array, to change, beside [`Kernel::page_zonenum`] of any page frame: for a
    /// walk of a list that changes the pages it takes as it decides by their zones. The
    /// lookup remembers the last block it read (a list's pages come in runs of one block, as
    /// they were allocated).
    #[inline]
    pub fn pages_and_zonenum(&mut self) -> (&mut Pages, impl FnMut(u32) -> usize + '_) {
        let (block_zone, zones) = (&self.mem.block_zone, &self.mem.zones);
        let mut last = (u32::MAX, 0);
        let lookup = move |pfn: u32| {
            let block = pfn / MAX_ORDER_NR_PAGES;
            if block != last.0 {
                last = (block, zonenum(block_zone, zones, pfn));
            }
            last.1
        };
        (&mut self.mem.pages, lookup)
    }

    /// The zone of `pages[0]` and how many pages from the start of `pages` share it: the
    /// batches that go to one zone's lists or locks (an allocation run, a freed batch).
    /// `pages` is not empty.
    #[inline]
    pub fn zone_run(&self, pages: &[u32]) -> (usize, usize) {
        let zi = self.page_zone(pages[0]);
        // A zone is one pfn range (`block_zone` is built from them): one comparison a page.
        let z = &self.mem.zones[zi];
        let (start, len) = (z.start_pfn, z.end_pfn() - z.start_pfn);
        let n = pages
            .iter()
            .take_while(|&&p| p.wrapping_sub(start) < len)
            .count();
        debug_assert!(pages[..n].iter().all(|&p| self.page_zone(p) == zi));
        debug_assert!(pages.get(n).is_none_or(|&p| self.page_zone(p) != zi));
        (zi, n)
    }

    /// `mem_cgroup_lruvec(memcg, pgdat)`: the index in `lruvecs` of memory cgroup `memcg`'s
    /// lruvec on node `nid`.
    #[inline]
    pub fn mem_cgroup_lruvec(&self, memcg: u16, nid: u32) -> usize {
        usize::from(memcg) * self.mem.nodes.len() + nid as usize
    }

    /// `folio_lruvec()`: the lruvec of folio `p`, from its memory cgroup and node.
    #[inline]
    pub fn folio_lruvec(&self, p: u32) -> usize {
        let nid = self.mem.zones[self.page_zone(p)].nid;
        self.mem_cgroup_lruvec(self.mem.page_ext.folio_memcg(p), nid)
    }

    /// Take lruvec `lv`'s lru_lock from a CPU on `cpu_node` for `hold` ns at `at` (the
    /// current time, or later within the current slice).
    #[inline]
    pub fn lru_lock(&mut self, lv: usize, cpu_node: u32, hold: Ns, at: Ns) -> Acquired {
        self.memcg.lruvecs[lv]
            .lru_lock
            .acquire(self.now, at, cpu_node, hold, &self.lock_costs)
    }

    #[inline]
    pub fn zone_lock(&mut self, zi: usize, cpu_node: u32, hold: Ns, at: Ns) -> Acquired {
        self.mem.zone_lock[zi].acquire(self.now, at, cpu_node, hold, &self.lock_costs)
    }

    /// `submit_bio()` of I/O `bio` at the current task's clock: the device takes it and says
    /// when it completes.
    pub fn submit_bio(&mut self, bio: u32, bytes: u64) {
        let op = self.block.bios[bio].op;
        let at = self.clock();
        let segments = self.bio_segments(bio, bytes);
        self.block.submit_bio(bio, at, bytes, None, segments);
        if op == Op::Read {
            self.count(VmEvent::PgpginKb, bytes / 1024);
        } else {
            self.count(VmEvent::PgpgoutKb, bytes / 1024);
        }
    }

    /// The scatter-gather segments of I/O `bio` of `bytes` (`blk_rq_map_sg()`), if its device
    /// charges them (0 if not): one per run of physically contiguous pages of its folios
    /// (`bvec_try_merge_page()`, 6.x: a large folio is one run, and merges with a folio
    /// that starts where it ends), and an I/O without folios, a direct I/O into user memory,
    /// one per 4 KiB page (a buffer of base pages that are not contiguous: the worst case,
    /// which a 4 MiB `malloc` under THP `madvise` meets). Without either large-folio switch
    /// (`variant.large_folios()`) every page-cache folio is order 0 and a window or a write
    /// is as contiguous as the allocator's runs, so under reclaim it has more segments than
    /// the 6.x kernel's large folios give. Segments are not split at
    /// the queue's `max_segment_size`.
    pub(crate) fn bio_segments(&self, bio: u32, bytes: u64) -> u64 {
        let b = &self.block.bios[bio];
        if !self.block.devices[b.dev].charges_segments() {
            return 0;
        }
        if b.pages.is_empty() {
            return bytes.div_ceil(4096);
        }
        if self.variant.large_folios() {
            // A folio's pages are contiguous: the next folio continues the segment if it
            // starts where this one ends.
            let pages = &self.mem.pages;
            let end = |p: u32| p + (1u32 << pages.fields(p).order);
            return 1 + b.pages.windows(2).filter(|w| w[1] != end(w[0])).count() as u64;
        }
        1 + b.pages.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64
    }

    /// `submit_bio()` of swap I/O `bio` at byte `offset` of its device, with its completion
    /// queued (`Bio::end_io`); a rotational device seeks to a non-contiguous offset.
    pub fn submit_bio_endio_at(&mut self, bio: u32, bytes: u64, offset: u64) {
        let op = self.block.bios[bio].op;
        let at = self.clock();
        let segments = self.bio_segments(bio, bytes);
        self.block
            .submit_bio(bio, at, bytes, Some(offset), segments);
        if op == Op::Read {
            self.count(VmEvent::PgpginKb, bytes / 1024);
        } else {
            self.count(VmEvent::PgpgoutKb, bytes / 1024);
            if self.variant.reclaim_wait.congestion() {
                self.blk_get_requests(bio, bytes);
            }
        }
        let b = &mut self.block.bios[bio];
        debug_assert!(!b.endio_queued);
        b.endio_queued = true;
        let at = b.done_at;
        self.sched.queue.push(at, EventKind::Io(bio));
    }

    /// Task `tid` waits for I/O `bio`, which has not completed: it goes on the I/O's wait
    /// queue, and the completion event is queued if it is not yet.
    pub fn bio_add_waiter(&mut self, bio: u32, tid: u32) {
        let b = &mut self.block.bios[bio];
        b.waiters.add(tid);
        if !b.endio_queued {
            b.endio_queued = true;
            let at = b.done_at;
            self.sched.queue.push(at, EventKind::Io(bio));
        }
    }

    /// `bio_endio()` of I/O `bio`: the tasks waiting for it, taken off its wait queue and
    /// appended to `waiters` (`process::Sim::complete_io` runs each; one may reuse the I/O's
    /// slot, so all are taken first).
    pub fn bio_endio(&mut self, bio: u32, waiters: &mut Vec<u32>) {
        let b = &mut self.block.bios[bio];
        debug_assert!(b.done(self.now));
        b.endio_queued = false;
        while let Some(w) = b.waiters.pop_first() {
            waiters.push(w);
        }
    }

    /// Bytes of per-page simulator state: the page descriptors (with list heads), the
    /// side arrays in use, the pfn → zone table and the pageblocks' types. Per-task and per-node state is
    /// independent of memory size.
    pub fn page_state_bytes(&self) -> u64 {
        self.mem.pages.state_bytes()
            + self.mem.page_ext.state_bytes()
            + self.mem.block_zone.len() as u64
            + self
                .mem
                .zones
                .iter()
                .map(|z| z.pageblock_mt.len() as u64)
                .sum::<u64>()
            + self.mm.state_bytes()
            + self.swap.state_bytes()
    }

    /// `folio_waitqueue()`: the wait queue of folio `p`.
    #[inline]
    pub fn folio_waitqueue(&mut self, p: u32) -> &mut WaitQueue {
        &mut self.mem.page_wait[p as usize % PAGE_WAIT_TABLE_SIZE]
    }

    /// `folio_wake_bit()`: wake the tasks waiting on folio `p`'s queue (each re-checks its
    /// own folio, as the kernel's waiters do after a hashed wake-up).
    pub fn folio_wake(&mut self, p: u32) {
        let now = self.now;
        let q = &mut self.mem.page_wait[p as usize % PAGE_WAIT_TABLE_SIZE];
        if q.is_active() {
            q.wake_up_all(&mut self.sched, now);
        }
    }

    /// Σ of the pages on the buddy lists (NR_FREE_PAGES with every per-CPU delta folded).
    pub fn nr_free_pages(&self) -> u64 {
        self.mem.zones.iter().map(|z| z.nr_free_pages).sum()
    }

    /// `global_zone_page_state(NR_FREE_PAGES)`: what /proc/vmstat prints, without the
    /// per-CPU deltas.
    pub fn global_nr_free_pages(&self) -> u64 {
        self.mem
            .zones
            .iter()
            .map(|z| z.zone_page_state_free())
            .sum()
    }

    /// Every free page: the buddy lists' and the per-CPU lists' (no kernel counter has it).
    pub fn nr_free_pages_true(&self) -> u64 {
        self.nr_free_pages() + self.percpu.pcp.total()
    }

    pub fn managed_pages(&self) -> u64 {
        self.mem.zones.iter().map(|z| z.managed_pages).sum()
    }

    /// The /proc/vmstat counters now.
    pub fn vmstat(&self) -> VmstatSnapshot {
        let mut stats = [0u64; NR_STAT_ITEMS.len()];
        stats[0] = self.global_nr_free_pages();
        for lv in &self.memcg.lruvecs {
            for (lru, stat) in stats[1..=NR_LRU_LISTS].iter_mut().enumerate() {
                *stat += lv.total(lru);
            }
        }
        for n in &self.mem.nodes {
            stats[6] += n.nr_isolated[0];
            stats[7] += n.nr_isolated[1];
            stats[8] += n.workingset.refault[0];
            stats[9] += n.workingset.activate[0];
            stats[10] += n.workingset.restore[0];
            stats[11] += n.nr_file_pages;
            stats[12] += n.nr_vmscan_write;
        }
        for n in &self.wb.nodes {
            stats[13] += n.nr_dirty;
            stats[14] += n.nr_writeback;
            stats[15] += n.nr_vmscan_immediate;
            stats[16] += n.nr_dirtied;
            stats[17] += n.nr_written;
        }
        let (bg_thresh, thresh) = self.global_dirty_limits();
        stats[18] = thresh;
        stats[19] = bg_thresh;
        let workingset_file = self.variant.workingset.then(|| {
            let ws = |f: fn(&crate::mm::vmstat::WorkingsetStats) -> u64| {
                self.mem.nodes.iter().map(|n| f(&n.workingset)).sum::<u64>()
            };
            [
                self.address_spaces.nr_shadow_nodes,
                ws(|w| w.refault[1]),
                ws(|w| w.activate[1]),
                ws(|w| w.restore[1]),
                self.address_spaces.nodereclaim,
            ]
        });
        VmstatSnapshot {
            stats,
            workingset_file,
            events: self.stats.events.v,
            compaction: self.mem.nodes.iter().any(|n| n.kcompactd.is_some()),
            thp: self.thp_faults_possible(),
            nr_mapped: self
                .mm
                .file_mapped
                .then(|| self.mem.nodes.iter().map(|n| n.nr_file_mapped).sum()),
            nr_file_hugepages: self
                .variant
                .large_folios()
                .then(|| self.mem.nodes.iter().map(|n| n.nr_file_thps).sum()),
            node_reclaim: self.sysctl.zone_reclaim_mode != 0,
        }
    }

    /// Pages reclaim has isolated from the LRU lists (NR_ISOLATED_ANON + NR_ISOLATED_FILE
    /// of every node).
    fn nr_isolated_pages(&self) -> u64 {
        let nodes = self.mem.nodes.iter();
        nodes.map(|n| n.nr_isolated[0] + n.nr_isolated[1]).sum()
    }

    /// Pages are conserved: every page is free (on the buddy or per-CPU lists), on an LRU
    /// list, isolated, a hugetlb page's, a compaction's migration target, or in flight in
    /// a task's hands (`held`). Checked in debug builds during every test run.
    pub fn check_conservation(&self, held: u64) -> Result<(), String> {
        let free = self.nr_free_pages();
        let on_lru: u64 = self
            .memcg
            .lruvecs
            .iter()
            .map(|lv| (0..NR_LRU_LISTS).map(|l| lv.total(l)).sum::<u64>())
            .sum();
        let isolated = self.nr_isolated_pages();
        let managed = self.managed_pages();
        // A squeeze's hugetlb pages left the buddy lists but stay managed.
        let held = held
            + self.mem.hugetlb_pages
            + self.mem.kernel_pages
            + self.mem.compaction_freepages
            + self.percpu.pcp.total()
            + self
                .percpu
                .lru_add_anon
                .iter()
                .map(|b| b.len() as u64)
                .sum::<u64>();
        if free + on_lru + isolated + held != managed {
            return Err(format!(
                "pages not conserved: free {free} + lru {on_lru} + isolated {isolated} + held {held} != managed {managed}"
            ));
        }
        Ok(())
    }

    /// Every page frame is in exactly one place (slow: tests only): inside one free block on
    /// a buddy list, on one per-CPU list, in a folio on one LRU list (a large folio's tails
    /// with it), in one CPU's LRU-add batch, in the kernel's own memory (`pg::SLAB`), in a
    /// compound page nobody owns (a hugetlb page), or in `held` (pages the caller knows a
    /// task holds) — but for the isolated
    /// folios and compactions' targets, which tasks hold in lists of their own: the pages in
    /// no place are exactly as many.
    pub fn check_page_places(&self, held: &[u32]) -> Result<(), String> {
        use crate::mm::page::NO_OWNER;
        use crate::mm::zone::{MIGRATE_TYPES, NR_PAGE_ORDERS};
        let isolated = self.nr_isolated_pages();
        let unlisted = isolated + self.mem.compaction_freepages;
        let pages = &self.mem.pages;
        let mut places = vec![0u8; pages.nr_pages() as usize];
        let mut put = |p: u32, n: u32| {
            for q in p..p + n {
                places[q as usize] += 1;
            }
        };
        for z in &self.mem.zones {
            for o in 0..NR_PAGE_ORDERS {
                for mt in 0..MIGRATE_TYPES {
                    for p in pages.iter(z.free_lists[o][mt]) {
                        put(p, 1 << o);
                    }
                }
            }
        }
        for i in 0..self.percpu.pcp.count.len() {
            for p in self.percpu.pcp.pages(i) {
                put(p, 1);
            }
            for &p in self.percpu.pcp.thp_blocks(i) {
                put(p, 1 << crate::mm::zone::PAGEBLOCK_ORDER);
            }
        }
        for lv in &self.memcg.lruvecs {
            for lru in 0..NR_LRU_LISTS {
                for p in pages.iter(lv.list(lru)) {
                    put(p, 1 << pages.fields(p).order);
                }
            }
        }
        for batch in &self.percpu.lru_add_anon {
            for &p in batch {
                put(p, 1);
            }
        }
        for p in 0..pages.nr_pages() {
            let f = pages.fields(p);
            if f.flags & pg::SLAB != 0
                || f.order > 0
                    && f.flags & (pg::BUDDY | pg::TAIL | pg::LRU) == 0
                    && f.owner == NO_OWNER
            {
                put(p, 1 << f.order);
            }
        }
        for &p in held {
            put(p, 1);
        }
        if let Some(p) = places.iter().position(|&n| n > 1) {
            return Err(format!(
                "pfn {p} is in {} places (flags {:#x})",
                places[p],
                pages.flags(p as u32)
            ));
        }
        let nowhere = places.iter().filter(|&&n| n == 0).count() as u64;
        if nowhere != unlisted {
            let p = places.iter().position(|&n| n == 0).unwrap_or(0);
            return Err(format!(
                "{nowhere} pages in no place (the first pfn {p}, flags {:#x}) != {isolated} isolated + {} compaction targets",
                pages.flags(p as u32),
                self.mem.compaction_freepages
            ));
        }
        Ok(())
    }

    /// Walk every list and check the per-zone sizes (in pages, a large folio counting all
    /// of its) and flags (slow: tests only).
    pub fn check_lists(&self) -> Result<(), String> {
        for lv in &self.memcg.lruvecs {
            for lru in 0..NR_LRU_LISTS {
                let walked: u64 = self
                    .mem
                    .pages
                    .iter(lv.list(lru))
                    .map(|p| crate::mm::page::folio_nr_pages(self.mem.pages.fields(p)))
                    .sum();
                if walked != lv.total(lru) {
                    return Err(format!(
                        "node {} memcg {} lru {lru}: walked {walked} != counted {}",
                        lv.nid,
                        lv.memcg,
                        lv.total(lru)
                    ));
                }
            }
        }
        for z in &self.mem.zones {
            z.check_free_lists(&self.mem.pages)?;
        }
        self.check_large_folios()
    }

    /// Every tail page belongs to the large folio its owner names (a head, not free, whose
    /// order covers it), and every large folio's pages after its head are its tails: a page
    /// is in one place only (slow: tests only).
    pub fn check_large_folios(&self) -> Result<(), String> {
        let pages = &self.mem.pages;
        for p in 0..pages.nr_pages() {
            let f = pages.fields(p);
            if f.flags & pg::TAIL != 0 {
                let head = f.owner;
                let h = pages.fields(head);
                if head >= p || h.flags & (pg::TAIL | pg::BUDDY) != 0 || p - head >= 1u32 << h.order
                {
                    return Err(format!("tail page {p} outside its folio {head}"));
                }
            } else if f.flags & pg::BUDDY == 0 && f.order > 0 {
                let nr = 1u32 << f.order;
                if let Some(t) = (p + 1..p + nr).find(|&t| {
                    let tf = pages.fields(t);
                    tf.flags != pg::TAIL || tf.owner != p
                }) {
                    return Err(format!("page {t} of large folio {p} is not its tail"));
                }
            }
        }
        Ok(())
    }

    #[inline]
    pub fn count(&mut self, e: VmEvent, n: u64) {
        self.stats.events.count(e, n);
    }
}

/// `folio_zonenum()` from the pfn → zone table and the zones.
#[inline]
fn zonenum(block_zone: &[u8], zones: &[Zone], pfn: u32) -> usize {
    zones[block_zone[(pfn / MAX_ORDER_NR_PAGES) as usize] as usize].zone_idx
}

#[cfg(test)]
mod tests {
    use crate::hw::block::Op;
    use crate::testing::kernel_of;

    #[test]
    fn an_ios_segments_are_its_runs_of_contiguous_pages_or_its_user_pages() {
        let text = "[machine]\nmemory_mb_per_node = 64\ndevices = [{ name = \"vda\", segment_us = 2.0 }, { name = \"nvme\" }]\n[workload]\nkind = \"dd\"\ntasks = 1\n";
        let mut k = kernel_of(text);
        let bio = k.block.bios.alloc(0, Op::Read);
        // Page frames 10–13, 20, 21 and 7: three runs, three scatter-gather segments.
        k.block.bios[bio].pages.extend([10, 11, 12, 13, 20, 21, 7]);
        assert_eq!(k.bio_segments(bio, 7 * 4096), 3);
        // No folios: a direct I/O into user memory, a segment per 4 KiB page.
        let direct = k.block.bios.alloc(0, Op::Read);
        assert_eq!(k.bio_segments(direct, 4 << 20), 1024);
        // A device that does not charge segments: none counted.
        let other = k.block.bios.alloc(1, Op::Read);
        assert_eq!(k.bio_segments(other, 4 << 20), 0);
    }
}
