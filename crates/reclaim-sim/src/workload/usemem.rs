//! vm-scalability's usemem (seed 002): N processes each map `size_mb` of anonymous memory and
//! write it, sequentially or at random words, `repeats` times or until `runtime_s`. Live runs
//! only until anonymous memory and swap are modelled.

use serde::{Deserialize, Serialize};

use super::{positive, resolve_params, Registration, WorkloadError};

pub const REGISTRATION: Registration = Registration {
    kind: "usemem",
    about: "vm-scalability usemem: anonymous memory written sequentially or at random (seed 002); live only",
    resolve,
    build: None,
    columns: &[],
};

/// The `[workload]` keys of `kind = "usemem"`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsememParams {
    #[serde(default = "one")]
    tasks: u64,
    /// MiB each process maps and writes.
    #[serde(default = "default_size_mb")]
    size_mb: u64,
    /// Random words instead of a sequential pass.
    #[serde(default)]
    random: bool,
    /// Passes over the mapping (0: until `runtime_s`).
    #[serde(default = "one")]
    repeats: u64,
    /// Seconds after which a process stops (0: no limit).
    #[serde(default)]
    runtime_s: f64,
}

fn one() -> u64 {
    1
}
fn default_size_mb() -> u64 {
    256
}

fn resolve(table: &toml::Table) -> Result<toml::Table, WorkloadError> {
    let (p, resolved) = resolve_params::<UsememParams>(table)?;
    positive("tasks", p.tasks)?;
    positive("size_mb", p.size_mb)?;
    if p.runtime_s.is_nan() || p.runtime_s < 0.0 {
        return Err(WorkloadError::new(
            "runtime_s",
            "expected seconds ≥ 0 (0: no limit)",
        ));
    }
    if p.repeats == 0 && p.runtime_s == 0.0 {
        return Err(WorkloadError::new(
            "repeats",
            "repeats = 0 (until runtime_s) needs runtime_s above 0",
        ));
    }
    Ok(resolved)
}
