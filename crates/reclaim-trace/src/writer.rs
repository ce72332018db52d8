//! Writes events as ftrace text: the context `trace_print_context()` prints (6.x, irq-info
//! on) and each event's TP_printk text in the 6.x layout of include/trace/events/vmscan.h.
//! The simulator emits its tracepoints through this writer, so what [`crate::line`] and
//! [`crate::event`] parse is, by construction, what the writer prints (a round-trip test
//! checks it).
//!
//! Fields that exist only in older layouts (`zid`, `may_writepage`, `isolate_mode`, 3.x
//! `file`) are printed where the event carries them, so a decoded old-layout event prints
//! back in its own layout as far as the shared fields go.

use crate::event::{
    CongestionWait, Event, LruIsolate, ReclaimBegin, ReclaimFlags, ShrinkActive, ShrinkInactive,
    ThrottleReason, WriteFolio,
};
use std::fmt;
use std::io::{self, Write};

/// `__print_flags(flags, "|", …)` with show_reclaim_flags()'s `RECLAIM_WB_NONE` for 0.
impl fmt::Display for ReclaimFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        print_flags(f, self.0, &Self::NAMES, "RECLAIM_WB_NONE")
    }
}

impl fmt::Display for ThrottleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        print_flags(f, self.0, &Self::NAMES, "VMSCAN_THROTTLE_NONE")
    }
}

/// The kernel's `trace_print_flags_seq()`: known bits by name in table order joined by
/// `|`, leftover bits as one `0x…` word.
fn print_flags(
    f: &mut fmt::Formatter<'_>,
    bits: u32,
    names: &[(u32, &str)],
    none: &str,
) -> fmt::Result {
    if bits == 0 {
        return f.write_str(none);
    }
    let mut left = bits;
    let mut first = true;
    for &(bit, name) in names {
        if left & bit == bit {
            if !first {
                f.write_str("|")?;
            }
            f.write_str(name)?;
            first = false;
            left &= !bit;
        }
    }
    if left != 0 {
        if !first {
            f.write_str("|")?;
        }
        write!(f, "{left:#x}")?;
    }
    Ok(())
}

fn begin(f: &mut fmt::Formatter<'_>, b: &ReclaimBegin<'_>) -> fmt::Result {
    match b.may_writepage {
        Some(mw) => write!(
            f,
            "order={} may_writepage={mw} gfp_flags={}",
            b.order, b.gfp_flags
        ),
        None => write!(f, "order={} gfp_flags={}", b.order, b.gfp_flags),
    }
}

fn isolate(f: &mut fmt::Formatter<'_>, i: &LruIsolate) -> fmt::Result {
    if let Some(mode) = i.isolate_mode {
        write!(f, "isolate_mode={mode} ")?;
    }
    if let Some(cz) = i.classzone {
        write!(f, "classzone={cz} ")?;
    }
    write!(
        f,
        "order={} nr_requested={} nr_scanned={} nr_skipped={} nr_taken={}",
        i.order, i.nr_requested, i.nr_scanned, i.nr_skipped, i.nr_taken
    )?;
    if let Some(lru) = i.lru {
        write!(f, " lru={}", lru.name())?;
    }
    if let Some(file) = i.file {
        write!(f, " file={file}")?;
    }
    if let Some(ct) = i.contig_taken {
        write!(f, " contig_taken={ct}")?;
    }
    if let Some(cd) = i.contig_dirty {
        write!(f, " contig_dirty={cd}")?;
    }
    if let Some(cf) = i.contig_failed {
        write!(f, " contig_failed={cf}")?;
    }
    Ok(())
}

fn shrink_inactive(f: &mut fmt::Formatter<'_>, s: &ShrinkInactive, flags: bool) -> fmt::Result {
    write!(f, "nid={}", s.nid)?;
    if let Some(zid) = s.zid {
        write!(f, " zid={zid}")?;
    }
    write!(
        f,
        " nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} \
         nr_immediate={} nr_activate_anon={} nr_activate_file={} nr_ref_keep={} \
         nr_unmap_fail={}",
        s.nr_scanned,
        s.nr_reclaimed,
        s.nr_dirty,
        s.nr_writeback,
        s.nr_congested,
        s.nr_immediate,
        s.nr_activate_anon,
        s.nr_activate_file,
        s.nr_ref_keep,
        s.nr_unmap_fail
    )?;
    if flags {
        write!(f, " priority={} flags={}", s.priority, s.flags)?;
    }
    Ok(())
}

fn shrink_active(f: &mut fmt::Formatter<'_>, s: &ShrinkActive) -> fmt::Result {
    write!(
        f,
        "nid={} nr_taken={} nr_active={} nr_deactivated={} nr_referenced={} priority={} flags={}",
        s.nid, s.nr_taken, s.nr_active, s.nr_deactivated, s.nr_referenced, s.priority, s.flags
    )
}

fn write_folio(f: &mut fmt::Formatter<'_>, w: &WriteFolio, hex_pfn: bool) -> fmt::Result {
    if hex_pfn {
        write!(f, "page={:016x} pfn={:#x} flags={}", w.page, w.pfn, w.flags)
    } else {
        write!(f, "page={:016x} pfn={} flags={}", w.page, w.pfn, w.flags)
    }
}

fn congestion(f: &mut fmt::Formatter<'_>, c: &CongestionWait) -> fmt::Result {
    write!(
        f,
        "usec_timeout={} usec_delayed={}",
        c.usec_timeout, c.usec_delayed
    )
}

/// The event's TP_printk text (without the `name: ` prefix).
impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::KswapdSleep { nid } => write!(f, "nid={nid}"),
            Event::KswapdWake { nid, zid, order } => match zid {
                Some(zid) => write!(f, "nid={nid} zid={zid} order={order}"),
                None => write!(f, "nid={nid} order={order}"),
            },
            Event::WakeupKswapd {
                nid,
                zid,
                order,
                gfp_flags,
            } => {
                write!(f, "nid={nid}")?;
                if let Some(zid) = zid {
                    write!(f, " zid={zid}")?;
                }
                write!(f, " order={order}")?;
                if let Some(gfp) = gfp_flags {
                    write!(f, " gfp_flags={gfp}")?;
                }
                Ok(())
            }
            Event::DirectReclaimBegin(b)
            | Event::MemcgReclaimBegin(b)
            | Event::MemcgSoftlimitReclaimBegin(b) => begin(f, b),
            Event::DirectReclaimEnd { nr_reclaimed }
            | Event::MemcgReclaimEnd { nr_reclaimed }
            | Event::MemcgSoftlimitReclaimEnd { nr_reclaimed }
            | Event::NodeReclaimEnd { nr_reclaimed } => write!(f, "nr_reclaimed={nr_reclaimed}"),
            Event::NodeReclaimBegin {
                nid,
                order,
                gfp_flags,
            } => write!(f, "nid={nid} order={order} gfp_flags={gfp_flags}"),
            Event::LruIsolate(i) => isolate(f, i),
            Event::LruShrinkInactive(s) => shrink_inactive(f, s, true),
            Event::ReclaimPages(s) => shrink_inactive(f, s, false),
            Event::LruShrinkActive(s) => shrink_active(f, s),
            Event::WriteFolio(w) => write_folio(f, w, true),
            Event::Writepage(w) => write_folio(f, w, false),
            Event::Throttled(t) => write!(
                f,
                // "usect_delayed" is the kernel's spelling.
                "nid={} usec_timeout={} usect_delayed={} reason={}",
                t.nid, t.usec_timeout, t.usec_delayed, t.reason
            ),
            Event::CongestionWait(c) | Event::WaitIffCongested(c) => congestion(f, c),
            Event::ShrinkSlabStart(s) => write!(
                f,
                "{} {:016x}: nid: {} objects to shrink {} gfp_flags {} cache items {} delta {} \
                 total_scan {} priority {}",
                s.shrink,
                s.shr,
                s.nid,
                s.nr_objects_to_shrink,
                s.gfp_flags,
                s.cache_items,
                s.delta,
                s.total_scan,
                s.priority
            ),
            Event::ShrinkSlabEnd(s) => write!(
                f,
                "{} {:016x}: nid: {} unused scan count {} new scan count {} total_scan {} \
                 last shrinker return val {}",
                s.shrink, s.shr, s.nid, s.unused_scan, s.new_scan, s.total_scan, s.retval
            ),
            Event::FilemapAdd(a) => write!(
                f,
                "dev {}:{} ino {:x} pfn={:#x} ofs={} order={}",
                a.dev_major, a.dev_minor, a.ino, a.pfn, a.ofs, a.order
            ),
            Event::CompactionIsolate { fields, .. }
            | Event::CompactionEnd { fields, .. }
            | Event::Compaction { fields, .. } => f.write_str(fields),
            Event::CompactionMigrate {
                nr_migrated,
                nr_failed,
            } => write!(f, "nr_migrated={nr_migrated} nr_failed={nr_failed}"),
        }
    }
}

impl Event<'_> {
    /// The full tracepoint name (compaction events carry their suffix).
    pub fn full_name(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Event::Compaction { kind, .. } => format!("mm_compaction_{kind}").into(),
            ev => ev.name().into(),
        }
    }
}

/// Who and when: the fields `trace_print_context()` prints before the event.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub cpu: u32,
    pub ts_ns: u64,
}

/// Writes trace lines to any [`Write`], counting them and keeping the first I/O error
/// (a trace is a by-product: a full disk must not abort the run that produces it).
pub struct TraceWriter<W: Write> {
    out: W,
    pub lines: u64,
    pub error: Option<io::Error>,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W) -> Self {
        TraceWriter {
            out,
            lines: 0,
            error: None,
        }
    }

    /// One line: `"%16s-%-7d [%03d] %s %5lu.%06lu: %s: %s"` with the 6.x irq-info field
    /// printed as `.....` (irqs on, no resched, not in irq, preempt and migrate counts 0).
    pub fn write(&mut self, ctx: Context<'_>, ev: &Event<'_>) {
        let secs = ctx.ts_ns / 1_000_000_000;
        let usecs = (ctx.ts_ns % 1_000_000_000) / 1_000;
        let r = writeln!(
            self.out,
            "{:>16}-{:<7} [{:03}] ..... {:5}.{:06}: {}: {}",
            ctx.comm,
            ctx.pid,
            ctx.cpu,
            secs,
            usecs,
            ev.full_name(),
            ev
        );
        self.lines += 1;
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    pub fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(e);
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Lru;
    use crate::line::{parse_line, Parsed};

    fn round_trip(ev: Event<'_>) {
        let mut w = TraceWriter::new(Vec::new());
        let ctx = Context {
            comm: "dd reader-1",
            pid: 4242,
            cpu: 17,
            ts_ns: 123_456_789_000,
        };
        w.write(ctx, &ev);
        let text = w.into_inner();
        let line = &text[..text.len() - 1];
        let Parsed::Event(l) = parse_line(line) else {
            panic!("unparsed: {}", String::from_utf8_lossy(line));
        };
        assert_eq!(l.comm, b"dd reader-1");
        assert_eq!((l.pid, l.cpu, l.ts_ns), (4242, 17, 123_456_789_000));
        let back = Event::parse(l.event, l.fields).unwrap().unwrap();
        assert_eq!(back, ev, "{}", String::from_utf8_lossy(line));
    }

    #[test]
    fn events_print_as_they_parse() {
        round_trip(Event::KswapdWake {
            nid: 1,
            zid: None,
            order: 0,
        });
        round_trip(Event::KswapdSleep { nid: 0 });
        round_trip(Event::WakeupKswapd {
            nid: 0,
            zid: None,
            order: 3,
            gfp_flags: Some("GFP_HIGHUSER_MOVABLE"),
        });
        round_trip(Event::DirectReclaimBegin(ReclaimBegin {
            order: 9,
            gfp_flags: "GFP_TRANSHUGE_LIGHT|__GFP_NORETRY",
            may_writepage: None,
        }));
        round_trip(Event::DirectReclaimEnd { nr_reclaimed: 32 });
        round_trip(Event::LruIsolate(LruIsolate {
            classzone: Some(2),
            isolate_mode: None,
            order: 0,
            nr_requested: 32,
            nr_scanned: 40,
            nr_skipped: 8,
            nr_taken: 32,
            lru: Some(Lru::InactiveFile),
            file: None,
            contig_taken: None,
            contig_dirty: None,
            contig_failed: None,
        }));
        // 2.6.36's layout with the lumpy counters.
        round_trip(Event::LruIsolate(LruIsolate {
            classzone: None,
            isolate_mode: Some(1),
            order: 9,
            nr_requested: 32,
            nr_scanned: 543,
            nr_skipped: 0,
            nr_taken: 543,
            lru: None,
            file: None,
            contig_taken: Some(511),
            contig_dirty: Some(7),
            contig_failed: Some(0),
        }));
        round_trip(Event::LruShrinkInactive(ShrinkInactive {
            nid: 1,
            zid: None,
            nr_scanned: 32,
            nr_reclaimed: 31,
            nr_dirty: 0,
            nr_writeback: 0,
            nr_congested: 0,
            nr_immediate: 0,
            nr_activate_anon: 0,
            nr_activate_file: 1,
            nr_ref_keep: 0,
            nr_unmap_fail: 0,
            priority: 12,
            flags: ReclaimFlags(ReclaimFlags::FILE | ReclaimFlags::ASYNC),
        }));
        round_trip(Event::LruShrinkActive(ShrinkActive {
            nid: 0,
            nr_taken: 32,
            nr_active: 0,
            nr_deactivated: 32,
            nr_referenced: 5,
            priority: 11,
            flags: ReclaimFlags(ReclaimFlags::FILE | ReclaimFlags::ASYNC),
        }));
        round_trip(Event::WriteFolio(WriteFolio {
            page: 0xffffea0004a8b2c0,
            pfn: 0x12a2cb,
            flags: ReclaimFlags(ReclaimFlags::ANON | ReclaimFlags::SYNC),
        }));
        round_trip(Event::FilemapAdd(crate::event::FilemapAdd {
            dev_major: 254,
            dev_minor: 1,
            ino: 0xfe000001,
            pfn: 0x2a4600,
            ofs: 0x1c00000,
            order: 9,
        }));
        round_trip(Event::Throttled(crate::event::Throttled {
            nid: 0,
            usec_timeout: 100_000,
            usec_delayed: 4_000,
            reason: ThrottleReason(ThrottleReason::WRITEBACK | ThrottleReason::CONGESTED),
        }));
    }

    #[test]
    fn flags_print_like_print_flags() {
        assert_eq!(ReclaimFlags(0).to_string(), "RECLAIM_WB_NONE");
        assert_eq!(
            ReclaimFlags(0x2 | 0x8).to_string(),
            "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
        );
        assert_eq!(ReclaimFlags(0x1 | 0x40).to_string(), "RECLAIM_WB_ANON|0x40");
        assert_eq!(
            ReclaimFlags::parse(b"RECLAIM_WB_ANON|0x40"),
            Some(ReclaimFlags(0x41))
        );
    }
}
