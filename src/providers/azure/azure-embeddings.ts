import type { EmbeddingAdapter } from "../embedding-adapter.js";
import { openAiEmbeddings, openAiEmbeddingsBody } from "../openai/openai-embeddings.js";
import { authorizeAzure } from "./azure-auth.js";
import { azureHeaders, azureUrl } from "./azure-request.js";

/** Azure's `/deployments/{deployment}/embeddings`: OpenAI's body and answer, Azure's URL and credentials. */
export const azureEmbeddings: EmbeddingAdapter = {
  buildRequest: (request, target) => ({ url: azureUrl(target, "embeddings"), headers: azureHeaders(target, "application/json"), body: JSON.stringify(openAiEmbeddingsBody(request, target.model)) }),
  readAnswer: openAiEmbeddings.readAnswer,
  authorize: authorizeAzure,
};
