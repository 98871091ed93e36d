import type { OptionalParam } from "../core/request-params.js";

/**
 * What an OpenAI-compatible cloud does differently on the Chat Completions
 * wire, as data the `openai` adapter applies (providers/openai/preset-quirks.ts):
 * no per-provider branches in the adapter.
 */
export interface PresetQuirks {
  /** Body fields it names differently: the field as Sluice writes it → its name there. */
  readonly renames?: Readonly<Record<string, string>>;
  /** Body fields Sluice always writes that it refuses or has no use for: left out. */
  readonly omits?: readonly string[];
  /** Optional parameters it refuses with a 400: the unsupported-parameter rule applies to them (docs/providers.md). */
  readonly rejects?: readonly OptionalParam[];
}

export interface ProviderPreset extends PresetQuirks {
  readonly baseUrl: string;
  /** The variable its own SDKs and docs use for the key; absent: a local server without one. */
  readonly apiKeyEnv?: string;
}

/**
 * Named OpenAI-compatible clouds: what `preset` fills in. Figures from each
 * provider's API documentation, checked 2026-12 (docs/providers.md,
 * "OpenAI-compatible presets", says what each quirk is).
 */
export const PROVIDER_PRESETS = {
  mistral: {
    baseUrl: "https://api.mistral.ai/v1",
    apiKeyEnv: "MISTRAL_API_KEY",
    renames: { seed: "random_seed", max_completion_tokens: "max_tokens" },
    // Mistral answers any field it does not know with a 422 ("Extra inputs are not permitted").
    omits: ["stream_options", "user", "prompt_cache_key", "safety_identifier"],
    rejects: ["sampling.logit_bias", "logprobs", "service_tier", "metadata.provider_metadata"],
  },
  deepseek: { baseUrl: "https://api.deepseek.com/v1", apiKeyEnv: "DEEPSEEK_API_KEY", renames: { max_completion_tokens: "max_tokens" } },
  groq: { baseUrl: "https://api.groq.com/openai/v1", apiKeyEnv: "GROQ_API_KEY", rejects: ["logprobs", "sampling.logit_bias"] },
  together: { baseUrl: "https://api.together.xyz/v1", apiKeyEnv: "TOGETHER_API_KEY", renames: { max_completion_tokens: "max_tokens" } },
  fireworks: { baseUrl: "https://api.fireworks.ai/inference/v1", apiKeyEnv: "FIREWORKS_API_KEY", renames: { max_completion_tokens: "max_tokens" } },
  openrouter: { baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: "OPENROUTER_API_KEY" },
  xai: { baseUrl: "https://api.x.ai/v1", apiKeyEnv: "XAI_API_KEY" },
  ollama: { baseUrl: "http://localhost:11434/v1", renames: { max_completion_tokens: "max_tokens" } },
  vllm: { baseUrl: "http://localhost:8000/v1" },
} as const satisfies Record<string, ProviderPreset>;

export type PresetName = keyof typeof PROVIDER_PRESETS;

export const PRESET_NAMES = Object.keys(PROVIDER_PRESETS) as [PresetName, ...PresetName[]];

/** A preset's data, typed as the general shape (the literal table narrows each entry). */
export function presetOf(name: PresetName | undefined): ProviderPreset | undefined {
  return name === undefined ? undefined : (PROVIDER_PRESETS[name] as ProviderPreset);
}
