//! Input: a path or `-` (stdin), plain text, gzip or zstd (detected by magic bytes), read
//! in fixed-size chunks and split into lines with memchr. Memory stays constant whatever
//! the file size: one buffer of [`CHUNK`] bytes, grown only for a line longer than it and
//! capped at [`MAX_LINE`] (longer lines are skipped and reported as malformed). A plain
//! file can instead be mapped whole ([`map_plain`]) and its lines split in place
//! ([`for_each_line_in`], [`split_blocks`]), so that several threads can decode it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

pub const CHUNK: usize = 1 << 20;
pub const MAX_LINE: usize = 16 << 20;

/// Opens `path` (`-` = stdin) and transparently decompresses gzip (multi-member, as
/// mmtests' `ftrace-*.gz`) or zstd.
pub fn open_input(path: &str) -> io::Result<Box<dyn Read>> {
    let raw: Box<dyn Read> = if path == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(File::open(path)?)
    };
    decompress(raw)
}

/// Wraps a reader in the decoder its first bytes call for.
pub fn decompress<'r>(raw: Box<dyn Read + 'r>) -> io::Result<Box<dyn Read + 'r>> {
    let mut buf = BufReader::with_capacity(CHUNK, raw);
    let head = buf.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(buf))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::stream::read::Decoder::with_buffer(buf)?)
    } else {
        Box::new(buf)
    })
}

/// Calls `f(line_number, line)` for every line (1-based numbers, `\n` stripped). A line
/// longer than [`MAX_LINE`] is passed as an empty slice flagged `too_long = true`.
pub fn for_each_line<R: Read + ?Sized>(
    r: &mut R,
    mut f: impl FnMut(u64, &[u8], bool),
) -> io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut start = 0; // first byte of the pending (incomplete) line
    let mut end = 0; // bytes valid in buf
    let mut lineno: u64 = 0;
    let mut skipping = false; // inside a too-long line
    loop {
        if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            } else if buf.len() < MAX_LINE {
                buf.resize((buf.len() * 2).min(MAX_LINE), 0);
            } else {
                // A line longer than MAX_LINE: drop what we have and skip to its end.
                skipping = true;
                end = 0;
            }
        }
        let n = match r.read(&mut buf[end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if end > start || skipping {
                lineno += 1;
                f(
                    lineno,
                    if skipping { &[] } else { &buf[start..end] },
                    skipping,
                );
            }
            return Ok(lineno);
        }
        let scan_from = end;
        end += n;
        for nl in memchr::memchr_iter(b'\n', &buf[scan_from..end]) {
            let nl = scan_from + nl;
            lineno += 1;
            if skipping {
                f(lineno, &[], true);
                skipping = false;
            } else {
                f(lineno, &buf[start..nl], false);
            }
            start = nl + 1;
        }
        if buf.len() > CHUNK && start == end {
            // A long line has been consumed: give the memory back.
            buf.truncate(CHUNK);
            buf.shrink_to_fit();
            start = 0;
            end = 0;
        }
    }
}

/// [`for_each_line`] over bytes in memory: the same lines with the same numbers (from 1),
/// a line of [`MAX_LINE`] bytes or more passed as an empty slice flagged `too_long`.
/// Returns the number of lines.
pub fn for_each_line_in<'a>(data: &'a [u8], mut f: impl FnMut(u64, &'a [u8], bool)) -> u64 {
    let mut lineno = 0;
    let mut start = 0;
    let mut put = |l: &'a [u8]| {
        lineno += 1;
        if l.len() >= MAX_LINE {
            f(lineno, &[], true);
        } else {
            f(lineno, l, false);
        }
    };
    for nl in memchr::memchr_iter(b'\n', data) {
        put(&data[start..nl]);
        start = nl + 1;
    }
    if start < data.len() {
        put(&data[start..]);
    }
    lineno
}

/// Splits `data` into blocks of about `size` bytes that end at line ends: ascending offsets
/// from 0 to `data.len()` (just `[0]` for no data), every inner one just after a `\n`.
pub fn split_blocks(data: &[u8], size: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    let mut at = 0;
    while at < data.len() {
        let from = at + size.max(1) - 1;
        at = match data
            .get(from..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
        {
            Some(i) => from + i + 1,
            None => data.len(),
        };
        bounds.push(at);
    }
    bounds
}

/// Maps `file` into memory if it is a regular, non-empty, uncompressed file that can be
/// mapped; `None` sends it to the streaming reader ([`decompress`]), as it does pipes,
/// compressed files and the pseudo-files of tracefs (which report no size). The file must
/// not be truncated while mapped (the read would fault); a file still growing is read up to
/// its size at the time it was opened.
pub fn map_plain(file: &File) -> io::Result<Option<memmap2::Mmap>> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: memmap2's contract is that no one changes or truncates the file while it is
    // mapped: the analysis keeps `&str`s into the map that it checked as ASCII, and a
    // truncated file's pages fault (SIGBUS). Trace files are written once, before they are
    // reported on; the user docs (docs/tracing.md, `trace report --help`) say the file must
    // be left alone while the report reads it, and `-j 1` never maps it.
    let map = match unsafe { memmap2::Mmap::map(file) } {
        Ok(m) => m,
        Err(_) => return Ok(None),
    };
    if map.starts_with(&[0x1f, 0x8b]) || map.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Ok(None);
    }
    Ok(Some(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lines_across_chunks() {
        let mut text = Vec::new();
        for i in 0..300_000 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        text.extend_from_slice(b"last-no-newline");
        let mut n = 0;
        let mut last = Vec::new();
        let total = for_each_line(&mut &text[..], |no, l, long| {
            assert!(!long);
            n += 1;
            assert_eq!(no, n);
            if no == 12345 {
                assert_eq!(l, b"line 12344");
            }
            last = l.to_vec();
        })
        .unwrap();
        assert_eq!(total, 300_001);
        assert_eq!(last, b"last-no-newline");
    }

    /// The lines of `for_each_line` (streamed) and `for_each_line_in` (in memory).
    fn both_ways(text: &[u8]) -> [Vec<(u64, Vec<u8>, bool)>; 2] {
        let mut streamed = Vec::new();
        for_each_line(&mut &text[..], |no, l, long| {
            streamed.push((no, l.to_vec(), long))
        })
        .unwrap();
        let mut mapped = Vec::new();
        let n = for_each_line_in(text, |no, l, long| mapped.push((no, l.to_vec(), long)));
        assert_eq!(n, mapped.len() as u64);
        [streamed, mapped]
    }

    #[test]
    fn in_memory_lines_are_the_streamed_lines() {
        for text in [
            &b""[..],
            b"\n",
            b"\n\n",
            b"a",
            b"a\n",
            b"a\nbc",
            b"a\n\nbc\n",
        ] {
            let [s, m] = both_ways(text);
            assert_eq!(s, m, "{text:?}");
        }
        // Lines at the length limit, one below it, and last without a newline.
        let mut text = vec![b'x'; MAX_LINE - 1];
        text.push(b'\n');
        text.extend(std::iter::repeat_n(b'y', MAX_LINE));
        text.extend_from_slice(b"\nshort\n");
        text.extend(std::iter::repeat_n(b'z', MAX_LINE + 3));
        let [s, m] = both_ways(&text);
        let shape = |v: &[(u64, Vec<u8>, bool)]| {
            v.iter()
                .map(|(no, l, long)| (*no, l.len(), *long))
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&s), shape(&m));
    }

    #[test]
    fn blocks_end_at_line_ends() {
        let text = b"aaaa\nbb\n\ncccccccc\nd";
        for size in 0..30 {
            let b = split_blocks(text, size);
            assert_eq!((b[0], *b.last().unwrap()), (0, text.len()));
            for w in b.windows(2) {
                assert!(w[0] < w[1]);
            }
            for &i in &b[1..b.len() - 1] {
                assert_eq!(text[i - 1], b'\n');
            }
        }
        assert_eq!(split_blocks(b"", 4), [0]);
        assert_eq!(split_blocks(b"ab\ncd\n", 1), [0, 3, 6]);
    }

    #[test]
    fn decompresses_gzip_and_zstd() {
        use std::io::Write;
        let text = b"a\nb\nc\n".repeat(1000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let zs = zstd::encode_all(&text[..], 3).unwrap();
        for data in [gz, zs, text.clone()] {
            let mut r = decompress(Box::new(io::Cursor::new(data))).unwrap();
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert_eq!(out, text);
        }
    }
}
