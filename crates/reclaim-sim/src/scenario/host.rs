//! `[machine] from = "host"`: a scenario's machine described by the machine the command runs
//! on. `reclaimlab host probe` writes a host profile (nodes, CPUs and memory per node, the
//! block device under the workload's files, measured by a short read-only probe, its
//! queue's `read_ahead_kb`, and the watermark sysctls as the host runs them); a scenario that
//! says `from = "host"` takes every `[machine]` key it does not set itself from it, those
//! three as `[machine.sysctl]` (what the machine runs with where `[sysctl]` says nothing).
//!
//! The probe reads the device two ways (`[reads]`): O_DIRECT into user memory of 4 KiB pages,
//! a scatter-gather segment per page, and buffered, through the page cache's contiguous
//! memory. Their difference is the device's time per segment (`HostReads::fit`), so that the
//! profile's one device gives each kind of reader its own figure (docs/fidelity/host.md).
//! A probe that writes its own file (`--fresh-mb`) also times that file's writeback
//! (`[writes]`), which sets the device's write bandwidth (`HostWrites::fit`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::machine::{Costs, Device, Invalid, ZonePageblocks};

/// A host profile, as `reclaimlab host probe` writes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// What was probed: host name, kernel release, when, and the path whose device was read.
    pub hostname: String,
    pub kernel: String,
    pub probed_at: String,
    pub path: String,
    pub nodes: u32,
    /// The nodes' distances (/sys/devices/system/node/nodeN/distance), on a host of more
    /// than one node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_distances: Vec<Vec<u32>>,
    pub cpus_per_node: u32,
    /// Memory the kernel manages per node (`MemTotal` of the node; the smallest node's when
    /// they differ).
    pub memory_mb_per_node: u64,
    /// ZONE_DMA and ZONE_DMA32 of node 0 together (`managed` pages in /proc/zoneinfo).
    pub dma32_mb: u64,
    /// The device's queue `read_ahead_kb`.
    pub read_ahead_kb: u64,
    /// `vm.min_free_kbytes` as the host runs (its boot value may have been raised since, e.g.
    /// by khugepaged's `set_recommended_min_free_kbytes()` with THP enabled).
    pub min_free_kbytes: u64,
    pub watermark_scale_factor: u64,
    /// The queue's `rotational` flag.
    pub rotational: bool,
    /// The block device, as measured.
    pub device: Device,
    /// The device's sequential read rates, O_DIRECT and buffered (absent from profiles probed
    /// before the buffered one was); `device` is fitted to both (`HostReads::fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<HostReads>,
    /// The writeback of the probe's own file (only a probe that wrote one, `--fresh-mb`);
    /// `device`'s write bandwidth is fitted to it (`HostWrites::fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<HostWrites>,
    /// The CPU costs live usemem meets here (absent from profiles probed before they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<HostCosts>,
    /// The non-movable pageblocks of each zone, the free blocks in them and the movable
    /// free lists, from /proc/pagetypeinfo: as `reclaimlab host probe` leaves the machine
    /// (its own file's pages dropped with POSIX_FADV_DONTNEED, the rest of the page cache
    /// kept), or after the page cache was dropped with `reclaimlab host pageblocks
    /// --drop-caches`, as a live run with `drop_caches` starts (absent from profiles probed
    /// before it was read): the machine's `pageblocks` (`mm::boot_memory`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pageblocks: Vec<ZonePageblocks>,
}

/// The sequential reads of `reclaimlab host probe`: parallel streams of `max_request_kb`
/// reads of one file on the device, O_DIRECT into buffers of 4 KiB pages, then buffered (the
/// file's pages dropped from the page cache before each pass, `POSIX_FADV_DONTNEED`), and
/// the mean request size the device saw in each (/proc/diskstats).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostReads {
    /// O_DIRECT, MB/s (10⁶ bytes).
    pub direct_mb_s: f64,
    /// Buffered, MB/s copied to user space.
    pub buffered_mb_s: f64,
    pub direct_request_kb: f64,
    pub buffered_request_kb: f64,
    /// The file read, MiB, and how many streams read it.
    pub file_mb: u64,
    pub streams: u32,
}

impl HostReads {
    /// The ranges of its keys: positive, finite numbers.
    pub fn validate(&self) -> Result<(), Invalid> {
        for (key, v) in [
            ("direct_mb_s", self.direct_mb_s),
            ("buffered_mb_s", self.buffered_mb_s),
            ("direct_request_kb", self.direct_request_kb),
            ("buffered_request_kb", self.buffered_request_kb),
        ] {
            if v <= 0.0 || !v.is_finite() {
                return Invalid::err(key, "expected a positive number");
            }
        }
        if self.file_mb == 0 || self.streams == 0 {
            let key = if self.file_mb == 0 {
                "file_mb"
            } else {
                "streams"
            };
            return Invalid::err(key, "expected at least 1");
        }
        Ok(())
    }

    /// `device`, measured by O_DIRECT streams, made the device both readers see: an O_DIRECT
    /// read has a segment per 4 KiB page, a buffered one few (its page cache is contiguous),
    /// so the buffered rate is the transfer's and what an O_DIRECT page takes beyond it,
    /// 4096 · (1/direct − 1/buffered) µs, is the time per segment (`Device::segment_us`).
    /// `request_us` stays: the probe's small reads, from which it comes, are one segment
    /// each, and the transfer it subtracted, 4 KiB at the O_DIRECT rate, is the buffered
    /// one's plus a segment. A buffered rate at or below the O_DIRECT one (readers short of
    /// CPU) shows no segment cost: the device is left as measured.
    pub fn fit(&self, device: &mut Device) {
        if self.buffered_mb_s <= self.direct_mb_s {
            return;
        }
        let segment_us = 4096.0 * (1.0 / self.direct_mb_s - 1.0 / self.buffered_mb_s);
        device.bandwidth_mb_s = self.buffered_mb_s;
        device.segment_us = (segment_us * 1000.0).round() / 1000.0;
    }
}

/// The write of `reclaimlab host probe --fresh-mb`'s file: `write()`s of 4 MiB into the
/// page cache, then `fdatasync()`, the sectors the disk wrote during the sync counted in
/// /proc/diskstats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostWrites {
    /// The `write()`s' rate into the page cache, MB/s (10⁶ bytes).
    pub buffered_mb_s: f64,
    /// The disk's rate during the `fdatasync()`, MB/s: the file's writeback, issued by the
    /// file system from its dirty folios as a flusher's would be.
    pub writeback_mb_s: f64,
    /// The mean write request the disk saw during the sync.
    pub writeback_request_kb: f64,
    /// The file written, MiB.
    pub file_mb: u64,
}

impl HostWrites {
    /// The ranges of its keys: positive, finite numbers.
    pub fn validate(&self) -> Result<(), Invalid> {
        for (key, v) in [
            ("buffered_mb_s", self.buffered_mb_s),
            ("writeback_mb_s", self.writeback_mb_s),
            ("writeback_request_kb", self.writeback_request_kb),
        ] {
            if v <= 0.0 || !v.is_finite() {
                return Invalid::err(key, "expected a positive number");
            }
        }
        if self.file_mb == 0 {
            return Invalid::err("file_mb", "expected at least 1");
        }
        Ok(())
    }

    /// `device` given the measured writeback rate as its write bandwidth. No segment time
    /// is taken off it, unlike the reads' fit: the file system writes back from page-cache
    /// folios, contiguous runs of memory with few segments, as a buffered reader's
    /// readahead reads into them.
    pub fn fit(&self, device: &mut Device) {
        device.write_bandwidth_mb_s = Some(self.writeback_mb_s);
    }
}

/// `[costs]` measured on the host: what live usemem takes for an access to a present page,
/// its clock read included (the median access of a resident mapping, `reclaimlab host
/// probe`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCosts {
    /// A sequential pass's page: 512 words read, checked and written.
    pub usemem_page_ns: u64,
    /// A random pass's word, over a mapping larger than the caches.
    pub usemem_word_ns: u64,
    /// `do_anonymous_page()`: a first touch's median less a present page's (absent from
    /// profiles probed before it was, and where it cannot be measured: THP `always`). The
    /// allocator and the LRU add are batched, live and simulated, so the median touch pays
    /// neither. It moves against `usemem_page_ns` from probe to probe (their sum is steady).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_fault_ns: Option<u64>,
    /// The swap path's costs (`reclaimlab host probe --swap`, which needs root and a swap
    /// file of its own; absent otherwise): see [`SwapProbe::costs`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_out_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapin_map_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_cache_insert_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_flush_ipi_ns: Option<u64>,
}

/// What `reclaimlab host probe --swap` times on this machine's kernel, in a process of its
/// own over memory of its own, with a swap file of its own (crates/reclaim-py/src/probe.rs).
/// Times are the probing thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so that a wait for
/// the device's tags, which the model charges as device time, is not counted. Each phase
/// leaves the pages in a state the next one needs:
/// 1. `madvise(MADV_PAGEOUT)` of dirty anonymous pages: the page-table walk isolates each
///    (`folio_isolate_lru()`), `reclaim_pages()` → `shrink_folio_list()` adds it to swap,
///    unmaps it and submits its write, and `folio_putback_lru()` puts it back (the write is
///    asynchronous; nothing is freed). Per page.
/// 2. Once the writes are done, a write to half of them: each is a minor fault on a folio
///    still in the swap cache (`do_swap_page()` without I/O), which maps it and frees its
///    slot. Per page.
/// 3. The other half is read (mapped, slot kept) and paged out again: clean and in the swap
///    cache, each is unmapped and freed at once, so that it is on swap alone. Then a write
///    to each: major faults with the kernel's swap readahead. The pass's time, with the
///    pages read (pswpin) and the pages mapped.
/// 4. Where there are two CPUs: `madvise(MADV_PAGEOUT)` of fresh pages from a thread bound
///    to one CPU, first alone, then with a sibling thread spinning on the other, so that each
///    page-out's `try_to_unmap_flush_dirty()` must flush that CPU's TLB by IPI (the sender
///    waits for it, busy). Per page of each (0 where the probe cannot hold two CPUs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwapProbe {
    pub pageout_ns: u64,
    pub swapcache_fault_ns: u64,
    pub swapin_sys_ns: u64,
    pub swapin_reads: u64,
    pub swapin_pages: u64,
    pub pageout_local_ns: u64,
    pub pageout_remote_ns: u64,
}

impl SwapProbe {
    /// The `[costs]` keys the phases measure, less what the model charges for the same work
    /// under other keys (`base`'s). MADV_PAGEOUT's page is taken as `isolate_ns`,
    /// `shrink_folio_ns`, `swap_out_ns` and `putback_ns` (it skips the reference check, so no
    /// `folio_referenced_ns`; its isolation and putback are the per-folio
    /// `folio_isolate_lru()` and `folio_putback_lru()`, close to reclaim's batched ones), the
    /// write's submission in `swap_out_ns`. The swap-cache fault is `swapin_map_ns`. A page
    /// read is `buddy_ns`, `swap_cache_insert_ns` and `lru_add_ns` (the read's submission and
    /// completion in `swap_cache_insert_ns`), and a page mapped is `swapin_map_ns`. The
    /// remote page-out's excess over the local one is `tlb_flush_ipi_ns`. A key whose
    /// measurement is not above the parts subtracted is `None` (the model keeps its default).
    pub fn costs(&self, base: &Costs) -> [(&'static str, Option<u64>); 4] {
        let positive = |v: Option<u64>| v.filter(|&ns| ns > 0);
        let swap_out = self
            .pageout_ns
            .checked_sub(base.isolate_ns + base.shrink_folio_ns + base.putback_ns);
        let map = positive(Some(self.swapcache_fault_ns));
        let insert = (self.swapin_reads > 0)
            .then(|| {
                let mapped = self.swapin_pages * map.unwrap_or(base.swapin_map_ns);
                let per_read = self.swapin_sys_ns.checked_sub(mapped)? / self.swapin_reads;
                per_read.checked_sub(base.buddy_ns + base.lru_add_ns)
            })
            .flatten();
        [
            ("swap_out_ns", positive(swap_out)),
            ("swapin_map_ns", map),
            ("swap_cache_insert_ns", positive(insert)),
            (
                "tlb_flush_ipi_ns",
                positive(self.pageout_remote_ns.checked_sub(self.pageout_local_ns)),
            ),
        ]
    }
}

/// Where the host profile lives: `$RECLAIMLAB_HOST_PROFILE`, else
/// `$XDG_CACHE_HOME/reclaimlab/host.toml`, else `~/.cache/reclaimlab/host.toml`.
pub fn host_profile_path() -> PathBuf {
    if let Some(p) = std::env::var_os("RECLAIMLAB_HOST_PROFILE") {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("reclaimlab").join("host.toml")
}

impl HostProfile {
    /// Read the host profile; the error says where it was looked for and how to write it.
    pub fn load() -> Result<HostProfile, String> {
        Self::load_from(&host_profile_path())
    }

    /// `load` of the profile at `path`.
    pub fn load_from(path: &std::path::Path) -> Result<HostProfile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "no host profile at {} ({e}); run `reclaimlab host probe` to write it",
                path.display()
            )
        })?;
        Self::parse(&text).map_err(|e| {
            format!(
                "{}: not a host profile ({e}); run `reclaimlab host probe` again",
                path.display()
            )
        })
    }

    /// A profile's text, its values checked: the error names the key and what was expected.
    pub fn parse(text: &str) -> Result<HostProfile, String> {
        let profile: HostProfile = toml::from_str(text).map_err(|e| e.message().to_string())?;
        profile
            .validate()
            .map_err(|e| format!("{}: {}", e.key, e.message))?;
        Ok(profile)
    }

    /// The ranges of the measured device's keys, `[reads]` and `[writes]`.
    pub fn validate(&self) -> Result<(), Invalid> {
        self.device.validate().map_err(|e| e.within("device"))?;
        if let Some(reads) = &self.reads {
            reads.validate().map_err(|e| e.within("reads"))?;
        }
        if let Some(writes) = &self.writes {
            writes.validate().map_err(|e| e.within("writes"))?;
        }
        for (i, b) in self.pageblocks.iter().enumerate() {
            b.validate()
                .map_err(|e| e.within(&format!("pageblocks[{i}]")))?;
        }
        Ok(())
    }

    /// The profile of a probe's measurements: `device` fitted to its `[reads]` and
    /// `[writes]`.
    pub fn fitted(mut self) -> Result<HostProfile, String> {
        self.validate()
            .map_err(|e| format!("{}: {}", e.key, e.message))?;
        if let Some(reads) = &self.reads {
            reads.fit(&mut self.device);
        }
        if let Some(writes) = &self.writes {
            writes.fit(&mut self.device);
        }
        Ok(self)
    }

    /// Fill a scenario's `[costs]` with the measured costs it does not set itself.
    pub fn apply_costs(&self, scenario: &mut toml::Table) {
        let Some(c) = &self.costs else {
            return;
        };
        let costs = scenario
            .entry("costs")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(costs) = costs.as_table_mut() {
            for (key, ns) in [
                ("usemem_page_ns", Some(c.usemem_page_ns)),
                ("usemem_word_ns", Some(c.usemem_word_ns)),
                ("anon_fault_ns", c.anon_fault_ns),
                ("swap_out_ns", c.swap_out_ns),
                ("swapin_map_ns", c.swapin_map_ns),
                ("swap_cache_insert_ns", c.swap_cache_insert_ns),
                ("tlb_flush_ipi_ns", c.tlb_flush_ipi_ns),
            ] {
                if let Some(ns) = ns {
                    costs.entry(key).or_insert((ns as i64).into());
                }
            }
        }
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a host profile serialises")
    }

    /// Fill a scenario's `[machine]` table (and its `[machine.sysctl]`, the host's own
    /// tuning) from the profile, leaving every key the scenario sets as it is, and take
    /// `from` out of it. The host's `pageblocks` go with the host's memory: not to a
    /// scenario that sets its own nodes or memory.
    pub fn apply(&self, machine: &mut toml::Table) {
        machine.remove("from");
        // The host's fragmentation describes the host's zones: a scenario that sizes its own
        // memory starts from an empty machine unless it gives its own pageblocks.
        let own_memory = ["nodes", "memory_mb_per_node", "dma32_mb"]
            .iter()
            .any(|k| machine.contains_key(*k));
        let device = Device {
            rotational: self.rotational,
            ..self.device.clone()
        };
        let device = toml::Value::try_from(&device).expect("a device serialises");
        let from_host: [(&str, toml::Value); 5] = [
            ("nodes", (self.nodes as i64).into()),
            ("cpus_per_node", (self.cpus_per_node as i64).into()),
            (
                "memory_mb_per_node",
                (self.memory_mb_per_node as i64).into(),
            ),
            ("dma32_mb", (self.dma32_mb as i64).into()),
            ("devices", toml::Value::Array(vec![device])),
        ];
        // The distances describe the host's nodes: a scenario that sets its own number of
        // nodes gets the kernel's default distances unless it gives its own.
        if !self.node_distances.is_empty() && !machine.contains_key("nodes") {
            let rows = toml::Value::try_from(&self.node_distances).expect("distances serialise");
            machine.entry("node_distances").or_insert(rows);
        }
        for (key, value) in from_host {
            machine.entry(key).or_insert(value);
        }
        if !self.pageblocks.is_empty() && !own_memory {
            let blocks = toml::Value::try_from(&self.pageblocks).expect("pageblocks serialise");
            machine.entry("pageblocks").or_insert(blocks);
        }
        let sysctls: [(&str, u64); 3] = [
            ("read_ahead_kb", self.read_ahead_kb),
            ("min_free_kbytes", self.min_free_kbytes),
            ("watermark_scale_factor", self.watermark_scale_factor),
        ];
        let sysctl = machine
            .entry("sysctl")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(sysctl) = sysctl.as_table_mut() {
            for (key, value) in sysctls {
                sysctl.entry(key).or_insert((value as i64).into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn profile() -> HostProfile {
        HostProfile {
            hostname: "vm".into(),
            kernel: "6.18".into(),
            probed_at: "2026-11-25T11:00:00Z".into(),
            path: "/var/tmp".into(),
            nodes: 1,
            node_distances: vec![],
            cpus_per_node: 2,
            memory_mb_per_node: 24105,
            dma32_mb: 3034,
            read_ahead_kb: 8192,
            min_free_kbytes: 67584,
            watermark_scale_factor: 10,
            rotational: true,
            device: Device {
                name: "vda".into(),
                bandwidth_mb_s: 1042.0,
                latency_us: 145.0,
                ..Device::default()
            },
            reads: None,
            writes: None,
            pageblocks: vec![],
            costs: Some(HostCosts {
                usemem_page_ns: 850,
                usemem_word_ns: 90,
                anon_fault_ns: Some(1_600),
                swap_out_ns: None,
                swapin_map_ns: Some(2_100),
                swap_cache_insert_ns: None,
                tlb_flush_ipi_ns: Some(6_000),
            }),
        }
    }

    #[test]
    fn the_host_fills_what_the_scenario_leaves_out() {
        let text = "[machine]\nfrom = \"host\"\ncpus_per_node = 8\n[sysctl]\nmin_free_kbytes = 1024\n[workload]\nkind = \"dd\"\ntasks = 1\nfile_mb = 64\n";
        let mut table: toml::Table = text.parse().unwrap();
        profile().apply(table["machine"].as_table_mut().unwrap());
        let s = Scenario::from_table(table, "h.toml").unwrap();
        assert_eq!(s.machine.from, None);
        assert_eq!(s.machine.nodes, 1);
        assert_eq!(s.machine.cpus_per_node, 8, "the scenario's own key wins");
        assert_eq!(s.machine.memory_mb_per_node, 24105);
        assert_eq!(s.machine.devices[0].name, "vda");
        assert_eq!(s.machine.devices[0].bandwidth_mb_s, 1042.0);
        assert_eq!(
            s.sysctl.read_ahead_kb, None,
            "[sysctl] is the scenario's alone"
        );
        assert_eq!(s.machine.sysctl.read_ahead_kb, Some(8192));
        assert_eq!(s.machine.sysctl.min_free_kbytes, Some(67584));
        let k = s.effective_sysctl();
        assert_eq!(k.read_ahead_kb, 8192);
        assert_eq!(k.watermark_scale_factor, 10);
        assert_eq!(k.min_free_kbytes, 1024, "the scenario's own key wins");
        s.check_backend(crate::scenario::Backend::Live, "h.toml")
            .expect("a live run does not read [machine]");
    }

    #[test]
    fn the_hosts_pageblocks_come_with_its_memory() {
        let fragmented = HostProfile {
            pageblocks: vec![ZonePageblocks {
                zone: "Normal".into(),
                unmovable: 93,
                reclaimable: 292,
                highatomic: 78,
                free_unmovable: vec![109, 798, 333],
                ..Default::default()
            }],
            ..profile()
        };
        let scenario = |machine: &str| {
            let text = format!(
                "[machine]\nfrom = \"host\"\n{machine}[workload]\nkind = \"dd\"\ntasks = 1\n"
            );
            let mut table: toml::Table = text.parse().unwrap();
            fragmented.apply(table["machine"].as_table_mut().unwrap());
            Scenario::from_table(table, "h.toml")
        };
        let s = scenario("").unwrap();
        assert_eq!(s.machine.pageblocks, fragmented.pageblocks);
        // The scenario's own memory: the host's pageblocks do not describe it.
        let own = scenario("memory_mb_per_node = 30000\n").unwrap();
        assert!(own.machine.pageblocks.is_empty());
        // Pageblocks of a zone the machine does not have, or more than the zone holds.
        let err = scenario("dma32_mb = 0\n[[machine.pageblocks]]\nzone = \"DMA32\"\n")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("pageblocks[0].zone") && err.contains("no DMA32 zone"),
            "{err}"
        );
        let err = scenario("[[machine.pageblocks]]\nzone = \"Normal\"\nunmovable = 9000000\n")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("pageblocks[0]") && err.contains("do not fit"),
            "{err}"
        );
        let err = scenario("[[machine.pageblocks]]\nzone = \"HighMem\"\n")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("pageblocks[0].zone") && err.contains("\"Normal\""),
            "{err}"
        );
        // More fragmented pageblocks holding kernel memory than fragmented pageblocks.
        let err = scenario(
            "[[machine.pageblocks]]\nzone = \"Normal\"\nfragment_blocks = 3\nfragment_blocks_unmovable = 4\n",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("pageblocks[0].fragment_blocks_unmovable")
                && err.contains("at most fragment_blocks"),
            "{err}"
        );
        let err = scenario(
            "[[machine.pageblocks]]\nzone = \"Normal\"\nfragment_blocks = 3\nfragment_blocks_unmovable = 2\nfragment_blocks_file = 2\n",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("pageblocks[0].fragment_blocks_file")
                && err.contains("less fragment_blocks_unmovable"),
            "{err}"
        );
    }

    #[test]
    fn a_numa_hosts_distances_come_with_its_nodes() {
        let numa = HostProfile {
            nodes: 2,
            node_distances: vec![vec![10, 21], vec![21, 10]],
            ..profile()
        };
        let scenario = |machine: &str| {
            let text = format!("[machine]\nfrom = \"host\"\n{machine}[workload]\nkind = \"dd\"\ntasks = 1\nfile_mb = 64\n");
            let mut table: toml::Table = text.parse().unwrap();
            numa.apply(table["machine"].as_table_mut().unwrap());
            Scenario::from_table(table, "h.toml").unwrap().machine
        };
        let m = scenario("");
        assert_eq!(
            (m.nodes, m.node_distances.clone()),
            (2, vec![vec![10, 21], vec![21, 10]])
        );
        // A scenario with nodes of its own: the kernel's default distances, or its own.
        let m = scenario("nodes = 4\n");
        assert_eq!((m.nodes, m.node_distances.len()), (4, 0));
        let m = scenario("nodes = 2\nnode_distances = [[10, 31], [31, 10]]\n");
        assert_eq!(m.node_distances[0][1], 31);
    }

    #[test]
    fn measured_costs_fill_the_costs_a_scenario_leaves_out() {
        let text = "[machine]\nfrom = \"host\"\n[costs]\nusemem_word_ns = 50\n[workload]\nkind = \"dd\"\ntasks = 1\nfile_mb = 64\n";
        let mut table: toml::Table = text.parse().unwrap();
        let p = profile();
        p.apply(table["machine"].as_table_mut().unwrap());
        p.apply_costs(&mut table);
        let s = Scenario::from_table(table, "h.toml").unwrap();
        assert_eq!(s.costs.usemem_page_ns, 850);
        assert_eq!(s.costs.usemem_word_ns, 50, "the scenario's own key wins");
        assert_eq!(s.costs.anon_fault_ns, 1_600);
        assert_eq!(s.costs.swapin_map_ns, 2_100);
        assert_eq!(s.costs.tlb_flush_ipi_ns, 6_000);
        assert_eq!(
            s.costs.swap_out_ns,
            Costs::default().swap_out_ns,
            "not probed: the default stays"
        );
        // A profile probed before the fault was measured: its default stays.
        let text = "usemem_page_ns = 850\nusemem_word_ns = 90\n";
        let older = HostProfile {
            costs: Some(toml::from_str(text).unwrap()),
            ..profile()
        };
        let mut table: toml::Table = "[workload]\nkind = \"dd\"\n".parse().unwrap();
        older.apply_costs(&mut table);
        assert!(!table["costs"]
            .as_table()
            .unwrap()
            .contains_key("anon_fault_ns"));
        // A profile probed before costs were: the defaults stay.
        let mut old = profile();
        old.costs = None;
        let again: HostProfile = toml::from_str(&old.to_toml()).unwrap();
        assert!(again.costs.is_none());
        let mut table: toml::Table = "[workload]\nkind = \"dd\"\n".parse().unwrap();
        again.apply_costs(&mut table);
        assert!(!table.contains_key("costs"));
    }

    #[test]
    fn the_swap_probe_gives_each_key_less_what_other_keys_charge() {
        let base = Costs::default();
        let probe = SwapProbe {
            pageout_ns: 3_500,
            swapcache_fault_ns: 2_000,
            swapin_sys_ns: 100 * 2_000 + 80 * 3_000,
            swapin_reads: 80,
            swapin_pages: 100,
            pageout_local_ns: 3_600,
            pageout_remote_ns: 9_600,
        };
        let costs = probe.costs(&base);
        let parts = base.isolate_ns + base.shrink_folio_ns + base.putback_ns;
        assert_eq!(costs[0], ("swap_out_ns", Some(3_500 - parts)));
        assert_eq!(costs[1], ("swapin_map_ns", Some(2_000)));
        assert_eq!(
            costs[2],
            (
                "swap_cache_insert_ns",
                Some(3_000 - base.buddy_ns - base.lru_add_ns)
            )
        );
        assert_eq!(costs[3], ("tlb_flush_ipi_ns", Some(6_000)));
        // Below the parts other keys charge: no key, the default stays.
        let cheap = SwapProbe {
            pageout_ns: parts,
            swapin_sys_ns: 100 * 2_000,
            ..probe.clone()
        };
        assert_eq!(cheap.costs(&base)[0].1, None);
        assert_eq!(cheap.costs(&base)[2].1, None);
        // One CPU: no remote page-out, no key.
        let one_cpu = SwapProbe {
            pageout_local_ns: 0,
            pageout_remote_ns: 0,
            ..probe.clone()
        };
        assert_eq!(one_cpu.costs(&base)[3].1, None);
        let no_reads = SwapProbe {
            swapin_reads: 0,
            ..probe
        };
        assert_eq!(no_reads.costs(&base)[2].1, None);
    }

    fn reads(direct_mb_s: f64, buffered_mb_s: f64) -> HostReads {
        HostReads {
            direct_mb_s,
            buffered_mb_s,
            direct_request_kb: 512.0,
            buffered_request_kb: 3900.0,
            file_mb: 674,
            streams: 4,
        }
    }

    #[test]
    fn the_two_read_rates_give_the_device_its_time_per_segment() {
        // 1000 MB/s O_DIRECT, 2000 buffered: a 4 KiB page takes 4.096 µs O_DIRECT, 2.048
        // buffered; the 2.048 µs between them is a segment's.
        let p = HostProfile {
            reads: Some(reads(1000.0, 2000.0)),
            ..profile()
        };
        let fitted = p.fitted().unwrap();
        assert_eq!(fitted.device.bandwidth_mb_s, 2000.0);
        assert_eq!(fitted.device.segment_us, 2.048);
        assert_eq!(fitted.device.request_us, profile().device.request_us);
        // Written and read back whole, [reads] with it.
        let again = HostProfile::parse(&fitted.to_toml()).unwrap();
        assert_eq!(again.reads, Some(reads(1000.0, 2000.0)));
        assert_eq!(again.device.segment_us, 2.048);
        // Buffered no faster than O_DIRECT: no segment cost, the device as measured.
        let slow = HostProfile {
            reads: Some(reads(1000.0, 900.0)),
            ..profile()
        };
        let fitted = slow.fitted().unwrap();
        assert_eq!(fitted.device.bandwidth_mb_s, 1042.0);
        assert_eq!(fitted.device.segment_us, 0.0);
        // A profile from before the buffered probe: no [reads], no segments.
        let old = profile().fitted().unwrap();
        assert!(!old.to_toml().contains("segment_us") && !old.to_toml().contains("[reads]"));
    }

    fn writes(writeback_mb_s: f64) -> HostWrites {
        HostWrites {
            buffered_mb_s: 3974.0,
            writeback_mb_s,
            writeback_request_kb: 2048.0,
            file_mb: 2048,
        }
    }

    #[test]
    fn the_writeback_rate_is_the_devices_write_bandwidth() {
        let p = HostProfile {
            reads: Some(reads(1000.0, 2000.0)),
            writes: Some(writes(2305.0)),
            ..profile()
        };
        let fitted = p.fitted().unwrap();
        assert_eq!(fitted.device.write_bandwidth_mb_s, Some(2305.0));
        // The reads' fit is untouched by it: reads at the buffered rate, segments apart.
        assert_eq!(fitted.device.bandwidth_mb_s, 2000.0);
        assert_eq!(fitted.device.segment_us, 2.048);
        let again = HostProfile::parse(&fitted.to_toml()).unwrap();
        assert_eq!(again.writes, Some(writes(2305.0)));
        assert_eq!(again.device.write_bandwidth_mb_s, Some(2305.0));
        // A probe that wrote nothing: reads and writes share the bandwidth, as before.
        let read_only = profile().fitted().unwrap();
        assert_eq!(read_only.device.write_bandwidth_mb_s, None);
        assert!(!read_only.to_toml().contains("[writes]"));
        let bad = HostProfile {
            writes: Some(writes(f64::NAN)),
            ..profile()
        };
        assert_eq!(
            bad.fitted().unwrap_err(),
            "writes.writeback_mb_s: expected a positive number"
        );
    }

    #[test]
    fn a_bad_read_rate_or_device_key_names_the_key_and_what_was_expected() {
        let bad = HostProfile {
            reads: Some(reads(1000.0, -5.0)),
            ..profile()
        };
        let e = HostProfile::parse(&bad.to_toml()).unwrap_err();
        assert_eq!(e, "reads.buffered_mb_s: expected a positive number");
        assert_eq!(
            bad.clone().fitted().unwrap_err(),
            "reads.buffered_mb_s: expected a positive number"
        );
        let text = profile()
            .to_toml()
            .replace("[device]\n", "[device]\nsegment_us = -1.0\n");
        let e = HostProfile::parse(&text).unwrap_err();
        assert_eq!(e, "device.segment_us: expected a non-negative number");
        let text = profile().to_toml() + "\n[reads]\ndirect_mb_s = 1000.0\n";
        let e = HostProfile::parse(&text).unwrap_err();
        assert!(e.contains("missing field `buffered_mb_s`"), "{e}");
        // The file's path comes first (`HostProfile::load`): the scenario's refusal says it.
        let dir = std::env::temp_dir().join(format!("reclaimlab-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("host.toml");
        std::fs::write(&path, bad.to_toml()).unwrap();
        let e = HostProfile::load_from(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            e,
            format!(
                "{}: not a host profile (reads.buffered_mb_s: expected a positive number); \
                 run `reclaimlab host probe` again",
                path.display()
            )
        );
    }

    #[test]
    fn a_scenarios_bad_segment_time_names_file_key_and_range() {
        let text = "[machine]\ndevices = [{ name = \"vda\", segment_us = -2.0 }]\n[workload]\nkind = \"dd\"\ntasks = 1\n";
        let e = Scenario::parse(text, "vm.toml", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "vm.toml: key `machine.devices[0].segment_us`: expected a non-negative number"
        );
    }

    #[test]
    fn a_profile_round_trips_through_its_toml() {
        let p = profile();
        let again: HostProfile = toml::from_str(&p.to_toml()).unwrap();
        assert_eq!(again.to_toml(), p.to_toml());
    }
}
