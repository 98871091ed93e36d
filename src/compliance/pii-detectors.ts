import { isIPv6 } from "node:net";
import { PII_KINDS } from "../config/pii-kinds.js";
import { detectionText } from "./detection-text.js";

/** One finding: where in the text, and what kind (a built-in kind, or a custom detector's name). */
export interface PiiSpan {
  readonly kind: string;
  readonly start: number;
  readonly end: number;
}

/** Luhn's check (payment cards). */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** ISO 13616 mod-97 (IBAN): the country and check digits moved to the end, letters as 10..35, the whole ≡ 1 mod 97. */
export function ibanValid(iban: string): boolean {
  const s = iban.toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(s)) return false;
  const moved = s.slice(4) + s.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : ch;
    for (const digit of value) rest = (rest * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return rest === 1;
}

const CN_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const CN_CHECK = "10X98765432";

/** GB 11643 (ISO 7064 MOD 11-2) check character of a China resident identity number, and a real date of birth. */
export function cnIdValid(id: string): boolean {
  const s = id.toUpperCase();
  if (!/^[1-9]\d{16}[\dX]$/.test(s)) return false;
  const year = Number(s.slice(6, 10));
  const month = Number(s.slice(10, 12));
  const day = Number(s.slice(12, 14));
  const born = new Date(Date.UTC(year, month - 1, day));
  if (year < 1900 || born.getUTCMonth() !== month - 1 || born.getUTCDate() !== day || born.getTime() > Date.now()) return false;
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (s.charCodeAt(i) - 48) * CN_WEIGHTS[i]!;
  return CN_CHECK[sum % 11] === s[17];
}

/** A US social security number's published rules: area not 000, 666 or 9xx; group not 00; serial not 0000. */
export function ssnValid(ssn: string): boolean {
  const m = /^(\d{3})-(\d{2})-(\d{4})$/.exec(ssn);
  if (!m) return false;
  const [area, group, serial] = [m[1]!, m[2]!, m[3]!];
  return area !== "000" && area !== "666" && area[0] !== "9" && group !== "00" && serial !== "0000";
}

/** Shannon entropy in bits per character: high for random tokens, low for words and repeated characters. */
export function entropy(text: string): number {
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / text.length) * Math.log2(n / text.length);
  return bits;
}

/** Prefixes API keys and tokens are issued with: a match is a secret whatever its entropy. */
const SECRET_PREFIXES = /^(sk-ant-|sk-proj-|sk-|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza|glpat-|hf_)/;

/**
 * A kind's finder: a bounded pattern (global flag) and the validation a
 * candidate must pass (a check digit, a checksum, a range), which is what
 * keeps numbers that merely look like these (order numbers, versions,
 * amounts) out. The built-in kinds are config/pii-kinds.ts's PII_KINDS.
 */
export interface Detector {
  readonly kind: string;
  readonly pattern: RegExp;
  readonly valid: (match: string) => boolean;
}

const digitsOf = (s: string) => s.replace(/[^\d]/g, "");

/**
 * Candidates are bounded (no pattern can backtrack without end: each
 * repetition is of a fixed character class with an upper bound) and
 * anchored on boundaries, so a match never starts inside a longer word
 * or number.
 */
const DETECTORS: readonly Detector[] = [
  {
    kind: "email",
    pattern: /(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-])/g,
    valid: (m) => !m.startsWith(".") && !m.includes(".."),
  },
  {
    kind: "secret",
    pattern: /(?<![\w-])(?:sk-ant-|sk-proj-|sk-|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza|glpat-|hf_)[A-Za-z0-9_-]{16,200}(?![\w-])/g,
    valid: (m) => {
      const body = m.replace(SECRET_PREFIXES, "");
      // Issued keys are random: digits among letters, and no words joined by dashes ("sk-this-is-not-a-key").
      return /\d/.test(body) && entropy(body) >= (body.length >= 32 ? 4 : 3) && !/^(?:[a-z]+-){2,}[a-z]+$/.test(body);
    },
  },
  {
    kind: "secret",
    // A bearer token after the word: long, and random enough that it is no sentence.
    pattern: /(?<=\bBearer\s{1,4})[A-Za-z0-9._~+/=-]{19,399}[A-Za-z0-9_~+/=-](?![\w~+/=-]|\.[\w~+/=-])/g,
    valid: (m) => entropy(m) >= 3.5,
  },
  {
    kind: "iban",
    pattern: /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?(?![A-Za-z0-9])/g,
    valid: (m) => ibanValid(m.replace(/ /g, "")),
  },
  {
    kind: "cn_id",
    pattern: /(?<![\dA-Za-z])[1-9]\d{16}[\dXx](?![\dA-Za-z])/g,
    valid: cnIdValid,
  },
  {
    kind: "card",
    // 13 to 19 digits, in groups separated by one space or dash, or none.
    // Not the digits inside an account number that failed its own check (an IBAN's groups after its country and check digits).
    pattern: /(?<![\d-])(?<![A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){0,7} ?)\d{4}(?:[ -]?\d{3,4}){2,3}(?:[ -]?\d{1,4})?(?![\d-])/g,
    valid: (m) => {
      const d = digitsOf(m);
      // Written without separators, a card has at most 16 digits: a longer bare run is another number (an ID) that Luhn passes one time in ten.
      const most = d.length === m.length ? 16 : 19;
      return d.length >= 13 && d.length <= most && /^[2-6]/.test(d) && luhn(d);
    },
  },
  {
    kind: "us_ssn",
    pattern: /(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])/g,
    valid: ssnValid,
  },
  {
    kind: "phone",
    // E.164 with a +, spaces or dashes allowed between groups; or a North American number with its area code; or a Chinese mobile.
    pattern: /(?<![\w+])(?:\+[1-9]\d{0,2}(?:[ -]?\(?\d{1,4}\)?){2,5}\d|\(\d{3}\)[ ]?\d{3}-\d{4}|\d{3}-\d{3}-\d{4}|1[3-9]\d{9})(?![\w])/g,
    valid: (m) => {
      const d = digitsOf(m);
      if (m.startsWith("+")) return d.length >= 8 && d.length <= 15;
      if (/^1[3-9]\d{9}$/.test(m)) return true;
      return d.length === 10 && /^[2-9]/.test(d) && /^\d{3}[2-9]/.test(d);
    },
  },
  {
    kind: "ipv4",
    pattern: /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)/g,
    valid: (m) => m.split(".").every((o) => Number(o) <= 255 && (o === "0" || !o.startsWith("0"))),
  },
  {
    kind: "ipv6",
    pattern: /(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])/g,
    valid: (m) => m.length >= 6 && isIPv6(m) && /[0-9A-Fa-f]/.test(m),
  },
];

const ALL_KINDS: ReadonlySet<string> = new Set(PII_KINDS);

/**
 * A custom pattern (compliance.patterns) as a detector: its source was
 * checked at load (config/compliance-schema.ts); every match counts.
 */
export function customDetector(name: string, pattern: string): Detector {
  return { kind: name, pattern: new RegExp(pattern, "gu"), valid: () => true };
}

/**
 * Every finding in `text` of the `kinds` asked for, in order, without
 * overlaps: where two candidates overlap, the one found by the earlier
 * detector (the more specific: an email before a phone number inside it;
 * built-in detectors before custom ones) wins. The whole
 * text is scanned (a request's texts are bounded by limits.maxRequestBytes
 * before this): a cut-off would let what lies past it through. Detectors
 * read a normalised copy (detection-text.ts: NFKC, other scripts' digits,
 * dashes, no invisible characters); spans are of `text` itself.
 */
export function detectPii(text: string, kinds: ReadonlySet<string> = ALL_KINDS, custom: readonly Detector[] = []): PiiSpan[] {
  const read = detectionText(text);
  const spans = detectIn(read.text, kinds, custom);
  if (read.text === text) return spans;
  return spans.map((span) => ({ kind: span.kind, ...read.original(span.start, span.end) }));
}

/** detectPii on text already normalised. */
function detectIn(text: string, kinds: ReadonlySet<string>, custom: readonly Detector[]): PiiSpan[] {
  let kept: PiiSpan[] = [];
  // Detectors in rank order; one detector's matches never overlap each other (a global pattern's matches are disjoint), so each
  // is merged into what earlier ones kept in one pass beside it: linear in the findings, however they interleave.
  const scan = (detector: Detector) => {
    if (!kinds.has(detector.kind)) return;
    const accepted: PiiSpan[] = [];
    let j = 0;
    for (const match of text.matchAll(detector.pattern)) {
      if (match[0].length === 0 || !detector.valid(match[0])) continue;
      const span = { kind: detector.kind, start: match.index, end: match.index + match[0].length };
      while (j < kept.length && kept[j]!.end <= span.start) j++;
      if (j < kept.length && kept[j]!.start < span.end) continue;
      accepted.push(span);
    }
    if (accepted.length === 0) return;
    if (kept.length === 0) {
      kept = accepted;
      return;
    }
    const merged: PiiSpan[] = [];
    let a = 0;
    let b = 0;
    while (a < kept.length || b < accepted.length) {
      if (b >= accepted.length || (a < kept.length && kept[a]!.start < accepted[b]!.start)) merged.push(kept[a++]!);
      else merged.push(accepted[b++]!);
    }
    kept = merged;
  };
  DETECTORS.forEach(scan);
  custom.forEach(scan);
  return kept;
}

/** Characters screened between two turns of the event loop, for a text screened in slices. */
export const SLICE_CHARS = 128 * 1024;
/**
 * Characters each slice also reads on either side: more than any built-in
 * finding spans (an email is at most about 600), with room for the chain of
 * overlaps ranking resolves, so each slice decides the findings that start
 * in it as the whole text would.
 */
const SLICE_CONTEXT = 8 * 1024;

/** Lets the event loop turn: what a long screening does between slices. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * detectPii over a long text in slices of SLICE_CHARS, the event loop
 * turning between them, so that screening a prompt of megabytes never holds
 * every other stream for the whole of it. Each slice keeps the findings that
 * start in it; a finding longer than the context (a custom pattern's match
 * of more than 8 KiB) may be missed or cut.
 */
export async function detectPiiInSlices(text: string, kinds: ReadonlySet<string> = ALL_KINDS, custom: readonly Detector[] = [], signal?: AbortSignal): Promise<PiiSpan[]> {
  if (text.length <= SLICE_CHARS) return detectPii(text, kinds, custom);
  const out: PiiSpan[] = [];
  for (let at = 0; at < text.length; at += SLICE_CHARS) {
    if (at > 0) await turn();
    signal?.throwIfAborted();
    const from = Math.max(0, at - SLICE_CONTEXT);
    const end = Math.min(text.length, at + SLICE_CHARS);
    for (const span of detectPii(text.slice(from, Math.min(text.length, end + SLICE_CONTEXT)), kinds, custom)) {
      const start = span.start + from;
      if (start < at || start >= end) continue;
      const last = out[out.length - 1];
      if (last && last.end > start) continue;
      out.push({ kind: span.kind, start, end: span.end + from });
    }
  }
  return out;
}
