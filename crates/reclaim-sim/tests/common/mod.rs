//! Scenarios and helpers that several test files share (each test crate uses a part).
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A trace sink a test keeps a handle on: the run writes into one clone, the test reads the
/// bytes from another.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    /// What the run wrote so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `key=value` of a trace line's fields.
pub fn field(fields: &str, key: &str) -> u64 {
    fields
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {fields}"))
        .parse()
        .unwrap()
}

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
