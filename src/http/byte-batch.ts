/**
 * Bytes gathered for one write: parts are kept as given and copied once,
 * into one buffer of the exact size, when the batch is taken. Strings are
 * UTF-8. Fixed parts (a chunk's prefix and suffix) are encoded once by the
 * caller and only copied here: no string per event is built, joined or
 * re-encoded, which on the facade was most of the garbage per delta.
 */
export interface ByteBatch {
  push(part: string | Uint8Array): void;
  readonly empty: boolean;
  /** The parts as one buffer; the batch is empty again. */
  take(): Buffer;
}

export function createByteBatch(): ByteBatch {
  const parts: Array<string | Uint8Array> = [];
  let bytes = 0;
  return {
    push(part) {
      parts.push(part);
      bytes += typeof part === "string" ? Buffer.byteLength(part) : part.byteLength;
    },
    get empty() {
      return parts.length === 0;
    },
    take() {
      const out = Buffer.allocUnsafe(bytes);
      let at = 0;
      for (const part of parts) {
        if (typeof part === "string") at += out.write(part, at);
        else {
          out.set(part, at);
          at += part.byteLength;
        }
      }
      parts.length = 0;
      bytes = 0;
      return out;
    },
  };
}
