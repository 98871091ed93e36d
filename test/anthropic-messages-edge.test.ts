import Anthropic from "@anthropic-ai/sdk";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { answerFromMessage, answerViaMessages, MESSAGES_MODES, messagesClient, messageVia, WEATHER_TOOL, weatherRequest } from "./helpers/answer-via-messages.js";
import { answerViaGrpc } from "./helpers/answers.js";
import { FAR_TIMEOUTS, type Harness, PROVIDER_KINDS, type ProviderKind, startHarness } from "./helpers/harness.js";

/**
 * The Messages edge over real sockets with the official SDK, against each
 * upstream wire the simulator speaks: what the SDK assembles, tool-use
 * loops, aborts, upstream failures and heartbeats.
 */

/** name, prompt, and what the answer must hold (so two empty answers never compare equal). */
const SCRIPTS: Array<[string, string, { text: string; reasoning: boolean; tools: number; finish: string }]> = [
  ["plain text", "#sim tokens=15 seed=3", { text: simulatedText(3, 15), reasoning: false, tools: 0, finish: "stop" }],
  ["thinking then text", "#sim reasoning=6 tokens=5 seed=8", { text: simulatedText(8, 5), reasoning: true, tools: 0, finish: "stop" }],
  ["text then parallel tool calls", "#sim tokens=4 tools=3 seed=5", { text: simulatedText(5, 4), reasoning: false, tools: 3, finish: "tool_calls" }],
  ["thinking, text and tool calls in one upstream write", "#sim reasoning=6 tokens=40 tools=2 seed=4 chunking=bulk", { text: simulatedText(4, 40), reasoning: true, tools: 2, finish: "tool_calls" }],
  ["tool calls only", "#sim tokens=0 tools=1 seed=6", { text: "", reasoning: false, tools: 1, finish: "tool_calls" }],
  ["thinking only", "#sim reasoning=5 tokens=0 seed=7", { text: "", reasoning: true, tools: 0, finish: "stop" }],
  ["chunked at random byte offsets, CRLF", "#sim reasoning=3 tokens=12 tools=1 seed=9 chunking=random eol=crlf", { text: simulatedText(9, 12), reasoning: true, tools: 1, finish: "tool_calls" }],
  ["no usage from the provider (the gateway counts it)", "#sim reasoning=3 tokens=7 seed=2 usage=never", { text: simulatedText(2, 7), reasoning: true, tools: 0, finish: "stop" }],
];

/** The knob line a tool result carries, so the second turn answers instead of calling again. */
const ANSWER_NOW = "#sim tools=0 reasoning=0 tokens=3 seed=9";

/** Tool results for every tool_use block of `message`, with the knobs of the next answer (a tag, say) after ANSWER_NOW. */
function resultsFor(message: Anthropic.Message, knobs = ""): Anthropic.ToolResultBlockParam[] {
  return message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use").map((b) => ({ type: "tool_result", tool_use_id: b.id, content: `{"temp":21}\n${ANSWER_NOW} ${knobs}`.trimEnd() }));
}

/** What a call ends with: the SDK's error, or undefined when it succeeded. */
async function failureOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** Frames of a raw Messages stream: `{event, data}`, data parsed. */
function framesOf(sse: string): Array<{ event: string; data: Record<string, unknown> }> {
  return sse
    .split("\n\n")
    .filter((block) => block.startsWith("event: "))
    .map((block) => {
      const [eventLine, dataLine] = block.split("\n");
      return { event: eventLine!.slice("event: ".length), data: JSON.parse(dataLine!.slice("data: ".length)) as Record<string, unknown> };
    });
}

const pingsIn = (sse: string) => sse.split('event: ping\ndata: {"type":"ping"}\n\n').length - 1;
/** Pings after the first text delta (none before it has arrived): the ones a stream held mid-answer got. */
const pingsAfterText = (sse: string) => (sse.includes('"text_delta"') ? pingsIn(sse.slice(sse.indexOf('"text_delta"'))) : 0);

describe.each(PROVIDER_KINDS)("%s upstream", (kind: ProviderKind) => {
  let h: Harness;
  let client: Anthropic;
  beforeAll(async () => {
    h = await startHarness({
      kind,
      models: { sim: "sim-1" },
      // Far timeouts: a held or stalled upstream ends only by the cause under test.
      provider: { timeouts: FAR_TIMEOUTS },
      // And no heartbeat: one before a failure would commit a 200 that the failure then cannot be (see "heartbeats").
      facade: { keepaliveMs: 300_000 },
    });
    client = messagesClient(h.url);
  });
  afterAll(() => h.close());

  /** The gateway's stream.end line of a request, once written. */
  const endLog = (requestId: string | undefined) => h.waitForLog((l) => l.event === "stream.end" && l.requestId === requestId);

  describe("the SDK's message equals the gRPC edge's joined deltas", () => {
    for (const [name, prompt, expected] of SCRIPTS) {
      for (const mode of MESSAGES_MODES) {
        it(`${name}, ${mode === "create" ? "messages.create" : "messages.stream().finalMessage()"}`, async () => {
          const viaGrpc = await answerViaGrpc(h.url, "sim", prompt);
          const viaMessages = await answerViaMessages(h.url, "sim", prompt, mode);
          expect(viaMessages).toEqual(viaGrpc);
          expect(viaMessages.text).toBe(expected.text);
          expect(viaMessages.reasoning !== "").toBe(expected.reasoning);
          expect(viaMessages.toolCalls).toHaveLength(expected.tools);
          expect(viaMessages.finish).toBe(expected.finish);
          expect(viaMessages.usage!.input).toBeGreaterThan(0);
          expect(viaMessages.usage!.output).toBeGreaterThan(0);
        });
      }
    }

    it("the message is named by the alias asked for, with a msg_ id", async () => {
      const message = await client.messages.create(weatherRequest("sim", "#sim tokens=2"));
      expect(message).toMatchObject({ type: "message", role: "assistant", model: "sim", stop_reason: "end_turn", stop_sequence: null });
      expect(message.id).toMatch(/^msg_/);
    });
  });

  it(`usage is integers on message_start, message_delta and the whole message, never null; message_start has ${kind === "anthropic" ? "the input the upstream stated up front" : "zeros (this upstream states usage at the end)"}`, async () => {
    const counts = (usage: object) => {
      const u = usage as Record<string, unknown>;
      for (const field of ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]) {
        expect(Number.isInteger(u[field]), `${field}: ${String(u[field])}`).toBe(true);
      }
      const split = u.cache_creation as Record<string, unknown>;
      for (const field of ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"]) expect(Number.isInteger(split[field]), field).toBe(true);
      return u;
    };
    const whole = await client.messages.create(weatherRequest("sim", "#sim tokens=4 seed=3"));
    expect(counts(whole.usage).output_tokens).toBe(4);
    const usages: Array<[string, object]> = [];
    for await (const event of await client.messages.create({ ...weatherRequest("sim", "#sim tokens=4 seed=3"), stream: true })) {
      if (event.type === "message_start") usages.push([event.type, event.message.usage]);
      if (event.type === "message_delta") usages.push([event.type, event.usage]);
    }
    expect(usages.map(([type]) => type)).toEqual(["message_start", "message_delta"]);
    for (const [, usage] of usages) counts(usage);
    expect(usages[1]![1]).toEqual(whole.usage);
    const inputOf = (usage: object) => {
      const { output_tokens: _output, output_tokens_details: _details, ...input } = usage as Record<string, unknown>;
      return input;
    };
    const atStart = usages[0]![1] as Record<string, unknown>;
    expect(atStart.output_tokens).toBe(0);
    if (kind === "anthropic") {
      // Claude Code's cost display reads message_start: the real input, the same as the cumulative message_delta's.
      expect(atStart.input_tokens).toBeGreaterThan(0);
      expect(inputOf(atStart)).toEqual(inputOf(whole.usage));
    } else expect(inputOf(atStart)).toEqual({ input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } });
    // No usage from the provider: the gateway's count, still integers.
    for await (const event of await client.messages.create({ ...weatherRequest("sim", "#sim tokens=4 seed=3 usage=never"), stream: true })) {
      if (event.type === "message_delta") counts(event.usage);
    }
  });

  // biome-ignore lint/complexity/noUselessLoneBlockStatements: the block keeps the tool-use loop's tests under the comment that says why they run on Gemini too
  {
    // On Gemini too: it signs its function calls, a tool_use block has no field for that signature, and
    // the call layer keeps it aside under the tool_use id (call/replay-turns.ts) for the continuation.
    describe("a tool-use loop", () => {
      const thinking = kind === "anthropic" ? { thinking: { type: "enabled" as const, budget_tokens: 2048 } } : {};
      const base = { model: "sim", max_tokens: 4096, tools: [WEATHER_TOOL], ...thinking };
      const PROMPT = `#sim ${kind === "anthropic" ? "reasoning=4 redacted=1 " : ""}tokens=2 tools=2 seed=31`;

      for (const mode of MESSAGES_MODES) {
        it(`tool_use, then tool_result${kind === "anthropic" ? " with the signed thinking blocks sent back" : ""}, then the answer (${mode})`, async () => {
          const first = await messageVia(client, mode, { ...base, messages: [{ role: "user", content: PROMPT }] });
          expect(first.stop_reason).toBe("tool_use");
          expect(first.content.filter((b) => b.type === "tool_use")).toHaveLength(2);
          if (kind === "anthropic") {
            expect(first.content.map((b) => b.type)).toEqual(["redacted_thinking", "thinking", "text", "tool_use", "tool_use"]);
            expect((first.content[1] as Anthropic.ThinkingBlock).signature).toMatch(/^sig\./);
          }
          // The SDK's blocks go back exactly as it assembled them, as Claude clients do.
          const tag = `loop-${kind}-${mode}`;
          const second = await messageVia(client, mode, {
            ...base,
            messages: [
              { role: "user", content: PROMPT },
              { role: "assistant", content: first.content },
              { role: "user", content: resultsFor(first, `tag=${tag}`) },
            ],
          });
          expect(second.stop_reason).toBe("end_turn");
          // After tool results the simulator quotes them: what the client sent reached the provider and came back.
          const results = resultsFor(first, `tag=${tag}`);
          expect(answerFromMessage(second).text).toBe(results.map((r) => `get_weather returned: ${String(r.content)}`).join("\n"));
          const sent = (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body;
          // Gemini has no call ids: what goes back there is the call's signature, kept aside by the call layer.
          expect(JSON.stringify(sent)).toContain(kind === "gemini" ? '"thoughtSignature":"fcsig.' : "call_sim_31_0_1");
        });
      }

      if (kind === "anthropic") {
        it("the simulator verifies what comes back: a tampered or missing thinking block is refused with Anthropic's 400", async () => {
          const first = await client.messages.stream({ ...base, messages: [{ role: "user", content: PROMPT }] }).finalMessage();
          const turn = (content: Anthropic.ContentBlockParam[]): Anthropic.MessageCreateParamsNonStreaming => ({
            ...base,
            messages: [
              { role: "user", content: PROMPT },
              { role: "assistant", content },
              { role: "user", content: resultsFor(first) },
            ],
          });
          const tampered = first.content.map((b) => (b.type === "thinking" ? { ...b, thinking: `${b.thinking}!` } : b));
          const refused = await failureOf(client.messages.create(turn(tampered)));
          expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
          expect(refused).toMatchObject({ status: 400, type: "invalid_request_error" });
          expect((refused as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/Invalid `signature` in `thinking` block/);
          const stripped = first.content.filter((b) => b.type !== "thinking" && b.type !== "redacted_thinking");
          const missing = await failureOf(client.messages.create(turn(stripped)));
          expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
          expect((missing as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/Expected `thinking` or `redacted_thinking`/);
        });
      }
    });
  }

  describe("a client that aborts closes the upstream", () => {
    // The upstream stalls after 5 tokens and never ends on its own: the simulator
    // seeing its connection close can only be the client's abort.
    const stalled = (tag: string) => weatherRequest("sim", `#sim tokens=2000 fail=stall fail_at=5 tag=${tag}`);

    async function expectClosed(tag: string) {
      const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(record.tokensWritten).toBe(5);
      expect(await endLog(record.requestId)).toMatchObject({ outcome: "canceled" });
    }

    it("MessageStream.abort() after the fifth text delta", async () => {
      const tag = `abort-stream-${kind}`;
      const stream = client.messages.stream(stalled(tag));
      let texts = 0;
      const ended = await failureOf(
        (async () => {
          for await (const event of stream) {
            if (event.type === "content_block_delta" && event.delta.type === "text_delta" && ++texts === 5) stream.abort();
          }
        })(),
      );
      expect(texts).toBe(5);
      if (ended !== undefined) expect(ended).toBeInstanceOf(Anthropic.APIUserAbortError);
      await expectClosed(tag);
    });

    it("an AbortController's signal on messages.create({stream: true})", async () => {
      const tag = `abort-signal-${kind}`;
      const abort = new AbortController();
      const stream = await client.messages.create({ ...stalled(tag), stream: true }, { signal: abort.signal });
      let texts = 0;
      await failureOf(
        (async () => {
          for await (const event of stream) {
            if (event.type === "content_block_delta" && event.delta.type === "text_delta" && ++texts === 5) abort.abort();
          }
        })(),
      );
      expect(texts).toBe(5);
      await expectClosed(tag);
    });
    it("an AbortController's signal on messages.create (no stream) once the upstream is mid-answer", async () => {
      const tag = `abort-whole-${kind}`;
      const abort = new AbortController();
      const answer = failureOf(client.messages.create(stalled(tag), { signal: abort.signal }));
      await h.sim.records.waitFor((r) => r.tag === tag && r.outcome === "stalled", 30_000);
      abort.abort();
      expect(await answer).toBeInstanceOf(Anthropic.APIUserAbortError);
      await expectClosed(tag);
    });

    it("MessageStream.abort() before the first delta, while the upstream holds", async () => {
      const tag = `abort-held-${kind}`;
      const stream = client.messages.stream(weatherRequest("sim", `#sim tokens=4 hold_at=0 tag=${tag}`));
      const ended = failureOf(stream.done());
      await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
      stream.abort();
      expect(await ended).toBeInstanceOf(Anthropic.APIUserAbortError);
      const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(record.tokensWritten).toBe(0);
    });
  });

  describe("upstream failures", () => {
    const STATUSES: Array<[string, string, number, string, abstract new (...args: never[]) => Error]> = [
      ["a 500", "#sim fail=status status=500", 502, "api_error", Anthropic.InternalServerError],
      ["a 529 (Anthropic's overloaded)", "#sim fail=status status=529", 502, "api_error", Anthropic.InternalServerError],
      ["a reset before the headers", "#sim fail=reset_before_headers", 502, "api_error", Anthropic.InternalServerError],
      ["a 429", "#sim fail=status status=429 retry_after=9", 429, "rate_limit_error", Anthropic.RateLimitError],
      ["a 400", "#sim fail=status status=400", 400, "invalid_request_error", Anthropic.BadRequestError],
      ["an in-band server error before any token", "#sim fail=error_event fail_at=0 inband=server", 502, "api_error", Anthropic.InternalServerError],
      ["an in-band rate limit before any token", "#sim fail=error_event fail_at=0 inband=rate_limit", 429, "rate_limit_error", Anthropic.RateLimitError],
    ];
    for (const [name, prompt, status, type, errorClass] of STATUSES) {
      for (const mode of MESSAGES_MODES) {
        it(`${name} before the first delta → ${status} ${type} (${mode})`, async () => {
          const error = await failureOf(messageVia(client, mode, weatherRequest("sim", prompt)));
          expect(error).toBeInstanceOf(errorClass);
          expect(error).toMatchObject({ status, type });
          expect((error as InstanceType<typeof Anthropic.APIError>).requestID).toMatch(/^req_/);
          if (prompt.includes("retry_after=9")) expect((error as InstanceType<typeof Anthropic.APIError>).headers?.get("retry-after")).toBe("9");
        });
      }
    }

    for (const fail of ["drop", "error_event", "malformed"]) {
      it(`fail=${fail} after 3 tokens: the stream raises (event: error), it does not end as a shorter message`, async () => {
        const stream = client.messages.stream(weatherRequest("sim", `#sim tokens=10 fail=${fail} fail_at=3`));
        let text = "";
        stream.on("text", (delta) => (text += delta));
        const error = await failureOf(stream.finalMessage());
        expect(error).toBeInstanceOf(Anthropic.APIError);
        expect((error as InstanceType<typeof Anthropic.APIError>).type).toMatch(/^(api_error|overloaded_error)$/);
        expect(text).toBe(simulatedText(1, 3));
      });
    }

    it("the raw stream of a mid-stream failure: message_start, three deltas, an error event, and no message_stop", async () => {
      const res = await request(`${h.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...weatherRequest("sim", "#sim tokens=10 fail=drop fail_at=3"), stream: true }),
      });
      expect(res.statusCode).toBe(200);
      const frames = framesOf(await res.body.text());
      expect(frames[0]!.event).toBe("message_start");
      expect(frames.filter((f) => f.event === "content_block_delta")).toHaveLength(3);
      expect(frames.at(-1)).toMatchObject({ event: "error", data: { type: "error", error: { type: "api_error" } } });
      expect(frames.some((f) => f.event === "message_stop" || f.event === "message_delta")).toBe(false);
    });

    it("messages.create with a mid-stream failure is an error, not a shorter message", async () => {
      const error = await failureOf(client.messages.create(weatherRequest("sim", "#sim tokens=10 fail=drop fail_at=3")));
      expect(error).toBeInstanceOf(Anthropic.InternalServerError);
      expect(error).toMatchObject({ status: 502, type: "api_error" });
    });
  });

  describe("heartbeats", () => {
    let hb: Harness;
    beforeAll(async () => {
      hb = await startHarness({ kind, models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS }, facade: { keepaliveMs: 20 } });
    });
    afterAll(() => hb.close());

    it("a held stream gets ping events after its first delta, and before it, on the raw wire", async () => {
      for (const holdAt of [1, 0]) {
        // The upstream holds until the client has seen three pings, however long that takes.
        const tag = `ping-raw-${kind}-${holdAt}`;
        const res = await request(`${hb.url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ...weatherRequest("sim", `#sim tokens=4 hold_at=${holdAt} tag=${tag}`), stream: true }),
        });
        expect(res.statusCode).toBe(200);
        expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
        let sse = "";
        let released = false;
        for await (const chunk of res.body) {
          sse += (chunk as Buffer).toString();
          if (!released && (holdAt === 0 ? pingsIn(sse) : pingsAfterText(sse)) >= 3) {
            released = true;
            hb.sim.records.release(tag);
          }
        }
        const frames = framesOf(sse);
        // hold_at=0: pings come before message_start (a heartbeat sends the headers); hold_at=1: after the first text delta.
        const from = holdAt === 0 ? 0 : frames.findIndex((f) => (f.data.delta as { type?: string } | undefined)?.type === "text_delta");
        const to = holdAt === 0 ? frames.findIndex((f) => f.event === "message_start") : frames.length;
        expect(frames.slice(from, to).filter((f) => f.event === "ping").length, `hold_at=${holdAt}`).toBeGreaterThanOrEqual(3);
        expect(
          frames
            .filter((f) => f.event === "content_block_delta")
            .map((f) => (f.data.delta as { text: string }).text)
            .join(""),
        ).toBe(simulatedText(1, 4));
        expect(frames.at(-1)!.event).toBe("message_stop");
      }
    });

    it("the SDK skips the pings and assembles the whole message", async () => {
      const tag = `ping-sdk-${kind}`;
      let seen = "";
      const utf8 = new TextDecoder();
      // The SDK's own fetch, with a look at the bytes it reads: the test releases the upstream once three pings went by.
      const watching = messagesClient(hb.url, {
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if (!res.body) return res;
          const watch = new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              seen += utf8.decode(chunk, { stream: true });
              if (pingsAfterText(seen) >= 3) hb.sim.records.release(tag);
              controller.enqueue(chunk);
            },
          });
          return new Response(res.body.pipeThrough(watch), { status: res.status, headers: res.headers });
        },
      });
      const message = await watching.messages.stream(weatherRequest("sim", `#sim tokens=4 hold_at=1 tag=${tag}`)).finalMessage();
      expect(pingsAfterText(seen)).toBeGreaterThanOrEqual(3);
      expect(answerFromMessage(message).text).toBe(simulatedText(1, 4));
      expect(message.stop_reason).toBe("end_turn");
    });
  });
});
