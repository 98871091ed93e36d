import { type ChatRequest, PROVIDER_KINDS } from "./chat-request.js";
import { quoteClientValue } from "./client-text.js";
import { GatewayError } from "./errors.js";

/** Limits of the request options beyond messages and tools. One block, so they are easy to find. */
export const OPTION_LIMITS = {
  schemaName: /^[A-Za-z0-9_-]{1,64}$/,
  maxBudgetTokens: 1_000_000,
  maxTopLogprobs: 20,
  maxLogitBias: 300,
  maxProviderMetadata: 16,
  maxMetadataKeyChars: 64,
  maxMetadataValueChars: 512,
  /** Anthropic and Gemini signatures run to a few KB; this leaves room and no more. */
  maxSignatureChars: 65_536,
} as const;

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

function range(value: number | undefined, min: number, max: number, field: string): void {
  if (value !== undefined && !(value >= min && value <= max)) invalid(field, `must be between ${min} and ${max}`);
}

/**
 * Checks of the structured-output, reasoning, logprob and provider options,
 * and of replayed reasoning and signatures. Field paths are the protobuf
 * names, as in validate.ts.
 */
export function validateOptions(request: ChatRequest, nestsTooDeep: (value: unknown) => boolean): void {
  request.messages.forEach((m, i) => {
    m.content.forEach((part, j) => {
      if (part.type !== "reasoning") return;
      const at = `messages[${i}].content[${j}].reasoning`;
      if (m.role !== "assistant") invalid(at, "only assistant messages carry reasoning");
      if ((part.signature?.length ?? 0) > OPTION_LIMITS.maxSignatureChars) invalid(`${at}.signature`, `at most ${OPTION_LIMITS.maxSignatureChars} characters`);
      if (part.redactedData !== undefined && (part.text !== "" || part.signature !== undefined)) {
        invalid(at, "redacted_data excludes text and signature");
      }
    });
    (m.toolCalls ?? []).forEach((call, j) => {
      if ((call.signature?.length ?? 0) > OPTION_LIMITS.maxSignatureChars) {
        invalid(`messages[${i}].tool_calls[${j}].signature`, `at most ${OPTION_LIMITS.maxSignatureChars} characters`);
      }
    });
  });

  const format = request.responseFormat;
  if (format?.type === "json_schema") {
    if (!OPTION_LIMITS.schemaName.test(format.name)) invalid("response_format.json_schema.name", "must be 1-64 letters, digits, '_' or '-'");
    if (nestsTooDeep(format.schema)) invalid("response_format.json_schema.schema", "JSON Schema nested too deeply");
  }

  const r = request.reasoning;
  range(r?.budgetTokens, 0, OPTION_LIMITS.maxBudgetTokens, "reasoning.budget_tokens");

  const s = request.sampling;
  range(s.presencePenalty, -2, 2, "sampling.presence_penalty");
  range(s.frequencyPenalty, -2, 2, "sampling.frequency_penalty");
  const bias = Object.entries(s.logitBias ?? {});
  if (bias.length > OPTION_LIMITS.maxLogitBias) invalid("sampling.logit_bias", `at most ${OPTION_LIMITS.maxLogitBias} entries`);
  for (const [token, value] of bias) {
    if (!/^\d{1,10}$/.test(token)) invalid("sampling.logit_bias", `keys must be token ids, not ${quoteClientValue(token, 32)}`);
    range(value, -100, 100, "sampling.logit_bias");
  }

  if (request.logprobs) range(request.logprobs.topLogprobs, 0, OPTION_LIMITS.maxTopLogprobs, "top_logprobs");

  const metadata = Object.entries(request.metadata.providerMetadata ?? {});
  if (metadata.length > OPTION_LIMITS.maxProviderMetadata) invalid("metadata.provider_metadata", `at most ${OPTION_LIMITS.maxProviderMetadata} entries`);
  for (const [key, value] of metadata) {
    if (key.length === 0 || key.length > OPTION_LIMITS.maxMetadataKeyChars) invalid("metadata.provider_metadata", `keys must be 1-${OPTION_LIMITS.maxMetadataKeyChars} characters`);
    if (value.length > OPTION_LIMITS.maxMetadataValueChars) invalid("metadata.provider_metadata", `values must be at most ${OPTION_LIMITS.maxMetadataValueChars} characters`);
  }

  for (const [kind, options] of Object.entries(request.providerOptions ?? {})) {
    const at = `provider_options[${quoteClientValue(kind, 32)}]`;
    if (!(PROVIDER_KINDS as readonly string[]).includes(kind)) invalid(at, `keys must be a provider kind: ${PROVIDER_KINDS.join(", ")}`);
    if (options === null || typeof options !== "object" || Array.isArray(options)) invalid(at, "must be a JSON object");
    if (nestsTooDeep(options)) invalid(at, "nested too deeply");
  }
}
