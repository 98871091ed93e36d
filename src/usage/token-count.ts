/**
 * Token counts for answers whose provider reported no usage (some
 * OpenAI-compatible servers omit it), with gpt-tokenizer's o200k_base
 * encoding: exact for current OpenAI models, an estimate for every other.
 *
 * Loaded on first use (about 150 ms of CPU), so a gateway whose providers
 * all report usage never pays for it. Byte-pair encoding is quadratic in
 * the length of one run of non-space characters (100 k letters took 7 s),
 * so text with such a run (of spaces or of anything else) is counted in
 * bounded pieces: whitespace-separated chunks of at most CHUNK_CHARS, and
 * runs longer than MAX_RUN_CHARS cut into pieces of that length; text
 * without one is counted in one call. Past MAX_COUNTED_CHARS the rest is extrapolated at the rate
 * counted so far. Every count is therefore linear in the text and bounded.
 */
export type CountTokens = (text: string) => number;

const CHUNK_CHARS = 4_096;
const MAX_RUN_CHARS = 100;
const MAX_COUNTED_CHARS = 1_048_576;
/**
 * Whether `text` has a run that byte-pair encoding would take superlinear
 * time over (more than MAX_RUN_CHARS of spaces, or of anything else): the
 * reason to count in pieces. One pass over the characters: a regular
 * expression for it costs a hundred steps per position. Only ASCII spaces
 * and NBSP count as spaces here; any other character joins the run it is
 * in, so a real long run is never missed (two runs may be taken for one,
 * which only sends text to the careful path).
 */
export function hasLongRun(text: string): boolean {
  let run = 0;
  let spaces = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c === 32 || (c >= 9 && c <= 13) || c === 0xa0;
    if (space === spaces) {
      if (++run > MAX_RUN_CHARS) return true;
    } else {
      spaces = space;
      run = 1;
    }
  }
  return false;
}
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
  const head = counted === text.length ? text : text.slice(0, counted);
  // No run (of spaces or of anything else) long enough to be slow: one call, about four times faster than counting in chunks.
  if (!hasLongRun(head)) {
    const total = piece(head);
    return counted === text.length ? total : total + Math.ceil((text.length - counted) / (total > 0 ? counted / total : CHARS_PER_TOKEN));
  }
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
