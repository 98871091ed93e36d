import type { ChatMessage, ChatRequest, ProviderKind } from "../core/chat-request.js";
import type { Delta } from "../core/delta.js";
import { createReasoningCollector, hasReplayState } from "../core/reasoning-parts.js";
import { MAX_REPLAY_KEY_CHARS, type ReplayEntry, type ReplayStore } from "../store/replay-store.js";

/**
 * Thinking signatures through an API that has no field for them. OpenAI's
 * shape carries tool calls but neither Anthropic's signed thinking blocks
 * nor Gemini's signatures on function calls; Anthropic's carries its own
 * thinking but not Gemini's function-call signatures; and both providers
 * refuse a tool-use continuation without them. So the call layer remembers
 * them under the tool-call ids the edge hands out, and restores them when a
 * request replays those calls: callers send only their API's standard
 * tool-call and tool-result messages.
 */
export interface ReplayCapture {
  observe(delta: Delta): void;
  /** What to store once the answer is complete; undefined when there is nothing to replay. */
  result(): { readonly ids: readonly string[]; readonly entry: ReplayEntry } | undefined;
}

export function createReplayCapture(): ReplayCapture {
  const reasoning = createReasoningCollector();
  const ids = new Map<number, string>();
  const toolSignatures: Record<string, string> = {};
  const signedCalls = new Map<number, string>();
  let provider = "";
  let model = "";
  return {
    observe(delta) {
      switch (delta.type) {
        case "start":
          provider = delta.provider;
          model = delta.model;
          break;
        case "reasoning":
          reasoning.add(delta);
          break;
        case "text":
          reasoning.interrupt();
          break;
        case "tool_call":
          reasoning.interrupt();
          if (delta.id) ids.set(delta.index, delta.id);
          if (delta.signature) signedCalls.set(delta.index, delta.signature);
          break;
        default:
          break;
      }
    },
    result() {
      if (ids.size === 0) return undefined;
      for (const [index, signature] of signedCalls) {
        const id = ids.get(index);
        if (id) toolSignatures[id] = signature;
      }
      const parts = reasoning.parts();
      if (!hasReplayState(parts, Object.keys(toolSignatures).length)) return undefined;
      return { ids: [...ids.values()], entry: { provider, model, reasoning: parts, toolSignatures } };
    },
  };
}

/**
 * What an edge's API cannot carry: OpenAI's shapes neither reasoning blocks
 * nor call signatures; Anthropic's carries its own thinking blocks (a turn
 * sent back without them must fail as it would at Anthropic), but not
 * Gemini's signatures on function calls.
 */
export type ReplayKind = "reasoning-and-signatures" | "call-signatures";

/** Turns of one tool-use loop looked up at most: a provider checks only the current turn's steps. */
const MAX_RESTORED_TURNS = 128;

async function entryFor(message: ChatMessage, store: ReplayStore): Promise<ReplayEntry | undefined> {
  for (const call of message.toolCalls ?? []) {
    if (call.id.length > MAX_REPLAY_KEY_CHARS) continue;
    const entry = await store.get(call.id);
    if (entry) return entry;
  }
  return undefined;
}

/** Whether a reasoning part carries something only its issuer can verify. */
const signed = (part: ChatMessage["content"][number]): boolean => part.type === "reasoning" && (part.signature !== undefined || part.redactedData !== undefined);

/**
 * A turn another provider or model answered, as this target may receive it:
 * the signed thinking the client sent back with it (an Anthropic client
 * does) left out, since it verifies only where it was issued and the target
 * would refuse the whole request over it. Unchanged when it holds none.
 */
function withoutForeignThinking(message: ChatMessage): ChatMessage {
  if (!message.content.some(signed)) return message;
  return { ...message, content: message.content.filter((part) => !signed(part)) };
}

/**
 * The request with stored reasoning and signatures put back into the
 * assistant turns of the current tool-use loop (after the last user
 * message), where providers check them. Only entries issued by the same
 * provider and model as the alias serves now are used: signatures verify
 * nowhere else. For a client whose API carries its own thinking
 * (`call-signatures`), a turn the store says another provider or model
 * answered (failover, a changed alias) loses the signed thinking the
 * client sent with it, before the request leaves; on an Anthropic target,
 * which refuses a thinking request whose tool turn starts without
 * thinking, that one step is then asked without thinking.
 */
export async function restoreReplay(request: ChatRequest, store: ReplayStore, served: { provider: string; model: string; kind?: ProviderKind } | undefined, what: ReplayKind = "reasoning-and-signatures"): Promise<ChatRequest> {
  if (!served) return request;
  const lastUser = request.messages.findLastIndex((m) => m.role === "user");
  let restored = 0;
  let changed = false;
  let foreign = false;
  const messages = await Promise.all(
    request.messages.map(async (m, i) => {
      if (i < lastUser || m.role !== "assistant" || !m.toolCalls?.length) return m;
      if (++restored > MAX_RESTORED_TURNS) return m;
      const entry = await entryFor(m, store);
      if (!entry) return m;
      if (entry.provider !== served.provider || entry.model !== served.model) {
        if (what !== "call-signatures") return m;
        const clean = withoutForeignThinking(m);
        if (clean !== m) changed = foreign = true;
        return clean;
      }
      changed = true;
      // A turn that carries its own reasoning keeps it, and a client whose API carries reasoning gets none added: only the calls' signatures.
      const ownReasoning = what === "call-signatures" || m.content.some((p) => p.type === "reasoning");
      return {
        ...m,
        content: ownReasoning ? m.content : [...entry.reasoning, ...m.content],
        toolCalls: m.toolCalls.map((c) => {
          const signature = entry.toolSignatures[c.id];
          return signature === undefined ? c : { ...c, signature };
        }),
      };
    }),
  );
  if (!changed) return request;
  // Anthropic refuses a thinking request whose tool turn starts without thinking: this one step is answered without.
  // Claude on Vertex is the same API (its publisher rule: providers/vertex/vertex-publisher.ts).
  const anthropicWire = served.kind === "anthropic" || (served.kind === "vertex" && served.model.startsWith("claude-"));
  if (foreign && anthropicWire && request.reasoning !== undefined) return { ...request, messages, reasoning: { effort: "none" } };
  return { ...request, messages };
}

/** Keeps an answer's signatures for the next tool turn. The store failing costs only that continuation, never this answer. */
export async function keepReplay(capture: ReplayCapture, store: ReplayStore): Promise<void> {
  const kept = capture.result();
  if (kept) await store.put(kept.ids, kept.entry).catch(() => undefined);
}
