//! Parsing `#[tool(…)]` and the `#[arg(…)]` of its parameters. Values that name a choice
//! (`task = "…"`) become typed here, with their errors at the string.

use crate::common::Errors;
use crate::common::attr::{self, CommonKeys, Spanned};
use proc_macro2::{Span, TokenStream};

pub(crate) const KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "annotations",
    "icons",
    "meta",
    "scopes",
    "input_schema",
    "live_notifications",
    "task",
    "crate",
];
const ANNOTATION_KEYS: &[&str] = &[
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "title",
];
pub(crate) const ARG_KEYS: &[&str] = &["description", "default", "rename"];

/// A tool's relation to the Tasks extension, as `task = "…"` names it.
#[derive(Clone, Copy)]
pub(crate) enum TaskMode {
    Sync,
    Optional,
    Required,
}

impl TaskMode {
    fn parse(text: &Spanned<String>) -> syn::Result<Self> {
        match text.value.as_str() {
            "sync" => Ok(TaskMode::Sync),
            "optional" => Ok(TaskMode::Optional),
            "required" => Ok(TaskMode::Required),
            other => Err(syn::Error::new(
                text.span,
                format!(
                    "unknown task mode `{other}`\nhelp: expected one of `sync`, `optional`, `required`"
                ),
            )),
        }
    }
}

/// `task = "…"`: the mode, and the span of the `task` key (where an error about the key as
/// a whole points).
#[derive(Clone, Copy)]
pub(crate) struct Task {
    pub(crate) mode: TaskMode,
    pub(crate) key: Span,
}

/// `annotations(…)`: the behaviour hints.
#[derive(Default)]
pub(crate) struct Annotations {
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    pub(crate) title: Option<String>,
}

/// The arguments of `#[tool(…)]`.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) common: CommonKeys,
    pub(crate) annotations: Annotations,
    pub(crate) input_schema: Option<Spanned<String>>,
    pub(crate) live_notifications: bool,
    pub(crate) task: Option<Task>,
}

pub(crate) fn attribute(tokens: TokenStream, errors: &mut Errors) -> ToolArgs {
    let mut args = ToolArgs::default();
    attr::parse_args(tokens, errors, |meta, errors| {
        let key = attr::key_of(meta);
        if args.common.parse(&key, meta)? {
            return Ok(());
        }
        match key.as_str() {
            "input_schema" => args.input_schema = Some(attr::string(meta)?),
            "live_notifications" => args.live_notifications = attr::flag(meta)?,
            "task" => {
                let key = syn::spanned::Spanned::span(&meta.path);
                let mode = TaskMode::parse(&attr::string(meta)?)?;
                args.task = Some(Task { mode, key });
            }
            "annotations" => {
                let a = &mut args.annotations;
                attr::parse_nested(meta, errors, |inner, _| {
                    let k = attr::key_of(inner);
                    match k.as_str() {
                        "read_only" => a.read_only = Some(attr::flag(inner)?),
                        "destructive" => a.destructive = Some(attr::flag(inner)?),
                        "idempotent" => a.idempotent = Some(attr::flag(inner)?),
                        "open_world" => a.open_world = Some(attr::flag(inner)?),
                        "title" => a.title = Some(attr::string(inner)?.value),
                        _ => return Err(attr::unknown(inner, "`annotations`", ANNOTATION_KEYS)),
                    }
                    Ok(())
                })?
            }
            _ => return Err(attr::unknown(meta, "`#[tool]`", KEYS)),
        }
        Ok(())
    });
    args
}

/// The arguments of a parameter's `#[arg(…)]`.
#[derive(Default)]
pub(crate) struct ArgArgs {
    pub(crate) description: Option<String>,
    pub(crate) default: Option<syn::Expr>,
    pub(crate) rename: Option<Spanned<String>>,
}

pub(crate) fn arg(tokens: TokenStream, errors: &mut Errors) -> ArgArgs {
    let mut args = ArgArgs::default();
    attr::parse_args(tokens, errors, |meta, _| {
        let key = attr::key_of(meta);
        match key.as_str() {
            "description" => args.description = Some(attr::string(meta)?.value),
            "default" => args.default = Some(attr::expr(meta)?),
            "rename" => args.rename = Some(attr::string(meta)?),
            _ => return Err(attr::unknown(meta, "`#[arg]`", ARG_KEYS)),
        }
        Ok(())
    });
    args
}
