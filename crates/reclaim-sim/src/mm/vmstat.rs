//! Event counters with the kernel's /proc/vmstat names and semantics
//! (include/linux/vm_event_item.h and the node/zone stat items, 6.x names).

macro_rules! vm_events {
    ($($variant:ident => $name:literal,)*) => {
        /// A /proc/vmstat event counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum VmEvent { $($variant,)* }
        pub const NR_VM_EVENTS: usize = [$($name,)*].len();
        pub const VM_EVENT_NAMES: [&str; NR_VM_EVENTS] = [$($name,)*];
    };
}

vm_events! {
    PgpginKb => "pgpgin",
    PgpgoutKb => "pgpgout",
    PswpIn => "pswpin",
    PswpOut => "pswpout",
    PgallocDma => "pgalloc_dma",
    PgallocDma32 => "pgalloc_dma32",
    PgallocNormal => "pgalloc_normal",
    PgallocMovable => "pgalloc_movable",
    AllocstallDma => "allocstall_dma",
    AllocstallDma32 => "allocstall_dma32",
    AllocstallNormal => "allocstall_normal",
    AllocstallMovable => "allocstall_movable",
    PgskipDma => "pgskip_dma",
    PgskipDma32 => "pgskip_dma32",
    PgskipNormal => "pgskip_normal",
    PgskipMovable => "pgskip_movable",
    Pgfree => "pgfree",
    Pgactivate => "pgactivate",
    Pgdeactivate => "pgdeactivate",
    Pglazyfree => "pglazyfree",
    Pgfault => "pgfault",
    Pgmajfault => "pgmajfault",
    Pglazyfreed => "pglazyfreed",
    Pgrefill => "pgrefill",
    Pgreuse => "pgreuse",
    PgstealKswapd => "pgsteal_kswapd",
    PgstealDirect => "pgsteal_direct",
    PgstealKhugepaged => "pgsteal_khugepaged",
    PgscanKswapd => "pgscan_kswapd",
    PgscanDirect => "pgscan_direct",
    PgscanKhugepaged => "pgscan_khugepaged",
    PgscanDirectThrottle => "pgscan_direct_throttle",
    PgscanAnon => "pgscan_anon",
    PgscanFile => "pgscan_file",
    PgstealAnon => "pgsteal_anon",
    PgstealFile => "pgsteal_file",
    PgscanZoneReclaimFailed => "zone_reclaim_failed",
    Pginodesteal => "pginodesteal",
    SlabsScanned => "slabs_scanned",
    KswapdInodesteal => "kswapd_inodesteal",
    KswapdLowWmarkHitQuickly => "kswapd_low_wmark_hit_quickly",
    KswapdHighWmarkHitQuickly => "kswapd_high_wmark_hit_quickly",
    Pageoutrun => "pageoutrun",
    Pgrotated => "pgrotated",
    DropPagecache => "drop_pagecache",
    OomKill => "oom_kill",
    PgmigrateSuccess => "pgmigrate_success",
    PgmigrateFail => "pgmigrate_fail",
    CompactMigrateScanned => "compact_migrate_scanned",
    CompactFreeScanned => "compact_free_scanned",
    CompactIsolated => "compact_isolated",
    CompactStall => "compact_stall",
    CompactFail => "compact_fail",
    CompactSuccess => "compact_success",
    CompactDaemonWake => "compact_daemon_wake",
    CompactDaemonMigrateScanned => "compact_daemon_migrate_scanned",
    CompactDaemonFreeScanned => "compact_daemon_free_scanned",
    SwapRa => "swap_ra",
    SwapRaHit => "swap_ra_hit",
    NumaHit => "numa_hit",
    NumaMiss => "numa_miss",
    NumaForeign => "numa_foreign",
    NumaInterleave => "numa_interleave",
    NumaLocal => "numa_local",
    NumaOther => "numa_other",
    ThpFaultAlloc => "thp_fault_alloc",
    ThpFaultFallback => "thp_fault_fallback",
    ThpSplitPage => "thp_split_page",
}

/// A node's NUMA counters (`enum numa_stat_item`), in /sys/devices/system/node/node<N>/numastat's
/// order; each is also the /proc/vmstat event of the same place (`VmEvent::NumaHit` on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum NumaStat {
    Hit,
    Miss,
    Foreign,
    InterleaveHit,
    Local,
    Other,
}
pub const NR_NUMA_STATS: usize = 6;

impl NumaStat {
    /// The /proc/vmstat event that sums this counter over the nodes.
    pub fn event(self) -> VmEvent {
        match self {
            NumaStat::Hit => VmEvent::NumaHit,
            NumaStat::Miss => VmEvent::NumaMiss,
            NumaStat::Foreign => VmEvent::NumaForeign,
            NumaStat::InterleaveHit => VmEvent::NumaInterleave,
            NumaStat::Local => VmEvent::NumaLocal,
            NumaStat::Other => VmEvent::NumaOther,
        }
    }
}

/// The transparent-huge-page events (CONFIG_TRANSPARENT_HUGEPAGE's), printed in a run whose
/// faults may map huge pages (`VmstatSnapshot::thp`), so that the run directories of the
/// others stay as they were.
pub const THP_EVENTS: std::ops::RangeInclusive<usize> =
    VmEvent::ThpFaultAlloc as usize..=VmEvent::ThpSplitPage as usize;

/// The migration and compaction events (CONFIG_MIGRATION's and CONFIG_COMPACTION's, from
/// `pgmigrate_success` to `compact_daemon_free_scanned`): printed only by a kernel that
/// compacts (`VmstatSnapshot::compaction`), so that the run directories of the others stay
/// as they were.
pub const COMPACTION_EVENTS: std::ops::RangeInclusive<usize> =
    VmEvent::PgmigrateSuccess as usize..=VmEvent::CompactDaemonFreeScanned as usize;

impl VmEvent {
    /// PGSCAN_KSWAPD or PGSCAN_DIRECT.
    pub fn pgscan(kswapd: bool) -> VmEvent {
        if kswapd {
            VmEvent::PgscanKswapd
        } else {
            VmEvent::PgscanDirect
        }
    }

    /// PGSTEAL_KSWAPD or PGSTEAL_DIRECT.
    pub fn pgsteal(kswapd: bool) -> VmEvent {
        if kswapd {
            VmEvent::PgstealKswapd
        } else {
            VmEvent::PgstealDirect
        }
    }

    /// PGSCAN_FILE or PGSCAN_ANON.
    pub fn pgscan_type(file: bool) -> VmEvent {
        if file {
            VmEvent::PgscanFile
        } else {
            VmEvent::PgscanAnon
        }
    }

    /// PGSTEAL_FILE or PGSTEAL_ANON.
    pub fn pgsteal_type(file: bool) -> VmEvent {
        if file {
            VmEvent::PgstealFile
        } else {
            VmEvent::PgstealAnon
        }
    }
}

/// Node and zone state items printed before the events: current values, except the
/// `workingset_*` counts, `nr_vmscan_write`, `nr_vmscan_immediate_reclaim`, `nr_dirtied` and
/// `nr_written`, which are cumulative. The writeback items (from `nr_dirty`) follow the others,
/// in the kernel's relative order, so that the lines before them are as they were;
/// `nr_dirty_threshold` and `nr_dirty_background_threshold` are computed when read
/// (`global_dirty_limits()`), as /proc/vmstat does.
pub const NR_STAT_ITEMS: [&str; 20] = [
    "nr_free_pages",
    "nr_inactive_anon",
    "nr_active_anon",
    "nr_inactive_file",
    "nr_active_file",
    "nr_unevictable",
    "nr_isolated_anon",
    "nr_isolated_file",
    "workingset_refault_anon",
    "workingset_activate_anon",
    "workingset_restore_anon",
    "nr_file_pages",
    "nr_vmscan_write",
    "nr_dirty",
    "nr_writeback",
    "nr_vmscan_immediate_reclaim",
    "nr_dirtied",
    "nr_written",
    "nr_dirty_threshold",
    "nr_dirty_background_threshold",
];

/// The page-cache workingset items (`variant.workingset`), printed after `NR_STAT_ITEMS`
/// only on a kernel that has them on, so that the run directories of kernels without them
/// stay as they were.
pub const WORKINGSET_FILE_ITEMS: [&str; 5] = [
    "workingset_nodes",
    "workingset_refault_file",
    "workingset_activate_file",
    "workingset_restore_file",
    "workingset_nodereclaim",
];

/// A snapshot of the counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmstatSnapshot {
    pub stats: [u64; NR_STAT_ITEMS.len()],
    /// `WORKINGSET_FILE_ITEMS`, with `variant.workingset`.
    pub workingset_file: Option<[u64; WORKINGSET_FILE_ITEMS.len()]>,
    pub events: [u64; NR_VM_EVENTS],
    /// Whether the `COMPACTION_EVENTS` are printed: in a run whose workload allocates
    /// above order 0 (it starts kcompactd, `mm::compaction`).
    pub compaction: bool,
    /// Whether the `THP_EVENTS` are printed: `transparent_hugepage = "always"`.
    pub thp: bool,
    /// `nr_mapped` (NR_FILE_MAPPED), printed after the other state items in a run that maps
    /// a file, so that the run directories of the others stay as they were.
    pub nr_mapped: Option<u64>,
    /// `nr_file_hugepages` (NR_FILE_THPS), printed after `nr_mapped` in a run whose page
    /// cache takes large folios (`variant.large_folio_readahead` or `large_folio_writes`),
    /// so that the run directories of the others stay as they were.
    pub nr_file_hugepages: Option<u64>,
    /// Whether `zone_reclaim_failed` (CONFIG_NUMA's) is printed: in a run with
    /// `vm.zone_reclaim_mode` set, so that the run directories of the others stay as they
    /// were.
    pub node_reclaim: bool,
}

impl VmstatSnapshot {
    /// The /proc/vmstat text: one `"%s %lu\n"` line per item.
    pub fn to_proc_text(&self) -> String {
        let mut s = String::with_capacity(48 * (NR_STAT_ITEMS.len() + NR_VM_EVENTS));
        let file = self.workingset_file.iter().flatten();
        for (name, v) in NR_STAT_ITEMS
            .iter()
            .zip(self.stats.iter())
            .chain(WORKINGSET_FILE_ITEMS.iter().zip(file))
        {
            s.push_str(name);
            s.push(' ');
            s.push_str(&v.to_string());
            s.push('\n');
        }
        if let Some(v) = self.nr_mapped {
            s.push_str("nr_mapped ");
            s.push_str(&v.to_string());
            s.push('\n');
        }
        if let Some(v) = self.nr_file_hugepages {
            s.push_str("nr_file_hugepages ");
            s.push_str(&v.to_string());
            s.push('\n');
        }
        for (i, (name, v)) in VM_EVENT_NAMES.iter().zip(self.events.iter()).enumerate() {
            if !self.compaction && COMPACTION_EVENTS.contains(&i) {
                continue;
            }
            if !self.thp && THP_EVENTS.contains(&i) {
                continue;
            }
            if !self.node_reclaim && i == VmEvent::PgscanZoneReclaimFailed as usize {
                continue;
            }
            s.push_str(name);
            s.push(' ');
            s.push_str(&v.to_string());
            s.push('\n');
        }
        s
    }

    pub fn event(&self, e: VmEvent) -> u64 {
        self.events[e as usize]
    }

    /// The node or zone state item called `name` (one of `NR_STAT_ITEMS`).
    pub fn stat(&self, name: &str) -> u64 {
        let i = NR_STAT_ITEMS.iter().position(|&n| n == name);
        self.stats[i.unwrap_or_else(|| panic!("no state item {name}"))]
    }
}

/// The cumulative event counters (`vm_event_states`, summed over CPUs).
#[derive(Clone, Debug)]
pub struct VmEvents {
    pub v: [u64; NR_VM_EVENTS],
}

impl Default for VmEvents {
    fn default() -> Self {
        VmEvents {
            v: [0; NR_VM_EVENTS],
        }
    }
}

impl VmEvents {
    #[inline]
    pub fn count(&mut self, e: VmEvent, n: u64) {
        self.v[e as usize] += n;
    }

    #[inline]
    pub fn get(&self, e: VmEvent) -> u64 {
        self.v[e as usize]
    }

    /// `__count_zid_vm_events(item, zid, n)`: the per-zone counters are consecutive.
    #[inline]
    pub fn count_zid(&mut self, first: VmEvent, zid: usize, n: u64) {
        self.v[first as usize + zid] += n;
    }
}

/// A node's workingset counters (node stat items in the kernel's /proc/vmstat).
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkingsetStats {
    /// `workingset_refault_anon`, `_file` (index 0, 1: `WORKINGSET_REFAULT_BASE + file`).
    pub refault: [u64; 2],
    /// `workingset_activate_anon`, `_file`.
    pub activate: [u64; 2],
    /// `workingset_restore_anon`, `_file`.
    pub restore: [u64; 2],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_zone_counters_consecutive() {
        let mut names: Vec<_> = VM_EVENT_NAMES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), NR_VM_EVENTS);
        assert_eq!(
            VM_EVENT_NAMES[VmEvent::AllocstallMovable as usize],
            "allocstall_movable"
        );
        assert_eq!(
            VmEvent::AllocstallMovable as usize - VmEvent::AllocstallDma as usize,
            3
        );
        assert_eq!(
            VmEvent::PgskipMovable as usize - VmEvent::PgskipDma as usize,
            3
        );
        assert_eq!(
            VmEvent::PgallocMovable as usize - VmEvent::PgallocDma as usize,
            3
        );
    }
}
