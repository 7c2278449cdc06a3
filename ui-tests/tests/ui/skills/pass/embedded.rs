#![deny(warnings)]

//! A valid set (two skills, one under an organizational prefix, one with a subfolder),
//! embedded and served: the listing holds both skills, every file with the digest and
//! size of the bytes on disk, and the file outside every skill is not served.

use presa::testing::TestClient;
use serde_json::json;

#[tokio::main]
async fn main() {
    let server = presa::server!()
        .extension(presa::skills!("skill-sets/valid"))
        .build()
        .expect("a set the macro accepted builds");
    let client = TestClient::new(&server);
    let listed = client.request("skills/list", json!({})).await;
    let skills = listed.result()["skills"].as_array().expect("skills").clone();
    let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().expect("uri")).collect();
    assert_eq!(uris, ["skill://acme/notes/SKILL.md", "skill://pdf-tools/SKILL.md"]);
    assert_eq!(skills[1]["frontmatter"]["metadata"]["version"], "1.0");
    let forms = include_bytes!("../../../skill-sets/valid/pdf-tools/references/FORMS.md");
    assert_eq!(
        skills[1]["resources"][1],
        json!({
            "uri": "skill://pdf-tools/references/FORMS.md",
            "digest": "sha256:caf5caf701d2b7118c5a184753aa977f959974a8845ec4cea2797ff3af0abe1a",
            "size": forms.len(),
        })
    );
    let read = client
        .request("resources/read", json!({"uri": "skill://pdf-tools/references/FORMS.md"}))
        .await;
    assert_eq!(read.result()["contents"][0]["text"], "# Forms\n\nEvery field, in order.\n");
    let outside = client
        .request("resources/read", json!({"uri": "skill://README.md"}))
        .await;
    assert!(outside.error().is_some(), "README.md is outside every skill");
}
