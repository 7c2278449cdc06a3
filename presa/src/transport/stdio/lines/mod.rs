//! The stdio line reader: it splits the input into lines (one JSON-RPC message each),
//! never holding more than the line bound, and says when a line is over it.
//!
//! A line is what comes before a `\n`, without it and without a `\r` just before it; a
//! last line with no `\n` after it is a line too, taken as it is. A line of more than
//! `max` bytes (counting that `\r`) is reported once as [`Line::TooLong`] and skipped:
//! reading goes on after its `\n` (or ends, at the end of the input). Lines are bytes,
//! not text: one that is not UTF-8 still reaches the JSON decoder, which answers it
//! -32700 as it answers any other broken message.
//!
//! Both forms call `before_read` right before each read of the underlying reader, which
//! may wait (the read loop hands its batch of answers to the writer there), and at no
//! other time.
//!
//! The reader exists twice. The one that serves (`fast`) reads into one buffer, finds
//! line ends a vector at a time, and hands out a line that lies whole in its buffer where
//! it lies. Its twin (`reference`) is tokio-util's byte-level codec,
//! `AnyDelimiterCodec` with a length limit, driven by hand over a `BytesMut`. Not
//! `LinesCodec`: it refuses a line that is not UTF-8, which must instead reach the
//! decoder. Not `FramedRead` either: its stream ends at the first decoding error, where an
//! over-long line must be reported and reading go on. The codec says a line is too long
//! as soon as it holds more than `max` bytes of it, the fast reader once the line has
//! ended; both report the same lines, in the same order, which the differential tests
//! below hold them to. Building presa without its `fast` feature serves with the twin.

#[cfg(any(test, feature = "fast"))]
mod fast;
#[cfg(any(test, not(feature = "fast")))]
mod reference;
#[cfg(test)]
mod tests;

#[cfg(feature = "fast")]
pub(super) use fast::Lines;
#[cfg(not(feature = "fast"))]
pub(super) use reference::Lines;

use std::io;

/// What reading one line gives.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// A line, without its `\n` or `\r\n`, valid until the next line is read.
    Text(&'a [u8]),
    /// A line longer than the bound, now skipped.
    TooLong,
    /// The end of the input.
    Eof,
}

/// Reads an input line by line: the interface both forms implement (each also has
/// `Lines::new(reader, max)`, `max` being the longest line accepted).
pub(super) trait ReadLines {
    /// The next line. `before_read` runs right before each read of the underlying
    /// reader (a read may wait).
    async fn next_line(&mut self, before_read: &mut impl FnMut()) -> io::Result<Line<'_>>;
}
