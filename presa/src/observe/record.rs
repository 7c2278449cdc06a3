//! The direct record of a span (feature `otel`, once `otel::Telemetry::install` made it
//! presa's way to export): what a request's span holds while the request runs, kept in
//! one small struct beside the request instead of in a `tracing` subscriber's registry,
//! and handed whole to the exporter when the request ends ([`Finished`], [`Sink`]).
//!
//! The record holds exactly what the `tracing` span of the same request carries for
//! `tracing-opentelemetry` (the span's name, kind, status, parent, links and attributes),
//! so the two ways of exporting give the same span; `otel`'s tests hold them to each other.
//! It is shared by the request's polls and its end ([`Record`] is behind an `Arc`), and
//! the request's polls make it the thread's current record ([`current`]), which is how
//! code inside a request (the dispatch, the MRTR seal, a task's creation) finds it.

use super::{Attr, Network};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

/// An attribute's value, as the conventions type it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// A string known when presa was built.
    Static(&'static str),
    /// A string, shared with the metric's attributes.
    Str(Arc<str>),
    /// An integer.
    Int(i64),
}

/// A span's name: `{head}`, or `{head} {target}` (written out by the exporter).
#[derive(Clone, Debug)]
pub(crate) struct Name {
    /// The method (`tools/call`), or the operation (`execute_tool`).
    pub(crate) head: Value,
    /// What it is about (a tool's name, a prompt's), if anything.
    pub(crate) target: Option<Arc<str>>,
}

impl Value {
    /// The value as text (an integer has none).
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Value::Static(s) => s,
            Value::Str(s) => s,
            Value::Int(_) => "",
        }
    }
}

/// A span's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request served.
    Server,
    /// Work inside the server (a task's run).
    Internal,
}

/// What the exporter sends of a span (complete once it ended).
#[derive(Debug)]
pub(crate) struct Finished {
    /// The span's own context (trace id, span id, flags, the parent's trace state).
    pub(crate) context: SpanContext,
    /// The parent's span id, and whether the parent came from another process.
    pub(crate) parent: Option<(SpanId, bool)>,
    /// The span's name.
    pub(crate) name: Name,
    /// The span's kind.
    pub(crate) kind: Kind,
    /// Start and end, as the wall clock said.
    pub(crate) start: SystemTime,
    /// See `start`.
    pub(crate) end: SystemTime,
    /// The attributes, by [`Attr`].
    pub(crate) attributes: Attributes,
    /// `Some` for an error status, with its description (empty for none).
    pub(crate) error: Option<String>,
    /// The spans this one follows from.
    pub(crate) links: Vec<SpanContext>,
}

/// Where finished spans go: the exporter `otel::Telemetry::install` started.
pub(crate) trait Sink: Send + Sync {
    /// Takes one ended span (sampled). Never blocks: a full exporter drops it.
    fn accept(&self, span: Arc<Record>);
}

/// Whether requests are recorded directly (set once, by `otel::Telemetry::install`).
static DIRECT: AtomicBool = AtomicBool::new(false);

/// Where finished spans go, when spans are exported.
static SINK: OnceLock<Box<dyn Sink>> = OnceLock::new();

/// Whether spans made by `tracing` inside a request (a handler's own) are to find the
/// request's span as their parent, through OpenTelemetry's current context.
static CONTEXT: AtomicBool = AtomicBool::new(false);

/// Makes presa record every request directly from now on, sending finished spans to
/// `sink` when there is one (metrics only otherwise). `context`: make each request's
/// span the current OpenTelemetry context while it is polled, for spans a `tracing`
/// layer makes inside it.
pub(crate) fn activate(sink: Option<Box<dyn Sink>>, context: bool) {
    if let Some(sink) = sink {
        let _ = SINK.set(sink);
    }
    CONTEXT.store(context, Ordering::Relaxed);
    DIRECT.store(true, Ordering::Release);
}

/// Whether requests are recorded directly.
pub(crate) fn active() -> bool {
    DIRECT.load(Ordering::Acquire)
}

/// Whether the current OpenTelemetry context is to be set while a request is polled.
pub(crate) fn sets_context() -> bool {
    CONTEXT.load(Ordering::Relaxed)
}

thread_local! {
    /// The record of the request (or task run) being polled on this thread.
    static CURRENT: RefCell<Option<Arc<Record>>> = const { RefCell::new(None) };
}

/// The record of the request being polled on this thread, if any.
pub(crate) fn current() -> Option<Arc<Record>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Makes `record` the thread's current one until the returned guard drops (which puts
/// back the one before).
pub(crate) fn enter(record: &Arc<Record>) -> Entered {
    let before = CURRENT.with(|c| c.replace(Some(Arc::clone(record))));
    let context = sets_context().then(|| record.context().attach());
    Entered {
        before,
        _context: context,
    }
}

/// What [`enter`] returns: the record before, put back on drop.
pub(crate) struct Entered {
    before: Option<Arc<Record>>,
    _context: Option<opentelemetry::ContextGuard>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.before.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// One span's record, while its work runs.
#[derive(Debug)]
pub(crate) struct Record {
    data: Mutex<Data>,
    /// When the span started, for the duration metric (monotonic).
    started: Instant,
}

/// What a [`Record`] holds.
#[derive(Debug)]
struct Data {
    /// What the exporter sends.
    span: Finished,
    /// The OpenTelemetry context a request's inner spans take as parent, made on first use.
    otel_context: Option<opentelemetry::Context>,
    /// The baggage the parent's context carried, for `otel_context`.
    baggage: Option<opentelemetry::Context>,
    /// `mcp.method.name`, for the requests in flight.
    method: Option<Arc<str>>,
    /// Ended: a second end records nothing.
    ended: bool,
}

/// A span's attributes: one place per [`Attr`], each set at most once (a later value
/// replaces the earlier).
#[derive(Debug, Default)]
pub(crate) struct Attributes([Option<Value>; Attr::COUNT]);

impl Attributes {
    /// Sets `attr`.
    pub(crate) fn set(&mut self, attr: Attr, value: Value) {
        self.0[attr as usize] = Some(value);
    }

    /// Every attribute set, in [`Attr`]'s order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Attr, &Value)> {
        ALL.iter()
            .zip(self.0.iter())
            .filter_map(|(attr, v)| v.as_ref().map(|v| (*attr, v)))
    }

    /// The attributes of `mcp.server.operation.duration`, as the metric takes them.
    pub(crate) fn metric(&self) -> Vec<KeyValue> {
        let mut out = Vec::with_capacity(Attr::COUNT);
        for (attr, value) in self.iter().filter(|(a, _)| a.in_metric()) {
            let value = match value {
                Value::Static(s) => opentelemetry::Value::from(*s),
                Value::Str(s) => opentelemetry::Value::from(Arc::clone(s)),
                Value::Int(i) => opentelemetry::Value::from(*i),
            };
            out.push(KeyValue::new(attr.name(), value));
        }
        out
    }
}

// `Attributes` indexes its array by `Attr as usize`: every variant must be below the
// count, and `ALL` must list each in its place.
const _: () = {
    assert!(Attr::DurationUs as usize + 1 == Attr::COUNT);
    let mut i = 0;
    while i < Attr::COUNT {
        assert!(ALL[i] as usize == i);
        i += 1;
    }
};

/// Every [`Attr`], in order.
const ALL: [Attr; Attr::COUNT] = [
    Attr::MethodName,
    Attr::RequestId,
    Attr::NetworkTransport,
    Attr::NetworkProtocolName,
    Attr::NetworkProtocolVersion,
    Attr::ToolName,
    Attr::OperationName,
    Attr::PromptName,
    Attr::ResourceUri,
    Attr::ProtocolVersion,
    Attr::SessionId,
    Attr::EnduserId,
    Attr::StatusCode,
    Attr::ErrorType,
    Attr::Outcome,
    Attr::DurationUs,
];

/// The ids of new traces and spans.
fn ids() -> &'static RandomIdGenerator {
    static IDS: OnceLock<RandomIdGenerator> = OnceLock::new();
    IDS.get_or_init(RandomIdGenerator::default)
}

impl Record {
    /// The record of a request span: named after its method, with the attributes known
    /// when it starts.
    pub(crate) fn server(method: &str, request_id: &str, network: Network) -> Record {
        let method: Arc<str> = method.into();
        let name = Name {
            head: Value::Str(Arc::clone(&method)),
            target: None,
        };
        let record = Record::new(name, Kind::Server, Some(Arc::clone(&method)));
        {
            let mut data = record.data();
            let a = &mut data.span.attributes;
            a.set(Attr::MethodName, Value::Str(method));
            a.set(Attr::RequestId, Value::Str(request_id.into()));
            match network {
                Network::Pipe => a.set(Attr::NetworkTransport, Value::Static("pipe")),
                Network::Http => {
                    a.set(Attr::NetworkTransport, Value::Static("tcp"));
                    a.set(Attr::NetworkProtocolName, Value::Static("http"));
                    a.set(Attr::NetworkProtocolVersion, Value::Static("1.1"));
                }
                Network::InProcess => {}
            }
        }
        record
    }

    /// The record of a task's run: `execute_tool {tool}`, kind INTERNAL.
    #[cfg(feature = "tasks")]
    pub(crate) fn task(tool: &str) -> Record {
        let tool: Arc<str> = tool.into();
        let name = Name {
            head: Value::Static("execute_tool"),
            target: Some(Arc::clone(&tool)),
        };
        let record = Record::new(name, Kind::Internal, None);
        {
            let mut data = record.data();
            data.span
                .attributes
                .set(Attr::OperationName, Value::Static("execute_tool"));
            data.span.attributes.set(Attr::ToolName, Value::Str(tool));
        }
        record
    }

    /// A record named `name`, started now; `method`: a request's, counted in flight.
    fn new(name: Name, kind: Kind, method: Option<Arc<str>>) -> Record {
        let ids = ids();
        let context = SpanContext::new(
            ids.new_trace_id(),
            ids.new_span_id(),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        );
        if let Some(method) = &method {
            super::on::request_started(method);
        }
        Record {
            data: Mutex::new(Data {
                span: Finished {
                    context,
                    parent: None,
                    name,
                    kind,
                    start: SystemTime::now(),
                    end: SystemTime::UNIX_EPOCH,
                    attributes: Attributes::default(),
                    error: None,
                    links: Vec::new(),
                },
                otel_context: None,
                baggage: None,
                method,
                ended: false,
            }),
            started: Instant::now(),
        }
    }

    fn data(&self) -> std::sync::MutexGuard<'_, Data> {
        // A panic while the lock was held leaves the record as it was: still usable.
        self.data
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes `parent` (from another process) the span's parent, when valid: its trace,
    /// its sampled flag and its trace state; `cx` is the context it came in, whose
    /// baggage the spans made inside carry either way.
    pub(crate) fn set_parent(&self, parent: &SpanContext, cx: opentelemetry::Context) {
        let mut data = self.data();
        // The baggage goes on to the spans made inside, with or without a valid parent.
        data.baggage = Some(cx);
        data.otel_context = None;
        if !parent.is_valid() {
            return;
        }
        data.span.context = SpanContext::new(
            parent.trace_id(),
            data.span.context.span_id(),
            parent.trace_flags(),
            false,
            parent.trace_state().clone(),
        );
        data.span.parent = Some((parent.span_id(), parent.is_remote()));
    }

    /// The span's own context.
    pub(crate) fn span_context(&self) -> SpanContext {
        self.data().span.context.clone()
    }

    /// The OpenTelemetry context whose span is this one, for spans made inside it.
    fn context(&self) -> opentelemetry::Context {
        use opentelemetry::trace::TraceContextExt as _;
        let mut data = self.data();
        if let Some(cx) = &data.otel_context {
            return cx.clone();
        }
        let base = data.baggage.clone().unwrap_or_default();
        let cx = base.with_remote_span_context(data.span.context.clone());
        data.otel_context = Some(cx.clone());
        cx
    }

    /// Sets an attribute (a later value replaces the earlier).
    pub(crate) fn set(&self, attr: Attr, value: Value) {
        let mut data = self.data();
        if !data.ended {
            data.span.attributes.set(attr, value);
        }
    }

    /// Names the span after what it is about: `{head} {target}`.
    pub(crate) fn rename(&self, target: Arc<str>) {
        let mut data = self.data();
        if !data.ended {
            data.span.name.target = Some(target);
        }
    }

    /// Sets the status to error, with `description` (which a later one replaces).
    pub(crate) fn error(&self, description: Option<&str>) {
        let mut data = self.data();
        if data.ended {
            return;
        }
        match description {
            Some(d) => data.span.error = Some(d.to_owned()),
            None => {
                data.span.error.get_or_insert_with(String::new);
            }
        }
    }

    /// Adds a link to `to`.
    pub(crate) fn link(&self, to: SpanContext) {
        let mut data = self.data();
        if to.is_valid() && !data.ended {
            data.span.links.push(to);
        }
    }

    /// Ends the span: records the duration metric and the requests in flight, and hands
    /// the span to the exporter when there is one and the span is sampled. Only the first
    /// end counts.
    pub(crate) fn end(self: &Arc<Self>) {
        let elapsed = self.started.elapsed();
        let mut data = self.data();
        if data.ended {
            return;
        }
        data.ended = true;
        // One clock read: the end is the start and the monotonic time since.
        data.span.end = data.span.start + elapsed;
        if let Some(method) = data.method.take() {
            super::on::request_ended(&method, elapsed, &data.span.attributes.metric());
        }
        let sampled = data.span.context.is_sampled();
        drop(data);
        if let Some(sink) = SINK.get()
            && sampled
        {
            sink.accept(Arc::clone(self));
        }
    }

    /// What the exporter sends, while `f` runs (the span has ended: nothing changes it).
    pub(crate) fn with_finished<T>(&self, f: impl FnOnce(&Finished) -> T) -> T {
        f(&self.data().span)
    }
}
