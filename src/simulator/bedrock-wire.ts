import { EventStreamCodec, type MessageHeaders } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { anthropicWire } from "./anthropic-wire.js";
import { checkSigV4 } from "./bedrock-auth.js";
import { converseLoopInput, maxTokensOf } from "./loop-input.js";
import type { Script, ScriptStep } from "./script.js";
import { redactedIsValid, signRedacted, signThinking } from "./signatures.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface ConverseBody {
  messages?: unknown;
  system?: unknown;
  inferenceConfig?: { maxTokens?: unknown };
  additionalModelRequestFields?: { thinking?: { type?: unknown } };
  outputConfig?: { textFormat?: { type?: unknown; structure?: { jsonSchema?: { schema?: unknown } } } };
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const PATH = /^\/model\/([^/]+)\/(converse-stream|converse)$/;
const INVOKE_PATH = /^\/model\/([^/]+)\/(invoke-with-response-stream|invoke)$/;

/** Whether a path is a Bedrock Converse call. */
export function isConversePath(path: string): boolean {
  return PATH.test(path);
}

/** Whether a path is a Bedrock InvokeModel call. */
export function isInvokePath(path: string): boolean {
  return INVOKE_PATH.test(path);
}

/** Every text a Converse request carries: system blocks, text blocks, and the text of tool results. */
function texts(body: ConverseBody): string[] {
  const fromBlocks = (blocks: unknown): string[] =>
    list(blocks)
      .filter(isObject)
      .flatMap((b) => (typeof b.text === "string" ? [b.text] : isObject(b.toolResult) ? fromBlocks(b.toolResult.content) : []));
  return [...fromBlocks(body.system), ...list(body.messages).flatMap((m) => (isObject(m) ? fromBlocks(m.content) : []))];
}

/** Claude on Bedrock checks a replayed reasoning block's signature (and redacted blocks) as on Anthropic. */
function checkReplay(messages: unknown[]): void {
  messages.forEach((m, i) => {
    if (!isObject(m) || m.role !== "assistant") return;
    list(m.content).forEach((b, j) => {
      const r = isObject(b) && isObject(b.reasoningContent) ? b.reasoningContent : undefined;
      if (!r) return;
      const text = isObject(r.reasoningText) ? r.reasoningText : undefined;
      if (text && (typeof text.text !== "string" || text.signature !== signThinking(text.text))) throw new Error(`messages.${i}.content.${j}: the reasoning block's signature is invalid`);
      if (r.redactedContent !== undefined && (typeof r.redactedContent !== "string" || !redactedIsValid(r.redactedContent))) throw new Error(`messages.${i}.content.${j}: the redacted reasoning is invalid`);
    });
  });
}

function stopReason(script: Script): string {
  return script.finishReason === "tool_calls" ? "tool_use" : script.finishReason === "length" ? "max_tokens" : "end_turn";
}

function usage(script: Script): Json {
  const cache = script.promptCache;
  const read = cache?.read ?? 0;
  const written = cache?.written ?? 0;
  return {
    inputTokens: script.inputTokens - read - written,
    outputTokens: script.outputTokens,
    totalTokens: script.inputTokens + script.outputTokens,
    ...(cache ? { cacheReadInputTokens: read, cacheWriteInputTokens: written } : {}),
  };
}

const event = (name: string, data: Json, token = false): Frame => ({ event: name, data: JSON.stringify(data), token });

type BlockKind = "reasoning" | "text" | `tool:${number}`;
const blockOf = (step: ScriptStep): BlockKind => (step.type === "reasoning" ? "reasoning" : step.type === "text" ? "text" : `tool:${step.index}`);

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const str = (value: string) => ({ type: "string" as const, value });

/**
 * One AWS event-stream message: an event (`:event-type`) or, for the
 * exception names Bedrock uses in streams (`…Exception`), an exception
 * (`:exception-type`), JSON payload either way.
 */
function encode(frame: Frame): Buffer {
  const name = frame.event ?? "";
  const exception = name.endsWith("Exception");
  const headers: MessageHeaders = {
    ":message-type": str(exception ? "exception" : "event"),
    [exception ? ":exception-type" : ":event-type"]: str(name),
    ":content-type": str("application/json"),
  };
  return Buffer.from(codec.encode({ headers, body: fromUtf8(frame.data) }));
}

const IN_BAND = { rate_limit: "throttlingException", quota: "serviceQuotaExceededException", auth: "accessDeniedException", server: "modelStreamErrorException" } as const;

/** AWS Bedrock's Converse API (`POST /model/{modelId}/converse-stream`), SigV4-signed, streamed in AWS event-stream framing. */
export const bedrockWire: WireFormat = {
  name: "bedrock",
  checkAuth: checkSigV4,
  framing: { contentType: "application/vnd.amazon.eventstream", encode },
  parseRequest(raw, url) {
    const match = PATH.exec(url.pathname)!;
    const body = raw as ConverseBody;
    if (!Array.isArray(body.messages)) throw new Error("1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null");
    checkReplay(body.messages);
    const format = body.outputConfig?.textFormat;
    const schema = format?.type === "json_schema" && typeof format.structure?.jsonSchema?.schema === "string" ? (JSON.parse(format.structure.jsonSchema.schema) as Json) : undefined;
    return {
      model: decodeURIComponent(match[1]!),
      stream: match[2] === "converse-stream",
      texts: texts(body),
      ...converseLoopInput(body as { toolConfig?: unknown; messages?: unknown }),
      ...maxTokensOf(body.inferenceConfig?.maxTokens),
      includeUsage: true,
      ...(body.additionalModelRequestFields?.thinking?.type === "enabled" ? { mustThink: true } : {}),
      ...(schema ? { json: { schema } } : {}),
    } satisfies SimRequest;
  },
  streamFrames(script, _request, knobs) {
    const frames: Frame[] = [event("messageStart", { role: "assistant" })];
    let open: BlockKind | undefined;
    let index = -1;
    let thinking = "";
    const close = () => {
      if (open === undefined) return;
      if (open === "reasoning") frames.push(event("contentBlockDelta", { contentBlockIndex: index, delta: { reasoningContent: { signature: signThinking(thinking) } } }));
      frames.push(event("contentBlockStop", { contentBlockIndex: index }));
      open = undefined;
      thinking = "";
    };
    for (let r = 0; r < knobs.redacted; r++) {
      index++;
      frames.push(event("contentBlockDelta", { contentBlockIndex: index, delta: { reasoningContent: { redactedContent: signRedacted(r) } } }));
      frames.push(event("contentBlockStop", { contentBlockIndex: index }));
    }
    for (const step of script.steps) {
      if (step.type === "reasoning") thinking += step.text;
      const block = blockOf(step);
      if (block !== open) {
        close();
        index++;
        open = block;
        if (step.type === "tool_call") frames.push(event("contentBlockStart", { contentBlockIndex: index, start: { toolUse: { toolUseId: step.id, name: step.name } } }));
      }
      const delta = step.type === "reasoning" ? { reasoningContent: { text: step.text } } : step.type === "text" ? { text: step.text } : { toolUse: { input: step.type === "tool_call" ? step.arguments : step.fragment } };
      frames.push(event("contentBlockDelta", { contentBlockIndex: index, delta }, true));
    }
    close();
    frames.push(event("messageStop", { stopReason: stopReason(script) }));
    if (knobs.usage !== "never") frames.push(event("metadata", { usage: usage(script), metrics: { latencyMs: 1 } }));
    return frames;
  },
  // Bedrock sends no keepalive; for the ping knobs, an event of a type readers skip.
  ping: () => event("ping", {}),
  completeBody(script) {
    const content: Json[] = [];
    for (const step of script.steps) {
      const last = content.at(-1);
      if (step.type === "reasoning") {
        const text = isObject(last?.reasoningContent) && isObject(last.reasoningContent.reasoningText) ? last.reasoningContent.reasoningText : undefined;
        if (text) text.text = `${String(text.text)}${step.text}`;
        else content.push({ reasoningContent: { reasoningText: { text: step.text } } });
      } else if (step.type === "text") {
        if (typeof last?.text === "string") last.text = `${last.text}${step.text}`;
        else content.push({ text: step.text });
      } else if (step.type === "tool_call") content.push({ toolUse: { toolUseId: step.id, name: step.name, json: step.arguments } });
      else if (isObject(last?.toolUse)) last.toolUse.json = `${String(last.toolUse.json)}${step.fragment}`;
    }
    for (const block of content) {
      if (isObject(block.reasoningContent) && isObject(block.reasoningContent.reasoningText)) block.reasoningContent.reasoningText.signature = signThinking(String(block.reasoningContent.reasoningText.text));
      if (isObject(block.toolUse)) {
        block.toolUse.input = JSON.parse(String(block.toolUse.json)) as unknown;
        delete block.toolUse.json;
      }
    }
    return { output: { message: { role: "assistant", content } }, stopReason: stopReason(script), usage: usage(script), metrics: { latencyMs: 1 } };
  },
  errorBody(_status, message) {
    return { message };
  },
  inBandError(message, kind) {
    return event(IN_BAND[kind], { message });
  },
};

/** An Anthropic event as Bedrock's invoke stream carries it: a `chunk` whose `bytes` are the event's JSON, base64. */
const chunk = (frame: Frame): Frame => ({ event: "chunk", data: JSON.stringify({ bytes: Buffer.from(frame.data, "utf8").toString("base64") }), token: frame.token });

/**
 * Claude through Bedrock's InvokeModelWithResponseStream
 * (`POST /model/{modelId}/invoke-with-response-stream`): Anthropic's
 * Messages body and events (the Anthropic wire's own), with
 * `anthropic_version: bedrock-2023-05-31` instead of `model`, each event in
 * a `chunk`; SigV4 and exceptions as on Converse.
 */
export const bedrockInvokeWire: WireFormat = {
  name: "bedrock-invoke",
  checkAuth: checkSigV4,
  framing: bedrockWire.framing!,
  parseRequest(raw, url) {
    const match = INVOKE_PATH.exec(url.pathname)!;
    const body = raw as { anthropic_version?: unknown; model?: unknown };
    if (body.anthropic_version !== "bedrock-2023-05-31") throw new Error("anthropic_version: Field required (bedrock-2023-05-31)");
    if (body.model !== undefined) throw new Error("model: Extra inputs are not permitted");
    return anthropicWire.parseRequest({ ...body, model: decodeURIComponent(match[1]!), stream: match[2] === "invoke-with-response-stream" }, url);
  },
  streamFrames: (script, request, knobs, id) => anthropicWire.streamFrames(script, request, knobs, id).map(chunk),
  ping: () => chunk(anthropicWire.ping!()),
  completeBody: (script, request, id) => anthropicWire.completeBody(script, request, id),
  errorBody: bedrockWire.errorBody,
  inBandError: bedrockWire.inBandError,
};
