//! Input: a path or `-` (stdin), plain text, gzip or zstd (detected by magic bytes), read
//! in fixed-size chunks and split into lines with memchr. Memory stays constant whatever
//! the file size: one buffer of [`CHUNK`] bytes, grown only for a line longer than it and
//! capped at [`MAX_LINE`] (longer lines are skipped and reported as malformed).

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
                f(lineno, &buf[start..end], skipping);
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
