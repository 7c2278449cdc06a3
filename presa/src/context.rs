//! The per-request context handed to handlers: who asked (the admitted `_meta`), progress
//! and log notifications bound to this request, cancellation, and shared application
//! state.
//!
//! Notifications go through the request's outbound sink and are dropped when the request
//! did not opt in (no progress token, no `logLevel`, a level below the threshold), when a
//! bound is reached, or once the request is cancelled: nothing is ever sent for a request
//! after its cancellation.

use crate::state::StateMap;
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

/// Where a request's notifications go: the transport's framing of one request.
pub(crate) trait Outbound: Send + Sync {
    /// Queues one serialized notification. Returns false when it was not queued.
    fn send(&self, frame: String) -> bool;
}

/// The context of one request. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

struct Inner {
    id: RequestId,
    method: String,
    meta: RequestMeta,
    cancel: CancellationToken,
    outbound: Arc<dyn Outbound>,
    logging_enabled: bool,
    state: Arc<StateMap>,
    limits: Mutex<Limits>,
}

struct Limits {
    last_progress: Option<f64>,
    progress_sent: u32,
    logs_sent: u32,
    tokens: f64,
    refilled: Instant,
}

impl RequestContext {
    pub(crate) fn new(
        id: RequestId,
        method: String,
        meta: RequestMeta,
        cancel: CancellationToken,
        outbound: Arc<dyn Outbound>,
        logging_enabled: bool,
        state: Arc<StateMap>,
    ) -> Self {
        RequestContext {
            inner: Arc::new(Inner {
                id,
                method,
                meta,
                cancel,
                outbound,
                logging_enabled,
                state,
                limits: Mutex::new(Limits {
                    last_progress: None,
                    progress_sent: 0,
                    logs_sent: 0,
                    tokens: NOTIFICATION_RATE_PER_SECOND,
                    refilled: Instant::now(),
                }),
            }),
        }
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

    /// Whether the client cancelled the request (or went away).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled. The pipeline also drops the handler's
    /// future on cancellation; this is for work the handler spawned itself.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// The cancellation token of the request, to hand to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Shared application state of type `T` given to the server builder, if any.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.inner.state.get::<T>()
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
        if data.to_string().len() > MAX_LOG_DATA_BYTES {
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

    fn send(&self, method: &str, params: Value) -> bool {
        if self.is_cancelled() {
            return false;
        }
        self.inner
            .outbound
            .send(encode_notification(method, &params))
    }
}

impl Limits {
    fn take_token(&mut self) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
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

fn truncate(s: &str, max: usize) -> &str {
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
