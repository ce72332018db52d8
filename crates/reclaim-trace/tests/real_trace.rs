//! A real vmscan trace captured on a Linux 6.18 machine (a 1 GiB read in a 96 MiB memory
//! cgroup, then a 3 GiB read with free memory squeezed by hugetlb pages), with /proc/vmstat
//! before and after: every line parses, and the trace's kswapd and direct scan and reclaim
//! totals are compared with the vmstat deltas over the same window.

use reclaim_trace::analysis::{analyze, Options};
use reclaim_trace::reader::open_input;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/vmscan-6.18-memcg-hugetlb"
);

fn vmstat(path: &str) -> std::collections::HashMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.trim().parse().unwrap()))
        .collect()
}

#[test]
fn real_trace_parses_and_agrees_with_vmstat() {
    let mut input = open_input(&format!("{DATA}.trace.zst")).unwrap();
    let a = analyze(&mut input, Options::default()).unwrap();
    assert_eq!(
        a.parse.malformed, 0,
        "malformed lines: {:?}",
        a.parse.malformed_lines
    );
    assert!(a.parse.events > 100_000, "{} events", a.parse.events);
    let before = vmstat(&format!("{DATA}.vmstat.before"));
    let after = vmstat(&format!("{DATA}.vmstat.after"));
    let delta = |k: &str| after[k] - before[k];
    let kswapd_scanned: u64 = a.processes.iter().map(|p| p.kswapd.scanned()).sum();
    let kswapd_reclaimed: u64 = a.processes.iter().map(|p| p.kswapd.reclaimed()).sum();
    let direct_scanned: u64 = a.processes.iter().map(|p| p.direct.scanned()).sum();
    let direct_reclaimed: u64 = a.processes.iter().map(|p| p.direct.reclaimed()).sum();
    eprintln!(
        "kswapd scanned {kswapd_scanned} vs pgscan_kswapd {}, reclaimed {kswapd_reclaimed} vs pgsteal_kswapd {}; \
         direct scanned {direct_scanned} vs pgscan_direct {}, reclaimed {direct_reclaimed} vs pgsteal_direct {}",
        delta("pgscan_kswapd"),
        delta("pgsteal_kswapd"),
        delta("pgscan_direct"),
        delta("pgsteal_direct")
    );
    // The capture enabled tracing before the first vmstat snapshot and stopped it after the
    // second, and each counter is bumped beside its tracepoint: the totals agree exactly.
    assert_eq!(kswapd_scanned, delta("pgscan_kswapd"));
    assert_eq!(kswapd_reclaimed, delta("pgsteal_kswapd"));
    assert_eq!(direct_scanned, delta("pgscan_direct"));
    assert_eq!(direct_reclaimed, delta("pgsteal_direct"));
}
