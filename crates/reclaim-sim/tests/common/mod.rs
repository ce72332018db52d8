//! Scenarios that several test files run.

/// Two usemem processes and a random-access one on a one-node 128 MiB machine with a 512 MiB
/// swap file: swap-out, swap-in and readahead in a few seconds.
pub const USEMEM: &str = r#"
name = "swap-test"
[machine]
nodes = 1
cpus_per_node = 4
memory_mb_per_node = 128
devices = [{ name = "nvme", bandwidth_mb_s = 2800, write_bandwidth_mb_s = 1900, latency_us = 20, request_us = 2 }]
[swap]
kind = "file"
size_mb = 512
[workload]
kind = "usemem"
tasks = 2
size_mb = 96
repeats = 0
runtime_s = 3
[workload.background]
kind = "usemem"
tasks = 1
size_mb = 40
random = true
repeats = 0
runtime_s = 3
[run]
duration_s = 3
"#;
