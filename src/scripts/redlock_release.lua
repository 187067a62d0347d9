-- Redlock release, run on each master: delete the key only if it still holds
-- our owner value, so a key that expired and was taken by another client is
-- left alone. O(1). KEYS[1] lock key, ARGV[1] owner value. Returns 1 or 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
