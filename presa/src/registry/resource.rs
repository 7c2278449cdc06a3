//! Resources and resource templates: definitions, the read handler contract, and the
//! compiled entries the catalog keeps.

use super::completion::{CompletionHandler, CompletionRequest, completion_handler};
use super::uri_template::UriTemplate;
use super::{BoxFuture, check_icons, check_meta};
use crate::context::RequestContext;
use crate::error::{BuildError, Error};
use crate::extract::StateRequirement;
use crate::wire::types::{
    Annotations, CachePolicy, Completion, Icon, ReadResourceResult, ResourceContents,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// One read of a resource, as its handler receives it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ResourceRead {
    /// The URI requested.
    pub uri: String,
    /// For a template, each variable's value extracted from the URI.
    pub variables: HashMap<String, String>,
    /// The request context.
    pub ctx: RequestContext,
}

impl ResourceRead {
    /// The value of a template variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// What a resource handler may return. Text and bytes become one contents item for the
/// requested URI with the resource's MIME type.
pub trait IntoReadResourceResult {
    /// Converts, given the requested URI and the declared MIME type.
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error>;
}

impl IntoReadResourceResult for ReadResourceResult {
    fn into_read_result(self, _: &str, _: Option<&str>) -> Result<ReadResourceResult, Error> {
        Ok(self)
    }
}

impl IntoReadResourceResult for ResourceContents {
    fn into_read_result(self, _: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        let contents = match (self.has_mime_type(), mime) {
            (false, Some(m)) => self.mime_type(m),
            _ => self,
        };
        Ok(contents.into())
    }
}

impl IntoReadResourceResult for Vec<ResourceContents> {
    fn into_read_result(self, _: &str, _: Option<&str>) -> Result<ReadResourceResult, Error> {
        Ok(ReadResourceResult::new(self))
    }
}

impl IntoReadResourceResult for String {
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        ResourceContents::text(uri, self).into_read_result(uri, mime)
    }
}

impl IntoReadResourceResult for &'static str {
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        self.to_owned().into_read_result(uri, mime)
    }
}

impl IntoReadResourceResult for Vec<u8> {
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        ResourceContents::blob(uri, self).into_read_result(uri, mime)
    }
}

impl<T: IntoReadResourceResult> IntoReadResourceResult for Result<T, Error> {
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        self.and_then(|v| v.into_read_result(uri, mime))
    }
}

/// Why a resource read failed, as a resource handler reports it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResourceError {
    /// No resource at this URI: -32602 with `data.uri`.
    NotFound,
    /// Any other protocol error.
    Protocol(Error),
}

impl From<Error> for ResourceError {
    fn from(e: Error) -> Self {
        ResourceError::Protocol(e)
    }
}

impl<T: IntoReadResourceResult> IntoReadResourceResult for Result<T, ResourceError> {
    fn into_read_result(self, uri: &str, mime: Option<&str>) -> Result<ReadResourceResult, Error> {
        match self {
            Ok(v) => v.into_read_result(uri, mime),
            Err(ResourceError::NotFound) => Err(Error::resource_not_found(uri)),
            Err(ResourceError::Protocol(e)) => Err(e),
        }
    }
}

pub(crate) type ResourceHandler =
    Arc<dyn Fn(ResourceRead) -> BoxFuture<Result<ReadResourceResult, Error>> + Send + Sync>;

fn resource_handler<F, Fut, R>(f: F, mime: Option<String>) -> ResourceHandler
where
    F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoReadResourceResult,
{
    Arc::new(move |read: ResourceRead| {
        let uri = read.uri.clone();
        let mime = mime.clone();
        let fut = f(read);
        Box::pin(async move { fut.await.into_read_result(&uri, mime.as_deref()) })
    })
}

/// Metadata shared by resources and templates.
#[derive(Clone, Debug, Default)]
pub(crate) struct Described {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) annotations: Option<Annotations>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) meta: Option<Map<String, Value>>,
}

impl Described {
    fn insert_into(&self, m: &mut Map<String, Value>) -> Result<(), serde_json::Error> {
        m.insert("name".into(), Value::from(self.name.as_str()));
        if let Some(t) = &self.title {
            m.insert("title".into(), Value::from(t.as_str()));
        }
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::from(d.as_str()));
        }
        if let Some(mt) = &self.mime_type {
            m.insert("mimeType".into(), Value::from(mt.as_str()));
        }
        if let Some(a) = &self.annotations {
            m.insert("annotations".into(), serde_json::to_value(a)?);
        }
        if !self.icons.is_empty() {
            m.insert("icons".into(), serde_json::to_value(&self.icons)?);
        }
        if let Some(meta) = &self.meta {
            m.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("a name is required".into());
        }
        if let Some(a) = &self.annotations {
            a.check()?;
        }
        check_icons(&self.icons)?;
        check_meta(self.meta.as_ref())
    }
}

/// Checks that each scope is an OAuth scope token.
pub(crate) fn check_scopes(scopes: &[String]) -> Result<(), String> {
    scopes.iter().try_for_each(|s| presa_rules::scope::check(s))
}

macro_rules! described_setters {
    () => {
        /// Sets the human-readable title.
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.described.title = Some(title.into());
            self
        }
        /// Sets the description.
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.described.description = Some(description.into());
            self
        }
        /// Sets the MIME type of the contents.
        pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
            self.described.mime_type = Some(mime.into());
            self
        }
        /// Sets the annotations.
        pub fn annotations(mut self, annotations: Annotations) -> Self {
            self.described.annotations = Some(annotations);
            self
        }
        /// Adds an icon (`https:` or `data:` URI).
        pub fn icon(mut self, icon: Icon) -> Self {
            self.described.icons.push(icon);
            self
        }
        /// Sets `_meta`.
        pub fn meta(mut self, meta: Map<String, Value>) -> Self {
            self.described.meta = Some(meta);
            self
        }
        /// Sets the caching hints of read results (the server default otherwise).
        pub fn cache(mut self, policy: CachePolicy) -> Self {
            self.cache = Some(policy);
            self
        }
        /// Records where it was declared, for error messages about duplicates.
        pub fn location(mut self, location: &'static str) -> Self {
            self.location = Some(location);
            self
        }
        /// Declares that the handler needs shared state; the server refuses to build
        /// without it.
        pub fn requires_state(mut self, requirement: StateRequirement) -> Self {
            self.states.push(requirement);
            self
        }
        /// Sets the OAuth scopes a read needs: a request whose principal's scopes do
        /// not cover them all (see
        /// [`Authorization::scope_implies`](crate::Authorization::scope_implies)) is
        /// refused before the handler runs, with a challenge naming every scope it
        /// needs.
        pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
            self.scopes = scopes.into_iter().map(Into::into).collect();
            self
        }
    };
}

/// A resource at a fixed URI.
#[derive(Clone)]
pub struct Resource {
    pub(crate) uri: String,
    pub(crate) described: Described,
    pub(crate) size: Option<u64>,
    pub(crate) cache: Option<CachePolicy>,
    pub(crate) handler: Option<ResourceHandler>,
    pub(crate) location: Option<&'static str>,
    pub(crate) states: Vec<StateRequirement>,
    /// The OAuth scopes a call needs (checked before the handler runs).
    pub(crate) scopes: Vec<String>,
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            described: Described {
                name: name.into(),
                ..Default::default()
            },
            size: None,
            cache: None,
            handler: None,
            location: None,
            states: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    described_setters!();

    /// Sets the size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the read handler.
    pub fn handler<F, Fut, R>(mut self, f: F) -> Self
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResourceResult,
    {
        self.handler = Some(resource_handler(f, self.described.mime_type.clone()));
        self
    }

    pub(crate) fn compile(self) -> Result<ResourceEntry, BuildError> {
        let fail = |why: String| BuildError::new(format!("resource {:?}: {why}", self.uri));
        if !crate::wire::uri::is_absolute_uri(&self.uri) {
            return Err(fail("the URI must be absolute (have a scheme)".into()));
        }
        crate::wire::uri::uri_characters(&self.uri).map_err(&fail)?;
        self.described.check().map_err(&fail)?;
        check_scopes(&self.scopes).map_err(&fail)?;
        let Some(handler) = self.handler.clone() else {
            return Err(fail("no handler".into()));
        };
        let mut m = Map::new();
        m.insert("uri".into(), Value::from(self.uri.as_str()));
        self.described
            .insert_into(&mut m)
            .map_err(|e| fail(e.to_string()))?;
        if let Some(size) = self.size {
            m.insert("size".into(), Value::from(size));
        }
        let listing = serde_json::value::to_raw_value(&m).map_err(|e| fail(e.to_string()))?;
        Ok(ResourceEntry {
            resource: self,
            handler,
            listing,
        })
    }
}

/// A family of resources described by an RFC 6570 level 1 URI template.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) template: String,
    pub(crate) described: Described,
    pub(crate) cache: Option<CachePolicy>,
    pub(crate) handler: Option<ResourceHandler>,
    pub(crate) completions: HashMap<String, CompletionHandler>,
    pub(crate) location: Option<&'static str>,
    pub(crate) states: Vec<StateRequirement>,
    /// The OAuth scopes a call needs (checked before the handler runs).
    pub(crate) scopes: Vec<String>,
}

impl ResourceTemplate {
    /// A template such as `notes://{id}`, named `name`.
    pub fn new(template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            template: template.into(),
            described: Described {
                name: name.into(),
                ..Default::default()
            },
            cache: None,
            handler: None,
            completions: HashMap::new(),
            location: None,
            states: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// The template as written.
    pub fn uri_template(&self) -> &str {
        &self.template
    }

    described_setters!();

    /// Sets the read handler; [`ResourceRead::var`] gives the variables.
    pub fn handler<F, Fut, R>(mut self, f: F) -> Self
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResourceResult,
    {
        self.handler = Some(resource_handler(f, self.described.mime_type.clone()));
        self
    }

    /// Attaches a completion provider to the variable `variable`.
    pub fn complete<F, Fut>(mut self, variable: impl Into<String>, f: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, Error>> + Send + 'static,
    {
        self.completions
            .insert(variable.into(), completion_handler(f));
        self
    }

    pub(crate) fn compile(self) -> Result<TemplateEntry, BuildError> {
        let fail =
            |why: String| BuildError::new(format!("resource template {:?}: {why}", self.template));
        check_scopes(&self.scopes).map_err(&fail)?;
        // As for a resource: a template for relative URIs never matches a read.
        if !crate::wire::uri::is_absolute_uri(&self.template) {
            return Err(fail(
                "the template must be of absolute URIs (begin with a scheme)".into(),
            ));
        }
        let parsed = UriTemplate::parse(&self.template).map_err(&fail)?;
        self.described.check().map_err(&fail)?;
        for var in self.completions.keys() {
            if !parsed.variables().any(|v| v == var) {
                return Err(fail(format!(
                    "completion for {var:?}, which is not a variable of the template"
                )));
            }
        }
        let Some(handler) = self.handler.clone() else {
            return Err(fail("no handler".into()));
        };
        let mut m = Map::new();
        m.insert("uriTemplate".into(), Value::from(self.template.as_str()));
        self.described
            .insert_into(&mut m)
            .map_err(|e| fail(e.to_string()))?;
        let listing = serde_json::value::to_raw_value(&m).map_err(|e| fail(e.to_string()))?;
        Ok(TemplateEntry {
            template: self,
            parsed,
            handler,
            listing,
        })
    }
}

/// A compiled resource.
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: ResourceHandler,
    pub(crate) listing: Box<RawValue>,
}

/// A compiled template.
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: ResourceHandler,
    pub(crate) listing: Box<RawValue>,
}
