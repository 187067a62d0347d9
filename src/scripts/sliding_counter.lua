-- Sliding-window counter: two fixed buckets weighted by overlap. O(1) time
-- and O(1) memory per key (one small hash, whatever the limit).
-- KEYS[1] hash: i = index of the current bucket (floor(now / window)),
--               c = admissions in bucket i, p = admissions in bucket i - 1
-- ARGV[1] limit, ARGV[2] window in ms, ARGV[3] pinned now (unix ms) or '' for TIME
-- Returns {1, count, now} when admitted, {0, count, now, retry_after_ms} when
-- denied, where count = ceil(p * (window - elapsed) / window) + c and
-- elapsed = now - i * window.
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
local cur, prev = 0, 0
local state = redis.call('HMGET', key, 'i', 'c', 'p')
local stored = tonumber(state[1])
if stored then
  cur = tonumber(state[2]) or 0
  prev = tonumber(state[3]) or 0
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
