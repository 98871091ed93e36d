/** An OpenAPI security requirement list: any one entry suffices; `{}` means none is needed. */
export type Security = readonly Record<string, readonly string[]>[];

/**
 * The ways a caller proves who it is, as the edges read them. A virtual
 * key goes in `authorization: Bearer` (OpenAI's SDKs), `x-api-key`
 * (Anthropic's) or `x-goog-api-key` (Google's); the admin key only in
 * `authorization: Bearer`.
 */
export const SECURITY_SCHEMES = {
  virtualKey: {
    type: "http",
    scheme: "bearer",
    description: "A virtual key (docs/tenancy.md). Needed once the configuration names any key (auth.keys, or auth.adminKeyEnv); without one the edges are open.",
  },
  virtualKeyHeader: { type: "apiKey", in: "header", name: "x-api-key", description: "The same virtual key as Anthropic's SDK sends it." },
  googleKeyHeader: { type: "apiKey", in: "header", name: "x-goog-api-key", description: "The same virtual key as Google's SDKs send it (the Gemini routes also read `?key=`)." },
  adminKey: { type: "http", scheme: "bearer", description: "The admin key (auth.adminKeyEnv): the admin service and the admin CSV routes." },
} as const;

/** A virtual key in any header the edges read, or none while the gateway has no key configured. */
export const KEY: Security = [{ virtualKey: [] }, { virtualKeyHeader: [] }, { googleKeyHeader: [] }, {}];
export const ADMIN: Security = [{ adminKey: [] }];
export const OPEN: Security = [];
/** WatchStats: the admin key, or nothing when the console is open (console.access: open). */
export const ADMIN_OR_OPEN_CONSOLE: Security = [{ adminKey: [] }, {}];
