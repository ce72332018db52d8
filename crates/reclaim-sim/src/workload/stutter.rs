//! mmtests' stutter (seeds 001 and 004): a memory hog and a large file copy while a probe
//! times mmap() page faults. Live runs only until its mechanisms are modelled.

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Registration, WorkloadError};

pub const REGISTRATION: Registration = Registration {
    kind: "stutter",
    about:
        "mmtests stutter: mmap latency while a hog and a file copy run (seeds 001, 004); live only",
    resolve,
    build: None,
    columns: &[],
    mappings: super::no_mappings,
    live: true,
};

/// The `[workload]` keys of `kind = "stutter"`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StutterParams {
    #[serde(default = "default_memhog_mb")]
    memhog_mb: u64,
    #[serde(default = "default_file_mb")]
    file_mb: u64,
    #[serde(default = "default_block_kb")]
    block_kb: u64,
    #[serde(default = "one")]
    iterations: u64,
    /// Pages the latency probe maps and faults.
    #[serde(default = "default_probe_pages")]
    probe_pages: u64,
    /// Seconds the probe runs alone before each iteration.
    #[serde(default = "default_settle_s")]
    settle_s: f64,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
}

fn one() -> u64 {
    1
}
fn default_memhog_mb() -> u64 {
    512
}
fn default_file_mb() -> u64 {
    1024
}
fn default_block_kb() -> u64 {
    2048
}
fn default_probe_pages() -> u64 {
    32768
}
fn default_settle_s() -> f64 {
    2.0
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<StutterParams>(table)?;
    positive("memhog_mb", p.memhog_mb)?;
    positive("file_mb", p.file_mb)?;
    positive("block_kb", p.block_kb)?;
    positive("iterations", p.iterations)?;
    positive("probe_pages", p.probe_pages)?;
    if p.settle_s.is_nan() || p.settle_s < 0.0 {
        return Err(WorkloadError::new("settle_s", "expected seconds ≥ 0"));
    }
    Ok(resolved)
}
