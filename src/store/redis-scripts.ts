/**
 * The Lua scripts behind the Redis tenant store. Each runs atomically in
 * Redis, on Redis's clock (TIME), so replicas with drifting clocks still
 * share one minute window and one calendar. Admission is one script (one
 * round trip): revocation, requests and tokens per minute (sliding windows
 * of sorted sets), concurrent streams (leases), and the budget (spent plus
 * reserved in the period's rollup), checked and reserved together. A
 * stream's end is a second script, run after its last delta: reservations
 * replaced by what was used, rollups counted, one record appended. The
 * live view's headroom is a third, read-only one.
 *
 * Key layout under the prefix P, for key name N (docs/tenancy.md):
 *   P req:{N}      sorted set  admission id → time               (requests window)
 *   P tok:{N}      sorted set  entry id → time                   (tokens window)
 *   P toka:{N}     hash        entry id → tokens, `_sum` → total
 *   P fly:{N}      sorted set  admission id → lease expiry        (streams in flight)
 *   P flya:{N}     hash        admission id → "micros|budget period id"
 *   P use:{N}:ID   hash        rollup of period ID: requests, input, output, cached, reasoning, spend, estimated, reserved
 *   P usage        stream      usage records, capped (MAXLEN ~)
 *   P done:ADM     string      settle marker of one admission, for an hour
 *   P keys         hash        sha256 → runtime key (JSON settings, never the key)
 *   P keynames     hash        name → sha256
 *   P keys:version string      bumped on every create and revoke
 * Rollup keys are derived from the clock inside the scripts, so the store
 * needs a single Redis (or a primary with replicas), not Cluster.
 */

/** Shared functions: the clock, UTC calendar periods (same ids as usage/periods.ts), batched sweeps. */
const PRELUDE = `
local function clock(override)
  if override ~= '' then return tonumber(override) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- days since 1970-01-01 -> year, month, day (proleptic Gregorian, UTC)
local function civil(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function period_id(kind, ms)
  local days = math.floor(ms / 86400000)
  if kind == 'week' then days = days - (days + 3) % 7 end
  local y, m, d = civil(days)
  if kind == 'month' then return string.format('m%04d-%02d', y, m) end
  if kind == 'week' then return string.format('w%04d-%02d-%02d', y, m, d) end
  return string.format('d%04d-%02d-%02d', y, m, d)
end

-- calls fn(batch) for the items of list in batches (unpack has a stack limit)
local function batches(list, fn)
  for i = 1, #list, 500 do
    local batch = {}
    for j = i, math.min(i + 499, #list) do batch[#batch + 1] = list[j] end
    fn(batch)
  end
end

-- token entries that left the window: subtract their amounts from the sum
local function sweep_tokens(tok, toka, since)
  local gone = redis.call('ZRANGEBYSCORE', tok, '-inf', since)
  if #gone == 0 then return end
  local freed = 0
  batches(gone, function(batch)
    for _, a in ipairs(redis.call('HMGET', toka, unpack(batch))) do
      if a then freed = freed + tonumber(a) end
    end
    redis.call('HDEL', toka, unpack(batch))
  end)
  redis.call('HINCRBY', toka, '_sum', -freed)
  redis.call('ZREMRANGEBYSCORE', tok, '-inf', since)
end

-- releases one in-flight admission's budget reservation
local function release_held(held, use_prefix)
  local micros, pid = string.match(held, '^(%-?%d+)|(.*)$')
  if micros and pid ~= '' and tonumber(micros) ~= 0 then
    redis.call('HINCRBY', use_prefix .. pid, 'reserved', -tonumber(micros))
  end
end

-- an admission this store made that will never settle as its own (the replica
-- gave up waiting for its reply and admitted or refused it locally): uncount
-- its request and tokens, free its slot and budget reservation. Idempotent.
local function release_admission(req, tok, toka, fly, flya, id, use_prefix)
  redis.call('ZREM', req, id)
  if redis.call('ZREM', tok, id) == 1 then
    local amount = redis.call('HGET', toka, id)
    if amount then
      redis.call('HINCRBY', toka, '_sum', -tonumber(amount))
      redis.call('HDEL', toka, id)
    end
  end
  local held = redis.call('HGET', flya, id)
  if held then
    release_held(held, use_prefix)
    redis.call('HDEL', flya, id)
  end
  redis.call('ZREM', fly, id)
end

-- leases that ran out (a replica died mid-stream): free the slot and the reservation
local function sweep_leases(fly, flya, use_prefix, now)
  local gone = redis.call('ZRANGEBYSCORE', fly, '-inf', now)
  if #gone == 0 then return end
  batches(gone, function(batch)
    for _, held in ipairs(redis.call('HMGET', flya, unpack(batch))) do
      if held then release_held(held, use_prefix) end
    end
    redis.call('HDEL', flya, unpack(batch))
  end)
  redis.call('ZREMRANGEBYSCORE', fly, '-inf', now)
end
`;

/**
 * KEYS: req, tok, toka, fly, flya, keys
 * ARGV: now override ('' = Redis TIME), admission id, window ms, rpm, tpm,
 *       reserve tokens, max streams, lease ms, budget micros, reserve micros,
 *       budget period kind, runtime key sha256 ('' for configured keys),
 *       rollup key prefix (P use:{N}:), budget rollup TTL ms
 *       (0 = that limit is not set)
 * Reply: {status, now, reason, retry ms, requests, requests reset ms,
 *         tokens, tokens reset ms, streams, budget used micros (spent +
 *         reserved), of which reserved by streams in flight}
 *   status ok | limited | revoked; retry > 0 in ms, 0 = the caller's own
 *   hint (streams: nobody knows when one ends), -1 = no retry can succeed,
 *   -2 = at the end of the budget period (the caller knows the calendar)
 */
export const ADMIT_SCRIPT = `${PRELUDE}
local now = clock(ARGV[1])
local id, window = ARGV[2], tonumber(ARGV[3])
local rpm, tpm, reserve_tokens = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_streams, lease = tonumber(ARGV[7]), tonumber(ARGV[8])
local budget, reserve_micros, budget_kind = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11]
local runtime_sha, use_prefix, budget_ttl = ARGV[12], ARGV[13], tonumber(ARGV[14])

if runtime_sha ~= '' and redis.call('HEXISTS', KEYS[6], runtime_sha) == 0 then
  return {'revoked', now, '', 0, 0, 0, 0, 0, 0, 0, 0}
end

local since = now - window
local requests, requests_reset = 0, window
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', since)
  requests = redis.call('ZCARD', KEYS[1])
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] then requests_reset = tonumber(first[2]) + window - now end
end

local tokens, tokens_reset = 0, window
if tpm > 0 then
  sweep_tokens(KEYS[2], KEYS[3], since)
  tokens = tonumber(redis.call('HGET', KEYS[3], '_sum') or '0')
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if first[2] then tokens_reset = tonumber(first[2]) + window - now end
end

sweep_leases(KEYS[4], KEYS[5], use_prefix, now)
local streams = redis.call('ZCARD', KEYS[4])

local used, reserved, pid = 0, 0, ''
if budget > 0 then
  pid = period_id(budget_kind, now)
  local r = redis.call('HMGET', use_prefix .. pid, 'spend', 'reserved')
  reserved = tonumber(r[2] or '0')
  used = tonumber(r[1] or '0') + reserved
end

local function reply(status, reason, retry)
  return {status, now, reason, retry, requests, requests_reset, tokens, tokens_reset, streams, used, reserved}
end

if rpm > 0 and requests >= rpm then return reply('limited', 'requests', requests_reset) end
if max_streams > 0 and streams >= max_streams then return reply('limited', 'streams', 0) end
if tpm > 0 then
  if reserve_tokens > tpm then return reply('limited', 'tokens', -1) end
  if tokens + reserve_tokens > tpm then
    -- when will enough of the oldest entries have left the window?
    local need, freed, retry = tokens + reserve_tokens - tpm, 0, window
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 499, 'WITHSCORES')
    local ids = {}
    for i = 1, #oldest, 2 do ids[#ids + 1] = oldest[i] end
    if #ids > 0 then
      local amounts = redis.call('HMGET', KEYS[3], unpack(ids))
      for i = 1, #ids do
        freed = freed + tonumber(amounts[i] or '0')
        retry = tonumber(oldest[2 * i]) + window - now
        if freed >= need then break end
      end
    end
    return reply('limited', 'tokens', retry)
  end
end
if budget > 0 then
  if reserve_micros > budget then return reply('limited', 'budget', -1) end
  if used + reserve_micros > budget then return reply('limited', 'budget', -2) end
end

if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('PEXPIRE', KEYS[1], window + 1000)
  requests = requests + 1
end
if tpm > 0 then
  redis.call('ZADD', KEYS[2], now, id)
  redis.call('HSET', KEYS[3], id, reserve_tokens)
  redis.call('HINCRBY', KEYS[3], '_sum', reserve_tokens)
  redis.call('PEXPIRE', KEYS[2], window + 1000)
  redis.call('PEXPIRE', KEYS[3], window + 1000)
  tokens = tokens + reserve_tokens
end
redis.call('ZADD', KEYS[4], now + lease, id)
redis.call('HSET', KEYS[5], id, reserve_micros .. '|' .. pid)
redis.call('PEXPIRE', KEYS[4], lease + 1000)
redis.call('PEXPIRE', KEYS[5], lease + 1000)
streams = streams + 1
if budget > 0 and reserve_micros > 0 then
  redis.call('HINCRBY', use_prefix .. pid, 'reserved', reserve_micros)
  redis.call('PEXPIRE', use_prefix .. pid, budget_ttl)
  used = used + reserve_micros
  reserved = reserved + reserve_micros
end
return reply('ok', '', 0)
`;

/**
 * KEYS: done marker, tok, toka, fly, flya, usage stream, req
 * ARGV: now override, admission id, window ms, admitted at, shared (0/1),
 *       reserved tokens, rollup key prefix, stream max length, marker TTL ms,
 *       input, output, cached, reasoning, cost micros, estimated (0/1),
 *       rollup TTL ms for day, week, month, then the record's field/value pairs
 * Reply: 'ok', or 'duplicate' when this admission was settled before.
 * A stream admitted by a replica's local fallback (shared 0) is reconciled
 * here: whatever this store reserved under its id (an admission whose reply
 * came too late) is released, and the request and its tokens join the
 * windows at the time it was admitted, so the minute after an outage does
 * not admit a whole limit again.
 */
export const SETTLE_SCRIPT = `${PRELUDE}
local now = clock(ARGV[1])
local id, window, admitted_at = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local shared, reserved, use_prefix = ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7]
local maxlen, marker_ttl = ARGV[8], tonumber(ARGV[9])
local input, output, cached, reasoning = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local cost, estimated = tonumber(ARGV[14]), tonumber(ARGV[15])
local ttls = {day = tonumber(ARGV[16]), week = tonumber(ARGV[17]), month = tonumber(ARGV[18])}

if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', marker_ttl) then return 'duplicate' end

-- the slot and the budget reservation: whatever this admission holds here
local held = redis.call('HGET', KEYS[5], id)
if held then
  release_held(held, use_prefix)
  redis.call('HDEL', KEYS[5], id)
end
redis.call('ZREM', KEYS[4], id)

-- tokens: the reservation becomes what was used (a refund when less)
if shared and reserved > 0 then
  local actual = input + output
  local at = redis.call('ZSCORE', KEYS[2], id)
  if at and tonumber(at) > now - window then
    local before = tonumber(redis.call('HGET', KEYS[3], id) or '0')
    redis.call('HSET', KEYS[3], id, actual)
    redis.call('HINCRBY', KEYS[3], '_sum', actual - before)
  elseif actual > reserved then
    -- the reservation already left the window (a stream over a minute): the excess counts now
    redis.call('ZADD', KEYS[2], now, id .. ':late')
    redis.call('HSET', KEYS[3], id .. ':late', actual - reserved)
    redis.call('HINCRBY', KEYS[3], '_sum', actual - reserved)
    redis.call('PEXPIRE', KEYS[2], window + 1000)
    redis.call('PEXPIRE', KEYS[3], window + 1000)
  end
elseif not shared then
  release_admission(KEYS[7], KEYS[2], KEYS[3], KEYS[4], KEYS[5], id, use_prefix)
  if admitted_at > now - window then
    redis.call('ZADD', KEYS[7], admitted_at, id .. ':local')
    redis.call('PEXPIRE', KEYS[7], window + 1000)
    local actual = input + output
    if reserved > 0 and actual > 0 then
      redis.call('ZADD', KEYS[2], admitted_at, id .. ':local')
      redis.call('HSET', KEYS[3], id .. ':local', actual)
      redis.call('HINCRBY', KEYS[3], '_sum', actual)
      redis.call('PEXPIRE', KEYS[2], window + 1000)
      redis.call('PEXPIRE', KEYS[3], window + 1000)
    end
  end
end

for _, kind in ipairs({'day', 'week', 'month'}) do
  local key = use_prefix .. period_id(kind, admitted_at)
  redis.call('HINCRBY', key, 'requests', 1)
  redis.call('HINCRBY', key, 'input', input)
  redis.call('HINCRBY', key, 'output', output)
  redis.call('HINCRBY', key, 'cached', cached)
  redis.call('HINCRBY', key, 'reasoning', reasoning)
  redis.call('HINCRBY', key, 'spend', cost)
  redis.call('HINCRBY', key, 'estimated', estimated)
  redis.call('PEXPIRE', key, ttls[kind])
end

local fields = {}
for i = 19, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('XADD', KEYS[6], 'MAXLEN', '~', maxlen, '*', unpack(fields))
return 'ok'
`;

/**
 * An admission whose reply came after its caller gave up (release_admission).
 * KEYS: req, tok, toka, fly, flya
 * ARGV: admission id, rollup key prefix
 * Reply: 'ok'
 */
export const RELEASE_SCRIPT = `${PRELUDE}
release_admission(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2])
return 'ok'
`;

/**
 * A key's headroom, read as admission would see it after its sweeps, but
 * sweeping nothing: the no-writes flag makes Redis refuse any write, so
 * watching a key can never change its windows.
 * KEYS: req, tok, toka, fly
 * ARGV: now override, window ms
 * Reply: {requests in the window, tokens in the window, streams in flight}
 */
export const HEADROOM_SCRIPT = `#!lua flags=no-writes
${PRELUDE}
local now = clock(ARGV[1])
local since = now - tonumber(ARGV[2])
local requests = redis.call('ZCOUNT', KEYS[1], string.format('(%d', since), '+inf')
local tokens = tonumber(redis.call('HGET', KEYS[3], '_sum') or '0')
batches(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', since), function(batch)
  for _, a in ipairs(redis.call('HMGET', KEYS[3], unpack(batch))) do
    if a then tokens = tokens - tonumber(a) end
  end
end)
local streams = redis.call('ZCOUNT', KEYS[4], string.format('(%d', now), '+inf')
return {requests, tokens, streams}
`;

/**
 * ARGV: now override, rollup key prefix, period kind, at (ms, '' = now)
 * Reply: {period id, field, value, ...}
 */
export const USAGE_SCRIPT = `${PRELUDE}
local at = ARGV[4] ~= '' and tonumber(ARGV[4]) or clock(ARGV[1])
local pid = period_id(ARGV[3], at)
local out = {pid}
for _, v in ipairs(redis.call('HGETALL', ARGV[2] .. pid)) do out[#out + 1] = v end
return out
`;

/**
 * KEYS: keys, keynames, keys:version
 * ARGV: sha256, name, settings JSON, most keys
 */
export const CREATE_KEY_SCRIPT = `
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 'exists' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('INCR', KEYS[3])
return 'created'
`;

/**
 * KEYS: keys, keynames, keys:version
 * ARGV: name
 * Reply: the removed key's JSON, or '' when there was none.
 */
export const REVOKE_KEY_SCRIPT = `
local sha = redis.call('HGET', KEYS[2], ARGV[1])
if not sha then return '' end
local json = redis.call('HGET', KEYS[1], sha) or ''
redis.call('HDEL', KEYS[1], sha)
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[3])
return json
`;
