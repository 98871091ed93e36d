import type { ReasoningPart } from "../core/chat-request.js";
import { idDigest, seal, secretFromId, unseal } from "../core/sealed-entry.js";
import type { SluiceRedisClient } from "./redis-connection.js";
import { MAX_REPLAY_KEY_CHARS, type ReplayEntry, type ReplayStore } from "./replay-store.js";
import { within } from "./within.js";

export interface RedisReplayStoreOptions {
  readonly client: SluiceRedisClient;
  /** The store's key prefix; entries live under `{prefix}replay:{SHA-256 of the tool-call id}`, sealed under the id. */
  readonly prefix: string;
  /** How long a turn can be replayed after it was answered (Redis expires it). */
  readonly ttlMs: number;
  /** A turn whose JSON is larger is kept on this replica only. */
  readonly maxEntryBytes: number;
  /** Every Redis call is bounded by this; a late answer counts as a miss. */
  readonly timeoutMs: number;
  /** This replica's own copy: answers first, and alone while Redis is away. */
  readonly local: ReplayStore;
}

/** A replayed turn's signatures are small next to its reasoning text; 1 MiB holds ~250k tokens of thinking. */
export const DEFAULT_MAX_REPLAY_ENTRY_BYTES = 1024 * 1024;

const isString = (value: unknown): value is string => typeof value === "string";

/** What Redis returned, checked field by field: a foreign or damaged value is a miss, never a malformed request upstream. */
function parseEntry(text: string): ReplayEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { provider, model, reasoning, toolSignatures } = value as Record<string, unknown>;
  if (!isString(provider) || !isString(model) || !Array.isArray(reasoning)) return undefined;
  if (typeof toolSignatures !== "object" || toolSignatures === null || Array.isArray(toolSignatures)) return undefined;
  const parts: ReasoningPart[] = [];
  for (const part of reasoning as unknown[]) {
    if (typeof part !== "object" || part === null) return undefined;
    const { text: partText, signature, redactedData } = part as Record<string, unknown>;
    if (!isString(partText) || (signature !== undefined && !isString(signature)) || (redactedData !== undefined && !isString(redactedData))) return undefined;
    parts.push({ type: "reasoning", text: partText, ...(signature === undefined ? {} : { signature }), ...(redactedData === undefined ? {} : { redactedData }) });
  }
  const signatures: Record<string, string> = {};
  for (const [id, signature] of Object.entries(toolSignatures)) {
    if (!isString(signature)) return undefined;
    signatures[id] = signature;
  }
  return { provider, model, reasoning: parts, toolSignatures: signatures };
}

/**
 * Replay entries shared by every replica on one Redis, so an OpenAI-shaped
 * caller's next tool turn may land on any replica behind the load balancer
 * and still carry its thinking signatures. Each tool-call id is a key with
 * the turn's JSON and a TTL (one round trip per turn: a MULTI of SETs);
 * Redis memory is bounded by the TTL and `maxEntryBytes`. The local copy
 * answers first; Redis trouble costs only cross-replica continuations,
 * never the answer being streamed.
 */
export function createRedisReplayStore(options: RedisReplayStoreOptions): ReplayStore {
  const { client, local } = options;
  // The turn's reasoning is the model's own words: sealed under the tool-call id, which only its conversation holds, under a key named by its digest.
  const keyOf = (id: string) => `${options.prefix}replay:${idDigest(id)}`;
  const secretOf = (id: string) => secretFromId(id, "sluice.replay.v1");
  return {
    async put(ids, entry) {
      const keys = ids.filter((id) => id !== "" && id.length <= MAX_REPLAY_KEY_CHARS);
      await local.put(keys, entry);
      if (keys.length === 0 || client.status !== "ready") return;
      const json = JSON.stringify(entry);
      if (Buffer.byteLength(json) > options.maxEntryBytes) return;
      const multi = client.multi();
      for (const id of keys) multi.set(keyOf(id), seal(json, secretOf(id)), "PX", options.ttlMs);
      await within(multi.exec(), options.timeoutMs, "replay put");
    },
    async get(id) {
      if (id === "" || id.length > MAX_REPLAY_KEY_CHARS) return undefined;
      const mine = await local.get(id);
      if (mine || client.status !== "ready") return mine;
      const text = await within(client.get(keyOf(id)), options.timeoutMs, "replay get").catch(() => null);
      const opened = typeof text === "string" ? unseal(text, secretOf(id)) : undefined;
      return opened === undefined ? undefined : parseEntry(opened);
    },
  };
}
