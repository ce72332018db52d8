//! The scenario's machine sections as Python needs them (`_core.machine`): the `[sysctl]`
//! keys a live run writes, from their one definition (`reclaim_sim::sysctl::SYSCTL_KEYS`).

use pyo3::prelude::*;

use reclaim_sim::sysctl::SYSCTL_KEYS;

/// Each `[sysctl]` key a live run writes and the file it writes it to, in the order
/// `reclaimlab live check` lists them.
#[pyfunction]
fn sysctl_files() -> Vec<(&'static str, &'static str)> {
    SYSCTL_KEYS
        .iter()
        .filter_map(|k| Some((k.key, k.file?)))
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let machine = PyModule::new(m.py(), "machine")?;
    machine.add_function(wrap_pyfunction!(sysctl_files, &machine)?)?;
    m.add_submodule(&machine)?;
    Ok(())
}
