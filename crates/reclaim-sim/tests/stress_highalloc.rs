//! stress-highalloc in a whole run: passes `load-1`, `load-2` under a background of a file
//! reader, a file writer and anonymous memhogs, then `rest` once `killall` has stopped the
//! background; each pass's attempts counted against the hugetlb pool's buddy allocations;
//! the pool empty and every background task gone at the end; the same seed, the same bytes.

use std::ops::ControlFlow;

use reclaim_sim::run::simulate;
use reclaim_sim::sched::TaskClass;
use reclaim_sim::Scenario;

/// A small machine (512 MB) and a background that fills it; passes of 95 % of memory
/// (243 attempts) 20 ms apart (102.4 MB/s), at most 3 s each.
const SCENARIO: &str = r#"
name = "stress-highalloc-small"
seed = 7
[machine]
nodes = 1
cpus_per_node = 4
memory_mb_per_node = 512
dma32_mb = 0
devices = [{ name = "sda", count = 1, bandwidth_mb_s = 400, latency_us = 100, max_request_kb = 512 }]
[variant]
high_order_reclaim = "lumpy"
[sysctl]
transparent_hugepage = "never"
[workload]
kind = "stress-highalloc"
mb_per_sec = 102.4
warmup_s = 1.0
pass_gap_s = 0.5
rest_after_s = 0.5
pass_limit_s = 3.0
[[workload.background]]
kind = "dd"
tasks = 1
file_mb = 160
[[workload.background]]
kind = "dd-write"
tasks = 1
file_mb = 8
jobs = 1000
[[workload.background]]
kind = "usemem"
tasks = 2
size_mb = 96
repeats = 0
runtime_s = 3600.0
[run]
duration_s = 60
"#;

fn run() -> (reclaim_sim::kernel::Kernel, reclaim_sim::RunOutput) {
    let s = Scenario::parse(SCENARIO, "stress-highalloc-small.toml", &[]).expect("scenario");
    simulate(&s, None, &mut |_| ControlFlow::Continue(())).expect("a run to its end")
}

#[test]
fn passes_under_load_then_at_rest_after_the_background_is_killed() {
    let (k, out) = run();
    let m = &out.result.metrics;
    // 512 MB less what the kernel keeps: MemTotal / 2 MiB × 95 / 100.
    let managed: u64 = k.mem.zones.iter().map(|z| z.managed_pages).sum();
    let numpages = managed / 512 * 95 / 100;
    assert_eq!(m["highalloc_numpages"], numpages);
    let names: Vec<&String> = m["highalloc_success_pct"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["load-1", "load-2", "rest"]);
    for pass in ["load-1", "load-2", "rest"] {
        let n = m["highalloc_attempts"][pass].as_u64().unwrap();
        assert!(n > 0 && n <= numpages, "{pass}: {n}");
        let pct = m["highalloc_success_pct"][pass].as_u64().unwrap();
        assert!(pct <= 100);
        let lat = &m["highalloc_attempt_ms"][pass];
        let (p50, p90, p99, max) = (
            lat["p50"].as_f64().unwrap(),
            lat["p90"].as_f64().unwrap(),
            lat["p99"].as_f64().unwrap(),
            lat["max"].as_f64().unwrap(),
        );
        assert!(
            0.0 <= p50 && p50 <= p90 && p90 <= p99 && p99 <= max && max > 0.0,
            "{pass}: {lat}"
        );
    }
    // The run ended with the rest pass, not at its time limit; every background task was
    // killed and exited; every huge page went back.
    assert!(out.result.elapsed_s < 60.0, "{}", out.result.elapsed_s);
    assert!(k
        .sched
        .tasks
        .iter()
        .filter(|t| t.class == TaskClass::Workload)
        .all(|t| t.exited));
    assert_eq!(k.mem.hugetlb_pages, 0);
    // At rest, with the memhogs' memory back, more attempts succeed than under load.
    let rest = m["highalloc_success_pct"]["rest"].as_u64().unwrap();
    let load = m["highalloc_success_pct"]["load-1"].as_u64().unwrap();
    assert!(rest >= load, "rest {rest} load-1 {load}");
    // The same scenario and seed: the same bytes.
    let (_, again) = run();
    assert_eq!(again.result_json, out.result_json);
    assert_eq!(again.vmstat_after, out.vmstat_after);
}
