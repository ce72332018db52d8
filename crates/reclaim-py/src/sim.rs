//! `reclaimlab._core` simulator functions: load and resolve scenarios, expand sweeps, run a
//! scenario into a run directory. Scenario errors become `ValueError`s whose text names the
//! file, the key and what was expected.

use pyo3::exceptions::{PyFileExistsError, PyOSError, PyValueError};
use pyo3::prelude::*;
use reclaim_sim::scenario::{host_profile_path, Backend, HostProfile};
use reclaim_sim::{workload, Scenario};
use std::path::PathBuf;

fn backend_of(name: &str) -> PyResult<Backend> {
    Backend::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!("backend {name:?}: expected \"sim\" or \"live\""))
    })
}

fn value_error(e: reclaim_sim::ScenarioError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The resolved scenario (every default filled in, overrides applied) as TOML text, checked
/// for `backend` ("sim" or "live").
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![], backend="sim"))]
fn resolve_scenario(path: &str, overrides: Vec<String>, backend: &str) -> PyResult<String> {
    let s = Scenario::load_for(std::path::Path::new(path), &overrides, backend_of(backend)?)
        .map_err(value_error)?;
    Ok(s.to_toml())
}

/// The sweep points of a scenario: `[(label, resolved_toml, resolved_json)]`, every point
/// checked for `backend` ("sim" or "live"); one unlabelled point when the scenario has no
/// sweep.
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![], backend="sim"))]
fn sweep_points(
    path: &str,
    overrides: Vec<String>,
    backend: &str,
) -> PyResult<Vec<(String, String, String)>> {
    let backend = backend_of(backend)?;
    let s = Scenario::load(std::path::Path::new(path), &overrides).map_err(value_error)?;
    let pts = s.sweep_points(path).map_err(value_error)?;
    pts.into_iter()
        .map(|(label, p)| {
            p.check_backend(backend, path).map_err(value_error)?;
            let json =
                serde_json::to_string(&p).map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok((label, p.to_toml(), json))
        })
        .collect()
}

/// A table (JSON text) as TOML text, for the run directory's scenario.toml.
#[pyfunction]
fn dumps_toml(json: &str) -> PyResult<String> {
    let table: toml::Table = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("not a table: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Where the host profile is read from (`[machine] from = "host"`).
#[pyfunction]
fn host_profile_file() -> PathBuf {
    host_profile_path()
}

/// A host profile as TOML, from its fields as JSON text (what `reclaimlab host probe`
/// measured); ValueError naming the field if one is missing or of the wrong type.
#[pyfunction]
fn host_profile_toml(json: &str) -> PyResult<String> {
    let profile: HostProfile = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("host profile: {e}")))?;
    Ok(profile.to_toml())
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
    let s = Scenario::parse(scenario_toml, "<scenario>", &[]).map_err(value_error)?;
    s.check_backend(Backend::Simulator, "<scenario>")
        .map_err(value_error)?;
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

/// The bytes of per-page state a run of a resolved scenario (TOML text) comes to at most
/// (`run::page_state_bytes_needed`: page descriptors, side arrays, page tables, swap map),
/// computed without building its machine.
#[pyfunction]
fn page_state_bytes_needed(scenario_toml: &str) -> PyResult<u64> {
    let s = Scenario::parse(scenario_toml, "<scenario>", &[]).map_err(value_error)?;
    Ok(reclaim_sim::run::page_state_bytes_needed(&s))
}

/// Raise FileExistsError (naming the directory and `--force`) if `out_dir` already holds a
/// run: the check every writer of run directories makes before writing anything.
#[pyfunction]
fn check_run_dir_free(out_dir: PathBuf) -> PyResult<()> {
    reclaim_sim::check_run_dir_free(&out_dir).map_err(|e| PyFileExistsError::new_err(e.to_string()))
}

/// The workloads a scenario may name: `[(kind, what it is, simulated)]`.
#[pyfunction]
fn workload_kinds() -> Vec<(&'static str, &'static str, bool)> {
    workload::REGISTRY
        .iter()
        .map(|r| (r.kind, r.about, r.build.is_some()))
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
    m.add_function(wrap_pyfunction!(workload_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(workload_columns, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(page_state_bytes_needed, m)?)?;
    m.add_function(wrap_pyfunction!(host_profile_file, m)?)?;
    m.add_function(wrap_pyfunction!(dumps_toml, m)?)?;
    m.add_function(wrap_pyfunction!(host_profile_toml, m)?)?;
    Ok(())
}
