//! `DelayProxy`: a TCP proxy on loopback that delays every byte it forwards.
//!
//! Latency injection for the tests, over real sockets: a client connects to
//! the proxy, the proxy connects to the upstream server, and each chunk read
//! from one side is written to the other side `delay` later (a separate
//! delay per direction, changeable while connections are open). Delaying
//! chunks rather than throttling keeps the order of bytes and adds latency
//! without limiting throughput, like a long link.
//!
//! It runs on plain OS threads, not on the test's tokio runtime, so it keeps
//! forwarding while the client under test is paused.
//!
//! Lifecycle: [`DelayProxy::start`] binds `127.0.0.1:0` and starts the
//! accept thread; each accepted connection gets four threads (a reader and a
//! delayed writer per direction). [`DelayProxy::stop`] — also run on drop —
//! closes the listener and every connection and joins every thread before it
//! returns; stopping is idempotent.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running delay proxy. See the module docs.
#[derive(Debug)]
pub struct DelayProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    /// The listening socket's inode, to find it among this process's open
    /// files (see [`DelayProxy::is_listening`]).
    listener_inode: u64,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    stopping: AtomicBool,
    to_server_micros: AtomicU64,
    to_client_micros: AtomicU64,
    // Clones of every socket, so `stop` can unblock the reader threads.
    sockets: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Clone, Copy)]
enum Direction {
    ToServer,
    ToClient,
}

impl Shared {
    fn delay(&self, direction: Direction) -> Duration {
        let micros = match direction {
            Direction::ToServer => &self.to_server_micros,
            Direction::ToClient => &self.to_client_micros,
        };
        Duration::from_micros(micros.load(Ordering::SeqCst))
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl DelayProxy {
    /// Starts a proxy to `upstream` with no delay yet.
    pub fn start(upstream: SocketAddr) -> io::Result<DelayProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let listener_inode = std::fs::metadata(format!("/proc/self/fd/{}", listener.as_raw_fd()))?.ino();
        let shared = Arc::new(Shared::default());
        let acceptor = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("delay-proxy-{}", addr.port()))
                .spawn(move || accept_loop(listener, upstream, shared))?
        };
        Ok(DelayProxy { addr, upstream, listener_inode, shared, acceptor: Some(acceptor) })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server behind the proxy.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// A `redis://` URL pointing at the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.addr.port())
    }

    /// Delays bytes going to the server by `to_server` and bytes coming back
    /// by `to_client`, from the moment each chunk is read. Applies to chunks
    /// read from now on, on open and future connections alike.
    pub fn set_delay(&self, to_server: Duration, to_client: Duration) {
        self.shared.to_server_micros.store(to_server.as_micros() as u64, Ordering::SeqCst);
        self.shared.to_client_micros.store(to_client.as_micros() as u64, Ordering::SeqCst);
    }

    /// Closes the listener and every connection, and joins every thread.
    /// Bytes still waiting for their delay are dropped. Idempotent.
    pub fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept; it sees `stopping` and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
        let _ = acceptor.join();
        // The acceptor is gone, so no socket or thread can be added any more.
        for socket in lock(&self.shared.sockets).iter() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        let threads: Vec<JoinHandle<()>> = lock(&self.shared.threads).drain(..).collect();
        for thread in threads {
            let _ = thread.join();
        }
        lock(&self.shared.sockets).clear();
    }

    /// Whether this process still has the proxy's listening socket open.
    /// Read from `/proc/self/fd` rather than by connecting to the port: once
    /// the proxy closes it, any other test's server may bind the same port,
    /// and a connection that succeeds then says nothing about the proxy.
    pub fn is_listening(&self) -> bool {
        let wanted = format!("socket:[{}]", self.listener_inode);
        let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return false };
        fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == wanted.as_str()))
    }

    /// Whether [`DelayProxy::stop`] has run.
    pub fn is_stopped(&self) -> bool {
        self.acceptor.is_none()
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking pump thread must not stop the others from being joined.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping() {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect_timeout(&upstream, Duration::from_secs(2)) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        if let Err(e) = pump_pair(client, server, &shared) {
            eprintln!("delay proxy: could not start a connection: {e}");
        }
    }
}

fn pump_pair(client: TcpStream, server: TcpStream, shared: &Arc<Shared>) -> io::Result<()> {
    {
        let mut sockets = lock(&shared.sockets);
        sockets.push(client.try_clone()?);
        sockets.push(server.try_clone()?);
    }
    let up = pump(client.try_clone()?, server.try_clone()?, Direction::ToServer, shared)?;
    let down = pump(server, client, Direction::ToClient, shared)?;
    let mut threads = lock(&shared.threads);
    threads.extend(up);
    threads.extend(down);
    Ok(())
}

/// A reader thread stamping each chunk with its due time and a writer thread
/// sending it then, so a long delay never stops the reader from reading.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    direction: Direction,
    shared: &Arc<Shared>,
) -> io::Result<[JoinHandle<()>; 2]> {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reader = {
        let shared = shared.clone();
        std::thread::Builder::new().name("delay-proxy-read".into()).spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let due = Instant::now() + shared.delay(direction);
                        if tx.send((due, buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            }
        })?
    };
    let writer = {
        let shared = shared.clone();
        std::thread::Builder::new().name("delay-proxy-write".into()).spawn(move || {
            // `recv` fails once the reader has gone and the queue is drained:
            // then the peer is told the stream ended.
            while let Ok((due, chunk)) = rx.recv() {
                // Sleep in slices so `stop` never waits out a long delay.
                loop {
                    if shared.stopping() {
                        return;
                    }
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    std::thread::sleep((due - now).min(Duration::from_millis(10)));
                }
                if to.write_all(&chunk).is_err() {
                    return;
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        })?
    };
    Ok([reader, writer])
}
