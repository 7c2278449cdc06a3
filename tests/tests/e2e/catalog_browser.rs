//! The catalog page in a real browser: the fixture binary with `--dev`, its page loaded in
//! headless Chromium (the system's, over WebDriver: `presa_tests::browser`), the forms of
//! tools of different shapes filled and run, an elicitation answered over two rounds, a
//! resource, a template and a prompt read, each checked by what the page shows. Skipped,
//! saying so, where Chromium or chromedriver is absent.
//!
//! With `PRESA_SCREENSHOT=<file.png>` the test also saves a screenshot of the page (the
//! book's `book/src/developer-loop/catalog.png` is made so).

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use presa_tests::browser::Browser;
use presa_tests::replicas::Replicas;
use std::time::Duration;

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
    assert!(toc.contains("tools (40)"), "{toc}");

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
        let png = c.screenshot().await.expect("a screenshot");
        std::fs::write(&path, png).expect("the screenshot is written");
        eprintln!(
            "screenshot saved to {}",
            std::path::Path::new(&path).display()
        );
    }
    browser.close().await;
}
