//! Tools: the definition a user registers (by hand with [`Tool`] or through `#[tool]`),
//! the handler contract, and the compiled entry the catalog keeps (listing JSON prepared
//! once, schemas compiled once, the `x-mcp-header` table).

use super::{BoxFuture, check_icons, check_meta};
use crate::context::RequestContext;
use crate::error::{BuildError, Error};
use crate::extract::StateRequirement;
use crate::schema::{CompiledSchema, HeaderParam, header_params};
use crate::wire::types::{CallToolResult, Content, Icon, ToolAnnotations};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::sync::Arc;

/// One call of a tool, as its handler receives it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name (shared with the catalog: a call does not copy it).
    pub name: Arc<str>,
    /// The arguments, already checked against the input schema.
    pub arguments: Map<String, Value>,
    /// The request context.
    pub ctx: RequestContext,
}

/// A tool error: the call failed in a way the model should read (`isError: true`).
///
/// Any `std::error::Error` converts into one with `?`, keeping its message (which is why
/// `ToolError` itself does not implement `std::error::Error`, as with `anyhow::Error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(pub String);

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError(e.to_string())
    }
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a tool handler may return: anything that becomes a `tools/call` result or a
/// protocol error.
pub trait IntoCallToolResult {
    /// Converts into a result or a protocol error.
    fn into_call_tool_result(self) -> Result<CallToolResult, Error>;

    /// Converts into what the pipeline takes: a plain text stays a `String`.
    #[doc(hidden)]
    fn into_tool_output(self) -> Result<ToolOutput, Error>
    where
        Self: Sized,
    {
        self.into_call_tool_result().map(ToolOutput::Result)
    }

    /// The `outputSchema` this return type implies, if any (for [`Json<T>`]: the schema of
    /// `T`).
    fn output_schema() -> Option<Value> {
        None
    }
}

/// A structured tool result: `structuredContent` holding `T` as JSON, a text block with
/// the same JSON, and an `outputSchema` generated from `T` in the listing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Json<T>(pub T);

impl<T: serde::Serialize + schemars::JsonSchema> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            tracing::error!("a Json<T> tool result failed to serialize: {e}");
            Error::internal()
        })?;
        Ok(CallToolResult::structured(value))
    }

    fn output_schema() -> Option<Value> {
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<T>();
        Some(schema.to_value())
    }
}

macro_rules! text_results {
    ($($t:ty),*) => {$(
        impl IntoCallToolResult for $t {
            fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
                Ok(CallToolResult::text(self.to_string()))
            }
        }
    )*};
}
text_results!(
    bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, char
);

impl IntoCallToolResult for () {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::new([]))
    }
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(self)
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::text(self))
    }

    fn into_tool_output(self) -> Result<ToolOutput, Error> {
        Ok(ToolOutput::Text(self))
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::text(self))
    }

    fn into_tool_output(self) -> Result<ToolOutput, Error> {
        Ok(ToolOutput::Text(self.to_owned()))
    }
}

impl IntoCallToolResult for ToolOutput {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(self.into_result())
    }

    fn into_tool_output(self) -> Result<ToolOutput, Error> {
        Ok(self)
    }
}

impl IntoCallToolResult for Content {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::new([self]))
    }
}

impl IntoCallToolResult for Vec<Content> {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::new(self))
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::error(self.0))
    }
}

impl<T: IntoCallToolResult> IntoCallToolResult for Result<T, Error> {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        self.and_then(IntoCallToolResult::into_call_tool_result)
    }

    fn into_tool_output(self) -> Result<ToolOutput, Error> {
        self.and_then(IntoCallToolResult::into_tool_output)
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

impl<T: IntoCallToolResult> IntoCallToolResult for Result<T, ToolError> {
    fn into_call_tool_result(self) -> Result<CallToolResult, Error> {
        match self {
            Ok(v) => v.into_call_tool_result(),
            Err(e) => Ok(CallToolResult::error(e.0)),
        }
    }

    fn into_tool_output(self) -> Result<ToolOutput, Error> {
        match self {
            Ok(v) => v.into_tool_output(),
            Err(e) => Ok(ToolOutput::Result(CallToolResult::error(e.0))),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// A tool call taken apart for the generated glue of a `#[tool]` function.
#[doc(hidden)]
pub struct CallParts {
    /// The arguments not yet taken.
    pub arguments: Map<String, Value>,
    /// The request context.
    pub ctx: RequestContext,
}

/// A handler's result as the pipeline takes it: a plain text (what a tool returning a
/// `String` or `&str` gives, the common case, kept as it is so that no `CallToolResult`
/// is built, checked and dropped for it) or a whole result.
#[doc(hidden)]
#[derive(Debug)]
pub enum ToolOutput {
    /// A successful result of one text block, without annotations.
    Text(String),
    /// Any result.
    Result(CallToolResult),
}

impl ToolOutput {
    /// The whole result.
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            ToolOutput::Text(text) => CallToolResult::text(text),
            ToolOutput::Result(result) => result,
        }
    }
}

/// A compiled handler: the tool's name (for a [`ToolCall`]), the checked arguments and the
/// context in, the output out. A `#[tool]` function's glue takes the arguments and the
/// context as they are ([`CallParts`]): it has no use for
/// the name, so none is shared with it (a count up and down per call).
pub(crate) type ToolHandler = Arc<
    dyn Fn(&Arc<str>, Map<String, Value>, RequestContext) -> BoxFuture<Result<ToolOutput, Error>>
        + Send
        + Sync,
>;

/// A tool definition: metadata, schemas and a handler.
///
/// ```
/// use presa::{Tool, ToolCall, CallToolResult};
/// use serde_json::json;
///
/// let echo = Tool::new("echo")
///     .description("Echoes its text argument")
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"text": {"type": "string"}},
///         "required": ["text"]
///     }))
///     .handler(|call: ToolCall| async move {
///         let text = call.arguments["text"].as_str().unwrap_or_default().to_owned();
///         CallToolResult::text(text)
///     });
/// # let _ = echo;
/// ```
#[derive(Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) icons: Vec<Icon>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) handler: Option<ToolHandler>,
    pub(crate) location: Option<&'static str>,
    /// Why the generated glue found the tool's parameters unusable, if it did.
    pub(crate) refused: Option<String>,
    pub(crate) states: Vec<StateRequirement>,
    /// The OAuth scopes a call needs (checked before the handler runs).
    pub(crate) scopes: Vec<String>,
    pub(crate) live_notifications: bool,
    pub(crate) asks_input: bool,
    pub(crate) extension_data: super::ExtensionData,
}

impl Tool {
    /// A tool named `name`, taking no arguments until [`Tool::input_schema`] says
    /// otherwise.
    pub fn new(name: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            annotations: ToolAnnotations::default(),
            icons: Vec::new(),
            input_schema: json!({"type": "object", "additionalProperties": false}),
            output_schema: None,
            meta: None,
            handler: None,
            location: None,
            refused: None,
            states: Vec::new(),
            scopes: Vec::new(),
            live_notifications: false,
            asks_input: true,
            extension_data: super::ExtensionData::default(),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description the model reads.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Adds an icon (`https:` or `data:` URI).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the input schema (JSON Schema 2020-12 with `"type": "object"` at the root).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Sets the output schema; structured results are then checked against it.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the tool's `_meta`.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Sets the OAuth scopes a call needs: a request whose principal's scopes do not
    /// cover them all (see [`Authorization::scope_implies`](crate::Authorization::scope_implies))
    /// is refused before the handler runs, with a challenge naming every scope it needs.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Streams this tool's progress and log notifications live on HTTP. By default they
    /// are held until the handler finishes, so that a missing client capability can
    /// still be answered with HTTP 400 (errata W-11); turn this on for a tool that never
    /// asks the client for input it did not declare.
    pub fn live_notifications(mut self, live: bool) -> Self {
        self.live_notifications = live;
        self
    }

    /// Whether the handler may ask the client for input (multi round-trip requests;
    /// default true). With false, and no extension registered (extensions see every
    /// tool call with its context, and may ask), a call does not prepare the binding a
    /// request state would be signed with; a handler that asks anyway then gets -32603.
    /// `#[tool]` sets it to false for a function without injected parameters, which has
    /// no context to ask with.
    pub fn asks_input(mut self, asks: bool) -> Self {
        self.asks_input = asks;
        self
    }

    /// Attaches a value for an extension to read (see [`ExtensionData`](super::ExtensionData)),
    /// replacing any earlier value of the same type.
    pub fn with_extension_data<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.extension_data.insert(value);
        self
    }

    /// The values extensions attached to this tool.
    pub fn extension_data(&self) -> &super::ExtensionData {
        &self.extension_data
    }

    /// Declares that the handler needs shared state; the server refuses to build without
    /// it.
    pub fn requires_state(mut self, requirement: StateRequirement) -> Self {
        self.states.push(requirement);
        self
    }

    /// Records where the tool was declared, for error messages about duplicates.
    pub fn location(mut self, location: &'static str) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the handler. A return type that implies an output schema ([`Json<T>`]) sets
    /// it, unless [`Tool::output_schema`] already did.
    pub fn handler<F, Fut, R>(mut self, f: F) -> Self
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoCallToolResult,
    {
        if self.output_schema.is_none() {
            self.output_schema = R::output_schema();
        }
        self.handler = Some(Arc::new(move |name, arguments, ctx| {
            let fut = f(ToolCall {
                name: Arc::clone(name),
                arguments,
                ctx,
            });
            Box::pin(async move { fut.await.into_tool_output() })
        }));
        self
    }

    /// Sets the handler of a `#[tool]` function: its glue, which takes the arguments and
    /// the context apart and gives the output as the pipeline takes it (no output schema
    /// is implied: the glue sets it).
    pub(crate) fn parts_handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CallParts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, Error>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |_, arguments, ctx| {
            Box::pin(f(CallParts { arguments, ctx }))
        }));
        self
    }

    /// Checks and compiles the definition.
    pub(crate) fn compile(self) -> Result<ToolEntry, BuildError> {
        let name = self.name.clone();
        let fail = |why: String| BuildError::new(format!("tool {name:?}: {why}"));
        // The rule `#[tool]` checks at compile time.
        presa_rules::tool::check_name(&name).map_err(|e| fail(e.to_string()))?;
        super::resource::check_scopes(&self.scopes).map_err(&fail)?;
        if let Some(why) = &self.refused {
            return Err(fail(why.clone()));
        }
        let Some(handler) = self.handler.clone() else {
            return Err(fail("no handler".into()));
        };
        let Value::Object(schema_obj) = &self.input_schema else {
            return Err(fail("the input schema must be a JSON object".into()));
        };
        if schema_obj.get("type").and_then(Value::as_str) != Some("object") {
            return Err(fail(
                "the input schema must have \"type\": \"object\" at its root".into(),
            ));
        }
        let headers = header_params(schema_obj).map_err(&fail)?;
        let input =
            CompiledSchema::compile(&self.input_schema).map_err(|e| fail(format!("input {e}")))?;
        let output = match &self.output_schema {
            None => None,
            // The schema's `Tool.outputSchema` is an object (`true` or `false`, valid JSON
            // Schemas elsewhere, would make the listing invalid).
            Some(s @ Value::Object(_)) => {
                Some(CompiledSchema::compile(s).map_err(|e| fail(format!("output {e}")))?)
            }
            Some(_) => return Err(fail("the output schema must be a JSON object".into())),
        };
        check_icons(&self.icons).map_err(&fail)?;
        check_meta(self.meta.as_ref()).map_err(&fail)?;
        let listing = self.listing().map_err(|e| fail(e.to_string()))?;
        Ok(ToolEntry {
            name: Arc::from(self.name.as_str()),
            tool: self,
            handler,
            listing,
            input,
            output,
            headers,
        })
    }

    fn listing(&self) -> Result<Box<RawValue>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("name".into(), Value::from(self.name.as_str()));
        if let Some(t) = &self.title {
            m.insert("title".into(), Value::from(t.as_str()));
        }
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::from(d.as_str()));
        }
        m.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(o) = &self.output_schema {
            m.insert("outputSchema".into(), o.clone());
        }
        if !self.annotations.is_empty() {
            m.insert(
                "annotations".into(),
                serde_json::to_value(&self.annotations)?,
            );
        }
        if !self.icons.is_empty() {
            m.insert("icons".into(), serde_json::to_value(&self.icons)?);
        }
        if let Some(meta) = &self.meta {
            m.insert("_meta".into(), Value::Object(meta.clone()));
        }
        serde_json::value::to_raw_value(&m)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The handler called with the checked arguments: the future that runs it.
    pub(crate) fn start(
        &self,
        arguments: Map<String, Value>,
        ctx: RequestContext,
    ) -> BoxFuture<Result<ToolOutput, Error>> {
        (self.handler)(&self.name, arguments, ctx)
    }

    /// A handler's outcome checked where the handler could break the schema: its
    /// content's annotations (a `priority` from 0 to 1) and its structured result against
    /// the tool's output schema. A result that breaks either is -32603, logged (the model
    /// never sees it).
    #[inline]
    pub(crate) fn check(&self, result: Result<ToolOutput, Error>) -> Result<ToolOutput, Error> {
        let result = match result? {
            // One text block without annotations breaks nothing, unless an outputSchema
            // asks for structured content.
            ToolOutput::Text(text) if self.output.is_none() => return Ok(ToolOutput::Text(text)),
            output => output.into_result(),
        };
        let name = self.tool.name.as_str();
        if let Some(problem) = result.content.iter().find_map(|c| c.check().err()) {
            tracing::error!(tool = %name, %problem, "tool result content breaks the schema");
            return Err(Error::internal());
        }
        if let (Some(output), false) = (&self.output, result.is_error) {
            let structured = result.structured_content.as_ref().ok_or_else(|| {
                tracing::error!(tool = %name, "tool declares an outputSchema but returned no structuredContent");
                Error::internal()
            })?;
            if let Err(problems) = output.validate(structured) {
                tracing::error!(tool = %name, %problems, "structured result does not match the tool's outputSchema");
                return Err(Error::internal());
            }
        }
        Ok(ToolOutput::Result(result))
    }
}

/// A compiled tool, as the catalog keeps it.
pub(crate) struct ToolEntry {
    /// The tool's name, handed to each call without a copy.
    pub(crate) name: Arc<str>,
    pub(crate) tool: Tool,
    pub(crate) handler: ToolHandler,
    pub(crate) listing: Box<RawValue>,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) headers: Vec<HeaderParam>,
}
