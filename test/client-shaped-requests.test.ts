import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAUDE_CODE_HEADERS, claudeCodeBody } from "./fixtures/clients/claude-code-request.js";
import { CODEX_HEADERS, codexBody } from "./fixtures/clients/codex-request.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue 44 §1: the requests Claude Code and Codex actually send are served,
 * never refused. What changes no answer is carried to a target that takes
 * it (an Anthropic target receives the cache breakpoints and betas) or
 * dropped and named in `sluice-dropped-params`; what would change the
 * answer is still refused by name.
 */

type Json = Record<string, unknown>;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        claude: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
        openai: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
      },
      models: {
        "on-anthropic": { provider: "claude", model: "sim-1?seed=5&tokens=3" },
        "on-openai": { provider: "openai", model: "sim-1?seed=5&tokens=3" },
        "no-schema": { provider: "openai", model: "sim-1?seed=5&tokens=3&structured=0" },
      },
    }),
  });
});
afterAll(() => h.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  request(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "unused", ...headers }, body: JSON.stringify(body) });
const names = (header: string | string[] | undefined | null): string[] => (typeof header === "string" ? header.split(",").sort() : []);
const upstream = async (tag: string): Promise<Json> => (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as Json;

/** Every `cache_control` in an upstream Messages body, as a path (`tools.13`, `system.1`, `messages.0.content.1`). */
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
  visit({ tools: body.tools, system: body.system, messages: body.messages }, "");
  return out;
}

const UNKNOWN_BETAS = ["anthropic-beta=mid-conversation-tool-changes-2026-07-01", "anthropic-beta=thinking-token-count-2026-05-13"];

describe("Claude Code's first request (POST /v1/messages?beta=true)", () => {
  it("to an Anthropic target: 200, cache marks (the last four), deferred tools, betas, context management and display arrive upstream", async () => {
    const res = await post("/v1/messages?beta=true", claudeCodeBody("on-anthropic", "#sim tag=cc-anthropic reasoning=2\nSay hello"), CLAUDE_CODE_HEADERS);
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(text).toContain("event: message_stop");
    expect(names(res.headers["sluice-dropped-params"])).toEqual(UNKNOWN_BETAS);
    const record = await h.sim.records.waitFor((r) => r.tag === "cc-anthropic", 30_000);
    expect(record.betas).toBe("claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20,effort-2025-11-24");
    const body = record.body as Json;
    // Five caller marks; Anthropic takes four: the earliest (the last tool's) goes.
    expect(breakpoints(body)).toEqual(["system.1", "system.2", "system.3", "messages.0.content.1"]);
    expect((body.system as Json[])[2]!.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    const tools = body.tools as Json[];
    expect(tools).toHaveLength(14);
    expect(tools.filter((t) => t.defer_loading === true).map((t) => t.name)).toEqual(["NotebookEdit", "WebFetch", "TodoWrite", "BashOutput", "KillShell", "SlashCommand"].slice(2));
    expect(tools.filter((t) => t.eager_input_streaming === true).map((t) => t.name)).toEqual(["Edit", "Write"]);
    expect(body.context_management).toEqual({ edits: [{ type: "clear_thinking_20251015", keep: "all" }] });
    expect(body.thinking).toMatchObject({ display: "omitted" });
    expect(body.metadata).toEqual({ user_id: expect.stringMatching(/^user_/) });
  });

  it("to an OpenAI target: 200, and everything only Anthropic takes is named in the header, none of it sent", async () => {
    // The OpenAI wire joins a message's text blocks: the #sim line starts a line of its own.
    const res = await post("/v1/messages?beta=true", claudeCodeBody("on-openai", "\n#sim tag=cc-openai\nSay hello"), CLAUDE_CODE_HEADERS);
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(text).toContain("event: message_stop");
    expect(names(res.headers["sluice-dropped-params"])).toEqual(["anthropic-beta", "cache_control", "context_management", "tools[].defer_loading", "tools[].eager_input_streaming", ...UNKNOWN_BETAS].sort());
    const body = await upstream("cc-openai");
    const sent = JSON.stringify(body);
    for (const field of ["cache_control", "defer_loading", "eager_input_streaming", "context_management", "display"]) expect(sent).not.toContain(field);
    // The system-role message stays a system message where it stood; the effort is the canonical one.
    expect((body.messages as Json[]).filter((m) => m.role === "system")).toHaveLength(4);
    expect(body.reasoning_effort).toBe("high");
  });

  it("through the official SDK (beta surface, not streamed): the same request is a message", async () => {
    const client = new Anthropic({ baseURL: h.url, apiKey: "unused", maxRetries: 0 });
    // Not streamed, the SDK refuses Claude Code's 32,000 max_tokens itself (it would take too long): a smaller one.
    const { stream: _stream, ...body }: Json = { ...claudeCodeBody("on-anthropic", "#sim tokens=3\nSay hello"), max_tokens: 4096 };
    const { data, response } = await client.beta.messages
      .create(body as unknown as Anthropic.Beta.MessageCreateParamsNonStreaming, { headers: { "x-claude-code-session-id": CLAUDE_CODE_HEADERS["x-claude-code-session-id"], "anthropic-beta": CLAUDE_CODE_HEADERS["anthropic-beta"] } })
      .withResponse();
    expect(response.status).toBe(200);
    expect(data.content.some((b) => b.type === "text" && b.text.length > 0)).toBe(true);
    expect(names(response.headers.get("sluice-dropped-params"))).toEqual(UNKNOWN_BETAS);
  });

  it("a beta value that is no beta name is dropped by the header's name alone, never echoed into a header", async () => {
    const body = { model: "on-anthropic", max_tokens: 64, messages: [{ role: "user", content: "#sim tokens=2\nhi" }] };
    const res = await post("/v1/messages", body, { "anthropic-beta": `effort-2025-11-24, ${"x".repeat(100)}, a b` });
    expect(res.statusCode).toBe(200);
    expect(names(res.headers["sluice-dropped-params"])).toEqual(["anthropic-beta"]);
    await res.body.dump();
  });

  it("its count_tokens call (the same prompt without generation settings) is counted", async () => {
    const { max_tokens: _max, stream: _stream, metadata: _metadata, ...prompt }: Json = claudeCodeBody("on-anthropic", "Say hello");
    const res = await post("/v1/messages/count_tokens?beta=true", prompt, CLAUDE_CODE_HEADERS);
    const body = (await res.body.json()) as { input_tokens: number };
    expect(res.statusCode, JSON.stringify(body)).toBe(200);
    expect(body.input_tokens).toBeGreaterThan(100);
  });

  it("the AI SDK's shape (cache_control on system[0], eager_input_streaming on every tool) is served", async () => {
    const res = await post("/v1/messages", {
      model: "on-openai",
      max_tokens: 256,
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      tools: [{ name: "weather", description: "Weather", input_schema: { type: "object", properties: {} }, eager_input_streaming: true }],
      messages: [{ role: "user", content: [{ type: "text", text: "#sim tokens=2\nhi", cache_control: { type: "ephemeral" } }] }],
    });
    expect(res.statusCode).toBe(200);
    expect(names(res.headers["sluice-dropped-params"])).toEqual(["cache_control", "tools[].eager_input_streaming"]);
    await res.body.dump();
  });
});

describe("Codex's first request (POST /v1/responses)", () => {
  const sdk = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });

  it("to an OpenAI target, streamed through the openai SDK: completes; client_metadata named, prompt_cache_key forwarded", async () => {
    const { data, response } = await sdk()
      .responses.create(codexBody("on-openai", "#sim tag=codex-openai\nSay hello") as unknown as OpenAI.Responses.ResponseCreateParamsStreaming, { headers: CODEX_HEADERS })
      .withResponse();
    const types: string[] = [];
    for await (const event of data) types.push(event.type);
    expect(response.status).toBe(200);
    expect(types.at(-1)).toBe("response.completed");
    expect(names(response.headers.get("sluice-dropped-params"))).toEqual(["client_metadata"]);
    const body = await upstream("codex-openai");
    expect(body.prompt_cache_key).toBe("0199a1f2-7c3e-7d10-b6a4-3f5e2d1c0b9a");
    expect(body).not.toHaveProperty("client_metadata");
    expect((body.tools as Json[]).map((t) => (t.function as Json).name)).toHaveLength(7);
    expect((body.messages as Json[])[1]).toMatchObject({ role: "system" });
  });

  it("to an Anthropic target, raw: 200; prompt_cache_key and client_metadata named", async () => {
    const res = await post("/v1/responses", codexBody("on-anthropic", "#sim tag=codex-anthropic\nSay hello"), CODEX_HEADERS);
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(text).toContain("event: response.completed");
    expect(names(res.headers["sluice-dropped-params"])).toEqual(["client_metadata", "prompt_cache_key"]);
    expect(await upstream("codex-anthropic")).not.toHaveProperty("prompt_cache_key");
  });
});

describe("what would change the answer is still refused, by name", () => {
  const message = async (res: Awaited<ReturnType<typeof post>>): Promise<string> => {
    const body = (await res.body.json()) as { error: { message: string } };
    return body.error.message;
  };

  it("Messages: tool_choice forcing a tool that is not declared", async () => {
    const res = await post("/v1/messages", { model: "on-anthropic", max_tokens: 64, tools: [], tool_choice: { type: "tool", name: "Bash" }, messages: [{ role: "user", content: "hi" }] });
    expect(res.statusCode).toBe(400);
    expect(await message(res)).toMatch(/^tool_choice\.name: no tool named "Bash"/);
  });

  it("Responses: tool_choice forcing a function that is not declared", async () => {
    const res = await post("/v1/responses", { ...codexBody("on-openai", "hi"), tool_choice: { type: "function", name: "apply_patch" } });
    expect(res.statusCode).toBe(400);
    expect(await message(res)).toMatch(/apply_patch/);
  });

  it("Chat Completions: n > 1", async () => {
    const res = await post("/v1/chat/completions", { model: "on-openai", n: 2, messages: [{ role: "user", content: "hi" }] });
    expect(res.statusCode).toBe(400);
    expect(await message(res)).toMatch(/^n: /);
  });

  it("Chat Completions: logprobs where the target returns none", async () => {
    const res = await post("/v1/chat/completions", { model: "on-anthropic", logprobs: true, messages: [{ role: "user", content: "hi" }] });
    expect(res.statusCode).toBe(400);
    expect(await message(res)).toMatch(/^logprobs: not supported by provider claude/);
  });

  it("Messages: a JSON schema (output_config.format) no target can enforce", async () => {
    const res = await post("/v1/messages", {
      model: "no-schema",
      max_tokens: 64,
      output_config: { format: { type: "json_schema", schema: { type: "object", properties: { a: { type: "string" } } } } },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.statusCode).toBe(400);
    expect(await message(res)).toMatch(/structured outputs|output_config\.format|response_format/);
  });
});
