import { Code, ConnectError } from "@connectrpc/connect";
import type { StreamChatRequest, StreamChatResponse } from "../../../gen/sluice/v1/chat_service_pb.js";
import { FinishReason } from "../../../gen/sluice/v1/delta_pb.js";
import { chat } from "../api.js";

/** Events kept in the playground's log; the answer itself is kept whole. */
export const MAX_EVENTS = 1_000;

export interface ToolCall {
  readonly index: number;
  id: string;
  name: string;
  arguments: string;
}

/** One run of the playground, as it stands. */
export interface RunState {
  readonly status: "streaming" | "finished" | "stopped" | "failed";
  readonly target?: string;
  readonly dropped?: readonly string[];
  readonly text: string;
  readonly reasoning: string;
  readonly toolCalls: readonly ToolCall[];
  readonly usage?: { readonly input: number; readonly output: number; readonly cached: number; readonly reasoning: number; readonly estimated: boolean };
  readonly finish?: string;
  readonly ttftMs?: number;
  readonly tokensPerSecond?: number;
  readonly events: ReadonlyArray<{ readonly seq: number; readonly kind: string; readonly detail: string }>;
  readonly error?: string;
}

const FINISH_NAMES: Record<FinishReason, string> = {
  [FinishReason.UNSPECIFIED]: "unspecified",
  [FinishReason.STOP]: "stop",
  [FinishReason.LENGTH]: "length",
  [FinishReason.TOOL_CALLS]: "tool_calls",
  [FinishReason.CONTENT_FILTER]: "content_filter",
  [FinishReason.OTHER]: "other",
};

function detailOf(message: StreamChatResponse): string {
  const d = message.delta;
  switch (d.case) {
    case "start":
      return `${d.value.provider} / ${d.value.model}`;
    case "text":
    case "reasoning":
      return JSON.stringify(d.value.text);
    case "toolCall":
      return `#${d.value.index}${d.value.name ? ` ${d.value.name}` : ""} ${JSON.stringify(d.value.arguments)}`;
    case "usage":
      return `in ${d.value.inputTokens}, out ${d.value.outputTokens}${d.value.estimated ? " (estimated)" : ""}`;
    case "finish":
      return FINISH_NAMES[d.value.reason];
    case "logprobs":
      return `${d.value.tokens.length} tokens`;
    default:
      return "";
  }
}

/**
 * Streams one request and reports the state after every message: the
 * serving target from `start`, each delta kind, TTFT (request sent → first
 * content delta) and output tokens per second (usage over the time from
 * the first content delta to the last). Aborting `signal` cancels the RPC;
 * the gateway then closes the upstream request.
 */
export async function runStream(request: StreamChatRequest, signal: AbortSignal, update: (state: RunState) => void): Promise<void> {
  const sentAt = performance.now();
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  let state: RunState = { status: "streaming", text: "", reasoning: "", toolCalls: [], events: [] };
  const set = (patch: Partial<RunState>) => {
    state = { ...state, ...patch };
    update(state);
  };
  const calls = new Map<number, ToolCall>();
  try {
    for await (const message of chat.streamChat(request, { signal })) {
      const d = message.delta;
      const now = performance.now();
      if (d.case === "text" || d.case === "reasoning" || d.case === "toolCall") {
        firstAt ??= now;
        lastAt = now;
      }
      const events = [...state.events, { seq: Number(message.sequence), kind: d.case ?? "unknown", detail: detailOf(message) }].slice(-MAX_EVENTS);
      const timing = firstAt === undefined ? {} : { ttftMs: firstAt - sentAt };
      switch (d.case) {
        case "start":
          set({ events, target: `${d.value.provider} / ${d.value.model}`, dropped: d.value.droppedParams });
          break;
        case "text":
          set({ events, ...timing, text: state.text + d.value.text });
          break;
        case "reasoning":
          set({ events, ...timing, reasoning: state.reasoning + d.value.text });
          break;
        case "toolCall": {
          const call = calls.get(d.value.index) ?? { index: d.value.index, id: "", name: "", arguments: "" };
          if (d.value.id) call.id = d.value.id;
          if (d.value.name) call.name = d.value.name;
          call.arguments += d.value.arguments;
          calls.set(d.value.index, call);
          set({ events, ...timing, toolCalls: [...calls.values()].map((c) => ({ ...c })) });
          break;
        }
        case "usage": {
          const u = d.value;
          const output = Number(u.outputTokens);
          const seconds = firstAt !== undefined && lastAt !== undefined ? (lastAt - firstAt) / 1000 : 0;
          set({
            events,
            usage: { input: Number(u.inputTokens), output, cached: Number(u.cachedInputTokens), reasoning: Number(u.reasoningTokens), estimated: u.estimated },
            ...(seconds > 0 && output > 1 ? { tokensPerSecond: (output - 1) / seconds } : {}),
          });
          break;
        }
        case "finish":
          set({ events, finish: FINISH_NAMES[d.value.reason] });
          break;
        default:
          set({ events });
      }
    }
    set({ status: state.finish ? "finished" : "failed", ...(state.finish ? {} : { error: "the stream ended without finish: the answer is truncated" }) });
  } catch (error) {
    const e = ConnectError.from(error);
    if (signal.aborted || e.code === Code.Canceled) set({ status: "stopped" });
    else set({ status: "failed", error: `${Code[e.code]}: ${e.rawMessage}` });
  }
}
