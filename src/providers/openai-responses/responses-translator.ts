import { flatToolName } from "../../core/chat-request.js";
import type { ContentDelta, FinishReason } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StreamTranslator, UpstreamTarget } from "../provider.js";
import { errorFromInBand } from "../upstream-errors.js";

interface WireItem {
  type?: unknown;
  id?: unknown;
  call_id?: unknown;
  name?: unknown;
  namespace?: unknown;
  encrypted_content?: unknown;
  [field: string]: unknown;
}

interface WireUsage {
  input_tokens?: unknown;
  output_tokens?: unknown;
  input_tokens_details?: { cached_tokens?: unknown } | null;
  output_tokens_details?: { reasoning_tokens?: unknown } | null;
}

interface ResponsesEvent {
  type?: unknown;
  output_index?: unknown;
  item?: WireItem;
  delta?: unknown;
  code?: unknown;
  response?: { status?: unknown; usage?: WireUsage | null; incomplete_details?: { reason?: unknown } | null; error?: { code?: unknown } | null };
}

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** Output items that are neither text, reasoning nor a call of the caller's tools: a hosted tool's, relayed whole. */
const OWN_ITEMS = new Set(["message", "reasoning", "function_call", "custom_tool_call"]);

/**
 * Responses API stream events → deltas. Calls are numbered over calls only
 * (output index → call index per stream); a custom tool's text streams as
 * the canonical `{"input": "…"}` arguments, opened with the item and closed
 * when it is done, so every edge can read it as a function of one string;
 * a namespace member's name is flattened back to the name the tool was
 * declared under. Reasoning's encrypted content becomes the signature that
 * closes its block; a hosted tool's item is relayed whole when it is done.
 */
export function createResponsesTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  const calls = new Map<number, { readonly index: number; readonly custom: boolean }>();
  let webSearches = 0;
  let done = false;

  const malformed = (cause?: unknown) => new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });

  function added(e: ResponsesEvent): ContentDelta[] {
    const item = e.item;
    if (item?.type !== "function_call" && item?.type !== "custom_tool_call") return [];
    if (typeof item.call_id !== "string" || typeof item.name !== "string") throw malformed();
    const index = calls.size;
    const custom = item.type === "custom_tool_call";
    calls.set(count(e.output_index), { index, custom });
    const name = typeof item.namespace === "string" && item.namespace !== "" ? flatToolName(item.namespace, item.name) : item.name;
    return [{ type: "tool_call", index, id: item.call_id, name, arguments: custom ? '{"input":"' : "" }];
  }

  function itemDone(e: ResponsesEvent): ContentDelta[] {
    const item = e.item;
    switch (item?.type) {
      case "custom_tool_call": {
        const call = calls.get(count(e.output_index));
        return call ? [{ type: "tool_call", index: call.index, arguments: '"}' }] : [];
      }
      case "reasoning":
        return typeof item.encrypted_content === "string" && item.encrypted_content !== "" ? [{ type: "reasoning", text: "", signature: item.encrypted_content }] : [];
      default:
        if (typeof item?.type !== "string" || OWN_ITEMS.has(item.type)) return [];
        if (item.type === "web_search_call") webSearches++;
        return [{ type: "hosted_item", origin: "openai", item: { ...item } }];
    }
  }

  function callDelta(e: ResponsesEvent, custom: boolean): ContentDelta[] {
    const call = calls.get(count(e.output_index));
    if (!call || typeof e.delta !== "string") throw malformed();
    if (e.delta === "") return [];
    // A custom tool's text, escaped as the inside of the JSON string its item opened.
    return [{ type: "tool_call", index: call.index, arguments: custom ? JSON.stringify(e.delta).slice(1, -1) : e.delta }];
  }

  function finish(e: ResponsesEvent): ContentDelta[] {
    done = true;
    const r = e.response;
    const out: ContentDelta[] = [];
    if (r?.usage) {
      out.push({
        type: "usage",
        inputTokens: count(r.usage.input_tokens),
        outputTokens: count(r.usage.output_tokens),
        cachedInputTokens: count(r.usage.input_tokens_details?.cached_tokens),
        reasoningTokens: count(r.usage.output_tokens_details?.reasoning_tokens),
        ...(webSearches > 0 ? { webSearches } : {}),
      });
    }
    const incomplete = r?.incomplete_details?.reason;
    const reason: FinishReason = e.type === "response.incomplete" ? (incomplete === "max_output_tokens" ? "length" : incomplete === "content_filter" ? "content_filter" : "other") : calls.size > 0 ? "tool_calls" : "stop";
    out.push({ type: "finish", reason });
    return out;
  }

  return {
    event(sse) {
      if (done) return [];
      let e: ResponsesEvent;
      try {
        e = JSON.parse(sse.data) as ResponsesEvent;
      } catch (cause) {
        throw malformed(cause);
      }
      if (e === null || typeof e !== "object") throw malformed();
      const type = e.type ?? sse.event;
      switch (type) {
        case "response.output_text.delta":
          return typeof e.delta === "string" && e.delta !== "" ? [{ type: "text", text: e.delta }] : [];
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
          return typeof e.delta === "string" && e.delta !== "" ? [{ type: "reasoning", text: e.delta }] : [];
        case "response.output_item.added":
          return added(e);
        case "response.output_item.done":
          return itemDone(e);
        case "response.function_call_arguments.delta":
          return callDelta(e, false);
        case "response.custom_tool_call_input.delta":
          return callDelta(e, true);
        case "response.completed":
        case "response.incomplete":
          return finish(e);
        case "response.failed":
          throw errorFromInBand(provider, [e.response?.error?.code]);
        case "error":
          throw errorFromInBand(provider, [e.code]);
        default:
          // created, in_progress, content parts, `.done` events whose content the deltas already gave, and kinds added later.
          return [];
      }
    },
    end() {
      if (done) return [];
      throw new GatewayError("upstream_protocol", `provider ${provider} ended the stream before it was complete`, { provider });
    },
  };
}
