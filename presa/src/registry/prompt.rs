//! Prompts: definitions with their arguments, the `prompts/get` handler contract, and the
//! compiled entry the catalog keeps.

use super::completion::{CompletionHandler, CompletionRequest, completion_handler};
use super::{BoxFuture, check_icons, check_meta};
use crate::context::RequestContext;
use crate::error::{BuildError, Error};
use crate::extract::StateRequirement;
use crate::wire::types::{Completion, GetPromptResult, Icon, PromptMessage};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// One argument a prompt takes (prompt arguments are strings on the wire).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// The argument's name.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    pub required: bool,
}

impl PromptArgument {
    /// An optional argument.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: false,
        }
    }

    /// Marks the argument required.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }
}

/// One `prompts/get`, as its handler receives it.
#[derive(Debug)]
#[non_exhaustive]
pub struct PromptGet {
    /// The prompt's name.
    pub name: String,
    /// The arguments given (every required one is present).
    pub arguments: HashMap<String, String>,
    /// The request context.
    pub ctx: RequestContext,
}

impl PromptGet {
    /// The value of an argument.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }
}

/// What a prompt handler may return.
pub trait IntoGetPromptResult {
    /// Converts into a result or a protocol error.
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error>;
}

impl IntoGetPromptResult for GetPromptResult {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(self)
    }
}

impl IntoGetPromptResult for Vec<PromptMessage> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new(self))
    }
}

impl IntoGetPromptResult for PromptMessage {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new([self]))
    }
}

impl IntoGetPromptResult for String {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error> {
        Ok(GetPromptResult::new([PromptMessage::user(self)]))
    }
}

impl<T: IntoGetPromptResult> IntoGetPromptResult for Result<T, Error> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, Error> {
        self.and_then(IntoGetPromptResult::into_get_prompt_result)
    }
}

pub(crate) type PromptHandler =
    Arc<dyn Fn(PromptGet) -> BoxFuture<Result<GetPromptResult, Error>> + Send + Sync>;

/// A prompt definition.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) handler: Option<PromptHandler>,
    pub(crate) completions: HashMap<String, CompletionHandler>,
    pub(crate) location: Option<&'static str>,
    pub(crate) states: Vec<StateRequirement>,
    /// The OAuth scopes a call needs (checked before the handler runs).
    pub(crate) scopes: Vec<String>,
}

impl Prompt {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            icons: Vec::new(),
            meta: None,
            handler: None,
            completions: HashMap::new(),
            location: None,
            states: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
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

    /// Adds an argument.
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// Sets the OAuth scopes a call needs: a request whose principal's scopes do not
    /// cover them all (see [`Authorization::scope_implies`](crate::Authorization::scope_implies))
    /// is refused before the handler runs, with a challenge naming every scope it needs.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets `_meta`.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Declares that the handler needs shared state; the server refuses to build without
    /// it.
    pub fn requires_state(mut self, requirement: StateRequirement) -> Self {
        self.states.push(requirement);
        self
    }

    /// Records where it was declared, for error messages about duplicates.
    pub fn location(mut self, location: &'static str) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the handler.
    pub fn handler<F, Fut, R>(mut self, f: F) -> Self
    where
        F: Fn(PromptGet) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoGetPromptResult,
    {
        self.handler = Some(Arc::new(move |get| {
            let fut = f(get);
            Box::pin(async move { fut.await.into_get_prompt_result() })
        }));
        self
    }

    /// Attaches a completion provider to the argument `argument`.
    pub fn complete<F, Fut>(mut self, argument: impl Into<String>, f: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, Error>> + Send + 'static,
    {
        self.completions
            .insert(argument.into(), completion_handler(f));
        self
    }

    pub(crate) fn compile(self) -> Result<PromptEntry, BuildError> {
        let fail = |why: String| BuildError::new(format!("prompt {:?}: {why}", self.name));
        super::resource::check_scopes(&self.scopes).map_err(&fail)?;
        if self.name.is_empty() {
            return Err(fail("a name is required".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for a in &self.arguments {
            if !seen.insert(a.name.as_str()) {
                return Err(fail(format!("argument {:?} is declared twice", a.name)));
            }
        }
        for arg in self.completions.keys() {
            if !seen.contains(arg.as_str()) {
                return Err(fail(format!(
                    "completion for {arg:?}, which is not an argument of the prompt"
                )));
            }
        }
        check_icons(&self.icons).map_err(&fail)?;
        check_meta(self.meta.as_ref()).map_err(&fail)?;
        let Some(handler) = self.handler.clone() else {
            return Err(fail("no handler".into()));
        };
        let mut m = Map::new();
        m.insert("name".into(), Value::from(self.name.as_str()));
        if let Some(t) = &self.title {
            m.insert("title".into(), Value::from(t.as_str()));
        }
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::from(d.as_str()));
        }
        if !self.arguments.is_empty() {
            let args = serde_json::to_value(&self.arguments).map_err(|e| fail(e.to_string()))?;
            m.insert("arguments".into(), args);
        }
        if !self.icons.is_empty() {
            let icons = serde_json::to_value(&self.icons).map_err(|e| fail(e.to_string()))?;
            m.insert("icons".into(), icons);
        }
        if let Some(meta) = &self.meta {
            m.insert("_meta".into(), Value::Object(meta.clone()));
        }
        let listing = serde_json::value::to_raw_value(&m).map_err(|e| fail(e.to_string()))?;
        Ok(PromptEntry {
            prompt: self,
            handler,
            listing,
        })
    }
}

/// A compiled prompt.
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptHandler,
    pub(crate) listing: Box<RawValue>,
}
