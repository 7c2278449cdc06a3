//! Typed shapes of the 2026-07-28 schema that a server reads or writes: implementations,
//! icons, annotations, content blocks, resource contents, prompt messages, capabilities and
//! the results of each method.
//!
//! Unknown members are tolerated on input; optional members are omitted on output rather
//! than written as `null`.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A name and version identifying an implementation (`serverInfo`, `clientInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the implementation does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for user interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The implementation's web site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: Vec::new(),
            website_url: None,
        }
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// An icon a client may display. Its `src` must be an `https:` or `data:` URI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// The icon's URI (`https:` or `data:`).
    pub src: String,
    /// The MIME type, e.g. `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `48x48` or `any`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `light` or `dark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.mime_type = Some(mime.into());
        self
    }

    /// Adds a size.
    pub fn size(mut self, size: impl Into<String>) -> Self {
        self.sizes.push(size.into());
        self
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if !presa_rules::uri::is_icon_scheme(&self.src) {
            return Err(format!(
                "icon src {:?} must be an https: or data: URI",
                self.src
            ));
        }
        crate::wire::uri::uri_characters(&self.src).map_err(|e| format!("icon src: {e}"))?;
        match self.theme.as_deref() {
            None | Some("light" | "dark") => Ok(()),
            Some(other) => Err(format!(
                "icon theme {other:?} must be \"light\" or \"dark\""
            )),
        }
    }
}

/// Who a content item is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Annotations on content and resources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Intended audience.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    /// Importance from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// What the schema requires of registered annotations: a finite `priority` from 0 to
    /// 1.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self.priority {
            Some(p) if !(0.0..=1.0).contains(&p) => Err(format!(
                "annotation priority {p} must be a number from 0 to 1"
            )),
            _ => Ok(()),
        }
    }
}

/// Hints describing a tool's behaviour.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets `readOnlyHint`.
    pub fn read_only(mut self, v: bool) -> Self {
        self.read_only_hint = Some(v);
        self
    }
    /// Sets `destructiveHint`.
    pub fn destructive(mut self, v: bool) -> Self {
        self.destructive_hint = Some(v);
        self
    }
    /// Sets `idempotentHint`.
    pub fn idempotent(mut self, v: bool) -> Self {
        self.idempotent_hint = Some(v);
        self
    }
    /// Sets `openWorldHint`.
    pub fn open_world(mut self, v: bool) -> Self {
        self.open_world_hint = Some(v);
        self
    }
    /// Sets the title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }
    pub(crate) fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The contents of a resource: text or a binary blob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents, base64 on the wire.
    Blob(BlobResourceContents),
}

/// Text resource contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Binary resource contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The bytes, base64-encoded.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents for `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        })
    }

    /// Binary contents for `uri`; the bytes are base64-encoded here.
    pub fn blob(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            meta: None,
        })
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        match &mut self {
            ResourceContents::Text(t) => t.mime_type = Some(mime.into()),
            ResourceContents::Blob(b) => b.mime_type = Some(mime.into()),
        }
        self
    }

    /// The URI of the contents.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    pub(crate) fn has_mime_type(&self) -> bool {
        match self {
            ResourceContents::Text(t) => t.mime_type.is_some(),
            ResourceContents::Blob(b) => b.mime_type.is_some(),
        }
    }
}

/// One block of content in a tool result or a prompt message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64 on the wire.
    Image {
        /// Base64 data.
        data: String,
        /// The MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64 on the wire.
    Audio {
        /// Base64 data.
        data: String,
        /// The MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The URI.
        uri: String,
        /// The name.
        name: String,
        /// A title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// A description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// What the schema requires of a block a handler made: its annotations' `priority`
    /// from 0 to 1 (see [`Annotations::check`]).
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            Content::Text { annotations, .. }
            | Content::Image { annotations, .. }
            | Content::Audio { annotations, .. }
            | Content::ResourceLink { annotations, .. }
            | Content::Resource { annotations, .. } => {
                annotations.as_ref().map_or(Ok(()), Annotations::check)
            }
        }
    }

    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            annotations: None,
        }
    }

    /// An image block from raw bytes (base64-encoded here).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An image block from data that is already base64.
    pub fn image_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An audio block from raw bytes (base64-encoded here).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An audio block from data that is already base64.
    pub fn audio_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// A resource link.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
        }
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Content::Resource {
            resource: contents,
            annotations: None,
        }
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::text(s)
    }
}

/// The result of `tools/call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<Content>,
    /// Structured content (checked against the tool's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call ended in a tool error.
    #[serde(default)]
    pub is_error: bool,
    /// Result metadata merged into `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn new(content: impl IntoIterator<Item = Content>) -> Self {
        CallToolResult {
            content: content.into_iter().collect(),
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        // Not through `new`: collecting an array moves the block twice, on every call of
        // a tool that returns text.
        CallToolResult {
            content: vec![Content::text(text)],
            ..Default::default()
        }
    }

    /// A successful structured result: `structuredContent` plus a text block holding the
    /// same JSON, as the specification recommends.
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            content: vec![Content::text(value.to_string())],
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// A tool error the model can read (`isError: true`).
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(message)],
            is_error: true,
            ..Default::default()
        }
    }
}

/// The result of `resources/read`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents (a resource may expand to several).
    pub contents: Vec<ResourceContents>,
}

impl ReadResourceResult {
    /// A result with these contents.
    pub fn new(contents: impl IntoIterator<Item = ResourceContents>) -> Self {
        ReadResourceResult {
            contents: contents.into_iter().collect(),
        }
    }
}

impl From<ResourceContents> for ReadResourceResult {
    fn from(c: ResourceContents) -> Self {
        ReadResourceResult { contents: vec![c] }
    }
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// One content block.
    pub content: Content,
}

impl PromptMessage {
    /// A message.
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        PromptMessage {
            role,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<Content>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// A description of the rendered prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }
}

/// The `completion` member of a `completion/complete` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// Suggested values (at most 100 are sent; the rest set `hasMore`).
    pub values: Vec<String>,
    /// The total number of matches, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// Values, with `total` set to their count and `hasMore: false`.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        Completion {
            total: Some(values.len() as u64),
            has_more: Some(false),
            values,
        }
    }
}

/// Whether a cached result may be shared across authorization contexts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only within one authorization context (the default).
    #[default]
    Private,
    /// Shareable: the result holds no user-specific data.
    Public,
}

impl CacheScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Private => "private",
            CacheScope::Public => "public",
        }
    }
}

/// Caching hints for a cacheable result (`ttlMs`, `cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CachePolicy {
    /// How long the result stays fresh, in milliseconds (0: immediately stale).
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// Immediately stale, private (presa's default).
    pub const NONE: CachePolicy = CachePolicy {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };

    /// A policy with a TTL and a scope.
    pub fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        CachePolicy { ttl_ms, scope }
    }
}
