//! The retry helper, and bad input refused with a typed error before any request.

use super::*;

// ---------------------------------------------------------- retry helper

#[tokio::test]
async fn retry_helper_waits_with_jitter_and_gives_up_at_the_deadline() {
    let servers = servers(5);
    let a = connect_redlock(&servers, config(5000)).await;
    let b = connect_redlock(&servers, config(5000)).await;
    let lease_a = held(a.acquire(NAME).await.unwrap());

    let policy = |deadline_ms: u64| {
        Retry::new(NonZeroU32::new(1000).unwrap(), Duration::from_millis(10), Duration::from_millis(40))
            .unwrap()
            .deadline(Duration::from_millis(deadline_ms))
            .seeded(11)
    };
    let started = Instant::now();
    let gave_up = b.acquire_with_retry(NAME, &policy(300)).await.unwrap();
    let waited = started.elapsed();
    let refusal = gave_up.refusal().expect("gave up");
    assert_eq!(refusal.reason, RefusalReason::NoMajority);
    // It gives up once the next delay (at most 40 ms) would cross 300 ms.
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "bounded by the deadline: {waited:?}");

    // A releases while B is retrying: B gets it.
    let patient = policy(5000);
    let (got, _) = tokio::join!(b.acquire_with_retry(NAME, &patient), async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        a.release(&lease_a).await
    });
    let lease_b = held(got.unwrap());
    println!(
        "retry: gave up after {}; acquired {} after the holder released",
        fmt_ms(waited),
        fmt_ms(lease_b.acquired_at() - started - waited)
    );
}

// ----------------------------------------------------------- bad input

#[tokio::test]
async fn construction_refuses_every_bad_configuration_with_a_typed_error() {
    let servers = servers(2);
    let conns = connect_all(&servers).await;

    let (what, _) = invalid_what(Redlock::connect(Vec::<MultiplexedConnection>::new(), defaults(1000)).await);
    assert_eq!(what, "redlock masters");

    let cases: Vec<(RedlockConfig, &str)> = vec![
        (defaults(100).drift(Drift::new(0, Duration::from_millis(100)).unwrap()), "redlock drift"),
        (defaults(100).drift(Drift::new(500, Duration::from_millis(60)).unwrap()), "redlock drift"),
        (defaults(100).master_timeout(Duration::from_millis(100)), "redlock master_timeout"),
        (defaults(100).master_timeout(Duration::from_millis(250)), "redlock master_timeout"),
        (defaults(100).master_timeout(Duration::ZERO), "redlock master_timeout"),
        (defaults(1000).handshake_timeout(Duration::ZERO), "redlock handshake_timeout"),
        (defaults(1000).prefix("bad{prefix"), "prefix"),
        (defaults(1000).prefix(""), "prefix"),
    ];
    for (cfg, expected) in cases {
        let (what, why) = invalid_what(Redlock::connect(conns.clone(), cfg).await);
        assert_eq!(what, expected, "{why}");
    }
    // Drift factors of 100 % or more are refused by `Drift` itself.
    assert!(matches!(Drift::new(1000, Duration::ZERO), Err(Error::InvalidInput { .. })));
    // The default per-master timeout (50 ms) needs a longer TTL.
    let (what, _) = invalid_what(Redlock::connect(conns.clone(), defaults(50)).await);
    assert_eq!(what, "redlock master_timeout");
}

#[tokio::test]
async fn configuration_errors_are_returned_before_any_request_is_sent() {
    // With a frozen master, any request would hang for the whole handshake
    // timeout (60 s here); an immediate answer proves nothing was sent.
    let servers = servers(1);
    let conns = connect_all(&servers).await;
    servers[0].freeze().unwrap();
    let bad = defaults(100).master_timeout(Duration::from_millis(100)).handshake_timeout(Duration::from_secs(60));
    let result = tokio::time::timeout(Duration::from_secs(10), Redlock::connect(conns, bad)).await;
    servers[0].thaw().unwrap();
    let (what, _) = invalid_what(result.expect("answered without a round trip"));
    assert_eq!(what, "redlock master_timeout");
}

#[tokio::test]
async fn the_same_server_listed_twice_is_refused_by_run_id() {
    let servers = servers(3);
    let mut conns = connect_all(&servers).await;
    conns.push(connect_url(&servers[0].url()).await);
    let (what, why) = invalid_what(Redlock::connect(conns, defaults(1000)).await);
    assert_eq!(what, "redlock masters");
    assert!(why.contains("masters 0 and 3"), "{why}");

    // A different address for the same server (through a proxy) is caught
    // too: the comparison is by run_id, not by address.
    let proxy = DelayProxy::start(servers[1].addr()).unwrap();
    let conns = vec![
        connect_url(&servers[0].url()).await,
        connect_url(&servers[1].url()).await,
        connect_url(&proxy.url()).await,
    ];
    let (what, why) = invalid_what(Redlock::connect(conns, defaults(1000)).await);
    assert_eq!(what, "redlock masters");
    assert!(why.contains("masters 1 and 2"), "{why}");

    // Distinct servers are accepted, each with its run_id.
    let ok = connect_redlock(&servers, defaults(1000)).await;
    assert!(ok.run_ids().iter().all(Option::is_some));
    assert!(ok.unverified_masters().is_empty());
}

#[tokio::test]
async fn a_master_silent_at_connect_is_accepted_but_reported_unverified() {
    let servers = servers(3);
    let conns = connect_all(&servers).await;
    servers[2].freeze().unwrap();
    let cfg = defaults(1000).handshake_timeout(Duration::from_millis(200));
    let result = Redlock::connect(conns, cfg).await;
    servers[2].thaw().unwrap();
    let redlock = result.expect("a minority down at start-up is tolerated");
    assert_eq!(redlock.unverified_masters(), vec![2]);
}

#[tokio::test]
async fn a_malformed_name_is_refused_before_any_request() {
    let servers = servers(1);
    let redlock = connect_redlock(&servers, config(1000)).await;
    for name in ["", "a{b", "a}b"] {
        let err = redlock.acquire(name).await.unwrap_err();
        assert!(matches!(err, Error::InvalidInput { what: "name", .. }), "{err}");
    }
    assert_eq!(servers[0].command(&["DBSIZE"]).unwrap(), ":0\r\n");
}

#[test]
fn redlock_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let servers = servers(1);
    rt.block_on(async {
        let redlock = connect_redlock(&servers, config(1000)).await;
        let retry = Retry::new(NonZeroU32::MIN, Duration::from_millis(1), Duration::from_millis(1)).unwrap();
        assert_send(&redlock.acquire(NAME));
        assert_send(&redlock.acquire_with_retry(NAME, &retry));
        let lease = held(redlock.acquire(NAME).await.unwrap());
        assert_send(&redlock.release(&lease));
        let mut lease2 = lease.clone();
        assert_send(&redlock.extend(&mut lease2));
    });
}
