import { tokenCounter } from "./token-count.js";

/** Runs in a pool worker (workers/task-pool.ts): each text's token count, by the same counter as inline. */
export async function countTexts(texts: readonly string[]): Promise<number[]> {
  const count = await tokenCounter();
  return texts.map(count);
}
