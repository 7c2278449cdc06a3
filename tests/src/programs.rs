//! Finding the real programs the tests start (HAProxy, Prometheus, Chromium and its
//! driver), and waiting until one of them takes connections.

use std::path::PathBuf;
use tokio::process::Child;

/// The first of `names` found in `PATH`, then in `fallback` (where Debian's package puts
/// it, for a `PATH` without that folder, such as root's without `/usr/sbin`).
pub fn find(names: &[&str], fallback: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push(fallback.into());
    names
        .iter()
        .flat_map(|name| dirs.iter().map(move |d| d.join(name)))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file()))
}

/// Waits until `child` (the program `name`) takes connections on `port` of 127.0.0.1, or
/// says why it will not: it exited (with `printed()`, what it left to read, appended), or
/// the deadline passed.
pub async fn listening(
    child: &mut Child,
    port: u16,
    name: &str,
    printed: impl Fn() -> String,
) -> Result<(), String> {
    let deadline = crate::wait::Deadline::new(format!("{name} listens"));
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("{name} exited ({status}){}", printed()));
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        deadline.tick("no connection yet").await;
    }
}
