import { createHash } from "node:crypto";

/** One block of a prompt in the provider's cache order, as the prompt cache sees it. */
export interface PromptBlock {
  /** The block's exact content (without its cache marker): a prefix matches only byte for byte. */
  readonly key: string;
  /** Input tokens the block counts for. */
  readonly tokens: number;
  /** Set when the block carries a breakpoint: how long the prefix up to it stays cached after its last use. */
  readonly breakpointTtlMs?: number;
}

/** How a request's input tokens split, in the provider's terms. */
export interface CacheUsage {
  /** Tokens of the longest cached prefix found: billed at the cached rate. */
  readonly read: number;
  /** Tokens from there to the last breakpoint: written to the cache now. */
  readonly written: number;
  /**
   * The part of `written` written for an hour: the tokens up to a `ttl: "1h"`
   * breakpoint (each written segment takes the TTL of the breakpoint that
   * ends it); the rest are five-minute writes. Anthropic reports and bills
   * the two apart (usage.cache_creation).
   */
  readonly written1h: number;
}

export interface PromptCache {
  /** Looks up and stores the prefixes of `blocks` for `model`; the usage the provider reports for it. */
  use(model: string, blocks: readonly PromptBlock[]): CacheUsage;
  clear(): void;
}

/** A breakpoint this long-lived writes at the one-hour rate. */
const ONE_HOUR_MS = 3_600_000;

/** Anthropic looks for an earlier cache entry at most this many blocks before each breakpoint. */
export const LOOKBACK_BLOCKS = 20;

/** For each block, the hash and the tokens of the prefix that ends with it; a cache is kept per model. */
function prefixes(model: string, blocks: readonly PromptBlock[]): { hashes: string[]; tokens: number[] } {
  const hashes: string[] = [];
  const tokens: number[] = [];
  let hash = createHash("sha256").update(model).digest("hex");
  let total = 0;
  for (const block of blocks) {
    hash = createHash("sha256").update(hash).update("\0").update(block.key).digest("hex");
    total += block.tokens;
    hashes.push(hash);
    tokens.push(total);
  }
  return { hashes, tokens };
}

interface Entry {
  readonly ttlMs: number;
  readonly expiresAt: number;
}

/**
 * Anthropic's prompt cache: a request that marks breakpoints reads the
 * longest prefix an earlier request cached (found at a breakpoint or up
 * to LOOKBACK_BLOCKS blocks before one), then caches the prefix up to each
 * of its breakpoints. An entry lives its TTL from its last use. Bounded:
 * past `limit` entries the least recently used is forgotten, as a provider
 * evicts, so a soak test cannot grow the simulator.
 */
export function createPromptCache(limit = 4096, now: () => number = Date.now): PromptCache {
  const entries = new Map<string, Entry>();

  function fresh(hash: string): Entry | undefined {
    const entry = entries.get(hash);
    if (entry && entry.expiresAt > now()) return entry;
    entries.delete(hash);
    return undefined;
  }

  /** Stores or refreshes one prefix as the most recently used; the longer of two TTLs wins. */
  function keep(hash: string, ttlMs: number): void {
    const kept = Math.max(fresh(hash)?.ttlMs ?? 0, ttlMs);
    entries.delete(hash);
    entries.set(hash, { ttlMs: kept, expiresAt: now() + kept });
    for (const oldest of entries.keys()) {
      if (entries.size <= limit) break;
      entries.delete(oldest);
    }
  }

  return {
    use(model, blocks) {
      const { hashes, tokens } = prefixes(model, blocks);
      const breakpoints = blocks.flatMap((b, i) => (b.breakpointTtlMs === undefined ? [] : [{ index: i, ttlMs: b.breakpointTtlMs }]));
      const last = breakpoints.at(-1);
      if (!last) return { read: 0, written: 0, written1h: 0 };
      let hit = -1;
      for (const { index } of breakpoints) {
        for (let i = index; i >= Math.max(0, index - LOOKBACK_BLOCKS) && i > hit; i--) {
          if (fresh(hashes[i]!)) {
            hit = i;
            break;
          }
        }
      }
      if (hit >= 0) keep(hashes[hit]!, 0);
      for (const { index, ttlMs } of breakpoints) keep(hashes[index]!, ttlMs);
      const read = hit >= 0 ? tokens[hit]! : 0;
      let covered = read;
      let written1h = 0;
      for (const { index, ttlMs } of breakpoints) {
        const end = tokens[index]!;
        if (end <= covered) continue;
        if (ttlMs >= ONE_HOUR_MS) written1h += end - covered;
        covered = end;
      }
      return { read, written: tokens[last.index]! - read, written1h };
    },
    clear: () => entries.clear(),
  };
}
