//! mmtests' micro/mapped-file-stream (seed 001): each task maps a file of `size_mb` and
//! streams through it. Live runs only until mapped file pages are modelled.

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Registration, WorkloadError};

pub const REGISTRATION: Registration = Registration {
    kind: "mapped-file-stream",
    about: "mmtests mapped-file-stream: streams through mmap()ed files (seed 001); live only",
    resolve,
    build: None,
    columns: &[],
    mappings: super::no_mappings,
    live: true,
};

/// The `[workload]` keys of `kind = "mapped-file-stream"`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MappedFileStreamParams {
    #[serde(default = "one")]
    tasks: u64,
    /// MiB each task maps.
    #[serde(default = "default_size_mb")]
    size_mb: u64,
    #[serde(default = "super::dd::default_dir")]
    dir: String,
}

fn one() -> u64 {
    1
}
fn default_size_mb() -> u64 {
    1024
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<MappedFileStreamParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("size_mb", p.size_mb)?;
    Ok(resolved)
}
