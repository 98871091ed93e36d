import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createInProcessSimulator, type InProcessSimulator } from "../../src/simulator/in-process.js";
import { simulatedText } from "../../src/simulator/text.js";
import { createChunkReader } from "../../src/upstream/chunk-reader.js";
import { settled } from "../helpers/fake-clock.js";
import { untilError } from "../helpers/until-error.js";

/** The simulator behind an undici Dispatcher: the socket server's scripts, with a socket's backpressure and departures, in memory. */

let sim: InProcessSimulator;
beforeEach(() => {
  sim = createInProcessSimulator();
});
afterEach(() => sim.close());

function post(model: string, init: { signal?: AbortSignal; path?: string; body?: unknown } = {}) {
  return request(`${sim.origin}${init.path ?? "/v1/chat/completions"}`, {
    method: "POST",
    dispatcher: sim.dispatcher,
    headers: { "content-type": "application/json", "x-request-id": "req-in-process" },
    body: JSON.stringify(init.body ?? { model, stream: true, messages: [{ role: "user", content: "hi" }] }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}

/** The text of OpenAI chunk events. */
function contentOf(sse: string): string {
  return sse
    .split("\n\n")
    .filter((e) => e.startsWith("data: {"))
    .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
    .join("");
}

/** The text an event stream's JSON events carry, as `pick` finds it in each. */
function textOfEvents(sse: string, pick: (event: unknown) => string | undefined): string {
  return sse
    .split("\n\n")
    .map((e) => e.split("\n").find((line) => line.startsWith("data: {")))
    .filter((line): line is string => line !== undefined)
    .map((line) => pick(JSON.parse(line.slice(6))) ?? "")
    .join("");
}

/** Reads a body chunk by chunk as the attempt does, until its end or its error. */
async function read(body: Parameters<typeof createChunkReader>[0]) {
  const reader = createChunkReader(body);
  async function* chunks() {
    for (let chunk = await reader.read(); chunk !== null; chunk = await reader.read()) yield Buffer.from(chunk).toString("utf8");
  }
  const { received, error } = await untilError(chunks(), (e) => e as NodeJS.ErrnoException);
  return { text: received.join(""), error };
}

describe("the in-process simulator", () => {
  it("streams a script as the socket server does, and records the request", async () => {
    const res = await post("sim-1?tokens=5&seed=9&chunking=random");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(contentOf(await res.body.text())).toBe(simulatedText(9, 5));
    expect(sim.records.all()).toMatchObject([{ outcome: "completed", tokensWritten: 5, requestId: "req-in-process", format: "openai" }]);
    expect(sim.stats()).toEqual({ openConnections: 0, activeRequests: 0, totalRequests: 1 });
  });

  it("a reader that stops reading stops the simulator at its next write: what it wrote stays within the reader's buffer", async () => {
    const res = await post("sim-1?tokens=100&token_chars=10000&tag=paused");
    const waiting = await sim.records.waitFor((r) => r.tag === "paused" && r.waitingForDrain === true, 30_000);
    const written = waiting.bytesWritten;
    await settled();
    // Held at undici's 64 KiB high-water mark, of a 1 MB answer, however long nobody reads.
    expect(waiting.bytesWritten).toBe(written);
    expect(written).toBeLessThan(2 * 64 * 1024);
    const text = await res.body.text();
    expect(contentOf(text).replaceAll("·", "")).toBe(simulatedText(1, 100));
    expect(sim.records.all()[0]).toMatchObject({ outcome: "completed", tokensWritten: 100 });
  });

  it("destroying the body is the client leaving: the simulator sees the close and writes nothing more", async () => {
    const res = await post("sim-1?tokens=100&token_chars=10000&tag=left");
    await sim.records.waitFor((r) => r.tag === "left" && r.waitingForDrain === true, 30_000);
    res.body.destroy();
    const ended = await sim.records.waitFor((r) => r.tag === "left" && r.endedAt !== undefined, 30_000);
    expect(ended.outcome).toBe("client_closed");
    expect(ended.tokensAfterClose).toBe(0);
    await sim.whenNoConnections(10_000);
    expect(sim.stats().activeRequests).toBe(0);
  });

  it("aborting the request while the simulator stalls closes the exchange, as a socket close would", async () => {
    const abort = new AbortController();
    const res = await post("sim-1?fail=stall&fail_at=2&tag=stalled", { signal: abort.signal });
    await sim.records.waitFor((r) => r.tag === "stalled" && r.outcome === "stalled", 30_000);
    abort.abort(new Error("gone"));
    await expect(res.body.text()).rejects.toThrow("gone");
    const ended = await sim.records.waitFor((r) => r.tag === "stalled" && r.endedAt !== undefined, 30_000);
    expect(ended).toMatchObject({ outcome: "client_closed", tokensWritten: 2 });
  });

  it("a reset before headers rejects the request with ECONNRESET", async () => {
    await expect(post("sim-1?fail=reset_before_headers")).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(sim.records.all()[0]?.outcome).toBe("failed");
  });

  it("a drop mid-stream delivers every byte sent before it, then undici's SocketError", async () => {
    const res = await post("sim-1?fail=drop&fail_at=3&seed=9");
    const { text, error } = await read(res.body);
    expect(contentOf(text)).toBe(simulatedText(9, 3));
    expect(error?.code).toBe("UND_ERR_SOCKET");
  });

  it("a status failure is a whole JSON response with its Retry-After", async () => {
    const res = await post("sim-1?fail=status&status=429&retry_after=7");
    expect(res.statusCode).toBe(429);
    expect(res.headers["retry-after"]).toBe("7");
    expect(await res.body.json()).toMatchObject({ error: { message: "simulated status 429" } });
  });

  it("speaks every format of the socket server: the same script in Anthropic's and Gemini's events", async () => {
    const model = "sim-1?tokens=4&seed=3";
    const anthropic = await post(model, { path: "/v1/messages", body: { model, max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] } });
    expect(anthropic.statusCode).toBe(200);
    const events = await anthropic.body.text();
    expect(events).toContain("event: content_block_delta");
    expect(textOfEvents(events, (e) => (e as { delta?: { text?: string } }).delta?.text)).toBe(simulatedText(3, 4));
    const gemini = await post(model, { path: `/v1beta/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`, body: { contents: [{ role: "user", parts: [{ text: "hi" }] }] } });
    expect(gemini.statusCode).toBe(200);
    const chunks = await gemini.body.text();
    expect(textOfEvents(chunks, (e) => (e as { candidates?: Array<{ content: { parts: Array<{ text?: string }> } }> }).candidates?.[0]?.content.parts.map((p) => p.text ?? "").join(""))).toBe(simulatedText(3, 4));
    const unknown = await post("sim-1", { path: "/v1/nothing" });
    expect(unknown.statusCode).toBe(404);
    await unknown.body.dump();
  });
});
