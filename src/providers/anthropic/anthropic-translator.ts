import type { ContentDelta, FinishReason, UsageDelta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StreamTranslator, UpstreamTarget } from "../provider.js";
import { errorFromInBand } from "../upstream-errors.js";

interface Usage {
  input_tokens?: unknown;
  output_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
  /** The write split by lifetime, where the API gives it. */
  cache_creation?: { ephemeral_5m_input_tokens?: unknown; ephemeral_1h_input_tokens?: unknown } | null;
  server_tool_use?: { web_search_requests?: unknown };
}

interface AnthropicEvent {
  type?: unknown;
  index?: unknown;
  message?: { usage?: Usage };
  content_block?: { type?: unknown; id?: unknown; name?: unknown; text?: unknown; thinking?: unknown; data?: unknown; signature?: unknown; [key: string]: unknown };
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown; thinking?: unknown; signature?: unknown; stop_reason?: unknown; stop_sequence?: unknown };
  usage?: Usage;
  error?: { type?: unknown };
}

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/**
 * Cache-write tokens by lifetime: the `cache_creation` split where the API
 * gives one, else the `cache_creation_input_tokens` total as five-minute
 * writes (the default lifetime, and the cheaper rate: never over-charged).
 * A split that adds up to less than the total leaves the rest as 5m.
 */
function cacheWrites(usage: Usage): { readonly fiveMinutes: number; readonly oneHour: number } {
  const total = count(usage.cache_creation_input_tokens);
  const split = usage.cache_creation;
  if (!split || typeof split !== "object") return { fiveMinutes: total, oneHour: 0 };
  const oneHour = count(split.ephemeral_1h_input_tokens);
  const fiveMinutes = Math.max(count(split.ephemeral_5m_input_tokens), total - oneHour);
  return { fiveMinutes, oneHour };
}

/** Anthropic stop reasons in our vocabulary. */
export function anthropicFinishReason(value: string): FinishReason {
  switch (value) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "other";
  }
}

/** What an open content block turns into. */
type Block =
  | { readonly kind: "text" }
  | { readonly kind: "thinking" }
  | { readonly kind: "tool"; readonly toolIndex: number }
  /** A server tool's call (its input streams like a tool call's) or result: relayed whole when it closes. */
  | { readonly kind: "server"; readonly block: Record<string, unknown>; json: string }
  | { readonly kind: "other" };

interface StreamState {
  readonly blocks: Map<number, Block>;
  toolCount: number;
  inputTokens: number;
  cachedInputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  outputTokens: number;
  webSearches: number;
  reportedUsage: boolean;
  /** Input usage from message_start not yet handed on: it goes out just before the first content. */
  earlyPending: boolean;
  finish?: FinishReason;
  stopSequence?: string;
  done: boolean;
}

function malformed(provider: string, cause?: unknown): GatewayError {
  return new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });
}

/**
 * Messages stream events → deltas. Content blocks are indexed over all
 * blocks (text, thinking, tool_use); tool-call deltas are indexed over tool
 * calls only, so block index → tool ordinal is kept per stream. Usage comes
 * in two halves: input at message_start, output at message_delta.
 */
export function createAnthropicTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  const state: StreamState = {
    blocks: new Map(),
    toolCount: 0,
    inputTokens: 0,
    cachedInputTokens: 0,
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 0,
    webSearches: 0,
    reportedUsage: false,
    earlyPending: false,
    done: false,
  };

  function addUsage(usage: Usage | undefined): void {
    if (!usage) return;
    state.reportedUsage = true;
    if (usage.input_tokens !== undefined) {
      // Anthropic's input_tokens excludes cache reads and writes; ours includes them.
      state.cachedInputTokens = count(usage.cache_read_input_tokens);
      const written = cacheWrites(usage);
      // A later report with the same total and no split (message_delta may omit it) keeps the split stated before.
      const sameTotal = written.fiveMinutes + written.oneHour === state.cacheWrite5mTokens + state.cacheWrite1hTokens;
      if (!(usage.cache_creation == null && sameTotal)) {
        state.cacheWrite5mTokens = written.fiveMinutes;
        state.cacheWrite1hTokens = written.oneHour;
      }
      state.inputTokens = count(usage.input_tokens) + state.cachedInputTokens + written.fiveMinutes + written.oneHour;
    }
    if (usage.output_tokens !== undefined) state.outputTokens = count(usage.output_tokens);
    if (usage.server_tool_use?.web_search_requests !== undefined) state.webSearches = count(usage.server_tool_use.web_search_requests);
  }

  function usageDelta(early: boolean): UsageDelta {
    return {
      type: "usage",
      inputTokens: state.inputTokens,
      outputTokens: early ? 0 : state.outputTokens,
      cachedInputTokens: state.cachedInputTokens,
      reasoningTokens: 0,
      ...(state.cacheWrite5mTokens > 0 ? { cacheWrite5mTokens: state.cacheWrite5mTokens } : {}),
      ...(state.cacheWrite1hTokens > 0 ? { cacheWrite1hTokens: state.cacheWrite1hTokens } : {}),
      ...(!early && state.webSearches > 0 ? { webSearches: state.webSearches } : {}),
      ...(early ? { early: true } : {}),
    };
  }

  /**
   * The input usage message_start reported, put before the first content
   * delta rather than sent alone: a delta commits the attempt, and nothing
   * the caller can see has come yet (failover stays possible until it has).
   */
  function withEarlyUsage(deltas: ContentDelta[]): ContentDelta[] {
    if (!state.earlyPending || deltas.length === 0) return deltas;
    state.earlyPending = false;
    return [usageDelta(true), ...deltas];
  }

  function close(): ContentDelta[] {
    state.done = true;
    const out: ContentDelta[] = [];
    state.earlyPending = false;
    if (state.reportedUsage) out.push(usageDelta(false));
    out.push({ type: "finish", reason: state.finish ?? "unspecified", ...(state.stopSequence === undefined ? {} : { stopSequence: state.stopSequence }) });
    return out;
  }

  function blockStart(e: AnthropicEvent): ContentDelta[] {
    const index = count(e.index);
    const block = e.content_block;
    switch (block?.type) {
      case "text":
        state.blocks.set(index, { kind: "text" });
        return typeof block.text === "string" && block.text !== "" ? [{ type: "text", text: block.text }] : [];
      case "thinking": {
        state.blocks.set(index, { kind: "thinking" });
        const text = typeof block.thinking === "string" ? block.thinking : "";
        const signature = typeof block.signature === "string" && block.signature !== "" ? { signature: block.signature } : {};
        return text !== "" || "signature" in signature ? [{ type: "reasoning", text, ...signature }] : [];
      }
      case "redacted_thinking":
        // Withheld reasoning: nothing to show, but the turn cannot be replayed without it.
        state.blocks.set(index, { kind: "other" });
        if (typeof block.data !== "string") throw malformed(provider);
        return [{ type: "reasoning", text: "", redactedData: block.data }];
      case "tool_use": {
        if (typeof block.id !== "string" || typeof block.name !== "string") throw malformed(provider);
        const toolIndex = state.toolCount++;
        state.blocks.set(index, { kind: "tool", toolIndex });
        return [{ type: "tool_call", index: toolIndex, id: block.id, name: block.name, arguments: "" }];
      }
      case "server_tool_use":
      case "web_search_tool_result":
      case "web_fetch_tool_result":
      case "code_execution_tool_result":
      case "bash_code_execution_tool_result":
      case "text_editor_code_execution_tool_result":
        state.blocks.set(index, { kind: "server", block: { ...block }, json: "" });
        return [];
      default:
        // Block kinds we do not translate (citations, future kinds): skipped whole.
        state.blocks.set(index, { kind: "other" });
        return [];
    }
  }

  function blockDelta(e: AnthropicEvent): ContentDelta[] {
    const block = state.blocks.get(count(e.index));
    const delta = e.delta;
    if (!block || !delta) throw malformed(provider);
    if (delta.type === "text_delta" && block.kind === "text" && typeof delta.text === "string") {
      return delta.text === "" ? [] : [{ type: "text", text: delta.text }];
    }
    if (delta.type === "thinking_delta" && block.kind === "thinking" && typeof delta.thinking === "string") {
      return delta.thinking === "" ? [] : [{ type: "reasoning", text: delta.thinking }];
    }
    if (delta.type === "input_json_delta" && block.kind === "tool" && typeof delta.partial_json === "string") {
      return delta.partial_json === "" ? [] : [{ type: "tool_call", index: block.toolIndex, arguments: delta.partial_json }];
    }
    if (delta.type === "input_json_delta" && block.kind === "server" && typeof delta.partial_json === "string") {
      block.json += delta.partial_json;
      return [];
    }
    if (delta.type === "signature_delta" && block.kind === "thinking" && typeof delta.signature === "string") {
      // Signs the thinking block it ends; the client needs it to replay the turn.
      return delta.signature === "" ? [] : [{ type: "reasoning", text: "", signature: delta.signature }];
    }
    // citations and future delta kinds carry nothing we stream.
    return [];
  }

  /** A server tool block, whole, once it closed: its streamed input parsed back into the block. */
  function blockStop(e: AnthropicEvent): ContentDelta[] {
    const block = state.blocks.get(count(e.index));
    if (block?.kind !== "server") return [];
    let item = block.block;
    if (block.json !== "") {
      try {
        item = { ...item, input: JSON.parse(block.json) as unknown };
      } catch (cause) {
        throw malformed(provider, cause);
      }
    }
    return [{ type: "hosted_item", origin: "anthropic", item }];
  }

  return {
    event(sse) {
      if (state.done) return [];
      let e: AnthropicEvent;
      try {
        e = JSON.parse(sse.data) as AnthropicEvent;
      } catch (cause) {
        throw malformed(provider, cause);
      }
      if (e === null || typeof e !== "object") throw malformed(provider);
      switch (e.type ?? sse.event) {
        case "message_start":
          addUsage(e.message?.usage);
          state.earlyPending = e.message?.usage?.input_tokens !== undefined;
          return [];
        case "content_block_start":
          return withEarlyUsage(blockStart(e));
        case "content_block_delta":
          return withEarlyUsage(blockDelta(e));
        case "content_block_stop":
          return withEarlyUsage(blockStop(e));
        case "message_delta":
          if (typeof e.delta?.stop_reason === "string") state.finish = anthropicFinishReason(e.delta.stop_reason);
          if (e.delta?.stop_reason === "stop_sequence" && typeof e.delta.stop_sequence === "string") state.stopSequence = e.delta.stop_sequence;
          addUsage(e.usage);
          return [];
        case "message_stop":
          return close();
        case "error":
          throw errorFromInBand(provider, [e.error?.type]);
        default:
          // ping and event types added later.
          return [];
      }
    },
    end() {
      if (state.done) return [];
      throw new GatewayError("upstream_protocol", `provider ${provider} ended the stream before it was complete`, { provider });
    },
  };
}
