import { create } from "@bufbuild/protobuf";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { messagesClient, WEATHER_TOOL } from "./helpers/answer-via-messages.js";
import { chatClient, transports } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * `promptCache: auto` over real sockets: a conversation with a long system
 * prompt and tools, asked turn after turn through each edge, reaches the
 * simulator with cache_control breakpoints (never more than four), and the
 * simulator, caching as Anthropic does, reports cached input that the
 * caller sees rise with each turn. An alias without it sends no marker
 * and is never cached.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { claude: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } } },
      models: {
        cached: { provider: "claude", model: "sim-1?tokens=4", promptCache: "auto" },
        plain: { provider: "claude", model: "sim-1?tokens=4" },
      },
    }),
  });
});
afterAll(() => h.close());

/** The simulator's token count (words), to predict what it reports. */
const words = (...texts: string[]) => texts.join(" ").split(/\s+/).filter(Boolean).length;

/** A system prompt past Anthropic's smallest cacheable length (1,024 tokens), distinct per edge so no edge reads another's cache. */
const systemPrompt = (edge: string) => `You are the ${edge} support assistant. ${"Answer plainly and cite the manual section. ".repeat(200)}`;

interface Turn {
  readonly text: string;
  readonly input: number;
  readonly cached: number;
  /** Input written to the cache, as the edge reports it (all five-minute writes here: promptCache auto marks ephemeral). */
  readonly written: number;
}

/** What the OpenAI-shaped edges add to cached_tokens: writes in all and by lifetime (Sluice extensions). */
interface WriteDetails {
  readonly cache_write_tokens?: number;
  readonly cache_write_5m_tokens?: number;
  readonly cache_write_1h_tokens?: number;
}

/** A write count that must be all five-minute writes. */
function fiveMinuteWrites(details: WriteDetails | undefined): number {
  expect(details?.cache_write_1h_tokens).toBe(0);
  expect(details?.cache_write_5m_tokens).toBe(details?.cache_write_tokens);
  return details?.cache_write_tokens ?? -1;
}

type Conversation = ReadonlyArray<{ role: "user" | "assistant"; content: string }>;

/** One request through an edge: the answer's text and the input usage the caller sees (cached tokens included in input). */
type Ask = (alias: string, system: string, conversation: Conversation) => Promise<Turn>;

/** WEATHER_TOOL in the OpenAI and gRPC shape. */
const TOOL = { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } };

const EDGES: Record<string, Ask> = {
  "OpenAI facade (openai SDK)": async (alias, system, conversation) => {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: alias,
      messages: [{ role: "system", content: system }, ...conversation],
      tools: [{ type: "function", function: TOOL }],
    });
    const usage = completion.usage!;
    const written = fiveMinuteWrites(usage.prompt_tokens_details as WriteDetails | undefined);
    return { text: completion.choices[0]!.message.content ?? "", input: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0, written };
  },
  "Responses edge (openai SDK)": async (alias, system, conversation) => {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
    const response = await openai.responses.create({
      model: alias,
      instructions: system,
      input: conversation.map((m) => ({ role: m.role, content: m.content })),
      tools: [{ type: "function", name: TOOL.name, description: TOOL.description, parameters: TOOL.parameters, strict: false }],
    });
    const usage = response.usage!;
    const written = fiveMinuteWrites(usage.input_tokens_details as WriteDetails);
    return { text: response.output_text, input: usage.input_tokens, cached: usage.input_tokens_details.cached_tokens, written };
  },
  "Messages edge (Anthropic SDK)": async (alias, system, conversation) => {
    const message = await messagesClient(h.url).messages.create({ model: alias, max_tokens: 1024, system, messages: [...conversation], tools: [WEATHER_TOOL] });
    const cached = message.usage.cache_read_input_tokens ?? 0;
    const written = message.usage.cache_creation_input_tokens ?? -1;
    // As Anthropic's API: input_tokens excludes cache reads and writes; the split says the writes' lifetime.
    expect(message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 });
    const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    return { text, input: message.usage.input_tokens + cached + written, cached, written };
  },
  "gRPC (connect-node, h2)": async (alias, system, conversation) => {
    const roles = { system: Role.SYSTEM, user: Role.USER, assistant: Role.ASSISTANT };
    const request = create(StreamChatRequestSchema, {
      model: alias,
      messages: [{ role: "system" as const, content: system }, ...conversation].map((m) => ({
        role: roles[m.role],
        content: [{ part: { case: "text" as const, value: m.content } }],
      })),
      tools: [TOOL],
    });
    const turn = { text: "", input: 0, cached: 0, written: -1 };
    for await (const m of chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(request)) {
      if (m.delta.case === "text") turn.text += m.delta.value.text;
      if (m.delta.case === "usage") {
        turn.input = Number(m.delta.value.inputTokens);
        turn.cached = Number(m.delta.value.cachedInputTokens);
        expect(m.delta.value.cacheWrite1hTokens).toBe(0n);
        turn.written = Number(m.delta.value.cacheWrite5mTokens);
      }
    }
    return turn;
  },
};

/** Where a body carries cache_control, in Anthropic's cache order: `tools.0`, `system.0`, `messages.2.content.0`. */
function breakpoints(body: Record<string, unknown>): string[] {
  const out: string[] = [];
  const visit = (value: unknown, path: string) => {
    if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}.${i}`));
    else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) k === "cache_control" ? out.push(path.slice(1)) : visit(v, `${path}.${k}`);
    }
  };
  visit({ tools: body.tools, system: body.system, messages: body.messages }, "");
  return out;
}

/** Three turns of one conversation: each sends the whole history and a new question tagged for the simulator's records. */
async function converse(ask: Ask, alias: string, system: string, tag: string) {
  const conversation: Array<{ role: "user" | "assistant"; content: string }> = [];
  const turns: Turn[] = [];
  const bodies: Array<Record<string, unknown>> = [];
  for (let n = 1; n <= 3; n++) {
    conversation.push({ role: "user", content: `Question ${n}: what does section ${n} say?\n#sim tag=${tag}-${n}` });
    const turn = await ask(alias, system, conversation);
    turns.push(turn);
    conversation.push({ role: "assistant", content: turn.text });
    bodies.push((await h.sim.records.waitFor((r) => r.tag === `${tag}-${n}`, 30_000)).body as Record<string, unknown>);
  }
  return { conversation, turns, bodies };
}

describe.each(Object.entries(EDGES))("promptCache: auto through the %s", (edge, ask) => {
  const tag = edge.split(" ")[0]!.toLowerCase();

  it("marks the stable prefix, and the caller sees cached input tokens rise turn by turn", async () => {
    const system = systemPrompt(edge);
    const { conversation, turns, bodies } = await converse(ask, "cached", system, `cached-${tag}`);
    const [u1, a1, u2, a2, u3] = conversation.map((m) => m.content) as [string, string, string, string, string];

    // Every turn sends the whole conversation; what repeats an earlier request's prefix is read from the cache.
    expect(turns.map((t) => t.input)).toEqual([words(system, u1), words(system, u1, a1, u2), words(system, u1, a1, u2, a2, u3)]);
    expect(turns.map((t) => t.cached)).toEqual([0, words(system, u1), words(system, u1, a1, u2)]);
    expect(turns[1]!.cached).toBeGreaterThan(1024);
    // The breakpoint on the new question writes everything from the cached prefix to it: the rest of the input.
    expect(turns.map((t) => t.written)).toEqual(turns.map((t) => t.input - t.cached));
    expect(turns[0]!.written).toBe(words(system, u1));

    // The last tool, the system prompt, the question the last answer replied to, the new question: four at most.
    expect(bodies.map(breakpoints)).toEqual([
      ["tools.0", "system.0", "messages.0.content.0"],
      ["tools.0", "system.0", "messages.0.content.0", "messages.2.content.0"],
      ["tools.0", "system.0", "messages.2.content.0", "messages.4.content.0"],
    ]);
    for (const body of bodies) expect(body.system).toEqual([{ type: "text", text: system, cache_control: { type: "ephemeral" } }]);
  });

  it("an alias without promptCache sends no cache_control and is never cached", async () => {
    const { turns, bodies } = await converse(ask, "plain", `${systemPrompt(edge)} (plain)`, `plain-${tag}`);
    expect(turns.map((t) => t.cached)).toEqual([0, 0, 0]);
    expect(turns.map((t) => t.written)).toEqual([0, 0, 0]);
    for (const body of bodies) expect(JSON.stringify(body)).not.toContain("cache_control");
  });
});
