//! The line reader that serves: one buffer, filled 64 KiB at a time; line ends found a
//! vector at a time; a line that lies whole in the buffer (most do) handed out where it
//! lies, and only one that spans reads copied.

use super::{Line, ReadLines};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Lines of `R`, read with [`read_line`].
pub(crate) struct Lines<R> {
    input: Input<R>,
    /// A line that spans reads, gathered.
    line: Vec<u8>,
    /// The longest line accepted.
    max: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of `reader`, at most `max` bytes each.
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Lines {
            input: Input::new(reader),
            line: Vec::with_capacity(1024),
            max,
        }
    }
}

impl<R: AsyncRead + Unpin> ReadLines for Lines<R> {
    async fn next_line(&mut self, before_read: &mut impl FnMut()) -> io::Result<Line<'_>> {
        Ok(
            match read_line(&mut self.input, &mut self.line, self.max, before_read).await? {
                Found::Complete => Line::Text(&self.line),
                Found::Buffered(range) => Line::Text(self.input.line(range)),
                Found::TooLong => Line::TooLong,
                Found::Eof => Line::Eof,
            },
        )
    }
}

/// The input, read in chunks of up to 64 KiB. The buffer is allocated once and never
/// zero-filled (tokio's `BufReader` zeroes all of it up front, writing every page before
/// the first request is read): its pages are touched only as input arrives.
struct Input<R> {
    reader: R,
    buf: Vec<u8>,
    /// How much of `buf` has been consumed.
    start: usize,
}

impl<R: AsyncRead + Unpin> Input<R> {
    fn new(reader: R) -> Self {
        Input {
            reader,
            buf: Vec::with_capacity(64 * 1024),
            start: 0,
        }
    }

    /// The bytes read and not yet consumed, reading more when there are none (calling
    /// `before_read` first, as the read may wait); empty at the end of the input.
    async fn fill_buf(&mut self, before_read: &mut impl FnMut()) -> io::Result<&[u8]> {
        if self.start == self.buf.len() {
            before_read();
            self.buf.clear();
            self.start = 0;
            // Reads into the spare capacity, which needs no initializing.
            self.reader.read_buf(&mut self.buf).await?;
        }
        Ok(&self.buf[self.start..])
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
    }

    /// A line [`read_line`] left in the buffer (valid until the next read).
    fn line(&self, range: std::ops::Range<usize>) -> &[u8] {
        debug_assert!(
            range.end <= self.buf.len(),
            "a line read_line left in the buffer"
        );
        self.buf.get(range).unwrap_or_default()
    }
}

enum Found {
    /// A line, in `line`.
    Complete,
    /// A line that lay whole in the input's buffer, read where it lies
    /// ([`Input::line`]), without a copy.
    Buffered(std::ops::Range<usize>),
    TooLong,
    Eof,
}

/// Reads one line (without its `\n` or `\r\n`), never holding more than `max` bytes: an
/// oversize line is skipped to its end and reported as too long. A line that lies whole
/// in the input's buffer (most do) is left there; one that spans reads is gathered in
/// `line`. `before_read` runs before each read of the underlying reader.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut Input<R>,
    line: &mut Vec<u8>,
    max: usize,
    mut before_read: impl FnMut(),
) -> io::Result<Found> {
    line.clear();
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf(&mut before_read).await?;
        if buf.is_empty() {
            return Ok(if too_long {
                Found::TooLong
            } else if line.is_empty() {
                Found::Eof
            } else {
                Found::Complete
            });
        }
        let newline = memchr_newline(buf);
        if let Some(i) = newline
            && line.is_empty()
            && !too_long
            && i <= max
        {
            let len = if buf[..i].ends_with(b"\r") { i - 1 } else { i };
            let start = reader.start;
            reader.consume(i + 1);
            let end = start + len;
            return Ok(Found::Buffered(start..end));
        }
        let (chunk, consumed, done) = match newline {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        reader.consume(consumed);
        if done {
            if too_long {
                return Ok(Found::TooLong);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Found::Complete);
        }
    }
}

/// Where the first `\n` in `buf` is.
#[inline]
pub(super) fn memchr_newline(buf: &[u8]) -> Option<usize> {
    // A vector at a time, not a byte at a time: every byte of every line passes here.
    // On x86-64, memchr's SSE2 searcher, part of the x86-64 baseline and so chosen at
    // compile time: `memchr::memchr` picks AVX2 or SSE2 by asking the CPU (`cpuid`) on
    // its first call, and a virtual machine traps each `cpuid`, which every cold start
    // would pay. Elsewhere `memchr::memchr` asks nothing at run time.
    #[cfg(target_arch = "x86_64")]
    if let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return sse2.find(buf);
    }
    memchr::memchr(b'\n', buf)
}
