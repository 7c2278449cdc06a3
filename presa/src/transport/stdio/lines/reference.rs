//! The line reader's plain twin: tokio-util's `AnyDelimiterCodec`, splitting at `\n`
//! with a length limit, driven by hand over a `BytesMut` (the module above says why not
//! `LinesCodec` or `FramedRead`).

use super::{Line, ReadLines};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::bytes::{Bytes, BytesMut};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// How much room the buffer has for each read.
const READ_BYTES: usize = 64 * 1024;

/// Lines of `R`, split by the codec.
pub(crate) struct Lines<R> {
    reader: R,
    codec: AnyDelimiterCodec,
    /// Read and not yet split off: at most the start of one line (`max` bytes) and one
    /// read.
    buf: BytesMut,
    /// The last line handed out.
    line: Bytes,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of `reader`, at most `max` bytes each.
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Lines {
            reader,
            codec: AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), max),
            buf: BytesMut::new(),
            line: Bytes::new(),
        }
    }
}

impl<R: AsyncRead + Unpin> ReadLines for Lines<R> {
    async fn next_line(&mut self, before_read: &mut impl FnMut()) -> io::Result<Line<'_>> {
        loop {
            // Past an over-long line's error the codec drops its bytes up to its `\n`
            // and goes on with the next line.
            match self.codec.decode(&mut self.buf) {
                Ok(Some(line)) => {
                    self.line = line;
                    if self.line.ends_with(b"\r") {
                        self.line.truncate(self.line.len() - 1);
                    }
                    return Ok(Line::Text(&self.line));
                }
                Ok(None) => {}
                Err(error) => return too_long(error),
            }
            before_read();
            self.buf.reserve(READ_BYTES);
            if self.reader.read_buf(&mut self.buf).await? == 0 {
                // The end: what is left (no more than `max` bytes, or the codec would
                // have said so) is the last line, taken as it is.
                return match self.codec.decode_eof(&mut self.buf) {
                    Ok(Some(line)) => {
                        self.line = line;
                        Ok(Line::Text(&self.line))
                    }
                    Ok(None) => Ok(Line::Eof),
                    Err(error) => too_long(error),
                };
            }
        }
    }
}

/// What a decoding error means: a line over the bound (the codec reads nothing itself,
/// so it has no other error to give).
fn too_long<'a>(error: AnyDelimiterCodecError) -> io::Result<Line<'a>> {
    match error {
        AnyDelimiterCodecError::MaxChunkLengthExceeded => Ok(Line::TooLong),
        AnyDelimiterCodecError::Io(e) => Err(e),
    }
}
