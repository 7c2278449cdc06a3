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

use super::live::Live;
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
    /// Whether the reaper runs.
    reaping: AtomicBool,
}

impl Sessions {
    /// An empty table with the endpoint's cap and idle limit.
    pub(in crate::transport::http) fn new(config: &crate::HttpConfig) -> Arc<Sessions> {
        Arc::new(Sessions {
            map: Mutex::default(),
            max: config.max_sessions,
            idle: config.session_idle,
            reaping: AtomicBool::new(false),
        })
    }

    /// Adds a session unless the table is full (expired sessions are swept first).
    /// Starts the reaper with the first session; it stops once `closing` is cancelled
    /// (ending every session) or the table is dropped.
    pub(super) fn insert(self: &Arc<Self>, live: Arc<Live>, closing: &CancellationToken) -> bool {
        let expired = {
            let Ok(mut map) = self.map.lock() else {
                return false;
            };
            let expired = if map.len() >= self.max {
                sweep(&mut map, self.idle)
            } else {
                Vec::new()
            };
            if map.len() >= self.max {
                drop(map);
                end(expired);
                return false;
            }
            map.insert(live.id().to_owned(), live);
            expired
        };
        end(expired);
        if !self.reaping.swap(true, Ordering::AcqRel) {
            let every = (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
            tokio::spawn(reap(Arc::downgrade(self), closing.clone(), every));
        }
        true
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
    }
}
