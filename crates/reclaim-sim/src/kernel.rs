//! The simulated machine and kernel state (`pg_data_t`s, zones, pages, tasks, devices) and
//! the task scheduler that drives it. Reclaim lives in `mm::vmscan`, allocation in
//! `mm::page_alloc`, workloads in `workload`.

use crate::engine::{EventKind, EventQueue, Ns};
use crate::hw::block::BlockDevice;
use crate::hw::cpu::Cpus;
use crate::hw::lock::{Acquired, LockCosts, SpinLock};
use crate::hw::memory::MemoryBandwidth;
use crate::mm::lru::{Lruvec, NR_LRU_LISTS};
use crate::mm::page::Pages;
use crate::mm::vmscan::KswapdTask;
use crate::mm::vmstat::{VmEvent, VmEvents, VmstatSnapshot, NR_STAT_ITEMS};
use crate::mm::zone::{
    calculate_min_free_kbytes, setup_per_zone_lowmem_reserve, setup_per_zone_wmarks, Zone,
    MAX_NR_ZONES, MAX_ORDER_NR_PAGES, NR_PAGE_ORDERS, ZONE_DMA32, ZONE_NORMAL,
};
use crate::scenario::{Costs, Scenario, Sysctl};
use crate::workload::dd::DdTask;

/// `kswapd_failures` at which a node is considered hopeless (MAX_RECLAIM_RETRIES).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// A NUMA node: `pg_data_t`.
#[derive(Debug)]
pub struct PgData {
    pub node_id: u32,
    /// Indices into `Kernel::zones` of this node's zones, lowest zone type first.
    pub zones: Vec<usize>,
    pub start_pfn: u32,
    pub end_pfn: u32,
    pub lruvec: Lruvec,
    pub lru_lock: SpinLock,
    pub memory: MemoryBandwidth,
    /// Task ids of this node's kswapd threads.
    pub kswapd: Vec<u32>,
    /// Threads waiting on `kswapd_wait` (asleep or napping in `kswapd_try_to_sleep`).
    pub kswapd_wait: Vec<u32>,
    pub kswapd_order: u32,
    /// MAX_NR_ZONES is the "no request" sentinel.
    pub kswapd_highest_zoneidx: usize,
    pub kswapd_failures: u32,
    /// Direct reclaimers throttled on `pfmemalloc_wait` by `throttle_direct_reclaim`, in the
    /// order they went to sleep; kswapd's `wake_up_all` empties it.
    pub pfmemalloc_wait: Vec<u32>,
    /// NR_ISOLATED_ANON, NR_ISOLATED_FILE.
    pub nr_isolated: [u64; 2],
    /// NR_FILE_PAGES.
    pub nr_file_pages: u64,
}

pub enum TaskKind {
    Dd(Box<DdTask>),
    Kswapd(Box<KswapdTask>),
    /// Placeholder while the task's state is borrowed by its own step.
    Running,
}

/// A task (thread) with its CPU binding and accounting.
pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub cpu: u32,
    pub node: u32,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub kind: TaskKind,
    /// The time of the task's one live event; an event at any other time is stale (the task
    /// was woken earlier than a timer it had set) and is dropped.
    pub next_at: Option<Ns>,
}

/// What a task's step asks of the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run again after `cpu` ns of system time on its CPU.
    Run { sys: Ns },
    /// Used `sys` ns of CPU, then block until `at` (an I/O completion or a timer).
    Sleep { sys: Ns, at: Ns },
    /// Used `sys` ns of CPU, then block until woken by another task.
    Wait { sys: Ns },
}

pub struct Kernel {
    pub now: Ns,
    pub pages: Pages,
    pub zones: Vec<Zone>,
    pub zone_lock: Vec<SpinLock>,
    pub nodes: Vec<PgData>,
    /// `node_zonelists[ZONELIST_FALLBACK]` per node: zone indices, local node first, each
    /// node's zones from the highest type down.
    pub zonelists: Vec<Vec<usize>>,
    pub events: VmEvents,
    pub tasks: Vec<Task>,
    pub cpus: Cpus,
    pub devices: Vec<BlockDevice>,
    pub queue: EventQueue,
    pub costs: Costs,
    pub lock_costs: LockCosts,
    pub sysctl: Sysctl,
    pub min_free_kbytes: u64,
    /// pfn → zone lookup: the zone index of each MAX_ORDER block.
    block_zone: Vec<u8>,
    /// Page-cache mappings (files), for ownership checks.
    pub nr_mappings: u32,
    /// Set by a step when the measured window should end now.
    pub stop_requested: bool,
    /// When kswapd first woke (for windows that start there).
    pub first_kswapd_wake: Option<Ns>,
    pub first_kswapd_scan: Option<Ns>,
    /// The task whose step is running (for tracepoints).
    pub current: u32,
    pub tracer: Option<crate::tracepoints::Tracer>,
}

impl Kernel {
    /// Build the machine of a scenario: nodes, zones (all memory free), watermarks, devices.
    pub fn new(s: &Scenario) -> Kernel {
        let m = &s.machine;
        let node_pages =
            (m.memory_mb_per_node * 256) / MAX_ORDER_NR_PAGES as u64 * MAX_ORDER_NR_PAGES as u64;
        let dma32_pages =
            (m.dma32_mb * 256) / MAX_ORDER_NR_PAGES as u64 * MAX_ORDER_NR_PAGES as u64;
        let nr_pages = (node_pages * m.nodes as u64) as u32;
        let mut zones = Vec::new();
        let mut nodes = Vec::new();
        let nr_lists_lru = m.nodes * NR_LRU_LISTS as u32;
        let mut pfn = 0u32;
        for nid in 0..m.nodes {
            let start = pfn;
            let mut zids = Vec::new();
            let mut layout = vec![];
            if nid == 0 && dma32_pages > 0 {
                layout.push((ZONE_DMA32, dma32_pages));
                layout.push((ZONE_NORMAL, node_pages - dma32_pages));
            } else {
                layout.push((ZONE_NORMAL, node_pages));
            }
            for (zone_idx, pages) in layout {
                let zi = zones.len();
                let free_list_base = nr_lists_lru + (zi * NR_PAGE_ORDERS) as u32;
                zones.push(Zone::new(zone_idx, nid, pfn, pages, free_list_base));
                zids.push(zi);
                pfn += pages as u32;
            }
            nodes.push(PgData {
                node_id: nid,
                zones: zids,
                start_pfn: start,
                end_pfn: pfn,
                lruvec: Lruvec::new(nid * NR_LRU_LISTS as u32),
                lru_lock: SpinLock::new(nid),
                memory: MemoryBandwidth::new(m.memory_bandwidth_mb_s_per_node),
                kswapd: vec![],
                kswapd_wait: vec![],
                kswapd_order: 0,
                kswapd_highest_zoneidx: MAX_NR_ZONES,
                kswapd_failures: 0,
                pfmemalloc_wait: vec![],
                nr_isolated: [0; 2],
                nr_file_pages: 0,
            });
        }
        let nr_lists = nr_lists_lru + (zones.len() * NR_PAGE_ORDERS) as u32;
        let mut pages = Pages::new(nr_pages, nr_lists);
        let mut block_zone = vec![0u8; (nr_pages / MAX_ORDER_NR_PAGES) as usize];
        for (zi, z) in zones.iter_mut().enumerate() {
            let mut p = z.start_pfn;
            while p < z.end_pfn() {
                block_zone[(p / MAX_ORDER_NR_PAGES) as usize] = zi as u8;
                z.free_one_page(&mut pages, p, (NR_PAGE_ORDERS - 1) as u32);
                p += MAX_ORDER_NR_PAGES;
            }
        }
        // Boot-time watermarks: min_free_kbytes from all (low) memory, then the reserves.
        let lowmem_kbytes: u64 = zones.iter().map(|z| z.managed_pages * 4).sum();
        let min_free_kbytes = if s.sysctl.min_free_kbytes > 0 {
            s.sysctl.min_free_kbytes
        } else {
            calculate_min_free_kbytes(lowmem_kbytes)
        };
        setup_per_zone_wmarks(&mut zones, min_free_kbytes, s.sysctl.watermark_scale_factor);
        for node in &nodes {
            let mut managed = [0u64; MAX_NR_ZONES];
            for &zi in &node.zones {
                managed[zones[zi].zone_idx] = zones[zi].managed_pages;
            }
            let reserve = setup_per_zone_lowmem_reserve(&managed);
            for &zi in &node.zones {
                zones[zi].lowmem_reserve = reserve[zones[zi].zone_idx];
            }
        }
        let zonelists = (0..m.nodes)
            .map(|nid| {
                let mut order: Vec<u32> = vec![nid];
                order.extend((0..m.nodes).filter(|&n| n != nid));
                order
                    .iter()
                    .flat_map(|&n| nodes[n as usize].zones.iter().rev().copied())
                    .collect()
            })
            .collect();
        let zone_lock = zones.iter().map(|z| SpinLock::new(z.nid)).collect();
        let mut devices = Vec::new();
        for d in &m.devices {
            for i in 0..d.count {
                devices.push(BlockDevice::new(
                    format!("{}{}n1", d.name, i),
                    d.bandwidth_mb_s,
                    d.latency_us,
                    d.max_request_kb,
                    d.jitter,
                    s.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ devices.len() as u64,
                ));
            }
        }
        Kernel {
            now: 0,
            pages,
            zones,
            zone_lock,
            nodes,
            zonelists,
            events: VmEvents::default(),
            tasks: Vec::new(),
            cpus: Cpus::new(m.nodes, m.cpus_per_node),
            devices,
            queue: EventQueue::default(),
            costs: s.costs.clone(),
            lock_costs: LockCosts::new(
                s.costs.lock_handoff_ns,
                s.costs.lock_per_waiter_ns,
                s.costs.remote_factor,
            ),
            sysctl: s.sysctl.clone(),
            min_free_kbytes,
            block_zone,
            nr_mappings: 0,
            stop_requested: false,
            first_kswapd_wake: None,
            first_kswapd_scan: None,
            current: 0,
            tracer: None,
        }
    }

    /// `page_zone()`: the zone index of a page frame.
    #[inline]
    pub fn page_zone(&self, pfn: u32) -> usize {
        self.block_zone[(pfn / MAX_ORDER_NR_PAGES) as usize] as usize
    }

    /// The zone of `pages[0]` and how many pages from the start of `pages` share it: the
    /// batches that go to one zone's lists or locks (an allocation run, a freed batch).
    /// `pages` is not empty.
    #[inline]
    pub fn zone_run(&self, pages: &[u32]) -> (usize, usize) {
        let zi = self.page_zone(pages[0]);
        // A zone is one pfn range (`block_zone` is built from them): one comparison a page.
        let z = &self.zones[zi];
        let (start, len) = (z.start_pfn, z.end_pfn() - z.start_pfn);
        let n = pages
            .iter()
            .take_while(|&&p| p.wrapping_sub(start) < len)
            .count();
        debug_assert!(pages[..n].iter().all(|&p| self.page_zone(p) == zi));
        debug_assert!(pages.get(n).is_none_or(|&p| self.page_zone(p) != zi));
        (zi, n)
    }

    pub fn add_task(&mut self, comm: String, cpu: u32, kind: TaskKind) -> u32 {
        let id = self.tasks.len() as u32;
        let node = self.cpus.node_of(cpu);
        self.tasks.push(Task {
            pid: 100 + id,
            comm,
            cpu,
            node,
            user_ns: 0,
            sys_ns: 0,
            kind,
            next_at: None,
        });
        id
    }

    /// Queue task `id` to run at `at`, unless it is already due to run no later than that.
    pub fn wake_task(&mut self, id: u32, at: Ns) {
        let t = &mut self.tasks[id as usize];
        if t.next_at.is_none_or(|n| at < n) {
            t.next_at = Some(at);
            self.queue.push(at, EventKind::Task(id));
        }
    }

    /// Run one step of task `id` at `now` and queue its next event.
    pub fn run_task(&mut self, id: u32, at: Ns) {
        let (cpu, node) = {
            let t = &mut self.tasks[id as usize];
            if t.next_at != Some(at) {
                return; // stale: superseded by an earlier wake-up
            }
            t.next_at = None;
            (t.cpu, t.node)
        };
        let start = self.cpus.start(cpu, at);
        if start > at {
            // Its CPU is busy with another task: run when it is free.
            self.wake_task(id, start);
            return;
        }
        self.now = start;
        self.current = id;
        let mut kind = std::mem::replace(&mut self.tasks[id as usize].kind, TaskKind::Running);
        let next = match &mut kind {
            TaskKind::Dd(dd) => dd.step(self, id, cpu, node),
            TaskKind::Kswapd(k) => k.step(self, id, cpu, node),
            TaskKind::Running => unreachable!("task {id} re-entered its own step"),
        };
        self.tasks[id as usize].kind = kind;
        let (sys, wake) = match next {
            Next::Run { sys } => (sys, Some(start + sys.max(1))),
            Next::Sleep { sys, at } => (sys, Some(at.max(start + sys))),
            Next::Wait { sys } => (sys, None),
        };
        self.tasks[id as usize].sys_ns += sys;
        self.cpus.total_sys_ns += sys;
        self.cpus.occupy(cpu, start + sys);
        if let Some(w) = wake {
            self.wake_task(id, w);
        }
    }

    /// Take `lock` of node/zone from a CPU on `cpu_node` for `hold` ns at `at` (the current
    /// time, or later within the current step).
    #[inline]
    pub fn lru_lock(&mut self, nid: u32, cpu_node: u32, hold: Ns, at: Ns) -> Acquired {
        self.nodes[nid as usize]
            .lru_lock
            .acquire(self.now, at, cpu_node, hold, &self.lock_costs)
    }

    #[inline]
    pub fn zone_lock(&mut self, zi: usize, cpu_node: u32, hold: Ns, at: Ns) -> Acquired {
        self.zone_lock[zi].acquire(self.now, at, cpu_node, hold, &self.lock_costs)
    }

    /// Bytes of per-page simulator state: the page descriptors (with list heads) and the
    /// pfn → zone table. Per-task and per-node state is independent of memory size.
    pub fn page_state_bytes(&self) -> u64 {
        self.pages.state_bytes() + self.block_zone.len() as u64
    }

    /// Σ NR_FREE_PAGES.
    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.nr_free_pages).sum()
    }

    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.managed_pages).sum()
    }

    /// The /proc/vmstat counters now.
    pub fn vmstat(&self) -> VmstatSnapshot {
        let mut stats = [0u64; NR_STAT_ITEMS.len()];
        stats[0] = self.nr_free_pages();
        for n in &self.nodes {
            for lru in 0..NR_LRU_LISTS {
                stats[1 + lru] += n.lruvec.total(lru);
            }
            stats[6] += n.nr_isolated[0];
            stats[7] += n.nr_isolated[1];
            stats[8] += n.nr_file_pages;
        }
        VmstatSnapshot {
            stats,
            events: self.events.v,
        }
    }

    /// Pages are conserved: every page is free, on an LRU list, isolated, or in flight in a
    /// task's hands (`held`). Checked in debug builds after every step of a test run.
    pub fn check_conservation(&self, held: u64) -> Result<(), String> {
        let free = self.nr_free_pages();
        let on_lru: u64 = self
            .nodes
            .iter()
            .map(|n| (0..NR_LRU_LISTS).map(|l| n.lruvec.total(l)).sum::<u64>())
            .sum();
        let isolated: u64 = self
            .nodes
            .iter()
            .map(|n| n.nr_isolated[0] + n.nr_isolated[1])
            .sum();
        let managed = self.managed_pages();
        if free + on_lru + isolated + held != managed {
            return Err(format!(
                "pages not conserved: free {free} + lru {on_lru} + isolated {isolated} + held {held} != managed {managed}"
            ));
        }
        Ok(())
    }

    /// Walk every list and check the per-zone sizes and flags (slow: tests only).
    pub fn check_lists(&self) -> Result<(), String> {
        for n in &self.nodes {
            for lru in 0..NR_LRU_LISTS {
                let walked = self.pages.walk_len(n.lruvec.list(lru));
                if walked != n.lruvec.total(lru) {
                    return Err(format!(
                        "node {} lru {lru}: walked {walked} != counted {}",
                        n.node_id,
                        n.lruvec.total(lru)
                    ));
                }
            }
        }
        for z in &self.zones {
            let mut free = 0;
            for o in 0..NR_PAGE_ORDERS {
                let l = z.free_list_base + o as u32;
                let walked = self.pages.walk_len(l);
                if walked != z.nr_free[o] {
                    return Err(format!(
                        "zone {} order {o}: walked {walked} != nr_free {}",
                        z.zone_idx, z.nr_free[o]
                    ));
                }
                free += walked << o;
            }
            if free != z.nr_free_pages {
                return Err(format!(
                    "zone {}: free lists hold {free} != NR_FREE_PAGES {}",
                    z.zone_idx, z.nr_free_pages
                ));
            }
        }
        Ok(())
    }

    pub fn count(&mut self, e: VmEvent, n: u64) {
        self.events.count(e, n);
    }
}
