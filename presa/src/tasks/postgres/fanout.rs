//! [`PgFanout`]: a [`Fanout`] over PostgreSQL's `LISTEN`/`NOTIFY`, for the replicas of a
//! server that share a [`PgStore`]'s database.
//!
//! Sending: [`Fanout::send`] queues the message (at most [`PgFanout::MAX_QUEUED`]
//! waiting; past it the message is dropped with a warning), and one task per fan-out
//! takes the queue in order and notifies each message on the store's pool, one statement
//! at a time, each awaited before the next. Each is committed on its own, and PostgreSQL delivers notifications
//! in the order of their commits, so every listener hears one sender's messages in the
//! order it sent them. A notification's payload must stay under 8000 bytes: a message
//! longer than [`PgFanout::MAX_INLINE_BYTES`] is stored as a row of `presa_events`
//! (the `events` component in `presa_migrations`) and the notification names the row,
//! in the same statement; rows older than a minute are deleted, a bounded batch before
//! each one is stored. A message that cannot be sent (the database unreachable) is dropped
//! with a warning: a server's relay sees a gap in the sender's sequence at its next
//! message.
//!
//! Receiving: one listener connection per fan-out (`application_name` `presa-fanout`),
//! started at the first [`subscribe`](Fanout::subscribe), made again with backoff like the
//! task change feed's (they share `feed::listen_on`); each time it listens it sends
//! [`Delivery::Gap`], since what was notified while it was not listening is lost. A row a
//! notification names is read on the store's pool; one gone already (pruned, or
//! unreadable) is a gap too.

use super::feed::{self, Hearer};
use super::{PgStore, timeout};
use crate::mrtr::token::PRUNE_BATCH;
use crate::subscriptions::{Delivery, Fanout};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{broadcast, mpsc};

/// The schema of the event rows, one entry per version, as the tasks' `MIGRATIONS`.
pub(super) const MIGRATIONS: &[&[&str]] = &[&[
    "CREATE TABLE presa_events (
        id bigserial PRIMARY KEY,
        -- A message too long for a notification's payload.
        payload text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    )",
    "CREATE INDEX presa_events_by_age ON presa_events (created_at)",
]];

/// The event rows' entry in `presa_migrations`.
pub(super) const COMPONENT: &str = "events";

/// The name of the fan-out's channel (per schema, see `feed::channel`).
pub(super) const CHANNEL: &str = "presa_events";

/// Most messages the receivers may fall behind before they lag.
const CAPACITY: usize = 1024;

/// How long a stored message is kept for receivers to read, in seconds: older rows are
/// deleted.
const RETENTION_SECS: f64 = 60.0;

/// The `application_name` of the fan-out's listener connection.
pub(crate) const FANOUT_APPLICATION: &str = "presa-fanout";

/// What a payload starts with: the message itself follows, or the id of its row.
const INLINE: char = 'm';
const STORED: char = 'r';

/// A [`Fanout`] over the database of a [`PgStore`], made by [`PgStore::fanout`]: give each
/// replica's server one ([`ServerBuilder::fanout`](crate::ServerBuilder::fanout)) and
/// their list changes and resource updates reach each other's listeners. Cheap to clone
/// (clones share the queue and the listener).
#[derive(Clone)]
pub struct PgFanout {
    inner: Arc<Inner>,
}

struct Inner {
    store: PgStore,
    channel: String,
    queue: mpsc::Sender<String>,
    /// The queue's other end, until the sending task takes it.
    waiting: Mutex<Option<mpsc::Receiver<String>>>,
    /// The listener's own pool, of one connection.
    listen_pool: PgPool,
    receivers: broadcast::Sender<Delivery>,
    sending: AtomicBool,
    listening: AtomicBool,
}

/// Shows the channel, never the URL.
impl std::fmt::Debug for PgFanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgFanout")
            .field("channel", &self.inner.channel)
            .finish_non_exhaustive()
    }
}

/// Dropping the last handle ends the listener (and, once its queue is sent, the sender).
impl Drop for Inner {
    fn drop(&mut self) {
        drop(self.listen_pool.close());
    }
}

impl PgStore {
    /// A fan-out over this store's database: the list changes and resource updates of
    /// every server given a fan-out of a store on the same database (and schema) reach
    /// the listeners of all (see [`ServerBuilder::fanout`](crate::ServerBuilder::fanout)).
    /// It sends on the store's pool and listens on one connection of its own; make one
    /// per server.
    pub fn fanout(&self) -> PgFanout {
        let (queue, waiting) = mpsc::channel(PgFanout::MAX_QUEUED);
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(self.acquire_timeout)
            .connect_lazy_with(
                PgConnectOptions::clone(&self.options).application_name(FANOUT_APPLICATION),
            );
        PgFanout {
            inner: Arc::new(Inner {
                store: self.clone(),
                channel: feed::channel(CHANNEL, self.schema.as_deref()),
                queue,
                waiting: Mutex::new(Some(waiting)),
                listen_pool,
                receivers: broadcast::channel(CAPACITY).0,
                sending: AtomicBool::new(false),
                listening: AtomicBool::new(false),
            }),
        }
    }
}

impl PgFanout {
    /// The longest message sent as a notification's payload, in bytes; a longer one is
    /// stored in `presa_events` and the notification names its row. PostgreSQL takes
    /// payloads shorter than 8000 bytes; this leaves a margin.
    pub const MAX_INLINE_BYTES: usize = 7900;

    /// Most messages waiting to be sent; past it [`send`](Fanout::send) drops the message
    /// with a warning.
    pub const MAX_QUEUED: usize = 1024;

    /// Starts (once) the task sending the queue, when within a Tokio runtime.
    fn start_sending(&self) {
        if self.inner.sending.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.sending.swap(true, Ordering::AcqRel) {
            return;
        }
        let taken = self
            .inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(queue) = taken {
            runtime.spawn(send_all(
                self.inner.store.clone(),
                self.inner.channel.clone(),
                queue,
            ));
        }
    }
}

impl Fanout for PgFanout {
    fn send(&self, message: String) {
        self.start_sending();
        match self.inner.queue.try_send(message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => tracing::warn!(
                "the fan-out's queue is full ({} messages): an event was dropped",
                PgFanout::MAX_QUEUED
            ),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!("the fan-out's sender has ended: an event was dropped");
            }
        }
    }

    fn subscribe(&self) -> broadcast::Receiver<Delivery> {
        self.start_sending();
        let receiver = self.inner.receivers.subscribe();
        if !self.inner.listening.swap(true, Ordering::AcqRel) && !self.inner.listen_pool.is_closed()
        {
            tokio::spawn(feed::listen_on(
                self.inner.listen_pool.clone(),
                self.inner.channel.clone(),
                self.inner.store.answer_within,
                "event fan-out",
                ToReceivers {
                    fanout: Arc::downgrade(&self.inner),
                    store: self.inner.store.clone(),
                },
            ));
        }
        receiver
    }
}

/// Sends the queue's messages, one at a time and in order, until every handle on the
/// fan-out is dropped.
async fn send_all(store: PgStore, channel: String, mut queue: mpsc::Receiver<String>) {
    while let Some(message) = queue.recv().await {
        if let Err(e) = notify(&store, &channel, &message).await {
            tracing::warn!("an event could not be sent to the other replicas: {e}");
        }
    }
}

/// Notifies `message` on `channel`: in the payload, or stored and named by it.
async fn notify(store: &PgStore, channel: &str, message: &str) -> Result<(), String> {
    let mut conn = store.connection().await.map_err(|e| e.to_string())?;
    if message.len() <= PgFanout::MAX_INLINE_BYTES {
        let query = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel)
            .bind(format!("{INLINE}{message}"));
        let answer = timeout(store.answer_within, query.execute(&mut *conn)).await;
        store
            .answered(&mut conn, answer)
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    // Old rows go first, so a receiver that reads this one finds them gone. The message
    // is sent whether or not they could be; a failed pruning is retried before the next
    // one is stored.
    let prune = sqlx::query(
        "DELETE FROM presa_events WHERE id IN
         (SELECT id FROM presa_events WHERE created_at < now() - make_interval(secs => $1)
          LIMIT $2)",
    )
    .bind(RETENTION_SECS)
    .bind(PRUNE_BATCH);
    let answer = timeout(store.answer_within, prune.execute(&mut *conn)).await;
    match store.answered(&mut conn, answer) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!("old fan-out events could not be deleted: {e}"),
        Err(e) => {
            tracing::warn!("old fan-out events could not be deleted: {e}");
            // The connection is closed: the message goes on a fresh one.
            conn = store.connection().await.map_err(|e| e.to_string())?;
        }
    }
    // The notification is sent when, and only if, the row is committed.
    let query = sqlx::query(
        "WITH stored AS (INSERT INTO presa_events (payload) VALUES ($1) RETURNING id)
         SELECT pg_notify($2, $3 || id) FROM stored",
    )
    .bind(message)
    .bind(channel)
    .bind(STORED.to_string());
    let answer = timeout(store.answer_within, query.execute(&mut *conn)).await;
    store
        .answered(&mut conn, answer)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The fan-out's hearer: messages sent to the receivers (a stored one read first), a gap
/// each time it listens.
struct ToReceivers {
    fanout: Weak<Inner>,
    store: PgStore,
}

impl ToReceivers {
    /// Sends `delivery` to the receivers; `false` when the fan-out is gone.
    fn deliver(&self, delivery: Delivery) -> bool {
        match self.fanout.upgrade() {
            Some(fanout) => {
                // No receiver now is no error.
                let _ = fanout.receivers.send(delivery);
                true
            }
            None => false,
        }
    }

    /// The message stored in row `id`, when it is there.
    async fn stored(&self, id: &str) -> Result<Option<String>, String> {
        let id: i64 = id
            .parse()
            .map_err(|_| format!("a notification names no row: {id:?}"))?;
        let mut conn = self.store.connection().await.map_err(|e| e.to_string())?;
        let query =
            sqlx::query_scalar::<_, String>("SELECT payload FROM presa_events WHERE id = $1")
                .bind(id);
        let answer = timeout(self.store.answer_within, query.fetch_optional(&mut *conn)).await;
        self.store
            .answered(&mut conn, answer)
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }
}

impl Hearer for ToReceivers {
    fn alive(&self) -> bool {
        self.fanout.strong_count() > 0
    }

    async fn listening(&mut self) -> bool {
        self.deliver(Delivery::Gap)
    }

    async fn heard(&mut self, payload: String) -> bool {
        if let Some(message) = payload.strip_prefix(INLINE) {
            return self.deliver(Delivery::Message(message.to_owned()));
        }
        let Some(id) = payload.strip_prefix(STORED) else {
            tracing::warn!("a fan-out notification of an unknown form was dropped");
            return self.alive();
        };
        match self.stored(id).await {
            Ok(Some(message)) => self.deliver(Delivery::Message(message)),
            Ok(None) => {
                tracing::warn!("a stored fan-out event was gone before it was read");
                self.deliver(Delivery::Gap)
            }
            Err(e) => {
                tracing::warn!("a stored fan-out event could not be read: {e}");
                self.deliver(Delivery::Gap)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload at the bound, with its one-byte prefix, is under PostgreSQL's 8000
    /// bytes.
    #[test]
    fn an_inline_payload_is_under_postgres_bound() {
        assert!(PgFanout::MAX_INLINE_BYTES + INLINE.len_utf8() < 8000);
    }
}
