//! `reclaimlab._core` trace functions: analyse ftrace text (a file, plain/gzip/zstd, or `-`
//! for stdin) and render the report. The parse runs without the GIL.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use reclaim_trace::analysis::{analyze, Analysis, Options};
use reclaim_trace::reader::open_input;
use reclaim_trace::report::{render_json, render_text, Input, VmstatDelta};

/// One input as Python describes it: column name, trace path, optional vmstat texts before
/// and after, optional user+sys CPU seconds of the workload.
type PyInput = (String, String, Option<(String, String)>, Option<f64>);

fn analyse(path: &str, opts: &Options) -> PyResult<Analysis> {
    let shown = if path == "-" { "<stdin>" } else { path };
    let mut r = open_input(path).map_err(|e| PyOSError::new_err(format!("{shown}: {e}")))?;
    analyze(&mut r, opts.clone()).map_err(|e| PyOSError::new_err(format!("{shown}: {e}")))
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

/// The report of one or more traces side by side: text, or JSON text when `as_json`.
#[pyfunction]
#[pyo3(signature = (inputs, ignore_pid=false, as_json=false))]
fn trace_report(
    py: Python<'_>,
    inputs: Vec<PyInput>,
    ignore_pid: bool,
    as_json: bool,
) -> PyResult<String> {
    let opts = Options {
        ignore_pid,
        ..Default::default()
    };
    py.detach(|| {
        let analyses = inputs
            .iter()
            .map(|(_, path, _, _)| analyse(path, &opts))
            .collect::<PyResult<Vec<_>>>()?;
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
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_report, m)?)?;
    m.add_function(wrap_pyfunction!(quantile, m)?)?;
    Ok(())
}
