-- Compare-and-pexpire: reset the TTL only if the key still holds our owner
-- value. A missing key stays missing (no resurrection); someone else's key is
-- left alone. O(1). KEYS[1] lock key, ARGV[1] owner value, ARGV[2] ttl in ms.
-- Used by `Lock::extend` and, on every master, by `Redlock::extend` (where
-- no resurrection means a master that lost our key is no confirmation).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
