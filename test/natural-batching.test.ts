import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Delta } from "../src/core/delta.js";
import { joinBuffered, MAX_JOINED_CHARS } from "../src/core/join-deltas.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/** A source whose first `ready` items are already decoded, as the pipeline reports them. */
function source(items: Delta[], ready: number) {
  let at = 0;
  const pulls: number[] = [];
  return {
    first: items[at++]!,
    next: async (): Promise<IteratorResult<Delta, void>> => {
      pulls.push(at);
      return at < items.length ? { done: false, value: items[at++]! } : { done: true, value: undefined };
    },
    buffered: () => Math.max(0, ready - at),
    pulls,
  };
}

const text = (t: string): Delta => ({ type: "text", text: t });

describe("joinBuffered", () => {
  it("joins already-decoded text deltas in order and stops at the first other kind", async () => {
    const s = source([text("a"), text("b"), text("c"), { type: "finish", reason: "stop" }, text("z")], 5);
    const joined = await joinBuffered(s.first, s.next, s.buffered);
    expect(joined.item).toEqual(text("abc"));
    expect(joined.after).toEqual({ done: false, value: { type: "finish", reason: "stop" } });
  });

  it("never pulls a delta that is not decoded yet: the joined text leaves without waiting", async () => {
    const s = source([text("a"), text("b"), text("c"), text("d")], 2);
    const joined = await joinBuffered(s.first, s.next, s.buffered);
    expect(joined).toEqual({ item: text("ab") });
    expect(s.pulls).toEqual([1]);
  });

  it("stops joining at MAX_JOINED_CHARS and leaves the rest for the next message", async () => {
    const piece = "x".repeat(MAX_JOINED_CHARS / 4);
    const s = source(
      Array.from({ length: 8 }, () => text(piece)),
      8,
    );
    const joined = await joinBuffered(s.first, s.next, s.buffered);
    expect(joined.item).toEqual(text(piece.repeat(4)));
    expect(joined.after).toBeUndefined();
    expect(s.pulls).toHaveLength(3);
  });

  it("passes a lone delta through untouched and pulls nothing", async () => {
    const s = source([text("a"), text("b")], 1);
    const first = s.first;
    expect((await joinBuffered(first, s.next, s.buffered)).item).toBe(first);
    expect(s.pulls).toEqual([]);
  });

  it("keeps reasoning apart from text, and signed or redacted reasoning as sent", async () => {
    const items: Delta[] = [{ type: "reasoning", text: "r1" }, { type: "reasoning", text: "r2" }, { type: "reasoning", text: "", signature: "sig" }, { type: "reasoning", text: "", redactedData: "xx" }, text("t")];
    const s = source(items, items.length);
    const one = await joinBuffered(s.first, s.next, s.buffered);
    expect(one.item).toEqual({ type: "reasoning", text: "r1r2" });
    expect(one.after?.value).toEqual(items[2]);
    const two = await joinBuffered(one.after!.value!, s.next, s.buffered);
    expect(two.item).toBe(items[2]);
    expect(two.after).toBeUndefined();
  });
});

describe("natural batching on the gRPC edge", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1" } });
  });
  afterAll(() => h.close());

  for (const kind of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
    it(`${kind}: an answer written in one burst arrives in fewer messages, same text, gap-free sequence`, async () => {
      const client = chatClient(transports(h.url)[kind]!);
      const messages = await collect(client.streamChat(userRequest("sim", "#sim tokens=200 chunking=bulk")));
      const texts = messages.filter((m) => m.delta.case === "text");
      expect(textOf(messages)).toBe(simulatedText(1, 200));
      expect(texts.length).toBeLessThan(200);
      expect(messages.map((m) => m.sequence)).toEqual(messages.map((_, i) => BigInt(i)));
      expect(messages[0]!.delta.case).toBe("start");
      expect(messages.at(-1)!.delta.case).toBe("finish");
    });
  }
});
