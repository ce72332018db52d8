//! Times the analysis of one trace file (plain, gzip or zstd; `-` = stdin) and prints its
//! throughput and reclaim totals: `cargo run --release -p reclaim-trace --example
//! trace_stats -- FILE [JOBS]` (JOBS: decoding threads for a plain file, 0 or absent = one
//! per core). For side-by-side timing against other tools on the same file.

use reclaim_trace::analysis::{analyze_path, Options};
use reclaim_trace::report::Summary;
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: trace_stats FILE|- [JOBS]");
        std::process::exit(2);
    };
    let jobs = std::env::args()
        .nth(2)
        .map_or(0, |j| j.parse().expect("JOBS: a number"));
    let t0 = Instant::now();
    let a = analyze_path(&path, Options::default(), jobs).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let secs = t0.elapsed().as_secs_f64();
    let s = Summary::of(&a);
    println!(
        "{path}: {} bytes, {} lines in {secs:.3} s = {:.0} MB/s; kswapd scanned {} reclaimed {}, direct scanned {} reclaimed {}, {} direct reclaims",
        a.parse.bytes,
        a.parse.lines,
        a.parse.bytes as f64 / secs / 1e6,
        s.kswapd.scanned(),
        s.kswapd.reclaimed(),
        s.direct.scanned(),
        s.direct.reclaimed(),
        s.direct_reclaims
    );
}
