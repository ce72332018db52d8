//! PyO3 bindings of reclaimlab's Rust core, exposed to Python as `reclaimlab._core`.
//! Each submodule mirrors one core crate; values cross the boundary as JSON text so the
//! Python side stays a thin shell over the Rust data model, but for a resolved scenario,
//! which stays a Rust object (`sim::ResolvedScenario`) from its one check to its run.

use pyo3::prelude::*;

mod live;
mod machine;
mod probe;
mod sim;
mod trace;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    sim::register(m)?;
    live::register(m)?;
    machine::register(m)?;
    probe::register(m)?;
    trace::register(m)?;
    Ok(())
}
