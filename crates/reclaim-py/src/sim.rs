//! `reclaimlab._core` simulator functions: load and resolve scenarios, expand sweeps, run a
//! scenario into a run directory. Scenario errors become `ValueError`s whose text names the
//! file, the key and what was expected.

use pyo3::exceptions::{PyFileExistsError, PyOSError, PyValueError};
use pyo3::prelude::*;
use reclaim_sim::{workload, Scenario};
use std::path::PathBuf;

fn load(path: &str, overrides: Vec<String>) -> PyResult<Scenario> {
    Scenario::load(std::path::Path::new(path), &overrides)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The resolved scenario (every default filled in, overrides applied) as TOML text.
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![]))]
fn resolve_scenario(path: &str, overrides: Vec<String>) -> PyResult<String> {
    Ok(load(path, overrides)?.to_toml())
}

/// The sweep points of a scenario: `[(label, resolved_toml)]`; one unlabelled point when the
/// scenario has no sweep.
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![]))]
fn sweep_points(path: &str, overrides: Vec<String>) -> PyResult<Vec<(String, String)>> {
    let s = load(path, overrides)?;
    let pts = s
        .sweep_points(path)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(pts.into_iter().map(|(l, s)| (l, s.to_toml())).collect())
}

/// Run a resolved scenario (TOML text) and write its run directory. `progress(fraction)` is
/// called now and then. Returns result.json's text.
#[pyfunction]
#[pyo3(signature = (scenario_toml, out_dir, overwrite=false, progress=None))]
fn run_scenario(
    scenario_toml: &str,
    out_dir: PathBuf,
    overwrite: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let s = Scenario::parse(scenario_toml, "<scenario>", &[])
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if !overwrite {
        check_run_dir_free(out_dir.clone())?;
    }
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", out_dir.display())))?;
    let trace: Option<Box<dyn std::io::Write>> = if s.run.trace {
        let f = std::fs::File::create(out_dir.join("trace.txt"))
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)))
    } else {
        None
    };
    let mut cb_error: Option<PyErr> = None;
    let out = Python::attach(|py| {
        let mut report = |f: f64| {
            if let (Some(cb), None) = (&progress, &cb_error) {
                if let Err(e) = cb.call1(py, (f,)) {
                    cb_error = Some(e);
                }
            }
        };
        reclaim_sim::run(&s, trace, &mut report)
    });
    if let Some(e) = cb_error {
        return Err(e);
    }
    reclaim_sim::write_run_dir(&out, &out_dir, true)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", out_dir.display())))?;
    if let Some(e) = &out.trace_error {
        return Err(PyOSError::new_err(format!(
            "{}: {e}",
            out_dir.join("trace.txt").display()
        )));
    }
    Ok(out.result_json)
}

/// Raise FileExistsError (naming the directory and `--force`) if `out_dir` already holds a
/// run: the check every writer of run directories makes before writing anything.
#[pyfunction]
fn check_run_dir_free(out_dir: PathBuf) -> PyResult<()> {
    reclaim_sim::check_run_dir_free(&out_dir).map_err(|e| PyFileExistsError::new_err(e.to_string()))
}

/// A `--set key=value` override as `(dotted key, value as JSON text)`; ValueError if
/// malformed. Scenarios of both backends parse overrides with it.
#[pyfunction]
fn parse_override(assignment: &str) -> PyResult<(String, String)> {
    let (key, value) = reclaim_sim::scenario::parse_override(assignment)
        .map_err(|e| PyValueError::new_err(format!("--set {assignment:?}: {e}")))?;
    let json = serde_json::to_string(&value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((key, json))
}

/// The simulated workloads: `[(kind, what it is)]`.
#[pyfunction]
fn workload_kinds() -> Vec<(&'static str, &'static str)> {
    workload::REGISTRY
        .iter()
        .map(|r| (r.kind, r.about))
        .collect()
}

/// The table columns of workload `kind`: `[(header, source)]` (sources as
/// `workload::Column` documents them); ValueError for a kind the simulator does not know.
#[pyfunction]
fn workload_columns(kind: &str) -> PyResult<Vec<(&'static str, &'static str)>> {
    let r = workload::lookup(kind).map_err(|e| PyValueError::new_err(e.message))?;
    Ok(r.columns.iter().map(|c| (c.header, c.source)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_run_dir_free, m)?)?;
    m.add_function(wrap_pyfunction!(parse_override, m)?)?;
    m.add_function(wrap_pyfunction!(workload_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(workload_columns, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    Ok(())
}
