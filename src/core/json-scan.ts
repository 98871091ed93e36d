import { pathSegment, STRUCTURAL_DEPTH, type StructureLimits, tooDeep, tooManyElements } from "./structure-limits.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

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

/** Bytes that start a number, true, false or null. */
function startsScalar(byte: number): boolean {
  return byte === 0x2d || (byte >= 0x30 && byte <= 0x39) || byte === 0x74 || byte === 0x66 || byte === 0x6e;
}

function isDelimiter(byte: number): boolean {
  return byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY || byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === COLON;
}

/**
 * The open containers, one slot per nesting level, in flat arrays: nothing
 * is allocated per object or array however many the document holds.
 */
interface Frames {
  readonly isArray: Uint8Array;
  readonly expectingKey: Uint8Array;
  readonly index: Uint32Array;
  readonly keyStart: Uint32Array;
  readonly keyEnd: Uint32Array;
}

function pathOf(bytes: Uint8Array, frames: Frames, depth: number): string {
  const decoder = new TextDecoder();
  let path = "";
  for (let d = 0; d < depth; d++) {
    if (frames.isArray[d]) path = pathSegment(path, frames.index[d]!);
    else if (frames.keyEnd[d]! > frames.keyStart[d]!) path = pathSegment(path, decoder.decode(bytes.subarray(frames.keyStart[d], frames.keyEnd[d])));
  }
  return path;
}

/**
 * Counts the values in a JSON document and measures its nesting without
 * parsing it: no allocation per value, strings skipped with a native search.
 * Throws `payload_too_large` past `maxRequestElements` and `invalid_request`
 * (naming the path) past `maxJsonDepth` plus the request's own structural
 * levels. Malformed JSON is not this function's business: it stops quietly
 * and leaves the error to the real parser.
 */
export function scanJson(bytes: Uint8Array, limits: StructureLimits): void {
  const maxDepth = limits.maxJsonDepth + STRUCTURAL_DEPTH;
  const frames: Frames = {
    isArray: new Uint8Array(maxDepth),
    expectingKey: new Uint8Array(maxDepth),
    index: new Uint32Array(maxDepth),
    keyStart: new Uint32Array(maxDepth),
    keyEnd: new Uint32Array(maxDepth),
  };
  const max = limits.maxRequestElements;
  let depth = 0;
  let elements = 0;
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const end = stringEnd(bytes, i);
      const top = depth - 1;
      if (depth > 0 && frames.isArray[top] === 0 && frames.expectingKey[top] === 1) {
        frames.keyStart[top] = i + 1;
        frames.keyEnd[top] = end;
      } else if (++elements > max) throw tooManyElements(max);
      i = end + 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++elements > max) throw tooManyElements(max);
      if (depth >= maxDepth) throw tooDeep(pathOf(bytes, frames, depth), limits.maxJsonDepth);
      frames.isArray[depth] = c === OPEN_ARRAY ? 1 : 0;
      frames.expectingKey[depth] = c === OPEN_OBJECT ? 1 : 0;
      frames.index[depth] = 0;
      frames.keyStart[depth] = 0;
      frames.keyEnd[depth] = 0;
      depth++;
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth > 0) depth--;
      i++;
    } else if (c === COMMA) {
      const top = depth - 1;
      if (depth > 0) {
        if (frames.isArray[top]) frames.index[top]!++;
        else frames.expectingKey[top] = 1;
      }
      i++;
    } else if (c === COLON) {
      if (depth > 0) frames.expectingKey[depth - 1] = 0;
      i++;
    } else if (startsScalar(c)) {
      if (++elements > max) throw tooManyElements(max);
      i++;
      while (i < n && !isDelimiter(bytes[i]!)) i++;
    } else i++;
  }
}
