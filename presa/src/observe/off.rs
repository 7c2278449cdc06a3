//! The build without `otel`: the same functions as [`super::on`], recording nothing but
//! the trace context as plain span fields.

/// Records the W3C trace context as sent (`trace_parent`, `trace_state`, `baggage`).
pub(crate) fn set_parent(
    span: &super::Span,
    traceparent: Option<&str>,
    tracestate: Option<&str>,
    baggage: Option<&str>,
) {
    if span.is_disabled() {
        return;
    }
    for (field, value) in [
        ("trace_parent", traceparent),
        ("trace_state", tracestate),
        ("baggage", baggage),
    ] {
        if let Some(v) = value {
            span.tracing.record(field, v);
        }
    }
}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn rejected(_code: i64) {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn listen_opened() {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn listen_closed() {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn listen_event_dropped() {}

/// Nothing: no metrics without `otel`.
#[cfg(feature = "tasks")]
#[inline(always)]
pub(crate) fn task_status(_status: &'static str) {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn state_failure(_operation: &'static str) {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn session_opened() {}

/// Nothing: no metrics without `otel`.
#[inline(always)]
pub(crate) fn session_closed() {}

/// Nothing to carry without `otel`.
#[inline(always)]
pub(crate) fn traceparent_of(_span: &super::Span) -> Option<String> {
    None
}

/// Nothing to link without `otel`.
#[inline(always)]
pub(crate) fn link(_span: &super::Span, _traceparent: &str) {}

/// Names the span (`otel.name`).
pub(crate) fn rename(span: &tracing::Span, name: &str) {
    span.record("otel.name", name);
}
