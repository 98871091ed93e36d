import { type Detector, detectPii } from "./pii-detectors.js";

/**
 * One request's placeholders: each value found gets `<KIND_N>` (the same
 * value the same placeholder within the request), and the vault turns
 * them back into the values in the answer. It lives as long as the
 * request and is never logged, stored or sent anywhere.
 */
export interface PiiVault {
  /** `text` with every finding of `kinds` replaced by its placeholder. */
  redact(text: string, kinds?: ReadonlySet<string>): string;
  /** Findings so far, by kind (what logs and metrics may say: counts, never values). */
  readonly counts: Readonly<Record<string, number>>;
  /** The value behind a placeholder, if this vault made it. */
  valueOf(placeholder: string): string | undefined;
  readonly size: number;
  /** Every placeholder and its value, in the order they were made: what a digest of the request's personal data hashes (never stored as is). */
  fingerprint(): string;
}

/** Longest placeholder a vault makes (`<CN_ID_` + digits + `>`): what a restorer may hold back at most. */
export const MAX_PLACEHOLDER_CHARS = 24;

/** A vault for one request; `custom` are the operator's own detectors (compliance.patterns), found after the built-in ones. */
export function createPiiVault(custom: readonly Detector[] = []): PiiVault {
  const byValue = new Map<string, string>();
  const byPlaceholder = new Map<string, string>();
  const perKind = new Map<string, number>();
  const counts: Record<string, number> = {};
  return {
    redact(text, kinds) {
      const spans = detectPii(text, kinds, custom);
      if (spans.length === 0) return text;
      let out = "";
      let at = 0;
      for (const span of spans) {
        const value = text.slice(span.start, span.end);
        let placeholder = byValue.get(`${span.kind}\u0000${value}`);
        if (!placeholder) {
          const n = (perKind.get(span.kind) ?? 0) + 1;
          perKind.set(span.kind, n);
          placeholder = `<${span.kind.toUpperCase()}_${n}>`;
          byValue.set(`${span.kind}\u0000${value}`, placeholder);
          byPlaceholder.set(placeholder, value);
        }
        counts[span.kind] = (counts[span.kind] ?? 0) + 1;
        out += text.slice(at, span.start) + placeholder;
        at = span.end;
      }
      return out + text.slice(at);
    },
    counts,
    valueOf: (placeholder) => byPlaceholder.get(placeholder),
    get size() {
      return byPlaceholder.size;
    },
    fingerprint: () => [...byPlaceholder].map(([p, v]) => `${p}\u0000${v}`).join("\u0001"),
  };
}

const PLACEHOLDER = /<[A-Z0-9_]{1,22}>/g;
/** A tail that may still grow into a placeholder: `<`, then placeholder characters, not yet closed. */
const OPEN_TAIL = /<[A-Z0-9_]{0,22}$/;

/**
 * Puts the values back into an answer that streams: placeholders the
 * vault made are replaced, including one split across deltas. Only a
 * tail that could still be the start of a placeholder is held back (at
 * most MAX_PLACEHOLDER_CHARS); any other text goes out at once.
 */
export function createRestorer(vault: PiiVault): { push(text: string): string; flush(): string } {
  let held = "";
  const restore = (text: string) => text.replace(PLACEHOLDER, (p) => vault.valueOf(p) ?? p);
  return {
    push(text) {
      // The common delta: nothing held, and no `<` that could open a placeholder.
      if (held === "" && !text.includes("<")) return text;
      const all = held + text;
      const open = OPEN_TAIL.exec(all);
      if (open && vault.size > 0) {
        held = all.slice(open.index);
        return restore(all.slice(0, open.index));
      }
      held = "";
      return restore(all);
    },
    flush() {
      const rest = restore(held);
      held = "";
      return rest;
    },
  };
}
