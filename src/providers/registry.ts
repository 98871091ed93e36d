import type { ProviderConfig } from "../config/config.js";
import { anthropicAdapter } from "./anthropic/anthropic-adapter.js";
import type { EmbeddingAdapter } from "./embedding-adapter.js";
import { geminiAdapter } from "./gemini/gemini-adapter.js";
import { geminiEmbeddings } from "./gemini/gemini-embeddings.js";
import { openAiAdapter } from "./openai/openai-adapter.js";
import { openAiEmbeddings } from "./openai/openai-embeddings.js";
import { responsesAdapter } from "./openai-responses/responses-adapter.js";
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
    case "openai-responses":
      return responsesAdapter;
  }
}

/** The embeddings API of a provider kind; undefined for kinds that have none (Anthropic). */
export function embeddingAdapterFor(kind: ProviderConfig["kind"]): EmbeddingAdapter | undefined {
  switch (kind) {
    case "openai":
    case "openai-responses":
      // The same upstream serves /v1/embeddings beside /v1/responses.
      return openAiEmbeddings;
    case "gemini":
      return geminiEmbeddings;
    case "anthropic":
      return undefined;
  }
}
