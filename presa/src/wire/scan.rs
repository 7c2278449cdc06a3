//! Reading an object member by member from one of two sources: serde_json's map access
//! (any input), or a [`Cursor`] over the message's bytes, which reads the common message
//! without serde's machinery. The readers of the envelope, `params`, `_meta` and
//! `clientInfo` are written once, against [`Members`], and run over both.
//!
//! The cursor reads only what it can read plainly: objects whose keys have no escapes,
//! strings without escapes, small non-negative integers. Any other value it hands to
//! serde_json where it stands, through the same `Deserialize` the map access uses. What
//! it cannot read at all (a key with an escape or starting with `$`, a `params` that is
//! not an object, deep nesting, a syntax error) makes it give up with [`Unread`], and
//! the decoder reads the whole message again through serde_json. So the cursor never
//! rejects: every answer to a malformed message comes from serde_json, and a test
//! checks that whatever the cursor reads, it reads exactly as serde_json does.
//!
//! Why: every request carries a dozen keys and short strings in its envelope and
//! `_meta`, and serde_json reads each through its generic map access; the cursor reads
//! them where they lie. Without presa's `fast` feature the cursor is not used.

#![cfg_attr(
    not(feature = "fast"),
    allow(
        dead_code,
        reason = "without the `fast` feature serde_json reads every message; the readers keep their cursor side, and the tests run it"
    )
)]

use serde::Deserialize;
use serde::de::{DeserializeSeed, MapAccess};
use std::borrow::Cow;
use std::marker::PhantomData;

/// The cursor gave up: the message is read again through serde_json.
#[derive(Debug)]
pub(crate) struct Unread;

/// What [`Members::next`] (or [`Members::next_of`]) found. `K` names the keys a reader
/// expects ([`Expected`]); [`Members::next`] expects none.
pub(crate) enum Next<'de, K = std::convert::Infallible> {
    /// One of the keys the reader expects, and its name; its value is read next.
    Known(K, &'static str),
    /// Any other key; its value is read next, with [`Members::value`] or [`Members::seed`].
    Key(Cow<'de, str>),
    /// The end of the object.
    End,
    /// The "object" was serde_json's disguise of a number (see
    /// `wire::number_in_disguise`): this number. Only serde_json's map access gives it.
    Number(serde_json::Number),
}

/// An object's members, as a reader sees them.
pub(crate) trait Members<'de> {
    /// Why a member could not be read.
    type Error;

    /// The next key, or the end.
    fn next(&mut self) -> Result<Next<'de>, Self::Error>;

    /// The next key, or the end, for a reader that expects the keys in `expected`: one
    /// of those comes as [`Next::Known`], from either source (the cursor recognises them
    /// by a look at their bytes; serde_json's keys are looked up by name), so the reader
    /// matches on its own key type instead of comparing strings again. Any other key is
    /// read as by [`Members::next`].
    fn next_of<const N: usize, K: Copy>(
        &mut self,
        expected: &Expected<N, K>,
    ) -> Result<Next<'de, K>, Self::Error> {
        Ok(match self.next()? {
            Next::Key(key) => match expected.named(&key) {
                Some((key, name)) => Next::Known(key, name),
                None => Next::Key(key),
            },
            Next::End => Next::End,
            Next::Number(number) => Next::Number(number),
            Next::Known(never, _) => match never {},
        })
    }

    /// The value of the key just read, through `seed`.
    fn seed<S: ScanSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Self::Error>;

    /// The value of the key just read.
    fn value<T: Scan<'de>>(&mut self) -> Result<T, Self::Error> {
        self.seed(PhantomData)
    }
}

/// A value the cursor can read (reading itself what it can, and handing the rest to
/// serde_json with [`Cursor::delegate`]).
pub(crate) trait Scan<'a>: Deserialize<'a> {
    /// Reads the value at the cursor.
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread>;
}

/// A seed the cursor can read with.
pub(crate) trait ScanSeed<'a>: DeserializeSeed<'a> {
    /// Reads the value at the cursor.
    fn scan(self, c: &mut Cursor<'a>) -> Result<Self::Value, Unread>;
}

impl<'a, T: Scan<'a>> ScanSeed<'a> for PhantomData<T> {
    fn scan(self, c: &mut Cursor<'a>) -> Result<T, Unread> {
        T::scan(c)
    }
}

/// The keys (or string values) a reader expects, each with what the reader calls it
/// (`K`, nothing for string values). The cursor compares eight bytes where one would end
/// (its closing quote among them) with each name's last eight, a word of arithmetic, and
/// only a name that matches them in full: a known key is read without a search for where
/// it ends and, being a known name, is a `&'static str` whose bytes need no check.
pub(crate) struct Expected<const N: usize, K = ()> {
    names: [&'static str; N],
    keys: [K; N],
    /// For each name: where its last eight bytes with the closing quote start (0 for a
    /// shorter name), those bytes as a little-endian word, and the mask of the bytes
    /// that count.
    ends: [(usize, u64, u64); N],
}

impl<const N: usize> Expected<N> {
    /// The expectation of `names` (none of which needs escaping in JSON).
    pub(crate) const fn new(names: [&'static str; N]) -> Self {
        Expected {
            names,
            keys: [(); N],
            ends: ends_of(&names),
        }
    }
}

impl<K> Expected<0, K> {
    /// No expectation: every key is read as it is.
    const NONE: Self = Expected {
        names: [],
        keys: [],
        ends: [],
    };
}

impl<const N: usize, K: Copy> Expected<N, K> {
    /// The expectation of the keys of `entries`, each known to the reader as its `K`
    /// (none of the keys needs escaping in JSON; `N` is at least one).
    pub(crate) const fn keyed(entries: [(&'static str, K); N]) -> Self {
        let mut names = [""; N];
        let mut keys = [entries[0].1; N];
        let mut i = 0;
        while i < N {
            names[i] = entries[i].0;
            keys[i] = entries[i].1;
            i += 1;
        }
        Expected {
            names,
            keys,
            ends: ends_of(&names),
        }
    }

    /// The expected key named `name`, and its static name.
    fn named(&self, name: &str) -> Option<(K, &'static str)> {
        let mut entries = self.names.iter().zip(&self.keys);
        entries.find(|(n, _)| **n == name).map(|(&n, &k)| (k, n))
    }

    /// The expected key whose name starts `bytes` (just after its opening quote),
    /// followed by its closing quote.
    fn find(&self, bytes: &[u8]) -> Option<(K, &'static str)> {
        let entries = self.names.iter().zip(&self.keys).zip(&self.ends);
        for ((&name, &key), &(from, word, mask)) in entries {
            let Some(end) = bytes.get(from..from + 8) else {
                // Fewer than eight bytes left where the word would be read (a short
                // name closing the text): the name and its quote compared as they are.
                let quoted = bytes.get(..name.len() + 1);
                if quoted.is_some_and(|q| q.ends_with(b"\"") && q.starts_with(name.as_bytes())) {
                    return Some((key, name));
                }
                continue;
            };
            let mut at = [0; 8];
            at.copy_from_slice(end);
            if u64::from_le_bytes(at) & mask != word {
                continue;
            }
            // Eight bytes or fewer with the quote: the word held them all.
            if from == 0 || bytes.get(..from) == name.as_bytes().get(..from) {
                return Some((key, name));
            }
        }
        None
    }
}

/// For each of `names`: where its last eight bytes with the closing quote start (0 for a
/// shorter name), those bytes as a little-endian word, and the mask of the bytes that
/// count.
const fn ends_of<const N: usize>(names: &[&'static str; N]) -> [(usize, u64, u64); N] {
    let mut ends = [(0, 0, 0); N];
    let mut i = 0;
    while i < N {
        let name = names[i].as_bytes();
        // The name and its quote, the last eight bytes of them.
        let quoted = name.len() + 1;
        let from = quoted.saturating_sub(8);
        let (mut word, mut mask, mut j) = (0u64, 0u64, from);
        while j < quoted {
            let byte = if j < name.len() { name[j] } else { b'"' };
            word |= (byte as u64) << (8 * (j - from));
            mask |= 0xff << (8 * (j - from));
            j += 1;
        }
        ends[i] = (from, word, mask);
        i += 1;
    }
    ends
}

/// serde_json's map access as [`Members`]: each key passed through
/// `wire::number_in_disguise`.
pub(crate) struct FromSerde<A> {
    map: A,
    first: bool,
}

impl<A> FromSerde<A> {
    /// The members of `map`.
    pub(crate) fn new(map: A) -> Self {
        FromSerde { map, first: true }
    }
}

impl<'de, A: MapAccess<'de>> Members<'de> for FromSerde<A> {
    type Error = A::Error;

    fn next(&mut self) -> Result<Next<'de>, A::Error> {
        let Some(super::Key(key)) = self.map.next_key()? else {
            return Ok(Next::End);
        };
        Ok(
            match super::number_in_disguise(&mut self.map, &mut self.first, &key)? {
                Some(number) => Next::Number(number),
                None => Next::Key(key),
            },
        )
    }

    fn seed<S: ScanSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// How many objects deep the cursor reads itself (the message's own object counts);
/// deeper, it gives up.
const MAX_DEPTH: u32 = 16;

/// How many `[` and `{` bytes a value handed to serde_json may hold (inside its strings
/// too). serde_json refuses nesting past 128 levels counted from the message's start; a
/// value handed over is counted afresh, so the cursor takes only values whose count,
/// which is never below their depth, keeps them far below the limit (at most
/// `MAX_DEPTH + MAX_HANDED_NESTING` levels in all), which neither parse refuses. A value
/// with more, such as an array of many objects, sends the message to serde_json whole:
/// slower, not different.
const MAX_HANDED_NESTING: usize = 64;

/// A position in one message's text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`, or `None` when `text` holds a control character
    /// (a byte below 0x20: inside a string serde_json refuses it, and outside it is
    /// whitespace the cursor does not expect). Checked here once, for the whole text, so
    /// a string needs only a search for its closing quote.
    pub(crate) fn new(text: &'a str) -> Option<Self> {
        // No early exit, so the loop runs a vector at a time.
        let controls = text.bytes().fold(false, |any, b| any | (b < 0x20));
        (!controls).then_some(Cursor {
            text,
            at: 0,
            depth: 0,
        })
    }

    /// The next byte after any spaces, which are skipped (the only whitespace a text
    /// with a cursor holds).
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        match self.text.as_bytes().get(self.at) {
            Some(&b) if b > b' ' => Some(b),
            _ => self.peek_past_whitespace(),
        }
    }

    /// [`Cursor::peek`] where whitespace may stand.
    fn peek_past_whitespace(&mut self) -> Option<u8> {
        // Of JSON's four whitespace bytes only the space can stand here: a text holding
        // a tab or a line break has no cursor (see [`Cursor::new`]).
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if b != b' ' {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// Whether the next byte after whitespace is `b`; it is taken when it is.
    fn eat(&mut self, b: u8) -> bool {
        let found = self.peek() == Some(b);
        self.at += usize::from(found);
        found
    }

    /// Nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), Unread> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Unread),
        }
    }

    /// Reads an object with `read`, which sees its members.
    pub(crate) fn object<T>(
        &mut self,
        read: impl FnOnce(&mut Object<'_, 'a>) -> Result<T, Unread>,
    ) -> Result<T, Unread> {
        if self.depth == MAX_DEPTH || !self.eat(b'{') {
            return Err(Unread);
        }
        self.depth += 1;
        let mut object = Object {
            cursor: self,
            state: State::Opened,
        };
        let value = read(&mut object)?;
        // Every reader reads to the end (only serde_json's disguised numbers stop one
        // early, and the cursor gives none).
        if !matches!(object.state, State::Ended) {
            return Err(Unread);
        }
        self.depth -= 1;
        Ok(value)
    }

    /// A string without escapes, borrowed; when the next value is anything else, the
    /// cursor moves only past the whitespace before it.
    pub(crate) fn plain(&mut self) -> Option<&'a str> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.at + 1;
        let end = start + closing_quote(self.text.as_bytes().get(start..)?)?;
        // The text is UTF-8 and the quotes are ASCII: the slice is on char boundaries.
        let s = self.text.get(start..end)?;
        self.at = end + 1;
        Some(s)
    }

    /// A string that is one of `expected` (see [`Expected`]), as its static name; when
    /// the next value is anything else, the cursor moves only past the whitespace
    /// before it.
    #[inline]
    pub(crate) fn known<const N: usize, K: Copy>(
        &mut self,
        expected: &Expected<N, K>,
    ) -> Option<(K, &'static str)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let (key, name) = expected.find(self.text.as_bytes().get(self.at + 1..)?)?;
        self.at += name.len() + 2;
        Some((key, name))
    }

    /// A non-negative integer of at most 18 digits (so any int64 reader takes it), with
    /// no fraction or exponent; when the next value is anything else, the cursor moves
    /// only past the whitespace before it.
    #[inline]
    pub(crate) fn small_uint(&mut self) -> Option<u64> {
        self.peek()?;
        let bytes = self.text.as_bytes().get(self.at..)?;
        let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let plain = (1..=18).contains(&digits)
            && (digits == 1 || bytes[0] != b'0')
            && !matches!(bytes.get(digits), Some(b'.' | b'e' | b'E'));
        if !plain {
            return None;
        }
        let n = bytes[..digits]
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        self.at += digits;
        Some(n)
    }

    /// Hands the value at the cursor to serde_json.
    pub(crate) fn delegate<T: Deserialize<'a>>(&mut self) -> Result<T, Unread> {
        let rest = self.text.get(self.at..).ok_or(Unread)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = values.next().ok_or(Unread)?.map_err(|_| Unread)?;
        let used = values.byte_offset();
        let nesting = rest.as_bytes()[..used]
            .iter()
            .filter(|b| matches!(b, b'[' | b'{'))
            .count();
        if nesting > MAX_HANDED_NESTING {
            return Err(Unread);
        }
        self.at += used;
        Ok(value)
    }
}

/// Where the string whose content starts `bytes` closes, or `None` when an escape comes
/// first (or it never closes). Eight bytes at a time, in plain arithmetic: a message's
/// keys and strings are short, too short for a vector search to pay for its setup.
fn closing_quote(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    // The high bit of each byte of `v` that is zero (exact for the lowest such byte).
    let zeros = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        let stops = zeros(v ^ (ONES * u64::from(b'"'))) | zeros(v ^ (ONES * u64::from(b'\\')));
        if stops != 0 {
            // Little-endian: the lowest flagged byte comes first in the text.
            let first = at + (stops.trailing_zeros() / 8) as usize;
            return (bytes.get(first) == Some(&b'"')).then_some(first);
        }
        at += 8;
    }
    let tail = bytes.get(at..)?;
    let i = tail.iter().position(|&b| b == b'"' || b == b'\\')?;
    (tail[i] == b'"').then_some(at + i)
}

/// Where an [`Object`] stands.
enum State {
    /// Just after `{`.
    Opened,
    /// After a member's value.
    Between,
    /// After `}`.
    Ended,
}

/// An object being read at a [`Cursor`].
pub(crate) struct Object<'c, 'a> {
    cursor: &'c mut Cursor<'a>,
    state: State,
}

impl<'a> Members<'a> for Object<'_, 'a> {
    type Error = Unread;

    #[inline]
    fn next(&mut self) -> Result<Next<'a>, Unread> {
        self.next_of(&Expected::NONE)
    }

    #[inline]
    fn next_of<const N: usize, K: Copy>(
        &mut self,
        expected: &Expected<N, K>,
    ) -> Result<Next<'a, K>, Unread> {
        let c = &mut *self.cursor;
        let more = match self.state {
            State::Opened => !c.eat(b'}'),
            State::Between if c.eat(b',') => true,
            State::Between if c.eat(b'}') => false,
            State::Between | State::Ended => return Err(Unread),
        };
        if !more {
            self.state = State::Ended;
            return Ok(Next::End);
        }
        let next = match c.known(expected) {
            Some((key, name)) => Next::Known(key, name),
            // A key starting with `$` may be one of serde_json's tokens: left to it.
            None => Next::Key(Cow::Borrowed(
                c.plain().filter(|k| !k.starts_with('$')).ok_or(Unread)?,
            )),
        };
        if !c.eat(b':') {
            return Err(Unread);
        }
        self.state = State::Between;
        Ok(next)
    }

    fn seed<S: ScanSeed<'a>>(&mut self, seed: S) -> Result<S::Value, Unread> {
        seed.scan(self.cursor)
    }
}

impl<'a> Scan<'a> for super::Any {
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        match c.plain() {
            Some(_) => Ok(super::Any),
            None => c.delegate(),
        }
    }
}

impl<'a> Scan<'a> for super::Text<'a> {
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        match c.plain() {
            Some(s) => Ok(super::Text(Some(Cow::Borrowed(s)))),
            None => c.delegate(),
        }
    }
}

impl<'a> Scan<'a> for super::Json {
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        use serde_json::Value;
        if let Some(s) = c.plain() {
            return Ok(super::Json(Value::String(s.to_owned())));
        }
        if let Some(n) = c.small_uint() {
            return Ok(super::Json(Value::from(n)));
        }
        match c.peek() {
            Some(b'{') => c.object(|m| super::read_object(m)).map(super::Json),
            _ => c.delegate(),
        }
    }
}
