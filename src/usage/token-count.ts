/**
 * Token counts for answers whose provider reported no usage (some
 * OpenAI-compatible servers omit it), with gpt-tokenizer's o200k_base
 * encoding: exact for current OpenAI models, an estimate for every other.
 *
 * Loaded on first use (about 150 ms of CPU), so a gateway whose providers
 * all report usage never pays for it. Byte-pair encoding is quadratic in
 * the length of one run of non-space characters (100 k letters took 7 s),
 * so text is counted in bounded pieces: whitespace-separated chunks of at
 * most CHUNK_CHARS, and runs longer than MAX_RUN_CHARS cut into pieces of
 * that length. Past MAX_COUNTED_CHARS the rest is extrapolated at the rate
 * counted so far. Every count is therefore linear in the text and bounded.
 */
export type CountTokens = (text: string) => number;

const CHUNK_CHARS = 4_096;
const MAX_RUN_CHARS = 100;
const MAX_COUNTED_CHARS = 1_048_576;
/** Rough characters per token: when nothing could be counted, and for admission's estimates (prompt-size.ts). */
export const CHARS_PER_TOKEN = 4;

let loading: Promise<CountTokens> | undefined;

/** The counter, loading the encoding on first call. */
export function tokenCounter(): Promise<CountTokens> {
  loading ??= import("gpt-tokenizer").then(({ countTokens }) => {
    // Special-token text (`<|endoftext|>`) in a prompt is just text: never a throw.
    const options = { disallowedSpecial: new Set<string>() };
    const piece = (text: string) => (text === "" ? 0 : countTokens(text, options));
    return (text: string) => boundedCount(text, piece);
  });
  return loading;
}

function countRuns(text: string, piece: CountTokens): number {
  let total = 0;
  let from = 0;
  for (const match of text.matchAll(new RegExp(`\\S{${MAX_RUN_CHARS + 1},}`, "g"))) {
    total += piece(text.slice(from, match.index));
    const run = match[0];
    for (let at = 0; at < run.length; at += MAX_RUN_CHARS) total += piece(run.slice(at, at + MAX_RUN_CHARS));
    from = match.index + run.length;
  }
  return total + piece(text.slice(from));
}

/** Counts `text` in bounded pieces (see above). Exported for tests. */
export function boundedCount(text: string, piece: CountTokens): number {
  const counted = Math.min(text.length, MAX_COUNTED_CHARS);
  let total = 0;
  let start = 0;
  while (start < counted) {
    let end = Math.min(counted, start + CHUNK_CHARS);
    if (end < counted) {
      const space = text.lastIndexOf(" ", end);
      if (space > start) end = space;
    }
    total += countRuns(text.slice(start, end), piece);
    start = end;
  }
  if (counted === text.length) return total;
  const rate = total > 0 ? counted / total : CHARS_PER_TOKEN;
  return total + Math.ceil((text.length - counted) / rate);
}
