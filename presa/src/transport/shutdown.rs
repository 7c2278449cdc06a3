//! How a transport's serving stops: on SIGINT or SIGTERM (unless turned off) or on a
//! future the caller supplies, then a drain of the requests in flight that ends at a
//! deadline.
//!
//! The signal handlers are installed when serving begins ([`Stop::new`]), so a signal
//! that arrives while serving is never the process's default action (an abrupt exit that
//! drops every request in flight).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

/// How long requests in flight get to finish once serving stops, unless configured.
pub(crate) const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// What ends serving: the caller's future, and SIGINT or SIGTERM when `signals` is on.
pub(crate) struct Stop {
    caller: Pin<Box<dyn Future<Output = ()> + Send>>,
    signals: Option<Signals>,
}

impl Stop {
    /// Listens for the signals now (when `signals` is on) and for `caller`.
    pub(crate) fn new(
        caller: impl Future<Output = ()> + Send + 'static,
        signals: bool,
    ) -> io::Result<Stop> {
        Ok(Stop {
            caller: Box::pin(caller),
            signals: if signals { Some(Signals::new()?) } else { None },
        })
    }

    /// Completes when the caller's future does or a signal arrives.
    pub(crate) async fn wait(mut self) {
        match self.signals.as_mut() {
            Some(signals) => {
                tokio::select! {
                    () = &mut self.caller => {}
                    () = signals.recv() => {}
                }
            }
            None => self.caller.await,
        }
    }
}

/// SIGINT and SIGTERM (Ctrl-C elsewhere).
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => {}
                _ = self.terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            // Without a handler Ctrl-C would end the process; an error leaves serving on.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
