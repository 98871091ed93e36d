import { BadRequestError } from "openai";
import type { ResponseInputItem, ResponseStreamEvent, Tool } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { responsesClient } from "./helpers/answer-via-responses.js";
import { baseUrlFor, FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

/**
 * Tools beyond functions through the Responses edge, with the openai SDK over
 * real sockets, on every upstream wire: a freeform (custom) tool, a namespace
 * tool and a hosted web search declared together, as Codex declares them.
 */
type Wire = "openai" | "anthropic" | "gemini" | "openai-responses";
const WIRES: readonly Wire[] = ["openai", "anthropic", "gemini", "openai-responses"];

/** Codex's shapes: apply_patch is freeform with a grammar, multi_agent_v1 a namespace, web_search hosted. */
const TOOLS: Tool[] = [
  { type: "custom", name: "apply_patch", description: "Edit files with a patch", format: { type: "grammar", syntax: "lark", definition: "start: /(.|\\n)+/" } },
  {
    type: "namespace",
    name: "multi_agent_v1",
    description: "Sub-agents",
    tools: [{ type: "function", name: "spawn", description: "Start an agent", parameters: { type: "object", properties: { task: { type: "string" } } }, strict: false }],
  },
  { type: "web_search" },
];

/** What the simulator is told to call (src/simulator/README.md, "The tool loop"): a patch through the freeform tool, a task through the namespace. */
const PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch";
const SPAWN_ARGS = JSON.stringify({ task: "lint" });

const harnesses = new Map<Wire, Harness>();
beforeAll(async () => {
  for (const kind of WIRES) {
    harnesses.set(
      kind,
      await startHarness({
        routing: (sim) => {
          const provider = { kind, baseUrl: baseUrlFor(sim, kind), breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS };
          return {
            providers: { simulator: provider },
            models: { sim: { provider: "simulator", model: "sim-1" }, strict: { provider: "simulator", model: "sim-1", hostedTools: "refuse" } },
          };
        },
      }),
    );
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

/** The body the simulator received for the request tagged `tag`. */
async function upstreamBody(h: Harness, tag: string): Promise<Record<string, unknown>> {
  const record = await h.sim.records.waitFor((r) => r.tag === tag, 30_000);
  return record.body as Record<string, unknown>;
}

/** The tool declarations an upstream body carries, in its wire's words, flattened to one list. */
function upstreamTools(kind: Wire, body: Record<string, unknown>): Array<Record<string, unknown>> {
  const tools = (body.tools ?? []) as Array<Record<string, unknown>>;
  if (kind === "gemini") return tools.flatMap((t) => (Array.isArray(t.functionDeclarations) ? (t.functionDeclarations as Array<Record<string, unknown>>) : [t]));
  return tools.map((t) => (kind === "openai" && t.function ? (t.function as Record<string, unknown>) : t));
}

describe("custom, namespace and hosted tools on every upstream wire (Responses edge)", () => {
  for (const kind of WIRES) {
    it(`${kind}: streams a custom_tool_call and a namespaced function_call, and offers web_search where it can`, async () => {
      const h = harnesses.get(kind)!;
      const client = responsesClient(h.url);
      const tag = `tools-${kind}`;
      const { data: stream, response } = await client.responses
        .create({ model: "sim", input: `#sim tokens=2 seed=7 tag=${tag}\n#sim call=apply_patch input=${JSON.stringify(PATCH)} call=multi_agent_v1__spawn args=${SPAWN_ARGS}`, tools: TOOLS, stream: true })
        .withResponse();
      const events: ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);

      // What the target cannot run is named, never silently lost: only OpenAI's chat wire has no web search.
      const dropped = response.headers.get("sluice-dropped-params");
      if (kind === "openai") expect(dropped).toBe("tools.web_search");
      else expect(dropped).toBeNull();

      const deltas = events.filter((e) => e.type === "response.custom_tool_call_input.delta");
      expect(deltas.length).toBeGreaterThan(0);
      expect(deltas.map((e) => (e.type === "response.custom_tool_call_input.delta" ? e.delta : "")).join("")).toBe(PATCH);
      expect(events.find((e) => e.type === "response.custom_tool_call_input.done")).toMatchObject({ input: PATCH });
      const completed = events.at(-1)!;
      expect(completed.type).toBe("response.completed");
      // Gemini's call signatures ride in reasoning items of their own (encrypted-reasoning.ts): not what is checked here.
      const output = (completed.type === "response.completed" ? completed.response.output : []).filter((item) => item.type !== "reasoning");
      expect(output).toEqual([
        expect.objectContaining({ type: "message" }),
        expect.objectContaining({ type: "custom_tool_call", call_id: expect.stringMatching(/^call_sim_/), name: "apply_patch", input: PATCH }),
        expect.objectContaining({ type: "function_call", call_id: expect.stringMatching(/^call_sim_/), name: "spawn", namespace: "multi_agent_v1", arguments: SPAWN_ARGS }),
      ]);

      const body = await upstreamBody(h, tag);
      const sent = upstreamTools(kind, body);
      if (kind === "openai-responses") {
        expect(body).toMatchObject({ stream: true, store: false, include: ["reasoning.encrypted_content"] });
        // A Responses upstream takes every kind of tool as the caller declared it.
        expect(sent).toEqual(TOOLS);
        return;
      }
      expect(sent.find((t) => t.name === "apply_patch")).toMatchObject({ [kind === "anthropic" ? "input_schema" : "parameters"]: { required: ["input"] } });
      expect(sent.some((t) => t.name === "multi_agent_v1__spawn")).toBe(true);
      if (kind === "anthropic") expect(sent).toContainEqual({ type: "web_search_20250305", name: "web_search" });
      if (kind === "gemini") expect(sent).toContainEqual({ googleSearch: {} });
      if (kind === "openai") expect(sent.some((t) => t.type === "web_search" || t.name === "web_search")).toBe(false);
    });

    it(`${kind}: the custom_tool_call round trip: the caller runs it and sends call and output back, as Codex does`, async () => {
      const h = harnesses.get(kind)!;
      const client = responsesClient(h.url);
      const prompt = "#sim tokens=0 tools=2 seed=8";
      const first = await client.responses.create({ model: "sim", input: prompt, tools: TOOLS });
      const patch = first.output.find((item) => item.type === "custom_tool_call");
      const spawn = first.output.find((item) => item.type === "function_call");
      expect(patch).toMatchObject({ name: "apply_patch" });
      expect(spawn).toMatchObject({ name: "spawn", namespace: "multi_agent_v1" });

      const tag = `history-${kind}`;
      const input: ResponseInputItem[] = [
        { role: "user", content: prompt },
        ...(first.output as ResponseInputItem[]),
        { type: "custom_tool_call_output", call_id: patch!.type === "custom_tool_call" ? patch!.call_id : "", output: "Done: a.txt" },
        { type: "function_call_output", call_id: spawn!.type === "function_call" ? spawn!.call_id : "", output: "spawned" },
        { role: "user", content: `#sim tokens=3 seed=9 tag=${tag}` },
      ];
      const second = await client.responses.create({ model: "sim", input, tools: TOOLS });
      expect(second.status).toBe("completed");
      const body = JSON.stringify(await upstreamBody(h, tag));
      // The freeform text travels as the one string argument: inside a JSON text on the chat wire, an object elsewhere.
      const text = patch!.type === "custom_tool_call" ? patch!.input : "";
      const argument = `"input":${JSON.stringify(text)}`;
      expect(body).toContain(kind === "openai" ? JSON.stringify(argument).slice(1, -1) : argument);
      expect(body).toContain("Done: a.txt");
      expect(body).toContain(kind === "openai-responses" ? '"name":"spawn","namespace":"multi_agent_v1"' : "multi_agent_v1__spawn");
      expect(body).toContain("spawned");
    });
  }

  it("carries Codex's prompt_cache_key and safety_identifier to a Responses upstream, as to a chat one", async () => {
    for (const kind of ["openai-responses", "openai"] as const) {
      const h = harnesses.get(kind)!;
      const tag = `carried-${kind}`;
      const { response } = await responsesClient(h.url)
        .responses.create({ model: "sim", input: `#sim tokens=2 tag=${tag}`, prompt_cache_key: "thread-7", safety_identifier: "user-hash-1" })
        .withResponse();
      expect(response.headers.get("sluice-dropped-params")).toBeNull();
      expect(await upstreamBody(h, tag)).toMatchObject({ prompt_cache_key: "thread-7", safety_identifier: "user-hash-1" });
    }
  });

  it("refuses, by name, a hosted tool that tool_choice forces on a target with no equivalent", async () => {
    const client = responsesClient(harnesses.get("openai")!.url);
    const error = await client.responses.create({ model: "sim", input: "q", tools: TOOLS, tool_choice: { type: "web_search" } as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe("tools.web_search");
    expect((error as BadRequestError).message).toContain("tool_choice forces this hosted tool");
  });

  it("forces Anthropic's web search where tool_choice forces web_search on an Anthropic target", async () => {
    const h = harnesses.get("anthropic")!;
    const tag = "forced-anthropic";
    await responsesClient(h.url).responses.create({ model: "sim", input: `#sim tokens=2 tag=${tag}`, tools: TOOLS, tool_choice: { type: "web_search" } as never });
    expect((await upstreamBody(h, tag)).tool_choice).toEqual({ type: "tool", name: "web_search" });
  });

  it("refuses a hosted tool the target cannot run when the alias sets hostedTools: refuse", async () => {
    const client = responsesClient(harnesses.get("openai")!.url);
    const error = await client.responses.create({ model: "strict", input: "q", tools: TOOLS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe("tools.web_search");
    expect((error as BadRequestError).message).toContain("hostedTools: refuse");
    // The same alias on a target that has web search serves the request.
    const served = await responsesClient(harnesses.get("gemini")!.url).responses.create({ model: "strict", input: "#sim tokens=2", tools: TOOLS });
    expect(served.status).toBe("completed");
  });

  it("drops, by name, a hosted tool's history item the target cannot take back", async () => {
    const h = harnesses.get("gemini")!;
    const input: ResponseInputItem[] = [
      { role: "user", content: "find it" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "sluice" } },
      { role: "assistant", content: "found", type: "message" } as ResponseInputItem,
      { role: "user", content: "#sim tokens=2" },
    ];
    const { response } = await responsesClient(h.url).responses.create({ model: "sim", input, tools: TOOLS }).withResponse();
    expect(response.headers.get("sluice-dropped-params")).toBe("input[1]");
  });
});

describe("Anthropic server tools declared on the Messages edge", () => {
  const request = (model: string, tag: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      model,
      max_tokens: 64,
      messages: [{ role: "user", content: `#sim tokens=2 tag=${tag}` }],
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 2 }],
      ...extra,
    });
  const post = (h: Harness, body: string) => fetch(`${h.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "not-used", "anthropic-version": "2023-06-01" }, body });

  it("go to an Anthropic target as declared, to a Responses target as web_search, and are dropped by name on the chat wire", async () => {
    for (const kind of WIRES) {
      const h = harnesses.get(kind)!;
      const tag = `server-${kind}`;
      const res = await post(h, request("sim", tag));
      expect(res.status, kind).toBe(200);
      await res.json();
      const sent = upstreamTools(kind, await upstreamBody(h, tag));
      if (kind === "anthropic") expect(sent).toEqual([{ type: "web_search_20250305", name: "web_search", max_uses: 2 }]);
      if (kind === "openai-responses") expect(sent).toEqual([{ type: "web_search" }]);
      if (kind === "gemini") expect(sent).toEqual([{ googleSearch: {} }]);
      if (kind === "openai") {
        expect(sent).toEqual([]);
        expect(res.headers.get("sluice-dropped-params")).toBe("tools.web_search_20250305");
      }
    }
  });

  it("a server tool's blocks in an earlier turn go back to an Anthropic target, and are dropped by name elsewhere", async () => {
    const history = (tag: string) =>
      JSON.stringify({
        model: "sim",
        max_tokens: 64,
        messages: [
          { role: "user", content: "find it" },
          {
            role: "assistant",
            content: [
              { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "sluice" } },
              { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", url: "https://x.test", title: "X", encrypted_content: "e" }] },
              { type: "text", text: "found it" },
            ],
          },
          { role: "user", content: `#sim tokens=2 tag=${tag}` },
        ],
        tools: [{ type: "web_search_20250305", name: "web_search" }],
      });
    const anthropic = harnesses.get("anthropic")!;
    const kept = await post(anthropic, history("server-history-anthropic"));
    expect(kept.status).toBe(200);
    await kept.json();
    const body = (await upstreamBody(anthropic, "server-history-anthropic")) as { messages: Array<{ content: Array<{ type: string }> }> };
    expect(body.messages[1]!.content.map((b) => b.type)).toEqual(["server_tool_use", "web_search_tool_result", "text"]);

    const gemini = harnesses.get("gemini")!;
    const dropped = await post(gemini, history("server-history-gemini"));
    expect(dropped.status).toBe(200);
    await dropped.json();
    expect(dropped.headers.get("sluice-dropped-params")).toBe("messages[1].content[0],messages[1].content[1]");
  });

  it("a tool_choice that forces the server tool is refused by name where no target runs it", async () => {
    const res = await post(harnesses.get("openai")!, request("sim", "server-forced", { tool_choice: { type: "tool", name: "web_search" } }));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain("tools.web_search_20250305");
  });
});
