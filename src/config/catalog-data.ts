import type { CatalogEntryInput } from "./catalog-schema.js";

/**
 * The built-in catalog: figures as published by each provider, in USD per
 * million tokens (per search and per request where a provider charges so),
 * each entry with the page it came from and the day it was compared with
 * it. docs/model-catalog.md says which were confirmed on the provider's
 * own page and which only through other pages. Prices move: a bump of
 * `CATALOG_VERSION` marks every change, and operators override entries
 * with `catalog.file`.
 */
export const CATALOG_VERSION = "2026-12-07";

const OPENAI = "https://platform.openai.com/docs/pricing";
const ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing";
const GEMINI = "https://ai.google.dev/gemini-api/docs/pricing";
const DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing";
const PERPLEXITY = "https://docs.perplexity.ai/getting-started/pricing";
const CHECKED = "2026-12-07";

const openai = (id: string, input: number, cached: number, output: number, capabilities: CatalogEntryInput["capabilities"]): CatalogEntryInput => ({
  id,
  provider: "openai",
  price: { inputPerMTok: input, cachedInputPerMTok: cached, outputPerMTok: output },
  capabilities,
  source: OPENAI,
  checked: CHECKED,
});
const GPT4O = { contextWindow: 128_000, maxOutputTokens: 16_384, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true };
const GPT41 = { contextWindow: 1_047_576, maxOutputTokens: 32_768, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true };
const GPT5 = { contextWindow: 400_000, maxOutputTokens: 128_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true };
const O_SERIES = { contextWindow: 200_000, maxOutputTokens: 100_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true };

/** Anthropic's five-minute and one-hour cache writes are 1.25× and 2× input, reads 0.1×, on every model the page lists. */
const claude = (id: string, input: number, output: number, capabilities: CatalogEntryInput["capabilities"]): CatalogEntryInput => ({
  id,
  provider: "anthropic",
  price: { inputPerMTok: input, cachedInputPerMTok: input / 10, cacheWrite5mPerMTok: input * 1.25, cacheWrite1hPerMTok: input * 2, outputPerMTok: output, perWebSearch: 0.01 },
  capabilities,
  source: ANTHROPIC,
  checked: CHECKED,
});
const CLAUDE = { contextWindow: 200_000, tools: true, vision: true, reasoning: true, promptCaching: true };

const gemini = (id: string, input: number, cached: number | undefined, output: number, capabilities: CatalogEntryInput["capabilities"]): CatalogEntryInput => ({
  id,
  provider: "google",
  price: { inputPerMTok: input, ...(cached === undefined ? {} : { cachedInputPerMTok: cached }), outputPerMTok: output },
  capabilities,
  source: GEMINI,
  checked: CHECKED,
  note: "prompts up to 200k tokens; longer prompts are billed higher on 2.5 Pro and are not modelled",
});
const GEMINI_25 = { contextWindow: 1_048_576, maxOutputTokens: 65_536, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true };
const GEMINI_20 = { contextWindow: 1_048_576, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true };

const embedding = (id: string, provider: string, input: number | undefined, contextWindow: number, source: string): CatalogEntryInput => ({
  id,
  provider,
  kind: "embedding",
  ...(input === undefined ? {} : { price: { inputPerMTok: input, outputPerMTok: 0 } }),
  capabilities: { contextWindow },
  source,
  checked: CHECKED,
});

/** Open models by name: limits and abilities only, since each cloud prices them its own way (a price here would charge a self-hosted copy). */
const open = (id: string, capabilities: CatalogEntryInput["capabilities"], source: string): CatalogEntryInput => ({ id, provider: "open", capabilities, source, checked: CHECKED });

export const CATALOG_MODELS: readonly CatalogEntryInput[] = [
  openai("gpt-3.5-turbo", 0.5, 0.5, 1.5, { contextWindow: 16_385, maxOutputTokens: 4_096, tools: true, vision: false, jsonSchema: false, reasoning: false }),
  openai("gpt-4o", 2.5, 1.25, 10, GPT4O),
  openai("gpt-4o-mini", 0.15, 0.075, 0.6, GPT4O),
  openai("gpt-4.1", 2, 0.5, 8, GPT41),
  openai("gpt-4.1-mini", 0.4, 0.1, 1.6, GPT41),
  openai("gpt-4.1-nano", 0.1, 0.025, 0.4, GPT41),
  openai("gpt-5", 1.25, 0.125, 10, GPT5),
  openai("gpt-5-mini", 0.25, 0.025, 2, GPT5),
  openai("gpt-5-nano", 0.05, 0.005, 0.4, GPT5),
  openai("o1", 15, 7.5, 60, O_SERIES),
  openai("o3", 2, 0.5, 8, O_SERIES),
  openai("o3-mini", 1.1, 0.55, 4.4, { ...O_SERIES, vision: false }),
  openai("o4-mini", 1.1, 0.275, 4.4, O_SERIES),
  embedding("text-embedding-3-small", "openai", 0.02, 8_191, OPENAI),
  embedding("text-embedding-3-large", "openai", 0.13, 8_191, OPENAI),
  embedding("text-embedding-ada-002", "openai", 0.1, 8_191, OPENAI),

  claude("claude-3-5-haiku", 0.8, 4, { ...CLAUDE, maxOutputTokens: 8_192, reasoning: false }),
  claude("claude-3-5-sonnet", 3, 15, { ...CLAUDE, maxOutputTokens: 8_192, reasoning: false }),
  claude("claude-3-7-sonnet", 3, 15, { ...CLAUDE, maxOutputTokens: 64_000 }),
  claude("claude-sonnet-4", 3, 15, { ...CLAUDE, maxOutputTokens: 64_000 }),
  claude("claude-sonnet-4-5", 3, 15, { ...CLAUDE, maxOutputTokens: 64_000 }),
  claude("claude-sonnet-4-6", 3, 15, CLAUDE),
  claude("claude-haiku-4-5", 1, 5, { ...CLAUDE, maxOutputTokens: 64_000 }),
  claude("claude-opus-4", 15, 75, { ...CLAUDE, maxOutputTokens: 32_000 }),
  claude("claude-opus-4-1", 15, 75, { ...CLAUDE, maxOutputTokens: 32_000 }),
  claude("claude-opus-4-5", 5, 25, { ...CLAUDE, maxOutputTokens: 64_000 }),
  claude("claude-opus-4-6", 5, 25, CLAUDE),

  gemini("gemini-2.5-pro", 1.25, 0.31, 10, GEMINI_25),
  gemini("gemini-2.5-flash", 0.3, 0.075, 2.5, GEMINI_25),
  gemini("gemini-2.5-flash-lite", 0.1, 0.025, 0.4, GEMINI_25),
  gemini("gemini-2.0-flash", 0.1, 0.025, 0.4, GEMINI_20),
  gemini("gemini-2.0-flash-lite", 0.075, undefined, 0.3, { ...GEMINI_20, promptCaching: false }),
  // 1.5 is retired from the Developer API; its limits stay for routing by need, without a price.
  { id: "gemini-1.5-pro", provider: "google", capabilities: { contextWindow: 2_097_152, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true } },
  { id: "gemini-1.5-flash", provider: "google", capabilities: { contextWindow: 1_048_576, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true } },
  embedding("gemini-embedding-001", "google", 0.15, 2_048, GEMINI),
  embedding("text-embedding-004", "google", undefined, 2_048, GEMINI),

  {
    id: "deepseek-chat",
    provider: "deepseek",
    price: { inputPerMTok: 0.56, cachedInputPerMTok: 0.07, outputPerMTok: 1.68 },
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, tools: true, vision: false, reasoning: false, promptCaching: true },
    source: DEEPSEEK,
    checked: CHECKED,
  },
  {
    id: "deepseek-reasoner",
    provider: "deepseek",
    price: { inputPerMTok: 0.56, cachedInputPerMTok: 0.07, outputPerMTok: 1.68 },
    capabilities: { contextWindow: 128_000, maxOutputTokens: 65_536, tools: false, vision: false, reasoning: true, promptCaching: true },
    source: DEEPSEEK,
    checked: CHECKED,
  },
  {
    id: "sonar",
    provider: "perplexity",
    price: { inputPerMTok: 1, outputPerMTok: 1, perRequest: 0.005 },
    source: PERPLEXITY,
    checked: CHECKED,
    note: "per-request fee at the low search-context size",
  },
  {
    id: "sonar-pro",
    provider: "perplexity",
    price: { inputPerMTok: 3, outputPerMTok: 15, perRequest: 0.006 },
    source: PERPLEXITY,
    checked: CHECKED,
    note: "per-request fee at the low search-context size",
  },
  {
    id: "sonar-deep-research",
    provider: "perplexity",
    price: { inputPerMTok: 2, outputPerMTok: 8, reasoningPerMTok: 3, perWebSearch: 0.005 },
    capabilities: { reasoning: true },
    source: PERPLEXITY,
    checked: CHECKED,
    note: "citation tokens ($2/MTok) are not reported apart: not modelled",
  },
  {
    id: "sonar-reasoning-pro",
    provider: "perplexity",
    price: { inputPerMTok: 2, outputPerMTok: 8, perRequest: 0.006 },
    capabilities: { reasoning: true },
    source: PERPLEXITY,
    checked: CHECKED,
    note: "per-request fee at the low search-context size",
  },

  open("llama-3.1", { contextWindow: 131_072, tools: true, vision: false, reasoning: false }, "https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/"),
  open("llama-3.3", { contextWindow: 131_072, tools: true, vision: false, reasoning: false }, "https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_3/"),
  open("qwen2.5", { contextWindow: 32_768, tools: true, vision: false, reasoning: false }, "https://qwenlm.github.io/blog/qwen2.5/"),
];
