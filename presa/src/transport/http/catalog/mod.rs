//! The catalog page: a development page, served beside the endpoint at `<path>/dev`, that
//! lists the server's tools, resources, templates and prompts and calls them through the
//! endpoint itself, as any 2026-07-28 client would (`fetch`, the `_meta` and the headers
//! the wire asks for).
//!
//! What holds:
//!
//! - It is off unless [`HttpConfig::catalog`] turns it on; off, its paths are the
//!   endpoint's 404 like any other.
//! - [`Server::serve_http_on`](crate::Server::serve_http_on) refuses to serve it on an
//!   address that is not loopback unless [`HttpConfig::catalog_beyond_loopback`] says so:
//!   the page calls every tool for whoever loads it.
//! - Its three assets are compiled into the binary and served with a Content-Security-Policy
//!   that allows nothing but themselves and `fetch` to the same origin: no inline script,
//!   no other origin, no framing.
//! - Each GET passes the endpoint's Origin and Host rules first; the page's own calls are
//!   ordinary POSTs to the endpoint, with its every rule (and authorization, through the
//!   token field of the page).

use super::{Endpoint, check_origin, host_verdict};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;

/// The page; `{{endpoint}}` stands for where its endpoint is, relative to it.
const HTML: &str = include_str!("catalog.html");
/// Its script: builds the page from the server's listings, with DOM calls only.
const JS: &str = include_str!("catalog.js");
/// Its style.
const CSS: &str = include_str!("catalog.css");

/// What the page may load and reach: its own script and style, images in `data:` URLs (a
/// tool's image content), and `fetch` to its own origin.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; \
     frame-ancestors 'none'";

/// The page's path for an endpoint at `endpoint` (`/mcp` → `/mcp/dev`, `/` → `/dev`).
pub(super) fn page_path(endpoint: &str) -> String {
    if endpoint.ends_with('/') {
        format!("{endpoint}dev")
    } else {
        format!("{endpoint}/dev")
    }
}

/// The endpoint as a reference relative to its page, for the page's `mcp-endpoint` meta
/// tag: from `/mcp/dev`, `../mcp`; from `/mcp/dev` of an endpoint at `/mcp/`, `./`.
/// Relative, so that it still holds when an app nests the router under a prefix.
fn endpoint_from_page(endpoint: &str) -> String {
    match endpoint.rsplit('/').next() {
        Some(last) if !last.is_empty() => format!("../{last}"),
        _ => "./".to_owned(),
    }
}

/// The page, naming its endpoint (HTML-escaped: the path is the app's to choose).
fn page(endpoint: &str) -> String {
    let mut escaped = String::new();
    for c in endpoint_from_page(endpoint).chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '"' => escaped.push_str("&quot;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    HTML.replace("{{endpoint}}", &escaped)
}

/// Adds the page's three routes for an endpoint at `endpoint`. The page names its assets
/// relative to itself (`dev/catalog.js`), so they sit under its path.
pub(super) fn routes(router: Router<Endpoint>, endpoint: &str) -> Router<Endpoint> {
    let path = page_path(endpoint);
    let html: Bytes = page(endpoint).into();
    router
        .route(
            &path,
            get(move |State(e): State<Endpoint>, headers: HeaderMap| {
                let html = html.clone();
                async move { asset(&e, &headers, html, "text/html; charset=utf-8") }
            }),
        )
        .route(&format!("{path}/catalog.js"), get(js))
        .route(&format!("{path}/catalog.css"), get(css))
}

/// Refuses a page that would be served on an address other than loopback, unless forced.
pub(super) fn check_address(config: &super::HttpConfig, addr: SocketAddr) -> std::io::Result<()> {
    if config.catalog && !config.catalog_beyond_loopback && !addr.ip().to_canonical().is_loopback()
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "the catalog page lets whoever loads it call every tool, so it is served on a \
                 loopback address only, and {addr} is not one: bind 127.0.0.1 or [::1], turn \
                 the page off, or call HttpConfig::catalog_beyond_loopback(true) to serve it \
                 there anyway"
            ),
        ));
    }
    Ok(())
}

async fn js(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    asset(
        &endpoint,
        &headers,
        Bytes::from_static(JS.as_bytes()),
        "text/javascript; charset=utf-8",
    )
}

async fn css(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    asset(
        &endpoint,
        &headers,
        Bytes::from_static(CSS.as_bytes()),
        "text/css; charset=utf-8",
    )
}

/// One asset, after the endpoint's Origin and Host rules. (A page that is off has no
/// route: its paths get the endpoint's 404.)
fn asset(endpoint: &Endpoint, headers: &HeaderMap, body: Bytes, kind: &'static str) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, headers) {
        return forbidden;
    }
    if let Err(forbidden) = host_verdict(&endpoint.config, headers.get(header::HOST)) {
        return forbidden;
    }
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::HttpConfig;

    #[test]
    fn the_page_sits_under_the_endpoint() {
        assert_eq!(page_path("/mcp"), "/mcp/dev");
        assert_eq!(page_path("/"), "/dev");
        assert_eq!(page_path("/api/mcp/"), "/api/mcp/dev");
        assert_eq!(endpoint_from_page("/mcp"), "../mcp");
        assert_eq!(endpoint_from_page("/"), "./");
        assert_eq!(endpoint_from_page("/api/mcp/"), "./");
        assert!(page("/a\"<b>&").contains(r#"content="../a&quot;&lt;b&gt;&amp;""#));
    }

    #[test]
    fn only_loopback_addresses_pass_unless_forced() {
        let addr = |s: &str| s.parse::<SocketAddr>().expect("an address");
        let on = HttpConfig::default().catalog(true);
        for ok in [
            "127.0.0.1:3000",
            "127.255.255.254:1",
            "[::1]:3000",
            "[::ffff:127.0.0.1]:3000",
        ] {
            assert!(check_address(&on, addr(ok)).is_ok(), "{ok}");
        }
        // Just past 127.0.0.0/8 and ::1, and the wildcard addresses.
        for refused in [
            "128.0.0.0:1",
            "126.255.255.255:1",
            "0.0.0.0:3000",
            "[::]:3000",
            "[::2]:3000",
            "[::ffff:10.0.0.1]:3000",
            "192.168.1.10:3000",
        ] {
            let e = check_address(&on, addr(refused)).expect_err(refused);
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{refused}");
        }
        let forced = on.clone().catalog_beyond_loopback(true);
        assert!(check_address(&forced, addr("0.0.0.0:3000")).is_ok());
        assert!(check_address(&HttpConfig::default(), addr("0.0.0.0:3000")).is_ok());
    }
}
