//! The scheduler's view of tasks: which CPU each is bound to, what it asked for when it last
//! yielded, its CPU accounting, and wait queues (`wait_queue_head_t`). It knows nothing of
//! what the tasks run: their code is a process (`process`), and the kernel's state is
//! `kernel::Kernel`.
//!
//! A task has at most one live event in the queue (`next_at`). A wake-up earlier than that
//! event queues a new one and leaves the old one stale; stale events are dropped when they
//! fire. That is how a timer (kswapd's HZ/10 nap) is cancelled by an earlier wake-up.

use crate::engine::{EventKind, EventQueue, Ns};

/// What a task is, for `tasks.json` ("kind").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskClass {
    /// A task of the workload.
    Workload,
    /// A kswapd thread.
    Kswapd,
    /// A device's flusher (a writeback kworker).
    Flusher,
    /// A node's kcompactd thread.
    Kcompactd,
}

impl TaskClass {
    pub fn name(self) -> &'static str {
        match self {
            TaskClass::Workload => "workload",
            TaskClass::Kswapd => "kswapd",
            TaskClass::Flusher => "flusher",
            TaskClass::Kcompactd => "kcompactd",
        }
    }
}

/// What a process asked of the scheduler when it last yielded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    /// Run again as soon as the CPU time it used in this slice has passed.
    Run,
    /// Sleep until `at` (or until woken earlier).
    SleepUntil(Ns),
    /// Sleep until woken (it is on a wait queue, or waits for an I/O).
    Wait,
}

/// A task (thread) with its CPU binding and accounting.
#[derive(Debug)]
pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub cpu: u32,
    pub node: u32,
    pub class: TaskClass,
    pub user_ns: u64,
    pub sys_ns: u64,
    /// The time of the task's one live event; an event at any other time is stale.
    pub next_at: Option<Ns>,
    /// What the task's process asked for when it last yielded.
    pub req: Req,
    /// Set when a wake-up on a wait queue ran the task (`schedule_timeout` tells a wake-up
    /// from its timer by it).
    pub woken: bool,
    /// Pages charged while its cgroup was above memory.high, not yet paid for
    /// (`current->memcg_nr_pages_over_high`).
    pub memcg_nr_pages_over_high: u64,
    /// `task->psi_flags`: the PSI counts the task is in (`psi::TSK_*`).
    pub psi_flags: u8,
    /// `current->in_memstall`: between `psi_memstall_enter` and `psi_memstall_leave`.
    pub in_memstall: bool,
    /// `current->in_iowait`: asleep for an I/O (`io_schedule`).
    pub in_iowait: bool,
    /// `current->backing_dev_info` (2.6.36): the device whose file the task is writing in
    /// `__generic_file_aio_write()`, to which its reclaim may queue writes even while the
    /// device is congested (`may_write_to_queue()`, mm/congestion.rs).
    pub backing_dev_info: Option<usize>,
    /// A SIGKILL is pending (`fatal_signal_pending()`): the task's process returns at its
    /// next return to user space (a workload's loop checks between system calls).
    pub sigkill: bool,
    /// Its process has returned (`task->exit_state`).
    pub exited: bool,
    /// `current->mempolicy` and `current->il_prev` (`mm::mempolicy`).
    pub mempolicy: crate::mm::mempolicy::Mempolicy,
}

/// The tasks and the event queue their wake-ups go to.
#[derive(Debug, Default)]
pub struct Sched {
    pub tasks: Vec<Task>,
    pub queue: EventQueue,
}

impl Sched {
    /// Queue task `id` to run at `at`, unless it is already due to run no later than that.
    #[inline]
    pub fn wake(&mut self, id: u32, at: Ns) {
        let t = &mut self.tasks[id as usize];
        if t.next_at.is_none_or(|n| at < n) {
            t.next_at = Some(at);
            self.queue.push(at, EventKind::Task(id));
        }
    }
}

/// `wait_queue_head_t`: the tasks sleeping on something, in the order they went to sleep.
///
/// Departure: the kernel's `prepare_to_wait()` adds a non-exclusive waiter at the head, so
/// `wake_up` runs the newest sleeper first; here waiters are woken oldest first. Only the
/// order in which simultaneously woken tasks run differs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitQueue {
    waiters: Vec<u32>,
}

impl WaitQueue {
    /// `prepare_to_wait()`: task `tid` goes on the queue (once).
    pub fn add(&mut self, tid: u32) {
        if !self.waiters.contains(&tid) {
            self.waiters.push(tid);
        }
    }

    /// `finish_wait()`: task `tid` leaves the queue if it is still on it.
    pub fn remove(&mut self, tid: u32) {
        self.waiters.retain(|&t| t != tid);
    }

    /// `waitqueue_active()`.
    pub fn is_active(&self) -> bool {
        !self.waiters.is_empty()
    }

    pub fn contains(&self, tid: u32) -> bool {
        self.waiters.contains(&tid)
    }

    pub fn waiters(&self) -> &[u32] {
        &self.waiters
    }

    /// The oldest waiter, taken off the queue.
    pub fn pop_first(&mut self) -> Option<u32> {
        (!self.waiters.is_empty()).then(|| self.waiters.remove(0))
    }

    /// `wake_up_all()`: every waiter is taken off the queue (`autoremove_wake_function`),
    /// marked woken and runs at `at`.
    pub fn wake_up_all(&mut self, sched: &mut Sched, at: Ns) {
        for &t in &self.waiters {
            sched.tasks[t as usize].woken = true;
            sched.wake(t, at);
        }
        self.waiters.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(n: u32) -> Sched {
        let mut s = Sched::default();
        for i in 0..n {
            s.tasks.push(Task {
                pid: 100 + i,
                comm: format!("t{i}"),
                cpu: i,
                node: 0,
                class: TaskClass::Workload,
                user_ns: 0,
                sys_ns: 0,
                next_at: None,
                req: Req::Wait,
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
        }
        s
    }

    #[test]
    fn an_earlier_wake_up_supersedes_a_later_one() {
        let mut s = sched(1);
        s.wake(0, 50);
        s.wake(0, 80);
        s.wake(0, 20);
        assert_eq!(s.tasks[0].next_at, Some(20));
        assert_eq!(s.queue.len(), 2, "the later wake-up queued nothing");
    }

    #[test]
    fn wake_up_all_empties_the_queue_in_order() {
        let mut s = sched(3);
        let mut wq = WaitQueue::default();
        wq.add(2);
        wq.add(0);
        wq.add(2);
        assert_eq!(wq.waiters(), &[2, 0]);
        wq.wake_up_all(&mut s, 7);
        assert!(!wq.is_active());
        assert!(s.tasks[2].woken && s.tasks[0].woken && !s.tasks[1].woken);
        let order: Vec<_> = std::iter::from_fn(|| s.queue.pop()).collect();
        assert_eq!(
            order,
            vec![(7, EventKind::Task(2)), (7, EventKind::Task(0))]
        );
    }
}
