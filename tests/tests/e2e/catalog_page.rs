//! The catalog page over HTTP (`HttpConfig::catalog`): absent unless turned on; served
//! with its content types and Content-Security-Policy when on, at `<path>/dev`; refused
//! on an address that is not loopback unless forced; behind the endpoint's Origin and
//! Host rules. What the page does in a browser is `catalog_browser`'s.

use crate::http_util::result;
use presa::HttpConfig;
use presa_tests::fixture;
use presa_tests::http::Harness;
use serde_json::json;
use std::io::ErrorKind;
use tokio::net::TcpListener;

/// The policy the page is served with: nothing but its own script and style, `data:`
/// images, and `fetch` to its own origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; \
     frame-ancestors 'none'";

/// A GET of `url` with `headers`: the status, the headers and the body.
async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = reqwest::Client::new().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("the request is sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (
        status,
        headers,
        resp.text().await.expect("the body is read"),
    )
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("a {name} header in {headers:?}"))
}

#[tokio::test]
async fn the_page_is_not_found_unless_turned_on() {
    let h = Harness::start(fixture()).await;
    for path in ["/mcp/dev", "/mcp/dev/catalog.js", "/mcp/dev/catalog.css"] {
        let (status, _, body) = get(&format!("{}{path}", h.base), &[]).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_their_types_and_policy() {
    let h = Harness::start_with(fixture(), HttpConfig::default().catalog(true)).await;
    for (path, kind, marker) in [
        (
            "/mcp/dev",
            "text/html; charset=utf-8",
            "<script src=\"dev/catalog.js\"",
        ),
        (
            "/mcp/dev/catalog.js",
            "text/javascript; charset=utf-8",
            "server/discover",
        ),
        ("/mcp/dev/catalog.css", "text/css; charset=utf-8", "font"),
    ] {
        let (status, headers, body) = get(&format!("{}{path}", h.base), &[]).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(header(&headers, "content-type"), kind, "{path}");
        assert_eq!(header(&headers, "content-security-policy"), CSP, "{path}");
        assert_eq!(
            header(&headers, "x-content-type-options"),
            "nosniff",
            "{path}"
        );
        assert_eq!(header(&headers, "x-frame-options"), "DENY", "{path}");
        assert_eq!(header(&headers, "cache-control"), "no-store", "{path}");
        assert!(body.contains(marker), "{path}: {body}");
    }
    // The page is GET only; a path beside it is the endpoint's 404.
    let (status, _, _) = get(&format!("{}/mcp/dev/other.js", h.base), &[]).await;
    assert_eq!(status, 404);
    let resp = reqwest::Client::new()
        .post(format!("{}/mcp/dev", h.base))
        .body("{}")
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status().as_u16(), 405);
    // The endpoint itself is as always.
    result(&h.call(1, "server/discover", json!({})).await);
}

#[tokio::test]
async fn the_page_sits_beside_the_configured_path() {
    // The page names its endpoint relative to itself, so it holds under a prefix too.
    let h = Harness::start_with(fixture(), HttpConfig::default().catalog(true)).await;
    let (_, _, page) = get(&format!("{}/mcp/dev", h.base), &[]).await;
    assert!(
        page.contains(r#"<meta name="mcp-endpoint" content="../mcp">"#),
        "{page}"
    );
    let h = Harness::start_with(fixture(), HttpConfig::default().path("/").catalog(true)).await;
    let (status, _, page) = get(&format!("{}/dev", h.base), &[]).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(r#"<meta name="mcp-endpoint" content="./">"#),
        "{page}"
    );
    let h = Harness::start_with(
        fixture(),
        HttpConfig::default().path("/api/mcp/").catalog(true),
    )
    .await;
    let (status, _, page) = get(&format!("{}/api/mcp/dev", h.base), &[]).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(r#"<meta name="mcp-endpoint" content="./">"#),
        "{page}"
    );
    let h = Harness::start_with(
        fixture(),
        HttpConfig::default().path("/api/mcp").catalog(true),
    )
    .await;
    let (status, _, _) = get(&format!("{}/api/mcp/dev/catalog.js", h.base), &[]).await;
    assert_eq!(status, 200);
    let (status, _, _) = get(&format!("{}/mcp/dev", h.base), &[]).await;
    assert_eq!(status, 404);
}

/// Serves the fixture on `listener` with `config` until the returned sender is dropped,
/// once the listener was accepted; the error when serving was refused.
async fn serve(
    listener: TcpListener,
    config: HttpConfig,
) -> Result<tokio::sync::oneshot::Sender<()>, std::io::Error> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (told, refused) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let served = fixture()
            .serve_http_on(listener, config.stop_on_signals(false), async {
                let _ = stopped.await;
            })
            .await;
        let _ = told.send(served);
    });
    // A refusal comes before anything is served; a page that is served answers.
    match tokio::time::timeout(presa_tests::wait::QUIET, refused).await {
        Ok(Ok(Err(e))) => Err(e),
        Ok(Ok(Ok(()))) | Ok(Err(_)) => panic!("serving ended by itself"),
        Err(_) => Ok(stop),
    }
}

#[tokio::test]
async fn the_page_is_refused_beyond_loopback_unless_forced() {
    // 0.0.0.0 (every interface) is not loopback: refused, saying why and what to do.
    let any = TcpListener::bind("0.0.0.0:0").await.expect("bind 0.0.0.0");
    let refused = serve(any, HttpConfig::default().catalog(true))
        .await
        .expect_err("refused on 0.0.0.0");
    assert_eq!(refused.kind(), ErrorKind::InvalidInput);
    let message = refused.to_string();
    assert!(message.contains("loopback"), "{message}");
    assert!(message.contains("catalog_beyond_loopback"), "{message}");

    // Forced, it is served there (reached here through loopback).
    let any = TcpListener::bind("0.0.0.0:0").await.expect("bind 0.0.0.0");
    let port = any.local_addr().expect("address").port();
    let _serving = serve(
        any,
        HttpConfig::default()
            .catalog(true)
            .catalog_beyond_loopback(true),
    )
    .await
    .expect("served when forced");
    let (status, _, _) = get(&format!("http://127.0.0.1:{port}/mcp/dev"), &[]).await;
    assert_eq!(status, 200);

    // Without the page, 0.0.0.0 is served as always.
    let any = TcpListener::bind("0.0.0.0:0").await.expect("bind 0.0.0.0");
    let _plain = serve(any, HttpConfig::default())
        .await
        .expect("served without the page");
}

#[tokio::test]
async fn the_page_is_served_on_loopback_v4_and_v6() {
    for addr in ["127.0.0.1:0", "127.0.0.2:0", "[::1]:0"] {
        let listener = match TcpListener::bind(addr).await {
            Ok(l) => l,
            // A machine without IPv6 (or the rest of 127/8) on its loopback.
            Err(e) if addr != "127.0.0.1:0" => {
                eprintln!("skipped {addr}: cannot bind it here ({e})");
                continue;
            }
            Err(e) => panic!("bind {addr}: {e}"),
        };
        let local = listener.local_addr().expect("address");
        let _serving = serve(listener, HttpConfig::default().catalog(true))
            .await
            .unwrap_or_else(|e| panic!("{addr} is loopback: {e}"));
        let (status, _, _) = get(&format!("http://{local}/mcp/dev"), &[]).await;
        assert_eq!(status, 200, "{local}");
    }
}

#[tokio::test]
async fn the_page_keeps_the_origin_and_host_rules() {
    let h = Harness::start_with(fixture(), HttpConfig::default().catalog(true)).await;
    let page = format!("{}/mcp/dev", h.base);
    let (status, _, body) = get(&page, &[("Origin", "http://evil.example.com")]).await;
    assert_eq!(status, 403, "{body}");
    let (status, _, _) = get(&page, &[("Origin", h.base.as_str())]).await;
    assert_eq!(status, 200);
    let (status, _, _) = get(
        &format!("{page}/catalog.js"),
        &[("Origin", "http://evil.example.com")],
    )
    .await;
    assert_eq!(status, 403);

    let config = HttpConfig::default()
        .catalog(true)
        .allowed_hosts(["mcp.local"]);
    let h = Harness::start_with(fixture(), config).await;
    let page = format!("{}/mcp/dev", h.base);
    // reqwest's own Host (127.0.0.1:<port>) is not on the list.
    let (status, _, _) = get(&page, &[]).await;
    assert_eq!(status, 403);
    let (status, _, _) = get(&page, &[("Host", "evil.example.com")]).await;
    assert_eq!(status, 403);
    let (status, _, _) = get(&page, &[("Host", "mcp.local")]).await;
    assert_eq!(status, 200);
}
