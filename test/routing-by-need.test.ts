import { Code } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/core/chat-request.js";
import { countedInputTokens } from "../src/usage/prompt-size.js";
import { chatClient, collect, rpcFailure, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue #29's "done when", over real sockets: an image request on an alias
 * with a text-only primary and a vision backup goes to the backup with no
 * failed upstream call; a conversation longer than its target's window is
 * truncated (or refused, as configured) and the simulator receives a prompt
 * that fits; a request needing tools where no target calls them is refused
 * before any upstream call.
 */

const IMAGE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const WINDOW = 128_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    limits: { maxRequestBytes: 8 * 1024 * 1024 },
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: {
        seeing: {
          targets: [
            { provider: "sim", model: "sim-text?tokens=3", capabilities: { vision: false } },
            { provider: "sim", model: "sim-vision?tokens=3", capabilities: { vision: true } },
          ],
        },
        "no-tools": { provider: "sim", model: "sim-plain?tokens=3", capabilities: { tools: false } },
        long: { provider: "sim", model: "sim-long?tokens=3", capabilities: { contextWindow: WINDOW }, context: { strategy: "truncate", keepLastTurns: 2 } },
        strict: { provider: "sim", model: "sim-strict?tokens=3", capabilities: { contextWindow: WINDOW } },
        known: { provider: "sim", model: "gpt-4o-mini?tokens=3" },
        summarized: { provider: "sim", model: "sim-summarized?tokens=3", capabilities: { contextWindow: WINDOW }, context: { strategy: "summarize", summarizer: "cheap", keepLastTurns: 2 } },
        "summary-fails": { provider: "sim", model: "sim-summarized?tokens=3", capabilities: { contextWindow: WINDOW }, context: { strategy: "summarize", summarizer: "broken", keepLastTurns: 2 } },
        cheap: { provider: "sim", model: "sim-summary?tokens=12" },
        broken: { provider: "sim", model: "sim-summary?fail=status&status=500" },
      },
    }),
  });
});
afterAll(() => h.close());

const openai = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });

/** A conversation of `turns` user/assistant pairs, each user turn about `tokensPerTurn` tokens, then a last question. */
function longConversation(turns: number, tokensPerTurn: number, tag: string): OpenAI.ChatCompletionMessageParam[] {
  const words = "river stone lantern orbit willow marble summit canyon ember velvet ".repeat(Math.ceil(tokensPerTurn / 10));
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: "You answer questions about the archive." }];
  for (let i = 0; i < turns; i++) messages.push({ role: "user", content: `turn ${i}: ${words}` }, { role: "assistant", content: `noted ${i}` });
  messages.push({ role: "user", content: `#sim tag=${tag}\nwhat did turn ${turns - 1} say?` });
  return messages;
}

describe("routing by what a request needs", () => {
  it("an image goes to the vision backup, and the text-only primary is never tried", async () => {
    const before = h.sim.records.all().length;
    const answer = await openai().chat.completions.create({
      model: "seeing",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "#sim tag=need-vision\nwhat is in it?" },
            { type: "image_url", image_url: { url: IMAGE } },
          ],
        },
      ],
    });
    expect(answer.choices[0]!.finish_reason).toBe("stop");
    const sent = h.sim.records.all().slice(before);
    expect(sent.map((r) => r.model)).toEqual(["sim-vision?tokens=3"]);
    // Text alone still goes to the primary.
    await openai().chat.completions.create({ model: "seeing", messages: [{ role: "user", content: "#sim tag=need-text\nhello" }] });
    expect((await h.sim.records.waitFor((r) => r.tag === "need-text", 30_000)).model).toBe("sim-text?tokens=3");
  });

  it("a request needing tools where no target calls them is refused before any upstream call, naming the capability", async () => {
    const before = h.sim.records.all().length;
    const failure = await rpcFailure(
      collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("no-tools", "#sim tag=need-tools\nweather?", { tools: [{ name: "get_weather", description: "Weather", parameters: { type: "object" } }] }))),
    );
    expect(failure.code).toBe(Code.FailedPrecondition);
    expect(failure.rawMessage).toContain("tool calling");
    const refused = await openai()
      .chat.completions.create({ model: "no-tools", messages: [{ role: "user", content: "weather?" }], tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(h.sim.records.all().length).toBe(before);
    // Without tools it is served.
    expect((await openai().chat.completions.create({ model: "no-tools", messages: [{ role: "user", content: "hello" }] })).choices[0]!.finish_reason).toBe("stop");
  });

  it("a 200k-token conversation on a 128k target is truncated: the simulator receives a prompt that fits, and the caller is told", async () => {
    const messages = longConversation(100, 2_000, "need-long");
    const { data, response } = await openai().chat.completions.create({ model: "long", messages }).withResponse();
    expect(data.choices[0]!.finish_reason).toBe("stop");
    const header = response.headers.get("sluice-context");
    expect(header).toMatch(/^truncated=\d+$/);
    const dropped = Number(header!.split("=")[1]);
    expect(dropped).toBeGreaterThan(0);

    const record = await h.sim.records.waitFor((r) => r.tag === "need-long", 30_000);
    const body = record.body as { messages: Array<{ role: string; content: string }> };
    expect(body.messages[0]).toEqual({ role: "system", content: "You answer questions about the archive." });
    expect(body.messages.at(-1)!.content).toContain("what did turn 99 say?");
    expect(body.messages.length).toBe(messages.length - 2 * dropped);
    // What arrived fits the window with the default room for the answer, by the gateway's own tokenizer.
    const received: ChatRequest = {
      model: "long",
      messages: body.messages.map((m) => ({ role: m.role as "user", content: [{ type: "text", text: m.content }] })),
      tools: [],
      sampling: { stop: [] },
      metadata: { labels: {} },
    };
    const tokens = await countedInputTokens(received);
    expect(tokens + 1_024).toBeLessThanOrEqual(WINDOW);
  });

  it("summarize: the oldest turns become one summary from the summarizer alias, reused while the conversation grows", async () => {
    const summaries = () => h.sim.records.all().filter((r) => r.model === "sim-summary?tokens=12").length;
    const before = summaries();
    const first = await openai()
      .chat.completions.create({ model: "summarized", messages: longConversation(100, 2_000, "need-summary-1") })
      .withResponse();
    const header = first.response.headers.get("sluice-context")!;
    expect(header).toMatch(/^summarized=\d+$/);
    const k = Number(header.split("=")[1]);
    expect(k % 8).toBe(0);
    expect(summaries()).toBe(before + 1);

    const record = await h.sim.records.waitFor((r) => r.tag === "need-summary-1", 30_000);
    const body = record.body as { messages: Array<{ role: string; content: string }> };
    expect(body.messages[0]!.content).toBe("You answer questions about the archive.");
    expect(body.messages[1]!.role).toBe("system");
    expect(body.messages[1]!.content).toContain("Summary of the earlier conversation");
    expect(body.messages.length).toBe(201 + 1 - 2 * k + 1);

    // One more turn: the same old turns are cut, and their summary comes from the cache.
    const grown = await openai()
      .chat.completions.create({ model: "summarized", messages: longConversation(101, 2_000, "need-summary-2") })
      .withResponse();
    expect(grown.response.headers.get("sluice-context")).toBe(header);
    expect(summaries()).toBe(before + 1);
  });

  it("summarize falls back to truncate when the summarizer fails, and says so", async () => {
    const { response } = await openai()
      .chat.completions.create({ model: "summary-fails", messages: longConversation(100, 2_000, "need-summary-failed") })
      .withResponse();
    expect(response.headers.get("sluice-context")).toMatch(/^truncated=\d+; summary=failed$/);
    await h.waitForLog((l) => l.event === "context.summary_failed");
  });

  it("with the default strategy the same conversation is refused before any upstream call, saying how large it is", async () => {
    const before = h.sim.records.all().length;
    const refused = await openai()
      .chat.completions.create({ model: "strict", messages: longConversation(100, 2_000, "need-strict") })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as Error).message).toMatch(/takes \d+ tokens .* largest context window of its targets \(128000\)/);
    expect(h.sim.records.all().length).toBe(before);
  });

  it("/v1/models and ListModels report each alias's capabilities, from the configuration over the built-in table", async () => {
    const listed = await fetch(`${h.url}/v1/models`).then((r) => r.json() as Promise<{ data: Array<{ id: string; capabilities: { any_target: Record<string, unknown>; every_target: Record<string, unknown> } }> }>);
    const seeing = listed.data.find((m) => m.id === "seeing")!;
    expect(seeing.capabilities.any_target.vision).toBe(true);
    expect(seeing.capabilities.every_target.vision).toBe(false);
    const known = listed.data.find((m) => m.id === "known")!;
    expect(known.capabilities.every_target).toMatchObject({ context_window: 128_000, vision: true, tools: true });

    const models = await chatClient(transports(h.url)["grpc (connect-node, h2)"]!).listModels({});
    const long = models.models.find((m) => m.id === "long")!;
    expect(long.everyTarget?.contextWindow).toBe(128_000n);
    expect(long.everyTarget?.tools).toBeUndefined();
  });
});
