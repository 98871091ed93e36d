import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { type GatewayToolsDeps, gatewayToolLoop, MAX_GATEWAY_TOOL_ROUNDS } from "../../src/call/gateway-tool-loop.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError } from "../../src/core/errors.js";
import { type ExposedTool, MCP_ERRORS, McpError, type McpToolbox } from "../../src/mcp/contract.js";

/**
 * The model-call tool loop (call/gateway-tool-loop.ts) against a scripted
 * model and a toolbox in memory: what it feeds back, what it shows, and
 * where it stops. The wire tests (test/mcp-model-tools-*.test.ts) run it
 * end to end.
 */
const ECHO: ExposedTool = { name: "tools_echo", server: "tools", upstreamName: "echo", definition: { name: "tools_echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } } };

function toolbox(call: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>): McpToolbox {
  const none = async (): Promise<never> => {
    throw new Error("not used");
  };
  return { listTools: async () => [ECHO], callTool: (_c, name, args) => call(name, args), listPrompts: none, getPrompt: none, listResources: none, readResource: none };
}

const REQUEST: ChatRequest = { model: "m", messages: [{ role: "user", content: [{ type: "text", text: "q" }] }], tools: [], sampling: { stop: [] }, metadata: { labels: {} } };
const USE = { servers: [{ server: "tools", field: "tools[0].server_label" }], via: "responses" as const };
const usage = { inputTokens: 10, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 };

/** A model turn: start, the given content, usage, finish (tool_calls when it calls). */
function turn(content: readonly Delta[]): Delta[] {
  const calls = content.some((d) => d.type === "tool_call");
  return [{ type: "start", responseId: "resp_1", provider: "p", model: "m" }, ...content, { type: "usage", ...usage }, { type: "finish", reason: calls ? "tool_calls" : "stop" }];
}

const callEcho = (id: string, args = '{"text":"hi"}'): Delta => ({ type: "tool_call", index: 0, id, name: "tools_echo", arguments: args });

async function run(served: GatewayToolsDeps, model: (request: ChatRequest, n: number) => Delta[]) {
  const requests: ChatRequest[] = [];
  const out: Delta[] = [];
  const loop = gatewayToolLoop(REQUEST, {
    use: USE,
    served,
    principal: undefined,
    signal: new AbortController().signal,
    runTurn: async function* (request, n) {
      requests.push(request);
      yield* model(request, n);
    },
  });
  for await (const d of loop) out.push(d);
  return { requests, out };
}

const deps = (box: McpToolbox, maxRounds?: number): GatewayToolsDeps => ({ toolbox: () => box, servers: () => ["tools"], caller: () => ({}), ...(maxRounds === undefined ? {} : { maxRounds }) });

describe("the gateway's tool loop", () => {
  it("declares the listed tools, feeds the result back, and shows one start, the events, summed usage and the last finish", async () => {
    const box = toolbox(async (_n, args) => ({ content: [{ type: "text", text: `got ${String(args.text)}` }] }));
    const { requests, out } = await run(deps(box), (_r, n) => (n === 0 ? turn([callEcho("c1")]) : turn([{ type: "text", text: "done" }])));
    expect(requests[0]!.tools.map((t) => t.name)).toEqual(["tools_echo"]);
    expect(requests[1]!.messages.slice(-2)).toEqual([
      { role: "assistant", content: [], toolCalls: [{ id: "c1", name: "tools_echo", arguments: '{"text":"hi"}' }] },
      { role: "tool", toolCallId: "c1", name: "tools_echo", content: [{ type: "text", text: "got hi" }] },
    ]);
    expect(out.map((d) => (d.type === "gateway_tool" ? `gateway_tool:${d.event.kind}` : d.type))).toEqual(["start", "gateway_tool:list", "gateway_tool:call", "gateway_tool:result", "text", "usage", "finish"]);
    expect(out.find((d) => d.type === "usage")).toMatchObject({ inputTokens: 20, outputTokens: 4 });
    expect(out.at(-1)).toEqual({ type: "finish", reason: "stop" });
  });

  it("tells the model of a refused call as an error result, with the gateway's code for the caller", async () => {
    const box = toolbox(async () => {
      throw new McpError(MCP_ERRORS.refused, "budget exhausted", { status: 402 });
    });
    const { requests, out } = await run(deps(box), (_r, n) => (n === 0 ? turn([callEcho("c1")]) : turn([{ type: "text", text: "sorry" }])));
    expect(requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: [{ type: "text", text: "error: budget exhausted" }] });
    expect(out.find((d) => d.type === "gateway_tool" && d.event.kind === "result")).toMatchObject({ event: { isError: true, failure: { code: MCP_ERRORS.refused, message: "budget exhausted" } } });
  });

  it("stops calling after maxRounds: the last turn is asked with tool choice none", async () => {
    let calls = 0;
    const box = toolbox(async () => {
      calls++;
      return { content: [{ type: "text", text: "again" }] };
    });
    const { requests } = await run(deps(box, 2), (r, n) => (r.toolChoice?.type === "none" ? turn([{ type: "text", text: "final" }]) : turn([callEcho(`c${n}`)])));
    expect(calls).toBe(2);
    expect(requests).toHaveLength(3);
    expect(requests[2]!.toolChoice).toEqual({ type: "none" });
    expect(MAX_GATEWAY_TOOL_ROUNDS).toBeGreaterThan(0);
  });

  it("passes the caller's own tool calls through and ends there", async () => {
    const box = toolbox(async () => ({ content: [] }));
    const { requests, out } = await run(deps(box), () => turn([{ type: "tool_call", index: 0, id: "own", name: "get_weather", arguments: "{}" }]));
    expect(requests).toHaveLength(1);
    expect(out.filter((d) => d.type === "tool_call")).toHaveLength(1);
    expect(out.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
  });

  it("refuses a server that is not registered, and every server where no toolbox is served, before any model call", async () => {
    const box = toolbox(async () => ({ content: [] }));
    for (const served of [{ ...deps(box), servers: () => ["other"] }, undefined]) {
      const error = await run(served as GatewayToolsDeps, () => turn([])).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ code: "invalid_request", field: "tools[0].server_label" });
    }
  });
});
