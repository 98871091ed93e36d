import { createHash } from "node:crypto";
import type { ChatMessage, ChatRequest, ContentPart, ResponseFormat, ToolCall, ToolDefinition } from "../core/chat-request.js";
import type { RequestPolicy } from "./pii-policy.js";
import { createPiiVault, type Detect, type PiiVault } from "./pii-vault.js";

/** A request with its personal data replaced by placeholders, and the vault that puts them back. */
export interface RedactedRequest {
  readonly request: ChatRequest;
  readonly vault: PiiVault;
  /**
   * Fields in which something was found that no placeholder can stand in
   * for (a tool's or a participant's name, an image's URL: a provider
   * refuses `<EMAIL_1>` there, or fetches it): a redacting policy refuses
   * the request; `block` and `local-only` act on the finding as on any.
   */
  readonly unplaceable: readonly string[];
}

type Redact = (text: string) => string;

/**
 * Every string of `request` a provider receives, screened: the system
 * prompt and turns (adjacent text parts of a message as one text), tool
 * results, the arguments of tool calls sent back (keys and values), tool
 * descriptions and parameter schemas, the response format's description
 * and schema, stop sequences, the end-user id (`user`, Anthropic's
 * `metadata.user_id`), the provider metadata map (keys and values) and
 * provider options. What the policy's detectors find is replaced by
 * `<KIND_N>` placeholders; names and URLs are screened but kept (see
 * `unplaceable`). Not screened: signed reasoning (providers verify the
 * signature against the exact text), ids the provider issued (tool-call
 * ids), `data:` URLs (bytes, not text), and labels (never sent upstream:
 * they are the request's tags, screened as such). The same vault serves
 * the answer (restoring-sink.ts).
 */
export function redactRequest(request: ChatRequest, policy: RequestPolicy, detect?: Detect): RedactedRequest {
  const vault = createPiiVault(policy.custom, detect);
  const redact: Redact = (text) => vault.redact(text, policy.kinds);
  const unplaceable: string[] = [];
  const name = (text: string | undefined, field: string) => {
    if (text !== undefined && text !== "" && redact(text) !== text) unplaceable.push(field);
  };

  const messages = request.messages.map((message, i) => redactMessage(message, `messages[${i}]`, vault, policy.kinds, name));
  const tools = request.tools.map((tool, i) => redactTool(tool, `tools[${i}]`, redact, name));
  const responseFormat = request.responseFormat && redactFormat(request.responseFormat, redact, name);
  const stop = request.sampling.stop.map(redact);
  const { metadata } = request;
  const userId = metadata.userId === undefined ? undefined : redact(metadata.userId);
  const providerMetadata = metadata.providerMetadata && (redactJson(metadata.providerMetadata, redact, false) as Readonly<Record<string, string>>);
  const providerOptions = request.providerOptions && (redactJson(request.providerOptions, redact, false) as ChatRequest["providerOptions"]);
  if (vault.size === 0) return { request, vault, unplaceable };
  return {
    request: {
      ...request,
      messages,
      tools,
      sampling: { ...request.sampling, stop },
      metadata: { ...metadata, ...(userId === undefined ? {} : { userId }), ...(providerMetadata ? { providerMetadata } : {}) },
      ...(responseFormat ? { responseFormat } : {}),
      ...(providerOptions ? { providerOptions } : {}),
    },
    vault,
    unplaceable,
  };
}

function redactMessage(message: ChatMessage, at: string, vault: PiiVault, kinds: ReadonlySet<string>, name: (text: string | undefined, field: string) => void): ChatMessage {
  const redact: Redact = (text) => vault.redact(text, kinds);
  name(message.name, `${at}.name`);
  let changed = false;
  const content: ContentPart[] = [];
  const parts = message.content;
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j]!;
    if (part.type === "image_url") {
      if (!part.url.startsWith("data:")) name(part.url, `${at}.content[${j}].image_url.url`);
      content.push(part);
      continue;
    }
    if (part.type !== "text") {
      content.push(part);
      continue;
    }
    // A run of text parts: the provider reads them one after the other, so a value may start in one and end in the next.
    let end = j;
    while (end + 1 < parts.length && parts[end + 1]!.type === "text") end++;
    const run = parts.slice(j, end + 1) as Array<Extract<ContentPart, { type: "text" }>>;
    const texts = vault.redactJoined(
      run.map((p) => p.text),
      kinds,
    );
    run.forEach((p, k) => {
      const text = texts[k]!;
      if (text === p.text) return content.push(p);
      changed = true;
      // A part left empty by a value that started in the one before: providers refuse empty text blocks.
      if (text !== "" || p.text === "") content.push({ ...p, text });
    });
    j = end;
  }
  const toolCalls = message.toolCalls?.map((call, k): ToolCall => {
    name(call.name, `${at}.tool_calls[${k}].name`);
    const args = redactArguments(call.arguments, redact);
    if (args === call.arguments) return call;
    changed = true;
    return { ...call, arguments: args };
  });
  return changed ? { ...message, content, ...(toolCalls ? { toolCalls } : {}) } : message;
}

function redactTool(tool: ToolDefinition, at: string, redact: Redact, name: (text: string | undefined, field: string) => void): ToolDefinition {
  name(tool.name, `${at}.name`);
  const description = redact(tool.description);
  const parameters = redactJson(tool.parameters, redact, false) as ToolDefinition["parameters"];
  return description === tool.description && parameters === tool.parameters ? tool : { ...tool, description, parameters };
}

function redactFormat(format: ResponseFormat, redact: Redact, name: (text: string | undefined, field: string) => void): ResponseFormat {
  if (format.type !== "json_schema") return format;
  name(format.name, "response_format.json_schema.name");
  const description = format.description === undefined ? undefined : redact(format.description);
  const schema = redactJson(format.schema, redact, false) as typeof format.schema;
  if (description === format.description && schema === format.schema) return format;
  return { ...format, schema, ...(description === undefined ? {} : { description }) };
}

/**
 * A JSON value with every string and every object key screened; the same
 * value (by reference) when nothing changed. With `numbers`, a number that
 * is itself personal data (a phone number written as a number) becomes its
 * placeholder string, so the text stays JSON; without, numbers are left
 * (schemas and provider options: a seed or a bound is no one's data).
 */
export function redactJson(value: unknown, redact: Redact, numbers: boolean): unknown {
  if (typeof value === "string") return redact(value);
  if (typeof value === "number") {
    if (!numbers) return value;
    const text = String(value);
    const out = redact(text);
    return out === text ? value : out;
  }
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const next = redactJson(item, redact, numbers);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  if (value !== null && typeof value === "object") {
    let changed = false;
    const entries = Object.entries(value).map(([key, item]): [string, unknown] => {
      const nextKey = redact(key);
      const next = redactJson(item, redact, numbers);
      if (nextKey !== key || next !== item) changed = true;
      return [nextKey, next];
    });
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}

/**
 * Tool-call arguments are JSON: keys and string values are redacted in
 * place, and a number that is itself personal data becomes its placeholder
 * string, so the text stays JSON. Arguments that do not parse are redacted
 * as text.
 */
export function redactArguments(args: string, redact: Redact): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return redact(args);
  }
  const out = redactJson(parsed, redact, true);
  return out === parsed ? args : JSON.stringify(out);
}

/**
 * What the response cache keys a redacted request by: the placeholders'
 * text, plus a digest of the values behind them, so two requests that
 * differ only in the personal data they hold never share an entry (the
 * answer was written for one person's data), and the values themselves
 * never appear in a key.
 */
export function cacheViewOf(redacted: RedactedRequest): ChatRequest {
  if (redacted.vault.size === 0) return redacted.request;
  const digest = createHash("sha256").update(redacted.vault.fingerprint()).digest("hex");
  return { ...redacted.request, piiDigest: digest } as ChatRequest;
}
