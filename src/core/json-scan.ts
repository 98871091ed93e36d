import { pathSegment, type StructureLimits, STRUCTURAL_DEPTH, tooDeep, tooManyElements } from "./structure-limits.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

interface Frame {
  readonly array: boolean;
  /** Byte offsets of the current key (objects). */
  keyStart: number;
  keyEnd: number;
  /** Index of the current item (arrays). */
  index: number;
  expectingKey: boolean;
}

/** Offset of the quote that closes the string opening at `start`, or the end of input. */
function stringEnd(bytes: Uint8Array, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, at);
    if (quote < 0) return bytes.length;
    let slashes = 0;
    for (let k = quote - 1; k > start && bytes[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

function isDelimiter(byte: number): boolean {
  return byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY || byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function pathOf(bytes: Uint8Array, stack: readonly Frame[]): string {
  const decoder = new TextDecoder();
  let path = "";
  for (const frame of stack) {
    if (frame.array) path = pathSegment(path, frame.index);
    else if (frame.keyEnd > frame.keyStart) path = pathSegment(path, decoder.decode(bytes.subarray(frame.keyStart, frame.keyEnd)));
  }
  return path;
}

/**
 * Counts the values in a JSON document and measures its nesting without
 * parsing it: no allocation per value, strings skipped with a native search.
 * Throws `payload_too_large` past `maxRequestElements` and `invalid_request` (naming
 * the path) past `maxJsonDepth` plus the request's own structural levels.
 * Malformed JSON is not this function's business: it stops quietly and
 * leaves the error to the real parser.
 */
export function scanJson(bytes: Uint8Array, limits: StructureLimits): void {
  const maxDepth = limits.maxJsonDepth + STRUCTURAL_DEPTH;
  const stack: Frame[] = [];
  let elements = 0;
  const value = () => {
    if (++elements > limits.maxRequestElements) throw tooManyElements(limits.maxRequestElements);
  };
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const c = bytes[i]!;
    const top = stack[stack.length - 1];
    switch (c) {
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        value();
        if (stack.length >= maxDepth) throw tooDeep(pathOf(bytes, stack), limits.maxJsonDepth);
        stack.push({ array: c === OPEN_ARRAY, keyStart: 0, keyEnd: 0, index: 0, expectingKey: c === OPEN_OBJECT });
        i++;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        stack.pop();
        i++;
        break;
      case QUOTE: {
        const end = stringEnd(bytes, i);
        if (top && !top.array && top.expectingKey) {
          top.keyStart = i + 1;
          top.keyEnd = end;
        } else value();
        i = end + 1;
        break;
      }
      case COMMA:
        if (top?.array) top.index++;
        else if (top) top.expectingKey = true;
        i++;
        break;
      case COLON:
        if (top) top.expectingKey = false;
        i++;
        break;
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e) {
          value();
          while (i < n && !isDelimiter(bytes[i]!)) i++;
        } else i++;
    }
  }
}
