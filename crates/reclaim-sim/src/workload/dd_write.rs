//! simple-writeback (seed 001): N dd writers at once, each writing `file_mb`; the mean
//! per-job elapsed time. Live runs only until dirty pages and writeback are modelled.

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Registration, WorkloadError};

pub const REGISTRATION: Registration = Registration {
    kind: "dd-write",
    about: "parallel dd writers, one file each (seed 001's simple-writeback); live only",
    resolve,
    build: None,
    columns: &[],
    mappings: super::no_mappings,
};

/// The `[workload]` keys of `kind = "dd-write"`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DdWriteParams {
    #[serde(default = "one")]
    tasks: u64,
    #[serde(default = "default_block_kb")]
    block_kb: u64,
    /// MiB each task writes.
    #[serde(default = "default_file_mb")]
    file_mb: u64,
    /// dd's `conv=` (e.g. `fdatasync`).
    #[serde(default)]
    conv: String,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
}

fn one() -> u64 {
    1
}
fn default_block_kb() -> u64 {
    1024
}
fn default_file_mb() -> u64 {
    1024
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<DdWriteParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("block_kb", p.block_kb)?;
    positive("file_mb", p.file_mb)?;
    Ok(resolved)
}
