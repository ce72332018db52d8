//! The vmscan tracepoints the simulated kernel emits (include/trace/events/vmscan.h, 6.x
//! layouts) and the compaction ones (include/trace/events/compaction.h, 6.6), written by
//! reclaim-trace's `TraceWriter` in the live kernel's ftrace text format, so the same
//! postprocessing reads real and simulated traces and what is printed is what the parser
//! decodes. Tracing is opt-in per run.

use std::io::Write;

use reclaim_trace::event::{
    CongestionWait, Event, FilemapAdd, Lru, LruIsolate, ReclaimBegin, ReclaimFlags, ShrinkActive,
    ShrinkInactive, ThrottleReason, Throttled, WriteFolio,
};
use reclaim_trace::writer::{Context, TraceWriter};

use crate::engine::{Ns, NSEC_PER_USEC};
use crate::kernel::Kernel;
use crate::mm::compaction::{CompactControl, CompactPriority, CompactResult};
use crate::mm::gfp::{show_gfp_flags, Gfp};
use crate::mm::vmscan::ReclaimNr;
use crate::mm::zone::ZONE_PROC_NAMES;

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

    /// `mm_vmscan_node_reclaim_begin: nid=%d order=%d gfp_flags=%s`.
    pub fn trace_node_reclaim_begin(&mut self, nid: u32, order: u32, gfp: Gfp) {
        if self.tracer.is_none() {
            return;
        }
        let gfp_flags = show_gfp_flags(gfp);
        self.trace(Event::NodeReclaimBegin {
            nid: nid as i32,
            order: order as i32,
            gfp_flags: &gfp_flags,
        });
    }

    /// `mm_vmscan_node_reclaim_end: nr_reclaimed=%lu`.
    pub fn trace_node_reclaim_end(&mut self, nr_reclaimed: u64) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::NodeReclaimEnd { nr_reclaimed });
    }

    /// `mm_vmscan_lru_isolate`: 6.x's fields, and for a lumpy isolation
    /// (`variant.high_order_reclaim`) 2.6.36's `contig_taken`, `contig_dirty`,
    /// `contig_failed` (`nr_lumpy_taken`, `nr_lumpy_dirty`, `nr_lumpy_failed`) in `contig`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn trace_lru_isolate(
        &mut self,
        classzone: usize,
        order: u32,
        nr_requested: u64,
        nr_scanned: u64,
        nr_taken: u64,
        lru: usize,
        contig: Option<[u64; 3]>,
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
            contig_taken: contig.map(|c| c[0]),
            contig_dirty: contig.map(|c| c[1]),
            contig_failed: contig.map(|c| c[2]),
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

    /// `mm_vmscan_write_folio`: reclaim's `pageout()` of folio `pfn`, page cache (`file`:
    /// `RECLAIM_WB_FILE`) or anon to swap (`RECLAIM_WB_ANON`), `RECLAIM_WB_ASYNC`
    /// (`RECLAIM_WB_SYNC` in lumpy reclaim's synchronous pass). The `%p` value is the folio's
    /// address in a vmemmap at the x86-64 default base, as a kernel with `no_hash_pointers`
    /// prints it.
    pub fn trace_write_folio(&mut self, pfn: u32, file: bool, sync: bool) {
        if self.tracer.is_none() {
            return;
        }
        let io = if sync {
            ReclaimFlags::SYNC
        } else {
            ReclaimFlags::ASYNC
        };
        let kind = if file {
            ReclaimFlags::FILE
        } else {
            ReclaimFlags::ANON
        };
        self.trace(Event::WriteFolio(WriteFolio {
            page: 0xffff_ea00_0000_0000 + u64::from(pfn) * 64,
            pfn: u64::from(pfn),
            flags: ReclaimFlags(kind | io),
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

    /// `writeback_congestion_wait` (2.6.36, include/trace/events/writeback.h): a
    /// `congestion_wait()` of `timeout_us` that slept `delayed_us` (both
    /// `jiffies_to_usecs()` of whole jiffies, as the kernel measures them).
    pub fn trace_congestion_wait(&mut self, timeout_us: u64, delayed_us: u64) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::CongestionWait(CongestionWait {
            usec_timeout: timeout_us,
            usec_delayed: delayed_us,
        }));
    }

    /// `writeback_wait_iff_congested` (2.6.37): a `wait_iff_congested()`, asleep or not.
    pub fn trace_wait_iff_congested(&mut self, timeout_us: u64, delayed_us: u64) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::WaitIffCongested(CongestionWait {
            usec_timeout: timeout_us,
            usec_delayed: delayed_us,
        }));
    }

    /// `mm_filemap_add_to_page_cache` of folio `pfn` of `order` at `index` of `mapping`.
    /// Departure: the model's files have no device number or inode; the line prints
    /// `dev 0:0` and the mapping's number as the inode.
    pub fn trace_filemap_add(&mut self, mapping: u32, pfn: u32, index: u64, order: u32) {
        if self.tracer.is_none() {
            return;
        }
        self.trace(Event::FilemapAdd(FilemapAdd {
            dev_major: 0,
            dev_minor: 0,
            ino: u64::from(mapping),
            pfn: u64::from(pfn),
            ofs: index << 12,
            order,
        }));
    }

    /// An `mm_compaction_*` event: its name's suffix and its TP_printk text.
    fn trace_compaction(&mut self, kind: &str, fields: &str) {
        self.trace(Event::Compaction { kind, fields });
    }

    /// `mm_compaction_isolate_migratepages` / `mm_compaction_isolate_freepages` (`kind`):
    /// a scanner's range, pages looked at and pages taken.
    pub fn trace_compaction_isolate(
        &mut self,
        kind: &str,
        start_pfn: u32,
        end_pfn: u32,
        nr_scanned: u64,
        nr_taken: u64,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let fields = format!(
            "range=({start_pfn:#x} ~ {end_pfn:#x}) nr_scanned={nr_scanned} nr_taken={nr_taken}"
        );
        self.trace_compaction(kind, &fields);
    }

    /// `mm_compaction_migratepages`.
    pub fn trace_compaction_migratepages(&mut self, nr_migrated: u64, nr_failed: u64) {
        if self.tracer.is_none() {
            return;
        }
        let fields = format!("nr_migrated={nr_migrated} nr_failed={nr_failed}");
        self.trace_compaction("migratepages", &fields);
    }

    /// `mm_compaction_begin` and `mm_compaction_end` (with `status`) of `cc`'s zone.
    fn trace_compaction_range(
        &mut self,
        cc: &CompactControl,
        sync: bool,
        status: Option<CompactResult>,
    ) {
        let z = &self.mem.zones[cc.zone];
        let mut fields = format!(
            "zone_start={:#x} migrate_pfn={:#x} free_pfn={:#x} zone_end={:#x}, mode={}",
            z.start_pfn,
            cc.migrate_pfn,
            cc.free_pfn,
            z.end_pfn(),
            if sync { "sync" } else { "async" }
        );
        let kind = match status {
            Some(s) => {
                fields.push_str(" status=");
                fields.push_str(s.name());
                "end"
            }
            None => "begin",
        };
        self.trace_compaction(kind, &fields);
    }

    pub fn trace_compaction_begin(&mut self, cc: &CompactControl, sync: bool) {
        if self.tracer.is_some() {
            self.trace_compaction_range(cc, sync, None);
        }
    }

    pub fn trace_compaction_end(&mut self, cc: &CompactControl, sync: bool, status: CompactResult) {
        if self.tracer.is_some() {
            self.trace_compaction_range(cc, sync, Some(status));
        }
    }

    /// `mm_compaction_try_to_compact_pages`.
    pub fn trace_compaction_try_to_compact_pages(
        &mut self,
        order: u32,
        gfp: Gfp,
        prio: CompactPriority,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let fields = format!(
            "order={order} gfp_mask={} priority={}",
            show_gfp_flags(gfp),
            prio as i32
        );
        self.trace_compaction("try_to_compact_pages", &fields);
    }

    /// `mm_compaction_finished` (`kind`) or `mm_compaction_suitable` of zone `zi`.
    pub fn trace_compaction_zone_result(
        &mut self,
        kind: &str,
        zi: usize,
        order: u32,
        ret: CompactResult,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let z = &self.mem.zones[zi];
        let fields = format!(
            "node={} zone={:<8} order={order} ret={}",
            z.nid,
            ZONE_PROC_NAMES[z.zone_idx],
            ret.name()
        );
        self.trace_compaction(kind, &fields);
    }

    /// `mm_compaction_suitable` of `compaction_suitable(zone zi, order, highest_zoneidx)`,
    /// which said `suitable`: CONTINUE, NOT_SUITABLE_ZONE when the fragmentation index
    /// refused it, SKIPPED when the watermark did.
    pub fn trace_compaction_suitable(
        &mut self,
        zi: usize,
        order: u32,
        highest_zoneidx: usize,
        suitable: bool,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let z = &self.mem.zones[zi];
        let ret = if suitable {
            CompactResult::Continue
        } else if crate::mm::compaction::__compaction_suitable(
            z,
            order,
            highest_zoneidx,
            z.zone_page_state_free(),
        ) {
            CompactResult::NotSuitableZone
        } else {
            CompactResult::Skipped
        };
        self.trace_compaction_zone_result("suitable", zi, order, ret);
    }

    /// `mm_compaction_deferred`, `mm_compaction_defer_compaction` or
    /// `mm_compaction_defer_reset` (`kind`): zone `zi`'s deferral state after the change.
    pub fn trace_compaction_defer(&mut self, kind: &str, zi: usize, order: u32) {
        if self.tracer.is_none() {
            return;
        }
        let z = &self.mem.zones[zi];
        let fields = format!(
            "node={} zone={:<8} order={order} order_failed={} consider={} limit={}",
            z.nid,
            ZONE_PROC_NAMES[z.zone_idx],
            z.compact_order_failed,
            z.compact_considered,
            1u64 << z.compact_defer_shift
        );
        self.trace_compaction(kind, &fields);
    }

    /// `mm_compaction_kcompactd_sleep`.
    pub fn trace_compaction_kcompactd_sleep(&mut self, nid: u32) {
        if self.tracer.is_none() {
            return;
        }
        self.trace_compaction("kcompactd_sleep", &format!("nid={nid}"));
    }

    /// `mm_compaction_wakeup_kcompactd` or `mm_compaction_kcompactd_wake` (`kind`).
    pub fn trace_compaction_kcompactd_wake(
        &mut self,
        kind: &str,
        nid: u32,
        order: u32,
        highest_zoneidx: usize,
    ) {
        if self.tracer.is_none() {
            return;
        }
        let fields = format!(
            "nid={nid} order={order} classzone_idx={:<8}",
            ZONE_PROC_NAMES[highest_zoneidx]
        );
        self.trace_compaction(kind, &fields);
    }
}
