import type { ProviderConfig } from "../config/config.js";
import { anthropicAdapter } from "./anthropic/anthropic-adapter.js";
import { azureAdapter } from "./azure/azure-adapter.js";
import { azureEmbeddings } from "./azure/azure-embeddings.js";
import { bedrockAdapter } from "./bedrock/bedrock-adapter.js";
import { bedrockEmbeddings } from "./bedrock/bedrock-embeddings.js";
import type { EmbeddingAdapter } from "./embedding-adapter.js";
import { geminiAdapter } from "./gemini/gemini-adapter.js";
import { geminiEmbeddings } from "./gemini/gemini-embeddings.js";
import { openAiAdapter } from "./openai/openai-adapter.js";
import { openAiEmbeddings } from "./openai/openai-embeddings.js";
import { responsesAdapter } from "./openai-responses/responses-adapter.js";
import type { ProviderAdapter } from "./provider.js";
import { vertexAdapter } from "./vertex/vertex-adapter.js";
import { vertexEmbeddings } from "./vertex/vertex-embeddings.js";

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
    case "azure-openai":
      return azureAdapter;
    case "bedrock":
      return bedrockAdapter;
    case "vertex":
      return vertexAdapter;
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
    case "azure-openai":
      return azureEmbeddings;
    case "bedrock":
      return bedrockEmbeddings;
    case "vertex":
      return vertexEmbeddings;
  }
}
