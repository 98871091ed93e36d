/**
 * The Lua scripts that keep the exact cache in Redis within its bounds.
 * Each runs atomically, so an entry, its place in the least-recently-used
 * orders and the byte counters never disagree however many replicas write
 * at once. Layout under the prefix P, for group (alias) G in base64url:
 *   P cache:{key}      string      the sealed entry, expired by Redis (PX)
 *   P cache-by:{req}   string      the entry's key under the request that produced it
 *   P cache-lru        sorted set  entry → last use (Redis's clock, ms), every group
 *   P cache-lru:G      sorted set  the same, group G's entries
 *   P cache-meta       hash        entry → "bytes|G"
 *   P cache-bytes      hash        `*` → bytes of every entry, G → bytes of G's
 *   P cache-meta-clock string      the last use's time, so that uses keep their order within a millisecond
 * An entry Redis expired stays counted until it is met: a lookup that
 * misses it, a write to its group once it is older than the group's TTL
 * (last used before now − TTL means written before it too), or an eviction.
 * The counters therefore never undercount: the bound holds for what Redis
 * really holds.
 */

/** forget(member): out of both orders and the counters; evict(member): the entry too. */
const PRELUDE = `
local lru, meta, bytes, glru_prefix = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
-- A score as text: Lua's own conversion keeps 14 digits, and a time in ms with hundredths has 15 or 16.
local function score(ms) return string.format('%.2f', ms) end
-- Redis's clock in ms, made strictly increasing: two uses in one millisecond keep their order (a tie would be broken by name).
local function now_ms()
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local last = tonumber(redis.call('GET', meta .. '-clock') or '0')
  if ms <= last then ms = last + 0.01 end
  redis.call('SET', meta .. '-clock', score(ms))
  return ms
end
local function forget(member)
  redis.call('ZREM', lru, member)
  local m = redis.call('HGET', meta, member)
  if not m then return end
  local sep = string.find(m, '|', 1, true)
  local b = tonumber(string.sub(m, 1, sep - 1))
  local g = string.sub(m, sep + 1)
  redis.call('ZREM', glru_prefix .. g, member)
  redis.call('HDEL', meta, member)
  redis.call('HINCRBY', bytes, '*', -b)
  if redis.call('HINCRBY', bytes, g, -b) <= 0 then redis.call('HDEL', bytes, g) end
end
local function evict(member)
  local n = redis.call('UNLINK', member)
  forget(member)
  return n
end
`;

/**
 * KEYS: lru, meta, bytes, entry. ARGV: group order prefix, group, value,
 * ttl ms, size, max bytes, max group bytes, evictions allowed, producer
 * index key ('' for none), the entry's key as the index holds it.
 * Returns 1 when stored, 0 when it would not fit.
 */
export const CACHE_SET_SCRIPT = `${PRELUDE}
local entry = KEYS[4]
local group, value, px, size = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local max_all, max_group, budget = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local producer, indexed_as = ARGV[9], ARGV[10]
local glru = glru_prefix .. group
local now = now_ms()
-- An entry written again replaces the old one, which goes even if the new one does not fit: nothing stays uncounted.
evict(entry)
if size > max_all or size > max_group then return 0 end
local stale = redis.call('ZRANGEBYSCORE', glru, '-inf', '(' .. score(now - px), 'LIMIT', 0, budget)
for _, m in ipairs(stale) do
  evict(m)
  redis.call('ZREM', glru, m)
end
budget = budget - #stale
local function used(field) return tonumber(redis.call('HGET', bytes, field) or '0') end
local function room(order, field, max)
  while used(field) + size > max do
    if budget <= 0 then return false end
    local oldest = redis.call('ZRANGE', order, 0, 0)[1]
    if not oldest then
      -- Nothing left to evict yet counted: the counter drifted (keys removed behind the cache's back); it restarts from here.
      redis.call('HDEL', bytes, field)
      break
    end
    evict(oldest)
    redis.call('ZREM', order, oldest)
    budget = budget - 1
  end
  return true
end
if not room(glru, group, max_group) or not room(lru, '*', max_all) then return 0 end
redis.call('SET', entry, value, 'PX', px)
if producer ~= '' then redis.call('SET', producer, indexed_as, 'PX', px) end
redis.call('ZADD', lru, score(now), entry)
redis.call('ZADD', glru, score(now), entry)
redis.call('HSET', meta, entry, size .. '|' .. group)
redis.call('HINCRBY', bytes, '*', size)
redis.call('HINCRBY', bytes, group, size)
return 1
`;

/** KEYS: lru, meta, bytes, entry. ARGV: group order prefix, group. The entry's value, now its group's most recently used; a miss forgets an entry Redis expired. */
export const CACHE_GET_SCRIPT = `${PRELUDE}
local entry = KEYS[4]
local value = redis.call('GET', entry)
if value then
  local now = now_ms()
  redis.call('ZADD', lru, 'XX', score(now), entry)
  redis.call('ZADD', glru_prefix .. ARGV[2], 'XX', score(now), entry)
else
  forget(entry)
end
return value
`;

/** KEYS: lru, meta, bytes, then entries. ARGV: group order prefix. Removes each entry; returns how many existed. */
export const CACHE_EVICT_SCRIPT = `${PRELUDE}
local n = 0
for i = 4, #KEYS do n = n + evict(KEYS[i]) end
return n
`;
