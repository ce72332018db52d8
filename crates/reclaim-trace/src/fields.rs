//! `key=value` scanning of a tracepoint's TP_printk text, and number parsing on byte
//! slices. Scanning by key instead of by position is what lets one parser read the
//! 2.6.36-era, 3.x, 5.x and 6.x layouts of the same event (KERNEL-RECLAIM.md §8.2).

/// Iterator over the `key=value` pairs of a field text. Tokens are separated by single
/// or repeated spaces; a token without `=` (e.g. `mode=async`'s neighbour `zone_end=0x1,`)
/// is yielded with an empty key so callers can ignore it.
pub struct Pairs<'a> {
    rest: &'a [u8],
}

impl<'a> Pairs<'a> {
    pub fn new(text: &'a [u8]) -> Self {
        Pairs { rest: text }
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let mut s = self.rest;
        while let [b' ', tail @ ..] = s {
            s = tail;
        }
        if s.is_empty() {
            self.rest = s;
            return None;
        }
        let end = find_byte(b' ', s).unwrap_or(s.len());
        let token = &s[..end];
        self.rest = &s[end..];
        Some(match find_byte(b'=', token) {
            Some(eq) => (&token[..eq], &token[eq + 1..]),
            None => (&[][..], token),
        })
    }
}

/// Position of byte `c`. Most tokens are a few bytes, where a plain loop beats memchr's
/// SIMD set-up; a long one (gfp flag lists, shrinker names) goes to memchr after 32 bytes.
#[inline]
pub fn find_byte(c: u8, s: &[u8]) -> Option<usize> {
    let head = s.len().min(32);
    match s[..head].iter().position(|&b| b == c) {
        Some(i) => Some(i),
        None if s.len() > head => memchr::memchr(c, &s[head..]).map(|i| i + head),
        None => None,
    }
}

/// Position of the last byte `c` in a short slice.
#[inline]
pub fn rfind_byte(c: u8, s: &[u8]) -> Option<usize> {
    s.iter().rposition(|&b| b == c)
}

/// Parses an unsigned decimal, or hexadecimal with a `0x` prefix (`pfn=0x%lx` in 6.x,
/// `pfn=%lu` in 3.x). Trailing `,` is tolerated (compaction events print `zone_end=0x…,`).
#[inline]
pub fn parse_u64(v: &[u8]) -> Option<u64> {
    let v = match v {
        [head @ .., b','] => head,
        _ => v,
    };
    if let [b'0', b'x' | b'X', hex @ ..] = v {
        return parse_hex(hex);
    }
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let mut n: u64 = 0;
    for &c in v {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(n)
}

/// Parses bare hexadecimal digits (as `%p` prints them).
#[inline]
pub fn parse_hex(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 16 {
        return None;
    }
    // A table, not a match: hashed pointers are random digits, and a branch per digit
    // mispredicts a third of the time.
    let mut n: u64 = 0;
    let mut bad = 0u8;
    for &c in v {
        let d = HEX[c as usize];
        bad |= d;
        n = (n << 4) | (d & 0xf) as u64;
    }
    (bad & 0x80 == 0).then_some(n)
}

/// Hex digit values; 0xff for anything else.
const HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Parses a signed decimal (`%d`, `%ld`, `%lld`).
#[inline]
pub fn parse_i64(v: &[u8]) -> Option<i64> {
    match v {
        [b'-', digits @ ..] => {
            let n = parse_u64(digits)?;
            if n > i64::MAX as u64 + 1 {
                None
            } else {
                Some((n as i64).wrapping_neg())
            }
        }
        _ => i64::try_from(parse_u64(v)?).ok(),
    }
}

#[inline]
pub fn parse_i32(v: &[u8]) -> Option<i32> {
    i32::try_from(parse_i64(v)?).ok()
}

/// The value as UTF-8 text (flag names, gfp strings); `None` if not UTF-8.
#[inline]
pub fn as_str(v: &[u8]) -> Option<&str> {
    // Trace text is ASCII: check that word by word, and only run the full UTF-8
    // validation on what is not.
    if v.is_ascii() {
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(v) });
    }
    std::str::from_utf8(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_numbers() {
        let p: Vec<_> = Pairs::new(b"nid=0  order=3 bare lru=inactive_file").collect();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0], (&b"nid"[..], &b"0"[..]));
        assert_eq!(p[1], (&b"order"[..], &b"3"[..]));
        assert_eq!(p[2], (&b""[..], &b"bare"[..]));
        assert_eq!(parse_u64(b"0x1f"), Some(31));
        assert_eq!(parse_u64(b"0x640000,"), Some(0x640000));
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b"99999999999999999999999"), None);
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i32(b"4294967296"), None);
        assert_eq!(parse_hex(b"00000000bbd48286"), Some(0xbbd48286));
    }
}
