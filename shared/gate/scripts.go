package gate

import "github.com/redis/go-redis/v9"

// The scripts take every key they touch in KEYS, all with the node's {hash tag}, so they run on
// one Redis Cluster slot. Times come from the Redis server (TIME, in microseconds), so that the
// workers' clocks never have to agree. Lua numbers are doubles: microsecond timestamps (~1.8e15)
// are exact, but are passed to Redis formatted with %d: other conversions may print them in
// 14 significant digits or in exponent form.

// luaPrelude defines now (µs), fmt (integer to string), forget(w), which removes waiter w from
// the line, and live(), the waiters that are not stale, in line order, forgetting those not
// seen for forget µs. It expects KEYS[2] = waiters, KEYS[3] = seen.
//
// The seen hash holds, per waiter w, when it last asked (field w) and, once it has been refused
// by TryAcquire, the mark that it asked (field "asked:"..w; see Gate.Behind).
const luaPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function fmt(n) return string.format('%d', n) end
local function forget(w)
  redis.call('ZREM', KEYS[2], w)
  redis.call('HDEL', KEYS[3], w, 'asked:' .. w)
end
local function live(stale_us, forget_us)
  local line = {}
  for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local seen = tonumber(redis.call('HGET', KEYS[3], w) or '0')
    if seen < now - forget_us then
      forget(w)
    elseif seen >= now - stale_us then
      line[#line + 1] = w
    end
  end
  return line
end
`

// acquireScript grants, renews or queues; asked only, it tells whether the owner is behind.
//
// KEYS: lock, waiters, seen, fence, the owner's wake list, the owner's left mark.
// ARGV: owner, lease TTL (ms), stale after (µs), forget after (µs), mode ("acquire" or
// "behind").
// Returns {granted 0|1, holder, since µs, fence, position, other} where other is, when granted,
// the waiter now first in line and, when not, the waiter first in line; {-1} when the owner
// left the line (Leave): it is not queued again. In mode "behind" nothing is granted and no one
// is queued: it returns {2} where "acquire" would grant, where the owner is not in the line, or
// where it has not been refused before (it has no "asked" mark), and the refusal otherwise.
var acquireScript = redis.NewScript(luaPrelude + `
local owner = ARGV[1]
local behind = ARGV[5] == 'behind'
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder == owner then
  if behind then return {2, '', '', '', 0, ''} end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local lk = redis.call('HMGET', KEYS[1], 'since', 'fence')
  return {1, owner, lk[1], lk[2], 0, ''}
end
if redis.call('EXISTS', KEYS[6]) == 1 then return {-1, '', '', '', 0, ''} end
if behind and not redis.call('ZSCORE', KEYS[2], owner) then return {2, '', '', '', 0, ''} end
redis.call('ZADD', KEYS[2], 'NX', fmt(now), owner)
redis.call('HSET', KEYS[3], owner, fmt(now))
local forget_ms = fmt(math.floor(tonumber(ARGV[4]) / 1000))
redis.call('PEXPIRE', KEYS[2], forget_ms)
redis.call('PEXPIRE', KEYS[3], forget_ms)
local line = live(tonumber(ARGV[3]), tonumber(ARGV[4]))
local pos = 0
for i, w in ipairs(line) do
  if w == owner then pos = i break end
end
if behind and (pos == 1 or redis.call('HEXISTS', KEYS[3], 'asked:' .. owner) == 0) then
  return {2, '', '', '', 0, ''}
end
if not holder and pos == 1 then
  local fence = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[1], 'owner', owner, 'since', fmt(now), 'fence', fmt(fence))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  forget(owner)
  redis.call('DEL', KEYS[5])
  return {1, owner, fmt(now), fence, 0, line[2] or ''}
end
redis.call('HSET', KEYS[3], 'asked:' .. owner, '1')
local lk = redis.call('HMGET', KEYS[1], 'since', 'fence')
return {0, holder or '', lk[1] or '', lk[2] or '', pos, line[1] or ''}
`)

// enqueueScript registers a waiter without trying to acquire.
//
// KEYS: lock, waiters, seen, the owner's left mark. ARGV: owner, ready at (µs, or "" for now),
// forget after (µs), asked ("1" to mark the owner as having asked already, see Gate.Behind).
// Returns 1 when registered (or already waiting), 0 when owner holds the gate or left the line.
var enqueueScript = redis.NewScript(luaPrelude + `
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local score = ARGV[2]
if score == '' then score = fmt(now) end
redis.call('ZADD', KEYS[2], 'NX', score, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], fmt(now))
if ARGV[4] == '1' then redis.call('HSET', KEYS[3], 'asked:' .. ARGV[1], '1') end
local forget_ms = fmt(math.floor(tonumber(ARGV[3]) / 1000))
redis.call('PEXPIRE', KEYS[2], forget_ms)
redis.call('PEXPIRE', KEYS[3], forget_ms)
return 1
`)

// renewScript extends the lease if owner still holds it.
//
// KEYS: lock. ARGV: owner, lease TTL (ms). Returns {held 0|1, holder}.
var renewScript = redis.NewScript(`
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, holder}
end
return {0, holder or ''}
`)

// releaseScript deletes the lock if owner holds it (compare-and-delete).
//
// KEYS: lock, waiters, seen. ARGV: owner, stale after (µs), forget after (µs).
// Returns {released 0|1, holder when not released, or the waiter now first in line}.
var releaseScript = redis.NewScript(luaPrelude + `
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder ~= ARGV[1] then return {0, holder or ''} end
redis.call('DEL', KEYS[1])
local line = live(tonumber(ARGV[2]), tonumber(ARGV[3]))
return {1, line[1] or ''}
`)

// leaveScript removes a waiter, marks it as gone for good (the left mark, kept as long as a
// waiter is remembered) and wakes its own Acquire, which then stops waiting.
//
// KEYS: lock, waiters, seen, the owner's left mark, the owner's wake list.
// ARGV: owner, stale after (µs), forget after (µs).
// Returns {removed 0|1, the waiter now first in line if the gate is free, else ""}.
var leaveScript = redis.NewScript(luaPrelude + `
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1], 'asked:' .. ARGV[1])
local forget_ms = fmt(math.floor(tonumber(ARGV[3]) / 1000))
redis.call('SET', KEYS[4], '1', 'PX', forget_ms)
redis.call('RPUSH', KEYS[5], '1')
redis.call('PEXPIRE', KEYS[5], forget_ms)
if redis.call('EXISTS', KEYS[1]) == 1 then return {removed, ''} end
local line = live(tonumber(ARGV[2]), tonumber(ARGV[3]))
return {removed, line[1] or ''}
`)

// statusScript reads the gate without changing it.
//
// KEYS: lock, waiters, seen. ARGV: stale after (µs).
// Returns {holder, since µs, fence, then per live waiter in line order: owner, ready at µs, seen µs}.
var statusScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lk = redis.call('HMGET', KEYS[1], 'owner', 'since', 'fence')
local out = {lk[1] or '', lk[2] or '', lk[3] or ''}
local ws = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #ws, 2 do
  local seen = redis.call('HGET', KEYS[3], ws[i]) or '0'
  if tonumber(seen) >= now - tonumber(ARGV[1]) then
    out[#out + 1] = ws[i]
    out[#out + 1] = ws[i + 1]
    out[#out + 1] = seen
  end
end
return out
`)
