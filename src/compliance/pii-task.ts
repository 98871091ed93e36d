import { customDetector, detectPii, type PiiSpan } from "./pii-detectors.js";

/** A detection as it crosses to a worker: custom detectors by name and pattern source (a RegExp's `valid` cannot cross). */
export interface PiiTaskInput {
  readonly text: string;
  readonly kinds: readonly string[];
  readonly custom: readonly { readonly kind: string; readonly source: string }[];
}

/** Runs in a pool worker (workers/task-pool.ts): detectPii over one whole text, as inline. */
export function detectPiiTask(input: PiiTaskInput): PiiSpan[] {
  return detectPii(
    input.text,
    new Set(input.kinds),
    input.custom.map((c) => customDetector(c.kind, c.source)),
  );
}
