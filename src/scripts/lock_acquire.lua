-- Acquire a fenced lease: set the lock key only if absent, with a TTL, and
-- issue the next fencing token. Atomic, O(1).
-- KEYS[1] lock key, KEYS[2] fence counter (never given a TTL)
-- ARGV[1] owner value, ARGV[2] ttl in ms
-- Returns the token, or nil when the lock is held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return false
