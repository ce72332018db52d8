//! A spinlock as a FIFO resource in simulated time (queued spinlocks hand the lock over in
//! arrival order). A waiter spins, so its wait is CPU time. Costs that make contention
//! expensive on real machines are explicit: every acquisition that had to wait pays a
//! handoff (the lock's and the protected data's cache lines move from the previous holder),
//! and a CPU on another node than the lock's memory holds it longer (`remote_factor`). Each
//! CPU still queued behind the holder slows it further (`per_waiter` ns per acquisition): the
//! spinners and the next holders keep pulling the protected data's cache lines (list heads,
//! per-node counters) away, so a lock's capacity falls as its queue grows — the collapse
//! that makes many parallel direct reclaimers expensive (seed 000).

use std::collections::VecDeque;

use crate::engine::Ns;

/// The cost parameters of lock acquisitions (from the scenario's `[costs]`).
#[derive(Clone, Copy, Debug)]
pub struct LockCosts {
    pub handoff: Ns,
    pub per_waiter: Ns,
    pub remote_factor: f64,
}

#[derive(Clone, Debug, Default)]
pub struct SpinLock {
    /// When the current holder (and everyone queued) will have released the lock.
    free_at: Ns,
    /// Node of the CPU that held the lock last.
    last_node: u32,
    /// Release times of the acquisitions granted and not yet released (the queue).
    queue: VecDeque<Ns>,
    /// Node whose memory the lock and its data live on.
    pub home_node: u32,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
    pub hold_ns: u64,
}

/// What one acquisition cost the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquired {
    /// Spinning before the lock was ours.
    pub wait: Ns,
    /// Holding it (handoff included).
    pub hold: Ns,
}

impl Acquired {
    pub fn total(self) -> Ns {
        self.wait + self.hold
    }
}

impl SpinLock {
    pub fn new(home_node: u32) -> SpinLock {
        SpinLock {
            home_node,
            last_node: home_node,
            ..Default::default()
        }
    }

    /// CPUs holding or queued for the lock at `now`.
    pub fn queued_at(&mut self, now: Ns) -> usize {
        while self.queue.front().is_some_and(|&r| r <= now) {
            self.queue.pop_front();
        }
        self.queue.len()
    }

    /// Take the lock at `now` from a CPU on `cpu_node`, hold it for `hold_local` (the cost on
    /// a local, uncontended lock) and release it.
    pub fn acquire(&mut self, now: Ns, cpu_node: u32, hold_local: Ns, c: &LockCosts) -> Acquired {
        let remote = cpu_node != self.home_node;
        let mut hold = if remote {
            (hold_local as f64 * c.remote_factor) as Ns
        } else {
            hold_local
        };
        let wait = self.free_at.saturating_sub(now);
        if wait > 0 {
            self.contended += 1;
            let queued = self.queued_at(now) as Ns;
            let handoff = c.handoff + c.per_waiter * queued;
            hold += if cpu_node != self.last_node {
                (handoff as f64 * c.remote_factor) as Ns
            } else {
                handoff
            };
        }
        self.free_at = now + wait + hold;
        self.queue.push_back(self.free_at);
        self.last_node = cpu_node;
        self.acquisitions += 1;
        self.wait_ns += wait;
        self.hold_ns += hold;
        Acquired { wait, hold }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: LockCosts = LockCosts {
        handoff: 400,
        per_waiter: 0,
        remote_factor: 2.0,
    };

    #[test]
    fn uncontended_lock_costs_only_its_hold() {
        let mut l = SpinLock::new(0);
        assert_eq!(l.acquire(0, 0, 100, &C), Acquired { wait: 0, hold: 100 });
        assert_eq!(l.acquire(1000, 0, 100, &C), Acquired { wait: 0, hold: 100 });
        assert_eq!(l.contended, 0);
    }

    #[test]
    fn waiters_queue_in_order_and_pay_handoffs() {
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 100, &C);
        let b = l.acquire(10, 0, 100, &C);
        assert_eq!(
            b,
            Acquired {
                wait: 90,
                hold: 500
            }
        );
        // A remote CPU: hold doubled, and the handoff crosses nodes.
        let c = l.acquire(20, 1, 100, &C);
        assert_eq!(c.wait, 600 - 20);
        assert_eq!(c.hold, 200 + 800);
        assert_eq!(l.contended, 2);
    }

    #[test]
    fn a_longer_queue_slows_each_handoff() {
        let c = LockCosts {
            handoff: 100,
            per_waiter: 50,
            remote_factor: 1.0,
        };
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 1000, &c);
        let second = l.acquire(1, 0, 1000, &c); // one ahead of it
        let third = l.acquire(2, 0, 1000, &c); // two ahead of it
        assert_eq!(second.hold, 1000 + 100 + 50);
        assert_eq!(third.hold, 1000 + 100 + 100);
        assert_eq!(l.queued_at(2), 3);
        assert_eq!(l.queued_at(100_000), 0);
    }
}
