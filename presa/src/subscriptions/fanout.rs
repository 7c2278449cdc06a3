//! Events carried between replicas: the [`Fanout`] seam a server hands its catalog and
//! resource events to, the message each event travels as, and the relay that publishes
//! what other replicas sent to this replica's listeners.
//!
//! A server with a fan-out ([`ServerBuilder::fanout`](crate::ServerBuilder::fanout))
//! publishes each list change and resource update to its own hub as before, then hands it
//! to the fan-out as a small JSON message naming the server instance it came from (its
//! origin, random per built server) and its place in that origin's sequence. Extension
//! events ([`Event::Topic`], Tasks' status changes) are not carried: Tasks relays its
//! changes through its store. One topic is: a legacy session's record changed
//! ([`SESSION_CHANGED`]), so the replicas holding the session read it again. So is a
//! message for a legacy session ([`Event::Session`]: a client's answer or cancellation
//! that reached another replica than the one waiting for it).
//!
//! The relay receives every message of every replica, drops its own origin's, and
//! publishes the rest to the local hub only (never to the fan-out again, so nothing
//! loops). Messages of one origin come in the order it sent them; a message missing from
//! that order (a gap), one out of it, a receiver that fell behind, or a fan-out that
//! says it may have missed messages ([`Delivery::Gap`]) are all met the same way: every
//! list change is published locally, since listeners coalesce them and a client re-reads
//! the lists it watches. A lost resource update cannot be re-made; a listener on a
//! resource hears its next one.

use super::{Event, Hub, SESSION_CHANGED, SESSION_CHANGED_METHOD};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Carries events between the replicas of a server: what one replica
/// [`send`](Fanout::send)s, every replica sharing the fan-out (the sender included)
/// receives through its [`subscribe`](Fanout::subscribe)rs, in the order each sender
/// sent them.
///
/// presa ships [`MemoryFanout`] (replicas in one process, and tests) and, with the
/// `postgres` feature, `presa::tasks::PgFanout` (replicas sharing a PostgreSQL database,
/// from `PgStore::fanout`). Install one with
/// [`ServerBuilder::fanout`](crate::ServerBuilder::fanout).
pub trait Fanout: Send + Sync + 'static {
    /// Hands `message` to every replica. Never blocks, and may be called from any thread:
    /// the fan-out queues the message, up to a bound of its own, and past it drops the
    /// message with a warning (the receivers then see a gap in the sender's sequence).
    fn send(&self, message: String);

    /// A new subscription: every message sent from now on, by any replica. A
    /// subscription that falls behind gets `RecvError::Lagged`; [`Delivery::Gap`] says
    /// the fan-out itself may have missed messages (a connection made again). Called
    /// from within a Tokio runtime, so it may start a background task the first time.
    fn subscribe(&self) -> broadcast::Receiver<Delivery>;
}

/// What a [`Fanout`] subscription receives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// A message some replica sent.
    Message(String),
    /// Messages may have been missed (the fan-out's connection dropped and was made
    /// again): the receiver publishes every list change locally.
    Gap,
}

/// The subscriptions a [`MemoryFanout`] gives may fall this far behind before they lag.
const MEMORY_CAPACITY: usize = 1024;

/// A [`Fanout`] within one process: clones share it, so servers built with clones of one
/// hear each other. For tests, and for several servers in one process.
#[derive(Clone, Debug)]
pub struct MemoryFanout {
    sender: broadcast::Sender<Delivery>,
}

impl Default for MemoryFanout {
    fn default() -> Self {
        MemoryFanout {
            sender: broadcast::channel(MEMORY_CAPACITY).0,
        }
    }
}

impl MemoryFanout {
    /// A fan-out no server shares yet.
    pub fn new() -> MemoryFanout {
        MemoryFanout::default()
    }
}

/// Sending is a broadcast: it never blocks, and a subscription more than 1024 messages
/// behind lags (its server publishes every list change).
impl Fanout for MemoryFanout {
    fn send(&self, message: String) {
        // No subscriber now is no error: no server listens yet.
        let _ = self.sender.send(Delivery::Message(message));
    }

    fn subscribe(&self) -> broadcast::Receiver<Delivery> {
        self.sender.subscribe()
    }
}

/// An event as it travels: the origin that published it and its place in the origin's
/// sequence (from 1).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Carried {
    pub(crate) origin: String,
    pub(crate) seq: u64,
    pub(crate) event: Event,
}

/// The names events travel under.
const TOOLS: &str = "tools/list_changed";
const PROMPTS: &str = "prompts/list_changed";
const RESOURCES: &str = "resources/list_changed";
const UPDATED: &str = "resources/updated";
const SESSION: &str = "session/changed";
const SESSION_MESSAGE: &str = "session/message";

/// What a message holds, read.
#[derive(serde::Deserialize)]
struct Message {
    origin: String,
    seq: u64,
    event: String,
    #[serde(default)]
    uri: Option<String>,
    /// The session of a `session/changed` or `session/message` event.
    #[serde(default)]
    id: Option<String>,
    /// The message of a `session/message` event.
    #[serde(default)]
    message: Option<serde_json::Value>,
}

/// The message carrying `event` from `origin` as its `seq`th; `None` for an event that
/// is not carried (an extension's).
pub(crate) fn encode(origin: &str, seq: u64, event: &Event) -> Option<String> {
    let (name, uri) = match event {
        Event::ToolsListChanged => (TOOLS, None),
        Event::PromptsListChanged => (PROMPTS, None),
        Event::ResourcesListChanged => (RESOURCES, None),
        Event::ResourceUpdated(uri) => (UPDATED, Some(uri)),
        Event::Topic {
            key: SESSION_CHANGED,
            id,
            ..
        } => {
            let message =
                serde_json::json!({"origin": origin, "seq": seq, "event": SESSION, "id": id});
            return Some(message.to_string());
        }
        Event::Session { id, message } => {
            let message = serde_json::json!({
                "origin": origin, "seq": seq, "event": SESSION_MESSAGE, "id": id, "message": message
            });
            return Some(message.to_string());
        }
        Event::Topic { .. } => return None,
    };
    let mut message = serde_json::json!({"origin": origin, "seq": seq, "event": name});
    if let (Some(uri), Some(object)) = (uri, message.as_object_mut()) {
        object.insert("uri".into(), uri.as_str().into());
    }
    Some(message.to_string())
}

/// The event a message carries, or why it is not one.
pub(crate) fn decode(text: &str) -> Result<Carried, String> {
    let m: Message = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let event = match (m.event.as_str(), m.uri) {
        (SESSION, None) => Event::Topic {
            key: SESSION_CHANGED,
            id: m.id.ok_or("a session/changed event without an id")?,
            method: SESSION_CHANGED_METHOD,
            params: serde_json::Map::new(),
        },
        (SESSION, Some(_)) => return Err("a session/changed event with a uri".into()),
        (SESSION_MESSAGE, None) => Event::Session {
            id: m.id.ok_or("a session/message event without an id")?,
            message: m
                .message
                .ok_or("a session/message event without a message")?,
        },
        (SESSION_MESSAGE, Some(_)) => return Err("a session/message event with a uri".into()),
        (TOOLS, None) => Event::ToolsListChanged,
        (PROMPTS, None) => Event::PromptsListChanged,
        (RESOURCES, None) => Event::ResourcesListChanged,
        (UPDATED, Some(uri)) => Event::ResourceUpdated(uri),
        (UPDATED, None) => return Err("a resources/updated event without a uri".into()),
        (name @ (TOOLS | PROMPTS | RESOURCES), Some(_)) => {
            return Err(format!("a {name} event with a uri"));
        }
        (other, _) => return Err(format!("an unknown event {other:?}")),
    };
    Ok(Carried {
        origin: m.origin,
        seq: m.seq,
        event,
    })
}

/// Most origins whose last sequence number the relay remembers: a replica gets a new
/// origin each time it starts, so the oldest heard is forgotten past it (its next
/// message, if it ever sends one, is taken as a first).
pub(crate) const MAX_ORIGINS: usize = 1024;

/// Where a message stands in its origin's sequence.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// The first heard of its origin.
    First,
    /// The one after the last heard.
    Next,
    /// Past the one after the last heard: some were missed.
    Gap { expected: u64 },
    /// At or before the last heard: out of order, or heard twice.
    Stale { last: u64 },
}

/// The last sequence number heard of each origin, for [`MAX_ORIGINS`] origins.
#[derive(Default)]
pub(crate) struct Sequences {
    /// Per origin: its last sequence number, and when it was last heard (a count of
    /// messages).
    last: HashMap<String, (u64, u64)>,
    heard: u64,
}

impl Sequences {
    /// Where `seq` of `origin` stands; remembers it when it is the latest.
    pub(crate) fn check(&mut self, origin: &str, seq: u64) -> Order {
        self.heard += 1;
        let heard = self.heard;
        if let Some((last, at)) = self.last.get_mut(origin) {
            *at = heard;
            let order = match seq.checked_sub(*last) {
                Some(1) => Order::Next,
                Some(0) | None => return Order::Stale { last: *last },
                Some(_) => Order::Gap {
                    expected: *last + 1,
                },
            };
            *last = seq;
            return order;
        }
        if self.last.len() >= MAX_ORIGINS
            && let Some(oldest) = self
                .last
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(origin, _)| origin.clone())
        {
            self.last.remove(&oldest);
        }
        self.last.insert(origin.to_owned(), (seq, heard));
        Order::First
    }
}

/// A server's side of its fan-out: what it sends its events through, as which origin,
/// and the relay publishing what it receives.
pub(crate) struct Outgoing {
    fanout: Arc<dyn Fanout>,
    origin: String,
    /// The last sequence number sent, held while sending, so the fan-out is handed
    /// messages in the order of their numbers.
    sent: Mutex<u64>,
    /// Whether the relay was started.
    started: AtomicBool,
    /// Ends the relay when the server (holding this) is dropped.
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl Outgoing {
    /// The side of a server sending as `origin` through `fanout`.
    pub(crate) fn new(fanout: Arc<dyn Fanout>, origin: String) -> Outgoing {
        let stop = CancellationToken::new();
        Outgoing {
            fanout,
            origin,
            sent: Mutex::new(0),
            started: AtomicBool::new(false),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
        }
    }

    /// Hands `event` to the fan-out, when it is carried.
    pub(crate) fn carry(&self, event: &Event) {
        // Extension events are not carried (their own stores carry them), and take no
        // lock; a legacy session's change is.
        if matches!(event, Event::Topic { key, .. } if *key != SESSION_CHANGED) {
            return;
        }
        let mut sent = self
            .sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // 2^64 events from one server are out of reach; wrapping only keeps this total.
        let seq = sent.wrapping_add(1);
        if let Some(message) = encode(&self.origin, seq, event) {
            *sent = seq;
            self.fanout.send(message);
        }
    }

    /// Starts (once) the relay publishing other replicas' events to `hub`, when called
    /// within a Tokio runtime (else a later call starts it). It holds the hub weakly and
    /// ends with the server.
    pub(crate) fn start(&self, hub: &Arc<Hub>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let _entered = runtime.enter();
        let deliveries = self.fanout.subscribe();
        runtime.spawn(relay(
            deliveries,
            Arc::downgrade(hub),
            self.origin.clone(),
            self.stop.clone(),
        ));
    }
}

/// Publishes every list change to `hub`: what a gap may have hidden.
fn publish_lists(hub: &Hub) {
    for event in [
        Event::ToolsListChanged,
        Event::PromptsListChanged,
        Event::ResourcesListChanged,
    ] {
        hub.publish(&event);
    }
}

/// The relay: every message of another origin published to the hub, in order, until
/// `stop` or the fan-out closes.
async fn relay(
    mut deliveries: broadcast::Receiver<Delivery>,
    hub: Weak<Hub>,
    origin: String,
    stop: CancellationToken,
) {
    use broadcast::error::RecvError;
    let mut sequences = Sequences::default();
    loop {
        let delivery = tokio::select! {
            () = stop.cancelled() => return,
            delivery = deliveries.recv() => delivery,
        };
        let Some(hub) = hub.upgrade() else { return };
        let text = match delivery {
            Ok(Delivery::Message(text)) => text,
            Ok(Delivery::Gap) => {
                tracing::info!("the fan-out may have missed events: publishing every list change");
                publish_lists(&hub);
                continue;
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "the fan-out relay fell behind: publishing every list change"
                );
                publish_lists(&hub);
                continue;
            }
            Err(RecvError::Closed) => {
                tracing::warn!("the fan-out closed: events of other replicas are no longer heard");
                return;
            }
        };
        let carried = match decode(&text) {
            Ok(carried) => carried,
            Err(why) => {
                tracing::warn!("a fan-out message was dropped: {why}");
                continue;
            }
        };
        if carried.origin == origin {
            continue;
        }
        match sequences.check(&carried.origin, carried.seq) {
            Order::First | Order::Next => {}
            Order::Gap { expected } => {
                tracing::warn!(
                    origin = %carried.origin,
                    expected,
                    got = carried.seq,
                    "events of another replica were missed: publishing every list change"
                );
                publish_lists(&hub);
            }
            Order::Stale { last } => {
                tracing::warn!(
                    origin = %carried.origin,
                    last,
                    got = carried.seq,
                    "an event of another replica came out of order"
                );
            }
        }
        hub.publish(&carried.event);
    }
}

#[cfg(test)]
mod tests;
