//! The vmscan tracepoints the simulated kernel emits (include/trace/events/vmscan.h, 6.x
//! layouts), written by reclaim-trace's `TraceWriter` in the live kernel's ftrace text
//! format, so the same postprocessing reads real and simulated traces and what is printed
//! is what the parser decodes. Tracing is opt-in per run.

use std::io::Write;

use reclaim_trace::event::{
    Event, Lru, LruIsolate, ReclaimBegin, ReclaimFlags, ShrinkActive, ShrinkInactive,
    ThrottleReason, Throttled, WriteFolio,
};
use reclaim_trace::writer::{Context, TraceWriter};

use crate::engine::{Ns, NSEC_PER_USEC};
use crate::kernel::Kernel;
use crate::mm::gfp::{show_gfp_flags, Gfp};
use crate::mm::vmscan::ReclaimNr;

pub type Tracer = TraceWriter<Box<dyn Write>>;

/// `show_reclaim_flags()` of shrink_inactive/active: file or anon, always async here (the
/// model does no reclaim writeback).
fn reclaim_flags(file: bool) -> ReclaimFlags {
    let kind = if file {
        ReclaimFlags::FILE
    } else {
        ReclaimFlags::ANON
    };
    ReclaimFlags(kind | ReclaimFlags::ASYNC)
}

/// Every `trace_*` function returns before building its event when tracing is off: they sit
/// on reclaim's per-batch path.
impl Kernel {
    /// Writes one trace line for the current task.
    fn trace(&mut self, ev: Event<'_>) {
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        let task = &self.sched.tasks[self.current as usize];
        let ctx = Context {
            comm: &task.comm,
            pid: task.pid,
            cpu: task.cpu,
            ts_ns: self.now,
        };
        t.write(ctx, &ev);
    }

    pub fn trace_kswapd_sleep(&mut self, nid: u32) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::KswapdSleep { nid: nid as i32 });
    }

    pub fn trace_kswapd_wake(&mut self, nid: u32, _zid: usize, order: u32) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::KswapdWake {
            nid: nid as i32,
            zid: None,
            order: order as i32,
        });
    }

    pub fn trace_wakeup_kswapd(&mut self, nid: u32, _zid: usize, order: u32, gfp: Gfp) {
        if self.tracer.is_none() {
            return;
        }
        let gfp_flags = show_gfp_flags(gfp);
        self.trace(Event::WakeupKswapd {
            nid: nid as i32,
            zid: None,
            order: order as i32,
            gfp_flags: Some(gfp_flags.as_str()),
        });
    }

    pub fn trace_direct_reclaim_begin(&mut self, order: u32, gfp: Gfp) {
        if self.tracer.is_none() {
            return;
        }
        let gfp_flags = show_gfp_flags(gfp);
        self.trace(Event::DirectReclaimBegin(ReclaimBegin {
            order: order as i32,
            gfp_flags: &gfp_flags,
            may_writepage: None,
        }));
    }

    pub fn trace_direct_reclaim_end(&mut self, nr_reclaimed: u64) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::DirectReclaimEnd { nr_reclaimed });
    }

    pub fn trace_lru_isolate(
        &mut self,
        classzone: usize,
        order: u32,
        nr_requested: u64,
        nr_scanned: u64,
        nr_taken: u64,
        lru: usize,
    ) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::LruIsolate(LruIsolate {
            classzone: Some(classzone as i32),
            isolate_mode: None,
            order: order as i32,
            nr_requested,
            nr_scanned,
            nr_skipped: nr_scanned.saturating_sub(nr_taken),
            nr_taken,
            lru: Some(Lru::ALL[lru]),
            file: None,
            contig_dirty: None,
        }));
    }

    #[allow(clippy::too_many_arguments)]
    pub fn trace_lru_shrink_inactive(
        &mut self,
        nid: u32,
        nr_scanned: u64,
        nr_reclaimed: u64,
        nr_activate: u64,
        nr_ref_keep: u64,
        priority: i32,
        file: bool,
        stat: &ReclaimNr,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let (nr_activate_anon, nr_activate_file) = if file {
            (0, nr_activate)
        } else {
            (nr_activate, 0)
        };
        self.trace(Event::LruShrinkInactive(ShrinkInactive {
            nid: nid as i32,
            zid: None,
            nr_scanned,
            nr_reclaimed,
            nr_dirty: stat.dirty,
            nr_writeback: stat.writeback,
            nr_congested: stat.congested,
            nr_immediate: stat.immediate,
            nr_activate_anon,
            nr_activate_file,
            nr_ref_keep,
            nr_unmap_fail: 0,
            priority,
            flags: reclaim_flags(file),
        }));
    }

    #[allow(clippy::too_many_arguments)]
    pub fn trace_lru_shrink_active(
        &mut self,
        nid: u32,
        nr_taken: u64,
        nr_active: u64,
        nr_deactivated: u64,
        nr_referenced: u64,
        priority: i32,
        file: bool,
    ) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::LruShrinkActive(ShrinkActive {
            nid: nid as i32,
            nr_taken,
            nr_active,
            nr_deactivated,
            nr_referenced,
            priority,
            flags: reclaim_flags(file),
        }));
    }

    /// `mm_vmscan_write_folio`: reclaim's `pageout()` of page-cache folio `pfn`
    /// (`RECLAIM_WB_FILE|RECLAIM_WB_ASYNC`). The `%p` value is the folio's address in a
    /// vmemmap at the x86-64 default base, as a kernel with `no_hash_pointers` prints it.
    pub fn trace_write_folio(&mut self, pfn: u32) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::WriteFolio(WriteFolio {
            page: 0xffff_ea00_0000_0000 + u64::from(pfn) * 64,
            pfn: u64::from(pfn),
            flags: ReclaimFlags(ReclaimFlags::FILE | ReclaimFlags::ASYNC),
        }));
    }

    /// `mm_vmscan_throttled` of `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`.
    pub fn trace_throttled(&mut self, nid: u32, timeout: Ns, delayed: Ns) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::Throttled(Throttled {
            nid: nid as i32,
            usec_timeout: (timeout / NSEC_PER_USEC) as i64,
            usec_delayed: (delayed / NSEC_PER_USEC) as i64,
            reason: ThrottleReason(ThrottleReason::WRITEBACK),
        }));
    }
}
