//! One line of `/sys/kernel/tracing/trace` or `trace_pipe` text.
//!
//! Models `trace_print_context()` (kernel/trace/trace_output.c, ~5.10 and 6.x):
//! `"%16s-%-7d "` task-pid, optional `"(%7d) "` tgid (record-tgid), `"[%03d] "` CPU, the
//! latency field (irq-info, on by default: 4 characters up to ~5.10, 5 in 6.x, absent when
//! irq-info is off or in 2.6.3x output), `" %5lu.%06lu: "` timestamp, then `"<event>: "` and
//! the TP_printk text. Comm may contain spaces and dashes, so the line is anchored on the
//! `[cpu]` field rather than split on whitespace (trace-vmscan-postprocess.pl's regex
//! `[a-zA-Z0-9-]*` misreads such names).
//!
//! A task name is whatever `prctl(PR_SET_NAME)` was given, up to 15 bytes (TASK_COMM_LEN
//! − 1): it can hold `#`, ` [0] `, `-12` or a whole fake context such as `-1 [0] 1.0: e:`.
//! Two rules follow:
//!
//! - **The CPU field** is the `[digits] ` from which the whole line parses: task-pid and
//!   optional `(tgid)` before it; irq-info, `secs.frac:` and `event:` after it. The kernel's
//!   place is tried first: the name right-aligned in 16 columns, so the `-` at byte 16, then
//!   the pid, its padding and the tgid column. Otherwise (padding stripped, other tools'
//!   layouts, damaged lines) candidates are tried from the right end of the line, because
//!   what follows the real field is the event's text, and the events read here print no
//!   `[digits] `; names do appear in other events' text (sched_switch's `prev_comm=`), but
//!   15 bytes cannot hold a fake context naming a vmscan event, so such a line is at worst
//!   read as another unknown event.
//! - **Comments.** The kernel prints its header lines (`# tracer: nop`, `#  TASK-PID  CPU# …`,
//!   `##### CPU 2 buffer started ####`) from the first column, and an event line's task field
//!   is `%16s` of at most 15 bytes, so it starts with a blank. A line is therefore a comment
//!   only if it does not parse as an event AND its first byte is `#`: the event test comes
//!   first because a line whose padding was stripped, or one the writer printed with a
//!   16-byte name, starts with the name (`#worker-12 [002] …`); and a `#` behind blanks that
//!   does not parse is a damaged event line of a task named `#…`, counted as malformed
//!   rather than hidden.

use crate::fields::{find_byte, parse_u64, rfind_byte};

/// The fixed context of a trace line plus the undecoded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Task name (`<...>` when the kernel had not recorded it). Trimmed.
    pub comm: &'a [u8],
    pub pid: u32,
    pub tgid: Option<u32>,
    pub cpu: u32,
    /// The irq-info field as printed (e.g. `d..1.`), empty when absent.
    pub irq_flags: &'a [u8],
    /// Timestamp in nanoseconds (the text has µs; more fraction digits are kept up to ns).
    pub ts_ns: u64,
    pub event: &'a [u8],
    pub fields: &'a [u8],
}

/// What a line of trace text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    Event(Line<'a>),
    /// `#` header/comment lines and blank lines.
    Comment,
    /// `CPU:%d [LOST %lu EVENTS]` from trace_pipe: events dropped by a full ring buffer.
    Lost(u64),
    Malformed,
}

/// Is `c` a character of the irq-info field (6.x: irqs D/d/b/X/., need-resched N/n/p/.
/// (and L/l/B/b for lazy preemption), hard/soft irq Z/z/H/h/s/., then preempt and
/// migrate-disable depths in hex or `.`)?
#[inline]
fn is_flag_char(c: u8) -> bool {
    // b/d and D/B are covered by the hex ranges.
    matches!(c, b'.' | b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' | b'N' | b'n' | b'p' | b'X'
        | b'Z' | b'z' | b'H' | b'h' | b's' | b'L' | b'l')
}

/// Characters of an event name: ASCII letters, digits and `_`.
const NAME_CHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

#[inline]
fn trim(mut s: &[u8]) -> &[u8] {
    // The task field is right-aligned in 16 columns: skip its padding 8 spaces at a time.
    while let [a, b, c, d, e, f, g, h, rest @ ..] = s {
        if u64::from_ne_bytes([*a, *b, *c, *d, *e, *f, *g, *h]) != u64::from_ne_bytes([b' '; 8]) {
            break;
        }
        s = rest;
    }
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

/// Reads a `[NNN]` CPU field at `open`: up to 6 digits, `]`, a space. Returns (cpu,
/// index after `]`).
#[inline]
fn cpu_field(line: &[u8], open: usize) -> Option<(u32, usize)> {
    let mut i = open + 1;
    let mut cpu: u32 = 0;
    while i < line.len() && line[i].is_ascii_digit() && i - open <= 6 {
        cpu = cpu * 10 + (line[i] - b'0') as u32;
        i += 1;
    }
    (i > open + 1 && line.get(i) == Some(&b']') && line.get(i + 1) == Some(&b' '))
        .then_some((cpu, i + 1))
}

/// The kernel's layout: `%16s-%-7d `, an optional `(%7d) ` or `(-------) ` tgid column, then
/// `[%03d] ` (`%-5d` and `(%5d) ` before 5.10, and `%-5d` in `trace-cmd report`). A name of
/// at most 16 bytes fills bytes 0..16, so the `-` is at byte 16 and the name cannot reach the
/// CPU field. Returns the task, the cpu and the index after `]`; `None` sends the line to
/// [`event_by_scan`].
#[inline]
fn kernel_place(line: &[u8]) -> Option<(Task<'_>, u32, usize)> {
    if line.get(16) != Some(&b'-') {
        return None;
    }
    // One pass over the pid's digits and then its padding (`parse_u64` would be a second).
    let mut i = 17;
    let mut pid: u32 = 0;
    while let Some(&c @ b'0'..=b'9') = line.get(i) {
        pid = pid.checked_mul(10)?.checked_add((c - b'0') as u32)?;
        i += 1;
    }
    if i == 17 || line.get(i) != Some(&b' ') {
        return None;
    }
    i = skip_spaces(line, i);
    let mut tgid = None;
    if line.get(i) == Some(&b'(') {
        let close = i + 1 + find_byte(b')', &line[i + 1..])?;
        tgid = tgid_column(&line[i + 1..close])?;
        if line.get(close + 1) != Some(&b' ') {
            return None;
        }
        i = skip_spaces(line, close + 1);
    }
    let (cpu, after) = cpu_field(line, i)?;
    let comm = trim(&line[..16]);
    Some((Task { comm, pid, tgid }, cpu, after))
}

#[inline]
fn skip_spaces(line: &[u8], mut i: usize) -> usize {
    while line.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// Tries every `[` from the right end of the line, the event text's side (see the module
/// comment), and returns the line read from the first that is a CPU field it parses from.
/// Out of line: only stripped padding, other layouts and damaged lines come here.
#[inline(never)]
fn event_by_scan(line: &[u8]) -> Option<Line<'_>> {
    let mut end = line.len();
    while let Some(open) = memchr::memrchr(b'[', &line[..end]) {
        if let Some(l) = event_at(line, open) {
            return Some(l);
        }
        end = open;
    }
    None
}

/// The line read with its CPU field at `open`: what follows the field first (it rejects a
/// wrong candidate in a few bytes), then task-pid and the optional tgid before it.
fn event_at(line: &[u8], open: usize) -> Option<Line<'_>> {
    let (cpu, after) = cpu_field(line, open)?;
    let tail = after_cpu(line, after)?;
    let task = task_pid(&line[..open])?;
    Some(tail.line(task, cpu))
}

/// Parses a timestamp `sec.frac` (or a bare counter) into nanoseconds.
#[inline]
fn parse_ts(t: &[u8]) -> Option<u64> {
    let (sec, frac) = match find_byte(b'.', t) {
        Some(dot) => (&t[..dot], &t[dot + 1..]),
        None => (t, &b""[..]),
    };
    let sec = parse_u64(sec)?;
    if frac.len() > 9 || frac.iter().any(|c| !c.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        ns = ns * 10 + frac.get(i).map_or(0, |c| (c - b'0') as u64);
    }
    sec.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Reads `%5lu.%06lu: ` in one pass (seconds, a dot, 1–9 fraction digits, a colon, a
/// space or the end); returns the nanoseconds and what follows. `None` sends the caller to
/// the general token reader.
#[inline]
fn timestamp_fast(rest: &[u8]) -> Option<(u64, &[u8])> {
    let mut i = 0;
    let mut sec: u64 = 0;
    while let Some(&c) = rest.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        sec = sec.checked_mul(10)?.checked_add(d as u64)?;
        i += 1;
    }
    if i == 0 || i > 20 || rest.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    let start = i;
    let mut ns: u64 = 0;
    while let Some(&c) = rest.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        ns = ns * 10 + d as u64;
        i += 1;
        if i - start > 9 {
            return None;
        }
    }
    let digits = i - start;
    if rest.get(i) != Some(&b':') || !matches!(rest.get(i + 1), None | Some(b' ')) {
        return None;
    }
    ns *= 10u64.pow((9 - digits) as u32);
    Some((
        sec.checked_mul(1_000_000_000)?.checked_add(ns)?,
        &rest[i + 1..],
    ))
}

/// The irq-info field (4 or 5 characters, or none) and the timestamp, token by token;
/// returns (flags, ns, the text after the timestamp's colon).
fn context_general(mut rest: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let tok_end = find_byte(b' ', rest).unwrap_or(rest.len());
    let mut tok = &rest[..tok_end];
    let mut irq_flags: &[u8] = b"";
    if tok.last() != Some(&b':') {
        if !(tok.len() == 4 || tok.len() == 5) || !tok.iter().all(|&c| is_flag_char(c)) {
            return None;
        }
        irq_flags = tok;
        rest = &rest[tok_end..];
        while let [b' ', r @ ..] = rest {
            rest = r;
        }
        let end = find_byte(b' ', rest).unwrap_or(rest.len());
        tok = &rest[..end];
        if tok.last() != Some(&b':') {
            return None;
        }
        rest = &rest[end..];
    } else {
        rest = &rest[tok_end..];
    }
    let ts_ns = parse_ts(&tok[..tok.len() - 1])?;
    Some((irq_flags, ts_ns, rest))
}

/// The 6.x layout: five irq-info characters and a space, or no irq-info column, then a
/// decimal timestamp.
#[inline]
fn context_fast(rest: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    if let [a, b, c, d, e, b' ', r @ ..] = rest {
        if [a, b, c, d, e].iter().all(|&&x| is_flag_char(x)) {
            let mut r = r;
            while let [b' ', t @ ..] = r {
                r = t;
            }
            let (ts, after) = timestamp_fast(r)?;
            return Some((&rest[..5], ts, after));
        }
    }
    let (ts, after) = timestamp_fast(rest)?;
    Some((b"", ts, after))
}

/// Parses one line (without its `\n`). Never panics.
pub fn parse_line(line: &[u8]) -> Parsed<'_> {
    if let Some((task, cpu, after)) = kernel_place(line) {
        if let Some(tail) = after_cpu(line, after) {
            return Parsed::Event(tail.line(task, cpu));
        }
    }
    if let Some(l) = event_by_scan(line) {
        return Parsed::Event(l);
    }
    // Not an event: a header only with `#` in the first column (see the module comment).
    if line.first() == Some(&b'#') {
        return Parsed::Comment;
    }
    match trim(line) {
        [] => Parsed::Comment,
        body => lost_or_malformed(body),
    }
}

/// What precedes the CPU field: `comm-pid` and the optional tgid column.
struct Task<'a> {
    comm: &'a [u8],
    pid: u32,
    tgid: Option<u32>,
}

/// What follows the CPU field: irq-info, timestamp, event name and the event's text.
struct Tail<'a> {
    irq_flags: &'a [u8],
    ts_ns: u64,
    event: &'a [u8],
    fields: &'a [u8],
}

impl<'a> Tail<'a> {
    #[inline]
    fn line(self, task: Task<'a>, cpu: u32) -> Line<'a> {
        Line {
            comm: task.comm,
            pid: task.pid,
            tgid: task.tgid,
            cpu,
            irq_flags: self.irq_flags,
            ts_ns: self.ts_ns,
            event: self.event,
            fields: self.fields,
        }
    }
}

/// Reads the line after a CPU field ending at `after`: `[irq-flags] timestamp: event: `.
#[inline]
fn after_cpu(line: &[u8], after: usize) -> Option<Tail<'_>> {
    let mut rest = &line[after..];
    while let [b' ', r @ ..] = rest {
        rest = r;
    }
    let (irq_flags, ts_ns, mut rest) = context_fast(rest).or_else(|| context_general(rest))?;
    while let [b' ', r @ ..] = rest {
        rest = r;
    }
    // event: fields. One pass finds the ':' and checks the name's characters.
    let colon = rest.iter().position(|&c| !NAME_CHAR[c as usize])?;
    if colon == 0 || rest[colon] != b':' {
        return None;
    }
    let event = &rest[..colon];
    let mut fields = &rest[colon + 1..];
    if let [b' ', r @ ..] = fields {
        fields = r;
    }
    if let [r @ .., b'\r'] = fields {
        fields = r;
    }
    Some(Tail {
        irq_flags,
        ts_ns,
        event,
        fields,
    })
}

/// `comm-pid` and an optional `(tgid)` or `(-------)` column, however padded. The pid is
/// after the last `-`, so dashes in the name are kept.
#[inline]
fn task_pid(task: &[u8]) -> Option<Task<'_>> {
    let mut task = trim(task);
    let mut tgid = None;
    if let [head @ .., b')'] = task {
        if let Some(p) = rfind_byte(b'(', head) {
            tgid = tgid_column(&head[p + 1..])?;
            task = trim(&head[..p]);
        }
    }
    let dash = rfind_byte(b'-', task)?;
    let pid = parse_u64(&task[dash + 1..]).and_then(|v| u32::try_from(v).ok())?;
    let comm = trim(&task[..dash]);
    Some(Task { comm, pid, tgid })
}

/// The inside of the tgid column: `Some(None)` for `-------` (tgid unknown).
#[inline]
fn tgid_column(inner: &[u8]) -> Option<Option<u32>> {
    match trim(inner) {
        [b'-', ..] => Some(None),
        digits => Some(Some(parse_u64(digits).and_then(|v| u32::try_from(v).ok())?)),
    }
}

/// Is this one of the lines `trace-cmd report` prints before the events (`version = 6`,
/// `cpus=4`, `CPU 2 is empty`, `CPU0 data recorded at offset=0x…`, `    4096 bytes in size`)?
fn is_trace_cmd_preamble(body: &[u8]) -> bool {
    body.starts_with(b"version = ")
        || body.starts_with(b"cpus=")
        || (body.starts_with(b"CPU")
            && (body.ends_with(b" is empty")
                || memchr::memmem::find(body, b" data recorded at ").is_some()))
        || body.ends_with(b" bytes in size")
}

fn lost_or_malformed(body: &[u8]) -> Parsed<'_> {
    if is_trace_cmd_preamble(body) {
        return Parsed::Comment;
    }
    // "CPU:0 [LOST 123 EVENTS]"
    if let Some(rest) = body.strip_prefix(b"CPU:") {
        if let Some(p) = memchr::memmem::find(rest, b"[LOST ") {
            let num = &rest[p + 6..];
            let end = memchr::memchr(b' ', num).unwrap_or(num.len());
            if let Some(n) = parse_u64(&num[..end]) {
                return Parsed::Lost(n);
            }
        }
    }
    Parsed::Malformed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(l: &[u8]) -> Line<'_> {
        match parse_line(l) {
            Parsed::Event(e) => e,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn six_x_line() {
        let l = ev(b"              dd-4436    [001] d..1.   509.276834: mm_vmscan_lru_isolate: classzone=4 order=0");
        assert_eq!(l.comm, b"dd");
        assert_eq!((l.pid, l.cpu, l.tgid), (4436, 1, None));
        assert_eq!(l.irq_flags, b"d..1.");
        assert_eq!(l.ts_ns, 509_276_834_000);
        assert_eq!(l.event, b"mm_vmscan_lru_isolate");
        assert_eq!(l.fields, b"classzone=4 order=0");
    }

    #[test]
    fn four_char_flags_tgid_and_no_flags() {
        let l = ev(
            b" kworker/u8:2-ev ent-123   (  120) [003] dN.2  12.5: mm_vmscan_kswapd_sleep: nid=0",
        );
        assert_eq!(l.comm, b"kworker/u8:2-ev ent");
        assert_eq!((l.pid, l.tgid, l.cpu), (123, Some(120), 3));
        assert_eq!(l.irq_flags, b"dN.2");
        assert_eq!(l.ts_ns, 12_500_000_000);
        let l = ev(b"  kswapd0-97 [000]  1234.567890: mm_vmscan_kswapd_wake: nid=0 order=0");
        assert_eq!(l.irq_flags, b"");
        assert_eq!(l.comm, b"kswapd0");
        let l = ev(b"           <...>-5   (-------) [002] b.Hfz 1.000001: x_y: ");
        assert_eq!(l.comm, b"<...>");
        assert_eq!(l.tgid, None);
        assert_eq!(l.fields, b"");
    }

    #[test]
    fn comments_lost_and_malformed() {
        assert_eq!(parse_line(b"# tracer: nop"), Parsed::Comment);
        assert_eq!(parse_line(b"   "), Parsed::Comment);
        assert_eq!(parse_line(b"CPU:1 [LOST 42 EVENTS]"), Parsed::Lost(42));
        for preamble in [
            &b"version = 6"[..],
            b"cpus=2",
            b"CPU 0 is empty",
            b"CPU0 data recorded at offset=0x5a5000",
            b"    4096 bytes in size",
        ] {
            assert_eq!(parse_line(preamble), Parsed::Comment);
        }
        assert_eq!(parse_line(b"garbage"), Parsed::Malformed);
        assert_eq!(parse_line(b"dd-x [001] ..... 1.0: e: f"), Parsed::Malformed);
        assert_eq!(parse_line(b"dd-1 [001] .q... 1.0: e: f"), Parsed::Malformed);
        assert_eq!(
            parse_line(b"dd-1 [001] ..... 1.0x: e: f"),
            Parsed::Malformed
        );
        assert_eq!(parse_line(b"dd-1 [001] ..... 1.0: e"), Parsed::Malformed);
    }

    /// The kernel prints header lines from the first column and event lines behind the
    /// task field's padding; a task named `#worker` is an event, wherever its line starts.
    #[test]
    fn names_starting_with_hash_are_events() {
        let l = ev(b"         #worker-12      [002] ..... 7.000001: mm_vmscan_kswapd_sleep: nid=0");
        assert_eq!((l.comm, l.pid, l.cpu), (&b"#worker"[..], 12, 2));
        // Padding stripped, or a 16-byte name: the name starts the line.
        let l = ev(b"#worker-12 [002] ..... 7.000001: mm_vmscan_kswapd_sleep: nid=0");
        assert_eq!((l.comm, l.pid, l.cpu), (&b"#worker"[..], 12, 2));
        let l = ev(b"# tracer: nop-1  [000] d.h1 3.5: mm_vmscan_kswapd_wake: nid=0 order=0");
        assert_eq!(
            (l.comm, l.pid, l.event),
            (&b"# tracer: nop"[..], 1, &b"mm_vmscan_kswapd_wake"[..])
        );
        for header in [
            &b"# tracer: nop"[..],
            b"#",
            b"# entries-in-buffer/entries-written: 103/103   #P:4",
            b"#                                _-----=> irqs-off/BH-disabled",
            b"#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
            b"#              | |         |   |||||     |         |",
            b"##### CPU 2 buffer started ####",
        ] {
            assert_eq!(
                parse_line(header),
                Parsed::Comment,
                "{}",
                String::from_utf8_lossy(header)
            );
        }
        // Behind blanks a `#` begins a task name: a line that then fails to parse is a
        // damaged event, not a comment.
        assert_eq!(
            parse_line(b"         #worker-12      [002] ..... 7.0x: e: f"),
            Parsed::Malformed
        );
        assert_eq!(parse_line(b"   # tracer: nop"), Parsed::Malformed);
    }

    #[test]
    fn brackets_in_names_are_not_the_cpu_field() {
        let l = ev(b"kworker/u8:0 [0] x-55  [001] ....  1.0: mm_vmscan_kswapd_sleep: nid=0");
        assert_eq!(l.comm, b"kworker/u8:0 [0] x");
        assert_eq!((l.pid, l.cpu, l.ts_ns), (55, 1, 1_000_000_000));
        assert_eq!(
            (l.irq_flags, l.event),
            (&b"...."[..], &b"mm_vmscan_kswapd_sleep"[..])
        );
        let l = ev(b" w [3] -2-77      (     70) [004] ..... 2.5: mm_vmscan_kswapd_sleep: nid=1");
        assert_eq!(
            (l.comm, l.pid, l.tgid, l.cpu),
            (&b"w [3] -2"[..], 77, Some(70), 4)
        );
        // A name holding a whole context of its own (15 bytes hold one), at the kernel's
        // place and with the padding stripped (found from the right).
        for line in [
            &b"  -1 [0] 1.0: e:-4242    [017] ..... 9.000002: mm_vmscan_kswapd_sleep: nid=0"[..],
            b"-1 [0] 1.0: e:-4242 [017] ..... 9.000002: mm_vmscan_kswapd_sleep: nid=0",
        ] {
            let l = ev(line);
            assert_eq!(l.comm, b"-1 [0] 1.0: e:");
            assert_eq!((l.pid, l.cpu, l.ts_ns), (4242, 17, 9_000_002_000));
            assert_eq!(
                (l.event, l.fields),
                (&b"mm_vmscan_kswapd_sleep"[..], &b"nid=0"[..])
            );
        }
        // A `[n] ` at the kernel's place (a name longer than 16 bytes) is taken only if the
        // line parses from it.
        let l = ev(b"               a-1 [0] zz-12 [003] ..... 1.0: e: f");
        assert_eq!((l.comm, l.pid, l.cpu), (&b"a-1 [0] zz"[..], 12, 3));
        // A `[n] ` in the event's text comes first from the right, and is passed over.
        let l = ev(b"dd-1 [001] ..... 1.0: e: [123] x");
        assert_eq!(
            (l.pid, l.cpu, l.event, l.fields),
            (1, 1, &b"e"[..], &b"[123] x"[..])
        );
    }
}
