//! fs_mark (seed 001) simulated: files are written, left in the page cache and written back
//! by the flushers, reclaim meets them once the cache fills memory; the per-loop Files/s and
//! the elapsed time are reported; runs repeat. They start from scenarios/sim/fs_mark.toml.

use std::ops::ControlFlow;

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::run::simulate;
use reclaim_sim::{RunOutput, Scenario};

const FS_MARK: &str = include_str!("../../../scenarios/sim/fs_mark.toml");

fn scenario(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::parse(FS_MARK, "scenarios/sim/fs_mark.toml", &sets).expect("scenario")
}

fn run(s: &Scenario) -> (Kernel, RunOutput) {
    simulate(s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

#[test]
fn fs_mark_fills_the_page_cache_and_reclaim_meets_its_files() {
    // 512 MiB, 3 loops of 40 files of 10 MiB: 1.2 GiB written, over twice memory.
    let s = scenario(&[
        "machine.memory_mb_per_node=512",
        "workload.files=40",
        "workload.loops=3",
        "run.duration_s=30",
    ]);
    let (_, out) = run(&s);
    let m = &out.result.metrics;
    assert_eq!(m["loops_done"], 3, "{m:?}");
    assert_eq!(m["completed"], true);
    assert_eq!(m["files"], 120);
    assert_eq!(m["bytes"], 120 * 10_485_760u64);
    let rates = m["files_per_sec"].as_array().unwrap();
    assert_eq!(rates.len(), 3);
    let mean = rates.iter().map(|r| r.as_f64().unwrap()).sum::<f64>() / 3.0;
    assert!((m["files_per_sec_mean"].as_f64().unwrap() - mean).abs() < 0.01);
    // 1.2 GiB at most at the disk's 150 MB/s once memory is full: Files/s at most about
    // 15 a second, and the run's elapsed time matches the loops' rates.
    let elapsed = m["elapsed_s"].as_f64().unwrap();
    assert!(elapsed > 0.0 && elapsed < 30.0, "{elapsed}");
    assert!(mean > 0.0, "{m:?}");
    let after = &out.after;
    assert!(after.stat("nr_dirtied") >= 120 * 2560);
    assert!(after.stat("nr_written") > 0);
    // Memory filled: reclaim ran and freed the files' clean pages.
    assert!(out.delta(VmEvent::PgstealKswapd) + out.delta(VmEvent::PgstealDirect) > 0);
}

#[test]
fn a_short_run_reports_the_loops_it_finished_and_runs_repeat() {
    let s = scenario(&[
        "workload.files=10",
        "workload.loops=100",
        "run.duration_s=2",
    ]);
    let (_, a) = run(&s);
    let (_, b) = run(&s);
    let m = &a.result.metrics;
    assert_eq!(m["completed"], false);
    let done = m["loops_done"].as_u64().unwrap();
    assert!(done > 0 && done < 100, "{m:?}");
    assert_eq!(m["files_per_sec"].as_array().unwrap().len() as u64, done);
    assert_eq!(a.result_json, b.result_json);
    assert_eq!(a.vmstat_after, b.vmstat_after);
}

#[test]
fn threads_write_their_own_files() {
    let s = scenario(&[
        "workload.threads=4",
        "workload.files=5",
        "workload.loops=2",
        "run.duration_s=10",
    ]);
    let (_, out) = run(&s);
    let m = &out.result.metrics;
    assert_eq!(m["threads"], 4);
    assert_eq!(m["files"], 40, "{m:?}");
    assert_eq!(m["loops_done"], 2);
}

#[test]
fn bad_fs_mark_keys_name_the_file_and_key() {
    let sets = ["workload.files=0".to_string()];
    let Err(e) = Scenario::parse(FS_MARK, "scenarios/sim/fs_mark.toml", &sets) else {
        panic!("files = 0 must be refused");
    };
    let e = e.to_string();
    assert!(e.contains("scenarios/sim/fs_mark.toml"), "{e}");
    assert!(e.contains("workload.files"), "{e}");
    assert!(e.contains("expected at least 1"), "{e}");
}

/// scenarios/seed001/: every file parses, every sweep point checks, and each runs a moment
/// (its first point).
#[test]
fn the_seed001_scenarios_parse_and_run() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/seed001");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 12, "{names:?}");
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.display().to_string();
        let s = Scenario::parse(&text, &file, &["run.duration_s=0.5".to_string()])
            .unwrap_or_else(|e| panic!("{e}"));
        let points = s.sweep_points(&file).unwrap_or_else(|e| panic!("{e}"));
        let raid = file.contains("raid");
        assert_eq!(points.len(), if raid { 3 } else { 1 }, "{file}");
        let (_, out) = run(&points[0].1);
        assert!(out.after.stat("nr_dirtied") > 0, "{file}");
        let variant = &s.variant;
        assert_eq!(variant.direct_reclaim_writes_fs, file.contains("baseline"));
    }
}
