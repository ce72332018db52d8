//! Trace postprocessing speed: bytes of real 6.18 vmscan trace text analysed per second (the
//! committed test trace, decompressed into memory once, so the figure is the parser and
//! analyser alone): streamed through the 1 MiB reader on one core, and in place in 1 MiB
//! blocks with 1 and 2 threads (`trace report -j`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use reclaim_trace::analysis::{analyze, analyze_bytes, Options};
use std::io::Read;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/vmscan-6.18-memcg-hugetlb.trace.zst"
);

fn bench(c: &mut Criterion) {
    let mut text = Vec::new();
    reclaim_trace::reader::open_input(TRACE)
        .expect("test trace")
        .read_to_end(&mut text)
        .expect("decompress");
    let mut g = c.benchmark_group("trace");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("analyze_real_6.18", |b| {
        b.iter(|| analyze(&mut &text[..], Options::default()).expect("analyze"))
    });
    for jobs in [1, 2] {
        g.bench_function(format!("analyze_bytes_real_6.18_j{jobs}"), |b| {
            b.iter(|| analyze_bytes(&text, Options::default(), jobs))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
