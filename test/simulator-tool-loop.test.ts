import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, PROVIDER_KINDS, type ProviderKind, startHarness } from "./helpers/harness.js";

/**
 * The built-in simulator as a model in an agent's tool loop, through a real
 * gateway on each upstream wire, driven by the openai SDK's tool runner and
 * an Anthropic SDK agent loop: a
 * `#sim` plan in the prompt chooses the tools and arguments, the SDK runs
 * them for real (a shell, a file read), every call id is new, and the last
 * answer quotes what the tools returned, so the loop ends by itself. Also:
 * arguments valid for the declared schema without a plan, and max_tokens
 * honoured as providers do (or ignored, with the knob that keeps the
 * gateway's own cut testable).
 */
const harnesses = new Map<ProviderKind, Harness>();
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sluice-tool-loop-"));
  for (const kind of PROVIDER_KINDS) harnesses.set(kind, await startHarness({ kind, models: { sim: "sim-1?tokens=3" } }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const BASH_SCHEMA = {
  type: "object",
  properties: { command: { type: "string" }, timeout: { type: "integer" }, shell: { type: "string", enum: ["sh", "dash"] } },
  required: ["command"],
} as const;
const READ_SCHEMA = { type: "object", properties: { file_path: { type: "string" } }, required: ["file_path"] } as const;

/** A schema as the SDKs type it (mutable), from the `as const` one. */
const plain = (schema: object): Record<string, unknown> => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

/** Runs the shell command the model asked for: the client really runs the tool. */
async function bash(args: { command: string }): Promise<string> {
  return (await promisify(execFile)("sh", ["-c", args.command])).stdout.trim();
}

/** A three-step task: a shell echo, a file read, a second shell echo; each output carries its own nonce. */
function task(kind: string, sdk: string) {
  const nonce = `${kind}-${sdk}-${Math.random().toString(36).slice(2, 10)}`;
  const file = join(dir, `${nonce}.txt`);
  writeFileSync(file, `file-${nonce}`);
  const prompt = ["Check the machine, then read the note.", `#sim call=Bash args={"command":"echo first-${nonce}"} then call=Read args=${JSON.stringify({ file_path: file })}`, `#sim call=Bash args={"command":"echo third-${nonce}"}`].join(
    "\n",
  );
  return { prompt, outputs: [`first-${nonce}`, `file-${nonce}`, `third-${nonce}`] };
}

describe.each(PROVIDER_KINDS)("via %s: a three-step tool loop the #sim plan directs", (kind) => {
  it("the openai SDK's runTools (Chat Completions, streamed) runs Bash, Read, Bash, and the final text quotes all three outputs", async () => {
    const { prompt, outputs } = task(kind, "openai");
    const client = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const ran: string[] = [];
    const runner = client.chat.completions.runTools(
      {
        model: "sim",
        stream: true,
        messages: [{ role: "user", content: prompt }],
        tools: [
          { type: "function", function: { name: "Bash", description: "Run a shell command", parameters: plain(BASH_SCHEMA), parse: JSON.parse, function: async (a: { command: string }) => (ran.push("Bash"), bash(a)) } },
          { type: "function", function: { name: "Read", description: "Read a file", parameters: plain(READ_SCHEMA), parse: JSON.parse, function: (a: { file_path: string }) => (ran.push("Read"), readFile(a.file_path, "utf8")) } },
        ],
      },
      { maxChatCompletions: 6 },
    );
    const final = await runner.finalContent();
    expect(ran).toEqual(["Bash", "Read", "Bash"]);
    for (const output of outputs) expect(final).toContain(output);
    const ids = runner.messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    expect((await runner.finalChatCompletion()).choices[0]!.finish_reason).toBe("stop");
  });

  it("the Anthropic SDK (Messages, streamed) in an agent loop runs Bash, Read, Bash, and the final text quotes all three outputs", async () => {
    // The loop as Claude clients write it. (The SDK's beta toolRunner sends a `thread` field this gateway refuses today: issue 44 §1.)
    const { prompt, outputs } = task(kind, "anthropic");
    const client = new Anthropic({ baseURL: harnesses.get(kind)!.url, apiKey: "unused", maxRetries: 0 });
    const tools: Anthropic.Tool[] = [
      { name: "Bash", description: "Run a shell command", input_schema: plain(BASH_SCHEMA) as Anthropic.Tool.InputSchema },
      { name: "Read", description: "Read a file", input_schema: plain(READ_SCHEMA) as Anthropic.Tool.InputSchema },
    ];
    const run = (call: Anthropic.ToolUseBlock): Promise<string> => (call.name === "Bash" ? bash(call.input as { command: string }) : readFile((call.input as { file_path: string }).file_path, "utf8"));
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: prompt }];
    const ran: string[] = [];
    const replies: Anthropic.Message[] = [];
    for (let step = 0; step < 6; step++) {
      const reply = await client.messages.stream({ model: "sim", max_tokens: 4096, messages, tools }).finalMessage();
      replies.push(reply);
      if (reply.stop_reason !== "tool_use") break;
      const calls = reply.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
      ran.push(...calls.map((c) => c.name));
      const results = await Promise.all(calls.map(async (c): Promise<Anthropic.ToolResultBlockParam> => ({ type: "tool_result", tool_use_id: c.id, content: await run(c) })));
      messages.push({ role: "assistant", content: reply.content }, { role: "user", content: results });
    }
    expect(ran).toEqual(["Bash", "Read", "Bash"]);
    const last = replies.at(-1)!;
    expect(last.stop_reason).toBe("end_turn");
    const text = last.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
    for (const output of outputs) expect(text).toContain(output);
    const ids = replies.flatMap((m) => m.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])));
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });
});

describe.each(PROVIDER_KINDS)("via %s: without a plan", (kind) => {
  it("the tools knob calls the declared tool with arguments valid for its schema, then answers with the results", async () => {
    const client = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "Bash", parameters: plain(BASH_SCHEMA) } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "#sim tools=2 seed=12" }];
    const first = (await client.chat.completions.create({ model: "sim", messages, tools })).choices[0]!;
    expect(first.finish_reason).toBe("tool_calls");
    const calls = (first.message.tool_calls ?? []).flatMap((c) => (c.type === "function" ? [c] : []));
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.function.name).toBe("Bash");
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      expect(typeof args.command).toBe("string");
      expect(Number.isInteger(args.timeout)).toBe(true);
      expect(["sh", "dash"]).toContain(args.shell);
    }
    const results = calls.map((c, i) => ({ role: "tool" as const, tool_call_id: c.id, content: `result-${i}-${kind}` }));
    const second = (await client.chat.completions.create({ model: "sim", messages: [...messages, { role: "assistant", content: first.message.content, tool_calls: calls }, ...results], tools })).choices[0]!;
    expect(second.finish_reason).toBe("stop");
    expect(second.message.content).toBe(results.map((r) => `Bash returned: ${r.content}`).join("\n"));
  });
});

describe.each(PROVIDER_KINDS)("via %s: max_tokens", (kind) => {
  it("is honoured by the upstream itself: it stops there with its own finish reason, and the gateway says length", async () => {
    const h = harnesses.get(kind)!;
    const tag = `limit-${kind}`;
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: "sim", max_tokens: 6, messages: [{ role: "user", content: `#sim tokens=40 tag=${tag}` }] });
    expect(answer.choices[0]!.finish_reason).toBe("length");
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    // The simulator stopped by itself (a completed response, not one the gateway closed).
    expect(record.outcome).toBe("completed");
    expect(record.tokensWritten).toBe(6);
  });

  it("is honoured on the Messages edge as stop_reason max_tokens", async () => {
    const client = new Anthropic({ baseURL: harnesses.get(kind)!.url, apiKey: "unused", maxRetries: 0 });
    const message = await client.messages.stream({ model: "sim", max_tokens: 4, messages: [{ role: "user", content: "#sim tokens=40" }] }).finalMessage();
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage.output_tokens).toBe(4);
  });

  it("is ignored with ignore_max_tokens=1: the upstream writes past the limit and the gateway cuts", async () => {
    const h = harnesses.get(kind)!;
    const tag = `ignored-${kind}`;
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: "sim", max_tokens: 6, messages: [{ role: "user", content: `#sim tokens=400 ignore_max_tokens=1 tag=${tag}` }] });
    expect(answer.choices[0]!.finish_reason).toBe("length");
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.tokensWritten).toBeGreaterThan(6);
  });
});
