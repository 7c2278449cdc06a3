//! The server-wide settings the pipeline serves by.

use crate::wire::types::CachePolicy;

/// The lists whose caching hints can be set with [`ServerBuilder::cache`](crate::ServerBuilder::cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cacheable {
    /// `server/discover`.
    Discover,
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `resources/read`, for resources that set no policy of their own.
    ResourceRead,
}

/// Server-wide settings. Every field has a documented default.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Items per page of every list (default 100).
    pub page_size: usize,
    /// Caching hints of `server/discover` (default: ttl 0, private).
    pub discover_cache: CachePolicy,
    /// Caching hints of `tools/list` (default: ttl 0, private).
    pub tools_cache: CachePolicy,
    /// Caching hints of `prompts/list` (default: ttl 0, private).
    pub prompts_cache: CachePolicy,
    /// Caching hints of `resources/list` (default: ttl 0, private).
    pub resources_cache: CachePolicy,
    /// Caching hints of `resources/templates/list` (default: ttl 0, private).
    pub templates_cache: CachePolicy,
    /// Caching hints of `resources/read` for resources without their own (default: ttl
    /// 0, private).
    pub read_cache: CachePolicy,
    /// Whether results carry `_meta.io.modelcontextprotocol/serverInfo` (default true).
    pub server_info_in_results: bool,
    /// Whether the server offers logging (`notifications/message`, deprecated in
    /// 2026-07-28) and advertises the `logging` capability (default true).
    pub logging: bool,
    /// Natural-language instructions for `server/discover`.
    pub instructions: Option<String>,
    /// Whether the application publishes resource events
    /// ([`Server::notify_resource_updated`](crate::Server::notify_resource_updated),
    /// [`Server::notify_resources_list_changed`](crate::Server::notify_resources_list_changed)),
    /// so `resources.listChanged` and `resources.subscribe` are advertised (default
    /// false).
    pub resource_notifications: bool,
    /// The URI clients reach the server by, when configured
    /// ([`ServerBuilder::canonical_uri`](crate::ServerBuilder::canonical_uri)).
    pub canonical_uri: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            page_size: 100,
            discover_cache: CachePolicy::NONE,
            tools_cache: CachePolicy::NONE,
            prompts_cache: CachePolicy::NONE,
            resources_cache: CachePolicy::NONE,
            templates_cache: CachePolicy::NONE,
            read_cache: CachePolicy::NONE,
            server_info_in_results: true,
            logging: true,
            instructions: None,
            resource_notifications: false,
            canonical_uri: None,
        }
    }
}
