//! The sections of a scenario that describe how the machine is set up around the workload:
//! `[memory]` (how memory is constrained), `[swap]` (swap space added for the run) and `[live]`
//! (what only a live run needs: tracing buffers, dropping caches, a safety timeout). One
//! schema for both backends: each backend refuses, by key, what it cannot honour
//! (`Scenario::check_backend`).

use serde::{Deserialize, Serialize};

use crate::machine::Invalid;
use crate::mm::vma::MAX_SWAPFILES;

/// How memory is constrained for the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMode {
    /// The whole machine.
    #[default]
    None,
    /// The workload runs in a memory cgroup limited to `limit_mb` (memcg reclaim).
    Cgroup,
    /// Hugetlb pages are reserved until about `free_mb` is left (global reclaim, kswapd).
    Squeeze,
}

/// `[memory]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Memory {
    pub mode: MemoryMode,
    /// The cgroup's `memory.max` (`mode = "cgroup"`).
    pub limit_mb: u64,
    /// The cgroup's `memory.high` (`mode = "cgroup"`; 0: none). Live, cgroup v2 only.
    #[serde(skip_serializing_if = "is_zero")]
    pub high_mb: u64,
    /// Memory left free after the squeeze (`mode = "squeeze"`).
    pub free_mb: u64,
    /// A live squeeze never leaves less than this available to the rest of the machine, and
    /// stops the workload if available memory falls below a quarter of it.
    pub margin_mb: u64,
}

impl Memory {
    /// Each mode's size, and the margin.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.mode == MemoryMode::Cgroup && self.limit_mb == 0 {
            return Invalid::err(
                "limit_mb",
                "memory.mode = \"cgroup\" needs a limit above 0 MiB",
            );
        }
        if self.high_mb > 0 && self.mode != MemoryMode::Cgroup {
            return Invalid::err(
                "high_mb",
                "memory.high is a cgroup's: it needs memory.mode = \"cgroup\"",
            );
        }
        if self.mode == MemoryMode::Squeeze && self.free_mb == 0 {
            return Invalid::err(
                "free_mb",
                "memory.mode = \"squeeze\" needs free memory above 0 MiB",
            );
        }
        if self.margin_mb < 256 {
            return Invalid::err("margin_mb", "expected at least 256 MiB");
        }
        Ok(())
    }
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            mode: MemoryMode::None,
            limit_mb: 0,
            high_mb: 0,
            free_mb: 0,
            margin_mb: 1024,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapKind {
    #[default]
    None,
    /// A swap file on the filesystem of `path` (or /var/tmp).
    File,
    /// A zram device (compressed RAM; synchronous, it bypasses the swap cache).
    Zram,
}

/// `[swap]`: swap space added for the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Swap {
    pub kind: SwapKind,
    pub size_mb: u64,
    /// `swapon -p`.
    pub priority: i32,
    /// The swap file (empty: a new file under /var/tmp).
    pub path: String,
    /// Mark the swap file's block device non-rotational at swapon (a rotational swap device
    /// turns VMA-based swap readahead off).
    pub nonrotational: bool,
    /// `[[swap.also]]`: further swap areas, each with the keys above (and no `also`), swapped
    /// on after this one. Reclaim fills the highest priority first; areas of equal priority
    /// take turns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Swap>,
}

impl Swap {
    /// The scenario key `key` of area `i` in `[swap]` then `also` order: `swap.size_mb`,
    /// `swap.also[0].size_mb`, …
    pub fn area_key(i: usize, key: &str) -> String {
        format!("swap.{}", Self::key_within(i, key))
    }

    /// `area_key` within `[swap]`: `size_mb`, `also[0].size_mb`, …
    fn key_within(i: usize, key: &str) -> String {
        if i == 0 {
            key.to_string()
        } else {
            format!("also[{}].{key}", i - 1)
        }
    }

    /// Each area's kind, size and priority; further areas only with a first, and at most
    /// `MAX_SWAPFILES` in all.
    pub fn validate(&self) -> Result<(), Invalid> {
        for (i, area) in std::iter::once(self).chain(&self.also).enumerate() {
            let key = |k: &str| Self::key_within(i, k);
            if i > 0 && area.kind == SwapKind::None {
                return Invalid::err(
                    key("kind"),
                    "expected \"file\" or \"zram\" for a further area",
                );
            }
            if area.kind != SwapKind::None && area.size_mb == 0 {
                return Invalid::err(
                    key("size_mb"),
                    "swap.kind other than \"none\" needs a size above 0 MiB",
                );
            }
            if !(-1..=32767).contains(&area.priority) {
                return Invalid::err(key("priority"), "expected -1 to 32767");
            }
            if i > 0 && !area.also.is_empty() {
                return Invalid::err(key("also"), "further areas go in the top [swap]'s also");
            }
        }
        if !self.also.is_empty() && self.kind == SwapKind::None {
            return Invalid::err(
                "kind",
                "expected \"file\" or \"zram\" when swap.also has areas",
            );
        }
        if self.areas().count() > MAX_SWAPFILES {
            return Invalid::err("also", format!("at most {MAX_SWAPFILES} swap areas"));
        }
        Ok(())
    }

    /// Every area: this one, then `also`'s (none when `kind = "none"`).
    pub fn areas(&self) -> impl Iterator<Item = &Swap> {
        let first = (self.kind != SwapKind::None).then_some(self);
        first.into_iter().chain(&self.also)
    }
}

impl Default for Swap {
    fn default() -> Self {
        Swap {
            kind: SwapKind::None,
            size_mb: 0,
            priority: 100,
            path: String::new(),
            nonrotational: false,
            also: Vec::new(),
        }
    }
}

/// `[live]`: what only a live run uses (the simulator ignores the section).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LiveOptions {
    /// tracefs event groups or `group:event`s recorded when `run.trace` is on.
    pub trace_events: Vec<String>,
    /// tracefs buffer per CPU.
    pub trace_buffer_kb: u64,
    /// `echo 3 > /proc/sys/vm/drop_caches` before each point.
    pub drop_caches: bool,
    /// A point's workload is stopped after this long whatever it is doing.
    pub timeout_s: f64,
    /// Block devices to mark non-rotational for the run.
    pub nonrotational: Vec<String>,
}

impl LiveOptions {
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.trace_buffer_kb == 0 {
            return Invalid::err("trace_buffer_kb", "expected a positive size in KiB per CPU");
        }
        if self.timeout_s.is_nan() || self.timeout_s <= 0.0 {
            return Invalid::err("timeout_s", "expected a positive number of seconds");
        }
        Ok(())
    }
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            trace_events: vec!["vmscan".into(), "writeback".into(), "compaction".into()],
            trace_buffer_kb: 16384,
            drop_caches: true,
            timeout_s: 600.0,
            nonrotational: Vec::new(),
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
