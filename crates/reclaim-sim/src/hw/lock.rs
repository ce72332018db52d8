//! A spinlock as a FIFO resource in simulated time (queued spinlocks hand the lock over in
//! arrival order). A waiter spins, so its wait is CPU time. Costs that make contention
//! expensive on real machines are explicit: every acquisition that had to wait pays a
//! handoff (the lock's and the protected data's cache lines move from the previous holder),
//! and a CPU on another node than the lock's memory holds it longer (`remote_factor`).

use crate::engine::Ns;

#[derive(Clone, Debug, Default)]
pub struct SpinLock {
    /// When the current holder (and everyone queued) will have released the lock.
    free_at: Ns,
    /// Node of the CPU that held the lock last.
    last_node: u32,
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
        SpinLock { home_node, last_node: home_node, ..Default::default() }
    }

    /// Take the lock at `now` from a CPU on `cpu_node`, hold it for `hold_local` (the cost on
    /// a local, uncontended lock) and release it.
    pub fn acquire(&mut self, now: Ns, cpu_node: u32, hold_local: Ns, handoff: Ns, remote_factor: f64) -> Acquired {
        let remote = cpu_node != self.home_node;
        let mut hold = if remote { (hold_local as f64 * remote_factor) as Ns } else { hold_local };
        let wait = self.free_at.saturating_sub(now);
        if wait > 0 {
            self.contended += 1;
            hold += if cpu_node != self.last_node { (handoff as f64 * remote_factor) as Ns } else { handoff };
        }
        self.free_at = now + wait + hold;
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

    #[test]
    fn uncontended_lock_costs_only_its_hold() {
        let mut l = SpinLock::new(0);
        assert_eq!(l.acquire(0, 0, 100, 400, 2.0), Acquired { wait: 0, hold: 100 });
        assert_eq!(l.acquire(1000, 0, 100, 400, 2.0), Acquired { wait: 0, hold: 100 });
        assert_eq!(l.contended, 0);
    }

    #[test]
    fn waiters_queue_in_order_and_pay_handoffs() {
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 100, 400, 2.0);
        let b = l.acquire(10, 0, 100, 400, 2.0);
        assert_eq!(b, Acquired { wait: 90, hold: 500 });
        // A remote CPU: hold doubled, and the handoff crosses nodes.
        let c = l.acquire(20, 1, 100, 400, 2.0);
        assert_eq!(c.wait, 600 - 20);
        assert_eq!(c.hold, 200 + 800);
        assert_eq!(l.contended, 2);
    }
}
