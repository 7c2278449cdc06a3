//! The change feed of a [`PgStore`](super::PgStore): PostgreSQL's `LISTEN`/`NOTIFY`;
//! and the listener loop it shares with the fan-out (`fanout`): [`listen_on`] and the
//! [`Hearer`] it hands what it hears to.
//!
//! Every insert and compare-and-set sends `pg_notify(channel, id)` in its own statement,
//! so the notification is delivered when, and only if, the change commits. One listener
//! per store (on a pool of its own, one connection, so it never takes a connection the
//! store's calls need) receives them and fans them out in the process through a
//! broadcast channel. It starts when the first subscriber subscribes.
//!
//! A dropped listener connection is made again, with a backoff that doubles from
//! [`FIRST_BACKOFF`] to [`MAX_BACKOFF`] while the server refuses; once it listens again it
//! sends [`Change::Resync`], so subscribers read the store once and nothing changed during
//! the gap is lost. The first `LISTEN` is followed by a resync too, for changes made
//! between a subscription and the listener's start. The listener ends when the store
//! is closed or every handle on it is dropped.

use crate::tasks::store::{Change, ChangeFeed};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::timeout;

/// How many changes a subscriber may fall behind before it is told it lagged (and reads
/// everything again).
const CAPACITY: usize = 1024;
/// The first wait before the listener connection is tried again.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between tries of the listener connection.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The `application_name` of the listener's connection, so an operator can tell it from
/// the store's own (`presa`).
pub(crate) const LISTEN_APPLICATION: &str = "presa-listen";
/// The longest channel name PostgreSQL takes (`NAMEDATALEN` − 1 bytes).
const MAX_CHANNEL_BYTES: usize = 63;

/// The channel of the task change feed (see [`channel`]).
pub(super) const TASKS: &str = "presa_tasks";

/// The notification channel named `name` (such as [`TASKS`]) of the store whose tables
/// are in `schema` (or in the connection's default schema): two deployments on one
/// database, in different schemas, never hear each other. A name too long for
/// PostgreSQL is replaced by a stable hash of the schema.
pub(super) fn channel(name: &str, schema: Option<&str>) -> String {
    let Some(schema) = schema else {
        return name.into();
    };
    let plain = format!("{name}_{schema}");
    if plain.len() <= MAX_CHANNEL_BYTES {
        return plain;
    }
    // FNV-1a: stable across builds and processes, unlike std's hasher.
    let hash = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{name}_{hash:016x}")
}

/// A store's feed: the broadcast its subscribers share and the listener's pool.
pub(super) struct Feed {
    channel: String,
    pool: PgPool,
    sender: broadcast::Sender<Change>,
    started: AtomicBool,
    answer_within: Duration,
}

impl Feed {
    /// A feed on the database `options` reach (no connection is opened yet).
    pub(super) fn new(
        options: PgConnectOptions,
        channel: String,
        acquire_timeout: Duration,
        answer_within: Duration,
    ) -> Arc<Feed> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(acquire_timeout)
            .connect_lazy_with(options.application_name(LISTEN_APPLICATION));
        Arc::new(Feed {
            channel,
            pool,
            sender: broadcast::channel(CAPACITY).0,
            started: AtomicBool::new(false),
            answer_within,
        })
    }

    /// The channel the store's statements notify.
    pub(super) fn channel(&self) -> &str {
        &self.channel
    }

    /// The feed as the store offers it: holds the feed weakly, so a dropped store's
    /// subscribers are told it is closed.
    pub(super) fn change_feed(self: &Arc<Feed>) -> ChangeFeed {
        let feed = Arc::downgrade(self);
        ChangeFeed::new(move || match feed.upgrade() {
            Some(feed) => feed.subscribe(),
            None => broadcast::channel(1).1,
        })
    }

    fn subscribe(self: &Arc<Feed>) -> crate::tasks::store::Changes {
        let changes = self.sender.subscribe();
        if !self.started.swap(true, Ordering::SeqCst) && !self.pool.is_closed() {
            tokio::spawn(listen(Arc::downgrade(self)));
        }
        changes
    }

    /// Ends the listener (its connection is closed) and every subscription.
    pub(super) async fn close(&self) {
        self.pool.close().await;
    }
}

/// Dropping the last handle on the store ends the listener.
impl Drop for Feed {
    fn drop(&mut self) {
        // Marks the pool closed at once, which wakes the listener with `PoolClosed`;
        // the connection is closed as the listener drops it.
        drop(self.pool.close());
    }
}

/// What a listener hands what it hears to (the task change feed, the fan-out).
pub(super) trait Hearer: Send + 'static {
    /// Whether whoever the listener serves is still there; the listener ends when not.
    fn alive(&self) -> bool;
    /// The listener listens from now on (the first time, or again after its connection
    /// dropped): what was notified before may have been missed. `false`: whoever it
    /// serves is gone.
    fn listening(&mut self) -> impl Future<Output = bool> + Send;
    /// A notification's payload, in the order notified. `false`: whoever it serves is
    /// gone.
    fn heard(&mut self, payload: String) -> impl Future<Output = bool> + Send;
}

/// A listener on `channel`, within the acquire timeout and the statement's answer bound.
async fn open(pool: &PgPool, channel: &str, answer_within: Duration) -> Result<PgListener, String> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(|e| e.to_string())?;
    match timeout(answer_within, listener.listen(channel)).await {
        Ok(Ok(())) => Ok(listener),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer to LISTEN within {answer_within:?}")),
    }
}

/// A listener task: listens on `channel` with `pool`'s one connection, hands `hearer`
/// what it hears, and on a dropped connection listens again (with backoff), telling the
/// hearer each time it listens. `what` names it in the log. Ends when the pool is closed
/// or the hearer says whoever it serves is gone.
pub(super) async fn listen_on(
    pool: PgPool,
    channel: String,
    answer_within: Duration,
    what: &'static str,
    mut hearer: impl Hearer,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if pool.is_closed() || !hearer.alive() {
            return;
        }
        let mut listener = match open(&pool, &channel, answer_within).await {
            Ok(listener) => listener,
            Err(e) => {
                if pool.is_closed() {
                    return;
                }
                tracing::warn!("the {what} could not listen, tried again in {backoff:?}: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = FIRST_BACKOFF;
        // Listening from here on: what was notified before may have been missed.
        if !hearer.listening().await {
            return;
        }
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    if !hearer.heard(notification.payload().to_owned()).await {
                        return;
                    }
                }
                // The connection dropped (and was made again, without our `LISTEN`
                // being known to have held): start over on a fresh listener.
                Ok(None) => break,
                Err(e) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!("the {what}'s connection failed: {e}");
                    // A server that fails each new connection at once is not tried in
                    // a tight loop.
                    tokio::time::sleep(FIRST_BACKOFF).await;
                    break;
                }
            }
        }
        drop(listener);
    }
}

/// The task change feed's hearer: changes sent to the feed's subscribers, a resync each
/// time it listens.
struct ToSubscribers(Weak<Feed>);

impl ToSubscribers {
    /// Sends `change` to the subscribers; `false` when the feed is gone.
    fn send(&self, change: Change) -> bool {
        match self.0.upgrade() {
            Some(feed) => {
                // No subscriber now is no error: the next one reads the store first.
                let _ = feed.sender.send(change);
                true
            }
            None => false,
        }
    }
}

impl Hearer for ToSubscribers {
    fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    async fn listening(&mut self) -> bool {
        self.send(Change::Resync)
    }

    async fn heard(&mut self, payload: String) -> bool {
        self.send(Change::Task(payload))
    }
}

/// The listener task of the task change feed.
async fn listen(feed: Weak<Feed>) {
    let Some((pool, channel, answer_within)) = feed
        .upgrade()
        .map(|f| (f.pool.clone(), f.channel.clone(), f.answer_within))
    else {
        return;
    };
    listen_on(
        pool,
        channel,
        answer_within,
        "task change feed",
        ToSubscribers(feed),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::{MAX_CHANNEL_BYTES, TASKS, channel};
    use crate::tasks::postgres::fanout::CHANNEL as EVENTS;

    /// Each schema has its own channels; a name that would pass PostgreSQL's 63 bytes is
    /// a hash of the schema, the same every time, and different for another schema.
    #[test]
    fn channels_are_per_schema_and_within_postgres_bound() {
        for name in [TASKS, EVENTS] {
            assert_eq!(channel(name, None), name);
            assert_eq!(channel(name, Some("a")), format!("{name}_a"));
            let at = "s".repeat(MAX_CHANNEL_BYTES - name.len() - 1);
            assert_eq!(channel(name, Some(&at)), format!("{name}_{at}"));
            assert_eq!(channel(name, Some(&at)).len(), MAX_CHANNEL_BYTES);
            let past = format!("{at}s");
            let hashed = channel(name, Some(&past));
            assert!(hashed.starts_with(&format!("{name}_")), "{hashed}");
            assert!(hashed.len() <= MAX_CHANNEL_BYTES, "{hashed}");
            assert_eq!(hashed, channel(name, Some(&past)), "stable");
            assert_ne!(hashed, channel(name, Some(&format!("{at}t"))), "per schema");
        }
        assert_ne!(channel(TASKS, Some("a")), channel(EVENTS, Some("a")));
    }
}
