/**
 * Splits a byte stream into lines of at most `maxBytes` without holding
 * more than that: a longer line is not kept but skipped to its end, and
 * reported with its last few bytes (where a JSON-RPC answer written by the
 * SDK carries its `id`) so that the one request it answered can be told.
 */
export interface LineSplitter {
  push(chunk: Buffer): void;
}

export const OVERSIZED_TAIL_BYTES = 256;

export function createLineSplitter(maxBytes: number, onLine: (line: Buffer) => void, onOversized: (bytes: number, tail: Buffer) => void): LineSplitter {
  let parts: Buffer[] = [];
  let held = 0;
  let skipping = false;
  let skipped = 0;
  let tail = Buffer.alloc(0);

  const keepTail = (bytes: Buffer) => {
    tail = Buffer.concat([tail, bytes.subarray(Math.max(0, bytes.length - OVERSIZED_TAIL_BYTES))]);
    if (tail.length > OVERSIZED_TAIL_BYTES) tail = tail.subarray(tail.length - OVERSIZED_TAIL_BYTES);
  };
  const take = (bytes: Buffer) => {
    if (skipping) {
      skipped += bytes.length;
      keepTail(bytes);
      return;
    }
    if (held + bytes.length > maxBytes) {
      skipping = true;
      skipped = held + bytes.length;
      tail = Buffer.alloc(0);
      for (const part of parts) keepTail(part);
      keepTail(bytes);
      parts = [];
      held = 0;
      return;
    }
    if (bytes.length > 0) parts.push(bytes);
    held += bytes.length;
  };
  const end = () => {
    if (skipping) onOversized(skipped, tail);
    else onLine(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
    parts = [];
    held = 0;
    skipping = false;
    skipped = 0;
    tail = Buffer.alloc(0);
  };

  return {
    push(chunk) {
      let start = 0;
      for (let nl = chunk.indexOf(0x0a, start); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
        take(chunk.subarray(start, nl));
        end();
        start = nl + 1;
      }
      if (start < chunk.length) take(chunk.subarray(start));
    },
  };
}
