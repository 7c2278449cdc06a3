//! A notes server that is an OAuth 2.1 resource server: every HTTP request carries an
//! access token from the authorization server named on the command line, and each tool
//! says which scopes it needs.
//!
//! ```sh
//! cargo run -p presa --features oauth --example authorized -- \
//!     https://auth.example.com https://mcp.example.com/mcp 127.0.0.1:3000
//! ```
//!
//! The first argument is the authorization server's issuer URL, the second the server's
//! canonical URI (what clients reach it by, which tokens must name as their audience), the
//! third the address to listen on. Over stdio there is no OAuth; the user comes from the
//! environment:
//!
//! ```sh
//! NOTES_USER=ada cargo run -p presa --features oauth --example authorized -- --stdio
//! ```
//!
//! With `NOTES_INTROSPECTION_SECRET` set, tokens are opaque and checked by introspection,
//! as the client `notes-server` with that secret.

use presa::Principal;
use presa::auth::{Authorization, IntrospectionVerifier, JwtVerifier};
use std::sync::Arc;

// ANCHOR: tools
/// Reads the caller's notes.
#[presa::tool(scopes("notes:read"))]
async fn read_notes(principal: Principal) -> String {
    format!("{} has no notes yet", principal.id())
}

/// Writes a note for the caller.
#[presa::tool(scopes("notes:write"))]
async fn write_note(principal: Principal, text: String) -> String {
    format!("noted for {}: {text}", principal.id())
}

/// Says who is asking and what the token allows; needs no scope beyond the server's.
#[presa::tool]
async fn whoami(principal: Principal) -> String {
    format!(
        "{} (client {}), scopes: {}",
        principal.id(),
        principal.client_id().unwrap_or("unknown"),
        principal.scopes().join(" ")
    )
}
// ANCHOR_END: tools

// ANCHOR: optional
/// Greets the caller, or anyone: the principal is optional here.
#[presa::tool]
async fn greet(principal: Option<Principal>) -> String {
    match principal {
        Some(p) => format!("Hello, {}!", p.id()),
        None => "Hello, whoever you are!".into(),
    }
}
// ANCHOR_END: optional

/// The server: tokens signed by `issuer`'s keys, for `canonical_uri`.
fn server(
    verifier: Arc<JwtVerifier>,
    issuer: &str,
    canonical_uri: &str,
) -> Result<presa::Server, presa::BuildError> {
    // ANCHOR: server
    let authorization = Authorization::with_verifier(verifier)
        .authorization_server(issuer)
        // What the protected resource metadata advertises as enough to start with.
        .scopes_supported(["notes:read"])
        // A token granting notes:write may also read.
        .scope_implies("notes:write", ["notes:read"]);
    let server = presa::server!()
        .registered()
        .canonical_uri(canonical_uri)
        .authorization(authorization)
        .build()?;
    // ANCHOR_END: server
    Ok(server)
}

/// The same server for an authorization server whose tokens are opaque: each is checked
/// by asking its introspection endpoint, as the client `notes-server`.
fn introspecting(
    issuer: &str,
    canonical_uri: &str,
    client_secret: String,
) -> Result<presa::Server, presa::BuildError> {
    // ANCHOR: introspection
    let verifier = IntrospectionVerifier::new(issuer, "notes-server", client_secret)
        // At most this many introspection requests in flight at once.
        .max_concurrent(32);
    let authorization = Authorization::new(verifier)
        .authorization_server(issuer)
        .scope_implies("notes:write", ["notes:read"]);
    // ANCHOR_END: introspection
    presa::server!()
        .registered()
        .canonical_uri(canonical_uri)
        .authorization(authorization)
        .build()
}

/// The server over stdio: no tokens; the process acts for the user its environment names.
fn over_stdio() -> Result<presa::Server, presa::BuildError> {
    // ANCHOR: stdio
    let server = presa::server!()
        .registered()
        .principal(|headers| match headers {
            // Over HTTP without OAuth, a trusted proxy's header would be read here.
            Some(_) => None,
            // Over stdio: the user the host started the process as, with their scopes.
            None => std::env::var("NOTES_USER")
                .ok()
                .map(|user| Principal::new(user).with_scopes(["notes:read", "notes:write"])),
        })
        .build()?;
    // ANCHOR_END: stdio
    Ok(server)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--stdio") {
        over_stdio()?.serve_stdio().await?;
        return Ok(());
    }
    let mut args = std::env::args().skip(1);
    let (Some(issuer), Some(canonical), Some(addr)) = (args.next(), args.next(), args.next())
    else {
        eprintln!("usage: authorized ISSUER CANONICAL_URI ADDRESS | authorized --stdio");
        std::process::exit(2);
    };
    // With a client secret for it in the environment, tokens are introspected instead.
    if let Ok(secret) = std::env::var("NOTES_INTROSPECTION_SECRET") {
        introspecting(&issuer, &canonical, secret)?
            .serve_http(addr)
            .await?;
        return Ok(());
    }
    // ANCHOR: warm
    let verifier = Arc::new(JwtVerifier::new(&issuer));
    // Fetches the issuer's metadata and keys now, into the verifier the server checks
    // tokens with: a wrong issuer or an unreachable authorization server shows at
    // startup, and the first request finds the keys in hand.
    verifier.warm().await?;
    let server = server(verifier, &issuer, &canonical)?;
    // ANCHOR_END: warm
    server.serve_http(addr).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::json;

    fn notes() -> presa::Server {
        let issuer = "https://auth.example.com";
        let verifier = Arc::new(JwtVerifier::new(issuer));
        server(verifier, issuer, "https://mcp.example.com/mcp").unwrap()
    }

    // ANCHOR: tests
    #[tokio::test]
    async fn a_scope_is_needed_and_a_broader_one_covers_it() {
        let server = notes();
        let reader = TestClient::new(&server)
            .with_principal(Principal::new("ada").with_scopes(["notes:read"]));
        reader
            .call_tool("read_notes", json!({}))
            .await
            .assert_text("ada has no notes yet");
        // Writing needs notes:write: refused before the handler runs, naming the scope.
        let refused = reader.call_tool("write_note", json!({"text": "hi"})).await;
        refused.assert_error(-32600);
        assert_eq!(
            refused.error().unwrap()["data"]["requiredScopes"],
            json!(["notes:write"])
        );
        // notes:write implies notes:read.
        let writer = TestClient::new(&server)
            .with_principal(Principal::new("bo").with_scopes(["notes:write"]));
        writer
            .call_tool("read_notes", json!({}))
            .await
            .assert_text("bo has no notes yet");
    }
    // ANCHOR_END: tests

    #[tokio::test]
    async fn a_handler_sees_the_principal() {
        let server = notes();
        let client = TestClient::new(&server).with_principal(
            Principal::new("ada")
                .with_client_id("notes-app")
                .with_scopes(["notes:read"]),
        );
        client
            .call_tool("whoami", json!({}))
            .await
            .assert_text("ada (client notes-app), scopes: notes:read");
    }

    #[tokio::test]
    async fn the_principal_may_be_optional() {
        let server = notes();
        let anyone = TestClient::new(&server);
        anyone
            .call_tool("greet", json!({}))
            .await
            .assert_text("Hello, whoever you are!");
        let ada = TestClient::new(&server).with_principal(Principal::new("ada"));
        ada.call_tool("greet", json!({}))
            .await
            .assert_text("Hello, ada!");
    }

    #[tokio::test]
    async fn over_stdio_a_process_without_its_user_may_not_read() {
        // The tests run without NOTES_USER: the process acts for no one.
        let server = over_stdio().unwrap();
        let client = TestClient::new(&server);
        let refused = client.call_tool("read_notes", json!({})).await;
        refused.assert_error(-32600);
        assert_eq!(
            refused.error().unwrap()["data"]["requiredScopes"],
            json!(["notes:read"])
        );
        client
            .call_tool("greet", json!({}))
            .await
            .assert_text("Hello, whoever you are!");
    }

    #[test]
    fn an_introspecting_server_builds() {
        let server = introspecting(
            "https://auth.example.com",
            "https://mcp.example.com/mcp",
            "s3cret".into(),
        );
        assert!(server.is_ok());
    }

    #[test]
    fn a_server_without_its_canonical_uri_is_refused() {
        let auth = Authorization::new(JwtVerifier::new("https://auth.example.com"))
            .authorization_server("https://auth.example.com");
        let refused = presa::server!().registered().authorization(auth).build();
        assert!(refused.is_err());
    }
}
