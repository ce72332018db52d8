//! Simulator throughput: page events per second on a small buffered-dd machine under reclaim.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use reclaim_sim::Scenario;

/// `reclaimlab bench`'s scenario (scenarios/bench/dd.toml), made small: 8 CPUs and 1 GiB
/// per node, 12 readers, 2 s.
const SCENARIO: &str = include_str!("../../../scenarios/bench/dd.toml");
const SETS: [&str; 5] = [
    "machine.cpus_per_node=8",
    "machine.memory_mb_per_node=1024",
    "machine.dma32_mb=0",
    "workload.tasks=12",
    "run.duration_s=2.0",
];

fn bench(c: &mut Criterion) {
    let sets = SETS.map(String::from);
    let s = Scenario::parse(SCENARIO, "scenarios/bench/dd.toml", &sets).expect("scenario");
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
