//! Hash slots: which slot a key lives in (what `CLUSTER KEYSLOT` answers)
//! and how the primaries share the 16384 of them.

use std::ops::RangeInclusive;

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The hash slot of `key` (CRC16/XMODEM of its hash tag, if it has a
/// non-empty `{…}`, else of the whole key, modulo 16384): what
/// `CLUSTER KEYSLOT` answers.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16_xmodem(hashed) % SLOTS
}

/// `prefix:{tag}` for the first numeric tag that hashes to `slot`.
pub fn key_in_slot(prefix: &str, slot: u16) -> String {
    (0u64..)
        .map(|n| format!("{prefix}:{{{n}}}"))
        .find(|k| key_slot(k.as_bytes()) == slot % SLOTS)
        .expect("every slot is reached by some numeric tag")
}

pub(super) fn crc16_xmodem(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// Primary `i` of `n`: an even share of the slots, in order.
pub(super) fn slot_range(i: usize, n: usize) -> RangeInclusive<u16> {
    let slots = usize::from(SLOTS);
    let start = i * slots / n;
    let end = (i + 1) * slots / n - 1;
    // Both are below 16384 by construction.
    (start as u16)..=(end as u16)
}
