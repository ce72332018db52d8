//! Simulator throughput: page events per second on a small buffered-dd machine under reclaim.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use reclaim_sim::Scenario;

const SCENARIO: &str = r#"
name = "bench"
[machine]
nodes = 2
cpus_per_node = 8
memory_mb_per_node = 1024
devices = [{ count = 4, bandwidth_mb_s = 3281, latency_us = 430, max_request_kb = 512 }]
[workload]
kind = "dd"
tasks = 12
[run]
duration_s = 2.0
start_at = "kswapd_wake"
"#;

fn bench(c: &mut Criterion) {
    let s = Scenario::parse(SCENARIO, "bench", &[]).expect("scenario");
    let events = reclaim_sim::run(&s, None, &mut |_| {})
        .result
        .model
        .page_events;
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("dd_reclaim_2node_2GiB", |b| {
        b.iter(|| reclaim_sim::run(&s, None, &mut |_| {}))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
