//! Processes: what simulated tasks run. A process is an `async fn` written as the kernel's
//! code is, with its loops as loops (`kswapd` → `balance_pgdat` → `shrink_node` → …); it
//! `.await`s where the task gives up its CPU: at the end of a time slice ([`cond_resched`]),
//! asleep on a wait queue ([`schedule`]), for a timer ([`schedule_timeout`]) or for an I/O
//! ([`wait_on_bio`]).
//!
//! A tiny executor ([`Sim`]) drives them from the event queue. A task's event polls its
//! process once; the process runs until it yields, charging the CPU time its work takes to
//! the kernel's running slice (`Kernel::charge`), and the yield tells the scheduler what it
//! waits for (`sched::Req`). The executor then accounts the slice to the task and its CPU and
//! queues the task's next event. Polls are deterministic: nothing uses a waker, since every
//! wake-up is an event in the queue.
//!
//! The kernel state is shared by all processes as `Rc<RefCell<Kernel>>`: a process borrows
//! it (`cx.k()`) for each piece of work between two yields, never across one (clippy's
//! `await_holding_refcell_ref` guards this).
//!
//! Time slices are the model's, not the scheduler tick's: all the work of one slice happens
//! at the slice's start in simulated time (lock acquisitions within it are booked at their
//! own offsets), so reclaim yields after every SWAP_CLUSTER_MAX batch and other tasks
//! interleave between two batches as they do on a real machine.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::engine::Ns;
use crate::kernel::Kernel;
use crate::psi::{TSK_IOWAIT, TSK_MEMSTALL, TSK_MEMSTALL_RUNNING, TSK_RUNNING};
use crate::sched::{Req, TaskClass};

/// A process's handle on its task and the kernel.
#[derive(Clone)]
pub struct Cx {
    kernel: Rc<RefCell<Kernel>>,
    pub tid: u32,
    pub cpu: u32,
    /// The node of the task's CPU (lock costs depend on it).
    pub node: u32,
}

impl Cx {
    /// The kernel, for the work up to the next yield.
    #[inline]
    pub fn k(&self) -> RefMut<'_, Kernel> {
        self.kernel.borrow_mut()
    }
}

/// The future of a yield: pending once (with its request set), ready when polled again.
pub struct Yield<'a> {
    cx: &'a Cx,
    req: Option<Req>,
}

impl Future for Yield<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        match self.req.take() {
            Some(req) => {
                // Beside the task's other scheduling state, which the executor reads next.
                self.cx.k().sched.tasks[self.cx.tid as usize].req = req;
                Poll::Pending
            }
            None => Poll::Ready(()),
        }
    }
}

/// `cond_resched()`: the task's slice ends; it runs again once the CPU time the slice used
/// has passed (and its CPU is free).
pub fn cond_resched(cx: &Cx) -> Yield<'_> {
    Yield {
        cx,
        req: Some(Req::Run),
    }
}

/// `schedule()` in TASK_(UN)INTERRUPTIBLE: sleep until woken. The caller has put the task on
/// a wait queue (or waits for an I/O) first.
pub fn schedule(cx: &Cx) -> Yield<'_> {
    Yield {
        cx,
        req: Some(Req::Wait),
    }
}

/// Sleep until `at` (or an earlier wake-up).
pub fn sleep_until(cx: &Cx, at: Ns) -> Yield<'_> {
    Yield {
        cx,
        req: Some(Req::SleepUntil(at)),
    }
}

/// `schedule_timeout(timeout)` after `prepare_to_wait()`: sleep `timeout` ns from the task's
/// clock, or until a wake-up on the wait queue. Returns the time left (`remaining`; 0 when
/// the timer expired, or the wake-up came no earlier than it would have).
pub async fn schedule_timeout(cx: &Cx, timeout: Ns) -> Ns {
    let until = {
        let mut k = cx.k();
        k.sched.tasks[cx.tid as usize].woken = false;
        k.clock() + timeout
    };
    sleep_until(cx, until).await;
    let k = cx.k();
    if k.sched.tasks[cx.tid as usize].woken {
        until.saturating_sub(k.now)
    } else {
        0
    }
}

/// Wait for I/O `bio` to complete (`submit_bio_wait`, `folio_wait_locked` on its pages):
/// its completion event runs the task (`Sim::complete_io`). The task sleeps in iowait.
pub async fn wait_on_bio(cx: &Cx, bio: u32) {
    loop {
        {
            let mut k = cx.k();
            if k.block.bios[bio].done(k.now) {
                return;
            }
            k.bio_add_waiter(bio, cx.tid);
        }
        io_schedule(cx).await;
    }
}

/// `io_schedule()`: `schedule()` with the task counted in iowait while it sleeps.
pub async fn io_schedule(cx: &Cx) {
    cx.k().sched.tasks[cx.tid as usize].in_iowait = true;
    schedule(cx).await;
    cx.k().sched.tasks[cx.tid as usize].in_iowait = false;
}

/// `fatal_signal_pending(current)`: a SIGKILL was sent to the task
/// ([`crate::kernel::Kernel::send_sigkill`]). The model delivers it where a workload's loop
/// returns to user space between system calls (a dd's read(), a usemem slice, a writer's
/// write()), not inside the kernel's waits, which the kernel also lets finish in most places
/// reclaim sleeps (`congestion_wait`, `io_schedule`).
pub fn fatal_signal_pending(cx: &Cx) -> bool {
    cx.k().sched.tasks[cx.tid as usize].sigkill
}

/// `psi_memstall_enter()` (kernel/sched/psi.c, 6.x): the task's time from now is a memory
/// stall, until `psi_memstall_leave`. Returns `pflags`: whether it already was (nested
/// stalls count once; the inner leave does nothing).
pub fn psi_memstall_enter(cx: &Cx) -> bool {
    let mut k = cx.k();
    let now = k.clock();
    let Kernel { sched, psi, .. } = &mut *k;
    let t = &mut sched.tasks[cx.tid as usize];
    if t.in_memstall {
        return true;
    }
    t.in_memstall = true;
    t.psi_flags |= TSK_MEMSTALL | TSK_MEMSTALL_RUNNING;
    psi.task_change(cx.cpu, 0, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, now);
    psi.task_switch(cx.cpu, true, now);
    false
}

/// `psi_memstall_leave()`: the stall `psi_memstall_enter` began (and returned `pflags` for)
/// ends now.
pub fn psi_memstall_leave(cx: &Cx, pflags: bool) {
    if pflags {
        return;
    }
    let mut k = cx.k();
    let now = k.clock();
    let Kernel { sched, psi, .. } = &mut *k;
    let t = &mut sched.tasks[cx.tid as usize];
    t.in_memstall = false;
    t.psi_flags &= !(TSK_MEMSTALL | TSK_MEMSTALL_RUNNING);
    psi.task_change(cx.cpu, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, 0, now);
    psi.task_switch(cx.cpu, false, now);
}

type Process = Pin<Box<dyn Future<Output = ()>>>;

/// The simulated machine: the kernel and the tasks' processes.
pub struct Sim {
    pub kernel: Rc<RefCell<Kernel>>,
    procs: Vec<Option<Process>>,
    /// The waiters of the I/O completing (kept to reuse its allocation).
    io_waiters: Vec<u32>,
    /// Tasks whose process has returned (exited), and when the last of them did.
    nr_exited: u32,
    last_exit_at: Ns,
}

impl Sim {
    pub fn new(kernel: Kernel) -> Sim {
        Sim {
            kernel: Rc::new(RefCell::new(kernel)),
            procs: Vec::new(),
            io_waiters: Vec::new(),
            nr_exited: 0,
            last_exit_at: 0,
        }
    }

    /// Whether task `tid`'s process has returned.
    pub fn exited(&self, tid: u32) -> bool {
        self.procs[tid as usize].is_none()
    }

    /// How many tasks have exited so far: the run looks at its workload again when this
    /// moves.
    pub fn nr_exited(&self) -> u32 {
        self.nr_exited
    }

    /// When the last task to exit did (the end of its last slice).
    pub fn last_exit_at(&self) -> Ns {
        self.last_exit_at
    }

    /// The kernel, between events.
    pub fn k(&self) -> RefMut<'_, Kernel> {
        self.kernel.borrow_mut()
    }

    /// The kernel as the run left it, its processes dropped.
    pub fn into_kernel(self) -> Kernel {
        drop(self.procs);
        match Rc::try_unwrap(self.kernel) {
            Ok(k) => k.into_inner(),
            Err(_) => unreachable!("only the processes share the kernel"),
        }
    }

    /// A new task `comm` on `cpu` running the process `body` makes. It does not run until
    /// something wakes it (`Sched::wake`, or a wait queue it was put on).
    pub fn spawn<F, P>(&mut self, comm: String, cpu: u32, class: TaskClass, body: F) -> u32
    where
        F: FnOnce(Cx) -> P,
        P: Future<Output = ()> + 'static,
    {
        let (tid, node) = {
            let mut k = self.k();
            let tid = k.add_task(comm, cpu, class);
            (tid, k.sched.tasks[tid as usize].node)
        };
        let cx = Cx {
            kernel: Rc::clone(&self.kernel),
            tid,
            cpu,
            node,
        };
        debug_assert_eq!(self.procs.len(), tid as usize);
        self.procs.push(Some(Box::pin(body(cx))));
        tid
    }

    /// I/O `bio` completes at `at` (`bio_endio`): each task waiting for it runs now, in the
    /// completion event's turn (so among events of the same nanosecond it runs in the order
    /// it began to wait).
    pub fn complete_io(&mut self, bio: u32, at: Ns) {
        {
            // Behind an elevator, requests sorted ahead of the I/O's since its event was
            // queued have moved its completion later: its event goes there.
            let mut k = self.k();
            let due = k.block.bios[bio].done_at;
            if due > at {
                k.sched.queue.push(due, crate::engine::EventKind::Io(bio));
                return;
            }
        }
        let mut waiters = std::mem::take(&mut self.io_waiters);
        {
            let mut k = self.k();
            k.now = at;
            k.bio_endio(bio, &mut waiters);
            if k.block.bios[bio].end_io != crate::hw::block::EndIo::None {
                k.end_io(bio);
            }
        }
        for &w in &waiters {
            let run = {
                let mut k = self.k();
                let t = &mut k.sched.tasks[w as usize];
                if t.next_at.is_none() {
                    t.next_at = Some(at);
                    true
                } else {
                    k.sched.wake(w, at);
                    false
                }
            };
            if run {
                self.run_task(w, at);
            }
        }
        waiters.clear();
        self.io_waiters = waiters;
    }

    /// Task `id`'s event at `at` fires: unless stale or its CPU is busy, its process runs
    /// until it yields, and its next event is queued.
    pub fn run_task(&mut self, id: u32, at: Ns) {
        let (cpu, start) = {
            let mut k = self.k();
            let t = &mut k.sched.tasks[id as usize];
            if t.next_at != Some(at) {
                return; // stale: superseded by an earlier wake-up
            }
            t.next_at = None;
            let cpu = t.cpu;
            if t.psi_flags & TSK_RUNNING == 0 {
                // psi_enqueue(): it wakes (a new task, or one that slept) and is runnable.
                let clear = t.psi_flags & TSK_IOWAIT;
                let set = TSK_RUNNING
                    | if t.in_memstall {
                        TSK_MEMSTALL_RUNNING
                    } else {
                        0
                    };
                t.psi_flags = t.psi_flags & !clear | set;
                k.psi.task_change(cpu, clear, set, at);
            }
            let start = k.cpus.start(cpu, at);
            if start > at {
                // Its CPU is busy with another task: run when it is free.
                k.cpus.add_waiter(cpu, id);
                k.sched.wake(id, start);
                return;
            }
            if !k.cpus.may_run(cpu, id) {
                // Another task has waited for the CPU: it goes first.
                k.sched.wake(id, at + 1);
                return;
            }
            k.now = start;
            k.slice = 0;
            k.slice_user = 0;
            k.current = id;
            let in_memstall = k.sched.tasks[id as usize].in_memstall;
            k.psi.task_switch(cpu, in_memstall, start);
            (cpu, start)
        };
        // Polled in place: a process reaches the kernel through its Cx, never the executor,
        // so nothing else touches this slot while it runs.
        let slot = &mut self.procs[id as usize];
        let proc = slot.as_mut().expect("a finished task is never woken");
        let done = proc
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready();
        if done {
            *slot = None;
        }
        let mut k = self.kernel.borrow_mut();
        let (ran, user) = (k.slice, k.slice_user);
        if done {
            self.nr_exited += 1;
            self.last_exit_at = start + ran;
        }
        let sys = ran - user;
        let Kernel {
            sched, cpus, psi, ..
        } = &mut *k;
        let t = &mut sched.tasks[id as usize];
        t.exited |= done;
        t.user_ns += user;
        t.sys_ns += sys;
        let wake = match t.req {
            _ if done => None,
            Req::Run => Some(start + ran.max(1)),
            Req::SleepUntil(until) => Some(until.max(start + ran)),
            Req::Wait => None,
        };
        cpus.total_user_ns += user;
        cpus.total_sys_ns += sys;
        cpus.occupy(cpu, start + ran);
        if done || t.req != Req::Run {
            // psi_dequeue(): it sleeps (in iowait if it waits for an I/O), or exits.
            let mut clear = t.psi_flags & (TSK_RUNNING | TSK_MEMSTALL_RUNNING);
            let mut set = 0;
            if done {
                clear |= t.psi_flags & TSK_MEMSTALL;
            } else if t.in_iowait {
                set = TSK_IOWAIT;
            }
            t.psi_flags = t.psi_flags & !clear | set;
            psi.task_change(cpu, clear, set, start + ran);
            psi.task_switch(cpu, false, start + ran);
        }
        if let Some(w) = wake {
            k.sched.wake(id, w);
        }
    }
}
