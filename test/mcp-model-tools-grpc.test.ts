import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { collect, textOf, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * `mcp_servers` on StreamChat over gRPC (connect-es, h2): the gateway runs
 * the model's call of a registered server's tool against a real MCP server
 * and streams the contract's typed GatewayToolsListed, GatewayToolCall and
 * GatewayToolResult deltas before the model's answer.
 */
const GRANTED = "sk-granted-0123456789";

let mcp: McpTestServer;
let h: Harness;
beforeAll(async () => {
  mcp = await startMcpTestServer();
  h = await startHarness({
    env: { GRANTED },
    auth: { keys: [{ name: "granted", keyEnv: "GRANTED", mcp: { servers: ["tools"] } }] },
    mcp: { servers: { tools: { http: { url: mcp.url } } } },
  });
});
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

const client = () => createClient(ChatService, createGrpcTransport({ baseUrl: h.url }));
const headers = { authorization: `Bearer ${GRANTED}` };

describe("gRPC: gateway-run MCP tools", () => {
  it("streams typed listing, call and result deltas, then the model's answer to the result", async () => {
    const before = mcp.calls("add").length;
    const messages = await collect(client().streamChat(userRequest("sim", '#sim call=tools_add args={"a":1,"b":2}', { mcpServers: [{ server: "tools", allowedTools: ["add"] }] }), { headers }));
    const cases = messages.map((m) => m.delta.case);
    expect(cases[0]).toBe("start");
    expect(cases.at(-1)).toBe("finish");
    const listed = messages.find((m) => m.delta.case === "gatewayToolsListed")?.delta;
    if (listed?.case !== "gatewayToolsListed") throw new Error("no listing");
    expect(listed.value.server).toBe("tools");
    expect(listed.value.tools.map((t) => t.name)).toEqual(["add"]);
    expect(JSON.parse(listed.value.tools[0]!.inputSchemaJson)).toMatchObject({ type: "object" });
    const call = messages.find((m) => m.delta.case === "gatewayToolCall")?.delta;
    const result = messages.find((m) => m.delta.case === "gatewayToolResult")?.delta;
    if (call?.case !== "gatewayToolCall" || result?.case !== "gatewayToolResult") throw new Error("no call or result");
    expect(call.value).toMatchObject({ server: "tools", tool: "add", arguments: '{"a":1,"b":2}' });
    expect(result.value).toMatchObject({ id: call.value.id, output: "3", isError: false, errorCode: 0 });
    expect(cases.indexOf("gatewayToolResult")).toBeLessThan(cases.lastIndexOf("text"));
    // The gateway answered the call: no tool_call delta reached the client, and the model's answer quotes the result.
    expect(cases).not.toContain("toolCall");
    expect(textOf(messages)).toContain("tools_add returned: 3");
    expect(mcp.calls("add")).toHaveLength(before + 1);
  });

  it("refuses a server the gateway does not have with INVALID_ARGUMENT naming it", async () => {
    const error = await collect(client().streamChat(userRequest("sim", "hi", { mcpServers: [{ server: "elsewhere" }] }), { headers })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain('mcp_servers[0].server: MCP server "elsewhere" is not registered');
  });
});
