import type { ProviderConfig } from "../config/config.js";
import { anthropicAdapter } from "./anthropic/anthropic-adapter.js";
import { geminiAdapter } from "./gemini/gemini-adapter.js";
import { openAiAdapter } from "./openai/openai-adapter.js";
import type { ProviderAdapter } from "./provider.js";

/** The adapter for a provider kind; the config schema guarantees the kind exists. */
export function adapterFor(kind: ProviderConfig["kind"]): ProviderAdapter {
  switch (kind) {
    case "openai":
      return openAiAdapter;
    case "anthropic":
      return anthropicAdapter;
    case "gemini":
      return geminiAdapter;
  }
}
