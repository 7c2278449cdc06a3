//! The one reader of Server-Sent Events in the tests: blocks split on a blank line (CRLF
//! normalized), comment blocks (`: keepalive`) told apart from `data:` events, and the
//! JSON of each event schema-checked as a message answering the request that opened the
//! stream. [`parse`] reads a whole body; [`SseStream`] reads a response as it arrives.
//!
//! A legacy session's streams ([`Check::Legacy`]) carry event ids, priming events (an
//! `id:` and empty data) and `retry:` fields: ids are recorded
//! ([`SseStream::last_event_id`]), blocks without data are skipped, and each event is
//! checked against the schema of the session's revision. The bytes themselves stay in
//! [`SseStream::raw`] for assertions on the wire format.

use crate::schema::{
    Schema, check_legacy_outgoing, check_legacy_server_message, check_outgoing,
    check_server_message,
};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// One block of an event stream.
#[derive(Debug)]
pub enum Frame {
    /// A block of comment lines (`: keepalive`), each without its colon, joined.
    Comment(String),
    /// A `data:` event, parsed as JSON and schema-checked.
    Data(Value),
}

/// What reading a stream gave.
#[derive(Debug)]
pub enum Next {
    /// A message.
    Msg(Value),
    /// The stream ended (HTTP body end; stdio end of output).
    End,
    /// Nothing within the wait.
    Timeout,
}

impl Next {
    /// The message; panics otherwise.
    #[track_caller]
    pub fn msg(self, what: &str) -> Value {
        match self {
            Next::Msg(m) => m,
            other => panic!("expected {what}, got {other:?}"),
        }
    }
}

/// One block of a stream: its frame, if it gives one, and its event id, if it has one.
type Block = (Option<Frame>, Option<String>);

/// How the messages of a stream (or of a stdio session, `stdio::Session::checking`) are
/// checked.
#[derive(Clone, Copy, Debug, Default)]
pub enum Check {
    /// Against the 2026-07-28 schema (and the Tasks extension's).
    #[default]
    Modern,
    /// Against the schema of a legacy session's revision; priming events (an id and
    /// empty data) are allowed.
    Legacy(Schema),
}

impl Check {
    /// Checks one message the server sent in answer to a request for `method`.
    #[track_caller]
    pub fn server_message(self, method: &str, message: &Value) {
        match self {
            Check::Modern => check_server_message(method, message),
            Check::Legacy(schema) => check_legacy_server_message(schema, method, message),
        }
    }

    /// Checks one message a test is about to send as the client: a response (legacy
    /// only: a 2026-07-28 client sends none) as answering the server's request for
    /// `answering`. Panics, naming the `*_unchecked` paths, when it is not valid.
    #[track_caller]
    pub fn client_message(self, answering: &str, message: &Value) {
        match self {
            Check::Modern => check_outgoing(message),
            Check::Legacy(schema) => check_legacy_outgoing(schema, answering, message),
        }
    }
}

/// Splits whole blocks off the front of `buf` (which holds normalized text): each block
/// a [`Frame`], its data checked as answering `method`. A block with neither data nor
/// comment lines (an `event:`-only block) gives nothing; nor does, in a legacy stream, a
/// block whose data is empty (a priming event, a `retry:` hint). Each block comes with
/// its event id, if it has one (a block that gives no frame may still carry an id).
fn take_frames(buf: &mut String, method: &str, check: Check, out: &mut Vec<Block>) {
    while let Some(at) = buf.find("\n\n") {
        let block: String = buf.drain(..at + 2).collect();
        let block = block.trim_end_matches('\n');
        if !block.is_empty() && block.lines().all(|l| l.starts_with(':')) {
            let text = block
                .lines()
                .map(|l| l.trim_start_matches(':').trim())
                .collect::<Vec<_>>()
                .join("\n");
            out.push((Some(Frame::Comment(text)), None));
            continue;
        }
        let field = |name: &'static str| {
            block
                .lines()
                .filter_map(move |l| l.strip_prefix(name))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
        };
        let id = field("id:").next_back().map(str::to_owned);
        let data: Vec<&str> = field("data:").collect();
        let json = data.join("\n");
        if data.is_empty() || (json.is_empty() && matches!(check, Check::Legacy(_))) {
            out.push((None, id));
            continue;
        }
        let m: Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("SSE data {json:?} is not JSON: {e}"));
        check.server_message(method, &m);
        out.push((Some(Frame::Data(m)), id));
    }
}

/// Every frame of a whole SSE body, each event checked as answering `method` (`""`
/// when it is not known).
pub fn frames(body: &str, method: &str) -> Vec<Frame> {
    frames_checked(body, method, Check::Modern)
}

/// [`frames`], each event checked as `check` says.
pub fn frames_checked(body: &str, method: &str, check: Check) -> Vec<Frame> {
    let mut buf = body.replace("\r\n", "\n");
    if !buf.ends_with("\n\n") {
        buf.push_str("\n\n");
    }
    let mut out = Vec::new();
    take_frames(&mut buf, method, check, &mut out);
    out.into_iter().filter_map(|(frame, _)| frame).collect()
}

/// The JSON messages of the `data:` events of a whole SSE body, in order, each checked
/// as answering `method`.
pub fn parse(body: &str, method: &str) -> Vec<Value> {
    parse_checked(body, method, Check::Modern)
}

/// [`parse`], each event checked as `check` says.
pub fn parse_checked(body: &str, method: &str, check: Check) -> Vec<Value> {
    frames_checked(body, method, check)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Data(m) => Some(m),
            Frame::Comment(_) => None,
        })
        .collect()
}

/// An HTTP response body read as events while it arrives.
pub struct SseStream {
    resp: reqwest::Response,
    method: String,
    check: Check,
    buf: String,
    queue: std::collections::VecDeque<Block>,
    ended: bool,
    /// Every byte read so far, as text, for assertions on the wire format.
    pub raw: String,
    /// The id of the last block taken that had one (a legacy stream's): what a client
    /// that read this far resumes after.
    pub last_event_id: Option<String>,
}

impl SseStream {
    /// Reads `resp`'s body as events answering a request for `method`.
    pub fn new(resp: reqwest::Response, method: &str) -> SseStream {
        SseStream::checked(resp, method, Check::Modern)
    }

    /// [`SseStream::new`], each event checked as `check` says.
    pub fn checked(resp: reqwest::Response, method: &str, check: Check) -> SseStream {
        SseStream {
            resp,
            method: method.to_owned(),
            check,
            buf: String::new(),
            queue: Default::default(),
            ended: false,
            raw: String::new(),
            last_event_id: None,
        }
    }

    /// Whether the body has ended and every frame of it was taken.
    pub fn is_done(&self) -> bool {
        self.ended && self.queue.is_empty()
    }

    /// The next frame (comment or event) within `within`: `None` on timeout or at the end
    /// (tell them apart with [`SseStream::is_done`]).
    pub async fn frame(&mut self, within: Duration) -> Option<Frame> {
        let deadline = Instant::now() + within;
        loop {
            while let Some((frame, id)) = self.queue.pop_front() {
                if id.is_some() {
                    self.last_event_id = id;
                }
                if frame.is_some() {
                    return frame;
                }
            }
            if self.ended {
                return None;
            }
            match tokio::time::timeout_at(deadline, self.resp.chunk()).await {
                Err(_) => return None,
                Ok(Ok(Some(chunk))) => {
                    let text = String::from_utf8(chunk.to_vec()).expect("UTF-8 SSE");
                    self.raw.push_str(&text);
                    self.buf.push_str(&text);
                    // SSE allows CRLF; normalize so blocks split on a blank line. A CR
                    // left at the end of a chunk waits for the chunk that follows.
                    let keep_cr = self.buf.ends_with('\r');
                    if keep_cr {
                        self.buf.pop();
                    }
                    self.buf = self.buf.replace("\r\n", "\n");
                    if keep_cr {
                        self.buf.push('\r');
                    }
                    let mut out = Vec::new();
                    take_frames(&mut self.buf, &self.method, self.check, &mut out);
                    self.queue.extend(out);
                }
                Ok(Ok(None)) | Ok(Err(_)) => self.ended = true,
            }
        }
    }

    /// The next message (comments skipped) within `within`.
    pub async fn next(&mut self, within: Duration) -> Next {
        let deadline = Instant::now() + within;
        loop {
            match self
                .frame(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Some(Frame::Data(m)) => return Next::Msg(m),
                Some(Frame::Comment(_)) => continue,
                None if self.is_done() => return Next::End,
                None => return Next::Timeout,
            }
        }
    }

    /// Every message until the body ends (failing if it has not ended within `within`).
    pub async fn to_end(&mut self, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut out = Vec::new();
        loop {
            match self
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Next::Msg(m) => out.push(m),
                Next::End => return out,
                Next::Timeout => panic!("the stream did not end within {within:?}: {out:?}"),
            }
        }
    }
}
