//! The live proxy: a node's bridge on a real socket, with the link faults.
//!
//! In the simulation a node's bridge is a turmoil host and turmoil makes the
//! link faults. Live, each node gets a [`LiveBridge`]: a TCP listener on a
//! loopback port that every client connection of the node goes through,
//! opening one real connection to redis-server per client connection (so
//! `MULTI` and `WATCH` keep their meaning). Two loops per connection, in
//! one task, carry the frames: the **uplink** reads requests from the
//! client and exchanges each with the server, one exchange at a time per
//! node as the simulated bridge does them, so that the execution log (the
//! bridge's [`crate::Execution`] log) is in the server's own order; the
//! **backlink** writes the replies to the client. Each direction keeps
//! TCP's order, and a frame waiting on one link holds up no other link.
//!
//! On the way, each frame meets the faults of its client's link
//! ([`LinkState`], set by the world from the schedule): dropped while the
//! link is cut that way (the connection stays open, as a partition leaves
//! it: the client hears nothing until it gives up), held until the hold is
//! released, delayed by a latency fault's exact latency or else by the
//! world's link latency (drawn per frame from its range, as turmoil draws
//! it), and a workload's aimed delays (`delay_next_request`,
//! `delay_next_reply`) are spent here in real time. A crashed node
//! ([`LiveBridge::crash`]) drops every connection and refuses new ones
//! until it comes back.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use core::time::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::bridge::{next_request, BridgeNode, Phase};

/// The rate of turmoil's latency distribution (`Exp(5)`, its default).
const TURMOIL_LATENCY_LAMBDA: f64 = 5.0;

/// The faults on one client's link to this node, both ways.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LinkState {
    /// Requests are dropped (a partition, or one way towards the server).
    pub to_server_cut: bool,
    /// Replies are dropped (a partition, or one way towards the client).
    pub to_client_cut: bool,
    /// Frames both ways wait until the hold is released.
    pub held: bool,
    /// Every frame takes exactly this long (a latency fault).
    pub latency: Option<Duration>,
}

/// A node's proxy (module docs).
#[derive(Debug)]
pub(crate) struct LiveBridge {
    node: Arc<BridgeNode>,
    links: Mutex<BTreeMap<Arc<str>, LinkState>>,
    /// Woken whenever a link's state changes (a hold released).
    changed: Notify,
    /// The world's link latency range, drawn per frame.
    latency: (Duration, Duration),
    rng: Mutex<StdRng>,
    /// The run's start in Unix ms: server times are logged from it.
    epoch_unix_ms: u64,
    down: AtomicBool,
    connections: Mutex<Vec<AbortHandle>>,
    /// One exchange with the server at a time ([`LiveBridge::exchange`]).
    turn: tokio::sync::Mutex<()>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A reply on its way back to the client.
struct Returning {
    host: Arc<str>,
    reply: Vec<u8>,
    /// When it was read from the server.
    read_at: Instant,
    /// How long a workload's aimed delay holds it (`delay_next_reply`).
    delay: Option<Duration>,
}

impl LiveBridge {
    /// The proxy of `node`; `latency` is the world's link latency range,
    /// `seed` draws from it, `epoch_unix_ms` is the run's start.
    pub(crate) fn new(
        node: Arc<BridgeNode>,
        latency: (Duration, Duration),
        seed: u64,
        epoch_unix_ms: u64,
    ) -> LiveBridge {
        LiveBridge {
            node,
            links: Mutex::new(BTreeMap::new()),
            changed: Notify::new(),
            latency,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            epoch_unix_ms,
            down: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Changes the link of client host `host`.
    pub(crate) fn set_link(&self, host: &str, change: impl FnOnce(&mut LinkState)) {
        change(locked(&self.links).entry(Arc::from(host)).or_default());
        self.changed.notify_waiters();
    }

    fn link(&self, host: &str) -> LinkState {
        locked(&self.links).get(host).copied().unwrap_or_default()
    }

    /// The node is down: every connection drops, new ones are closed at once.
    pub(crate) fn crash(&self) {
        self.down.store(true, Ordering::Release);
        for c in locked(&self.connections).drain(..) {
            c.abort();
        }
    }

    /// The node is back: new connections are served again.
    pub(crate) fn bounce(&self) {
        self.down.store(false, Ordering::Release);
    }

    /// Accepts connections until the run ends (the task is dropped then).
    pub(crate) async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                // Out of descriptors, say: try again shortly, not in a spin.
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            };
            if self.down.load(Ordering::Acquire) {
                drop(stream);
                continue;
            }
            self.node.stats().connections.fetch_add(1, Ordering::Relaxed);
            let bridge = Arc::clone(&self);
            let task = tokio::task::spawn_local(async move {
                if bridge.serve_connection(stream, peer).await.is_err() {
                    bridge.node.stats().errors.fetch_add(1, Ordering::Relaxed);
                }
            });
            let mut connections = locked(&self.connections);
            connections.retain(|c| !c.is_finished());
            connections.push(task.abort_handle());
        }
    }

    async fn serve_connection(&self, stream: TcpStream, peer: SocketAddr) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let real = TcpStream::connect(self.node.real_addr()).await?;
        real.set_nodelay(true)?;
        let (client_rd, client_wr) = stream.into_split();
        let (back_tx, back_rx) = mpsc::unbounded_channel();
        let (up, back) = tokio::join!(self.uplink(client_rd, real, peer, back_tx), self.backlink(client_wr, back_rx));
        // The uplink ended (the client went away, or the server closed and
        // the replies it had sent were delivered): both sockets close, as
        // a dropped connection closes; a crash aborts the task at once.
        up.and(back)
    }

    /// The link latency one frame takes now, with `link`'s faults: a
    /// latency fault's exactly, else drawn as turmoil draws a message's
    /// (0.7: `min + ⌊(max − min) in ms × Exp(5)⌋` ms, at most `max`; a mean
    /// of a fifth of the range), so that both tiers model the same links.
    fn latency(&self, link: LinkState) -> Duration {
        if let Some(l) = link.latency {
            return l;
        }
        let (min, max) = self.latency;
        if max <= min {
            return min;
        }
        // Exp(λ) by inversion: −ln(U) / λ, U in (0, 1].
        let u: f64 = 1.0 - locked(&self.rng).random::<f64>();
        let mult = -u.ln() / TURMOIL_LATENCY_LAMBDA;
        let range_ms = (max - min).as_millis() as f64;
        min.saturating_add(Duration::from_millis((range_ms * mult) as u64)).min(max)
    }

    /// Waits while `host`'s link is held; its state after.
    async fn unheld(&self, host: &str) -> LinkState {
        loop {
            let changed = self.changed.notified();
            let link = self.link(host);
            if !link.held {
                return link;
            }
            changed.await;
        }
    }

    /// Reads requests from the client; each one meets its link's faults,
    /// then is exchanged with the server ([`LiveBridge::exchange`]) and its
    /// reply handed to [`LiveBridge::backlink`].
    async fn uplink(
        &self,
        mut rd: OwnedReadHalf,
        mut real: TcpStream,
        peer: SocketAddr,
        back: mpsc::UnboundedSender<Returning>,
    ) -> io::Result<()> {
        let mut inbox = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        let mut reply_buf = Vec::new();
        // The host and process are named at the first request: the client
        // says who it is once its connect has returned, before it sends.
        let mut names: Option<(Arc<str>, Arc<str>)> = None;
        let mut last = Instant::now();
        // When the bytes in `inbox` came off the socket: a frame arrived
        // then, not when the exchange before it let the loop look at it
        // (pipelined requests would otherwise each wait a latency more).
        let mut read_at = Instant::now();
        loop {
            while let Some(len) = next_request(&inbox)? {
                let request: Vec<u8> = inbox.drain(..len).collect();
                let (host, client) = names
                    .get_or_insert_with(|| {
                        let host = crate::live::host_of(peer).unwrap_or_else(|| Arc::from(peer.to_string()));
                        let client = self.node.process_of(peer, &host);
                        (host, client)
                    })
                    .clone();
                let link = self.unheld(&host).await;
                // A frame never overtakes the one before it.
                last = last.max(read_at + self.latency(link));
                tokio::time::sleep_until(last).await;
                if self.link(&host).to_server_cut {
                    continue;
                }
                let (held, reply_delay) = match self.node.take_delay(&client, &request) {
                    Some(d) if d.phase == Phase::Before => (d.by, None),
                    Some(d) => (Duration::ZERO, Some(d)),
                    None => (Duration::ZERO, None),
                };
                let taken = crate::live::elapsed().unwrap_or_default();
                if !held.is_zero() {
                    tokio::time::sleep(held).await;
                }
                let at = self.exchange(&mut real, &request, &mut reply_buf, &mut chunk).await?;
                let reply = core::mem::take(&mut reply_buf);
                self.node.record(&client, &request, &reply, at, taken, held);
                self.node.stats().commands.fetch_add(1, Ordering::Relaxed);
                let delay = match reply_delay {
                    // An error reply did nothing: the delay waits for the
                    // request that acts (as the simulated bridge).
                    Some(d) if reply.first() == Some(&b'-') => {
                        self.node.requeue(d);
                        None
                    }
                    Some(d) => Some(d.by),
                    None => None,
                };
                if back.send(Returning { host, reply, read_at: Instant::now(), delay }).is_err() {
                    return Ok(());
                }
            }
            let n = rd.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            read_at = Instant::now();
            inbox.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends `request` to the server and reads its one reply into `reply`;
    /// the server's clock as it answered. One exchange at a time per node,
    /// as the simulated bridge does them: the execution log's order is then
    /// the server's own (Redis runs one command at a time anyway). A `WAIT`
    /// is the exception: the server serves others while it waits, so it
    /// takes no turn.
    async fn exchange(
        &self,
        real: &mut TcpStream,
        request: &[u8],
        reply: &mut Vec<u8>,
        chunk: &mut [u8],
    ) -> io::Result<Duration> {
        let _turn = match crate::bridge::command_name(request).as_str() {
            "WAIT" => None,
            _ => Some(self.turn.lock().await),
        };
        real.write_all(request).await?;
        reply.clear();
        loop {
            let n = real.read(chunk).await?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "redis-server closed the connection"));
            }
            reply.extend_from_slice(&chunk[..n]);
            if reply_len(reply)?.is_some() {
                return Ok(self.server_time());
            }
        }
    }

    /// Writes the replies to the client, in order, through the link's
    /// faults and latency.
    async fn backlink(&self, mut wr: OwnedWriteHalf, mut back: mpsc::UnboundedReceiver<Returning>) -> io::Result<()> {
        let mut last = Instant::now();
        while let Some(r) = back.recv().await {
            if let Some(by) = r.delay {
                tokio::time::sleep_until(r.read_at + by).await;
            }
            let link = self.unheld(&r.host).await;
            // A reply never overtakes the one before it.
            last = last.max(r.read_at + self.latency(link));
            tokio::time::sleep_until(last).await;
            if self.link(&r.host).to_client_cut {
                continue;
            }
            wr.write_all(&r.reply).await?;
        }
        Ok(())
    }

    /// The server's wall clock now, as the simulation logs it: the run's
    /// start plus the time since, plus the node's clock step.
    fn server_time(&self) -> Duration {
        let since = crate::live::elapsed().unwrap_or_default();
        let offset = self.node.clock_offset_ms();
        let base = Duration::from_millis(self.epoch_unix_ms) + since;
        let step = Duration::from_millis(offset.unsigned_abs());
        if offset >= 0 {
            base + step
        } else {
            base.saturating_sub(step)
        }
    }
}

/// The length of the first complete reply frame in `buf` (RESP2, and the
/// RESP3 types a RESP2 connection never sees but a frame may hold), if
/// there is one.
pub(crate) fn reply_len(buf: &[u8]) -> io::Result<Option<usize>> {
    frame_end(buf, 0)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("reply is not RESP: {what}"))
}

/// Where the frame starting at `at` ends, if it is complete.
fn frame_end(buf: &[u8], at: usize) -> io::Result<Option<usize>> {
    let Some(&kind) = buf.get(at) else { return Ok(None) };
    let Some(eol) = buf[at..].windows(2).position(|w| w == b"\r\n").map(|p| at + p) else { return Ok(None) };
    let line = &buf[at + 1..eol];
    let number = || -> io::Result<i64> {
        core::str::from_utf8(line).ok().and_then(|s| s.parse().ok()).ok_or_else(|| invalid("a bad length"))
    };
    let after = eol + 2;
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(after)),
        b'$' | b'!' | b'=' => {
            let n = number()?;
            if n < 0 {
                return Ok(Some(after));
            }
            let end = after + n as usize + 2;
            Ok((buf.len() >= end).then_some(end))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = number()?;
            let items = if matches!(kind, b'%' | b'|') { n.saturating_mul(2) } else { n };
            let mut end = after;
            for _ in 0..items.max(0) {
                match frame_end(buf, end)? {
                    Some(e) => end = e,
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                // An attribute precedes the value it describes.
                return frame_end(buf, end);
            }
            Ok(Some(end))
        }
        _ => Err(invalid("an unknown type byte")),
    }
}

#[cfg(test)]
mod tests {
    use super::reply_len;

    #[test]
    fn frames_replies_exactly() {
        let cases: &[(&[u8], Option<usize>)] = &[
            (b"+OK\r\n", Some(5)),
            (b"+OK\r", None),
            (b":12\r\n:1\r\n", Some(5)),
            (b"$3\r\nabc\r\n", Some(9)),
            (b"$3\r\nab", None),
            (b"$-1\r\n", Some(5)),
            (b"*2\r\n$1\r\na\r\n:1\r\n+x\r\n", Some(15)),
            (b"*2\r\n$1\r\na\r\n", None),
            (b"*-1\r\n", Some(5)),
            (b"*1\r\n*1\r\n-ERR x\r\n", Some(16)),
            (b"%1\r\n+a\r\n:1\r\n", Some(12)),
        ];
        for (bytes, want) in cases {
            assert_eq!(reply_len(bytes).ok().flatten(), *want, "{:?}", String::from_utf8_lossy(bytes));
        }
        assert!(reply_len(b"?x\r\n").is_err());
    }
}
