//! Clients of the earlier revisions (2025-11-25, 2025-06-18) on the Streamable HTTP
//! endpoint: their sessions, as those revisions' transport defines them, beside the
//! 2026-07-28 requests the endpoint serves as always.
//!
//! - A POST is a legacy session's when its body's `_meta` carries none of the 2026-07-28
//!   per-request keys (`io.modelcontextprotocol/protocolVersion`, `…/clientCapabilities`,
//!   `…/clientInfo`, `…/logLevel`) and its `MCP-Protocol-Version` header does not name
//!   2026-07-28. `Mcp-Method` and `Mcp-Name` play no part. An `initialize` opens a session: a new one, whatever `Mcp-Session-Id` it
//!   carries, whose id (192 random bits from the OS, base64url) goes back in
//!   `Mcp-Session-Id`. Every other request, notification and response must carry a live
//!   session's id: 400 without one, 404 for one that ended (deleted, expired) or never
//!   was. A version header that names a revision not served is 400.
//! - A request's answer is JSON, or an event stream when the request sent anything
//!   before it (progress, logs, requests to the client; see [`outbound`]). JSON-RPC
//!   errors go with HTTP 200: those revisions give them no status. A closed connection
//!   does not cancel the request; `notifications/cancelled` does.
//! - A notification is acted on and gets 202; so does a response, which is handed to
//!   the server's request it answers (one that answers nothing is dropped).
//! - GET opens the session's standalone stream, where what belongs to no request goes
//!   (list changes, resource updates), held in the session's buffer while no GET is
//!   open; a second GET while one is open gets 409. A GET with `Last-Event-ID` resumes
//!   the stream that id belongs to after it, replacing the connection that read it: a
//!   request's stream up to its answer, the standalone stream for good; an id of no
//!   stream the session holds gets 400. See [`live`] for the ids and the buffer.
//! - In a session that negotiated 2025-11-25, every stream begins with a priming event
//!   (an id and no data), and a handler may close its request's connection early for
//!   the client to poll ([`crate::RequestContext::close_stream_for_polling`]), after a
//!   `retry:` field.
//! - DELETE ends a session (204). Sessions are capped and end when idle ([`table`]).
//! - With a session store shared by replicas
//!   ([`ServerBuilder::session_store`](crate::ServerBuilder::session_store)), `initialize`
//!   keeps the session's record there before the client learns its id, and every later
//!   message first marks the record used: a session this replica does not hold is made
//!   from its record and served as that session; one that ended or expired in the store
//!   gets 404 here too; a fault of the store is a 503 with the retryable -32603. What
//!   the client changes (log level, subscriptions) and its DELETE are written to the
//!   record and announced through the fan-out, so the replicas holding the session read
//!   it again (or end it). A client's answer or `notifications/cancelled` that reaches a
//!   replica other than the one waiting for it is passed on the same way. The events of
//!   the session's streams are written through to the store's buffer, so a GET with
//!   `Last-Event-ID` resumes a stream on any replica: the standalone stream is taken
//!   over by the replica of the latest GET (a plain GET too: the connection another
//!   replica held ends, where a second plain GET on the same replica gets 409), a
//!   request's stream is read from the store as the replica running the request writes
//!   it ([`shared`]). A resumption ends the connection that read the stream before, on
//!   whichever replica, when the fan-out is there to say so. A request runs on the
//!   replica it reached: if that replica goes away, the request is lost with it (a
//!   resumption elsewhere replays what the store holds of its stream, then waits for
//!   an answer that never comes).
//!
//! Stateless (`HttpConfig::legacy_sessions(false)`): no session ids; GET and DELETE get
//! 405; `initialize` is answered and forgotten, and every other request is served in a
//! session of its own that knows no client capabilities and the revision from the
//! version header (2025-11-25 without one). The client cannot be asked anything, cannot
//! subscribe, and cannot resume; a closed connection cancels its request, since nothing
//! else could.

mod live;
mod outbound;
mod shared;
mod table;

pub(super) use table::Sessions;

use super::budget::Charge;
use super::cap::Slot;
use super::{
    Endpoint, Routed, Serving, check_origin, concluded, host_verdict, json_response, post_only,
    queue, status, transport_error,
};
use crate::auth::Principal;
use crate::context::Outbound;
use crate::error::{Error, code};
use crate::pipeline::{Era, Exchange, Reply, Served, Transport};
use crate::session::{Session, SessionRecord, SessionStore};
use crate::wire::jsonrpc::{self, Notification, Request, RequestId, encode_error};
use crate::wire::meta::{LEGACY_VERSIONS, SUPPORTED_VERSIONS};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use live::{GET_STREAM, Limits, Live, Reader, Refused, parse_event_id, priming};
use outbound::{PostOutbound, Start};
use serde_json::{Map, Value};
use shared::{Follower, Sharing};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::oneshot;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The largest stream number and `seq` a session store is asked about.
const MAX_STORED: u64 = i64::MAX as u64;

/// Random bytes in a session id (192 bits; 32 characters of base64url).
const SESSION_ID_BYTES: usize = 24;

/// A legacy request's answer, still to come.
type Answer = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Whether the version header names a 2026-07-28 revision.
pub(super) fn modern_header(headers: &HeaderMap) -> bool {
    headers
        .get(PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| SUPPORTED_VERSIONS.contains(&v.trim()))
}

/// The legacy revision the version header names, if it is there; 400 when it names one
/// this server does not serve (the earlier revisions' transport says so).
#[allow(clippy::result_large_err)]
fn version_header(headers: &HeaderMap) -> Result<Option<&'static str>, Response> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let named = value.to_str().unwrap_or_default().trim();
    match LEGACY_VERSIONS.iter().find(|v| **v == named) {
        Some(version) => Ok(Some(version)),
        None => Err(transport_error(
            StatusCode::BAD_REQUEST,
            Error::invalid_request(format!(
                "Bad Request: unsupported MCP-Protocol-Version {named:?}; this server speaks {}",
                [SUPPORTED_VERSIONS, LEGACY_VERSIONS].concat().join(", ")
            )),
        )),
    }
}

/// The id a message names in `Mcp-Session-Id`: 400 without one.
#[allow(clippy::result_large_err)]
fn named_id(headers: &HeaderMap) -> Result<&str, Response> {
    match headers.get(SESSION_ID) {
        Some(id) => Ok(id.to_str().map(str::trim).unwrap_or_default()),
        None => Err(transport_error(
            StatusCode::BAD_REQUEST,
            Error::invalid_request(
                "Bad Request: Mcp-Session-Id header is required (send initialize first)",
            ),
        )),
    }
}

/// The 404 of a session that is not live.
fn not_found() -> Response {
    transport_error(
        StatusCode::NOT_FOUND,
        Error::invalid_request(
            "Session not found: it ended or never existed; send initialize for a new one",
        ),
    )
}

/// The live session a message names in `Mcp-Session-Id`, if it is one the message's
/// principal opened: a session of another principal is as unknown as one that never
/// was. 400 without the header, 404 for a session that is not live. With a session
/// store this is [`find_shared`].
#[allow(clippy::result_large_err)]
fn find(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Arc<Live>, Response> {
    let id = named_id(headers)?;
    endpoint
        .sessions
        .get(id)
        .filter(|live| live.owner.as_deref() == principal.map(Principal::id))
        .ok_or_else(not_found)
}

/// [`find`] for an endpoint whose sessions are kept in a store shared with other
/// replicas: the session's record is marked used (which says whether it is live: it may
/// have been deleted or have expired on another replica, and is then ended here too),
/// and the session is served from this replica's copy, made from the record when this
/// replica has none, its log level and subscriptions brought up to the record's. A fault
/// of the store is a 503 with the retryable -32603 of request `id`.
async fn find_shared(
    endpoint: &Endpoint,
    store: &Arc<dyn SessionStore>,
    headers: &HeaderMap,
    principal: Option<&Principal>,
    id: Option<&Value>,
) -> Result<Arc<Live>, Response> {
    let session_id = named_id(headers)?;
    let idle = u64::try_from(endpoint.config.session_idle.as_millis()).unwrap_or(u64::MAX);
    let record = match store.touch(session_id, now_ms(), idle).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            if let Some(live) = endpoint.sessions.remove(session_id) {
                live.close();
            }
            return Err(not_found());
        }
        Err(fault) => {
            tracing::warn!("a legacy session could not be looked up: {fault}");
            return Err(store_fault(id));
        }
    };
    if record.owner.as_deref() != principal.map(Principal::id) {
        return Err(not_found());
    }
    if let Some(live) = endpoint.sessions.get(session_id) {
        live.session.restore_log_level(record.log_level);
        live.session.restore_subscriptions(&record.subscriptions);
        return Ok(live);
    }
    let core = &endpoint.server.core;
    let copy = match store.claim_copy(session_id).await {
        Ok(Some(copy)) => copy,
        Ok(None) => return Err(not_found()),
        Err(fault) => {
            tracing::warn!("a legacy session could not be copied here: {fault}");
            return Err(store_fault(id));
        }
    };
    let session = Session::new(Some(record.id.clone()), &core.sessions);
    session.keep_in(Arc::clone(store));
    if !core.restore_legacy(&session, &record) {
        tracing::warn!("a legacy session's record names a revision this server does not serve");
        return Err(not_found());
    }
    let sharing = Sharing {
        store: Arc::clone(store),
        core: Arc::clone(core),
        copy,
        standalone: false,
    };
    let live = Live::new(
        session,
        limits(&endpoint.config),
        record.owner,
        Some(sharing),
    );
    live.session.set_channel(live.channel());
    let held = endpoint
        .sessions
        .adopt(Arc::clone(&live), &endpoint.closing)
        .ok_or_else(|| too_many_sessions(id))?;
    if Arc::ptr_eq(&held, &live) {
        held.session.open_inbox(&core.hub);
    }
    Ok(held)
}

/// The live session a message names, from the store when the endpoint has one.
async fn find_any(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    principal: Option<&Principal>,
    id: Option<&Value>,
) -> Result<Arc<Live>, Response> {
    match &endpoint.server.core.session_store {
        Some(store) => find_shared(endpoint, store, headers, principal, id).await,
        None => find(endpoint, headers, principal),
    }
}

/// The live session a notification or response names, after its version header is
/// checked, marked as in use: what both need before they act, with a session store.
async fn touched(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Arc<Live>, Response> {
    version_header(headers)?;
    let live = find_any(endpoint, headers, principal, None).await?;
    live.session.touch();
    Ok(live)
}

/// The 503 of a message whose session's store failed: the retryable -32603.
fn store_fault(id: Option<&Value>) -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        encode_error(
            id,
            &Error::retryable("The session store is unavailable; try again"),
        ),
    )
}

/// The 503 of a session that does not fit in this replica's table.
fn too_many_sessions(id: Option<&Value>) -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        encode_error(
            id,
            &Error::new(
                code::INTERNAL_ERROR,
                "Too many sessions open; try again later",
            ),
        ),
    )
}

/// Milliseconds since the Unix epoch (a session's record is shared by machines).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// How many events, and bytes of them, a session of the endpoint holds.
fn limits(config: &crate::HttpConfig) -> Limits {
    Limits {
        events: config.session_events.max(1),
        bytes: config.session_event_bytes,
    }
}

/// A legacy request (see the module doc).
pub(super) fn request(
    endpoint: &Endpoint,
    request: Request,
    headers: HeaderMap,
    charge: Charge,
    principal: Option<Arc<Principal>>,
) -> Routed {
    let version = match version_header(&headers) {
        Ok(version) => version,
        Err(refused) => return Routed::Done(refused),
    };
    if !endpoint.config.legacy_sessions {
        return stateless(endpoint, request, headers, version, charge, principal);
    }
    if request.method == "initialize" {
        return initialize(endpoint, request, headers, charge, principal);
    }
    if endpoint.server.core.session_store.is_some() {
        let endpoint = endpoint.clone();
        return Routed::Legacy(Box::pin(async move {
            let id = request.id.to_value();
            let found = find_any(&endpoint, &headers, principal.as_deref(), Some(&id)).await;
            let live = match found {
                Ok(live) => live,
                Err(refused) => return refused,
            };
            match serve(&endpoint, &live, request, headers, charge, principal) {
                Ok(answer) => answer.await,
                Err(refused) => refused,
            }
        }));
    }
    let live = match find(endpoint, &headers, principal.as_deref()) {
        Ok(live) => live,
        Err(refused) => return Routed::Done(refused),
    };
    match serve(endpoint, &live, request, headers, charge, principal) {
        Ok(answer) => Routed::Legacy(answer),
        Err(refused) => Routed::Done(refused),
    }
}

/// `initialize`: a new session, in the table from the start (so the cap holds), kept and
/// named in `Mcp-Session-Id` when the handshake succeeds.
fn initialize(
    endpoint: &Endpoint,
    request: Request,
    headers: HeaderMap,
    charge: Charge,
    principal: Option<Arc<Principal>>,
) -> Routed {
    let id = request.id.to_value();
    let refuse = |status: StatusCode, error: Error| {
        Routed::Done(json_response(status, encode_error(Some(&id), &error)))
    };
    if endpoint.closing.is_cancelled() {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            Error::new(code::INTERNAL_ERROR, "The server is shutting down"),
        );
    }
    let Some(session_id) = crate::mrtr::token::random_id(SESSION_ID_BYTES) else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, Error::internal());
    };
    let core = &endpoint.server.core;
    let session = Session::new(Some(session_id), &core.sessions);
    // The copy `initialize` makes is the session's first: number 0, writing the
    // standalone stream.
    let sharing = core.session_store.as_ref().map(|store| {
        session.keep_in(Arc::clone(store));
        Sharing {
            store: Arc::clone(store),
            core: Arc::clone(core),
            copy: 0,
            standalone: true,
        }
    });
    let owner = principal.as_deref().map(|p| p.id().to_owned());
    let live = Live::new(session, limits(&endpoint.config), owner, sharing);
    live.session.set_channel(live.channel());
    let placed = endpoint
        .sessions
        .insert(Arc::clone(&live), &endpoint.closing);
    if !placed {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            Error::new(
                code::INTERNAL_ERROR,
                "Too many sessions open; try again later",
            ),
        );
    }
    live.session.open_inbox(&core.hub);
    let answer = match serve(endpoint, &live, request, headers, charge, principal) {
        Ok(answer) => answer,
        Err(refused) => {
            forget(endpoint, &live);
            return Routed::Done(refused);
        }
    };
    let endpoint = endpoint.clone();
    Routed::Legacy(Box::pin(async move {
        let mut response = answer.await;
        // The handshake is answered at once, so its outcome is known by now.
        match HeaderValue::from_str(live.id()) {
            Ok(value) if live.session.version().is_some() => {
                if let Err(refused) = record(&endpoint, &live, &id).await {
                    forget(&endpoint, &live);
                    return refused;
                }
                response.headers_mut().insert(SESSION_ID, value);
            }
            _ => forget(&endpoint, &live),
        }
        response
    }))
}

/// Keeps the record of a session `initialize` just made, when the endpoint has a session
/// store: before the client learns the session's id, so any replica it sends the next
/// request to finds the session. A fault of the store is the 503 of request `id`.
async fn record(endpoint: &Endpoint, live: &Live, id: &Value) -> Result<(), Response> {
    let Some(store) = &endpoint.server.core.session_store else {
        return Ok(());
    };
    let Some((version, capabilities, info)) = live.session.established() else {
        return Ok(());
    };
    let record = SessionRecord::new(
        live.id(),
        live.owner.clone(),
        version,
        capabilities,
        info,
        now_ms(),
    );
    store.create(&record).await.map_err(|fault| {
        tracing::warn!("a legacy session's record could not be kept: {fault}");
        store_fault(Some(id))
    })
}

/// Takes a session out of the table and ends it.
fn forget(endpoint: &Endpoint, live: &Live) {
    endpoint.sessions.remove(live.id());
    live.close();
}

/// Serves a request of a live session: the pipeline runs it on a task of its own (a
/// closed connection does not stop it), registered in the session for
/// `notifications/cancelled`; the answer is JSON or the request's stream.
#[allow(clippy::result_large_err)]
fn serve(
    endpoint: &Endpoint,
    live: &Arc<Live>,
    request: Request,
    headers: HeaderMap,
    charge: Charge,
    principal: Option<Arc<Principal>>,
) -> Result<Answer, Response> {
    let Some(mut slot) = Slot::try_take(endpoint, false) else {
        return Err(busy(&request.id));
    };
    slot.keep(charge);
    let id = request.id.clone();
    let (outbound, start) = PostOutbound::new(Arc::clone(live));
    let session = Arc::clone(&live.session);
    if !session.begin(&id, Arc::clone(&outbound) as Arc<dyn Outbound>) {
        let error =
            Error::invalid_request("Invalid Request: a request with this id is already in flight");
        return Err(json_response(
            StatusCode::OK,
            encode_error(Some(&id.to_value()), &error),
        ));
    }
    let active = live.activity();
    let exchange = Exchange {
        transport: Transport::Http(headers),
        era: Era::Legacy(Arc::clone(&session)),
        outbound: Arc::clone(&outbound) as Arc<dyn Outbound>,
        buffer: String::new(),
        principal,
    };
    let stream = outbound.stream();
    match endpoint.server.core.serve(request, exchange) {
        Served::Now(reply) => {
            // The id is free again before the client can see the answer.
            session.end(&id);
            outbound.conclude(reply);
            drop((slot, active));
        }
        Served::Later(rest) => {
            tokio::spawn(async move {
                let reply = rest.await;
                session.end(&id);
                outbound.conclude(reply);
                drop((slot, active));
            });
        }
    }
    Ok(Box::pin(answer(
        endpoint.clone(),
        Arc::clone(live),
        stream,
        start,
    )))
}

/// The POST's answer, once the request says how: its reply as JSON, or its stream (from
/// its priming event, in a 2025-11-25 session).
async fn answer(
    endpoint: Endpoint,
    live: Arc<Live>,
    stream: u64,
    start: oneshot::Receiver<Start>,
) -> Response {
    match start.await {
        Ok(Start::Json(reply)) => json_reply(reply),
        Ok(Start::Stream(conn)) => {
            let first = live.primes().then(|| priming(stream, 0));
            event_stream(&endpoint, live, stream, conn, 0, first)
        }
        // Every request is concluded; only a runtime shutting down drops one unanswered.
        Err(_) => transport_error(StatusCode::SERVICE_UNAVAILABLE, Error::internal()),
    }
}

/// A legacy reply as JSON: HTTP 200 for a result and a JSON-RPC error alike (but an
/// authorization refusal, with its status and challenge); 204 for a request the client
/// cancelled (it waits for nothing).
fn json_reply(reply: Reply) -> Response {
    match reply {
        Reply::Response {
            challenge: Some(challenge),
            status: code,
            body,
        } => super::challenged(status(code), &challenge, body),
        Reply::Response { body, .. } | Reply::StreamEnded { body, .. } => {
            json_response(StatusCode::OK, body)
        }
        Reply::Cancelled => StatusCode::NO_CONTENT.into_response(),
    }
}

/// The 503 of a request past the in-flight cap.
fn busy(id: &RequestId) -> Response {
    let error = Error::new(
        code::INTERNAL_ERROR,
        "Too many requests in flight; try again later",
    );
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        encode_error(Some(&id.to_value()), &error),
    )
}

/// An event stream read by `conn` after `cursor`, `first` written first; the standalone
/// stream sends keepalive comments while idle.
fn event_stream(
    endpoint: &Endpoint,
    live: Arc<Live>,
    stream: u64,
    conn: live::Conn,
    cursor: u64,
    first: Option<String>,
) -> Response {
    let keepalive = (stream == GET_STREAM).then(|| {
        let every = endpoint
            .config
            .keepalive
            .max(std::time::Duration::from_millis(10));
        let mut timer = tokio::time::interval(every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.reset();
        timer
    });
    let reader = Reader {
        _active: live.activity(),
        live,
        stream,
        conn,
        cursor,
        first,
        keepalive,
        closing: endpoint.closing.clone(),
        retry_ms: endpoint.config.sse_retry.as_millis(),
        done: false,
    };
    let body = futures_util::stream::unfold(reader, |mut reader| async move {
        let chunk = reader.next().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), reader))
    });
    sse_response(Body::from_stream(body))
}

/// A stream another replica writes, read from the session store by `conn` after
/// `cursor`, `first` (what the store held after the client's last event) written first.
fn followed_stream(
    endpoint: &Endpoint,
    live: Arc<Live>,
    stream: u64,
    conn: live::Conn,
    cursor: u64,
    first: String,
) -> Response {
    let follower = Follower {
        _active: live.activity(),
        live,
        stream,
        conn,
        cursor,
        first: Some(first),
        closing: endpoint.closing.clone(),
    };
    let body = futures_util::stream::unfold(follower, |mut follower| async move {
        let chunk = follower.next().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), follower))
    });
    sse_response(Body::from_stream(body))
}

/// An event stream's response, with `body`.
fn sse_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A legacy notification: acted on in its session, then 202 (400 when it is malformed).
/// With a session store, once the session is found there.
pub(super) fn notification(
    endpoint: &Endpoint,
    n: Notification,
    headers: HeaderMap,
    principal: Option<Arc<Principal>>,
) -> Routed {
    if endpoint.config.legacy_sessions && endpoint.server.core.session_store.is_some() {
        let endpoint = endpoint.clone();
        return Routed::Legacy(Box::pin(async move {
            let live = match touched(&endpoint, &headers, principal.as_deref()).await {
                Ok(live) => live,
                Err(refused) => return refused,
            };
            let core = &endpoint.server.core;
            let outcome = core.accept_legacy_notification(&n, &live.session);
            // The request it cancels may run on another replica.
            if let Ok(crate::pipeline::NotificationEffect::Cancel(id)) = &outcome {
                core.pass_to_session(live.id(), crate::session::cancel_message(id));
            }
            accepted(outcome)
        }));
    }
    Routed::Done(notification_here(
        endpoint,
        &n,
        &headers,
        principal.as_deref(),
    ))
}

/// 202 for a notification acted on, 400 for a malformed one.
fn accepted(outcome: Result<crate::pipeline::NotificationEffect, Error>) -> Response {
    match outcome {
        Ok(_) => StatusCode::ACCEPTED.into_response(),
        Err(error) => transport_error(StatusCode::BAD_REQUEST, error),
    }
}

/// [`notification`] of a session in this process (or of no session, when stateless).
fn notification_here(
    endpoint: &Endpoint,
    n: &Notification,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Response {
    if let Err(refused) = version_header(headers) {
        return refused;
    }
    let core = &endpoint.server.core;
    let accepted_here = if endpoint.config.legacy_sessions {
        let live = match find(endpoint, headers, principal) {
            Ok(live) => live,
            Err(refused) => return refused,
        };
        live.session.touch();
        core.accept_legacy_notification(n, &live.session)
    } else {
        // Nothing lasts between stateless POSTs: the notification is checked, and has
        // nothing to act on.
        core.accept_legacy_notification(n, &Session::new(None, &core.sessions))
    };
    accepted(accepted_here)
}

/// The client's response to a request of the server: handed to the request it answers,
/// then 202 (also when it answers nothing: it is dropped). With a session store, once
/// the session is found there; an answer no request of this replica awaits is passed to
/// the other replicas, through the fan-out, for the one that sent the request.
pub(super) fn response(
    endpoint: &Endpoint,
    response: jsonrpc::Response,
    headers: HeaderMap,
    principal: Option<Arc<Principal>>,
) -> Routed {
    if endpoint.config.legacy_sessions && endpoint.server.core.session_store.is_some() {
        let endpoint = endpoint.clone();
        return Routed::Legacy(Box::pin(async move {
            let live = match touched(&endpoint, &headers, principal.as_deref()).await {
                Ok(live) => live,
                Err(refused) => return refused,
            };
            let message = crate::session::answer_message(&response);
            if !live.session.deliver(response) {
                // The request it answers may wait on another replica.
                endpoint.server.core.pass_to_session(live.id(), message);
            }
            StatusCode::ACCEPTED.into_response()
        }));
    }
    Routed::Done(response_here(
        endpoint,
        response,
        &headers,
        principal.as_deref(),
    ))
}

/// [`response`] in a session of this process.
fn response_here(
    endpoint: &Endpoint,
    response: jsonrpc::Response,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Response {
    if let Err(refused) = version_header(headers) {
        return refused;
    }
    if endpoint.config.legacy_sessions {
        let live = match find(endpoint, headers, principal) {
            Ok(live) => live,
            Err(refused) => return refused,
        };
        live.session.touch();
        if !live.session.deliver(response) {
            tracing::debug!("a legacy client answered a request the server is not waiting on");
        }
    }
    StatusCode::ACCEPTED.into_response()
}

/// A stateless legacy request: served in a session of its own, answered as 2026-07-28
/// requests are (JSON, or SSE once it notifies; a closed connection cancels it), with
/// JSON-RPC errors under HTTP 200.
fn stateless(
    endpoint: &Endpoint,
    request: Request,
    headers: HeaderMap,
    version: Option<&'static str>,
    charge: Charge,
    principal: Option<Arc<Principal>>,
) -> Routed {
    let core = &endpoint.server.core;
    let Some(mut slot) = Slot::try_take(endpoint, false) else {
        return Routed::Done(busy(&request.id));
    };
    slot.keep(charge);
    let session = Session::new(None, &core.sessions);
    if request.method != "initialize" {
        // What `initialize` declared is gone: no capabilities, the version the header
        // names, and no client info.
        let version = version.unwrap_or(LEGACY_VERSIONS[0]);
        session.initialize(version, Map::new(), Value::Object(Map::new()));
        if matches!(
            &*request.method,
            "resources/subscribe" | "resources/unsubscribe"
        ) {
            let error = Error::invalid_request(
                "Invalid Request: subscriptions need a session, and this endpoint serves \
                 earlier revisions without sessions",
            );
            return Routed::Done(json_response(
                StatusCode::OK,
                encode_error(Some(&request.id.to_value()), &error),
            ));
        }
    }
    let (outbound, rx) = queue::channel();
    let exchange = Exchange {
        transport: Transport::Http(headers),
        era: Era::Legacy(session),
        outbound: Arc::clone(&outbound) as Arc<dyn Outbound>,
        buffer: String::new(),
        principal,
    };
    match core.serve(request, exchange) {
        Served::Now(reply) => Routed::Done(concluded(with_ok(reply), rx, None, slot, None)),
        Served::Later(rest) => {
            let guard = outbound.cancellation().token().drop_guard();
            slot.tie(Arc::clone(&outbound) as Arc<dyn Outbound>);
            Routed::Serve(Serving {
                fut: Box::pin(async move { with_ok(rest.await) }),
                rx,
                guard,
                slot,
                keepalive: None,
            })
        }
    }
}

/// A reply whose JSON-RPC error goes with HTTP 200, as the earlier revisions have it.
fn with_ok(reply: Reply) -> Reply {
    match reply {
        // An authorization refusal keeps its status and challenge: HTTP authorization
        // is the same in every revision.
        Reply::Response {
            body,
            challenge: None,
            ..
        } => Reply::Response {
            body,
            status: 200,
            challenge: None,
        },
        other => other,
    }
}

/// Whether the `Accept` headers list event streams.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        super::accept(value, &mut json, &mut sse);
    }
    sse
}

/// GET: a session's standalone stream, or the resumption of a stream (module doc).
pub(super) async fn handle_get(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, &headers) {
        return forbidden;
    }
    if !endpoint.serves_sessions() {
        return post_only();
    }
    if let Err(forbidden) = host_verdict(&endpoint.config, headers.get(header::HOST)) {
        return forbidden;
    }
    if !accepts_event_stream(&headers) {
        return transport_error(
            StatusCode::NOT_ACCEPTABLE,
            Error::invalid_request("Accept must list text/event-stream"),
        );
    }
    if let Err(refused) = version_header(&headers) {
        return refused;
    }
    let principal = match super::authenticate(&endpoint, &headers).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let live = match find_any(&endpoint, &headers, principal.as_deref(), None).await {
        Ok(live) => live,
        Err(refused) => return refused,
    };
    live.session.touch();
    let last = headers
        .get(LAST_EVENT_ID)
        .map(|v| v.to_str().unwrap_or_default());
    if live.shared().is_some() {
        return get_shared(&endpoint, live, last).await;
    }
    get_here(&endpoint, live, last)
}

/// The 409 of a plain GET while a connection reads the standalone stream.
fn conflict() -> Response {
    transport_error(
        StatusCode::CONFLICT,
        Error::invalid_request("Conflict: the session's stream is open on another connection"),
    )
}

/// The 400 of a resumption that names something other than an event id.
fn malformed_event_id() -> Response {
    transport_error(
        StatusCode::BAD_REQUEST,
        Error::invalid_request("Bad Request: Last-Event-ID is not an event id of this server"),
    )
}

/// The 400 of a resumption that names a stream the session does not hold.
fn unknown_stream() -> Response {
    transport_error(
        StatusCode::BAD_REQUEST,
        Error::invalid_request(
            "Bad Request: Last-Event-ID names a stream this session no longer holds",
        ),
    )
}

/// A GET of a session held in this process alone: the standalone stream after what
/// earlier connections took, or the resumption of the stream `last` names.
fn get_here(endpoint: &Endpoint, live: Arc<Live>, last: Option<&str>) -> Response {
    let Some(last) = last else {
        let Some((conn, cursor)) = live.listen() else {
            return conflict();
        };
        let first = live.primes().then(|| priming(GET_STREAM, cursor));
        return event_stream(endpoint, live, GET_STREAM, conn, cursor, first);
    };
    match live.resume(last) {
        Ok((stream, conn, after)) => event_stream(endpoint, live, stream, conn, after, None),
        Err(Refused::Malformed) => malformed_event_id(),
        Err(Refused::Unknown) => unknown_stream(),
    }
}

/// A GET of a session kept in a store (see [`shared`]): the standalone stream is taken
/// over in the store (a resumption reads there what this copy did not write), a request
/// stream this copy holds resumes here, and one another replica writes is followed from
/// the store. Every connection that takes a stream over says so to the other replicas,
/// whose connection to it ends. A fault of the store is a 503 with the retryable -32603.
async fn get_shared(endpoint: &Endpoint, live: Arc<Live>, last: Option<&str>) -> Response {
    let Some(shared) = live.shared() else {
        return get_here(endpoint, live, last);
    };
    let target = match last.map(parse_event_id) {
        None => None,
        Some(Some(target)) => Some(target),
        Some(None) => return malformed_event_id(),
    };
    // A store numbers streams and seqs as signed 64-bit integers (PostgreSQL's
    // `bigint`): past those no stream is held, and no event was written.
    match target {
        Some((stream, _)) if stream > MAX_STORED => return unknown_stream(),
        Some((_, seq)) if seq > MAX_STORED => return malformed_event_id(),
        _ => {}
    }
    let fault = |fault: crate::session::SessionStoreError| {
        tracing::warn!("a legacy session's stream could not be read: {fault}");
        store_fault(None)
    };
    match target {
        None | Some((GET_STREAM, _)) => {
            let (at, from_store) = match live.take_standalone().await {
                Ok(Some(taken)) => taken,
                Ok(None) => return not_found(),
                Err(e) => return fault(e),
            };
            let (Some(last), Some((_, seq))) = (last, target) else {
                let Some((conn, cursor)) = live.listen() else {
                    return conflict();
                };
                shared.announce_taken(live.id(), GET_STREAM, &conn);
                let first = live.primes().then(|| priming(GET_STREAM, cursor));
                return event_stream(endpoint, live, GET_STREAM, conn, cursor, first);
            };
            // What the store holds up to where this copy goes on (its own later events
            // are in its buffer).
            let replay = if from_store {
                match shared.store.read_stream(live.id(), GET_STREAM, seq).await {
                    Ok(Some(read)) => read
                        .events
                        .iter()
                        .filter(|e| e.seq <= at)
                        .map(crate::session::StreamEvent::wire)
                        .collect::<String>(),
                    Ok(None) => return not_found(),
                    Err(e) => return fault(e),
                }
            } else {
                String::new()
            };
            let Ok((stream, conn, after)) = live.resume(last) else {
                return unknown_stream();
            };
            shared.announce_taken(live.id(), stream, &conn);
            let (cursor, first) = if from_store {
                (at, Some(replay).filter(|r| !r.is_empty()))
            } else {
                (after, None)
            };
            event_stream(endpoint, live, stream, conn, cursor, first)
        }
        Some((stream, _)) if live.holds(stream) => {
            let Some(last) = last else {
                return unknown_stream();
            };
            match live.resume(last) {
                Ok((stream, conn, after)) => {
                    shared.announce_taken(live.id(), stream, &conn);
                    event_stream(endpoint, live, stream, conn, after, None)
                }
                Err(Refused::Malformed) => malformed_event_id(),
                Err(Refused::Unknown) => unknown_stream(),
            }
        }
        Some((stream, seq)) => {
            let read = match shared.store.read_stream(live.id(), stream, seq).await {
                Ok(Some(read)) => read,
                Ok(None) => return unknown_stream(),
                Err(e) => return fault(e),
            };
            let Some(conn) = live.follow(stream) else {
                return unknown_stream();
            };
            shared.announce_taken(live.id(), stream, &conn);
            let cursor = follow_cursor(&read, seq);
            let first = read
                .events
                .iter()
                .map(crate::session::StreamEvent::wire)
                .collect();
            followed_stream(endpoint, live, stream, conn, cursor, first)
        }
    }
}

/// Where a connection following a stream from the store goes on: after the last event
/// it read there, or, with none after the client's id, after that id. A request
/// stream has one writer for life and its ids never change, so the client's id is its
/// own even when the store holds less (the writer's queue to the store can lag the
/// connection the client read it on): the follower never writes it again.
fn follow_cursor(read: &crate::session::StreamRead, seq: u64) -> u64 {
    read.events.last().map_or(seq, |e| e.seq)
}

/// DELETE: ends the session (204).
pub(super) async fn handle_delete(
    State(endpoint): State<Endpoint>,
    headers: HeaderMap,
) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, &headers) {
        return forbidden;
    }
    if !endpoint.serves_sessions() {
        return post_only();
    }
    if let Err(forbidden) = host_verdict(&endpoint.config, headers.get(header::HOST)) {
        return forbidden;
    }
    if let Err(refused) = version_header(&headers) {
        return refused;
    }
    let principal = match super::authenticate(&endpoint, &headers).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let live = match find_any(&endpoint, &headers, principal.as_deref(), None).await {
        Ok(live) => live,
        Err(refused) => return refused,
    };
    if let Some(store) = &endpoint.server.core.session_store {
        match store.end(live.id()).await {
            Ok(true) => endpoint.server.core.session_changed(live.id()),
            // Ended meanwhile, on another replica.
            Ok(false) => {
                forget(&endpoint, &live);
                return not_found();
            }
            Err(fault) => {
                tracing::warn!("a legacy session could not be ended: {fault}");
                return store_fault(None);
            }
        }
    }
    forget(&endpoint, &live);
    StatusCode::NO_CONTENT.into_response()
}
