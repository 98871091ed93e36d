import type { Script, ScriptStep } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface AnthropicBody {
  model?: unknown;
  stream?: unknown;
  system?: unknown;
  messages?: unknown;
  tools?: unknown;
}

function blockTexts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return (content as Array<{ type?: unknown; text?: unknown; content?: unknown }>).flatMap((b) =>
    b.type === "text" && typeof b.text === "string" ? [b.text] : b.type === "tool_result" ? blockTexts(b.content) : [],
  );
}

const event = (name: string, data: Record<string, unknown>, token = false): Frame => ({ event: name, data: JSON.stringify({ type: name, ...data }), token });

type Block = "thinking" | "text" | `tool:${number}`;

function blockOf(step: ScriptStep): Block {
  return step.type === "reasoning" ? "thinking" : step.type === "text" ? "text" : `tool:${step.index}`;
}

function usage(script: Script): Record<string, number> {
  return { input_tokens: script.inputTokens, output_tokens: script.outputTokens };
}

/** Anthropic Messages (`POST /v1/messages`). Thinking, text and each tool call are content blocks. */
export const anthropicWire: WireFormat = {
  name: "anthropic",
  parseRequest(raw) {
    const body = raw as AnthropicBody;
    if (typeof body.model !== "string") throw new Error("model: Field required");
    if (!Array.isArray(body.messages)) throw new Error("messages: Field required");
    const tools = Array.isArray(body.tools) ? (body.tools as Array<{ name?: unknown }>) : [];
    return {
      model: body.model,
      stream: body.stream === true,
      texts: [...blockTexts(body.system), ...(body.messages as Array<{ content?: unknown }>).flatMap((m) => blockTexts(m.content))],
      toolNames: tools.map((t) => t.name).filter((n): n is string => typeof n === "string"),
      includeUsage: true,
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
          ...(withUsage ? { usage: { input_tokens: script.inputTokens, output_tokens: 1 } } : {}),
        },
      }),
    ];
    let open: Block | undefined;
    let index = -1;
    const close = () => {
      if (open === undefined) return;
      if (open === "thinking") frames.push(event("content_block_delta", { index, delta: { type: "signature_delta", signature: "sig-sim" } }));
      frames.push(event("content_block_stop", { index }));
      open = undefined;
    };
    for (const step of script.steps) {
      const block = blockOf(step);
      if (block !== open) {
        close();
        index++;
        open = block;
        const start =
          step.type === "reasoning"
            ? { type: "thinking", thinking: "" }
            : step.type === "text"
              ? { type: "text", text: "" }
              : step.type === "tool_call"
                ? { type: "tool_use", id: step.id, name: step.name, input: {} }
                : undefined;
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
        delta: { stop_reason: script.finishReason === "tool_calls" ? "tool_use" : "end_turn", stop_sequence: null },
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
        else content.push({ type: "thinking", thinking: step.text, signature: "sig-sim" });
      } else if (step.type === "text") {
        if (last?.type === "text") last.text = `${String(last.text)}${step.text}`;
        else content.push({ type: "text", text: step.text });
      } else if (step.type === "tool_call") content.push({ type: "tool_use", id: step.id, name: step.name, json: step.arguments });
      else if (last) last.json = `${String(last.json)}${step.fragment}`;
    }
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
      stop_reason: script.finishReason === "tool_calls" ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: usage(script),
    };
  },
  errorBody(status, message) {
    const type =
      status === 529 ? "overloaded_error" : status === 429 ? "rate_limit_error" : status === 401 ? "authentication_error" : status >= 500 ? "api_error" : "invalid_request_error";
    return { type: "error", error: { type, message } };
  },
  inBandError(message) {
    return event("error", { error: { type: "overloaded_error", message } });
  },
};
