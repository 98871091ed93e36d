/**
 * The text the detectors read, and the way back to the caller's text.
 * Personal data is written in forms the ASCII detectors would not see:
 * full-width digits and `＠` (`１２３-４５-６７８９`), other scripts' digits
 * (`١٢٣-٤٥-٦٧٨٩`), dashes other than `-`, invisible characters inside a
 * value (`ali\u200bce@…`). Detection reads a normalised copy; a finding is
 * mapped back to the span of the original it came from, so the caller's
 * own text is what a placeholder replaces and what restoring puts back.
 */
export interface DetectionText {
  /** What the detectors read. */
  readonly text: string;
  /** The original span behind `[start, end)` of `text`. */
  original(start: number, end: number): { readonly start: number; readonly end: number };
}

const IDENTITY = (text: string): DetectionText => ({ text, original: (start, end) => ({ start, end }) });

/** Characters that may need mapping: anything outside ASCII. Checked first: most prompts are ASCII and pay one native scan. */
const NON_ASCII = /[^\x00-\x7f]/;
const DIGIT = /^\p{Nd}$/u;
const FORMAT = /^\p{Cf}$/u;
const DASH = /^\p{Pd}$/u;
/**
 * NFKC forms kept: letters, digits and the signs values are written with,
 * at most three (NFKC can expand one character to eighteen, U+FDFA; `ﬃ`
 * is three).
 */
const VALUE_CHARACTERS = /^[A-Za-z0-9@.+_%-]{1,3}$/;

/** BMP code units already looked at: 0 not yet, 1 unchanged, 2 replaced (in `replaced`, "" for a removed one). */
const seen = new Uint8Array(0x10000);
const replaced = new Map<number, string>();

/** The value 0–9 of a decimal digit of any script: digits come in runs of ten from the script's zero. */
function digitValue(ch: string): number {
  let cp = ch.codePointAt(0)!;
  let steps = 0;
  while (steps < 9 && DIGIT.test(String.fromCodePoint(cp - 1))) {
    cp--;
    steps++;
  }
  return steps;
}

/** What one non-ASCII character reads as: itself (undefined), its NFKC form, an ASCII digit or `-`, or nothing (an invisible format character). */
function mapped(ch: string): string | undefined {
  if (FORMAT.test(ch)) return "";
  const nfkc = ch.normalize("NFKC");
  if (DIGIT.test(nfkc)) return nfkc.charCodeAt(0) < 0x80 ? nfkc : String(digitValue(nfkc));
  if (DASH.test(nfkc)) return "-";
  // Only the characters values are built of: CJK punctuation (`，` `：` `（`) stays the boundary it is in that text.
  return nfkc !== ch && VALUE_CHARACTERS.test(nfkc) ? nfkc : undefined;
}

function bmpMapped(code: number): string | undefined {
  const state = seen[code];
  if (state === 1) return undefined;
  if (state === 2) return replaced.get(code);
  const out = code >= 0xd800 && code <= 0xdfff ? undefined : mapped(String.fromCharCode(code));
  if (out === undefined) seen[code] = 1;
  else {
    replaced.set(code, out);
    seen[code] = 2;
  }
  return out;
}

/** Astral characters: mathematical digits and letters, and the digits of scripts beyond the BMP; never cached (rare, and a table would be large). */
function astralMapped(ch: string): string | undefined {
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x1d400 && cp <= 0x1d7ff) return mapped(ch);
  return DIGIT.test(ch) || FORMAT.test(ch) ? mapped(ch) : undefined;
}

/** Lone surrogates come out as U+FFFD, one unit for one: lengths and positions hold, and no detector reads either. */
const UTF16 = new TextDecoder("utf-16le");

/** The first position of `text` whose character reads differently, or -1. */
function firstChange(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        if (astralMapped(text.slice(i, i + 2)) !== undefined) return i;
        i++;
        continue;
      }
    }
    if (bmpMapped(code) !== undefined) return i;
  }
  return -1;
}

/**
 * The normalised copy of `text` and its map back. Linear: one pass over
 * the code units into a buffer, one table lookup per non-ASCII character
 * (each distinct character is normalised once per process), and the map
 * keeps an entry only where the copy's length drifts from the original's
 * (a removed character, one that became two or three, a surrogate pair
 * that became one digit), not per changed character.
 */
export function detectionText(text: string): DetectionText {
  if (!NON_ASCII.test(text)) return IDENTITY(text);
  const first = firstChange(text);
  if (first < 0) return IDENTITY(text);
  // Stretches of the copy from normStart on: origin origStart; width -1 while both advance together, else the one original character (its width) they all came from.
  const norm: number[] = [0];
  const orig: number[] = [0];
  const width: number[] = [-1];
  let units = new Uint16Array(text.length + 64);
  for (let i = 0; i < first; i++) units[i] = text.charCodeAt(i);
  let n = first;
  const put = (code: number) => {
    if (n === units.length) {
      const bigger = new Uint16Array(units.length * 2);
      bigger.set(units);
      units = bigger;
    }
    units[n++] = code;
  };
  for (let i = first; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      put(code);
      continue;
    }
    let w = 1;
    let to: string | undefined;
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        w = 2;
        to = astralMapped(text.slice(i, i + 2));
      }
    } else to = bmpMapped(code);
    if (to === undefined) {
      put(code);
      if (w === 2) put(text.charCodeAt(i + 1));
    } else if (to.length === w) {
      for (let k = 0; k < to.length; k++) put(to.charCodeAt(k));
    } else {
      if (to.length > 0) {
        norm.push(n);
        orig.push(i);
        width.push(w);
      }
      for (let k = 0; k < to.length; k++) put(to.charCodeAt(k));
      const last = norm.length - 1;
      // A run of removed characters moves one stretch's origin instead of adding one per character.
      if (norm[last] === n && width[last] === -1) orig[last] = i + w;
      else {
        norm.push(n);
        orig.push(i + w);
        width.push(-1);
      }
    }
    i += w - 1;
  }
  const copy = UTF16.decode(units.subarray(0, n));
  /** The last stretch starting at or before position `at` of the copy. */
  const stretch = (at: number): number => {
    let lo = 0;
    let hi = norm.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (norm[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  return {
    text: copy,
    original(start, end) {
      const a = stretch(start);
      const b = stretch(end - 1);
      return {
        start: width[a] === -1 ? orig[a]! + (start - norm[a]!) : orig[a]!,
        end: width[b] === -1 ? orig[b]! + (end - norm[b]!) : orig[b]! + width[b]!,
      };
    },
  };
}
