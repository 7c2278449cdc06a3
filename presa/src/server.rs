//! The server: the cheap handle users hold ([`Server`], a shared [`Core`]) and the
//! builder that checks every registration and makes the core. The transports serve a
//! `Server`; handlers reach it through their context.

use crate::context::RequestContext;
use crate::context::state::StateMap;
use crate::error::BuildError;
use crate::extension::{Attached, Extension, ToolInvocation};
use crate::extract::StateRequirement;
use crate::mrtr::round::Seals;
use crate::pipeline::config::{Cacheable, Config};
use crate::pipeline::{Core, Parts, PrincipalFn};
use crate::registry::Catalog;
use crate::registry::linked::Registered;
use crate::registry::prompt::Prompt;
use crate::registry::resource::{Resource, ResourceTemplate};
use crate::registry::tool::Tool;
use crate::session::SessionConfig;
use crate::subscriptions::{Event, Fanout, Outgoing, SubscriptionConfig};
use crate::wire::types::{CachePolicy, Implementation};
use std::any::Any;
use std::sync::Arc;

/// An item declared with `#[tool]`, `#[prompt]` or `#[resource]`: the attribute
/// implements this on a type named like the function, so `.add::<my_tool>()` adds it.
pub trait Item {
    /// Adds the item to a builder.
    fn add_to(builder: ServerBuilder) -> ServerBuilder;
}

/// An MCP server. Cheap to clone: clones share the catalog and state.
///
/// Build one with [`Server::builder`] or, to name it after the calling crate, with the
/// [`server!`](crate::server!) macro.
#[derive(Clone)]
pub struct Server {
    pub(crate) core: Arc<Core>,
}

/// Builds a [`Server`].
#[must_use]
pub struct ServerBuilder {
    extensions: Vec<Arc<dyn Extension>>,
    keys: Option<crate::mrtr::Keyring>,
    replay: Option<Arc<dyn crate::mrtr::ReplayStore>>,
    state_ttl: std::time::Duration,
    principal: Option<Arc<PrincipalFn>>,
    authorization: Option<crate::auth::Authorization>,
    legacy: bool,
    sessions: SessionConfig,
    session_store: Option<Arc<dyn crate::session::SessionStore>>,
    subscriptions: SubscriptionConfig,
    fanout: Option<Arc<dyn Fanout>>,
    info: Implementation,
    config: Config,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    state: StateMap,
}

/// Starts a [`ServerBuilder`] named after the crate that calls it (its
/// `CARGO_PKG_NAME` and `CARGO_PKG_VERSION`), never after presa.
///
/// ```
/// let server = presa::server!().build().expect("a valid server");
/// # let _ = server;
/// ```
#[macro_export]
macro_rules! server {
    () => {
        $crate::Server::builder($crate::Implementation::new(
            ::core::env!("CARGO_PKG_NAME"),
            ::core::env!("CARGO_PKG_VERSION"),
        ))
    };
}

impl Server {
    /// Starts a builder holding every item declared with an attribute in the program
    /// (see [`ServerBuilder::registered`]).
    pub fn from_registry(info: Implementation) -> ServerBuilder {
        Server::builder(info).registered()
    }

    /// Starts a builder for a server identifying itself as `info`.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            extensions: Vec::new(),
            keys: None,
            replay: None,
            state_ttl: crate::mrtr::token::DEFAULT_TTL,
            principal: None,
            authorization: None,
            legacy: true,
            sessions: SessionConfig::default(),
            session_store: None,
            subscriptions: SubscriptionConfig::default(),
            fanout: None,
            info,
            config: Config::default(),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            state: StateMap::default(),
        }
    }

    /// The server's identity.
    pub fn info(&self) -> &Implementation {
        &self.core.info
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.core.config
    }

    /// Applies a change to the catalog (see [`Core::update_catalog`]).
    fn update(
        &self,
        f: impl FnOnce(&mut Catalog) -> Result<bool, BuildError>,
    ) -> Result<bool, BuildError> {
        self.core.update_catalog(f)
    }

    /// Adds a tool while the server runs (listeners get `tools/list_changed`). A tool
    /// with the same name is refused.
    pub fn add_tool(&self, tool: Tool) -> Result<(), BuildError> {
        let entry = tool.compile()?;
        self.update(|c| {
            c.tools
                .insert(entry, "tool")
                .map(|_| true)
                .map_err(BuildError::new)
        })?;
        self.publish(Event::ToolsListChanged);
        Ok(())
    }

    /// Removes a tool by name; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.update(|c| Ok(c.tools.remove(name))).unwrap_or(false);
        if removed {
            self.publish(Event::ToolsListChanged);
        }
        removed
    }

    /// Adds a prompt while the server runs (listeners get `prompts/list_changed`). A
    /// prompt with the same name is refused.
    pub fn add_prompt(&self, prompt: Prompt) -> Result<(), BuildError> {
        let entry = prompt.compile()?;
        self.update(|c| {
            c.prompts
                .insert(entry, "prompt")
                .map(|_| true)
                .map_err(BuildError::new)
        })?;
        self.publish(Event::PromptsListChanged);
        Ok(())
    }

    /// Removes a prompt by name; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.update(|c| Ok(c.prompts.remove(name))).unwrap_or(false);
        if removed {
            self.publish(Event::PromptsListChanged);
        }
        removed
    }

    /// Adds a resource while the server runs (listeners get `resources/list_changed`).
    /// A resource with the same URI is refused.
    pub fn add_resource(&self, resource: Resource) -> Result<(), BuildError> {
        let entry = resource.compile()?;
        self.update(|c| {
            c.resources
                .insert(entry, "resource")
                .map(|_| true)
                .map_err(BuildError::new)
        })?;
        self.publish(Event::ResourcesListChanged);
        Ok(())
    }

    /// Removes a resource by URI; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self
            .update(|c| Ok(c.resources.remove(uri)))
            .unwrap_or(false);
        if removed {
            self.publish(Event::ResourcesListChanged);
        }
        removed
    }

    /// Replaces resources while the server runs, at once: those at the URIs `remove`
    /// go, `add` come (listeners get one `resources/list_changed`). On an error (an
    /// invalid resource, a URI already served) nothing changes.
    pub fn replace_resources(
        &self,
        remove: &[String],
        add: Vec<Resource>,
    ) -> Result<(), BuildError> {
        let entries = add
            .into_iter()
            .map(Resource::compile)
            .collect::<Result<Vec<_>, _>>()?;
        self.update(|c| {
            let mut changed = false;
            for uri in remove {
                changed |= c.resources.remove(uri);
            }
            for entry in entries {
                c.resources
                    .insert(entry, "resource")
                    .map_err(BuildError::new)?;
                changed = true;
            }
            Ok(changed)
        })?;
        self.publish(Event::ResourcesListChanged);
        Ok(())
    }

    /// Tells listeners subscribed to `uri` (or to a resource it is part of) that it
    /// changed (`notifications/resources/updated`). Turn on
    /// [`ServerBuilder::resource_notifications`] so clients can subscribe.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.publish(Event::ResourceUpdated(uri.to_owned()));
    }

    /// Tells listeners that the list of resources changed
    /// (`notifications/resources/list_changed`), for resources that come from your
    /// application rather than [`Server::add_resource`].
    pub fn notify_resources_list_changed(&self) {
        self.publish(Event::ResourcesListChanged);
    }

    /// Ends every open subscription stream gracefully (the transports do this when they
    /// shut down).
    pub fn close_streams(&self) {
        self.core.hub.close();
    }

    /// The number of open subscription streams.
    pub fn open_streams(&self) -> usize {
        self.core.hub.open_streams()
    }

    pub(crate) fn publish(&self, event: Event) {
        self.core.publish(&event);
    }

    /// The installed extensions.
    pub fn extensions(&self) -> impl Iterator<Item = &dyn Extension> {
        self.core.extensions.iter().map(|e| &**e)
    }

    /// The names of the tools offered now, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.core
            .catalog()
            .tools
            .iter()
            .map(|t| t.tool.name.clone())
            .collect()
    }
}

impl Registered {
    /// Adds the item to a builder.
    pub fn add_to(self, builder: ServerBuilder) -> ServerBuilder {
        match self {
            Registered::Tool(t) => builder.tool(t),
            Registered::Prompt(p) => builder.prompt(p),
            Registered::Resource(r) => builder.resource(r),
            Registered::Template(t) => builder.resource_template(t),
        }
    }
}

/// What `basic/versioning.mdx` requires of the extensions a server advertises: an
/// identifier that follows the `_meta` key syntax with a mandatory prefix
/// (`vendor.example/name`), each once, and settings that are a JSON object (the schema's
/// `ServerCapabilities.extensions`). A client declares the extension by that identifier,
/// so one that breaks the syntax could never be declared.
fn check_extensions(extensions: &[Arc<dyn Extension>]) -> Result<(), BuildError> {
    let mut seen = std::collections::HashSet::new();
    for e in extensions {
        let id = e.id();
        if !(crate::wire::meta::is_valid_meta_key(id) && crate::wire::meta::has_prefix(id)) {
            return Err(BuildError::new(format!(
                "extension {id:?}: an extension identifier is a prefixed `_meta` key such as `vendor.example/name`"
            )));
        }
        if !seen.insert(id) {
            return Err(BuildError::new(format!(
                "extension {id:?} is installed twice"
            )));
        }
        if !e.settings().is_object() {
            return Err(BuildError::new(format!(
                "extension {id:?}: its settings must be a JSON object"
            )));
        }
    }
    Ok(())
}

/// A canonical URI is an absolute `https` or `http` URI with a host, no user information
/// and no fragment (RFC 8707's resource indicator, which authorization uses too).
fn check_canonical_uri(uri: &str) -> Result<(), BuildError> {
    let fail = |why: &str| BuildError::new(format!("canonical URI {uri:?}: {why}"));
    crate::wire::uri::uri_characters(uri).map_err(|e| fail(&e))?;
    let rest = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
        .ok_or_else(|| fail("it must be an https (or http) URI"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err(fail("it has no host"));
    }
    if authority.contains('@') {
        return Err(fail("it must not carry user information"));
    }
    if uri.contains('#') {
        return Err(fail("it must not have a fragment"));
    }
    Ok(())
}

impl ServerBuilder {
    /// Registers a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a prompt.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Registers a resource.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Gives handlers shared state of type `T` (see
    /// [`RequestContext::state`](crate::RequestContext::state)).
    pub fn state<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Sets the instructions sent in `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.config.instructions = Some(text.into());
        self
    }

    /// Sets the page size of every list (at least 1).
    pub fn page_size(mut self, size: usize) -> Self {
        self.config.page_size = size.max(1);
        self
    }

    /// Sets the caching hints of one cacheable result.
    pub fn cache(mut self, what: Cacheable, policy: CachePolicy) -> Self {
        let slot = match what {
            Cacheable::Discover => &mut self.config.discover_cache,
            Cacheable::Tools => &mut self.config.tools_cache,
            Cacheable::Prompts => &mut self.config.prompts_cache,
            Cacheable::Resources => &mut self.config.resources_cache,
            Cacheable::ResourceTemplates => &mut self.config.templates_cache,
            Cacheable::ResourceRead => &mut self.config.read_cache,
        };
        *slot = policy;
        self
    }

    /// Whether results carry `serverInfo` in `_meta` (default true; the specification
    /// allows a server to be configured not to).
    pub fn server_info_in_results(mut self, on: bool) -> Self {
        self.config.server_info_in_results = on;
        self
    }

    /// Installs an extension (such as [`crate::tasks::Tasks`]); it is advertised in
    /// `server/discover` under `capabilities.extensions`.
    pub fn extension(mut self, extension: impl Extension) -> Self {
        self.extensions.push(Arc::new(extension));
        self
    }

    /// Sets the keys that sign request state (the first signs, all verify). Without this,
    /// the keys come from `PRESA_STATE_KEYS` (`id:base64key,…`), else a random key per
    /// process, with a warning: replicas behind one load balancer must share a key.
    pub fn state_keys(mut self, keys: crate::mrtr::Keyring) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Sets how long request state stays valid (default 300 s, at most 900 s).
    pub fn state_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.state_ttl = ttl.min(crate::mrtr::token::MAX_TTL);
        self
    }

    /// Sets where single-use request states are remembered (in memory by default). With
    /// several replicas, give each the same shared store (`.replay_store(pg.clone())`
    /// with a `PgStore`), so a state spent on one replica is refused on all.
    pub fn replay_store(mut self, store: impl crate::mrtr::ReplayStore) -> Self {
        self.replay = Some(Arc::new(store));
        self
    }

    /// Sets how a request's principal is derived when no verified token gave it one: from
    /// its HTTP headers (a reverse proxy that authenticated the caller and says who it
    /// is), or, over stdio and in process, with no headers (`None`): there, credentials
    /// come from the environment, so the function returns the process's user, read from
    /// it, with the scopes that user holds. Return a [`Principal`](crate::Principal), or
    /// a `String` for one without scopes. Request state is bound to it and tasks are
    /// scoped by it.
    pub fn principal<P: Into<crate::Principal>>(
        mut self,
        f: impl Fn(Option<&axum::http::HeaderMap>) -> Option<P> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Some(Arc::new(move |headers| f(headers).map(Into::into)));
        self
    }

    /// Makes the server an OAuth 2.1 resource server over Streamable HTTP: every request
    /// needs a bearer token the [`Authorization`](crate::Authorization)'s verifier accepts
    /// and that names the server's [canonical URI](ServerBuilder::canonical_uri) (needed,
    /// checked when the server is built) as its audience; the protected resource metadata
    /// is served; refusals carry the challenges the specification describes. Over stdio
    /// there is no token: the [principal function](ServerBuilder::principal) says who
    /// the process acts for.
    pub fn authorization(mut self, authorization: crate::Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }

    /// Declares that the application publishes resource events, so `resources.subscribe`
    /// and `resources.listChanged` are advertised (default false).
    pub fn resource_notifications(mut self, on: bool) -> Self {
        self.config.resource_notifications = on;
        self
    }

    /// Sets the server's canonical URI: the `https` (or, for local development, `http`)
    /// URI its clients reach it by, such as `https://mcp.example.com/mcp`. Request state is
    /// bound to it, so two deployments that share a name and a key still refuse each
    /// other's state. Checked when the server is built.
    pub fn canonical_uri(mut self, uri: impl Into<String>) -> Self {
        self.config.canonical_uri = Some(uri.into());
        self
    }

    /// Whether clients of the earlier revisions, which open with `initialize` (2025-11-25
    /// and 2025-06-18), are served (default true). Off, such a client is told which
    /// versions this server speaks (-32022) and nothing else.
    pub fn legacy_clients(mut self, on: bool) -> Self {
        self.legacy = on;
        self
    }

    /// Sets how legacy sessions wait for their clients' answers (see [`SessionConfig`]).
    pub fn sessions(mut self, config: SessionConfig) -> Self {
        self.sessions = config;
        self
    }

    /// Sets the bounds on `subscriptions/listen` streams that hold over every
    /// transport: how many one principal, and all anonymous callers together, may hold
    /// open, and how long a stream may live (see [`SubscriptionConfig`]).
    pub fn subscriptions(mut self, config: SubscriptionConfig) -> Self {
        self.subscriptions = config;
        self
    }

    /// Keeps the records of legacy sessions (clients that open with `initialize`) in
    /// `store`, so that every replica given the same store serves every session: a
    /// request may land on any of them (see [`SessionStore`](crate::session::SessionStore)).
    /// Without one, a session lives in the process that made it. Give the replicas a
    /// fan-out too ([`ServerBuilder::fanout`]), so that a session's list changes and
    /// resource updates reach its stream wherever it is open.
    pub fn session_store(mut self, store: impl crate::session::SessionStore) -> Self {
        self.session_store = Some(Arc::new(store));
        self
    }

    /// Shares the server's list changes and resource updates with the other replicas of
    /// it that share `fanout` (such as a `PgStore::fanout` on one database): every
    /// `notifications/*/list_changed` and `notifications/resources/updated` published on
    /// any replica reaches the matching `subscriptions/listen` streams and legacy
    /// sessions of all, in the order each replica published them. A gap in that order
    /// (a message lost, a connection to the fan-out made again) reaches them as every
    /// list change, so clients re-read their lists. Tasks' status notifications travel
    /// through the task store instead. See [`Fanout`].
    ///
    /// The relay of the other replicas' events starts when the server is built within a
    /// Tokio runtime, or else when it starts serving.
    pub fn fanout(mut self, fanout: impl Fanout) -> Self {
        self.fanout = Some(Arc::new(fanout));
        self
    }

    /// Whether the server offers (deprecated) logging to clients (default true).
    pub fn logging(mut self, on: bool) -> Self {
        self.config.logging = on;
        self
    }

    /// Adds every item declared with `#[tool]`, `#[prompt]` or `#[resource]` anywhere in
    /// the program (the linked crates included).
    pub fn registered(mut self) -> Self {
        for registration in crate::registry::linked::REGISTRY {
            self = (registration.make)().add_to(self);
        }
        self
    }

    /// Adds one item declared with an attribute, by its function's name:
    /// `.add::<my_tool>()`. For tests and for binaries that pick their items.
    pub fn add<T: Item>(self) -> Self {
        T::add_to(self)
    }

    /// Checks every registration and builds the server. Invalid schemas, bad names or
    /// header annotations, duplicates (naming both places), and handlers needing state
    /// the builder was not given are refused here, with the item named.
    pub fn build(self) -> Result<Server, BuildError> {
        let missing = |what: &str, name: &str, states: &[StateRequirement]| {
            states
                .iter()
                .find(|s| !self.state.contains(s.type_id))
                .map(|s| {
                    BuildError::new(format!(
                        "{what} {name:?} needs state of type `{}` (a `State<{}>` parameter), but the server was not given one: add `.state(…)` to the builder",
                        s.type_name, s.type_name
                    ))
                })
        };
        let checks = self
            .tools
            .iter()
            .map(|t| missing("tool", &t.name, &t.states))
            .chain(
                self.prompts
                    .iter()
                    .map(|p| missing("prompt", &p.name, &p.states)),
            )
            .chain(
                self.resources
                    .iter()
                    .map(|r| missing("resource", &r.uri, &r.states)),
            )
            .chain(
                self.templates
                    .iter()
                    .map(|t| missing("resource template", &t.template, &t.states)),
            );
        if let Some(error) = checks.flatten().next() {
            return Err(error);
        }
        crate::registry::check_icons(&self.info.icons)
            .map_err(|e| BuildError::new(format!("server info: {e}")))?;
        if let Some(uri) = &self.config.canonical_uri {
            check_canonical_uri(uri)?;
        }
        check_extensions(&self.extensions)?;
        let mut resources = self.resources;
        for extension in &self.extensions {
            resources.extend(extension.resources()?);
        }
        let mut catalog = Catalog::default();
        for t in self.tools {
            catalog
                .tools
                .insert(t.compile()?, "tool")
                .map_err(BuildError::new)?;
        }
        for p in self.prompts {
            catalog
                .prompts
                .insert(p.compile()?, "prompt")
                .map_err(BuildError::new)?;
        }
        for r in resources {
            catalog
                .resources
                .insert(r.compile()?, "resource")
                .map_err(BuildError::new)?;
        }
        for t in self.templates {
            catalog
                .templates
                .insert(t.compile()?, "resource template")
                .map_err(BuildError::new)?;
        }
        let keys = match self.keys {
            Some(k) => k,
            None => match crate::mrtr::Keyring::from_env() {
                Some(Ok(k)) => k,
                Some(Err(e)) => return Err(BuildError::new(e)),
                None => {
                    tracing::warn!(
                        "no request-state key configured (ServerBuilder::state_keys or PRESA_STATE_KEYS): using a random key for this process; replicas serving the same clients must share a key"
                    );
                    crate::mrtr::Keyring::random().ok_or_else(|| {
                        BuildError::new(
                            "no OS randomness for a request-state key: configure one with ServerBuilder::state_keys or PRESA_STATE_KEYS",
                        )
                    })?
                }
            },
        };
        // Request state sealed by one server is refused by another: the audience is the
        // server's name, and its canonical URI when it has one (two services that share a
        // name and a key still refuse each other's state).
        let audience = match &self.config.canonical_uri {
            Some(uri) => format!("{}\n{uri}", self.info.name),
            None => self.info.name.clone(),
        };
        let auth = match self.authorization {
            Some(a) => Some(Arc::new(a.guard(self.config.canonical_uri.as_deref())?)),
            None => None,
        };
        let fanout = match self.fanout {
            Some(fanout) => {
                // Unique to this server instance, so its own events coming back through
                // the fan-out are told from other replicas'.
                let origin = crate::mrtr::token::random_id(16).ok_or_else(|| {
                    BuildError::new("no OS randomness for the fan-out's origin id")
                })?;
                Some(Outgoing::new(fanout, origin))
            }
            None => None,
        };
        let core = Core::new(Parts {
            auth,
            info: self.info,
            config: self.config,
            catalog,
            extensions: self.extensions,
            seals: Seals {
                keys,
                replay: self
                    .replay
                    .unwrap_or_else(|| Arc::new(crate::mrtr::MemoryReplayStore::default())),
                ttl: self.state_ttl,
                audience,
            },
            principal: self.principal,
            state: self.state,
            legacy: self.legacy,
            sessions: self.sessions,
            session_store: self.session_store,
            subscriptions: self.subscriptions,
            fanout,
        })
        .map_err(BuildError::new)?;
        let core = Arc::new(core);
        core.start_fanout();
        for extension in &core.extensions {
            let host: std::sync::Weak<dyn crate::context::Host> =
                Arc::downgrade(&core) as std::sync::Weak<Core>;
            extension.attached(Attached { host });
        }
        Ok(Server { core })
    }
}

impl Attached {
    /// The server, while it lives (`None` once every handle on it is dropped).
    pub fn server(&self) -> Option<Server> {
        let host: Arc<dyn Any + Send + Sync> = self.host.upgrade()?;
        host.downcast::<Core>().ok().map(|core| Server { core })
    }
}

impl RequestContext {
    /// The server serving this request (to add or remove tools and prompts, or publish
    /// resource events, from a handler).
    pub fn server(&self) -> Server {
        let host: Arc<dyn std::any::Any + Send + Sync> = Arc::clone(self.host()) as _;
        match host.downcast::<Core>() {
            Ok(core) => Server { core },
            // Every context is made by the pipeline (or by an extension, from the
            // context it was handed), whose host is its core.
            Err(_) => unreachable!("a request context's host is the serving core"),
        }
    }
}

impl RequestContext {
    /// Whether the request's principal holds `scopes` (besides those every request
    /// needs), checked as an item's own scopes are, before its handler runs: the refusal
    /// names every scope needed, with the challenge when the server has authorization.
    /// For extensions and handlers guarding what they serve themselves.
    pub fn authorize(&self, scopes: &[String]) -> Result<(), crate::Error> {
        self.server().core.authorize(self.principal(), scopes)
    }
}

impl ToolInvocation {
    /// The server serving the call.
    pub fn server(&self) -> Server {
        self.ctx().server()
    }
}

#[cfg(feature = "tasks")]
impl Server {
    /// A call of the tool `name` with `arguments`, as the pipeline hands one to an
    /// extension, for work run away from any request (a task run again on this replica
    /// from its stored work); `ctx` is made with [`host`](Self::host). `None` when this
    /// server has no tool of that name.
    pub(crate) fn invocation(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        ctx: RequestContext,
    ) -> Option<ToolInvocation> {
        let entry = Arc::clone(self.core.catalog().tools.get(name)?);
        let mut params = serde_json::Map::new();
        params.insert("name".into(), name.into());
        params.insert("arguments".into(), arguments.clone().into());
        Some(ToolInvocation {
            entry,
            arguments,
            params,
            ctx,
            shaper: self.core.shaper.clone(),
        })
    }

    /// Whether this server has a tool named `name` now.
    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.core.catalog().tools.get(name).is_some()
    }

    /// What a context made away from any request is served by.
    pub(crate) fn host(&self) -> Arc<dyn crate::context::Host> {
        Arc::clone(&self.core) as Arc<dyn crate::context::Host>
    }
}
