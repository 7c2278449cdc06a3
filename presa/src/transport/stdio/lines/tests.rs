//! The differential tests of the line reader: for generated inputs, handed out in
//! generated pieces (so lines span reads), the fast reader and its twin read the same
//! lines as the rule in the module doc says, and each calls `before_read` right before
//! every read and at no other time.

use super::{Line, ReadLines, fast, reference};
use futures_util::FutureExt;
use proptest::prelude::*;
use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// What happened, in order: `before_read` ran, the reader was read, a line came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    BeforeRead,
    Read,
    Line,
}

type Log = Rc<RefCell<Vec<Event>>>;

/// What one call gave, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// An input handed out in pieces of `sizes` bytes (in turn, over and over), logging
/// every read. It never makes a read wait.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    next: usize,
    log: Log,
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.log.borrow_mut().push(Event::Read);
        let size = this.sizes[this.next % this.sizes.len()];
        this.next += 1;
        let n = size.min(this.data.len() - this.at).min(buf.remaining());
        buf.put_slice(&this.data[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Reads every line of the input with the reader `make` builds, and once more past the
/// end; returns the outcomes and the log.
fn read_all<L: ReadLines>(
    data: &[u8],
    sizes: &[usize],
    make: impl FnOnce(Pieces) -> L,
) -> (Vec<Outcome>, Vec<Event>) {
    let log = Log::default();
    let mut lines = make(Pieces {
        data: data.to_vec(),
        at: 0,
        sizes: sizes.to_vec(),
        next: 0,
        log: Rc::clone(&log),
    });
    let mut outcomes = Vec::new();
    let mut ends = 0;
    // Every call gives a line or ends one, so this many calls reach the end.
    for _ in 0..data.len() + 2 {
        let mut before_read = || log.borrow_mut().push(Event::BeforeRead);
        let outcome = match lines
            .next_line(&mut before_read)
            .now_or_never()
            .expect("the input never makes a read wait")
            .expect("the input never fails")
        {
            Line::Text(text) => Outcome::Text(text.to_vec()),
            Line::TooLong => Outcome::TooLong,
            Line::Eof => Outcome::Eof,
        };
        log.borrow_mut().push(Event::Line);
        ends += usize::from(outcome == Outcome::Eof);
        outcomes.push(outcome);
        if ends == 2 {
            break;
        }
    }
    let log = log.borrow().clone();
    (outcomes, log)
}

/// Both readers' outcomes, each checked to call `before_read` right before every read
/// and only then.
fn both(data: &[u8], sizes: &[usize], max: usize) -> [Vec<Outcome>; 2] {
    let fast = read_all(data, sizes, |input| fast::Lines::new(input, max));
    let twin = read_all(data, sizes, |input| reference::Lines::new(input, max));
    for (form, (_, log)) in [("fast", &fast), ("reference", &twin)] {
        for (i, event) in log.iter().enumerate() {
            let before = i.checked_sub(1).map(|b| log[b]);
            let after = log.get(i + 1).copied();
            match event {
                Event::Read => assert_eq!(before, Some(Event::BeforeRead), "{form}: {log:?}"),
                Event::BeforeRead => assert_eq!(after, Some(Event::Read), "{form}: {log:?}"),
                Event::Line => {}
            }
        }
    }
    [fast.0, twin.0]
}

/// The lines the module doc's rule finds in `data`, then the end (twice, as `read_all`
/// reads past it).
fn expected(data: &[u8], max: usize) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    // After the last `\n`: a last line when it is not empty, taken as it is.
    let last = pieces.pop().unwrap_or_default();
    for line in pieces {
        out.push(if line.len() > max {
            Outcome::TooLong
        } else {
            Outcome::Text(line.strip_suffix(b"\r").unwrap_or(line).to_vec())
        });
    }
    if !last.is_empty() {
        out.push(if last.len() > max {
            Outcome::TooLong
        } else {
            Outcome::Text(last.to_vec())
        });
    }
    out.extend([Outcome::Eof, Outcome::Eof]);
    out
}

/// A byte of a line: mostly plain, often a `\r`, a space or a byte that is not UTF-8.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        6 => Just(b'a'),
        1 => Just(b'\r'),
        1 => Just(b' '),
        1 => Just(0xff),
        1 => Just(0xc3),
        1 => any::<u8>().prop_filter("not a line end", |b| *b != b'\n'),
    ]
}

/// A bound, an input of lines around it (blank, at it, just past it, far past it; ended
/// by `\n` or `\r\n`; the last one sometimes unended), and the sizes of the pieces it is
/// read in.
fn input() -> impl Strategy<Value = (usize, Vec<u8>, Vec<usize>)> {
    (0usize..16).prop_flat_map(|max| {
        let text = move || {
            prop_oneof![
                3 => proptest::collection::vec(byte(), 0..=max + 2),
                1 => proptest::collection::vec(byte(), 0..=3 * max + 8),
            ]
        };
        let end = prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..])];
        let lines = proptest::collection::vec((text(), end), 0..8);
        let sizes = proptest::collection::vec(1..=max + 4, 1..6);
        (Just(max), lines, text(), sizes).prop_map(|(max, lines, last, sizes)| {
            let mut data = Vec::new();
            for (line, end) in lines {
                data.extend_from_slice(&line);
                data.extend_from_slice(end);
            }
            data.extend_from_slice(&last);
            (max, data, sizes)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::wire::arbitrary::cases(1024)))]

    /// The fast reader and its twin read the same lines from any input read in any
    /// pieces, the lines the rule says.
    #[test]
    fn the_line_reader_reads_as_its_twin((max, data, sizes) in input()) {
        let [fast, twin] = both(&data, &sizes, max);
        prop_assert_eq!(&fast, &twin);
        prop_assert_eq!(fast, expected(&data, max));
    }
}

/// The bound, at it and just past it, whole or a byte at a time: a `\r` before the `\n`
/// counts, and a last line without a `\n` is bounded too.
#[test]
fn a_line_of_max_bytes_is_read_and_one_more_is_too_long() {
    let text = |t: &[u8]| Outcome::Text(t.to_vec());
    let data = b"abcd\nabcde\nabc\r\nabcd\r\n\n\xff\xfe\nabcd";
    let want = vec![
        text(b"abcd"),
        Outcome::TooLong,
        text(b"abc"),
        Outcome::TooLong,
        text(b""),
        text(b"\xff\xfe"),
        text(b"abcd"),
        Outcome::Eof,
        Outcome::Eof,
    ];
    for sizes in [&[1][..], &[3, 7], &[64]] {
        assert_eq!(both(data, sizes, 4), [want.clone(), want.clone()]);
        let past = both(b"abcd\nabcde", sizes, 4);
        let past_want = vec![text(b"abcd"), Outcome::TooLong, Outcome::Eof, Outcome::Eof];
        assert_eq!(past, [past_want.clone(), past_want]);
    }
    // Nothing at all is the end at once.
    let nothing = vec![Outcome::Eof, Outcome::Eof];
    assert_eq!(both(b"", &[1], 4), [nothing.clone(), nothing]);
}

/// The newline search finds the first newline wherever it stands: before, inside and
/// after a 16-byte vector and the 64-byte unrolled loop, in lines that start at
/// every offset within a buffer (so unaligned as well as aligned), with a second
/// newline after it; and none in a line without one.
#[test]
fn newline_search_agrees_with_a_plain_scan() {
    use fast::memchr_newline;
    let mut buf: Vec<u8> = (0..200u8).map(|i| b'a' + i % 26).collect();
    for start in 0..17 {
        for len in 0..=160 {
            let end = start + len;
            assert_eq!(memchr_newline(&buf[start..end]), None, "{start}..{end}");
            for at in 0..len {
                buf[start + at] = b'\n';
                let last = end - 1;
                let second = at + 1 < len && buf[last] != b'\n';
                if second {
                    buf[last] = b'\n';
                }
                assert_eq!(
                    memchr_newline(&buf[start..end]),
                    Some(at),
                    "{start}..{end}, newline at {at}"
                );
                if second {
                    buf[last] = b'a' + (last % 26) as u8;
                }
                buf[start + at] = b'a' + ((start + at) % 26) as u8;
            }
        }
    }
    assert_eq!(memchr_newline(b"\n\n"), Some(0));
    assert_eq!(memchr_newline(b"{\"a\":1}\r\n{}"), Some(8));
}
