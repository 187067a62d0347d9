-- Sliding-window log: trim, count, decide and record in one atomic step.
-- KEYS[1] sorted set: one member per admitted request, scored by its time (unix ms)
-- ARGV[1] limit (max admissions per window), ARGV[2] window in ms,
-- ARGV[3] pinned now in unix ms, or '' to use the server's own TIME
-- Returns {1, count, now}                 when admitted (count includes this request)
--         {0, count, now, retry_after_ms} when denied (nothing is recorded)
--
-- The window at `now` is (now - window, now]: an entry recorded at t counts
-- up to t + window - 1 and has left at t + window.
--
-- Errors (nothing changed by any): WRONGTYPE; CORRUPT when a denial would
-- read its retry-after from an entry whose score is not a unix-ms instant
-- (an integer in [0, 2^53 - 1]): this script writes no other.
--
-- Complexity, with N members: ZCOUNT, ZADD and a one-element ZRANGE are
-- O(log N), ZCARD O(1), and the trim removes at most TRIM_BATCH entries, so
-- one call is O(log N + TRIM_BATCH) however many entries left the window at
-- once (a whole burst of `limit` entries ages out in the same millisecond).
-- Stale entries beyond the batch stay until later calls or the key's idle
-- expiry remove them; they are never counted.
-- The member-name loop takes one ZADD in the common case; a collision needs
-- a trim within the same millisecond, and each extra step is O(log N).
--
-- Admitting costs TIME, ZCOUNT, ZCARD, ZADD and PEXPIRE (+ a trim when
-- entries left the window): every call is paid for in throughput
-- (reports/throughput.md), so none is spent on what a loop can do for free.
local TRIM_BATCH = 64

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[3])
end

-- Entries with score <= now - window have left the window; they hold the
-- lowest ranks.
local stale = redis.call('ZCOUNT', key, '-inf', now - window)
if stale > 0 then
  local n = math.min(stale, TRIM_BATCH)
  redis.call('ZREMRANGEBYRANK', key, 0, n - 1)
  stale = stale - n
end
local count = redis.call('ZCARD', key) - stale

if count < limit then
  -- Member names are "<now>-<k>". Any k not already taken at this score
  -- makes a unique member, so start from the set's size (free in the common
  -- case: members of one millisecond are added with increasing sizes) and
  -- step past the rare collision (a trim shrank the set within the same
  -- millisecond). No randomness: the same history gives the same members.
  local k = count + stale
  while redis.call('ZADD', key, 'NX', now, string.format('%d-%d', now, k)) == 0 do
    k = k + 1
  end
  -- Every entry has left the window `window` ms after the newest admission,
  -- so an idle key can go.
  redis.call('PEXPIRE', key, window)
  return {1, count + 1, now}
end

-- Denied: the next admission happens when the window has dropped to
-- limit - 1 entries, i.e. when its (count - limit)-th oldest entry leaves
-- (its oldest, unless the limit was lowered for a key in use).
local rank = stale + count - limit
local score = redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]
local t = tonumber(score)
if not (t >= 0 and t <= 9007199254740991 and t == math.floor(t)) then
  -- Another writer's score (fractional, negative, past 2^53 - 1, inf) would
  -- make the retry-after no duration at all.
  return redis.error_reply('CORRUPT ' .. key .. ' holds an entry scored ' .. score .. ', not a unix-ms instant')
end
-- window - (now - t), not t + window - now: t + window can pass 2^53 and
-- round, while now - t is at most the window, and every term stays exact.
return {0, count, now, window - (now - t)}
