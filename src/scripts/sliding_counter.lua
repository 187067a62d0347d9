-- Sliding-window counter: two fixed buckets weighted by overlap. O(1) time
-- and O(1) memory per key (one small hash, whatever the limit).
-- KEYS[1] hash: i = index of the current bucket (floor(now / window)),
--               c = admissions in bucket i, p = admissions in bucket i - 1
-- ARGV[1] limit, ARGV[2] window in ms, ARGV[3] pinned now (unix ms) or '' for TIME
-- Returns {1, count, now} when admitted, {0, count, now, retry_after_ms} when
-- denied, where count = ceil(p * (window - elapsed) / window) + c and
-- elapsed = now - i * window.
--
-- Errors (nothing changed by any): WRONGTYPE; CORRUPT when the key is a
-- hash that does not hold i, c and p as integers in [0, 2^53 - 1] (this
-- script writes all three at once, and never anything else).
--
-- Admit when p * (window - elapsed) / window + c + 1 <= limit, evaluated as
-- p * (window - elapsed) <= (limit - c - 1) * window in integers: Limit
-- guarantees limit * window <= 2^52, so every product here is exact in a
-- Lua number.

-- Floor division of non-negative integers, corrected for the rounding of
-- the floating-point quotient.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- A bucket index or a count as this script writes it: an integer in
-- [0, 2^53 - 1], in whatever spelling the server stored it with (a large
-- index may read back as 1.7e+12). Anything else, nil.
local function whole(v)
  local n = tonumber(v)
  if n and n >= 0 and n <= 9007199254740991 and n == math.floor(n) then
    return n
  end
  return nil
end

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

local idx = idiv(now, window)
local state = redis.call('HMGET', key, 'i', 'c', 'p')
local stored, cur, prev = whole(state[1]), whole(state[2]), whole(state[3])
if stored and cur and prev then
  if idx == stored + 1 then
    prev, cur = cur, 0
  elseif idx > stored + 1 then
    prev, cur = 0, 0
  elseif idx < stored then
    -- The clock went backwards (a pinned clock, or a step of the server's):
    -- keep counting in the newest bucket, with the previous one at full
    -- weight. That can only deny more, never admit more.
    idx = stored
  end
elseif redis.call('EXISTS', key) == 1 then
  -- A hash with a field missing, or one this script could not have written
  -- (a negative or fractional count, text): another writer's. Deciding on it
  -- would admit on a made-up count and overwrite it, so refuse before any
  -- write.
  return redis.error_reply('CORRUPT ' .. key .. ' does not hold i, c and p as integers in [0, 2^53 - 1]')
else
  cur, prev = 0, 0
end

local elapsed = now - idx * window
if elapsed < 0 then
  elapsed = 0
end
local weighted = prev * (window - elapsed)
local estimate = idiv(weighted + window - 1, window) + cur

if cur < limit and weighted <= (limit - cur - 1) * window then
  redis.call('HSET', key, 'i', idx, 'c', cur + 1, 'p', prev)
  -- Bucket i still matters as the previous bucket of i + 1; after that the
  -- state is worthless, so expire at the end of bucket i + 1.
  redis.call('PEXPIRE', key, 2 * window - elapsed)
  return {1, estimate + 1, now}
end

local retry
if cur < limit then
  -- Only the previous bucket's weight is in the way (so prev > 0): wait
  -- until p * (window - e) <= (limit - c - 1) * window.
  retry = window - idiv((limit - cur - 1) * window, prev) - elapsed
else
  -- The current bucket is full: wait for the next bucket, where this
  -- bucket's c becomes the weighted previous count.
  retry = (window - elapsed) + window - idiv((limit - 1) * window, cur)
end
return {0, estimate, now, retry}
