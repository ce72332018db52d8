//! Workloads: the benchmarks of the seed documents as processes on the simulated machine
//! (dd, dd-write, fs_mark, usemem, mapped-file-stream, stutter, hugetlb and
//! stress-highalloc), each one scenario file for both backends.
//!
//! A workload is one file here that implements [`Workload`] and one line in [`REGISTRY`].
//! The scenario, the run loop and the command line know workloads only through that table:
//! its `[workload]` keys (checked and defaulted by `resolve`), the processes it starts, the
//! metrics it reports, and the columns `reclaimlab run` prints for it. docs/model.md shows how
//! to add one.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::engine::Ns;
use crate::process::Sim;

pub mod dd;
pub mod dd_write;
pub mod fs_mark;
pub mod hugetlb;
pub mod mapped_file_stream;
pub mod stress_highalloc;
pub mod stutter;
pub mod usemem;

/// A workload's metrics: `result.json`'s `"metrics"` (names in docs/workloads.md).
pub type Metrics = serde_json::Map<String, serde_json::Value>;

/// A running workload.
pub trait Workload {
    /// Start the workload's tasks on the machine (spawned and made runnable).
    fn start(&mut self, sim: &mut Sim);
    /// The measured window starts at `now`: what the metrics count from.
    fn window_started(&mut self, now: Ns);
    /// The metrics over the measured window, which lasted `elapsed_s` simulated seconds.
    fn metrics(&self, elapsed_s: f64) -> Metrics;
    /// Whether the workload ends by itself (a dd writer after its files, usemem after its
    /// passes, stutter after its iterations) rather than running until the run stops it
    /// (dd readers). One that does ends the run when it has finished, as a live run's does.
    fn ends_by_itself(&self) -> bool {
        false
    }
    /// All of its work is done (its tasks have exited): the run's window ends now. Asked
    /// whenever a task exits.
    fn finished(&self, _sim: &Sim) -> bool {
        false
    }
    /// Every background workload that ends by itself has finished (the foreground's, of
    /// [`WithBackground`]; others have none).
    fn background_finished(&self, _sim: &Sim) -> bool {
        true
    }
}

/// Every task of `tids` has exited: the `finished` of a workload whose tasks end with it.
pub(crate) fn all_exited(sim: &Sim, tids: &[u32]) -> bool {
    tids.iter().all(|&t| sim.exited(t))
}

/// A workload with `[workload.background]` beside it (or several,
/// `[[workload.background]]`): all run, started in order; the metrics are the foreground's,
/// with the background's under `"background"` (a list of them, in order, for a list). When
/// the foreground ends by itself, the run waits for the backgrounds that end by themselves
/// up to [`BACKGROUND_GRACE`], as a live run does (python/reclaimlab/live/runner.py's
/// `BACKGROUND_GRACE_S`).
pub struct WithBackground {
    pub foreground: Box<dyn Workload>,
    pub background: Vec<Box<dyn Workload>>,
    /// The scenario gave a list of background workloads.
    pub list: bool,
}

impl Workload for WithBackground {
    fn start(&mut self, sim: &mut Sim) {
        self.foreground.start(sim);
        for b in &mut self.background {
            b.start(sim);
        }
    }

    fn window_started(&mut self, now: Ns) {
        self.foreground.window_started(now);
        for b in &mut self.background {
            b.window_started(now);
        }
    }

    fn ends_by_itself(&self) -> bool {
        self.foreground.ends_by_itself()
    }

    fn finished(&self, sim: &Sim) -> bool {
        self.foreground.finished(sim)
    }

    fn background_finished(&self, sim: &Sim) -> bool {
        self.background
            .iter()
            .all(|b| !b.ends_by_itself() || b.finished(sim))
    }

    fn metrics(&self, elapsed_s: f64) -> Metrics {
        let mut m = self.foreground.metrics(elapsed_s);
        let mut each = self
            .background
            .iter()
            .map(|b| serde_json::Value::from(b.metrics(elapsed_s)));
        let background = if self.list {
            serde_json::Value::Array(each.collect())
        } else {
            each.next().unwrap_or_default()
        };
        m.insert("background".into(), background);
        m
    }
}

/// How long a run waits for its background workloads once the foreground has finished.
pub const BACKGROUND_GRACE: Ns = 10 * crate::engine::NSEC_PER_SEC;

/// A `[workload]` key that is wrong: the key (relative to `[workload]`) and what was
/// expected.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadError {
    pub key: String,
    pub message: String,
}

impl WorkloadError {
    pub fn new(key: &str, message: impl Into<String>) -> WorkloadError {
        WorkloadError {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// One column of the table `reclaimlab run` (and `live run`) prints: its header and where
/// its value comes from in a run directory, one of
/// `metrics.<name>` (result.json), `vmstat.<counter>` (its delta; `vmstat.<prefix>*` sums
/// counters by prefix), `cpu.sy_max` (the highest `sy` sample), `tasks.workload_cpu` (mean
/// CPU % per workload task) or `tasks.kswapd_cpu.<node>` (CPU % of a node's kswapd thread,
/// the mean over its threads when it has several).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Column {
    pub header: &'static str,
    pub source: &'static str,
}

/// Builds the workload a resolved `[workload]` table describes.
pub type Build = fn(&toml::Table) -> Box<dyn Workload>;

/// A workload kind: its name in scenarios, what it is, how its keys are read, how it is
/// built, and its table (empty: the command line's generic table).
pub struct Registration {
    pub kind: &'static str,
    pub about: &'static str,
    /// Check a `[workload]` table (without `kind`) and fill in its defaults.
    pub resolve: fn(&toml::Table) -> Result<toml::Table, WorkloadError>,
    /// The workload a resolved table describes; `None` for a workload only live runs have
    /// so far (its keys are still checked here, so one scenario file serves both backends).
    pub build: Option<Build>,
    pub columns: &'static [Column],
    /// The VMAs and the pages in them that a resolved table's processes map, `(vmas,
    /// pages)`: the page-table state a run of it needs (`run::page_state_bytes_needed`).
    pub mappings: fn(&toml::Table) -> (u64, u64),
    /// Whether a live run can run it (python/reclaimlab/live/workloads.py has it).
    pub live: bool,
}

/// [`Registration::mappings`] of a workload that maps no anonymous memory.
pub fn no_mappings(_: &toml::Table) -> (u64, u64) {
    (0, 0)
}

/// Every workload a scenario may name, simulated or (for now) live only.
pub const REGISTRY: &[Registration] = &[
    dd::REGISTRATION,
    dd_write::REGISTRATION,
    fs_mark::REGISTRATION,
    usemem::REGISTRATION,
    mapped_file_stream::REGISTRATION,
    stutter::REGISTRATION,
    hugetlb::REGISTRATION,
    stress_highalloc::REGISTRATION,
];

/// The CPU task `i` of a workload runs on: tasks go round the nodes, and fill each node's
/// CPUs from its first (`cpn` CPUs per node, numbered node by node).
pub fn task_cpu(i: u32, nodes: u32, cpn: u32) -> u32 {
    let nid = i % nodes;
    nid * cpn + (i / nodes) % cpn
}

/// The registration of workload `kind`, or an error listing the kinds there are.
pub fn lookup(kind: &str) -> Result<&'static Registration, WorkloadError> {
    REGISTRY.iter().find(|r| r.kind == kind).ok_or_else(|| {
        let kinds: Vec<String> = REGISTRY.iter().map(|r| format!("\"{}\"", r.kind)).collect();
        WorkloadError::new(
            "kind",
            format!(
                "unknown workload `{kind}`; expected one of {}",
                kinds.join(", ")
            ),
        )
    })
}

/// Read a workload's keys into its parameter type `P` (unknown keys and wrong types name
/// the key) and write them back with every default filled in.
pub fn resolve_params<P: DeserializeOwned + Serialize>(
    table: &toml::Table,
) -> Result<(P, toml::Table), WorkloadError> {
    let p: P = serde_path_to_error::deserialize(toml::Value::Table(table.clone())).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let key = e.path().to_string();
            WorkloadError::new(if key == "." { "" } else { &key }, e.inner().message())
        },
    )?;
    let resolved = toml::Table::try_from(&p)
        .map_err(|e| WorkloadError::new("", format!("cannot write back: {e}")))?;
    Ok((p, resolved))
}

/// The workloads whose tasks may have a memory policy (`mempolicy` and `nodes` keys).
pub const MEMPOLICY_WORKLOADS: &[&str] = &["dd", "usemem"];

/// Check a workload's `mempolicy` and `nodes` (`set_mempolicy(2)`'s mode and node mask):
/// a policy other than `default` needs nodes, `default` takes none, each node at most once
/// and below 64. Whether the machine has them is the scenario's check
/// (`Scenario::validate`).
pub fn check_mempolicy(
    mode: crate::mm::mempolicy::MpolMode,
    nodes: &[u32],
) -> Result<(), WorkloadError> {
    use crate::mm::mempolicy::{MpolMode, MPOL_MAX_NODES};
    if mode == MpolMode::Default {
        if !nodes.is_empty() {
            return Err(WorkloadError::new(
                "nodes",
                "mempolicy \"default\" takes no nodes; set mempolicy = \"bind\", \"interleave\" or \"preferred\", or remove nodes",
            ));
        }
        return Ok(());
    }
    if nodes.is_empty() {
        return Err(WorkloadError::new(
            "nodes",
            "expected at least one node for a mempolicy other than \"default\"",
        ));
    }
    if mode == MpolMode::Preferred && nodes.len() > 1 {
        return Err(WorkloadError::new(
            "nodes",
            "mempolicy \"preferred\" takes one node",
        ));
    }
    for (i, &n) in nodes.iter().enumerate() {
        if n >= MPOL_MAX_NODES {
            return Err(WorkloadError::new(
                "nodes",
                "expected node numbers below 64",
            ));
        }
        if nodes[..i].contains(&n) {
            return Err(WorkloadError::new(
                "nodes",
                format!("node {n} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// `Err` naming `key` unless `v` is at least 1.
pub fn positive(key: &str, v: u64) -> Result<(), WorkloadError> {
    if v == 0 {
        return Err(WorkloadError::new(key, "expected at least 1"));
    }
    Ok(())
}

/// The columns of every registered workload, by kind (for the command line).
pub fn columns_by_kind() -> BTreeMap<&'static str, &'static [Column]> {
    REGISTRY.iter().map(|r| (r.kind, r.columns)).collect()
}
