//! What presa tells about its work: the span of each request, named and attributed by
//! the OpenTelemetry MCP semantic conventions, and presa's metrics. The one seam the
//! pipeline, the subscriptions hub, the legacy sessions, the request-state seals and the
//! Tasks extension call; it knows nothing of them (it takes plain values).
//!
//! The span is a `tracing` span in every build, whose `otel.*` fields a
//! `tracing-opentelemetry` layer turns into the span's name, kind and status. With the
//! `otel` feature, once `otel::Telemetry::install` ran, each request also has a direct
//! record ([`record`]) that presa's exporter sends, and which every function here sets
//! alike; this module also sets the span's parent from the request's `_meta` (W3C trace
//! context and baggage) and records the metrics through the OpenTelemetry metrics API
//! ([`on`]). Without the feature, the same functions do nothing but record plain fields
//! ([`off`]), so the callers compile alike either way.
//!
//! The span's fields ([`request_span`]):
//!
//! | field | when |
//! | --- | --- |
//! | `otel.name` | `{mcp.method.name}`, or `{mcp.method.name} {target}` with a tool or prompt name (a resource URI only when opted in, [`set_resource_uri_opt_in`]) |
//! | `otel.kind` | `server` |
//! | `otel.status_code` | `ERROR` when `error.type` is set |
//! | `otel.status_description` | the JSON-RPC error's message, for an error answer ([`describe_error`]); none for a tool error or a cancelled request |
//! | `mcp.method.name` | always; `other` for a method nobody serves (a client's arbitrary string is not recorded) |
//! | `jsonrpc.request.id` | always |
//! | `gen_ai.tool.name`, `gen_ai.operation.name` (`execute_tool`) | `tools/call` with a name |
//! | `gen_ai.prompt.name` | `prompts/get` with a name |
//! | `mcp.resource.uri` | `resources/read`, opted in |
//! | `mcp.protocol.version` | once admission read it |
//! | `mcp.session.id` | a legacy session's request |
//! | `network.transport` | `pipe` (stdio), `tcp` (HTTP); absent in process |
//! | `network.protocol.name`, `network.protocol.version` | `http`, `1.1` over HTTP |
//! | `enduser.id` | the principal's id, when the request has one; never a token |
//! | `rpc.response.status_code` | the JSON-RPC error code of an error answer |
//! | `error.type` | that code as a string; `tool_error` for an `isError` result; `cancelled` for a cancelled request |
//!
//! Never argument values, results or tokens.

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(feature = "otel")]
pub(crate) mod on;
#[cfg(feature = "otel")]
pub(crate) mod record;

#[cfg(not(feature = "otel"))]
pub(crate) use off::*;
#[cfg(feature = "otel")]
pub(crate) use on::*;

use crate::wire::jsonrpc::RequestId;
use std::sync::atomic::{AtomicBool, Ordering};

/// `jsonrpc.request.id` as the conventions write it: a string id as it is (`request-7`,
/// not quoted), unless it holds control characters, which a log line must not carry raw
/// (then quoted and escaped); a number as its digits.
struct IdText<'a>(&'a RequestId);

impl std::fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            RequestId::Str(s) if !s.chars().any(char::is_control) => f.write_str(s),
            other => std::fmt::Display::fmt(other, f),
        }
    }
}

/// `jsonrpc.request.id` as [`IdText`] writes it, borrowed when it can be.
#[cfg(feature = "otel")]
fn id_text<'a>(id: &'a RequestId, digits: &'a mut itoa::Buffer) -> std::borrow::Cow<'a, str> {
    match id {
        RequestId::Str(s) if !s.chars().any(char::is_control) => std::borrow::Cow::Borrowed(s),
        RequestId::Int(n) => std::borrow::Cow::Borrowed(digits.format(*n)),
        other => std::borrow::Cow::Owned(IdText(other).to_string()),
    }
}

/// The name of every request span ([`request_span`] writes it out, as the macro needs):
/// a layer finds request spans by it and their target, `presa::observe`.
#[cfg(feature = "otel")]
pub(crate) const SPAN_NAME: &str = "mcp.request";

/// The attributes presa's spans carry (the span's fields of the same names, [`Attr::name`]).
/// Without `otel`, those the span declares at its start are never set later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Attr {
    MethodName,
    RequestId,
    NetworkTransport,
    NetworkProtocolName,
    NetworkProtocolVersion,
    ToolName,
    OperationName,
    PromptName,
    ResourceUri,
    ProtocolVersion,
    SessionId,
    EnduserId,
    StatusCode,
    ErrorType,
    Outcome,
    DurationUs,
}

impl Attr {
    /// How many there are.
    #[cfg(feature = "otel")]
    pub(crate) const COUNT: usize = 16;

    /// The attribute's (and the span field's) name.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Attr::MethodName => "mcp.method.name",
            Attr::RequestId => "jsonrpc.request.id",
            Attr::NetworkTransport => "network.transport",
            Attr::NetworkProtocolName => "network.protocol.name",
            Attr::NetworkProtocolVersion => "network.protocol.version",
            Attr::ToolName => "gen_ai.tool.name",
            Attr::OperationName => "gen_ai.operation.name",
            Attr::PromptName => "gen_ai.prompt.name",
            Attr::ResourceUri => "mcp.resource.uri",
            Attr::ProtocolVersion => "mcp.protocol.version",
            Attr::SessionId => "mcp.session.id",
            Attr::EnduserId => "enduser.id",
            Attr::StatusCode => "rpc.response.status_code",
            Attr::ErrorType => "error.type",
            Attr::Outcome => "outcome",
            Attr::DurationUs => "duration_us",
        }
    }

    /// Whether `mcp.server.operation.duration` takes it too.
    #[cfg(feature = "otel")]
    pub(crate) const fn in_metric(self) -> bool {
        matches!(
            self,
            Attr::MethodName
                | Attr::ErrorType
                | Attr::ToolName
                | Attr::PromptName
                | Attr::OperationName
                | Attr::ProtocolVersion
                | Attr::NetworkTransport
                | Attr::NetworkProtocolName
                | Attr::NetworkProtocolVersion
                | Attr::StatusCode
        )
    }
}

/// How a request came, as the conventions' `network.*` attributes say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Network {
    /// stdio: `network.transport = pipe`.
    Pipe,
    /// Streamable HTTP: `tcp`, `http`, `1.1`.
    Http,
    /// The in-process test client: no network attributes.
    InProcess,
}

/// What a request is about, when it names something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A `tools/call`'s tool.
    Tool,
    /// A `prompts/get`'s prompt.
    Prompt,
    /// A `resources/read`'s URI.
    Resource,
}

/// How a request ended, as its span and the duration metric record it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Answered with a result (a tool error is marked apart, [`tool_error`]).
    Ok,
    /// A subscription stream the server ended.
    StreamEnded,
    /// Answered with a JSON-RPC error of this code.
    Error(i64),
    /// The handler panicked: answered -32603.
    Panic,
    /// Cancelled: nothing was answered.
    Cancelled,
}

/// Whether `mcp.resource.uri` is recorded and names the span (off by default: URIs are
/// high-cardinality and may carry what a client asked for).
static RESOURCE_URI: AtomicBool = AtomicBool::new(false);

/// Opts in to (or out of) recording `mcp.resource.uri` on `resources/read` spans and as
/// the span name's target.
#[cfg(feature = "otel")]
pub(crate) fn set_resource_uri_opt_in(on: bool) {
    RESOURCE_URI.store(on, Ordering::Relaxed);
}

/// Whether `mcp.resource.uri` is recorded.
fn resource_uri_opted_in() -> bool {
    RESOURCE_URI.load(Ordering::Relaxed)
}

/// A request's span (or a task run's): the `tracing` span, and with `otel`, when
/// `otel::Telemetry::install` made presa export directly, the span's direct record
/// ([`record`]). Every function of this module records into both; the pipeline holds
/// one of these where it held the `tracing` span.
#[derive(Clone, Debug)]
pub(crate) struct Span {
    tracing: tracing::Span,
    #[cfg(feature = "otel")]
    record: Option<std::sync::Arc<record::Record>>,
}

impl Span {
    /// Whether nothing records this span (neither a subscriber nor the direct record).
    pub(crate) fn is_disabled(&self) -> bool {
        #[cfg(feature = "otel")]
        if self.record.is_some() {
            return false;
        }
        self.tracing.is_disabled()
    }

    /// Enters the span for the code that runs until the guard drops: the `tracing` span,
    /// and the direct record as the thread's current one.
    pub(crate) fn enter(&self) -> Entered<'_> {
        let tracing = self.tracing.enter();
        Entered {
            #[cfg(feature = "otel")]
            _record: self.record.as_ref().map(record::enter),
            _tracing: tracing,
        }
    }

    /// Records a string field.
    fn put(&self, field: Attr, value: &str) {
        self.tracing.record(field.name(), value);
        #[cfg(feature = "otel")]
        if let Some(r) = &self.record {
            r.set(field, record::Value::Str(value.into()));
        }
    }

    /// Records a string field whose value is known when presa is built.
    fn put_static(&self, field: Attr, value: &'static str) {
        self.tracing.record(field.name(), value);
        #[cfg(feature = "otel")]
        if let Some(r) = &self.record {
            r.set(field, record::Value::Static(value));
        }
    }
}

/// What [`Span::enter`] returns.
pub(crate) struct Entered<'a> {
    // Dropped in this order: the record entered last leaves first.
    #[cfg(feature = "otel")]
    _record: Option<record::Entered>,
    _tracing: tracing::span::Entered<'a>,
}

pin_project_lite::pin_project! {
    /// A future polled inside a span, as `tracing::Instrument` does, for [`Span`]; for a
    /// task's run ([`Instrumented::ending`]) the span ends when the future ends or drops.
    pub(crate) struct Instrumented<F> {
        #[pin]
        inner: F,
        span: Span,
        ends: bool,
    }

    impl<F> PinnedDrop for Instrumented<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if *this.ends {
                end_span(this.span);
            }
        }
    }
}

impl<F> Instrumented<F> {
    /// `inner`, polled inside `span`.
    pub(crate) fn new(inner: F, span: Span) -> Self {
        Instrumented {
            inner,
            span,
            ends: false,
        }
    }

    /// `inner`, polled inside `span`, which ends with it.
    #[cfg(feature = "tasks")]
    pub(crate) fn ending(inner: F, span: Span) -> Self {
        Instrumented {
            inner,
            span,
            ends: true,
        }
    }
}

impl<F: std::future::Future> std::future::Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        this.inner.poll(cx)
    }
}

/// The span of the request (or task run) being polled on this thread: the current
/// `tracing` span when it is presa's and INFO spans can be enabled at all (else a
/// disabled one, without asking the dispatcher), and the current direct record.
pub(crate) fn current() -> Span {
    // Only a span of presa's own: inside a request whose span nobody records, the current
    // span may be one that encloses the request (an in-process caller's, a tower
    // layer's), which presa must not rename, link or mark.
    let tracing = if tracing::level_enabled!(tracing::Level::INFO) {
        let current = tracing::Span::current();
        if current
            .metadata()
            .is_some_and(|m| m.target() == "presa::observe")
        {
            current
        } else {
            tracing::Span::none()
        }
    } else {
        tracing::Span::none()
    };
    Span {
        tracing,
        #[cfg(feature = "otel")]
        record: record::current(),
    }
}

/// The span of one request. Every field the conventions name is declared on the
/// `tracing` span here (a `tracing` span cannot gain fields later); those not known yet
/// are empty until recorded.
pub(crate) fn request_span(method: &str, id: &RequestId, network: Network) -> Span {
    let id = IdText(id);
    let transport = match network {
        Network::Pipe => Some("pipe"),
        Network::Http => Some("tcp"),
        Network::InProcess => None,
    };
    let http = network == Network::Http;
    let tracing = tracing::info_span!(
        target: "presa::observe",
        "mcp.request",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        mcp.method.name = method,
        jsonrpc.request.id = %id,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        gen_ai.operation.name = tracing::field::Empty,
        mcp.resource.uri = tracing::field::Empty,
        mcp.protocol.version = tracing::field::Empty,
        mcp.session.id = tracing::field::Empty,
        network.transport = transport,
        network.protocol.name = http.then_some("http"),
        network.protocol.version = http.then_some("1.1"),
        // Who the request acts for (the principal's id); never its token.
        enduser.id = tracing::field::Empty,
        rpc.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        // presa's own: how the request ended, and how long it took (when recorded).
        outcome = tracing::field::Empty,
        duration_us = tracing::field::Empty,
        // The W3C trace context as sent, in a build without `otel` (with it, the
        // context is the span's parent instead).
        trace_parent = tracing::field::Empty,
        trace_state = tracing::field::Empty,
        baggage = tracing::field::Empty,
    );
    Span {
        tracing,
        #[cfg(feature = "otel")]
        record: record::active().then(|| {
            std::sync::Arc::new(record::Record::server(
                method,
                &id_text(id.0, &mut itoa::Buffer::new()),
                network,
            ))
        }),
    }
}

/// The span of a task's run (the Tasks extension's worker), as the GenAI conventions
/// name a tool's execution: `execute_tool {gen_ai.tool.name}`, kind INTERNAL; the root
/// of a trace of its own.
#[cfg(feature = "tasks")]
pub(crate) fn task_span(tool: &str) -> Span {
    // A root: the run outlives the request that created it, which it links to instead.
    let tracing = tracing::info_span!(
        target: "presa::observe",
        parent: None,
        "mcp.task",
        otel.name = tracing::field::Empty,
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
    );
    let span = Span {
        tracing,
        #[cfg(feature = "otel")]
        record: record::active().then(|| std::sync::Arc::new(record::Record::task(tool))),
    };
    if !span.tracing.is_disabled() {
        rename(&span.tracing, &format!("execute_tool {tool}"));
    }
    span
}

/// Records what the request is about: the tool's or prompt's name (and the span's name
/// with it), or the resource's URI when opted in.
pub(crate) fn target(span: &Span, target: Target, name: &str) {
    if span.is_disabled() {
        return;
    }
    name_target(span, target, name, || name.into());
}

/// [`target`]'s work; `shared` gives the name as the record keeps it.
fn name_target(
    span: &Span,
    target: Target,
    name: &str,
    shared: impl FnOnce() -> std::sync::Arc<str>,
) {
    let (method, attr) = match target {
        Target::Tool => {
            span.put_static(Attr::OperationName, "execute_tool");
            ("tools/call", Attr::ToolName)
        }
        Target::Prompt => ("prompts/get", Attr::PromptName),
        Target::Resource => {
            if !resource_uri_opted_in() {
                return;
            }
            ("resources/read", Attr::ResourceUri)
        }
    };
    if !span.tracing.is_disabled() {
        span.tracing.record(attr.name(), name);
        rename(&span.tracing, &format!("{method} {name}"));
    }
    #[cfg(feature = "otel")]
    if let Some(r) = &span.record {
        let name = shared();
        r.set(attr, record::Value::Str(std::sync::Arc::clone(&name)));
        r.rename(name);
    }
    #[cfg(not(feature = "otel"))]
    let _ = shared;
}

/// Records the protocol version the request was admitted under.
pub(crate) fn protocol_version(span: &Span, version: &'static str) {
    span.put_static(Attr::ProtocolVersion, version);
}

/// Records the legacy session a request belongs to.
pub(crate) fn session(span: &Span, id: &str) {
    span.put(Attr::SessionId, id);
}

/// Records who the request acts for.
pub(crate) fn enduser(span: &Span, id: &str) {
    span.put(Attr::EnduserId, id);
}

/// Marks a `tools/call` answered with `isError: true`.
pub(crate) fn tool_error(span: &Span) {
    span.put_static(Attr::ErrorType, "tool_error");
    error_status(span, None);
}

/// The span's status: error, described by `description` (none: no description).
fn error_status(span: &Span, description: Option<&str>) {
    span.tracing.record("otel.status_code", "ERROR");
    if let Some(d) = description {
        span.tracing.record("otel.status_description", d);
    }
    #[cfg(feature = "otel")]
    if let Some(r) = &span.record {
        r.error(description);
    }
}

/// Records how the request ended on its span: `error.type`, `rpc.response.status_code`
/// and the status for an error, presa's `outcome`, and how long it took.
pub(crate) fn end(span: &Span, outcome: Outcome, duration: Option<std::time::Duration>) {
    if span.is_disabled() {
        return;
    }
    if let Some(d) = duration {
        let us = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        span.tracing.record("duration_us", us);
        #[cfg(feature = "otel")]
        if let Some(r) = &span.record {
            r.set(Attr::DurationUs, record::Value::Int(us));
        }
    }
    let word = match outcome {
        Outcome::Ok => "ok",
        Outcome::StreamEnded => "stream ended",
        Outcome::Cancelled => {
            span.put_static(Attr::ErrorType, "cancelled");
            error_status(span, None);
            "cancelled"
        }
        Outcome::Error(code) => {
            error_code(span, code);
            "error"
        }
        Outcome::Panic => {
            error_code(span, crate::error::code::INTERNAL_ERROR);
            "panic"
        }
    };
    span.put_static(Attr::Outcome, word);
}

/// Describes the status of a request answered with a JSON-RPC error by that error's
/// message, as the conventions say it SHOULD be: the message the client was sent (an
/// internal error's is the fixed one, with no detail). Recorded after [`end`]: the
/// span's status takes the last description recorded with it. A tool error has no
/// JSON-RPC error, and its text is the tool's output: its status has no description.
pub(crate) fn describe_error(span: &Span, message: &str) {
    error_status(span, Some(message));
}

/// Ends the span's direct record (the `tracing` span ends when its last handle drops):
/// its duration metric, and its export.
pub(crate) fn end_span(span: &Span) {
    #[cfg(feature = "otel")]
    if let Some(r) = &span.record {
        r.end();
    }
    #[cfg(not(feature = "otel"))]
    let _ = span;
}

/// A JSON-RPC error answer's code, as `rpc.response.status_code` and `error.type`.
fn error_code(span: &Span, code: i64) {
    let mut digits = itoa::Buffer::new();
    let code = digits.format(code);
    span.put(Attr::StatusCode, code);
    span.put(Attr::ErrorType, code);
    error_status(span, None);
}
