import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/core/errors.js";
import { createSseDecoder, type SseEvent } from "../src/sse/decoder.js";

const enc = new TextEncoder();

function decodeAll(chunks: readonly Uint8Array[], maxEventSize = 1 << 20): SseEvent[] {
  const decoder = createSseDecoder({ maxEventSize });
  const out: SseEvent[] = [];
  for (const chunk of chunks) out.push(...decoder.push(chunk));
  out.push(...decoder.end());
  return out;
}

const ev = (data: string, event?: string): SseEvent => ({ event, data });

const CASES: Array<{ name: string; input: string; events: SseEvent[] }> = [
  { name: "single event, LF", input: "data: hello\n\n", events: [ev("hello")] },
  { name: "CRLF line endings", input: "data: a\r\n\r\ndata: b\r\n\r\n", events: [ev("a"), ev("b")] },
  { name: "bare CR line endings", input: "data: a\r\rdata: b\r\r", events: [ev("a"), ev("b")] },
  { name: "multi-line data joined with LF", input: "data: one\ndata: two\ndata:three\n\n", events: [ev("one\ntwo\nthree")] },
  { name: "data: without a space", input: 'data:{"x":1}\n\n', events: [ev('{"x":1}')] },
  { name: "only the first space is stripped", input: "data:  two spaces\n\n", events: [ev(" two spaces")] },
  { name: "comments ignored, before and between events", input: ": ping\n\ndata: a\n: keepalive\n\n:\n\n", events: [ev("a")] },
  { name: "event names", input: "event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n", events: [ev("{}", "message_start"), ev("{}", "ping")] },
  { name: "OpenAI [DONE] sentinel is just data", input: 'data: {"a":1}\n\ndata: [DONE]\n\n', events: [ev('{"a":1}'), ev("[DONE]")] },
  { name: "id and retry fields do not make events", input: "id: 7\nretry: 10\n\ndata: x\n\n", events: [ev("x")] },
  { name: "unknown fields ignored", input: "foo: bar\ndata: x\n\n", events: [ev("x")] },
  { name: "event without data is not dispatched", input: "event: lonely\n\n", events: [] },
  { name: "cut-off last event is dropped", input: "data: whole\n\ndata: cut", events: [ev("whole")] },
  { name: "byte order mark at start", input: "\uFEFFdata: bom\n\n", events: [ev("bom")] },
  { name: "multi-byte characters", input: "data: héllo 日本 🙂\n\n", events: [ev("héllo 日本 🙂")] },
  { name: "empty data line", input: "data:\n\n", events: [ev("")] },
];

describe("SSE decoder", () => {
  for (const c of CASES) {
    it(`${c.name}: whole`, () => {
      expect(decodeAll([enc.encode(c.input)])).toEqual(c.events);
    });
  }

  it("gives the same events for every sample split at every byte offset", () => {
    for (const c of CASES) {
      const bytes = enc.encode(c.input);
      for (let cut = 0; cut <= bytes.length; cut++) {
        expect(decodeAll([bytes.subarray(0, cut), bytes.subarray(cut)]), `${c.name} @${cut}`).toEqual(c.events);
      }
    }
  });

  it("gives the same events when fed one byte at a time", () => {
    for (const c of CASES) {
      const bytes = enc.encode(c.input);
      const singles = Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
      expect(decodeAll(singles), c.name).toEqual(c.events);
    }
  });

  it("returns events as soon as their chunk completes them", () => {
    const decoder = createSseDecoder({ maxEventSize: 1024 });
    expect(decoder.push(enc.encode("data: a\n"))).toEqual([]);
    expect(decoder.push(enc.encode("\ndata: b"))).toEqual([ev("a")]);
    expect(decoder.push(enc.encode("\n\n"))).toEqual([ev("b")]);
  });

  describe("maximum event size", () => {
    it("rejects an event that grows past the limit across chunks, without buffering it", () => {
      const decoder = createSseDecoder({ maxEventSize: 4096 });
      decoder.push(enc.encode("data: "));
      const block = enc.encode("x".repeat(1024));
      let error: unknown;
      let fed = 0;
      try {
        for (; fed < 1024; fed++) decoder.push(block);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe("upstream_protocol");
      expect((error as GatewayError).message).toMatch(/maximum event size of 4096/);
      expect(fed).toBeLessThanOrEqual(5);
    });

    it("rejects an oversized event that arrives whole in one chunk", () => {
      const decoder = createSseDecoder({ maxEventSize: 1024 });
      expect(() => decoder.push(enc.encode(`data: ${"y".repeat(5000)}\n\n`))).toThrow(/maximum event size/);
    });

    it("rejects many data lines that add up past the limit", () => {
      const decoder = createSseDecoder({ maxEventSize: 1024 });
      expect(() => {
        for (let i = 0; i < 100; i++) decoder.push(enc.encode(`data: ${"z".repeat(50)}\n`));
      }).toThrow(/maximum event size/);
    });

    it("keeps failing after the limit was hit", () => {
      const decoder = createSseDecoder({ maxEventSize: 1024 });
      expect(() => decoder.push(enc.encode(`data: ${"y".repeat(5000)}`))).toThrow();
      expect(() => decoder.push(enc.encode("\n\ndata: ok\n\n"))).toThrow(/maximum event size/);
    });

    it("counts bytes on the wire, not characters: a non-ASCII event over the limit is refused", () => {
      // 600 two-byte characters: 600 code units, 1,200 bytes. The old limit counted code units.
      const decoder = createSseDecoder({ maxEventSize: 1024 });
      expect(() => decoder.push(enc.encode(`data: ${"é".repeat(600)}\n\n`))).toThrow(/maximum event size of 1024 bytes/);
      expect(decodeAll([enc.encode(`data: ${"e".repeat(600)}\n\n`)], 1024)).toEqual([ev("e".repeat(600))]);
    });

    it("counts an event across every line end style and chunk split the same way", () => {
      for (const eol of ["\n", "\r\n", "\r"]) {
        const text = `data: ${"x".repeat(500)}${eol}data: ${"y".repeat(500)}${eol}${eol}`;
        const bytes = enc.encode(text);
        for (const cut of [1, 7, 506, 507, 508, bytes.length - 1]) {
          expect(decodeAll([bytes.subarray(0, cut), bytes.subarray(cut)], 1024), `${JSON.stringify(eol)} @${cut}`).toEqual([ev(`${"x".repeat(500)}\n${"y".repeat(500)}`)]);
          const strict = createSseDecoder({ maxEventSize: 1000 });
          expect(() => [strict.push(bytes.subarray(0, cut)), strict.push(bytes.subarray(cut))], `${JSON.stringify(eol)} @${cut}`).toThrow(/maximum event size/);
        }
      }
    });

    it("names the provider that sent the oversized event", () => {
      const decoder = createSseDecoder({ maxEventSize: 1024, source: "primary" });
      expect(() => decoder.push(enc.encode(`data: ${"y".repeat(5000)}\n\n`))).toThrow(/^provider primary sent an event larger than the maximum event size of 1024 bytes/);
    });

    it("accepts events up to the limit", () => {
      const data = "q".repeat(1000);
      expect(decodeAll([enc.encode(`data: ${data}\n\n`)], 1024)).toEqual([ev(data)]);
    });
  });
});
