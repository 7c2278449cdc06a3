//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): Agent Skills served
//! from a folder read at run time (and re-read when it changes) or from files embedded in
//! the binary, built only on the extension hooks.
//!
//! Every file of every skill is a resource of the catalog (`skill://<skill-path>/<file>`,
//! contributed through [`Extension::resources`]), so `resources/list`, `resources/read`,
//! their scopes and caching hints are the core's. The extension owns `skills/list` and
//! `skills/get` (the skill entries: the frontmatter and each file's URI, digest and size)
//! and, when declared, `resources/directory/read` (a directory's direct children). The
//! rules a skill set must follow live once, in `presa_rules::skill`; a set that breaks one
//! is refused when the server is built.

use crate::Server;
use crate::context::RequestContext;
use crate::error::{BuildError, Error};
use crate::extension::{Attached, Extension};
use crate::registry::BoxFuture;
use crate::registry::resource::Resource;
use crate::wire::cursor;
use crate::wire::types::{CachePolicy, ResourceContents};
use presa_rules::skill::{self as rules, SkillError, SkillSet, SourceFile};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, SystemTime};

pub use presa_rules::skill::{EXTENSION_ID, MAX_BYTES, MAX_FILES, Rule};

/// How often a folder is looked at for changes, unless set with [`Skills::poll_interval`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Longest cursor read for a skill listing or a directory, unless a URI served is so long
/// that a cursor naming it is longer.
const MAX_CURSOR_BYTES: usize = crate::registry::MAX_CURSOR_BYTES;

/// One file of a skill set embedded in the program: its path relative to the set's root
/// (`/`-separated) and its bytes. The [`skills!`](crate::skills!) macro writes these; a
/// program may too.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedFile {
    /// The path relative to the set's root (`pdf/references/FORMS.md`).
    pub path: &'static str,
    /// The file's bytes.
    pub bytes: &'static [u8],
}

/// The Skills extension: install it with
/// [`ServerBuilder::extension`](crate::ServerBuilder::extension).
///
/// A skill set is a folder: each folder below it holding a `SKILL.md` is a skill, served
/// at `skill://<its path>/…`. The set is read and checked when the server is built (an
/// invalid one refuses the build, naming the file and the rule); a folder is then looked
/// at every [poll interval](Skills::poll_interval) and, when a file changed, read and
/// checked again: a valid new set replaces the old at once and listeners get
/// `notifications/resources/list_changed`; an invalid one is logged and the old set
/// stays.
#[derive(Clone)]
pub struct Skills {
    inner: Arc<Inner>,
}

struct Inner {
    source: Source,
    directory_read: bool,
    watch: bool,
    poll: Duration,
    scopes: Vec<String>,
    cache: CachePolicy,
    read_cache: Option<CachePolicy>,
    loaded: RwLock<Option<Arc<Loaded>>>,
    /// The folder as last looked at (empty for an embedded set).
    seen: Mutex<Fingerprint>,
}

enum Source {
    Folder(PathBuf),
    Embedded(&'static [EmbeddedFile]),
}

/// A file's bytes: borrowed from the program, or read from the folder.
#[derive(Clone)]
enum Bytes {
    Static(&'static [u8]),
    Owned(Arc<[u8]>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Static(b) => b,
            Bytes::Owned(b) => b,
        }
    }
}

/// One checked set, ready to serve.
struct Loaded {
    /// The skill entries as the wire carries them, sorted by URI.
    entries: Vec<(String, Value)>,
    /// A skill's entry by its URI.
    by_uri: HashMap<String, usize>,
    /// Each directory's direct children (`Resource` objects), sorted by URI, by the
    /// directory's URI.
    directories: HashMap<String, Vec<(String, Value)>>,
    /// The resources the set serves (one per file).
    resources: Vec<Resource>,
}

/// What a folder looked like: every file's path, size and modification time, sorted.
type Fingerprint = Vec<(String, u64, Option<SystemTime>)>;

impl Skills {
    /// A skill set read from the folder `root` when the server is built, and re-read
    /// when it changes.
    pub fn from_folder(root: impl AsRef<Path>) -> Self {
        Skills::new(Source::Folder(root.as_ref().to_path_buf()), true)
    }

    /// A skill set embedded in the program, checked when the server is built (the
    /// [`skills!`](crate::skills!) macro checks it when the program is compiled, with the same
    /// rules).
    pub fn from_embedded(files: &'static [EmbeddedFile]) -> Self {
        Skills::new(Source::Embedded(files), false)
    }

    fn new(source: Source, watch: bool) -> Self {
        Skills {
            inner: Arc::new(Inner {
                source,
                directory_read: true,
                watch,
                poll: DEFAULT_POLL_INTERVAL,
                scopes: Vec::new(),
                cache: CachePolicy::NONE,
                read_cache: None,
                loaded: RwLock::new(None),
                seen: Mutex::new(Vec::new()),
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        // Settings are made before the extension is installed, when this is the only
        // handle; a clone made earlier keeps its own settings.
        if Arc::get_mut(&mut self.inner).is_none() {
            let i = &self.inner;
            self.inner = Arc::new(Inner {
                source: match &i.source {
                    Source::Folder(p) => Source::Folder(p.clone()),
                    Source::Embedded(f) => Source::Embedded(f),
                },
                directory_read: i.directory_read,
                watch: i.watch,
                poll: i.poll,
                scopes: i.scopes.clone(),
                cache: i.cache,
                read_cache: i.read_cache,
                loaded: RwLock::new(None),
                seen: Mutex::new(Vec::new()),
            });
        }
        Arc::get_mut(&mut self.inner).unwrap_or_else(|| unreachable!("the handle was made unique"))
    }

    /// Whether `resources/directory/read` is served and `directoryRead: true` declared
    /// (default true).
    #[must_use]
    pub fn directory_read(mut self, on: bool) -> Self {
        self.inner_mut().directory_read = on;
        self
    }

    /// Whether a folder is looked at for changes while the server runs (default true
    /// for [`Skills::from_folder`]; an embedded set never changes).
    #[must_use]
    pub fn watch(mut self, on: bool) -> Self {
        let inner = self.inner_mut();
        inner.watch = on && matches!(inner.source, Source::Folder(_));
        self
    }

    /// How often a watched folder is looked at (default 2 s, at least 10 ms): each look
    /// reads the size and modification time of every file, and only a difference reads
    /// the files again.
    #[must_use]
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.inner_mut().poll = every.max(Duration::from_millis(10));
        self
    }

    /// The OAuth scopes every request for the skills needs: `skills/list`, `skills/get`,
    /// `resources/directory/read`, and `resources/read` of every file (checked as an
    /// item's own scopes are, before anything is served).
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.inner_mut().scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The caching hints of `skills/list` and `skills/get` results (default: immediately
    /// stale, private).
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.inner_mut().cache = policy;
        self
    }

    /// The caching hints of `resources/read` of a skill file (default: the server's).
    #[must_use]
    pub fn read_cache(mut self, policy: CachePolicy) -> Self {
        self.inner_mut().read_cache = Some(policy);
        self
    }

    fn loaded(&self) -> Option<Arc<Loaded>> {
        self.inner
            .loaded
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Inner {
    /// Reads and checks the set.
    fn load(&self) -> Result<Loaded, SkillError> {
        match &self.source {
            Source::Embedded(files) => {
                let sources: Vec<SourceFile<'_>> = files
                    .iter()
                    .map(|f| SourceFile {
                        path: f.path,
                        bytes: f.bytes,
                    })
                    .collect();
                let set = rules::check_set(&sources)?;
                let bytes = |i: usize| Bytes::Static(files[i].bytes);
                Ok(self.prepare(&set, bytes))
            }
            Source::Folder(root) => {
                let files = rules::read_folder(root)?;
                let sources: Vec<SourceFile<'_>> = files
                    .iter()
                    .map(|(path, bytes)| SourceFile { path, bytes })
                    .collect();
                let set = rules::check_set(&sources)?;
                let owned: Vec<Arc<[u8]>> =
                    files.iter().map(|(_, b)| Arc::from(b.as_slice())).collect();
                let bytes = |i: usize| Bytes::Owned(Arc::clone(&owned[i]));
                Ok(self.prepare(&set, bytes))
            }
        }
    }

    /// The entries, directories and resources of a checked set.
    fn prepare(&self, set: &SkillSet, bytes: impl Fn(usize) -> Bytes) -> Loaded {
        // A SKILL.md is described by its skill (name and description from the
        // frontmatter); any other file by its name.
        let mut skill_of: HashMap<&str, &rules::Skill> = HashMap::new();
        for skill in &set.skills {
            skill_of.insert(skill.uri.as_str(), skill);
        }
        let mut entries: Vec<(String, Value)> = set
            .skills
            .iter()
            .map(|skill| {
                let resources: Vec<Value> = skill
                    .files
                    .iter()
                    .map(|&i| {
                        let f = &set.files[i];
                        json!({"uri": f.uri, "digest": f.digest, "size": f.size})
                    })
                    .collect();
                let entry = json!({
                    "uri": skill.uri,
                    "frontmatter": Value::Object(skill.frontmatter.clone()),
                    "resources": resources,
                });
                (skill.uri.clone(), entry)
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let by_uri = entries
            .iter()
            .enumerate()
            .map(|(i, (uri, _))| (uri.clone(), i))
            .collect();

        let mut resources = Vec::with_capacity(set.files.len());
        let mut children: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
        for file in &set.files {
            let (name, description) = match skill_of.get(file.uri.as_str()) {
                Some(skill) => (skill.name.clone(), Some(skill.description.clone())),
                None => (last_segment(&file.path).to_owned(), None),
            };
            let mut listed = json!({
                "uri": file.uri,
                "name": name,
                "mimeType": file.mime_type,
                "size": file.size,
            });
            if let (Some(d), Value::Object(m)) = (&description, &mut listed) {
                m.insert("description".into(), Value::from(d.as_str()));
            }
            // Every folder above the file is a directory resource, each listing the
            // next one down (or the file) among its children.
            let segments: Vec<&str> = file.path.split('/').collect();
            for depth in 1..segments.len() {
                let dir = rules::uri_of(&segments[..depth].join("/"));
                let child = if depth + 1 == segments.len() {
                    (file.uri.clone(), listed.clone())
                } else {
                    let sub = rules::uri_of(&segments[..=depth].join("/"));
                    let value = json!({
                        "uri": sub,
                        "name": segments[depth],
                        "mimeType": rules::DIRECTORY_MIME,
                    });
                    (sub, value)
                };
                children.entry(dir).or_default().insert(child.0, child.1);
            }
            let mut resource = Resource::new(file.uri.clone(), name)
                .mime_type(file.mime_type)
                .size(file.size)
                .scopes(self.scopes.clone());
            if let Some(d) = description {
                resource = resource.description(d);
            }
            if let Some(policy) = self.read_cache {
                resource = resource.cache(policy);
            }
            let content = bytes(file.source);
            let text = file.text;
            resources.push(resource.handler(
                move |read: crate::registry::resource::ResourceRead| {
                    let content = content.clone();
                    async move {
                        let body = content.as_slice();
                        match std::str::from_utf8(body) {
                            Ok(s) if text => ResourceContents::text(read.uri, s),
                            _ => ResourceContents::blob(read.uri, body),
                        }
                    }
                },
            ));
        }
        let directories = children
            .into_iter()
            .map(|(dir, kids)| (dir, kids.into_iter().collect()))
            .collect();
        Loaded {
            entries,
            by_uri,
            directories,
            resources,
        }
    }

    /// Serves `loaded` from now on.
    fn set_loaded(&self, loaded: Option<Arc<Loaded>>) {
        *self
            .loaded
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = loaded;
    }

    /// Looks at a watched folder once: on a change, reads and checks it again and, when
    /// valid, serves the new set in place of the old, with one `resources/list_changed`.
    fn poll(&self, server: &Server) {
        let Source::Folder(root) = &self.source else {
            return;
        };
        let current = self
            .loaded
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let Some(current) = current else {
            return;
        };
        // A change is acted on once: an invalid set is not read again until the folder
        // changes again.
        let now = fingerprint(root);
        {
            let mut seen = self
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *seen == now {
                return;
            }
            *seen = now;
        }
        match self.load() {
            Ok(next) => {
                let old: Vec<String> = current
                    .resources
                    .iter()
                    .map(|r| r.uri().to_owned())
                    .collect();
                let resources = next.resources.clone();
                // The new set is in place before the catalog change announces it, so a
                // client that asks on hearing `list_changed` is answered from the new set.
                self.set_loaded(Some(Arc::new(next)));
                if let Err(e) = server.replace_resources(&old, resources) {
                    self.set_loaded(Some(current));
                    tracing::warn!(folder = %root.display(), error = %e, "skills folder changed, but its resources could not be served; the previous set stays");
                    return;
                }
                tracing::info!(folder = %root.display(), "skills folder changed: the new set is served");
            }
            Err(e) => {
                tracing::warn!(folder = %root.display(), error = %e, "skills folder changed into an invalid set; the previous set stays");
            }
        }
    }
}

/// What a folder looks like now. Unreadable entries are left out (the full read that a
/// difference leads to reports them).
fn fingerprint(root: &Path) -> Fingerprint {
    fn walk(dir: &Path, root: &Path, out: &mut Fingerprint) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                walk(&path, root, out);
            } else {
                let relative = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                out.push((relative, meta.len(), meta.modified().ok()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The optional `cursor` of a paginated request.
fn cursor_param(params: &Map<String, Value>) -> Result<Option<&str>, Error> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => Ok(Some(c)),
        Some(_) => Err(Error::invalid_params("Cursor must be a string")),
    }
}

/// An item of a paged listing: its key (a URI) and its wire form.
type Keyed = (String, Value);

/// One page of a listing: its items and the cursor of the next page, if any.
struct Page<'a> {
    items: &'a [Keyed],
    next: Option<String>,
}

/// One page of `items` (sorted by key) after `cursor`.
fn page<'a>(
    items: &'a [Keyed],
    kind: &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<Page<'a>, Error> {
    let start = match cursor {
        None | Some("") => 0,
        Some(c) => {
            let longest = items.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            let limit = MAX_CURSOR_BYTES.max(cursor::len(kind, longest));
            let after = cursor::decode(kind, c, limit)
                .ok_or_else(|| Error::invalid_params("Invalid pagination cursor"))?;
            items.partition_point(|(k, _)| k.as_str() <= after.as_str())
        }
    };
    let end = start.saturating_add(size.max(1)).min(items.len());
    let slice = &items[start..end];
    let next = match slice.last() {
        Some((last, _)) if end < items.len() => {
            let mut out = String::new();
            cursor::push(&mut out, kind, last);
            Some(out)
        }
        _ => None,
    };
    Ok(Page { items: slice, next })
}

fn required_uri(params: &Map<String, Value>, method: &str) -> Result<String, Error> {
    match params.get("uri") {
        Some(Value::String(u)) if !u.is_empty() => Ok(u.clone()),
        _ => Err(Error::invalid_params(format!(
            "{method} requires a non-empty string uri"
        ))),
    }
}

impl Skills {
    fn serve(
        &self,
        method: &str,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Map<String, Value>, Error> {
        ctx.authorize(&self.inner.scopes)?;
        let loaded = self.loaded().ok_or_else(Error::internal)?;
        let page_size = ctx.server().config().page_size;
        let mut result = Map::new();
        match method {
            "skills/list" => {
                let Page { items, next } =
                    page(&loaded.entries, "skills", cursor_param(params)?, page_size)?;
                let skills: Vec<Value> = items.iter().map(|(_, e)| e.clone()).collect();
                result.insert("skills".into(), Value::Array(skills));
                if let Some(next) = next {
                    result.insert("nextCursor".into(), Value::String(next));
                }
                self.cached(&mut result);
            }
            "skills/get" => {
                let uri = required_uri(params, method)?;
                let Some(&i) = loaded.by_uri.get(&uri) else {
                    return Err(Error::invalid_params(format!("Unknown skill: {uri}"))
                        .with_data(json!({ "uri": uri })));
                };
                result.insert("skill".into(), loaded.entries[i].1.clone());
                self.cached(&mut result);
            }
            "resources/directory/read" if self.inner.directory_read => {
                let uri = required_uri(params, method)?;
                let Some(children) = loaded.directories.get(&uri) else {
                    return Err(
                        Error::invalid_params(format!("Not a directory resource: {uri}"))
                            .with_data(json!({ "uri": uri })),
                    );
                };
                let Page { items, next } =
                    page(children, "directory", cursor_param(params)?, page_size)?;
                let resources: Vec<Value> = items.iter().map(|(_, r)| r.clone()).collect();
                result.insert("resources".into(), Value::Array(resources));
                if let Some(next) = next {
                    result.insert("nextCursor".into(), Value::String(next));
                }
            }
            other => return Err(Error::method_not_found(other)),
        }
        Ok(result)
    }

    fn cached(&self, result: &mut Map<String, Value>) {
        let policy = self.inner.cache;
        result.insert("ttlMs".into(), Value::from(policy.ttl_ms));
        result.insert("cacheScope".into(), Value::from(policy.scope.as_str()));
    }
}

impl Extension for Skills {
    fn id(&self) -> &'static str {
        EXTENSION_ID
    }

    fn settings(&self) -> Value {
        if self.inner.directory_read {
            json!({ "directoryRead": true })
        } else {
            json!({})
        }
    }

    fn methods(&self) -> &'static [&'static str] {
        if self.inner.directory_read {
            &["skills/list", "skills/get", "resources/directory/read"]
        } else {
            &["skills/list", "skills/get"]
        }
    }

    /// A client calls the methods once it has seen the server's declaration (SEP-2640,
    /// Backward Compatibility); it declares nothing itself.
    fn requires_declaration(&self, _method: &str) -> bool {
        false
    }

    fn handle(
        &self,
        method: &str,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> BoxFuture<Result<Map<String, Value>, Error>> {
        let result = self.serve(method, &params, &ctx);
        Box::pin(async move { result })
    }

    fn resources(&self) -> Result<Vec<Resource>, BuildError> {
        // Looked at before it is read, so that a change made while it is read is seen.
        if let Source::Folder(root) = &self.inner.source {
            *self
                .inner
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = fingerprint(root);
        }
        let loaded = self.inner.load().map_err(|e| {
            let from = match &self.inner.source {
                Source::Folder(root) => format!("skills folder {}", root.display()),
                Source::Embedded(_) => "embedded skills".to_owned(),
            };
            BuildError::new(format!("{from}: {e}"))
        })?;
        let resources = loaded.resources.clone();
        *self
            .inner
            .loaded
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(loaded));
        Ok(resources)
    }

    fn changes_resources(&self) -> bool {
        self.inner.watch
    }

    fn attached(&self, server: Attached) {
        if !self.inner.watch {
            return;
        }
        let inner: Weak<Inner> = Arc::downgrade(&self.inner);
        let every = self.inner.poll;
        let spawned = std::thread::Builder::new()
            .name("presa-skills-watch".into())
            .spawn(move || {
                // Ends when the server (or this extension) is dropped.
                loop {
                    std::thread::sleep(every);
                    let (Some(inner), Some(server)) = (inner.upgrade(), server.server()) else {
                        return;
                    };
                    inner.poll(&server);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start watching the skills folder; it is served as read");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestClient;
    use crate::{Implementation, Principal};

    const FILES: &[EmbeddedFile] = &[EmbeddedFile {
        path: "notes/SKILL.md",
        bytes: b"---\nname: notes\ndescription: Take notes\n---\nNotes.\n",
    }];

    /// A server whose callers hold `scopes`, serving the embedded set behind
    /// `skills:read`.
    fn server(scopes: &'static [&'static str]) -> Server {
        Server::builder(Implementation::new("t", "1"))
            .principal(move |_| Some(Principal::new("alice").with_scopes(scopes.iter().copied())))
            .extension(Skills::from_embedded(FILES).scopes(["skills:read"]))
            .build()
            .expect("a valid server")
    }

    /// Every way to the skills needs the set's scopes, checked as an item's own are.
    #[tokio::test]
    async fn the_sets_scopes_guard_every_method_and_every_read() {
        let denied = TestClient::new(&server(&[]));
        for (method, params) in [
            ("skills/list", json!({})),
            ("skills/get", json!({"uri": "skill://notes/SKILL.md"})),
            ("resources/directory/read", json!({"uri": "skill://notes"})),
            ("resources/read", json!({"uri": "skill://notes/SKILL.md"})),
        ] {
            let r = denied.request(method, params.clone()).await;
            assert!(r.error().is_some(), "{method}: refused without the scope");
            let allowed = TestClient::new(&server(&["skills:read"]));
            assert_eq!(
                allowed.request(method, params).await.result()["resultType"],
                "complete",
                "{method}"
            );
        }
    }

    /// An embedded set is checked when the server is built, as a folder is.
    #[test]
    fn an_invalid_embedded_set_refuses_the_build() {
        static BAD: &[EmbeddedFile] = &[EmbeddedFile {
            path: "notes/SKILL.md",
            bytes: b"---\nname: other\ndescription: d\n---\n",
        }];
        let error = Server::builder(Implementation::new("t", "1"))
            .extension(Skills::from_embedded(BAD))
            .build()
            .err()
            .expect("refused");
        assert!(
            error
                .to_string()
                .starts_with("embedded skills: notes/SKILL.md: the name \"other\" differs"),
            "{error}"
        );
    }
}
