import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { StreamChatResponseSchema } from "../../gen/sluice/v1/chat_service_pb.js";
import { textFrame } from "../../src/edges/grpc/text-frame.js";

/** What the generic path sends for the same message: toBinary, then the 5-byte envelope. */
function generic(sequence: number, text: string): Uint8Array {
  const message = toBinary(StreamChatResponseSchema, create(StreamChatResponseSchema, { sequence: BigInt(sequence), delta: { case: "text", value: { text } } }));
  const frame = new Uint8Array(5 + message.length);
  new DataView(frame.buffer).setUint32(1, message.length);
  frame.set(message, 5);
  return frame;
}

describe("a text delta framed by hand", () => {
  const texts = ["", "a", "hello world", "é", "中文字符", "🙂 emoji", "x".repeat(127), "x".repeat(128), "y".repeat(16_384), "\u0000\uffff"];
  const sequences = [0, 1, 127, 128, 16_383, 16_384, 2 ** 31, 2 ** 53 - 1];

  it("is byte for byte what the generic encoder sends", () => {
    for (const text of texts) {
      for (const sequence of sequences) expect(Buffer.from(textFrame(sequence, text)), `${sequence} ${JSON.stringify(text.slice(0, 8))}`).toEqual(Buffer.from(generic(sequence, text)));
    }
  });

  it("agrees on random text, lone surrogates included", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      const length = Math.floor(random() * 300);
      const text = String.fromCharCode(...Array.from({ length }, () => Math.floor(random() * 0x10000)));
      const sequence = Math.floor(random() * 2 ** 40);
      expect(Buffer.from(textFrame(sequence, text))).toEqual(Buffer.from(generic(sequence, text)));
    }
  });
});
