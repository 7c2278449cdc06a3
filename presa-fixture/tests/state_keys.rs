//! `PRESA_STATE_KEYS` set but not a key list is an error when the server is built, never a
//! silent fallback to a random key: the fixture binary refuses to start with exit code 1
//! and names the variable, for text that is not UTF-8, not base64 or too short; a good
//! list starts it.

#![cfg(unix)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = env!("CARGO_BIN_EXE_presa-fixture");

/// Runs the fixture over stdio with stdin at its end and `PRESA_STATE_KEYS` set to
/// `keys`: its exit code and what it wrote to stderr.
fn run(keys: &OsStr) -> (Option<i32>, String) {
    let out = Command::new(FIXTURE)
        .args(["--transport", "stdio"])
        .env("PRESA_STATE_KEYS", keys)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("the fixture runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_malformed_key_list_is_an_error_at_start() {
    let started = Instant::now();
    for keys in [
        OsStr::from_bytes(b"k1:\xff\xfe"),
        OsStr::new("k1:not base64!"),
        OsStr::new("k1:c2hvcnQ="),
        OsStr::new("no-colon"),
    ] {
        let (code, stderr) = run(keys);
        assert_eq!(code, Some(1), "{keys:?}: {stderr}");
        assert!(
            stderr.contains("PRESA_STATE_KEYS") || stderr.contains("request-state key"),
            "{keys:?}: {stderr}"
        );
    }
    // 32 bytes of base64: a good key; stdin at its end, so the stdio server ends at once.
    let (code, stderr) = run(OsStr::new(
        "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    ));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(60));
}
