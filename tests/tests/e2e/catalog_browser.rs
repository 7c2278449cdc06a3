//! The catalog page in a real browser: the fixture binary with `--dev`, its page loaded in
//! headless Chromium (the system's, over WebDriver: `presa_tests::browser`), the forms of
//! tools of different shapes filled and run, an elicitation answered over two rounds, a
//! resource, a template and a prompt read, each checked by what the page shows. Skipped,
//! saying so, where Chromium or chromedriver is absent.
//!
//! A second test serves a server with authorization: its page says the endpoint refused
//! it until the token field holds a token, and then calls as that token's subject.
//!
//! With `PRESA_SCREENSHOT=<file.png>` the test also saves a screenshot of the page (the
//! book's `book/src/developer-loop/catalog.png` is made so).

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use presa::auth::{Authorization, TokenError, TokenVerifier, VerifiedToken, Verifying};
use presa::{HttpConfig, Server, Tool, ToolCall};
use presa_tests::browser::Browser;
use presa_tests::http::Harness;
use presa_tests::replicas::Replicas;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What the page shows within the time the tests wait for anything.
const PATIENCE: Duration = presa_tests::wait::PATIENCE;

async fn find(c: &Client, css: &str) -> Element {
    c.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("the page shows {css}: {e}"))
}

/// Opens an item of the catalog (its `<details>`), and returns its selector.
async fn open(c: &Client, kind: &str, name: &str) -> String {
    let item = format!("details.{kind}[data-name='{name}']");
    find(c, &format!("{item} > summary"))
        .await
        .click()
        .await
        .expect("the item opens");
    item
}

/// Closes an item again, so the screenshot shows one open.
async fn close(c: &Client, item: &str) {
    find(c, &format!("{item} > summary"))
        .await
        .click()
        .await
        .expect("the item closes");
}

async fn fill(c: &Client, css: &str, text: &str) {
    let field = find(c, css).await;
    field.clear().await.expect("cleared");
    field.send_keys(text).await.expect("typed");
}

/// The text of an item's result once round `round` is shown.
async fn result(c: &Client, item: &str, round: u32) -> String {
    find(c, &format!("{item} .result[data-round='{round}']"))
        .await
        .text()
        .await
        .expect("the result's text")
}

#[tokio::test]
async fn the_catalog_page_runs_tools_elicits_and_reads_in_a_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let fixture = Replicas::start(env!("CARGO_BIN_EXE_fixture"), 1, &["--dev"], &[]).await;
    let c = &browser.client;
    c.goto(&format!("{}/dev", fixture.url(0)))
        .await
        .expect("the page loads");
    find(c, "body[data-loaded='true']").await;
    let title = find(c, "#server-name").await.text().await.expect("text");
    assert!(title.contains("presa conformance fixture"), "{title}");
    let toc = find(c, "#toc").await.text().await.expect("text");
    assert!(toc.contains("tools (41)"), "{toc}");

    // Strings and numbers.
    let item = open(c, "tool", "slow_compute").await;
    fill(c, &format!("{item} [data-field='seconds']"), "0.05").await;
    fill(c, &format!("{item} [data-field='label']"), "the sums").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(shown.contains("Completed the sums"), "{shown}");
    let raw = find(c, &format!("{item} .raw"))
        .await
        .html(true)
        .await
        .expect("html");
    assert!(raw.contains("Mcp-Name: slow_compute"), "{raw}");
    assert!(raw.contains("\"seconds\": 0.05"), "{raw}");
    close(c, &item).await;

    // An argument mirrored into a header (Mcp-Param-Region), base64-wrapped when it is
    // not plain ASCII.
    let item = open(c, "tool", "custom_header_region").await;
    fill(c, &format!("{item} [data-field='region']"), "Zürich").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(shown.contains("region: Zürich"), "{shown}");
    let raw = find(c, &format!("{item} .raw"))
        .await
        .html(true)
        .await
        .expect("html");
    assert!(
        raw.contains("Mcp-Param-Region: =?base64?WsO8cmljaA==?="),
        "{raw}"
    );
    close(c, &item).await;

    // An object nested through a $ref, an optional enum, strings.
    let item = open(c, "tool", "json_schema_2020_12_tool").await;
    fill(c, &format!("{item} [data-field='name']"), "Ada").await;
    fill(
        c,
        &format!("{item} [data-field='address.street']"),
        "1 Rua Augusta",
    )
    .await;
    fill(c, &format!("{item} [data-field='address.city']"), "Lisbon").await;
    find(c, &format!("{item} select[data-field='contactMethod']"))
        .await
        .select_by_label("email")
        .await
        .expect("selected");
    fill(
        c,
        &format!("{item} [data-field='email']"),
        "ada@example.com",
    )
    .await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(
        shown.contains(r#""address":{"#)
            && shown.contains(r#""city":"Lisbon""#)
            && shown.contains(r#""street":"1 Rua Augusta""#)
            && shown.contains(r#""contactMethod":"email""#)
            && shown.contains(r#""email":"ada@example.com""#)
            && !shown.contains("phone"),
        "{shown}"
    );
    close(c, &item).await;

    // Progress and log messages, read from the event stream as they come.
    let item = open(c, "tool", "test_tool_with_progress").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(
        shown.contains("Progress computation completed: 5050"),
        "{shown}"
    );
    let events = find(c, &format!("{item} .events"))
        .await
        .text()
        .await
        .expect("text");
    assert!(
        events.contains("progress 0/100 Starting computation")
            && events.contains("progress 100/100 Computation complete"),
        "{events}"
    );
    close(c, &item).await;
    let item = open(c, "tool", "test_logging_tool").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    result(c, &item, 1).await;
    let events = find(c, &format!("{item} .events"))
        .await
        .text()
        .await
        .expect("text");
    assert!(
        events.contains("[debug] conformance: debug message")
            && events.contains("[emergency] conformance: emergency message"),
        "{events}"
    );
    close(c, &item).await;

    // An elicitation in each of two rounds, answered through the forms the page builds
    // from the requested schemas; the request state goes back with each answer.
    let item = open(c, "tool", "test_input_required_result_multi_round").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    fill(
        c,
        &format!("{item} form.elicit[data-input='step1'] [data-field='name']"),
        "Alice",
    )
    .await;
    find(
        c,
        &format!("{item} form.elicit[data-input='step1'] button[data-action='accept']"),
    )
    .await
    .click()
    .await
    .expect("accept");
    fill(
        c,
        &format!("{item} form.elicit[data-input='step2'] [data-field='color']"),
        "blue",
    )
    .await;
    find(
        c,
        &format!("{item} form.elicit[data-input='step2'] button[data-action='accept']"),
    )
    .await
    .click()
    .await
    .expect("accept");
    let shown = result(c, &item, 3).await;
    assert!(
        shown.contains("Hello, Alice! Favourite colour: blue"),
        "{shown}"
    );
    let raw = find(c, &format!("{item} .raw"))
        .await
        .html(true)
        .await
        .expect("html");
    assert!(raw.contains("requestState"), "{raw}");
    close(c, &item).await;

    // A resource read, a template filled in, a prompt got.
    let item = open(c, "resource", "test://static-text").await;
    find(c, &format!("{item} button[data-read='test://static-text']"))
        .await
        .click()
        .await
        .expect("read");
    let shown = result(c, &item, 1).await;
    assert!(
        shown.contains("This is a static text resource for testing."),
        "{shown}"
    );
    close(c, &item).await;
    let item = open(c, "template", "test://template/{id}/data").await;
    fill(c, &format!("{item} [data-field='id']"), "42").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("read");
    let shown = result(c, &item, 1).await;
    assert!(
        shown.contains("Template resource data for id 42"),
        "{shown}"
    );
    close(c, &item).await;
    let item = open(c, "prompt", "test_prompt_with_arguments").await;
    fill(c, &format!("{item} [data-field='arg1']"), "<b>one</b>").await;
    fill(c, &format!("{item} [data-field='arg2']"), "two").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("get");
    let shown = result(c, &item, 1).await;
    // Shown as text: the markup it carries is not parsed.
    assert!(shown.contains("arg1='<b>one</b>', arg2='two'"), "{shown}");
    close(c, &item).await;

    // An enum, a boolean, an array with rows added, and a default already filled in.
    let item = open(c, "tool", "plan_trip").await;
    find(c, &format!("{item} select[data-field='cabin']"))
        .await
        .select_by_label("business")
        .await
        .expect("selected");
    find(c, &format!("{item} input[data-field='window']"))
        .await
        .click()
        .await
        .expect("ticked");
    for (i, city) in ["Lisbon", "Porto", "Braga"].iter().enumerate() {
        find(c, &format!("{item} button[data-add='stops']"))
            .await
            .click()
            .await
            .expect("row");
        fill(c, &format!("{item} [data-field='stops.{i}']"), city).await;
    }
    // The last row removed again.
    let rows = c
        .find_all(Locator::Css(&format!(
            "{item} [data-field='stops'] button.remove"
        )))
        .await
        .expect("rows");
    assert_eq!(rows.len(), 3);
    rows[2].click().await.expect("removed");
    let nights = find(c, &format!("{item} [data-field='nights']")).await;
    assert_eq!(
        nights.prop("value").await.expect("value").as_deref(),
        Some("2")
    );
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(
        shown.contains("Business trip, window seat, 2 nights each in: Lisbon -> Porto"),
        "{shown}"
    );

    if let Some(path) = std::env::var_os("PRESA_SCREENSHOT") {
        // The window's size is its outside: grown by what the browser keeps for itself,
        // so the page shown is the size asked for.
        let (w, h) = presa_tests::browser::WINDOW;
        let inner = c
            .execute("return window.innerHeight;", vec![])
            .await
            .expect("the viewport's height")
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(h);
        c.set_window_size(w, h + h.saturating_sub(inner))
            .await
            .expect("the window resized");
        find(c, &format!("{item} > summary"))
            .await
            .click()
            .await
            .expect("the item is in view");
        find(c, &format!("{item} > summary"))
            .await
            .click()
            .await
            .expect("the item is open again");
        let png = c.screenshot().await.expect("a screenshot");
        std::fs::write(&path, png).expect("the screenshot is written");
        eprintln!(
            "screenshot saved to {}",
            std::path::Path::new(&path).display()
        );
    }
    browser.close().await;
}

/// The canonical URI of the server with authorization: its tokens name it.
const RESOURCE: &str = "https://mcp.example.test/mcp";

/// Accepts the token `dev-token` (subject `dev`) and refuses any other.
struct OneToken;

impl TokenVerifier for OneToken {
    fn verify<'a>(&'a self, token: &'a str) -> Verifying<'a> {
        Box::pin(async move {
            if token != "dev-token" {
                return Err(TokenError::Invalid("unknown token".into()));
            }
            let mut t = VerifiedToken::default();
            t.subject = Some("dev".into());
            t.audience = vec![RESOURCE.to_owned()];
            t.expires_at = Some(SystemTime::now() + Duration::from_secs(3600));
            Ok(t)
        })
    }
}

#[tokio::test]
async fn the_catalog_page_calls_with_the_token_it_is_given() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let server = Server::builder(presa::Implementation::new("catalog-auth", "1"))
        .tool(
            Tool::new("whoami")
                .description("Says who is asking")
                .handler(|call: ToolCall| async move {
                    call.ctx
                        .principal()
                        .map_or("anonymous".to_owned(), |p| p.id().to_owned())
                }),
        )
        .canonical_uri(RESOURCE)
        .authorization(
            Authorization::with_verifier(Arc::new(OneToken))
                .authorization_server("https://auth.example.test"),
        )
        .build()
        .expect("builds");
    let h = Harness::start_with(server, HttpConfig::default().catalog(true)).await;
    let c = &browser.client;
    c.goto(&format!("{}/dev", h.url))
        .await
        .expect("the page loads");
    // Without a token the endpoint refuses the page's first call, and the page says so.
    let refused = find(c, "#status.bad").await.text().await.expect("text");
    assert!(refused.contains("server/discover failed"), "{refused}");
    fill(c, "#token", "dev-token").await;
    find(c, "#reload").await.click().await.expect("load");
    find(c, "body[data-loaded='true']").await;
    let item = open(c, "tool", "whoami").await;
    find(c, &format!("{item} form.call button.run"))
        .await
        .click()
        .await
        .expect("run");
    let shown = result(c, &item, 1).await;
    assert!(shown.contains("dev"), "{shown}");
    // The raw request shows that a token was sent, never the token itself.
    let raw = find(c, &format!("{item} .raw"))
        .await
        .html(true)
        .await
        .expect("html");
    assert!(
        raw.contains("Authorization: Bearer …") && !raw.contains("dev-token"),
        "{raw}"
    );
    browser.close().await;
}
