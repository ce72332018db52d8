//! The vmscan tracepoints the simulated kernel emits (include/trace/events/vmscan.h, 6.x
//! formats), each line in the live kernel's ftrace text format so that the same
//! postprocessing reads real and simulated traces. Tracing is opt-in per run.

use std::io::Write;

use crate::engine::{NSEC_PER_SEC, NSEC_PER_USEC};
use crate::kernel::Kernel;
use crate::mm::lru::LRU_NAMES;

/// The GFP mask of page-cache allocations, as show_gfp_flags() prints it.
const GFP_PAGECACHE: &str = "GFP_HIGHUSER_MOVABLE";

pub struct Tracer {
    out: Box<dyn Write>,
    pub lines: u64,
    pub error: Option<std::io::Error>,
}

impl Tracer {
    pub fn new(out: Box<dyn Write>) -> Tracer {
        Tracer {
            out,
            lines: 0,
            error: None,
        }
    }

    pub fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(e);
        }
    }
}

impl Kernel {
    /// Write one trace line for the current task: `trace_print_context()` then the event.
    fn trace_line(&mut self, event: &str, args: std::fmt::Arguments<'_>) {
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        let task = &self.tasks[self.current as usize];
        let secs = self.now / NSEC_PER_SEC;
        let usecs = (self.now % NSEC_PER_SEC) / NSEC_PER_USEC;
        let r = writeln!(
            t.out,
            "{:>16}-{:<7} [{:03}] ..... {:5}.{:06}: {}: {}",
            task.comm, task.pid, task.cpu, secs, usecs, event, args
        );
        t.lines += 1;
        if let Err(e) = r {
            t.error.get_or_insert(e);
        }
    }

    pub fn trace_kswapd_sleep(&mut self, _tid: u32, nid: u32) {
        self.trace_line("mm_vmscan_kswapd_sleep", format_args!("nid={nid}"));
    }

    pub fn trace_kswapd_wake(&mut self, nid: u32, _zid: usize, order: u32) {
        self.trace_line(
            "mm_vmscan_kswapd_wake",
            format_args!("nid={nid} order={order}"),
        );
    }

    pub fn trace_wakeup_kswapd(&mut self, nid: u32, _zid: usize, order: u32) {
        self.trace_line(
            "mm_vmscan_wakeup_kswapd",
            format_args!("nid={nid} order={order} gfp_flags={GFP_PAGECACHE}"),
        );
    }

    pub fn trace_direct_reclaim_begin(&mut self, _tid: u32, order: u32) {
        self.trace_line(
            "mm_vmscan_direct_reclaim_begin",
            format_args!("order={order} gfp_flags={GFP_PAGECACHE}"),
        );
    }

    pub fn trace_direct_reclaim_end(&mut self, _tid: u32, nr_reclaimed: u64) {
        self.trace_line(
            "mm_vmscan_direct_reclaim_end",
            format_args!("nr_reclaimed={nr_reclaimed}"),
        );
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
        let skipped = nr_scanned.saturating_sub(nr_taken);
        self.trace_line(
            "mm_vmscan_lru_isolate",
            format_args!(
                "classzone={classzone} order={order} nr_requested={nr_requested} nr_scanned={nr_scanned} nr_skipped={skipped} nr_taken={nr_taken} lru={}",
                LRU_NAMES[lru]
            ),
        );
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
    ) {
        let (act_anon, act_file) = if file {
            (0, nr_activate)
        } else {
            (nr_activate, 0)
        };
        let flags = if file {
            "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
        } else {
            "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"
        };
        self.trace_line(
            "mm_vmscan_lru_shrink_inactive",
            format_args!(
                "nid={nid} nr_scanned={nr_scanned} nr_reclaimed={nr_reclaimed} nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon={act_anon} nr_activate_file={act_file} nr_ref_keep={nr_ref_keep} nr_unmap_fail=0 priority={priority} flags={flags}"
            ),
        );
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
        let flags = if file {
            "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
        } else {
            "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"
        };
        self.trace_line(
            "mm_vmscan_lru_shrink_active",
            format_args!(
                "nid={nid} nr_taken={nr_taken} nr_active={nr_active} nr_deactivated={nr_deactivated} nr_referenced={nr_referenced} priority={priority} flags={flags}"
            ),
        );
    }
}
