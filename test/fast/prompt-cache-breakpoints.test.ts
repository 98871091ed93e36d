import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/config.js";
import type { ChatMessage, ChatRequest } from "../../src/core/chat-request.js";
import { anthropicRequestBody, buildAnthropicRequest } from "../../src/providers/anthropic/anthropic-request.js";
import { MAX_CACHE_BREAKPOINTS, withCacheBreakpoints } from "../../src/providers/anthropic/cache-breakpoints.js";
import { createRandom } from "../../src/simulator/random.js";

/**
 * Where `promptCache: auto` puts Anthropic's cache_control breakpoints:
 * the last tool, the last system block, the message the latest answer
 * replied to, the last message; never more than four, never on a block
 * Anthropic refuses them on.
 */

type Json = Record<string, unknown>;

const text = (t: string) => ({ type: "text" as const, text: t });
const user = (t: string): ChatMessage => ({ role: "user", content: [text(t)] });
const assistant = (t: string): ChatMessage => ({ role: "assistant", content: [text(t)] });
const system = (t: string): ChatMessage => ({ role: "system", content: [text(t)] });
const TOOL = { name: "lookup", description: "Look things up", parameters: { type: "object", properties: { q: { type: "string" } } } };

const request = (messages: ChatMessage[], tools = [TOOL]): ChatRequest => ({ model: "alias", messages, tools, sampling: { stop: [] }, metadata: { labels: {} } });

const bodyOf = (r: ChatRequest) => withCacheBreakpoints(anthropicRequestBody(r, "claude-sonnet-4-5"));

/** Every place a breakpoint sits, in Anthropic's cache order, as a path: `tools.0`, `system.0`, `messages.2.content.1`. */
function breakpoints(body: Json): string[] {
  const out: string[] = [];
  const visit = (value: unknown, path: string) => {
    if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}.${i}`));
    else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        if (k === "cache_control") out.push(path.slice(1));
        else visit(v, `${path}.${k}`);
      }
    }
  };
  visit({ tools: body.tools, system: body.system, messages: body.messages, rest: { ...body, tools: [], system: [], messages: [] } }, "");
  return out;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

const SHAPES: Array<[string, ChatRequest, string[]]> = [
  ["one user message, no system, no tools", request([user("hi")], []), ["messages.0.content.0"]],
  ["system and tools, one turn", request([system("Be brief."), user("hi")]), ["tools.0", "system.0", "messages.0.content.0"]],
  ["system only", request([system("Be brief."), user("hi")], []), ["system.0", "messages.0.content.0"]],
  ["many turns: the message the last answer replied to, and the last", request([system("S"), user("u1"), assistant("a1"), user("u2"), assistant("a2"), user("u3")]), ["tools.0", "system.0", "messages.2.content.0", "messages.4.content.0"]],
  ["two turns, no system", request([user("u1"), assistant("a1"), user("u2")], []), ["messages.0.content.0", "messages.2.content.0"]],
  [
    "parallel tool results: the question before the calls, and the last result",
    request([
      system("S"),
      user("weather?"),
      {
        role: "assistant",
        content: [],
        toolCalls: [
          { id: "c1", name: "lookup", arguments: "{}" },
          { id: "c2", name: "lookup", arguments: "{}" },
        ],
      },
      { role: "tool", toolCallId: "c1", content: [text("21")] },
      { role: "tool", toolCallId: "c2", content: [text("23")] },
    ]),
    ["tools.0", "system.0", "messages.0.content.0", "messages.3.content.0"],
  ],
  [
    "the last block of a message, an image after the text",
    request([user("u1"), assistant("a1"), { role: "user", content: [text("see"), { type: "image_url", url: "https://example.test/a.png" }] }], []),
    ["messages.0.content.0", "messages.2.content.1"],
  ],
  [
    "a thinking block never carries one: the text before it does",
    request(
      [user("u1"), { role: "assistant", content: [{ type: "reasoning", text: "hmm", signature: "sig" }, text("a1")] }, user("u2"), { role: "assistant", content: [text("prefill"), { type: "reasoning", text: "more", signature: "sig2" }] }],
      [],
    ),
    ["messages.0.content.0", "messages.3.content.0"],
  ],
  ["an empty last message gets none", request([user("u1"), assistant("a1"), { role: "user", content: [text("")] }], []), ["messages.0.content.0"]],
];

describe("promptCache: auto on an Anthropic body", () => {
  it.each(SHAPES)("%s", (_name, r, expected) => {
    const body = bodyOf(r);
    expect(breakpoints(body)).toEqual(expected);
    for (const path of expected) {
      const block = path.split(".").reduce<unknown>((v, k) => (v as Json)[k], body) as Json;
      expect(block.cache_control).toEqual({ type: "ephemeral" });
    }
  });

  it("sends the system prompt as one text block when it marks it", () => {
    expect(bodyOf(request([system("Be brief."), system("Be kind."), user("hi")], [])).system).toEqual([{ type: "text", text: "Be brief.\n\nBe kind.", cache_control: { type: "ephemeral" } }]);
  });

  it("never adds more than four, whatever the conversation (seeded shapes)", () => {
    const next = createRandom(29);
    for (let n = 0; n < 500; n++) {
      const messages: ChatMessage[] = [];
      if (next() < 0.5) messages.push(system("S"));
      const turns = 1 + Math.floor(next() * 30);
      for (let t = 0; t < turns; t++) {
        messages.push(next() < 0.1 ? { role: "user", content: [text("")] } : user(`u${t}`));
        const last = t === turns - 1;
        if (last && next() < 0.7) break;
        if (next() < 0.4) {
          const calls = 1 + Math.floor(next() * 4);
          messages.push({ role: "assistant", content: [], toolCalls: Array.from({ length: calls }, (_, i) => ({ id: `c${t}-${i}`, name: "lookup", arguments: "{}" })) });
          for (let i = 0; i < calls; i++) messages.push({ role: "tool", toolCallId: `c${t}-${i}`, content: [text(String(i))] });
        } else messages.push(next() < 0.2 ? { role: "assistant", content: [{ type: "reasoning", text: "r", signature: "s" }] } : assistant(`a${t}`));
      }
      const body = bodyOf(request(messages, next() < 0.5 ? [TOOL] : []));
      const found = breakpoints(body);
      expect(found.length).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
      for (const path of found) {
        const block = path.split(".").reduce<unknown>((v, k) => (v as Json)[k], body) as Json;
        expect(block.type === "thinking" || (block.type === "text" && block.text === "")).toBe(false);
      }
    }
  });

  it("leaves the request's own objects alone, so a retry builds the same body", () => {
    const r = request([system("S"), user("u1"), assistant("a1"), user("u2")]);
    const plain = deepFreeze(anthropicRequestBody(r, "claude-sonnet-4-5"));
    const copy = structuredClone(plain);
    const first = withCacheBreakpoints(plain);
    expect(plain).toEqual(copy);
    expect(withCacheBreakpoints(plain)).toEqual(first);
  });

  it("keeps the caller's own breakpoints first and adds its own only where none is, up to four", () => {
    const own = [{ type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } }];
    const body = bodyOf({ ...request([user("u1"), assistant("a1"), user("u2")]), providerOptions: { anthropic: { system: own } } });
    expect(breakpoints(body)).toEqual(["tools.0", "system.0", "messages.0.content.0", "messages.2.content.0"]);
    expect((body.system as Json[])[0]!.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
  });

  it("adds none when the caller marked four already", () => {
    const mark = { cache: {} };
    const r: ChatRequest = {
      ...request([
        {
          role: "system",
          content: [
            { ...text("S1"), ...mark },
            { ...text("S2"), ...mark },
          ],
        },
        { role: "user", content: [{ ...text("u1"), ...mark }] },
        assistant("a1"),
        { role: "user", content: [{ ...text("u2"), ...mark }] },
      ]),
    };
    expect(breakpoints(bodyOf(r))).toEqual(["system.0", "system.1", "messages.0.content.0", "messages.2.content.0"]);
  });

  it("keeps the last four of more than four caller breakpoints, with or without promptCache: auto", () => {
    const mark = { cache: {} };
    const r: ChatRequest = {
      ...request([
        {
          role: "system",
          content: [
            { ...text("S1"), ...mark },
            { ...text("S2"), ...mark },
            { ...text("S3"), ...mark },
          ],
        },
        { role: "user", content: [{ ...text("u1"), ...mark }] },
        assistant("a1"),
        { role: "user", content: [{ ...text("u2"), ...mark }] },
      ]),
      tools: [{ ...TOOL, ...mark }],
    };
    const expected = ["system.1", "system.2", "messages.0.content.0", "messages.2.content.0"];
    expect(breakpoints(bodyOf(r))).toEqual(expected);
    const config = resolveConfig({ providers: { p: { kind: "anthropic", baseUrl: "https://example.test/v1" } }, models: { m: { provider: "p", model: "claude-x" } } }, {});
    const sent = JSON.parse(buildAnthropicRequest(r, { provider: config.providers.get("p")!, model: "claude-x" }).body as string) as Json;
    expect(breakpoints(sent)).toEqual(expected);
  });

  it("changes nothing without promptCache: auto, and marks with it", () => {
    const config = resolveConfig({ providers: { p: { kind: "anthropic", baseUrl: "https://example.test/v1" } }, models: { m: { provider: "p", model: "claude-x" } } }, {});
    const target = { provider: config.providers.get("p")!, model: "claude-x" };
    const r = request([system("S"), user("u1"), assistant("a1"), user("u2")]);
    const off = buildAnthropicRequest(r, target).body as string;
    expect(off).toBe(JSON.stringify(anthropicRequestBody(r, "claude-x")));
    expect(off).not.toContain("cache_control");
    const auto = JSON.parse(buildAnthropicRequest(r, { ...target, promptCache: "auto" }).body as string) as Json;
    expect(breakpoints(auto)).toEqual(["tools.0", "system.0", "messages.0.content.0", "messages.2.content.0"]);
  });
});
