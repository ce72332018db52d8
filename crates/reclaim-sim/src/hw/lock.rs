//! A spinlock as a FIFO resource in simulated time (queued spinlocks hand the lock over in
//! arrival order). A waiter spins, so its wait is CPU time. Costs that make contention
//! expensive on real machines are explicit: every acquisition that had to wait pays a
//! handoff (the lock's and the protected data's cache lines move from the previous holder),
//! and a CPU on another node than the lock's memory holds it longer (`remote_factor`). Each
//! CPU still queued behind the holder slows it further (`per_waiter` ns per acquisition): the
//! spinners and the next holders keep pulling the protected data's cache lines (list heads,
//! per-node counters) away, so a lock's capacity falls as its queue grows — the collapse
//! that makes many parallel direct reclaimers expensive (seed 000).
//!
//! A task's step books its later lock acquisitions ahead of simulated time (a reclaim batch
//! takes lru_lock to isolate, works, then takes it again to put back). The lock therefore
//! keeps its booked holds as a calendar: a request is granted the first free gap at or
//! after its own time, so a hold booked for later never delays a request that comes earlier
//! and fits before it. Requests arriving at the same time are still served in order.

use crate::engine::Ns;

/// The cost parameters of lock acquisitions (from the scenario's `[costs]`). Fixed once
/// built: the table below is derived from them.
#[derive(Clone, Debug)]
pub struct LockCosts {
    handoff: Ns,
    per_waiter: Ns,
    remote_factor: f64,
    /// `remote(ahead)` for the queue lengths met in practice, so the calendar walk does no
    /// floating-point conversions.
    remote_handoffs: Box<[Ns]>,
}

/// Queue lengths whose cross-node handoff cost is tabulated.
const TABULATED_AHEAD: usize = 256;

impl LockCosts {
    pub fn new(handoff: Ns, per_waiter: Ns, remote_factor: f64) -> LockCosts {
        let mut c = LockCosts {
            handoff,
            per_waiter,
            remote_factor,
            remote_handoffs: Box::default(),
        };
        c.remote_handoffs = (0..TABULATED_AHEAD as Ns)
            .map(|ahead| c.compute_remote_handoff(ahead))
            .collect();
        c
    }

    /// The handoff from a holder on the same node, with `ahead` waiters served before us.
    #[inline]
    fn local_handoff(&self, ahead: Ns) -> Ns {
        self.handoff + self.per_waiter * ahead
    }

    /// The handoff from a holder on another node: its cache lines cross the interconnect.
    #[inline]
    fn remote_handoff(&self, ahead: Ns) -> Ns {
        match self.remote_handoffs.get(ahead as usize) {
            Some(&h) => h,
            None => self.compute_remote_handoff(ahead),
        }
    }

    fn compute_remote_handoff(&self, ahead: Ns) -> Ns {
        (self.local_handoff(ahead) as f64 * self.remote_factor) as Ns
    }
}

/// One booked hold: the lock is someone's over `[start, end)`.
#[derive(Clone, Copy, Debug)]
struct Hold {
    start: Ns,
    end: Ns,
    node: u32,
}

#[derive(Clone, Debug, Default)]
pub struct SpinLock {
    /// Booked holds, in time order and not overlapping; those before `live` are released.
    /// A vector with a moving start, not a ring, so the calendar is one slice to search.
    holds: Vec<Hold>,
    live: usize,
    /// Every hold after `holds[solid_from]` starts where the one before it ends and is not
    /// empty: the calendar's tail is one solid run from there, so a request that meets it
    /// waits behind all of it without walking it (the queue of a contended lock).
    solid_from: usize,
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
            ..Default::default()
        }
    }

    /// Whether a booked hold covers `at`: a `spin_trylock()` then fails. Holds are in time
    /// order and do not overlap, so their ends are sorted too.
    pub fn is_locked_at(&self, at: Ns) -> bool {
        let live = &self.holds[self.live..];
        let i = live.partition_point(|h| h.end <= at);
        live.get(i).is_some_and(|h| h.start <= at)
    }

    /// Forget holds released by `floor`, the simulated time no later request can precede.
    fn release_until(&mut self, floor: Ns) {
        while self.live < self.holds.len() && self.holds[self.live].end <= floor {
            self.live += 1;
        }
        // Reclaim the released prefix once it outweighs the live part.
        if self.live >= 64 && self.live * 2 >= self.holds.len() {
            self.holds.drain(..self.live);
            // The live part of a solid tail is still one.
            self.solid_from = self.solid_from.saturating_sub(self.live);
            self.live = 0;
        }
    }

    /// Take the lock at `now` from a CPU on `cpu_node`, hold it for `hold_local` (the cost on
    /// a local, uncontended lock) and release it. `floor` is the current simulated time
    /// (`now` may be later, for a hold booked ahead within one step); requests never come
    /// earlier than `floor`, so holds released by then are forgotten.
    pub fn acquire(
        &mut self,
        floor: Ns,
        now: Ns,
        cpu_node: u32,
        hold_local: Ns,
        c: &LockCosts,
    ) -> Acquired {
        debug_assert!(
            now >= floor,
            "lock request at {now} before the floor {floor}"
        );
        self.release_until(floor);
        let base = self.uncontended_hold(cpu_node, hold_local, c);
        let live = &self.holds[self.live..];
        // Nothing booked past `now`: the lock is free and this hold goes last.
        if live.last().is_none_or(|h| h.end <= now) {
            return self.book(self.holds.len(), now, now, base, cpu_node);
        }
        // Walk the calendar for the first gap that fits: uncontended if one opens at `now`,
        // otherwise behind the holds that cover `now` and any that follow back to back.
        let mut start = now;
        let mut hold = base;
        let mut ahead: Ns = 0;
        let mut at = live.len();
        // Holds are in time order and do not overlap, so their ends are sorted too: skip
        // those released by `now` (booked by steps that ran ahead of the clock) at once.
        let mut i = live.partition_point(|h| h.end <= now);
        // Once we wait, our hold is longer than zero, so no gap between back-to-back holds
        // fits it: a run of them is passed whole, paying the handoff from its last holder.
        let runs_are_solid = base + c.handoff > 0;
        let solid_tail = self.solid_from.saturating_sub(self.live);
        while i < live.len() {
            let h = &live[i];
            if h.end <= start {
                i += 1;
                continue;
            }
            if h.start >= start + hold {
                at = i;
                break;
            }
            let mut last = i;
            if runs_are_solid && last >= solid_tail {
                last = live.len() - 1;
            }
            while runs_are_solid
                && last + 1 < live.len()
                && live[last + 1].start == live[last].end
                && live[last + 1].end > live[last + 1].start
            {
                last += 1;
            }
            // Overlaps: wait for the run, and pay the handoff from its last holder.
            ahead += (last + 1 - i) as Ns;
            start = live[last].end;
            hold = base
                + if cpu_node != live[last].node {
                    c.remote_handoff(ahead)
                } else {
                    c.local_handoff(ahead)
                };
            i = last + 1;
        }
        self.book(self.live + at, now, start, hold, cpu_node)
    }

    /// The hold of a CPU on `cpu_node` that finds the lock free: `hold_local`, longer from
    /// another node than the lock's.
    #[inline]
    fn uncontended_hold(&self, cpu_node: u32, hold_local: Ns, c: &LockCosts) -> Ns {
        if cpu_node != self.home_node {
            (hold_local as f64 * c.remote_factor) as Ns
        } else {
            hold_local
        }
    }

    /// Insert the hold `[start, start + hold)` at calendar index `index` and account for it.
    fn book(&mut self, index: usize, now: Ns, start: Ns, hold: Ns, cpu_node: u32) -> Acquired {
        let wait = start - now;
        if wait > 0 {
            self.contended += 1;
        }
        let end = start + hold;
        if index == self.holds.len() {
            // Appended: the solid tail goes on if this hold follows the last back to back.
            let extends = self
                .holds
                .last()
                .is_some_and(|h| h.end == start && end > start);
            if !extends {
                self.solid_from = index;
            }
        } else if index <= self.solid_from {
            self.solid_from += 1;
        } else {
            // Inside the tail (a zero-length hold at a boundary): the holds after it stay solid.
            self.solid_from = index + 1;
        }
        self.holds.insert(
            index,
            Hold {
                start,
                end,
                node: cpu_node,
            },
        );
        self.acquisitions += 1;
        self.wait_ns += wait;
        self.hold_ns += hold;
        Acquired { wait, hold }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The calendar walk one hold at a time, as first written: the reference the run-skipping
    /// walk of `acquire` must agree with.
    fn acquire_one_by_one(
        l: &mut SpinLock,
        floor: Ns,
        now: Ns,
        cpu_node: u32,
        hold_local: Ns,
        c: &LockCosts,
    ) -> Acquired {
        l.release_until(floor);
        let base = l.uncontended_hold(cpu_node, hold_local, c);
        let (mut start, mut hold, mut ahead) = (now, base, 0);
        let live = &l.holds[l.live..];
        let mut at = live.len();
        for (i, h) in live.iter().enumerate() {
            if h.end <= start {
                continue;
            }
            if h.start >= start + hold {
                at = i;
                break;
            }
            start = h.end;
            ahead += 1;
            hold = base
                + if cpu_node != h.node {
                    c.remote_handoff(ahead)
                } else {
                    c.local_handoff(ahead)
                };
        }
        l.book(l.live + at, now, start, hold, cpu_node)
    }

    proptest! {
        /// Random requests (some booked ahead of the clock, some of zero length, from both
        /// nodes) get the same grants from `acquire` as from the one-by-one walk.
        #[test]
        fn skipping_runs_grants_what_the_one_by_one_walk_grants(
            handoff in 0u64..500,
            per_waiter in 0u64..50,
            remote_factor in 1.0f64..3.0,
            requests in proptest::collection::vec(
                (0u64..300, 0u64..3000, 0u32..2, 0u64..400), 1..200),
        ) {
            let c = LockCosts::new(handoff, per_waiter, remote_factor);
            let (mut fast, mut slow) = (SpinLock::new(0), SpinLock::new(0));
            let mut floor = 0;
            for (advance, ahead_of_clock, node, hold) in requests {
                floor += advance;
                let now = floor + ahead_of_clock;
                let a = fast.acquire(floor, now, node, hold, &c);
                let b = acquire_one_by_one(&mut slow, floor, now, node, hold, &c);
                prop_assert_eq!(a, b);
            }
            prop_assert_eq!(fast.wait_ns, slow.wait_ns);
            prop_assert_eq!(fast.contended, slow.contended);
        }
    }

    fn costs() -> LockCosts {
        LockCosts::new(400, 0, 2.0)
    }

    #[test]
    fn uncontended_lock_costs_only_its_hold() {
        let mut l = SpinLock::new(0);
        assert_eq!(
            l.acquire(0, 0, 0, 100, &costs()),
            Acquired { wait: 0, hold: 100 }
        );
        assert_eq!(
            l.acquire(0, 1000, 0, 100, &costs()),
            Acquired { wait: 0, hold: 100 }
        );
        assert_eq!(l.contended, 0);
    }

    #[test]
    fn a_trylock_fails_only_inside_a_booked_hold() {
        let mut l = SpinLock::new(0);
        assert!(!l.is_locked_at(0));
        l.acquire(0, 100, 0, 50, &costs()); // [100, 150)
        l.acquire(0, 400, 0, 50, &costs()); // [400, 450), booked ahead
        let held: Vec<Ns> = [99, 100, 149, 150, 399, 400, 449, 450]
            .into_iter()
            .filter(|&t| l.is_locked_at(t))
            .collect();
        assert_eq!(held, [100, 149, 400, 449]);
    }

    #[test]
    fn waiters_queue_in_order_and_pay_handoffs() {
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 0, 100, &costs());
        let b = l.acquire(0, 10, 0, 100, &costs());
        assert_eq!(
            b,
            Acquired {
                wait: 90,
                hold: 500
            }
        );
        // A remote CPU: hold doubled, and the handoff crosses nodes.
        let c = l.acquire(0, 20, 1, 100, &costs());
        assert_eq!(c.wait, 600 - 20);
        assert_eq!(c.hold, 200 + 800);
        assert_eq!(l.contended, 2);
    }

    #[test]
    fn a_longer_queue_slows_each_handoff() {
        let c = LockCosts::new(100, 50, 1.0);
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 0, 1000, &c);
        let second = l.acquire(0, 1, 0, 1000, &c); // one ahead of it
        let third = l.acquire(0, 2, 0, 1000, &c); // two ahead of it
        assert_eq!(second.hold, 1000 + 100 + 50);
        assert_eq!(third.hold, 1000 + 100 + 100);
    }

    #[test]
    fn a_hold_booked_ahead_does_not_delay_an_earlier_request() {
        let mut l = SpinLock::new(0);
        // A step books the lock for [5000, 5100).
        assert_eq!(l.acquire(0, 5000, 0, 100, &costs()).wait, 0);
        // An earlier request that fits before it is not delayed.
        assert_eq!(
            l.acquire(0, 0, 0, 100, &costs()),
            Acquired { wait: 0, hold: 100 }
        );
        // One that would overlap it waits for it and pays the handoff.
        let late = l.acquire(0, 4950, 0, 100, &costs());
        assert_eq!(
            late,
            Acquired {
                wait: 150,
                hold: 500
            }
        );
        // A request that fits in no gap goes after the last hold.
        let after = l.acquire(4900, 4990, 0, 100, &costs());
        assert_eq!(after.wait, 5600 - 4990);
        assert_eq!(l.contended, 2);
    }

    #[test]
    fn released_holds_are_forgotten() {
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 1, 100, &costs()); // a remote CPU holds [0, 200)
        l.acquire(0, 100, 0, 100, &costs()); // waits, local, handoff from node 1
        assert_eq!(l.acquire(10_000, 10_000, 0, 100, &costs()).wait, 0);
        assert_eq!(l.holds.len() - l.live, 1, "released holds are dropped");
    }

    #[test]
    fn the_released_prefix_is_reclaimed() {
        let mut l = SpinLock::new(0);
        for t in 0..10_000 {
            l.acquire(t * 1000, t * 1000, 0, 100, &costs());
        }
        assert!(l.holds.len() <= 130, "{} holds kept", l.holds.len());
    }

    #[test]
    fn tabulated_and_computed_remote_handoffs_agree() {
        let c = LockCosts::new(400, 30, 1.7);
        for ahead in [0, 1, 9, 255] {
            assert_eq!(c.remote_handoff(ahead), c.compute_remote_handoff(ahead));
        }
        // Past the table it is computed.
        assert_eq!(
            c.remote_handoff(1000),
            ((400 + 30 * 1000) as f64 * 1.7) as Ns
        );
    }

    #[test]
    fn a_queue_of_back_to_back_holds_is_waited_behind_whole() {
        let c = LockCosts::new(400, 30, 2.0);
        let mut l = SpinLock::new(0);
        l.acquire(0, 0, 0, 100, &c); // [0, 100)
        l.acquire(0, 0, 1, 100, &c); // waits 100, remote: [100, 100 + 200 + 2·430)
        let end = 100 + 200 + 2 * 430;
        // A request inside the first hold waits for both and pays the handoff from node 1
        // with two waiters ahead.
        let r = l.acquire(0, 50, 0, 100, &c);
        assert_eq!(r.wait, end - 50);
        assert_eq!(r.hold, 100 + 2 * (400 + 2 * 30));
        // A zero-length request fits at the boundary between two back-to-back holds.
        let z = l.acquire(0, 100, 0, 0, &c);
        assert_eq!(z, Acquired { wait: 0, hold: 0 });
    }
}
