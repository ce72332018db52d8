//! Times the parser's stages separately over one trace file (lines split, context parsed,
//! fields decoded, full analysis), to see where the time goes.
use reclaim_trace::analysis::{analyze, Options};
use reclaim_trace::event::Event;
use reclaim_trace::line::{parse_line, Parsed};
use std::io::Read;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse_parts FILE");
    let mut text = Vec::new();
    reclaim_trace::reader::open_input(&path)
        .expect("open")
        .read_to_end(&mut text)
        .expect("read");
    let lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
    let mb = text.len() as f64 / 1e6;
    let time = |name: &str, f: &mut dyn FnMut() -> u64| {
        let t = Instant::now();
        let mut x = 0;
        for _ in 0..10 {
            x += f();
        }
        let s = t.elapsed().as_secs_f64() / 10.0;
        println!("{name:<28} {:7.2} ms  {:6.0} MB/s  ({x})", s * 1e3, mb / s);
    };
    time("split lines (memchr)", &mut || {
        let mut n = 0;
        reclaim_trace::reader::for_each_line(&mut &text[..], |_, l, _| n += l.len() as u64)
            .unwrap();
        n
    });
    time("parse_line", &mut || {
        lines
            .iter()
            .filter(|l| matches!(parse_line(l), Parsed::Event(_)))
            .count() as u64
    });
    let parsed: Vec<_> = lines
        .iter()
        .filter_map(|l| match parse_line(l) {
            Parsed::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    time("Event::parse", &mut || {
        parsed
            .iter()
            .filter(|e| matches!(Event::parse(e.event, e.fields), Ok(Some(_))))
            .count() as u64
    });
    for name in [
        &b"mm_shrink_slab_start"[..],
        b"mm_shrink_slab_end",
        b"mm_vmscan_lru_isolate",
        b"mm_vmscan_lru_shrink_inactive",
    ] {
        let some: Vec<_> = parsed.iter().filter(|e| e.event == name).collect();
        let label = format!("  {} x{}", String::from_utf8_lossy(&name[10..]), some.len());
        time(&label, &mut || {
            some.iter()
                .filter(|e| matches!(Event::parse(e.event, e.fields), Ok(Some(_))))
                .count() as u64
        });
    }
    time("analyze (all)", &mut || {
        analyze(&mut &text[..], Options::default())
            .unwrap()
            .parse
            .events
    });
}
