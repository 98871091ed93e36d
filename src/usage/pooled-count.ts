import { inPoolOr } from "../workers/shared-pool.js";
import { defineTask } from "../workers/task-pool.js";
import { type CountTokens, tokenCounter } from "./token-count.js";

/**
 * Texts at least this long are counted in the worker pool; shorter ones
 * inline. Measured (`node dist/bench/heavy-pool.js`, 2-core machine
 * under load, medians of 30 texts of mixed prose): counting inline holds
 * the relay's thread 0.16 ms at 2 KiB, 0.25 ms at 4 KiB, 0.48 ms at
 * 8 KiB, 0.92 ms at 16 KiB, 12 ms at 128 KiB; handing a text to a worker
 * and taking its count back holds it 0.05–0.17 ms at any of those sizes.
 * The hop costs the thread less from about 2 KiB, but the request waits
 * a little longer (a round trip, and the queue when the pool is busy) and
 * the pool is small: from 8 KiB the thread saves several times the hop.
 */
export const COUNT_IN_POOL_CHARS = 8 * 1024;

const countTask = defineTask<readonly string[], number[]>(import.meta.url, "./count-task.js", "countTexts");

/**
 * A counter for a request whose `texts` are about to be counted: those of
 * COUNT_IN_POOL_CHARS or more are counted first, in the pool (one task
 * for all of them), and the counter returned answers them from that; any
 * other text is counted inline as before. Without a pool, or when the
 * pool cannot (shared-pool.ts), every text is counted inline: the same
 * numbers either way.
 */
export async function pooledCounter(texts: Iterable<string>, signal?: AbortSignal): Promise<CountTokens> {
  const count = await tokenCounter();
  const long = [...new Set([...texts].filter((text) => text.length >= COUNT_IN_POOL_CHARS))];
  if (long.length === 0) return count;
  const counts = await inPoolOr(countTask, long, () => long.map(count), signal);
  const known = new Map(long.map((text, i) => [text, counts[i]!]));
  return (text) => known.get(text) ?? count(text);
}
