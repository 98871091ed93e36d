import { z } from "zod";
import { PROVIDER_KINDS } from "../core/chat-request.js";
import { azureSchema } from "./azure-schema.js";
import { bedrockSchema } from "./bedrock-schema.js";
import { capabilitiesSchema, contextSchema } from "./capabilities-schema.js";
import { catalogRefSchema, catalogSettingsSchema } from "./catalog-schema.js";
import { complianceSchema, piiPolicySchema } from "./compliance-schema.js";
import { mcpGrantSchema, mcpSchema } from "./mcp-schema.js";
import { priceSchema } from "./price-schema.js";
import { providerBaseUrl } from "./provider-base-url.js";
import { PRESET_NAMES } from "./provider-presets.js";
import { vertexSchema } from "./vertex-schema.js";
import { workersSchema } from "./workers-schema.js";

const milliseconds = z.number().int().positive().max(86_400_000);

/** Every upstream phase limit, in milliseconds, each decided (docs/routing.md, "Timeouts"); what each means is on partialTimeoutsSchema. */
export type TimeoutsConfig = Required<z.output<typeof partialTimeoutsSchema>>;

/** Each phase's limit where no level sets one; buildConfig's merge into TimeoutsConfig checks that every phase has one. */
export const DEFAULT_TIMEOUTS = {
  connectMs: 5_000,
  headersMs: 30_000,
  firstTokenMs: 60_000,
  idleMs: 30_000,
  totalMs: 600_000,
} as const;

/** limits.maxRequestBytes when neither it nor the deprecated facade.maxBodyBytes is set. */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * limits.maxAnswerBytes when unset: a long answer (a few hundred thousand
 * tokens) fits; an upstream that never stops does not take the heap.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Timeouts as written at provider or model level: each one optional, merged over the level above. */
const partialTimeoutsSchema = z
  .strictObject({
    connectMs: milliseconds.optional().meta({ description: "TCP (and TLS) connection establishment. Expiry: connect timeout: provider P did not accept a connection within N ms.", unset: DEFAULT_TIMEOUTS.connectMs }),
    headersMs: milliseconds.optional().meta({ description: "From request sent to response headers received. Expiry: headers timeout: provider P sent no response headers within N ms.", unset: DEFAULT_TIMEOUTS.headersMs }),
    firstTokenMs: milliseconds
      .optional()
      .meta({ description: "From response headers to the first content delta. Expiry: first-token timeout: provider P sent no content within N ms of its response headers (pings are not content).", unset: DEFAULT_TIMEOUTS.firstTokenMs }),
    idleMs: milliseconds.optional().meta({
      description:
        "Longest silence between two upstream reads. Expiry: idle timeout: provider P sent nothing for N ms — counted only while the gateway waits on upstream, never while a slow client holds the stream paused; pings count as traffic.",
      unset: DEFAULT_TIMEOUTS.idleMs,
    }),
    totalMs: milliseconds.optional().meta({ description: "The whole upstream exchange. Expiry: total timeout: provider P did not finish within N ms (wall clock).", unset: DEFAULT_TIMEOUTS.totalMs }),
  })
  .meta({
    group: "timeouts",
    title: "Timeouts",
    description:
      "Upstream phase timeouts, in milliseconds, per upstream attempt; each target merges its own over its alias's over its provider's over the defaults below. Each expiry aborts the upstream request and ends the stream with `UNAVAILABLE` and the message shown (see [Timeouts](routing.md#timeouts)).",
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

const providerSchema = z
  .strictObject({
    kind: z.enum(PROVIDER_KINDS).meta({
      description:
        "Wire format of the provider: `openai` (any Chat Completions server: OpenAI, vLLM, llama.cpp, Ollama, Groq, DeepSeek…), `anthropic`, `gemini`, or `openai-responses` (an upstream's `/v1/responses`: reasoning items, custom and hosted tools reach it as they are; see [Providers](providers.md#openai-responses-upstream)).",
    }),
    baseUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .meta({ description: "Base URL including the version path (`…/v1`).", unset: "what the kind's settings imply (`azure`, `bedrock`, `vertex`); required for the other kinds" }),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .optional()
      .meta({ description: "Environment variable with the API key, sent in the provider's own header; the NAME of the variable, never the key itself. Unset variable = start-up failure.", unset: "no key sent (e.g. a local server)" }),
    timeouts: partialTimeoutsSchema.optional().meta({ description: "Phase timeouts for every alias of this provider.", unset: "the defaults" }),
    maxConcurrent: z.number().int().min(1).max(1_000_000).optional().meta({ description: "Streams in flight to this provider at once; more wait in its queue.", unset: "unlimited" }),
    queue: z
      .strictObject({
        maxWaiting: z.number().int().min(0).max(1_000_000).default(1024).meta({ description: "Requests waiting at most." }),
        timeoutMs: z.number().int().min(1).max(600_000).default(5000).meta({ description: "How long each may wait." }),
      })
      .prefault({})
      .meta({ description: "The admission queue behind `maxConcurrent`: FIFO; a full queue or a wait that runs out sheds the request." }),
    breaker: z
      .strictObject({
        failures: z.number().int().min(1).max(10_000).default(5).meta({ description: "Failures that open it." }),
        windowMs: z.number().int().min(1).max(3_600_000).default(30_000).meta({ description: "The window they must fall in." }),
        openMs: z.number().int().min(1).max(3_600_000).default(15_000).meta({ description: "How long it stays open; then one request probes (half-open)." }),
      })
      .prefault({})
      .meta({ description: "The circuit breaker, per target (provider and model): `failures` failures within `windowMs` with no success between them open it for `openMs` (see [Routing, retries and failover](routing.md))." }),
    thinking: thinkingSchema.optional().meta({
      description: "`anthropic` (and Claude on `vertex`) only: `adaptive` or `budget`, the thinking form for a reasoning effort on every model of this provider (see [Anthropic thinking](providers.md#anthropic-thinking)).",
      unset: "by model name",
    }),
    local: z.boolean().default(false).meta({ description: "Every target of this provider runs where the data may go (a vLLM or Ollama host of your own): the targets local-only requests may use." }),
    azure: azureSchema.optional().meta({ description: "`azure-openai` only: the resource, API version and authentication (see [Azure OpenAI](providers.md#azure-openai)).", unset: "none" }),
    bedrock: bedrockSchema.optional().meta({ description: "`bedrock` only: the region and credentials (see [AWS Bedrock](providers.md#aws-bedrock)).", unset: "none" }),
    vertex: vertexSchema.optional().meta({ description: "`vertex` only: the project, location and credentials (see [Google Vertex AI](providers.md#google-vertex-ai)).", unset: "none" }),
    preset: z.enum(PRESET_NAMES).optional().meta({
      description:
        "`openai` only: a named OpenAI-compatible cloud; it gives `baseUrl`, the usual `apiKeyEnv` and the cloud's wire quirks, and fields written beside it win (see [OpenAI-compatible presets](providers.md#openai-compatible-presets)).",
      unset: "none",
    }),
  })
  .superRefine((p, ctx) => {
    if (p.preset !== undefined && p.kind !== "openai") ctx.addIssue({ code: "custom", path: ["preset"], message: "a preset is an OpenAI-compatible cloud: kind must be openai" });
    if (providerBaseUrl(p) === undefined) ctx.addIssue({ code: "custom", path: ["baseUrl"], message: `required for kind ${p.kind}` });
    if (p.kind === "bedrock" && !p.bedrock) ctx.addIssue({ code: "custom", path: ["bedrock"], message: "required for kind bedrock (its region)" });
  });

const targetSchema = z.strictObject({
  provider: z.string().min(1).meta({ description: "A provider's name." }),
  model: z.string().min(1).meta({ description: "The provider's model id." }),
  weight: z.number().int().min(0).max(1_000_000).default(1).meta({ description: "Share of traffic under the `weighted` strategy." }),
  catalog: catalogRefSchema
    .optional()
    .meta({ description: "The catalog entry this target is, by id, when its model id does not say (an Azure deployment's own name, a cloud's id for an open model).", unset: "the entry its model id names, if any" }),
  price: priceSchema.optional().meta({ description: "Its price, whole: it replaces the catalog entry's.", unset: "the catalog entry's, else unpriced (costs nothing, last for `cost`)" }),
  timeouts: partialTimeoutsSchema.optional().meta({ description: "Timeouts for this target, over the alias's and the provider's.", unset: "the alias's" }),
  thinking: thinkingSchema.optional().meta({ description: "On an `anthropic` provider (or Claude on `vertex`): the thinking form for this model, over the provider's.", unset: "the provider's, else by model name" }),
  local: z.boolean().optional().meta({ description: "This target runs where the data may go.", unset: "the provider's `local`" }),
  capabilities: capabilitiesSchema.optional().meta({ description: "What this target can do, field by field over its catalog entry's.", unset: "the catalog entry's, else unknown (taken as able)" }),
});

/** Whose requests may share an alias's cache entries (docs/caching.md, "Scope"). */
export const CACHE_SCOPES = ["key", "team", "global"] as const;

/** An alias's response cache: the exact cache, the semantic cache, or both. */
const aliasCacheSchema = z
  .strictObject({
    exact: z
      .strictObject({
        ttlS: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400)
          .default(3_600)
          .meta({ description: "How long an entry is reused, in seconds." }),
      })
      .optional()
      .meta({
        description: "The exact cache: an answer is reused for a request identical in everything that shapes it (messages, tools, parameters, response format, reasoning), whichever edge it came through.",
        unset: "no exact cache (set `exact`, `semantic`, or both)",
      }),
    semantic: z
      .strictObject({
        embeddingModel: z
          .string()
          .min(1)
          .meta({ description: "The alias that embeds the question; its target must embed ([Embeddings](embeddings.md)). The embedding is the caller's: its key's allowlist must include this alias, and its limits and budget count it." }),
        threshold: z
          .number()
          .min(0)
          .max(1)
          .default(0.92)
          .meta({ description: "Least cosine similarity between the question and a stored one for a hit. 0.92 is the usual start for real embedding models; see [Caching](caching.md#the-semantic-cache) for the simulator's." }),
        ttlS: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400)
          .default(3_600)
          .meta({ description: "How long an entry is reused, in seconds." }),
        maxEntries: z.number().int().min(1).max(10_000_000).default(100_000).meta({ description: "Entries kept per alias and scope; each insert removes the oldest beyond it (at most 100 per insert)." }),
      })
      .optional()
      .meta({
        description:
          "The semantic cache: an answer is reused for a last question close in meaning to an earlier one, when everything else (system prompt, earlier turns, tools, parameters, response format) is identical. Entries live in `store.postgres`.",
        unset: "no semantic cache",
      }),
    scope: z.enum(CACHE_SCOPES).default("key").meta({
      description:
        "`key`: an entry is reused only for the virtual key that produced it; `team`: for every key of the producing key's team (a key in no team keeps to its own); `global`: for every caller of the alias. Read [Scope](caching.md#scope-and-its-risk) before choosing `team` or `global`.",
    }),
    cacheToolCalls: z.boolean().default(false).meta({ description: "Also store answers that call tools. `false`: such answers are served and not stored (a tool call depends on state the cache cannot see)." }),
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
    provider: z.string().min(1).optional().meta({ description: "The single-target form: where the alias goes (a provider's name).", unset: "`targets` instead" }),
    model: z.string().min(1).optional().meta({ description: "The single-target form: the provider's model id.", unset: "`targets` instead" }),
    catalog: catalogRefSchema.optional().meta({ description: "The single-target form: the catalog entry its target is, by id.", unset: "the entry its model id names, if any" }),
    price: priceSchema.optional().meta({ description: "The single-target form: its price, whole: it replaces the catalog entry's.", unset: "the catalog entry's, else unpriced (costs nothing, last for `cost`)" }),
    capabilities: capabilitiesSchema.optional().meta({ description: "The single-target form: what its target can do, field by field over its catalog entry's.", unset: "the catalog entry's, else unknown (taken as able)" }),
    targets: z.array(targetSchema).min(1).max(32).optional().meta({ description: "The targets, in failover order for `priority`.", unset: "the single-target form instead" }),
    strategy: z.enum(STRATEGIES).default("priority").meta({ description: "How a request picks among the targets: see [Routing, retries and failover](routing.md)." }),
    retry: z
      .strictObject({
        maxAttempts: z.number().int().min(1).max(10).optional().meta({ description: "Attempts across all targets, hedges included.", unset: "one per target, so a single-target alias is not retried unless asked" }),
        baseBackoffMs: z.number().int().min(0).max(60_000).default(100).meta({ description: "Full-jitter exponential backoff: a random delay up to `min(maxBackoffMs, baseBackoffMs × 2^(tries−1))`." }),
        maxBackoffMs: z.number().int().min(0).max(600_000).default(2000).meta({ description: "The backoff's ceiling." }),
      })
      .optional()
      .meta({ description: "Retries and failover, only ever before the first delta.", unset: "one attempt per target, default backoff" }),
    hedge: z
      .strictObject({ afterMs: z.number().int().min(1).max(600_000).meta({ description: "Start the next target in parallel when no first delta has come by then." }) })
      .optional()
      .meta({ description: "Hedged first token.", unset: "off" }),
    timeouts: partialTimeoutsSchema.optional().meta({ description: "Per-alias override of the provider's timeouts (a target's own `timeouts` go over these).", unset: "the provider's" }),
    dropUnsupportedParams: z
      .boolean()
      .default(false)
      .meta({ description: "`false`: a parameter the provider cannot honour fails the request; `true`: it is dropped and reported (`sluice-dropped-params`; see [Unsupported parameters](providers.md#unsupported-parameters))." }),
    hostedTools: z.enum(["offer", "refuse"]).default("offer").meta({
      description:
        "A declared hosted tool (`web_search`, `code_interpreter`, Anthropic's server tools) that a target can neither run nor replace with its own equivalent. `offer`: the request goes without it, named in `sluice-dropped-params` (a declaration is an offer; a `tool_choice` that forces the tool is refused anyway); `refuse`: the request fails naming it.",
    }),
    cache: aliasCacheSchema.optional().meta({ description: "The alias's response cache ([Caching](caching.md)).", unset: "no cache: every request goes upstream" }),
    pii: piiPolicySchema.optional().meta({ description: "The alias's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" }),
    localOnly: z.boolean().default(false).meta({ description: 'Every request to this alias is served by local targets only, whatever it holds (docs/compliance.md, "Local targets").' }),
    context: contextSchema.prefault({}).meta({ description: "A conversation longer than every target's context window ([Fitting the context window](routing.md#fitting-the-context-window))." }),
    maxToolResultTokens: z
      .number()
      .int()
      .min(16)
      .max(10_000_000)
      .optional()
      .meta({ description: "Each tool result longer than this many tokens is cut to its head and tail, the middle replaced by a marker saying how much was elided (retrieval results).", unset: "tool results are sent whole" }),
    systemPrompt: z.string().min(1).max(32_768).optional().meta({
      description:
        "Instructions sent first in every request of this alias, as a system message before the caller's own: a house style, a safety rule, a product's persona. Counted in the prompt (the context fit, the reservation and the usage), part of the response cache's key, and never screened for personal data (it is the operator's text).",
      unset: "requests are sent with the caller's instructions only",
    }),
    promptCache: z.enum(["off", "auto"]).default("off").meta({
      description:
        "`auto`: on `anthropic` targets, Sluice marks the stable prefix of each request (tools, system prompt, then the conversation so far) with `cache_control` breakpoints, within Anthropic's limit of four, so a repeated prefix is billed at the cached rate ([Routing](routing.md#prompt-caching)). OpenAI and Gemini cache prefixes without being asked and report cached tokens either way; `off` sends nothing extra.",
    }),
    record: z
      .strictObject({
        sampleRate: z.number().min(0).max(1).default(1).meta({ description: "The share of completed calls kept, drawn per call." }),
        maxPerDay: z.number().int().min(1).max(10_000_000).default(1_000).meta({ description: "Calls kept per UTC day at most, counted on each replica." }),
      })
      .optional()
      .meta({
        description:
          "Keep a sample of this alias's completed calls in `store.postgres` for evaluation replay ([Evaluation](evaluation.md)): the request as the provider saw it (PII placeholders under a `redact` policy, secrets always replaced) and the answer. Calls that fail, batch lines and replays themselves are never kept.",
        unset: "nothing is recorded",
      }),
    shadow: z
      .strictObject({
        alias: z.string().min(1).meta({ description: "The candidate alias; not this alias itself." }),
        sampleRate: z.number().min(0).max(1).default(0.01).meta({ description: "The share of completed calls mirrored, drawn per call." }),
        key: z.string().min(1).optional().meta({ description: "The configured key mirrored calls run as: its allowlist, limits and budget apply and it is charged. Required when keys are configured.", unset: "no key (only without keys)" }),
        maxInFlight: z
          .number()
          .int()
          .min(1)
          .max(1_000)
          .default(4)
          .meta({ description: 'Mirrored calls in flight at most on this replica; a call sampled past it is not mirrored (counted in `sluice_shadow_calls_total{sluice_shadow_result="skipped"}`).' }),
      })
      .optional()
      .meta({
        description:
          "Shadow traffic ([Evaluation](evaluation.md#shadow-traffic)): a sampled share of this alias's completed calls is sent again to a candidate alias after the caller has its answer, at batch priority, and both answers are kept side by side for GetShadowReport. The caller's latency and answer are never affected.",
        unset: "nothing is mirrored",
      }),
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
  certFile: filePath.meta({ description: "PEM certificate chain, leaf first." }),
  keyFile: filePath.meta({ description: "PEM private key of the leaf (read once at start-up, never logged)." }),
  clientCaFile: filePath.optional().meta({ description: "PEM CA certificates; every client must then present a certificate one of them signed (mutual TLS).", unset: "no client certificates" }),
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

/**
 * Rate limits with the same bounds wherever they are set; an unset limit is
 * not enforced. `of` is whose requests they count, as the reference says it
 * (a key's own, or " of all its keys" for a team or business line).
 */
function limitsSchema(of: string) {
  return z.strictObject({
    requestsPerMinute: z
      .number()
      .int()
      .min(1)
      .max(KEY_BOUNDS.maxRequestsPerMinute)
      .optional()
      .meta({ description: `Requests${of} admitted in any 60-second window.`, unset: "no limit" }),
    tokensPerMinute: z
      .number()
      .int()
      .min(1)
      .max(KEY_BOUNDS.maxTokensPerMinute)
      .optional()
      .meta({ description: `Input + output tokens${of} in any 60-second window, reserved at admission, reconciled at the end.`, unset: "no limit" }),
    concurrentStreams: z
      .number()
      .int()
      .min(1)
      .max(KEY_BOUNDS.maxConcurrentStreams)
      .optional()
      .meta({ description: `Streams${of} in flight at once.`, unset: "no limit" }),
  });
}

/** Per-key rate limits. */
export const keyLimitsSchema = limitsSchema("");

/** A team's or business line's rate limits, counting every key below it. */
export const levelLimitsSchema = limitsSchema(" of all its keys");

/** Spend allowed per UTC calendar period. */
export const keyBudgetSchema = z.strictObject({
  usd: z.number().positive().max(KEY_BOUNDS.maxBudgetUsd).meta({ description: "Spend allowed per period, in US dollars (kept as integer micro-dollars)." }),
  period: z.enum(BUDGET_PERIODS).default("month").meta({ description: "`day`, `week` (ISO, from Monday 00:00 UTC) or `month`: UTC calendar periods." }),
});

/** Teams, and business lines, in one configuration at most (each). */
const MAX_CONFIGURED_LEVELS = 10_000;

/** A business line: what the keys of its teams may do together, per minute and per budget period. */
const businessLineSchema = z.strictObject({
  name: keyNameSchema.meta({ description: "1 to 64 letters, digits and `. _ -`, unique among business lines; what refusals, usage records and reports call the business line." }),
  id: keyNameSchema.optional().meta({ description: 'What the business line\'s counters and spend are kept under (docs/tenancy.md, "Names and ids"); unique among business lines.', unset: "the business line's name" }),
  limits: levelLimitsSchema.prefault({}).meta({ description: "Limits on the business line as a whole; an unset limit is not enforced." }),
  budget: keyBudgetSchema.optional().meta({ description: "Spend of all its keys allowed per UTC calendar period; a request that could pass it is refused with 402 naming the business line.", unset: "no budget" }),
  mcp: mcpGrantSchema.optional().meta({ description: "MCP tools the business line's keys may reach ([Grants](mcp.md#grants)); its teams' and keys' grants narrow it.", unset: "no limit from here" }),
});

/** A team: what its keys may do together, what it asks of every request (docs/compliance.md), and its business line. */
const teamSchema = z.strictObject({
  name: keyNameSchema.meta({ description: "1 to 64 letters, digits and `. _ -`, unique among teams; what refusals, usage records and reports call the team." }),
  id: keyNameSchema.optional().meta({
    description:
      "What the team's counters, spend and team-scoped cache entries are kept under (docs/tenancy.md, \"Names and ids\"); unique among teams. Give a new one to start a team afresh under an old name, or a runtime team's id to keep its state.",
    unset: "the team's name",
  }),
  limits: levelLimitsSchema.prefault({}).meta({ description: "Limits on the team as a whole; an unset limit is not enforced." }),
  budget: keyBudgetSchema.optional().meta({ description: "Spend of all its keys allowed per UTC calendar period; a request that could pass it is refused with 402 naming the team.", unset: "no budget" }),
  pii: piiPolicySchema.optional().meta({ description: "The team's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" }),
  localOnly: z.boolean().default(false).meta({ description: 'Every request of the team is served by local targets only, whatever it holds (docs/compliance.md, "Local targets").' }),
  businessLine: keyNameSchema.optional().meta({ description: "The business line the team belongs to (one of `auth.businessLines`).", unset: "no business line" }),
  mcp: mcpGrantSchema.optional().meta({ description: "MCP tools the team's keys may reach ([Grants](mcp.md#grants)), within its business line's.", unset: "no limit from here" }),
});

const tenantKeySchema = z
  .strictObject({
    name: keyNameSchema.meta({ description: "1 to 64 letters, digits and `. _ -`, unique; what logs, usage records and the admin service call the key. Limits, spend and usage are kept per name." }),
    team: keyNameSchema.optional().meta({ description: "The team the key belongs to (one of `auth.teams`): its requests count against the team's and the team's business line's limits and budgets as well as its own.", unset: "no team" }),
    keyEnv: envName.optional().meta({ description: "Environment variable holding the key (16 characters or more); the gateway keeps only its SHA-256. Give exactly one of `keyEnv` and `sha256`.", unset: "one of the two" }),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex digits (the SHA-256 of the key)")
      .optional()
      .meta({ description: "The key's SHA-256 in hex, so the key itself never reaches the gateway's host (`printf %s \"$KEY\" | sha256sum`).", unset: "one of the two" }),
    models: z.array(aliasName).max(KEY_BOUNDS.maxModels).optional().meta({ description: "The aliases the key may use.", unset: "every alias" }),
    limits: keyLimitsSchema.prefault({}).meta({ description: "Per-key rate limits; an unset limit is not enforced." }),
    budget: keyBudgetSchema.optional().meta({ description: "Spend allowed per UTC calendar period.", unset: "no budget" }),
    pii: piiPolicySchema.optional().meta({ description: "The key's PII policy ([Compliance](compliance.md#policies)); the strictest of a request's key, team and alias policies applies.", unset: "none from here" }),
    localOnly: z.boolean().default(false).meta({ description: 'Every request of this key is served by local targets only, whatever it holds (docs/compliance.md, "Local targets").' }),
    mcp: mcpGrantSchema.optional().meta({ description: "MCP tools the key may reach ([Grants](mcp.md#grants)), within its team's and business line's.", unset: "no limit from here" }),
  })
  .superRefine((key, ctx) => {
    if ((key.keyEnv === undefined) === (key.sha256 === undefined)) ctx.addIssue({ code: "custom", path: [], message: "give exactly one of keyEnv or sha256" });
  });

/** The one database of every feature that needs one (the semantic cache first). */
const postgresStoreSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^postgres(ql)?$/ })
      .optional()
      .meta({
        description:
          "`postgres://` or `postgresql://` of a server, shared by every replica. Only the semantic cache needs the pgvector extension (its tables are made once `vector` is available; the rest of the schema does not wait for it); the ledger, the audit log, batches, evaluation and shadow need no extension; TLS as the URL's `sslmode` says. Only host, port and database are ever logged.",
        unset: "the embedded PGlite",
      }),
    dataDir: z.string().min(1).optional().meta({ description: "Directory of the embedded PGlite's files (kept across restarts).", unset: "in memory: entries are gone at restart" }),
    poolSize: z.number().int().min(1).max(1_000).default(10).meta({ description: "Connections to the server (`url` mode)." }),
  })
  .refine((p) => p.url === undefined || p.dataDir === undefined, "give url or dataDir, not both");

const redisStoreSchema = z.strictObject({
  url: z.url({ protocol: /^rediss?$/ }).meta({ description: "`redis://` or `rediss://` (TLS). Only its host and port are ever logged." }),
  prefix: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .default("sluice:")
    .meta({ description: "Prefix of every key the gateway writes (several gateways, or tests, can share one Redis)." }),
  failMode: z
    .enum(["open", "closed"])
    .default("open")
    .meta({ description: "Redis down or slow: `open` falls back to per-replica limits; `closed` refuses new streams with `UNAVAILABLE` / 503 (see [When Redis is in trouble](tenancy.md#when-redis-is-in-trouble))." }),
  replicas: z.number().int().min(1).max(10_000).default(1).meta({ description: "Replicas sharing this Redis: the divisor of the fail-open limits." }),
  timeoutMs: z.number().int().min(1).max(10_000).default(250).meta({ description: "A Redis call unanswered this long after it was written is slow: logged, still waited for." }),
  downAfterTimeouts: z.number().int().min(1).max(1_000).default(3).meta({ description: "Redis is down after this many `timeoutMs` with no answer to any call (or at once when the connection drops); then the fail mode applies." }),
  usageStreamMaxLen: z.number().int().min(1_000).max(100_000_000).default(1_000_000).meta({ description: "Usage records kept in the Redis Stream (approximately: `XADD MAXLEN ~`)." }),
  bufferMax: z.number().int().min(0).max(1_000_000).default(10_000).meta({ description: "Usage records held in memory while Redis is away; past it they are dropped, counted and logged." }),
  streamLeaseMs: z
    .number()
    .int()
    .min(1_000)
    .max(86_400_000)
    .default(900_000)
    .meta({ description: "A stream's concurrency slot and budget reservation are released this long after its replica last renewed them (every third of it, while the stream runs): how long a replica that died mid-stream keeps them." }),
  cluster: z
    .strictObject({
      nodes: z
        .array(z.url({ protocol: /^rediss?$/ }))
        .max(64)
        .default([])
        .meta({ description: "More seed nodes besides `url` (host and port are read; the user, password and TLS of `url` apply to every node). The rest of the cluster is discovered." }),
    })
    .optional()
    .meta({
      description:
        "`url` is a node of a Redis Cluster (see [Redis: supported topologies](deployment.md#redis-supported-topologies)). The prefix must then hold a hash tag (e.g. `{sluice}:`): every key of the gateway lands in that tag's slot, on one master.",
      unset: "`url` is one Redis (standalone or a primary); start fails if it is a cluster node",
    }),
  sentinel: z
    .strictObject({
      name: z.string().min(1).max(128).meta({ description: "The primary's name in the Sentinels' configuration (`sentinel monitor <name> …`)." }),
      nodes: z
        .array(z.url({ protocol: /^rediss?$/ }))
        .max(64)
        .default([])
        .meta({ description: "More Sentinels besides `url` (host and port are read)." }),
    })
    .optional()
    .meta({
      description:
        "`url` is a Sentinel (see [Redis: supported topologies](deployment.md#redis-supported-topologies)): the primary is asked of the Sentinels and followed through failovers. The user, password and TLS of `url` are the primary's.",
      unset: "no Sentinel",
    }),
  tls: z
    .strictObject({
      caFile: z.string().min(1).optional().meta({ description: "PEM file of the CA(s) that signed Redis's certificates (a private CA); read at start.", unset: "the system's CAs" }),
    })
    .optional()
    .meta({ description: "TLS to Redis, for `rediss://` URLs.", unset: "`rediss://` trusts the system's CAs" }),
});

/** The hash tag Redis Cluster would read from a key starting with `prefix` (the first `{…}` with something inside), if any. */
export function prefixHashTag(prefix: string): string | undefined {
  const open = prefix.indexOf("{");
  if (open < 0) return undefined;
  const close = prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      host: z.string().min(1).default("127.0.0.1").meta({ description: "Address to listen on (`--host 0.0.0.0` to listen beyond loopback).", reload: "restart" }),
      port: z.number().int().min(0).max(65_535).default(8080).meta({ description: "Port to listen on (0: any free port).", reload: "restart" }),
      drainMs: z
        .number()
        .int()
        .min(0)
        .max(600_000)
        .default(10_000)
        .meta({ description: "How long in-flight streams may finish after SIGTERM before they are ended with `UNAVAILABLE` (see graceful shutdown in [Stream semantics](streams.md#stream-semantics)).", reload: "live" }),
      keepaliveMs: z.number().int().min(10).max(3_600_000).default(30_000).meta({ description: "The HTTP/2 PING interval; a PING unanswered for two intervals closes the connection.", reload: "restart" }),
      debugEndpoints: z.boolean().default(false).meta({ description: "Serve `GET /debug/runtime` (memory, event-loop delay, streams). Off in production.", reload: "restart" }),
      headersTimeoutMs: z
        .number()
        .int()
        .min(100)
        .max(600_000)
        .default(10_000)
        .meta({ description: "A new connection must send complete request headers (HTTP/2: open a stream) within this, or it is closed; headers trickled a byte at a time do not extend it.", reload: "restart" }),
      requestTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000).meta({ description: "The whole request body must arrive in this time: 408 on the facade, `DEADLINE_EXCEEDED` on the RPC edges.", reload: "restart" }),
      idleTimeoutMs: z
        .number()
        .int()
        .min(100)
        .max(3_600_000)
        .default(60_000)
        .meta({ description: "A connection with nothing in flight (HTTP/1.1 keep-alive, an HTTP/2 session with no stream) is closed (HTTP/2 gets GOAWAY).", reload: "restart" }),
      sendTimeoutMs: z.number().int().min(100).max(3_600_000).default(60_000).meta({
        description: "A client that takes no bytes of its response for this long has its stream reset, and everything it held (slot, upstream request) is released; slow readers that keep reading are unaffected.",
        reload: "restart",
      }),
      maxConnections: z.number().int().min(1).max(1_000_000).default(10_000).meta({
        description:
          "Open connections. A new connection beyond it closes the connection that has been idle longest (never one with a request in flight); if every connection is busy, it gets `503` and is closed. Lowered at start-up when the process's open-file limit cannot hold it (each client stream also holds an upstream connection, and 256 descriptors are kept for the rest): `server.max_connections_lowered` is a warning when the cut is more than a tenth, a debug line otherwise (the default under a 20,000-descriptor limit: 9,872).",
        reload: "restart",
      }),
      maxStreamsPerConnection: z
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .default(1_000)
        .meta({ description: "Concurrent streams on one HTTP/2 connection, advertised in SETTINGS; clients queue above it, a client that ignores it gets `REFUSED_STREAM`.", reload: "restart" }),
      tls: tlsSchema.optional().meta({
        description: "TLS on the one port, which then speaks TLS only (ALPN `h2` and `http/1.1`; see [TLS](operations.md#tls)). Relative paths are relative to the working directory.",
        unset: "cleartext h2c and HTTP/1.1",
        reload: "restart",
      }),
      watchConfig: z
        .boolean()
        .default(false)
        .meta({ description: "`true`: reload when the configuration file changes (SIGHUP always reloads; see [Reloading the configuration](operations.md#reloading-the-configuration)).", reload: "live" }),
    })
    .prefault({})
    .meta({ description: "The listener: where it binds, how long a connection or a request may take, how many there may be, TLS, and how long a shutdown drains. `--host`, `--port` and the `PORT` variable override `server`." }),
  log: z
    .strictObject({
      level: z
        .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
        .default("info")
        .meta({ description: "The lowest level written. Access lines are `info`, but for health probes answered 200 (`/healthz`, `/readyz` ready), which are `debug`.", reload: "live" }),
    })
    .prefault({})
    .meta({ description: "JSON log lines (pino) on stdout." }),
  telemetry: z
    .strictObject({
      serviceName: z.string().min(1).max(128).default("sluice").meta({ description: "`service.name` on spans and metrics (`OTEL_SERVICE_NAME` overrides)." }),
      metrics: z
        .strictObject({
          enabled: z.boolean().default(true).meta({ description: "Serve `GET /metrics` (Prometheus text)." }),
          port: z.number().int().min(0).max(65_535).optional().meta({ description: "A listener of its own for `/metrics` (e.g. on a private interface); the public port then answers 404 for `/metrics`.", unset: "the gateway's own port" }),
          host: z.string().min(1).default("127.0.0.1").meta({ description: "Where that listener binds." }),
        })
        .prefault({})
        .meta({ description: "Prometheus metrics." }),
      tracing: z
        .strictObject({
          exporter: z.enum(["none", "otlp"]).optional().meta({ description: "`otlp` exports spans over OTLP/HTTP; `none` exports nothing.", unset: "`otlp` when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set, else `none`" }),
          endpoint: z
            .url({ protocol: /^https?$/ })
            .optional()
            .meta({ description: "The OTLP/HTTP traces URL (`…/v1/traces`).", unset: "what the `OTEL_*` variables say" }),
          captureContent: z.boolean().default(false).meta({
            description:
              "`true` puts prompts and answers on spans (`gen_ai.input.messages` and `gen_ai.output.messages`, cut to 16 KiB), except for calls kept local (`localOnly`, or a `local-only` PII mode), whose spans carry no content; a redacted prompt is captured as redacted. Off: no message text ever leaves in telemetry.",
          }),
        })
        .prefault({})
        .meta({ description: "Traces, exported over OTLP/HTTP; the standard `OTEL_*` variables apply too." }),
    })
    .prefault({})
    .meta({ description: "Metrics and traces (see [Observability](operations.md#observability)).", reload: "restart" }),
  facade: z
    .strictObject({
      keepaliveMs: z.number().int().min(10).max(300_000).default(15_000).meta({ description: "A `: keepalive` comment line on OpenAI-compatible streams after this much silence, also before the first token.", reload: "restart" }),
      maxBodyBytes: z
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .optional()
        .meta({ description: "Deprecated: the old name of `limits.maxRequestBytes`, still honoured when that is not set.", unset: "`limits.maxRequestBytes`", reload: "restart" }),
    })
    .prefault({})
    .meta({ description: "The OpenAI-compatible facade (see [streams.md](streams.md#openai-compatible-facade-v1chatcompletions))." }),
  limits: z
    .strictObject({
      maxEventBytes: z.number().int().min(1024).default(1_048_576).meta({ description: "Largest upstream SSE event, in bytes; a larger one ends the stream with an error.", reload: "live" }),
      maxAnswerBytes: z
        .number()
        .int()
        .min(1024)
        .max(256 * 1024 * 1024)
        .default(DEFAULT_MAX_ANSWER_BYTES)
        .meta({
          description:
            'Largest answer the gateway holds whole in memory, in bytes of text: a non-streamed response (Chat, `stream: false`), a batch line, an evaluation replay, and the answer an alias that `record`s or `shadow`s keeps. Past it a non-streamed call fails with 502 / `INTERNAL` (`upstream_protocol`, naming this setting) and its upstream request is closed; a recording is dropped and counted (`sluice_recordings_total{sluice_recording_result="too_large"}`). Streamed answers are not held, so not bounded by it (their output is bounded by `max_tokens`, see [Enforcing what was reserved](tenancy.md#enforcing-what-was-reserved)).',
          reload: "live",
        }),
      maxRequestBytes: z
        .number()
        .int()
        .min(1024)
        .max(256 * 1024 * 1024)
        .optional()
        .meta({
          description:
            "The request body on every edge and protocol, and any one message after gzip decompression: `RESOURCE_EXHAUSTED` / 413, checked against `Content-Length` (and an RPC envelope's declared length) before the body is read, and while it arrives; the rest is discarded as it comes, never buffered: HTTP/2 resets the stream (`NO_ERROR`) once the status is out, HTTP/1.1 closes the connection after the answer, lingering at most 2 s / 8 MiB so that a client still sending can read its status.",
          unset: `\`facade.maxBodyBytes\` when set, else \`${DEFAULT_MAX_REQUEST_BYTES}\` (${DEFAULT_MAX_REQUEST_BYTES / (1024 * 1024)} MiB)`,
          reload: "restart",
        }),
      maxRequestElements: z.number().int().min(100).max(10_000_000).default(20_000).meta({
        description:
          "Fields, list items and JSON values in one request, counted by a scan of the raw bytes before protobuf or JSON decoding: `RESOURCE_EXHAUSTED` / 413. Decoding cost follows the element count, not the byte count (4 MiB of one-character content parts took protobuf-es almost a second); at the limit the worst shapes decode in about 7 ms on this machine's cores.",
        reload: "restart",
      }),
      maxJsonDepth: z.number().int().min(4).max(512).default(32).meta({
        description:
          "Nesting of a tool's JSON Schema: `INVALID_ARGUMENT` / 400 naming `tools[i].parameters` (`tools[i].function.parameters` on the facade); the same cap on both edges. Much deeper documents are refused by the scan before decoding.",
        reload: "restart",
      }),
    })
    .prefault({})
    .meta({ description: "What one request or one upstream event may hold. Every limit answers with a clear status and is counted before the expensive work it protects (see [Limits and timeouts](operations.md#limits-and-timeouts))." }),
  auth: z
    .strictObject({
      adminKeyEnv: envName.optional().meta({
        description: "Environment variable holding the admin key (16 characters or more); serves `sluice.admin.v1.AdminService` and turns authentication on.",
        unset: "no admin service",
        reload: "restart",
        reloadText: "restart to turn it on or off; another variable: yes",
      }),
      keys: z.array(tenantKeySchema).max(10_000).default([]).meta({ description: "The virtual keys; any key configured → every edge requires one." }),
      teams: z
        .array(teamSchema)
        .max(MAX_CONFIGURED_LEVELS)
        .default([])
        .meta({ description: 'Teams: limits and budgets shared by every key in the team, checked in the same admission as the key (docs/tenancy.md, "Teams and business lines").' }),
      businessLines: z
        .array(businessLineSchema)
        .max(MAX_CONFIGURED_LEVELS)
        .default([])
        .meta({ description: 'Business lines: limits and budgets shared by every team in the line (the top of the hierarchy) (docs/tenancy.md, "Teams and business lines").' }),
      tagKeys: z
        .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, "1 to 64 letters, digits and _ . : - (starting with a letter or digit)"))
        .max(32)
        .default([])
        .meta({
          description:
            "Tag keys kept for cost allocation: a request's tags (the `sluice-tags` header, the facades' body `metadata`, gRPC `metadata.labels`) under other keys are dropped and named in the `sluice-tags-dropped` response header; kept tags go on the usage record (docs/tenancy.md, \"Cost allocation by tag\").",
        }),
      budgetExceededStatus: z.literal([402, 429]).default(402).meta({
        description:
          "HTTP status of a request refused because a budget is spent: `402` (Payment Required; the SDKs do not retry it) or `429`, for callers written before 402 (the body is the same). gRPC says `RESOURCE_EXHAUSTED` either way.",
      }),
    })
    .prefault({})
    .meta({
      description: "Virtual keys and the admin service (see [Tenancy](tenancy.md)). Any key configured, or the admin service on, makes every edge require a key.",
      unset: "no keys: anyone who reaches the port may call",
      reload: "live",
    }),
  console: z
    .strictObject({
      access: z
        .enum(CONSOLE_ACCESS)
        .optional()
        .meta({ description: "`off`, `open` or `admin`: who may open `/console/` and watch `WatchStats` (the table in [Console](operations.md#console)).", unset: "`admin` when `auth.adminKeyEnv` is set, else `off`" }),
      maxWatchers: z.number().int().min(1).max(1_000).default(16).meta({ description: "`WatchStats` streams at once; more get `RESOURCE_EXHAUSTED`." }),
    })
    .prefault({})
    .meta({ description: "The operators' console at `/console/` (see [Console](operations.md#console)).", reload: "restart" }),
  responses: z
    .strictObject({
      store: z.boolean().default(true).meta({
        description:
          "`true`: `POST /v1/responses` keeps each response whose request has `store: true` (the API's default when absent), so `previous_response_id`, `item_reference`, `GET /v1/responses/{id}` and background runs work; `false`: the edge is stateless, and those are refused by name.",
        reload: "restart",
      }),
      ttlDays: z.number().min(0.001).max(3_650).default(30).meta({ description: "How long a stored response (and a conversation since its last change) is kept; a sweep removes it after.", reload: "live" }),
      maxStoredPerKey: z.number().int().min(0).max(1_099_511_627_776).default(1_073_741_824).meta({
        description: "Bytes of stored responses and conversations one key may keep (sealed, as the database holds them); past it, `store: true` is refused with 400 until some expire or are deleted. `0`: no limit.",
        reload: "live",
      }),
      maxMemoryBytes: z.number().int().min(1_048_576).max(68_719_476_736).default(268_435_456).meta({
        description:
          "Without `store.postgres`, stored responses and conversations are kept in the gateway's memory (as the embedded in-memory database would keep them, without its start-up cost on the first call): at most this many bytes of each, the oldest (for conversations, the longest unchanged) going first. Nothing survives a restart or is shared by replicas; configure `store.postgres` for that.",
        reload: "restart",
      }),
      maxChainDepth: z.number().int().min(1).max(100_000).default(1_000).meta({ description: "Longest `previous_response_id` chain a request may continue; a longer one is refused.", reload: "live" }),
      sweepIntervalMs: z.number().int().min(1_000).max(86_400_000).default(600_000).meta({ description: "How often expired responses are removed.", reload: "restart" }),
      websocket: z.boolean().default(true).meta({
        description:
          "`true`: `GET /v1/responses` with `Upgrade: websocket` opens the Responses WebSocket mode (Codex's transport with OpenAI's provider; see [WebSocket mode](responses.md#websocket-mode)); `false`: the upgrade is answered 426, and clients fall back to `POST`.",
        reload: "restart",
      }),
      websocketIdleMs: z
        .number()
        .int()
        .min(10)
        .max(86_400_000)
        .default(600_000)
        .meta({ description: "A WebSocket with no response running that receives no message for this long is closed (1000); the client reconnects for its next turn.", reload: "restart" }),
      websocketMaxBufferedBytes: z.number().int().min(1_024).max(1_073_741_824).default(4_194_304).meta({
        description: "Bytes of events a WebSocket may hold unsent (a client that stops reading); past it (or after `server.sendTimeoutMs` without reading) the response is cancelled, its upstream aborted, and the connection dropped.",
        reload: "restart",
      }),
      websocketMaxStateBytes: z.number().int().min(1_024).max(1_073_741_824).default(67_108_864).meta({
        description: "Bytes of conversation one WebSocket keeps for `previous_response_id` (its responses' input and output items); past it the oldest responses are forgotten and continuing one is answered `previous_response_not_found`.",
        reload: "restart",
      }),
    })
    .prefault({})
    .meta({
      description:
        "Stored responses and conversations for `/v1/responses` (see [Responses with state](responses.md)): in the database with `store.postgres` (a server by URL, or the embedded PGlite), else in memory (`responses.maxMemoryBytes`); sealed under each response's id in the database, owned by the key id that made them.",
    }),
  mcp: mcpSchema,
  resume: z
    .strictObject({
      detachGraceMs: z.number().int().min(0).max(3_600_000).default(60_000).meta({ description: "How long a resumable stream's upstream outlives its last reader." }),
      retentionMs: z.number().int().min(1_000).max(86_400_000).default(300_000).meta({ description: "How long a stream's messages stay readable after its last one; then `NOT_FOUND`." }),
      maxBacklogMessages: z.number().int().min(16).max(1_000_000).default(10_000).meta({ description: "Messages stored per stream; past it the stream is no longer resumable." }),
      maxBacklogBytes: z.number().int().min(1_024).max(1_073_741_824).default(4_194_304).meta({ description: "Bytes stored per stream, as JSON; past it the stream is no longer resumable." }),
      maxReaders: z.number().int().min(1).max(100_000).default(256).meta({ description: "`ResumeStream` calls and facade resumes served at once per replica (each may hold a Redis connection); more get `RESOURCE_EXHAUSTED` / 429." }),
    })
    .prefault({})
    .meta({ description: "Resumable streams (see [Resumable streams](streams.md#resumable-streams)): kept in `store.redis` when configured, else in process.", reload: "restart" }),
  cache: z
    .strictObject({
      lookupTimeoutMs: z
        .number()
        .int()
        .min(1)
        .max(10_000)
        .default(50)
        .meta({ description: 'Longest a lookup may take; past it the request goes upstream as a miss (`sluice_cache_lookups_total{sluice_cache_result="error"}`), never failed.' }),
      chargeHits: z.boolean().default(false).meta({ description: "`false`: a hit costs nothing and its usage record carries the cost saved; `true`: a hit is charged at the price of the target that produced the answer." }),
      maxEntryBytes: z
        .number()
        .int()
        .min(1_024)
        .max(64 * 1024 * 1024)
        .default(1_048_576)
        .meta({
          description:
            'Largest entry stored, in bytes as the store holds it (the answer sealed: UTF-8, then base64, so about 4/3 of the answer\'s UTF-8 bytes); larger answers are served and not cached (`sluice_cache_writes_total{sluice_cache_write="too_large"}`).',
        }),
      maxMemoryBytes: z
        .number()
        .int()
        .min(65_536)
        .max(16 * 1024 * 1024 * 1024)
        .default(67_108_864)
        .meta({ description: "Memory for entries without `store.redis` (one replica); the least recently used entries go first. With `store.redis` the entries live in Redis (see `cache.redisMaxBytes`)." }),
      redisMaxBytes: z
        .number()
        .int()
        .min(65_536)
        .max(1024 * 1024 * 1024 * 1024)
        .default(268_435_456)
        .meta({
          description:
            "Bytes of exact-cache entries in `store.redis`, every alias and every replica together (each entry's value and keys); a write that would pass it first evicts the least recently used entries, of any alias. Entries also expire by their alias's TTL. Without `store.redis` it is not used.",
        }),
      aliasMaxBytes: z
        .number()
        .int()
        .min(65_536)
        .max(1024 * 1024 * 1024 * 1024)
        .default(67_108_864)
        .meta({ description: "Bytes of one alias's exact-cache entries, in Redis or in memory; a write that would pass it first evicts that alias's least recently used entries, so one busy alias cannot empty the others' caches." }),
      maxEmbedChars: z.number().int().min(1).max(1_000_000).default(8_192).meta({ description: "Longest last question, in characters, the semantic cache embeds; a longer one gets the exact cache only." }),
    })
    .prefault({})
    .meta({ description: "What every alias's response cache shares: the lookup deadline, whether hits are charged, entry and memory bounds. Aliases opt in with `models.<alias>.cache` ([Caching](caching.md)).", reload: "restart" }),
  alerts: z
    .strictObject({
      thresholds: z.array(z.number().gt(0).max(1)).max(10).default([0.5, 0.8, 1]).meta({ description: "Fractions of a budget (0 to 1) whose crossing is announced, once per period each." }),
      webhook: z
        .strictObject({
          url: z.url({ protocol: /^https?$/ }).meta({ description: "`http://` or `https://` URL of the receiver." }),
          secretEnv: envName.meta({ description: "Environment variable holding the signing secret (16 characters or more); the receiver checks `sluice-signature` with it." }),
          timeoutMs: z.number().int().min(100).max(60_000).default(5_000).meta({ description: "Longest one delivery attempt may take." }),
          maxAttempts: z.number().int().min(1).max(20).default(6).meta({ description: "Attempts per alert, with doubling backoff from one second (a 2xx answer ends them); then the alert is dropped and counted." }),
          queueMax: z.number().int().min(1).max(100_000).default(1_000).meta({ description: "Alerts waiting for delivery at most; past it new ones are dropped and counted." }),
        })
        .optional()
        .meta({ description: "Where alerts are POSTed as JSON, signed with HMAC-SHA256 (`sluice-signature`).", unset: "metrics and log lines only" }),
    })
    .prefault({})
    .meta({ description: 'Budget alerts: each budget\'s thresholds (key, team, business line) announced once per period, as a metric, a log line and an optional signed webhook (docs/tenancy.md, "Budget alerts").', reload: "restart" }),
  ledger: z
    .strictObject({
      enabled: z.boolean().optional().meta({ description: "Write the ledger.", unset: "on when `store.postgres` is configured (an in-memory database would not be durable)" }),
      retentionDays: z.number().int().min(1).max(36_500).default(400).meta({ description: "Rows older than this many days are removed, hourly, in bounded batches." }),
      batchSize: z.number().int().min(1).max(5_000).default(500).meta({ description: "Records written per `INSERT` at most." }),
      flushMs: z.number().int().min(10).max(60_000).default(500).meta({ description: "How often new records are looked for and written." }),
      claimIdleMs: z.number().int().min(100).max(3_600_000).default(30_000).meta({
        description:
          "With `store.redis`: usage-stream entries a replica read but did not acknowledge for this long are taken over by another (it died mid-batch); a replica's copy of a record it settled is looked up in the ledger after this long, and written from the copy if the stream lost it.",
      }),
      bufferMax: z.number().int().min(100).max(10_000_000).default(100_000).meta({
        description:
          'Without `store.redis`: records held in memory while the database is away; past it new ones are dropped and counted. With it: copies of the records this replica put in the usage stream, held until seen in the ledger (docs/operations.md, "Redis persistence"); past it the oldest copy goes (the record is still in Redis).',
      }),
    })
    .prefault({})
    .meta({ description: 'The durable spend ledger: one row per charged call in `store.postgres`, written off the request path (docs/tenancy.md, "The spend ledger").', reload: "restart" }),
  batch: z
    .strictObject({
      maxFileBytes: z
        .number()
        .int()
        .min(1_024)
        .max(200 * 1024 * 1024)
        .default(100 * 1024 * 1024)
        .meta({
          description:
            "Bytes of one uploaded batch file at most; a larger upload is refused (413): at once when its declared length is larger, else the moment it passes the bound (the file is checked and stored as it streams in, never held whole).",
          reload: "restart",
        }),
      maxLines: z.number().int().min(1).max(50_000).default(50_000).meta({ description: "Lines (requests) of one batch file at most.", reload: "restart" }),
      maxLineBytes: z
        .number()
        .int()
        .min(256)
        .max(16 * 1024 * 1024)
        .default(1024 * 1024)
        .meta({ description: "Bytes of one line of a batch file at most.", reload: "restart" }),
      maxBatchesPerKey: z.number().int().min(1).max(1_000).default(10).meta({ description: "Batches one key may have unfinished (validating, in progress, finalizing or cancelling) at once; one more is refused (429).", reload: "restart" }),
      maxUploadBytesPerDay: z
        .number()
        .int()
        .min(1_024)
        .max(1024 ** 4)
        .default(1024 ** 3)
        .meta({
          description:
            "Bytes one key may upload in batch files per UTC day (1 GiB by default), counted as the file is stored; past it the upload is refused (429) and the file discarded, until 00:00 UTC. Bounds the work a key can cause by uploading.",
          reload: "restart",
        }),
      maxFilesPerKey: z.number().int().min(1).max(100_000).default(100).meta({
        description: "Batch files one key may store at once (uploads, counting those still streaming in; output files are not counted); one more is refused (429) until the key deletes one (`DELETE /v1/files/{id}`).",
        reload: "restart",
      }),
      concurrency: z
        .number()
        .int()
        .min(1)
        .max(256)
        .default(4)
        .meta({ description: "Lines this gateway runs at once, over all batches; each line goes through the same admission, limits and budget as an interactive call.", reload: "restart" }),
      leaseMs: z.number().int().min(500).max(600_000).default(30_000).meta({
        description:
          "With store.redis and store.postgres, batches run on a queue shared by the replicas: a line held by a replica that stopped answering goes to another after this. Longer than a line's longest call is not needed (the lease is renewed while the line runs).",
        reload: "restart",
      }),
      maxShare: z.number().min(0.01).max(1).default(0.25).meta({
        description:
          "Batch lines use spare capacity: at most this share of a provider's maxConcurrent (at least one stream), and a line starts only while no interactive call waits for that provider; when a stream ends, waiting interactive calls go first. A provider without maxConcurrent has no limit to share.",
        reload: "live",
      }),
    })
    .prefault({})
    .meta({
      description:
        "The OpenAI Batch API on the facade (`/v1/files`, `/v1/batches`): files, batches and each line's result in the database (`store.postgres`, or the embedded in-memory PGlite, with which nothing survives a restart). Lines run on this gateway's own queue, or, with both `store.redis` and `store.postgres`, on a queue every replica shares and takes lines from (`batch.leaseMs`; docs/batches.md).",
    }),
  workers: workersSchema,
  compliance: complianceSchema.meta({ description: "Custom PII detectors and the audit log ([Compliance](compliance.md)).", reload: "restart" }),
  store: z
    .strictObject({
      redis: redisStoreSchema
        .refine((r) => r.cluster === undefined || prefixHashTag(r.prefix) !== undefined, {
          message: "with cluster, the prefix must hold a hash tag, e.g. `{sluice}:`: a script's keys must share one slot",
          path: ["prefix"],
        })
        .refine((r) => r.cluster === undefined || r.sentinel === undefined, { message: "give cluster or sentinel, not both", path: ["sentinel"] })
        .refine((r) => r.tls === undefined || r.url.startsWith("rediss:"), { message: "tls is for `rediss://` URLs", path: ["tls"] })
        .optional()
        .meta({
          description: "One Redis (standalone, or a primary behind a managed service's endpoint), a primary found through Sentinel (`sentinel`) or a Redis Cluster (`cluster`), shared by every replica.",
          unset: "limits, spend, usage and exact-cache entries in process",
        }),
      postgres: postgresStoreSchema.optional().meta({
        description:
          "The one database of the features that need one: the spend ledger, the audit log, batches and their files, evaluation recordings and datasets, shadow comparisons, and the semantic cache. A server by `url`, or the embedded PGlite. It opens behind the port when a feature first needs it; until it is open those features go without or wait (the semantic cache misses; ledger and audit records wait for it).",
        unset: "the embedded PGlite in memory, opened when a feature first needs it (a semantic cache, a batch, a recording); the ledger and the audit log stay off, as nothing in it survives a restart",
      }),
    })
    .optional()
    .meta({
      description: "Where limits, spend, usage, runtime keys and cache entries are kept: Redis for what replicas share at once, PostgreSQL for what needs a database (see [Tenancy](tenancy.md), [Caching](caching.md)).",
      unset: "in process: right for one replica (limits, spend and runtime keys start empty after a restart)",
      reload: "restart",
    }),
  catalog: catalogSettingsSchema.meta({ description: "The model catalog: prices, limits and capabilities a target inherits by its model id ([The model catalog](model-catalog.md)).", reload: "live" }),
  providers: z
    .record(aliasName, providerSchema)
    .refine((p) => Object.keys(p).length > 0, "at least one provider")
    .meta({ mapKey: "<name>", description: "The upstreams, each under a name of your choice that aliases refer to (see [Providers](providers.md)).", reload: "live" }),
  models: z
    .record(aliasName, modelSchema)
    .refine((m) => Object.keys(m).length > 0, "at least one model alias")
    .meta({
      mapKey: "<alias>",
      description:
        "The aliases clients name. An alias is either one target written inline (`provider`, `model`, `price`) or a `targets` list, not both, with how to choose among them and what to do when one fails (see [Routing, retries and failover](routing.md)).",
      reload: "live",
    }),
});

/** The sets of keys used in several places, each documented once in the configuration reference. */
export const SETTING_GROUPS = [partialTimeoutsSchema, capabilitiesSchema, priceSchema] as const;

/** The configuration file as written (before defaults are applied). */
export type ConfigInput = z.input<typeof configSchema>;
export type ConfigFile = z.output<typeof configSchema>;
export { priceSchema } from "./price-schema.js";
