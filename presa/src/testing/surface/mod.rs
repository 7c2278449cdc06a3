//! Surface snapshots: a server's tool surface written to a committed JSON file, and each
//! later build compared against it, so that a change that breaks the clients and models
//! depending on the server fails a test unless it is made on purpose.
//!
//! The surface ([`Surface`]) is what a client can learn about the server: the
//! `server/discover` result and the complete `tools/list`, `prompts/list`,
//! `resources/list` and `resources/templates/list` listings (every page), asked through
//! the in-process [`TestClient`], plus the OAuth scopes each item needs, which are checked
//! but not listed. It is normalised so that the file changes only when the surface does:
//!
//! - items sorted by their key (`name`, `uri`, `uriTemplate`), object members sorted by
//!   name, `required` and scope lists sorted; JSON pretty-printed with two spaces and a
//!   final newline, so that a diff of the file reads line by line;
//! - what varies between runs or requests left out: each result's `_meta` (where the
//!   server's version travels), `resultType`, `nextCursor`, `ttlMs` and `cacheScope`, and
//!   a resource's `size` and `annotations.lastModified` (they follow its content, which
//!   is not part of the surface);
//! - the scopes an item needs recorded in the item as `x-presa-scopes`, and those every
//!   request needs in `server`, as `x-presa-scopes` too.
//!
//! [`Surface::diff`] compares two surfaces and classifies each difference
//! ([`ChangeClass`]): **breaking** when a client written against the earlier surface may
//! now fail, **additive** when it can only gain, **cosmetic** for text meant for people
//! and models (descriptions, titles, icons, annotations). The classification is the table
//! in [`SurfaceDiff`]'s documentation.
//!
//! [`assert_surface`] is the test: it compares the server with the committed file, fails
//! on a breaking change, passes on an additive one (and says so), and rewrites the file
//! only when the test is run with `PRESA_SURFACE=update`. A missing file is written only
//! with the variable set too: a CI run, which never sets it, fails until the snapshot is
//! committed.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use presa::testing::{Surface, SurfaceSnapshot, SurfaceOutcome};
//! use presa::{Tool, ToolCall};
//! use serde_json::json;
//!
//! fn search(schema: serde_json::Value) -> presa::Server {
//!     presa::server!()
//!         .tool(Tool::new("search").input_schema(schema).handler(|_c: ToolCall| async { "" }))
//!         .build()
//!         .unwrap()
//! }
//! let before = search(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
//! let after = search(json!({
//!     "type": "object",
//!     "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
//!     "required": ["limit"]
//! }));
//!
//! // In a test: `presa::testing::assert_surface(&server, "tests/surface.json").await;`
//! // Here, the same check on a temporary file, written first on purpose.
//! let file = std::env::temp_dir().join(format!("presa-doc-surface-{}.json", std::process::id()));
//! let written = SurfaceSnapshot::new(&file).update(true).check(&before).await.unwrap();
//! assert!(matches!(written, SurfaceOutcome::Written { .. }));
//!
//! let refused = SurfaceSnapshot::new(&file).update(false).check(&after).await.unwrap_err();
//! assert!(refused.to_string().contains("new required argument"));
//!
//! // The same comparison on values: one line per difference.
//! let diff = Surface::of(&before).await.unwrap().diff(&Surface::of(&after).await.unwrap());
//! assert!(diff.is_breaking());
//! assert_eq!(
//!     diff.to_string(),
//!     "breaking  tool \"search\" /inputSchema/properties/limit: new required argument: \
//!      (absent) → {\"type\":\"integer\"}\n"
//! );
//! # std::fs::remove_file(&file).unwrap();
//! # }
//! ```

mod diff;

pub use diff::{ChangeClass, SurfaceChange, SurfaceDiff};

use super::TestClient;
use crate::Principal;
use crate::registry::Listed;
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that lets [`assert_surface`] write the snapshot: `update`
/// writes it (created, or rewritten with the server's surface, breaking or not); unset,
/// empty or `check`, the file is only read.
pub const UPDATE_VARIABLE: &str = "PRESA_SURFACE";

/// The version of the surface file's format, its `presaSurface` member.
pub const FORMAT_VERSION: u64 = 1;

/// Most pages one listing is followed for before the capture gives up, so that a server
/// whose cursors never end fails the capture instead of hanging it (at the default page
/// size of 100, a listing of 100 000 items).
pub const MAX_PAGES: usize = 1_000;

/// The listings of a surface: the member that holds them, the list method, the member of
/// its result, and the key of each item.
pub(crate) const LISTINGS: [(&str, &str, &str); 4] = [
    ("tools", "tools/list", "name"),
    ("prompts", "prompts/list", "name"),
    ("resources", "resources/list", "uri"),
    (
        "resourceTemplates",
        "resources/templates/list",
        "uriTemplate",
    ),
];

/// The member an item or the server records its needed scopes in.
pub(crate) const SCOPES: &str = "x-presa-scopes";

/// Result members that vary between requests or builds, left out of the surface.
const VOLATILE: [&str; 5] = ["_meta", "resultType", "nextCursor", "ttlMs", "cacheScope"];

/// A server's surface, normalised (see the [module documentation](self)): what
/// `server/discover` and the complete listings return, and the scopes each item needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Surface {
    value: Value,
}

impl Surface {
    /// Captures `server`'s surface through the in-process client. A server with
    /// authorization is asked as a principal holding the scopes every request needs.
    pub async fn of(server: &Server) -> Result<Surface, SurfaceError> {
        let guard = server.core.auth.as_deref();
        let required: Vec<String> = guard
            .map(|g| g.required_scopes().to_vec())
            .unwrap_or_default();
        let mut client = TestClient::new(server);
        if guard.is_some() {
            client = client
                .with_principal(Principal::new("presa-surface").with_scopes(required.clone()));
        }
        let discover = client.discover().await;
        let mut server_part = match discover.message.get("result") {
            Some(Value::Object(result)) => result.clone(),
            _ => return Err(capture_failed("server/discover", &discover.message)),
        };
        for member in VOLATILE {
            server_part.remove(member);
        }
        if !required.is_empty() {
            server_part.insert(SCOPES.into(), json!(required));
        }
        let catalog = server.core.catalog();
        let mut surface = Map::new();
        surface.insert("presaSurface".into(), json!(FORMAT_VERSION));
        surface.insert("server".into(), Value::Object(server_part));
        for (member, method, key) in LISTINGS {
            let scopes: Vec<(&str, &[String])> = match member {
                "tools" => scopes_of(catalog.tools.iter(), |e| &e.tool.scopes),
                "prompts" => scopes_of(catalog.prompts.iter(), |e| &e.prompt.scopes),
                "resources" => scopes_of(catalog.resources.iter(), |e| &e.resource.scopes),
                _ => scopes_of(catalog.templates.iter(), |e| &e.template.scopes),
            };
            let mut items = list_all(&client, method, member).await?;
            for item in &mut items {
                let Value::Object(item) = item else { continue };
                let name = item.get(key).and_then(Value::as_str);
                let needed = scopes
                    .iter()
                    .find(|(k, _)| Some(*k) == name)
                    .map(|(_, s)| *s);
                if let Some(needed) = needed.filter(|s| !s.is_empty()) {
                    item.insert(SCOPES.into(), json!(needed));
                }
            }
            surface.insert(member.into(), Value::Array(items));
        }
        Ok(Surface::normalised(Value::Object(surface)))
    }

    /// Reads a surface from the JSON text of a surface file, normalising it (a file edited
    /// by hand compares as what it means).
    pub fn from_json(text: &str) -> Result<Surface, SurfaceError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SurfaceError::Invalid {
            reason: e.to_string(),
        })?;
        let Value::Object(members) = &value else {
            return Err(SurfaceError::Invalid {
                reason: "a surface is a JSON object".into(),
            });
        };
        match members.get("presaSurface").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            Some(other) => {
                return Err(SurfaceError::Invalid {
                    reason: format!(
                        "format version {other}; this presa reads version {FORMAT_VERSION}"
                    ),
                });
            }
            None => {
                return Err(SurfaceError::Invalid {
                    reason: "no `presaSurface` format version".into(),
                });
            }
        }
        for (member, _, _) in LISTINGS {
            if !matches!(members.get(member), None | Some(Value::Array(_))) {
                return Err(SurfaceError::Invalid {
                    reason: format!("`{member}` is not an array"),
                });
            }
        }
        Ok(Surface::normalised(value))
    }

    /// The surface as the file holds it: canonical, pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The surface as a JSON value.
    pub fn as_value(&self) -> &Value {
        &self.value
    }

    /// How `after` differs from this surface, each difference classified.
    pub fn diff(&self, after: &Surface) -> SurfaceDiff {
        diff::compare(&self.value, &after.value)
    }

    /// `value` sorted and canonical, without the members that follow a resource's
    /// content (a file written by hand, or by another version, is read the same way).
    fn normalised(mut value: Value) -> Surface {
        if let Value::Object(members) = &mut value {
            for (member, _, key) in LISTINGS {
                let items = members
                    .entry(member)
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = items {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        if member == "resources" {
                            item.remove("size");
                        }
                        if let Some(Value::Object(annotations)) = item.get_mut("annotations") {
                            annotations.remove("lastModified");
                        }
                    }
                    items.sort_by(|a, b| {
                        let k = |v: &Value| v.get(key).and_then(Value::as_str).map(str::to_owned);
                        k(a).cmp(&k(b))
                    });
                }
            }
        }
        Surface {
            value: canonical(value),
        }
    }
}

/// The scopes of each entry of a catalog listing, by its key.
fn scopes_of<'a, T: Listed + 'a>(
    entries: impl Iterator<Item = &'a std::sync::Arc<T>>,
    scopes: impl Fn(&'a T) -> &'a Vec<String>,
) -> Vec<(&'a str, &'a [String])> {
    entries
        .map(|e| (e.key(), scopes(e.as_ref()).as_slice()))
        .collect()
}

/// Every item of a listing, following its cursors. A method the server does not
/// advertise (-32601) lists nothing.
async fn list_all(
    client: &TestClient,
    method: &str,
    member: &str,
) -> Result<Vec<Value>, SurfaceError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let response = client.request(method, params).await;
        if let Some(error) = response.error() {
            if error.get("code").and_then(Value::as_i64) == Some(crate::code::METHOD_NOT_FOUND) {
                return Ok(items);
            }
            return Err(capture_failed(method, &response.message));
        }
        let Some(result) = response.message.get("result") else {
            return Err(capture_failed(method, &response.message));
        };
        match result.get(member) {
            Some(Value::Array(page)) => items.extend(page.iter().cloned()),
            _ => return Err(capture_failed(method, &response.message)),
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(items),
        }
    }
    Err(SurfaceError::Capture {
        method: method.to_owned(),
        reason: format!("still paging after {MAX_PAGES} pages"),
    })
}

fn capture_failed(method: &str, response: &Value) -> SurfaceError {
    SurfaceError::Capture {
        method: method.to_owned(),
        reason: format!("unexpected answer {response}"),
    }
}

/// `value` with every object's members in name order and every `required` and scope list
/// sorted (both are sets), whatever order the map type keeps.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<(String, Value)> = members.into_iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(name, v)| {
                        let v = match (name.as_str(), v) {
                            ("required" | SCOPES, Value::Array(mut list))
                                if list.iter().all(Value::is_string) =>
                            {
                                list.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                                list.dedup();
                                Value::Array(list)
                            }
                            (_, v) => canonical(v),
                        };
                        (name, v)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A surface snapshot file and what a check may do to it: [`SurfaceSnapshot::check`]
/// compares a server with it, and writes it only when updating.
#[derive(Clone, Debug)]
pub struct SurfaceSnapshot {
    path: PathBuf,
    update: Option<bool>,
}

impl SurfaceSnapshot {
    /// The snapshot at `path` (relative paths are read from the current directory, which
    /// `cargo test` sets to the package's root). Whether a check may write it is read
    /// from [`UPDATE_VARIABLE`] when the check runs, unless [`SurfaceSnapshot::update`]
    /// says.
    pub fn new(path: impl AsRef<Path>) -> SurfaceSnapshot {
        SurfaceSnapshot {
            path: path.as_ref().to_owned(),
            update: None,
        }
    }

    /// Whether a check writes the file (as `PRESA_SURFACE=update` does), whatever the
    /// environment says.
    pub fn update(mut self, update: bool) -> Self {
        self.update = Some(update);
        self
    }

    /// The snapshot's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Captures `server`'s surface and checks it against the file (see
    /// [`SurfaceSnapshot::check_surface`]).
    pub async fn check(&self, server: &Server) -> Result<SurfaceOutcome, SurfaceError> {
        let surface = Surface::of(server).await?;
        self.check_surface(&surface)
    }

    /// Checks `surface` against the file. Without updating: a missing file, or a
    /// breaking difference, is an error; an additive or cosmetic one is an outcome and
    /// the file is left alone. Updating: the file is written when it is missing or
    /// differs in any way (its text included), and the outcome names what changed.
    pub fn check_surface(&self, surface: &Surface) -> Result<SurfaceOutcome, SurfaceError> {
        let update = match self.update {
            Some(update) => update,
            None => update_from_env()?,
        };
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(SurfaceError::Io {
                    path: self.path.clone(),
                    error,
                });
            }
        };
        let Some(text) = text else {
            if !update {
                return Err(SurfaceError::Missing {
                    path: self.path.clone(),
                });
            }
            self.write(surface)?;
            return Ok(SurfaceOutcome::Written {
                path: self.path.clone(),
                diff: None,
            });
        };
        let recorded = Surface::from_json(&text).map_err(|e| match e {
            SurfaceError::Invalid { reason } => SurfaceError::Invalid {
                reason: format!("{}: {reason}", self.path.display()),
            },
            other => other,
        });
        let recorded = match recorded {
            Ok(recorded) => recorded,
            // A file this presa cannot read is replaced only on purpose.
            Err(_) if update => {
                self.write(surface)?;
                return Ok(SurfaceOutcome::Written {
                    path: self.path.clone(),
                    diff: None,
                });
            }
            Err(e) => return Err(e),
        };
        let diff = recorded.diff(surface);
        if update {
            if text != surface.to_json() {
                self.write(surface)?;
                return Ok(SurfaceOutcome::Written {
                    path: self.path.clone(),
                    diff: Some(diff),
                });
            }
            return Ok(SurfaceOutcome::Unchanged);
        }
        if diff.is_breaking() {
            return Err(SurfaceError::Breaking {
                path: self.path.clone(),
                diff,
            });
        }
        if diff.is_empty() {
            Ok(SurfaceOutcome::Unchanged)
        } else {
            Ok(SurfaceOutcome::Compatible {
                path: self.path.clone(),
                diff,
            })
        }
    }

    fn write(&self, surface: &Surface) -> Result<(), SurfaceError> {
        let io = |error| SurfaceError::Io {
            path: self.path.clone(),
            error,
        };
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&self.path, surface.to_json()).map_err(io)
    }
}

/// Whether [`UPDATE_VARIABLE`] asks for the snapshot to be written.
fn update_from_env() -> Result<bool, SurfaceError> {
    match std::env::var(UPDATE_VARIABLE) {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v.is_empty() || v == "check" => Ok(false),
        Ok(v) if v == "update" => Ok(true),
        Ok(v) => Err(SurfaceError::Variable { value: v }),
        Err(std::env::VarError::NotUnicode(v)) => Err(SurfaceError::Variable {
            value: v.to_string_lossy().into_owned(),
        }),
    }
}

/// What a passing [`SurfaceSnapshot::check`] found.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SurfaceOutcome {
    /// The surface is the snapshot's.
    Unchanged,
    /// The surface differs from the snapshot only in additive or cosmetic ways; the file
    /// was left alone.
    Compatible {
        /// The snapshot.
        path: PathBuf,
        /// The differences, none breaking.
        diff: SurfaceDiff,
    },
    /// The file was written (updating): created, or rewritten.
    Written {
        /// The snapshot.
        path: PathBuf,
        /// What changed from the earlier file (`None` when there was none, or it could
        /// not be read).
        diff: Option<SurfaceDiff>,
    },
}

impl fmt::Display for SurfaceOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SurfaceOutcome::Unchanged => write!(f, "the surface matches its snapshot"),
            SurfaceOutcome::Compatible { path, diff } => write!(
                f,
                "the surface changed without breaking its snapshot {}:\n{diff}\
                 help: run with {UPDATE_VARIABLE}=update to record these changes",
                path.display()
            ),
            SurfaceOutcome::Written { path, diff: None } => {
                write!(f, "wrote the surface snapshot {}", path.display())
            }
            SurfaceOutcome::Written {
                path,
                diff: Some(diff),
            } if diff.is_empty() => write!(
                f,
                "rewrote the surface snapshot {} (same surface, new layout)",
                path.display()
            ),
            SurfaceOutcome::Written {
                path,
                diff: Some(diff),
            } => write!(
                f,
                "rewrote the surface snapshot {}:\n{diff}",
                path.display()
            ),
        }
    }
}

/// Why a surface could not be captured, read or checked.
#[derive(Debug)]
#[non_exhaustive]
pub enum SurfaceError {
    /// The surface differs from the snapshot in a breaking way.
    Breaking {
        /// The snapshot.
        path: PathBuf,
        /// Every difference, the breaking ones first.
        diff: SurfaceDiff,
    },
    /// There is no snapshot, and the check was not allowed to write one.
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The snapshot could not be read or written.
    Io {
        /// The snapshot.
        path: PathBuf,
        /// The failure.
        error: std::io::Error,
    },
    /// The text is not a surface this presa reads.
    Invalid {
        /// What is wrong with it.
        reason: String,
    },
    /// The server did not answer a request of the capture as expected.
    Capture {
        /// The request's method.
        method: String,
        /// What went wrong.
        reason: String,
    },
    /// [`UPDATE_VARIABLE`] holds a value other than `update`, `check` or nothing.
    Variable {
        /// The value.
        value: String,
    },
}

impl fmt::Display for SurfaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SurfaceError::Breaking { path, diff } => write!(
                f,
                "the surface breaks its snapshot {}:\n{diff}\
                 help: if the break is intended, run the test with {UPDATE_VARIABLE}=update \
                 and commit the rewritten snapshot",
                path.display()
            ),
            SurfaceError::Missing { path } => write!(
                f,
                "no surface snapshot at {}\nhelp: run the test once with \
                 {UPDATE_VARIABLE}=update to write it, then review and commit it",
                std::path::absolute(path)
                    .as_deref()
                    .unwrap_or(path)
                    .display()
            ),
            SurfaceError::Io { path, error } => {
                write!(f, "surface snapshot {}: {error}", path.display())
            }
            SurfaceError::Invalid { reason } => write!(f, "not a surface snapshot: {reason}"),
            SurfaceError::Capture { method, reason } => {
                write!(f, "capturing the surface, {method}: {reason}")
            }
            SurfaceError::Variable { value } => write!(
                f,
                "{UPDATE_VARIABLE}={value:?} is not understood\nhelp: expected `update` \
                 (write the snapshot) or `check` (only compare; the same as leaving it unset)"
            ),
        }
    }
}

impl std::error::Error for SurfaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SurfaceError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Asserts that `server`'s surface does not break the snapshot at `path` (relative to
/// the package's root under `cargo test`): panics with the report on a breaking
/// difference, or when the file is missing; prints the report and passes on additive or
/// cosmetic ones. With `PRESA_SURFACE=update` ([`UPDATE_VARIABLE`]) the file is written
/// instead (created, or rewritten when anything differs) and the test passes.
///
/// ```no_run
/// # async fn example() {
/// let server = presa::server!().build().unwrap();
/// presa::testing::assert_surface(&server, "tests/surface.json").await;
/// # }
/// ```
#[track_caller]
pub fn assert_surface<'a>(
    server: &'a Server,
    path: impl AsRef<Path>,
) -> impl Future<Output = ()> + Send + 'a {
    let caller = std::panic::Location::caller();
    let snapshot = SurfaceSnapshot::new(path);
    async move {
        match snapshot.check(server).await {
            Ok(SurfaceOutcome::Unchanged) => {}
            Ok(outcome) => eprintln!("{outcome}"),
            Err(e) => panic!("{e}\n(assert_surface at {caller})"),
        }
    }
}
