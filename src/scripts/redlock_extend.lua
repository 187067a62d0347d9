-- Redlock extend, run on each master: re-arm the TTL only if the key still
-- holds our owner value. A key that expired stays gone (no resurrection: a
-- master that lost our key must not count as a confirmation), and another
-- owner's key is left alone. O(1).
-- KEYS[1] lock key, ARGV[1] owner value, ARGV[2] ttl in ms. Returns 1 or 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
