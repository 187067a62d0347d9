-- Acquire a fenced lease: if the lock key is absent, issue the next fencing
-- token and set the key with a TTL. Atomic, O(1).
-- KEYS[1] lock key, KEYS[2] fence counter (never given a TTL)
-- ARGV[1] owner value, ARGV[2] ttl in ms
-- Returns the token, or nil when the lock is held.
--
-- INCR runs before SET on purpose: Redis does not roll a script back when a
-- command fails, so the command that can fail (INCR on a counter that is not
-- an integer, WRONGTYPE) must come first. A plain SET cannot fail on type.
-- Losing contenders return before INCR, so tokens have no gaps.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return token
