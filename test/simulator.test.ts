import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());

async function post(path: string, body: unknown) {
  const res = await request(`${sim.origin}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe("simulator", () => {
  it("answers without streaming in all three formats, with the same text", async () => {
    const openai = await post("/v1/chat/completions", { model: "sim-1?tokens=4&seed=9", messages: [{ role: "user", content: "hi" }] });
    const anthropic = await post("/v1/messages", { model: "sim-1?tokens=4&seed=9", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    const gemini = await post(`/v1beta/models/${encodeURIComponent("sim-1?tokens=4&seed=9")}:generateContent`, { contents: [{ role: "user", parts: [{ text: "hi" }] }] });
    const expected = simulatedText(9, 4);
    expect((openai.body.choices as Array<{ message: { content: string } }>)[0]!.message.content).toBe(expected);
    expect((anthropic.body.content as Array<{ text: string }>)[0]!.text).toBe(expected);
    expect((gemini.body.candidates as Array<{ content: { parts: Array<{ text: string }> } }>)[0]!.content.parts.map((p) => p.text).join("")).toBe(expected);
  });

  it("rejects an unknown knob with 400 in the format's error shape", async () => {
    const res = await post("/v1/chat/completions", { model: "sim-1?bogus=1", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(400);
    expect((res.body.error as { message: string }).message).toContain("unknown simulator knob bogus");
  });

  it("/_sim/idle answers at once when nothing runs, and /_sim/wait returns the ended record", async () => {
    const idle = await request(`${sim.origin}/_sim/idle?timeout_ms=10000`);
    expect(idle.statusCode).toBe(200);
    expect(((await idle.body.json()) as { activeRequests: number }).activeRequests).toBe(0);
    const stream = request(`${sim.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1?tokens=3&tag=waited", stream: true, messages: [{ role: "user", content: "x" }] }),
    });
    const waited = await request(`${sim.origin}/_sim/wait?tag=waited&timeout_ms=5000`);
    await (await stream).body.text();
    const record = (await waited.body.json()) as { tag: string; outcome: string; tokensWritten: number };
    expect(record).toMatchObject({ tag: "waited", outcome: "completed", tokensWritten: 3 });
  });

  it("/_sim/idle times out with 408 while a request is stalled", async () => {
    const abort = new AbortController();
    const stalled = request(`${sim.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1?fail=stall&tag=stalled", stream: true, messages: [{ role: "user", content: "x" }] }),
      signal: abort.signal,
    });
    await sim.records.waitFor((r) => r.tag === "stalled", 30_000);
    const idle = await request(`${sim.origin}/_sim/idle?timeout_ms=100`);
    expect(idle.statusCode).toBe(408);
    await idle.body.dump();
    abort.abort();
    await stalled.then((r) => r.body.dump()).catch(() => undefined);
    await sim.records.waitFor((r) => r.tag === "stalled" && r.endedAt !== undefined, 30_000);
  });

  it("hold_at holds a stream silent after N tokens until its tag is released", async () => {
    const res = await request(`${sim.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1?tokens=5&seed=9&hold_at=2&tag=held", stream: true, messages: [{ role: "user", content: "x" }] }),
    });
    const held = await sim.records.waitFor((r) => r.tag === "held" && r.heldAt !== undefined, 30_000);
    expect(held).toMatchObject({ tokensWritten: 2, outcome: "streaming" });
    expect(held.endedAt).toBeUndefined();
    const release = await request(`${sim.origin}/_sim/release?tag=held`, { method: "POST" });
    expect(release.statusCode).toBe(200);
    await release.body.dump();
    const text = await res.body.text();
    const content = text
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
      .join("");
    expect(content).toBe(simulatedText(9, 5));
    expect(sim.records.all().find((r) => r.tag === "held")).toMatchObject({ outcome: "completed", tokensWritten: 5 });
  });

  it("a release that comes before the hold is kept: the stream does not hold at all", async () => {
    sim.records.release("released-early");
    const res = await request(`${sim.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1?tokens=3&hold_at=0&tag=released-early", stream: true, messages: [{ role: "user", content: "x" }] }),
    });
    await res.body.text();
    const record = sim.records.all().find((r) => r.tag === "released-early")!;
    expect(record.heldAt).toBeDefined();
    expect(record).toMatchObject({ outcome: "completed", tokensWritten: 3 });
  });
});
