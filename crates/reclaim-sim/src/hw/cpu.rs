//! CPUs: each task is bound to one logical CPU; work on a CPU is serialised (a task waits
//! for its CPU when another task is using it). Per-task user and system time are kept as
//! /proc/PID/stat would show them.

use crate::engine::Ns;

#[derive(Clone, Debug)]
pub struct Cpus {
    busy_until: Vec<Ns>,
    pub nr_cpus_per_node: u32,
    /// Σ system / user time of all tasks (for the vmstat `sy`/`us` columns).
    pub total_sys_ns: u64,
    pub total_user_ns: u64,
}

impl Cpus {
    pub fn new(nodes: u32, per_node: u32) -> Cpus {
        Cpus {
            busy_until: vec![0; (nodes * per_node) as usize],
            nr_cpus_per_node: per_node,
            total_sys_ns: 0,
            total_user_ns: 0,
        }
    }

    pub fn nr_cpus(&self) -> u32 {
        self.busy_until.len() as u32
    }

    pub fn node_of(&self, cpu: u32) -> u32 {
        cpu / self.nr_cpus_per_node
    }

    /// When a task wanting `cpu` at `now` can start running.
    #[inline]
    pub fn start(&self, cpu: u32, now: Ns) -> Ns {
        self.busy_until[cpu as usize].max(now)
    }

    /// Mark `cpu` busy until `until`.
    #[inline]
    pub fn occupy(&mut self, cpu: u32, until: Ns) {
        let b = &mut self.busy_until[cpu as usize];
        *b = (*b).max(until);
    }
}
