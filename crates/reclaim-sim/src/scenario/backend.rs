//! What each backend can honour. One scenario file runs both ways; a key one backend cannot
//! honour is refused by name — never dropped silently — with the reason and the backend.

use serde::Serialize;

use super::{MemoryMode, Scenario, ScenarioError, StartAt, StopAt, SYSCTL_KEYS};
use crate::variant::Variant;
use crate::workload;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `reclaimlab run`: the simulated kernel.
    Simulator,
    /// `reclaimlab live run`: this machine's kernel.
    Live,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Simulator => "the simulator",
            Backend::Live => "a live run",
        }
    }

    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "sim" | "simulator" => Some(Backend::Simulator),
            "live" => Some(Backend::Live),
            _ => None,
        }
    }
}

impl Scenario {
    /// Refuse what `backend` cannot honour: the first such key, why, and what to do.
    pub fn check_backend(&self, backend: Backend, file: &str) -> Result<(), ScenarioError> {
        let refuse = |key: &str, why: &str| {
            Err(ScenarioError {
                file: file.into(),
                key: key.into(),
                message: format!("{} cannot honour it: {why}", backend.name()),
            })
        };
        match backend {
            Backend::Simulator => {
                if self.machine.from.is_some() {
                    let why = super::HostProfile::load().err().unwrap_or_default();
                    return refuse("machine.from", &why);
                }
                for (prefix, sysctl) in [
                    ("sysctl", &self.sysctl),
                    ("machine.sysctl", &self.machine.sysctl),
                ] {
                    let set = toml::Table::try_from(sysctl).unwrap_or_default();
                    let unmodelled = SYSCTL_KEYS
                        .iter()
                        .filter_map(|k| Some((k.key, k.unmodelled?)))
                        .find(|(k, _)| set.contains_key(*k));
                    if let Some((key, why)) = unmodelled {
                        return refuse(
                            &format!("{prefix}.{key}"),
                            &format!("not modelled: {why}; remove the key"),
                        );
                    }
                }
                let sysctl = self.effective_sysctl();
                if sysctl.zone_reclaim_mode != 0 && self.variant.zonelist_cache {
                    let key = if self.sysctl.zone_reclaim_mode.is_some() {
                        "sysctl.zone_reclaim_mode"
                    } else {
                        "machine.sysctl.zone_reclaim_mode"
                    };
                    return refuse(
                        key,
                        "node reclaim is modelled as 6.6 calls it, without the zonelist cache (4.3's interplay of the two is not modelled); set variant.zonelist_cache = false or zone_reclaim_mode = 0",
                    );
                }
                let memory_mb = self.machine.memory_mb_per_node * self.machine.nodes as u64;
                if self.memory.mode == MemoryMode::Squeeze && self.memory.free_mb >= memory_mb {
                    return refuse(
                        "memory.free_mb",
                        &format!(
                            "a squeeze to {} MiB of a machine of {memory_mb} MiB would reserve nothing; expected less",
                            self.memory.free_mb
                        ),
                    );
                }
                if self.memory.mode == MemoryMode::Cgroup
                    && !workload::lookup(&self.workload.kind).is_ok_and(|r| r.kind == "usemem")
                {
                    return refuse(
                        "memory.mode",
                        "in the simulator only usemem charges a memory cgroup so far (page-cache workloads charge the root); use \"squeeze\" or \"none\"",
                    );
                }
                let registration =
                    workload::lookup(&self.workload.kind).map_err(|e| ScenarioError {
                        file: file.into(),
                        key: "workload.kind".into(),
                        message: e.message,
                    })?;
                if registration.build.is_none() {
                    return refuse(
                        "workload.kind",
                        &format!(
                            "workload `{}` is not simulated yet (live runs only)",
                            registration.kind
                        ),
                    );
                }
                for (at, bg) in self.workload.backgrounds() {
                    let kind = bg.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
                    if workload::lookup(kind).is_ok_and(|r| r.build.is_none()) {
                        return refuse(
                            &format!("{at}.kind"),
                            &format!("workload `{kind}` is not simulated yet (live runs only)"),
                        );
                    }
                }
                for (i, area) in self.swap.areas().enumerate() {
                    if area.size_mb * 256 > u64::from(crate::mm::vma::MAX_SWAP_OFFSET) {
                        return refuse(
                            &super::Swap::area_key(i, "size_mb"),
                            "larger than the model's swap entries address (1 TiB); expected less",
                        );
                    }
                }
            }
            Backend::Live => {
                // `workingset`, the large-folio switches, `readahead_noretry`/`_nofs`,
                // `ractl_max_pages`, `fast_find_migrateblock`, `fast_isolate_freepages` and
                // `buddy_merge_likely` are the kernel's own (every 6.x kernel keeps page-cache
                // shadows, reads ahead with __GFP_NORETRY since 4.7 and without __GFP_FS since
                // 5.8, sizes its readahead window by `ractl_max_pages()`, starts both of
                // compaction's scanners from the free lists since 5.1, puts a freed block likely to merge at its list's tail
                // since 2.6.35, and reads ahead and writes into large folios on a filesystem
                // that supports them): a scenario that models them, or leaves them out, runs
                // live as it is.
                let live_kernel = Variant {
                    workingset: self.variant.workingset,
                    large_folio_readahead: self.variant.large_folio_readahead,
                    ractl_max_pages: self.variant.ractl_max_pages,
                    fast_find_migrateblock: self.variant.fast_find_migrateblock,
                    fast_isolate_freepages: self.variant.fast_isolate_freepages,
                    buddy_merge_likely: self.variant.buddy_merge_likely,
                    large_folio_writes: self.variant.large_folio_writes,
                    readahead_noretry: self.variant.readahead_noretry,
                    readahead_nofs: self.variant.readahead_nofs,
                    ..Variant::default()
                };
                if let Some(key) = first_difference(&self.variant, &live_kernel) {
                    return refuse(
                        &format!("variant.{key}"),
                        "a kernel variant is simulated only (the live kernel is the one it runs); remove it or run it simulated",
                    );
                }
                let tables = std::iter::once(("workload".to_string(), &self.workload.params))
                    .chain(self.workload.backgrounds());
                for (at, table) in tables {
                    let policy = table.get("mempolicy").and_then(|m| m.as_str());
                    if policy.is_some_and(|m| m != "default") {
                        let nodes = host_numa_nodes();
                        let why = if nodes <= 1 {
                            format!("this host has {} NUMA node: a memory policy has no node to choose; remove it or run it simulated", nodes.max(1))
                        } else {
                            "a live run would start the tasks under numactl, which the installed environment does not provide; remove it or run it simulated".to_string()
                        };
                        return refuse(&format!("{at}.mempolicy"), &why);
                    }
                }
                let simulated_only = |kind: &str| workload::lookup(kind).is_ok_and(|r| !r.live);
                if simulated_only(&self.workload.kind) {
                    return refuse(
                        "workload.kind",
                        &format!(
                            "workload `{}` is simulated only so far; run it simulated",
                            self.workload.kind
                        ),
                    );
                }
                for (at, bg) in self.workload.backgrounds() {
                    let kind = bg.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
                    if simulated_only(kind) {
                        return refuse(
                            &format!("{at}.kind"),
                            &format!(
                                "workload `{kind}` is simulated only so far; run it simulated"
                            ),
                        );
                    }
                }
                if self.run.start_at != StartAt::Start {
                    return refuse(
                        "run.start_at",
                        "a live run measures from the workload's start; set run.start_at = \"start\"",
                    );
                }
                if self.run.stop_at != StopAt::Duration {
                    return refuse(
                        "run.stop_at",
                        "a live run stops after run.duration_s; set run.stop_at = \"duration\"",
                    );
                }
                if self.sysctl.read_ahead_kb.is_some() {
                    return refuse(
                        "sysctl.read_ahead_kb",
                        "a live run leaves block queue settings as they are; remove the key (the device's own read_ahead_kb applies)",
                    );
                }
                let w = &self.workload.params;
                let files = w
                    .get("files")
                    .and_then(|f| f.as_array())
                    .map_or(0, |f| f.len());
                if self.workload.kind == "dd"
                    && w.get("file_mb").and_then(|v| v.as_integer()) == Some(0)
                    && files == 0
                {
                    return refuse(
                        "workload.file_mb",
                        "a live run makes each dd task's file and needs its size in MiB (or existing files in workload.files)",
                    );
                }
                if self.workload.kind == "dd-write"
                    && w.get("jobs").and_then(|v| v.as_integer()) == Some(0)
                {
                    return refuse(
                        "workload.jobs",
                        "a live run's writers write `jobs` files each and end; 0 (new files until the run stops, filling the disk) is simulated only: give a number",
                    );
                }
            }
        }
        Ok(())
    }
}

/// The first field (in declaration order) where two values of a section differ.
fn first_difference<T: Serialize>(a: &T, b: &T) -> Option<String> {
    let (a, b) = (
        toml::Table::try_from(a).ok()?,
        toml::Table::try_from(b).ok()?,
    );
    a.iter()
        .find(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
}

/// The NUMA nodes of this host (/sys/devices/system/node/node<N>); 1 where the directory
/// cannot be read (a kernel without CONFIG_NUMA has one node).
fn host_numa_nodes() -> usize {
    std::fs::read_dir("/sys/devices/system/node")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("node")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(1)
        .max(1)
}
