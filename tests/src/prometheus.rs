//! A throwaway Prometheus for the observability tests: the system's `prometheus` in the
//! foreground, its configuration and its storage in a temporary folder, listening on a
//! free loopback port, scraping one target every [`SCRAPE_EVERY`], and killed when the
//! [`Prometheus`] is dropped. [`Prometheus::query`] asks its HTTP API
//! (`/api/v1/query`) what it has scraped.
//!
//! [`Prometheus::start`] gives `None`, saying why on stderr, where `prometheus` is not
//! installed, so the test that needs it skips; `.ci/run` installs it (Debian's package).
//! Found in `PATH`, then in `/usr/bin` (where Debian puts it).

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How often Prometheus scrapes its target.
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);

/// The file in the folder Prometheus's own log goes to.
const LOG: &str = "prometheus.log";

/// A running Prometheus; killed, and its folder removed, on drop.
pub struct Prometheus {
    child: Child,
    /// Holds the configuration, the storage and the log; removed on drop.
    dir: tempfile::TempDir,
    port: u16,
    client: reqwest::Client,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping `http://{target}{path}` every
    /// [`SCRAPE_EVERY`] as job `presa`, and waits until it is ready; `None` (and a line on
    /// stderr saying why) where Prometheus is not installed. Panics, with what it
    /// printed, when it is installed but does not start.
    pub async fn start(target: &str, path: &str) -> Option<Prometheus> {
        let program = match crate::programs::find(&["prometheus"], "/usr/bin") {
            Some(p) => p,
            None => {
                eprintln!(
                    "skipped: Prometheus is not installed (prometheus not found in PATH or /usr/bin)"
                );
                return None;
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("presa-prometheus-")
            .tempdir()
            .expect("a temporary folder");
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(&cfg, config(target, path)).expect("the configuration written");
        let client = reqwest::Client::new();
        // A port found free may be taken before Prometheus binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            let port = crate::free_port();
            let log = std::fs::File::create(dir.path().join(LOG)).expect("the log opens");
            let mut child = Command::new(&program)
                .arg(format!("--config.file={}", cfg.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
            match ready(&client, &mut child, port, &dir.path().join(LOG)).await {
                Ok(()) => {
                    return Some(Prometheus {
                        child,
                        dir,
                        port,
                        client,
                    });
                }
                Err(why) => last = why,
            }
        }
        panic!("Prometheus did not start: {last}");
    }

    /// Its HTTP API's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The result of an instant query (`data.result`, an array of series, each with its
    /// `metric` labels and its `value`). Panics when the API does not answer `success`.
    pub async fn query(&self, promql: &str) -> Vec<Value> {
        let reply = self
            .client
            .get(format!("{}/api/v1/query", self.url()))
            .query(&[("query", promql)])
            .send()
            .await
            .unwrap_or_else(|e| panic!("Prometheus answers a query: {e}"));
        let status = reply.status();
        let text = reply
            .text()
            .await
            .unwrap_or_else(|e| panic!("Prometheus's answer is read: {e}"));
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("Prometheus's answer is JSON ({e}): {text}"));
        assert!(
            status.is_success() && body["status"] == "success",
            "query {promql:?}: {status} {body}"
        );
        match &body["data"]["result"] {
            Value::Array(series) => series.clone(),
            other => panic!("query {promql:?}: data.result is not an array: {other}"),
        }
    }

    /// Waits until `promql` gives at least one series, and returns them; fails after
    /// [`crate::wait::PATIENCE`] with what the scrape target's health says.
    pub async fn wait_for_series(&self, promql: &str) -> Vec<Value> {
        let deadline = crate::wait::Deadline::new(format!("Prometheus has series for {promql}"));
        loop {
            let series = self.query(promql).await;
            if !series.is_empty() {
                return series;
            }
            let up = self.query("up").await;
            deadline
                .tick(format!("no series; up = {up:?}; log:\n{}", self.log()))
                .await;
        }
    }

    /// What Prometheus has written on stderr so far, for a failing test to show.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(LOG)).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A configuration scraping `http://{target}{path}` every [`SCRAPE_EVERY`].
fn config(target: &str, path: &str) -> String {
    let every = SCRAPE_EVERY.as_millis();
    format!(
        "global:\n  scrape_interval: {every}ms\n  scrape_timeout: {every}ms\n  evaluation_interval: {every}ms\n\
         scrape_configs:\n  - job_name: presa\n    metrics_path: {path}\n    static_configs:\n      - targets: ['{target}']\n"
    )
}

/// Waits until Prometheus answers `/-/ready` with 200, or says why it will not (it
/// exited, with what it wrote to `log`).
async fn ready(
    client: &reqwest::Client,
    child: &mut Child,
    port: u16,
    log: &Path,
) -> Result<(), String> {
    let deadline = crate::wait::Deadline::new("Prometheus is ready");
    let url = format!("http://127.0.0.1:{port}/-/ready");
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let printed = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("prometheus exited ({status}):\n{printed}"));
        }
        if let Ok(reply) = client.get(&url).send().await
            && reply.status().is_success()
        {
            return Ok(());
        }
        deadline.tick("not ready yet").await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One job scraping the one target on its path, every second.
    #[test]
    fn the_configuration_scrapes_the_target_every_second() {
        let cfg = config("127.0.0.1:4000", "/metrics");
        assert!(cfg.contains("  scrape_interval: 1000ms\n"), "{cfg}");
        assert!(cfg.contains("    metrics_path: /metrics\n"), "{cfg}");
        assert!(
            cfg.contains("      - targets: ['127.0.0.1:4000']\n"),
            "{cfg}"
        );
    }
}
