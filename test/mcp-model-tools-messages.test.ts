import { BadRequestError } from "@anthropic-ai/sdk";
import type { BetaContentBlockParam, BetaRawMessageStreamEvent, BetaRequestMCPServerURLDefinition } from "@anthropic-ai/sdk/resources/beta/messages/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messagesClient } from "./helpers/answer-via-messages.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * Anthropic's MCP connector (`mcp_servers`, beta mcp-client-2025-04-04) on
 * the Messages edge, with the Anthropic SDK over real sockets: the gateway
 * runs the model's calls of a registered server's tools against a real MCP
 * server, and streams them as `mcp_tool_use` / `mcp_tool_result` blocks
 * before the model's answer.
 */
const GRANTED = "sk-granted-0123456789";
const NARROW = "sk-narrow-0123456789";
const BETA = "mcp-client-2025-04-04";

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

const server = (fields: Partial<BetaRequestMCPServerURLDefinition> = {}): BetaRequestMCPServerURLDefinition => ({ type: "url", name: "tools", url: mcp.url, ...fields });

describe("Messages: gateway-run MCP tools (mcp_servers)", () => {
  it("runs the model's call on the MCP server and streams mcp_tool_use and mcp_tool_result before the model's answer", async () => {
    const client = messagesClient(h.url, { apiKey: GRANTED });
    const stream = client.beta.messages.stream({
      model: "sim",
      max_tokens: 1_000,
      betas: [BETA],
      mcp_servers: [server()],
      messages: [{ role: "user", content: '#sim call=tools_echo args={"text":"sluice-mcp-ok"}' }],
    });
    const events: BetaRawMessageStreamEvent[] = [];
    stream.on("streamEvent", (event) => events.push(event));
    const message = await stream.finalMessage();
    const types = message.content.map((b) => b.type);
    expect(types).toContain("mcp_tool_use");
    expect(types).toContain("mcp_tool_result");
    expect(types.indexOf("mcp_tool_use")).toBeLessThan(types.indexOf("mcp_tool_result"));
    expect(types.at(-1)).toBe("text");
    const use = message.content.find((b) => b.type === "mcp_tool_use");
    expect(use).toMatchObject({ name: "echo", server_name: "tools", input: { text: "sluice-mcp-ok" } });
    const result = message.content.find((b) => b.type === "mcp_tool_result");
    expect(result).toMatchObject({ is_error: false, content: [{ type: "text", text: "sluice-mcp-ok" }] });
    if (use?.type !== "mcp_tool_use" || result?.type !== "mcp_tool_result") throw new Error("no MCP blocks");
    expect(result.tool_use_id).toBe(use.id);
    const last = message.content.at(-1);
    expect(last?.type === "text" ? last.text : "").toContain("tools_echo returned: sluice-mcp-ok");
    // The caller has nothing to answer: no tool_use block, and the message ends as the model's answer did.
    expect(types).not.toContain("tool_use");
    expect(message.stop_reason).toBe("end_turn");
    expect(events.filter((e) => e.type === "message_start")).toHaveLength(1);

    expect(mcp.calls("echo")).toHaveLength(1);
  });

  it("puts the same blocks in a whole (non-streamed) message, before the answer's text", async () => {
    const message = await messagesClient(h.url, { apiKey: GRANTED }).beta.messages.create({
      model: "sim",
      max_tokens: 1_000,
      betas: [BETA],
      mcp_servers: [server()],
      messages: [{ role: "user", content: '#sim call=tools_add args={"a":20,"b":22}' }],
    });
    expect(message.content.map((b) => b.type)).toEqual(["mcp_tool_use", "mcp_tool_result", "text"]);
    expect(message.content[1]).toMatchObject({ content: [{ type: "text", text: "42" }] });
    expect(message.content[2]?.type === "text" ? message.content[2].text : "").toContain("tools_add returned: 42");
  });

  it("takes its own mcp_tool_use and mcp_tool_result blocks back in the conversation: the next turn continues it", async () => {
    const client = messagesClient(h.url, { apiKey: GRANTED });
    const ask = '#sim call=tools_add args={"a":1,"b":1}';
    const first = await client.beta.messages.stream({ model: "sim", max_tokens: 1_000, betas: [BETA], mcp_servers: [server()], messages: [{ role: "user", content: ask }] }).finalMessage();
    expect(first.content.map((b) => b.type)).toEqual(expect.arrayContaining(["mcp_tool_use", "mcp_tool_result"]));
    const before = mcp.calls("add").length;
    const next = await client.beta.messages
      .stream({
        model: "sim",
        max_tokens: 1_000,
        betas: [BETA],
        mcp_servers: [server()],
        messages: [
          { role: "user", content: ask },
          { role: "assistant", content: first.content as BetaContentBlockParam[] },
          { role: "user", content: '#sim call=tools_add args={"a":2,"b":3}' },
        ],
      })
      .finalMessage();
    expect(next.content.find((b) => b.type === "mcp_tool_result")).toMatchObject({ content: [{ type: "text", text: "5" }] });
    expect(mcp.calls("add")).toHaveLength(before + 1);
  });

  it("declares to the model only the tools the key is granted and tool_configuration allows", async () => {
    const before = mcp.calls("echo").length;
    const message = await messagesClient(h.url, { apiKey: NARROW })
      .beta.messages.stream({ model: "sim", max_tokens: 1_000, betas: [BETA], mcp_servers: [server()], messages: [{ role: "user", content: '#sim call=tools_echo args={"text":"x"}' }] })
      .finalMessage();
    // The model called a tool it was not given: not the gateway's to run; the caller sees it as a plain tool_use.
    expect(message.content.some((b) => b.type === "mcp_tool_use")).toBe(false);
    expect(mcp.calls("echo")).toHaveLength(before);

    const allowed = await messagesClient(h.url, { apiKey: GRANTED })
      .beta.messages.stream({
        model: "sim",
        max_tokens: 1_000,
        betas: [BETA],
        mcp_servers: [server({ tool_configuration: { allowed_tools: ["add"] } })],
        messages: [{ role: "user", content: '#sim call=tools_echo args={"text":"x"}' }],
      })
      .finalMessage();
    expect(allowed.content.some((b) => b.type === "mcp_tool_use")).toBe(false);
    expect(mcp.calls("echo")).toHaveLength(before);
  });

  it("refuses a server the gateway does not have, by name, with 400, and never calls its url", async () => {
    const before = mcp.seen.length;
    const error = await messagesClient(h.url, { apiKey: GRANTED })
      .beta.messages.create({ model: "sim", max_tokens: 100, betas: [BETA], mcp_servers: [server({ name: "elsewhere", url: "https://mcp.example.com/mcp" })], messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain('mcp_servers[0].name: MCP server \\"elsewhere\\" is not registered');
    expect(mcp.seen.length).toBe(before);
  });

  it("refuses an authorization_token by name: the gateway holds the server's credentials", async () => {
    const error = await messagesClient(h.url, { apiKey: GRANTED })
      .beta.messages.create({ model: "sim", max_tokens: 100, betas: [BETA], mcp_servers: [server({ authorization_token: "caller-token" })], messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain("mcp_servers[0].authorization_token");
    expect((error as BadRequestError).message).not.toContain("caller-token");
  });
});
