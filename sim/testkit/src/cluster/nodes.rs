//! What the nodes say about the cluster: `CLUSTER NODES` lines, `INFO`
//! fields, and who owns which slots in one node's view.

use std::ops::RangeInclusive;

/// `field:value` from an `INFO` or `CLUSTER INFO` text.
pub fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).map(str::trim)
}

/// Slot range → owner id, sorted, from one node's view.
pub(super) fn slot_owners(view: &[NodeLine]) -> Vec<(RangeInclusive<u16>, String)> {
    let mut owners: Vec<_> =
        view.iter().flat_map(|l| l.slots.iter().map(move |r| (r.clone(), l.id.clone()))).collect::<Vec<_>>();
    owners.sort_by_key(|(r, _)| *r.start());
    // Adjacent ranges of one owner are one range, whichever way a node lists them.
    let mut merged: Vec<(RangeInclusive<u16>, String)> = Vec::new();
    for (range, id) in owners {
        match merged.last_mut() {
            Some((last, last_id)) if *last_id == id && last.end().checked_add(1) == Some(*range.start()) => {
                *last = *last.start()..=*range.end();
            }
            _ => merged.push((range, id)),
        }
    }
    merged
}

/// One line of `CLUSTER NODES`:
/// `<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...`
#[derive(Debug)]
pub(super) struct NodeLine {
    pub(super) id: String,
    pub(super) flags: Vec<String>,
    pub(super) master: Option<String>,
    pub(super) connected: bool,
    pub(super) slots: Vec<RangeInclusive<u16>>,
}

impl NodeLine {
    pub(super) fn parse(line: &str) -> Option<NodeLine> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 {
            return None;
        }
        let slots = fields[8..]
            .iter()
            // `[slot->-id]` / `[slot-<-id]`: a migration in progress, not ownership.
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some(a.parse().ok()?..=b.parse().ok()?),
                None => s.parse().ok().map(|n| n..=n),
            })
            .collect();
        Some(NodeLine {
            id: fields[0].to_string(),
            flags: fields[2].split(',').map(str::to_string).collect(),
            master: (fields[3] != "-").then(|| fields[3].to_string()),
            connected: fields[7] == "connected",
            slots,
        })
    }

    pub(super) fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    pub(super) fn is_primary(&self) -> bool {
        self.has("master") && !self.has("fail")
    }

    /// Known for real: past the handshake, with an address, linked.
    pub(super) fn is_settled(&self) -> bool {
        !self.has("handshake") && !self.has("noaddr") && (self.connected || self.has("myself"))
    }
}
