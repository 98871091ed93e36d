import { anthropicPromptBlocks, blockTexts, countBreakpoints } from "./anthropic-prompt.js";
import { anthropicLoopInput, maxTokensOf } from "./loop-input.js";
import type { Script, ScriptStep } from "./script.js";
import { redactedIsValid, signRedacted, signThinking } from "./signatures.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface AnthropicBody {
  model?: unknown;
  stream?: unknown;
  system?: unknown;
  messages?: unknown;
  tools?: unknown;
  max_tokens?: unknown;
  tool_choice?: unknown;
  thinking?: { type?: unknown; budget_tokens?: unknown };
  output_config?: { format?: { type?: unknown; schema?: unknown }; effort?: unknown };
}

interface Block {
  type?: unknown;
  thinking?: unknown;
  signature?: unknown;
  data?: unknown;
}

/**
 * Anthropic's replay rules, as the Messages API enforces them: a thinking
 * block must carry the signature issued for exactly its text, redacted
 * blocks must be returned as issued, and with thinking `enabled` the last
 * assistant turn that used tools must start with its thinking block. Only
 * `enabled`: there the model always thinks before it answers, so a turn
 * without its thinking block was altered. With `adaptive` thinking is
 * optional for the model (Anthropic's adaptive-thinking docs), a turn may
 * come without any, and the stateless API cannot tell a turn that skipped
 * thinking from one stripped of it: Claude Code sends adaptive on every
 * request, and the simulator, thinking only when `reasoning` says so, must
 * accept the turns it produced itself.
 */
function checkReplay(body: AnthropicBody): void {
  const messages = body.messages as Array<{ role?: unknown; content?: unknown }>;
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || !Array.isArray(m.content)) return;
    (m.content as Block[]).forEach((b, j) => {
      if (b.type === "thinking" && (typeof b.thinking !== "string" || b.signature !== signThinking(b.thinking))) {
        throw new Error(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
      }
      if (b.type === "redacted_thinking" && (typeof b.data !== "string" || !redactedIsValid(b.data))) {
        throw new Error(`messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`);
      }
    });
  });
  const thinking = body.thinking?.type === "enabled";
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
  const content = lastAssistant >= 0 ? messages[lastAssistant]!.content : undefined;
  if (!thinking || !Array.isArray(content)) return;
  const blocks = content as Block[];
  if (blocks.some((b) => b.type === "tool_use") && blocks[0]?.type !== "thinking" && blocks[0]?.type !== "redacted_thinking") {
    throw new Error(
      `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(blocks[0]?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`,
    );
  }
}

/** Claude 4.6: both thinking forms. */
const BOTH_FORMS = /^claude-(opus|sonnet)-4-6/;
/** Claude 4.7 and later: adaptive only. */
const ADAPTIVE_ONLY = /^claude-(opus-4-[78]|opus-5|mythos|fable)/;
/** The one model before 4.6 that takes an effort word. */
const EFFORT_BEFORE_ADAPTIVE = /^claude-opus-4-5/;

/**
 * Anthropic's thinking rules, as its docs give them, for Claude model ids
 * (the simulator's own model names take either form): adaptive thinking
 * from Claude 4.6 on, only adaptive from 4.7, only `enabled` with
 * budget_tokens before 4.6, where only Opus 4.5 takes `output_config.effort`.
 * A budget is at least 1,024 tokens and below max_tokens, on every model.
 * Written apart from the gateway's own table on purpose: tests check one
 * against the other.
 */
function checkThinking(body: AnthropicBody, model: string): void {
  const type = body.thinking?.type;
  if (type === "enabled") {
    const budget = body.thinking?.budget_tokens;
    if (typeof budget !== "number" || budget < 1024) throw new Error("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    if (typeof body.max_tokens !== "number" || body.max_tokens <= budget) throw new Error("`max_tokens` must be greater than `thinking.budget_tokens`");
  }
  if (!model.startsWith("claude-")) return;
  const adaptive = BOTH_FORMS.test(model) || ADAPTIVE_ONLY.test(model);
  if (type === "adaptive" && !adaptive) {
    throw new Error('"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" with "budget_tokens" to control thinking behavior.');
  }
  if (type === "enabled" && ADAPTIVE_ONLY.test(model)) {
    throw new Error('"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.');
  }
  if (body.output_config?.effort !== undefined && !adaptive && !EFFORT_BEFORE_ADAPTIVE.test(model)) {
    throw new Error('"output_config.effort" is not supported for this model');
  }
}

const event = (name: string, data: Record<string, unknown>, token = false): Frame => ({ event: name, data: JSON.stringify({ type: name, ...data }), token });

type BlockKind = "thinking" | "text" | `tool:${number}`;

function blockOf(step: ScriptStep): BlockKind {
  return step.type === "reasoning" ? "thinking" : step.type === "text" ? "text" : `tool:${step.index}`;
}

/**
 * Input usage as Anthropic reports it: with breakpoints in the request,
 * input_tokens counts only what is neither read from nor written to the
 * cache, and both cache fields are present (0 when nothing was).
 */
function inputUsage(script: Script): Record<string, unknown> {
  const cache = script.promptCache;
  if (!cache) return { input_tokens: script.inputTokens };
  return {
    input_tokens: script.inputTokens - cache.read - cache.written,
    cache_creation_input_tokens: cache.written,
    cache_read_input_tokens: cache.read,
    // The writes by lifetime, as Anthropic splits them (5m and 1h are billed at different rates).
    cache_creation: { ephemeral_5m_input_tokens: cache.written - cache.written1h, ephemeral_1h_input_tokens: cache.written1h },
  };
}

function stopReason(script: Script): string {
  return script.finishReason === "tool_calls" ? "tool_use" : script.finishReason === "length" ? "max_tokens" : "end_turn";
}

function usage(script: Script): Record<string, unknown> {
  return { ...inputUsage(script), output_tokens: script.outputTokens };
}

/** Anthropic Messages (`POST /v1/messages`). Thinking, text and each tool call are content blocks. */
export const anthropicWire: WireFormat = {
  name: "anthropic",
  parseRequest(raw) {
    const body = raw as AnthropicBody;
    if (typeof body.model !== "string") throw new Error("model: Field required");
    if (!Array.isArray(body.messages)) throw new Error("messages: Field required");
    checkThinking(body, body.model.split("?")[0]!);
    checkReplay(body);
    const promptBlocks = countBreakpoints(body) > 0 ? anthropicPromptBlocks(body) : undefined;
    const format = body.output_config?.format;
    return {
      model: body.model,
      stream: body.stream === true,
      texts: [...blockTexts(body.system), ...(body.messages as Array<{ content?: unknown }>).flatMap((m) => blockTexts(m.content))],
      ...anthropicLoopInput(body),
      ...maxTokensOf(body.max_tokens),
      includeUsage: true,
      ...(promptBlocks ? { promptBlocks } : {}),
      ...(body.thinking?.type === "enabled" ? { mustThink: true } : {}),
      ...(format?.type === "json_schema" ? { json: { schema: (format.schema ?? {}) as Record<string, unknown> } } : {}),
    } satisfies SimRequest;
  },
  streamFrames(script, request, knobs, id) {
    const withUsage = knobs.usage !== "never";
    const frames: Frame[] = [
      event("message_start", {
        message: {
          id,
          type: "message",
          role: "assistant",
          model: request.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          ...(withUsage ? { usage: { ...inputUsage(script), output_tokens: 1 } } : {}),
        },
      }),
    ];
    let open: BlockKind | undefined;
    let index = -1;
    let thinking = "";
    const close = () => {
      if (open === undefined) return;
      if (open === "thinking") frames.push(event("content_block_delta", { index, delta: { type: "signature_delta", signature: signThinking(thinking) } }));
      frames.push(event("content_block_stop", { index }));
      open = undefined;
      thinking = "";
    };
    for (let r = 0; r < knobs.redacted; r++) {
      index++;
      frames.push(event("content_block_start", { index, content_block: { type: "redacted_thinking", data: signRedacted(r) } }));
      frames.push(event("content_block_stop", { index }));
    }
    for (const step of script.steps) {
      if (step.type === "reasoning") thinking += step.text;
      const block = blockOf(step);
      if (block !== open) {
        close();
        index++;
        open = block;
        const start =
          step.type === "reasoning" ? { type: "thinking", thinking: "" } : step.type === "text" ? { type: "text", text: "" } : step.type === "tool_call" ? { type: "tool_use", id: step.id, name: step.name, input: {} } : undefined;
        frames.push(event("content_block_start", { index, content_block: start }));
      }
      const delta =
        step.type === "reasoning"
          ? { type: "thinking_delta", thinking: step.text }
          : step.type === "text"
            ? { type: "text_delta", text: step.text }
            : { type: "input_json_delta", partial_json: step.type === "tool_call" ? step.arguments : step.fragment };
      frames.push(event("content_block_delta", { index, delta }, true));
    }
    close();
    frames.push(
      event("message_delta", {
        delta: { stop_reason: stopReason(script), stop_sequence: null },
        ...(withUsage ? { usage: { output_tokens: script.outputTokens } } : {}),
      }),
    );
    frames.push(event("message_stop", {}));
    return frames;
  },
  ping: () => event("ping", {}),
  completeBody(script, request, id) {
    const content: Array<Record<string, unknown>> = [];
    for (const step of script.steps) {
      const last = content.at(-1);
      if (step.type === "reasoning") {
        if (last?.type === "thinking") last.thinking = `${String(last.thinking)}${step.text}`;
        else content.push({ type: "thinking", thinking: step.text });
      } else if (step.type === "text") {
        if (last?.type === "text") last.text = `${String(last.text)}${step.text}`;
        else content.push({ type: "text", text: step.text });
      } else if (step.type === "tool_call") content.push({ type: "tool_use", id: step.id, name: step.name, json: step.arguments });
      else if (last) last.json = `${String(last.json)}${step.fragment}`;
    }
    for (const block of content) if (block.type === "thinking") block.signature = signThinking(String(block.thinking));
    for (const block of content) {
      if (block.type !== "tool_use") continue;
      block.input = JSON.parse(String(block.json)) as unknown;
      delete block.json;
    }
    return {
      id,
      type: "message",
      role: "assistant",
      model: request.model,
      content,
      stop_reason: stopReason(script),
      stop_sequence: null,
      usage: usage(script),
    };
  },
  errorBody(status, message) {
    const type = status === 529 ? "overloaded_error" : status === 429 ? "rate_limit_error" : status === 401 ? "authentication_error" : status >= 500 ? "api_error" : "invalid_request_error";
    return { type: "error", error: { type, message } };
  },
  inBandError(message, kind) {
    const type = kind === "rate_limit" ? "rate_limit_error" : kind === "quota" ? "billing_error" : kind === "auth" ? "authentication_error" : "overloaded_error";
    return event("error", { error: { type, message } });
  },
};
