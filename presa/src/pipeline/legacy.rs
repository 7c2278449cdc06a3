//! Requests of a legacy session (2025-11-25, 2025-06-18): the same handlers, reached the
//! way those revisions define it.
//!
//! - `initialize` negotiates the revision and records what the client declared in the
//!   session; `ping`, `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe`
//!   are answered from the session. Every other request needs `initialize` first.
//! - Admission reads the request's `_meta` for its progress token and trace context; the
//!   capabilities, client info and log level are the session's.
//! - A handler that asks the client for input (elicitation, sampling, roots) is served in
//!   rounds, in place: the session sends the client a real request for every input the
//!   handler is still missing, and the handler runs again with the answers, exactly as a
//!   2026-07-28 client's retry would run it. The handler cannot tell the two apart.
//! - Results take the legacy shapes (no `resultType`, serverInfo or caching hints).

use super::{Core, Rest, Step, call, dispatch};
use crate::context::{ContextInit, Outbound, RequestContext};
use crate::error::Error;
use crate::mrtr::inputs;
use crate::mrtr::round::{RoundEnd, end_round};
use crate::registry::Catalog;
use crate::session::{AskFailure, Session};
use crate::wire::jsonrpc::{Notification, Request, RequestParams};
use crate::wire::meta::{self, LEGACY_VERSIONS, LogLevel, RequestMeta};
use crate::wire::methods as names;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Most rounds of asking the client one request may take before it is failed.
pub const MAX_LEGACY_ROUNDS: usize = 16;

impl Core {
    /// Starts a request of a legacy session (see the module doc).
    pub(super) fn start_legacy(
        self: &Arc<Self>,
        request: Request,
        session: Arc<Session>,
        outbound: Arc<dyn Outbound>,
        buffer: String,
        principal: Option<Arc<crate::auth::Principal>>,
    ) -> Step {
        let Request {
            id,
            method,
            meta,
            params,
            lifted,
        } = request;
        let params = RequestParams::new(params, lifted);
        let answer = |result: Result<Map<String, Value>, Error>| {
            Step::Done(result.and_then(|r| self.legacy_shaper.object(r)))
        };
        if !self.legacy {
            return Step::Done(Err(refused(&method, &params)));
        }
        match &*method {
            "initialize" => {
                let answer = answer(self.initialize(&session, &params));
                // The revision the handshake settled on, when it did.
                if let Some(version) = session.version() {
                    crate::observe::protocol_version(&super::request_span(), version);
                }
                return answer;
            }
            "ping" => return answer(Ok(Map::new())),
            _ => {}
        }
        // Every other request comes after `initialize`.
        let admitted = session.with_client(|client| meta::admit_legacy_request(meta, client));
        let meta = match admitted {
            None => {
                return Step::Done(Err(Error::invalid_request(
                    "Invalid Request: the session is not initialized (send initialize first)",
                )));
            }
            Some(Err(error)) => return Step::Done(Err(error)),
            Some(Ok(meta)) => meta,
        };
        record_trace_context(&meta);
        let catalog = self.catalog();
        if !names::LEGACY_SERVED.contains(&&*method) || !offered(self, &catalog, &method) {
            return Step::Done(Err(Error::method_not_found(&method)));
        }
        match &*method {
            "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
                let changed = match &*method {
                    "logging/setLevel" => set_level(&session, &params),
                    on => subscribe(&session, &params, on == "resources/subscribe"),
                };
                return match (changed, session.recorded()) {
                    (Err(error), _) => Step::Done(Err(error)),
                    (Ok(_), None) => answer(Ok(Map::new())),
                    (Ok(change), Some(_)) => {
                        let core = Arc::clone(self);
                        Step::first_poll(Box::pin(async move {
                            record(&session, change).await?;
                            if let Some(id) = session.id() {
                                core.session_changed(id);
                            }
                            core.legacy_shaper.object(Map::new())
                        }))
                    }
                };
            }
            _ => {}
        }
        if let Err(refused) = self.authorize(principal.as_deref(), &[]) {
            return Step::Done(Err(refused));
        }
        let ctx = RequestContext::new(ContextInit {
            id,
            method: method.clone(),
            meta,
            outbound: Arc::clone(&outbound),
            logging_enabled: self.config.logging,
            principal,
            host: Arc::clone(self) as Arc<dyn crate::context::Host>,
            answers: None,
            carried: None,
            hold: false,
            run: None,
        });
        let core = Arc::clone(self);
        let shaper = self.legacy_shaper.clone();
        if method == "tools/call" {
            let tool = params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| catalog.tools.get(name))
                .cloned();
            return match call::prepare(self, &shaper, params, None, ctx.clone(), tool) {
                Err(error) => Step::Done(Err(error)),
                Ok(call::Prepared::Answered(answer)) => Step::Done(answer),
                Ok(call::Prepared::Later(answer)) => Step::first_poll(Box::pin(async move {
                    answer.await.and_then(|result| shaper.object(result))
                })),
                Ok(call::Prepared::Run(entry, arguments, ctx)) => {
                    Step::first_poll(Box::pin(async move {
                        let run = |ctx: RequestContext| -> Rest<Result<String, Error>> {
                            let entry = Arc::clone(&entry);
                            let shaper = shaper.clone();
                            let handler = entry.start(arguments.clone(), ctx.clone());
                            Box::pin(async move {
                                let result = handler.await;
                                call::shape(&shaper, &entry, result, String::new(), &ctx)
                            })
                        };
                        let failed = |why: String| {
                            // The call's answer: an `isError` result of presa's own.
                            crate::observe::tool_error(&super::request_span());
                            let result = crate::wire::types::CallToolResult::error(why);
                            core.legacy_shaper.call(&result, String::new())
                        };
                        rounds(&session, &outbound, ctx, run, failed).await
                    }))
                }
            };
        }
        let _ = buffer;
        let params = params.into_map();
        Step::first_poll(Box::pin(async move {
            let run = |ctx: RequestContext| -> Rest<Result<String, Error>> {
                let core = Arc::clone(&core);
                let catalog = Arc::clone(&catalog);
                let method = method.clone();
                let params = params.clone();
                Box::pin(async move {
                    let shaper = core.legacy_shaper.clone();
                    dispatch::method(&core, &shaper, &catalog, &method, params, false, ctx).await
                })
            };
            let failed = |why: String| Err(Error::invalid_params(why));
            rounds(&session, &outbound, ctx, run, failed).await
        }))
    }

    /// `initialize`: negotiates the revision (the client's when presa speaks it, else the
    /// newest legacy one presa speaks, for the client to accept or leave), records what
    /// the client declared, starts the session's feed, and describes the server.
    fn initialize(
        &self,
        session: &Arc<Session>,
        params: &RequestParams,
    ) -> Result<Map<String, Value>, Error> {
        let requested = match params.get("protocolVersion") {
            Some(Value::String(v)) => v.as_str(),
            _ => {
                return Err(Error::invalid_params(
                    "initialize requires a string protocolVersion",
                ));
            }
        };
        let capabilities = match params.get("capabilities") {
            Some(Value::Object(c)) => c.clone(),
            _ => {
                return Err(Error::invalid_params(
                    "initialize requires a capabilities object",
                ));
            }
        };
        let info = match params.get("clientInfo") {
            Some(info @ Value::Object(m))
                if m.get("name").is_some_and(Value::is_string)
                    && m.get("version").is_some_and(Value::is_string) =>
            {
                info.clone()
            }
            _ => {
                return Err(Error::invalid_params(
                    "initialize requires a clientInfo with string name and version",
                ));
            }
        };
        let version = LEGACY_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .unwrap_or(&LEGACY_VERSIONS[0]);
        let capabilities = declared_in(version, capabilities);
        if !session.initialize(version, capabilities, info) {
            return Err(Error::invalid_request(
                "Invalid Request: the session is initialized already",
            ));
        }
        let catalog = self.catalog();
        let offer = dispatch::offer(self, &catalog);
        session.start_feed(&self.hub, offer);
        let mut caps = Map::new();
        if !catalog.tools.is_empty() {
            caps.insert("tools".into(), json!({"listChanged": true}));
        }
        if !catalog.prompts.is_empty() {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        if !catalog.resources.is_empty() || !catalog.templates.is_empty() {
            let mut r = Map::new();
            if offer.resources_list {
                r.insert("listChanged".into(), Value::Bool(true));
            }
            if offer.resources_subscribe {
                r.insert("subscribe".into(), Value::Bool(true));
            }
            caps.insert("resources".into(), Value::Object(r));
        }
        if catalog.has_completions() {
            caps.insert("completions".into(), json!({}));
        }
        if self.config.logging {
            caps.insert("logging".into(), json!({}));
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), Value::from(*version));
        result.insert("capabilities".into(), Value::Object(caps));
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.info).map_err(|_| Error::internal())?,
        );
        if let Some(i) = &self.config.instructions {
            result.insert("instructions".into(), Value::from(i.as_str()));
        }
        Ok(result)
    }

    /// Passes `message` (a client's answer or cancellation, see
    /// [`Event::Session`](crate::subscriptions::Event::Session)) to the replica holding
    /// session `id` that waits for it, through the fan-out when the server has one.
    pub(crate) fn pass_to_session(&self, id: &str, message: Value) {
        self.publish(&crate::subscriptions::Event::Session {
            id: id.to_owned(),
            message,
        });
    }

    /// Tells the replicas holding session `id` (through the fan-out, when the server has
    /// one) that its shared record changed, so they read it again.
    pub(crate) fn session_changed(&self, id: &str) {
        self.publish(&crate::subscriptions::Event::Topic {
            key: crate::subscriptions::SESSION_CHANGED,
            id: id.to_owned(),
            method: crate::subscriptions::SESSION_CHANGED_METHOD,
            params: Map::new(),
        });
    }

    /// Makes `session` (new, with the record's id) the session `record` describes, as
    /// `initialize` made it on the replica that served it: its revision, what the client
    /// declared, its log level, its feed and subscriptions. False when the record names
    /// a revision this server does not serve.
    pub(crate) fn restore_legacy(
        &self,
        session: &Arc<Session>,
        record: &crate::session::SessionRecord,
    ) -> bool {
        let Some(version) = LEGACY_VERSIONS.iter().find(|v| **v == record.version) else {
            return false;
        };
        if !session.initialize(
            version,
            record.capabilities.clone(),
            record.client_info.clone(),
        ) {
            return false;
        }
        session.mark_initialized();
        session.restore_log_level(record.log_level);
        let catalog = self.catalog();
        session.start_feed(&self.hub, dispatch::offer(self, &catalog));
        session.restore_subscriptions(&record.subscriptions);
        true
    }

    /// Checks a legacy session's notification and acts on it: `notifications/initialized`
    /// marks the session, `notifications/cancelled` cancels the request it names (the
    /// effect is returned for a transport that tracks its own requests),
    /// `notifications/roots/list_changed` is noted. Others are ignored, as JSON-RPC asks.
    pub(crate) fn accept_legacy_notification(
        &self,
        notification: &Notification,
        session: &Session,
    ) -> Result<super::NotificationEffect, Error> {
        meta::admit_notification(&notification.meta)?;
        match &*notification.method {
            names::INITIALIZED => {
                session.mark_initialized();
                Ok(super::NotificationEffect::None)
            }
            names::CANCELLED => {
                let effect = self.cancellation(notification)?;
                if let super::NotificationEffect::Cancel(id) = &effect {
                    session.cancel(id);
                }
                Ok(effect)
            }
            names::ROOTS_LIST_CHANGED => {
                tracing::debug!("the client's roots changed");
                Ok(super::NotificationEffect::None)
            }
            _ => Ok(super::NotificationEffect::None),
        }
    }
}

/// What a client declared, read as its revision defines it. 2025-06-18 has no URL
/// elicitation (its `elicitation` capability takes any member, but an `elicitation.url`
/// there declares nothing), so such a session is never asked to open a URL: that request
/// is not one of its revision's.
fn declared_in(version: &str, mut capabilities: Map<String, Value>) -> Map<String, Value> {
    if version == "2025-06-18"
        && let Some(Value::Object(elicitation)) = capabilities.get_mut("elicitation")
    {
        elicitation.remove("url");
    }
    capabilities
}

/// What a server that does not serve legacy clients answers their requests: the versions
/// it speaks (`basic/versioning.mdx`).
fn refused(method: &str, params: &RequestParams) -> Error {
    let requested = match method {
        "initialize" => params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("unknown"),
        _ => "unknown",
    };
    Error::unsupported_version(requested, meta::SUPPORTED_VERSIONS)
}

/// Whether a legacy method is offered now.
fn offered(core: &Core, catalog: &Catalog, method: &str) -> bool {
    match method {
        "logging/setLevel" => core.config.logging,
        "resources/subscribe" | "resources/unsubscribe" => {
            core.config.resource_notifications
                && (!catalog.resources.is_empty() || !catalog.templates.is_empty())
        }
        "tools/list" | "tools/call" => !catalog.tools.is_empty(),
        "prompts/list" | "prompts/get" => !catalog.prompts.is_empty(),
        "resources/list" | "resources/templates/list" | "resources/read" => {
            !catalog.resources.is_empty() || !catalog.templates.is_empty()
        }
        "completion/complete" => catalog.has_completions(),
        _ => true,
    }
}

/// What a client changed in its session, for the session's record.
enum Change {
    Level(LogLevel),
    Subscription(String, bool),
}

/// Writes a change into the session's record, when a store keeps it: a fault of the
/// store is the retryable -32603 (the change holds on this replica only until the
/// session is next loaded from its record, so the client is told to send it again);
/// a session that ended meanwhile is gone.
async fn record(session: &Session, change: Change) -> Result<(), Error> {
    let Some((id, store)) = session.recorded() else {
        return Ok(());
    };
    let written = match &change {
        Change::Level(level) => store.set_log_level(id, *level).await,
        Change::Subscription(uri, on) => store.subscribe(id, uri, *on).await,
    };
    match written {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::invalid_request(
            "Invalid Request: the session ended; send initialize for a new one",
        )),
        Err(fault) => {
            tracing::warn!("a legacy session's change could not be recorded: {fault}");
            Err(Error::retryable(
                "The session store is unavailable; try again",
            ))
        }
    }
}

/// `logging/setLevel`.
fn set_level(session: &Session, params: &RequestParams) -> Result<Change, Error> {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .and_then(LogLevel::parse)
        .ok_or_else(|| Error::invalid_params("logging/setLevel requires a valid level"))?;
    session.set_log_level(level);
    Ok(Change::Level(level))
}

/// `resources/subscribe` and `resources/unsubscribe`.
fn subscribe(session: &Session, params: &RequestParams, on: bool) -> Result<Change, Error> {
    let uri = match params.get("uri") {
        Some(Value::String(uri)) if crate::wire::uri::is_absolute_uri(uri) => uri,
        _ => {
            return Err(Error::invalid_params(
                "resources/subscribe and resources/unsubscribe require an absolute uri",
            ));
        }
    };
    if !session.subscribe(uri, on) {
        return Err(Error::invalid_params(format!(
            "a session may subscribe to at most {} resources",
            crate::subscriptions::MAX_RESOURCE_SUBSCRIPTIONS
        )));
    }
    Ok(Change::Subscription(uri.clone(), on))
}

/// What admission learnt that the request's span records: the protocol version. (The
/// trace context became the span's parent before admission, [`super::Core::serve`].)
fn record_trace_context(meta: &RequestMeta) {
    crate::observe::protocol_version(&super::request_span(), meta.protocol_version);
}

/// Serves a request in rounds: `run` runs the handler with a round's context; while the
/// handler asks for input it was not given, the session asks the client for every missing
/// input at once and the handler runs again with all the answers so far. `failed` makes
/// the answer to an ask that could not be made or answered (a tool error for `tools/call`,
/// an error for the others).
async fn rounds(
    session: &Session,
    sink: &Arc<dyn Outbound>,
    first: RequestContext,
    mut run: impl FnMut(RequestContext) -> Rest<Result<String, Error>>,
    failed: impl Fn(String) -> Result<String, Error>,
) -> Result<String, Error> {
    let mut ctx = first;
    for _ in 0..MAX_LEGACY_ROUNDS {
        let result = run(ctx.clone()).await;
        let outcome = match end_round(&ctx, result) {
            RoundEnd::Answer(answer) => return answer,
            RoundEnd::NeedsInput(outcome) => outcome,
        };
        if outcome.missing.is_empty() {
            tracing::error!("a handler demanded an input it never asked for");
            return Err(Error::internal());
        }
        let mut required = Map::new();
        for (_, _, needs) in &outcome.missing {
            if let Some(n) = needs {
                inputs::merge(&mut required, n);
            }
        }
        if !required.is_empty() {
            return failed(format!(
                "This needs client capabilities the session did not declare: {}",
                Value::Object(required)
            ));
        }
        let version = ctx.meta().protocol_version;
        let mut asks = Vec::with_capacity(outcome.missing.len());
        for (key, request, _) in &outcome.missing {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            match for_revision(version, &method, request.get("params").cloned()) {
                Ok(params) => asks.push((key.clone(), method, params)),
                Err(why) => return failed(why),
            }
        }
        let asks = asks.into_iter().map(|(key, method, params)| async move {
            let answer = session.ask(&**sink, &method, params).await;
            (key, method, answer)
        });
        let mut answers = ctx.inputs().all_answers();
        for (key, method, answer) in futures_util::future::join_all(asks).await {
            match answer {
                Ok(value) => {
                    answers.insert(key, value);
                }
                Err(AskFailure::Cancelled) => return Err(Error::internal()),
                Err(failure) => return failed(describe(&method, failure)),
            }
        }
        ctx = ctx.next_round(answers, outcome.carry);
    }
    tracing::error!("a handler kept asking for input past {MAX_LEGACY_ROUNDS} rounds");
    Err(Error::internal())
}

/// The params of a request to the client, as the session's revision defines them:
/// 2025-06-18 knows no elicitation `mode`, and its forms take only the field shapes it
/// defines ([`field_for_2025_06_18`]); 2025-11-25's URL elicitation carries an
/// `elicitationId`. `Err` says why a request cannot be put to the client at all.
fn for_revision(version: &str, method: &str, params: Option<Value>) -> Result<Value, String> {
    let mut params = params.unwrap_or_else(|| json!({}));
    if method == "elicitation/create"
        && let Value::Object(p) = &mut params
    {
        if version == "2025-06-18" {
            p.remove("mode");
            let fields = p
                .get_mut("requestedSchema")
                .and_then(|s| s.get_mut("properties"))
                .and_then(Value::as_object_mut);
            for (name, field) in fields.into_iter().flatten() {
                field_for_2025_06_18(field).map_err(|shape| {
                    format!(
                        "A 2025-06-18 client cannot be asked this form: field {name:?} is \
                         {shape}, which its revision does not define"
                    )
                })?;
            }
        } else if p.get("mode").and_then(Value::as_str) == Some("url") {
            let id = crate::mrtr::token::random_id(16).unwrap_or_default();
            p.insert("elicitationId".into(), Value::from(id));
        }
    }
    Ok(params)
}

/// Puts a form field in the shapes 2025-06-18 defines (string, number, boolean, or an
/// `enum` of strings with optional `enumNames`): a choice of titled strings (a `oneOf`
/// of `const` and `title`) becomes an `enum` with `enumNames`, the answer it takes
/// unchanged. `Err` names a shape that revision has no equivalent for.
fn field_for_2025_06_18(field: &mut Value) -> Result<(), &'static str> {
    let Value::Object(f) = field else {
        return Ok(());
    };
    if f.get("type").and_then(Value::as_str) == Some("array") {
        return Err("a multi-select");
    }
    let Some(Value::Array(alternatives)) = f.get("oneOf") else {
        return Ok(());
    };
    let mut values = Vec::with_capacity(alternatives.len());
    let mut titles = Vec::with_capacity(alternatives.len());
    for alternative in alternatives {
        let Some(value) = alternative.get("const").filter(|v| v.is_string()) else {
            return Err("a choice of other than strings");
        };
        values.push(value.clone());
        titles.push(alternative.get("title").unwrap_or(value).clone());
    }
    f.remove("oneOf");
    f.insert("type".into(), Value::from("string"));
    f.insert("enum".into(), Value::Array(values));
    f.insert("enumNames".into(), Value::Array(titles));
    Ok(())
}

/// What an ask that got no usable answer says.
fn describe(method: &str, failure: AskFailure) -> String {
    match failure {
        AskFailure::Busy => {
            format!("The server awaits too many answers from this client to send {method}")
        }
        AskFailure::Unsent => format!("The {method} request could not be sent to the client"),
        AskFailure::TimedOut => format!("The client did not answer the {method} request in time"),
        AskFailure::Cancelled => format!("The {method} request was cancelled"),
        AskFailure::Refused(error) => {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            format!("The client refused the {method} request: {message}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::field_for_2025_06_18;
    use serde_json::json;

    /// A titled choice becomes an `enum` with `enumNames` (a title missing: the value);
    /// the shapes 2025-06-18 has stay as they are; a multi-select, or a choice of other
    /// than string constants, has no shape there.
    #[test]
    fn form_fields_take_the_shapes_of_2025_06_18() {
        let mut titled = json!({"type": "string", "description": "d", "oneOf": [
            {"const": "a", "title": "A", "type": "string"}, {"const": "b"}]});
        field_for_2025_06_18(&mut titled).expect("a titled choice");
        assert_eq!(
            titled,
            json!({"type": "string", "description": "d", "enum": ["a", "b"],
                   "enumNames": ["A", "b"]})
        );
        for kept in [
            json!({"type": "string", "enum": ["a", "b"]}),
            json!({"type": "integer", "minimum": 1}),
            json!({"type": "boolean", "default": true}),
        ] {
            let mut field = kept.clone();
            field_for_2025_06_18(&mut field).expect("a shape of 2025-06-18");
            assert_eq!(field, kept);
        }
        let mut multi = json!({"type": "array", "items": {"type": "string", "enum": ["a"]}});
        assert_eq!(field_for_2025_06_18(&mut multi), Err("a multi-select"));
        let mut mixed = json!({"oneOf": [{"const": 1}, {"type": "string"}]});
        assert_eq!(
            field_for_2025_06_18(&mut mixed),
            Err("a choice of other than strings")
        );
    }
}
