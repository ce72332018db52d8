//! `reclaimlab._core` trace functions: analyse ftrace text (a file, plain/gzip/zstd, or `-`
//! for stdin) and render the report. The parse runs without the GIL, and ^C stops the
//! wait for it; a plain file is decoded by several threads (`jobs`, 0 = one per core).

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use reclaim_trace::analysis::{analyze_path, Analysis, Options};
use reclaim_trace::report::{render_json, render_text, Input, VmstatDelta};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// One input as Python describes it: column name, trace path, optional vmstat texts before
/// and after, optional user+sys CPU seconds of the workload.
type PyInput = (String, String, Option<(String, String)>, Option<f64>);

fn analyse(path: &str, opts: &Options, jobs: usize) -> PyResult<Analysis> {
    let shown = if path == "-" { "<stdin>" } else { path };
    analyze_path(path, opts.clone(), jobs).map_err(|e| PyOSError::new_err(format!("{shown}: {e}")))
}

/// mmtests' quantile (`x[int(L·p + 0.5)]` of the ascending samples); 0.0 for no samples.
#[pyfunction]
fn quantile(mut xs: Vec<f64>, p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    reclaim_trace::report::quantile(&xs, p)
}

/// mmtests' latency table rows (SummariseVariabletime: Min, quartiles, Max-P%, Max, Mean,
/// BestP%Mean) of the samples, as (label, value) pairs; zeros for no samples.
#[pyfunction]
fn latency_rows(mut xs: Vec<f64>) -> Vec<(String, f64)> {
    xs.sort_by(f64::total_cmp);
    let rows = reclaim_trace::report::latency_rows(&xs);
    let labels = reclaim_trace::report::LATENCY_ROWS.iter();
    labels.map(|l| l.to_string()).zip(rows).collect()
}

/// ValueError naming the input if most of its lines are malformed (not a vmscan trace, or
/// one damaged past use), with the counts and the first malformed line numbers.
fn check_mostly_parsed(name: &str, a: &Analysis) -> PyResult<()> {
    let p = &a.parse;
    if p.lines == 0 || p.malformed * 2 <= p.lines {
        return Ok(());
    }
    let first: Vec<String> = p
        .malformed_lines
        .iter()
        .take(5)
        .map(u64::to_string)
        .collect();
    Err(PyValueError::new_err(format!(
        "{name}: {} of {} lines are malformed (the first at lines {}); not a vmscan trace?",
        p.malformed,
        p.lines,
        first.join(", ")
    )))
}

/// The report of one or more traces side by side: text, or JSON text when `as_json`.
/// `jobs`: threads decoding each plain trace file (0: one per core; the report is the same
/// whatever the number). With `refuse_malformed`, ValueError if most lines of an input are
/// malformed (`check_mostly_parsed`).
#[pyfunction]
#[pyo3(signature = (inputs, ignore_pid=false, as_json=false, jobs=0, refuse_malformed=false))]
fn trace_report(
    py: Python<'_>,
    inputs: Vec<PyInput>,
    ignore_pid: bool,
    as_json: bool,
    jobs: usize,
    refuse_malformed: bool,
) -> PyResult<String> {
    let opts = Options {
        ignore_pid,
        ..Default::default()
    };
    let work = move || -> PyResult<String> {
        let analyses = inputs
            .iter()
            .map(|(_, path, _, _)| analyse(path, &opts, jobs))
            .collect::<PyResult<Vec<_>>>()?;
        if refuse_malformed {
            for ((name, _, _, _), a) in inputs.iter().zip(&analyses) {
                check_mostly_parsed(name, a)?;
            }
        }
        let cols: Vec<Input<'_>> = inputs
            .iter()
            .zip(&analyses)
            .map(|((name, _, vmstat, cpu), a)| Input {
                name: name.clone(),
                analysis: a,
                vmstat: vmstat
                    .as_ref()
                    .map(|(b, af)| VmstatDelta::from_texts(b, af)),
                user_sys_s: *cpu,
            })
            .collect();
        Ok(if as_json {
            serde_json::to_string_pretty(&render_json(&cols)).unwrap_or_default() + "\n"
        } else {
            render_text(&cols)
        })
    };
    py.detach(|| interruptible(work))
}

/// How often a long call looks for a pending signal (^C).
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Run `work` on a thread of its own while this one, every `POLL_INTERVAL`, runs Python's
/// pending signal handlers: ^C raises KeyboardInterrupt here within that time. The work is
/// then abandoned: its thread runs to its end unobserved, or until the process exits, which
/// is what follows a ^C at the command line.
fn interruptible(work: impl FnOnce() -> PyResult<String> + Send + 'static) -> PyResult<String> {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    loop {
        match result.recv_timeout(POLL_INTERVAL) {
            Ok(r) => return r,
            Err(RecvTimeoutError::Timeout) => Python::attach(|py| py.check_signals())?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the trace analysis failed (panicked)",
                ))
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_report, m)?)?;
    m.add_function(wrap_pyfunction!(quantile, m)?)?;
    m.add_function(wrap_pyfunction!(latency_rows, m)?)?;
    Ok(())
}
