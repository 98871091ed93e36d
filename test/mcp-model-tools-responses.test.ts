import { BadRequestError } from "openai";
import type { ResponseInputItem, ResponseStreamEvent, Tool } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { responsesClient } from "./helpers/answer-via-responses.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * `{"type": "mcp"}` tools on the Responses edge, with the openai SDK over
 * real sockets: the gateway lists the key's granted tools of a registered
 * server, declares them to the model (the simulator, told by `#sim call=`
 * to call one), runs the call against a real MCP server, feeds the result
 * back, and streams OpenAI's own `mcp_list_tools` / `mcp_call` items.
 */
const GRANTED = "sk-granted-0123456789";
const NARROW = "sk-narrow-0123456789";

let mcp: McpTestServer;
let h: Harness;
beforeAll(async () => {
  mcp = await startMcpTestServer();
  h = await startHarness({
    env: { GRANTED, NARROW },
    auth: {
      keys: [
        { name: "granted", keyEnv: "GRANTED", mcp: { servers: ["tools"] } },
        { name: "narrow", keyEnv: "NARROW", mcp: { servers: ["tools"], tools: { allow: ["tools_add"] } } },
      ],
    },
    mcp: { servers: { tools: { http: { url: mcp.url } } } },
  });
});
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

const mcpTool = (fields: Record<string, unknown> = {}): Tool => ({ type: "mcp", server_label: "tools", server_url: mcp.url, require_approval: "never", ...fields }) as Tool;

describe("Responses: gateway-run MCP tools", () => {
  it("lists the granted tools, runs the model's call on the MCP server and streams mcp_list_tools and mcp_call before the model's answer", async () => {
    const client = responsesClient(h.url, { apiKey: GRANTED });
    const stream = await client.responses.create({
      model: "sim",
      input: '#sim call=tools_echo args={"text":"sluice-mcp-ok"}',
      tools: [mcpTool()],
      stream: true,
    });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types).toContain("response.mcp_list_tools.in_progress");
    expect(types).toContain("response.mcp_list_tools.completed");
    expect(types).toContain("response.mcp_call.in_progress");
    expect(types).toContain("response.mcp_call_arguments.done");
    expect(types).toContain("response.mcp_call.completed");
    expect(types.indexOf("response.mcp_call.completed")).toBeLessThan(types.lastIndexOf("response.output_text.delta"));

    const done = events.findLast((e) => e.type === "response.completed");
    if (done?.type !== "response.completed") throw new Error("no response.completed");
    const output = done.response.output;
    const listing = output.find((i) => i.type === "mcp_list_tools");
    if (listing?.type !== "mcp_list_tools") throw new Error("no mcp_list_tools item");
    expect(listing.server_label).toBe("tools");
    expect(listing.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "add"]));
    const call = output.find((i) => i.type === "mcp_call");
    if (call?.type !== "mcp_call") throw new Error("no mcp_call item");
    expect(call).toMatchObject({ server_label: "tools", name: "echo", arguments: '{"text":"sluice-mcp-ok"}', output: "sluice-mcp-ok", error: null, status: "completed" });
    // The model's answer after the result quotes it (the simulator's tool loop): the result went back to the model.
    expect(output.at(-1)?.type).toBe("message");
    expect(JSON.stringify(output.at(-1))).toContain("tools_echo returned: sluice-mcp-ok");
    // No function call reached the caller: the gateway answered it.
    expect(output.some((i) => i.type === "function_call")).toBe(false);

    expect(mcp.calls("echo")).toHaveLength(1);
  });

  it("folds the same into a whole response without stream", async () => {
    const before = mcp.calls("add").length;
    const response = await responsesClient(h.url, { apiKey: GRANTED }).responses.create({ model: "sim", input: '#sim call=tools_add args={"a":2,"b":40}', tools: [mcpTool({ allowed_tools: ["add"] })] });
    const listing = response.output.find((i) => i.type === "mcp_list_tools");
    if (listing?.type !== "mcp_list_tools") throw new Error("no mcp_list_tools item");
    expect(listing.tools.map((t) => t.name)).toEqual(["add"]);
    expect(response.output.find((i) => i.type === "mcp_call")).toMatchObject({ name: "add", output: "42", status: "completed" });
    expect(response.output_text).toContain("tools_add returned: 42");
    expect(mcp.calls("add")).toHaveLength(before + 1);
  });

  it("takes its own mcp_list_tools and mcp_call items back as input: the next turn continues the conversation", async () => {
    const client = responsesClient(h.url, { apiKey: GRANTED });
    const first = await client.responses.create({ model: "sim", input: '#sim call=tools_add args={"a":1,"b":1}', tools: [mcpTool()] });
    expect(first.output.map((i) => i.type)).toEqual(expect.arrayContaining(["mcp_list_tools", "mcp_call"]));
    const before = mcp.calls("add").length;
    const next = await client.responses.create({
      model: "sim",
      input: [{ role: "user", content: '#sim call=tools_add args={"a":1,"b":1}' }, ...(first.output as ResponseInputItem[]), { role: "user", content: '#sim call=tools_add args={"a":2,"b":3}' }],
      tools: [mcpTool()],
    });
    expect(next.status).toBe("completed");
    expect(next.output.find((i) => i.type === "mcp_call")).toMatchObject({ name: "add", output: "5" });
    expect(next.output_text).toContain("tools_add returned: 5");
    expect(mcp.calls("add")).toHaveLength(before + 1);
  });

  it("shows a tool's own failure as a failed mcp_call, and tells the model", async () => {
    const stream = await responsesClient(h.url, { apiKey: GRANTED }).responses.create({ model: "sim", input: '#sim call=tools_fail args={"message":"boom"}', tools: [mcpTool()], stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toContain("response.mcp_call.failed");
    const done = events.findLast((e) => e.type === "response.completed");
    if (done?.type !== "response.completed") throw new Error("no response.completed");
    expect(done.response.output.find((i) => i.type === "mcp_call")).toMatchObject({ name: "fail", status: "failed", error: "boom" });
    expect(JSON.stringify(done.response.output.at(-1))).toContain("tools_fail returned: boom");
  });

  it("does not list to the model a tool the key has no grant for, and never calls it", async () => {
    const before = mcp.calls("echo").length;
    const response = await responsesClient(h.url, { apiKey: NARROW }).responses.create({ model: "sim", input: '#sim call=tools_echo args={"text":"x"}', tools: [mcpTool()] });
    const listing = response.output.find((i) => i.type === "mcp_list_tools");
    if (listing?.type !== "mcp_list_tools") throw new Error("no mcp_list_tools item");
    expect(listing.tools.map((t) => t.name)).toEqual(["add"]);
    // The model called a tool it was not given: it is not the gateway's to run, and reaches the caller as a plain function call.
    expect(response.output.some((i) => i.type === "mcp_call")).toBe(false);
    expect(mcp.calls("echo")).toHaveLength(before);
  });

  it("refuses an mcp tool naming a server the gateway does not have, by name, with 400", async () => {
    const before = mcp.seen.length;
    const error = await responsesClient(h.url, { apiKey: GRANTED })
      .responses.create({ model: "sim", input: "hi", tools: [mcpTool({ server_label: "elsewhere", server_url: "https://mcp.example.com/mcp" })], stream: true })
      .then(async (s) => {
        for await (const _ of s);
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain('"elsewhere"');
    expect((error as BadRequestError).param).toBe("tools[0].server_label");
    expect(mcp.seen.length).toBe(before);
  });

  it("refuses require_approval other than never by name: approvals are not supported", async () => {
    const error = await responsesClient(h.url, { apiKey: GRANTED })
      .responses.create({ model: "sim", input: "hi", tools: [mcpTool({ require_approval: "always" })] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toMatch(/require_approval.*approval/);
  });
});
