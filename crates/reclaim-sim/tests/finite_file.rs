//! A dd reader of a file of known size (`workload.file_mb`) starts over at its end, as live
//! dd in a loop does: a file that fits in memory is read from the device once and then found
//! cached; one larger than memory is read again from the device, and with
//! `variant.workingset` its evicted pages left shadows that the next pass finds (refaults).

use reclaim_sim::Scenario;

fn run(file_mb: u64, workingset: bool) -> reclaim_sim::RunOutput {
    let text = format!(
        r#"
name = "finite"
[machine]
nodes = 1
cpus_per_node = 2
memory_mb_per_node = 256
dma32_mb = 64
devices = [{{ name = "nvme", bandwidth_mb_s = 1000, latency_us = 100 }}]
[variant]
workingset = {workingset}
[workload]
kind = "dd"
tasks = 1
block_kb = 1024
file_mb = {file_mb}
[run]
duration_s = 2
"#
    );
    let s = Scenario::parse(&text, "finite.toml", &[]).unwrap();
    reclaim_sim::run(&s, None, &mut |_| {})
}

fn stat(out: &reclaim_sim::RunOutput, name: &str) -> u64 {
    out.vmstat_after
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map_or(0, |v| v.parse().unwrap())
}

#[test]
fn a_file_that_fits_is_read_once_then_found_cached() {
    let out = run(32, true);
    let read_kb = stat(&out, "pgpgin");
    assert_eq!(read_kb, 32 * 1024, "the device read the file once");
    let copied = out.result.metrics["bytes"].as_u64().unwrap();
    assert!(
        copied > 20 * (32 << 20),
        "many passes, all but the first hits: {copied}"
    );
    // The second pass's access activated every page (folio_mark_accessed).
    assert_eq!(stat(&out, "pgactivate"), 32 * 256);
    assert_eq!(stat(&out, "workingset_refault_file"), 0);
}

#[test]
fn a_file_larger_than_memory_refaults_with_shadows_and_only_with_them() {
    let on = run(512, true);
    assert!(
        stat(&on, "pgpgin") > 2 * 512 * 1024,
        "read from the device pass after pass"
    );
    let refaults = stat(&on, "workingset_refault_file");
    assert!(refaults > 100_000, "{refaults}");
    // A use-once stream has no active file list to compare distances with: no activation.
    assert_eq!(stat(&on, "workingset_activate_file"), 0);
    assert!(stat(&on, "workingset_nodes") > 0);
    let off = run(512, false);
    assert!(
        !off.vmstat_after.contains("workingset_refault_file"),
        "no such items off"
    );
    assert_eq!(
        off.vmstat_after.lines().count() + 5,
        on.vmstat_after.lines().count()
    );
}

#[test]
fn an_endless_file_is_as_before() {
    let a = run(0, false);
    let b = run(0, true);
    assert_eq!(stat(&b, "workingset_refault_file"), 0);
    assert_eq!(stat(&b, "workingset_nodes"), 0);
    assert_eq!(a.result.metrics["bytes"], b.result.metrics["bytes"]);
}
