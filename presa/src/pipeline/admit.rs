//! Admission: everything a request must pass before any user code runs, in the order
//! the references give the errors. Each step is a function of its own; [`Core::admit`]
//! runs them in order and makes the request's context.

use super::{Core, Transport, headers};
use crate::context::{ContextInit, Outbound, RequestContext};
use crate::error::Error;
use crate::extension::Extension;
use crate::mrtr::round::{Closing, Round, Spend};
use crate::mrtr::token::BindingText;
use crate::registry::Catalog;
use crate::registry::tool::ToolEntry;
use crate::wire::jsonrpc::{Request, RequestParams};
use crate::wire::meta::{self, RawMeta, RequestMeta, SUPPORTED_VERSIONS};
use crate::wire::methods as names;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// A request that passed admission, on its way to its handler.
pub(super) struct Admitted {
    pub(super) method: Cow<'static, str>,
    pub(super) params: RequestParams,
    pub(super) route: Route,
    /// The spending of a single-use request state, awaited before anything of the route
    /// runs; none when the request brings no such state.
    pub(super) spend: Option<Spend>,
}

/// Who answers an admitted request.
pub(super) enum Route {
    /// An extension that owns the method.
    Extension(Arc<dyn Extension>, RequestContext),
    /// A `tools/call`, which the server answers itself, started in place.
    Call {
        closing: Closing,
        /// The tool the call names, as admission found it in the catalog (`None`: no
        /// tool by that name, or no usable name).
        tool: Option<Arc<ToolEntry>>,
    },
    /// Any other method the server answers itself.
    Method {
        closing: Closing,
        /// Whether the request is a retry.
        retry: bool,
        /// The catalog as admission saw it.
        catalog: Arc<Catalog>,
    },
}

/// What the method gate found: who serves the method, and what of the catalog the rest
/// of the request needs.
struct Gate {
    extension: Option<Arc<dyn Extension>>,
    /// The catalog, kept for the methods the server answers other than `tools/call`.
    catalog: Option<Arc<Catalog>>,
    /// The tool a `tools/call` names, when it exists.
    tool: Option<Arc<ToolEntry>>,
}

impl Core {
    /// Admits a request: the `_meta` checks (with the HTTP version header where wire
    /// section 2 says), the trace context, the method gate, the HTTP mirror checks, the
    /// principal, the multi round-trip state, and the context the handler gets.
    pub(super) fn admit(
        self: &Arc<Self>,
        request: Request,
        transport: &Transport,
        outbound: Arc<dyn Outbound>,
        principal: Option<Arc<crate::auth::Principal>>,
    ) -> Result<Admitted, Error> {
        let Request {
            id,
            method,
            meta,
            params,
            lifted,
        } = request;
        let params = RequestParams::new(params, lifted);
        refuse_initialize(&method, &meta, &params)?;
        let mirrored = transport.headers().map(headers::Mirrored::scan);
        let meta = admit_meta(meta, mirrored.as_ref())?;
        record_trace_context(&meta);
        let gate = self.gate(&method, &params)?;
        if let Some(mirrored) = &mirrored {
            check_mirrors(mirrored, &method, &params, gate.extension.as_deref())?;
        }
        // The scopes every request needs; an item's own are checked where it is found,
        // before its handler runs.
        self.authorize(principal.as_deref(), &[])?;
        let principal_id = principal.as_deref().map(crate::auth::Principal::id);

        let mrtr = gate.extension.is_none() && names::MRTR.contains(&&*method);
        let round = if mrtr {
            self.seals.open(&method, &params, principal_id)?
        } else {
            Round::default()
        };
        // On HTTP, notifications of the methods that may end in -32021 are held until the
        // outcome is known, unless the tool streams them live (errata W-11).
        let hold = matches!(transport, Transport::Http(_))
            && mrtr
            && !gate
                .tool
                .as_ref()
                .is_some_and(|t| t.tool.live_notifications);
        // What a request state is bound to: written now, while the params are here, and
        // hashed only if the handler asks for input; not at all for a tool that cannot.
        // Extensions see every tool call with its context and may ask too, so the binding
        // is skipped only when none is installed.
        let may_ask =
            gate.tool.as_ref().is_none_or(|t| t.tool.asks_input) || !self.extensions.is_empty();
        let bound = (mrtr && may_ask).then(|| BindingText::new(&method, &params, principal_id));
        let ctx = RequestContext::new(ContextInit {
            id,
            method: method.clone(),
            meta,
            outbound,
            logging_enabled: self.config.logging,
            principal,
            host: Arc::clone(self) as Arc<dyn crate::context::Host>,
            answers: round.answers,
            carried: round.carried,
            hold,
            run: None,
        });
        let route = match (gate.extension, gate.catalog) {
            // A method an extension owns: the client must have declared the extension,
            // unless the extension says its method needs no declaration.
            (Some(extension), _) => {
                if extension.requires_declaration(&method)
                    && !crate::extension::declared(&ctx, extension.id())
                {
                    return Err(crate::extension::missing(extension.id()));
                }
                Route::Extension(extension, ctx)
            }
            (None, Some(catalog)) => Route::Method {
                closing: Closing { ctx, mrtr, bound },
                retry: round.retry,
                catalog,
            },
            (None, None) => Route::Call {
                closing: Closing { ctx, mrtr, bound },
                tool: gate.tool,
            },
        };
        Ok(Admitted {
            method,
            params,
            route,
            spend: round.spend,
        })
    }

    /// The method gate: unknown and removed methods, and methods whose capability is not
    /// advertised, are -32601. One look at the catalog, under its read lock (no user code
    /// runs while it is held), serves the whole request: the gate, the tool a
    /// `tools/call` names, and, kept, the catalog itself for the other methods the server
    /// answers (an extension's method needs none of it).
    fn gate(&self, method: &str, params: &RequestParams) -> Result<Gate, Error> {
        let extension = self.extension_for(method).cloned();
        let catalog = self.read_catalog();
        if extension.is_none() && (!names::SERVED.contains(&method) || !offered(&catalog, method)) {
            let error = Error::method_not_found(method);
            return Err(if method == "initialize" {
                error.with_data(serde_json::json!({ "supported": SUPPORTED_VERSIONS }))
            } else {
                error
            });
        }
        let tool = (method == "tools/call")
            .then(|| params.get("name").and_then(Value::as_str))
            .flatten()
            .and_then(|name| catalog.tools.get(name))
            .cloned();
        let kept = (extension.is_none() && method != "tools/call").then(|| Arc::clone(&*catalog));
        Ok(Gate {
            extension,
            catalog: kept,
            tool,
        })
    }
}

/// A 2025-era client opens with `initialize` carrying `params.protocolVersion` and no
/// 2026-07-28 protocol version in `_meta` (it may carry a `_meta` of its own, such as a
/// `progressToken`): it is told which versions this server speaks (errata W-13;
/// `basic/versioning.mdx` asks modern-only servers to name them in any error to
/// `initialize`). A modern client probing the removed method gets -32601 at the gate.
fn refuse_initialize(method: &str, meta: &RawMeta, params: &RequestParams) -> Result<(), Error> {
    if method == "initialize" && meta.protocol_version().is_none() {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return Err(Error::unsupported_version(requested, SUPPORTED_VERSIONS));
    }
    Ok(())
}

/// The `_meta` checks of wire section 2, with the HTTP version header checked against
/// the body's version where the transport has headers.
fn admit_meta(
    meta: RawMeta,
    mirrored: Option<&headers::Mirrored<'_>>,
) -> Result<RequestMeta, Error> {
    match mirrored {
        Some(h) => {
            let header_version = headers::version_present(h)?;
            let mirror = |body: &str| headers::version_matches(header_version, body);
            meta::admit_request(meta, Some(&mirror))
        }
        None => meta::admit_request(meta, None),
    }
}

/// What admission learnt that the request's span records: the protocol version. (The
/// trace context became the span's parent before admission, [`super::Core::serve`].)
fn record_trace_context(meta: &RequestMeta) {
    crate::observe::protocol_version(&super::request_span(), meta.protocol_version);
}

/// The HTTP mirror checks of `Mcp-Method` and `Mcp-Name` (wire sections 13.4 and 13.5).
/// When the body lacks the mirrored value, params validation reports it (-32602).
fn check_mirrors(
    mirrored: &headers::Mirrored<'_>,
    method: &str,
    params: &RequestParams,
    extension: Option<&dyn Extension>,
) -> Result<(), Error> {
    headers::method_matches(mirrored, method)?;
    let param = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => extension.and_then(|e| e.routing_param(method)),
    };
    if let Some(Value::String(name)) = param.and_then(|p| params.get(p)) {
        headers::name_matches(mirrored, name)?;
    }
    Ok(())
}

/// Whether the capability behind `method` is advertised now.
fn offered(catalog: &Catalog, method: &str) -> bool {
    match method {
        "tools/list" | "tools/call" => !catalog.tools.is_empty(),
        "prompts/list" | "prompts/get" => !catalog.prompts.is_empty(),
        "resources/list" | "resources/templates/list" | "resources/read" => {
            !catalog.resources.is_empty() || !catalog.templates.is_empty()
        }
        "completion/complete" => catalog.has_completions(),
        _ => true,
    }
}
