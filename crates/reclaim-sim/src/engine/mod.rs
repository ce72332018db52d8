//! The discrete-event engine: a virtual clock in nanoseconds and an event queue ordered by
//! `(time, sequence)`. Nothing here reads the wall clock, so a run is a pure function of its
//! scenario and seed (in the manner of SimPy's core: a heap, a counter, nothing else).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds since the run started.
pub type Ns = u64;

pub const NSEC_PER_USEC: Ns = 1_000;
pub const NSEC_PER_MSEC: Ns = 1_000_000;
pub const NSEC_PER_SEC: Ns = 1_000_000_000;
/// The kernel's HZ (jiffies per second); timeouts such as `HZ/10` are expressed with it.
pub const HZ: Ns = 250;
pub const JIFFY: Ns = NSEC_PER_SEC / HZ;

/// What an event does when it fires. Tasks are state machines; an event only says which task
/// to advance, or which periodic job to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Advance task `id` by one step.
    Task(u32),
    /// Take a vmstat/iostat/cpu sample.
    Sample,
    /// The measured window ends.
    End,
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Ns, u64, EventKind)>>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: Ns, kind: EventKind) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, kind)));
    }

    pub fn pop(&mut self) -> Option<(Ns, EventKind)> {
        self.heap.pop().map(|Reverse((t, _, k))| (t, k))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(20, EventKind::Task(1));
        q.push(10, EventKind::Task(2));
        q.push(10, EventKind::Task(3));
        q.push(10, EventKind::Task(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, EventKind::Task(2)),
                (10, EventKind::Task(3)),
                (10, EventKind::Task(0)),
                (20, EventKind::Task(1))
            ]
        );
    }
}
