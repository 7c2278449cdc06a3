//! Headless Chromium driven over WebDriver, for the catalog page's test: the system's
//! `chromedriver` started on a free loopback port, in a process group of its own, and a
//! [`fantoccini`] session in it that runs the system's Chromium headless at 1200×800.
//!
//! [`Browser::start`] gives `None`, saying why on stderr, where Chromium or chromedriver
//! is not installed, so the test skips; `.ci/run` installs both (Debian's `chromium` and
//! `chromium-driver`). Nothing here downloads a browser.
//!
//! [`Browser::close`] ends the session (chromedriver then quits Chromium) and stops the
//! driver; a test that panics first leaves that to the drop, which kills the driver's
//! whole process group (Chromium and its helpers with it), so no browser outlives a test.

use fantoccini::{Client, ClientBuilder};
use std::path::Path;
use std::process::Stdio;
use tokio::process::{Child, Command};

/// How long a browser may take to start: longer than [`crate::wait::PATIENCE`], since a
/// first start on a loaded machine reads the whole of Chromium from disk.
const BROWSER_START: std::time::Duration = std::time::Duration::from_secs(60);

/// The window's size, which is also the size of a screenshot.
pub const WINDOW: (u32, u32) = (1200, 800);

/// A WebDriver session in headless Chromium, with the chromedriver that runs it.
pub struct Browser {
    /// The session.
    pub client: Client,
    driver: Child,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session in it; `None` (and a line on
    /// stderr saying why) where either program is missing. Panics when they are installed
    /// but do not start.
    pub async fn start() -> Option<Browser> {
        let Some(chromium) = crate::programs::find(
            &["chromium", "chromium-browser", "google-chrome"],
            "/usr/bin",
        ) else {
            eprintln!(
                "skipped: Chromium is not installed (chromium not found in PATH or /usr/bin)"
            );
            return None;
        };
        let Some(chromedriver) = crate::programs::find(&["chromedriver"], "/usr/bin") else {
            eprintln!("skipped: chromedriver is not installed (not found in PATH or /usr/bin)");
            return None;
        };
        // A port found free may be taken before chromedriver binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            let port = crate::free_port();
            let mut driver = Command::new(&chromedriver)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own group, so that the drop can stop Chromium with it.
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("{} runs: {e}", chromedriver.display()));
            if let Err(why) =
                crate::programs::listening(&mut driver, port, "chromedriver", String::new).await
            {
                last = why;
                continue;
            }
            let client = session(&chromium, port).await;
            return Some(Browser { client, driver });
        }
        panic!("chromedriver did not start: {last}");
    }

    /// Ends the session (Chromium quits) and stops chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.start_kill();
        let _ = self.driver.wait().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.driver.id().and_then(|id| i32::try_from(id).ok()) {
            // The group chromedriver leads (it was started as its own group).
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A session in headless Chromium (`chromium`), through the chromedriver on `port`.
async fn session(chromium: &Path, port: u16) -> Client {
    let (w, h) = WINDOW;
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": [
                "--headless=new",
                // Tests run as root in CI's containers, where Chromium's sandbox cannot.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                format!("--window-size={w},{h}"),
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let mut builder = ClientBuilder::new(connector);
    builder.capabilities(caps);
    let url = format!("http://127.0.0.1:{port}");
    let connect = builder.connect(&url);
    match tokio::time::timeout(BROWSER_START, connect).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => panic!("a headless Chromium session starts: {e}"),
        Err(_) => panic!("no Chromium session after {BROWSER_START:?}"),
    }
}
