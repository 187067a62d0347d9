-- Compare-and-delete: delete the lock key only if it still holds our owner
-- value. O(1). KEYS[1] lock key, ARGV[1] owner value. Returns 1 or 0.
-- Used by `Lock::release` and, on every master, by `Redlock::release`.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
