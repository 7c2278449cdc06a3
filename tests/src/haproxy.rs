//! A throwaway HAProxy in front of replicas, for the multi-replica tests: its
//! configuration written in a temporary folder, `haproxy -f <cfg> -db` in the foreground
//! on a free loopback port, balancing requests round-robin over the given backends with
//! health checks, and killed when the [`Haproxy`] is dropped.
//!
//! [`Haproxy::start`] gives `None`, saying why on stderr, where `haproxy` is not
//! installed, so the tests that need it skip; `.ci/run` installs it (Debian's package).
//! Found in `PATH`, then in `/usr/sbin` (where Debian puts it, outside a user's `PATH`).
//!
//! The configuration is the book's (`presa/examples/deploy/haproxy.cfg`), with the
//! port, the replicas and the checks of the test put in: so what the Deployment chapter
//! shows is what the multi-replica tests run. The checks are plain TCP connects (a
//! replica that accepts connections is up), every [`CHECK_EVERY`]: one failed check
//! takes a replica out, one passed check puts it back. A request whose connection to a
//! replica fails is sent to another (`option redispatch`). The client and server
//! timeouts are long, so a response streamed as server-sent events is never cut by the
//! balancer. What HAProxy says (a replica going down or up) is kept in a file of its
//! folder: [`Haproxy::log`].

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// The file in the folder HAProxy's messages go to.
const LOG: &str = "haproxy.log";

/// How often HAProxy checks each replica.
pub const CHECK_EVERY: Duration = Duration::from_millis(200);

/// A running HAProxy; killed, and its folder removed, on drop.
pub struct Haproxy {
    child: Child,
    /// Holds the configuration and the log; removed on drop.
    dir: tempfile::TempDir,
    port: u16,
}

impl Haproxy {
    /// Starts HAProxy on a free loopback port, balancing over `backends`, and waits
    /// until it takes connections; `None` (and a line on stderr saying why) where
    /// HAProxy is not installed. Panics, with what it printed, when it is installed but
    /// does not start.
    pub async fn start(backends: &[SocketAddr]) -> Option<Haproxy> {
        let program = match crate::programs::find(&["haproxy"], "/usr/sbin") {
            Some(p) => p,
            None => {
                eprintln!(
                    "skipped: HAProxy is not installed (haproxy not found in PATH or /usr/sbin)"
                );
                return None;
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("presa-haproxy-")
            .tempdir()
            .expect("a temporary folder");
        // A port found free may be taken before HAProxy binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            let port = crate::free_port();
            let cfg = dir.path().join("haproxy.cfg");
            std::fs::write(&cfg, config(port, backends)).expect("the configuration written");
            // Its messages (a replica going down or up, among them) go to a file: a pipe
            // nobody reads would fill up and stop it.
            let log = std::fs::File::create(dir.path().join(LOG)).expect("the log opens");
            let mut child = Command::new(&program)
                .arg("-f")
                .arg(&cfg)
                .arg("-db")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
            match crate::programs::listening(&mut child, port, "haproxy", || {
                format!(
                    ":\n{}",
                    std::fs::read_to_string(dir.path().join(LOG)).unwrap_or_default()
                )
            })
            .await
            {
                Ok(()) => {
                    return Some(Haproxy { child, dir, port });
                }
                Err(why) => last = why,
            }
        }
        panic!("HAProxy did not start: {last}");
    }

    /// The URL of the MCP endpoint behind the balancer.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The loopback port the balancer listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What HAProxy has written so far (a replica going down or up, say), for a failing
    /// test to show.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(LOG)).unwrap_or_default()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The book's configuration of HAProxy in front of three replicas.
const BOOK_CONFIG: &str = include_str!("../../presa/examples/deploy/haproxy.cfg");

/// The book's configuration with its frontend on `port`, its replicas replaced by
/// `backends`, and checks every [`CHECK_EVERY`], one failed or passed check deciding.
/// Panics when the book's file no longer has the lines this replaces.
fn config(port: u16, backends: &[SocketAddr]) -> String {
    let every = CHECK_EVERY.as_millis();
    let mut cfg = String::new();
    let (mut bind, mut checks) = (false, false);
    for line in BOOK_CONFIG.lines() {
        let setting = line.trim_start();
        if setting.starts_with("bind ") {
            cfg.push_str(&format!("    bind 127.0.0.1:{port}\n"));
            bind = true;
        } else if setting.starts_with("default-server ") {
            cfg.push_str(&format!(
                "    default-server check inter {every}ms fall 1 rise 1\n"
            ));
            checks = true;
        } else if !setting.starts_with("server ") {
            cfg.push_str(line);
            cfg.push('\n');
        }
    }
    assert!(
        bind && checks
            && cfg
                .trim_end()
                .ends_with("default-server check inter 200ms fall 1 rise 1"),
        "the book's haproxy.cfg has a bind line, and ends its backend with default-server and server lines"
    );
    for (i, addr) in backends.iter().enumerate() {
        cfg.push_str(&format!("    server r{i} {addr}\n"));
    }
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every backend is a checked server of one round-robin backend, behind a frontend on
    /// the given port.
    #[test]
    fn the_configuration_balances_over_every_backend() {
        let a: SocketAddr = "127.0.0.1:1001".parse().expect("an address");
        let b: SocketAddr = "127.0.0.1:1002".parse().expect("an address");
        let cfg = config(9000, &[a, b]);
        assert!(cfg.contains("    bind 127.0.0.1:9000\n"), "{cfg}");
        assert!(!cfg.contains("3000"), "the book's port is replaced: {cfg}");
        assert!(cfg.contains("balance roundrobin\n"), "{cfg}");
        assert!(cfg.contains("option redispatch\n"), "{cfg}");
        assert!(
            cfg.contains("default-server check inter 200ms fall 1 rise 1\n"),
            "{cfg}"
        );
        assert!(
            cfg.ends_with("    server r0 127.0.0.1:1001\n    server r1 127.0.0.1:1002\n"),
            "{cfg}"
        );
        assert!(
            !cfg.contains("127.0.0.1:3001"),
            "the book's replicas are replaced: {cfg}"
        );
    }
}
