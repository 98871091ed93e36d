import { responsesBody } from "../edges/responses/responses-schema.js";
import { anyValue, type HttpOperation, int, JSON_TYPE, obj, type Parameter, SSE_TYPE } from "./http-operation.js";
import type { Components } from "./json-schema.js";
import { KEY } from "./security.js";
import { zodBodySchema } from "./zod-schema.js";

const TAG = "OpenAI Responses";
const ITEMS_QUERY: readonly Parameter[] = [
  { name: "after", in: "query", description: "The last item id of the previous page." },
  { name: "limit", in: "query", description: "1 to 100 (default 20).", schema: { type: "integer", minimum: 1, maximum: 100 } },
  { name: "order", in: "query", description: "asc or desc (default desc).", schema: { enum: ["asc", "desc"] } },
];
const JSON_ANSWER = (description: string) => ({ description, contentTypes: [JSON_TYPE] });
const conversationBody = (required: readonly string[], fields: readonly ("items" | "metadata")[]) => ({
  schema: obj(Object.fromEntries(fields.map((f) => [f, f === "items" ? { type: "array", items: anyValue("A Responses input item."), maxItems: 20 } : { type: "object", additionalProperties: { type: "string" } }])), required, {
    additionalProperties: false,
  }),
  loose: "items are Responses input items, described by name only.",
});

/** OpenAI's Responses API: the call, its WebSocket mode, stored responses, background runs and conversations. */
export function responsesOperations(components: Components): HttpOperation[] {
  return [
    {
      method: "POST",
      path: "/v1/responses",
      tag: TAG,
      summary: "Create a response (streamed with stream: true)",
      security: KEY,
      body: { schema: zodBodySchema("openai.ResponsesRequest", responsesBody, components), loose: "input items and tools are checked further by the edge (refused fields are named in a 400)." },
      answer: { description: "A response object, or with stream: true its events.", contentTypes: [JSON_TYPE, SSE_TYPE] },
      error: "openai",
    },
    {
      method: "GET",
      path: "/v1/responses",
      tag: TAG,
      summary: "The WebSocket mode (an upgrade; 426 without one, or when responses.websocket is off)",
      security: KEY,
      answer: { status: "101", description: "Switching to a WebSocket of response.create messages and their events.", contentTypes: [] },
      error: "openai",
    },
    {
      method: "GET",
      path: "/v1/responses/{response_id}",
      tag: TAG,
      summary: "A stored response, or with stream=true a background run's events",
      security: KEY,
      parameters: [
        { name: "stream", in: "query", description: "true: the events, replayed then live.", schema: { type: "boolean" } },
        { name: "starting_after", in: "query", description: "The last event's sequence_number the client has.", schema: int() },
      ],
      answer: { description: "The response object, or its events.", contentTypes: [JSON_TYPE, SSE_TYPE] },
      error: "openai",
    },
    { method: "POST", path: "/v1/responses/{response_id}/cancel", tag: TAG, summary: "Cancel a background run", security: KEY, answer: JSON_ANSWER("The response object."), error: "openai" },
    { method: "GET", path: "/v1/responses/{response_id}/input_items", tag: TAG, summary: "A stored response's input items", security: KEY, parameters: ITEMS_QUERY, answer: JSON_ANSWER("A list of items."), error: "openai" },
    { method: "DELETE", path: "/v1/responses/{response_id}", tag: TAG, summary: "Delete a stored response", security: KEY, answer: JSON_ANSWER('`{id, object: "response", deleted: true}`.'), error: "openai" },
    { method: "POST", path: "/v1/conversations", tag: TAG, summary: "Create a conversation", security: KEY, body: conversationBody([], ["items", "metadata"]), answer: JSON_ANSWER("The conversation object."), error: "openai" },
    { method: "GET", path: "/v1/conversations/{conversation_id}", tag: TAG, summary: "A conversation", security: KEY, answer: JSON_ANSWER("The conversation object."), error: "openai" },
    {
      method: "POST",
      path: "/v1/conversations/{conversation_id}",
      tag: TAG,
      summary: "Replace a conversation's metadata",
      security: KEY,
      body: conversationBody(["metadata"], ["metadata"]),
      answer: JSON_ANSWER("The conversation object."),
      error: "openai",
    },
    { method: "DELETE", path: "/v1/conversations/{conversation_id}", tag: TAG, summary: "Delete a conversation", security: KEY, answer: JSON_ANSWER('`{id, object: "conversation.deleted", deleted: true}`.'), error: "openai" },
    { method: "POST", path: "/v1/conversations/{conversation_id}/items", tag: TAG, summary: "Add items", security: KEY, body: conversationBody(["items"], ["items"]), answer: JSON_ANSWER("A list of the items added."), error: "openai" },
    { method: "GET", path: "/v1/conversations/{conversation_id}/items", tag: TAG, summary: "A conversation's items", security: KEY, parameters: ITEMS_QUERY, answer: JSON_ANSWER("A list of items."), error: "openai" },
    { method: "GET", path: "/v1/conversations/{conversation_id}/items/{item_id}", tag: TAG, summary: "One item", security: KEY, answer: JSON_ANSWER("The item."), error: "openai" },
    { method: "DELETE", path: "/v1/conversations/{conversation_id}/items/{item_id}", tag: TAG, summary: "Delete one item", security: KEY, answer: JSON_ANSWER("The conversation object."), error: "openai" },
  ];
}
