//! Subscriptions (wire section 11): the hub that fans catalog and resource events out to
//! open `subscriptions/listen` streams, and the listen method itself.
//!
//! Each listener has a bounded mailbox, not a queue: list-changed events coalesce into
//! one pending flag per list, and resource updates into a set of URIs (at most
//! [`MAX_PENDING_UPDATES`]). A listener too slow to keep up therefore never grows memory
//! and never loses a list change; if its set of pending updates overflows, its stream is
//! ended gracefully, and the client re-reads what it cares about and listens again.
//!
//! Streams are bounded per caller as well as in total ([`SubscriptionConfig`]): the
//! transports cap how many are open at once (`HttpConfig::max_streams`, stdio's
//! `max_in_flight`); here each principal, and all anonymous callers together, may hold
//! only so many, and a stream may be given a longest life, after which it ends as
//! gracefully as at shutdown.
//!
//! Across replicas, a server given a [`Fanout`] hands its list changes and resource
//! updates to it and publishes what the other replicas hand theirs (see `fanout`).

use crate::context::RequestContext;
use crate::error::Error;
use crate::wire::meta::KEY_SUBSCRIPTION_ID;
use crate::wire::uri::is_absolute_uri;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

mod fanout;

pub(crate) use fanout::Outgoing;
pub use fanout::{Delivery, Fanout, MemoryFanout};

/// Most distinct resource URIs pending for one listener before its stream is ended.
pub const MAX_PENDING_UPDATES: usize = 1024;
/// Most URIs one listen request may subscribe to.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1000;

/// What a `subscriptions/listen` past a caller's bound is refused with: the words (and,
/// over HTTP, the 503 with -32603) of the transport's own bound on open streams.
const TOO_MANY_STREAMS: &str = "Too many open subscription streams; try again later";

/// Bounds on `subscriptions/listen` streams that hold over every transport, set with
/// [`ServerBuilder::subscriptions`](crate::ServerBuilder::subscriptions). (How many are
/// open at once in all is the transport's: `HttpConfig::max_streams`, and over stdio
/// `StdioConfig::max_in_flight`.)
///
/// A caller is told apart by its principal, which the server's principal function
/// ([`ServerBuilder::principal`](crate::ServerBuilder::principal)) derives from the
/// request. Callers it gives no principal (all of them when the server has no principal
/// function, and every stdio request unless the function names one without headers)
/// cannot be told apart, so they share one bound, [`max_anonymous`](Self::max_anonymous),
/// as if they were one caller; by default it is no bound beyond the transport's, since
/// on a server without principals it bounds every caller together.
///
/// Past either bound a listen is refused at once, before its acknowledgement, with
/// -32603 `Too many open subscription streams; try again later` (over HTTP, status
/// 503), as past the transport's bound; a place frees when one of the caller's streams
/// ends.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubscriptionConfig {
    /// Most streams one principal may hold open at once (default 32, an eighth of
    /// HTTP's default `max_streams`: a client needs one stream per filter it keeps, and
    /// no one caller can hold all of the server's; `usize::MAX`: no bound).
    pub max_per_principal: usize,
    /// Most streams all callers without a principal may hold open at once, together
    /// (default `usize::MAX`: no bound but the transport's).
    pub max_anonymous: usize,
    /// Longest a stream stays open (default `None`: until the client or the server ends
    /// it). Past it the server ends the stream gracefully, as at shutdown (over HTTP the
    /// empty listen result, over stdio `notifications/cancelled` for the listen id), and
    /// the client listens anew. Off by default: a client re-reads what it watches after
    /// every end, and events published before it listens again reach no stream, so
    /// presa does not end healthy streams unasked; set it where streams must not live on
    /// for ever (credentials that expire, load moved between replicas).
    pub max_lifetime: Option<Duration>,
}

impl Default for SubscriptionConfig {
    fn default() -> Self {
        SubscriptionConfig {
            max_per_principal: 32,
            max_anonymous: usize::MAX,
            max_lifetime: None,
        }
    }
}

impl SubscriptionConfig {
    /// Sets the most streams one principal may hold open at once (`usize::MAX`: no
    /// bound; 0 refuses every stream of a principal).
    pub fn max_per_principal(mut self, n: usize) -> Self {
        self.max_per_principal = n;
        self
    }

    /// Sets the most streams all callers without a principal may hold open at once,
    /// together (`usize::MAX`: no bound; 0 refuses every anonymous stream).
    pub fn max_anonymous(mut self, n: usize) -> Self {
        self.max_anonymous = n;
        self
    }

    /// Sets the longest a stream stays open before the server ends it gracefully
    /// (`None`: no bound).
    pub fn max_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.max_lifetime = lifetime;
        self
    }
}

/// The topic key of a legacy session whose shared record changed on some replica (its
/// log level, its subscriptions, its end): the id is the session's. Carried by the
/// fan-out, so the replicas holding the session read its record again.
pub(crate) const SESSION_CHANGED: &str = "presa/session";

/// The method a [`SESSION_CHANGED`] event is published under (it never reaches a client).
pub(crate) const SESSION_CHANGED_METHOD: &str = "presa/sessionChanged";

/// An event listeners may receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated(String),
    /// An extension's event about one topic (for Tasks: a task's new state), delivered
    /// to streams whose filter holds the topic under `key`.
    #[cfg_attr(
        not(feature = "tasks"),
        allow(dead_code, reason = "sent by the Tasks extension")
    )]
    Topic {
        key: &'static str,
        id: String,
        method: &'static str,
        params: Map<String, Value>,
    },
    /// A message for legacy session `id` that reached a replica other than the one
    /// waiting for it: the client's answer to a request the server sent it
    /// (`{"id", "result"|"error"}`), its cancellation of a request
    /// (`{"cancel": requestId}`), or news of one of the session's streams
    /// (`{"stream": n, "taken"|"written": …}`, read by the HTTP transport). Goes to the
    /// session's inbox, never to a listener.
    Session {
        id: String,
        message: Value,
    },
}

/// What one stream asked for, narrowed to what the server offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    subscriptions: Vec<String>,
    topics: std::collections::BTreeMap<&'static str, BTreeSet<String>>,
}

impl Filter {
    /// Adds an extension's accepted topics (acknowledged under `key` when any).
    pub(crate) fn add_topics(&mut self, key: &'static str, topics: Vec<String>) {
        self.topics.entry(key).or_default().extend(topics);
    }

    fn wants(&self, event: &Event) -> bool {
        match event {
            Event::ToolsListChanged => self.tools,
            Event::PromptsListChanged => self.prompts,
            Event::ResourcesListChanged => self.resources,
            // The URI itself or a sub-resource of it.
            Event::ResourceUpdated(uri) => self.subscriptions.iter().any(|s| {
                uri == s
                    || uri
                        .strip_prefix(s.as_str())
                        .is_some_and(|rest| rest.starts_with(['/', '#', '?']))
            }),
            Event::Topic { key, id, .. } => self.topics.get(key).is_some_and(|t| t.contains(id)),
            Event::Session { .. } => false,
        }
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.tools {
            m.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts {
            m.insert("promptsListChanged".into(), Value::Bool(true));
        }
        if self.resources {
            m.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !self.subscriptions.is_empty() {
            m.insert("resourceSubscriptions".into(), json!(self.subscriptions));
        }
        for (key, topics) in &self.topics {
            if !topics.is_empty() {
                m.insert((*key).to_owned(), json!(topics));
            }
        }
        Value::Object(m)
    }
}

/// The method and params of an extension's event.
type TopicEvent = (&'static str, Map<String, Value>);

#[derive(Default)]
struct Pending {
    tools: bool,
    prompts: bool,
    resources: bool,
    updated: BTreeSet<String>,
    /// The latest event per topic: a newer state replaces an older one.
    topics: std::collections::BTreeMap<(&'static str, String), TopicEvent>,
    overflow: bool,
}

struct Listener {
    /// What it wants; a legacy session's subscriptions change while it lives.
    filter: Mutex<Filter>,
    pending: Mutex<Pending>,
    wake: Notify,
}

/// Fans events out to listeners.
#[derive(Default)]
pub(crate) struct Hub {
    listeners: Mutex<HashMap<u64, Arc<Listener>>>,
    next: AtomicU64,
    /// Cancelled to end the streams open now; replaced, so later streams are unaffected.
    closed: Mutex<CancellationToken>,
    /// The bounds on listen streams.
    limits: SubscriptionConfig,
    /// Listen streams open now, by principal (`None`: every anonymous caller); a
    /// principal with none open has no entry.
    holders: Mutex<HashMap<Option<String>, usize>>,
    /// The inboxes of the legacy sessions held here whose records are shared, by id.
    inboxes: Mutex<HashMap<String, mpsc::Sender<Value>>>,
}

/// Most messages a session's inbox holds unread; past it one is dropped (its sender
/// meets an unanswered request's timeout, as with a lost message).
const INBOX: usize = 64;

/// A legacy session's inbox ([`Event::Session`]); dropping it closes it.
pub(crate) struct Inbox {
    hub: std::sync::Weak<Hub>,
    id: String,
    rx: mpsc::Receiver<Value>,
}

impl Inbox {
    /// The next message; `None` once the inbox was replaced.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        self.rx.recv().await
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        // Closed first, so its sender reads as closed (one that replaced it does not).
        self.rx.close();
        if let Some(hub) = self.hub.upgrade()
            && let Ok(mut inboxes) = hub.inboxes.lock()
            && inboxes.get(&self.id).is_some_and(mpsc::Sender::is_closed)
        {
            inboxes.remove(&self.id);
        }
    }
}

/// A listen stream's place under its caller's bound, given back when dropped.
struct Place<'a> {
    hub: &'a Hub,
    principal: Option<String>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut holders = self
            .hub
            .holders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = holders.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                holders.remove(&self.principal);
            }
        }
    }
}

/// Removes a listener from the hub when its stream ends, however it ends.
struct Registration<'a> {
    hub: &'a Hub,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut l) = self.hub.listeners.lock() {
            l.remove(&self.id);
        }
        crate::observe::listen_closed();
    }
}

impl Hub {
    /// A hub whose listen streams keep `limits`.
    pub(crate) fn new(limits: SubscriptionConfig) -> Hub {
        Hub {
            limits,
            ..Hub::default()
        }
    }

    /// Takes a place for one more stream of `principal`, unless it holds its bound's
    /// worth already.
    fn admit(&self, principal: Option<&str>) -> Option<Place<'_>> {
        let bound = match principal {
            Some(_) => self.limits.max_per_principal,
            None => self.limits.max_anonymous,
        };
        let principal = principal.map(str::to_owned);
        let mut holders = self
            .holders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = holders.get(&principal).copied().unwrap_or(0);
        if held >= bound {
            return None;
        }
        holders.insert(principal.clone(), held + 1);
        Some(Place {
            hub: self,
            principal,
        })
    }

    /// Opens the inbox of legacy session `id` (replacing one opened before).
    pub(crate) fn inbox(self: &Arc<Self>, id: &str) -> Inbox {
        let (tx, rx) = mpsc::channel(INBOX);
        if let Ok(mut inboxes) = self.inboxes.lock() {
            inboxes.insert(id.to_owned(), tx);
        }
        Inbox {
            hub: Arc::downgrade(self),
            id: id.to_owned(),
            rx,
        }
    }

    pub(crate) fn publish(&self, event: &Event) {
        if let Event::Session { id, message } = event {
            let inbox = self.inboxes.lock().ok().and_then(|i| i.get(id).cloned());
            if let Some(inbox) = inbox
                && inbox.try_send(message.clone()).is_err()
            {
                tracing::debug!(
                    "a legacy session's inbox is full or closed: a message was dropped"
                );
            }
            return;
        }
        let Ok(listeners) = self.listeners.lock() else {
            return;
        };
        for l in listeners
            .values()
            .filter(|l| l.filter.lock().is_ok_and(|f| f.wants(event)))
        {
            if let Ok(mut p) = l.pending.lock() {
                match event {
                    Event::ToolsListChanged => p.tools = true,
                    Event::PromptsListChanged => p.prompts = true,
                    Event::ResourcesListChanged => p.resources = true,
                    Event::ResourceUpdated(uri) => {
                        if p.updated.len() >= MAX_PENDING_UPDATES && !p.updated.contains(uri) {
                            // The update itself is dropped (the stream is told that
                            // some were, by the overflow).
                            crate::observe::listen_event_dropped();
                            p.overflow = true;
                        } else {
                            p.updated.insert(uri.clone());
                        }
                    }
                    Event::Topic {
                        key,
                        id,
                        method,
                        params,
                    } => {
                        p.topics
                            .insert((*key, id.clone()), (*method, params.clone()));
                    }
                    Event::Session { .. } => {}
                }
            }
            l.wake.notify_one();
        }
    }

    /// Whether an open stream follows topic `id` under `key`.
    #[cfg(feature = "tasks")]
    pub(crate) fn wants_topic(&self, key: &str, id: &str) -> bool {
        self.listeners.lock().is_ok_and(|listeners| {
            listeners.values().any(|l| {
                l.filter
                    .lock()
                    .is_ok_and(|f| f.topics.get(key).is_some_and(|t| t.contains(id)))
            })
        })
    }

    /// Every topic id open streams follow under `key` (each stream follows a bounded
    /// number).
    #[cfg(feature = "tasks")]
    pub(crate) fn topic_ids(&self, key: &str) -> Vec<String> {
        let mut ids = BTreeSet::new();
        if let Ok(listeners) = self.listeners.lock() {
            for l in listeners.values() {
                if let Ok(f) = l.filter.lock()
                    && let Some(t) = f.topics.get(key)
                {
                    ids.extend(t.iter().cloned());
                }
            }
        }
        ids.into_iter().collect()
    }

    /// Ends every stream open now gracefully (server shutdown); later streams are not
    /// affected.
    pub(crate) fn close(&self) {
        if let Ok(mut token) = self.closed.lock() {
            token.cancel();
            *token = CancellationToken::new();
        }
    }

    fn closed_token(&self) -> CancellationToken {
        self.closed.lock().map(|t| t.clone()).unwrap_or_else(|_| {
            let t = CancellationToken::new();
            t.cancel();
            t
        })
    }

    /// The number of open streams.
    pub(crate) fn open_streams(&self) -> usize {
        self.listeners.lock().map(|l| l.len()).unwrap_or(0)
    }

    fn register(&self, filter: Filter) -> (Registration<'_>, Arc<Listener>) {
        let (id, listener) = self.add(filter);
        crate::observe::listen_opened();
        (Registration { hub: self, id }, listener)
    }

    /// Adds a listener; whoever adds it removes it.
    fn add(&self, filter: Filter) -> (u64, Arc<Listener>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let listener = Arc::new(Listener {
            filter: Mutex::new(filter),
            pending: Mutex::default(),
            wake: Notify::new(),
        });
        if let Ok(mut l) = self.listeners.lock() {
            l.insert(id, Arc::clone(&listener));
        }
        (id, listener)
    }
}

/// A legacy session's share of the hub: the list changes the server offers and updates of
/// the resources the session subscribed to, for as long as the session lives (dropping
/// the feed leaves the hub).
pub(crate) struct Feed {
    hub: Arc<Hub>,
    id: u64,
    listener: Arc<Listener>,
}

impl Hub {
    /// A feed for a legacy session, of the list changes in `offer`.
    pub(crate) fn feed(self: &Arc<Self>, offer: Offer) -> Feed {
        let filter = Filter {
            tools: offer.tools,
            prompts: offer.prompts,
            resources: offer.resources_list,
            ..Filter::default()
        };
        let (id, listener) = self.add(filter);
        Feed {
            hub: Arc::clone(self),
            id,
            listener,
        }
    }
}

impl Feed {
    /// Subscribes to (`on`) or unsubscribes from updates of `uri` and the resources it
    /// contains. Returns false past [`MAX_RESOURCE_SUBSCRIPTIONS`].
    pub(crate) fn subscribe(&self, uri: &str, on: bool) -> bool {
        let Ok(mut filter) = self.listener.filter.lock() else {
            return false;
        };
        let known = filter.subscriptions.iter().position(|s| s == uri);
        match (on, known) {
            (true, None) if filter.subscriptions.len() >= MAX_RESOURCE_SUBSCRIPTIONS => false,
            (true, None) => {
                filter.subscriptions.push(uri.to_owned());
                true
            }
            (false, Some(at)) => {
                filter.subscriptions.swap_remove(at);
                true
            }
            _ => true,
        }
    }

    /// Also hears the [`SESSION_CHANGED`] events of session `id`.
    pub(crate) fn follow_session(&self, id: &str) {
        if let Ok(mut filter) = self.listener.filter.lock() {
            filter.add_topics(SESSION_CHANGED, vec![id.to_owned()]);
        }
    }

    /// The URIs subscribed to, in the order they were.
    pub(crate) fn subscriptions(&self) -> Vec<String> {
        self.listener
            .filter
            .lock()
            .map(|f| f.subscriptions.clone())
            .unwrap_or_default()
    }

    /// Waits for events, then takes them as the notifications a legacy session sends
    /// (method and params). An overflow of pending updates is reported as a
    /// `notifications/resources/list_changed`, after which the client re-reads what it
    /// watches.
    pub(crate) async fn next(&self) -> Vec<(&'static str, Value)> {
        loop {
            let pending = match self.listener.pending.lock() {
                Ok(mut p) => std::mem::take(&mut *p),
                Err(_) => return Vec::new(),
            };
            let mut out = Vec::new();
            if pending.tools {
                out.push(("notifications/tools/list_changed", json!({})));
            }
            if pending.prompts {
                out.push(("notifications/prompts/list_changed", json!({})));
            }
            if pending.resources || pending.overflow {
                out.push(("notifications/resources/list_changed", json!({})));
            }
            for uri in pending.updated {
                out.push(("notifications/resources/updated", json!({ "uri": uri })));
            }
            // A feed follows no topic but its session's changes.
            if !pending.topics.is_empty() {
                out.push((SESSION_CHANGED_METHOD, Value::Object(Map::new())));
            }
            if !out.is_empty() {
                return out;
            }
            self.listener.wake.notified().await;
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Ok(mut l) = self.hub.listeners.lock() {
            l.remove(&self.id);
        }
    }
}

/// What the server can produce, for narrowing filters and advertising capabilities.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offer {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources_list: bool,
    pub(crate) resources_subscribe: bool,
}

/// Reads and checks the `notifications` filter of a listen request.
pub(crate) fn parse_filter(params: &Map<String, Value>, offer: Offer) -> Result<Filter, Error> {
    let Some(Value::Object(n)) = params.get("notifications") else {
        return Err(Error::invalid_params(
            "subscriptions/listen requires a notifications object",
        ));
    };
    let flag = |key: &str| -> Result<bool, Error> {
        match n.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Error::invalid_params(format!(
                "subscriptions/listen {key} must be a boolean"
            ))),
        }
    };
    let tools = flag("toolsListChanged")?;
    let prompts = flag("promptsListChanged")?;
    let resources = flag("resourcesListChanged")?;
    let subscriptions = match n.get("resourceSubscriptions") {
        None => Vec::new(),
        Some(Value::Array(uris)) => {
            if uris.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                return Err(Error::invalid_params(format!(
                    "subscriptions/listen resourceSubscriptions may hold at most {MAX_RESOURCE_SUBSCRIPTIONS} URIs"
                )));
            }
            uris.iter()
                .map(|u| match u {
                    Value::String(s) if is_absolute_uri(s) => Ok(s.clone()),
                    _ => Err(Error::invalid_params(
                        "subscriptions/listen resourceSubscriptions must be a list of absolute URIs",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        Some(_) => {
            return Err(Error::invalid_params(
                "subscriptions/listen resourceSubscriptions must be a list of absolute URIs",
            ));
        }
    };
    Ok(Filter {
        tools: tools && offer.tools,
        prompts: prompts && offer.prompts,
        resources: resources && offer.resources_list,
        subscriptions: if offer.resources_subscribe {
            subscriptions
        } else {
            Vec::new()
        },
        topics: Default::default(),
    })
}

fn tagged(params: Map<String, Value>, id: &Value) -> Value {
    let mut params = params;
    let mut meta = Map::new();
    meta.insert(KEY_SUBSCRIPTION_ID.into(), id.clone());
    params.insert("_meta".into(), Value::Object(meta));
    Value::Object(params)
}

/// Serves one listen stream: refused at once past its caller's bound; otherwise the
/// acknowledgement first, then events, until the client goes away (the pipeline drops
/// this future), the server ends the stream, or its longest life is over; then the
/// graceful end result (its `_meta` carries the subscription id).
pub(crate) async fn listen(
    hub: &Hub,
    filter: Filter,
    ctx: &RequestContext,
) -> Result<Map<String, Value>, Error> {
    let Some(_place) = hub.admit(ctx.principal_id()) else {
        return Err(Error::unavailable(TOO_MANY_STREAMS));
    };
    let id = ctx.request_id().to_value();
    // Taken before registering, so a close racing with this listen still ends it.
    let closed = hub.closed_token();
    // The stream's end of life, if it has one (a lifetime too long to add to the clock
    // is none).
    let expired = hub
        .limits
        .max_lifetime
        .and_then(|life| tokio::time::Instant::now().checked_add(life));
    let expired = async move {
        match expired {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let mut expired = std::pin::pin!(expired);
    let (_registration, listener) = hub.register(filter.clone());
    let mut ack = Map::new();
    ack.insert("notifications".into(), filter.to_json());
    ctx.notify("notifications/subscriptions/acknowledged", tagged(ack, &id));
    loop {
        tokio::select! {
            _ = closed.cancelled() => break,
            () = &mut expired => break,
            _ = listener.wake.notified() => {}
        }
        // Let the transport take what was sent before: meanwhile new events coalesce in
        // the mailbox instead of queueing up behind a slow client.
        tokio::select! {
            _ = closed.cancelled() => break,
            () = &mut expired => break,
            () = ctx.backlog_drained() => {}
        }
        let pending = match listener.pending.lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(_) => break,
        };
        if pending.tools {
            ctx.notify("notifications/tools/list_changed", tagged(Map::new(), &id));
        }
        if pending.prompts {
            ctx.notify(
                "notifications/prompts/list_changed",
                tagged(Map::new(), &id),
            );
        }
        if pending.resources {
            ctx.notify(
                "notifications/resources/list_changed",
                tagged(Map::new(), &id),
            );
        }
        for uri in pending.updated {
            let mut p = Map::new();
            p.insert("uri".into(), Value::from(uri));
            ctx.notify("notifications/resources/updated", tagged(p, &id));
        }
        for (method, params) in pending.topics.into_values() {
            ctx.notify(method, tagged(params, &id));
        }
        if pending.overflow {
            tracing::warn!("a subscription stream fell too far behind; ending it");
            break;
        }
    }
    let mut result = Map::new();
    let mut meta = Map::new();
    meta.insert(KEY_SUBSCRIPTION_ID.into(), id);
    result.insert("_meta".into(), Value::Object(meta));
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::{Hub, SubscriptionConfig};
    use crate::wire::meta::KEY_SUBSCRIPTION_ID;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    /// A stream with a longest life is still open a moment before it is over and
    /// ends, with the graceful end result, the moment it is (the clock is paused, so
    /// both moments are exact).
    #[tokio::test(start_paused = true)]
    async fn a_stream_lives_exactly_its_lifetime() {
        const LIFE: Duration = Duration::from_secs(60);
        let server = crate::Server::builder(crate::Implementation::new("t", "1"))
            .subscriptions(SubscriptionConfig::default().max_lifetime(Some(LIFE)))
            .build()
            .expect("builds");
        let client = Arc::new(crate::testing::TestClient::new(&server));
        let listener = Arc::clone(&client);
        let stream = tokio::spawn(async move {
            listener
                .request("subscriptions/listen", json!({"notifications": {}}))
                .await
        });
        // Registered (its end of life taken) before the clock moves.
        while server.open_streams() == 0 {
            tokio::task::yield_now().await;
        }
        tokio::time::advance(LIFE - Duration::from_millis(1)).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            !stream.is_finished(),
            "still open just before its life is over"
        );
        assert_eq!(server.open_streams(), 1);
        tokio::time::advance(Duration::from_millis(1)).await;
        // Awaited only once it has ended: awaiting an idle runtime would move the paused
        // clock on to whenever the stream's end were due.
        for _ in 0..10 {
            if stream.is_finished() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(stream.is_finished(), "ended the moment its life is over");
        let ended = stream.await.expect("the stream ends");
        assert_eq!(
            ended.result()["_meta"][KEY_SUBSCRIPTION_ID],
            ended.message["id"],
            "the graceful end result: {}",
            ended.message
        );
        assert_eq!(server.open_streams(), 0);
    }

    /// Without a lifetime (the default) a stream is not ended however long it lives.
    #[tokio::test(start_paused = true)]
    async fn a_stream_without_a_lifetime_lives_on() {
        let server = crate::Server::builder(crate::Implementation::new("t", "1"))
            .build()
            .expect("builds");
        let client = Arc::new(crate::testing::TestClient::new(&server));
        let listener = Arc::clone(&client);
        let stream = tokio::spawn(async move {
            listener
                .request("subscriptions/listen", json!({"notifications": {}}))
                .await
        });
        while server.open_streams() == 0 {
            tokio::task::yield_now().await;
        }
        tokio::time::advance(Duration::from_secs(365 * 24 * 3600)).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!stream.is_finished());
        server.close_streams();
        stream.await.expect("the stream ends when closed");
    }

    /// Each principal holds up to its bound, all anonymous callers together up to
    /// theirs; a place dropped is free again, and a principal with none left has no
    /// entry.
    #[test]
    fn places_are_bounded_per_principal_and_for_anonymous_callers_together() {
        let hub = Hub::new(
            SubscriptionConfig::default()
                .max_per_principal(2)
                .max_anonymous(1),
        );
        let a1 = hub.admit(Some("alice")).expect("alice's first");
        let a2 = hub
            .admit(Some("alice"))
            .expect("alice's second: at the bound");
        assert!(hub.admit(Some("alice")).is_none(), "just past it");
        let b1 = hub.admit(Some("bob")).expect("bob counts apart");
        let anon = hub.admit(None).expect("the anonymous callers' one");
        assert!(
            hub.admit(None).is_none(),
            "every anonymous caller shares it"
        );
        drop(a1);
        let a3 = hub.admit(Some("alice")).expect("a place freed");
        drop((a2, a3, b1, anon));
        assert!(
            hub.holders.lock().expect("the lock").is_empty(),
            "no entries left"
        );
    }

    /// A bound of 0 refuses every stream; `usize::MAX` refuses none.
    #[test]
    fn a_bound_of_zero_refuses_and_usize_max_does_not() {
        let hub = Hub::new(
            SubscriptionConfig::default()
                .max_per_principal(0)
                .max_anonymous(usize::MAX),
        );
        assert!(hub.admit(Some("alice")).is_none());
        let held: Vec<_> = (0..100).filter_map(|_| hub.admit(None)).collect();
        assert_eq!(held.len(), 100);
    }

    /// A session's inbox holds `INBOX` messages unread, and drops the one past it; a
    /// message for a session with no inbox here goes nowhere; an inbox replaced by a
    /// newer one of the same session is closed, and dropping it leaves the newer one.
    #[tokio::test]
    async fn a_session_inbox_is_bounded_and_replaced() {
        use super::{Event, INBOX};
        let hub = Arc::new(Hub::default());
        let send = |n: usize| {
            hub.publish(&Event::Session {
                id: "s".into(),
                message: json!({ "n": n }),
            });
        };
        send(0);
        let mut inbox = hub.inbox("s");
        for n in 1..=INBOX + 1 {
            send(n);
        }
        for n in 1..=INBOX {
            assert_eq!(inbox.next().await, Some(json!({ "n": n })));
        }
        let past = tokio::time::timeout(Duration::from_millis(50), inbox.next()).await;
        assert!(past.is_err(), "the message past the bound was dropped");

        let mut newer = hub.inbox("s");
        assert_eq!(inbox.next().await, None, "the older inbox is closed");
        drop(inbox);
        send(7);
        assert_eq!(newer.next().await, Some(json!({ "n": 7 })));
        drop(newer);
        assert!(hub.inboxes.lock().expect("lock").is_empty());
    }
}
