//! The protocol pipeline: [`Core`], the serving state every transport hands its requests
//! to, and the way one request travels through it.
//!
//! A transport decodes a message and hands a request to [`Core::serve`] with an
//! [`Exchange`]: what the transport is ([`Transport`]), where the request's notifications
//! go, and its cancellation. The request then passes, in this order:
//!
//! 1. admission ([`admit`]): the `_meta` checks of wire section 2 (with the HTTP version
//!    header where section 2 says), the method gate (-32601 for a method not served or
//!    whose capability is not advertised), the HTTP mirror checks of section 13
//!    ([`headers`]), the request state of a retry (`mrtr::round`), and the request's
//!    context;
//! 2. dispatch: a `tools/call` to its tool ([`call`]), a method an extension owns to the
//!    extension, any other method to its handler ([`dispatch`]);
//! 3. the round's close (`input_required` when the handler asked for input it was not
//!    given) and the result's shape (`shape`).
//!
//! Admission happens before any user code runs, so a handler never sees an invalid
//! request. A panic in a handler becomes -32603 with no detail; the server stays up.
//!
//! Everything up to the handler's first poll runs at once, in [`Core::serve`]: a request
//! answered by then (most are) is [`Served::Now`], with no future of the pipeline's own;
//! one whose handler waits is [`Served::Later`], the rest of its work, for the transport
//! to drive.

mod admit;
mod call;
pub(crate) mod config;
mod dispatch;
mod headers;
mod legacy;

use crate::auth::{Guard, Principal};
use crate::context::state::StateMap;
use crate::context::{Host, Outbound};
use crate::error::Error;
use crate::extension::Extension;
use crate::mrtr::round::Seals;
use crate::observe;
use crate::registry::Catalog;
use crate::session::{Session, SessionConfig};
use crate::shape::Shaper;
use crate::subscriptions::{Event, Hub, Outgoing, SubscriptionConfig};
use crate::wire::jsonrpc::{Notification, Request, RequestId, encode_error, encode_result_owned};
use crate::wire::meta;
use crate::wire::methods as names;
use crate::wire::types::Implementation;
use axum::http::HeaderMap;
use config::Config;
use futures_util::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::task::Poll;
use std::time::Instant;

/// A boxed, sendable future: the rest of a request's work.
pub(crate) type Rest<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Derives a request's principal (who is asking) from its HTTP headers; `None` on stdio
/// and in process. Request state is bound to it.
pub(crate) type PrincipalFn = dyn Fn(Option<&HeaderMap>) -> Option<Principal> + Send + Sync;

/// The serving state of one server, shared by every transport and request: its identity
/// and settings, the catalog snapshot, the extensions, the request-state seals, the hub
/// of subscription streams and the application state.
pub(crate) struct Core {
    pub(crate) info: Implementation,
    pub(crate) config: Config,
    pub(crate) shaper: Shaper,
    /// The shaper of a legacy session's results.
    pub(crate) legacy_shaper: Shaper,
    catalog: RwLock<Arc<Catalog>>,
    pub(crate) extensions: Vec<Arc<dyn Extension>>,
    pub(crate) seals: Seals,
    pub(crate) principal: Option<Arc<PrincipalFn>>,
    /// The server's authorization, when it has one: token checks, scopes, challenges.
    pub(crate) auth: Option<Arc<Guard>>,
    pub(crate) hub: Arc<Hub>,
    /// Where the hub's events go to reach other replicas, and come from, when the server
    /// has a fan-out.
    fanout: Option<Outgoing>,
    pub(crate) state: StateMap,
    /// Whether clients that open with `initialize` are served (else they are told the
    /// versions this server speaks).
    pub(crate) legacy: bool,
    /// How legacy sessions ask their clients.
    pub(crate) sessions: SessionConfig,
    /// Where legacy sessions' records are shared with other replicas, if they are.
    pub(crate) session_store: Option<Arc<dyn crate::session::SessionStore>>,
}

/// Everything a [`Core`] is made from (the builder checks each part first).
pub(crate) struct Parts {
    pub(crate) info: Implementation,
    pub(crate) config: Config,
    pub(crate) catalog: Catalog,
    pub(crate) extensions: Vec<Arc<dyn Extension>>,
    pub(crate) seals: Seals,
    pub(crate) principal: Option<Arc<PrincipalFn>>,
    pub(crate) auth: Option<Arc<Guard>>,
    pub(crate) state: StateMap,
    pub(crate) legacy: bool,
    pub(crate) sessions: SessionConfig,
    pub(crate) session_store: Option<Arc<dyn crate::session::SessionStore>>,
    pub(crate) subscriptions: SubscriptionConfig,
    pub(crate) fanout: Option<Outgoing>,
}

impl Host for Core {
    fn state(&self) -> &StateMap {
        &self.state
    }
}

/// What a transport is, as the pipeline needs to know it.
pub(crate) enum Transport {
    /// Streamable HTTP, with the request's headers: the mirror checks run, and
    /// notifications of a method that may still end in an error with its own HTTP
    /// status are held until the outcome is known (errata W-11).
    Http(HeaderMap),
    /// stdio.
    Stdio,
    /// The in-process test client.
    InProcess,
}

impl Transport {
    /// The HTTP headers, on Streamable HTTP.
    pub(crate) fn headers(&self) -> Option<&HeaderMap> {
        match self {
            Transport::Http(headers) => Some(headers),
            Transport::Stdio | Transport::InProcess => None,
        }
    }
}

/// Which era of the protocol a request belongs to.
pub(crate) enum Era {
    /// 2026-07-28: the request carries everything it needs in its `_meta`.
    Modern,
    /// A session a client opened with `initialize` (2025-11-25, 2025-06-18).
    Legacy(Arc<Session>),
}

/// What a transport hands the pipeline along with a request.
pub(crate) struct Exchange {
    /// What the transport is.
    pub(crate) transport: Transport,
    /// Which era the request belongs to.
    pub(crate) era: Era,
    /// Where the request's notifications go, and its cancellation (fired when the
    /// client cancels the request or goes away).
    pub(crate) outbound: Arc<dyn Outbound>,
    /// A buffer to write the answer in, its contents discarded: a transport that copies
    /// each answer out hands the last one's back. Empty (and unallocated) otherwise.
    pub(crate) buffer: String,
    /// Who the request acts for, when the transport established it (a verified access
    /// token over HTTP); otherwise the server's principal function says.
    pub(crate) principal: Option<Arc<Principal>>,
}

/// The pipeline's answer to one request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A response to write, the HTTP status it maps to, and, for an authorization
    /// refusal, the `WWW-Authenticate` challenge sent with it.
    Response {
        body: String,
        status: u16,
        challenge: Option<Box<str>>,
    },
    /// The request was cancelled: nothing more may be sent for it.
    Cancelled,
    /// The server ended a subscription stream: on HTTP the graceful end result is sent
    /// and the stream closed; on stdio `notifications/cancelled` for the listen id
    /// (errata W-2).
    StreamEnded { body: String, id: RequestId },
}

/// What serving a request came to ([`Core::serve`]).
pub(crate) enum Served {
    /// Answered already.
    Now(Reply),
    /// Still running: the rest of the request, which owns everything it needs and was
    /// polled once already (with a no-op waker); dropping it drops the handler's future.
    /// Its next poll must have a real waker: the transport's task, or its `await`.
    Later(Rest<Reply>),
}

/// How far starting a request's work got at its first poll.
enum Step {
    /// Done at once.
    Done(Result<String, Error>),
    /// The rest, already polled once: its next poll must have a real waker.
    Rest(Rest<Result<String, Error>>),
}

impl Step {
    /// Polls `work` once (its first poll, inside the request's span and panic guard):
    /// done, or the rest.
    fn first_poll(mut work: Rest<Result<String, Error>>) -> Step {
        match work.as_mut().now_or_never() {
            Some(done) => Step::Done(done),
            None => Step::Rest(work),
        }
    }
}

/// What accepting a notification asks of the transport.
#[derive(Debug)]
pub(crate) enum NotificationEffect {
    /// Nothing.
    None,
    /// Cancel the in-flight request with this id (stdio; HTTP ignores it).
    Cancel(RequestId),
}

/// The most of a cancellation's `reason` logged, in bytes.
pub(crate) const MAX_LOGGED_REASON: usize = 4096;

impl Core {
    /// The serving state made from its checked parts.
    pub(crate) fn new(parts: Parts) -> Result<Core, String> {
        Ok(Core {
            shaper: Shaper::new(&parts.info, parts.config.server_info_in_results)?,
            legacy_shaper: Shaper::legacy(),
            info: parts.info,
            config: parts.config,
            catalog: RwLock::new(Arc::new(parts.catalog)),
            extensions: parts.extensions,
            seals: parts.seals,
            principal: parts.principal,
            auth: parts.auth,
            hub: Arc::new(Hub::new(parts.subscriptions)),
            fanout: parts.fanout,
            state: parts.state,
            legacy: parts.legacy,
            sessions: parts.sessions,
            session_store: parts.session_store,
        })
    }

    /// Who a request acts for: the principal its transport established (a verified
    /// token), else what the server's principal function makes of its headers.
    fn principal_of(
        &self,
        established: Option<Arc<Principal>>,
        transport: &Transport,
    ) -> Option<Arc<Principal>> {
        established.or_else(|| {
            self.principal
                .as_ref()
                .and_then(|f| f(transport.headers()))
                .map(Arc::new)
        })
    }

    /// Whether `principal` may do an operation that needs the scopes `needed` (besides
    /// the ones every request needs): the refusal names every scope it needs, with the
    /// challenge when the server has authorization (403 over HTTP either way).
    pub(crate) fn authorize(
        &self,
        principal: Option<&Principal>,
        needed: &[String],
    ) -> Result<(), Error> {
        match &self.auth {
            Some(guard) => guard.authorize(principal, needed),
            None if needed.is_empty() => Ok(()),
            None => {
                let granted = principal.map_or(&[][..], Principal::scopes);
                if needed.iter().all(|s| granted.contains(s)) {
                    return Ok(());
                }
                Err(crate::auth::unauthorized_without_challenge(needed))
            }
        }
    }

    /// The catalog as it is now.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.read_catalog())
    }

    /// The catalog under its read lock, for a look without taking a count of it. Hold it
    /// only where no user code runs: a handler may change the catalog.
    fn read_catalog(&self) -> RwLockReadGuard<'_, Arc<Catalog>> {
        self.catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes the catalog: `change` edits a copy, which replaces the snapshot when
    /// `change` says it changed anything. Requests in flight keep the snapshot they
    /// started with.
    pub(crate) fn update_catalog<E>(
        &self,
        change: impl FnOnce(&mut Catalog) -> Result<bool, E>,
    ) -> Result<bool, E> {
        let mut guard = self
            .catalog
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = Catalog::clone(&guard);
        let changed = change(&mut next)?;
        if changed {
            *guard = Arc::new(next);
        }
        Ok(changed)
    }

    /// Tells listeners about an event: this replica's, then, through the fan-out when
    /// there is one, the other replicas'.
    pub(crate) fn publish(&self, event: &Event) {
        self.hub.publish(event);
        if let Some(fanout) = &self.fanout {
            fanout.carry(event);
        }
    }

    /// Starts relaying the other replicas' events to this replica's listeners, once, when
    /// the server has a fan-out and this runs within a Tokio runtime.
    pub(crate) fn start_fanout(&self) {
        if let Some(fanout) = &self.fanout {
            fanout.start(&self.hub);
        }
    }

    /// The name a span records for `method`: the method itself when presa or an
    /// extension serves it, else `other` (a client's arbitrary string is not recorded).
    fn method_label<'m>(&self, method: &'m str) -> &'m str {
        let known = names::SERVED.contains(&method)
            || names::LEGACY_SERVED.contains(&method)
            || self.extension_for(method).is_some();
        if known { method } else { "other" }
    }

    /// The extension that owns `method`, if any.
    fn extension_for(&self, method: &str) -> Option<&Arc<dyn Extension>> {
        self.extensions
            .iter()
            .find(|e| e.methods().contains(&method))
    }

    /// Serves one request: admission, the method gate and the mirror checks run here,
    /// at once, and the request's work gets its first poll. A request done at that
    /// poll is answered now; one that waits comes back as the rest (see [`Served`]).
    /// Everything runs inside the request's span and under the panic guard.
    pub(crate) fn serve(self: &Arc<Self>, request: Request, exchange: Exchange) -> Served {
        let network = match &exchange.transport {
            Transport::Http(_) => observe::Network::Http,
            Transport::Stdio => observe::Network::Pipe,
            Transport::InProcess => observe::Network::InProcess,
        };
        let span = observe::request_span(self.method_label(&request.method), &request.id, network);
        // The parent `_meta` names, set before the span is first entered (an
        // OpenTelemetry span's parent is fixed once it starts); admission checks the
        // rest of `_meta` later.
        if !span.is_disabled() {
            let (traceparent, tracestate, baggage) = request.meta.trace_context();
            observe::set_parent(&span, traceparent, tracestate, baggage);
            if let Era::Legacy(session) = &exchange.era
                && let Some(id) = session.id()
            {
                observe::session(&span, id);
            }
        }
        let end = End {
            // The clock is read only when someone records the span.
            started: (!span.is_disabled()).then(Instant::now),
            id: request.id.clone(),
            listen: request.method == "subscriptions/listen",
        };
        // Cancellation comes first: a request cancelled before it starts runs nothing.
        if exchange.outbound.cancellation().is_cancelled() {
            return Served::Now(end.reply(&span, None));
        }
        let sink = Arc::clone(&exchange.outbound);
        let first = {
            let _entered = span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.start(request, exchange)))
        };
        let rest = match first {
            Ok(Step::Done(result)) => return Served::Now(end.reply(&span, Some(Ok(result)))),
            Err(panic) => return Served::Now(end.reply(&span, Some(Err(panic)))),
            Ok(Step::Rest(rest)) => rest,
        };
        // The span itself, to record the outcome into: nothing lost if the level changes
        // while the request runs. Held by a guard that records the request cancelled if
        // the transport drops it before it concludes.
        let pending = Pending {
            end: Some(end),
            span: span.clone(),
        };
        // Entered for each poll; `End::reply` enters it again on its own, because the
        // path that concludes at the first poll has no `Instrumented` around it.
        Served::Later(Box::pin(observe::Instrumented::new(
            async move {
                let outcome = until_cancelled(rest, &*sink).await;
                // A plain `fn` handler's closure runs on after its future is dropped
                // (cancelled): the request ends, and a transport driving it to its end
                // gives back its slot, only once the closure has returned too.
                if let Some(blocking) = sink.cancellation().blocking_made() {
                    blocking.idle().await;
                }
                pending.conclude(outcome)
            },
            span,
        )))
    }

    /// Admission, then the method's work, started: a `tools/call` in place
    /// ([`call::start`]); any other method as a future, polled once.
    fn start(self: &Arc<Self>, request: Request, exchange: Exchange) -> Step {
        let Exchange {
            transport,
            era,
            outbound,
            buffer,
            principal,
        } = exchange;
        let principal = self.principal_of(principal, &transport);
        if let Some(p) = &principal {
            observe::enduser(&request_span(), p.id());
        }
        if let Era::Legacy(session) = era {
            return self.start_legacy(request, session, outbound, buffer, principal);
        }
        let admit::Admitted {
            method,
            params,
            route,
            spend,
        } = match self.admit(request, &transport, outbound, principal) {
            Ok(admitted) => admitted,
            Err(error) => return Step::Done(Err(error)),
        };
        let Some(spend) = spend else {
            return self.route(method, params, route, &transport, buffer);
        };
        // A single-use state is spent (in a store that may be remote) before anything of
        // the route runs: refused or unknowable, the handler never sees it.
        let core = Arc::clone(self);
        Step::first_poll(Box::pin(async move {
            spend.await?;
            match core.route(method, params, route, &transport, buffer) {
                Step::Done(result) => result,
                Step::Rest(rest) => rest.await,
            }
        }))
    }

    /// An admitted request's work, started: a `tools/call` in place ([`call::start`]);
    /// any other method as a future, polled once.
    fn route(
        self: &Arc<Self>,
        method: std::borrow::Cow<'static, str>,
        params: crate::wire::jsonrpc::RequestParams,
        route: admit::Route,
        transport: &Transport,
        buffer: String,
    ) -> Step {
        match route {
            admit::Route::Call { closing, tool } => {
                call::start(self, params, transport.headers(), tool, closing, buffer)
            }
            admit::Route::Extension(extension, ctx) => {
                let core = Arc::clone(self);
                Step::first_poll(Box::pin(async move {
                    let result = extension.handle(&method, params.into_map(), ctx).await?;
                    core.shaper.object(result)
                }))
            }
            admit::Route::Method {
                closing,
                retry,
                catalog,
            } => {
                let core = Arc::clone(self);
                Step::first_poll(Box::pin(async move {
                    let ctx = closing.ctx.clone();
                    let params = params.into_map();
                    let result = dispatch::method(
                        &core,
                        &core.shaper,
                        &catalog,
                        &method,
                        params,
                        retry,
                        ctx,
                    )
                    .await;
                    closing.close(&core.seals, &core.shaper, result)
                }))
            }
        }
    }

    /// Checks a notification and says what it asks of the transport. An error means the
    /// notification cannot be accepted (a 4xx on HTTP; ignored on stdio).
    pub(crate) fn accept_notification(
        &self,
        notification: &Notification,
        transport: &Transport,
    ) -> Result<NotificationEffect, Error> {
        meta::admit_notification(&notification.meta)?;
        if let Some(headers) = transport.headers() {
            let body_version = notification.meta.protocol_version();
            headers::notification_headers(headers, &notification.method, body_version)?;
        }
        if notification.method != names::CANCELLED {
            return Ok(NotificationEffect::None);
        }
        self.cancellation(notification)
    }

    /// Reads a `notifications/cancelled`: the request to cancel, its reason logged.
    fn cancellation(&self, notification: &Notification) -> Result<NotificationEffect, Error> {
        let id = notification
            .params
            .get("requestId")
            .map(RequestId::read)
            .and_then(Result::ok)
            .ok_or_else(|| {
                Error::invalid_params(
                    "notifications/cancelled requires a requestId that is a string or an int64 integer",
                )
            })?;
        let reason = match notification.params.get("reason") {
            None => None,
            Some(Value::String(r)) => Some(r.as_str()),
            Some(_) => {
                return Err(Error::invalid_params(
                    "notifications/cancelled reason must be a string",
                ));
            }
        };
        // `basic/patterns/cancellation.mdx`: both parties SHOULD log the reasons (cut as
        // progress messages are: the client writes them).
        let reason = reason.map_or("(none given)", |r| {
            crate::context::truncate(r, MAX_LOGGED_REASON)
        });
        tracing::debug!(request_id = %id, reason, "the client cancelled a request");
        Ok(NotificationEffect::Cancel(id))
    }
}

/// Drives the rest of a request until it is done or cancelled (`None`: cancelled; an
/// `Err` inside: it panicked). Once the request is cancelled the rest is not polled
/// again, whatever else woke it. The cancellation is looked at as a flag; its token and
/// waiter are made only when the rest is still pending after a poll.
async fn until_cancelled(
    rest: Rest<Result<String, Error>>,
    sink: &dyn Outbound,
) -> Option<std::thread::Result<Result<String, Error>>> {
    let cancel = sink.cancellation();
    let mut work = AssertUnwindSafe(rest).catch_unwind();
    let mut waiter = std::pin::pin!(None);
    std::future::poll_fn(|cx| {
        if cancel.is_cancelled() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(result) = work.poll_unpin(cx) {
            return Poll::Ready(Some(result));
        }
        if waiter.is_none() {
            waiter.set(Some(cancel.token().cancelled_owned()));
        }
        match waiter.as_mut().as_pin_mut() {
            Some(waiter) => waiter.poll(cx).map(|()| None),
            // Never: the waiter was set just above.
            None => Poll::Ready(None),
        }
    })
    .await
}

/// What turning a request's outcome into its reply needs.
struct End {
    /// When the request started, when someone records its span.
    started: Option<Instant>,
    id: RequestId,
    listen: bool,
}

impl End {
    /// The reply to an outcome (`None`: cancelled; `Some(Err)`: the work panicked),
    /// recorded on `span`.
    fn reply(
        self,
        span: &observe::Span,
        outcome: Option<std::thread::Result<Result<String, Error>>>,
    ) -> Reply {
        let duration = self.started.map(|started| started.elapsed());
        let id = self.id;
        // Entered for the events below: they belong to the request's span when it is
        // enabled, and to whatever span is current when it is not (as inside it).
        let _entered = span.enter();
        let reply = match outcome {
            None => {
                observe::end(span, observe::Outcome::Cancelled, duration);
                tracing::debug!("request cancelled");
                Reply::Cancelled
            }
            Some(Ok(Ok(result))) if self.listen => {
                observe::end(span, observe::Outcome::StreamEnded, duration);
                Reply::StreamEnded {
                    body: encode_result_owned(&id, result),
                    id,
                }
            }
            Some(Ok(Ok(result))) => {
                observe::end(span, observe::Outcome::Ok, duration);
                tracing::debug!("request served");
                Reply::Response {
                    body: encode_result_owned(&id, result),
                    status: 200,
                    challenge: None,
                }
            }
            Some(Ok(Err(error))) => {
                observe::end(span, observe::Outcome::Error(error.code()), duration);
                observe::describe_error(span, error.message());
                observe::rejected(error.code());
                tracing::debug!(code = error.code(), "request failed");
                error_reply(Some(&id), &error)
            }
            Some(Err(_panic)) => {
                // The panic's text is never recorded nor sent: the fixed message only.
                let error = Error::internal();
                observe::end(span, observe::Outcome::Panic, duration);
                observe::describe_error(span, error.message());
                observe::rejected(crate::error::code::INTERNAL_ERROR);
                tracing::error!("handler panicked; answering -32603");
                error_reply(Some(&id), &error)
            }
        };
        observe::end_span(span);
        reply
    }
}

/// The end of a request still running, with its span: concluded with the request's
/// outcome ([`Pending::conclude`]), or, when the future that holds it is dropped first
/// (the client went away, or the server stopped before the request was done), recorded
/// as cancelled, as nothing was or will be answered. Dropping it costs what concluding
/// it would: no allocation, and no clock read when the span is disabled.
struct Pending {
    /// `None` once concluded.
    end: Option<End>,
    span: observe::Span,
}

impl Pending {
    /// The reply to the request's outcome, recorded on its span.
    fn conclude(mut self, outcome: Option<std::thread::Result<Result<String, Error>>>) -> Reply {
        match self.end.take() {
            Some(end) => end.reply(&self.span, outcome),
            // Never: only `conclude` takes the end, and it takes `self`.
            None => Reply::Cancelled,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(end) = self.end.take() {
            // Dropped before its outcome was known: the transport gave the request up.
            // The reply is for no one.
            let _ = end.reply(&self.span, None);
        }
    }
}

/// The request's span, for the records made inside the pipeline (the trace context at
/// admission, the item's name at dispatch): the current span when INFO spans can be
/// enabled at all, else a disabled span, without asking the dispatcher for the current
/// one.
pub(crate) fn request_span() -> observe::Span {
    observe::current()
}

/// An error response with its HTTP status.
pub(crate) fn error_reply(id: Option<&RequestId>, error: &Error) -> Reply {
    let id = id.map(RequestId::to_value);
    Reply::Response {
        body: encode_error(id.as_ref(), error),
        status: error.http_status(),
        challenge: error.challenge().map(Box::from),
    }
}
