import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createChunkReader } from "../src/upstream/chunk-reader.js";

const bytes = (text: string) => Buffer.from(text);

describe("chunk reader", () => {
  it("hands over at most 64 KiB at a time when a slow reader finds more waiting, every byte in order", async () => {
    const body = new Readable({ read() {} });
    const reader = createChunkReader(body);
    const sent = Buffer.alloc(200_000);
    for (let i = 0; i < sent.length; i++) sent[i] = i % 251;
    for (let at = 0; at < sent.length; at += 50_000) body.push(sent.subarray(at, at + 50_000));
    body.push(null);
    const got: Uint8Array[] = [];
    for (let chunk = await reader.read(); chunk !== null; chunk = await reader.read()) got.push(chunk);
    expect(Math.max(...got.map((c) => c.length))).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.concat(got).equals(sent)).toBe(true);
  });

  it("hands over chunks in order, waits for the next, and ends with null", async () => {
    const body = new Readable({ read() {} });
    const reader = createChunkReader(body);
    body.push(bytes("a"));
    expect(Buffer.from((await reader.read())!).toString()).toBe("a");
    const waiting = reader.read();
    body.push(bytes("b"));
    expect(Buffer.from((await waiting)!).toString()).toBe("b");
    const end = reader.read();
    body.push(null);
    expect(await end).toBeNull();
    expect(await reader.read()).toBeNull();
  });

  it("rejects a waiting read with the body's error", async () => {
    const body = new Readable({ read() {} });
    const reader = createChunkReader(body);
    const waiting = reader.read();
    body.destroy(new Error("socket reset"));
    await expect(waiting).rejects.toThrow("socket reset");
    await expect(reader.read()).rejects.toThrow("socket reset");
  });

  it("reports a body destroyed without an error or an end as a premature close", async () => {
    const body = new Readable({ read() {} });
    const reader = createChunkReader(body);
    const waiting = reader.read();
    body.destroy();
    await expect(waiting).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("pulls only as it is read: an unread body stops asking its source at the high-water mark", async () => {
    let pulls = 0;
    let sent = 0;
    const body = new Readable({
      highWaterMark: 4,
      read() {
        pulls++;
        if (sent < 100) this.push(bytes(String(sent++ % 10)));
        else this.push(null);
      },
    });
    const reader = createChunkReader(body);
    expect(await reader.read()).not.toBeNull();
    await new Promise((resolve) => setImmediate(resolve));
    const afterOne = pulls;
    // One read, then nothing: the stream refills to its high-water mark and stops.
    expect(afterOne).toBeLessThan(10);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pulls).toBe(afterOne);
    let chunks = 1;
    while ((await reader.read()) !== null) chunks++;
    expect(chunks).toBeGreaterThan(1);
    expect(sent).toBe(100);
  });
});
