/**
 * StreamChatResponse{sequence, text: TextDelta{text}} as one gRPC frame
 * (flag, length, message), encoded by hand.
 *
 * Why: text deltas are nearly every message of a stream, and the generic
 * path builds a message object, walks its descriptor (reflection) and
 * copies the result into an envelope for each one. This writes the same
 * bytes (test/fast/text-frame.test.ts holds it to toBinary) into one
 * buffer. Every other delta keeps the generic encoder: they are a handful
 * per stream.
 *
 * Wire layout (proto3): field 1 `sequence` as a varint, omitted at 0;
 * field 3 `text` length-delimited, present even when empty (a oneof
 * member); inside it field 1 the UTF-8 text, omitted when empty.
 */
export function textFrame(sequence: number, text: string): Uint8Array {
  const textBytes = Buffer.byteLength(text, "utf8");
  const inner = textBytes === 0 ? 0 : 1 + varintSize(textBytes) + textBytes;
  const messageBytes = (sequence === 0 ? 0 : 1 + varintSize(sequence)) + 1 + varintSize(inner) + inner;
  const frame = Buffer.allocUnsafe(5 + messageBytes);
  frame[0] = 0;
  frame.writeUInt32BE(messageBytes, 1);
  let at = 5;
  if (sequence !== 0) {
    frame[at++] = 0x08;
    at = writeVarint(frame, at, sequence);
  }
  frame[at++] = 0x1a;
  at = writeVarint(frame, at, inner);
  if (textBytes > 0) {
    frame[at++] = 0x0a;
    at = writeVarint(frame, at, textBytes);
    frame.write(text, at, "utf8");
  }
  return frame;
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}

/** Non-negative integers up to 2^53: sequences and lengths. */
function writeVarint(buffer: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    buffer[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  buffer[at++] = value;
  return at;
}
