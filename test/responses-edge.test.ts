import OpenAI, { type APIError } from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { simulatedToolCalls } from "../src/simulator/script.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerOfResponse, answerViaResponses, answerViaResponsesEvents, answerViaResponsesStream, joinEvents, rejection, responsesClient, WEATHER_TOOL } from "./helpers/answer-via-responses.js";
import { answerViaGrpc } from "./helpers/answers.js";
import { baseUrlFor, FAR_TIMEOUTS, type Harness, PROVIDER_KINDS, type ProviderKind, startHarness } from "./helpers/harness.js";
import { type LengthProxy, startLengthProxy } from "./helpers/length-proxy.js";

/**
 * One gateway per upstream wire, each in front of its own simulator:
 * `sim` straight to it, `clipped` through a proxy that makes every answer
 * stop at the output limit.
 */
const harnesses = new Map<ProviderKind, Harness>();
const proxies: LengthProxy[] = [];
beforeAll(async () => {
  for (const kind of PROVIDER_KINDS) {
    let simOrigin = "";
    const proxy = await startLengthProxy(() => simOrigin);
    proxies.push(proxy);
    const h = await startHarness({
      routing: (sim) => {
        simOrigin = sim.origin;
        const base = baseUrlFor(sim, kind);
        // Far timeouts: a stalled or held upstream ends only by the cause under test.
        const provider = { kind, breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS };
        return {
          providers: { simulator: { ...provider, baseUrl: base }, clipped: { ...provider, baseUrl: `${proxy.origin}${new URL(base).pathname}` } },
          models: { sim: { provider: "simulator", model: "sim-1" }, clipped: { provider: "clipped", model: "sim-1" } },
        };
      },
    });
    harnesses.set(kind, h);
  }
});
const responsesHarness = (kind: ProviderKind): Harness => harnesses.get(kind)!;
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
  for (const p of proxies) await p.close();
});

const SCRIPTS: Array<[string, string]> = [
  ["plain text", "#sim tokens=15 seed=3"],
  ["reasoning then text", "#sim reasoning=6 tokens=5 seed=8"],
  ["text then parallel tool calls", "#sim tokens=4 tools=3 seed=5"],
  ["reasoning, then tool calls only", "#sim reasoning=3 tokens=0 tools=1 seed=6"],
  ["chunked at random byte offsets, CRLF", "#sim tokens=12 seed=9 chunking=random eol=crlf"],
  ["the whole answer in one upstream write", "#sim reasoning=6 tokens=40 tools=2 seed=4 chunking=bulk"],
  ["no usage from the provider: the gateway's count", "#sim tokens=7 seed=10 usage=never"],
];

describe.each(PROVIDER_KINDS)("via %s: /v1/responses says what the gRPC edge says", (kind) => {
  for (const [name, prompt] of SCRIPTS) {
    it(`${name}: streamed events, the stream helper and the JSON answer all equal the gRPC deltas`, async () => {
      const h = harnesses.get(kind)!;
      const client = responsesClient(h.url);
      const viaGrpc = await answerViaGrpc(h.url, "sim", prompt);
      expect(viaGrpc.usage).toBeDefined();

      const streamed = await answerViaResponsesEvents(client, "sim", prompt);
      expect(streamed.fromDeltas).toEqual(viaGrpc);
      expect(answerOfResponse(streamed.terminal!)).toEqual(viaGrpc);
      expect(streamed.types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
      expect(streamed.types.at(-1)).toBe("response.completed");

      expect(await answerViaResponsesStream(client, "sim", prompt)).toEqual(viaGrpc);

      const whole = await answerViaResponses(client, "sim", prompt);
      expect(whole.answer).toEqual(viaGrpc);
      expect(whole.outputText).toBe(viaGrpc.text);
    });
  }

  it("compares real content (not two empty answers)", async () => {
    const h = harnesses.get(kind)!;
    const { outputText } = await answerViaResponses(responsesClient(h.url), "sim", "#sim tokens=15 seed=3");
    expect(outputText).toBe(simulatedText(3, 15));
    const answer = await answerViaResponsesStream(responsesClient(h.url), "sim", "#sim reasoning=3 tokens=0 tools=2 seed=5");
    expect(answer.reasoning).toBe(simulatedText(5 + 7919, 3));
    expect(answer.toolCalls.map((c) => ({ ...c, arguments: JSON.stringify(c.arguments) }))).toEqual(simulatedToolCalls(5, 2, [{ name: "get_weather", kind: "function", schema: WEATHER_TOOL.parameters! }]));
  });
});

/**
 * Output items one at a time, as OpenAI streams them: every event of item k
 * comes between its `output_item.added` and its `output_item.done`, and
 * item k+1 is added only after item k is done. The answer of the default
 * configuration's demo-tools alias (`sim-1?tokens=8&tools=2`): text, then
 * two calls streamed in fragments.
 */
describe.each(PROVIDER_KINDS)("via %s: parallel function calls stream as one output item after another", (kind) => {
  it("no item is added before the one before it is done", async () => {
    const client = responsesClient(responsesHarness(kind).url);
    const trail: Array<[string, number]> = [];
    for await (const event of await client.responses.create({ model: "sim", input: "#sim tokens=8 tools=2 seed=11", tools: [WEATHER_TOOL], stream: true })) {
      if ("output_index" in event) trail.push([event.type, event.output_index]);
    }
    const calls = trail.filter(([type]) => type === "response.function_call_arguments.delta");
    expect(new Set(calls.map(([, index]) => index)).size).toBe(2);
    let open: number | undefined;
    let next = 0;
    for (const [type, index] of trail) {
      if (type === "response.output_item.added") {
        expect(open, `item ${index} added while item ${String(open)} is open`).toBeUndefined();
        expect(index).toBe(next++);
        open = index;
      } else {
        expect(index, `${type} outside its item`).toBe(open);
        if (type === "response.output_item.done") open = undefined;
      }
    }
    expect(open).toBeUndefined();
  });
});

const Forecast = z.object({
  city: z.string(),
  days: z.number().int(),
  hourly: z.array(z.object({ hour: z.number().int(), rain: z.boolean() })),
  unit: z.enum(["c", "f"]),
});

/** Where each provider must have received the schema. */
function schemaSent(kind: ProviderKind, body: Record<string, unknown>): unknown {
  if (kind === "openai") return (body.response_format as { json_schema: { schema: unknown } }).json_schema.schema;
  if (kind === "anthropic") return (body.output_config as { format: { schema: unknown } }).format.schema;
  return (body.generationConfig as { responseJsonSchema: unknown }).responseJsonSchema;
}

describe.each(PROVIDER_KINDS)("via %s: structured output with text.format", (kind) => {
  it("responses.parse() with zodTextFormat gets output_parsed, the schema having reached the provider", async () => {
    const h = harnesses.get(kind)!;
    const format = zodTextFormat(Forecast, "forecast");
    const response = await responsesClient(h.url).responses.parse({ model: "sim", input: `#sim tag=responses-parse-${kind}`, text: { format } });
    expect(response.output_parsed).not.toBeNull();
    expect(Forecast.parse(response.output_parsed)).toEqual(response.output_parsed);
    expect(JSON.parse(response.output_text)).toEqual(response.output_parsed);
    const record = await h.sim.records.waitFor((r) => r.tag === `responses-parse-${kind}`, 30_000);
    expect(schemaSent(kind, record.body as Record<string, unknown>)).toEqual(format.schema);
  });

  it("responses.stream() with the same format parses the streamed JSON", async () => {
    const h = harnesses.get(kind)!;
    const final = await responsesClient(h.url)
      .responses.stream({ model: "sim", input: "#sim seed=77", text: { format: zodTextFormat(Forecast, "forecast") } })
      .finalResponse();
    expect(final.output_parsed).not.toBeNull();
    expect(Forecast.safeParse(final.output_parsed).success).toBe(true);
  });
});

describe.each(PROVIDER_KINDS)("via %s: a client that stops reading closes the upstream", (kind) => {
  /**
   * The upstream writes `fail_at` tokens and then stalls forever: with the
   * gateway's timeouts far away, the simulator seeing its connection close
   * can only be the client's abort travelling up.
   */
  async function closedUpstream(h: Harness, tag: string) {
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBe(5);
    const end = await h.waitForLog((l) => l.event === "stream.end" && l.requestId === record.requestId);
    expect(end.outcome).toBe("canceled");
  }

  it("stream.controller.abort() while iterating responses.create({stream: true})", async () => {
    const h = harnesses.get(kind)!;
    const tag = `responses-abort-create-${kind}`;
    const stream = await responsesClient(h.url).responses.create({ model: "sim", input: `#sim tokens=2000 fail=stall fail_at=5 tag=${tag}`, stream: true });
    let text = "";
    for await (const event of stream) {
      if (event.type !== "response.output_text.delta") continue;
      text += event.delta;
      if (text === simulatedText(1, 5)) stream.controller.abort();
    }
    expect(text).toBe(simulatedText(1, 5));
    await closedUpstream(h, tag);
  });

  it("abort() on the responses.stream() helper", async () => {
    const h = harnesses.get(kind)!;
    const tag = `responses-abort-helper-${kind}`;
    const stream = responsesClient(h.url).responses.stream({ model: "sim", input: `#sim tokens=2000 fail=stall fail_at=5 tag=${tag}` });
    stream.on("response.output_text.delta", (event) => {
      if (event.snapshot === simulatedText(1, 5)) stream.abort();
    });
    await expect(stream.finalResponse()).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await closedUpstream(h, tag);
  });

  it("an AbortController signal on a non-streaming responses.create()", async () => {
    const h = harnesses.get(kind)!;
    const tag = `responses-abort-whole-${kind}`;
    const abort = new AbortController();
    const pending = responsesClient(h.url).responses.create({ model: "sim", input: `#sim tokens=2000 fail=stall fail_at=5 tag=${tag}` }, { signal: abort.signal });
    // The gateway gathers the answer for a JSON reply: abort once the upstream has written its 5 tokens and stalled.
    await h.sim.records.waitFor((r) => r.tag === tag && r.tokensWritten === 5, 30_000);
    abort.abort();
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await closedUpstream(h, tag);
  });
});

describe.each(PROVIDER_KINDS)("via %s: failures the SDK must see", (kind) => {
  const FAILED_BEFORE_FIRST_DELTA: Array<[string, string, number, new (...args: never[]) => APIError]> = [
    ["a 429", "#sim fail=status status=429 retry_after=9", 429, OpenAI.RateLimitError],
    ["a 400", "#sim fail=status status=400", 400, OpenAI.BadRequestError],
    ["a 503", "#sim fail=status status=503", 502, OpenAI.InternalServerError],
    ["a reset before the headers", "#sim fail=reset_before_headers", 502, OpenAI.InternalServerError],
  ];
  for (const [name, prompt, status, errorClass] of FAILED_BEFORE_FIRST_DELTA) {
    it(`${name} before the first delta is a plain ${status}, streaming or not`, async () => {
      const client = responsesClient(harnesses.get(kind)!.url);
      for (const stream of [true, false]) {
        const error = await rejection(client.responses.create({ model: "sim", input: prompt, stream }));
        expect(error, `stream: ${stream}`).toBeInstanceOf(errorClass);
        expect((error as APIError).status).toBe(status);
        if (status === 429) expect((error as APIError).headers?.get("retry-after")).toBe("9");
      }
    });
  }

  for (const fail of ["drop", "error_event", "malformed"]) {
    it(`a mid-stream ${fail}: response.failed, then the SDK raises instead of returning a truncated answer`, async () => {
      const client = responsesClient(harnesses.get(kind)!.url);
      const stream = await client.responses.create({ model: "sim", input: `#sim fail=${fail} fail_at=3`, stream: true });
      const seen: string[] = [];
      let text = "";
      let failed: OpenAI.Responses.Response | undefined;
      const error = await rejection(
        (async () => {
          for await (const event of stream) {
            seen.push(event.type);
            if (event.type === "response.output_text.delta") text += event.delta;
            if (event.type === "response.failed") failed = event.response;
          }
        })(),
      );
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(text).toBe(simulatedText(1, 3));
      expect(seen).not.toContain("response.completed");
      expect(failed?.status).toBe("failed");
      expect(failed?.error?.code).toBe("server_error");
      expect(failed?.output[0]).toMatchObject({ type: "message", status: "incomplete", content: [{ text: simulatedText(1, 3) }] });

      await expect(client.responses.stream({ model: "sim", input: `#sim fail=${fail} fail_at=3` }).finalResponse()).rejects.toBeInstanceOf(OpenAI.APIError);
      // Without streaming nothing was out yet: the failure is the reply's status.
      const whole = await rejection(client.responses.create({ model: "sim", input: `#sim fail=${fail} fail_at=3` }));
      expect(whole).toBeInstanceOf(OpenAI.InternalServerError);
      expect((whole as APIError).status).toBe(502);
    });
  }

  it("an answer cut at the output limit is response.incomplete with reason max_output_tokens, streamed or whole", async () => {
    const client = responsesClient(harnesses.get(kind)!.url);
    const input = "#sim tokens=6 seed=12";
    const streamed = await joinEvents(await client.responses.create({ model: "clipped", input, max_output_tokens: 6, stream: true }));
    expect(streamed.types.at(-1)).toBe("response.incomplete");
    expect(streamed.terminal).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, max_output_tokens: 6 });
    expect(streamed.fromDeltas).toMatchObject({ text: simulatedText(12, 6), finish: "length" });

    const helper = await client.responses.stream({ model: "clipped", input, max_output_tokens: 6 }).finalResponse();
    expect(helper).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output_text: simulatedText(12, 6) });

    const whole = await client.responses.create({ model: "clipped", input, max_output_tokens: 6 });
    expect(whole).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output_text: simulatedText(12, 6) });
    expect(whole.output[0]).toMatchObject({ type: "message", status: "incomplete" });
  });
});
