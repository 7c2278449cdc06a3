//! Legacy sessions: what a client of the revisions that open with `initialize`
//! (2025-11-25, 2025-06-18) establishes with the server, and everything that lives as long
//! as it: the negotiated revision, the capabilities and identity the client declared, its
//! log level, its resource subscriptions, the requests the server sent it and awaits
//! answers to, and the feed of list changes and resource updates it receives.
//!
//! A session belongs to the transport that made it (one per stdio process, one per
//! `Mcp-Session-Id` on Streamable HTTP); the pipeline serves its requests with the
//! session as their era and never keeps one itself. Messages that belong to no request
//! (list changes, resource updates) go to the session's `Channel`.
//!
//! A session's record may be kept in a [`SessionStore`] shared by the replicas of a server
//! (see [`store`](self::SessionStore)); the session then writes what its client changes
//! (log level, subscriptions) there, and is made again from its record on any replica.

pub mod contract;
mod outgoing;
mod store;

pub(crate) use outgoing::AskFailure;
pub use store::{
    EventBounds, MemorySessionStore, SessionFuture, SessionRecord, SessionStore, SessionStoreError,
    StreamEvent, StreamRead,
};

use crate::context::Outbound;
use crate::subscriptions::{Feed, Hub, Offer, SESSION_CHANGED_METHOD};
use crate::wire::jsonrpc::{RequestId, Response, encode_notification};
use crate::wire::meta::{LegacyClient, LogLevel};
use crate::wire::methods as names;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where a session's messages that belong to no request go: the HTTP GET stream (or its
/// buffer), or stdout.
pub(crate) trait Channel: Send + Sync {
    /// Queues one serialized message for the client.
    fn send(&self, frame: String);

    /// The session ended from within (its record says it ended on another replica): the
    /// channel's transport ends what it holds of it.
    fn ended(&self) {}

    /// Another replica passed a message about the session's streams (one carrying
    /// `"stream"`): the transport that keeps the streams acts on it.
    fn passed(&self, _message: &Value) {}
}

/// The message passing a client's answer to another replica ([`Session::receive`]).
pub(crate) fn answer_message(response: &Response) -> Value {
    let mut message = Map::new();
    if let Some(id) = &response.id {
        message.insert("id".into(), id.to_value());
    }
    match &response.outcome {
        Ok(result) => message.insert("result".into(), result.clone()),
        Err(error) => message.insert("error".into(), error.clone()),
    };
    Value::Object(message)
}

/// The message passing a client's cancellation of request `id` to another replica.
pub(crate) fn cancel_message(id: &RequestId) -> Value {
    let mut message = Map::new();
    message.insert("cancel".into(), id.to_value());
    Value::Object(message)
}

/// Settings of legacy sessions, with documented defaults.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Longest wait for the client's answer to a request the server sent it (elicitation,
    /// sampling, roots), default 10 minutes: a person may be answering. Past it the
    /// server sends `notifications/cancelled` for its request and the asking handler's
    /// call fails.
    pub ask_timeout: Duration,
    /// Most requests the server may await answers to in one session at once (default
    /// 64); past it a further ask fails at once.
    pub max_pending_asks: usize,
}

impl SessionConfig {
    /// Sets the longest wait for the client's answer to a request the server sent it.
    pub fn ask_timeout(mut self, wait: Duration) -> Self {
        self.ask_timeout = wait;
        self
    }

    /// Sets the most requests awaiting the client's answers in one session at once.
    pub fn max_pending_asks(mut self, n: usize) -> Self {
        self.max_pending_asks = n;
        self
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            ask_timeout: Duration::from_secs(600),
            max_pending_asks: 64,
        }
    }
}

/// One legacy session.
pub(crate) struct Session {
    /// The id the client sends back in `Mcp-Session-Id` (Streamable HTTP with sessions).
    id: Option<String>,
    state: Mutex<State>,
    outgoing: outgoing::Outgoing,
    /// Requests of this session being served, by id, for `notifications/cancelled`.
    in_flight: Mutex<HashMap<RequestId, Arc<dyn Outbound>>>,
    channel: Mutex<Option<Arc<dyn Channel>>>,
    feed: Mutex<Option<Arc<Feed>>>,
    /// Cancelled when the session ends: its feed stops, its awaited answers fail.
    closed: CancellationToken,
    /// When the client was last heard from.
    last_seen: Mutex<Instant>,
    /// Where the session's record is kept, when replicas share it.
    store: OnceLock<Arc<dyn SessionStore>>,
}

/// What `initialize` established.
#[derive(Default)]
struct State {
    /// The negotiated revision; `None` until `initialize` succeeded.
    version: Option<&'static str>,
    capabilities: Map<String, Value>,
    info: Value,
    log_level: Option<LogLevel>,
    /// Whether `notifications/initialized` arrived.
    initialized: bool,
}

impl Session {
    /// A session not yet initialized, with the id its client will send back, if any.
    pub(crate) fn new(id: Option<String>, config: &SessionConfig) -> Arc<Session> {
        // A session with an id is one a client holds open (Streamable HTTP); the others
        // (stdio's one, stateless HTTP's per request) are not counted.
        if id.is_some() {
            crate::observe::session_opened();
        }
        Arc::new(Session {
            id,
            state: Mutex::default(),
            outgoing: outgoing::Outgoing::new(config),
            in_flight: Mutex::default(),
            channel: Mutex::new(None),
            feed: Mutex::new(None),
            closed: CancellationToken::new(),
            last_seen: Mutex::new(Instant::now()),
            store: OnceLock::new(),
        })
    }

    /// Keeps the session's record in `store` from now on: what its client changes is
    /// written there.
    pub(crate) fn keep_in(&self, store: Arc<dyn SessionStore>) {
        let _ = self.store.set(store);
    }

    /// The store that keeps the session's record, with the session's id, if one does.
    pub(crate) fn recorded(&self) -> Option<(&str, &Arc<dyn SessionStore>)> {
        Some((self.id()?, self.store.get()?))
    }

    /// Sets the log level the record holds (none clears it).
    pub(crate) fn restore_log_level(&self, level: Option<LogLevel>) {
        if let Ok(mut s) = self.state.lock() {
            s.log_level = level;
        }
    }

    /// Makes the session's subscriptions those of `uris`: the ones it lacks are added,
    /// the others removed.
    pub(crate) fn restore_subscriptions(&self, uris: &[String]) {
        let Some(feed) = self.feed.lock().ok().and_then(|f| f.clone()) else {
            return;
        };
        for held in feed.subscriptions() {
            if !uris.contains(&held) {
                feed.subscribe(&held, false);
            }
        }
        for uri in uris {
            feed.subscribe(uri, true);
        }
    }

    /// What `initialize` established, for the session's record: the revision, the
    /// capabilities and the client info; `None` before it succeeded.
    pub(crate) fn established(&self) -> Option<(&'static str, Map<String, Value>, Value)> {
        let state = self.state.lock().ok()?;
        Some((
            state.version?,
            state.capabilities.clone(),
            state.info.clone(),
        ))
    }

    /// The session's id, when its transport issued one.
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Records what `initialize` established: the negotiated revision and what the client
    /// declared. Returns false when the session was initialized already.
    pub(crate) fn initialize(
        &self,
        version: &'static str,
        capabilities: Map<String, Value>,
        info: Value,
    ) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        if state.version.is_some() {
            return false;
        }
        *state = State {
            version: Some(version),
            capabilities,
            info,
            log_level: None,
            initialized: false,
        };
        true
    }

    /// The negotiated revision, once `initialize` succeeded.
    pub(crate) fn version(&self) -> Option<&'static str> {
        self.state.lock().ok().and_then(|s| s.version)
    }

    /// Notes `notifications/initialized`.
    pub(crate) fn mark_initialized(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.initialized = true;
        }
    }

    /// Sets the level of the log messages the client receives (`logging/setLevel`).
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        if let Ok(mut s) = self.state.lock() {
            s.log_level = Some(level);
        }
    }

    /// Runs `f` on what the client declared, for admitting one of its requests; `None`
    /// before `initialize` succeeded.
    pub(crate) fn with_client<T>(&self, f: impl FnOnce(&LegacyClient<'_>) -> T) -> Option<T> {
        let state = self.state.lock().ok()?;
        let version = state.version?;
        Some(f(&LegacyClient {
            version,
            capabilities: &state.capabilities,
            info: &state.info,
            log_level: state.log_level,
        }))
    }

    /// Notes that the client was heard from now.
    pub(crate) fn touch(&self) {
        if let Ok(mut t) = self.last_seen.lock() {
            *t = Instant::now();
        }
    }

    /// How long since the client was last heard from.
    pub(crate) fn idle(&self) -> Duration {
        self.last_seen
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }

    /// Sets where messages that belong to no request go.
    pub(crate) fn set_channel(&self, channel: Arc<dyn Channel>) {
        if let Ok(mut c) = self.channel.lock() {
            *c = Some(channel);
        }
    }

    /// Sends a message that belongs to no request (dropped when the session has no
    /// channel).
    pub(crate) fn send(&self, method: &str, params: &Value) {
        let channel = self.channel.lock().ok().and_then(|c| c.clone());
        if let Some(channel) = channel {
            channel.send(encode_notification(method, params));
        }
    }

    /// Starts the session's feed of the list changes in `offer` and the updates of the
    /// resources it subscribes to, sent on its channel until the session ends.
    pub(crate) fn start_feed(self: &Arc<Self>, hub: &Arc<Hub>, offer: Offer) {
        let feed = Arc::new(hub.feed(offer));
        if let Some((id, _)) = self.recorded() {
            feed.follow_session(id);
        }
        if let Ok(mut f) = self.feed.lock() {
            *f = Some(Arc::clone(&feed));
        }
        let session: Weak<Session> = Arc::downgrade(self);
        let closed = self.closed.clone();
        tokio::spawn(async move {
            loop {
                let events = tokio::select! {
                    () = closed.cancelled() => return,
                    events = feed.next() => events,
                };
                let Some(session) = session.upgrade() else {
                    return;
                };
                for (method, params) in events {
                    if method == SESSION_CHANGED_METHOD {
                        session.reload().await;
                    } else {
                        session.send(method, &params);
                    }
                }
            }
        });
    }

    /// Takes the messages other replicas pass this session ([`Event::Session`]: the
    /// client's answers and cancellations that reached them) until the session ends.
    /// Called once the session is the one its transport holds by its id (a session's
    /// inbox replaces any other of its id), and only for a session a store keeps.
    ///
    /// [`Event::Session`]: crate::subscriptions::Event::Session
    pub(crate) fn open_inbox(self: &Arc<Self>, hub: &Arc<Hub>) {
        let Some((id, _)) = self.recorded() else {
            return;
        };
        let mut inbox = hub.inbox(id);
        let session: Weak<Session> = Arc::downgrade(self);
        let closed = self.closed.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = closed.cancelled() => return,
                    message = inbox.next() => message,
                };
                let (Some(message), Some(session)) = (message, session.upgrade()) else {
                    return;
                };
                session.receive(&message);
            }
        });
    }

    /// Acts on a message another replica passed: a cancellation, an answer, or news of
    /// the session's streams (for its channel).
    fn receive(&self, message: &Value) {
        if message.get("stream").is_some() {
            let channel = self.channel.lock().ok().and_then(|c| c.clone());
            if let Some(channel) = channel {
                channel.passed(message);
            }
            return;
        }
        if let Some(request) = message.get("cancel") {
            if let Ok(id) = RequestId::read(request) {
                self.cancel(&id);
            }
            return;
        }
        let outcome = match (message.get("result"), message.get("error")) {
            (Some(result), None) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            _ => return,
        };
        let id = message.get("id").and_then(|id| RequestId::read(id).ok());
        if !self.deliver(Response { id, outcome }) {
            tracing::debug!("an answer passed from another replica awaits nothing here");
        }
    }

    /// Reads the session's record again (another replica changed it): its log level and
    /// subscriptions become the record's, and a session that ended there ends here. A
    /// fault of the store changes nothing (the next message of the session reads the
    /// record again).
    async fn reload(&self) {
        let Some((id, store)) = self.recorded() else {
            return;
        };
        match store.load(id).await {
            Ok(Some(record)) => {
                self.restore_log_level(record.log_level);
                self.restore_subscriptions(&record.subscriptions);
            }
            Ok(None) => self.close(),
            Err(fault) => tracing::debug!("a legacy session's record could not be read: {fault}"),
        }
    }

    /// Subscribes to or unsubscribes from updates of `uri`; false when the feed refuses
    /// (too many subscriptions) or there is none.
    pub(crate) fn subscribe(&self, uri: &str, on: bool) -> bool {
        let feed = self.feed.lock().ok().and_then(|f| f.clone());
        feed.is_some_and(|f| f.subscribe(uri, on))
    }

    /// Registers a request being served, so the client can cancel it. False when a
    /// request with this id is in flight already.
    pub(crate) fn begin(&self, id: &RequestId, outbound: Arc<dyn Outbound>) -> bool {
        let Ok(mut map) = self.in_flight.lock() else {
            return false;
        };
        if map.contains_key(id) {
            return false;
        }
        map.insert(id.clone(), outbound);
        true
    }

    /// Forgets a request that was answered (or abandoned).
    pub(crate) fn end(&self, id: &RequestId) {
        if let Ok(mut map) = self.in_flight.lock() {
            map.remove(id);
        }
    }

    /// Cancels a request of this session (`notifications/cancelled`).
    pub(crate) fn cancel(&self, id: &RequestId) {
        let outbound = self.in_flight.lock().ok().and_then(|m| m.get(id).cloned());
        if let Some(outbound) = outbound {
            outbound.cancellation().cancel();
        }
    }

    /// Sends the client a request through `sink` (the stream of the request that asks)
    /// and waits for its answer. A request the wait leaves unsettled (the asking request
    /// was cancelled, or the session ended) is withdrawn with `notifications/cancelled`
    /// on the session's channel: the asking request's stream takes nothing more by then.
    pub(crate) async fn ask(
        &self,
        sink: &dyn Outbound,
        method: &str,
        params: Value,
    ) -> Result<Value, AskFailure> {
        let withdraw = |params: Value| self.send(names::CANCELLED, &params);
        self.outgoing
            .ask(sink, method, params, &self.closed, &withdraw)
            .await
    }

    /// Hands the client's response to the request it answers. False when no request of
    /// this session awaits it (an answer to nothing, or one that came too late).
    pub(crate) fn deliver(&self, response: Response) -> bool {
        self.outgoing.deliver(response)
    }

    /// Ends the session: its feed stops, its awaited answers fail, its requests in flight
    /// are cancelled.
    pub(crate) fn close(&self) {
        let first = !self.closed.is_cancelled();
        self.closed.cancel();
        if let Ok(mut f) = self.feed.lock() {
            f.take();
        }
        let in_flight: Vec<_> = self
            .in_flight
            .lock()
            .map(|mut m| m.drain().map(|(_, o)| o).collect())
            .unwrap_or_default();
        for outbound in in_flight {
            outbound.cancellation().cancel();
        }
        let channel = self.channel.lock().ok().and_then(|c| c.clone());
        if let (true, Some(channel)) = (first, channel) {
            channel.ended();
        }
    }

    /// Whether the session has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.id.is_some() {
            crate::observe::session_closed();
        }
        self.closed.cancel();
    }
}
