import { z } from "zod";

const milliseconds = z.number().int().positive().max(86_400_000);

/** Every upstream phase limit, in milliseconds. See README "Timeouts". */
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

/** Timeouts as written at provider or model level: each one optional, merged over the level above. */
const partialTimeoutsSchema = z.strictObject({
  connectMs: milliseconds.optional(),
  headersMs: milliseconds.optional(),
  firstTokenMs: milliseconds.optional(),
  idleMs: milliseconds.optional(),
  totalMs: milliseconds.optional(),
});

const providerSchema = z.strictObject({
  kind: z.enum(["openai", "anthropic", "gemini"]),
  /** Base URL including the API version path, e.g. https://api.openai.com/v1 */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** Name of the environment variable holding the API key; never the key itself. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
    .optional(),
  timeouts: partialTimeoutsSchema.optional(),
});

const modelSchema = z.strictObject({
  provider: z.string().min(1),
  /** The provider's model id. */
  model: z.string().min(1),
  timeouts: partialTimeoutsSchema.optional(),
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

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65_535).default(8080),
        /** How long in-flight streams may finish after SIGTERM before they are ended with UNAVAILABLE. */
        drainMs: z.number().int().min(0).max(600_000).default(10_000),
        /** HTTP/2 PING interval on idle-looking connections; a PING unanswered by the next one closes the connection. */
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
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
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
        /** Largest request body on every edge (RESOURCE_EXHAUSTED / 413), also the largest message after decompression. */
        maxRequestBytes: z.number().int().min(1024).max(256 * 1024 * 1024).optional(),
        /** Fields, list items and JSON values in one request, counted before decoding (RESOURCE_EXHAUSTED / 413). */
        maxRequestElements: z.number().int().min(100).max(10_000_000).default(20_000),
        /** Nesting of JSON objects and arrays in tool schemas (INVALID_ARGUMENT / 400 naming the tool). */
        maxJsonDepth: z.number().int().min(4).max(512).default(32),
      })
      .prefault({}),
    providers: z.record(aliasName, providerSchema).refine((p) => Object.keys(p).length > 0, "at least one provider"),
    models: z.record(aliasName, modelSchema).refine((m) => Object.keys(m).length > 0, "at least one model alias"),
  });

/** The configuration file as written (before defaults are applied). */
export type ConfigInput = z.input<typeof configSchema>;
export type ConfigFile = z.output<typeof configSchema>;
