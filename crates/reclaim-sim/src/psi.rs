//! Pressure stall information for memory (kernel/sched/psi.c, Linux 6.x): the system's
//! `psi_system` group as /proc/pressure/memory reports it.
//!
//! Each CPU keeps counts of its tasks by state (`psi_group_cpu.tasks`: in iowait, memstalled,
//! running, memstalled and running) and, from them, which states it is in
//! (`test_states`): memory SOME while a task is memstalled, memory FULL while every running
//! task is memstalled (or the task on the CPU is), NONIDLE while any task is running, in
//! iowait or memstalled. The time each state lasts is added up per CPU at every change
//! (`record_times`). An aggregation (`collect_percpu_times`) takes each CPU's new stall time
//! weighted by its non-idle time, in jiffies, and adds their weighted mean to the group's
//! totals; every `psi_period` (`PSI_FREQ` = 2·HZ + 1 jiffies, 2.004 s at the model's HZ of
//! 250) `update_averages` feeds the period's stall share into the exponentially decaying
//! avg10/avg60/avg300 (`calc_avgs`, the load average's fixed-point arithmetic).
//!
//! The model's changes come from the tasks' processes (`process::psi_memstall_enter` and
//! `psi_memstall_leave`) and the executor (a task waking, going to sleep, taking its CPU).
//! Work is done at state changes only: nothing runs per page.
//!
//! Departures: only the memory resource and the system group (no cgroup `memory.pressure`,
//! no io or cpu pressure, whose task counts are kept only for NONIDLE); the averaging work
//! runs exactly every period, where the kernel's delayed work fires up to a jiffy late and
//! stops while the system is idle (with activity all along, as in every scenario, the two
//! agree); a change that a CPU's earlier slice booked later in time than another task's
//! wake-up on that CPU is booked at the later time (changes within a slice are booked at
//! their offsets, `Kernel::clock`, and a CPU's clock does not go backwards).

use crate::engine::{Ns, HZ, JIFFY};

/// `NR_IOWAIT`, `NR_MEMSTALL`, `NR_RUNNING`, `NR_MEMSTALL_RUNNING`: `psi_group_cpu.tasks`.
const NR_IOWAIT: usize = 0;
const NR_MEMSTALL: usize = 1;
const NR_RUNNING: usize = 2;
const NR_MEMSTALL_RUNNING: usize = 3;
const NR_PSI_TASK_COUNTS: usize = 4;

/// A task's PSI flags (`task->psi_flags`), one bit per count it is in.
pub const TSK_IOWAIT: u8 = 1 << NR_IOWAIT;
pub const TSK_MEMSTALL: u8 = 1 << NR_MEMSTALL;
pub const TSK_RUNNING: u8 = 1 << NR_RUNNING;
pub const TSK_MEMSTALL_RUNNING: u8 = 1 << NR_MEMSTALL_RUNNING;

/// `PSI_MEM_SOME`, `PSI_MEM_FULL`, `PSI_NONIDLE`: the states whose times are kept.
const PSI_MEM_SOME: usize = 0;
const PSI_MEM_FULL: usize = 1;
const PSI_NONIDLE: usize = 2;
const NR_PSI_STATES: usize = 3;

/// `FSHIFT`, `FIXED_1`: the load average's fixed point (include/linux/sched/loadavg.h).
const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
/// `EXP_10s`, `EXP_60s`, `EXP_300s`: 1/exp(2 s / 10 s, 60 s, 300 s) in fixed point.
pub const EXP_10S: u64 = 1677;
pub const EXP_60S: u64 = 1981;
pub const EXP_300S: u64 = 2034;
/// `psi_period`: `jiffies_to_nsecs(PSI_FREQ)`, PSI_FREQ = 2·HZ + 1.
pub const PSI_PERIOD: Ns = (2 * HZ + 1) * JIFFY;

/// `struct psi_group_cpu` (memory states only).
#[derive(Clone, Debug, Default)]
struct PsiGroupCpu {
    tasks: [u32; NR_PSI_TASK_COUNTS],
    /// The states the CPU is in, a bit per state.
    state_mask: u8,
    /// Whether the task on the CPU is memstalled (`PSI_ONCPU` and `curr->in_memstall`).
    curr_memstall: bool,
    /// The time each state has lasted, up to `state_start`.
    times: [Ns; NR_PSI_STATES],
    state_start: Ns,
    /// `times_prev[PSI_AVGS]`: `times` at the last aggregation.
    times_prev: [Ns; NR_PSI_STATES],
    /// Time the CPU spent idle with a task of its own waiting for I/O, up to `state_start`:
    /// /proc/stat's `iowait` (the kernel counts a CPU's idle time as iowait while
    /// `rq->nr_iowait` > 0), kept here because these counts say when that is.
    iowait: Ns,
}

impl PsiGroupCpu {
    /// `record_times()`: the time since the last change goes to the states the CPU was in.
    fn record_times(&mut self, now: Ns) {
        let now = now.max(self.state_start);
        let delta = now - self.state_start;
        self.state_start = now;
        if self.in_iowait() {
            self.iowait += delta;
        }
        for s in 0..NR_PSI_STATES {
            if self.state_mask & (1 << s) != 0 {
                self.times[s] += delta;
            }
        }
    }

    /// Idle (no task runnable) with a task waiting for I/O.
    fn in_iowait(&self) -> bool {
        self.tasks[NR_IOWAIT] > 0 && self.tasks[NR_RUNNING] == 0
    }

    /// `test_states()` for memory, with `psi_group_change()`'s rule that a CPU whose
    /// current task is memstalled is FULL (nothing productive could run while it reclaims).
    fn test_states(&self) -> u8 {
        let t = &self.tasks;
        let mut mask = 0;
        if t[NR_MEMSTALL] > 0 {
            mask |= 1 << PSI_MEM_SOME;
            if t[NR_RUNNING] == t[NR_MEMSTALL_RUNNING] || self.curr_memstall {
                mask |= 1 << PSI_MEM_FULL;
            }
        }
        if t[NR_IOWAIT] > 0 || t[NR_MEMSTALL] > 0 || t[NR_RUNNING] > 0 {
            mask |= 1 << PSI_NONIDLE;
        }
        mask
    }

    /// `get_recent_times()`: each state's time since the last aggregation, the state the CPU
    /// is in counted up to `now`.
    fn recent_times(&mut self, now: Ns) -> [Ns; NR_PSI_STATES] {
        let mut delta = [0; NR_PSI_STATES];
        for (s, d) in delta.iter_mut().enumerate() {
            let mut t = self.times[s];
            if self.state_mask & (1 << s) != 0 {
                t += now.saturating_sub(self.state_start);
            }
            *d = t - self.times_prev[s];
            self.times_prev[s] = t;
        }
        delta
    }
}

/// `struct psi_group` (`psi_system`), memory only: SOME at index 0, FULL at 1.
#[derive(Clone, Debug)]
pub struct PsiGroup {
    pcpu: Vec<PsiGroupCpu>,
    /// `total[PSI_AVGS]`: the stall time, ns.
    pub total: [Ns; 2],
    /// `avg_total`: the part of `total` fed into the averages.
    avg_total: [Ns; 2],
    /// `avg[]`: avg10, avg60, avg300 in fixed point (percent · FIXED_1).
    pub avg: [[u64; 3]; 2],
    avg_next_update: Ns,
    avg_last_update: Ns,
}

impl PsiGroup {
    /// `group_init()` at boot (time 0).
    pub fn new(nr_cpus: u32) -> PsiGroup {
        PsiGroup {
            pcpu: vec![PsiGroupCpu::default(); nr_cpus as usize],
            total: [0; 2],
            avg_total: [0; 2],
            avg: [[0; 3]; 2],
            avg_next_update: PSI_PERIOD,
            avg_last_update: 0,
        }
    }

    /// `psi_group_change()`: on `cpu` at `now`, a task leaves the counts in `clear` and joins
    /// those in `set`.
    pub fn task_change(&mut self, cpu: u32, clear: u8, set: u8, now: Ns) {
        self.catch_up(now);
        let c = &mut self.pcpu[cpu as usize];
        c.record_times(now);
        for t in 0..NR_PSI_TASK_COUNTS {
            if clear & (1 << t) != 0 {
                debug_assert!(c.tasks[t] > 0, "psi: task count underflow");
                c.tasks[t] -= 1;
            }
            if set & (1 << t) != 0 {
                c.tasks[t] += 1;
            }
        }
        c.state_mask = c.test_states();
    }

    /// `psi_task_switch()`: the task on `cpu` from `now` is memstalled or not (`false` also
    /// when the CPU goes idle).
    pub fn task_switch(&mut self, cpu: u32, curr_memstall: bool, now: Ns) {
        let c = &mut self.pcpu[cpu as usize];
        if c.curr_memstall == curr_memstall {
            return;
        }
        self.catch_up(now);
        let c = &mut self.pcpu[cpu as usize];
        c.record_times(now);
        c.curr_memstall = curr_memstall;
        c.state_mask = c.test_states();
    }

    /// `psi_avgs_work()` for every period that ended by `now`.
    fn catch_up(&mut self, now: Ns) {
        while now >= self.avg_next_update {
            let at = self.avg_next_update;
            self.collect_percpu_times(at);
            self.avg_next_update = self.update_averages(at);
        }
    }

    /// `collect_percpu_times()`: each CPU's new stall time, weighted by its non-idle
    /// jiffies, averaged into the totals.
    fn collect_percpu_times(&mut self, now: Ns) {
        let mut deltas = [0u128; 2];
        let mut nonidle_total = 0u128;
        for c in &mut self.pcpu {
            let times = c.recent_times(now);
            let nonidle = u128::from(times[PSI_NONIDLE] / JIFFY); // nsecs_to_jiffies()
            nonidle_total += nonidle;
            deltas[0] += u128::from(times[PSI_MEM_SOME]) * nonidle;
            deltas[1] += u128::from(times[PSI_MEM_FULL]) * nonidle;
        }
        for (total, d) in self.total.iter_mut().zip(deltas) {
            *total += (d / nonidle_total.max(1)) as Ns;
        }
    }

    /// `update_averages()`: the stall share of the period(s) since the last update into the
    /// averages; returns when the next update is due.
    fn update_averages(&mut self, now: Ns) -> Ns {
        let expires = self.avg_next_update;
        let missed_periods = (now - expires) / PSI_PERIOD;
        let avg_next_update = expires + (1 + missed_periods) * PSI_PERIOD;
        let period = now - (self.avg_last_update + missed_periods * PSI_PERIOD);
        self.avg_last_update = now;
        for s in 0..2 {
            // Time that slipped into this period is reported in the next (at most 100 %).
            let sample = (self.total[s] - self.avg_total[s]).min(period);
            self.avg_total[s] += sample;
            calc_avgs(&mut self.avg[s], missed_periods, sample, period);
        }
        avg_next_update
    }

    /// `psi_show()` at `now`: aggregate, update the averages if a period has ended, and
    /// print /proc/pressure/memory.
    pub fn show(&mut self, now: Ns) -> String {
        self.read(now);
        let mut out = String::new();
        for (s, name) in ["some", "full"].into_iter().enumerate() {
            let a = self.avg[s];
            out += &format!(
                "{name} avg10={} avg60={} avg300={} total={}\n",
                load_str(a[0]),
                load_str(a[1]),
                load_str(a[2]),
                self.total[s] / 1000
            );
        }
        out
    }

    /// What a read of /proc/pressure/memory at `now` does to the group: the averaging work
    /// due by then, and an aggregation. Returns the totals (SOME, FULL), ns.
    pub fn read(&mut self, now: Ns) -> [Ns; 2] {
        self.catch_up(now);
        self.collect_percpu_times(now);
        self.total
    }

    /// Σ over CPUs of the time each spent idle while a task of its own waited for I/O, up
    /// to `now` (/proc/stat's `iowait`, ns).
    pub fn iowait_ns(&self, now: Ns) -> Ns {
        self.pcpu
            .iter()
            .map(|c| {
                c.iowait
                    + if c.in_iowait() {
                        now.saturating_sub(c.state_start)
                    } else {
                        0
                    }
            })
            .sum()
    }
}

/// `LOAD_INT(x).LOAD_FRAC(x)` with two digits.
fn load_str(x: u64) -> String {
    format!(
        "{}.{:02}",
        x >> FSHIFT,
        ((x & (FIXED_1 - 1)) * 100) >> FSHIFT
    )
}

/// `calc_load()`: one step of an exponential average in fixed point.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// `fixed_power_int()`: `x^n` in fixed point with `frac_bits`, rounding each product.
fn fixed_power_int(mut x: u64, frac_bits: u32, mut n: u64) -> u64 {
    let mut result = 1u64 << frac_bits;
    let half = 1u64 << (frac_bits - 1);
    while n > 0 {
        if n & 1 != 0 {
            result = (result * x + half) >> frac_bits;
        }
        n >>= 1;
        if n == 0 {
            break;
        }
        x = (x * x + half) >> frac_bits;
    }
    result
}

/// `calc_load_n()`: `n` steps towards `active` at once.
fn calc_load_n(load: u64, exp: u64, active: u64, n: u64) -> u64 {
    calc_load(load, fixed_power_int(exp, FSHIFT, n), active)
}

/// `calc_avgs()`: zeroes for the periods missed, then the period's stall share `time` of
/// `period` (in whole percent, as the kernel truncates it) into avg10/avg60/avg300.
pub fn calc_avgs(avg: &mut [u64; 3], missed_periods: u64, time: Ns, period: Ns) {
    const EXPS: [u64; 3] = [EXP_10S, EXP_60S, EXP_300S];
    if missed_periods > 0 {
        for (a, e) in avg.iter_mut().zip(EXPS) {
            *a = calc_load_n(*a, e, 0, missed_periods);
        }
    }
    let pct = time * 100 / period * FIXED_1;
    for (a, e) in avg.iter_mut().zip(EXPS) {
        *a = calc_load(*a, e, pct);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: u8 = TSK_RUNNING;
    const STALL_RUN: u8 = TSK_MEMSTALL | TSK_MEMSTALL_RUNNING;

    fn mask(g: &PsiGroup, cpu: usize) -> (bool, bool) {
        let m = g.pcpu[cpu].state_mask;
        (m & 1 << PSI_MEM_SOME != 0, m & 1 << PSI_MEM_FULL != 0)
    }

    #[test]
    fn some_and_full_follow_the_kernels_test_states() {
        let mut g = PsiGroup::new(1);
        // Two running tasks; A enters a memstall (direct reclaim) while B runs.
        g.task_change(0, 0, RUN, 0);
        g.task_change(0, 0, RUN, 0);
        g.task_change(0, 0, STALL_RUN, 10);
        g.task_switch(0, true, 10); // A is on the CPU
        assert_eq!(mask(&g, 0), (true, true), "the current task reclaims: FULL");
        g.task_switch(0, false, 20); // B takes the CPU
        assert_eq!(mask(&g, 0), (true, false), "B is productive: SOME only");
        // B sleeps: every running task is stalled.
        g.task_change(0, RUN, 0, 30);
        assert_eq!(mask(&g, 0), (true, true));
        // A sleeps in its stall (a refault's I/O): still SOME and FULL (no running task).
        g.task_change(0, RUN | TSK_MEMSTALL_RUNNING, 0, 40);
        assert_eq!(mask(&g, 0), (true, true));
        // B wakes and runs: SOME only.
        g.task_change(0, 0, RUN, 50);
        assert_eq!(mask(&g, 0), (true, false));
        // A's stall ends while it sleeps.
        g.task_change(0, TSK_MEMSTALL, 0, 60);
        assert_eq!(mask(&g, 0), (false, false));
        // SOME 10..60, FULL 10..20 and 30..50.
        let mut c = g.pcpu[0].clone();
        c.record_times(60);
        assert_eq!(c.times[PSI_MEM_SOME], 50);
        assert_eq!(c.times[PSI_MEM_FULL], 30);
        assert_eq!(c.times[PSI_NONIDLE], 60);
    }

    #[test]
    fn cpus_are_weighted_by_their_non_idle_time() {
        let mut g = PsiGroup::new(2);
        let ms = 1_000_000;
        // CPU 0: a task stalled all of 100 ms; CPU 1: a task running 100 ms, no stall.
        g.task_change(0, 0, RUN | STALL_RUN, 0);
        g.task_change(1, 0, RUN, 0);
        let [some, _] = g.read(100 * ms);
        assert_eq!(some, 50 * ms, "half the non-idle time stalled");
        // CPU 1 idle for the next 100 ms: only CPU 0 counts.
        g.task_change(1, RUN, 0, 100 * ms);
        let [some, full] = g.read(200 * ms);
        assert_eq!(some, 150 * ms);
        assert_eq!(full, 150 * ms);
    }

    #[test]
    fn iowait_is_a_cpus_idle_time_with_a_task_of_its_own_waiting_for_io() {
        let mut g = PsiGroup::new(2);
        let ms = 1_000_000;
        // CPU 0: A waits for I/O from 0 to 20 ms; B runs there from 10 to 15 ms.
        g.task_change(0, 0, TSK_IOWAIT, 0);
        g.task_change(0, 0, RUN, 10 * ms);
        assert_eq!(g.iowait_ns(12 * ms), 10 * ms, "not while B runs");
        g.task_change(0, RUN, 0, 15 * ms);
        g.task_change(0, TSK_IOWAIT, 0, 20 * ms);
        // CPU 1: a task runs all along; it never waits.
        g.task_change(1, 0, RUN, 0);
        assert_eq!(g.iowait_ns(30 * ms), 15 * ms, "0–10 and 15–20 ms on CPU 0");
        // Still open at the reading: counted up to it.
        g.task_change(0, 0, TSK_IOWAIT, 40 * ms);
        assert_eq!(g.iowait_ns(45 * ms), 20 * ms);
    }

    #[test]
    fn averages_match_calc_avgs_by_hand() {
        // 100 % for one period: avg10 = ceil(100·2048·(2048−1677)/2048) = 37100 → "18.11".
        let mut a = [0; 3];
        calc_avgs(&mut a, 0, 10, 10);
        assert_eq!(a[0], (100 * 2048 * (2048 - 1677_u64)).div_ceil(2048));
        assert_eq!(a, [37100, 6700, 1400]);
        assert_eq!(load_str(a[0]), "18.11");
        // 50 % next: 37100·1677/2048 + 102400·371/2048, rounded up as active ≥ load.
        calc_avgs(&mut a, 0, 5, 10);
        assert_eq!(a[0], (37100 * 1677 + 102400 * 371_u64).div_ceil(2048));
        assert_eq!(a[0], 48930);
        // Three idle periods missed, then 0 %: EXP_10s³ in fixed point, each product
        // rounded: 1677·1677 → 1373, 1677·1373 → 1124.
        assert_eq!(fixed_power_int(EXP_10S, FSHIFT, 3), 1124);
        let mut b = a;
        calc_avgs(&mut b, 3, 0, 10);
        assert_eq!(b[0], 48930 * 1124 / 2048 * 1677 / 2048);
        assert_eq!(b[0], 21989);
    }

    #[test]
    fn a_full_stall_reads_as_the_kernel_prints_it() {
        let mut g = PsiGroup::new(1);
        g.task_change(0, 0, RUN | STALL_RUN, 0);
        let text = g.show(PSI_PERIOD);
        assert_eq!(
            text,
            "some avg10=18.11 avg60=3.27 avg300=0.68 total=2004000\n\
             full avg10=18.11 avg60=3.27 avg300=0.68 total=2004000\n"
        );
    }
}
