//! Comparisons: `redis-benchmark` ceilings, and rounds of two workloads
//! measured back to back with their spread.

use crate::*;

/// Requests per second `redis-benchmark -P 16 -c 50` reports for `args`.
pub(crate) fn benchmark(server: &RedisServer, seconds: f64, args: &[&str]) -> Result<f64, BoxError> {
    let port = server.port().to_string();
    let requests = ((seconds * 300_000.0) as u64).max(100_000).to_string();
    let out = Command::new("redis-benchmark")
        .args(["-p", &port, "-P", "16", "-c", "50", "-n", &requests, "-r", "100000000", "-q"])
        .args(args)
        .output()
        .map_err(|e| format!("redis-benchmark: {e} (install the redis-tools package)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Progress lines end in '\r'; the summary is the last one:
    // "<command>: 123456.79 requests per second, p50=..."
    let summary = text.rsplit('\r').next().unwrap_or_default();
    summary
        .split("requests per second")
        .next()
        .and_then(|head| head.rsplit(": ").next())
        .and_then(|n| n.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("cannot parse redis-benchmark output: {text}").into())
}

/// The acquire script's `EVALSHA` ceiling, scripts/s.
pub(crate) fn evalsha_ceiling(server: &RedisServer, seconds: f64) -> Result<f64, BoxError> {
    let script = include_str!("../../src/scripts/lock_acquire.lua");
    let sha = redis::Script::new(script).get_hash().to_string();
    let loaded = server.command(&["SCRIPT", "LOAD", script])?;
    if !loaded.contains(&sha) {
        return Err(format!("SCRIPT LOAD returned {loaded:?}").into());
    }
    benchmark(
        server,
        seconds,
        &["EVALSHA", &sha, "2", "ceil:{__rand_int__}", "ceil:{__rand_int__}:fence", "owner", "60000"],
    )
}

/// Min, median (lower, a measured value) and max.
pub(crate) fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[0], v[(v.len() - 1) / 2], v[v.len() - 1])
}

pub(crate) fn fmt3((lo, mid, hi): (f64, f64, f64)) -> String {
    format!("{lo:.0} / **{mid:.0}** / {hi:.0}")
}

/// Per-round figures of one comparison at one in-flight count.
#[derive(Default, Clone)]
pub(crate) struct Rounds {
    pub(crate) ours: Vec<Measured>,
    pub(crate) floor: Vec<Measured>,
}

impl Rounds {
    pub(crate) fn push(&mut self, ours: Measured, floor: Measured) {
        self.ours.push(ours);
        self.floor.push(floor);
    }

    /// One figure of each round, this crate's side then the floor's.
    pub(crate) fn each(&self, pick: fn(&Measured) -> f64) -> (Vec<f64>, Vec<f64>) {
        (self.ours.iter().map(pick).collect(), self.floor.iter().map(pick).collect())
    }

    /// Median over the rounds of one figure, this crate's then the floor's.
    pub(crate) fn medians(&self, pick: fn(&Measured) -> f64) -> (f64, f64) {
        let (ours, floor) = self.each(pick);
        (spread(&ours).1, spread(&floor).1)
    }

    /// "client + server" CPU µs per op, medians over the rounds, ours then the floor's.
    pub(crate) fn cpu(&self) -> String {
        let (oc, fc) = self.medians(|m| m.client_us);
        let (os, fs) = self.medians(|m| m.server_us);
        format!("{oc:.1} + {os:.1} / {fc:.1} + {fs:.1}")
    }

    /// The client's allocations and context switches per op, medians over
    /// the rounds, ours then the floor's.
    pub(crate) fn client(&self) -> String {
        let (oa, fa) = self.medians(|m| m.allocations);
        let (os, fs) = self.medians(|m| m.switches);
        format!("{oa:.1}, {os:.2} / {fa:.1}, {fs:.2}")
    }

    pub(crate) fn ratio(&self) -> (f64, f64, f64) {
        let r: Vec<f64> = self.ours.iter().zip(&self.floor).map(|(a, b)| a.rate / b.rate).collect();
        spread(&r)
    }
}

/// Runs every comparison at `in_flight` for `rounds` rounds, alternating
/// which side goes first.
pub(crate) async fn compare(
    server: &RedisServer,
    conn: &MultiplexedConnection,
    pairs: &[Pair],
    in_flight: usize,
    seconds: f64,
    rounds: usize,
) -> Result<Vec<Rounds>, BoxError> {
    let mut out = vec![Rounds::default(); pairs.len()];
    for round in 0..rounds {
        for (k, (ours, floor, label, _, _)) in pairs.iter().enumerate() {
            let (first, second) = if round % 2 == 0 { (*ours, *floor) } else { (*floor, *ours) };
            let pid = server.pid().ok_or("the server is not running")?.to_string();
            let a = run(conn.clone(), first, in_flight, seconds, &pid).await?;
            server.command(&["FLUSHALL"])?;
            let b = run(conn.clone(), second, in_flight, seconds, &pid).await?;
            server.command(&["FLUSHALL"])?;
            let (o, f) = if round % 2 == 0 { (a, b) } else { (b, a) };
            eprintln!(
                "round {}: {label} at {in_flight} in flight: {:.0} (this crate), {:.0} (floor)",
                round + 1,
                o.rate,
                f.rate
            );
            out[k].push(o, f);
        }
    }
    Ok(out)
}
