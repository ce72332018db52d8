//! CPUs: each task is bound to one logical CPU; work on a CPU is serialised (a task waits
//! for its CPU when another task is using it). Per-task user and system time are kept as
//! /proc/PID/stat would show them.

use crate::engine::Ns;

#[derive(Clone, Debug)]
pub struct Cpus {
    busy_until: Vec<Ns>,
    /// The task that found the CPU busy and waits for it (`u32::MAX`: none): it runs before
    /// another task's next slice (`Cpus::waiter`).
    waiter: Vec<u32>,
    /// Each CPU's node, looked up rather than divided out: the allocator and the LRU-add
    /// path ask once per batch, and an integer division costs tens of cycles.
    node: Box<[u32]>,
    pub nr_cpus_per_node: u32,
    /// Σ system / user time of all tasks (for the vmstat `sy`/`us` columns).
    pub total_sys_ns: u64,
    pub total_user_ns: u64,
}

impl Cpus {
    pub fn new(nodes: u32, per_node: u32) -> Cpus {
        Cpus {
            busy_until: vec![0; (nodes * per_node) as usize],
            waiter: vec![u32::MAX; (nodes * per_node) as usize],
            node: (0..nodes * per_node).map(|cpu| cpu / per_node).collect(),
            nr_cpus_per_node: per_node,
            total_sys_ns: 0,
            total_user_ns: 0,
        }
    }

    pub fn nr_cpus(&self) -> u32 {
        self.busy_until.len() as u32
    }

    #[inline]
    pub fn node_of(&self, cpu: u32) -> u32 {
        self.node[cpu as usize]
    }

    /// When a task wanting `cpu` at `now` can start running.
    #[inline]
    pub fn start(&self, cpu: u32, now: Ns) -> Ns {
        self.busy_until[cpu as usize].max(now)
    }

    /// Task `tid` wanting `cpu` found it busy and waits for it (unless another task
    /// already does).
    #[inline]
    pub fn add_waiter(&mut self, cpu: u32, tid: u32) {
        let w = &mut self.waiter[cpu as usize];
        if *w == u32::MAX {
            *w = tid;
        }
    }

    /// Task `tid` is about to run on the free `cpu`. If another task waits for the CPU,
    /// that task's turn comes first (its event is due now): returns false, and `tid` tries
    /// again a nanosecond later, finds the CPU busy and waits in turn. Two runnable tasks on
    /// one CPU so take turns slice by slice, as CFS would run them, instead of the one whose
    /// next event was queued first keeping the CPU.
    #[inline]
    pub fn may_run(&mut self, cpu: u32, tid: u32) -> bool {
        let w = &mut self.waiter[cpu as usize];
        if *w == tid {
            *w = u32::MAX;
        }
        *w == u32::MAX
    }

    /// Mark `cpu` busy until `until`.
    #[inline]
    pub fn occupy(&mut self, cpu: u32, until: Ns) {
        let b = &mut self.busy_until[cpu as usize];
        *b = (*b).max(until);
    }
}
