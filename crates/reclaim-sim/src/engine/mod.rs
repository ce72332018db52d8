//! The discrete-event engine: a virtual clock in nanoseconds and an event queue ordered by
//! `(time, sequence)`. Nothing here reads the wall clock, so a run is a pure function of its
//! scenario and seed (in the manner of SimPy's core: a heap, a counter, nothing else). What
//! runs when an event fires (a task's process, an I/O completion) is the kernel's business
//! (`process`, `hw::block`).

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

/// What an event does when it fires: which task runs next, which I/O completes, or which
/// periodic job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Task `id` runs its process until it next yields.
    Task(u32),
    /// Block I/O `id` completes (`bio_endio`).
    Io(u32),
    /// Take a vmstat/iostat/cpu sample.
    Sample,
    /// The measured window ends.
    End,
}

/// Bits of the packed key that hold the event's kind and id; the sequence number takes the
/// other 40 of its low word (10^12 events: days of wall time at full speed).
const KIND_BITS: u32 = 24;
/// The id's bits: tasks and I/Os are numbered below `1 << ID_BITS`.
const ID_BITS: u32 = 22;
/// The largest task or I/O id an event can carry.
pub const MAX_EVENT_ID: u32 = (1 << ID_BITS) - 1;
const CLASS_TASK: u64 = 0;
const CLASS_IO: u64 = 1 << ID_BITS;
const CODE_SAMPLE: u64 = 2 << ID_BITS;
const CODE_END: u64 = (2 << ID_BITS) | 1;

/// The pending events, ordered by `(time, sequence)`. Each is one `u128`: the time in the
/// high word, then the sequence number, then the kind's code, so that ordering events is
/// one integer comparison (the sequence number is unique, so the kind never decides) and
/// the heap moves 16 bytes per slot instead of a 24-byte tuple compared field by field.
///
/// A popped event stays at the heap's top until the next push or pop: an event nearly
/// always schedules another (a task's next step), and that push then replaces the top with
/// one sift-down instead of a pop's sift and a push's sift. The order is the same, as every
/// key is unique.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<u128>>,
    seq: u64,
    /// The heap's top has been popped already and is still there to be replaced.
    popped_top: bool,
}

impl EventQueue {
    pub fn push(&mut self, at: Ns, kind: EventKind) {
        self.seq += 1;
        assert!(
            self.seq < 1 << (64 - KIND_BITS),
            "event sequence numbers exhausted"
        );
        let code = match kind {
            EventKind::Task(id) => {
                assert!(id <= MAX_EVENT_ID, "task id {id} too large");
                CLASS_TASK | u64::from(id)
            }
            EventKind::Io(id) => {
                assert!(id <= MAX_EVENT_ID, "I/O id {id} too large");
                CLASS_IO | u64::from(id)
            }
            EventKind::Sample => CODE_SAMPLE,
            EventKind::End => CODE_END,
        };
        let low = self.seq << KIND_BITS | code;
        let key = Reverse(u128::from(at) << 64 | u128::from(low));
        if self.popped_top {
            self.popped_top = false;
            *self.heap.peek_mut().expect("the popped top is still there") = key;
        } else {
            self.heap.push(key);
        }
    }

    pub fn pop(&mut self) -> Option<(Ns, EventKind)> {
        if self.popped_top {
            self.popped_top = false;
            self.heap.pop();
        }
        let &Reverse(key) = self.heap.peek()?;
        self.popped_top = true;
        let code = key as u64 & ((1 << KIND_BITS) - 1);
        let id = (code & u64::from(MAX_EVENT_ID)) as u32;
        let kind = match code >> ID_BITS {
            0 => EventKind::Task(id),
            1 => EventKind::Io(id),
            _ if code == CODE_SAMPLE => EventKind::Sample,
            _ => EventKind::End,
        };
        Some(((key >> 64) as Ns, kind))
    }

    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.popped_top)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_then_insertion_order() {
        // Every kind, and the largest task id, comes back as it went in.
        let mut q = EventQueue::default();
        q.push(20, EventKind::Task(1));
        q.push(10, EventKind::Task(2));
        q.push(10, EventKind::Task(3));
        q.push(10, EventKind::End);
        q.push(10, EventKind::Task(0));
        q.push(5, EventKind::Sample);
        q.push(20, EventKind::Task(MAX_EVENT_ID));
        q.push(7, EventKind::Io(MAX_EVENT_ID));
        q.push(7, EventKind::Io(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, EventKind::Sample),
                (7, EventKind::Io(MAX_EVENT_ID)),
                (7, EventKind::Io(0)),
                (10, EventKind::Task(2)),
                (10, EventKind::Task(3)),
                (10, EventKind::End),
                (10, EventKind::Task(0)),
                (20, EventKind::Task(1)),
                (20, EventKind::Task(MAX_EVENT_ID)),
            ]
        );
    }

    proptest::proptest! {
        /// Pushes and pops interleaved in any order give the order a plain sorted list of
        /// the pending keys gives.
        #[test]
        fn interleaved_pushes_and_pops_keep_time_then_insertion_order(
            ops in proptest::collection::vec(proptest::option::of(0u64..50), 0..200)
        ) {
            let mut q = EventQueue::default();
            let mut model: Vec<(Ns, u64, u32)> = Vec::new();
            let mut seq = 0;
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Some(at) => {
                        seq += 1;
                        q.push(at, EventKind::Task(i as u32));
                        model.push((at, seq, i as u32));
                    }
                    None => {
                        model.sort();
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        proptest::prop_assert_eq!(
                            q.pop(),
                            want.map(|(at, _, id)| (at, EventKind::Task(id)))
                        );
                    }
                }
                proptest::prop_assert_eq!(q.len(), model.len());
                proptest::prop_assert_eq!(q.is_empty(), model.is_empty());
            }
        }
    }

    #[test]
    #[should_panic(expected = "too large")]
    fn a_task_id_that_would_collide_with_another_kind_is_refused() {
        EventQueue::default().push(0, EventKind::Task(MAX_EVENT_ID + 1));
    }
}
