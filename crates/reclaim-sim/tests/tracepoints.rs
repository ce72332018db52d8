//! The simulator's tracepoints: every line is in the live kernel's ftrace format, and the
//! trace's totals over the measured window equal the window's vmstat deltas.

mod common;
use common::{field, Shared};

use reclaim_sim::mm::vmstat::VmEvent;
use reclaim_sim::{RunOutput, Scenario};

/// Runs a traced dd scenario on a 2-node machine; returns the trace text and the output.
fn traced_dd(cpus_per_node: u32, memory_mb: u32, drives: u32, tasks: u32) -> (Vec<u8>, RunOutput) {
    let text = format!(
        r#"
[machine]
nodes = 2
cpus_per_node = {cpus_per_node}
memory_mb_per_node = {memory_mb}
dma32_mb = 64
devices = [{{ count = {drives}, bandwidth_mb_s = 3360, latency_us = 430, max_request_kb = 512, jitter = 1.0 }}]
[workload]
kind = "dd"
tasks = {tasks}
[run]
start_at = "kswapd_wake"
duration_s = 0.5
trace = true
"#
    );
    run_traced(&text, "trace.toml")
}

/// Runs scenario `text` (named `name` in errors) with its trace collected; returns the trace
/// text and the output.
fn run_traced(text: &str, name: &str) -> (Vec<u8>, RunOutput) {
    let s = Scenario::parse(text, name, &[]).unwrap();
    let buf = Shared::default();
    let out = reclaim_sim::run(&s, Some(Box::new(buf.clone())), &mut |_| {});
    (buf.bytes(), out)
}

#[test]
fn trace_totals_equal_the_vmstat_deltas() {
    let (trace, out) = traced_dd(52, 512, 8, 60);
    let trace = String::from_utf8(trace).unwrap();
    assert!(
        out.allocstall() > 0 && out.delta(VmEvent::PgscanKswapd) > 0,
        "the scenario must exercise both reclaim paths"
    );
    let (mut begins, mut ends, mut scanned_k, mut scanned_d, mut stolen_k, mut stolen_d, mut wakes) =
        (0, 0, 0, 0, 0, 0, 0);
    for line in trace.lines() {
        // "           <comm>-<pid>     [ccc] ..... sssss.uuuuuu: event: fields"
        let (ctx, rest) = line.split_once(": ").expect("context");
        let (event, fields) = rest.split_once(": ").expect("event");
        assert!(
            ctx.len() >= 16 + 1 + 7 + 1 + 5 + 1 + 5 + 1 + 12,
            "short context: {line}"
        );
        assert_eq!(&ctx[24..26], " [", "{line}");
        assert_eq!(&ctx[29..37], "] ..... ", "{line}");
        let kswapd = ctx.trim_start().starts_with("kswapd");
        match event {
            "mm_vmscan_direct_reclaim_begin" => begins += 1,
            "mm_vmscan_direct_reclaim_end" => ends += 1,
            "mm_vmscan_kswapd_wake" => wakes += 1,
            "mm_vmscan_lru_isolate" if kswapd => scanned_k += field(fields, "nr_scanned"),
            "mm_vmscan_lru_isolate" => scanned_d += field(fields, "nr_scanned"),
            "mm_vmscan_lru_shrink_inactive" if kswapd => stolen_k += field(fields, "nr_reclaimed"),
            "mm_vmscan_lru_shrink_inactive" => stolen_d += field(fields, "nr_reclaimed"),
            _ => {}
        }
    }
    // Each counter and its tracepoint are emitted at the same instant, so they agree exactly.
    assert_eq!(begins, out.allocstall());
    assert!(
        ends <= begins + 90,
        "a reclaim begun before the window may end in it"
    );
    assert_eq!(scanned_k, out.delta(VmEvent::PgscanKswapd));
    assert_eq!(scanned_d, out.delta(VmEvent::PgscanDirect));
    assert_eq!(stolen_k, out.delta(VmEvent::PgstealKswapd));
    assert_eq!(stolen_d, out.delta(VmEvent::PgstealDirect));
    assert!(wakes >= 1);
}

/// The simulated trace through the same postprocessor as a real one: every line parses,
/// and every trace total the report sets beside a vmstat counter equals that counter's
/// delta over the window (pgscan/pgsteal by kswapd and direct, allocstall, pageoutrun).
#[test]
fn trace_report_agrees_with_the_run_vmstat() {
    use reclaim_trace::analysis::{analyze, Options};
    use reclaim_trace::report::{vmstat_agreement, VmstatDelta};
    let (trace, out) = traced_dd(8, 256, 2, 24);
    let a = analyze(&mut &trace[..], Options::default()).unwrap();
    assert_eq!(a.parse.malformed, 0, "{:?}", a.parse.malformed_lines);
    assert_eq!(a.parse.unknown_events, 0);
    let v = VmstatDelta::from_texts(&out.vmstat_before, &out.vmstat_after);
    let ag = vmstat_agreement(&a, &v);
    assert_eq!(ag.len(), 6, "{ag:?}");
    for g in &ag {
        assert!(g.vmstat > 0, "the run must exercise {}: {ag:?}", g.counter);
        assert_eq!(g.trace as i64, g.vmstat, "{} vs {}", g.what, g.counter);
    }
}

/// Reclaim's writes of anon folios to swap are traced as the kernel's `pageout()` traces
/// them (`mm_vmscan_write_folio`, RECLAIM_WB_ANON), one line per folio written, so the
/// report's "write anon" rows equal `pswpout` (every swap-out here is reclaim's).
#[test]
fn every_swap_out_by_reclaim_is_a_traced_anon_write() {
    let text = r#"
[machine]
memory_mb_per_node = 128
dma32_mb = 0
devices = [{ bandwidth_mb_s = 400, latency_us = 100 }]
[swap]
kind = "file"
size_mb = 256
[workload]
kind = "usemem"
tasks = 1
size_mb = 160
repeats = 2
[run]
duration_s = 3
trace = true
"#;
    let (trace, out) = run_traced(text, "swap-trace.toml");
    let trace = String::from_utf8(trace).unwrap();
    let (mut anon, mut file) = (0, 0);
    for line in trace
        .lines()
        .filter(|l| l.contains(" mm_vmscan_write_folio: "))
    {
        if line.ends_with("flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC") {
            anon += 1;
        } else {
            file += 1;
        }
    }
    let pswpout = out.delta(VmEvent::PswpOut);
    assert!(pswpout > 1000, "the run must swap: {pswpout}");
    assert_eq!(anon, pswpout);
    assert_eq!(file, 0);
}

/// Every folio a reader inserts into the page cache is traced as the kernel's
/// `__filemap_add_folio()` traces it (`mm_filemap_add_to_page_cache`, one line per folio
/// with its order and file offset): with large-folio readahead the orders climb from 0 to 9,
/// each folio lies at an offset aligned to its size, and the pages the lines add up to are
/// the pages the readers read from the device (`pgpgin`), but for the windows still being
/// filled when the run ends.
#[test]
fn each_folio_added_to_the_page_cache_is_traced_with_its_order() {
    use reclaim_trace::analysis::{analyze, Options};
    let text = r#"
[machine]
nodes = 1
cpus_per_node = 4
memory_mb_per_node = 512
dma32_mb = 64
devices = [{ count = 1, bandwidth_mb_s = 2000, latency_us = 200, max_request_kb = 512 }]
[variant]
large_folio_readahead = true
[sysctl]
read_ahead_kb = 4096
[workload]
kind = "dd"
tasks = 2
[run]
start_at = "start"
duration_s = 0.5
trace = true
"#;
    let (trace, out) = run_traced(text, "filemap-trace.toml");
    let mut lines = 0;
    for line in String::from_utf8(trace.clone()).unwrap().lines() {
        let Some((_, fields)) = line.split_once("mm_filemap_add_to_page_cache: ") else {
            continue;
        };
        lines += 1;
        assert!(fields.starts_with("dev 0:0 ino "), "{line}");
        let order = field(fields, "order");
        let index = field(fields, "ofs") >> 12;
        assert_eq!(index % (1 << order), 0, "a folio off its alignment: {line}");
    }
    let a = analyze(&mut &trace[..], Options::default()).unwrap();
    assert_eq!(a.parse.malformed, 0, "{:?}", a.parse.malformed_lines);
    assert_eq!(a.parse.unknown_events, 0);
    assert_eq!(a.page_cache_added.values().sum::<u64>(), lines);
    assert!(
        a.page_cache_added.contains_key(&0) && a.page_cache_added.contains_key(&9),
        "{:?}",
        a.page_cache_added
    );
    let added: u64 = a.page_cache_added.iter().map(|(&o, &n)| n << o).sum();
    let read = out.delta(VmEvent::PgpginKb) / 4;
    assert!(read > 100_000, "the readers must read: {read} pages");
    assert!(
        added >= read && added - read <= 2 * 4096,
        "{added} pages added against {read} read"
    );
}
