//! A client of the earlier revisions (2025-11-25, 2025-06-18) over stdio: a
//! [`stdio::Session`](crate::stdio::Session) (an in-process pipe, or the fixture binary as
//! a child) that opens with `initialize`, numbers its requests, and answers the server's
//! requests with responses written to the server's stdin.
//!
//! Every message is checked both ways against the schema of the session's revision (the
//! session is set to [`Check::Legacy`]); what a test sends invalid on purpose goes through
//! the session's `*_unchecked` paths. The session's own methods (`recv`, `recv_within`,
//! `send`, `until_response`, ...) are reached through `Deref`.

use crate::legacy::{initialize, notification, request};
use crate::schema::Schema;
use crate::sse::Check;
use crate::stdio::Session;
use presa::{Server, StdioConfig};
use serde_json::{Value, json};

/// One legacy client over stdio.
pub struct LegacyStdio {
    io: Session,
    /// The revision offered, and once `initialize` succeeded, the one negotiated.
    pub version: String,
    next: i64,
}

impl std::ops::Deref for LegacyStdio {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.io
    }
}

impl std::ops::DerefMut for LegacyStdio {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.io
    }
}

impl LegacyStdio {
    /// A client of `version` on `io`, nothing sent yet: from now on the session's
    /// messages are checked against `version`'s schema.
    pub fn over(mut io: Session, version: &str) -> LegacyStdio {
        io.checking(Check::Legacy(Schema::legacy(version)));
        LegacyStdio {
            io,
            version: version.to_owned(),
            next: 1,
        }
    }

    /// A client of `version` on `server` over an in-process pipe with `config`, nothing
    /// sent yet.
    pub fn in_process(server: Server, config: StdioConfig, version: &str) -> LegacyStdio {
        LegacyStdio::over(Session::in_process(server, config), version)
    }

    /// A session of `version` on `server` (default stdio settings), declaring no
    /// capabilities: see [`LegacyStdio::handshake`].
    pub async fn open(server: Server, version: &str) -> LegacyStdio {
        LegacyStdio::open_with(server, version, json!({})).await
    }

    /// [`LegacyStdio::open`], declaring `capabilities`.
    pub async fn open_with(server: Server, version: &str, capabilities: Value) -> LegacyStdio {
        let mut client = LegacyStdio::in_process(server, StdioConfig::default(), version);
        client.handshake(capabilities).await;
        client
    }

    /// Closes stdin and waits for the server to end: whether it ended cleanly (see
    /// [`Session::finish`]).
    pub async fn finish(self) -> bool {
        self.io.finish().await
    }

    /// The schema of the client's revision.
    pub fn schema(&self) -> Schema {
        Schema::legacy(&self.version)
    }

    /// The next request id.
    pub fn next_id(&mut self) -> i64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Opens the session: `initialize` offering the client's revision with
    /// `capabilities`, then `notifications/initialized`. Returns `initialize`'s result;
    /// panics unless the server agreed to the revision offered.
    pub async fn handshake(&mut self, capabilities: Value) -> Value {
        let id = self.next_id();
        let answer = self
            .request(&initialize(id, &self.version.clone(), capabilities))
            .await;
        let result = answer
            .get("result")
            .unwrap_or_else(|| panic!("initialize succeeds: {answer}"))
            .clone();
        assert_eq!(result["protocolVersion"], json!(self.version), "{answer}");
        self.io
            .send(&notification("notifications/initialized", json!({})))
            .await;
        result
    }

    /// How the session's messages are checked.
    fn check(&self) -> Check {
        Check::Legacy(self.schema())
    }

    /// Sends `message`, a request (checked), and reads until its response, which it
    /// returns (notifications before it are skipped; a request of the server's fails
    /// the test).
    #[track_caller]
    pub fn request<'a>(
        &'a mut self,
        message: &'a Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        self.check().client_message("", message);
        async move {
            self.io.send_unchecked(message).await;
            let mut messages = self.io.until_response(&message["id"]).await;
            let response = messages.pop().expect("the response");
            assert!(
                messages.iter().all(|m| m.get("id").is_none()),
                "the server asked something before its response: {messages:?}"
            );
            response
        }
    }

    /// Sends a request for `method` with the next id (checked), and reads until its
    /// response: every message read, the response last.
    #[track_caller]
    pub fn call<'a>(
        &'a mut self,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Vec<Value>> + 'a {
        let id = self.next_id();
        let message = request(id, method, params);
        self.check().client_message("", &message);
        async move {
            self.io.send_unchecked(&message).await;
            self.io.until_response(&message["id"]).await
        }
    }

    /// Answers the server's request `id` for `answering` with `result` (checked against
    /// the result definition of `answering`).
    #[track_caller]
    pub fn answer<'a>(
        &'a mut self,
        answering: &'a str,
        id: &Value,
        result: Value,
    ) -> impl std::future::Future<Output = ()> + 'a {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.check().client_message(answering, &message);
        async move { self.io.send_unchecked(&message).await }
    }
}
