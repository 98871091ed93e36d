import { batchEmbedContentsBody, countTokensBody, embedContentBody, generateContentBody } from "../edges/gemini/gemini-schema.js";
import { type HttpOperation, JSON_TYPE, type Parameter, SSE_TYPE } from "./http-operation.js";
import type { Components } from "./json-schema.js";
import { KEY } from "./security.js";
import { zodBodySchema } from "./zod-schema.js";

const TAG = "Gemini";
const KEY_QUERY: Parameter = { name: "key", in: "query", description: "The virtual key, as older Google clients send it (x-goog-api-key is preferred; the query is never logged)." };

/**
 * Google's Gemini API under both prefixes it is served at (`/v1beta`, and
 * `/v1` for POSTs: GET /v1/models is OpenAI's). `{model}` is an alias.
 */
export function geminiOperations(components: Components): HttpOperation[] {
  const methods = [
    { name: "generateContent", summary: "One answer", body: zodBodySchema("gemini.GenerateContentRequest", generateContentBody, components), types: [JSON_TYPE] },
    { name: "streamGenerateContent", summary: "A streamed answer (?alt=sse for SSE; a JSON array without it)", body: zodBodySchema("gemini.GenerateContentRequest", generateContentBody, components), types: [SSE_TYPE, JSON_TYPE] },
    { name: "countTokens", summary: "Count a request's tokens as the gateway counts them", body: zodBodySchema("gemini.CountTokensRequest", countTokensBody, components), types: [JSON_TYPE] },
    { name: "embedContent", summary: "Embed one content", body: zodBodySchema("gemini.EmbedContentRequest", embedContentBody, components), types: [JSON_TYPE] },
    { name: "batchEmbedContents", summary: "Embed several contents", body: zodBodySchema("gemini.BatchEmbedContentsRequest", batchEmbedContentsBody, components), types: [JSON_TYPE] },
  ];
  const posts = ["/v1beta", "/v1"].flatMap((prefix) =>
    methods.map(
      (m): HttpOperation => ({
        method: "POST",
        path: `${prefix}/models/{model}:${m.name}`,
        tag: TAG,
        summary: m.summary,
        security: KEY,
        parameters: [KEY_QUERY, ...(m.name === "streamGenerateContent" ? [{ name: "alt", in: "query" as const, description: "sse: server-sent events.", schema: { const: "sse" } }] : [])],
        body: { schema: m.body },
        answer: { description: `Google's ${m.name} response.`, contentTypes: m.types },
        error: "google",
      }),
    ),
  );
  return [
    ...posts,
    { method: "GET", path: "/v1beta/models", tag: TAG, summary: "The aliases this key may call", security: KEY, parameters: [KEY_QUERY], answer: { description: "Google's model list.", contentTypes: [JSON_TYPE] }, error: "google" },
    { method: "GET", path: "/v1beta/models/{model}", tag: TAG, summary: "One alias", security: KEY, parameters: [KEY_QUERY], answer: { description: "Google's model object.", contentTypes: [JSON_TYPE] }, error: "google" },
  ];
}
