import { createRandom } from "./random.js";

const WORDS = [
  "river",
  "stone",
  "light",
  "quiet",
  "harbor",
  "signal",
  "lantern",
  "meadow",
  "copper",
  "thread",
  "window",
  "ember",
  "canyon",
  "velvet",
  "orbit",
  "willow",
  "marble",
  "echo",
  "summit",
  "tide",
  "feather",
  "pixel",
  "garden",
  "rhythm",
  "compass",
  "glacier",
  "saffron",
  "ripple",
  "beacon",
  "prism",
  "héllo",
  "naïve",
  "日本",
  "🙂",
];

/**
 * The simulator's deterministic answer: `count` tokens, each a word and a
 * trailing space. Includes multi-byte characters so that byte-level splits
 * inside a character are exercised end to end.
 */
export function simulatedTokens(seed: number, count: number): string[] {
  const next = createRandom(seed);
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) tokens.push(`${WORDS[Math.floor(next() * WORDS.length)]!} `);
  return tokens;
}

/** The whole text the simulator streams for this seed and token count. */
export function simulatedText(seed: number, count: number): string {
  return simulatedTokens(seed, count).join("");
}

/** The simulator's count of input tokens: words, so a test can predict it from its prompt. */
export function countWords(texts: readonly string[]): number {
  return texts.join(" ").split(/\s+/).filter(Boolean).length;
}
