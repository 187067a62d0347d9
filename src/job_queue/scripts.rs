//! The job queue's five Lua scripts.
//!
//! The five scripts live here, inline, rather than one per file under
//! `scripts/` like the other primitives': they share one key layout and one
//! state machine (pending → active → done, active → pending on reap), and a
//! change to one almost always needs the others, so they are kept on one
//! page on purpose. They still load through `script_source`, so the
//! mutation-hooks seam can replace each by name (`job_enqueue`, …).

use std::sync::LazyLock;

use crate::script_source::{self, Script};

/// Lua: `valid_utf8(s)`, whether `s` is UTF-8 (RFC 3629: no overlong form,
/// no surrogate, nothing past U+10FFFF). The client reads ids as `&str`, so
/// a script that hands an id back, or acts on one it then reports, checks it
/// first: an id another client wrote in other bytes is then `CORRUPT` with
/// nothing changed, not a reply the client cannot read after the writes.
///
/// Each pattern is one class of well-formed sequence, keyed by its lead
/// byte; a lead byte is never a continuation byte, so no pattern matches
/// inside another's sequence, and each match is replaced by an ASCII byte,
/// which no later pattern can join to its neighbours. What is left is ASCII
/// exactly when every byte from 128 up belonged to a well-formed sequence.
/// Patterns are data, so the test is a few `gsub` calls in C, not a Lua
/// loop over the bytes.
macro_rules! lua_valid_utf8 {
    () => {
        r#"
local UTF8 = {
  '[\194-\223][\128-\191]',
  '\224[\160-\191][\128-\191]', '[\225-\236\238\239][\128-\191][\128-\191]', '\237[\128-\159][\128-\191]',
  '\240[\144-\191][\128-\191][\128-\191]', '[\241-\243][\128-\191][\128-\191][\128-\191]',
  '\244[\128-\143][\128-\191][\128-\191]',
}
local function valid_utf8(s)
  for _, sequence in ipairs(UTF8) do
    s = string.gsub(s, sequence, '.')
  end
  return not string.find(s, '[\128-\255]')
end
"#
    };
}

/// Enqueue a job unless its id is known.
pub(crate) const ENQUEUE: script_source::Builtin = script_source::Builtin {
    name: "job_enqueue",
    text: r#"
-- KEYS[1] job hash, KEYS[2] pending set, KEYS[3] sequence counter
-- ARGV[1] id, ARGV[2] payload
-- Returns 1 when added, 0 when the id is already known (nothing changed).
-- Errors (nothing changed by any): WRONGTYPE; CORRUPT when the id is
-- pending without a job hash or the counter is not a positive integer; the
-- server's refusal of the first write (READONLY, OOM), as it gave it.
-- Every command that can fail runs before the first write: Redis does not
-- roll a script back. HLEN and ZSCORE double as type checks.
if redis.call('HLEN', KEYS[1]) > 0 then
  return 0
end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is missing but its id is pending')
end
local seq = redis.pcall('INCR', KEYS[3])
if type(seq) == 'table' then
  -- INCR answers ERR only for a value it cannot count from (not an
  -- integer, or at 2^63 - 1): the counter's fault. Every other code
  -- (WRONGTYPE, or the server's own refusal: READONLY on a replica, OOM at
  -- maxmemory) goes back as the server gave it, so the caller sees it.
  if string.sub(seq.err, 1, 4) == 'ERR ' then
    return redis.error_reply('CORRUPT ' .. KEYS[3] .. ' ' .. seq.err)
  end
  return seq
end
if seq < 1 then
  redis.call('DECR', KEYS[3])
  return redis.error_reply('CORRUPT ' .. KEYS[3] .. ' is negative')
end
-- INCR's reply is a double in Lua; the counter's own text is exact.
local seqs = redis.call('GET', KEYS[3])
redis.call('ZADD', KEYS[2], seqs, ARGV[1])
redis.call('HSET', KEYS[1], 'payload', ARGV[2], 'state', 'pending', 'attempt', '0', 'seq', seqs)
return 1
"#,
};

/// Claim the oldest pending job for a lease.
pub(crate) const CLAIM: script_source::Builtin = script_source::Builtin {
    name: "job_claim",
    text: concat!(
        r#"
-- KEYS[1] pending set, KEYS[2] active set
-- ARGV[1] job key prefix (jobq:{name}:job:), ARGV[2] lease in ms
-- Returns nil when nothing is pending, else {id, payload, attempt,
-- lease_until}: the attempt is the hash field's exact decimal text (a Lua
-- number is a double, inexact past 2^53), lease_until is server unix ms:
-- exact, since the client refuses a lease past 2^52 ms and the clock reads
-- below 2^52 ms (until the year 144,000), so the sum is below 2^53.
-- Errors (nothing changed by any): WRONGTYPE; CORRUPT when the head's id is
-- not UTF-8, or its job hash is missing, half-written, not pending, or its
-- attempt is not a canonical decimal HINCRBY can advance; the server's
-- refusal of the first write (READONLY, OOM), as it gave it.
"#,
        lua_valid_utf8!(),
        r#"
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local id = head[1]
if not id then
  return false
end
-- Scores are doubles: from 2^53 on one score holds several sequence numbers
-- (up to 2048 near 2^63), and Redis orders equal scores by member, the id.
-- The oldest of the ids sharing the head's score is the one whose hash
-- holds the least exact seq (canonical decimals: shorter, or bytewise
-- less). One whose seq is missing or not canonical is taken at once, so
-- that the checks below refuse it. Below 2^53 scores are exact: one test.
if tonumber(head[2]) >= 9007199254740992 then
  local least
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], head[2], head[2])) do
    local s = redis.call('HGET', ARGV[1] .. other, 'seq')
    if not s or not string.find(s, '^[1-9]%d*$') then
      id = other
      break
    end
    if not least or #s < #least or (#s == #least and s < least) then
      least, id = s, other
    end
  end
end
if not valid_utf8(id) then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' holds a job id that is not UTF-8')
end
local job = ARGV[1] .. id
if redis.call('ZSCORE', KEYS[2], id) then
  return redis.error_reply('CORRUPT ' .. job .. ' is both pending and active')
end
local f = redis.call('HMGET', job, 'attempt', 'state', 'seq', 'payload')
local attempt, state, seq, payload = f[1], f[2], f[3], f[4]
if not attempt or not payload then
  return redis.error_reply('CORRUPT ' .. job .. ' is pending but its hash is missing or half-written')
end
if attempt ~= '0' and not string.find(attempt, '^[1-9]%d*$') then
  return redis.error_reply('CORRUPT ' .. job .. ' attempt is not a canonical decimal')
end
if state ~= 'pending' then
  return redis.error_reply('CORRUPT ' .. job .. ' is in the pending set but its state is not pending')
end
if not seq or not string.find(seq, '^[1-9]%d*$') then
  return redis.error_reply('CORRUPT ' .. job .. ' seq is not a positive canonical decimal')
end
local bumped = redis.pcall('HINCRBY', job, 'attempt', 1)
if type(bumped) == 'table' then
  -- HINCRBY answers ERR only for an attempt it cannot advance (here, one at
  -- 2^63 - 1): the hash's fault. The server's own refusal of this, the
  -- script's first write (READONLY, OOM), goes back as it gave it.
  if string.sub(bumped.err, 1, 4) == 'ERR ' then
    return redis.error_reply('CORRUPT ' .. job .. ' attempt cannot be advanced: ' .. bumped.err)
  end
  return bumped
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_until = string.format('%.0f', now + tonumber(ARGV[2]))
redis.call('ZREM', KEYS[1], id)
redis.call('ZADD', KEYS[2], lease_until, id)
redis.call('HSET', job, 'state', 'active', 'lease_until', lease_until)
return {id, payload, redis.call('HGET', job, 'attempt'), lease_until}
"#
    ),
};

/// Complete a claimed job, if the claim's attempt is still the job's.
pub(crate) const COMPLETE: script_source::Builtin = script_source::Builtin {
    name: "job_complete",
    text: r#"
-- KEYS[1] job hash, KEYS[2] active set
-- ARGV[1] id, ARGV[2] the claim's attempt (canonical decimal)
-- Returns {1} when accepted; {0, attempt, state} (either may be nil) when
-- refused, with nothing changed.
-- Attempts are compared as strings: the client's is canonical, so equality
-- is numeric equality at any size.
local f = redis.call('HMGET', KEYS[1], 'attempt', 'state')
if f[1] == ARGV[2] and f[2] == 'active' then
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
    return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is active but not in the active set')
  end
  redis.call('HSET', KEYS[1], 'state', 'done')
  return {1}
end
return {0, f[1], f[2]}
"#,
};

/// Extend a claim's lease, if its attempt is still the job's and active.
pub(crate) const EXTEND: script_source::Builtin = script_source::Builtin {
    name: "job_extend",
    text: r#"
-- KEYS[1] job hash, KEYS[2] active set
-- ARGV[1] id, ARGV[2] the claim's attempt, ARGV[3] lease in ms (from now)
-- Returns the new lease_until (server unix ms, decimal text: exact, the
-- lease being at most 2^52 ms, as for a claim), or nil when the attempt is
-- not the job's or the job is not active: nothing changed, in particular a
-- reaped job is not made active again.
local f = redis.call('HMGET', KEYS[1], 'attempt', 'state')
if f[1] ~= ARGV[2] or f[2] ~= 'active' then
  return false
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is active but not in the active set')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_until = string.format('%.0f', now + tonumber(ARGV[3]))
redis.call('ZADD', KEYS[2], 'XX', lease_until, ARGV[1])
redis.call('HSET', KEYS[1], 'lease_until', lease_until)
return lease_until
"#,
};

/// Return up to 100 lapsed claims to the pending set, in their FIFO place.
pub(crate) const REAP: script_source::Builtin = script_source::Builtin {
    name: "job_reap",
    text: concat!(
        r#"
-- KEYS[1] active set, KEYS[2] pending set
-- ARGV[1] job key prefix (jobq:{name}:job:)
-- Returns the ids moved back (at most BATCH; call again while it is full).
-- A lease lapses at lease_until: score <= now. Each job goes back under its
-- original sequence number, so it keeps its place in the queue.
-- Errors (nothing changed): WRONGTYPE; CORRUPT when a lapsed id is not
-- UTF-8 (the reply must be readable, or the caller loses the ids moved),
-- or its hash is not active or has no canonical seq. All are checked
-- before any write.
"#,
        lua_valid_utf8!(),
        r#"
local BATCH = 100
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, BATCH)
if #due == 0 then
  return due
end
redis.call('ZCARD', KEYS[2])
local seqs = {}
for i, id in ipairs(due) do
  if not valid_utf8(id) then
    return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' holds a job id that is not UTF-8')
  end
  local job = ARGV[1] .. id
  local f = redis.call('HMGET', job, 'state', 'seq')
  if f[1] ~= 'active' then
    return redis.error_reply('CORRUPT ' .. job .. ' is in the active set but its state is not active')
  end
  if not f[2] or not string.find(f[2], '^[1-9]%d*$') then
    return redis.error_reply('CORRUPT ' .. job .. ' seq is not a positive canonical decimal')
  end
  seqs[i] = f[2]
end
for i, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], seqs[i], id)
  redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
end
return due
"#
    ),
};

pub(super) static ENQUEUE_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(ENQUEUE));
pub(super) static CLAIM_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(CLAIM));
pub(super) static COMPLETE_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(COMPLETE));
pub(super) static EXTEND_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(EXTEND));
pub(super) static REAP_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(REAP));
