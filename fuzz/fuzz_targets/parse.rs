//! Any bytes through the whole pipeline: the line splitter, the line and event parsers, the
//! analysis and both report renderings. Nothing may panic; every line must be counted once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reclaim_trace::analysis::{analyze, Options};
use reclaim_trace::report::{render_json, render_text, Input};

fuzz_target!(|data: &[u8]| {
    for ignore_pid in [false, true] {
        let opts = Options {
            ignore_pid,
            ..Default::default()
        };
        let a = analyze(&mut &data[..], opts).expect("in-memory read");
        let p = &a.parse;
        if memchr_lost(data) {
            continue;
        }
        assert_eq!(
            p.lines,
            p.comment_lines + p.events + p.unknown_events + p.malformed
        );
        let cols = [Input {
            name: "fuzz".into(),
            analysis: &a,
            vmstat: None,
            user_sys_s: None,
        }];
        let _ = render_text(&cols);
        let _ = render_json(&cols);
    }
});

/// `[LOST n EVENTS]` lines are counted as lost events, not as lines of a kind.
fn memchr_lost(data: &[u8]) -> bool {
    data.windows(6).any(|w| w == b"[LOST ")
}
