import { once } from "node:events";
import { connect as h2connect } from "node:http2";
import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedToolCalls } from "../src/simulator/script.js";
import { simulatedText } from "../src/simulator/text.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
let openai: OpenAI;
beforeAll(async () => {
  h = await startHarness({
    models: { sim: "sim-1?seed=11", tools: "sim-1?seed=4&tokens=3&tools=2" },
    // Far timeouts: a stalled or held upstream ends only by the cause under test.
    provider: { timeouts: FAR_TIMEOUTS },
    facade: { keepaliveMs: 50, maxBodyBytes: 64 * 1024 },
  });
  openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
});
afterAll(() => h.close());

const user = (content: string) => [{ role: "user" as const, content }];

/** The text content of every complete `data: {…}` event in raw SSE text. */
function contentOf(sse: string): string {
  return sse
    .split("\n\n")
    .slice(0, -1)
    .filter((e) => e.startsWith("data: {"))
    .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
    .join("");
}

describe("the official openai SDK against the facade", () => {
  it("streams the simulator's text with for await", async () => {
    const stream = await openai.chat.completions.create({ model: "sim", messages: user("hi"), stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(simulatedText(11, 20));
    expect(finish).toBe("stop");
  });

  it("returns the whole answer without streaming", async () => {
    const completion = await openai.chat.completions.create({ model: "sim", messages: user("hi") });
    expect(completion.choices[0]!.message.content).toBe(simulatedText(11, 20));
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    expect(completion.usage?.completion_tokens).toBe(20);
  });

  it("reports usage in a final chunk when include_usage is set", async () => {
    const stream = await openai.chat.completions.create({
      model: "sim",
      messages: user("one two three"),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 20, total_tokens: 23 });
  });

  it("reassembles streamed tool calls into the right names and JSON arguments", async () => {
    const runner = openai.chat.completions.stream({
      model: "tools",
      messages: user("weather?"),
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
    });
    const completion = await runner.finalChatCompletion();
    const calls = completion.choices[0]!.message.tool_calls!.map((c) => (c.type === "function" ? { id: c.id, name: c.function.name, arguments: c.function.arguments } : c));
    expect(calls).toEqual(simulatedToolCalls(4, 2, ["get_weather"]));
    expect(calls.map((c) => JSON.parse((c as { arguments: string }).arguments))).toHaveLength(2);
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
  });

  it("abort() mid-stream closes the simulator's connection", async () => {
    // The upstream stalls after 5 tokens and never ends on its own: the
    // simulator seeing its connection close can only be the client's abort.
    const stream = await openai.chat.completions.create({ model: "sim", messages: user("#sim tokens=2000 fail=stall fail_at=5 tag=sdk-abort"), stream: true });
    let received = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content && ++received === 5) stream.controller.abort();
    }
    const record = await h.sim.records.waitFor((r) => r.tag === "sdk-abort" && r.endedAt !== undefined, 30_000);
    expect(received).toBe(5);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBe(5);
    expect(h.logs().find((l) => l.event === "stream.end" && l.requestId === record.requestId)).toMatchObject({ outcome: "canceled" });
  });

  it("surfaces an upstream 429 as RateLimitError with the retry-after header", async () => {
    const error = await openai.chat.completions.create({ model: "sim", messages: user("#sim fail=status status=429 retry_after=9"), stream: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("9");
  });

  it("throws on a mid-stream upstream failure instead of returning a truncated answer", async () => {
    for (const fail of ["drop", "error_event", "malformed"]) {
      const stream = await openai.chat.completions.create({ model: "sim", messages: user(`#sim fail=${fail} fail_at=3`), stream: true });
      let text = "";
      const error = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, fail).toBeInstanceOf(OpenAI.APIError);
      expect(text, fail).toBe(simulatedText(11, 3));
    }
  });

  it("lists the configured aliases", async () => {
    const models = [];
    for await (const model of openai.models.list()) models.push(model.id);
    expect(models).toEqual(["sim", "tools"]);
    expect((await openai.models.retrieve("tools")).owned_by).toBe("simulator");
  });
});

describe("SSE on the wire", () => {
  it("sends events one by one: the first arrive before the upstream has finished", async () => {
    // The upstream holds after 3 tokens until the client has seen all three:
    // a facade that buffered events (or the whole answer) would never show them.
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", stream: true, messages: user("#sim tokens=10 hold_at=3 tag=raw-timing") }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(res.headers["cache-control"]).toBe("no-cache");
    expect(res.headers["x-accel-buffering"]).toBe("no");
    let text = "";
    let unfinishedWhenSeen: boolean | undefined;
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      if (unfinishedWhenSeen === undefined && contentOf(text) === simulatedText(11, 3)) {
        const record = h.sim.records.all().find((r) => r.tag === "raw-timing")!;
        unfinishedWhenSeen = record.endedAt === undefined && record.tokensWritten === 3;
        h.sim.records.release("raw-timing");
      }
    }
    expect(unfinishedWhenSeen).toBe(true);
    expect(contentOf(text)).toBe(simulatedText(11, 10));
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("sends : keepalive comments during silence, also before the first token", async () => {
    // The upstream holds before its first token until three keepalives have arrived, however long that takes.
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", stream: true, messages: user("#sim tokens=2 hold_at=0 tag=keepalive") }),
    });
    let text = "";
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      if ((text.match(/: keepalive\n\n/g) ?? []).length >= 3) h.sim.records.release("keepalive");
    }
    const beforeFirst = text.slice(0, text.indexOf("data: "));
    expect(beforeFirst.match(/: keepalive\n\n/g)!.length).toBeGreaterThanOrEqual(3);
    expect(beforeFirst.replaceAll(": keepalive\n\n", "")).toBe("");
    expect(contentOf(text)).toBe(simulatedText(11, 2));
  });

  it("works over HTTP/2", async () => {
    const session = h2connect(h.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v1/chat/completions", "content-type": "application/json" });
      stream.end(JSON.stringify({ model: "sim", stream: true, messages: user("#sim tokens=4") }));
      const [headers] = (await once(stream, "response")) as [Record<string, string>];
      expect(headers[":status"]).toBe(200);
      let text = "";
      for await (const chunk of stream) text += (chunk as Buffer).toString();
      const content = text
        .split("\n\n")
        .filter((e) => e.startsWith("data: {"))
        .map((e) => (JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
        .join("");
      expect(content).toBe(simulatedText(11, 4));
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    } finally {
      session.close();
    }
  });

  it("a raw HTTP/1.1 client that disconnects aborts upstream", async () => {
    // The upstream stalls after 3 tokens and never ends on its own: only the disconnect can close it.
    const abort = new AbortController();
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", stream: true, messages: user("#sim tokens=2000 fail=stall fail_at=3 tag=raw-abort") }),
      signal: abort.signal,
    });
    try {
      for await (const _ of res.body) abort.abort();
    } catch {
      // our abort
    }
    const record = await h.sim.records.waitFor((r) => r.tag === "raw-abort" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(h.logs().find((l) => l.event === "stream.end" && l.requestId === record.requestId)).toMatchObject({ outcome: "canceled" });
  });
});

describe("bad input gets OpenAI's error JSON", () => {
  async function post(body: string | object, headers: Record<string, string> = {}) {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as { error: { message: string; type: string; param: string | null; code: string | null } } };
  }

  const cases: Array<[string, string | object, number, string | null]> = [
    ["invalid JSON", "{nope", 400, null],
    ["missing messages", { model: "sim" }, 400, "messages"],
    ["empty messages", { model: "sim", messages: [] }, 400, "messages"],
    ["wrong type", { model: "sim", messages: user("x"), temperature: "hot" }, 400, "temperature"],
    ["wrong content type", { model: "sim", messages: [{ role: "user", content: 5 }] }, 400, "messages[0].content"],
    ["unknown role", { model: "sim", messages: [{ role: "wizard", content: "x" }] }, 400, "messages[0].role"],
    ["temperature out of range", { model: "sim", messages: user("x"), temperature: 3 }, 400, "temperature"],
    ["n > 1", { model: "sim", messages: user("x"), n: 2 }, 400, "n"],
    ["unknown model", { model: "gpt-nope", messages: user("x") }, 404, "model"],
  ];
  for (const [name, body, status, param] of cases) {
    it(`${name} → ${status}`, async () => {
      const res = await post(body);
      expect(res.status).toBe(status);
      expect(res.body.error.param).toBe(param);
      expect(typeof res.body.error.message).toBe("string");
      expect(res.body.error.type).toBe("invalid_request_error");
    });
  }

  it("unknown model names the model, with code model_not_found", async () => {
    const res = await post({ model: "gpt-nope", messages: user("x") });
    expect(res.body.error.message).toContain('"gpt-nope"');
    expect(res.body.error.code).toBe("model_not_found");
  });

  it("a body over the limit → 413", async () => {
    const res = await post({ model: "sim", messages: user("x".repeat(100 * 1024)) });
    expect(res.status).toBe(413);
  });

  it("an unknown field inside a message is ignored, as OpenAI does (top-level ones: openai-request-fields.test.ts)", async () => {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "#sim tokens=2", extra: 1 }], logprobs: false }),
    });
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(simulatedText(11, 2));
  });

  it("an unknown /v1 route → 404 JSON", async () => {
    const res = await request(`${h.url}/v1/assistants`, { method: "POST", body: "{}" });
    expect(res.statusCode).toBe(404);
    expect(((await res.body.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
  });
});
