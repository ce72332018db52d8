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

/// The whole text report of the real trace, with its vmstat agreement section, as a
/// snapshot: any change to parsing, attribution or layout shows up as a reviewed diff.
#[test]
fn real_trace_report_snapshot() {
    use reclaim_trace::report::{render_text, Input, VmstatDelta};
    let mut input = open_input(&format!("{DATA}.trace.zst")).unwrap();
    let a = analyze(&mut input, Options::default()).unwrap();
    let read = |s: &str| std::fs::read_to_string(format!("{DATA}.{s}")).unwrap();
    let text = render_text(&[Input {
        name: "vmscan-6.18".into(),
        analysis: &a,
        vmstat: Some(VmstatDelta::from_texts(
            &read("vmstat.before"),
            &read("vmstat.after"),
        )),
        user_sys_s: None,
    }]);
    insta::assert_snapshot!(text);
}

/// `--ignore-pid` (mmtests' mode): rows merged by name, totals unchanged.
#[test]
fn ignore_pid_merges_rows_without_changing_totals() {
    use reclaim_trace::report::Summary;
    let run = |ignore_pid| {
        let mut input = open_input(&format!("{DATA}.trace.zst")).unwrap();
        analyze(
            &mut input,
            Options {
                ignore_pid,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (per_pid, by_name) = (run(false), run(true));
    assert!(by_name.processes.len() < per_pid.processes.len());
    let (a, b) = (Summary::of(&per_pid), Summary::of(&by_name));
    assert_eq!(a.direct, b.direct);
    assert_eq!(a.kswapd, b.kswapd);
    assert_eq!(a.direct_reclaims, b.direct_reclaims);
    assert_eq!(a.time_stalled_direct_s, b.time_stalled_direct_s);
    let mut names: Vec<&str> = by_name.processes.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "one row per name");
}
