//! The authenticated cell's authorization server: `bench-issuer` (bench/issuer), run as a
//! child of the driver for the length of the cell. It serves its metadata and JWKS on a
//! loopback port and signs the access tokens the driver asks it for. It is a program of
//! its own, not code of the driver, so that the crypto crates signing needs stay out of
//! the build of the table's servers (bench/Cargo.toml says why).

use crate::Killed;
use hyper::header::HeaderValue;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

/// A running `bench-issuer`: its URL, and the pipes tokens are asked for and read on.
pub struct Issuer {
    url: String,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// Killed (and waited for) when the issuer is dropped.
    _child: Killed,
}

impl Issuer {
    /// Starts `bench-issuer` (beside this driver's own binary, where cargo builds both)
    /// for tokens whose audience is `audience` (the server's canonical URI), and reads
    /// its URL.
    pub fn start(audience: &str) -> Result<Issuer, String> {
        let program = std::env::current_exe()
            .map_err(|e| format!("the driver's own path: {e}"))?
            .with_file_name("bench-issuer");
        Issuer::spawn(program, audience)
    }

    fn spawn(program: PathBuf, audience: &str) -> Result<Issuer, String> {
        let mut child = Command::new(&program)
            .arg(audience)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e} (built by bench/run)", program.display()))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("bench-issuer: no pipes".into());
        };
        let mut issuer = Issuer {
            url: String::new(),
            input,
            output: BufReader::new(output),
            _child: Killed(child),
        };
        issuer.url = issuer.line()?;
        if !issuer.url.starts_with("http://127.0.0.1:") {
            return Err(format!("bench-issuer: not its URL: {:?}", issuer.url));
        }
        Ok(issuer)
    }

    /// The issuer identifier, which the server is told to trust.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `n` new tokens, each with a `sub` and `jti` of its own, as `Authorization` values.
    pub fn bearers(&mut self, n: usize) -> Result<Vec<HeaderValue>, String> {
        writeln!(self.input, "{n}")
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("bench-issuer: {e}"))?;
        (0..n)
            .map(|_| {
                let line = self.line()?;
                if !line.starts_with("Bearer ") {
                    return Err(format!("bench-issuer: not a token: {line:?}"));
                }
                HeaderValue::from_str(&line).map_err(|e| format!("bench-issuer: {e}"))
            })
            .collect()
    }

    /// The issuer's next line of output, without its end.
    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Err("bench-issuer exited".into()),
            Ok(_) => Ok(line.trim_end().to_owned()),
            Err(e) => Err(format!("bench-issuer: {e}")),
        }
    }
}
