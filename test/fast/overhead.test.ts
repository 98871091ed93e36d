import { describe, expect, it } from "vitest";
import { OVERHEAD_HEADER, overheadAtFirstWrite, overheadMs } from "../../src/call/overhead.js";

describe("overheadMs: the gateway's time to the first write, less the upstream's wait", () => {
  it("a streamed answer: the wait ends at the first delta", () => {
    expect(overheadMs(100, { sentAt: 102, answeredAt: 150 }, 151)).toBe(3);
  });

  it("a whole answer: the wait ends at the call's end, not its first delta", () => {
    expect(overheadMs(100, { sentAt: 102, answeredAt: 150, endedAt: 400 }, 401)).toBe(3);
  });

  it("an upstream failure before any delta: the wait ends when the call ended", () => {
    expect(overheadMs(100, { sentAt: 101, endedAt: 300 }, 302)).toBe(3);
  });

  it("headers committed before the upstream answered (a heartbeat): the wait runs to the write", () => {
    expect(overheadMs(100, { sentAt: 104 }, 500)).toBe(4);
  });

  it("no upstream (a refusal, a cache hit): all of it is the gateway's", () => {
    expect(overheadMs(100, {}, 107)).toBe(7);
  });
});

describe("overheadAtFirstWrite", () => {
  it("measures at the first read, reports once, and says the same after", () => {
    const reported: Array<[string, number]> = [];
    const window = {};
    const header = overheadAtFirstWrite(performance.now(), window, "openai-sse", (edge, ms) => reported.push([edge, ms]));
    const first = header()[OVERHEAD_HEADER];
    expect(first).toMatch(/^\d+\.\d{3}$/);
    expect(header()[OVERHEAD_HEADER]).toBe(first);
    expect(reported).toEqual([["openai-sse", expect.any(Number)]]);
  });

  it("says nothing for a call no client waits on (no arrival time)", () => {
    const reported: unknown[] = [];
    expect(overheadAtFirstWrite(undefined, {}, "batch", () => reported.push(1))()).toEqual({});
    expect(reported).toEqual([]);
  });
});
