-- Acquire a fenced lease with a time-floored token (Tokens::TimeFloored):
-- lock_acquire.lua, except that the token issued is
-- max(counter + 1, the server's TIME in microseconds), stored in the
-- counter. Atomic, O(1).
-- KEYS[1] lock key, KEYS[2] fence counter (never given a TTL)
-- ARGV[1] owner value, ARGV[2] ttl in ms
-- Returns the token, or nil when the lock is held. The token is an integer
-- reply below 2^53 and the counter's exact decimal string from 2^53 on,
-- whether the counter or the clock issued it.
-- Errors (nothing is changed by either): WRONGTYPE when a key holds another
-- type; CORRUPT when the counter is not an integer INCR can advance to a
-- positive value (not a number, negative, or at 2^63 - 1).
--
-- Why (ADR 0017): a counter lost to a restart without persistence, or
-- rolled back by a failover to a replica that missed the last acquires,
-- restarts below tokens already issued. Floored by the clock, the next
-- token is past every earlier one as long as this server's clock is not
-- behind the last token issued. Tokens keep strictly increasing, with gaps.
--
-- Everything up to the floor is lock_acquire.lua, line for line (ADR 0014:
-- SET NX GET first, INCR only for a winner, undone by DEL on a bad
-- counter; ADR 0006: exact past 2^53), so a loser and an error change
-- nothing here either.
--
-- TIME before a write is allowed: Redis 7 and Valkey replicate a script by
-- its effects (the SET of the value computed here), never by re-running it
-- on a replica with another clock.
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
  redis.call('DECR', KEYS[2])
  redis.call('DEL', KEYS[1])
  return redis.error_reply('CORRUPT fence counter ' .. KEYS[2] .. ' is negative')
end
-- From 2^53 on the counter is far past any clock (2^53 us is the year
-- 2255): counter + 1 wins, read back exactly.
if token >= 9007199254740992 then
  return redis.call('GET', KEYS[2])
end
-- Microseconds since the epoch, about 1.8e15: exact in a double. The
-- stored text is TIME's own digits, so it never depends on how a Lua
-- number is formatted (tostring gives 1.7962283482109e+15).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local issued = math.max(token, now)
if issued ~= token then
  local floor = time[1] .. string.format('%06d', tonumber(time[2]))
  redis.call('SET', KEYS[2], floor)
  -- From 2^53 us (the year 2255) the clock's Lua number is rounded, but the
  -- text just stored is exact: that is the token (ADR 0006). Below, the
  -- number is exact and the reply an integer, as before.
  if issued >= 9007199254740992 then
    return floor
  end
end
return issued
