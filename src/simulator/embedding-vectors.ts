/**
 * The simulator's embedding model: deterministic vectors that behave enough
 * like a real model's for tests of what sits on top of embeddings (a
 * semantic cache, a threshold, a nearest-neighbour index).
 *
 * A text becomes features: its words (lower-cased, NFKC, letters and digits;
 * each Han, kana or Hangul character is a word of its own), stemmed
 * crudely (`asking`, `asked`, `asks` → `ask`), and each pair of neighbouring
 * content words. Each feature is hashed to one dimension with a sign
 * (feature hashing), weighted 1 for a content word, 0.15 for a function
 * word (`the`, `is`, `how`…) and 0.5 for a word pair, and the sum is
 * L2-normalised. So the same text always gives the same vector; texts that
 * share most of their content words score high (a reworded question, a
 * question with a word added); texts that share only function words score
 * near zero. docs/embeddings.md lists what a few pairs score.
 */

/** Dimensions when neither the model's `dims` knob nor the request's `dimensions` says. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 256;
/** The most dimensions a request may ask for. */
export const MAX_EMBEDDING_DIMENSIONS = 4_096;

const CONTENT_WEIGHT = 1;
const FUNCTION_WEIGHT = 0.15;
const PAIR_WEIGHT = 0.5;

const FUNCTION_WORDS = new Set(
  (
    "a an the and or but if then so of to in on at by for with from as into about over under " +
    "is are was were be been being am do does did doing have has had having can could will would shall should may might must " +
    "i me my we our you your he him his she her it its they them their this that these those there here " +
    "what which who whom whose when where why how not no yes please just also very too any some all " +
    "s t d ll m re ve"
  ).split(" "),
);

const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu;

/** A crude suffix stripper: enough for inflections to land on one feature, not a linguistic stemmer. */
export function stem(word: string): string {
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

/** The words of `text`, normalised and stemmed, in order. */
export function words(text: string): string[] {
  return (text.normalize("NFKC").toLowerCase().match(WORD) ?? []).map(stem);
}

/** FNV-1a over UTF-16 code units, then a murmur3 finaliser so that low and high bits both mix. */
export function featureHash(feature: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < feature.length; i++) h = Math.imul(h ^ feature.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function add(vector: Float64Array, feature: string, weight: number): void {
  const h = featureHash(feature);
  vector[h % vector.length]! += h & 0x80000000 ? -weight : weight;
}

/** The unit vector of `text` in `dimensions` dimensions (an empty text gets a fixed one of its own). */
export function embedText(text: string, dimensions = DEFAULT_EMBEDDING_DIMENSIONS): number[] {
  return embedWords(words(text), dimensions);
}

/** The unit vector of token ids (an `input` given as token arrays): each id is a word. */
export function embedTokens(tokens: readonly number[], dimensions = DEFAULT_EMBEDDING_DIMENSIONS): number[] {
  return embedWords(
    tokens.map((t) => `#${t}`),
    dimensions,
  );
}

function embedWords(list: readonly string[], dimensions: number): number[] {
  const vector = new Float64Array(dimensions);
  let previous: string | undefined;
  for (const word of list) {
    const content = !FUNCTION_WORDS.has(word);
    add(vector, `w:${word}`, content ? CONTENT_WEIGHT : FUNCTION_WEIGHT);
    if (!content) continue;
    if (previous !== undefined) add(vector, `p:${previous} ${word}`, PAIR_WEIGHT);
    previous = word;
  }
  let norm = 0;
  for (const x of vector) norm += x * x;
  if (norm === 0) {
    add(vector, "empty", 1);
    norm = 1;
  }
  const scale = 1 / Math.sqrt(norm);
  return Array.from(vector, (x) => x * scale);
}

/** Cosine similarity of two vectors of one length (unit vectors: their dot product). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
