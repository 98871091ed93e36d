import { type Detector, detectPii, type PiiSpan } from "./pii-detectors.js";

/**
 * One request's placeholders: each value found gets `<KIND_N>` (the same
 * value the same placeholder within the request), and the vault turns
 * them back into the values in the answer. It lives as long as the
 * request and is never logged, stored or sent anywhere.
 */
export interface PiiVault {
  /** `text` with every finding of `kinds` replaced by its placeholder. */
  redact(text: string, kinds?: ReadonlySet<string>): string;
  /**
   * Texts a provider reads as one (adjacent text parts of a message),
   * screened as one: a value split across two of them is found, and its
   * placeholder goes where it starts, the rest of it cut from the next.
   */
  redactJoined(texts: readonly string[], kinds?: ReadonlySet<string>): string[];
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

/** How a vault finds values: detectPii, or findings already made (a long text screened in slices). */
export type Detect = (text: string, kinds: ReadonlySet<string> | undefined, custom: readonly Detector[]) => PiiSpan[];

/**
 * A vault for one request; `custom` are the operator's own detectors
 * (compliance.patterns), found after the built-in ones.
 */
export function createPiiVault(custom: readonly Detector[] = [], detect: Detect = detectPii): PiiVault {
  const byValue = new Map<string, string>();
  const byPlaceholder = new Map<string, string>();
  const perKind = new Map<string, number>();
  const counts: Record<string, number> = {};
  const placeholderOf = (kind: string, value: string): string => {
    let placeholder = byValue.get(`${kind}\u0000${value}`);
    if (!placeholder) {
      const n = (perKind.get(kind) ?? 0) + 1;
      perKind.set(kind, n);
      placeholder = `<${kind.toUpperCase()}_${n}>`;
      byValue.set(`${kind}\u0000${value}`, placeholder);
      byPlaceholder.set(placeholder, value);
    }
    counts[kind] = (counts[kind] ?? 0) + 1;
    return placeholder;
  };
  const redact = (text: string, kinds?: ReadonlySet<string>): string => {
    const spans = detect(text, kinds, custom);
    if (spans.length === 0) return text;
    let out = "";
    let at = 0;
    for (const span of spans) {
      out += text.slice(at, span.start) + placeholderOf(span.kind, text.slice(span.start, span.end));
      at = span.end;
    }
    return out + text.slice(at);
  };
  return {
    redact,
    redactJoined(texts, kinds) {
      if (texts.length === 1) return [redact(texts[0]!, kinds)];
      const joined = texts.join("");
      const spans = detect(joined, kinds, custom);
      if (spans.length === 0) return [...texts];
      // Where each text ends in the joined one.
      const ends: number[] = [];
      let sum = 0;
      for (const text of texts) ends.push((sum += text.length));
      const out = texts.map(() => "");
      let part = 0;
      /** Copies joined[from, to) into the texts it came from. */
      const copy = (from: number, to: number) => {
        while (from < to) {
          while (ends[part]! <= from) part++;
          const stop = Math.min(to, ends[part]!);
          out[part] += joined.slice(from, stop);
          from = stop;
        }
      };
      let at = 0;
      for (const span of spans) {
        copy(at, span.start);
        while (ends[part]! <= span.start) part++;
        out[part] += placeholderOf(span.kind, joined.slice(span.start, span.end));
        at = span.end;
      }
      copy(at, joined.length);
      return out;
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
