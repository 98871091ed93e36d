import { countTokensBody, messagesBody } from "../edges/anthropic/anthropic-schema.js";
import { type HttpOperation, JSON_TYPE, type Parameter, SSE_TYPE } from "./http-operation.js";
import type { Components } from "./json-schema.js";
import { KEY } from "./security.js";
import { zodBodySchema } from "./zod-schema.js";

const TAG = "Anthropic";
const HEADERS: readonly Parameter[] = [
  { name: "anthropic-version", in: "header", description: "Accepted and not needed (it describes the client)." },
  { name: "anthropic-beta", in: "header", description: "Values an Anthropic target understands are forwarded; others are dropped and named in sluice-dropped-params." },
];

/** Anthropic's Messages API and its token count. */
export function anthropicOperations(components: Components): HttpOperation[] {
  return [
    {
      method: "POST",
      path: "/v1/messages",
      tag: TAG,
      summary: "Messages (streamed with stream: true)",
      security: KEY,
      parameters: [...HEADERS, { name: "beta", in: "query", description: "Claude Code sends ?beta=true; accepted." }],
      body: { schema: zodBodySchema("anthropic.MessagesRequest", messagesBody, components) },
      answer: { description: "A message, or with stream: true its events (message_start … message_stop).", contentTypes: [JSON_TYPE, SSE_TYPE] },
      error: "anthropic",
    },
    {
      method: "POST",
      path: "/v1/messages/count_tokens",
      tag: TAG,
      summary: "Count a request's input tokens as the gateway counts them",
      security: KEY,
      parameters: HEADERS,
      body: { schema: zodBodySchema("anthropic.CountTokensRequest", countTokensBody, components) },
      answer: { description: "`{input_tokens}`.", contentTypes: [JSON_TYPE] },
      error: "anthropic",
    },
  ];
}
