import type { ReasoningPart } from "../core/chat-request.js";

/**
 * What replaying one assistant turn needs beyond what an OpenAI-shaped
 * client sends back: the reasoning blocks with their signatures (Anthropic)
 * and the signatures issued with each tool call (Gemini). The facade stores
 * it under each tool-call id it handed out, and puts it back when a request
 * replays that turn.
 */
export interface ReplayEntry {
  /** Configured provider and upstream model that issued the signatures: they verify nowhere else. */
  readonly provider: string;
  readonly model: string;
  readonly reasoning: readonly ReasoningPart[];
  /** Tool-call id → signature. */
  readonly toolSignatures: Readonly<Record<string, string>>;
}

/**
 * Where replay entries live. Asynchronous so that a shared store (Redis)
 * can back it when several gateway replicas serve one conversation; the
 * in-process one is `createMemoryReplayStore`. A tool-call id is the only
 * key: whoever holds the id got the turn it names, and nothing else can be
 * read with it.
 */
export interface ReplayStore {
  /** Stores `entry` under every id in `ids` (the tool calls of one turn). */
  put(ids: readonly string[], entry: ReplayEntry): Promise<void>;
  get(id: string): Promise<ReplayEntry | undefined>;
}

/** Longest tool-call id used as a key; longer ones are never looked up. */
export const MAX_REPLAY_KEY_CHARS = 256;
