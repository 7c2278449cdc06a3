//! Extensions: protocol additions negotiated through `capabilities.extensions`, plugged
//! into the one pipeline through a few hooks rather than special cases. An extension can
//! own methods (gated by the client's declaration of the extension), mirror a param into
//! `Mcp-Name` on HTTP, take over `tools/call`, and add a filter to
//! `subscriptions/listen`, contribute resources to the catalog when the server is built,
//! and hold a handle on the server once it is (to change those resources later). The
//! Tasks extension (`presa::tasks`) and the Skills extension (`presa::skills`) are built
//! on these hooks.

use crate::context::RequestContext;
use crate::error::{BuildError, Error};
use crate::registry::BoxFuture;
use crate::registry::resource::Resource;
use crate::registry::tool::{Tool, ToolEntry};
use crate::shape::Shaper;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Weak};

/// A protocol extension.
pub trait Extension: Send + Sync + 'static {
    /// The extension's identifier, a prefixed `_meta`-style key such as
    /// `io.modelcontextprotocol/tasks`.
    fn id(&self) -> &'static str;

    /// The settings advertised under `capabilities.extensions` (default `{}`).
    fn settings(&self) -> Value {
        json!({})
    }

    /// The methods the extension serves. A request for one from a client that did not
    /// declare the extension is -32021.
    fn methods(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a request for `method` (one of [`Extension::methods`]) needs the client to
    /// have declared the extension (default true: -32021 without it). An extension whose
    /// methods a client may call once it has seen the server's declaration alone says
    /// false.
    fn requires_declaration(&self, _method: &str) -> bool {
        true
    }

    /// Resources the extension serves through the core (`resources/list`,
    /// `resources/read`, their scopes and caching), added to the catalog when the server
    /// is built, as registered ones are. An error refuses the build.
    fn resources(&self) -> Result<Vec<Resource>, BuildError> {
        Ok(Vec::new())
    }

    /// Whether the extension changes the server's resources while it runs (through
    /// [`Attached`]), so `resources.listChanged` is advertised and listeners may follow
    /// `notifications/resources/list_changed` (default false).
    fn changes_resources(&self) -> bool {
        false
    }

    /// Called once when the server is built, with a handle on it.
    fn attached(&self, _server: Attached) {}

    /// For an HTTP request of `method`, the param mirrored in `Mcp-Name` (for example
    /// `taskId`), if the extension defines one.
    fn routing_param(&self, _method: &str) -> Option<&'static str> {
        None
    }

    /// Serves one of [`Extension::methods`], after admission and the declaration check.
    fn handle(
        &self,
        method: &str,
        _params: Map<String, Value>,
        _ctx: RequestContext,
    ) -> BoxFuture<Result<Map<String, Value>, Error>> {
        let error = Error::method_not_found(method);
        Box::pin(async move { Err(error) })
    }

    /// Sees every `tools/call` after its arguments are validated, and may answer it
    /// itself instead of running the tool in the request.
    fn intercept_tool_call(&self, call: ToolInvocation) -> Result<Intercepted, Error> {
        Ok(Intercepted::Continue(call))
    }

    /// Reads this extension's part of a `subscriptions/listen` filter. Resolves to the
    /// accepted topics under a key of the acknowledged filter (such as `taskIds`), or
    /// `None` when the request asked for none. A future, so that checking a topic may
    /// look in a store.
    fn listen_filter(
        &self,
        _notifications: &Map<String, Value>,
        _ctx: &RequestContext,
    ) -> BoxFuture<Result<Option<ListenTopics>, Error>> {
        Box::pin(async { Ok(None) })
    }
}

/// The server an extension is installed in, as [`Extension::attached`] hands it over: a
/// weak handle (the server owns its extensions, so a strong one would keep it alive
/// forever). `Attached::server` (in `server.rs`) upgrades it while the server lives.
#[derive(Clone)]
pub struct Attached {
    pub(crate) host: Weak<dyn crate::context::Host>,
}

/// An extension's part of an acknowledged `subscriptions/listen` filter: its key (such
/// as `taskIds`) and the topics accepted under it.
pub type ListenTopics = (&'static str, Vec<String>);

/// What an extension made of a `tools/call`.
pub enum Intercepted {
    /// Run the tool in the request, as usual.
    Continue(ToolInvocation),
    /// Answer with this result instead (its `resultType` included).
    Result(Map<String, Value>),
    /// Answer with the result this future resolves to (for an answer that waits on I/O,
    /// such as a store).
    Later(BoxFuture<Result<Map<String, Value>, Error>>),
}

/// A validated `tools/call`, ready to run.
pub struct ToolInvocation {
    pub(crate) entry: Arc<ToolEntry>,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) params: Map<String, Value>,
    pub(crate) ctx: RequestContext,
    pub(crate) shaper: Shaper,
}

impl ToolInvocation {
    /// The tool.
    pub fn tool(&self) -> &Tool {
        &self.entry.tool
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }

    /// The request's params as sent.
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The request context.
    pub fn ctx(&self) -> &RequestContext {
        &self.ctx
    }

    /// Runs the tool with `ctx` (the request's own context, or a detached one), checking
    /// its result as a call in the request is checked, and returns the shaped result.
    pub fn run_with(&self, ctx: RequestContext) -> BoxFuture<Result<Map<String, Value>, Error>> {
        let entry = Arc::clone(&self.entry);
        let arguments = self.arguments.clone();
        let shaper = self.shaper.clone();
        Box::pin(async move {
            let result = entry.check(entry.start(arguments, ctx).await)?;
            match serde_json::to_value(result.into_result()) {
                Ok(Value::Object(m)) => Ok(shaper.complete_map(m)),
                _ => Err(Error::internal()),
            }
        })
    }
}

/// Whether the request declared extension `id` in its client capabilities.
pub fn declared(ctx: &RequestContext, id: &str) -> bool {
    ctx.client_capabilities()
        .get("extensions")
        .and_then(|e| e.get(id))
        .is_some_and(Value::is_object)
}

/// The -32021 for a request that needs extension `id` without declaring it.
pub fn missing(id: &str) -> Error {
    let mut ext = Map::new();
    ext.insert(id.to_owned(), json!({}));
    Error::missing_client_capability(json!({ "extensions": ext }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestClient;
    use crate::{Implementation, Server};
    use std::sync::Mutex;

    /// An extension with one method, a contributed resource, and a record of the handle
    /// it was given.
    struct Probe {
        declared: bool,
        resource: Option<&'static str>,
        attached: Arc<Mutex<Option<Attached>>>,
    }

    impl Extension for Probe {
        fn id(&self) -> &'static str {
            "example.com/probe"
        }
        fn methods(&self) -> &'static [&'static str] {
            &["probe/ping"]
        }
        fn requires_declaration(&self, _method: &str) -> bool {
            self.declared
        }
        fn handle(
            &self,
            _method: &str,
            _params: Map<String, Value>,
            _ctx: RequestContext,
        ) -> BoxFuture<Result<Map<String, Value>, Error>> {
            Box::pin(async { Ok(Map::new()) })
        }
        fn resources(&self) -> Result<Vec<Resource>, BuildError> {
            match self.resource {
                Some("bad") => Err(BuildError::new("the probe's resources are invalid")),
                Some(uri) => Ok(vec![Resource::new(uri, "probe").handler(|_| async { "x" })]),
                None => Ok(Vec::new()),
            }
        }
        fn attached(&self, server: Attached) {
            *self.attached.lock().expect("not poisoned") = Some(server);
        }
    }

    fn build(
        declared: bool,
        resource: Option<&'static str>,
    ) -> (Server, Arc<Mutex<Option<Attached>>>) {
        let attached = Arc::new(Mutex::new(None));
        let probe = Probe {
            declared,
            resource,
            attached: Arc::clone(&attached),
        };
        let server = Server::builder(Implementation::new("t", "1"))
            .extension(probe)
            .build()
            .expect("a valid server");
        (server, attached)
    }

    #[tokio::test]
    async fn a_method_needs_the_declaration_unless_the_extension_says_not() {
        let (server, _) = build(true, None);
        let r = TestClient::new(&server)
            .request("probe/ping", json!({}))
            .await;
        assert_eq!(r.error().map(|e| e["code"].clone()), Some(json!(-32021)));
        let declared = TestClient::new(&server)
            .with_capabilities(json!({"extensions": {"example.com/probe": {}}}));
        assert_eq!(
            declared.request("probe/ping", json!({})).await.result()["resultType"],
            "complete"
        );
        let (server, _) = build(false, None);
        let r = TestClient::new(&server)
            .request("probe/ping", json!({}))
            .await;
        assert_eq!(r.result()["resultType"], "complete");
    }

    #[tokio::test]
    async fn contributed_resources_are_served_by_the_core() {
        let (server, _) = build(true, Some("probe://one"));
        let client = TestClient::new(&server);
        let listed = client.request("resources/list", json!({})).await;
        assert_eq!(listed.result()["resources"][0]["uri"], "probe://one");
        let read = client
            .request("resources/read", json!({"uri": "probe://one"}))
            .await;
        assert_eq!(read.result()["contents"][0]["text"], "x");
        let error = Server::builder(Implementation::new("t", "1"))
            .extension(Probe {
                declared: true,
                resource: Some("bad"),
                attached: Arc::default(),
            })
            .build()
            .err()
            .expect("refused");
        assert!(
            error
                .to_string()
                .contains("the probe's resources are invalid")
        );
    }

    #[tokio::test]
    async fn the_attached_handle_lives_as_long_as_the_server() {
        let (server, attached) = build(true, None);
        let handle = attached
            .lock()
            .expect("not poisoned")
            .clone()
            .expect("attached at build");
        let again = handle.server().expect("the server is alive");
        again
            .replace_resources(
                &[],
                vec![Resource::new("probe://late", "late").handler(|_| async { "y" })],
            )
            .expect("replaced");
        assert_eq!(server.core.catalog().resources.iter().count(), 1);
        drop(again);
        drop(server);
        assert!(
            handle.server().is_none(),
            "a weak handle does not keep the server alive"
        );
    }
}
