-- Acquire a fenced lease: if the lock key is absent, set it with a TTL and
-- issue the next fencing token. Atomic, O(1).
-- KEYS[1] lock key, KEYS[2] fence counter (never given a TTL)
-- ARGV[1] owner value, ARGV[2] ttl in ms
-- Returns the token, or nil when the lock is held. The token is an integer
-- reply below 2^53 and the counter's exact decimal string from 2^53 on.
-- Errors (nothing is changed by either): WRONGTYPE when a key holds another
-- type; CORRUPT when the counter is not an integer INCR can advance to a
-- positive value (not a number, negative, or at 2^63 - 1).
--
-- Two commands on the winning path, one on the losing one (ADR 0014):
-- SET NX GET takes the lock if it is free and, if not, answers what holds
-- it; it raises WRONGTYPE (and sets nothing) on a key of another type,
-- where a bare SET NX would report "held".
--
-- Redis does not roll a script back when a command fails, so when INCR
-- fails after the SET, the SET is undone by hand (the key was absent: DEL
-- restores it) before the error is returned. Losing contenders return
-- before INCR, so tokens have no gaps.
--
-- Exactness (ADR 0006): INCR's reply reaches Lua as a number, a double,
-- which rounds above 2^53. Below 2^53 it is exact and returned as is, at no
-- extra cost; from 2^53 on (the rounded value is then >= 2^53 too, so the
-- test cannot be fooled) the exact value is read back with one GET.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET', 'PX', ARGV[2]) then
  return false
end
local token = redis.pcall('INCR', KEYS[2])
if type(token) == 'table' then
  redis.call('DEL', KEYS[1])
  -- INCR answers ERR only for a value it cannot count from: the counter's
  -- fault. WRONGTYPE and the server's own refusals (READONLY, OOM) go back
  -- as the server gave them.
  if string.sub(token.err, 1, 4) == 'ERR ' then
    return redis.error_reply('CORRUPT fence counter ' .. KEYS[2] .. ': ' .. token.err)
  end
  return token
end
if token < 1 then
  -- A negative counter was written by something else: undo the INCR and
  -- the SET, and refuse.
  redis.call('DECR', KEYS[2])
  redis.call('DEL', KEYS[1])
  return redis.error_reply('CORRUPT fence counter ' .. KEYS[2] .. ' is negative')
end
if token >= 9007199254740992 then
  return redis.call('GET', KEYS[2])
end
return token
