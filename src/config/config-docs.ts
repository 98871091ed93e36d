import { DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_TIMEOUTS } from "./schema.js";

/**
 * The words of the configuration reference, docs/configuration.md, which
 * scripts/gen-config-docs.mjs generates from the schema (schema.ts): the
 * schema gives each key's type, bounds and default, this file what the key
 * means. Kept beside the schema rather than in it so the schema stays code;
 * the generator fails on a key of the schema without an entry here and on an
 * entry here that names no key, so the two cannot drift apart.
 *
 * Keys are paths as written in a file, with `<name>` for a provider's name,
 * `<alias>` for a model alias and `[]` for a list's items. Text is Markdown;
 * its links are relative to docs/.
 */

/** What one key means. */
export interface KeyDoc {
  readonly text: string;
  /**
   * What leaving out an optional key means, when the schema has no default
   * for it: in words, or the number the code uses instead.
   */
  readonly unset?: string | number;
  /** A group of keys used in several places (`timeouts`, `price`), documented once under that name. */
  readonly group?: string;
  /** Whether a reload applies it, when that is not simply the restart-only list's answer for its path. */
  readonly reload?: string;
}

/** Placeholders for the names of a map's entries. */
export const MAP_KEYS: Readonly<Record<string, string>> = {
  providers: "<name>",
  models: "<alias>",
};

/** Bytes as the reference shows a default, e.g. 4194304 (4 MiB). */
function bytes(value: number): string {
  return `\`${value}\` (${value / (1024 * 1024)} MiB)`;
}

export const CONFIG_DOCS: Readonly<Record<string, KeyDoc>> = {
  server: { text: "The listener: where it binds, how long a connection or a request may take, how many there may be, TLS, and how long a shutdown drains. `--host`, `--port` and the `PORT` variable override `server`." },
  "server.host": { text: "Address to listen on (`--host 0.0.0.0` to listen beyond loopback)." },
  "server.port": { text: "Port to listen on (0: any free port)." },
  "server.drainMs": { text: "How long in-flight streams may finish after SIGTERM before they are ended with `UNAVAILABLE` (see graceful shutdown in [Stream semantics](streams.md#stream-semantics))." },
  "server.keepaliveMs": { text: "The HTTP/2 PING interval; a PING unanswered for two intervals closes the connection." },
  "server.debugEndpoints": { text: "Serve `GET /debug/runtime` (memory, event-loop delay, streams). Off in production." },
  "server.headersTimeoutMs": { text: "A new connection must send complete request headers (HTTP/2: open a stream) within this, or it is closed; headers trickled a byte at a time do not extend it." },
  "server.requestTimeoutMs": { text: "The whole request body must arrive in this time: 408 on the facade, `DEADLINE_EXCEEDED` on the RPC edges." },
  "server.idleTimeoutMs": { text: "A connection with nothing in flight (HTTP/1.1 keep-alive, an HTTP/2 session with no stream) is closed (HTTP/2 gets GOAWAY)." },
  "server.sendTimeoutMs": { text: "A client that takes no bytes of its response for this long has its stream reset, and everything it held (slot, upstream request) is released; slow readers that keep reading are unaffected." },
  "server.maxConnections": { text: "Open connections. A new connection beyond it closes the connection that has been idle longest (never one with a request in flight); if every connection is busy, it gets `503` and is closed. Lowered at start-up (and logged) when the process's open-file limit cannot hold it: each client stream also holds an upstream connection." },
  "server.maxStreamsPerConnection": { text: "Concurrent streams on one HTTP/2 connection, advertised in SETTINGS; clients queue above it, a client that ignores it gets `REFUSED_STREAM`." },
  "server.tls": { text: "TLS on the one port, which then speaks TLS only (ALPN `h2` and `http/1.1`; see [TLS](operations.md#tls)). Relative paths are relative to the working directory.", unset: "cleartext h2c and HTTP/1.1" },
  "server.tls.certFile": { text: "PEM certificate chain, leaf first." },
  "server.tls.keyFile": { text: "PEM private key of the leaf (read once at start-up, never logged)." },
  "server.tls.clientCaFile": { text: "PEM CA certificates; every client must then present a certificate one of them signed (mutual TLS).", unset: "no client certificates" },
  "server.watchConfig": { text: "`true`: reload when the configuration file changes (SIGHUP always reloads; see [Reloading the configuration](operations.md#reloading-the-configuration))." },

  log: { text: "JSON log lines (pino) on stdout." },
  "log.level": { text: "The lowest level written." },

  telemetry: { text: "Metrics and traces (see [Observability](operations.md#observability))." },
  "telemetry.serviceName": { text: "`service.name` on spans and metrics (`OTEL_SERVICE_NAME` overrides)." },
  "telemetry.metrics": { text: "Prometheus metrics." },
  "telemetry.metrics.enabled": { text: "Serve `GET /metrics` (Prometheus text)." },
  "telemetry.metrics.port": { text: "A listener of its own for `/metrics` (e.g. on a private interface); the public port then answers 404 for `/metrics`.", unset: "the gateway's own port" },
  "telemetry.metrics.host": { text: "Where that listener binds." },
  "telemetry.tracing": { text: "Traces, exported over OTLP/HTTP; the standard `OTEL_*` variables apply too." },
  "telemetry.tracing.exporter": { text: "`otlp` exports spans over OTLP/HTTP; `none` exports nothing.", unset: "`otlp` when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set, else `none`" },
  "telemetry.tracing.endpoint": { text: "The OTLP/HTTP traces URL (`…/v1/traces`).", unset: "what the `OTEL_*` variables say" },
  "telemetry.tracing.captureContent": { text: "`true` puts prompts and answers on spans (`gen_ai.input.messages` and `gen_ai.output.messages`, cut to 16 KiB). Off: no message text ever leaves in telemetry." },

  facade: { text: "The OpenAI-compatible facade (see [streams.md](streams.md#openai-compatible-facade-v1chatcompletions))." },
  "facade.keepaliveMs": { text: "A `: keepalive` comment line on OpenAI-compatible streams after this much silence, also before the first token." },
  "facade.maxBodyBytes": { text: "Deprecated: the old name of `limits.maxRequestBytes`, still honoured when that is not set.", unset: "`limits.maxRequestBytes`", reload: "restart" },

  limits: { text: "What one request or one upstream event may hold. Every limit answers with a clear status and is counted before the expensive work it protects (see [Limits and timeouts](operations.md#limits-and-timeouts))." },
  "limits.maxEventBytes": { text: "Largest upstream SSE event, in bytes; a larger one ends the stream with an error." },
  "limits.maxAnswerBytes": {
    text: "Largest answer the gateway holds whole in memory, in bytes of text: a non-streamed response (Chat, `stream: false`), a batch line, an evaluation replay, and the answer an alias that `record`s or `shadow`s keeps. Past it a non-streamed call fails with 502 / `INTERNAL` (`upstream_protocol`, naming this setting) and its upstream request is closed; a recording is dropped and counted (`sluice_recordings_total{sluice_recording_result=\"too_large\"}`). Streamed answers are not held, so not bounded by it (their output is bounded by `max_tokens`, see [Enforcing what was reserved](tenancy.md#enforcing-what-was-reserved)).",
    unset: bytes(DEFAULT_MAX_ANSWER_BYTES),
  },
  "limits.maxRequestBytes": {
    text: "The request body on every edge and protocol, and any one message after gzip decompression: `RESOURCE_EXHAUSTED` / 413, checked against `Content-Length` (and an RPC envelope's declared length) before the body is read, and while it arrives; the rest is discarded as it comes, never buffered: HTTP/2 resets the stream (`NO_ERROR`) once the status is out, HTTP/1.1 closes the connection after the answer, lingering at most 2 s / 8 MiB so that a client still sending can read its status.",
    unset: `\`facade.maxBodyBytes\` when set, else ${bytes(DEFAULT_MAX_REQUEST_BYTES)}`,
  },
  "limits.maxRequestElements": { text: "Fields, list items and JSON values in one request, counted by a scan of the raw bytes before protobuf or JSON decoding: `RESOURCE_EXHAUSTED` / 413. Decoding cost follows the element count, not the byte count (4 MiB of one-character content parts took protobuf-es almost a second); at the limit the worst shapes decode in about 7 ms on this machine's cores." },
  "limits.maxJsonDepth": { text: "Nesting of a tool's JSON Schema: `INVALID_ARGUMENT` / 400 naming `tools[i].parameters` (`tools[i].function.parameters` on the facade); the same cap on both edges. Much deeper documents are refused by the scan before decoding." },

  auth: { text: "Virtual keys and the admin service (see [Tenancy](tenancy.md)). Any key configured, or the admin service on, makes every edge require a key.", unset: "no keys: anyone who reaches the port may call" },
  "auth.adminKeyEnv": { text: "Environment variable holding the admin key (16 characters or more); serves `sluice.admin.v1.AdminService` and turns authentication on.", unset: "no admin service", reload: "restart to turn it on or off; another variable: yes" },
  "auth.budgetExceededStatus": { text: "HTTP status of a request refused because a budget is spent: `402` (Payment Required; the SDKs do not retry it) or `429`, for callers written before 402 (the body is the same). gRPC says `RESOURCE_EXHAUSTED` either way." },
  "auth.keys": { text: "The virtual keys; any key configured → every edge requires one." },
  "auth.keys[].name": { text: "1 to 64 letters, digits and `. _ -`, unique; what logs, usage records and the admin service call the key. Limits, spend and usage are kept per name." },
  "auth.keys[].keyEnv": { text: "Environment variable holding the key (16 characters or more); the gateway keeps only its SHA-256. Give exactly one of `keyEnv` and `sha256`.", unset: "one of the two" },
  "auth.keys[].sha256": { text: 'The key\'s SHA-256 in hex, so the key itself never reaches the gateway\'s host (`printf %s "$KEY" | sha256sum`).', unset: "one of the two" },
  "auth.keys[].models": { text: "The aliases the key may use.", unset: "every alias" },
  "auth.keys[].limits": { text: "Per-key rate limits; an unset limit is not enforced." },
  "auth.keys[].limits.requestsPerMinute": { text: "Requests admitted in any 60-second window.", unset: "no limit" },
  "auth.keys[].limits.tokensPerMinute": { text: "Input + output tokens in any 60-second window, reserved at admission, reconciled at the end.", unset: "no limit" },
  "auth.keys[].limits.concurrentStreams": { text: "Streams in flight at once.", unset: "no limit" },
  "auth.keys[].budget": { text: "Spend allowed per UTC calendar period.", unset: "no budget" },
  "auth.keys[].pii": { text: "The key's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" },
  "auth.keys[].pii.mode": { text: "`off`, `redact` (placeholders upstream, values restored in the answer), `local-only` (a request with PII goes to local targets only) or `block` (refused with 400 / INVALID_ARGUMENT naming the kinds found)." },
  "auth.keys[].pii.detectors": { text: "The detectors to run: built-in kinds (`email`, `phone`, `card`, `iban`, `cn_id`, `us_ssn`, `ipv4`, `ipv6`, `secret`) and names of `compliance.patterns`.", unset: "every built-in kind" },
  "auth.keys[].localOnly": { text: "Every request of this key is served by local targets only, whatever it holds (docs/compliance.md, \"Local targets\")." },
  "auth.keys[].budget.usd": { text: "Spend allowed per period, in US dollars (kept as integer micro-dollars)." },
  "auth.keys[].budget.period": { text: "`day`, `week` (ISO, from Monday 00:00 UTC) or `month`: UTC calendar periods." },
  alerts: { text: "Budget alerts: each budget's thresholds (key, team, business line) announced once per period, as a metric, a log line and an optional signed webhook (docs/tenancy.md, \"Budget alerts\")." },
  "alerts.thresholds": { text: "Fractions of a budget (0 to 1) whose crossing is announced, once per period each." },
  "alerts.webhook": { text: "Where alerts are POSTed as JSON, signed with HMAC-SHA256 (`sluice-signature`).", unset: "metrics and log lines only" },
  "alerts.webhook.url": { text: "`http://` or `https://` URL of the receiver." },
  "alerts.webhook.secretEnv": { text: "Environment variable holding the signing secret (16 characters or more); the receiver checks `sluice-signature` with it." },
  "alerts.webhook.timeoutMs": { text: "Longest one delivery attempt may take." },
  "alerts.webhook.maxAttempts": { text: "Attempts per alert, with doubling backoff from one second (a 2xx answer ends them); then the alert is dropped and counted." },
  "alerts.webhook.queueMax": { text: "Alerts waiting for delivery at most; past it new ones are dropped and counted." },
  batch: { text: "The OpenAI Batch API on the facade (`/v1/files`, `/v1/batches`): files, batches and each line's result in the database (`store.postgres`, or the embedded in-memory PGlite, with which nothing survives a restart), run by an in-process worker (docs/batches.md)." },
  "batch.maxFileBytes": { text: "Bytes of one uploaded batch file at most; a larger upload is refused (413) before it is parsed." },
  "batch.maxLines": { text: "Lines (requests) of one batch file at most." },
  "batch.maxLineBytes": { text: "Bytes of one line of a batch file at most." },
  "batch.maxBatchesPerKey": { text: "Batches one key may have unfinished (validating, in progress, finalizing or cancelling) at once; one more is refused (429)." },
  "batch.concurrency": { text: "Lines this gateway runs at once, over all batches; each line goes through the same admission, limits and budget as an interactive call." },
  "batch.maxShare": { text: "Batch lines use spare capacity: at most this share of a provider's maxConcurrent (at least one stream), and a line starts only while no interactive call waits for that provider; when a stream ends, waiting interactive calls go first. A provider without maxConcurrent has no limit to share." },
  "batch.leaseMs": { text: "With store.redis and store.postgres, batches run on a queue shared by the replicas: a line held by a replica that stopped answering goes to another after this. Longer than a line's longest call is not needed (the lease is renewed while the line runs)." },
  ledger: { text: "The durable spend ledger: one row per charged call in `store.postgres`, written off the request path (docs/tenancy.md, \"The spend ledger\")." },
  compliance: { text: "Custom PII detectors and the audit log ([Compliance](compliance.md))." },
  "compliance.patterns": { text: "Detectors of your own, named in `pii.detectors` where they apply; each pattern is refused at load if it could backtrack catastrophically (nested quantifiers) or matches the empty string." },
  "compliance.patterns[].name": { text: "1 to 14 lower-case letters, digits and `_`; the placeholder is its upper-case form (`<EMPLOYEE_1>`). Not a built-in kind's name." },
  "compliance.patterns[].pattern": { text: "A JavaScript regular expression, at most 256 characters, matched case-sensitively over every text of the request." },
  "compliance.audit": { text: "The tamper-evident audit log in `store.postgres` (docs/compliance.md, \"The audit log\")." },
  "compliance.audit.enabled": { text: "Keep the audit log.", unset: "on when `store.postgres` is configured (an in-memory database would not keep it)" },
  "compliance.audit.bufferMax": { text: "Events held while the database (or Redis) is away; past it new ones are dropped and counted (`sluice_audit_events_total{sluice_audit_result=\"dropped\"}`)." },
  "compliance.audit.flushMs": { text: "How often new events are written." },
  "compliance.audit.batchSize": { text: "Events appended per transaction at most." },
  "compliance.audit.refusalsPerMinute": { text: "Limit and budget refusals recorded per key, reason and minute at most; the last one recorded says `limited`, and the metrics still count every refusal." },
  "compliance.audit.authFailuresPerMinute": { text: "Authentication failures recorded per remote address and minute at most; the last one recorded says `limited`, and the metrics still count every failure." },
  "ledger.enabled": { text: "Write the ledger.", unset: "on when `store.postgres` is configured (an in-memory database would not be durable)" },
  "ledger.retentionDays": { text: "Rows older than this many days are removed, hourly, in bounded batches." },
  "ledger.batchSize": { text: "Records written per `INSERT` at most." },
  "ledger.flushMs": { text: "How often new records are looked for and written." },
  "ledger.claimIdleMs": { text: "With `store.redis`: usage-stream entries a replica read but did not acknowledge for this long are taken over by another (it died mid-batch)." },
  "ledger.bufferMax": { text: "Without `store.redis`: records held in memory while the database is away; past it new ones are dropped and counted." },
  "auth.tagKeys": { text: "Tag keys kept for cost allocation: a request's tags (the `sluice-tags` header, the facades' body `metadata`, gRPC `metadata.labels`) under other keys are dropped and named in the `sluice-tags-dropped` response header; kept tags go on the usage record (docs/tenancy.md, \"Cost allocation by tag\")." },
  "auth.keys[].team": { text: "The team the key belongs to (one of `auth.teams`): its requests count against the team's and the team's business line's limits and budgets as well as its own.", unset: "no team" },
  "auth.teams": { text: "Teams: limits and budgets shared by every key in the team, checked in the same admission as the key (docs/tenancy.md, \"Teams and business lines\")." },
  "auth.teams[].name": { text: "1 to 64 letters, digits and `. _ -`, unique among teams; what refusals, usage records and reports call the team." },
  "auth.teams[].businessLine": { text: "The business line the team belongs to (one of `auth.businessLines`).", unset: "no business line" },
  "auth.teams[].limits": { text: "Limits on the team as a whole; an unset limit is not enforced." },
  "auth.teams[].limits.requestsPerMinute": { text: "Requests of all its keys admitted in any 60-second window.", unset: "no limit" },
  "auth.teams[].limits.tokensPerMinute": { text: "Input + output tokens of all its keys in any 60-second window, reserved at admission, reconciled at the end.", unset: "no limit" },
  "auth.teams[].limits.concurrentStreams": { text: "Streams of all its keys in flight at once.", unset: "no limit" },
  "auth.teams[].budget": { text: "Spend of all its keys allowed per UTC calendar period; a request that could pass it is refused with 402 naming the team.", unset: "no budget" },
  "auth.teams[].budget.usd": { text: "Spend allowed per period, in US dollars (kept as integer micro-dollars)." },
  "auth.teams[].budget.period": { text: "`day`, `week` (ISO, from Monday 00:00 UTC) or `month`: UTC calendar periods." },
  "auth.teams[].pii": { text: "The team's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" },
  "auth.teams[].pii.mode": { text: "`off`, `redact` (placeholders upstream, values restored in the answer), `local-only` (a request with PII goes to local targets only) or `block` (refused with 400 / INVALID_ARGUMENT naming the kinds found)." },
  "auth.teams[].pii.detectors": { text: "The detectors to run: built-in kinds (`email`, `phone`, `card`, `iban`, `cn_id`, `us_ssn`, `ipv4`, `ipv6`, `secret`) and names of `compliance.patterns`.", unset: "every built-in kind" },
  "auth.teams[].localOnly": { text: "Every request of the team is served by local targets only, whatever it holds (docs/compliance.md, \"Local targets\")." },
  "auth.businessLines": { text: "Business lines: limits and budgets shared by every team in the line (the top of the hierarchy) (docs/tenancy.md, \"Teams and business lines\")." },
  "auth.businessLines[].name": { text: "1 to 64 letters, digits and `. _ -`, unique among business lines; what refusals, usage records and reports call the business line." },
  "auth.businessLines[].limits": { text: "Limits on the business line as a whole; an unset limit is not enforced." },
  "auth.businessLines[].limits.requestsPerMinute": { text: "Requests of all its keys admitted in any 60-second window.", unset: "no limit" },
  "auth.businessLines[].limits.tokensPerMinute": { text: "Input + output tokens of all its keys in any 60-second window, reserved at admission, reconciled at the end.", unset: "no limit" },
  "auth.businessLines[].limits.concurrentStreams": { text: "Streams of all its keys in flight at once.", unset: "no limit" },
  "auth.businessLines[].budget": { text: "Spend of all its keys allowed per UTC calendar period; a request that could pass it is refused with 402 naming the business line.", unset: "no budget" },
  "auth.businessLines[].budget.usd": { text: "Spend allowed per period, in US dollars (kept as integer micro-dollars)." },
  "auth.businessLines[].budget.period": { text: "`day`, `week` (ISO, from Monday 00:00 UTC) or `month`: UTC calendar periods." },

  console: { text: "The operators' console at `/console/` (see [Console](operations.md#console))." },
  "console.access": { text: "`off`, `open` or `admin`: who may open `/console/` and watch `WatchStats` (the table in [Console](operations.md#console)).", unset: "`admin` when `auth.adminKeyEnv` is set, else `off`" },
  "console.maxWatchers": { text: "`WatchStats` streams at once; more get `RESOURCE_EXHAUSTED`." },

  resume: { text: "Resumable streams (see [Resumable streams](streams.md#resumable-streams)): kept in `store.redis` when configured, else in process." },
  cache: { text: "What every alias's response cache shares: the lookup deadline, whether hits are charged, entry and memory bounds. Aliases opt in with `models.<alias>.cache` ([Caching](caching.md))." },
  "cache.lookupTimeoutMs": { text: "Longest a lookup may take; past it the request goes upstream as a miss (`sluice_cache_lookups_total{sluice_cache_result=\"error\"}`), never failed." },
  "cache.chargeHits": { text: "`false`: a hit costs nothing and its usage record carries the cost saved; `true`: a hit is charged at the price of the target that produced the answer." },
  "cache.maxEntryBytes": { text: "Largest answer stored, counting its text and reasoning characters; larger answers are served and not cached." },
  "cache.maxEmbedChars": { text: "Longest last question, in characters, the semantic cache embeds; a longer one gets the exact cache only." },
  "cache.maxMemoryBytes": { text: "Memory for entries without `store.redis` (one replica); the least recently used entries go first. With `store.redis` the entries live in Redis and expire there." },
  "resume.detachGraceMs": { text: "How long a resumable stream's upstream outlives its last reader." },
  "resume.retentionMs": { text: "How long a stream's messages stay readable after its last one; then `NOT_FOUND`." },
  "resume.maxBacklogMessages": { text: "Messages stored per stream; past it the stream is no longer resumable." },
  "resume.maxBacklogBytes": { text: "Bytes stored per stream, as JSON; past it the stream is no longer resumable." },
  "resume.maxReaders": { text: "`ResumeStream` calls and facade resumes served at once per replica (each may hold a Redis connection); more get `RESOURCE_EXHAUSTED` / 429." },

  store: { text: "Where limits, spend, usage, runtime keys and cache entries are kept: Redis for what replicas share at once, PostgreSQL for what needs a database (see [Tenancy](tenancy.md), [Caching](caching.md)).", unset: "in process: right for one replica (limits, spend and runtime keys start empty after a restart)" },
  "store.redis": { text: "One Redis (standalone, or a primary with replicas behind Sentinel or a managed service), not Cluster, shared by every replica.", unset: "limits, spend, usage and exact-cache entries in process" },
  "store.postgres": { text: "The one database of the features that need one (the semantic cache): a server by `url`, or the embedded PGlite. It opens behind the port when a feature first needs it; until it is open those features go without (the semantic cache misses).", unset: "the embedded PGlite in memory, opened only when an alias has a semantic cache" },
  "store.postgres.url": { text: "`postgres://` or `postgresql://` of a server with the pgvector extension, shared by every replica; TLS as the URL's `sslmode` says. Only host, port and database are ever logged.", unset: "the embedded PGlite" },
  "store.postgres.dataDir": { text: "Directory of the embedded PGlite's files (kept across restarts).", unset: "in memory: entries are gone at restart" },
  "store.postgres.poolSize": { text: "Connections to the server (`url` mode)." },
  "store.redis.url": { text: "`redis://` or `rediss://` (TLS). Only its host and port are ever logged." },
  "store.redis.prefix": { text: "Prefix of every key the gateway writes (several gateways, or tests, can share one Redis)." },
  "store.redis.failMode": { text: "Redis down or slow: `open` falls back to per-replica limits; `closed` refuses new streams with `UNAVAILABLE` / 503 (see [When Redis is in trouble](tenancy.md#when-redis-is-in-trouble))." },
  "store.redis.replicas": { text: "Replicas sharing this Redis: the divisor of the fail-open limits." },
  "store.redis.timeoutMs": { text: "A Redis call unanswered this long after it was written is slow: logged, still waited for." },
  "store.redis.downAfterTimeouts": { text: "Redis is down after this many `timeoutMs` with no answer to any call (or at once when the connection drops); then the fail mode applies." },
  "store.redis.usageStreamMaxLen": { text: "Usage records kept in the Redis Stream (approximately: `XADD MAXLEN ~`)." },
  "store.redis.bufferMax": { text: "Usage records held in memory while Redis is away; past it they are dropped, counted and logged." },
  "store.redis.streamLeaseMs": { text: "A stream's concurrency slot and budget reservation are released after this if its replica died before the stream ended." },

  providers: { text: "The upstreams, each under a name of your choice that aliases refer to (see [Providers](providers.md))." },
  "providers.<name>.kind": { text: "Wire format of the provider: `openai` (any Chat Completions server: OpenAI, vLLM, llama.cpp, Ollama, Groq, DeepSeek…), `anthropic` or `gemini`." },
  "providers.<name>.baseUrl": { text: "Base URL including the version path (`…/v1`)." },
  "providers.<name>.apiKeyEnv": { text: "Environment variable with the API key, sent in the provider's own header; the NAME of the variable, never the key itself. Unset variable = start-up failure.", unset: "no key sent (e.g. a local server)" },
  "providers.<name>.timeouts": { text: "Phase timeouts for every alias of this provider.", group: "timeouts", unset: "the defaults" },
  "providers.<name>.maxConcurrent": { text: "Streams in flight to this provider at once; more wait in its queue.", unset: "unlimited" },
  "providers.<name>.queue": { text: "The admission queue behind `maxConcurrent`: FIFO; a full queue or a wait that runs out sheds the request." },
  "providers.<name>.queue.maxWaiting": { text: "Requests waiting at most." },
  "providers.<name>.queue.timeoutMs": { text: "How long each may wait." },
  "providers.<name>.breaker": { text: "The circuit breaker, per target (provider and model): `failures` failures within `windowMs` with no success between them open it for `openMs` (see [Routing, retries and failover](routing.md))." },
  "providers.<name>.breaker.failures": { text: "Failures that open it." },
  "providers.<name>.breaker.windowMs": { text: "The window they must fall in." },
  "providers.<name>.breaker.openMs": { text: "How long it stays open; then one request probes (half-open)." },
  "providers.<name>.thinking": { text: "`anthropic` only: `adaptive` or `budget`, the thinking form for a reasoning effort on every model of this provider (see [Anthropic thinking](providers.md#anthropic-thinking)).", unset: "by model name" },
  "providers.<name>.local": { text: "Every target of this provider runs where the data may go (a vLLM or Ollama host of your own): the targets local-only requests may use." },

  models: { text: "The aliases clients name. An alias is either one target written inline (`provider`, `model`, `price`) or a `targets` list, not both, with how to choose among them and what to do when one fails (see [Routing, retries and failover](routing.md))." },
  "models.<alias>.provider": { text: "The single-target form: where the alias goes (a provider's name).", unset: "`targets` instead" },
  "models.<alias>.model": { text: "The single-target form: the provider's model id.", unset: "`targets` instead" },
  "models.<alias>.price": { text: "The single-target form: its price.", group: "price", unset: "unpriced: costs nothing, last for `cost`" },
  "models.<alias>.capabilities": { text: "The single-target form: what its target can do, over the built-in table.", group: "capabilities", unset: "the built-in table's entry, else unknown (taken as able)" },
  "models.<alias>.context": { text: "A conversation longer than every target's context window ([Fitting the context window](routing.md#fitting-the-context-window))." },
  "models.<alias>.context.strategy": { text: "`reject`: refused with `FAILED_PRECONDITION` / 400 before any upstream call; `truncate`: the oldest turns are dropped until it fits the largest window, and the response says `sluice-context: truncated=K`; `summarize`: they are replaced by a summary from `summarizer` (`sluice-context: summarized=K`), falling back to `truncate` when the summary fails." },
  "models.<alias>.context.summarizer": { text: "With `summarize`: the alias (a cheap model) that writes the summary of the dropped turns, called as the same key (its limits and budget count it, and it has its own usage record).", unset: "required with `summarize`" },
  "models.<alias>.context.keepSystem": { text: "Never drop system messages when truncating." },
  "models.<alias>.context.keepLastTurns": { text: "The last N turns (a user message and what answers it) are never dropped; a request that does not fit with them is refused." },
  "models.<alias>.context.reserveOutputTokens": { text: "Output tokens kept free in the window when the request sets no `max_tokens`." },
  "models.<alias>.maxToolResultTokens": { text: "Each tool result longer than this many tokens is cut to its head and tail, the middle replaced by a marker saying how much was elided (retrieval results).", unset: "tool results are sent whole" },
  "models.<alias>.targets": { text: "The targets, in failover order for `priority`.", unset: "the single-target form instead" },
  "models.<alias>.targets[].provider": { text: "A provider's name." },
  "models.<alias>.targets[].model": { text: "The provider's model id." },
  "models.<alias>.targets[].weight": { text: "Share of traffic under the `weighted` strategy." },
  "models.<alias>.targets[].price": { text: "Its price.", group: "price", unset: "unpriced: costs nothing, last for `cost`" },
  "models.<alias>.targets[].capabilities": { text: "What this target can do, over the built-in table for its model name.", group: "capabilities", unset: "the built-in table's entry, else unknown (taken as able)" },
  "models.<alias>.targets[].timeouts": { text: "Timeouts for this target, over the alias's and the provider's.", group: "timeouts", unset: "the alias's" },
  "models.<alias>.targets[].thinking": { text: "On an `anthropic` provider: the thinking form for this model, over the provider's.", unset: "the provider's, else by model name" },
  "models.<alias>.targets[].local": { text: "This target runs where the data may go.", unset: "the provider's `local`" },
  "models.<alias>.strategy": { text: "How a request picks among the targets: see [Routing, retries and failover](routing.md)." },
  "models.<alias>.retry": { text: "Retries and failover, only ever before the first delta.", unset: "one attempt per target, default backoff" },
  "models.<alias>.retry.maxAttempts": { text: "Attempts across all targets, hedges included.", unset: "one per target, so a single-target alias is not retried unless asked" },
  "models.<alias>.retry.baseBackoffMs": { text: "Full-jitter exponential backoff: a random delay up to `min(maxBackoffMs, baseBackoffMs × 2^(tries−1))`." },
  "models.<alias>.retry.maxBackoffMs": { text: "The backoff's ceiling." },
  "models.<alias>.hedge": { text: "Hedged first token.", unset: "off" },
  "models.<alias>.hedge.afterMs": { text: "Start the next target in parallel when no first delta has come by then." },
  "models.<alias>.timeouts": { text: "Per-alias override of the provider's timeouts (a target's own `timeouts` go over these).", group: "timeouts", unset: "the provider's" },
  "models.<alias>.cache": { text: "The alias's response cache ([Caching](caching.md)).", unset: "no cache: every request goes upstream" },
  "models.<alias>.pii": { text: "The alias's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" },
  "models.<alias>.pii.mode": { text: "`off`, `redact` (placeholders upstream, values restored in the answer), `local-only` (a request with PII goes to local targets only) or `block` (refused with 400 / INVALID_ARGUMENT naming the kinds found)." },
  "models.<alias>.pii.detectors": { text: "The detectors to run: built-in kinds (`email`, `phone`, `card`, `iban`, `cn_id`, `us_ssn`, `ipv4`, `ipv6`, `secret`) and names of `compliance.patterns`.", unset: "every built-in kind" },
  "models.<alias>.record": { text: "Keep a sample of this alias's completed calls in `store.postgres` for evaluation replay ([Evaluation](evaluation.md)): the request as the provider saw it (PII placeholders under a `redact` policy, secrets always replaced) and the answer. Calls that fail, batch lines and replays themselves are never kept.", unset: "nothing is recorded" },
  "models.<alias>.shadow": { text: "Shadow traffic ([Evaluation](evaluation.md#shadow-traffic)): a sampled share of this alias's completed calls is sent again to a candidate alias after the caller has its answer, at batch priority, and both answers are kept side by side for GetShadowReport. The caller's latency and answer are never affected.", unset: "nothing is mirrored" },
  "models.<alias>.shadow.alias": { text: "The candidate alias; not this alias itself." },
  "models.<alias>.shadow.sampleRate": { text: "The share of completed calls mirrored, drawn per call." },
  "models.<alias>.shadow.key": { text: "The configured key mirrored calls run as: its allowlist, limits and budget apply and it is charged. Required when keys are configured.", unset: "no key (only without keys)" },
  "models.<alias>.shadow.maxInFlight": { text: "Mirrored calls in flight at most on this replica; a call sampled past it is not mirrored (counted in `sluice_shadow_calls_total{sluice_shadow_result=\"skipped\"}`)." },
  "models.<alias>.record.sampleRate": { text: "The share of completed calls kept, drawn per call." },
  "models.<alias>.record.maxPerDay": { text: "Calls kept per UTC day at most, counted on each replica." },
  "models.<alias>.promptCache": { text: "`auto`: on `anthropic` targets, Sluice marks the stable prefix of each request (tools, system prompt, then the conversation so far) with `cache_control` breakpoints, within Anthropic's limit of four, so a repeated prefix is billed at the cached rate ([Routing](routing.md#prompt-caching)). OpenAI and Gemini cache prefixes without being asked and report cached tokens either way; `off` sends nothing extra." },
  "models.<alias>.localOnly": { text: "Every request to this alias is served by local targets only, whatever it holds (docs/compliance.md, \"Local targets\")." },
  "models.<alias>.cache.exact": { text: "The exact cache: an answer is reused for a request identical in everything that shapes it (messages, tools, parameters, response format, reasoning), whichever edge it came through.", unset: "no exact cache (set `exact`, `semantic`, or both)" },
  "models.<alias>.cache.semantic": { text: "The semantic cache: an answer is reused for a last question close in meaning to an earlier one, when everything else (system prompt, earlier turns, tools, parameters, response format) is identical. Entries live in `store.postgres`.", unset: "no semantic cache" },
  "models.<alias>.cache.semantic.embeddingModel": { text: "The alias that embeds the question; its target must embed ([Embeddings](embeddings.md)). The embedding is the caller's: its key's allowlist must include this alias, and its limits and budget count it." },
  "models.<alias>.cache.semantic.threshold": { text: "Least cosine similarity between the question and a stored one for a hit. 0.92 is the usual start for real embedding models; see [Caching](caching.md#the-semantic-cache) for the simulator's." },
  "models.<alias>.cache.semantic.ttlS": { text: "How long an entry is reused, in seconds." },
  "models.<alias>.cache.semantic.maxEntries": { text: "Entries kept per alias and scope; each insert removes the oldest beyond it (at most 100 per insert)." },
  "models.<alias>.cache.exact.ttlS": { text: "How long an entry is reused, in seconds." },
  "models.<alias>.cache.scope": { text: "`key`: an entry is reused only for the virtual key that produced it; `team`: for every key of the producing key's team (a key in no team keeps to its own); `global`: for every caller of the alias. Read [Scope](caching.md#scope-and-its-risk) before choosing `team` or `global`." },
  "models.<alias>.cache.cacheToolCalls": { text: "Also store answers that call tools. `false`: such answers are served and not stored (a tool call depends on state the cache cannot see)." },
  "models.<alias>.dropUnsupportedParams": { text: "`false`: a parameter the provider cannot honour fails the request; `true`: it is dropped and reported (`sluice-dropped-params`; see [Unsupported parameters](providers.md#unsupported-parameters))." },
};

/** Groups of keys used in several places, each documented once. */
export const CONFIG_GROUPS: Readonly<Record<string, { readonly title: string; readonly text: string; readonly keys: Readonly<Record<string, KeyDoc>> }>> = {
  timeouts: {
    title: "Timeouts",
    text: "Upstream phase timeouts, in milliseconds, per upstream attempt; each target merges its own over its alias's over its provider's over the defaults below. Each expiry aborts the upstream request and ends the stream with `UNAVAILABLE` and the message shown (see [Timeouts](routing.md#timeouts)).",
    keys: {
      connectMs: { text: "TCP (and TLS) connection establishment. Expiry: connect timeout: provider P did not accept a connection within N ms.", unset: DEFAULT_TIMEOUTS.connectMs },
      headersMs: { text: "From request sent to response headers received. Expiry: headers timeout: provider P sent no response headers within N ms.", unset: DEFAULT_TIMEOUTS.headersMs },
      firstTokenMs: { text: "From response headers to the first content delta. Expiry: first-token timeout: provider P sent no content within N ms of its response headers (pings are not content).", unset: DEFAULT_TIMEOUTS.firstTokenMs },
      idleMs: { text: "Longest silence between two upstream reads. Expiry: idle timeout: provider P sent nothing for N ms — counted only while the gateway waits on upstream, never while a slow client holds the stream paused; pings count as traffic.", unset: DEFAULT_TIMEOUTS.idleMs },
      totalMs: { text: "The whole upstream exchange. Expiry: total timeout: provider P did not finish within N ms (wall clock).", unset: DEFAULT_TIMEOUTS.totalMs },
    },
  },
  capabilities: {
    title: "Capabilities",
    text: "What a target can do ([Capabilities](routing.md#capabilities)). A request that needs what a target lacks is not sent there; one that no target can serve is refused with `FAILED_PRECONDITION` / 400. Each unset field is the built-in table's for the model name; unknown is taken as able.",
    keys: {
      contextWindow: { text: "Input plus output tokens in one request.", unset: "the table's, else unknown" },
      maxOutputTokens: { text: "Output tokens in one answer (a request whose `max_tokens` asks more is not sent here).", unset: "the table's, else unknown" },
      tools: { text: "Calls tools.", unset: "the table's, else unknown" },
      vision: { text: "Reads images.", unset: "the table's, else unknown" },
      jsonSchema: { text: "Follows a strict JSON schema (structured outputs).", unset: "the table's, else unknown" },
      reasoning: { text: "Takes reasoning controls (effort, thinking budget).", unset: "the table's, else unknown" },
      promptCaching: { text: "Caches prompt prefixes at a lower price (reported in `ListModels`).", unset: "the table's, else unknown" },
    },
  },
  price: {
    title: "Prices",
    text: "USD per million tokens, for the `cost` strategy and budgets (see [Budgets and spend](tenancy.md#budgets-and-spend)).",
    keys: {
      inputPerMTok: { text: "Fresh input." },
      outputPerMTok: { text: "Output." },
      cachedInputPerMTok: { text: "Cached input.", unset: "the input price" },
    },
  },
};
