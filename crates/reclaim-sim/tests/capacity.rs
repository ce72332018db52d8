//! `run::page_state_bytes_needed`, the estimate the command line refuses oversized machines
//! with, against the per-page state of small machines built and run: never below it, and
//! above it by at most the swap side array of a run that did not swap (4 bytes a page frame).

use std::ops::ControlFlow;

use reclaim_sim::run::{page_state_bytes_needed, simulate};
use reclaim_sim::Scenario;

const DD: &str = r#"
name = "dd"
[machine]
nodes = 2
cpus_per_node = 4
memory_mb_per_node = 256
dma32_mb = 64
devices = [{ name = "nvme", count = 2, bandwidth_mb_s = 3360, latency_us = 430 }]
[workload]
kind = "dd"
tasks = 8
[run]
duration_s = 1
"#;

mod common;
use common::USEMEM;

/// The estimate and the built machine's state after a run of `text` with `sets`.
fn estimate_and_real(text: &str, sets: &[&str]) -> (u64, u64, u32) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = Scenario::parse(text, "capacity.toml", &sets).unwrap();
    let (k, _) = simulate(&s, None, &mut |_| ControlFlow::Continue(())).unwrap();
    (
        page_state_bytes_needed(&s),
        k.page_state_bytes(),
        k.mem.pages.nr_pages(),
    )
}

#[test]
fn the_estimate_bounds_built_machines_within_the_unused_side_arrays() {
    let cases: &[(&str, &[&str])] = &[
        (DD, &[]),
        (DD, &["machine.nodes=1", "machine.dma32_mb=0"]),
        (DD, &["memory.mode=\"squeeze\"", "memory.free_mb=128"]),
        (USEMEM, &[]),
        (USEMEM, &["variant.anon_lru_before_5_9=true"]),
        (USEMEM, &["memory.mode=\"cgroup\"", "memory.limit_mb=96"]),
        (USEMEM, &["swap.also=[{ kind = \"zram\", size_mb = 64 }]"]),
    ];
    for (text, sets) in cases {
        let (estimate, real, nr_pages) = estimate_and_real(text, sets);
        assert!(
            estimate >= real,
            "{sets:?}: estimate {estimate} below the real {real}"
        );
        assert!(
            estimate - real <= 4 * u64::from(nr_pages),
            "{sets:?}: estimate {estimate} more than an unused swap array above the real {real}"
        );
    }
}

#[test]
fn the_estimate_grows_with_memory_swap_and_mappings() {
    let s = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        page_state_bytes_needed(&Scenario::parse(USEMEM, "capacity.toml", &sets).unwrap())
    };
    let base = s(&[]);
    // 128 MiB more memory: 32768 page frames of 16 bytes and their 4-byte swap entries, and
    // their pfn → zone entries and 64 pageblocks' migratetypes.
    assert_eq!(
        s(&["machine.memory_mb_per_node=256"]) - base,
        32768 * 20 + 32 + 64
    );
    // 256 MiB more swap: 65536 slots of 13 bytes, 128 clusters of 3.
    assert_eq!(s(&["swap.size_mb=768"]) - base, 65536 * 13 + 128 * 3);
    // A third foreground process of 96 MiB: 24576 entries of 4 bytes and its VMA.
    let vma = s(&["workload.tasks=3"]) - base - 24576 * 4;
    assert!(vma > 0 && vma < 64, "a VMA of {vma} bytes");
}
