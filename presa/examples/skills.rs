//! Agent Skills served with the Skills extension: a folder of skills (each a folder with a
//! `SKILL.md`), listed with `skills/list`, described with `skills/get`, read file by file
//! with `resources/read` and browsed with `resources/directory/read`. The folder is
//! re-read when it changes; with `--embedded`, the same set is served from the binary,
//! where `presa::skills!` put it when the example compiled.
//!
//! ```sh
//! cargo run -p presa --features skills --example skills                 # stdio
//! cargo run -p presa --features skills --example skills -- --http       # http://127.0.0.1:3000/mcp
//! cargo run -p presa --features skills --example skills -- --embedded   # stdio, embedded set
//! ```

use presa::skills::Skills;
use std::time::Duration;

// ANCHOR: server
fn server(folder: &str) -> Result<presa::Server, presa::BuildError> {
    let skills = Skills::from_folder(folder) // read and checked when the server is built
        .poll_interval(Duration::from_secs(5)) // looked at for changes every 5 s
        .directory_read(true); // serves resources/directory/read (the default)
    presa::server!().extension(skills).build()
}
// ANCHOR_END: server

// ANCHOR: embedded
fn embedded_server() -> Result<presa::Server, presa::BuildError> {
    // Read and checked while the example compiles (a broken rule is a compile error at
    // the path), relative to the folder of presa's Cargo.toml; the files are in the binary.
    let skills = presa::skills!("examples/skill-set").directory_read(true);
    presa::server!().extension(skills).build()
}
// ANCHOR_END: embedded

/// The example's own skill set, beside this file.
const FOLDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skill-set");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    match std::env::args().nth(1).as_deref() {
        Some("--http") => server(FOLDER)?.serve_http("127.0.0.1:3000").await?,
        Some("--embedded") => embedded_server()?.serve_stdio().await?,
        _ => server(FOLDER)?.serve_stdio().await?,
    }
    Ok(())
}

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn skills_are_listed_with_their_files() {
        let server = server(FOLDER).unwrap();
        let client = TestClient::new(&server);
        let listed = client.request("skills/list", json!({})).await;
        let skills = listed.result()["skills"].as_array().unwrap().clone();
        let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().unwrap()).collect();
        assert_eq!(
            uris,
            [
                "skill://git-workflow/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ]
        );
        let pdf = &skills[1];
        assert_eq!(pdf["frontmatter"]["metadata"]["version"], "2.1.0");
        let files: Vec<&str> = pdf["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/references/FORMS.md",
                "skill://pdf-processing/templates/invoice.md"
            ]
        );
        assert!(
            pdf["resources"][0]["digest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
    }

    #[tokio::test]
    async fn files_are_read_as_resources() {
        let server = server(FOLDER).unwrap();
        let client = TestClient::new(&server);
        let read = client
            .request(
                "resources/read",
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            )
            .await;
        let contents = &read.result()["contents"][0];
        assert_eq!(contents["mimeType"], "text/markdown");
        assert!(
            contents["text"]
                .as_str()
                .unwrap()
                .starts_with("---\nname: pdf-processing")
        );
        let dir = client
            .request(
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing"}),
            )
            .await;
        let names: Vec<&str> = dir.result()["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["pdf-processing", "references", "templates"]);
    }

    #[tokio::test]
    async fn the_embedded_set_is_served_as_the_folder_is() {
        let folder = TestClient::new(&server(FOLDER).unwrap());
        let embedded = TestClient::new(&embedded_server().unwrap());
        for (method, params) in [
            ("skills/list", json!({})),
            ("resources/list", json!({})),
            (
                "resources/read",
                json!({"uri": "skill://pdf-processing/references/FORMS.md"}),
            ),
        ] {
            assert_eq!(
                embedded.request(method, params.clone()).await.result(),
                folder.request(method, params).await.result(),
                "{method}"
            );
        }
    }

    #[test]
    fn an_invalid_folder_is_refused() {
        let error = server("/nonexistent/skills").err().unwrap();
        assert!(error.to_string().contains("/nonexistent/skills"), "{error}");
    }
}
// ANCHOR_END: tests
