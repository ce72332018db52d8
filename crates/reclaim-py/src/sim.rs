//! `reclaimlab._core` simulator functions: load and resolve scenarios, expand sweeps, run a
//! scenario into a run directory. Scenario errors become `ValueError`s whose text names the
//! file, the key and what was expected.
//!
//! A scenario is parsed and checked once, by `sweep_points`: each point travels as a
//! `ResolvedScenario` holding the checked `Scenario`, which `run_scenario` and
//! `page_state_bytes_needed` take as it is.

use pyo3::exceptions::{PyFileExistsError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use reclaim_sim::machine::ZonePageblocks;
use reclaim_sim::run::Interrupted;
use reclaim_sim::scenario::sweep_override as sweep_axis_override;
use reclaim_sim::scenario::{host_profile_path, parse_override, Backend, HostProfile};
use reclaim_sim::{workload, Scenario};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

fn backend_of(name: &str) -> PyResult<Backend> {
    Backend::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!("backend {name:?}: expected \"sim\" or \"live\""))
    })
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Simulator => "sim",
        Backend::Live => "live",
    }
}

fn value_error(e: reclaim_sim::ScenarioError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// One point of a scenario, resolved (every default filled in, overrides and the sweep's
/// value applied) and checked for a backend: its `label` (empty for a scenario without a
/// sweep), its canonical `toml` (the run directory's scenario.toml) and the `Scenario`
/// itself, which runs without being parsed or checked again.
///
/// It pickles (for the worker processes) as its label, canonical TOML and backend; the
/// unpickling constructor `_from_checked` trusts that text — it deserialises the `Scenario`
/// from it without the scenario's checks, which the text passed when it was resolved.
#[pyclass(frozen, module = "reclaimlab._core")]
pub struct ResolvedScenario {
    label: String,
    toml: String,
    backend: Backend,
    scenario: Scenario,
}

impl ResolvedScenario {
    fn new(label: String, scenario: Scenario, backend: Backend) -> Self {
        ResolvedScenario {
            label,
            toml: scenario.to_toml(),
            backend,
            scenario,
        }
    }
}

/// What a `ResolvedScenario` pickles as: `_from_checked`'s label, canonical TOML and backend.
type Pickled = (String, String, &'static str);

#[pymethods]
impl ResolvedScenario {
    /// The sweep point's label, e.g. `workload.tasks=16`; empty without a sweep.
    #[getter]
    fn label(&self) -> &str {
        &self.label
    }

    /// The resolved scenario as TOML, every default filled in.
    #[getter]
    fn toml(&self) -> &str {
        &self.toml
    }

    /// The resolved scenario as JSON text (what a live run reads its settings from).
    #[getter]
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&self.scenario).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The scenario's `name`.
    #[getter]
    fn name(&self) -> &str {
        &self.scenario.name
    }

    /// The backend it was checked for: "sim" or "live".
    #[getter]
    fn backend(&self) -> &'static str {
        backend_name(self.backend)
    }

    /// The same point under another label (a seed's tables name points by test and count).
    fn with_label(&self, label: String) -> Self {
        ResolvedScenario {
            label,
            toml: self.toml.clone(),
            backend: self.backend,
            scenario: self.scenario.clone(),
        }
    }

    /// A point whose canonical TOML was checked for `backend` when it was resolved
    /// (pickle's constructor): deserialised as it is, without the scenario's checks.
    #[classmethod]
    fn _from_checked(
        _cls: &Bound<'_, PyType>,
        label: String,
        toml: String,
        backend: &str,
    ) -> PyResult<Self> {
        let scenario: Scenario = toml::from_str(&toml)
            .map_err(|e| PyValueError::new_err(format!("not a resolved scenario: {e}")))?;
        Ok(ResolvedScenario {
            label,
            toml,
            backend: backend_of(backend)?,
            scenario,
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Pickled)> {
        let me = slf.get();
        Ok((
            slf.get_type().getattr("_from_checked")?,
            (me.label.clone(), me.toml.clone(), backend_name(me.backend)),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "ResolvedScenario(label={:?}, name={:?}, backend={:?})",
            self.label,
            self.scenario.name,
            backend_name(self.backend)
        )
    }
}

/// The sweep points of a scenario, each a `ResolvedScenario` checked for `backend` ("sim"
/// or "live"); one unlabelled point when the scenario has no sweep.
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![], backend="sim"))]
fn sweep_points(
    path: &str,
    overrides: Vec<String>,
    backend: &str,
) -> PyResult<Vec<ResolvedScenario>> {
    let backend = backend_of(backend)?;
    let s = Scenario::load(std::path::Path::new(path), &overrides).map_err(value_error)?;
    let pts = s.sweep_points(path).map_err(value_error)?;
    pts.into_iter()
        .map(|(label, p)| {
            p.check_backend(backend, path).map_err(value_error)?;
            Ok(ResolvedScenario::new(label, p, backend))
        })
        .collect()
}

/// Whether the scenario file, with its `--set` overrides, describes its machine as this
/// host (`[machine] from = "host"`), read before it is resolved, since resolving it needs
/// the host profile. False for a file that cannot be read: resolving it says why.
#[pyfunction]
#[pyo3(signature = (path, overrides=vec![]))]
fn needs_host_profile(path: &str, overrides: Vec<String>) -> bool {
    let is_host = |v: &toml::Value| v.as_str() == Some("host");
    // The last `--set` of the key wins, as when the scenario is resolved.
    if let Some(v) = overrides.iter().rev().find_map(|o| {
        parse_override(o)
            .ok()
            .filter(|(k, _)| k == &["machine", "from"])
            .map(|(_, v)| v)
    }) {
        return is_host(&v);
    }
    let Ok(table) = std::fs::read_to_string(path).map(|t| t.parse::<toml::Table>()) else {
        return false;
    };
    table
        .ok()
        .and_then(|t| t.get("machine")?.get("from").map(is_host))
        .unwrap_or(false)
}

/// `--sweep key=v1,v2,…` as the `--set` override that adds (or replaces) that axis of the
/// scenario's `[sweep]`; ValueError saying what is expected.
#[pyfunction]
fn sweep_override(axis: &str) -> PyResult<String> {
    sweep_axis_override(axis).map_err(|m| PyValueError::new_err(format!("--sweep {axis}: {m}")))
}

/// A TOML file's top-level `name` and `description` (`reclaimlab scenarios`' listing of
/// the shipped files), None for a file that has neither or is not TOML.
#[pyfunction]
fn scenario_heading(path: PathBuf) -> Option<(String, String)> {
    let table: toml::Table = std::fs::read_to_string(path).ok()?.parse().ok()?;
    let field = |k: &str| table.get(k).and_then(|v| v.as_str()).map(str::to_string);
    match (field("name"), field("description")) {
        (None, None) => None,
        (name, description) => Some((name.unwrap_or_default(), description.unwrap_or_default())),
    }
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
/// measured), its device fitted to its `reads` (`HostProfile::fitted`); ValueError
/// naming the field if one is missing, of the wrong type or out of range.
#[pyfunction]
fn host_profile_toml(json: &str) -> PyResult<String> {
    let profile: HostProfile = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("host profile: {e}")))?;
    let profile = profile
        .fitted()
        .map_err(|e| PyValueError::new_err(format!("host profile: {e}")))?;
    Ok(profile.to_toml())
}

/// The host profile as TOML with its `pageblocks` replaced by those in `json` (what
/// `reclaimlab host pageblocks` read from /proc/pagetypeinfo), the rest as it was; OSError
/// if there is no profile yet, ValueError naming the key if one is out of range.
#[pyfunction]
fn host_profile_with_pageblocks(json: &str) -> PyResult<String> {
    let mut profile = HostProfile::load().map_err(PyOSError::new_err)?;
    profile.pageblocks = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("host profile: pageblocks: {e}")))?;
    profile
        .validate()
        .map_err(|e| PyValueError::new_err(format!("host profile: {}: {}", e.key, e.message)))?;
    Ok(profile.to_toml())
}

/// `machine.pageblocks=…`, a `--set` override that gives a scenario the pageblocks in `json`
/// (as `reclaimlab host pageblocks` reads them, or a live run's `pageblocks.json`), the value
/// written as TOML; ValueError if `json` is not a list of them. Resolving the scenario checks
/// them against its machine.
#[pyfunction]
fn pageblocks_override(json: &str) -> PyResult<String> {
    let blocks: Vec<ZonePageblocks> = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("pageblocks: {e}")))?;
    let value = toml::Value::try_from(&blocks)
        .map_err(|e| PyValueError::new_err(format!("pageblocks: {e}")))?;
    Ok(format!("machine.pageblocks={value}"))
}

/// Run a resolved scenario (a `ResolvedScenario` checked for the simulator) and write its
/// run directory, complete or not at all:
/// its files go into a hidden `staging_dir` renamed into place at the end (with `overwrite`,
/// replacing what `out_dir` held whole). `progress(fraction)` is called now and then.
/// Returns result.json's text.
///
/// The simulation runs without the GIL; every `POLL_INTERVAL` or so it takes the GIL back
/// to run pending signal handlers and `progress`. If either raises (KeyboardInterrupt on
/// ^C) the run stops there, its staging directory is removed, and the exception is raised.
#[pyfunction]
#[pyo3(signature = (scenario, out_dir, overwrite=false, progress=None))]
fn run_scenario(
    py: Python<'_>,
    scenario: Py<ResolvedScenario>,
    out_dir: PathBuf,
    overwrite: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let point = scenario.get();
    if point.backend != Backend::Simulator {
        return Err(PyValueError::new_err(format!(
            "{}: resolved for a live run, not for the simulator",
            if point.label.is_empty() {
                "the scenario"
            } else {
                &point.label
            }
        )));
    }
    let s = &point.scenario;
    check_run_dir_free(out_dir.clone(), overwrite)?;
    let os_error =
        |path: &Path, e: std::io::Error| PyOSError::new_err(format!("{}: {e}", path.display()));
    let staging = Staging(Some(
        reclaim_sim::staging_dir(&out_dir).map_err(|e| os_error(&out_dir, e))?,
    ));
    let dir = staging.path();
    let trace = if s.run.trace {
        Some(std::fs::File::create(dir.join("trace.txt")).map_err(|e| os_error(dir, e))?)
    } else {
        None
    };
    let mut stopped: Option<PyErr> = None;
    let out = py.detach(|| {
        let trace = trace.map(|f| {
            Box::new(std::io::BufWriter::with_capacity(1 << 20, f)) as Box<dyn std::io::Write>
        });
        let mut poll = |done: f64| {
            Python::attach(|py| {
                py.check_signals()?;
                match &progress {
                    Some(cb) => cb.call1(py, (done,)).map(drop),
                    None => Ok(()),
                }
            })
            .map_or_else(
                |e| {
                    stopped = Some(e);
                    ControlFlow::Break(())
                },
                ControlFlow::Continue,
            )
        };
        panic_if_asked(&point.label);
        reclaim_sim::run::simulate(s, trace, &mut poll).map(|(_, out)| out)
    });
    let out = match (out, stopped) {
        (Ok(out), None) => out,
        (_, Some(e)) => return Err(e),
        (Err(Interrupted), None) => unreachable!("only `poll` stops a run, saying why"),
    };
    reclaim_sim::write_run_dir(&out, dir).map_err(|e| os_error(dir, e))?;
    if let Some(e) = &out.trace_error {
        return Err(PyOSError::new_err(format!(
            "{}: {e}",
            out_dir.join("trace.txt").display()
        )));
    }
    staging.commit(&out_dir, overwrite)?;
    Ok(out.result_json)
}

/// A test hook, for the tests of how a sweep reports a point whose simulation panics: the
/// point labelled as this environment variable says panics where it would start simulating.
/// No real input panics on purpose, so the tests ask for one this way.
const TEST_PANIC_ENV: &str = "RECLAIMLAB_TEST_PANIC_POINT";

fn panic_if_asked(label: &str) {
    if std::env::var_os(TEST_PANIC_ENV).is_some_and(|l| l == label) {
        panic!("{TEST_PANIC_ENV} asked point {label:?} to panic (test hook)");
    }
}

/// The bytes of per-page state a run of a resolved scenario comes to at most
/// (`run::page_state_bytes_needed`: page descriptors, side arrays, page tables, swap map),
/// computed without building its machine.
#[pyfunction]
fn page_state_bytes_needed(scenario: &Bound<'_, ResolvedScenario>) -> u64 {
    reclaim_sim::run::page_state_bytes_needed(&scenario.get().scenario)
}

/// A staging directory, removed when dropped unless committed: a run stopped or failed
/// leaves nothing behind.
struct Staging(Option<PathBuf>);

impl Staging {
    fn path(&self) -> &Path {
        self.0.as_deref().expect("not yet committed")
    }

    fn commit(mut self, dir: &Path, overwrite: bool) -> PyResult<()> {
        let staging = self.0.take().expect("committed once");
        commit_run_dir(staging.clone(), dir.to_path_buf(), overwrite).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&staging);
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Raise FileExistsError (naming the directory, and `--force` where it would help) if
/// `out_dir` holds a run or a sweep and not `overwrite`, or holds anything else: the check
/// every writer of run directories makes before writing anything.
#[pyfunction]
#[pyo3(signature = (out_dir, overwrite=false))]
fn check_run_dir_free(out_dir: PathBuf, overwrite: bool) -> PyResult<()> {
    reclaim_sim::check_run_dir_free(&out_dir, overwrite)
        .map_err(|e| PyFileExistsError::new_err(e.to_string()))
}

/// Make the hidden directory a run directory (or a sweep) `out_dir` is written into until it
/// is complete (`.<name>.partial-<pid>`, beside it) and return its path.
#[pyfunction]
fn staging_dir(out_dir: PathBuf) -> PyResult<PathBuf> {
    reclaim_sim::staging_dir(&out_dir)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", out_dir.display())))
}

/// Rename a complete `staging` directory to `out_dir`; with `overwrite` what `out_dir` held
/// is replaced whole (moved aside, the new one renamed in, the old one removed).
/// FileExistsError as `check_run_dir_free`, OSError naming the directory otherwise.
#[pyfunction]
#[pyo3(signature = (staging, out_dir, overwrite=false))]
fn commit_run_dir(staging: PathBuf, out_dir: PathBuf, overwrite: bool) -> PyResult<()> {
    reclaim_sim::commit_run_dir(&staging, &out_dir, overwrite).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            PyFileExistsError::new_err(e.to_string())
        } else {
            PyOSError::new_err(format!("{}: {e}", out_dir.display()))
        }
    })
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
    m.add_function(wrap_pyfunction!(staging_dir, m)?)?;
    m.add_function(wrap_pyfunction!(commit_run_dir, m)?)?;
    m.add_function(wrap_pyfunction!(workload_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(workload_columns, m)?)?;
    m.add_class::<ResolvedScenario>()?;
    // pageblock_order (x86-64): where `reclaimlab compare` splits the free memory a window
    // starts with into blocks compaction must make and blocks that are there.
    m.add("PAGEBLOCK_ORDER", reclaim_sim::mm::zone::PAGEBLOCK_ORDER)?;
    // HPAGE_PMD_ORDER: the unit of /proc/vmstat's nr_file_hugepages.
    m.add(
        "HPAGE_PMD_ORDER",
        reclaim_sim::mm::huge_memory::HPAGE_PMD_ORDER,
    )?;
    // What a panic in the core is raised as: a BaseException, so a sweep catches it by name
    // to report the point it happened in and go on with the others.
    m.add(
        "PanicException",
        m.py().get_type::<pyo3::panic::PanicException>(),
    )?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(needs_host_profile, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_override, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_heading, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(page_state_bytes_needed, m)?)?;
    m.add_function(wrap_pyfunction!(host_profile_file, m)?)?;
    m.add_function(wrap_pyfunction!(dumps_toml, m)?)?;
    m.add_function(wrap_pyfunction!(host_profile_toml, m)?)?;
    m.add_function(wrap_pyfunction!(host_profile_with_pageblocks, m)?)?;
    m.add_function(wrap_pyfunction!(pageblocks_override, m)?)?;
    Ok(())
}
