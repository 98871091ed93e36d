import { z } from "zod";
import { PROVIDER_KINDS } from "../core/chat-request.js";
import { complianceSchema, piiPolicySchema } from "./compliance-schema.js";
import { capabilitiesSchema, contextSchema } from "./capabilities-schema.js";

const milliseconds = z.number().int().positive().max(86_400_000);

/** Every upstream phase limit, in milliseconds. See docs/routing.md, "Timeouts". */
export interface TimeoutsConfig {
  /** TCP (and TLS) connection establishment. */
  readonly connectMs: number;
  /** From request sent to response headers received. */
  readonly headersMs: number;
  /** From response headers to the first content delta. */
  readonly firstTokenMs: number;
  /** Longest silence between two upstream reads (pings count as reads). */
  readonly idleMs: number;
  /** Whole upstream exchange, first byte to last. */
  readonly totalMs: number;
}

export const DEFAULT_TIMEOUTS: TimeoutsConfig = {
  connectMs: 5_000,
  headersMs: 30_000,
  firstTokenMs: 60_000,
  idleMs: 30_000,
  totalMs: 600_000,
};

/** limits.maxRequestBytes when neither it nor the deprecated facade.maxBodyBytes is set. */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * limits.maxAnswerBytes when unset: a long answer (a few hundred thousand
 * tokens) fits; an upstream that never stops does not take the heap.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Timeouts as written at provider or model level: each one optional, merged over the level above. */
const partialTimeoutsSchema = z.strictObject({
  connectMs: milliseconds.optional(),
  headersMs: milliseconds.optional(),
  firstTokenMs: milliseconds.optional(),
  idleMs: milliseconds.optional(),
  totalMs: milliseconds.optional(),
});

/**
 * How an Anthropic model is asked to think for a reasoning effort:
 * `adaptive` (`thinking: {type: "adaptive"}` + `output_config.effort`,
 * Claude 4.6 and later) or `budget` (`thinking: {type: "enabled",
 * budget_tokens}`, Claude 4.5 and earlier). Unset: by model name
 * (providers/anthropic/thinking-modes.ts).
 */
export const ANTHROPIC_THINKING = ["adaptive", "budget"] as const;
export type AnthropicThinking = (typeof ANTHROPIC_THINKING)[number];

const thinkingSchema = z.enum(ANTHROPIC_THINKING);

const providerSchema = z.strictObject({
  kind: z.enum(PROVIDER_KINDS),
  /** Base URL including the API version path, e.g. https://api.openai.com/v1 */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** Name of the environment variable holding the API key; never the key itself. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
    .optional(),
  timeouts: partialTimeoutsSchema.optional(),
  /** Streams in flight to this provider at once; more wait in the queue. Unlimited when unset. */
  maxConcurrent: z.number().int().min(1).max(1_000_000).optional(),
  /** The admission queue in front of `maxConcurrent`: FIFO, bounded in length and in wait. */
  queue: z
    .strictObject({
      maxWaiting: z.number().int().min(0).max(1_000_000).default(1024),
      timeoutMs: z.number().int().min(1).max(600_000).default(5000),
    })
    .prefault({}),
  /** Per target (provider and model): `failures` within `windowMs` with no success between them open it for `openMs`. */
  breaker: z
    .strictObject({
      failures: z.number().int().min(1).max(10_000).default(5),
      windowMs: z.number().int().min(1).max(3_600_000).default(30_000),
      openMs: z.number().int().min(1).max(3_600_000).default(15_000),
    })
    .prefault({}),
  /** Anthropic only: the thinking form for every model of this provider (a target's own setting wins). */
  thinking: thinkingSchema.optional(),
  /** Every target of this provider runs where the data may go (a vLLM or Ollama host of your own): the targets local-only requests may use. */
  local: z.boolean().default(false),
});

/** USD per million tokens; feeds the `cost` strategy and budgets. */
const priceSchema = z.strictObject({
  inputPerMTok: z.number().min(0).max(1_000_000),
  outputPerMTok: z.number().min(0).max(1_000_000),
  cachedInputPerMTok: z.number().min(0).max(1_000_000).optional(),
  /** Input written to the provider's prompt cache for five minutes (Anthropic bills 1.25× input). */
  cacheWrite5mPerMTok: z.number().min(0).max(1_000_000).optional(),
  /** Input written to the provider's prompt cache for an hour (Anthropic bills 2× input). */
  cacheWrite1hPerMTok: z.number().min(0).max(1_000_000).optional(),
  /** USD per search a hosted web search tool ran. */
  perWebSearch: z.number().min(0).max(1_000).optional(),
});

const targetSchema = z.strictObject({
  provider: z.string().min(1),
  /** The provider's model id. */
  model: z.string().min(1),
  /** Share of traffic under the `weighted` strategy. */
  weight: z.number().int().min(0).max(1_000_000).default(1),
  price: priceSchema.optional(),
  /** Timeouts for this target, over the alias's and the provider's. */
  timeouts: partialTimeoutsSchema.optional(),
  /** Anthropic only: the thinking form for this model, over the provider's and the model-name table. */
  thinking: thinkingSchema.optional(),
  /** This target runs where the data may go; unset: as its provider says. */
  local: z.boolean().optional(),
  /** What this target can do, over the built-in table for its model name. */
  capabilities: capabilitiesSchema.optional(),
});

/** Whose requests may share an alias's cache entries (docs/caching.md, "Scope"). */
export const CACHE_SCOPES = ["key", "team", "global"] as const;

/** An alias's response cache: the exact cache, the semantic cache, or both. */
const aliasCacheSchema = z
  .strictObject({
    /** The exact cache: an answer is reused for a request identical in everything that shapes it. */
    exact: z
      .strictObject({
        /** How long an entry is reused, in seconds. */
        ttlS: z.number().int().min(1).max(30 * 86_400).default(3_600),
      })
      .optional(),
    /** The semantic cache: an answer is reused for a reworded last question when everything else matches exactly. */
    semantic: z
      .strictObject({
        /** The alias that embeds the question (an alias whose target embeds). */
        embeddingModel: z.string().min(1),
        /** Least cosine similarity for a hit. */
        threshold: z.number().min(0).max(1).default(0.92),
        /** How long an entry is reused, in seconds. */
        ttlS: z.number().int().min(1).max(30 * 86_400).default(3_600),
        /** Entries kept per alias and scope; the oldest go first. */
        maxEntries: z.number().int().min(1).max(10_000_000).default(100_000),
      })
      .optional(),
    /** `key`: a hit never crosses virtual keys; `global`: every caller of the alias shares entries (read the risk in docs/caching.md first). */
    scope: z.enum(CACHE_SCOPES).default("key"),
    /** Also store answers that call tools. Off: a tool call depends on state the cache cannot see. */
    cacheToolCalls: z.boolean().default(false),
  })
  .refine((c) => c.exact !== undefined || c.semantic !== undefined, "set exact, semantic, or both");

/** Who may open /console: nobody, anyone who reaches the port, or whoever has the admin key. */
export const CONSOLE_ACCESS = ["off", "open", "admin"] as const;

export const STRATEGIES = ["priority", "weighted", "least-latency", "least-busy", "cost"] as const;

/**
 * An alias: either one target written inline (`provider`, `model`, the
 * original form) or a `targets` list, with how to choose among them and
 * what to do when one fails.
 */
const modelSchema = z
  .strictObject({
    provider: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    price: priceSchema.optional(),
    /** The single target's capabilities (with `provider`/`model`), over the built-in table. */
    capabilities: capabilitiesSchema.optional(),
    targets: z.array(targetSchema).min(1).max(32).optional(),
    strategy: z.enum(STRATEGIES).default("priority"),
    /** Attempts across all targets (hedges included), only ever before the first delta. Default: one per target. */
    retry: z
      .strictObject({
        maxAttempts: z.number().int().min(1).max(10).optional(),
        baseBackoffMs: z.number().int().min(0).max(60_000).default(100),
        maxBackoffMs: z.number().int().min(0).max(600_000).default(2000),
      })
      .optional(),
    /** Start the next target in parallel when no first delta has come after `afterMs`. */
    hedge: z.strictObject({ afterMs: z.number().int().min(1).max(600_000) }).optional(),
    timeouts: partialTimeoutsSchema.optional(),
    /**
     * Send requests without the parameters a target's provider cannot
     * honour (and say so in the response) instead of failing them with
     * INVALID_ARGUMENT / 400.
     */
    dropUnsupportedParams: z.boolean().default(false),
    /**
     * A hosted tool (web search, code interpreter…) a target can neither run
     * nor replace with its own: `offer` sends the request without it (named
     * in `sluice-dropped-params`), `refuse` fails the request naming it.
     */
    hostedTools: z.enum(["offer", "refuse"]).default("offer"),
    /** Answer repeated requests from a cache (docs/caching.md). */
    cache: aliasCacheSchema.optional(),
    /** Personal data in this alias's requests (docs/compliance.md). */
    pii: piiPolicySchema.optional(),
    /** Serve this alias only from local targets, whatever the request holds. */
    localOnly: z.boolean().default(false),
    /** A conversation longer than the targets' windows: refused, or fitted (docs/routing.md). */
    context: contextSchema.prefault({}),
    /** Each tool result longer than this many tokens is cut to its head and tail, the middle marked as elided. */
    maxToolResultTokens: z.number().int().min(16).max(10_000_000).optional(),
    /** Instructions sent first in every request of this alias, as a system message before the caller's own. */
    systemPrompt: z.string().min(1).max(32_768).optional(),
    /** `auto`: on Anthropic targets, mark the stable prefix (tools, system prompt, oldest turns) for the provider's prompt cache. */
    promptCache: z.enum(["off", "auto"]).default("off"),
    /** Keep a sample of this alias's completed calls (request and answer) for evaluation replay (docs/evaluation.md). */
    record: z
      .strictObject({
        /** The share of completed calls kept, decided per call. */
        sampleRate: z.number().min(0).max(1).default(1),
        /** Calls kept per UTC day at most, per replica. */
        maxPerDay: z.number().int().min(1).max(10_000_000).default(1_000),
      })
      .optional(),
    /** Mirror a sampled share of completed calls to a candidate alias, after the caller has its answer (docs/evaluation.md). */
    shadow: z
      .strictObject({
        /** The candidate alias the calls are mirrored to. */
        alias: z.string().min(1),
        /** The share of completed calls mirrored, decided per call. */
        sampleRate: z.number().min(0).max(1).default(0.01),
        /** The configured key the mirrored calls run as and are charged to (required when keys are configured). */
        key: z.string().min(1).optional(),
        /** Mirrored calls in flight at most on this replica; past it a call is not mirrored (counted). */
        maxInFlight: z.number().int().min(1).max(1_000).default(4),
      })
      .optional(),
  })
  .superRefine((model, ctx) => {
    const inline = model.provider !== undefined || model.model !== undefined;
    if (inline && model.targets) ctx.addIssue({ code: "custom", path: ["targets"], message: "give either provider/model or targets, not both" });
    else if (!inline && !model.targets) ctx.addIssue({ code: "custom", path: [], message: "needs provider and model, or targets" });
    else if (inline && (model.provider === undefined || model.model === undefined)) {
      ctx.addIssue({ code: "custom", path: [model.provider === undefined ? "provider" : "model"], message: "is required with the single-target form" });
    }
  });

const filePath = z.string().min(1);

const tlsSchema = z.strictObject({
  /** PEM certificate chain, leaf first. */
  certFile: filePath,
  /** PEM private key of the leaf certificate. */
  keyFile: filePath,
  /** PEM CA certificates: when set, every client must present a certificate they signed (mTLS). */
  clientCaFile: filePath.optional(),
});

const aliasName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, "letters, digits and . _ : / - only");

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

/** A virtual key's name: what logs, usage records and the admin service call it. Never the key itself. */
export const keyNameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "1 to 64 letters, digits and . _ - (starting with a letter or digit)");

/** Bounds shared by configured keys and keys created through the admin service. */
export const KEY_BOUNDS = {
  maxModels: 1_000,
  maxRequestsPerMinute: 1_000_000,
  maxTokensPerMinute: 1_000_000_000,
  maxConcurrentStreams: 1_000_000,
  /** USD; 1e9 USD is 1e15 micro-dollars, exact in a double and in Redis's 64-bit integers. */
  maxBudgetUsd: 1_000_000_000,
} as const;

export const BUDGET_PERIODS = ["day", "week", "month"] as const;

/** Per-key rate limits; an unset limit is not enforced. */
export const keyLimitsSchema = z.strictObject({
  requestsPerMinute: z.number().int().min(1).max(KEY_BOUNDS.maxRequestsPerMinute).optional(),
  tokensPerMinute: z.number().int().min(1).max(KEY_BOUNDS.maxTokensPerMinute).optional(),
  concurrentStreams: z.number().int().min(1).max(KEY_BOUNDS.maxConcurrentStreams).optional(),
});

/** Spend allowed per UTC calendar period. */
export const keyBudgetSchema = z.strictObject({
  usd: z.number().positive().max(KEY_BOUNDS.maxBudgetUsd),
  period: z.enum(BUDGET_PERIODS).default("month"),
});

/** A team or business line: what its keys may do together, per minute and per budget period. */
const levelFields = {
  name: keyNameSchema,
  /** What its counters, spend and team cache scope are kept under; default: its name. A new id starts the level afresh under the same name. */
  id: keyNameSchema.optional(),
  limits: keyLimitsSchema.prefault({}),
  budget: keyBudgetSchema.optional(),
};

/** What a key or team asks of every request it makes (docs/compliance.md): a PII policy, and local-only routing. */
const complianceFields = {
  pii: piiPolicySchema.optional(),
  localOnly: z.boolean().default(false),
};

/** Teams, and business lines, in one configuration at most (each). */
const MAX_CONFIGURED_LEVELS = 10_000;

const businessLineSchema = z.strictObject(levelFields);

const teamSchema = z.strictObject({
  ...levelFields,
  ...complianceFields,
  /** The business line the team belongs to (at most one). */
  businessLine: keyNameSchema.optional(),
});

const tenantKeySchema = z
  .strictObject({
    name: keyNameSchema,
    /** The team the key belongs to (at most one): its requests count against the team's and the team's business line's limits and budgets too. */
    team: keyNameSchema.optional(),
    /** Environment variable holding the key; the gateway keeps only its SHA-256. */
    keyEnv: envName.optional(),
    /** Or the key's SHA-256 in hex, so the plaintext never reaches the gateway's host. */
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex digits (the SHA-256 of the key)")
      .optional(),
    /** Aliases this key may use; all when unset. */
    models: z.array(aliasName).max(KEY_BOUNDS.maxModels).optional(),
    limits: keyLimitsSchema.prefault({}),
    budget: keyBudgetSchema.optional(),
    ...complianceFields,
  })
  .superRefine((key, ctx) => {
    if ((key.keyEnv === undefined) === (key.sha256 === undefined)) ctx.addIssue({ code: "custom", path: [], message: "give exactly one of keyEnv or sha256" });
  });

/** The one database of every feature that needs one (the semantic cache first). */
const postgresStoreSchema = z
  .strictObject({
    /** postgres:// or postgresql:// of a server shared by every replica (with pgvector); TLS by the URL's sslmode. */
    url: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
    /** Embedded PostgreSQL (PGlite) kept in this directory; unset with no url: in memory, gone at restart. */
    dataDir: z.string().min(1).optional(),
    /** Connections to the server (url mode). */
    poolSize: z.number().int().min(1).max(1_000).default(10),
  })
  .refine((p) => p.url === undefined || p.dataDir === undefined, "give url or dataDir, not both");

const redisStoreSchema = z.strictObject({
  /** redis:// or rediss:// (TLS). */
  url: z.url({ protocol: /^rediss?$/ }),
  /** Prefix of every key the gateway writes, so several gateways (or tests) can share one Redis. */
  prefix: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .default("sluice:"),
  /** open: Redis trouble falls back to per-replica limits; closed: refuse new streams with UNAVAILABLE. */
  failMode: z.enum(["open", "closed"]).default("open"),
  /** Replicas sharing this Redis: fail-open limits are the configured limits divided by this. */
  replicas: z.number().int().min(1).max(10_000).default(1),
  /** Longest wait for one Redis command, from when it was written, before that request is decided by the fail mode. */
  timeoutMs: z.number().int().min(1).max(10_000).default(250),
  /** Timeouts in a row (no answer in between) after which Redis counts as down; a connection error counts at once. */
  downAfterTimeouts: z.number().int().min(1).max(1_000).default(3),
  /** Usage records kept in the Redis Stream (approximately: trimmed with MAXLEN ~). */
  usageStreamMaxLen: z.number().int().min(1_000).max(100_000_000).default(1_000_000),
  /** Usage records held in memory while Redis is unreachable; past it they are dropped and counted. */
  bufferMax: z.number().int().min(0).max(1_000_000).default(10_000),
  /** A stream's concurrency slot and budget reservation are released after this even if its replica died. */
  streamLeaseMs: z.number().int().min(1_000).max(86_400_000).default(900_000),
});

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65_535).default(8080),
        /** How long in-flight streams may finish after SIGTERM before they are ended with UNAVAILABLE. */
        drainMs: z.number().int().min(0).max(600_000).default(10_000),
        /** HTTP/2 PING interval on idle-looking connections; a PING unanswered for two intervals closes the connection. */
        keepaliveMs: z.number().int().min(10).max(3_600_000).default(30_000),
        /** Serve GET /debug/runtime (memory, event-loop delay, streams). Off in production. */
        debugEndpoints: z.boolean().default(false),
        /** A new connection must send complete request headers (HTTP/2: open a stream) within this, or it is closed. */
        headersTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
        /** A request body must arrive whole within this: 408 on the facade, DEADLINE_EXCEEDED on the RPC edges. */
        requestTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
        /** A connection with no request or stream in flight is closed after this (HTTP/1.1 keep-alive, idle HTTP/2 sessions). */
        idleTimeoutMs: z.number().int().min(100).max(3_600_000).default(60_000),
        /** A client that takes no bytes of its response for this long has its stream reset and released. */
        sendTimeoutMs: z.number().int().min(100).max(3_600_000).default(60_000),
        /** Open connections; past it the longest-idle one is closed to make room, or the newcomer gets 503. */
        maxConnections: z.number().int().min(1).max(1_000_000).default(10_000),
        /** Concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS). */
        maxStreamsPerConnection: z.number().int().min(1).max(1_000_000).default(1_000),
        /** TLS on the listener (ALPN h2 and http/1.1); absent = cleartext, for local use. */
        tls: tlsSchema.optional(),
        /** Reload when the configuration file changes, as on SIGHUP. */
        watchConfig: z.boolean().default(false),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
      })
      .prefault({}),
    telemetry: z
      .strictObject({
        /** service.name on spans and metrics (OTEL_SERVICE_NAME overrides). */
        serviceName: z.string().min(1).max(128).default("sluice"),
        metrics: z
          .strictObject({
            /** Serve Prometheus text at GET /metrics. */
            enabled: z.boolean().default(true),
            /** A separate listener for /metrics (e.g. on a private interface); unset = the gateway's own port. */
            port: z.number().int().min(0).max(65_535).optional(),
            host: z.string().min(1).default("127.0.0.1"),
          })
          .prefault({}),
        tracing: z
          .strictObject({
            /** `otlp` exports spans over OTLP/HTTP; unset = `otlp` when OTEL_EXPORTER_OTLP(_TRACES)_ENDPOINT is set, else `none`. */
            exporter: z.enum(["none", "otlp"]).optional(),
            /** OTLP/HTTP traces URL (…/v1/traces); unset = the OTEL_* variables' choice. */
            endpoint: z.url({ protocol: /^https?$/ }).optional(),
            /** Record prompts and completions on spans. Off: no message text ever leaves in telemetry. */
            captureContent: z.boolean().default(false),
          })
          .prefault({}),
      })
      .prefault({}),
    facade: z
      .strictObject({
        /** `: keepalive` comment interval on silent OpenAI-compatible streams (also before the first token). */
        keepaliveMs: z.number().int().min(10).max(300_000).default(15_000),
        /** Deprecated: the old name of limits.maxRequestBytes, still honoured when that is not set. */
        maxBodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).optional(),
      })
      .prefault({}),
    limits: z
      .strictObject({
        /** Largest upstream SSE event accepted, in bytes; larger ones end the stream with an error. */
        maxEventBytes: z.number().int().min(1024).default(1_048_576),
        /** Largest answer held whole in memory (a non-streamed response, a batch line, a recording), in bytes. */
        maxAnswerBytes: z.number().int().min(1024).max(256 * 1024 * 1024).default(DEFAULT_MAX_ANSWER_BYTES),
        /** Largest request body on every edge (RESOURCE_EXHAUSTED / 413), also the largest message after decompression. */
        maxRequestBytes: z.number().int().min(1024).max(256 * 1024 * 1024).optional(),
        /** Fields, list items and JSON values in one request, counted before decoding (RESOURCE_EXHAUSTED / 413). */
        maxRequestElements: z.number().int().min(100).max(10_000_000).default(20_000),
        /** Nesting of JSON objects and arrays in tool schemas (INVALID_ARGUMENT / 400 naming the tool). */
        maxJsonDepth: z.number().int().min(4).max(512).default(32),
      })
      .prefault({}),
    /** Virtual keys and the admin service. Any key configured (or the admin service on) makes every edge require a key. */
    auth: z
      .strictObject({
        /** Environment variable holding the admin key; enables sluice.admin.v1.AdminService. */
        adminKeyEnv: envName.optional(),
        keys: z.array(tenantKeySchema).max(10_000).default([]),
        /** Teams, each in at most one business line (docs/tenancy.md, "Teams and business lines"). */
        teams: z.array(teamSchema).max(MAX_CONFIGURED_LEVELS).default([]),
        /** Business lines: the top of the hierarchy. */
        businessLines: z.array(businessLineSchema).max(MAX_CONFIGURED_LEVELS).default([]),
        /** Tag keys kept for cost allocation (sluice-tags header, body metadata, gRPC metadata.labels); other tags are dropped and named in sluice-tags-dropped. */
        tagKeys: z
          .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, "1 to 64 letters, digits and _ . : - (starting with a letter or digit)"))
          .max(32)
          .default([]),
        /** The HTTP status of a request refused because a budget is spent: 402 (not retried by SDKs), or 429 as before 402 existed. */
        budgetExceededStatus: z.literal([402, 429]).default(402),
      })
      .prefault({}),
    /** The operators' console at /console (docs/operations.md, "Console"). */
    console: z
      .strictObject({
        /** off; open (no key: the page, and WatchStats, for anyone who reaches the port); admin (the admin key). Default: admin with an admin key, else off. */
        access: z.enum(CONSOLE_ACCESS).optional(),
        /** WatchStats streams at once (each sends a snapshot per second); more are refused with RESOURCE_EXHAUSTED. */
        maxWatchers: z.number().int().min(1).max(1_000).default(16),
      })
      .prefault({}),
    /** Resumable streams (docs/streams.md, "Resumable streams"): kept in store.redis when configured, else in process. */
    resume: z
      .strictObject({
        /** How long a resumable stream's upstream outlives its last reader; nobody resuming by then cancels it. */
        detachGraceMs: z.number().int().min(0).max(3_600_000).default(60_000),
        /** How long a resumable stream's messages are kept after its last one. */
        retentionMs: z.number().int().min(1_000).max(86_400_000).default(300_000),
        /** Stored messages per stream; past it the stream is no longer resumable. */
        maxBacklogMessages: z.number().int().min(16).max(1_000_000).default(10_000),
        /** Stored bytes per stream (JSON); past it the stream is no longer resumable. */
        maxBacklogBytes: z.number().int().min(1_024).max(1_073_741_824).default(4_194_304),
        /** ResumeStream calls (and facade resumes) served at once per replica; more get RESOURCE_EXHAUSTED / 429. */
        maxReaders: z.number().int().min(1).max(100_000).default(256),
      })
      .prefault({}),
    /** The response cache's shared settings; aliases opt in with models.<alias>.cache (docs/caching.md). */
    cache: z
      .strictObject({
        /** Longest a lookup may take; past it the request is a miss (counted as an error), never a failure. */
        lookupTimeoutMs: z.number().int().min(1).max(10_000).default(50),
        /** Charge a hit as if the provider had answered. Off: a hit costs nothing and its usage record carries the cost saved. */
        chargeHits: z.boolean().default(false),
        /** Largest entry stored, in bytes as a store holds it (sealed); larger answers are not cached. */
        maxEntryBytes: z.number().int().min(1_024).max(64 * 1024 * 1024).default(1_048_576),
        /** Memory for entries when there is no store.redis (least recently used go first). */
        maxMemoryBytes: z.number().int().min(65_536).max(16 * 1024 * 1024 * 1024).default(67_108_864),
        /** Bytes of exact-cache entries in store.redis, every alias together (least recently used go first). */
        redisMaxBytes: z.number().int().min(65_536).max(1024 * 1024 * 1024 * 1024).default(268_435_456),
        /** Bytes of one alias's exact-cache entries, in Redis or in memory (its least recently used go first). */
        aliasMaxBytes: z.number().int().min(65_536).max(1024 * 1024 * 1024 * 1024).default(67_108_864),
        /** Longest last question (characters) the semantic cache embeds; longer ones get the exact cache only. */
        maxEmbedChars: z.number().int().min(1).max(1_000_000).default(8_192),
      })
      .prefault({}),
    /** Budget alerts: thresholds of each budget (key, team, business line) announced once per period (docs/tenancy.md, "Budget alerts"). */
    alerts: z
      .strictObject({
        /** Fractions of a budget whose crossing is announced, once per period each. */
        thresholds: z.array(z.number().gt(0).max(1)).max(10).default([0.5, 0.8, 1]),
        /** Where alerts are POSTed as JSON, signed with HMAC-SHA256; none: metrics and log lines only. */
        webhook: z
          .strictObject({
            /** http:// or https:// */
            url: z.url({ protocol: /^https?$/ }),
            /** Environment variable holding the signing secret (16 characters or more). */
            secretEnv: envName,
            /** Longest one delivery attempt may take. */
            timeoutMs: z.number().int().min(100).max(60_000).default(5_000),
            /** Attempts per alert (with doubling backoff from 1 s); then it is dropped and counted. */
            maxAttempts: z.number().int().min(1).max(20).default(6),
            /** Alerts waiting for delivery at most; past it new ones are dropped and counted. */
            queueMax: z.number().int().min(1).max(100_000).default(1_000),
          })
          .optional(),
      })
      .prefault({}),
    /** The durable spend ledger: one row per charged call in store.postgres (docs/tenancy.md, "The spend ledger"). */
    ledger: z
      .strictObject({
        /** Write the ledger. Default: on when store.postgres is configured (an in-memory database would not be durable). */
        enabled: z.boolean().optional(),
        /** Rows older than this many days are removed (hourly, in bounded batches). */
        retentionDays: z.number().int().min(1).max(36_500).default(400),
        /** Records written per INSERT at most. */
        batchSize: z.number().int().min(1).max(5_000).default(500),
        /** How often new records are looked for and written. */
        flushMs: z.number().int().min(10).max(60_000).default(500),
        /** With store.redis: entries a replica read but did not acknowledge for this long are taken over by another (it died mid-batch); a replica's copies of what it settled are looked up in the ledger after this long. */
        claimIdleMs: z.number().int().min(100).max(3_600_000).default(30_000),
        /** Without store.redis: records held in memory while the database is away (past it new ones are dropped and counted); with it: copies of what this replica put in the usage stream, held until seen in the ledger. */
        bufferMax: z.number().int().min(100).max(10_000_000).default(100_000),
      })
      .prefault({}),
    /** The OpenAI Batch API on the facade: files and batches in the database, lines run on a queue the replicas share (BullMQ, with store.redis and store.postgres) or in process (docs/batches.md). */
    batch: z
      .strictObject({
        /** Bytes of one uploaded batch file at most (checked before the upload is parsed). */
        maxFileBytes: z.number().int().min(1_024).max(200 * 1024 * 1024).default(100 * 1024 * 1024),
        /** Lines (requests) of one batch file at most. */
        maxLines: z.number().int().min(1).max(50_000).default(50_000),
        /** Bytes of one line of a batch file at most. */
        maxLineBytes: z.number().int().min(256).max(16 * 1024 * 1024).default(1024 * 1024),
        /** Batches one key may have not yet finished (validating, in_progress, finalizing, cancelling). */
        maxBatchesPerKey: z.number().int().min(1).max(1_000).default(10),
        /** Bytes one key may upload in batch files per UTC day, counted as they are stored; past it uploads are refused (429) until 00:00 UTC. */
        maxUploadBytesPerDay: z.number().int().min(1_024).max(1024 ** 4).default(1024 ** 3),
        /** Batch files (uploads) one key may store at once; one more is refused (429) until one is deleted. */
        maxFilesPerKey: z.number().int().min(1).max(100_000).default(100),
        /** Lines run at once by this gateway, over all batches. */
        concurrency: z.number().int().min(1).max(256).default(4),
        /** With store.redis and store.postgres: how long a line stays claimed by a replica that stopped answering before another takes it. */
        leaseMs: z.number().int().min(500).max(600_000).default(30_000),
        /** The share of each provider's maxConcurrent batch lines may take; they start only while no interactive call waits. */
        maxShare: z.number().min(0.01).max(1).default(0.25),
      })
      .prefault({}),
    /** Custom PII detectors and the audit log (docs/compliance.md). */
    compliance: complianceSchema,
    /** Where limits, spend, usage and runtime keys are kept; absent = in process (one replica). */
    store: z.strictObject({ redis: redisStoreSchema.optional(), postgres: postgresStoreSchema.optional() }).optional(),
    providers: z.record(aliasName, providerSchema).refine((p) => Object.keys(p).length > 0, "at least one provider"),
    models: z.record(aliasName, modelSchema).refine((m) => Object.keys(m).length > 0, "at least one model alias"),
  });

/** The configuration file as written (before defaults are applied). */
export type ConfigInput = z.input<typeof configSchema>;
export type ConfigFile = z.output<typeof configSchema>;
