//! reclaim-sim: Linux page reclaim as a discrete-event model.
//!
//! The simulated kernel keeps every page in flat arrays and runs the kernel's reclaim
//! functions (`balance_pgdat`, `shrink_node`, `shrink_lruvec`, `shrink_inactive_list`, …) as
//! processes: `async fn`s that read like the kernel's loops and yield after every
//! SWAP_CLUSTER_MAX batch, interleaved in simulated time with the workload's tasks, on
//! simulated CPUs, spinlocks and block devices. See docs/model.md.

pub mod engine;
pub mod hw;
pub mod kernel;
pub mod machine;
pub mod mm;
pub mod process;
pub mod psi;
pub mod run;
pub mod rundir;
pub mod scenario;
pub mod sched;
pub mod sysctl;
#[cfg(test)]
mod testing;
pub mod tracepoints;
pub mod variant;
pub mod workload;

pub use run::run;
pub use rundir::{
    check_run_dir_free, commit_run_dir, staging_dir, write_run_dir, RunOutput, RunResult,
};
pub use scenario::{Scenario, ScenarioError};

/// docs/model.md, whose example workload the doc tests compile.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/model.md")]
pub struct ModelDoc;
