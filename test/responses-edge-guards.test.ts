import { request as http1Request } from "node:http";
import OpenAI, { type BadRequestError } from "openai";
import type { ResponseCreateParamsNonStreaming } from "openai/resources/responses/responses";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { rejection, responsesClient } from "./helpers/answer-via-responses.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { h2request } from "./helpers/raw.js";

const KiB = 1024;
const TEAM_A_KEY = "sk-test-team-a-1b3d5f7a9c2e4068";
const WRONG_KEY = "sk-test-nobody-0000000000000000";

/** The open gateway: small structure limits, and keepalives every 20 ms of silence. */
let h: Harness;
/** The same behind virtual keys: team-a may use `sim` only, 100 requests a minute. */
let authed: Harness;
beforeAll(async () => {
  h = await startHarness({
    // `first_token`: 50 keepalive intervals, so keepalives are out before it fires however loaded the machine.
    models: { sim: "sim-1", first_token: { model: "sim-1", timeouts: { ...FAR_TIMEOUTS, firstTokenMs: 1_000 } } },
    // Far timeouts: a held upstream ends only when the test releases it.
    provider: { timeouts: FAR_TIMEOUTS },
    facade: { keepaliveMs: 20 },
    limits: { maxRequestBytes: 64 * KiB, maxRequestElements: 1_000, maxJsonDepth: 16 },
    // Stateless, as configured with responses.store: false: the state fields are refused by name.
    responses: { store: false },
  });
  authed = await startHarness({
    models: { sim: "sim-1?tokens=3", other: "sim-1?tokens=2" },
    env: { TEAM_A_KEY },
    auth: { keys: [{ name: "team-a", keyEnv: "TEAM_A_KEY", models: ["sim"], limits: { requestsPerMinute: 100 } }] },
  });
});
afterAll(async () => {
  await h.close();
  await authed.close();
});

describe("what a stateless gateway refuses, naming the field, before anything goes upstream", () => {
  const CASES: Array<[string, Partial<ResponseCreateParamsNonStreaming>, string]> = [
    ["previous_response_id", { previous_response_id: "resp_123" }, "previous_response_id"],
    ["store: true", { store: true }, "store"],
    // Background runs are kept: with store: false there is nothing to keep them in.
    ["background: true with store: false", { background: true, store: false }, "background"],
    // Declared, a hosted tool is an offer (dropped where no target runs it); forced, it is refused by name.
    ["a forced hosted tool (web_search_preview) no target runs", { tools: [{ type: "web_search_preview" }], tool_choice: { type: "web_search_preview" } }, "tools.web_search_preview"],
  ];
  for (const [name, fields, param] of CASES) {
    it(`${name} → 400 with param ${param}, streaming or not`, async () => {
      const client = responsesClient(h.url);
      for (const stream of [false, true]) {
        const tag = `refused-${param}-${stream}`;
        const error = await rejection(client.responses.create({ model: "sim", input: `#sim tag=${tag}`, ...fields, stream }));
        expect(error, `stream: ${stream}`).toBeInstanceOf(OpenAI.BadRequestError);
        expect((error as BadRequestError).param).toBe(param);
        expect((error as BadRequestError).type).toBe("invalid_request_error");
        // Had it gone upstream, the simulator would have recorded it before the gateway could answer.
        expect(h.sim.records.all().filter((r) => r.tag === tag)).toEqual([]);
      }
    });
  }

  it("the same request without the refused fields is served (the refusals are about the fields)", async () => {
    const response = await responsesClient(h.url).responses.create({ model: "sim", input: "#sim tokens=3 seed=2", store: false, background: false });
    expect(response.output_text).toBe(simulatedText(2, 3));
  });
});

describe("virtual keys on /v1/responses", () => {
  const sdk = (apiKey: string) => responsesClient(authed.url, { apiKey });

  it("the SDK's apiKey as Bearer: streamed and whole answers, each with the key's quota headers", async () => {
    const { data: stream, response: streamed } = await sdk(TEAM_A_KEY).responses.create({ model: "sim", input: "#sim seed=4", stream: true }).withResponse();
    let text = "";
    for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta;
    expect(text).toBe(simulatedText(4, 3));
    expect(streamed.headers.get("x-ratelimit-limit-requests")).toBe("100");
    const streamedLeft = Number(streamed.headers.get("x-ratelimit-remaining-requests"));
    expect(streamed.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d/);

    const { data: whole, response: plain } = await sdk(TEAM_A_KEY).responses.create({ model: "sim", input: "#sim seed=4" }).withResponse();
    expect(whole.output_text).toBe(simulatedText(4, 3));
    expect(plain.headers.get("x-ratelimit-limit-requests")).toBe("100");
    expect(Number(plain.headers.get("x-ratelimit-remaining-requests"))).toBe(streamedLeft - 1);
  });

  it("a wrong key is an AuthenticationError; an alias outside the key's list a PermissionDeniedError; neither reaches upstream", async () => {
    const wrong = await rejection(sdk(WRONG_KEY).responses.create({ model: "sim", input: "#sim tag=auth-wrong" }));
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(wrong).toMatchObject({ status: 401, code: "invalid_api_key", type: "authentication_error" });
    const denied = await rejection(sdk(TEAM_A_KEY).responses.create({ model: "other", input: "#sim tag=auth-denied", stream: true }));
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied).toMatchObject({ status: 403, code: "permission_denied" });
    expect((denied as Error).message).toMatch(/key team-a may not use model "other"/);
    expect(authed.sim.records.all().filter((r) => r.tag === "auth-wrong" || r.tag === "auth-denied")).toEqual([]);
  });

  it("a wrong key is refused before the body is read: the 401 arrives while the body is still being sent", async () => {
    const { hostname, port } = new URL(authed.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http1Request({ host: hostname, port, path: "/v1/responses", method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${WRONG_KEY}`, "transfer-encoding": "chunked" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on("error", (e) => (req.destroyed ? undefined : reject(e)));
      // The body starts and never ends: a gateway that read it first would never answer.
      req.write('{"model":"sim","input":"');
    });
    expect(status).toBe(401);
  });
});

describe("hostile bodies over raw HTTP get a status and the process goes on", () => {
  async function post(body: string) {
    const res = await request(`${h.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body });
    return { status: res.statusCode, body: (await res.body.json()) as { error: { message: string; type: string; param: string | null; code: string | null } } };
  }

  it("a body over the byte limit → 413", async () => {
    const res = await post(JSON.stringify({ model: "sim", input: "x".repeat(100 * KiB) }));
    expect(res.status).toBe(413);
    expect(res.body.error.type).toBe("invalid_request_error");
  });

  it("nesting deeper than the limit → 400 naming where", async () => {
    const deep = `${"[".repeat(40)}${"]".repeat(40)}`;
    const res = await post(`{"model":"sim","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object","default":${deep}}}]}`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/nested deeper than 16 levels/);
    expect(res.body.error.param).toMatch(/^tools\[0\]\.parameters/);
  });

  it("more elements than the limit → 413 naming the limit", async () => {
    const res = await post(JSON.stringify({ model: "sim", input: Array.from({ length: 2_000 }, () => ({ role: "user", content: "x" })) }));
    expect(res.status).toBe(413);
    expect(res.body.error.message).toMatch(/limits\.maxRequestElements/);
  });

  it("invalid JSON → 400; a body that is not an object → 400 naming the body", async () => {
    const invalid = await post('{"model":"sim","input":');
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.message).toBe("request body is not valid JSON");
    expect(invalid.body.error.param).toBeNull();
    const list = await post("[1,2,3]");
    expect(list.status).toBe(400);
    expect(list.body.error.param).toBe("body");
  });

  it("after all of it the gateway is healthy and answers", async () => {
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    const response = await responsesClient(h.url).responses.create({ model: "sim", input: "#sim tokens=4 seed=6" });
    expect(response.output_text).toBe(simulatedText(6, 4));
  });
});

/** `: keepalive` comments in raw SSE text. */
const keepalives = (text: string) => (text.match(/^: keepalive\n\n/gm) ?? []).length;

describe("keepalives on a held stream", () => {
  for (const holdAt of [0, 1]) {
    it(`raw SSE: : keepalive comments while the upstream is silent after ${holdAt} tokens, and the events around them intact`, async () => {
      const tag = `keepalive-raw-${holdAt}`;
      const res = await request(`${h.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "sim", stream: true, input: `#sim tokens=4 hold_at=${holdAt} tag=${tag}` }),
      });
      expect(res.statusCode).toBe(200);
      let text = "";
      let beforeRelease = "";
      for await (const chunk of res.body) {
        text += (chunk as Buffer).toString();
        const seenTokens = (text.match(/^event: response\.output_text\.delta$/gm) ?? []).length;
        // Three keepalives after the tokens the upstream sent before holding, however long that takes.
        if (!beforeRelease && seenTokens === holdAt && keepalives(text.slice(text.lastIndexOf("\n\nevent: ") + 2)) >= 3) {
          beforeRelease = text;
          h.sim.records.release(tag);
        }
      }
      expect(keepalives(beforeRelease)).toBeGreaterThanOrEqual(3);
      const events = text
        .split("\n\n")
        .filter((block) => block.startsWith("event: "))
        .map((block) => JSON.parse(block.slice(block.indexOf("\ndata: ") + 7)) as { type: string; delta?: string });
      expect(events.map((e) => e.type).at(-1)).toBe("response.completed");
      expect(events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("")).toBe(simulatedText(1, 4));
      expect(events.map((e, i) => ({ ...e, i })).every((e) => (e as { sequence_number?: number }).sequence_number === e.i)).toBe(true);
    });
  }

  it("the SDK skips the comments and assembles the whole response", async () => {
    const tag = "keepalive-sdk";
    let raw = "";
    const decoder = new TextDecoder();
    // Sees the bytes the SDK reads, to release the upstream once three keepalives have passed through the SDK's own reader.
    const watching: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!res.body) return res;
      const body = res.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            controller.enqueue(chunk);
            raw += decoder.decode(chunk, { stream: true });
            const afterFirstDelta = raw.indexOf("event: response.output_text.delta");
            if (afterFirstDelta >= 0 && keepalives(raw.slice(afterFirstDelta)) >= 3) h.sim.records.release(tag);
          },
        }),
      );
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    };
    const final = await responsesClient(h.url, { fetch: watching })
      .responses.stream({ model: "sim", input: `#sim tokens=4 hold_at=1 tag=${tag}` })
      .finalResponse();
    expect(keepalives(raw.slice(raw.indexOf("event: response.output_text.delta")))).toBeGreaterThanOrEqual(3);
    expect(final.status).toBe("completed");
    expect(final.output_text).toBe(simulatedText(1, 4));
  });
});

describe("after the headers, before the first delta", () => {
  it("a failure once keepalives committed the stream is an error event (no response.created), and the SDK raises", async () => {
    const body = { model: "first_token", stream: true, input: "#sim ttft_ms=600000" };
    const res = await request(`${h.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.statusCode).toBe(200);
    const text = await res.body.text();
    expect(keepalives(text)).toBeGreaterThanOrEqual(1);
    const events = text.split("\n\n").filter((block) => block.startsWith("event: "));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^event: error\ndata: /);
    expect(JSON.parse(events[0]!.slice(events[0]!.indexOf("data: ") + 6))).toMatchObject({ type: "error", error: { code: "upstream_timeout", message: expect.stringMatching(/first-token timeout/) } });

    const error = await rejection(responsesClient(h.url).responses.stream({ model: "first_token", input: "#sim ttft_ms=600000" }).finalResponse());
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/first-token timeout/);
  });
});

describe("HTTP/2", () => {
  it("/v1/responses streams over h2 as over HTTP/1.1", async () => {
    const res = await h2request(h.url, { ":method": "POST", ":path": "/v1/responses", "content-type": "application/json" }, Buffer.from(JSON.stringify({ model: "sim", stream: true, input: "#sim tokens=4 seed=8" })));
    expect(res.headers[":status"]).toBe(200);
    const events = res.body
      .toString()
      .split("\n\n")
      .filter((block) => block.startsWith("event: "))
      .map((block) => JSON.parse(block.slice(block.indexOf("\ndata: ") + 7)) as { type: string; delta?: string });
    expect(events.at(-1)?.type).toBe("response.completed");
    expect(events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("")).toBe(simulatedText(8, 4));
  });
});
