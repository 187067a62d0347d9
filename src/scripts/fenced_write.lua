-- Fenced write: accept the value only if its token is >= the highest token
-- this resource has accepted. O(1).
-- KEYS[1] resource hash (fields: token, value)
-- ARGV[1] value, ARGV[2] token as canonical decimal (no sign, no leading zeros)
-- Returns {1, token} when accepted, {0, highest} when rejected; the error
-- CORRUPT (nothing written) when the stored token is not a canonical decimal.
--
-- Tokens are compared as decimal strings (length first, then bytes) rather
-- than as Lua numbers, which are doubles and lose precision above 2^53.
-- That order is numeric order only for canonical decimals, so the stored
-- token is checked to be one (a pattern match in Lua, no extra redis.call);
-- ARGV[2] always is (the client formats a u64). The check is skipped when
-- the two are equal (then the stored one is canonical too): the current
-- holder's repeated writes, the common case, pay nothing for it.
local highest = redis.call('HGET', KEYS[1], 'token')
local t = ARGV[2]
if highest and highest ~= t then
  if highest ~= '0' and not string.find(highest, '^[1-9]%d*$') then
    return redis.error_reply('CORRUPT stored token of ' .. KEYS[1] .. ' is not a canonical decimal')
  end
  if #highest > #t or (#highest == #t and highest > t) then
    return {0, highest}
  end
end
redis.call('HSET', KEYS[1], 'token', ARGV[2], 'value', ARGV[1])
return {1, ARGV[2]}
