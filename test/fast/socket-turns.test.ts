import { describe, expect, it } from "vitest";
import { createSocketTurns } from "../../src/edges/responses/socket-turns.js";

const item = (text: string) => ({ type: "message", role: "user", content: text });

describe("a WebSocket's memory of its responses (socket-turns.ts)", () => {
  it("gives back the conversation a response ended, for continuing it", () => {
    const turns = createSocketTurns(1_000);
    const one = [item("a"), item("answer a")];
    turns.keep("resp_1", one, 20);
    expect(turns.conversation("resp_1")).toBe(one);
    expect(turns.conversation("resp_unknown")).toBeUndefined();
  });

  it("forgets the oldest responses once their own bytes pass the limit, and keeps the newest", () => {
    const turns = createSocketTurns(100);
    turns.keep("resp_1", [item("1")], 40);
    turns.keep("resp_2", [item("1"), item("2")], 40);
    turns.keep("resp_3", [item("1"), item("2"), item("3")], 40);
    expect(turns.conversation("resp_1")).toBeUndefined();
    expect(turns.conversation("resp_2")).toBeDefined();
    expect(turns.conversation("resp_3")).toHaveLength(3);
    expect(turns.size).toBe(2);
  });

  it("does not keep a response whose own items alone pass the limit", () => {
    const turns = createSocketTurns(100);
    turns.keep("resp_1", [item("small")], 10);
    turns.keep("resp_big", [item("x".repeat(200))], 200);
    expect(turns.conversation("resp_big")).toBeUndefined();
    expect(turns.conversation("resp_1")).toBeDefined();
  });
});
