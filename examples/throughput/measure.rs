//! One measurement: a workload with N operations in flight for a while,
//! its rate and what each operation cost both processes.

use crate::*;

/// One measured side: operations per second, and CPU µs per operation of
/// this (client) process and of the server.
#[derive(Clone, Copy, Default)]
pub(crate) struct Measured {
    pub(crate) rate: f64,
    pub(crate) client_us: f64,
    pub(crate) server_us: f64,
    /// Heap allocations (and reallocations) per operation, this process.
    pub(crate) allocations: f64,
    /// Context switches per operation, every thread of this process.
    pub(crate) switches: f64,
}

impl Measured {
    /// The figures in the order a `PINNED` line carries them.
    pub(crate) fn figures(&self) -> [f64; 5] {
        [self.rate, self.client_us, self.server_us, self.allocations, self.switches]
    }

    /// The inverse of [`Measured::figures`].
    pub(crate) fn from_figures([rate, client_us, server_us, allocations, switches]: [f64; 5]) -> Measured {
        Measured { rate, client_us, server_us, allocations, switches }
    }
}

/// What the workloads call: each primitive (and each hand-written
/// baseline script) once, cloned into every task.
#[derive(Clone)]
pub(crate) struct Subjects {
    pub(crate) lock: Lock<MultiplexedConnection>,
    pub(crate) floored: Lock<MultiplexedConnection>,
    pub(crate) acknowledged: Lock<MultiplexedConnection>,
    pub(crate) acknowledged_store: FencedStore<MultiplexedConnection>,
    pub(crate) store: FencedStore<MultiplexedConnection>,
    pub(crate) plain: UnfencedStore<MultiplexedConnection>,
    pub(crate) log: SlidingWindowLog<MultiplexedConnection>,
    pub(crate) counter: SlidingWindowCounter<MultiplexedConnection>,
    pub(crate) fixed: NaiveFixedWindow<MultiplexedConnection>,
    pub(crate) cad: redis::Script,
    pub(crate) textbook: redis::Script,
    pub(crate) textbook_server_time: redis::Script,
    pub(crate) ttl: Ttl,
}

/// Operation `i` of task `worker`: one pair, decision or write of
/// `workload`.
pub(crate) async fn step(
    s: &Subjects,
    conn: &mut MultiplexedConnection,
    workload: Workload,
    worker: usize,
    i: u64,
) -> Result<(), BoxError> {
    let Subjects {
        lock,
        floored,
        acknowledged,
        acknowledged_store,
        store,
        plain,
        log,
        counter,
        fixed,
        cad,
        textbook,
        textbook_server_time,
        ttl,
    } = s;
    let ttl = *ttl;
    match workload {
        Workload::LockPairs | Workload::FlooredPairs | Workload::AcknowledgedPairs => {
            let lock = match workload {
                Workload::FlooredPairs => &floored,
                Workload::AcknowledgedPairs => &acknowledged,
                _ => &lock,
            };
            let name = format!("bench-{worker}-{i}");
            let lease = lock.acquire(&name, ttl).await?.ok_or("distinct names never contend")?;
            if !lock.release(&lease).await? {
                return Err::<(), BoxError>("release failed".into());
            }
        }
        Workload::UnfencedPairs => {
            let (key, owner) = (format!("floor-{worker}-{i}"), format!("owner-{worker}-{i}"));
            set_nx_px(conn, &key, &owner).await?;
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::MultiPairs => {
            let (key, owner) = (format!("multi-{worker}-{i}"), format!("owner-{worker}-{i}"));
            let (set, token): (Option<String>, i64) = redis::pipe()
                .atomic()
                .add_command(set_nx_px_cmd(&key, &owner))
                .cmd("INCR")
                .arg(format!("{key}:fence"))
                .query_async(conn)
                .await?;
            set.ok_or("distinct names never contend")?;
            if token < 1 {
                return Err("INCR returned no token".into());
            }
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::ModulePairs => {
            let (key, owner) = (format!("module-{worker}-{i}"), format!("owner-{worker}-{i}"));
            let token: Option<i64> = redis::cmd("FENCE.ACQUIRE")
                .arg(&key)
                .arg(format!("{key}:fence"))
                .arg(&owner)
                .arg(60_000)
                .query_async(conn)
                .await?;
            if token.ok_or("distinct names never contend")? < 1 {
                return Err("FENCE.ACQUIRE returned no token".into());
            }
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::UnfencedNativePairs => {
            let (key, owner) = (format!("floor-{worker}-{i}"), format!("owner-{worker}-{i}"));
            set_nx_px(conn, &key, &owner).await?;
            let deleted: i64 = redis::cmd("DELIFEQ").arg(&key).arg(&owner).query_async(conn).await?;
            if deleted != 1 {
                return Err("DELIFEQ failed".into());
            }
        }
        Workload::LogDecisions => {
            log.check(&format!("client-{}", i % 1000)).await?;
        }
        Workload::TextbookLog => {
            // The textbook passes the client's clock and a unique member.
            let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
            let _: i64 = textbook
                .key(format!("textbook:client-{}", i % 1000))
                .arg(now)
                .arg(1000)
                .arg(1_000_000_000u64)
                .arg(format!("{now}-{worker}-{i}"))
                .invoke_async(conn)
                .await?;
        }
        Workload::TextbookLogServerTime => {
            // A unique member without the client's clock.
            let _: i64 = textbook_server_time
                .key(format!("textbook:client-{}", i % 1000))
                .arg(1000)
                .arg(1_000_000_000u64)
                .arg(format!("{worker}-{i}"))
                .invoke_async(conn)
                .await?;
        }
        Workload::CounterDecisions => {
            counter.check(&format!("client-{}", i % 1000)).await?;
        }
        Workload::FixedWindow => {
            fixed.check(&format!("client-{}", i % 1000)).await?;
        }
        Workload::FencedWrites => {
            store.write(&format!("doc-{worker}"), b"payload", FencingToken::new(i + 1)).await?;
        }
        Workload::AcknowledgedWrites => {
            acknowledged_store.write(&format!("doc-{worker}"), b"payload", FencingToken::new(i + 1)).await?;
        }
        Workload::PlainSet => {
            plain.write(&format!("plain-{worker}"), b"payload").await?;
        }
    }
    Ok(())
}

/// Operations per second of `workload` with `in_flight` tasks on `conn`,
/// and the CPU both processes spent per operation meanwhile.
pub(crate) async fn run(
    conn: MultiplexedConnection,
    workload: Workload,
    in_flight: usize,
    seconds: f64,
    server_pid: &str,
) -> Result<Measured, BoxError> {
    // A limit nobody reaches: every decision does the whole work.
    let limit = Limit::new(1_000_000_000, Duration::from_secs(1))?;
    let ack = Acknowledgement::new(1, ACK_TIMEOUT)?;
    let subjects = Subjects {
        lock: Lock::new(conn.clone()),
        floored: Lock::builder(conn.clone()).tokens(Tokens::TimeFloored).build()?,
        acknowledged: Lock::builder(conn.clone()).acknowledged(ack).build()?,
        acknowledged_store: FencedStore::new(conn.clone()).acknowledged(ack),
        store: FencedStore::new(conn.clone()),
        plain: UnfencedStore::new(conn.clone()),
        log: SlidingWindowLog::new(conn.clone(), limit),
        counter: SlidingWindowCounter::new(conn.clone(), limit),
        fixed: NaiveFixedWindow::new(conn.clone(), limit),
        cad: redis::Script::new(COMPARE_AND_DELETE),
        textbook: redis::Script::new(TEXTBOOK_LOG),
        textbook_server_time: redis::Script::new(TEXTBOOK_LOG_SERVER_TIME),
        ttl: Ttl::from_millis(60_000)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks: tokio::task::JoinSet<Result<(), BoxError>> = tokio::task::JoinSet::new();
    for worker in 0..in_flight {
        let (subjects, mut conn) = (subjects.clone(), conn.clone());
        let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
        tasks.spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                step(&subjects, &mut conn, workload, worker, i).await?;
                i += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        });
    }
    // Warm up (script load, connection buffers), then count.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start_count = done.load(Ordering::Relaxed);
    let (client0, server0) = (cpu_seconds("self")?, cpu_seconds(server_pid)?);
    // The allocation count is read last before the window and first after
    // it, so that reading /proc (which allocates) is not counted.
    let switches0 = context_switches()?;
    let allocations0 = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let ops = done.load(Ordering::Relaxed) - start_count;
    let elapsed = start.elapsed().as_secs_f64();
    let allocations1 = ALLOCATIONS.load(Ordering::Relaxed);
    let switches1 = context_switches()?;
    let (client1, server1) = (cpu_seconds("self")?, cpu_seconds(server_pid)?);
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let per_op = |cpu: f64| 1e6 * cpu / ops.max(1) as f64;
    Ok(Measured {
        rate: ops as f64 / elapsed,
        client_us: per_op(client1 - client0),
        server_us: per_op(server1 - server0),
        allocations: (allocations1 - allocations0) as f64 / ops.max(1) as f64,
        switches: (switches1 - switches0) as f64 / ops.max(1) as f64,
    })
}
