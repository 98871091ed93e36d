/**
 * The Lua scripts behind the Redis tenant store. Each runs atomically in
 * Redis, on Redis's clock (TIME), so replicas with drifting clocks still
 * share one minute window and one calendar. Admission is one script (one
 * round trip): revocation, requests and tokens per minute (sliding windows
 * of sorted sets), concurrent streams (leases), and the budget (spent plus
 * reserved in the period's rollup), checked and reserved together. A
 * stream's end is a second script, run after its last delta: reservations
 * replaced by what was used, rollups counted, one record appended. The
 * live view's headroom is a third, read-only one. A key in a team counts
 * against the team and the team's business line in the same scripts:
 * every level is one more set of the keys below.
 *
 * Key layout under the prefix P, for level N (docs/tenancy.md): a key's
 * name, `~team:T` for team T, `~bl:B` for business line B (subjectOf):
 *   P req:{N}      sorted set  admission id → time               (requests window)
 *   P tok:{N}      sorted set  entry id → time                   (tokens window)
 *   P toka:{N}     hash        entry id → tokens, `_sum` → total
 *   P fly:{N}      sorted set  admission id → lease expiry        (streams in flight)
 *   P flya:{N}     hash        admission id → "micros|budget period id"
 *   P leases       sorted set  admission id → lease expiry        (every level's leases, one entry)
 *   P leasel       hash        admission id → JSON [[fly, flya, rollup prefix, "micros|period"], …]
 *   P use:{N}:ID   hash        rollup of period ID: requests, input, output, cached, reasoning, spend, estimated, reserved
 *   P usage        stream      usage records, capped (MAXLEN ~)
 *   P done:ADM     string      settle marker of one admission, for an hour
 *   P keys         hash        sha256 → runtime key (JSON settings, never the key)
 *   P keynames     hash        name → sha256
 *   P teams        hash        name → runtime team (JSON settings)
 *   P lines        hash        name → runtime business line (JSON settings)
 *   P keys:version string      bumped on every change to keys, teams and lines
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

-- ends one admission's lease at every level it holds one: its slots and
-- budget reservations freed from what the lease index recorded at
-- admission, so it works even after a level's own keys expired (nobody of
-- that key was admitted since its replica died). Idempotent: the index
-- entry goes first, and whoever finds it gone has nothing to free.
local function end_lease(leases, leasel, id)
  redis.call('ZREM', leases, id)
  local rec = redis.call('HGET', leasel, id)
  if not rec then return false end
  redis.call('HDEL', leasel, id)
  for _, l in ipairs(cjson.decode(rec)) do
    release_held(l[4], l[3])
    redis.call('HDEL', l[2], id)
    redis.call('ZREM', l[1], id)
  end
  return true
end

-- leases that ran out anywhere (a replica died mid-stream, or stopped
-- renewing): at most limit of them, oldest first
local function sweep_index(leases, leasel, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(gone) do end_lease(leases, leasel, id) end
  return #gone
end

-- leases of one level that ran out: the whole admission's lease ends (every
-- level); an entry the index does not know (written before it existed)
-- frees what this level holds
local function sweep_leases(fly, flya, use_prefix, now, leases, leasel)
  local gone = redis.call('ZRANGEBYSCORE', fly, '-inf', now)
  if #gone == 0 then return end
  for _, id in ipairs(gone) do
    if not end_lease(leases, leasel, id) then
      local held = redis.call('HGET', flya, id)
      if held then release_held(held, use_prefix) end
      redis.call('HDEL', flya, id)
    end
  end
  redis.call('ZREMRANGEBYSCORE', fly, '-inf', now)
end
`;

/**
 * KEYS: keys, keys:version, leases, leasel, then for each level (the key
 *       first, then its team, then the team's business line): req, tok,
 *       toka, fly, flya
 * ARGV: now override ('' = Redis TIME), admission id, window ms, lease ms,
 *       runtime key sha256 ('' for configured keys), reserve tokens,
 *       reserve micros, settings version ('' = not checked), leases swept
 *       at most, then for each level: rpm, tpm, max streams,
 *       budget micros, budget period kind, rollup key prefix (P use:{N}:),
 *       budget rollup TTL ms (0 = that limit is not set)
 * Every level is read and checked before any is written, so a refusal at
 * the business line leaves the key's and the team's windows untouched; a
 * level reserves tokens only where it limits them and micro-dollars only
 * where it has a budget.
 * Reply: {status, now, reason, retry ms, refusing level (1 = the key, 0
 *         when admitted), then the key's figures: requests, requests reset
 *         ms, tokens, tokens reset ms, streams, budget used micros (spent +
 *         reserved), of which reserved by streams in flight, then the
 *         refusing level's budget used and reserved (the words of a
 *         refusal say spent or held truthfully; a level above the key
 *         shows no figures)}
 * Before anything, up to that many leases that ran out anywhere are
 * released (whoever looks next frees a dead replica's reservations).
 * A settings version that is not the current one (the replica's copy of
 * runtime keys, teams and lines is older than Redis's) refuses with
 * 'stale' before anything is counted: the replica re-reads and asks again,
 * so an update applies from every replica's next admission on.
 *   status ok | limited | revoked | stale; retry > 0 in ms, 0 = the caller's own
 *   hint (streams: nobody knows when one ends), -1 = no retry can succeed,
 *   -2 = at the end of the refusing level's budget period (the caller
 *   knows the calendar)
 */
export const ADMIT_SCRIPT = `${PRELUDE}
local now = clock(ARGV[1])
local id, window, lease, runtime_sha = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local reserve_tokens, reserve_micros = tonumber(ARGV[6]), tonumber(ARGV[7])
local settings_version, sweep_limit = ARGV[8], tonumber(ARGV[9])
local leases, leasel = KEYS[3], KEYS[4]
local levels = (#KEYS - 4) / 5

if runtime_sha ~= '' and redis.call('HEXISTS', KEYS[1], runtime_sha) == 0 then
  return {'revoked', now, '', 0, 1, 0, 0, 0, 0, 0, 0, 0}
end
if settings_version ~= '' and (redis.call('GET', KEYS[2]) or '0') ~= settings_version then
  return {'stale', now, '', 0, 1, 0, 0, 0, 0, 0, 0, 0}
end
sweep_index(leases, leasel, now, sweep_limit)

local since = now - window
local seen = {}

local function reply(status, reason, retry, level)
  local s = seen[1] or {requests = 0, requests_reset = window, tokens = 0, tokens_reset = window, streams = 0, used = 0, reserved = 0}
  local r = seen[level] or s
  return {status, now, reason, retry, level, s.requests, s.requests_reset, s.tokens, s.tokens_reset, s.streams, s.used, s.reserved, r.used, r.reserved}
end

for l = 1, levels do
  local k, a = 4 + (l - 1) * 5, 9 + (l - 1) * 7
  local s = {
    req = KEYS[k + 1], tok = KEYS[k + 2], toka = KEYS[k + 3], fly = KEYS[k + 4], flya = KEYS[k + 5],
    rpm = tonumber(ARGV[a + 1]), tpm = tonumber(ARGV[a + 2]), max_streams = tonumber(ARGV[a + 3]),
    budget = tonumber(ARGV[a + 4]), budget_kind = ARGV[a + 5], use_prefix = ARGV[a + 6], budget_ttl = tonumber(ARGV[a + 7]),
    requests = 0, requests_reset = window, tokens = 0, tokens_reset = window, used = 0, reserved = 0, pid = '',
  }
  seen[l] = s

  if s.rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', s.req, '-inf', since)
    s.requests = redis.call('ZCARD', s.req)
    local first = redis.call('ZRANGE', s.req, 0, 0, 'WITHSCORES')
    if first[2] then s.requests_reset = tonumber(first[2]) + window - now end
  end
  if s.tpm > 0 then
    sweep_tokens(s.tok, s.toka, since)
    s.tokens = tonumber(redis.call('HGET', s.toka, '_sum') or '0')
    local first = redis.call('ZRANGE', s.tok, 0, 0, 'WITHSCORES')
    if first[2] then s.tokens_reset = tonumber(first[2]) + window - now end
  end
  -- a lease holds a slot and a reservation: the key always takes one (its
  -- live view counts streams, limit or not), a level above it only when it
  -- limits streams or spend
  s.leased = l == 1 or s.max_streams > 0 or s.budget > 0
  if s.leased then
    sweep_leases(s.fly, s.flya, s.use_prefix, now, leases, leasel)
    s.streams = redis.call('ZCARD', s.fly)
  else
    s.streams = 0
  end
  if s.budget > 0 then
    s.pid = period_id(s.budget_kind, now)
    local r = redis.call('HMGET', s.use_prefix .. s.pid, 'spend', 'reserved')
    s.reserved = tonumber(r[2] or '0')
    s.used = tonumber(r[1] or '0') + s.reserved
  end

  if s.rpm > 0 and s.requests >= s.rpm then return reply('limited', 'requests', s.requests_reset, l) end
  if s.max_streams > 0 and s.streams >= s.max_streams then return reply('limited', 'streams', 0, l) end
  if s.tpm > 0 then
    if reserve_tokens > s.tpm then return reply('limited', 'tokens', -1, l) end
    if s.tokens + reserve_tokens > s.tpm then
      -- when will enough of the oldest entries have left the window?
      local need, freed, retry = s.tokens + reserve_tokens - s.tpm, 0, window
      local oldest = redis.call('ZRANGE', s.tok, 0, 499, 'WITHSCORES')
      local ids = {}
      for i = 1, #oldest, 2 do ids[#ids + 1] = oldest[i] end
      if #ids > 0 then
        local amounts = redis.call('HMGET', s.toka, unpack(ids))
        for i = 1, #ids do
          freed = freed + tonumber(amounts[i] or '0')
          retry = tonumber(oldest[2 * i]) + window - now
          if freed >= need then break end
        end
      end
      return reply('limited', 'tokens', retry, l)
    end
  end
  if s.budget > 0 then
    if reserve_micros > s.budget then return reply('limited', 'budget', -1, l) end
    if s.used + reserve_micros > s.budget then
      return reply('limited', 'budget', -2, l)
    end
  end
end

local lease_levels = {}
for l = 1, levels do
  local s = seen[l]
  if s.rpm > 0 then
    redis.call('ZADD', s.req, now, id)
    redis.call('PEXPIRE', s.req, window + 1000)
    s.requests = s.requests + 1
  end
  if s.tpm > 0 then
    redis.call('ZADD', s.tok, now, id)
    redis.call('HSET', s.toka, id, reserve_tokens)
    redis.call('HINCRBY', s.toka, '_sum', reserve_tokens)
    redis.call('PEXPIRE', s.tok, window + 1000)
    redis.call('PEXPIRE', s.toka, window + 1000)
    s.tokens = s.tokens + reserve_tokens
  end
  local held = s.budget > 0 and reserve_micros or 0
  if s.leased then
    redis.call('ZADD', s.fly, now + lease, id)
    redis.call('HSET', s.flya, id, held .. '|' .. s.pid)
    redis.call('PEXPIRE', s.fly, lease + 1000)
    redis.call('PEXPIRE', s.flya, lease + 1000)
    s.streams = s.streams + 1
  end
  if held > 0 then
    redis.call('HINCRBY', s.use_prefix .. s.pid, 'reserved', held)
    redis.call('PEXPIRE', s.use_prefix .. s.pid, s.budget_ttl)
    s.used = s.used + held
    s.reserved = s.reserved + held
  end
  if s.leased then lease_levels[#lease_levels + 1] = {s.fly, s.flya, s.use_prefix, held .. '|' .. s.pid} end
end
redis.call('ZADD', leases, now + lease, id)
redis.call('HSET', leasel, id, cjson.encode(lease_levels))
return reply('ok', '', 0, 0)
`;

/**
 * KEYS: done marker, usage stream, leases, leasel, then for each level
 *       (key, team, business line): req, tok, toka, fly, flya
 * ARGV: now override, admission id, window ms, admitted at, shared (0/1),
 *       stream max length, marker TTL ms, input, output, cached, reasoning,
 *       cost micros, estimated (0/1), rollup TTL ms for day, week, month,
 *       then for each level: reserved tokens, rollup key prefix; then the
 *       record's field/value pairs
 * Reply: {'ok', then per level its day, week and month spend after this
 *   call (-1 when the call cost nothing: no threshold can have been
 *   crossed, and nothing was read)}, or 'duplicate' when this admission was
 *   settled before.
 * Every level is settled as the key always was: its slot and budget
 * reservation freed, its token reservation replaced by what was used, its
 * rollups counted; the record is appended once.
 * A stream admitted by a replica's local fallback (shared 0) is reconciled
 * here: whatever this store reserved under its id (an admission whose reply
 * came too late) is released, and the request and its tokens join the
 * windows at the time it was admitted, so the minute after an outage does
 * not admit a whole limit again.
 */
export const SETTLE_SCRIPT = `${PRELUDE}
local now = clock(ARGV[1])
local id, window, admitted_at = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local shared, maxlen, marker_ttl = ARGV[5] == '1', ARGV[6], tonumber(ARGV[7])
local input, output, cached, reasoning = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local cost, estimated = tonumber(ARGV[12]), tonumber(ARGV[13])
local ttls = {day = tonumber(ARGV[14]), week = tonumber(ARGV[15]), month = tonumber(ARGV[16])}
local levels = (#KEYS - 4) / 5

if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', marker_ttl) then return 'duplicate' end
-- the lease at every level, once: its slots and budget reservations
end_lease(KEYS[3], KEYS[4], id)

local actual = input + output
local spent = {}
local counted = {{'input', input}, {'output', output}, {'cached', cached}, {'reasoning', reasoning}, {'spend', cost}, {'estimated', estimated}}
for l = 1, levels do
  local k, a = 4 + (l - 1) * 5, 16 + (l - 1) * 2
  local req, tok, toka, fly, flya = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5]
  local reserved, use_prefix = tonumber(ARGV[a + 1]), ARGV[a + 2]

  -- the slot and the budget reservation of an admission the lease index does not know
  local held = redis.call('HGET', flya, id)
  if held then
    release_held(held, use_prefix)
    redis.call('HDEL', flya, id)
  end
  redis.call('ZREM', fly, id)

  -- tokens: the reservation becomes what was used (a refund when less)
  if shared and reserved > 0 then
    local at = redis.call('ZSCORE', tok, id)
    if at and tonumber(at) > now - window then
      local before = tonumber(redis.call('HGET', toka, id) or '0')
      redis.call('HSET', toka, id, actual)
      redis.call('HINCRBY', toka, '_sum', actual - before)
    elseif actual > reserved then
      -- the reservation already left the window (a stream over a minute): the excess counts now
      redis.call('ZADD', tok, now, id .. ':late')
      redis.call('HSET', toka, id .. ':late', actual - reserved)
      redis.call('HINCRBY', toka, '_sum', actual - reserved)
      redis.call('PEXPIRE', tok, window + 1000)
      redis.call('PEXPIRE', toka, window + 1000)
    end
  elseif not shared then
    release_admission(req, tok, toka, fly, flya, id, use_prefix)
    if admitted_at > now - window then
      redis.call('ZADD', req, admitted_at, id .. ':local')
      redis.call('PEXPIRE', req, window + 1000)
      if reserved > 0 and actual > 0 then
        redis.call('ZADD', tok, admitted_at, id .. ':local')
        redis.call('HSET', toka, id .. ':local', actual)
        redis.call('HINCRBY', toka, '_sum', actual)
        redis.call('PEXPIRE', tok, window + 1000)
        redis.call('PEXPIRE', toka, window + 1000)
      end
    end
  end

  for _, kind in ipairs({'day', 'week', 'month'}) do
    local key = use_prefix .. period_id(kind, admitted_at)
    redis.call('HINCRBY', key, 'requests', 1)
    -- a field adds only when it moves (most records cache and reason nothing): fewer commands on the shared Redis
    for _, f in ipairs(counted) do
      if f[2] ~= 0 then redis.call('HINCRBY', key, f[1], f[2]) end
    end
    redis.call('PEXPIRE', key, ttls[kind])
    spent[#spent + 1] = cost ~= 0 and tonumber(redis.call('HGET', key, 'spend') or '0') or -1
  end
end

local fields = {}
for i = 17 + levels * 2, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*', unpack(fields))
return {'ok', unpack(spent)}
`;

/**
 * An admission whose reply came after its caller gave up (release_admission).
 * KEYS: leases, leasel, then for each level: req, tok, toka, fly, flya
 * ARGV: admission id, then each level's rollup key prefix
 * Reply: 'ok'
 */
export const RELEASE_SCRIPT = `${PRELUDE}
end_lease(KEYS[1], KEYS[2], ARGV[1])
for l = 1, (#KEYS - 2) / 5 do
  local k = 2 + (l - 1) * 5
  release_admission(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], ARGV[1], ARGV[l + 1])
end
return 'ok'
`;

/**
 * A replica's heartbeat: the leases of its streams still running are
 * renewed at every level they hold one (a stream may outlive one lease),
 * after the leases that ran out anywhere are released, so a stream whose
 * lease ran out before its renewal (its replica stalled) is not revived.
 * KEYS: leases, leasel
 * ARGV: now override, lease ms, leases swept at most, then admission ids
 * Reply: {leases renewed, leases released}
 */
export const HEARTBEAT_SCRIPT = `${PRELUDE}
local now = clock(ARGV[1])
local lease = tonumber(ARGV[2])
local released = sweep_index(KEYS[1], KEYS[2], now, tonumber(ARGV[3]))
local renewed = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local rec = redis.call('HGET', KEYS[2], id)
  if rec then
    for _, l in ipairs(cjson.decode(rec)) do
      if redis.call('ZADD', l[1], 'XX', 'CH', now + lease, id) == 1 then
        redis.call('PEXPIRE', l[1], lease + 1000)
        redis.call('PEXPIRE', l[2], lease + 1000)
      end
    end
    redis.call('ZADD', KEYS[1], 'XX', now + lease, id)
    renewed = renewed + 1
  end
end
return {renewed, released}
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
 * KEYS: leases, leasel
 * ARGV: now override, rollup key prefix, period kind, at (ms, '' = now),
 *       leases swept at most
 * Reply: {period id, field, value, ...}
 * Leases that ran out are released first: a dead stream's reservation is
 * never shown as held.
 */
export const USAGE_SCRIPT = `${PRELUDE}
sweep_index(KEYS[1], KEYS[2], clock(ARGV[1]), tonumber(ARGV[5]))
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

/**
 * KEYS: keys, keynames, keys:version
 * ARGV: sha256, name, settings JSON
 * Reply: 'updated', or 'missing' when the name is not (or no longer) this key's.
 */
export const UPDATE_KEY_SCRIPT = `
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[1] then return 'missing' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('INCR', KEYS[3])
return 'updated'
`;

/**
 * KEYS: teams or lines, keys:version
 * ARGV: name, settings JSON, mode (create | update), most entries
 */
export const PUT_LEVEL_SCRIPT = `
local exists = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if ARGV[3] == 'create' then
  if exists then return 'exists' end
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
elseif not exists then
  return 'missing'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[2])
return ARGV[3] == 'create' and 'created' or 'updated'
`;

/**
 * KEYS: teams or lines, keys:version
 * ARGV: name
 * Reply: the removed entry's JSON, or '' when there was none.
 */
export const DELETE_LEVEL_SCRIPT = `
local json = redis.call('HGET', KEYS[1], ARGV[1])
if not json then return '' end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
return json
`;
