import type { ContentDelta, Usage } from "../core/delta.js";

/**
 * The input usage an attempt's first delta reports ahead of the answer
 * (an adapter's `early` usage delta: Anthropic states input, cache reads and
 * cache writes at message_start), as the `start` delta carries it; nothing
 * when the first delta is anything else. The pipeline then leaves that
 * delta out, so that every edge sees usage once, at the end.
 */
export function earlyUsage(first: IteratorResult<ContentDelta, void>): Usage | undefined {
  if (first.done || first.value.type !== "usage" || first.value.early !== true) return undefined;
  const { type: _type, early: _early, ...usage } = first.value;
  return usage;
}
