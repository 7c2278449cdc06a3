//! The protocol pipeline, shared by every transport: a decoded request goes through
//! `_meta` admission, the method gate, the HTTP mirror checks (when the transport has
//! headers), params validation, dispatch, and shaping, and comes out as exactly one
//! response (or nothing, when it was cancelled). Notifications for the request go through
//! its outbound sink before that.
//!
//! Admission happens before any user code runs, so a handler never sees an invalid
//! request. A panic in a handler becomes -32603 with no detail; the server stays up.
//!
//! The steps a request passes through (here, in `wire` and in the stdio loop) are
//! functions called from one place, or two, and marked `#[inline]`: under Cargo's
//! default release profile a plain function stays out of line when its caller is in
//! another codegen unit or in the user's crate (where the generic stdio loop and the
//! `#[tool]` glue are instantiated), and marking them took 12 % off a pipelined call's
//! CPU (the book's performance chapter, twenty-first round). A new step on that path
//! gets the same.

mod headers;
mod methods;

use crate::context::{ContextInit, InputsOutcome, Outbound, RequestContext};
use crate::error::Error;
use crate::mrtr::{self, token};
use crate::server::Server;
use crate::wire::jsonrpc::{
    Notification, Request, RequestId, RequestParams, encode_error, encode_result_owned,
};
use crate::wire::meta::{self, KEY_SERVER_INFO, SUPPORTED_VERSIONS};
use crate::wire::methods as names;
use crate::wire::write;
use axum::http::HeaderMap;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;
use tracing::Instrument;

/// What a transport hands the pipeline along with a request.
pub(crate) struct Exchange {
    /// The HTTP headers, on Streamable HTTP; `None` on stdio and in process.
    pub(crate) headers: Option<HeaderMap>,
    /// Where the request's notifications go, and its cancellation (fired when the
    /// client cancels the request or goes away).
    pub(crate) outbound: Arc<dyn Outbound>,
    /// A buffer to write the answer in, its contents discarded: a transport that copies
    /// each answer out hands the last one's back, so that the common answer is written
    /// with no allocation of its own. Empty (and unallocated) otherwise.
    pub(crate) buffer: String,
}

/// A request that passed admission, on its way to its handler.
struct Admitted {
    method: std::borrow::Cow<'static, str>,
    params: RequestParams,
    ctx: RequestContext,
    route: Route,
}

/// Who answers an admitted request.
enum Route {
    /// An extension that owns the method.
    Extension(Arc<dyn crate::extension::Extension>),
    /// A `tools/call` the server answers itself, started in place (it may answer
    /// `input_required`, as every call the server answers may).
    Call {
        /// The binding of a request state, when the handler may ask for input.
        bound: Option<token::BindingText>,
        /// The tool the call names, as admission found it in the catalog (`None`: no
        /// tool by that name, or no usable name).
        tool: Option<Arc<crate::registry::tool::ToolEntry>>,
    },
    /// Any other method the server answers itself.
    Method {
        /// Whether the method may answer `input_required`.
        mrtr: bool,
        /// Whether the request is a retry.
        retry: bool,
        /// The binding of a request state, when the handler may ask for input.
        bound: Option<token::BindingText>,
        /// The catalog as admission saw it.
        catalog: Arc<crate::registry::Catalog>,
    },
}

/// The multi round-trip state a request arrives with.
#[derive(Default)]
struct Round {
    /// The answers given so far (none on a first call: no map is made for it).
    answers: Option<Map<String, Value>>,
    carried: Option<Value>,
    /// Whether the request is a retry (carries `inputResponses` or `requestState`).
    retry: bool,
}

/// The pipeline's answer to one request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A response to write, and the HTTP status it maps to.
    Response { body: String, status: u16 },
    /// The request was cancelled: nothing more may be sent for it.
    Cancelled,
    /// The server ended a subscription stream: on HTTP the graceful end result is sent
    /// and the stream closed; on stdio `notifications/cancelled` for the listen id
    /// (errata W-2).
    StreamEnded { body: String, id: RequestId },
}

/// The serverInfo key of a result's `_meta` and its colon, as written (it needs no
/// escaping; a test checks it against [`KEY_SERVER_INFO`]).
const SERVER_INFO_MEMBER: &str = "\"io.modelcontextprotocol/serverInfo\":";

/// The `resultType` member of a completed result written by hand, after a comma.
const RESULT_TYPE_COMPLETE: &str = ",\"resultType\":\"complete\"";

/// What starting a request came to ([`Server::begin`]).
pub(crate) enum Begun {
    /// Answered already.
    Done(Reply),
    /// Still running: the rest of the request, which owns everything it needs and was
    /// polled once already (with a no-op waker); dropping it drops the handler's future.
    /// Its next poll must have a real waker: the transport's task, or its `await`.
    Waiting(Pin<Box<dyn Future<Output = Reply> + Send>>),
}

/// How far starting a request, or a part of it, got: done at its first poll, or the
/// rest to run to its end, polled once already (with a no-op waker).
pub(super) enum Step<T> {
    /// Done at once.
    Done(T),
    /// The rest, already polled once: its next poll must have a real waker. With the
    /// request's sink, whose cancellation stops it (a `tools/call` takes it from its
    /// context only when it is left waiting, so a call done at once holds no second count
    /// of it).
    Rest(Pin<Box<dyn Future<Output = T> + Send>>, Arc<dyn Outbound>),
}

impl<T> Step<T> {
    /// Polls `work` once (its first poll, inside the request's span and panic guard):
    /// done, or the rest.
    fn first_poll(
        mut work: Pin<Box<dyn Future<Output = T> + Send>>,
        sink: Arc<dyn Outbound>,
    ) -> Step<T> {
        match work.as_mut().now_or_never() {
            Some(done) => Step::Done(done),
            None => Step::Rest(work, sink),
        }
    }
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
        span: &tracing::Span,
        outcome: Option<std::thread::Result<Result<String, Error>>>,
    ) -> Reply {
        if let Some(started) = self.started {
            span.record("duration_us", started.elapsed().as_micros() as u64);
        }
        let id = self.id;
        // Entered for the events below: they belong to the request's span when it is
        // enabled, and to whatever span is current when it is not (as inside it).
        let _entered = span.enter();
        match outcome {
            None => {
                span.record("outcome", "cancelled");
                tracing::debug!("request cancelled");
                Reply::Cancelled
            }
            Some(Ok(Ok(result))) if self.listen => {
                span.record("outcome", "stream ended");
                Reply::StreamEnded {
                    body: encode_result_owned(&id, result),
                    id,
                }
            }
            Some(Ok(Ok(result))) => {
                span.record("outcome", "ok");
                tracing::debug!("request served");
                Reply::Response {
                    body: encode_result_owned(&id, result),
                    status: 200,
                }
            }
            Some(Ok(Err(error))) => {
                span.record("outcome", "error");
                tracing::debug!(code = error.code(), "request failed");
                error_reply(Some(&id), &error)
            }
            Some(Err(_panic)) => {
                span.record("outcome", "panic");
                tracing::error!("handler panicked; answering -32603");
                error_reply(Some(&id), &Error::internal())
            }
        }
    }
}

/// What concluding a request needs once its handler has run.
pub(super) struct Closing {
    /// The request's context (its asks, its held notifications).
    pub(super) ctx: RequestContext,
    /// Whether the method may answer `input_required`.
    pub(super) mrtr: bool,
    /// The binding of a request state, when the handler may ask for input.
    pub(super) bound: Option<token::BindingText>,
}

impl Closing {
    /// The answer once the handler has run: its result, or `input_required` when it
    /// asked for input it was not given.
    pub(super) fn close(
        self,
        server: &Server,
        result: Result<String, Error>,
    ) -> Result<String, Error> {
        let Closing { ctx, mrtr, bound } = self;
        // A handler that asked nothing (most) has no outcome to read.
        let answer = if ctx.inputs().asked() {
            Closing::input_required(&ctx, mrtr, bound, server)?
        } else {
            None
        };
        let answer = match answer {
            Some(shaped) => shaped,
            None => result?,
        };
        ctx.release_held();
        Ok(answer)
    }

    /// What the asks of a handler that asked for input come to: the failure of an ask,
    /// the `input_required` result when it demanded input it was not given, or nothing
    /// (its own result stands).
    fn input_required(
        ctx: &RequestContext,
        mrtr: bool,
        bound: Option<token::BindingText>,
        server: &Server,
    ) -> Result<Option<String>, Error> {
        let outcome = ctx.inputs_outcome();
        if let Some(failure) = outcome.failure {
            return Err(failure);
        }
        if !outcome.demanded {
            return Ok(None);
        }
        let Some(bind) = bound.map(|text| text.digest()) else {
            if mrtr {
                tracing::error!("a tool declared with asks_input(false) asked for input");
            }
            return Err(Error::new(
                crate::error::code::INTERNAL_ERROR,
                "Input-required result is not permitted for this operation",
            ));
        };
        server.input_required(outcome, bind).map(Some)
    }
}

/// The -32603 for a `tools/call` result that would not serialize (logged).
fn call_result_failed(e: serde_json::Error) -> Error {
    tracing::error!("a tools/call result failed to serialize: {e}");
    Error::internal()
}

/// `buffer` emptied for a result, with room for the JSON-RPC envelope to be put around
/// it without growing.
fn result_buffer(mut buffer: String) -> String {
    buffer.clear();
    buffer.reserve(320);
    buffer
}

/// One text block without annotations, written as serde writes a `Content::Text`.
fn push_text_block(out: &mut String, text: &str) {
    out.push_str("{\"type\":\"text\",\"text\":");
    write::push_str(out, text);
    out.push('}');
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
const MAX_LOGGED_REASON: usize = 4096;

/// The request's span, for the records made inside the pipeline (the trace context at
/// admission, the item's name at dispatch): `Span::current()` when INFO spans can be
/// enabled at all, else a disabled span without asking the dispatcher (a lookup of the
/// current span cost about 180 instructions, with nothing listening). The outcome and
/// duration are recorded on the span itself, so a level lowered while the request runs
/// loses nothing recorded at its end.
pub(crate) fn request_span() -> tracing::Span {
    if tracing::level_enabled!(tracing::Level::INFO) {
        tracing::Span::current()
    } else {
        tracing::Span::none()
    }
}

impl Server {
    /// Starts serving one request: admission, the method gate and the mirror checks run
    /// here, at once, and the request's work gets its first poll. A `tools/call` whose
    /// handler completes at that poll (most do) is answered with no future of the
    /// pipeline's own; any other request that completes at it is answered too, and one
    /// that waits comes back as the rest (see [`Begun`]). Everything runs inside the
    /// request's span and under the panic guard.
    pub(crate) fn begin(&self, request: Request, exchange: Exchange) -> Begun {
        let span = tracing::info_span!(
            "mcp.request",
            mcp.method.name = %request.method,
            jsonrpc.request.id = %request.id,
            mcp.name = tracing::field::Empty,
            outcome = tracing::field::Empty,
            duration_us = tracing::field::Empty,
            trace_parent = tracing::field::Empty,
            trace_state = tracing::field::Empty,
            baggage = tracing::field::Empty,
        );
        let end = End {
            // The clock is read only when someone records the span.
            started: (!span.is_disabled()).then(Instant::now),
            id: request.id.clone(),
            listen: request.method == "subscriptions/listen",
        };
        // Cancellation comes first: a request cancelled before it starts runs nothing.
        if exchange.outbound.cancellation().is_cancelled() {
            return Begun::Done(end.reply(&span, None));
        }
        let first = {
            let _entered = span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.start(request, exchange)))
        };
        let (rest, sink) = match first {
            Ok(Step::Done(result)) => return Begun::Done(end.reply(&span, Some(Ok(result)))),
            Err(panic) => return Begun::Done(end.reply(&span, Some(Err(panic)))),
            Ok(Step::Rest(rest, sink)) => (rest, sink),
        };
        // The span itself, to record the outcome into: no lookup of the current span,
        // and nothing lost if the level changes while the request runs.
        let recorded = span.clone();
        Begun::Waiting(Box::pin(
            async move {
                // Once the request is cancelled, the rest is not polled again (its
                // future is dropped), whatever else woke it. It is checked with a look at
                // the flag; the token and its waiter are made only after the rest has
                // been polled and is still pending.
                let cancel = sink.cancellation();
                let mut work = AssertUnwindSafe(rest).catch_unwind();
                let mut waiter = std::pin::pin!(None);
                let outcome = std::future::poll_fn(|cx| {
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
                .await;
                end.reply(&recorded, outcome)
            }
            // Entered by `instrument` for each poll; `End::reply` enters it again on
            // its own, because the path that concludes at the first poll has no
            // `instrument` around it.
            .instrument(span),
        ))
    }

    /// Serves one request to its end: [`Server::begin`], then what is left of it.
    pub(crate) async fn answer(self, request: Request, exchange: Exchange) -> Reply {
        match self.begin(request, exchange) {
            Begun::Done(reply) => reply,
            Begun::Waiting(rest) => rest.await,
        }
    }

    /// Checks a notification and says what it asks of the transport. An error means the
    /// notification cannot be accepted (a 4xx on HTTP; ignored on stdio).
    pub(crate) fn accept_notification(
        &self,
        notification: &Notification,
        headers: Option<&HeaderMap>,
    ) -> Result<NotificationEffect, Error> {
        meta::admit_notification(&notification.meta)?;
        if let Some(headers) = headers {
            let body_version = notification.meta.protocol_version();
            headers::notification_headers(headers, &notification.method, body_version)?;
        }
        if notification.method == names::CANCELLED {
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
            // `basic/patterns/cancellation.mdx`: both parties SHOULD log the reasons (cut
            // as progress messages are: the client writes them).
            let reason = reason.map_or("(none given)", |r| {
                crate::context::truncate(r, MAX_LOGGED_REASON)
            });
            tracing::debug!(request_id = %id, reason, "the client cancelled a request");
            return Ok(NotificationEffect::Cancel(id));
        }
        Ok(NotificationEffect::None)
    }

    /// Admission, the method gate and the HTTP mirror checks, at once; then the method.
    /// A `tools/call` is started in place ([`methods::start_call`]); any other method is
    /// the rest of the request, a future that owns what it needs.
    ///
    /// Everything before the handler runs is in [`Server::admit`], a plain function, so
    /// no future holds the request while it is admitted.
    fn start(&self, request: Request, exchange: Exchange) -> Step<Result<String, Error>> {
        let Exchange {
            headers,
            outbound,
            buffer,
        } = exchange;
        let admitted = self.admit(request, headers.as_ref(), outbound);
        let Admitted {
            method,
            params,
            ctx,
            route,
        } = match admitted {
            Ok(admitted) => admitted,
            Err(error) => return Step::Done(Err(error)),
        };
        // Any method but a call has its first poll here, as a `tools/call`'s handler has
        // its own in place: every request gets exactly one before `begin` returns, and
        // one that completes at it (most methods do) costs no future of the pipeline's
        // own.
        match route {
            Route::Call { bound, tool } => {
                let closing = Closing {
                    ctx,
                    mrtr: true,
                    bound,
                };
                methods::start_call(self, params, headers.as_ref(), tool, closing, buffer)
            }
            Route::Extension(extension) => {
                let server = self.clone();
                let sink = Arc::clone(ctx.outbound());
                Step::first_poll(
                    Box::pin(async move {
                        let result = extension.handle(&method, params.into_map(), ctx).await?;
                        server.shape(result)
                    }),
                    sink,
                )
            }
            Route::Method {
                mrtr,
                retry,
                bound,
                catalog,
            } => {
                let server = self.clone();
                let sink = Arc::clone(ctx.outbound());
                Step::first_poll(
                    Box::pin(async move {
                        // Only a tools/call holds members apart: the others read one map.
                        let params = params.into_map();
                        let result = methods::dispatch(
                            &server,
                            &catalog,
                            &method,
                            params,
                            ctx.clone(),
                            retry,
                        )
                        .await;
                        Closing { ctx, mrtr, bound }.close(&server, result)
                    }),
                    sink,
                )
            }
        }
    }

    /// Admission of `_meta` (with the HTTP version header where section 2 says), the
    /// method gate, the HTTP mirror checks, the request state, and the context.
    #[inline]
    fn admit(
        &self,
        request: Request,
        headers: Option<&HeaderMap>,
        outbound: Arc<dyn Outbound>,
    ) -> Result<Admitted, Error> {
        // Every member moved out: nothing of the request is left to drop.
        let Request {
            id,
            method,
            meta,
            params,
            lifted,
        } = request;
        let params = RequestParams::new(params, lifted);

        // A 2025-era client opens with `initialize` carrying `params.protocolVersion` and
        // no 2026-07-28 protocol version in `_meta` (it may carry a `_meta` of its own,
        // such as a `progressToken`): tell it which versions this server speaks (errata
        // W-13; `basic/versioning.mdx` asks modern-only servers to name them in any error
        // to `initialize`). A modern client probing the removed method gets -32601 below.
        if method == "initialize" && meta.protocol_version().is_none() {
            let requested = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            return Err(Error::unsupported_version(requested, SUPPORTED_VERSIONS));
        }

        let mirrored = headers.map(headers::Mirrored::scan);
        let meta = match &mirrored {
            Some(h) => {
                let header_version = headers::version_present(h)?;
                let mirror = |body: &str| headers::version_matches(header_version, body);
                meta::admit_request(meta, Some(&mirror))?
            }
            None => meta::admit_request(meta, None)?,
        };
        // W3C trace context from `_meta` is carried into the request's span.
        let span = request_span();
        for (field, value) in [
            ("trace_parent", &meta.traceparent),
            ("trace_state", &meta.tracestate),
            ("baggage", &meta.baggage),
        ] {
            if let Some(v) = value {
                span.record(field, v.as_str());
            }
        }

        // The method gate: unknown and removed methods, and methods whose capability is
        // not advertised, are -32601. One look at the catalog, under its read lock (no
        // user code runs while it is held), serves the whole request: the gate, the tool
        // a `tools/call` names, and, kept, the catalog itself for the other methods the
        // server answers (an extension's method needs none of it).
        let extension = self.extension_for(&method).cloned();
        let (catalog, target) = {
            let catalog = self.read_catalog();
            if extension.is_none()
                && (!names::SERVED.contains(&&*method)
                    || !methods::offered(self, &catalog, &method))
            {
                let error = Error::method_not_found(&method);
                return Err(if method == "initialize" {
                    error.with_data(serde_json::json!({ "supported": SUPPORTED_VERSIONS }))
                } else {
                    error
                });
            }
            let target = methods::target_tool(&catalog, &method, &params).cloned();
            let kept =
                (extension.is_none() && method != "tools/call").then(|| Arc::clone(&*catalog));
            (kept, target)
        };

        // HTTP mirror checks of Mcp-Method and Mcp-Name.
        if let Some(h) = &mirrored {
            headers::method_matches(h, &method)?;
            let mirrored = match &*method {
                "tools/call" | "prompts/get" => Some("name"),
                "resources/read" => Some("uri"),
                _ => extension.as_ref().and_then(|e| e.routing_param(&method)),
            };
            // When the body lacks the value, params validation reports it (-32602).
            if let Some(Value::String(name)) = mirrored.and_then(|p| params.get(p)) {
                headers::name_matches(h, name)?;
            }
        }

        let principal = self.inner.principal.as_ref().and_then(|f| f(headers));

        let mrtr = extension.is_none() && names::MRTR.contains(&&*method);
        let round = if mrtr {
            self.open_round(&method, &params, principal.as_deref())?
        } else {
            Round::default()
        };
        // On HTTP, hold notifications of the methods that may end in -32021 until the
        // outcome is known, unless the tool streams them live (errata W-11).
        let hold = headers.is_some()
            && mrtr
            && !target.as_ref().is_some_and(|t| t.tool.live_notifications);
        // What a request state is bound to: written now, while the params are here, and
        // hashed only if the handler asks for input; not at all for a tool that cannot.
        // Extensions see every tool call with its context and may ask too, so the
        // binding is skipped only when none is registered.
        let may_ask =
            target.as_ref().is_none_or(|t| t.tool.asks_input) || !self.inner.extensions.is_empty();
        let bound = (mrtr && may_ask)
            .then(|| token::BindingText::new(&method, &params, principal.as_deref()));
        let ctx = RequestContext::new(ContextInit {
            id,
            // The served methods are static strings (the decoder keeps them so): no copy
            // of the name per request.
            method: method.clone(),
            meta,
            outbound,
            logging_enabled: self.inner.config.logging,
            principal,
            server: self.clone(),
            answers: round.answers,
            carried: round.carried,
            hold,
        });
        let route = match extension {
            // A method an extension owns: the client must have declared the extension.
            Some(extension) => {
                if !crate::extension::declared(&ctx, extension.id()) {
                    return Err(crate::extension::missing(extension.id()));
                }
                Route::Extension(extension)
            }
            // Kept for every method the server answers but a call.
            None => match catalog {
                Some(catalog) => Route::Method {
                    mrtr,
                    retry: round.retry,
                    bound,
                    catalog,
                },
                None => Route::Call {
                    bound,
                    tool: target,
                },
            },
        };
        Ok(Admitted {
            method,
            params,
            ctx,
            route,
        })
    }

    /// Verifies the request state and gathers the answers given so far.
    fn open_round(
        &self,
        method: &str,
        params: &RequestParams,
        principal: Option<&str>,
    ) -> Result<Round, Error> {
        // Each member looked up once: this runs for every call of the three methods.
        let responses = params.get("inputResponses");
        let state = params.get("requestState");
        methods::check_mrtr_params(responses, state)?;
        let mut round = Round {
            retry: responses.is_some() || state.is_some(),
            ..Round::default()
        };
        if let Some(Value::String(state)) = state {
            let bind = token::binding(method, params, principal);
            let payload = self.inner.keys.open(state, &self.inner.info.name, &bind)?;
            if payload.once && !self.inner.replay.first_use(&payload.jti, payload.exp) {
                return Err(token::invalid());
            }
            round.answers = Some(payload.answers);
            round.carried = payload.data;
        }
        // An answer the signed state already holds (taken in an earlier round) stands
        // over a different one sent again: the client cannot rewrite what the handler
        // acted on. (Answers sent without a state, on a first call, are taken as given:
        // a handler that must know a step was confirmed before reads its carried state.)
        if let Some(Value::Object(responses)) = responses {
            let answers = round.answers.get_or_insert_default();
            for (k, v) in responses {
                answers.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Ok(round)
    }

    /// The `input_required` result: the capability check of section 10.2 first (-32021
    /// with the merged requirements), then every missing input and a fresh signed state.
    fn input_required(&self, outcome: InputsOutcome, bind: String) -> Result<String, Error> {
        if outcome.missing.is_empty() {
            tracing::error!("a handler demanded an input it never asked for");
            return Err(Error::internal());
        }
        let mut required = Map::new();
        for (_, _, needs) in &outcome.missing {
            if let Some(n) = needs {
                mrtr::inputs::merge(&mut required, n);
            }
        }
        if !required.is_empty() {
            return Err(Error::missing_client_capability(Value::Object(required)));
        }
        let payload = token::Payload {
            aud: self.inner.info.name.clone(),
            bind,
            answers: outcome.accepted,
            data: outcome.carry,
            once: outcome.single_use,
            ..Default::default()
        };
        let state = self.inner.keys.seal(payload, self.inner.state_ttl)?;
        let requests: Map<String, Value> = outcome
            .missing
            .into_iter()
            .map(|(k, request, _)| (k, request))
            .collect();
        let mut result = Map::new();
        result.insert("resultType".into(), Value::from("input_required"));
        result.insert("inputRequests".into(), Value::Object(requests));
        result.insert("requestState".into(), Value::from(state));
        self.shape(result)
    }

    /// Adds `resultType` (when absent) and the serverInfo `_meta` to a result object and
    /// serializes it. Writing a map of `Value`s does not fail; if it ever did, the
    /// request is answered -32603 rather than with an empty result.
    pub(crate) fn shape(&self, mut result: Map<String, Value>) -> Result<String, Error> {
        // serde_json's writer, not `Display` (which goes through a formatter, slower).
        if result.contains_key("_meta") {
            // Its own entries are kept, with serverInfo added among them.
            return serde_json::to_string(&Value::Object(self.shape_map(result)))
                .map_err(|_| Error::internal());
        }
        if !result.contains_key("resultType") {
            result.insert("resultType".into(), Value::from("complete"));
        }
        // The map written without its closing brace, then ended as a result written by
        // hand is: serverInfo goes in as the text written once at build, not cloned into
        // the map and written again (that clone, its writing and its drop were a third
        // of a listing's cost).
        let mut out = open_object(result).ok_or_else(Error::internal)?;
        self.end_result(&mut out, None)
            .map_err(|_| Error::internal())?;
        Ok(out)
    }

    /// Ends a completed result written by hand that carries caching hints (a listing, a
    /// read, `server/discover`): the hints, `resultType`, then [`Server::end_result`].
    /// The one writer of the hints.
    pub(crate) fn end_cached_result(
        &self,
        mut out: String,
        cache: crate::wire::types::CachePolicy,
    ) -> Result<String, Error> {
        cache.push_members(&mut out);
        out.push_str(RESULT_TYPE_COMPLETE);
        self.end_result(&mut out, None)
            .map_err(|_| Error::internal())?;
        Ok(out)
    }

    /// Ends a result written by hand after its last member: its `_meta` (`own` entries
    /// first, then serverInfo when results carry it and `own` does not hold it; no
    /// `_meta` when there is neither) and the closing brace. Every result that is not
    /// built as a map ends here.
    pub(crate) fn end_result(
        &self,
        out: &mut String,
        own: Option<&Map<String, Value>>,
    ) -> Result<(), serde_json::Error> {
        let server_info = self
            .inner
            .config
            .server_info_in_results
            .then_some(&*self.inner.server_info_raw);
        if own.is_some() || server_info.is_some() {
            out.push_str(",\"_meta\":{");
            let mut has_info = false;
            for (k, v) in own.into_iter().flatten() {
                has_info |= k == KEY_SERVER_INFO;
                write::push_str(out, k);
                out.push(':');
                write::push_json_text(out, v)?;
                out.push(',');
            }
            if let (Some(info), false) = (server_info, has_info) {
                out.push_str(SERVER_INFO_MEMBER);
                out.push_str(info.get());
            } else if out.ends_with(',') {
                out.pop();
            }
            out.push('}');
        }
        out.push('}');
        Ok(())
    }

    /// A `tools/call` result written straight from its typed form, with `resultType` and
    /// the serverInfo `_meta`, without building a `Value` tree first.
    pub(crate) fn shape_call_result(
        &self,
        result: &crate::CallToolResult,
        out: String,
    ) -> Result<String, Error> {
        // Written by hand in the order the derive had (content, structuredContent,
        // isError, resultType, _meta): the envelope's keys need no escaping at run time.
        // A `String` from the start: everything written is text, so no pass checks it
        // at the end.
        let mut out = result_buffer(out);
        out.push_str("{\"content\":[");
        for (i, block) in result.content.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match block {
                // The common block, written as serde writes it (tag first).
                crate::Content::Text {
                    text,
                    annotations: None,
                } => push_text_block(&mut out, text),
                other => write::push_json_text(&mut out, other).map_err(call_result_failed)?,
            }
        }
        out.push(']');
        if let Some(structured) = &result.structured_content {
            out.push_str(",\"structuredContent\":");
            write::push_json_text(&mut out, structured).map_err(call_result_failed)?;
        }
        self.end_call_result(out, result.is_error, result.meta.as_ref())
    }

    /// A `tools/call` result of one text block (a handler's plain text), written as
    /// [`Server::shape_call_result`] writes it.
    pub(crate) fn shape_text_result(&self, text: &str, out: String) -> Result<String, Error> {
        let mut out = result_buffer(out);
        out.push_str("{\"content\":[");
        push_text_block(&mut out, text);
        out.push(']');
        self.end_call_result(out, false, None)
    }

    /// The end of a `tools/call` result after its content and structured content.
    #[inline]
    fn end_call_result(
        &self,
        mut out: String,
        is_error: bool,
        meta: Option<&Map<String, Value>>,
    ) -> Result<String, Error> {
        // `isError` and `resultType` ([`RESULT_TYPE_COMPLETE`]) in one piece.
        out.push_str(if is_error {
            ",\"isError\":true,\"resultType\":\"complete\""
        } else {
            ",\"isError\":false,\"resultType\":\"complete\""
        });
        // The handler's `_meta` entries, then serverInfo unless the handler set it.
        self.end_result(&mut out, meta)
            .map_err(call_result_failed)?;
        Ok(out)
    }

    /// Like [`Server::shape`], keeping the object.
    pub(crate) fn shape_map(&self, mut result: Map<String, Value>) -> Map<String, Value> {
        if !result.contains_key("resultType") {
            result.insert("resultType".into(), Value::from("complete"));
        }
        if self.inner.config.server_info_in_results {
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.entry(KEY_SERVER_INFO)
                    .or_insert_with(|| self.inner.server_info.clone());
            }
        }
        result
    }
}

/// A map written as a JSON object left open for more members: without its closing
/// brace, and `None` when it has no member (nothing to put a comma after) or cannot be
/// written.
fn open_object(map: Map<String, Value>) -> Option<String> {
    if map.is_empty() {
        return None;
    }
    let mut out = serde_json::to_string(&Value::Object(map)).ok()?;
    (out.pop() == Some('}')).then_some(out)
}

/// An error response with its HTTP status.
pub(crate) fn error_reply(id: Option<&RequestId>, error: &Error) -> Reply {
    let id = id.map(RequestId::to_value);
    Reply::Response {
        body: encode_error(id.as_ref(), error),
        status: error.http_status(),
    }
}

#[cfg(test)]
mod tests {
    use crate::wire::types::{CallToolResult, Content, Implementation};
    use serde_json::{Map, Value, json};

    /// What serde's derive wrote for a result, the reference for the hand-written form.
    #[derive(serde::Serialize)]
    struct Reference<'a> {
        content: &'a [Content],
        #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
        structured_content: Option<&'a Value>,
        #[serde(rename = "isError")]
        is_error: bool,
        #[serde(rename = "resultType")]
        result_type: &'static str,
        #[serde(rename = "_meta")]
        meta: MetaInOrder,
    }

    /// Map entries written in the order given.
    struct MetaInOrder(Vec<(String, Value)>);

    impl serde::Serialize for MetaInOrder {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        }
    }

    /// The hand-written result is byte for byte what the derive wrote.
    #[test]
    fn call_results_are_shaped_as_serde_would_write_them() {
        let server = crate::Server::builder(Implementation::new("shape", "1"))
            .build()
            .expect("a server");
        let info = "io.modelcontextprotocol/serverInfo";
        let text = |t: &str| Content::Text {
            text: t.to_owned(),
            annotations: None,
        };
        let meta = |v: Value| -> Option<Map<String, Value>> { v.as_object().cloned() };
        let mut annotated = CallToolResult::text("x");
        annotated.content = vec![
            serde_json::from_value(
                json!({"type": "text", "text": "a", "annotations": {"priority": 0.5}}),
            )
            .expect("annotated text"),
            text("tab\t \"quoted\" \u{1} é"),
            serde_json::from_value(
                json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            )
            .expect("an image"),
        ];
        let mut structured = CallToolResult::text("{}");
        structured.structured_content = Some(json!({"k": [1, "two"]}));
        let mut own_info = CallToolResult::error("boom");
        own_info.meta = meta(json!({"z": 1, info: {"name": "own"}}));
        let mut user_meta = CallToolResult::text("m");
        user_meta.meta = meta(json!({"a\"b": true, "z": null}));
        let mut empty = CallToolResult::text("");
        empty.content.clear();
        let results = [
            annotated,
            structured,
            own_info,
            user_meta,
            empty,
            CallToolResult::text("plain"),
        ];
        for result in results {
            // Written in a buffer that held an earlier answer: nothing of it is left.
            let used = "{\"jsonrpc\":\"2.0\",\"id\":1}".to_owned();
            let shaped = server.shape_call_result(&result, used).expect("shapes");
            let mut entries: Vec<(String, Value)> = result
                .meta
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect();
            if !entries.iter().any(|(k, _)| k == info) {
                entries.push((info.to_owned(), json!({"name": "shape", "version": "1"})));
            }
            let reference = serde_json::to_string(&Reference {
                content: &result.content,
                structured_content: result.structured_content.as_ref(),
                is_error: result.is_error,
                result_type: "complete",
                meta: MetaInOrder(entries),
            })
            .expect("serializes");
            assert_eq!(shaped, reference);
        }
        // A handler's plain text is shaped as the one text block it stands for.
        for t in ["", "plain", "tab\t \"quoted\" \u{1} é \u{2028}"] {
            let shaped = server
                .shape_text_result(t, "an earlier answer".to_owned())
                .expect("shapes");
            let whole = server
                .shape_call_result(&CallToolResult::text(t), String::new())
                .expect("shapes");
            assert_eq!(shaped, whole, "{t:?}");
        }
    }

    /// `shape` writes what writing `shape_map`'s object writes (serverInfo spliced in as
    /// its build-time text when the result has no `_meta` of its own), with serverInfo on
    /// and off, for results with and without `resultType` and `_meta`.
    #[test]
    fn shape_is_shape_map_written() {
        let results = [
            json!({}),
            json!({"tools": [{"name": "t"}], "nextCursor": "abc", "ttlMs": 5}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"_meta": {"k": "v"}, "messages": []}),
            json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "own"}}}),
            json!({"_meta": null}),
            json!({"_meta": 5, "x": 1}),
            json!({"a\"b\u{1}": "é\t", "z": null}),
        ];
        for on in [true, false] {
            let server = crate::Server::builder(Implementation::new("shape \"s\"", "1"))
                .server_info_in_results(on)
                .build()
                .expect("a server");
            for result in &results {
                let Value::Object(map) = result.clone() else {
                    unreachable!("objects above")
                };
                let shaped = server.shape(map.clone()).expect("shaped");
                let parsed: Value = serde_json::from_str(&shaped).expect("JSON");
                assert_eq!(parsed, Value::Object(server.shape_map(map)), "{result}");
                if on && result.get("_meta").is_none() {
                    assert!(shaped.ends_with(r#","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"shape \"s\"","version":"1"}}}"#), "{shaped}");
                }
            }
        }
    }

    /// Captures the fields of the `mcp.request` span, as made and as recorded later.
    mod capture {
        use std::collections::BTreeMap;
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::Context;

        pub(super) type Fields = Arc<Mutex<BTreeMap<String, String>>>;
        pub(super) struct Capture(pub(super) Fields);
        struct Visit<'a>(&'a mut BTreeMap<String, String>);

        impl tracing::field::Visit for Visit<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.insert(field.name().to_owned(), format!("{value:?}"));
            }
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                self.0.insert(field.name().to_owned(), value.to_owned());
            }
        }

        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
            fn on_new_span(
                &self,
                attrs: &tracing::span::Attributes<'_>,
                _: &tracing::span::Id,
                _: Context<'_, S>,
            ) {
                if attrs.metadata().name() == "mcp.request"
                    && let Ok(mut fields) = self.0.lock()
                {
                    attrs.record(&mut Visit(&mut fields));
                }
            }
            fn on_record(
                &self,
                _: &tracing::span::Id,
                values: &tracing::span::Record<'_>,
                _: Context<'_, S>,
            ) {
                if let Ok(mut fields) = self.0.lock() {
                    values.record(&mut Visit(&mut fields));
                }
            }
        }

        pub(super) fn snapshot(fields: &Fields) -> BTreeMap<String, String> {
            fields.lock().map(|f| f.clone()).unwrap_or_default()
        }
    }

    /// A client's `notifications/cancelled` is logged with its reason
    /// (`basic/patterns/cancellation.mdx`: "Both parties SHOULD log cancellation
    /// reasons").
    #[tokio::test(flavor = "current_thread")]
    async fn cancellation_reasons_are_logged() {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::SubscriberExt;
        struct Events(Arc<Mutex<Vec<String>>>);
        struct Line<'a>(&'a mut String);
        impl tracing::field::Visit for Line<'_> {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={v:?} ", f.name()));
            }
        }
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                let mut line = String::new();
                event.record(&mut Line(&mut line));
                if let Ok(mut all) = self.0.lock() {
                    all.push(line);
                }
            }
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Events(Arc::clone(&events)));
        let _guard = tracing::subscriber::set_default(subscriber);
        let server = crate::Server::builder(Implementation::new("cancels", "1"))
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server);
        let meta = client.meta();
        client
            .send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 4, "reason": "user pressed stop", "_meta": meta}}),
            )
            .await;
        let all = events.lock().map(|e| e.clone()).unwrap_or_default();
        assert!(
            all.iter()
                .any(|l| l.contains("request_id=4") && l.contains("user pressed stop")),
            "{all:?}"
        );
        // A long reason is cut at MAX_LOGGED_REASON bytes, at a character boundary.
        let long = "é".repeat(3000);
        client
            .send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": long, "_meta": meta}}),
            )
            .await;
        let all = events.lock().map(|e| e.clone()).unwrap_or_default();
        let line = all
            .iter()
            .find(|l| l.contains("request_id=5"))
            .expect("the second cancellation is logged");
        let logged = line.matches('é').count();
        assert_eq!(
            logged,
            super::MAX_LOGGED_REASON / 2,
            "{logged} chars logged"
        );
    }

    /// The `mcp.request` span carries what book/progress.md says it does, recorded from
    /// the pipeline's several places (the tool's name in dispatch, the trace context at
    /// admission, the outcome and duration at the end).
    #[tokio::test(flavor = "current_thread")]
    async fn the_request_span_records_its_fields() {
        use tracing_subscriber::layer::SubscriberExt;
        let fields = capture::Fields::default();
        let subscriber =
            tracing_subscriber::registry().with(capture::Capture(std::sync::Arc::clone(&fields)));
        let _guard = tracing::subscriber::set_default(subscriber);
        let server = crate::Server::builder(Implementation::new("spans", "1"))
            .tool(crate::Tool::new("echo").handler(|_: crate::ToolCall| async { "hi" }))
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server);
        let mut meta = client.meta();
        meta.insert(
            "traceparent".into(),
            json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        );
        let reply = client
            .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo", "_meta": meta}}))
            .await;
        assert!(reply.message.get("result").is_some(), "{}", reply.message);
        let fields = capture::snapshot(&fields);
        assert_eq!(
            fields.get("mcp.method.name").map(String::as_str),
            Some("tools/call")
        );
        assert_eq!(
            fields.get("jsonrpc.request.id").map(String::as_str),
            Some("7")
        );
        assert_eq!(fields.get("mcp.name").map(String::as_str), Some("echo"));
        assert_eq!(fields.get("outcome").map(String::as_str), Some("ok"));
        assert_eq!(
            fields.get("trace_parent").map(String::as_str),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        );
        assert!(fields.contains_key("duration_us"), "{fields:?}");
    }

    /// The level lowered (a reload) while a request runs: its span, enabled when made,
    /// still gets its outcome and duration (found by review of 72e74f4, which looked the
    /// span up again at the end and so lost them).
    #[tokio::test(flavor = "current_thread")]
    async fn a_level_lowered_mid_request_loses_no_field() {
        use tracing_subscriber::filter::LevelFilter;
        use tracing_subscriber::layer::SubscriberExt;
        let fields = capture::Fields::default();
        let (filter, handle) = tracing_subscriber::reload::Layer::new(LevelFilter::INFO);
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(capture::Capture(std::sync::Arc::clone(&fields)));
        let _guard = tracing::subscriber::set_default(subscriber);
        let server = crate::Server::builder(Implementation::new("spans", "1"))
            .tool(
                crate::Tool::new("lower").handler(move |_: crate::ToolCall| {
                    let handle = handle.clone();
                    async move {
                        handle.reload(LevelFilter::WARN)?;
                        Ok::<_, crate::ToolError>("hi")
                    }
                }),
            )
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server);
        let meta = client.meta();
        let reply = client
            .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "lower", "_meta": meta}}))
            .await;
        assert_eq!(
            reply.message["result"]["content"][0]["text"], "hi",
            "{}",
            reply.message
        );
        let fields = capture::snapshot(&fields);
        assert_eq!(
            fields.get("outcome").map(String::as_str),
            Some("ok"),
            "{fields:?}"
        );
        assert!(fields.contains_key("duration_us"), "{fields:?}");
    }

    /// A `tools/call` whose handler completes at its first poll is answered by `begin`
    /// itself, with no future of the pipeline's own; one whose handler waits comes back
    /// as the rest, polled once (not twice: a handler's first `yield_now` then yields),
    /// which answers it; any other method that completes at its first poll is answered
    /// by `begin` too, and one that waits (a `prompts/get`) is the rest, its handler
    /// polled once in place. The span records the outcome either way.
    #[tokio::test(flavor = "current_thread")]
    async fn a_call_completing_at_once_is_answered_without_a_future() {
        use super::{Begun, Exchange, Outbound, Reply};
        use crate::testing::Collect as Sink;
        use crate::wire::jsonrpc::{Inbound, decode_value};
        use std::sync::Arc;
        use tracing_subscriber::layer::SubscriberExt;
        let fields = capture::Fields::default();
        let subscriber = tracing_subscriber::registry().with(capture::Capture(Arc::clone(&fields)));
        let _guard = tracing::subscriber::set_default(subscriber);
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&polls);
        let prompt_polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let prompt_counted = Arc::clone(&prompt_polls);
        let server = crate::Server::builder(Implementation::new("begin", "1"))
            .tool(crate::Tool::new("now").handler(|_: crate::ToolCall| async { "now" }))
            .tool(
                crate::Tool::new("explodes").handler(|_: crate::ToolCall| async {
                    if true {
                        panic!("on purpose, at the first poll");
                    }
                    "never"
                }),
            )
            .tool(
                crate::Tool::new("later").handler(move |_: crate::ToolCall| {
                    let counted = Arc::clone(&counted);
                    async move {
                        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        "later"
                    }
                }),
            )
            .prompt(
                crate::Prompt::new("later").handler(move |_: crate::PromptGet| {
                    let counted = Arc::clone(&prompt_counted);
                    async move {
                        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        "later".to_owned()
                    }
                }),
            )
            .build()
            .expect("a server");
        let meta = crate::testing::TestClient::new(&server).meta();
        let begin_on = |id: i64, method: &str, params: Value, sink: Arc<Sink>| {
            let mut params = params;
            params["_meta"] = Value::Object(meta.clone());
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method,
                "params": params});
            let Ok(Inbound::Request(request)) = decode_value(message) else {
                panic!("a request");
            };
            let exchange = Exchange {
                headers: None,
                outbound: sink,
                buffer: String::new(),
            };
            server.begin(request, exchange)
        };
        let begin_method =
            |id: i64, method: &str, params: Value| begin_on(id, method, params, Arc::default());
        let begin = |id: i64, name: &str| begin_method(id, "tools/call", json!({ "name": name }));
        let text = |reply: Reply| match reply {
            Reply::Response { body, status: 200 } => {
                let message: Value = serde_json::from_str(&body).expect("JSON");
                message["result"]["content"][0]["text"].clone()
            }
            _ => panic!("a 200 response"),
        };
        let outcome = || capture::snapshot(&fields).get("outcome").cloned();

        match begin(1, "now") {
            Begun::Done(reply) => assert_eq!(text(reply), "now"),
            Begun::Waiting(_) => panic!("a handler done at its first poll is answered at once"),
        }
        assert_eq!(outcome().as_deref(), Some("ok"));
        if let Ok(mut f) = fields.lock() {
            f.clear();
        }
        match begin(2, "later") {
            Begun::Waiting(rest) => {
                let polled = polls.load(std::sync::atomic::Ordering::SeqCst);
                assert_eq!(polled, 1, "the handler was polled in place");
                assert_eq!(outcome(), None, "not concluded before it has run");
                assert_eq!(text(rest.await), "later");
            }
            Begun::Done(_) => panic!("a waiting handler is the rest of the call"),
        }
        assert_eq!(outcome().as_deref(), Some("ok"));
        match begin_method(3, "server/discover", json!({})) {
            Begun::Done(Reply::Response { status: 200, .. }) => {}
            _ => panic!("another method done at its first poll is answered at once"),
        }
        // Another method that waits is the rest too, its handler polled once in place.
        if let Ok(mut f) = fields.lock() {
            f.clear();
        }
        match begin_method(6, "prompts/get", json!({ "name": "later" })) {
            Begun::Waiting(rest) => {
                let polled = prompt_polls.load(std::sync::atomic::Ordering::SeqCst);
                assert_eq!(polled, 1, "the prompt's handler was polled in place");
                assert_eq!(outcome(), None, "not concluded before it has run");
                let Reply::Response { body, status: 200 } = rest.await else {
                    panic!("a 200 response");
                };
                let message: Value = serde_json::from_str(&body).expect("JSON");
                assert_eq!(
                    message["result"]["messages"][0]["content"]["text"], "later",
                    "{message}"
                );
                assert_eq!(
                    prompt_polls.load(std::sync::atomic::Ordering::SeqCst),
                    1,
                    "the prompt's handler was called once"
                );
                assert_eq!(outcome().as_deref(), Some("ok"));
            }
            Begun::Done(_) => panic!("a waiting prompt is the rest of the request"),
        }

        // A request cancelled before it starts runs nothing.
        if let Ok(mut f) = fields.lock() {
            f.clear();
        }
        let cancelled = Arc::new(Sink::default());
        cancelled.cancellation().cancel();
        let before = polls.load(std::sync::atomic::Ordering::SeqCst);
        match begin_on(4, "tools/call", json!({"name": "later"}), cancelled) {
            Begun::Done(Reply::Cancelled) => {}
            _ => panic!("a request cancelled before it starts is cancelled"),
        }
        assert_eq!(
            polls.load(std::sync::atomic::Ordering::SeqCst),
            before,
            "its handler is never polled"
        );
        assert_eq!(outcome().as_deref(), Some("cancelled"));

        // A handler that panics at the poll in place is -32603, and the span says so.
        if let Ok(mut f) = fields.lock() {
            f.clear();
        }
        match begin(5, "explodes") {
            Begun::Done(Reply::Response { body, .. }) => {
                let message: Value = serde_json::from_str(&body).expect("JSON");
                assert_eq!(message["error"]["code"], -32603, "{message}");
            }
            _ => panic!("a panic at the first poll is answered at once"),
        }
        assert_eq!(outcome().as_deref(), Some("panic"));
    }

    /// A handler set with `Tool::handler` gets the `ToolCall` it documents: its own tool's
    /// name (one handler serving two tools tells them apart) and the checked arguments.
    /// (`#[tool]` glue takes the arguments without the name; the macro tests cover it.)
    #[tokio::test]
    async fn a_builder_handler_gets_its_tools_name_and_arguments() {
        let which = |call: crate::ToolCall| async move {
            let said = call
                .arguments
                .get("say")
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("{}: {said}", call.name)
        };
        let schema = json!({"type": "object", "properties": {"say": {"type": "string"}}});
        let server = crate::Server::builder(Implementation::new("named", "1"))
            .tool(
                crate::Tool::new("first")
                    .input_schema(schema.clone())
                    .handler(which),
            )
            .tool(
                crate::Tool::new("second")
                    .input_schema(schema)
                    .handler(which),
            )
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server);
        client
            .call_tool("first", json!({"say": "a"}))
            .await
            .assert_text("first: a");
        client
            .call_tool("second", json!({"say": "b"}))
            .await
            .assert_text("second: b");
    }

    /// The serverInfo member is written from a literal: it is the key, quoted as
    /// serde_json quotes it, and a colon.
    #[test]
    fn the_server_info_member_is_the_key_written() {
        let key = serde_json::to_string(super::KEY_SERVER_INFO).expect("serializes");
        assert_eq!(super::SERVER_INFO_MEMBER, format!("{key}:"));
    }
}
