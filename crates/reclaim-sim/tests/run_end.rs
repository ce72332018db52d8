//! When a run ends: a workload that ends by itself (dd writers with `jobs`, usemem, stutter)
//! ends the window when it has finished, as a live run's does, `run.duration_s` being the
//! limit (`timed_out` when it was reached first); one that runs until stopped (dd readers,
//! `jobs = 0`) lasts `duration_s`; a background that ends by itself is waited for up to
//! `BACKGROUND_GRACE` after the foreground.

use std::ops::ControlFlow;

use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::workload::BACKGROUND_GRACE;
use reclaim_sim::{RunOutput, Scenario};

const DD_WRITE: &str = include_str!("../../../scenarios/sim/dd-write.toml");

/// One node of 256 MiB and a 4 KiB-page usemem of 16 MiB for `runtime_s`, with `extra`
/// TOML after `[workload]`'s keys (a background, say).
fn usemem(runtime_s: f64, duration_s: f64, extra: &str) -> String {
    format!(
        r#"
name = "run-end"
seed = 1
[machine]
nodes = 1
cpus_per_node = 4
memory_mb_per_node = 256
dma32_mb = 64
[workload]
kind = "usemem"
tasks = 1
size_mb = 16
repeats = 0
runtime_s = {runtime_s:?}
{extra}
[run]
duration_s = {duration_s:?}
"#
    )
}

fn run(text: &str, sets: &[String]) -> RunOutput {
    let s = Scenario::parse(text, "run-end.toml", sets).expect("scenario");
    simulate(&s, None, &mut |_| ControlFlow::Continue(()))
        .expect("a run to its end")
        .1
}

fn dd_write(sets: &[&str]) -> RunOutput {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run(DD_WRITE, &sets)
}

fn json(out: &RunOutput) -> serde_json::Value {
    serde_json::to_value(&out.result).expect("result.json")
}

#[test]
fn dd_writers_with_jobs_end_the_run_when_their_files_are_written() {
    // 4 writers of 16 MiB each, one file each: 16 384 pages written, then the run ends,
    // long before its 20 s.
    let out = dd_write(&["workload.file_mb=16", "workload.jobs=1"]);
    let m = &out.result.metrics;
    assert_eq!(m["jobs"], 4, "{m:?}");
    assert_eq!(m["bytes"], (4 * 16) << 20);
    assert!(
        out.result.elapsed_s < 5.0,
        "elapsed {}",
        out.result.elapsed_s
    );
    assert!(json(&out).get("timed_out").is_none());
    // The window ends when the last writer's last write() returned: the mean job (rounded
    // to the ms) is within it.
    let mean = m["job_elapsed_mean_s"].as_f64().unwrap();
    assert!(
        mean > 0.0 && mean <= out.result.elapsed_s + 0.0005,
        "{mean}"
    );
    // Two files each: twice the bytes and jobs, a longer run.
    let two = dd_write(&["workload.file_mb=16", "workload.jobs=2"]);
    assert_eq!(two.result.metrics["jobs"], 8);
    assert_eq!(two.result.metrics["bytes"], (8 * 16) << 20);
    assert!(two.result.elapsed_s > out.result.elapsed_s);
}

#[test]
fn a_run_that_stops_a_workload_before_its_end_says_it_timed_out() {
    // 4 GiB each in 0.2 s cannot be written: the run stops at its duration.
    let out = dd_write(&[
        "workload.file_mb=4096",
        "workload.jobs=1",
        "run.duration_s=0.2",
    ]);
    assert_eq!(out.result.elapsed_s, 0.2);
    assert_eq!(json(&out)["timed_out"], true);
    // jobs = 0 writes until stopped: the run's duration is its window, not a time-out.
    let endless = dd_write(&[
        "workload.file_mb=16",
        "workload.jobs=0",
        "run.duration_s=0.5",
    ]);
    assert_eq!(endless.result.elapsed_s, 0.5);
    assert!(json(&endless).get("timed_out").is_none());
    assert!(endless.result.metrics["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn the_window_holds_no_idle_time_after_the_workload() {
    // usemem for 0.3 s in a run of 5 s: the window ends with it, so its throughput is over
    // its own time, and nothing is scanned or allocated after it.
    let out = run(&usemem(0.3, 5.0, ""), &[]);
    let e = out.result.elapsed_s;
    assert!((0.3..0.31).contains(&e), "elapsed {e}");
    assert!(json(&out).get("timed_out").is_none());
    let tput = out.result.metrics["throughput_kB_s"].as_f64().unwrap();
    let bytes = out.result.metrics["bytes"].as_f64().unwrap();
    assert!(
        (tput - bytes / 1024.0 / e).abs() <= tput * 1e-3,
        "{tput} vs {bytes}/{e}"
    );
    assert!(out.after.event(VmEvent::PgallocNormal) + out.after.event(VmEvent::PgallocDma32) > 0);
}

#[test]
fn a_background_that_ends_by_itself_is_waited_for_up_to_the_grace() {
    let bg = |runtime_s: f64| {
        format!(
            "[workload.background]\nkind = \"usemem\"\ntasks = 1\nsize_mb = 8\nrepeats = 0\nruntime_s = {runtime_s:?}"
        )
    };
    // The background ends 0.4 s after the foreground: the run waits for it.
    let out = run(&usemem(0.2, 30.0, &bg(0.6)), &[]);
    assert!(
        (0.6..0.61).contains(&out.result.elapsed_s),
        "{}",
        out.result.elapsed_s
    );
    // One that would go on for 60 s is stopped BACKGROUND_GRACE after the foreground.
    let out = run(&usemem(0.2, 30.0, &bg(60.0)), &[]);
    let grace = BACKGROUND_GRACE as f64 / 1e9;
    let e = out.result.elapsed_s;
    assert!((0.2 + grace..0.21 + grace).contains(&e), "elapsed {e}");
    assert!(json(&out).get("timed_out").is_none());
}
