//! A throwaway PostgreSQL server for the tests of `presa::tasks::PgStore`: a cluster made
//! with `initdb` in a temporary folder, served on a free loopback port (its Unix socket in
//! that folder too), stopped and removed when the [`Postgres`] is dropped.
//!
//! [`Postgres::start`] gives `None`, saying why on stderr, where PostgreSQL's programs
//! (`initdb`, `pg_ctl`, `postgres`) are not installed, so the tests that need it skip;
//! `.ci/run` installs them. Found in `PATH` first, then in `/usr/lib/postgresql/*/bin`
//! (Debian's layout, newest first). PostgreSQL refuses to run as root: under root (as CI
//! and this workplace run) every program runs as the `postgres` system user through
//! `runuser`, in a folder given to that user.
//!
//! The cluster trusts every local connection (no password) and does not sync to disk
//! (`fsync=off`): it is for tests, and is thrown away.

use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// The database [`Postgres::url`] names.
const DATABASE: &str = "presa";

/// The programs the server needs, all from one folder.
const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// The user PostgreSQL's programs run as under root.
const SYSTEM_USER: &str = "postgres";

/// A running throwaway PostgreSQL server; stopped and its folder removed on drop.
pub struct Postgres {
    /// Holds the data folder (`data`), the socket and the log; removed on drop.
    dir: tempfile::TempDir,
    /// The folder of the programs.
    bin: PathBuf,
    /// The user to run them as (`Some` under root).
    run_as: Option<String>,
    port: u16,
}

impl Postgres {
    /// Makes a cluster and starts it, with an empty database `presa` in it; `None` (and
    /// a line on stderr saying why) where PostgreSQL is not installed. Panics, with the
    /// server's log, when it is installed but does not start.
    pub async fn start() -> Option<Postgres> {
        let bin = match find_programs() {
            Ok(bin) => bin,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let run_as = if nix::unistd::geteuid().is_root() {
            match nix::unistd::User::from_name(SYSTEM_USER) {
                Ok(Some(user)) => Some(user),
                _ => {
                    eprintln!(
                        "skipped: running as root, and there is no `{SYSTEM_USER}` user to run \
                         PostgreSQL as (it refuses to run as root)"
                    );
                    return None;
                }
            }
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix("presa-pg-")
            .tempdir()
            .expect("a temporary folder");
        if let Some(user) = &run_as {
            nix::unistd::chown(dir.path(), Some(user.uid), Some(user.gid))
                .expect("the folder given to the postgres user");
        }
        let mut pg = Postgres {
            dir,
            bin,
            run_as: run_as.map(|u| u.name),
            port: 0,
        };
        let data = pg.data();
        pg.run(
            "initdb",
            [
                OsStr::new("-D"),
                data.as_os_str(),
                OsStr::new("-U"),
                OsStr::new("postgres"),
                OsStr::new("--auth=trust"),
                OsStr::new("--encoding=UTF8"),
                OsStr::new("--locale=C"),
                OsStr::new("--no-sync"),
                OsStr::new("--no-instructions"),
            ],
        )
        .await
        .unwrap_or_else(|why| panic!("initdb failed: {why}"));
        // A port found free may be taken before the server binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            pg.port = crate::free_port();
            match pg.start_again().await {
                Ok(()) => {
                    pg.create_database().await;
                    return Some(pg);
                }
                Err(why) => last = why,
            }
        }
        panic!("PostgreSQL did not start: {last}");
    }

    /// The URL of the database `presa`, as the superuser `postgres` (no password).
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// The URL of database `name` on this server.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The loopback port the server listens on (the same after [`Postgres::stop`] and
    /// [`Postgres::start_again`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection of its own to the database `presa`, as another client would hold one.
    pub async fn connection(&self) -> PgConnection {
        PgConnection::connect(&self.url())
            .await
            .expect("a connection to the test database")
    }

    /// The pids of the server's connections whose `application_name` is `application`
    /// (such as presa's listening connections), in order.
    pub async fn pids_of(&self, application: &str) -> Vec<i32> {
        let mut conn = self.connection().await;
        sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
        )
        .bind(application)
        .fetch_all(&mut conn)
        .await
        .expect("pg_stat_activity is read")
    }

    /// Stops the server (`pg_ctl stop -m fast`: open sessions are ended), waiting until it
    /// is down. The data stays.
    pub async fn stop(&self) {
        let data = self.data();
        self.run(
            "pg_ctl",
            [
                OsStr::new("stop"),
                OsStr::new("-D"),
                data.as_os_str(),
                OsStr::new("-m"),
                OsStr::new("fast"),
                OsStr::new("-w"),
            ],
        )
        .await
        .unwrap_or_else(|why| panic!("pg_ctl stop failed: {why}"));
    }

    /// Starts the server on the same data and port, waiting until it takes connections.
    pub async fn start_again(&self) -> Result<(), String> {
        let data = self.data();
        let log = self.dir.path().join("log");
        let settings = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c full_page_writes=off \
             -c synchronous_commit=off",
            self.port,
            self.dir.path().display()
        );
        let started = self
            .run(
                "pg_ctl",
                [
                    OsStr::new("start"),
                    OsStr::new("-D"),
                    data.as_os_str(),
                    OsStr::new("-l"),
                    log.as_os_str(),
                    OsStr::new("-w"),
                    OsStr::new("-t"),
                    OsStr::new("60"),
                    OsStr::new("-o"),
                    OsStr::new(&settings),
                ],
            )
            .await;
        started.map_err(|why| {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            format!("{why}\nserver log:\n{log}")
        })
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    async fn create_database(&self) {
        let mut admin = PgConnection::connect(&self.url_of("postgres"))
            .await
            .expect("a connection to the postgres database");
        sqlx::query(&format!("CREATE DATABASE {DATABASE}"))
            .execute(&mut admin)
            .await
            .expect("the test database created");
        let _ = admin.close().await;
    }

    /// `program` of the server's folder with `args`, as the server's user, to its end:
    /// what it wrote, when it failed.
    async fn run<I, S>(&self, program: &str, args: I) -> Result<(), String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let output = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| format!("{program} could not be run: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program}: {}\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        // The user may not read the test's own folder.
        command.current_dir(self.dir.path());
        command
    }
}

/// Stops the server (if it runs) before the folder is removed; a test that failed midway
/// leaves nothing running.
impl Drop for Postgres {
    fn drop(&mut self) {
        let path = self.bin.join("pg_ctl");
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => std::process::Command::new(path),
        };
        let _ = command
            .current_dir(self.dir.path())
            .args(["stop", "-m", "fast", "-w", "-D"])
            .arg(self.data())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The folder holding all of [`PROGRAMS`]: the first of `PATH`, then Debian's
/// `/usr/lib/postgresql/<version>/bin`, newest version first.
fn find_programs() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    debian.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    candidates.extend(debian.into_iter().map(|(_, bin)| bin));
    first_with_programs(candidates)
}

/// The first of `candidates` holding all of [`PROGRAMS`], or why none does.
fn first_with_programs(candidates: Vec<PathBuf>) -> Result<PathBuf, String> {
    candidates
        .into_iter()
        .find(|dir| PROGRAMS.iter().all(|p| is_file(&dir.join(p))))
        .ok_or_else(|| {
            format!(
                "PostgreSQL is not installed ({} not found in PATH or /usr/lib/postgresql/*/bin)",
                PROGRAMS.join(", ")
            )
        })
}

fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the programs are missing, or only some of them, the reason names them all;
    /// the first folder holding all three is taken.
    #[test]
    fn the_programs_are_found_all_in_one_folder_or_the_tests_skip() {
        let none = tempfile::tempdir().expect("a folder");
        let some = tempfile::tempdir().expect("a folder");
        let all = tempfile::tempdir().expect("a folder");
        std::fs::write(some.path().join("initdb"), b"").expect("written");
        for p in PROGRAMS {
            std::fs::write(all.path().join(p), b"").expect("written");
        }
        let why = first_with_programs(vec![none.path().into(), some.path().into()])
            .expect_err("none holds them all");
        assert!(why.contains("initdb, pg_ctl, postgres not found"), "{why}");
        assert_eq!(
            first_with_programs(vec![some.path().into(), all.path().into()]),
            Ok(all.path().to_owned())
        );
    }
}
