//! The simulated stutter workload (mmtests): the probe's mmap latency under a memhog and a
//! file copy, with and without transparent huge pages; invariants and determinism.

use reclaim_sim::kernel::Kernel;
use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::scenario::Scenario;

/// Two nodes of 128 MiB, a 64 MiB memhog, a 96 MiB copy and a 2048-page probe.
const SCENARIO: &str = r#"
name = "stutter-test"
seed = 1
[machine]
nodes = 2
cpus_per_node = 4
memory_mb_per_node = 128
dma32_mb = 64
devices = [{ name = "disk", bandwidth_mb_s = 400, latency_us = 100 }]
[swap]
kind = "file"
size_mb = 512
[workload]
kind = "stutter"
memhog_mb = 160
file_mb = 96
probe_pages = 2048
settle_s = 0.2
iterations = 2
[run]
duration_s = 3
"#;

fn run(sets: &[&str]) -> (Kernel, reclaim_sim::RunOutput) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = Scenario::parse(SCENARIO, "stutter-test.toml", &sets).unwrap();
    reclaim_sim::run::simulate(&s, None, &mut |_| std::ops::ControlFlow::Continue(())).unwrap()
}

#[test]
fn stutter_runs_its_iterations_and_reports_the_live_metrics() {
    let (k, out) = run(&[]);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    k.check_large_folios().unwrap();
    let m = &out.result.metrics;
    eprintln!("{}", serde_json::to_string_pretty(m).unwrap());
    assert_eq!(m["iterations"], 2);
    let lat = &m["mmap_latency_ms"];
    assert!(lat["samples"].as_u64().unwrap() > 50);
    let rows = &lat["mmtests"];
    let v = |r: &str| rows[r].as_f64().unwrap();
    assert!(v("Min") <= v("1st-qrtle") && v("1st-qrtle") <= v("2nd-qrtle"));
    assert!(v("Max-99%") <= v("Max") && v("Best50%Mean") <= v("Mean"));
    assert_eq!(v("Max"), lat["max"].as_f64().unwrap());
    assert_eq!(m["copy_elapsed_s"].as_array().unwrap().len(), 2);
    // The run ends with the second copy (as the live run does), well inside its 3 s, and
    // the probe's last, partial batch is counted.
    let copies: f64 = m["copy_elapsed_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .sum();
    assert!(
        out.result.elapsed_s < 3.0 && out.result.elapsed_s > copies,
        "{}",
        out.result.elapsed_s
    );
    assert!(!out.result.timed_out);
    // The probe's mappings are reused: the page tables hold the memhog's and the probe's.
    assert!(k.mm.ptes.len() as u64 <= 160 * 256 + 2048);
    let d = |e| out.after.event(e) - out.before.event(e);
    assert!(d(VmEvent::PswpOut) > 0, "the memhog is swapped out");
}

#[test]
fn stutter_with_thp_faults_huge_pages_and_is_deterministic() {
    let sets = [
        "sysctl.transparent_hugepage=\"always\"",
        "sysctl.transparent_hugepage_defrag=\"always\"",
    ];
    let (k, out) = run(&sets);
    k.check_conservation(0).unwrap();
    k.check_lists().unwrap();
    k.check_large_folios().unwrap();
    let d = |e| out.after.event(e) - out.before.event(e);
    assert!(d(VmEvent::ThpFaultAlloc) > 0);
    eprintln!(
        "thp alloc {} fallback {} split {}",
        d(VmEvent::ThpFaultAlloc),
        d(VmEvent::ThpFaultFallback),
        d(VmEvent::ThpSplitPage)
    );
    let (_, again) = run(&sets);
    assert_eq!(again.result.metrics, out.result.metrics);
    assert_eq!(again.after, out.after);
}
