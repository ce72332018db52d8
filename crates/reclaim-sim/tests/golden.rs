//! A small run directory recorded in full (insta snapshots under tests/snapshots/): any
//! change to the model's output shows in review as a changed snapshot, and determinism is
//! checked on a scenario whose devices draw random transfer times.

use reclaim_sim::Scenario;

/// Two nodes of 256 MiB, eight buffered readers on two jittered drives, 0.3 s measured
/// from kswapd's first wake-up: kswapd and direct reclaim both run.
const SCENARIO: &str = r#"
name = "golden"
seed = 7
[machine]
nodes = 2
cpus_per_node = 4
memory_mb_per_node = 256
dma32_mb = 64
devices = [{ name = "nvme", count = 2, bandwidth_mb_s = 3360, latency_us = 430, max_request_kb = 512, jitter = 1.0 }]
[workload]
kind = "dd"
tasks = 8
[run]
start_at = "kswapd_wake"
duration_s = 0.3
sample_interval_s = 0.1
"#;

fn scenario(overrides: &[&str]) -> Scenario {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::parse(SCENARIO, "golden.toml", &overrides).unwrap()
}

#[test]
fn the_golden_run_directory_is_as_recorded() {
    let out = reclaim_sim::run(&scenario(&[]), None, &mut |_| {});
    assert!(
        out.allocstall() > 0,
        "the golden run exercises direct reclaim"
    );
    insta::assert_snapshot!("result.json", out.result_json);
    insta::assert_snapshot!("vmstat.after", out.vmstat_after);
    insta::assert_snapshot!("vmstat.samples", out.vmstat_samples);
    insta::assert_snapshot!("tasks.json", out.tasks_json);
    insta::assert_snapshot!("iostat.samples", out.iostat_samples);
    insta::assert_snapshot!("cpu.samples", out.cpu_samples);
    insta::assert_snapshot!("psi.samples", out.psi_samples);
    insta::assert_snapshot!("pressure_memory", out.pressure_memory);
}

#[test]
fn two_fresh_runs_of_a_jittered_scenario_are_byte_identical() {
    let runs: Vec<_> = (0..2)
        .map(|_| reclaim_sim::run(&scenario(&[]), None, &mut |_| {}))
        .collect();
    let files = |o: &reclaim_sim::RunOutput| {
        [
            o.scenario_toml.clone(),
            o.vmstat_before.clone(),
            o.vmstat_after.clone(),
            o.vmstat_samples.clone(),
            o.iostat_samples.clone(),
            o.cpu_samples.clone(),
            o.psi_samples.clone(),
            o.pressure_memory.clone(),
            o.tasks_json.clone(),
            o.result_json.clone(),
        ]
    };
    assert_eq!(files(&runs[0]), files(&runs[1]));
    // The jitter is real: another seed draws other transfer times.
    let other = reclaim_sim::run(&scenario(&["seed=8"]), None, &mut |_| {});
    assert_ne!(runs[0].iostat_samples, other.iostat_samples);
    assert_ne!(runs[0].vmstat_after, other.vmstat_after);
}
