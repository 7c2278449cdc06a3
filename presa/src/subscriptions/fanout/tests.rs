//! The fan-out's messages (every carried event read back as written; any other text
//! refused, never a panic), the order kept per origin and its bound, and two servers
//! sharing a [`MemoryFanout`]: what one publishes reaches the other's listeners, once,
//! and a gap reaches them as every list change.

use super::*;
use crate::subscriptions::{Feed, Offer};
use crate::{Implementation, Server};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::time::Duration;

fn carried() -> Vec<Event> {
    vec![
        Event::ToolsListChanged,
        Event::PromptsListChanged,
        Event::ResourcesListChanged,
        Event::ResourceUpdated("test://a/b?c#d".into()),
        Event::ResourceUpdated("x:\"quoted\" \\ and ünïcode".into()),
        Event::Topic {
            key: SESSION_CHANGED,
            id: "a-session_id".into(),
            method: SESSION_CHANGED_METHOD,
            params: serde_json::Map::new(),
        },
        Event::Session {
            id: "a-session".into(),
            message: json!({"id": 3, "result": {"action": "accept"}}),
        },
    ]
}

#[test]
fn every_carried_event_reads_back_as_written() {
    for (seq, event) in carried().into_iter().enumerate() {
        let seq = u64::MAX - 10 + seq as u64;
        let text = encode("origin-1", seq, &event).expect("carried");
        assert_eq!(
            decode(&text),
            Ok(Carried {
                origin: "origin-1".into(),
                seq,
                event
            }),
            "{text}"
        );
    }
}

#[test]
fn extension_events_are_not_carried() {
    let topic = Event::Topic {
        key: "taskIds",
        id: "t".into(),
        method: "notifications/tasks",
        params: serde_json::Map::new(),
    };
    assert_eq!(encode("o", 1, &topic), None);
}

#[test]
fn a_message_that_is_not_an_event_is_refused() {
    let bad = [
        "",
        "not json",
        "[]",
        "{}",
        r#"{"origin":"o","seq":1}"#,
        r#"{"origin":"o","seq":-1,"event":"tools/list_changed"}"#,
        r#"{"origin":"o","seq":18446744073709551616,"event":"tools/list_changed"}"#,
        r#"{"origin":1,"seq":1,"event":"tools/list_changed"}"#,
        r#"{"origin":"o","seq":1,"event":"tasks"}"#,
        r#"{"origin":"o","seq":1,"event":"resources/updated"}"#,
        r#"{"origin":"o","seq":1,"event":"resources/updated","uri":7}"#,
        r#"{"origin":"o","seq":1,"event":"tools/list_changed","uri":"x:y"}"#,
        r#"{"origin":"o","seq":1,"event":"tools/list_changed""#,
        r#"{"origin":"o","seq":1,"event":"session/changed"}"#,
        r#"{"origin":"o","seq":1,"event":"session/changed","id":7}"#,
        r#"{"origin":"o","seq":1,"event":"session/changed","id":"s","uri":"x:y"}"#,
        r#"{"origin":"o","seq":1,"event":"session/message","id":"s"}"#,
        r#"{"origin":"o","seq":1,"event":"session/message","message":{}}"#,
    ];
    for text in bad {
        assert!(decode(text).is_err(), "{text}");
    }
}

proptest! {
    /// Any text, and any JSON object with the members of a message, is read or refused,
    /// never a panic.
    #[test]
    fn decoding_never_panics(text in ".{0,200}") {
        let _ = decode(&text);
    }

    #[test]
    fn decoding_any_object_never_panics(
        origin in prop_oneof![Just(json!("o")), Just(json!(1)), Just(Value::Null)],
        seq in prop_oneof![any::<u64>().prop_map(Value::from), any::<i64>().prop_map(Value::from), Just(json!("1"))],
        event in prop_oneof![Just(json!(TOOLS)), Just(json!(UPDATED)), ".{0,20}".prop_map(Value::from)],
        uri in prop_oneof![Just(None), ".{0,40}".prop_map(|u| Some(Value::from(u))), Just(Some(json!([])))],
    ) {
        let mut m = json!({"origin": origin, "seq": seq, "event": event});
        if let (Some(uri), Some(o)) = (uri, m.as_object_mut()) {
            o.insert("uri".into(), uri);
        }
        let _ = decode(&m.to_string());
    }
}

#[test]
fn the_order_of_each_origin_is_checked_apart() {
    let mut s = Sequences::default();
    assert_eq!(s.check("a", 1), Order::First);
    assert_eq!(s.check("b", 7), Order::First, "a first heard at any number");
    assert_eq!(s.check("a", 2), Order::Next);
    assert_eq!(s.check("b", 8), Order::Next);
    assert_eq!(s.check("a", 5), Order::Gap { expected: 3 });
    assert_eq!(s.check("a", 6), Order::Next, "counted on from the gap");
    assert_eq!(s.check("a", 6), Order::Stale { last: 6 }, "heard twice");
    assert_eq!(s.check("a", 4), Order::Stale { last: 6 }, "out of order");
    assert_eq!(s.check("a", 7), Order::Next, "a stale one moves nothing");
}

/// [`MAX_ORIGINS`] origins are all remembered; one more forgets the one heard longest
/// ago, and only it.
#[test]
fn origins_are_remembered_up_to_their_bound() {
    let mut s = Sequences::default();
    for n in 0..MAX_ORIGINS {
        assert_eq!(s.check(&format!("o{n}"), 1), Order::First);
    }
    // `o0` heard again: `o1` is now the one heard longest ago.
    assert_eq!(s.check("o0", 2), Order::Next);
    assert_eq!(s.last.len(), MAX_ORIGINS, "all remembered at the bound");
    assert!((0..MAX_ORIGINS).all(|n| s.last.contains_key(&format!("o{n}"))));
    assert_eq!(s.check("past", 1), Order::First);
    assert_eq!(s.last.len(), MAX_ORIGINS);
    assert_eq!(s.check("o0", 3), Order::Next, "o0 was heard since");
    assert_eq!(s.check("o1", 9), Order::First, "o1 was forgotten");
}

// ---- two servers on one MemoryFanout ----

fn server(fanout: &MemoryFanout) -> Server {
    Server::builder(Implementation::new("t", "1"))
        .resource_notifications(true)
        .fanout(fanout.clone())
        .build()
        .expect("builds")
}

/// A listener on `server` wanting every list and updates of `test://a`.
fn feed(server: &Server) -> Feed {
    let feed = server.core.hub.feed(Offer {
        tools: true,
        prompts: true,
        resources_list: true,
        resources_subscribe: true,
    });
    assert!(feed.subscribe("test://a", true));
    feed
}

/// What `feed` hears next, as method names and updated URIs.
async fn next(feed: &Feed) -> Vec<String> {
    let got = tokio::time::timeout(Duration::from_secs(5), feed.next())
        .await
        .expect("an event within 5 s");
    got.into_iter()
        .map(|(method, params)| match params["uri"].as_str() {
            Some(uri) => format!("{method} {uri}"),
            None => method.to_owned(),
        })
        .collect()
}

/// Asserts `feed` hears nothing once the relay has had its chance.
async fn quiet(feed: &Feed) {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    let got = tokio::time::timeout(Duration::from_millis(100), feed.next()).await;
    assert!(got.is_err(), "heard {:?}", got.ok());
}

const LISTS: [&str; 3] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
];

#[tokio::test]
async fn what_one_server_publishes_reaches_the_others_listeners_once() {
    let fanout = MemoryFanout::new();
    let (a, b) = (server(&fanout), server(&fanout));
    let (on_a, on_b) = (feed(&a), feed(&b));
    b.add_tool(crate::Tool::new("t").handler(|_: crate::ToolCall| async { "x" }))
        .expect("adds");
    assert_eq!(next(&on_a).await, ["notifications/tools/list_changed"]);
    assert_eq!(next(&on_b).await, ["notifications/tools/list_changed"]);
    b.notify_resource_updated("test://a/1");
    b.notify_resource_updated("other://x");
    b.notify_resource_updated("test://a/2");
    assert_eq!(
        next(&on_a).await,
        [
            "notifications/resources/updated test://a/1",
            "notifications/resources/updated test://a/2"
        ]
    );
    // B's own events came back to B through the fan-out, and were not heard again.
    assert_eq!(
        next(&on_b).await,
        [
            "notifications/resources/updated test://a/1",
            "notifications/resources/updated test://a/2"
        ]
    );
    quiet(&on_b).await;
    quiet(&on_a).await;
}

#[tokio::test]
async fn a_gap_in_an_origins_order_publishes_every_list_change() {
    let fanout = MemoryFanout::new();
    let a = server(&fanout);
    let on_a = feed(&a);
    let send = |seq, event: &Event| fanout.send(encode("other", seq, event).expect("carried"));
    send(1, &Event::ResourceUpdated("test://a".into()));
    assert_eq!(
        next(&on_a).await,
        ["notifications/resources/updated test://a"]
    );
    // 2 is lost.
    send(3, &Event::ResourceUpdated("test://a".into()));
    let mut heard = next(&on_a).await;
    heard.sort();
    let mut expected: Vec<String> = LISTS.iter().map(|m| (*m).to_owned()).collect();
    expected.push("notifications/resources/updated test://a".into());
    expected.sort();
    assert_eq!(heard, expected);
    // In order again: the event alone.
    send(4, &Event::ResourceUpdated("test://a".into()));
    assert_eq!(
        next(&on_a).await,
        ["notifications/resources/updated test://a"]
    );
}

#[tokio::test]
async fn a_message_that_is_not_an_event_is_dropped_and_the_relay_goes_on() {
    let fanout = MemoryFanout::new();
    let a = server(&fanout);
    let on_a = feed(&a);
    fanout.send("not an event".into());
    fanout.send(r#"{"origin":"o","seq":1,"event":"nope"}"#.into());
    fanout.send(encode("o", 1, &Event::PromptsListChanged).expect("carried"));
    assert_eq!(next(&on_a).await, ["notifications/prompts/list_changed"]);
    quiet(&on_a).await;
}

#[tokio::test]
async fn a_gap_the_fanout_reports_publishes_every_list_change() {
    let fanout = MemoryFanout::new();
    let a = server(&fanout);
    let on_a = feed(&a);
    let _ = fanout.sender.send(Delivery::Gap);
    assert_eq!(next(&on_a).await, LISTS);
}

/// A relay [`MEMORY_CAPACITY`] messages behind still reads them all; one more behind
/// lags, and its listeners get every list change.
#[tokio::test]
async fn a_relay_that_falls_behind_publishes_every_list_change() {
    for (sent, lags) in [(MEMORY_CAPACITY, false), (MEMORY_CAPACITY + 1, true)] {
        let fanout = MemoryFanout::new();
        let a = server(&fanout);
        let on_a = feed(&a);
        // The test's runtime has one thread: the relay reads nothing until it yields.
        for seq in 1..=sent as u64 {
            fanout.send(
                encode("o", seq, &Event::ResourceUpdated("test://a".into())).expect("carried"),
            );
        }
        let heard = next(&on_a).await;
        let lists = heard.iter().filter(|m| LISTS.contains(&m.as_str())).count();
        assert_eq!(lists, if lags { 3 } else { 0 }, "{sent}: {heard:?}");
        assert!(
            heard.contains(&"notifications/resources/updated test://a".to_owned()),
            "{sent}: {heard:?}"
        );
    }
}

/// The relay ends with its server: its subscription to the fan-out is dropped.
#[tokio::test]
async fn the_relay_ends_with_its_server() {
    let fanout = MemoryFanout::new();
    let a = server(&fanout);
    assert_eq!(fanout.sender.receiver_count(), 1);
    drop(a);
    for _ in 0..100 {
        if fanout.sender.receiver_count() == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the relay still listens");
}

/// Without a runtime the relay waits for one: built outside it, the server relays once
/// it serves.
#[test]
fn a_server_built_outside_a_runtime_relays_once_it_serves() {
    let fanout = MemoryFanout::new();
    let a = server(&fanout);
    assert_eq!(fanout.sender.receiver_count(), 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let _router = a.router(crate::HttpConfig::default());
        assert_eq!(fanout.sender.receiver_count(), 1);
        // Once only.
        let _router = a.router(crate::HttpConfig::default());
        assert_eq!(fanout.sender.receiver_count(), 1);
    });
}
