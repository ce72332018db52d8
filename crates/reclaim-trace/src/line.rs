//! One line of `/sys/kernel/tracing/trace` or `trace_pipe` text.
//!
//! Models `trace_print_context()` (kernel/trace/trace_output.c, ~5.10 and 6.x):
//! `"%16s-%-7d "` task-pid, optional `"(%7d) "` tgid (record-tgid), `"[%03d] "` CPU, the
//! latency field (irq-info, on by default: 4 characters up to ~5.10, 5 in 6.x, absent when
//! irq-info is off or in 2.6.3x output), `" %5lu.%06lu: "` timestamp, then `"<event>: "` and
//! the TP_printk text. Comm may contain spaces and dashes, so the line is anchored on the
//! `[cpu]` field rather than split on whitespace (trace-vmscan-postprocess.pl's regex
//! `[a-zA-Z0-9-]*` misreads such names).

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

/// Finds the ` [NNN]` CPU field: the first `[` followed by digits and `]` whose `]` is
/// followed by a space. Returns (index of `[`, cpu, index after `]`).
///
/// The kernel pads task-pid to `%16s-%-7d `, so the field is at byte 25 unless the name or
/// pid overflows its width (or a tgid column follows): that place is tried first.
#[inline]
fn find_cpu(line: &[u8]) -> Option<(usize, u32, usize)> {
    if let Some(&[b'[', a, b, c, b']', b' ']) = line.get(25..31) {
        if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() {
            let cpu = (a - b'0') as u32 * 100 + (b - b'0') as u32 * 10 + (c - b'0') as u32;
            return Some((25, cpu, 30));
        }
    }
    let mut from = 0;
    while let Some(off) = find_byte(b'[', &line[from..]) {
        let open = from + off;
        let mut i = open + 1;
        let mut cpu: u32 = 0;
        while i < line.len() && line[i].is_ascii_digit() && i - open <= 6 {
            cpu = cpu * 10 + (line[i] - b'0') as u32;
            i += 1;
        }
        if i > open + 1 && i + 1 < line.len() && line[i] == b']' && line[i + 1] == b' ' {
            return Some((open, cpu, i + 1));
        }
        from = open + 1;
    }
    None
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
    let Some((open, cpu, after)) = find_cpu(line) else {
        let body = trim(line);
        return match body.first() {
            None | Some(b'#') => Parsed::Comment,
            _ => lost_or_malformed(body),
        };
    };
    // task-pid and optional (tgid). The task's first character is the line's first
    // non-blank one: a `#` there makes the line a comment.
    let mut task = trim(&line[..open]);
    if task.first() == Some(&b'#') {
        return Parsed::Comment;
    }
    let mut tgid = None;
    if let [head @ .., b')'] = task {
        if let Some(p) = rfind_byte(b'(', head) {
            let inner = trim(&head[p + 1..]);
            tgid = match inner {
                [b'-', ..] => None, // "(-------)": tgid unknown
                _ => match parse_u64(inner).and_then(|v| u32::try_from(v).ok()) {
                    Some(v) => Some(v),
                    None => return Parsed::Malformed,
                },
            };
            task = trim(&head[..p]);
        }
    }
    let Some(dash) = rfind_byte(b'-', task) else {
        return Parsed::Malformed;
    };
    let Some(pid) = parse_u64(&task[dash + 1..]).and_then(|v| u32::try_from(v).ok()) else {
        return Parsed::Malformed;
    };
    let comm = trim(&task[..dash]);

    // [irq-flags] timestamp:
    let mut rest = &line[after..];
    while let [b' ', r @ ..] = rest {
        rest = r;
    }
    let (irq_flags, ts_ns, mut rest) = match context_fast(rest) {
        Some(x) => x,
        None => match context_general(rest) {
            Some(x) => x,
            None => return Parsed::Malformed,
        },
    };
    while let [b' ', r @ ..] = rest {
        rest = r;
    }
    // event: fields. One pass finds the ':' and checks the name's characters.
    let Some(colon) = rest.iter().position(|&c| !NAME_CHAR[c as usize]) else {
        return Parsed::Malformed;
    };
    if colon == 0 || rest[colon] != b':' {
        return Parsed::Malformed;
    }
    let event = &rest[..colon];
    let mut fields = &rest[colon + 1..];
    if let [b' ', r @ ..] = fields {
        fields = r;
    }
    if let [r @ .., b'\r'] = fields {
        fields = r;
    }
    Parsed::Event(Line {
        comm,
        pid,
        tgid,
        cpu,
        irq_flags,
        ts_ns,
        event,
        fields,
    })
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
}
