//! The endpoint's legacy sessions by id ([`Sessions`]): capped, and ended when idle.
//!
//! A session is idle while it has no request running and no connection open; past the
//! idle limit it ends (its requests are cancelled, its streams close) and its id gets 404
//! from then on. A lookup ends an expired session it finds, and a reaper task, started
//! with the first session, sweeps the table every quarter of the idle limit (at least
//! every minute, at most every 10 ms) and ends every session when the endpoint shuts
//! down. Past the cap an `initialize` is refused with 503 after a sweep: the sessions in
//! use are kept rather than the idlest evicted, so a flood of `initialize` cannot end
//! the sessions of clients that are working.
//!
//! With a store of the sessions' records shared by replicas, this table holds this
//! replica's copies of the sessions it serves: the cap and the idle expiry of the table
//! are this replica's (a copy that expires here is ended here only, and made again from
//! its record when the session's client comes back), while whether a session lives is
//! the store's (its record's last use, and whether it was deleted). The sweep also marks
//! used, in the store, the sessions this replica is serving.

use super::live::Live;
use crate::session::SessionStore;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The legacy sessions of one endpoint.
pub(in crate::transport::http) struct Sessions {
    map: Mutex<HashMap<String, Arc<Live>>>,
    max: usize,
    idle: Duration,
    /// Where the sessions' records are shared with other replicas, if they are.
    store: Option<Arc<dyn SessionStore>>,
    /// Whether the reaper runs.
    reaping: AtomicBool,
}

impl Sessions {
    /// An empty table with the endpoint's cap and idle limit, and the store of the
    /// sessions' records if there is one.
    pub(in crate::transport::http) fn new(
        config: &crate::HttpConfig,
        store: Option<Arc<dyn SessionStore>>,
    ) -> Arc<Sessions> {
        Arc::new(Sessions {
            map: Mutex::default(),
            max: config.max_sessions,
            idle: config.session_idle,
            store,
            reaping: AtomicBool::new(false),
        })
    }

    /// Adds a session unless the table is full (expired sessions are swept first).
    /// Starts the reaper with the first session; it stops once `closing` is cancelled
    /// (ending every session) or the table is dropped.
    pub(super) fn insert(self: &Arc<Self>, live: Arc<Live>, closing: &CancellationToken) -> bool {
        self.place(live, closing).is_some()
    }

    /// [`Sessions::insert`], giving the session the table holds by that id: the one
    /// given, or one held already. `None` when the table is full.
    fn place(self: &Arc<Self>, live: Arc<Live>, closing: &CancellationToken) -> Option<Arc<Live>> {
        let (held, expired) = {
            let mut map = self.map.lock().ok()?;
            if let Some(held) = map.get(live.id()) {
                return Some(Arc::clone(held));
            }
            let expired = if map.len() >= self.max {
                sweep(&mut map, self.idle)
            } else {
                Vec::new()
            };
            if map.len() >= self.max {
                drop(map);
                end(expired);
                return None;
            }
            map.insert(live.id().to_owned(), Arc::clone(&live));
            (live, expired)
        };
        end(expired);
        if !self.reaping.swap(true, Ordering::AcqRel) {
            let every = (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
            tokio::spawn(reap(Arc::downgrade(self), closing.clone(), every));
        }
        Some(held)
    }

    /// Adds a session made from its record on another replica, unless the table is full,
    /// or gives the one a concurrent request added first.
    pub(super) fn adopt(
        self: &Arc<Self>,
        live: Arc<Live>,
        closing: &CancellationToken,
    ) -> Option<Arc<Live>> {
        let held = self.place(Arc::clone(&live), closing)?;
        if !Arc::ptr_eq(&held, &live) {
            live.close();
        }
        Some(held)
    }

    /// The session with this id, unless it has expired (it is ended then).
    pub(super) fn get(&self, id: &str) -> Option<Arc<Live>> {
        let live = {
            let mut map = self.map.lock().ok()?;
            let live = map.get(id)?;
            if !live.expired(self.idle) {
                return Some(Arc::clone(live));
            }
            map.remove(id)?
        };
        live.close();
        None
    }

    /// Takes a session out of the table (the caller ends it).
    pub(super) fn remove(&self, id: &str) -> Option<Arc<Live>> {
        self.map.lock().ok()?.remove(id)
    }

    /// Ends every expired session.
    fn reap_expired(&self) {
        let expired = match self.map.lock() {
            Ok(mut map) => sweep(&mut map, self.idle),
            Err(_) => return,
        };
        end(expired);
    }

    /// With a store of the sessions' records: marks used the sessions this replica is
    /// serving (a request running, a stream open), so that they do not expire on the
    /// others, ends here those that ended on another replica, brings their log level and
    /// subscriptions up to their records, and forgets a batch of stale records. A fault
    /// of the store changes nothing; the next sweep tries again.
    async fn refresh(&self) {
        let Some(store) = &self.store else {
            return;
        };
        let busy: Vec<Arc<Live>> = match self.map.lock() {
            Ok(map) => map.values().filter(|l| l.busy()).cloned().collect(),
            Err(_) => return,
        };
        let idle = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        for live in busy {
            match store.touch(live.id(), super::now_ms(), idle).await {
                Ok(Some(record)) => {
                    live.session.restore_log_level(record.log_level);
                    live.session.restore_subscriptions(&record.subscriptions);
                }
                Ok(None) => {
                    self.remove(live.id());
                    end(vec![live]);
                }
                Err(fault) => {
                    tracing::debug!("a legacy session's record could not be refreshed: {fault}");
                    return;
                }
            }
        }
        if let Err(fault) = store
            .remove_stale(super::now_ms().saturating_sub(idle))
            .await
        {
            tracing::debug!("stale legacy session records could not be removed: {fault}");
        }
    }

    /// Ends every session.
    fn end_all(&self) {
        let all: Vec<_> = match self.map.lock() {
            Ok(mut map) => map.drain().map(|(_, live)| live).collect(),
            Err(_) => return,
        };
        end(all);
    }
}

/// Takes the expired sessions out of `map`.
fn sweep(map: &mut HashMap<String, Arc<Live>>, idle: Duration) -> Vec<Arc<Live>> {
    let ids: Vec<String> = map
        .iter()
        .filter(|(_, live)| live.expired(idle))
        .map(|(id, _)| id.clone())
        .collect();
    ids.iter().filter_map(|id| map.remove(id)).collect()
}

/// Ends sessions taken out of the table (outside its lock: ending one takes its own).
fn end(sessions: Vec<Arc<Live>>) {
    for live in sessions {
        tracing::debug!("a legacy session ended");
        live.close();
    }
}

/// Sweeps `sessions` every `every` until the endpoint shuts down (then ends them all) or
/// the table is gone.
async fn reap(sessions: Weak<Sessions>, closing: CancellationToken, every: Duration) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = closing.cancelled() => {
                if let Some(sessions) = sessions.upgrade() {
                    sessions.end_all();
                }
                return;
            }
        }
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        sessions.reap_expired();
        sessions.refresh().await;
    }
}
