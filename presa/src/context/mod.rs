//! The per-request context handed to handlers: who asked (the admitted `_meta`), progress
//! and log notifications bound to this request, cancellation, and shared application
//! state.
//!
//! Notifications go through the request's outbound sink and are dropped when the request
//! did not opt in (no progress token, no `logLevel`, a level below the threshold), when a
//! bound is reached, or once the request is cancelled: nothing is ever sent for a request
//! after its cancellation.

mod outbound;
pub(crate) mod state;

pub(crate) use outbound::{Backlog, Cancellation, LazyBacklog, Outbound, Queued, Running};

use crate::auth::Principal;
use crate::wire::jsonrpc::{RequestId, encode_notification};
use crate::wire::meta::{LogLevel, RequestMeta};
use serde::Serialize;
use serde_json::{Map, Value};
use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Most progress notifications one request may send.
pub const MAX_PROGRESS_NOTIFICATIONS: u32 = 1000;
/// Most log notifications one request may send.
pub const MAX_LOG_NOTIFICATIONS: u32 = 1000;
/// Longest progress `message`, in bytes (longer ones are cut at a character boundary).
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 4096;
/// Largest serialized log `data`, in bytes (larger messages are dropped).
pub const MAX_LOG_DATA_BYTES: usize = 64 * 1024;
/// Burst and per-second refill of the notification rate bound, per request.
pub const NOTIFICATION_RATE_PER_SECOND: f64 = 200.0;

/// What serves a request, as its context sees it: the application state handlers ask for
/// by type. The pipeline's serving core is the one host; `RequestContext::server` (in the
/// `server` module, above this one) hands it back as a `Server`.
pub(crate) trait Host: std::any::Any + Send + Sync {
    /// The application state given to the builder.
    fn state(&self) -> &state::StateMap;
}

/// The context of one request. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

struct Inner {
    id: RequestId,
    method: std::borrow::Cow<'static, str>,
    meta: RequestMeta,
    outbound: Arc<dyn Outbound>,
    logging_enabled: bool,
    limits: Mutex<Limits>,
    inputs: InputsState,
    principal: Option<Arc<Principal>>,
    host: Arc<dyn Host>,
    /// Notifications held until the outcome is known (see [`ContextInit::hold`]).
    held: Option<Mutex<Vec<String>>>,
    /// Which run of detached work this is (a task's), when it is one.
    run: Option<Run>,
}

/// Which run of detached work (a task's) a context serves: the key every run of the work
/// shares, and the run's number.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub(crate) idempotency_key: String,
    pub(crate) attempt: u64,
}

/// Everything a request context starts from.
pub(crate) struct ContextInit {
    pub(crate) id: RequestId,
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) meta: RequestMeta,
    /// Where its notifications go, and its cancellation.
    pub(crate) outbound: Arc<dyn Outbound>,
    pub(crate) logging_enabled: bool,
    pub(crate) principal: Option<Arc<Principal>>,
    /// What serves the request.
    pub(crate) host: Arc<dyn Host>,
    /// The answers given so far in this call (from the request state and this round),
    /// when there are any.
    pub(crate) answers: Option<Map<String, Value>>,
    /// The handler's state carried in from the previous round.
    pub(crate) carried: Option<Value>,
    /// Hold notifications until the outcome is known, so that an outcome needing an HTTP
    /// status (-32021) can still have one (errata W-11).
    pub(crate) hold: bool,
    /// Which run of detached work this is; `None` for a request's own context.
    pub(crate) run: Option<Run>,
}

/// The multi round-trip state of one request.
pub(crate) struct InputsState {
    answers: Option<Map<String, Value>>,
    carried_in: Option<Value>,
    demanded: std::sync::atomic::AtomicBool,
    single_use: std::sync::atomic::AtomicBool,
    /// What the handler asked and carried, under one lock: the outcome takes all of it
    /// at once. Boxed when first used: most handlers ask nothing, and the context is
    /// built (and its fields moved) for every request.
    asks: Mutex<Option<Box<Asks>>>,
    /// Set once `asks` is made: the outcome of a request whose handler asked nothing
    /// (most) is read without taking the lock, an atomic read-modify-write each way.
    asked: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Asks {
    accepted: Map<String, Value>,
    missing: Vec<(String, Value, Option<Value>)>,
    failure: Option<crate::Error>,
    carry_out: Option<Value>,
}

/// What a handler's asks came to, read by the pipeline once it has run.
pub(crate) struct InputsOutcome {
    pub(crate) failure: Option<crate::Error>,
    pub(crate) demanded: bool,
    pub(crate) missing: Vec<(String, Value, Option<Value>)>,
    pub(crate) accepted: Map<String, Value>,
    pub(crate) carry: Option<Value>,
    pub(crate) single_use: bool,
}

impl InputsState {
    /// Every answer available to this request.
    #[cfg_attr(
        not(feature = "tasks"),
        allow(dead_code, reason = "read by the Tasks extension")
    )]
    pub(crate) fn all_answers(&self) -> Map<String, Value> {
        self.answers.clone().unwrap_or_default()
    }

    pub(crate) fn answer(&self, key: &str) -> Option<Value> {
        self.answers.as_ref()?.get(key).cloned()
    }

    /// Whether the handler asked for anything: took or was refused an answer, or
    /// demanded one it was not given (a handler that did not has no outcome to read).
    pub(crate) fn asked(&self) -> bool {
        self.asked.load(std::sync::atomic::Ordering::Acquire)
            || self.demanded.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs `f` on the asks under their lock, making them on first use.
    fn with_asks(&self, f: impl FnOnce(&mut Asks)) {
        if let Ok(mut a) = self.asks.lock() {
            f(a.get_or_insert_default());
            self.asked.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    pub(crate) fn accept(&self, key: &str, raw: Value) {
        self.with_asks(|a| {
            a.accepted.insert(key.to_owned(), raw);
        });
    }

    pub(crate) fn record(&self, key: &str, request: Value, needs: Option<Value>) {
        self.with_asks(|a| {
            if !a.missing.iter().any(|(k, _, _)| k == key) {
                a.missing.push((key.to_owned(), request, needs));
            }
        });
    }

    /// Whether the handler demanded an answer it was not given: its round ends in
    /// `input_required`, whatever it returned (unless one of its asks failed).
    pub(crate) fn demanded(&self) -> bool {
        self.demanded.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn demand(&self, _key: &str) {
        self.demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn fail(&self, error: crate::Error) {
        self.with_asks(|a| {
            if a.failure.is_none() {
                a.failure = Some(error);
            }
        });
    }
}

struct Limits {
    last_progress: Option<f64>,
    progress_sent: u32,
    logs_sent: u32,
    tokens: f64,
    /// When the bucket was last refilled; `None` until the first notification (the
    /// bucket starts full, so there is nothing to refill before it, and a request that
    /// sends nothing never reads the clock).
    refilled: Option<Instant>,
}

impl RequestContext {
    #[inline]
    pub(crate) fn new(init: ContextInit) -> Self {
        RequestContext {
            inner: Arc::new(Inner {
                id: init.id,
                method: init.method,
                meta: init.meta,
                outbound: init.outbound,
                logging_enabled: init.logging_enabled,
                limits: Mutex::new(Limits::full()),
                // Every field named: `..Default::default()` would build a default
                // `answers` map only to drop it.
                inputs: InputsState {
                    answers: init.answers,
                    carried_in: init.carried,
                    demanded: std::sync::atomic::AtomicBool::new(false),
                    single_use: std::sync::atomic::AtomicBool::new(false),
                    asks: Mutex::new(None),
                    asked: std::sync::atomic::AtomicBool::new(false),
                },
                principal: init.principal,
                host: init.host,
                held: init.hold.then(|| Mutex::new(Vec::new())),
                run: init.run,
            }),
        }
    }

    pub(crate) fn inputs(&self) -> &InputsState {
        &self.inner.inputs
    }

    /// The context of the next round of this request, served in place (a legacy
    /// session's request whose handler asked the client for input): the same request,
    /// with `answers` and `carried` for the handler, and the progress and notification
    /// bounds as this round left them (progress keeps increasing across rounds).
    pub(crate) fn next_round(
        &self,
        answers: Map<String, Value>,
        carried: Option<Value>,
    ) -> RequestContext {
        let i = &self.inner;
        let limits = i
            .limits
            .lock()
            .map(|l| Limits {
                last_progress: l.last_progress,
                progress_sent: l.progress_sent,
                logs_sent: l.logs_sent,
                tokens: l.tokens,
                refilled: l.refilled,
            })
            .unwrap_or_else(|_| Limits::full());
        let next = RequestContext::new(ContextInit {
            id: i.id.clone(),
            method: i.method.clone(),
            meta: i.meta.clone(),
            outbound: Arc::clone(&i.outbound),
            logging_enabled: i.logging_enabled,
            principal: i.principal.clone(),
            host: Arc::clone(&i.host),
            answers: Some(answers),
            carried,
            hold: i.held.is_some(),
            run: i.run.clone(),
        });
        if let Ok(mut l) = next.inner.limits.lock() {
            *l = limits;
        }
        next
    }

    /// What the handler's asks came to; read once, after the handler has run (the lists
    /// are taken, not copied).
    pub(crate) fn inputs_outcome(&self) -> InputsOutcome {
        let i = &self.inner.inputs;
        let asks = if i.asked.load(std::sync::atomic::Ordering::Acquire) {
            i.asks
                .lock()
                .ok()
                .and_then(|mut a| a.take())
                .map(|a| *a)
                .unwrap_or_default()
        } else {
            Asks::default()
        };
        InputsOutcome {
            failure: asks.failure,
            demanded: i.demanded.load(std::sync::atomic::Ordering::SeqCst),
            missing: asks.missing,
            accepted: asks.accepted,
            carry: asks.carry_out,
            single_use: i.single_use.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Sends the notifications held so far (the outcome allows them), and stops holding.
    #[inline]
    pub(crate) fn release_held(&self) {
        if let Some(held) = &self.inner.held {
            let frames = held
                .lock()
                .map(|mut h| std::mem::take(&mut *h))
                .unwrap_or_default();
            for f in frames {
                self.inner.outbound.send(f);
            }
        }
    }

    /// Carries typed state into the next round of this call (in the signed
    /// `requestState`; signed, not encrypted, so nothing secret).
    pub fn carry<T: Serialize>(&self, value: &T) {
        if let Ok(v) = serde_json::to_value(value) {
            self.inner.inputs.with_asks(|a| a.carry_out = Some(v));
        }
    }

    /// The state carried in from the previous round, if any.
    pub fn carried<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.inner
            .inputs
            .carried_in
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
    }

    /// Makes the request state issued for the next round single-use: the server then
    /// refuses a second retry with the same token.
    pub fn single_use_state(&self) {
        self.inner
            .inputs
            .single_use
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// What serves this request ([`RequestContext::server`] gives it as a `Server`).
    pub(crate) fn host(&self) -> &Arc<dyn Host> {
        &self.inner.host
    }

    /// Who this request acts for: the subject of its verified access token, or what the
    /// server's principal function gave it; `None` for an anonymous request.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_deref()
    }

    /// The principal's id, which request state is bound to and tasks are scoped by.
    pub(crate) fn principal_id(&self) -> Option<&str> {
        self.inner.principal.as_deref().map(Principal::id)
    }

    /// A key that stays the same across every run of this call, for a tool whose
    /// effects leave the process (a payment, an email, a row in another system) to make
    /// them once: pass it to that system as its idempotency key. Set for a task's runs:
    /// a task runs at least once, and runs again, on another replica, when the one
    /// running it stops renewing its lease (it died, or lost the store); every run reads
    /// the same key. `None` for a call answered within its request, which runs once.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.inner.run.as_ref().map(|r| r.idempotency_key.as_str())
    }

    /// Which run of this call this is: 1 for the first, one more for each time a task is
    /// run again after its replica stopped renewing its lease (see
    /// [`idempotency_key`](Self::idempotency_key)). 1 for a call answered within its
    /// request.
    pub fn attempt(&self) -> u64 {
        self.inner.run.as_ref().map_or(1, |r| r.attempt)
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The method being served.
    pub fn method(&self) -> &str {
        &self.inner.method
    }

    /// The admitted `_meta` of the request.
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.meta
    }

    /// The client capabilities this request declared (capabilities are per request).
    pub fn client_capabilities(&self) -> &Map<String, Value> {
        &self.inner.meta.client_capabilities
    }

    /// Whether the client cancelled the request (or went away). A plain (non-`async`)
    /// handler, which cannot be stopped from outside, polls this to stop early; until it
    /// returns, its request keeps its place under the transport's in-flight bound.
    pub fn is_cancelled(&self) -> bool {
        self.inner.outbound.cancellation().is_cancelled()
    }

    /// Counts a closure of this request's blocking work until the guard is dropped
    /// ([`Blocking`](outbound::Blocking)).
    pub(crate) fn blocking_started(&self) -> Running {
        self.inner.outbound.cancellation().blocking().start()
    }

    /// Completes once none of this request's blocking work runs.
    #[cfg_attr(
        not(feature = "tasks"),
        allow(dead_code, reason = "awaited by the Tasks extension")
    )]
    pub(crate) async fn blocking_done(&self) {
        if let Some(blocking) = self.inner.outbound.cancellation().blocking_made() {
            blocking.idle().await;
        }
    }

    /// Completes when the request is cancelled. The pipeline also drops the handler's
    /// future on cancellation; this is for work the handler spawned itself.
    pub async fn cancelled(&self) {
        self.inner
            .outbound
            .cancellation()
            .token()
            .cancelled_owned()
            .await
    }

    /// A token to hand to spawned work: cancelled when the request is. It is a child of
    /// the request's own token, so cancelling it (to stop that work early) does not cancel
    /// the request: the handler still answers, as JSON-RPC requires of every request the
    /// client has not cancelled.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.outbound.cancellation().token().child_token()
    }

    /// Asks the transport to close the connection that carries this request's answer
    /// early, for the client to poll: on Streamable HTTP, in a session that negotiated
    /// 2025-11-25, the response becomes a resumable event stream (if it was not one
    /// already), the events sent so far are written with a `retry:` hint, and the
    /// connection ends; the client reconnects with `Last-Event-ID` and receives the rest,
    /// the result included. The request goes on running. Everywhere else (2026-07-28
    /// requests, 2025-06-18 sessions, stdio, stateless legacy HTTP) it does nothing.
    pub fn close_stream_for_polling(&self) {
        self.inner.outbound.close_for_polling();
    }

    /// Shared application state of type `T` given to the server builder, if any.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.inner.host.state().get::<T>()
    }

    /// Whether the request asked for progress (carries a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.inner.meta.progress_token.is_some()
    }

    /// Reports progress. Sent only when the request carries a `progressToken`, the value
    /// is finite and strictly greater than the last one sent, and the per-request bounds
    /// allow it. Returns whether a notification was sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = &self.inner.meta.progress_token else {
            return false;
        };
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) || self.is_cancelled() {
            return false;
        }
        {
            let Ok(mut limits) = self.inner.limits.lock() else {
                return false;
            };
            if limits.last_progress.is_some_and(|last| progress <= last)
                || limits.progress_sent >= MAX_PROGRESS_NOTIFICATIONS
                || !limits.take_token()
            {
                return false;
            }
            limits.last_progress = Some(progress);
            limits.progress_sent += 1;
        }
        let mut params = Map::with_capacity(4);
        params.insert("progressToken".into(), token.to_value());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        if let Some(message) = message {
            params.insert(
                "message".into(),
                Value::from(truncate(message, MAX_PROGRESS_MESSAGE_BYTES)),
            );
        }
        self.send("notifications/progress", Value::Object(params))
    }

    /// Sends a log message at `level` (`notifications/message`), only when the request
    /// opted in with a `logLevel` at or below `level`. Logging is deprecated in
    /// 2026-07-28; prefer `tracing` to stderr or OpenTelemetry for operational logs.
    pub fn log(&self, level: LogLevel, data: impl Serialize) -> bool {
        self.log_with_logger(level, None, data)
    }

    /// Like [`RequestContext::log`], naming the logger.
    pub fn log_with_logger(
        &self,
        level: LogLevel,
        logger: Option<&str>,
        data: impl Serialize,
    ) -> bool {
        let Some(threshold) = self.inner.meta.log_level else {
            return false;
        };
        if !self.inner.logging_enabled || level < threshold || self.is_cancelled() {
            return false;
        }
        let Ok(data) = serde_json::to_value(data) else {
            return false;
        };
        if crate::wire::json_len(&data) > MAX_LOG_DATA_BYTES {
            return false;
        }
        {
            let Ok(mut limits) = self.inner.limits.lock() else {
                return false;
            };
            if limits.logs_sent >= MAX_LOG_NOTIFICATIONS || !limits.take_token() {
                return false;
            }
            limits.logs_sent += 1;
        }
        let mut params = Map::with_capacity(3);
        params.insert("level".into(), Value::from(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), Value::from(logger));
        }
        params.insert("data".into(), data);
        self.send("notifications/message", Value::Object(params))
    }

    /// Sends a notification of this request as is (subscription streams).
    pub(crate) fn notify(&self, method: &str, params: Value) -> bool {
        self.send(method, params)
    }

    /// Waits until the transport has taken everything queued for this request.
    pub(crate) async fn backlog_drained(&self) {
        if let Some(b) = self.inner.outbound.backlog() {
            b.drained().await;
        }
    }

    fn send(&self, method: &str, params: Value) -> bool {
        if self.is_cancelled() {
            return false;
        }
        let frame = encode_notification(method, &params);
        if let Some(held) = &self.inner.held {
            return match held.lock() {
                Ok(mut h) => {
                    h.push(frame);
                    true
                }
                Err(_) => false,
            };
        }
        self.inner.outbound.send(frame)
    }
}

impl Limits {
    /// No notification sent yet, the rate bucket full.
    fn full() -> Limits {
        Limits {
            last_progress: None,
            progress_sent: 0,
            logs_sent: 0,
            tokens: NOTIFICATION_RATE_PER_SECOND,
            refilled: None,
        }
    }

    fn take_token(&mut self) -> bool {
        let now = Instant::now();
        let elapsed = self
            .refilled
            .map_or(0.0, |then| now.duration_since(then).as_secs_f64());
        self.refilled = Some(now);
        self.tokens = (self.tokens + elapsed * NOTIFICATION_RATE_PER_SECOND)
            .min(NOTIFICATION_RATE_PER_SECOND);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Writes whole numbers as integers (`50`, not `50.0`) and the rest as floats.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.inner.id)
            .field("method", &self.inner.method)
            .finish_non_exhaustive()
    }
}
