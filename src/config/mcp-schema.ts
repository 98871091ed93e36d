import { z } from "zod";

/**
 * An MCP server's name in `mcp.servers`: it prefixes its tools'
 * names (`<server>_<tool>`), so it stays within the tool-name rules
 * (SEP-986: 1 to 128 of `A-Za-z0-9_-.`) with room for the tool, and has no
 * `_` of its own so that the prefix is read back without ambiguity.
 */
export const mcpServerName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/, "1 to 32 letters, digits and - (starting with a letter or digit; no _, which separates the server from the tool)");

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");
const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, "an HTTP header name");

/** A glob over exposed tool names (`<server>_<tool>`): `*` matches any run of characters, nothing else is special. */
const toolGlob = z.string().regex(/^[A-Za-z0-9_.*-]{1,160}$/, "letters, digits, _ . - and * only");

/**
 * What a business line, team or key may reach among the MCP servers. Deny
 * by default: no grant anywhere on the way down from the business line to
 * the key, no tool. Where a level grants, a request's tools must pass it
 * too: the levels intersect (mcp/grants.ts).
 */
export const mcpGrantSchema = z
  .strictObject({
    servers: z
      .array(z.string().regex(/^(\*|[A-Za-z0-9][A-Za-z0-9-]{0,31})$/, "a server name or *"))
      .max(256)
      .optional()
      .meta({ description: "Servers (names in `mcp.servers`, or `*`) whose tools the level may see.", unset: "every server" }),
    tools: z
      .strictObject({
        allow: z.array(toolGlob).max(256).optional().meta({ description: "Globs over tool names (`<server>_<tool>`; `*` any run of characters) a tool must match.", unset: "every tool of the servers" }),
        deny: z.array(toolGlob).max(256).optional().meta({ description: "Globs a tool must not match; deny wins over allow.", unset: "none" }),
      })
      .optional()
      .meta({ description: "Which of those servers' tools.", unset: "all of them" }),
  })
  .meta({ description: "MCP tools this level may see and call ([MCP gateway](mcp.md#grants)); levels intersect, and a key under no grant at all sees none." });

/** A per-call price. */
const callPriceSchema = z.strictObject({
  perCall: z.number().min(0).max(1_000).meta({ description: "USD charged per `tools/call`, against the caller's budgets and in the ledger." }),
});

/** Bound on what one tool's `arguments` constraint may be, so a configuration cannot carry a schema bomb either. */
const MAX_ARGUMENT_SCHEMA_CHARS = 65_536;

const toolSettingsSchema = z.strictObject({
  arguments: z
    .looseObject({})
    .refine((s) => JSON.stringify(s).length <= MAX_ARGUMENT_SCHEMA_CHARS, `at most ${MAX_ARGUMENT_SCHEMA_CHARS} characters of JSON`)
    .optional()
    .meta({ description: "A JSON Schema the call's `arguments` must also pass, checked before forwarding; a call that fails it is refused with a JSON-RPC error naming the path.", unset: "the server's own `inputSchema` only" }),
  price: callPriceSchema.optional().meta({ description: "This tool's price.", unset: "the server's price" }),
  auditArguments: z.boolean().default(false).meta({ description: "Write the call's arguments themselves into the audit event (after PII redaction); otherwise only their SHA-256." }),
});

const httpServerSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).meta({ description: "The server's streamable HTTP endpoint (`…/mcp`)." }),
  headers: z.record(headerName, z.string().max(4_096)).optional().meta({ mapKey: "<header>", description: "Headers sent with every request; not for secrets (use `headersFromEnv`).", unset: "none" }),
  headersFromEnv: z
    .record(headerName, envName)
    .optional()
    .meta({ mapKey: "<header>", description: "Headers whose values are read from environment variables at start (`Authorization: MCP_GITHUB_TOKEN`): the gateway's own secret for this server, never the caller's key.", unset: "none" }),
});

const stdioServerSchema = z.strictObject({
  command: z.string().min(1).max(4_096).meta({ description: "The program to start (the gateway starts it, restarts it when it dies, and ends it at shutdown)." }),
  args: z.array(z.string().max(4_096)).max(256).default([]).meta({ description: "Its arguments." }),
  env: z.record(envName, z.string().max(32_768)).optional().meta({ mapKey: "<variable>", description: "Environment variables given to it (beside `PATH` and `HOME`; nothing else of the gateway's).", unset: "only `PATH` and `HOME`" }),
  envFromEnv: z.record(envName, envName).optional().meta({ mapKey: "<variable>", description: "Variables given to it whose values are read from the gateway's environment (`GITHUB_TOKEN: MCP_GITHUB_TOKEN`).", unset: "none" }),
  cwd: z.string().min(1).max(4_096).optional().meta({ description: "Its working directory.", unset: "the gateway's" }),
  maxRestarts: z.number().int().min(0).max(1_000).default(5).meta({ description: "Restarts allowed within `restartWindowMs`; past them the server stays down (health: `down`) until the window has passed." }),
  restartWindowMs: z.number().int().min(1_000).max(86_400_000).default(60_000).meta({ description: "The window `maxRestarts` counts in." }),
  maxStderrBytesPerSecond: z.number().int().min(0).max(104_857_600).default(65_536).meta({ description: "Stderr lines the gateway logs per second, in bytes; past it they are counted and dropped." }),
});

/**
 * Whose identity a call carries at the server: the gateway's own (the
 * `headers` / `headersFromEnv` secret), or each key's own OAuth 2.1 access
 * token, set through the admin API and held sealed (mcp/credentials/).
 */
export const mcpServerAuthSchema = z.strictObject({
  mode: z.enum(["static", "per-key"]).default("static").meta({
    description:
      "`static`: every call carries the gateway's secret for this server (`http.headersFromEnv`). `per-key`: each key's own access token (AdminService.SetMcpCredential), bound to the key's id, this server and `audience`; a key without one is refused. The caller's own key or token is never forwarded.",
  }),
  audience: z
    .string()
    .regex(/^[\x21-\x7e]{1,512}$/, "1 to 512 printable ASCII characters")
    .optional()
    .meta({ description: "The resource (RFC 8707) the per-key tokens were issued for; a token is bound to it, so changing it retires the tokens set before.", unset: "the server's `http.url`" }),
});

export const mcpServerSchema = z
  .strictObject({
    http: httpServerSchema.optional().meta({ description: "A streamable HTTP server. Give exactly one of `http` and `stdio`.", unset: "one of the two" }),
    stdio: stdioServerSchema.optional().meta({ description: "A server the gateway runs as a child process, speaking over stdin and stdout.", unset: "one of the two" }),
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(60_000)
      .meta({ description: "A request to the server (a tool call, a listing) must be answered within this; progress notifications from the server extend it up to `maxTotalTimeoutMs`." }),
    maxTotalTimeoutMs: z.number().int().min(100).max(86_400_000).default(600_000).meta({ description: "The longest a call may run, progress or not." }),
    price: callPriceSchema.optional().meta({ description: "The price of each of its tools' calls.", unset: "free" }),
    tools: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/), toolSettingsSchema)
      .optional()
      .meta({ mapKey: "<tool>", description: "Settings per tool, by the server's own tool name.", unset: "none" }),
    auth: mcpServerAuthSchema.prefault({}).meta({ description: "How the gateway identifies itself (or each key) to this server ([Upstream identity](mcp.md#upstream-identity))." }),
    maxTools: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1_000)
      .meta({ description: "Tools (and prompts, and resources) kept from its listings; past it the listing is cut and the cut counted (a server that lists 10,000 tools does not flood every caller)." }),
  })
  .superRefine((server, ctx) => {
    if ((server.http === undefined) === (server.stdio === undefined)) ctx.addIssue({ code: "custom", path: [], message: "give exactly one of http or stdio" });
    // A child process has no per-request headers: one process serves every key.
    if (server.auth.mode === "per-key" && server.stdio !== undefined) ctx.addIssue({ code: "custom", path: ["auth", "mode"], message: "per-key needs an http server (a stdio server serves every key from one process)" });
  });

export const mcpSchema = z
  .strictObject({
    servers: z.record(mcpServerName, mcpServerSchema).default({}).meta({ mapKey: "<server>", description: "The MCP servers behind `/mcp`, by name; each tool is exposed as `<server>_<tool>`." }),
    maxResultBytes: z
      .number()
      .int()
      .min(1_024)
      .max(268_435_456)
      .default(8_388_608)
      .meta({ description: "Bytes of one upstream answer (a tool result, a resource) the gateway reads; past it the call fails with a JSON-RPC error naming this setting, and nothing is charged beyond the call." }),
    maxSchemaBytes: z.number().int().min(1_024).max(16_777_216).default(262_144).meta({ description: "Bytes of one tool's `inputSchema` (and output schema) kept from a listing; a larger tool is left out and counted." }),
    maxSchemaDepth: z.number().int().min(1).max(256).default(32).meta({ description: "Nesting depth of one tool's `inputSchema`; a deeper tool is left out and counted." }),
    listCacheMs: z.number().int().min(0).max(86_400_000).default(300_000).meta({ description: "How long a server's listing is reused; `notifications/tools/list_changed` from the server ends it at once." }),
    credentialsKeyEnv: envName.optional().meta({
      description:
        "Environment variable holding the secret (32 characters or more) that per-key access tokens are sealed under (AES-256-GCM, a key derived per key id, server and audience), and provider API keys stored with `SetProviderKey` (a key derived per provider; see [Providers](providers.md#provider-credentials-at-run-time)): what the store holds reads as nothing without it. Every replica needs the same value.",
      unset: "none; required when a server has `auth.mode: per-key`, and to store provider keys",
    }),
    sessionTtlMs: z.number().int().min(60_000).max(2_592_000_000).default(86_400_000).meta({ description: "How long an `Mcp-Session-Id` the gateway issued stays valid (it is sealed, and any replica reads it)." }),
  })
  .superRefine((mcp, ctx) => {
    const perKey = Object.entries(mcp.servers).find(([, server]) => server.auth.mode === "per-key");
    if (perKey && mcp.credentialsKeyEnv === undefined) ctx.addIssue({ code: "custom", path: ["credentialsKeyEnv"], message: `server ${perKey[0]} has auth.mode per-key: name the variable holding the secret its tokens are sealed under` });
  })
  .prefault({})
  .meta({ description: "The MCP gateway at `/mcp` (see [MCP gateway](mcp.md)): tools of many MCP servers behind one endpoint, under keys, grants, budgets, the ledger, PII policy and the audit log.", reload: "restart" });

export type McpGrant = z.output<typeof mcpGrantSchema>;
export type McpServerAuth = z.output<typeof mcpServerAuthSchema>;
export type McpServerSettings = z.output<typeof mcpServerSchema>;
export type McpSettings = z.output<typeof mcpSchema>;
