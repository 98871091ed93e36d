import { BATCH_ENDPOINTS } from "../batch/batch-file.js";
import { CHAT_FIELDS } from "../edges/openai/chat-fields.js";
import { anyValue, type HttpOperation, int, JSON_TYPE, obj, type Parameter, SSE_TYPE, str } from "./http-operation.js";
import type { JsonSchema } from "./json-schema.js";
import { KEY } from "./security.js";

/** Chat Completions' body from the edge's field table: every top-level field it accepts, each with what the gateway does with it. */
function chatBody(): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const rule of CHAT_FIELDS) {
    for (const field of rule.field.split(", ")) {
      if (/[ .[]/.test(field)) continue;
      properties[field] = anyValue(`${rule.treatment}: ${rule.why}`);
    }
  }
  return obj(properties, ["model", "messages"], { additionalProperties: false });
}

const TAG = "OpenAI";
const LIST_QUERY: readonly Parameter[] = [
  { name: "after", in: "query", description: "The last id of the previous page." },
  { name: "limit", in: "query", description: "Items per page.", schema: int() },
];

/** The OpenAI facade: Chat Completions, its resumable streams, embeddings, models, files and batches. */
export function openAiOperations(): HttpOperation[] {
  return [
    {
      method: "POST",
      path: "/v1/chat/completions",
      tag: TAG,
      summary: "Chat Completions (streamed with stream: true)",
      description: 'OpenAI\'s Chat Completions. A stream that ends without `data: [DONE]` failed: its last event is `{"error": …}` (docs/streams.md).',
      security: KEY,
      body: { schema: chatBody(), loose: "top-level fields only; their contents are OpenAI's (messages, tools, response_format)." },
      answer: { description: "A chat.completion, or with stream: true a stream of chat.completion.chunk events.", contentTypes: [JSON_TYPE, SSE_TYPE] },
      error: "openai",
    },
    {
      method: "GET",
      path: "/v1/chat/completions/{response_id}/stream",
      tag: TAG,
      summary: "Resume a resumable stream (stream_options.resumable) after a disconnect",
      security: KEY,
      parameters: [{ name: "last-event-id", in: "header", description: "The id of the last event the client has (none: from the start)." }],
      answer: { description: "The stream's events after the given one, then the rest as they come.", contentTypes: [SSE_TYPE] },
      error: "openai",
    },
    {
      method: "POST",
      path: "/v1/embeddings",
      tag: TAG,
      summary: "Embeddings",
      security: KEY,
      body: {
        schema: obj(
          {
            model: str("An alias whose target embeds."),
            input: { oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }, { type: "array", items: { type: "integer" } }, { type: "array", items: { type: "array", items: { type: "integer" } } }] },
            dimensions: { type: ["integer", "null"] },
            encoding_format: { enum: ["float", "base64"] },
            user: str(),
          },
          ["model", "input"],
          { additionalProperties: false },
        ),
      },
      answer: { description: "OpenAI's list of embeddings.", contentTypes: [JSON_TYPE] },
      error: "openai",
    },
    { method: "GET", path: "/v1/models", tag: TAG, summary: "The aliases this key may call", security: KEY, answer: { description: "OpenAI's model list.", contentTypes: [JSON_TYPE] }, error: "openai" },
    { method: "GET", path: "/v1/models/{model}", tag: TAG, summary: "One alias", security: KEY, answer: { description: "OpenAI's model object.", contentTypes: [JSON_TYPE] }, error: "openai" },
    {
      method: "POST",
      path: "/v1/files",
      tag: TAG,
      summary: "Upload a batch input file (JSONL)",
      security: KEY,
      body: { contentType: "multipart/form-data", schema: obj({ file: { type: "string", contentMediaType: "application/jsonl" }, purpose: { const: "batch" } }, ["file", "purpose"]) },
      answer: { description: "OpenAI's file object.", contentTypes: [JSON_TYPE] },
      error: "openai",
    },
    { method: "GET", path: "/v1/files/{file_id}", tag: TAG, summary: "A file's object", security: KEY, answer: { description: "OpenAI's file object.", contentTypes: [JSON_TYPE] }, error: "openai" },
    { method: "DELETE", path: "/v1/files/{file_id}", tag: TAG, summary: "Delete a file", security: KEY, answer: { description: '`{id, object: "file", deleted: true}`.', contentTypes: [JSON_TYPE] }, error: "openai" },
    { method: "GET", path: "/v1/files/{file_id}/content", tag: TAG, summary: "A file's bytes (batch input, output or errors)", security: KEY, answer: { description: "The JSONL.", contentTypes: ["application/jsonl"] }, error: "openai" },
    {
      method: "POST",
      path: "/v1/batches",
      tag: TAG,
      summary: "Create a batch",
      security: KEY,
      body: {
        schema: obj(
          { input_file_id: str(), endpoint: { enum: [...BATCH_ENDPOINTS] }, completion_window: { const: "24h" }, metadata: { type: "object", additionalProperties: { type: "string" } } },
          ["input_file_id", "endpoint", "completion_window"],
          { additionalProperties: false },
        ),
      },
      answer: { description: "OpenAI's batch object.", contentTypes: [JSON_TYPE] },
      error: "openai",
    },
    {
      method: "GET",
      path: "/v1/batches",
      tag: TAG,
      summary: "The key's batches, newest first",
      security: KEY,
      parameters: LIST_QUERY,
      answer: { description: "OpenAI's cursor page of batches.", contentTypes: [JSON_TYPE] },
      error: "openai",
    },
    { method: "GET", path: "/v1/batches/{batch_id}", tag: TAG, summary: "A batch", security: KEY, answer: { description: "OpenAI's batch object.", contentTypes: [JSON_TYPE] }, error: "openai" },
    { method: "POST", path: "/v1/batches/{batch_id}/cancel", tag: TAG, summary: "Cancel a batch", security: KEY, answer: { description: "OpenAI's batch object (cancelling).", contentTypes: [JSON_TYPE] }, error: "openai" },
  ];
}
