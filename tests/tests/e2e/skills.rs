//! The Skills extension (SEP-2640) over both transports: the declaration, `skills/list`
//! across pages, `skills/get` (and -32602 for an unknown URI), every listed file read with
//! `resources/read` and checked against its digest and size, `resources/directory/read`,
//! a skill edited on disk showing up with `notifications/resources/list_changed`, and a
//! folder past a limit refused when the server is built, and a set embedded with
//! `presa::skills!` served exactly as the same folder read at run time. Requests and
//! results are checked against the Skills schema the harness keeps
//! (`tests/schema/ext-skills-schema.json`).

use base64::Engine;
use presa::skills::{MAX_BYTES, MAX_FILES, Skills};
use presa::{Implementation, Server};
use presa_tests::client::{Client, KINDS};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A fresh folder under the system's temporary folder, removed when dropped.
struct Folder(PathBuf);

impl Folder {
    fn new(what: &str) -> Folder {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("presa-skills-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        Folder(dir)
    }

    fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let at = self.0.join(path);
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("its folder");
        std::fs::write(at, bytes).expect("the file is written");
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const PDF: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2.1.0\"\n---\n# PDF\n";
const REFUNDS: &str =
    "---\nname: refunds\ndescription: Process refunds\nlicense: Apache-2.0\n---\nRefunds.\n";
const GIT: &str = "---\nname: git-workflow\ndescription: Team Git conventions\n---\nGit.\n";
/// Not UTF-8: served as a blob.
const IMAGE: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";

/// Three skills: one under a prefix, one with subfolders, a text reference and an image.
fn sample() -> Folder {
    let f = Folder::new("sample");
    f.write("pdf-processing/SKILL.md", PDF);
    f.write("pdf-processing/references/FORMS.md", "Forms.\n");
    f.write("pdf-processing/templates/regional/eu.md", "EU.\n");
    f.write("pdf-processing/assets/logo.png", IMAGE);
    f.write("acme/billing/refunds/SKILL.md", REFUNDS);
    f.write("git-workflow/SKILL.md", GIT);
    f
}

fn server(skills: Skills, page_size: usize) -> Server {
    Server::builder(Implementation::new("skills-e2e", "1.0.0"))
        .page_size(page_size)
        .extension(skills)
        .build()
        .expect("a valid server")
}

fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Every skill entry, page by page: the entries and the number of pages.
async fn list_all(c: &mut Client) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = c.send("skills/list", params).await.result().clone();
        pages += 1;
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["ttlMs"], 0, "{result}");
        assert_eq!(result["cacheScope"], "private", "{result}");
        entries.extend(result["skills"].as_array().expect("skills").iter().cloned());
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => return (entries, pages),
        }
    }
}

/// The server declares the extension inline, with `directoryRead`, beside `resources`
/// (`listChanged` when the folder is watched); a client that declares nothing may call
/// the methods.
#[tokio::test]
async fn the_extension_is_declared_with_resources() {
    let folder = sample();
    for kind in KINDS {
        let server = server(Skills::from_folder(folder.path()), 50);
        let mut c = Client::start(kind, &server).await;
        let caps = c.send("server/discover", json!({})).await.result()["capabilities"].clone();
        assert_eq!(
            caps["extensions"]["io.modelcontextprotocol/skills"],
            json!({"directoryRead": true}),
            "{kind:?}: {caps}"
        );
        assert_eq!(caps["resources"]["listChanged"], true, "{kind:?}: {caps}");
        let server = server_without_directory(folder.path());
        let mut c = Client::start(kind, &server).await;
        let caps = c.send("server/discover", json!({})).await.result()["capabilities"].clone();
        assert_eq!(
            caps["extensions"]["io.modelcontextprotocol/skills"],
            json!({})
        );
        assert!(
            caps["resources"].get("listChanged").is_none(),
            "{kind:?}: not watched: {caps}"
        );
        c.send(
            "resources/directory/read",
            json!({"uri": "skill://git-workflow"}),
        )
        .await
        .method_not_found();
    }
}

fn server_without_directory(root: &Path) -> Server {
    server(
        Skills::from_folder(root).directory_read(false).watch(false),
        50,
    )
}

/// `skills/list` pages one entry at a time with presa's cursors, each entry whole and
/// once, sorted by URI; each entry is the wire form the SEP gives, byte for byte;
/// `skills/get` answers each with the same entry and no cursor.
#[tokio::test]
async fn skills_are_listed_across_pages_and_got() {
    let folder = sample();
    for kind in KINDS {
        let server = server(Skills::from_folder(folder.path()), 1);
        let mut c = Client::start(kind, &server).await;
        let (entries, pages) = list_all(&mut c).await;
        assert_eq!(pages, 3, "{kind:?}: one skill a page");
        let uris: Vec<&str> = entries
            .iter()
            .map(|e| e["uri"].as_str().expect("uri"))
            .collect();
        assert_eq!(
            uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://git-workflow/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ],
            "{kind:?}"
        );
        assert_eq!(
            entries[0],
            json!({
                "uri": "skill://acme/billing/refunds/SKILL.md",
                "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "Apache-2.0"},
                "resources": [{
                    "uri": "skill://acme/billing/refunds/SKILL.md",
                    "digest": sha256(REFUNDS.as_bytes()),
                    "size": REFUNDS.len()
                }]
            }),
            "{kind:?}"
        );
        let pdf_files: Vec<&str> = entries[2]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .map(|r| r["uri"].as_str().expect("uri"))
            .collect();
        assert_eq!(
            pdf_files,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/assets/logo.png",
                "skill://pdf-processing/references/FORMS.md",
                "skill://pdf-processing/templates/regional/eu.md"
            ],
            "{kind:?}"
        );
        for entry in &entries {
            let got = c.send("skills/get", json!({"uri": entry["uri"]})).await;
            let result = got.result();
            assert_eq!(&result["skill"], entry, "{kind:?}");
            assert!(result.get("nextCursor").is_none(), "{kind:?}");
            assert_eq!(result["ttlMs"], 0, "{kind:?}");
        }
        // A cursor that is not one of presa's is refused.
        c.send("skills/list", json!({"cursor": "bogus"}))
            .await
            .invalid_params("Invalid pagination cursor");
    }
}

/// An unknown skill URI (and a file that is not a SKILL.md) is -32602 with the URI.
#[tokio::test]
async fn an_unknown_skill_is_invalid_params() {
    let folder = sample();
    for kind in KINDS {
        let server = server(Skills::from_folder(folder.path()), 50);
        let mut c = Client::start(kind, &server).await;
        for uri in [
            "skill://nonexistent/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
        ] {
            let got = c.send("skills/get", json!({"uri": uri})).await;
            let e = got.error(-32602, 400);
            assert_eq!(e["message"], format!("Unknown skill: {uri}"), "{kind:?}");
            assert_eq!(e["data"]["uri"], uri, "{kind:?}");
        }
    }
}

/// Every file a listing names reads back with `resources/read` as bytes whose SHA-256 is
/// its digest and whose length is its size: text as `text` (SKILL.md as
/// `text/markdown`), the image as a base64 `blob`.
#[tokio::test]
async fn every_listed_file_reads_back_with_its_digest_and_size() {
    let folder = sample();
    for kind in KINDS {
        let server = server(Skills::from_folder(folder.path()), 2);
        let mut c = Client::start(kind, &server).await;
        let (entries, _) = list_all(&mut c).await;
        let mut read = 0;
        for entry in &entries {
            for file in entry["resources"].as_array().expect("resources") {
                let uri = file["uri"].as_str().expect("uri");
                let result = c
                    .send("resources/read", json!({"uri": uri}))
                    .await
                    .result()
                    .clone();
                let contents = &result["contents"][0];
                assert_eq!(contents["uri"], uri, "{kind:?}");
                let bytes = match (contents.get("text"), contents.get("blob")) {
                    (Some(Value::String(t)), None) => t.as_bytes().to_vec(),
                    (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
                        .decode(b)
                        .expect("base64"),
                    other => panic!("{kind:?}: {uri}: neither text nor blob: {other:?}"),
                };
                assert_eq!(json!(sha256(&bytes)), file["digest"], "{kind:?}: {uri}");
                assert_eq!(json!(bytes.len()), file["size"], "{kind:?}: {uri}");
                if uri.ends_with("/SKILL.md") {
                    assert_eq!(contents["mimeType"], "text/markdown", "{kind:?}");
                }
                if uri.ends_with(".png") {
                    assert_eq!(contents["mimeType"], "image/png", "{kind:?}");
                    assert!(contents.get("blob").is_some(), "{kind:?}: binary as blob");
                }
                read += 1;
            }
        }
        assert_eq!(read, 6, "{kind:?}: every file of every skill");
        // SKILL.md is listed among the resources, named and described from its frontmatter.
        let listed = c.send("resources/list", json!({})).await.result().clone();
        let skill = listed["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["uri"] == "skill://git-workflow/SKILL.md")
            .cloned()
            .expect("SKILL.md listed");
        assert_eq!(
            skill,
            json!({
                "uri": "skill://git-workflow/SKILL.md",
                "name": "git-workflow",
                "description": "Team Git conventions",
                "mimeType": "text/markdown",
                "size": GIT.len()
            }),
            "{kind:?}"
        );
    }
}

/// A directory lists its direct children (subfolders as `inode/directory`), paged with
/// presa's cursors; a file's URI and an unknown one are -32602.
#[tokio::test]
async fn directories_list_their_direct_children() {
    let folder = sample();
    for kind in KINDS {
        let server = server(Skills::from_folder(folder.path()), 2);
        let mut c = Client::start(kind, &server).await;
        let mut children = Vec::new();
        let mut params = json!({"uri": "skill://pdf-processing"});
        let mut pages = 0;
        loop {
            let result = c
                .send("resources/directory/read", params.clone())
                .await
                .result()
                .clone();
            pages += 1;
            children.extend(
                result["resources"]
                    .as_array()
                    .expect("resources")
                    .iter()
                    .cloned(),
            );
            match result.get("nextCursor") {
                Some(next) => params = json!({"uri": "skill://pdf-processing", "cursor": next}),
                None => break,
            }
        }
        assert_eq!(pages, 2, "{kind:?}: four children, two a page");
        assert_eq!(
            children,
            [
                json!({"uri": "skill://pdf-processing/SKILL.md", "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "mimeType": "text/markdown", "size": PDF.len()}),
                json!({"uri": "skill://pdf-processing/assets", "name": "assets", "mimeType": "inode/directory"}),
                json!({"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"}),
                json!({"uri": "skill://pdf-processing/templates", "name": "templates", "mimeType": "inode/directory"}),
            ],
            "{kind:?}"
        );
        let deeper = c
            .send(
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing/templates"}),
            )
            .await
            .result()
            .clone();
        assert_eq!(
            deeper["resources"],
            json!([{"uri": "skill://pdf-processing/templates/regional", "name": "regional", "mimeType": "inode/directory"}]),
            "{kind:?}"
        );
        // Prefix levels are directories too.
        let acme = c
            .send("resources/directory/read", json!({"uri": "skill://acme"}))
            .await
            .result()
            .clone();
        assert_eq!(
            acme["resources"][0]["uri"], "skill://acme/billing",
            "{kind:?}"
        );
        for uri in ["skill://pdf-processing/SKILL.md", "skill://nowhere"] {
            let got = c
                .send("resources/directory/read", json!({"uri": uri}))
                .await;
            let e = got.error(-32602, 400);
            assert_eq!(e["data"]["uri"], uri, "{kind:?}");
        }
    }
}

/// A skill edited on disk is served anew and listeners get one
/// `notifications/resources/list_changed`; an edit that breaks a rule is not served.
#[tokio::test]
async fn an_edited_skill_shows_up_with_list_changed() {
    for kind in KINDS {
        let folder = sample();
        let skills = Skills::from_folder(folder.path()).poll_interval(Duration::from_millis(20));
        let server = server(skills, 50);
        let mut c = Client::start(kind, &server).await;
        let stream = json!("skills-listen");
        let acked = c
            .listen_to(stream.clone(), json!({"resourcesListChanged": true}))
            .await;
        assert_eq!(acked, json!({"resourcesListChanged": true}), "{kind:?}");

        let edited = GIT.replace(
            "Team Git conventions",
            "The team's Git conventions, revised",
        );
        folder.write("git-workflow/SKILL.md", &edited);
        c.expect_event(&stream, "notifications/resources/list_changed")
            .await;
        let got = c
            .send(
                "skills/get",
                json!({"uri": "skill://git-workflow/SKILL.md"}),
            )
            .await
            .result()
            .clone();
        assert_eq!(
            got["skill"]["frontmatter"]["description"], "The team's Git conventions, revised",
            "{kind:?}"
        );
        assert_eq!(
            got["skill"]["resources"][0]["digest"],
            json!(sha256(edited.as_bytes()))
        );

        // A new skill appears with the next look.
        folder.write(
            "new-skill/SKILL.md",
            "---\nname: new-skill\ndescription: New\n---\n",
        );
        c.expect_event(&stream, "notifications/resources/list_changed")
            .await;
        let read = c
            .send(
                "resources/read",
                json!({"uri": "skill://new-skill/SKILL.md"}),
            )
            .await
            .result()
            .clone();
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .expect("text")
                .contains("New")
        );

        // An invalid edit keeps the previous set, and nothing is announced.
        folder.write("new-skill/SKILL.md", "no frontmatter");
        c.expect_quiet(&stream).await;
        let (entries, _) = list_all(&mut c).await;
        assert_eq!(entries.len(), 4, "{kind:?}: the valid set stays");
        c.end_listen(&stream).await;
    }
}

/// A folder whose skill holds more than 512 files, or more than 16 MiB, is refused when
/// the server is built, naming the file and the rule; at the limits it is served.
#[tokio::test]
async fn an_over_limit_folder_is_refused_at_build() {
    let build = |root: &Path| {
        Server::builder(Implementation::new("skills-e2e", "1.0.0"))
            .extension(Skills::from_folder(root).watch(false))
            .build()
    };
    let skill = "---\nname: big\ndescription: Big\n---\n";

    let files = Folder::new("files");
    files.write("big/SKILL.md", skill);
    for i in 1..MAX_FILES {
        files.write(&format!("big/f{i:03}.txt"), "x");
    }
    let server = build(files.path()).expect("512 files are served");
    let mut c = Client::start(KINDS[0], &server).await;
    let (entries, _) = list_all(&mut c).await;
    assert_eq!(entries[0]["resources"].as_array().map(Vec::len), Some(512));
    files.write("big/f512.txt", "x");
    let error = build(files.path()).err().expect("513 files are refused");
    let text = error.to_string();
    assert!(
        text.contains("big/SKILL.md: the skill holds 513 files, more than 512"),
        "{text}"
    );
    assert!(text.contains(&files.path().display().to_string()), "{text}");

    let bytes = Folder::new("bytes");
    bytes.write("big/SKILL.md", skill);
    let rest = MAX_BYTES - skill.len() as u64;
    bytes.write(
        "big/data.bin",
        vec![0u8; usize::try_from(rest).expect("fits")],
    );
    assert!(build(bytes.path()).is_ok(), "16 MiB exactly is served");
    bytes.write("big/one-more.bin", [0u8]);
    let error = build(bytes.path()).err().expect("16 MiB + 1 is refused");
    assert!(
        error.to_string().contains(
            "big/SKILL.md: the skill's files add up to 16777217 bytes, more than 16777216"
        ),
        "{error}"
    );

    let invalid = Folder::new("invalid");
    invalid.write("pdf/SKILL.md", PDF);
    let error = build(invalid.path())
        .err()
        .expect("name differs from folder");
    assert!(
        error.to_string().contains(
            "pdf/SKILL.md: the name \"pdf-processing\" differs from its folder's name \"pdf\""
        ),
        "{error}"
    );
}

/// The folder `presa::skills!` embeds below, read at run time by the other server.
const EMBEDDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");

/// A set embedded with `presa::skills!` is served exactly as the same folder read at run
/// time (not watched, so the declarations match too): the same capabilities, skill
/// entries page by page (digests and sizes those of the bytes on disk), resource list,
/// reads of every file and directory listings.
#[tokio::test]
async fn an_embedded_set_is_served_as_its_folder_is() {
    for kind in KINDS {
        let embedded = server(presa::skills!("skills"), 2);
        let read = server(Skills::from_folder(EMBEDDED).watch(false), 2);
        let mut e = Client::start(kind, &embedded).await;
        let mut r = Client::start(kind, &read).await;
        let same = async |e: &mut Client, r: &mut Client, method: &str, params: Value| {
            let from_macro = e.send(method, params.clone()).await.result().clone();
            let from_folder = r.send(method, params.clone()).await.result().clone();
            assert_eq!(from_macro, from_folder, "{kind:?}: {method} {params}");
            from_macro
        };
        same(&mut e, &mut r, "server/discover", json!({})).await;
        let (entries, pages) = list_all(&mut e).await;
        assert_eq!(list_all(&mut r).await, (entries.clone(), pages), "{kind:?}");
        assert_eq!(pages, 2, "{kind:?}: three skills, two a page");
        let mut files = 0;
        for entry in &entries {
            same(&mut e, &mut r, "skills/get", json!({"uri": entry["uri"]})).await;
            for file in entry["resources"].as_array().expect("resources") {
                let uri = file["uri"].as_str().expect("uri");
                let path = uri.strip_prefix("skill://").expect("a skill URI");
                let on_disk = std::fs::read(Path::new(EMBEDDED).join(path)).expect("the file");
                assert_eq!(file["digest"], json!(sha256(&on_disk)), "{kind:?}: {uri}");
                assert_eq!(file["size"], json!(on_disk.len()), "{kind:?}: {uri}");
                same(&mut e, &mut r, "resources/read", json!({"uri": uri})).await;
                files += 1;
            }
        }
        assert_eq!(
            files, 6,
            "{kind:?}: every file of every skill, README.md left out"
        );
        same(&mut e, &mut r, "resources/list", json!({})).await;
        for dir in [
            "skill://pdf-processing",
            "skill://pdf-processing/templates",
            "skill://acme",
        ] {
            same(
                &mut e,
                &mut r,
                "resources/directory/read",
                json!({"uri": dir}),
            )
            .await;
        }
    }
}
