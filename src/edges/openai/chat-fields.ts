import type { FieldTable } from "../../core/field-rules.js";

const ACCEPTED_NOT_ACTED_ON = "accepted, since SDKs and frameworks send it, and named in sluice-dropped-params when set: the answer is plain text without it.";

/**
 * `POST /v1/chat/completions`: what the edge does with each top-level field
 * the openai SDK declares, and the cache marks OpenAI-compatible clients
 * put inside messages and tools. request-fields.ts reads the `dropped`
 * rows; test/openai-request-fields.test.ts checks the whole list against
 * the SDK's type.
 */
export const CHAT_FIELDS: FieldTable = [
  { field: "model, messages, stream, stream_options", treatment: "honoured", why: "the request itself (stream_options.resumable is Sluice's)." },
  { field: "tools, tool_choice, parallel_tool_calls", treatment: "honoured", why: "function tools; tool_choice forcing a tool that is not declared is refused." },
  {
    field: "temperature, top_p, max_tokens, max_completion_tokens, stop, seed, presence_penalty, frequency_penalty, logit_bias",
    treatment: "honoured",
    why: "sampling; a target that cannot honour one refuses it by name unless the alias sets dropUnsupportedParams.",
  },
  { field: "response_format", treatment: "honoured", why: "text, JSON object or a JSON schema; refused by name where no target can enforce it." },
  { field: "reasoning_effort, reasoning", treatment: "honoured", why: "the canonical reasoning (reasoning.budget_tokens and include_reasoning are Sluice's)." },
  { field: "logprobs, top_logprobs", treatment: "honoured", why: "refused by name where the target returns none." },
  { field: "n", treatment: "refused", why: "only n=1: several answers would need several upstream calls the caller did not price.", refusedWhen: (v) => v !== null && v !== undefined && v !== 1 },
  { field: "metadata, user, service_tier", treatment: "honoured", why: "labels and OpenAI's metadata; the end user; the tier where a target takes it." },
  { field: "provider_options", treatment: "honoured", why: "Sluice's escape hatch: merged into that provider kind's body." },
  { field: "prompt_cache_key", treatment: "carried", why: "forwarded to OpenAI targets; others cache prefixes without it, and it is named." },
  { field: "safety_identifier", treatment: "carried", why: "forwarded to OpenAI targets; named elsewhere." },
  { field: "messages[].content[].cache_control, tools[].cache_control", treatment: "carried", why: "Anthropic-style breakpoints some OpenAI-compatible clients send: kept on Anthropic targets, named elsewhere." },
  { field: "audio", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "function_call", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "functions", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "modalities", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "moderation", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "prediction", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "prompt_cache_options", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "prompt_cache_retention", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "store", treatment: "dropped", why: "this gateway keeps no completions; the answer is the same." },
  { field: "verbosity", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "web_search_options", treatment: "dropped", why: ACCEPTED_NOT_ACTED_ON },
  { field: "any other top-level field", treatment: "refused", why: "not a Chat Completions parameter: a misspelt or unknown field is never ignored in silence." },
];
