-- Acquire a fenced lease: if the lock key is absent, issue the next fencing
-- token and set the key with a TTL. Atomic, O(1).
-- KEYS[1] lock key, KEYS[2] fence counter (never given a TTL)
-- ARGV[1] owner value, ARGV[2] ttl in ms
-- Returns the token, or nil when the lock is held. The token is an integer
-- reply below 2^53 and the counter's exact decimal string from 2^53 on.
-- Errors (nothing is changed by either): WRONGTYPE when a key holds another
-- type; CORRUPT when the counter is not an integer INCR can advance to a
-- positive value (not a number, negative, or at 2^63 - 1).
--
-- GET rather than EXISTS: the same O(1) lookup, but GET raises WRONGTYPE
-- on a hash or a list at the lock key, where EXISTS would report "held".
--
-- INCR runs before SET on purpose: Redis does not roll a script back when a
-- command fails, so the command that can fail (INCR on a counter that is not
-- an integer, WRONGTYPE) must come first. A plain SET cannot fail on type.
-- Losing contenders return before INCR, so tokens have no gaps.
--
-- Exactness (ADR 0006): INCR's reply reaches Lua as a number, a double,
-- which rounds above 2^53. Below 2^53 it is exact and returned as is, at no
-- extra cost; from 2^53 on (the rounded value is then >= 2^53 too, so the
-- test cannot be fooled) the exact value is read back with one GET.
if redis.call('GET', KEYS[1]) then
  return false
end
local token = redis.pcall('INCR', KEYS[2])
if type(token) == 'table' then
  if string.sub(token.err, 1, 9) == 'WRONGTYPE' then
    return token
  end
  return redis.error_reply('CORRUPT fence counter ' .. KEYS[2] .. ': ' .. token.err)
end
if token < 1 then
  -- A negative counter was written by something else: undo the INCR and
  -- refuse before the lock key is touched.
  redis.call('DECR', KEYS[2])
  return redis.error_reply('CORRUPT fence counter ' .. KEYS[2] .. ' is negative')
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if token >= 9007199254740992 then
  return redis.call('GET', KEYS[2])
end
return token
