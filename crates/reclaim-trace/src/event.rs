//! Typed reclaim events, decoded from an event name and its TP_printk field text.
//!
//! The field layouts modelled are those of `include/trace/events/vmscan.h` in 6.10+
//! (checked against the `format` files of a running 6.18 kernel) and the older 2.6.36 / 3.x
//! / 5.x layouts listed in KERNEL-RECLAIM.md §8.2. Fields that only exist in one era are
//! `Option`s (old-only) or default to 0 when absent (6.x-only counters), so one type covers
//! every layout. The same types are what [`crate::writer::TraceWriter`] prints, always in
//! the 6.x layout.

use crate::fields::{as_str, find_byte, parse_hex, parse_i32, parse_i64, parse_u64, Pairs};
use serde::Serialize;

/// `reclaim_flags` of lru_shrink_inactive / lru_shrink_active / write_folio
/// (`show_reclaim_flags()` in vmscan.h: ANON=0x1, FILE=0x2, SYNC=0x4, ASYNC=0x8, MIXED=0x10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimFlags(pub u32);

impl ReclaimFlags {
    pub const ANON: u32 = 0x1;
    pub const FILE: u32 = 0x2;
    pub const SYNC: u32 = 0x4;
    pub const ASYNC: u32 = 0x8;
    pub const MIXED: u32 = 0x10;
    /// Print order of `__print_flags` in vmscan.h.
    pub const NAMES: [(u32, &'static str); 5] = [
        (Self::ANON, "RECLAIM_WB_ANON"),
        (Self::FILE, "RECLAIM_WB_FILE"),
        (Self::MIXED, "RECLAIM_WB_MIXED"),
        (Self::SYNC, "RECLAIM_WB_SYNC"),
        (Self::ASYNC, "RECLAIM_WB_ASYNC"),
    ];

    pub fn is_file(self) -> bool {
        self.0 & Self::FILE != 0
    }
    pub fn is_sync(self) -> bool {
        self.0 & Self::SYNC != 0
    }

    /// Parses `RECLAIM_WB_FILE|RECLAIM_WB_ASYNC`, `RECLAIM_WB_NONE`, or a hex value
    /// (`__print_flags` prints leftover bits as `0x…`).
    pub fn parse(v: &[u8]) -> Option<Self> {
        // The two values page-cache and anon reclaim print on every shrink event.
        match v {
            b"RECLAIM_WB_FILE|RECLAIM_WB_ASYNC" => {
                return Some(ReclaimFlags(Self::FILE | Self::ASYNC))
            }
            b"RECLAIM_WB_ANON|RECLAIM_WB_ASYNC" => {
                return Some(ReclaimFlags(Self::ANON | Self::ASYNC))
            }
            b"RECLAIM_WB_NONE" => return Some(ReclaimFlags(0)),
            _ => {}
        }
        let mut bits = 0;
        for name in v.split(|&c| c == b'|') {
            bits |= match Self::NAMES.iter().find(|(_, n)| n.as_bytes() == name) {
                Some((bit, _)) => *bit,
                None => u32::try_from(parse_u64(name)?).ok()?,
            };
        }
        Some(ReclaimFlags(bits))
    }
}

/// `mm_vmscan_throttled` reason, a bit mask of `1 << VMSCAN_THROTTLE_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThrottleReason(pub u32);

impl ThrottleReason {
    pub const WRITEBACK: u32 = 1 << 0;
    pub const ISOLATED: u32 = 1 << 1;
    pub const NOPROGRESS: u32 = 1 << 2;
    pub const CONGESTED: u32 = 1 << 3;
    pub const NAMES: [(u32, &'static str); 4] = [
        (Self::WRITEBACK, "VMSCAN_THROTTLE_WRITEBACK"),
        (Self::ISOLATED, "VMSCAN_THROTTLE_ISOLATED"),
        (Self::NOPROGRESS, "VMSCAN_THROTTLE_NOPROGRESS"),
        (Self::CONGESTED, "VMSCAN_THROTTLE_CONGESTED"),
    ];

    pub fn parse(v: &[u8]) -> Option<Self> {
        if v == b"VMSCAN_THROTTLE_NONE" {
            return Some(ThrottleReason(0));
        }
        let mut bits = 0;
        for name in v.split(|&c| c == b'|') {
            bits |= match Self::NAMES.iter().find(|(_, n)| n.as_bytes() == name) {
                Some((bit, _)) => *bit,
                None => u32::try_from(parse_u64(name)?).ok()?,
            };
        }
        Some(ThrottleReason(bits))
    }
}

/// LRU list (`__print_symbolic(lru, …)` of lru_isolate, 4.x+).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Lru {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
    Unevictable = 4,
}

impl Lru {
    pub const ALL: [Lru; 5] = [
        Lru::InactiveAnon,
        Lru::ActiveAnon,
        Lru::InactiveFile,
        Lru::ActiveFile,
        Lru::Unevictable,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Lru::InactiveAnon => "inactive_anon",
            Lru::ActiveAnon => "active_anon",
            Lru::InactiveFile => "inactive_file",
            Lru::ActiveFile => "active_file",
            Lru::Unevictable => "unevictable",
        }
    }
    fn parse(v: &[u8]) -> Option<Lru> {
        Lru::ALL.into_iter().find(|l| l.name().as_bytes() == v)
    }
    pub fn is_inactive(self) -> bool {
        matches!(self, Lru::InactiveAnon | Lru::InactiveFile)
    }
    pub fn is_file(self) -> bool {
        matches!(self, Lru::InactiveFile | Lru::ActiveFile)
    }
}

/// `*_reclaim_begin` (direct, memcg, memcg softlimit): 6.x `order=%d gfp_flags=%s`;
/// 2.6.36–3.x also `may_writepage=%d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReclaimBegin<'a> {
    pub order: i32,
    pub gfp_flags: &'a str,
    pub may_writepage: Option<i32>,
}

/// `mm_vmscan_lru_isolate`. 6.x: `classzone order nr_requested nr_scanned nr_skipped
/// nr_taken lru`; 5.x adds a leading `isolate_mode`; 3.x: `isolate_mode order nr_requested
/// nr_scanned nr_taken file`; 2.6.36: `… nr_taken contig_taken contig_dirty contig_failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LruIsolate {
    pub classzone: Option<i32>,
    pub isolate_mode: Option<i32>,
    pub order: i32,
    pub nr_requested: u64,
    pub nr_scanned: u64,
    pub nr_skipped: u64,
    pub nr_taken: u64,
    pub lru: Option<Lru>,
    /// 3.x `file=%d`.
    pub file: Option<i32>,
    /// 2.6.36 lumpy-reclaim counters (`nr_lumpy_taken`, `nr_lumpy_dirty`,
    /// `nr_lumpy_failed`, printed `contig_taken`, `contig_dirty`, `contig_failed`): the
    /// neighbours of tail pages taken, how many of those were dirty, and the failures.
    pub contig_taken: Option<u64>,
    pub contig_dirty: Option<u64>,
    pub contig_failed: Option<u64>,
}

impl LruIsolate {
    /// Does this isolation count as "pages scanned" in trace-vmscan-postprocess.pl?
    /// New script: `lru` matches `inactive_`; old script: `isolate_mode != 2` (2 = active
    /// only, i.e. rotation by shrink_active_list).
    pub fn counts_as_scan(&self) -> bool {
        match (self.lru, self.isolate_mode) {
            (Some(lru), _) => lru.is_inactive(),
            (None, Some(mode)) => mode != 2,
            (None, None) => true,
        }
    }
    /// File LRU? `None` when the layout does not say (2.6.36).
    pub fn is_file(&self) -> Option<bool> {
        match (self.lru, self.file) {
            (Some(lru), _) => Some(lru.is_file()),
            (None, Some(f)) => Some(f != 0),
            _ => None,
        }
    }
}

/// `mm_vmscan_lru_shrink_inactive` (6.x layout; the 3.x layout `nid zid nr_scanned
/// nr_reclaimed priority flags` leaves the 6.x-only counters at 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkInactive {
    pub nid: i32,
    pub zid: Option<i32>,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_congested: u64,
    pub nr_immediate: u64,
    pub nr_activate_anon: u64,
    pub nr_activate_file: u64,
    pub nr_ref_keep: u64,
    pub nr_unmap_fail: u64,
    pub priority: i32,
    pub flags: ReclaimFlags,
}

/// `mm_vmscan_lru_shrink_active` (6.x layout; the 3.x `lru nr_scanned nr_rotated priority`
/// maps nr_scanned to nr_taken and nr_rotated to nr_active).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkActive {
    pub nid: i32,
    pub nr_taken: u64,
    pub nr_active: u64,
    pub nr_deactivated: u64,
    pub nr_referenced: u64,
    pub priority: i32,
    pub flags: ReclaimFlags,
}

/// `mm_vmscan_write_folio` (6.x, `pfn=0x%lx`) and `mm_vmscan_writepage` (≤5.x, `pfn=%lu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct WriteFolio {
    /// The `%p` value as printed (hashed pointer).
    pub page: u64,
    pub pfn: u64,
    pub flags: ReclaimFlags,
}

/// `mm_filemap_add_to_page_cache` (include/trace/events/filemap.h): a folio inserted into a
/// file's page cache (`__filemap_add_folio`). 6.x prints
/// `dev %d:%d ino %lx pfn=0x%lx ofs=%lu order=%u`; the older layouts print a `page=%p` and
/// no `order`: their entries are pages (order 0). A line with neither `page=` nor `order=`
/// is cut short and malformed, as is an order above [`MAX_FOLIO_ORDER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FilemapAdd {
    pub dev_major: u32,
    pub dev_minor: u32,
    pub ino: u64,
    pub pfn: u64,
    /// The folio's byte offset in the file (`index << PAGE_SHIFT`).
    pub ofs: u64,
    pub order: u32,
}

/// `mm_vmscan_throttled` (5.16+): `nid usec_timeout usect_delayed reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Throttled {
    pub nid: i32,
    pub usec_timeout: i64,
    pub usec_delayed: i64,
    pub reason: ThrottleReason,
}

/// `writeback_congestion_wait` / `writeback_wait_iff_congested` (2.6.36–5.15):
/// `usec_timeout=%u usec_delayed=%u`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CongestionWait {
    pub usec_timeout: u64,
    pub usec_delayed: u64,
}

/// `mm_shrink_slab_start`: `%pS %p: nid: %d objects to shrink %ld gfp_flags %s cache items
/// %ld delta %lld total_scan %ld priority %d` (4.16+; 3.x–4.15 have no nid or priority,
/// which read as 0, and print `pgs_scanned`/`lru_pgs`, which are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkSlabStart<'a> {
    pub shrink: &'a str,
    pub shr: u64,
    pub nid: i32,
    pub nr_objects_to_shrink: i64,
    pub gfp_flags: &'a str,
    pub cache_items: i64,
    pub delta: i64,
    pub total_scan: i64,
    pub priority: i32,
}

/// `mm_shrink_slab_end`: `%pS %p: nid: %d unused scan count %ld new scan count %ld
/// total_scan %ld last shrinker return val %d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkSlabEnd<'a> {
    pub shrink: &'a str,
    pub shr: u64,
    pub nid: i32,
    pub unused_scan: i64,
    pub new_scan: i64,
    pub total_scan: i64,
    pub retval: i32,
}

/// Which compaction scanner an isolate event is from
/// (include/trace/events/compaction.h, `mm_compaction_isolate_template`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionScanner {
    /// `mm_compaction_isolate_migratepages`: the migrate scanner.
    Migrate,
    /// `mm_compaction_isolate_freepages`: the free scanner's linear scan.
    Free,
    /// `mm_compaction_fast_isolate_freepages` (5.1+): the free scanner's search of the free
    /// lists.
    FastFree,
}

impl CompactionScanner {
    /// The event name's part after `mm_compaction_`.
    pub fn kind(self) -> &'static str {
        match self {
            CompactionScanner::Migrate => "isolate_migratepages",
            CompactionScanner::Free => "isolate_freepages",
            CompactionScanner::FastFree => "fast_isolate_freepages",
        }
    }
}

/// One decoded reclaim event. Borrowed from the line it was parsed from (no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Event<'a> {
    /// `mm_vmscan_kswapd_sleep: nid=%d`
    KswapdSleep {
        nid: i32,
    },
    /// `mm_vmscan_kswapd_wake: nid=%d [zid=%d] order=%d`
    KswapdWake {
        nid: i32,
        zid: Option<i32>,
        order: i32,
    },
    /// `mm_vmscan_wakeup_kswapd: nid=%d [zid=%d] order=%d [gfp_flags=%s]`
    WakeupKswapd {
        nid: i32,
        zid: Option<i32>,
        order: i32,
        gfp_flags: Option<&'a str>,
    },
    DirectReclaimBegin(ReclaimBegin<'a>),
    /// `mm_vmscan_direct_reclaim_end: nr_reclaimed=%lu`
    DirectReclaimEnd {
        nr_reclaimed: u64,
    },
    MemcgReclaimBegin(ReclaimBegin<'a>),
    MemcgReclaimEnd {
        nr_reclaimed: u64,
    },
    MemcgSoftlimitReclaimBegin(ReclaimBegin<'a>),
    MemcgSoftlimitReclaimEnd {
        nr_reclaimed: u64,
    },
    /// `mm_vmscan_node_reclaim_begin: nid=%d order=%d gfp_flags=%s`
    NodeReclaimBegin {
        nid: i32,
        order: i32,
        gfp_flags: &'a str,
    },
    NodeReclaimEnd {
        nr_reclaimed: u64,
    },
    LruIsolate(LruIsolate),
    LruShrinkInactive(ShrinkInactive),
    LruShrinkActive(ShrinkActive),
    /// `mm_vmscan_reclaim_pages` (MADV_PAGEOUT / DAMON): shrink_inactive fields without
    /// priority and flags.
    ReclaimPages(ShrinkInactive),
    WriteFolio(WriteFolio),
    /// The ≤5.x name of write_folio.
    Writepage(WriteFolio),
    Throttled(Throttled),
    CongestionWait(CongestionWait),
    WaitIffCongested(CongestionWait),
    ShrinkSlabStart(ShrinkSlabStart<'a>),
    ShrinkSlabEnd(ShrinkSlabEnd<'a>),
    FilemapAdd(FilemapAdd),
    /// `mm_compaction_isolate_migratepages`, `_isolate_freepages`,
    /// `_fast_isolate_freepages`: `range=(0x%lx ~ 0x%lx) nr_scanned=%lu nr_taken=%lu`.
    CompactionIsolate {
        scanner: CompactionScanner,
        nr_scanned: u64,
        nr_taken: u64,
        /// The field text, written back as it was read.
        fields: &'a str,
    },
    /// `mm_compaction_migratepages: nr_migrated=%lu nr_failed=%lu`.
    CompactionMigrate {
        nr_migrated: u64,
        nr_failed: u64,
    },
    /// `mm_compaction_end: zone_start=… migrate_pfn=… free_pfn=… zone_end=…, mode=%s
    /// status=%s`: how a compaction of one zone ended (`compact_result`'s name).
    CompactionEnd {
        status: &'a str,
        /// The field text, written back as it was read.
        fields: &'a str,
    },
    /// Any other `mm_compaction_*` event: the name without the prefix and the raw field
    /// text.
    Compaction {
        kind: &'a str,
        fields: &'a str,
    },
}

/// Why a known event's fields could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldError;

/// Collects fields by key; `Field::get` fails on absence.
#[derive(Clone, Copy, Default)]
struct F<'a>(Option<&'a [u8]>);

impl<'a> F<'a> {
    fn u(self) -> Result<u64, FieldError> {
        self.0.and_then(parse_u64).ok_or(FieldError)
    }
    fn u_or0(self) -> Result<u64, FieldError> {
        match self.0 {
            None => Ok(0),
            Some(v) => parse_u64(v).ok_or(FieldError),
        }
    }
    fn i(self) -> Result<i32, FieldError> {
        self.0.and_then(parse_i32).ok_or(FieldError)
    }
    fn i_or0(self) -> Result<i32, FieldError> {
        match self.0 {
            None => Ok(0),
            Some(v) => parse_i32(v).ok_or(FieldError),
        }
    }
    fn i64(self) -> Result<i64, FieldError> {
        self.0.and_then(parse_i64).ok_or(FieldError)
    }
    fn opt_i(self) -> Result<Option<i32>, FieldError> {
        self.0.map(|v| parse_i32(v).ok_or(FieldError)).transpose()
    }
    fn opt_u(self) -> Result<Option<u64>, FieldError> {
        self.0.map(|v| parse_u64(v).ok_or(FieldError)).transpose()
    }
    fn s(self) -> Result<&'a str, FieldError> {
        self.0.and_then(as_str).ok_or(FieldError)
    }
    fn flags(self) -> Result<ReclaimFlags, FieldError> {
        self.0.and_then(ReclaimFlags::parse).ok_or(FieldError)
    }
}

/// Declares a fixed set of keys, scans the pairs once and fills them.
///
/// Keys are listed in the 6.x print order, so the key expected next is tried first: one
/// comparison per field on a 6.x line; any other layout falls back to a search of the list.
macro_rules! scan {
    ($text:expr, { $($key:literal => $var:ident),* $(,)? }) => {
        const KEYS: &[&[u8]] = &[$($key),*];
        let mut vals = [$({ let _ = $key; F::default() }),*];
        let mut next = 0;
        for (k, v) in Pairs::new($text) {
            if KEYS.get(next) == Some(&k) {
                vals[next] = F(Some(v));
                next += 1;
            } else if let Some(i) = KEYS.iter().position(|key| *key == k) {
                vals[i] = F(Some(v));
                next = i + 1;
            }
        }
        let [$($var),*] = vals;
    };
}

fn reclaim_begin(text: &[u8]) -> Result<ReclaimBegin<'_>, FieldError> {
    scan!(text, { b"order" => order, b"gfp_flags" => gfp, b"may_writepage" => mw });
    Ok(ReclaimBegin {
        order: order.i()?,
        gfp_flags: gfp.s()?,
        may_writepage: mw.opt_i()?,
    })
}

fn nr_reclaimed(text: &[u8]) -> Result<u64, FieldError> {
    scan!(text, { b"nr_reclaimed" => n });
    n.u()
}

/// The 6.x layout of lru_shrink_inactive, read positionally.
fn shrink_inactive_fast(text: &[u8]) -> Option<ShrinkInactive> {
    let mut c = Cursor(text);
    c.lit(b"nid=")?;
    let nid = c.dec_i32()?;
    c.lit(b" nr_scanned=")?;
    let nr_scanned = c.dec()?;
    c.lit(b" nr_reclaimed=")?;
    let nr_reclaimed = c.dec()?;
    c.lit(b" nr_dirty=")?;
    let nr_dirty = c.dec()?;
    c.lit(b" nr_writeback=")?;
    let nr_writeback = c.dec()?;
    c.lit(b" nr_congested=")?;
    let nr_congested = c.dec()?;
    c.lit(b" nr_immediate=")?;
    let nr_immediate = c.dec()?;
    c.lit(b" nr_activate_anon=")?;
    let nr_activate_anon = c.dec()?;
    c.lit(b" nr_activate_file=")?;
    let nr_activate_file = c.dec()?;
    c.lit(b" nr_ref_keep=")?;
    let nr_ref_keep = c.dec()?;
    c.lit(b" nr_unmap_fail=")?;
    let nr_unmap_fail = c.dec()?;
    c.lit(b" priority=")?;
    let priority = c.dec_i32()?;
    c.lit(b" flags=")?;
    let flags = ReclaimFlags::parse(c.word())?;
    c.done().then_some(ShrinkInactive {
        nid,
        zid: None,
        nr_scanned,
        nr_reclaimed,
        nr_dirty,
        nr_writeback,
        nr_congested,
        nr_immediate,
        nr_activate_anon,
        nr_activate_file,
        nr_ref_keep,
        nr_unmap_fail,
        priority,
        flags,
    })
}

/// The 6.x layout of lru_isolate, read positionally.
fn lru_isolate_fast(text: &[u8]) -> Option<LruIsolate> {
    let mut c = Cursor(text);
    c.lit(b"classzone=")?;
    let classzone = c.dec_i32()?;
    c.lit(b" order=")?;
    let order = c.dec_i32()?;
    c.lit(b" nr_requested=")?;
    let nr_requested = c.dec()?;
    c.lit(b" nr_scanned=")?;
    let nr_scanned = c.dec()?;
    c.lit(b" nr_skipped=")?;
    let nr_skipped = c.dec()?;
    c.lit(b" nr_taken=")?;
    let nr_taken = c.dec()?;
    c.lit(b" lru=")?;
    let lru = Lru::parse(c.word())?;
    c.done().then_some(LruIsolate {
        classzone: Some(classzone),
        isolate_mode: None,
        order,
        nr_requested,
        nr_scanned,
        nr_skipped,
        nr_taken,
        lru: Some(lru),
        file: None,
        contig_taken: None,
        contig_dirty: None,
        contig_failed: None,
    })
}

/// lru_isolate in any layout (5.x adds isolate_mode, 3.x prints file, 2.6.36 the contig_*
/// counters).
fn lru_isolate(text: &[u8]) -> Result<LruIsolate, FieldError> {
    if let Some(i) = lru_isolate_fast(text) {
        return Ok(i);
    }
    scan!(text, {
        b"classzone" => classzone, b"isolate_mode" => mode, b"order" => order,
        b"nr_requested" => req, b"nr_scanned" => scanned, b"nr_skipped" => skipped,
        b"nr_taken" => taken, b"lru" => lru, b"file" => file,
        b"contig_taken" => contig_taken, b"contig_dirty" => contig_dirty,
        b"contig_failed" => contig_failed,
    });
    Ok(LruIsolate {
        classzone: classzone.opt_i()?,
        isolate_mode: mode.opt_i()?,
        order: order.i()?,
        nr_requested: req.u()?,
        nr_scanned: scanned.u()?,
        nr_skipped: skipped.u_or0()?,
        nr_taken: taken.u()?,
        lru: lru.0.map(|v| Lru::parse(v).ok_or(FieldError)).transpose()?,
        file: file.opt_i()?,
        contig_taken: contig_taken.opt_u()?,
        contig_dirty: contig_dirty.opt_u()?,
        contig_failed: contig_failed.opt_u()?,
    })
}

fn shrink_inactive(text: &[u8], has_flags: bool) -> Result<ShrinkInactive, FieldError> {
    if has_flags {
        if let Some(s) = shrink_inactive_fast(text) {
            return Ok(s);
        }
    }
    scan!(text, {
        b"nid" => nid, b"zid" => zid, b"nr_scanned" => scanned, b"nr_reclaimed" => reclaimed,
        b"nr_dirty" => dirty, b"nr_writeback" => writeback, b"nr_congested" => congested,
        b"nr_immediate" => immediate, b"nr_activate_anon" => act_anon,
        b"nr_activate_file" => act_file, b"nr_ref_keep" => ref_keep,
        b"nr_unmap_fail" => unmap_fail, b"priority" => priority, b"flags" => flags,
    });
    Ok(ShrinkInactive {
        nid: nid.i()?,
        zid: zid.opt_i()?,
        nr_scanned: scanned.u()?,
        nr_reclaimed: reclaimed.u()?,
        nr_dirty: dirty.u_or0()?,
        nr_writeback: writeback.u_or0()?,
        nr_congested: congested.u_or0()?,
        nr_immediate: immediate.u_or0()?,
        nr_activate_anon: act_anon.u_or0()?,
        nr_activate_file: act_file.u_or0()?,
        nr_ref_keep: ref_keep.u_or0()?,
        nr_unmap_fail: unmap_fail.u_or0()?,
        priority: if has_flags {
            priority.i()?
        } else {
            priority.i_or0()?
        },
        flags: if has_flags {
            flags.flags()?
        } else {
            ReclaimFlags(0)
        },
    })
}

fn write_folio(text: &[u8]) -> Result<WriteFolio, FieldError> {
    scan!(text, { b"page" => page, b"pfn" => pfn, b"flags" => flags });
    let page = page.0.and_then(parse_hex).ok_or(FieldError)?;
    Ok(WriteFolio {
        page,
        pfn: pfn.u()?,
        flags: flags.flags()?,
    })
}

/// The largest folio order a trace line is believed (a PUD-sized folio is order 18 with
/// 4 KiB pages); a larger one is a damaged line, whose pages would not fit a count.
pub const MAX_FOLIO_ORDER: u32 = 20;

fn compaction_isolate(text: &[u8], scanner: CompactionScanner) -> Result<Event<'_>, FieldError> {
    scan!(text, { b"nr_scanned" => scanned, b"nr_taken" => taken });
    Ok(Event::CompactionIsolate {
        scanner,
        nr_scanned: scanned.u()?,
        nr_taken: taken.u()?,
        fields: as_str(text).ok_or(FieldError)?,
    })
}

fn filemap_add(text: &[u8]) -> Result<FilemapAdd, FieldError> {
    // `dev 254:0 ino 4c1 pfn=…`: the first four tokens have no `=`.
    let mut bare = Pairs::new(text)
        .filter(|(k, _)| k.is_empty())
        .map(|(_, v)| v);
    let (Some(b"dev"), Some(dev), Some(b"ino"), Some(ino)) =
        (bare.next(), bare.next(), bare.next(), bare.next())
    else {
        return Err(FieldError);
    };
    let colon = find_byte(b':', dev).ok_or(FieldError)?;
    let num = |v: &[u8]| parse_u64(v).and_then(|n| u32::try_from(n).ok());
    scan!(text, { b"page" => page, b"pfn" => pfn, b"ofs" => ofs, b"order" => order });
    let order = match (page.0, order.0) {
        (_, Some(_)) => order.u()?,
        (Some(_), None) => 0,
        (None, None) => return Err(FieldError),
    };
    Ok(FilemapAdd {
        dev_major: num(&dev[..colon]).ok_or(FieldError)?,
        dev_minor: num(&dev[colon + 1..]).ok_or(FieldError)?,
        ino: parse_hex(ino).ok_or(FieldError)?,
        pfn: pfn.u()?,
        ofs: ofs.u()?,
        order: u32::try_from(order)
            .ok()
            .filter(|&o| o <= MAX_FOLIO_ORDER)
            .ok_or(FieldError)?,
    })
}

fn congestion(text: &[u8]) -> Result<CongestionWait, FieldError> {
    scan!(text, { b"usec_timeout" => timeout, b"usec_delayed" => delayed });
    Ok(CongestionWait {
        usec_timeout: timeout.u()?,
        usec_delayed: delayed.u()?,
    })
}

/// The words of a line, split on spaces.
type Words<'a> = std::slice::Split<'a, u8, fn(&u8) -> bool>;

fn space(c: &u8) -> bool {
    *c == b' '
}

/// Splits the `%pS %p: ` prefix of the shrink_slab events: the shrinker function, the
/// shrinker pointer, and the text after them.
fn slab_prefix(text: &[u8]) -> Result<(&str, u64, &[u8]), FieldError> {
    let sp = find_byte(b' ', text).ok_or(FieldError)?;
    let shrink = as_str(&text[..sp]).ok_or(FieldError)?;
    let rest = &text[sp + 1..];
    // `%p` prints a hashed pointer as 16 hex digits on 64-bit kernels.
    if let Some(b':') = rest.get(16) {
        if let Some(shr) = parse_hex(&rest[..16]) {
            let rest = &rest[17..];
            return Ok((shrink, shr, rest.strip_prefix(b" ").unwrap_or(rest)));
        }
    }
    let colon = find_byte(b':', rest).ok_or(FieldError)?;
    let shr = parse_hex(&rest[..colon]).ok_or(FieldError)?;
    let rest = &rest[colon + 1..];
    Ok((shrink, shr, rest.strip_prefix(b" ").unwrap_or(rest)))
}

/// Reads a fixed-layout text: literal phrases and the value words between them.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.0 = self.0.strip_prefix(s)?;
        Some(())
    }
    #[inline(always)]
    fn word(&mut self) -> &'a [u8] {
        let end = find_byte(b' ', self.0).unwrap_or(self.0.len());
        let (w, rest) = self.0.split_at(end);
        self.0 = rest;
        w
    }
    /// Plain decimal digits ending at a space or the end, in one pass. Anything else (hex,
    /// a sign, a trailing comma) fails, and the caller falls back to the general reader.
    #[inline(always)]
    fn dec(&mut self) -> Option<u64> {
        let mut n: u64 = 0;
        let mut i = 0;
        while let Some(&c) = self.0.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            n = n.checked_mul(10)?.checked_add(d as u64)?;
            i += 1;
        }
        if i == 0 || !matches!(self.0.get(i), None | Some(b' ')) {
            return None;
        }
        self.0 = &self.0[i..];
        Some(n)
    }
    /// A word that is usually long (a gfp flag list): straight to memchr.
    #[inline(always)]
    fn long_word(&mut self) -> &'a [u8] {
        let end = memchr::memchr(b' ', self.0).unwrap_or(self.0.len());
        let (w, rest) = self.0.split_at(end);
        self.0 = rest;
        w
    }
    #[inline(always)]
    fn dec_i64(&mut self) -> Option<i64> {
        let neg = self.0.first() == Some(&b'-');
        if neg {
            self.0 = &self.0[1..];
        }
        let v = i64::try_from(self.dec()?).ok()?;
        Some(if neg { -v } else { v })
    }
    #[inline(always)]
    fn dec_i32(&mut self) -> Option<i32> {
        i32::try_from(self.dec_i64()?).ok()
    }
    #[inline(always)]
    fn done(&self) -> bool {
        self.0.iter().all(|&c| c == b' ' || c == b'\r')
    }
}

/// The 4.16+ layout of mm_shrink_slab_start after the prefix, read positionally (most
/// traces are mostly these events; [`slab_phrases`] reads the other layouts).
fn slab_start_fast<'a>(shrink: &'a str, shr: u64, rest: &'a [u8]) -> Option<ShrinkSlabStart<'a>> {
    let mut c = Cursor(rest);
    c.lit(b"nid: ")?;
    let nid = c.dec_i32()?;
    c.lit(b" objects to shrink ")?;
    let objs = c.dec_i64()?;
    c.lit(b" gfp_flags ")?;
    let gfp = as_str(c.long_word())?;
    c.lit(b" cache items ")?;
    let items = c.dec_i64()?;
    c.lit(b" delta ")?;
    let delta = c.dec_i64()?;
    c.lit(b" total_scan ")?;
    let total = c.dec_i64()?;
    c.lit(b" priority ")?;
    let priority = c.dec_i32()?;
    c.done().then_some(ShrinkSlabStart {
        shrink,
        shr,
        nid,
        nr_objects_to_shrink: objs,
        gfp_flags: gfp,
        cache_items: items,
        delta,
        total_scan: total,
        priority,
    })
}

/// The 4.16+ layout of mm_shrink_slab_end after the prefix.
fn slab_end_fast<'a>(shrink: &'a str, shr: u64, rest: &[u8]) -> Option<ShrinkSlabEnd<'a>> {
    let mut c = Cursor(rest);
    c.lit(b"nid: ")?;
    let nid = c.dec_i32()?;
    c.lit(b" unused scan count ")?;
    let unused = c.dec_i64()?;
    c.lit(b" new scan count ")?;
    let new = c.dec_i64()?;
    c.lit(b" total_scan ")?;
    let total = c.dec_i64()?;
    c.lit(b" last shrinker return val ")?;
    let retval = c.dec_i32()?;
    c.done().then_some(ShrinkSlabEnd {
        shrink,
        shr,
        nid,
        unused_scan: unused,
        new_scan: new,
        total_scan: total,
        retval,
    })
}

fn words(rest: &[u8]) -> Words<'_> {
    rest.split(space as fn(&u8) -> bool)
}

/// Reads the `words value` phrases of the shrink_slab events: every numeric word is the
/// value of the words before it; `gfp_flags` takes the next word whatever it is.
fn slab_phrases<'a>(words: impl Iterator<Item = &'a [u8]>, mut put: impl FnMut(&[u8], &'a [u8])) {
    let mut key_start: Option<&'a [u8]> = None;
    let mut key_last: &'a [u8] = b"";
    let mut want_gfp = false;
    for w in words.filter(|w| !w.is_empty()) {
        if want_gfp {
            put(b"gfp_flags", w);
            want_gfp = false;
            key_start = None;
            continue;
        }
        if w == b"gfp_flags" {
            want_gfp = true;
            continue;
        }
        if parse_i64(w).is_some() {
            // The key is the last word before the number ("count", "items", "val"…), plus
            // the first when that disambiguates ("unused"/"new" scan count).
            let first = key_start.unwrap_or(b"");
            let key: &[u8] = match (first, key_last) {
                (b"unused", _) => b"unused",
                (b"new", _) => b"new",
                (b"objects", _) => b"objects",
                (b"last", _) => b"retval",
                (_, last) => last,
            };
            put(key, w);
            key_start = None;
        } else {
            if key_start.is_none() {
                key_start = Some(w);
            }
            key_last = w;
        }
    }
}

fn slab_start(text: &[u8]) -> Result<ShrinkSlabStart<'_>, FieldError> {
    let (shrink, shr, rest) = slab_prefix(text)?;
    if let Some(ev) = slab_start_fast(shrink, shr, rest) {
        return Ok(ev);
    }
    let words = words(rest);
    let (mut nid, mut objs, mut gfp, mut items, mut delta, mut total, mut prio) =
        (None, None, None, None, None, None, None);
    slab_phrases(words, |k, v| match k {
        b"nid:" => nid = Some(v),
        b"objects" => objs = Some(v),
        b"gfp_flags" => gfp = Some(v),
        b"items" => items = Some(v),
        b"delta" => delta = Some(v),
        b"total_scan" => total = Some(v),
        b"priority" => prio = Some(v),
        _ => {}
    });
    Ok(ShrinkSlabStart {
        shrink,
        shr,
        nid: F(nid).i_or0()?,
        nr_objects_to_shrink: F(objs).i64()?,
        gfp_flags: F(gfp).s()?,
        cache_items: F(items).i64()?,
        delta: F(delta).i64()?,
        total_scan: F(total).i64()?,
        priority: F(prio).i_or0()?,
    })
}

fn slab_end(text: &[u8]) -> Result<ShrinkSlabEnd<'_>, FieldError> {
    let (shrink, shr, rest) = slab_prefix(text)?;
    if let Some(ev) = slab_end_fast(shrink, shr, rest) {
        return Ok(ev);
    }
    let words = words(rest);
    let (mut nid, mut unused, mut new, mut total, mut ret) = (None, None, None, None, None);
    slab_phrases(words, |k, v| match k {
        b"nid:" => nid = Some(v),
        b"unused" => unused = Some(v),
        b"new" => new = Some(v),
        b"total_scan" => total = Some(v),
        b"retval" => ret = Some(v),
        _ => {}
    });
    Ok(ShrinkSlabEnd {
        shrink,
        shr,
        nid: F(nid).i_or0()?,
        unused_scan: F(unused).i64()?,
        new_scan: F(new).i64()?,
        total_scan: F(total).i64()?,
        retval: F(ret).i()?,
    })
}

impl<'a> Event<'a> {
    /// Decodes an event. `Ok(None)`: an event this crate does not model (counted as unknown
    /// by callers). `Err`: a modelled event whose fields are missing or unparsable.
    pub fn parse(name: &'a [u8], text: &'a [u8]) -> Result<Option<Event<'a>>, FieldError> {
        // The shrinker events are most of a trace that has them: test for them first, each
        // a comparison of known length.
        if name.len() == 20 && name == b"mm_shrink_slab_start" {
            return Ok(Some(Event::ShrinkSlabStart(slab_start(text)?)));
        }
        if name.len() == 18 && name == b"mm_shrink_slab_end" {
            return Ok(Some(Event::ShrinkSlabEnd(slab_end(text)?)));
        }
        let ev = match name {
            b"mm_vmscan_lru_isolate" => Event::LruIsolate(lru_isolate(text)?),
            b"mm_vmscan_lru_shrink_inactive" => {
                Event::LruShrinkInactive(shrink_inactive(text, true)?)
            }
            b"mm_shrink_slab_start" => Event::ShrinkSlabStart(slab_start(text)?),
            b"mm_shrink_slab_end" => Event::ShrinkSlabEnd(slab_end(text)?),
            b"mm_vmscan_lru_shrink_active" => {
                scan!(text, {
                    b"nid" => nid, b"nr_taken" => taken, b"nr_scanned" => scanned,
                    b"nr_active" => active, b"nr_rotated" => rotated,
                    b"nr_deactivated" => deact, b"nr_referenced" => referenced,
                    b"priority" => priority, b"flags" => flags,
                });
                let taken = if taken.0.is_some() { taken } else { scanned };
                let active = if active.0.is_some() { active } else { rotated };
                Event::LruShrinkActive(ShrinkActive {
                    nid: nid.i_or0()?,
                    nr_taken: taken.u()?,
                    nr_active: active.u_or0()?,
                    nr_deactivated: deact.u_or0()?,
                    nr_referenced: referenced.u_or0()?,
                    priority: priority.i()?,
                    flags: if flags.0.is_some() {
                        flags.flags()?
                    } else {
                        ReclaimFlags(0)
                    },
                })
            }
            b"mm_vmscan_kswapd_wake" => {
                scan!(text, { b"nid" => nid, b"zid" => zid, b"order" => order });
                Event::KswapdWake {
                    nid: nid.i()?,
                    zid: zid.opt_i()?,
                    order: order.i()?,
                }
            }
            b"mm_vmscan_kswapd_sleep" => {
                scan!(text, { b"nid" => nid });
                Event::KswapdSleep { nid: nid.i()? }
            }
            b"mm_vmscan_wakeup_kswapd" => {
                scan!(text, { b"nid" => nid, b"zid" => zid, b"order" => order, b"gfp_flags" => gfp });
                Event::WakeupKswapd {
                    nid: nid.i()?,
                    zid: zid.opt_i()?,
                    order: order.i()?,
                    gfp_flags: gfp.0.map(|v| as_str(v).ok_or(FieldError)).transpose()?,
                }
            }
            b"mm_vmscan_direct_reclaim_begin" => Event::DirectReclaimBegin(reclaim_begin(text)?),
            b"mm_vmscan_direct_reclaim_end" => Event::DirectReclaimEnd {
                nr_reclaimed: nr_reclaimed(text)?,
            },
            b"mm_vmscan_memcg_reclaim_begin" => Event::MemcgReclaimBegin(reclaim_begin(text)?),
            b"mm_vmscan_memcg_reclaim_end" => Event::MemcgReclaimEnd {
                nr_reclaimed: nr_reclaimed(text)?,
            },
            b"mm_vmscan_memcg_softlimit_reclaim_begin" => {
                Event::MemcgSoftlimitReclaimBegin(reclaim_begin(text)?)
            }
            b"mm_vmscan_memcg_softlimit_reclaim_end" => Event::MemcgSoftlimitReclaimEnd {
                nr_reclaimed: nr_reclaimed(text)?,
            },
            b"mm_vmscan_node_reclaim_begin" => {
                scan!(text, { b"nid" => nid, b"order" => order, b"gfp_flags" => gfp });
                Event::NodeReclaimBegin {
                    nid: nid.i()?,
                    order: order.i()?,
                    gfp_flags: gfp.s()?,
                }
            }
            b"mm_vmscan_node_reclaim_end" => Event::NodeReclaimEnd {
                nr_reclaimed: nr_reclaimed(text)?,
            },
            b"mm_vmscan_reclaim_pages" => Event::ReclaimPages(shrink_inactive(text, false)?),
            b"mm_vmscan_write_folio" => Event::WriteFolio(write_folio(text)?),
            b"mm_vmscan_writepage" => Event::Writepage(write_folio(text)?),
            b"mm_vmscan_throttled" => {
                scan!(text, {
                    b"nid" => nid, b"usec_timeout" => timeout, b"usect_delayed" => delayed,
                    b"usec_delayed" => delayed2, b"reason" => reason,
                });
                let delayed = if delayed.0.is_some() {
                    delayed
                } else {
                    delayed2
                };
                Event::Throttled(Throttled {
                    nid: nid.i()?,
                    usec_timeout: timeout.i64()?,
                    usec_delayed: delayed.i64()?,
                    reason: reason.0.and_then(ThrottleReason::parse).ok_or(FieldError)?,
                })
            }
            b"mm_filemap_add_to_page_cache" => Event::FilemapAdd(filemap_add(text)?),
            b"writeback_congestion_wait" => Event::CongestionWait(congestion(text)?),
            b"writeback_wait_iff_congested" => Event::WaitIffCongested(congestion(text)?),
            b"mm_compaction_isolate_migratepages" => {
                compaction_isolate(text, CompactionScanner::Migrate)?
            }
            b"mm_compaction_isolate_freepages" => {
                compaction_isolate(text, CompactionScanner::Free)?
            }
            b"mm_compaction_fast_isolate_freepages" => {
                compaction_isolate(text, CompactionScanner::FastFree)?
            }
            b"mm_compaction_migratepages" => {
                scan!(text, { b"nr_migrated" => migrated, b"nr_failed" => failed });
                Event::CompactionMigrate {
                    nr_migrated: migrated.u()?,
                    nr_failed: failed.u()?,
                }
            }
            b"mm_compaction_end" => {
                scan!(text, { b"status" => status });
                Event::CompactionEnd {
                    status: status.s()?,
                    fields: as_str(text).ok_or(FieldError)?,
                }
            }
            _ => match name.strip_prefix(b"mm_compaction_") {
                Some(kind) => Event::Compaction {
                    kind: as_str(kind).ok_or(FieldError)?,
                    fields: as_str(text).ok_or(FieldError)?,
                },
                None => return Ok(None),
            },
        };
        Ok(Some(ev))
    }

    /// The tracepoint name this event prints as.
    pub fn name(&self) -> &'static str {
        match self {
            Event::KswapdSleep { .. } => "mm_vmscan_kswapd_sleep",
            Event::KswapdWake { .. } => "mm_vmscan_kswapd_wake",
            Event::WakeupKswapd { .. } => "mm_vmscan_wakeup_kswapd",
            Event::DirectReclaimBegin(_) => "mm_vmscan_direct_reclaim_begin",
            Event::DirectReclaimEnd { .. } => "mm_vmscan_direct_reclaim_end",
            Event::MemcgReclaimBegin(_) => "mm_vmscan_memcg_reclaim_begin",
            Event::MemcgReclaimEnd { .. } => "mm_vmscan_memcg_reclaim_end",
            Event::MemcgSoftlimitReclaimBegin(_) => "mm_vmscan_memcg_softlimit_reclaim_begin",
            Event::MemcgSoftlimitReclaimEnd { .. } => "mm_vmscan_memcg_softlimit_reclaim_end",
            Event::NodeReclaimBegin { .. } => "mm_vmscan_node_reclaim_begin",
            Event::NodeReclaimEnd { .. } => "mm_vmscan_node_reclaim_end",
            Event::LruIsolate(_) => "mm_vmscan_lru_isolate",
            Event::LruShrinkInactive(_) => "mm_vmscan_lru_shrink_inactive",
            Event::LruShrinkActive(_) => "mm_vmscan_lru_shrink_active",
            Event::ReclaimPages(_) => "mm_vmscan_reclaim_pages",
            Event::WriteFolio(_) => "mm_vmscan_write_folio",
            Event::Writepage(_) => "mm_vmscan_writepage",
            Event::Throttled(_) => "mm_vmscan_throttled",
            Event::CongestionWait(_) => "writeback_congestion_wait",
            Event::WaitIffCongested(_) => "writeback_wait_iff_congested",
            Event::ShrinkSlabStart(_) => "mm_shrink_slab_start",
            Event::ShrinkSlabEnd(_) => "mm_shrink_slab_end",
            Event::FilemapAdd(_) => "mm_filemap_add_to_page_cache",
            Event::CompactionIsolate { scanner, .. } => match scanner {
                CompactionScanner::Migrate => "mm_compaction_isolate_migratepages",
                CompactionScanner::Free => "mm_compaction_isolate_freepages",
                CompactionScanner::FastFree => "mm_compaction_fast_isolate_freepages",
            },
            Event::CompactionMigrate { .. } => "mm_compaction_migratepages",
            Event::CompactionEnd { .. } => "mm_compaction_end",
            Event::Compaction { .. } => "mm_compaction_",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 6.x prints the folio's order; the older layouts print a `page=%p` and no order, and
    /// their entries are pages. A line missing its inode, cut before its order, or with an
    /// order no folio has is malformed.
    #[test]
    fn filemap_add_in_each_layout() {
        let six = b"dev 254:1 ino 10a pfn=0x2a4600 ofs=29360128 order=9";
        let Some(Event::FilemapAdd(a)) =
            Event::parse(b"mm_filemap_add_to_page_cache", six).unwrap()
        else {
            panic!()
        };
        assert_eq!((a.dev_major, a.dev_minor, a.ino), (254, 1, 0x10a));
        assert_eq!((a.pfn, a.ofs, a.order), (0x2a4600, 29_360_128, 9));
        let four = b"dev 8:2 ino 3e8 page=0000000012345678 pfn=1234 ofs=4096";
        let Some(Event::FilemapAdd(b)) =
            Event::parse(b"mm_filemap_add_to_page_cache", four).unwrap()
        else {
            panic!()
        };
        assert_eq!((b.dev_major, b.ino, b.pfn, b.order), (8, 0x3e8, 1234, 0));
        for bad in [
            &b"dev 254:1 pfn=0x1 ofs=0 order=0"[..],
            b"dev 2541 ino 1 pfn=0x1 ofs=0 order=0",
            b"dev 254:1 ino 10a pfn=0x2a4600 ofs=29360128",
            b"dev 254:1 ino 10a pfn=0x2a4600 ofs=29360128 order=70",
        ] {
            assert_eq!(
                Event::parse(b"mm_filemap_add_to_page_cache", bad),
                Err(FieldError)
            );
        }
    }

    /// 6.x lines take the positional path; 3.x lines (no nid, extra counters) fall back to
    /// reading phrases, and both decode the same fields.
    #[test]
    fn shrink_slab_in_both_layouts() {
        let six = b"super_cache_scan+0x0/0x1f0 000000009a1b2c3d: nid: 1 objects to shrink 12 gfp_flags GFP_KERNEL cache items 400 delta 7 total_scan 19 priority 11";
        let three = b"super_cache_scan+0x0/0x1f0 ffff88003d7ec8a8: objects to shrink 12 gfp_flags GFP_KERNEL pgs_scanned 32 lru_pgs 1000 cache items 400 delta 7 total_scan 19";
        let Some(Event::ShrinkSlabStart(a)) = Event::parse(b"mm_shrink_slab_start", six).unwrap()
        else {
            panic!()
        };
        assert_eq!((a.nid, a.nr_objects_to_shrink, a.cache_items), (1, 12, 400));
        assert_eq!((a.delta, a.total_scan, a.priority), (7, 19, 11));
        assert_eq!(a.gfp_flags, "GFP_KERNEL");
        assert_eq!(a.shr, 0x9a1b2c3d);
        // 3.x–4.15 print no nid (node 0 then) and two counters 6.x dropped.
        let Some(Event::ShrinkSlabStart(b)) = Event::parse(b"mm_shrink_slab_start", three).unwrap()
        else {
            panic!()
        };
        assert_eq!((b.nid, b.nr_objects_to_shrink, b.cache_items), (0, 12, 400));
        assert_eq!((b.delta, b.total_scan, b.priority), (7, 19, 0));
        let end = b"super_cache_scan+0x0/0x1f0 000000009a1b2c3d: nid: 0 unused scan count 3 new scan count 4 total_scan 5 last shrinker return val 17";
        let Some(Event::ShrinkSlabEnd(e)) = Event::parse(b"mm_shrink_slab_end", end).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (e.nid, e.unused_scan, e.new_scan, e.total_scan, e.retval),
            (0, 3, 4, 5, 17)
        );
        // Phrases out of the 6.x order still decode through the fallback.
        let shuffled = b"f+0x0/0x1 0000000000000001: nid: 2 new scan count 4 unused scan count 3 total_scan 5 last shrinker return val -1";
        let Some(Event::ShrinkSlabEnd(e)) = Event::parse(b"mm_shrink_slab_end", shuffled).unwrap()
        else {
            panic!()
        };
        assert_eq!((e.nid, e.unused_scan, e.new_scan, e.retval), (2, 3, 4, -1));
    }

    #[test]
    fn lru_isolate_of_2_6_36_reads_the_lumpy_counters() {
        let text = b"isolate_mode=1 order=9 nr_requested=32 nr_scanned=543 nr_taken=543 \
                     contig_taken=511 contig_dirty=7 contig_failed=2";
        let Ok(Some(Event::LruIsolate(i))) = Event::parse(b"mm_vmscan_lru_isolate", text) else {
            panic!("not parsed");
        };
        assert_eq!(
            (
                i.isolate_mode,
                i.order,
                i.nr_scanned,
                i.nr_taken,
                i.nr_skipped
            ),
            (Some(1), 9, 543, 543, 0)
        );
        assert_eq!(
            (i.contig_taken, i.contig_dirty, i.contig_failed),
            (Some(511), Some(7), Some(2))
        );
        assert_eq!((i.lru, i.is_file()), (None, None));
        // A damaged counter is an error, as any other field's.
        let bad = b"isolate_mode=1 order=9 nr_requested=32 nr_scanned=543 nr_taken=543 \
                    contig_taken=511 contig_dirty=7 contig_failed=x";
        assert!(Event::parse(b"mm_vmscan_lru_isolate", bad).is_err());
    }
}
