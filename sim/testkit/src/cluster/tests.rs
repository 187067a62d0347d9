//! Unit tests of the cluster helpers that need no server.

use super::slots::crc16_xmodem;
use super::*;

#[test]
fn key_slot_matches_the_reference_values() {
    // From the Redis Cluster specification and `CLUSTER KEYSLOT`.
    assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
    assert_eq!(key_slot(b"foo"), 12182);
    assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
    assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"), "an empty tag hashes the whole key");
    assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
    assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    for slot in [0, 1, 5460, 5461, 16383] {
        assert_eq!(key_slot(key_in_slot("k", slot).as_bytes()), slot);
    }
}

#[test]
fn slot_ranges_cover_every_slot_once() {
    for n in [1, 2, 3, 5, 7] {
        let ranges: Vec<_> = (0..n).map(|i| slot_range(i, n)).collect();
        assert_eq!(*ranges[0].start(), 0);
        assert_eq!(*ranges[n - 1].end(), SLOTS - 1);
        for w in ranges.windows(2) {
            assert_eq!(*w[0].end() + 1, *w[1].start());
        }
    }
}

#[test]
fn forms_migrates_cuts_a_replica_and_fails_over() {
    let mut cluster = RedisCluster::start().expect("start a 3 × 1 cluster");
    let dir = cluster.dir().to_path_buf();
    let shards = cluster.shards().unwrap();
    assert_eq!(shards.len(), 3);
    for (i, shard) in shards.iter().enumerate() {
        assert_eq!(shard.primary.index(), i, "primary i owns range i");
        assert_eq!(shard.slots, vec![slot_range(i, 3)]);
        assert_eq!(shard.replicas.len(), 1);
    }
    // The server agrees with key_slot.
    let node = cluster.node(0);
    assert_eq!(
        node.call(&["CLUSTER", "KEYSLOT", "lock:{orders}:fence"]).unwrap(),
        Reply::Integer(key_slot(b"orders").into())
    );

    // A key moves with its slot.
    let key = key_in_slot("moving", 42);
    let owner = cluster.primary_for_key(&key).unwrap();
    assert_eq!(owner.index(), 0);
    assert_eq!(owner.call(&["SET", &key, "v"]).unwrap(), Reply::Status("OK".into()));
    let moved = cluster.migrate_slot(42, cluster.node(1)).unwrap();
    assert_eq!(moved, 1);
    assert_eq!(cluster.primary_for_slot(42).unwrap().index(), 1);
    assert_eq!(cluster.node(1).call(&["GET", &key]).unwrap(), Reply::Bulk(Some("v".into())));
    assert!(matches!(cluster.node(0).call(&["GET", &key]).unwrap(), Reply::Error(e) if e.starts_with("MOVED")));

    // A cut cluster replica stops receiving writes, and is promoted anyway.
    let primary = cluster.node(2);
    let replica = cluster.replicas_of(primary).unwrap()[0];
    let replica_index = replica.index();
    let key = key_in_slot("cut", *slot_range(2, 3).start());
    replica.server().cut_replication().unwrap();
    assert_eq!(primary.call(&["SET", &key, "lost"]).unwrap(), Reply::Status("OK".into()));
    std::thread::sleep(Duration::from_millis(200));
    let info = replica.info("replication").unwrap();
    assert_eq!(info_field(&info, "master_link_status"), Some("down"), "{info}");
    cluster.node_mut(2).stop();
    cluster.await_ok().unwrap();
    let promoted = cluster.primary_for_slot(*slot_range(2, 3).start()).unwrap();
    assert_eq!(promoted.index(), replica_index, "the cut replica was promoted");
    assert_eq!(promoted.call(&["GET", &key]).unwrap(), Reply::Bulk(None), "the write it never had is lost");

    // The crashed primary comes back as a replica of the promoted one.
    cluster.restart_node(2).unwrap();
    let promoted = cluster.node(replica_index);
    let replicas: Vec<usize> = cluster.replicas_of(promoted).unwrap().iter().map(|r| r.index()).collect();
    assert_eq!(replicas, [2], "the old primary rejoined under its replacement");
    assert!(cluster.node(2).info("replication").unwrap().contains("role:slave"));

    drop(cluster);
    assert!(!dir.exists(), "the cluster's directory is removed on drop");
}
