import type { ContentDelta, FinishReason, UsageDelta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StreamTranslator, UpstreamTarget } from "../provider.js";
import { bedrockStreamError } from "./bedrock-errors.js";

interface ConverseEvent {
  contentBlockIndex?: unknown;
  start?: { toolUse?: { toolUseId?: unknown; name?: unknown } };
  delta?: {
    text?: unknown;
    toolUse?: { input?: unknown };
    reasoningContent?: { text?: unknown; signature?: unknown; redactedContent?: unknown };
  };
  stopReason?: unknown;
  usage?: { inputTokens?: unknown; outputTokens?: unknown; cacheReadInputTokens?: unknown; cacheWriteInputTokens?: unknown };
  message?: unknown;
}

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** Converse stop reasons in our vocabulary. */
export function converseFinishReason(value: string): FinishReason {
  switch (value) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter";
    default:
      return "other";
  }
}

/**
 * ConverseStream events → deltas. Tool-use blocks open with
 * contentBlockStart (id and name), their input streams as JSON text; text
 * and reasoning come as deltas without a start. The stop reason
 * (messageStop) comes before the usage (metadata, the last event), so both
 * are handed on when the body ends; a body that ends before messageStop was
 * cut short.
 */
export function createConverseTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  const tools = new Map<number, number>();
  let toolCount = 0;
  let finish: FinishReason | undefined;
  let usage: UsageDelta | undefined;
  const malformed = (cause?: unknown) => new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });

  function delta(e: ConverseEvent): ContentDelta[] {
    const d = e.delta;
    if (!d) throw malformed();
    if (typeof d.text === "string") return d.text === "" ? [] : [{ type: "text", text: d.text }];
    if (d.toolUse) {
      const index = tools.get(count(e.contentBlockIndex));
      if (index === undefined || typeof d.toolUse.input !== "string") throw malformed();
      return d.toolUse.input === "" ? [] : [{ type: "tool_call", index, arguments: d.toolUse.input }];
    }
    const r = d.reasoningContent;
    if (r) {
      if (typeof r.text === "string") return r.text === "" ? [] : [{ type: "reasoning", text: r.text }];
      if (typeof r.signature === "string") return r.signature === "" ? [] : [{ type: "reasoning", text: "", signature: r.signature }];
      if (typeof r.redactedContent === "string") return [{ type: "reasoning", text: "", redactedData: r.redactedContent }];
    }
    // citations and later delta kinds carry nothing we stream.
    return [];
  }

  return {
    event(sse) {
      let e: ConverseEvent;
      try {
        e = JSON.parse(sse.data) as ConverseEvent;
      } catch (cause) {
        throw malformed(cause);
      }
      if (e === null || typeof e !== "object") throw malformed();
      switch (sse.event) {
        case "messageStart":
          return [];
        case "contentBlockStart": {
          const tool = e.start?.toolUse;
          if (!tool) return [];
          if (typeof tool.toolUseId !== "string" || typeof tool.name !== "string") throw malformed();
          const index = toolCount++;
          tools.set(count(e.contentBlockIndex), index);
          return [{ type: "tool_call", index, id: tool.toolUseId, name: tool.name, arguments: "" }];
        }
        case "contentBlockDelta":
          return delta(e);
        case "contentBlockStop":
          return [];
        case "messageStop":
          if (typeof e.stopReason !== "string") throw malformed();
          finish = converseFinishReason(e.stopReason);
          return [];
        case "metadata": {
          const u = e.usage;
          if (!u) return [];
          // Converse's inputTokens leaves out cache reads and writes; ours counts every prompt token.
          const read = count(u.cacheReadInputTokens);
          const written = count(u.cacheWriteInputTokens);
          usage = {
            type: "usage",
            inputTokens: count(u.inputTokens) + read + written,
            outputTokens: count(u.outputTokens),
            cachedInputTokens: read,
            reasoningTokens: 0,
            ...(written > 0 ? { cacheWrite5mTokens: written } : {}),
          };
          return [];
        }
        default:
          // Exceptions are named `…Exception` (event-stream-framing.ts names them by `:exception-type`); other event types added later carry nothing we stream.
          if (sse.event === undefined || sse.event === "" || sse.event.endsWith("Exception")) throw bedrockStreamError(provider, sse.event ?? "", e.message);
          return [];
      }
    },
    end() {
      if (finish === undefined) throw new GatewayError("upstream_protocol", `provider ${provider} ended the stream before it was complete`, { provider });
      return usage ? [usage, { type: "finish", reason: finish }] : [{ type: "finish", reason: finish }];
    },
  };
}
