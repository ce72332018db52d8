//! The sections of a scenario that describe the simulated machine and its kernel's tunables:
//! `[machine]` (nodes, CPUs, memory, block devices) and `[costs]` (`[sysctl]` is `sysctl`'s).
//! The kernel is built from these and the variant (`Kernel::new`), so they live below it,
//! beside `variant`, and import nothing of the crate but `sysctl`; the scenario (`scenario`,
//! above the kernel) reads them from its file and re-exports them as `scenario::machine`.
//! Each section checks its own ranges beside its fields (`validate`).

use serde::{Deserialize, Serialize};

use crate::sysctl::SysctlSettings;

/// A section's value out of range: its key within the section (`devices[0].jitter`) and what
/// was expected. Each section checks its own keys (`validate`, beside its fields, for what
/// serde's types cannot say); `Scenario::validate` adds the file and the section's name.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    pub key: String,
    pub message: String,
}

impl Invalid {
    /// `key` is out of range: `message` says what was expected.
    pub fn err<T>(key: impl Into<String>, message: impl Into<String>) -> Result<T, Invalid> {
        Err(Invalid {
            key: key.into(),
            message: message.into(),
        })
    }

    /// The same error, its key inside `outer` (`devices[0]` + `jitter`).
    pub fn within(self, outer: &str) -> Invalid {
        Invalid {
            key: format!("{outer}.{}", self.key),
            ..self
        }
    }
}

/// `LOCAL_DISTANCE`: a node's distance to itself in the SLIT (ACPI's table of distances).
pub const LOCAL_DISTANCE: u32 = 10;
/// The SLIT's largest reachable distance (255 means unreachable).
pub const MAX_DISTANCE: u32 = 254;

/// The most flash dies a device may have: a drive of the largest size with the smallest dies
/// has a few thousand.
const MAX_DIES: u32 = 16_384;

/// The simulated hardware. Memory is per node; node 0 also holds ZONE_DMA32 (the first 4 GiB
/// of physical memory on x86-64, less the DMA zone, which is not modelled).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Machine {
    /// `"host"`: the machine this runs on, from its host profile (scenario/host.rs). Present
    /// in a resolved scenario only when no profile could be read, which the simulator refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub nodes: u32,
    /// The distance from each node to each other (the firmware's SLIT, as
    /// /sys/devices/system/node/nodeN/distance prints it): one row per node, 10 on the
    /// diagonal. Empty: the kernel's default without a table (10 local, 20 remote).
    /// The zonelists visit the other nodes nearest first (`mm::numa`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_distances: Vec<Vec<u32>>,
    /// Logical CPUs per node (hardware threads; vmstat percentages are over all of them).
    pub cpus_per_node: u32,
    pub memory_mb_per_node: u64,
    /// Size of ZONE_DMA32 on node 0 (0 for none).
    pub dma32_mb: u64,
    /// Effective DRAM bandwidth per node for mixed DMA and copy traffic (0: unlimited);
    /// memory-bound costs grow as it fills (hw/memory.rs).
    pub memory_bandwidth_mb_s_per_node: f64,
    pub devices: Vec<Device>,
    /// The filesystem the workloads' files are on: what its `->writepage` does with a dirty
    /// page-cache folio `pageout()` hands it from reclaim (`Fs`). Absent: `generic`.
    #[serde(default, skip_serializing_if = "Fs::is_generic")]
    pub fs: Fs,
    /// The sysctls the machine runs with where the scenario's `[sysctl]` says nothing (a
    /// host's own tuning, from its profile); unset keys are the kernel's defaults. A live
    /// run, which runs on the machine itself, does not read it.
    #[serde(default, skip_serializing_if = "SysctlSettings::is_empty")]
    pub sysctl: SysctlSettings,
    /// The pageblocks the kernel's own memory holds when the run starts, and the free
    /// fragments of movable ones, zone by zone, as /proc/pagetypeinfo of a machine at rest
    /// counts them (a host's, from its profile).
    /// Empty: every pageblock starts movable and free, as on a machine just booted
    /// (`mm::boot_memory`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pageblocks: Vec<ZonePageblocks>,
}

/// One zone's non-movable pageblocks and the free blocks left in them, and the free
/// fragments of its movable pageblocks, as /proc/pagetypeinfo prints them ("Number of blocks
/// type" and "Free pages count per migrate type at order"). The rest of the non-movable
/// pageblocks is the kernel's (slab, page tables, boot allocations): in use for the whole
/// run, neither reclaimable nor movable (`mm::boot_memory`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZonePageblocks {
    #[serde(default)]
    pub node: u32,
    /// `"DMA32"` (with the host's ZONE_DMA, as `dma32_mb` counts it) or `"Normal"`.
    pub zone: String,
    /// Pageblocks of MIGRATE_UNMOVABLE, MIGRATE_RECLAIMABLE and MIGRATE_HIGHATOMIC. The model
    /// has no high-atomic reserve: those pageblocks are held whole, out of every
    /// allocation's reach, as the watermark checks keep a reserve's pages out of ordinary
    /// allocations' (`zone->nr_reserved_highatomic`).
    #[serde(default)]
    pub unmovable: u32,
    #[serde(default)]
    pub reclaimable: u32,
    #[serde(default)]
    pub highatomic: u32,
    /// The free blocks of each order (0, 1, …) on the MIGRATE_UNMOVABLE and
    /// MIGRATE_RECLAIMABLE free lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub free_unmovable: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub free_reclaimable: Vec<u64>,
    /// The free blocks of each order on the MIGRATE_MOVABLE free lists. Those below
    /// pageblock order lie in movable pageblocks that other memory (processes', the page
    /// cache a drop leaves) breaks up; the rest of such a pageblock is that memory, as
    /// anonymous folios no task owns (`mm::boot_memory`). Blocks of pageblock order and
    /// above say nothing: every movable pageblock without fragments starts free whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub free_movable: Vec<u64>,
    /// Pageblocks that hold free pages beside pages on an LRU list (movable pageblocks broken
    /// up by other memory); of them those that also hold a page no compaction moves (on no
    /// LRU and not free: slab, page tables, other kernel memory); and of the others those
    /// holding page cache; from /proc/kpageflags (`reclaimlab host probe`). The share
    /// `fragment_blocks_unmovable` of the model's movable pageblocks with fragments holds
    /// its other memory as the kernel's, and the page-cache share of the rest holds page
    /// cache (`mm::boot_memory`; none if 0).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub fragment_blocks: u32,
    /// Of `fragment_blocks`, those holding kernel memory.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub fragment_blocks_unmovable: u32,
    /// Of the rest, those holding page cache.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub fragment_blocks_file: u32,
}

/// Zone names `ZonePageblocks::zone` takes.
pub const PAGEBLOCK_ZONES: [&str; 2] = ["DMA32", "Normal"];

impl ZonePageblocks {
    /// Its own keys: a zone the model has, free lists of at most 11 orders (0 … MAX_ORDER).
    pub fn validate(&self) -> Result<(), Invalid> {
        if !PAGEBLOCK_ZONES.contains(&self.zone.as_str()) {
            return Invalid::err("zone", "expected \"DMA32\" or \"Normal\"");
        }
        for (key, free) in [
            ("free_unmovable", &self.free_unmovable),
            ("free_reclaimable", &self.free_reclaimable),
            ("free_movable", &self.free_movable),
        ] {
            if free.len() > 11 {
                return Invalid::err(key, "expected at most 11 counts (orders 0 to 10)");
            }
        }
        if self.fragment_blocks_unmovable > self.fragment_blocks {
            return Invalid::err(
                "fragment_blocks_unmovable",
                "expected at most fragment_blocks (a share of those pageblocks)",
            );
        }
        if self.fragment_blocks_file > self.fragment_blocks - self.fragment_blocks_unmovable {
            return Invalid::err(
                "fragment_blocks_file",
                "expected at most fragment_blocks less fragment_blocks_unmovable",
            );
        }
        Ok(())
    }
}

impl Machine {
    /// The ranges of `[machine]`'s keys and of each device's (`[machine.sysctl]` is checked
    /// as a `[sysctl]`, by the scenario).
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.nodes == 0 || self.nodes > 64 {
            return Invalid::err("nodes", "expected 1 to 64 nodes");
        }
        if self.cpus_per_node == 0 {
            return Invalid::err("cpus_per_node", "expected at least one CPU per node");
        }
        self.validate_node_distances()?;
        if self.memory_mb_per_node < 64 {
            return Invalid::err("memory_mb_per_node", "expected at least 64 MB per node");
        }
        if self.dma32_mb >= self.memory_mb_per_node {
            return Invalid::err("dma32_mb", "expected less than memory_mb_per_node");
        }
        let pages = self.nodes as u64 * self.memory_mb_per_node * 256;
        if pages >= (u32::MAX as u64) - 4096 {
            return Invalid::err(
                "memory_mb_per_node",
                "expected at most 16 TiB in all (32-bit page frame numbers)",
            );
        }
        let bandwidth = self.memory_bandwidth_mb_s_per_node;
        if bandwidth < 0.0 || !bandwidth.is_finite() {
            return Invalid::err(
                "memory_bandwidth_mb_s_per_node",
                "expected a non-negative number (0: unlimited)",
            );
        }
        if self.devices.is_empty() || self.devices.iter().all(|d| d.count == 0) {
            return Invalid::err("devices", "expected at least one block device");
        }
        for (i, d) in self.devices.iter().enumerate() {
            d.validate()
                .map_err(|e| e.within(&format!("devices[{i}]")))?;
        }
        self.validate_pageblocks()
    }

    /// `pageblocks`: each entry's own keys, a node and zone the machine has, once each, and
    /// no more non-movable pageblocks than the zone has.
    fn validate_pageblocks(&self) -> Result<(), Invalid> {
        let mut seen = vec![];
        for (i, b) in self.pageblocks.iter().enumerate() {
            let at = format!("pageblocks[{i}]");
            b.validate().map_err(|e| e.within(&at))?;
            if b.node >= self.nodes {
                return Invalid::err(
                    format!("{at}.node"),
                    format!("expected a node below {}", self.nodes),
                );
            }
            let zone_pages = self.zone_pages(b.node, &b.zone);
            if zone_pages == 0 {
                return Invalid::err(
                    format!("{at}.zone"),
                    format!(
                        "node {} has no {} zone (dma32_mb sets node 0's DMA32)",
                        b.node, b.zone
                    ),
                );
            }
            if seen.contains(&(b.node, b.zone.as_str())) {
                return Invalid::err(format!("{at}.zone"), "expected each node's zone once");
            }
            seen.push((b.node, b.zone.as_str()));
            let blocks =
                u64::from(b.unmovable) + u64::from(b.reclaimable) + u64::from(b.highatomic);
            let zone_blocks = zone_pages / 512;
            if blocks > zone_blocks {
                return Invalid::err(
                    at,
                    format!(
                        "{blocks} non-movable pageblocks do not fit in the zone's {zone_blocks}"
                    ),
                );
            }
        }
        Ok(())
    }

    /// The page frames of node `nid`'s zone `zone` (`"DMA32"` or `"Normal"`); 0 if it has
    /// none.
    pub fn zone_pages(&self, nid: u32, zone: &str) -> u64 {
        let (dma32, normal) = self.node_zone_pages(nid);
        match zone {
            "DMA32" => dma32,
            "Normal" => normal,
            _ => 0,
        }
    }

    /// Node `nid`'s page frames in ZONE_DMA32 and ZONE_NORMAL as boot lays them out
    /// (`mm::mm_init`): each in whole MAX_ORDER blocks (1024 pages), DMA32 on node 0 only.
    pub fn node_zone_pages(&self, nid: u32) -> (u64, u64) {
        let dma32 = if nid == 0 {
            whole_blocks(self.dma32_mb)
        } else {
            0
        };
        (dma32, whole_blocks(self.memory_mb_per_node) - dma32)
    }
}

/// The pages of `mb` megabytes in whole MAX_ORDER blocks of 1024 pages (what a node or
/// zone of that size manages).
pub fn whole_blocks(mb: u64) -> u64 {
    mb * 256 / 1024 * 1024
}

impl Machine {
    /// `node_distances`: empty, or a row of `nodes` distances per node, as the kernel
    /// accepts a SLIT (`slit_valid()`): `LOCAL_DISTANCE` on the diagonal, more elsewhere,
    /// and none unreachable.
    fn validate_node_distances(&self) -> Result<(), Invalid> {
        let d = &self.node_distances;
        if d.is_empty() {
            return Ok(());
        }
        let n = self.nodes as usize;
        if d.len() != n || d.iter().any(|row| row.len() != n) {
            return Invalid::err(
                "node_distances",
                format!("expected {n} rows of {n} distances (one per node), or none"),
            );
        }
        for (a, row) in d.iter().enumerate() {
            for (b, &v) in row.iter().enumerate() {
                let ok = if a == b {
                    v == LOCAL_DISTANCE
                } else {
                    v > LOCAL_DISTANCE && v <= MAX_DISTANCE
                };
                if !ok {
                    let want = if a == b {
                        format!("{LOCAL_DISTANCE} (a node's distance to itself)")
                    } else {
                        format!("{} to {MAX_DISTANCE} between two nodes", LOCAL_DISTANCE + 1)
                    };
                    return Invalid::err(
                        format!("node_distances[{a}][{b}]"),
                        format!("expected {want}, got {v}"),
                    );
                }
            }
        }
        Ok(())
    }
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            from: None,
            nodes: 1,
            node_distances: vec![],
            cpus_per_node: 4,
            memory_mb_per_node: 4096,
            dma32_mb: 0,
            memory_bandwidth_mb_s_per_node: 0.0,
            devices: vec![Device::default()],
            fs: Fs::Generic,
            sysctl: SysctlSettings::default(),
            pageblocks: vec![],
        }
    }
}

/// `[machine] fs`: the filesystem's `->writepage` as reclaim's `pageout()` calls it, for a
/// dirty page-cache folio reclaim has decided to write (the variant's rules:
/// `direct_reclaim_writes_fs`, `kswapd_writes_fs`). Each named filesystem as in the two eras
/// the variant models:
///
/// - The seed's era (3.0/3.1; `kswapd_writes_fs` other than `dirty_congested`):
///   - `xfs`: `xfs_vm_writepage()` (fs/xfs/linux-2.6/xfs_aops.c, 2.6.37-3.1) refuses when
///     `(current->flags & (PF_MEMALLOC|PF_KSWAPD)) == PF_MEMALLOC`, i.e. from direct
///     reclaim, and writes for kswapd: "xfs tries to write it back if the requester is
///     kswapd" (the seed, quoting Christoph Hellwig);
///   - `ext4`: `ext4_writepage()` (fs/ext4/inode.c, 3.1) redirties a folio with delayed
///     (or unwritten) buffers, `ext4_bh_delay_or_unwritten`, for every caller: "ext4
///     ignores the request if it's a delayed allocation". Every buffered write the model
///     makes is to a new file (dd-write, fs_mark), hence delalloc under ext4's default
///     mount: ext4 writes nothing for reclaim;
///   - `btrfs`: `btrfs_writepage()` (fs/btrfs/inode.c, 3.1) redirties whenever
///     `current->flags & PF_MEMALLOC`, which kswapd and direct reclaim both carry:
///     "btrfs ignores the request".
///
///   A refused folio is what `redirty_page_for_writepage()` leaves: still dirty, unlocked,
///   `pageout()` returning PAGE_SUCCESS, so that 3.1's `pageout()` still fires
///   `mm_vmscan_writepage` and counts `nr_vmscan_write` (both follow the `->writepage`
///   call whatever it did) and clears the PG_reclaim it set (the folio is not under
///   writeback); `shrink_page_list()` then keeps it on the inactive list ("if
///   (PageWriteback(page) || PageDirty(page)) goto keep").
/// - 6.x (`dirty_congested`; read at 6.6): none of xfs, ext4 and btrfs has a `->writepage`
///   (only `->writepages`), and `pageout()` returns PAGE_ACTIVATE when
///   `mapping->a_ops->writepage == NULL`: the folio is activated, nothing is written or
///   counted.
/// - `generic`, the default: a `->writepage` that writes every folio it is given
///   (`block_write_full_page()`: ext3's ordered mode, ext4 mounted `nodelalloc`, in the
///   seed's era), in both eras. It is the model as it was before this key; no filesystem
///   of 6.6 that the seeds run on behaves so.
///
/// Departures: memory-cgroup limit reclaim counts as direct reclaim (3.1's memcg reclaim
/// ran without PF_MEMALLOC, which XFS would have written for); the 3.1 redirty's
/// `nr_dirtied` increment (`clear_page_dirty_for_io()` then `__set_page_dirty_nobuffers()`,
/// undone from 3.2 by `account_page_redirty()`) is not counted; an overwrite of allocated
/// blocks, which ext4 would write, does not occur in the model's workloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fs {
    #[default]
    Generic,
    Ext4,
    Xfs,
    Btrfs,
}

/// What a filesystem's `->writepage` does with a folio reclaim hands it (`Fs::writepage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writepage {
    /// Written: under writeback.
    Writes,
    /// `redirty_page_for_writepage()`: still dirty, kept on the inactive list; `pageout()`
    /// counts it as written all the same (3.x).
    Redirty,
    /// No `->writepage` (6.x): `pageout()` returns PAGE_ACTIVATE.
    Activate,
}

impl Fs {
    fn is_generic(&self) -> bool {
        *self == Fs::Generic
    }

    /// `->writepage` called from `pageout()` by kswapd (`kswapd`; else direct reclaim,
    /// PF_MEMALLOC without PF_KSWAPD), on the 6.x kernel (`six`) or the seed's.
    pub fn writepage(self, kswapd: bool, six: bool) -> Writepage {
        match self {
            Fs::Generic => Writepage::Writes,
            _ if six => Writepage::Activate,
            Fs::Xfs if kswapd => Writepage::Writes,
            Fs::Xfs | Fs::Ext4 | Fs::Btrfs => Writepage::Redirty,
        }
    }
}

/// A block device: a FIFO transfer queue of `bandwidth_mb_s` with a completion latency of
/// `latency_us` (fixed, or its mean with `latency_jitter`) per I/O that overlaps other
/// requests' transfers (NVMe's internal parallelism), `write_latency_us` for writes if
/// given (a drive whose writes complete in its write cache while reads wait for the
/// flash). `count` identical devices are created (hw/block.rs), each built from this struct
/// itself: it is the one definition of a device's keys.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Device {
    pub name: String,
    pub count: u32,
    pub bandwidth_mb_s: f64,
    /// Write bandwidth, if it differs from `bandwidth_mb_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_bandwidth_mb_s: Option<f64>,
    pub latency_us: f64,
    /// Completion latency of a write, if it differs from `latency_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_latency_us: Option<f64>,
    /// Largest request the device takes; larger I/Os are split (max_sectors_kb).
    pub max_request_kb: u64,
    /// Time the transfer stage spends on each request besides its data (command
    /// processing: it bounds IOPS).
    pub request_us: f64,
    /// Time the transfer stage spends on each segment of a request (a run of physically
    /// contiguous memory, one scatter-gather entry): a VM's virtio disk whose host handles
    /// each descriptor apart (hw/block.rs). A direct I/O into user memory has a segment per
    /// 4 KiB page; a page-cache read one per run of contiguous folios. 0: not charged.
    #[serde(skip_serializing_if = "is_zero")]
    pub segment_us: f64,
    /// Requests the device takes at once (0: no limit); more wait in the block layer.
    pub queue_depth: u32,
    /// Fraction of each transfer time drawn from an exponential distribution (0: fixed).
    pub jitter: f64,
    /// Fraction of each I/O's completion latency, read or write, drawn from an exponential
    /// distribution with the same mean (0: every I/O takes `latency_us`). A flash drive's
    /// random read is not a constant: it waits for its die, for a program or erase in
    /// progress on it, for error correction; 1 makes the latency exponential about the
    /// mean, the least that can be assumed knowing only the mean.
    #[serde(skip_serializing_if = "is_zero")]
    pub latency_jitter: f64,
    /// A flash drive's dies (0: not modelled). The data of writes is programmed onto them in
    /// turn, each program keeping its die busy for `program_us`; a read whose die is busy
    /// programming waits for the program to end (hw/block.rs).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub dies: u32,
    /// How long one program keeps a die busy (tPROG), with `dies`.
    #[serde(skip_serializing_if = "is_zero")]
    pub program_us: f64,
    /// A disk's seek and rotational delay: the time the transfer stage spends before a
    /// request that does not start where the previous one ended (swap I/O, whose offsets
    /// the model knows; 0: none, as for flash).
    pub seek_us: f64,
    /// The distance (MB) over which a seek costs the whole `seek_us`; shorter ones cost
    /// `seek_us · sqrt(distance / span)` (hw/elevator.rs). 0: every seek costs `seek_us`.
    /// Used with the elevator only.
    #[serde(skip_serializing_if = "is_zero")]
    pub seek_span_mb: f64,
    /// The queue's `rotational` flag: a swap area on it turns VMA swap readahead off
    /// (unless `[swap] nonrotational` marks it otherwise for the run).
    pub rotational: bool,
    /// The I/O scheduler: `"deadline"` (hw/elevator.rs: requests sorted and merged, one at
    /// a time on each disk, the seek priced by distance), the default on a rotational
    /// device with a seek, or `"none"` (a FIFO transfer stage, each request costing
    /// `seek_us` off the previous one's end), the default otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elevator: Option<ElevatorKind>,
    /// A RAID-0 (md `raid0`) of this many member disks, each with the keys above (its
    /// bandwidth, seek, request cost); none if absent. An I/O is split by stripe across
    /// the members, each with its own transfer stage and head (hw/block.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid0_disks: Option<u32>,
    /// The RAID-0's stripe (md's chunk), KiB; 512 (mdadm's default) if absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripe_kb: Option<u64>,
}

/// `[machine] devices` `elevator`: the queue's I/O scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElevatorKind {
    None,
    Deadline,
}

/// The most member disks a RAID-0 may have.
pub const MAX_RAID0_DISKS: u32 = 64;

impl Device {
    /// Write bandwidth: `write_bandwidth_mb_s`, else the read bandwidth.
    pub fn write_mb_s(&self) -> f64 {
        self.write_bandwidth_mb_s.unwrap_or(self.bandwidth_mb_s)
    }

    /// Whether the queue has the deadline elevator: `elevator`, or by default a rotational
    /// device with a seek.
    pub fn has_elevator(&self) -> bool {
        match self.elevator {
            Some(e) => e == ElevatorKind::Deadline,
            None => self.rotational && self.seek_us > 0.0,
        }
    }

    /// What one program of a flash die writes: `program_us` of the write bandwidth, shared
    /// by the `dies` (so that all of them programming together write at that bandwidth).
    pub fn program_bytes(&self) -> f64 {
        self.write_mb_s() * self.program_us / f64::from(self.dies.max(1))
    }

    /// The ranges of the device's keys, and the dies' with their program time.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.bandwidth_mb_s <= 0.0 || !self.bandwidth_mb_s.is_finite() {
            return Invalid::err("bandwidth_mb_s", "expected a positive number");
        }
        for (key, v) in [
            ("latency_us", Some(self.latency_us)),
            ("write_latency_us", self.write_latency_us),
            ("request_us", Some(self.request_us)),
            ("segment_us", Some(self.segment_us)),
        ] {
            if v.is_some_and(|v| v < 0.0 || !v.is_finite()) {
                return Invalid::err(key, "expected a non-negative number");
            }
        }
        for (key, v) in [
            ("jitter", self.jitter),
            ("latency_jitter", self.latency_jitter),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Invalid::err(key, "expected a fraction from 0 to 1");
            }
        }
        if self.seek_us < 0.0 || !self.seek_us.is_finite() {
            return Invalid::err("seek_us", "expected a non-negative number");
        }
        if self.seek_span_mb < 0.0 || !self.seek_span_mb.is_finite() {
            return Invalid::err("seek_span_mb", "expected a non-negative number of MB");
        }
        if self.seek_span_mb > 0.0 && !self.has_elevator() {
            return Invalid::err(
                "seek_span_mb",
                "expected the deadline elevator with a seek span (a rotational device with \
                 `seek_us`, or `elevator = \"deadline\"`)",
            );
        }
        if self.has_elevator() && self.dies > 0 {
            return Invalid::err(
                "elevator",
                "expected no flash dies behind the deadline elevator",
            );
        }
        if self.program_us < 0.0 || !self.program_us.is_finite() {
            return Invalid::err("program_us", "expected a non-negative number");
        }
        if (self.dies > 0) != (self.program_us > 0.0) {
            return Invalid::err(
                "dies",
                "expected `dies` and `program_us` together (both 0: no dies modelled)",
            );
        }
        if self.dies > MAX_DIES {
            return Invalid::err("dies", format!("expected at most {MAX_DIES}"));
        }
        if self.dies > 0 {
            if self.rotational {
                return Invalid::err(
                    "dies",
                    "expected a flash drive's dies on a non-rotational device",
                );
            }
            let program_bytes = self.program_bytes();
            if program_bytes < 4096.0 {
                return Invalid::err(
                    "program_us",
                    format!(
                        "expected a program of at least one 4 KiB page: {program_bytes:.0} \
                         bytes per program at {} MB/s over {} dies",
                        self.write_mb_s(),
                        self.dies
                    ),
                );
            }
        }
        if self.max_request_kb < 4 {
            return Invalid::err("max_request_kb", "expected at least 4");
        }
        match self.raid0_disks {
            Some(n) if !(1..=MAX_RAID0_DISKS).contains(&n) => {
                return Invalid::err(
                    "raid0_disks",
                    format!("expected 1 to {MAX_RAID0_DISKS} member disks"),
                );
            }
            Some(_) if self.dies > 0 => {
                return Invalid::err("dies", "expected no dies on a RAID-0's members");
            }
            None if self.stripe_kb.is_some() => {
                return Invalid::err("stripe_kb", "expected `raid0_disks` with a stripe");
            }
            _ => {}
        }
        if self.stripe_kb.is_some_and(|k| k < 4 || k % 4 != 0) {
            return Invalid::err("stripe_kb", "expected a multiple of 4 KiB");
        }
        Ok(())
    }
}

impl Default for Device {
    fn default() -> Self {
        Device {
            name: "nvme".into(),
            count: 1,
            bandwidth_mb_s: 3000.0,
            write_bandwidth_mb_s: None,
            latency_us: 100.0,
            write_latency_us: None,
            max_request_kb: 4096,
            request_us: 0.0,
            segment_us: 0.0,
            queue_depth: 0,
            jitter: 0.0,
            latency_jitter: 0.0,
            dies: 0,
            program_us: 0.0,
            seek_us: 0.0,
            seek_span_mb: 0.0,
            rotational: false,
            elevator: None,
            raid0_disks: None,
            stripe_kb: None,
        }
    }
}

/// CPU cost, in nanoseconds, of each operation the model charges. The defaults are for a
/// 2 GHz Skylake server core; docs/model.md gives the source of each and which were fitted.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// copy_page_to_iter of one 4 KiB page to user space (cache-cold source).
    pub copy_to_user_ns: u64,
    /// Allocating one page and inserting it in the page cache (xarray, accounting, memcg).
    pub page_cache_insert_ns: u64,
    /// Per-page work under lru_lock when a batch is added to the LRU (lru_add_drain).
    pub lru_add_ns: u64,
    /// Per-page work under lru_lock in isolate_lru_folios.
    pub isolate_ns: u64,
    /// Per-page work outside locks in shrink_folio_list: trylock, folio_check_references,
    /// __remove_mapping of a clean unmapped page-cache folio.
    pub shrink_folio_ns: u64,
    /// Per-page work under lru_lock putting folios back (move_folios_to_lru).
    pub putback_ns: u64,
    /// Per-page work under zone->lock freeing to or taking from the buddy lists.
    pub buddy_ns: u64,
    /// Fixed cost of one lock acquisition that had to wait: the cache-line transfer of the
    /// lock and of the list heads from the previous holder (same node).
    pub lock_handoff_ns: u64,
    /// Added to each contended acquisition's hold per CPU still queued behind it (cache-line
    /// interference from the queue; see hw/lock.rs).
    pub lock_per_waiter_ns: u64,
    /// Multiplier on hold times and handoffs when the CPU is on another node than the lock's
    /// memory (remote struct page and list cache lines).
    pub remote_factor: f64,
    /// read()/write() system call entry and exit, per call.
    pub syscall_ns: u64,
    /// Setting up one O_DIRECT request (get_user_pages, bio, completion).
    pub dio_request_ns: u64,
    /// Per-call cost of the reclaim entry/exit paths (shrink_node setup, get_scan_count).
    pub shrink_node_overhead_ns: u64,
    /// `do_anonymous_page()`: fault entry and exit, `clear_page` of 4 KiB, charge, rmap.
    pub anon_fault_ns: u64,
    /// Mapping a folio found in the swap cache (`do_swap_page()` without I/O), the swap
    /// slot freed.
    pub swapin_map_ns: u64,
    /// Adding a folio read from swap to the swap cache (`__read_swap_cache_async`).
    pub swap_cache_insert_ns: u64,
    /// `add_to_swap()` and `try_to_unmap()` of one folio in reclaim (slot, rmap walk, PTE
    /// update, local TLB flush).
    pub swap_out_ns: u64,
    /// `folio_referenced()` of a mapped folio: the reverse-map walk to its PTE.
    pub folio_referenced_ns: u64,
    /// A remote TLB shootdown in reclaim (`try_to_unmap_flush_dirty()` → IPIs to the CPUs
    /// the unmapped entry's mm runs on, and the wait for them), per dirty folio of a task on
    /// another CPU. 0 (not charged) unless set: `reclaimlab host probe --swap` measures it.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub tlb_flush_ipi_ns: u64,
    /// `clear_page()` of one 4 KiB page (`rep stosb`, ≈10 GB/s cache-cold on the reference
    /// core, as `usemem_page_ns`'s write of a page): a huge-page fault zeroes 511 pages more
    /// than `anon_fault_ns`'s one (`clear_huge_page`), scaled by the node's memory load.
    #[serde(skip_serializing_if = "is_default_clear_page")]
    pub clear_page_ns: u64,
    /// usemem writing one present page sequentially (512 words, 4 KiB at ≈10 GB/s).
    pub usemem_page_ns: u64,
    /// usemem writing one word at a random address of a present page (cache and TLB miss).
    pub usemem_word_ns: u64,
    /// zram: decompressing one page on swap-in.
    pub zram_read_ns: u64,
    /// zram: compressing one page on swap-out.
    pub zram_write_ns: u64,
}

impl Costs {
    pub fn validate(&self) -> Result<(), Invalid> {
        // An access of usemem must take time, or its loop would never reach its slice's end.
        for (key, ns) in [
            ("usemem_page_ns", self.usemem_page_ns),
            ("usemem_word_ns", self.usemem_word_ns),
        ] {
            if ns == 0 {
                return Invalid::err(key, "expected at least 1 ns");
            }
        }
        if self.remote_factor < 1.0 || !self.remote_factor.is_finite() {
            return Invalid::err("remote_factor", "expected a number ≥ 1");
        }
        Ok(())
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            copy_to_user_ns: 700,
            page_cache_insert_ns: 350,
            lru_add_ns: 40,
            isolate_ns: 80,
            shrink_folio_ns: 200,
            putback_ns: 50,
            buddy_ns: 40,
            lock_handoff_ns: 400,
            lock_per_waiter_ns: 30,
            remote_factor: 2.0,
            syscall_ns: 1500,
            dio_request_ns: 40_000,
            shrink_node_overhead_ns: 2_000,
            anon_fault_ns: 1_200,
            swapin_map_ns: 800,
            swap_cache_insert_ns: 300,
            swap_out_ns: 1_500,
            folio_referenced_ns: 300,
            tlb_flush_ipi_ns: 0,
            clear_page_ns: CLEAR_PAGE_NS,
            usemem_page_ns: 400,
            usemem_word_ns: 100,
            zram_read_ns: 1_500,
            zram_write_ns: 3_000,
        }
    }
}

/// Keeps a resolved scenario's text as it was before a key with a zero default existed.
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// `Costs::clear_page_ns`'s default.
const CLEAR_PAGE_NS: u64 = 400;

/// Keeps a resolved scenario's `[costs]` as it was before `clear_page_ns` existed.
fn is_default_clear_page(v: &u64) -> bool {
    *v == CLEAR_PAGE_NS
}

/// `is_zero` for integer keys.
fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// `is_zero` for `u32` keys.
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::{Fs, Writepage};

    #[test]
    fn each_filesystems_writepage_as_each_era_calls_it() {
        use Writepage::*;
        // (fs, kswapd, 6.x) → what ->writepage does.
        let table = [
            (Fs::Generic, true, false, Writes),
            (Fs::Generic, false, false, Writes),
            (Fs::Generic, false, true, Writes),
            (Fs::Xfs, true, false, Writes),
            (Fs::Xfs, false, false, Redirty),
            (Fs::Ext4, true, false, Redirty),
            (Fs::Ext4, false, false, Redirty),
            (Fs::Btrfs, true, false, Redirty),
            (Fs::Btrfs, false, false, Redirty),
            (Fs::Xfs, true, true, Activate),
            (Fs::Ext4, true, true, Activate),
            (Fs::Btrfs, false, true, Activate),
        ];
        for (fs, kswapd, six, want) in table {
            assert_eq!(
                fs.writepage(kswapd, six),
                want,
                "{fs:?} kswapd={kswapd} 6.x={six}"
            );
        }
    }

    use super::*;

    #[test]
    fn a_section_names_its_own_keys_and_the_machine_its_devices() {
        let bad = Device {
            jitter: 2.0,
            ..Device::default()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!(e.key, "jitter");
        let machine = Machine {
            devices: vec![Device::default(), bad],
            ..Machine::default()
        };
        let e = machine.validate().unwrap_err();
        assert_eq!(e.key, "devices[1].jitter");
        assert_eq!(e.message, "expected a fraction from 0 to 1");
        assert_eq!(Machine::default().validate(), Ok(()));
    }

    #[test]
    fn node_distances_are_a_slit_of_one_row_per_node() {
        let m = |node_distances: Vec<Vec<u32>>| Machine {
            nodes: 2,
            node_distances,
            ..Machine::default()
        };
        assert_eq!(m(vec![]).validate(), Ok(()));
        assert_eq!(m(vec![vec![10, 21], vec![21, 10]]).validate(), Ok(()));
        let e = m(vec![vec![10, 21]]).validate().unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.message.as_str()),
            (
                "node_distances",
                "expected 2 rows of 2 distances (one per node), or none"
            )
        );
        let e = m(vec![vec![10, 21], vec![21, 11]]).validate().unwrap_err();
        assert_eq!(e.key, "node_distances[1][1]");
        assert_eq!(
            e.message,
            "expected 10 (a node's distance to itself), got 11"
        );
        let e = m(vec![vec![10, 255], vec![21, 10]]).validate().unwrap_err();
        assert_eq!(e.key, "node_distances[0][1]");
        assert_eq!(e.message, "expected 11 to 254 between two nodes, got 255");
    }
}
