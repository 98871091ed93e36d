/**
 * The semantic cache's evaluation set (issue #26): question pairs that ask
 * the same thing in other words (positives) and pairs that share their
 * wording but ask different things (hard negatives).
 *
 * Method. Each of 40 intents (a request a support desk hears, as a verb
 * phrase) is asked through 8 phrasings. A positive pairs one intent under
 * two different phrasings, 5 per intent (200). A negative pairs two
 * different intents under the same phrasing, 5 per intent (200): the only
 * difference is the words that carry the meaning, which is what makes a
 * false hit likely. The set is written here, not drawn from a corpus: the
 * bench runs offline, and the simulator's model is the one scored.
 */

const INTENTS = [
  "reset my password",
  "cancel my subscription",
  "change my email address",
  "update my billing address",
  "download my invoices",
  "delete my account",
  "enable two-factor authentication",
  "export my data",
  "add a team member",
  "remove a team member",
  "change my plan",
  "get a refund",
  "contact customer support",
  "report a security issue",
  "change the language of the app",
  "turn off email notifications",
  "recover a deleted file",
  "share a folder with a colleague",
  "connect my calendar",
  "install the desktop client",
  "update my credit card",
  "rename my workspace",
  "transfer ownership of a project",
  "set up single sign-on",
  "increase my storage limit",
  "change my username",
  "verify my phone number",
  "unlock my account",
  "pause my subscription",
  "apply a discount code",
  "change the time zone",
  "archive old projects",
  "restore a previous version",
  "invite a guest user",
  "generate an API key",
  "revoke an API key",
  "see my usage statistics",
  "schedule a report",
  "merge two accounts",
  "close a support ticket",
] as const;

const PHRASINGS: ReadonlyArray<(intent: string) => string> = [
  (x) => `How do I ${x}?`,
  (x) => `How can I ${x}?`,
  (x) => `What is the way to ${x}?`,
  (x) => `I need to ${x}. How?`,
  (x) => `Can you tell me how to ${x}?`,
  (x) => `Please explain how to ${x}.`,
  (x) => `Is it possible to ${x}?`,
  (x) => `I want to ${x}, what should I do?`,
];

export interface QuestionPair {
  readonly a: string;
  readonly b: string;
  /** True: the two ask the same thing (a hit is right); false: a hit would be a false hit. */
  readonly same: boolean;
}

/** 200 positives and 200 hard negatives, in a fixed order. */
export function questionPairs(): QuestionPair[] {
  const pairs: QuestionPair[] = [];
  INTENTS.forEach((intent, i) => {
    for (let k = 0; k < 5; k++) {
      const first = PHRASINGS[k]!;
      // Another phrasing than the first, varied by intent: 1 + (i mod 7) steps on, never 0 or 8.
      const second = PHRASINGS[(k + 1 + (i % 7)) % PHRASINGS.length]!;
      pairs.push({ a: first(intent), b: second(intent), same: true });
      const other = INTENTS[(i + 1 + k * 7) % INTENTS.length]!;
      const phrasing = PHRASINGS[(i + k) % PHRASINGS.length]!;
      pairs.push({ a: phrasing(intent), b: phrasing(other), same: false });
    }
  });
  return pairs;
}

/** Hit rate (positives at or past the threshold) and false-hit rate (negatives at or past it). */
export function rates(similarities: ReadonlyArray<{ readonly same: boolean; readonly similarity: number }>, threshold: number): { hitRate: number; falseHitRate: number } {
  const positives = similarities.filter((s) => s.same);
  const negatives = similarities.filter((s) => !s.same);
  return {
    hitRate: positives.filter((s) => s.similarity >= threshold).length / positives.length,
    falseHitRate: negatives.filter((s) => s.similarity >= threshold).length / negatives.length,
  };
}
