import { z } from "zod";
import { GatewayError } from "../../core/errors.js";

/**
 * What a reasoning item's `encrypted_content` carries through the client.
 * The gateway keeps no responses, so the state a provider verifies on the
 * next turn (Anthropic's thinking signatures and redacted blocks, Gemini's
 * thought signatures, on text and on function calls) travels the way
 * OpenAI's own stateless clients carry reasoning: opaque, in the output
 * items they send back. `provider` and `model` say who issued it, because a
 * signature verifies nowhere else. The encoder adds it whether or not the
 * request's `include` asked: OpenAI can leave it out because it keeps the
 * reasoning, and without it a tool-use turn with thinking cannot continue.
 */
export interface ReasoningEnvelope {
  readonly provider: string;
  readonly model: string;
  /** Signature of the reasoning text in the item's summary (or of the text before it, for Gemini). */
  readonly signature?: string;
  /** A block the provider withheld (Anthropic redacted_thinking). */
  readonly redactedData?: string;
  /** Signatures of function calls, by call_id (Gemini thoughtSignature). */
  readonly calls?: Readonly<Record<string, string>>;
}

/** Marks envelopes this gateway issued; OpenAI's own encrypted reasoning never starts so. */
const PREFIX = "sluice.rs1.";

/** Longest provider or model name an envelope may carry: configured names are far shorter. */
const MAX_NAME_CHARS = 256;

const wire = z.strictObject({
  p: z.string().max(MAX_NAME_CHARS),
  m: z.string().max(MAX_NAME_CHARS),
  s: z.string().optional(),
  r: z.string().optional(),
  c: z.record(z.string(), z.string()).optional(),
});

/**
 * Not encrypted: the signatures inside are the providers' own tamper
 * protection, and a client that alters them is refused by the provider.
 * Base64url keeps it one opaque token, as clients expect of this field.
 */
export function encodeReasoning(envelope: ReasoningEnvelope): string {
  const json = JSON.stringify({
    p: envelope.provider,
    m: envelope.model,
    s: envelope.signature,
    r: envelope.redactedData,
    c: envelope.calls,
  });
  return PREFIX + Buffer.from(json, "utf8").toString("base64url");
}

/** The envelope in `encrypted_content`; a 400 naming `field` for anything this gateway did not issue. */
export function decodeReasoning(content: string, field: string): ReasoningEnvelope {
  if (!content.startsWith(PREFIX)) {
    throw new GatewayError("invalid_request", `${field}: this reasoning was not issued by this gateway (OpenAI's encrypted reasoning can be read only by OpenAI): leave such reasoning items out of input`, { field });
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(content.slice(PREFIX.length), "base64url").toString("utf8"));
  } catch {
    json = undefined;
  }
  const parsed = wire.safeParse(json);
  if (!parsed.success) {
    throw new GatewayError("invalid_request", `${field}: damaged; send reasoning items back exactly as they were received`, { field });
  }
  const e = parsed.data;
  return { provider: e.p, model: e.m, signature: e.s, redactedData: e.r, calls: e.c };
}
