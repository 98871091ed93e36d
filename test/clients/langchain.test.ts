import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, startClientGateway, WIRES } from "./helpers/gateway.js";
import { named, runnable } from "./helpers/tier.js";
import { LOOKUP_DESCRIPTION, toolTask } from "./helpers/tool-task.js";

/**
 * LangChain JS chat models pointed at the gateway, on every upstream wire:
 * a tool-calling agent loop (bindTools, run the calls, send ToolMessages
 * back until the model answers) with @langchain/openai (Chat Completions)
 * and @langchain/anthropic (Messages). @langchain/openai declares Node >= 22.
 */
const OPENAI = runnable(["@langchain/openai", "@langchain/core", "openai", "zod"]);
const ANTHROPIC = runnable(["@langchain/anthropic", "@langchain/core", "zod"]);

type Chat = "openai" | "anthropic";

async function agentLoop(g: ClientGateway, key: string, chat: Chat, prompt: string, result: string) {
  const { tool } = await import("@langchain/core/tools");
  const { HumanMessage } = await import("@langchain/core/messages");
  const { z } = await import("zod");
  const lookup = tool(() => Promise.resolve(result), { name: "lookup", description: LOOKUP_DESCRIPTION, schema: z.object({ code: z.string() }) });
  const base =
    chat === "openai"
      ? new (await import("@langchain/openai")).ChatOpenAI({ model: "agent", apiKey: key, configuration: { baseURL: `${g.url}/v1` }, maxRetries: 0 })
      : new (await import("@langchain/anthropic")).ChatAnthropic({ model: "agent", apiKey: key, anthropicApiUrl: g.url, maxRetries: 0 });
  const model = base.bindTools([lookup]);
  const messages: Array<import("@langchain/core/messages").BaseMessage> = [new HumanMessage(prompt)];
  const toolRuns: string[] = [];
  for (let turn = 0; turn < 4; turn++) {
    const answer = await model.invoke(messages);
    messages.push(answer);
    if (!answer.tool_calls?.length) return { answer: answer.text, toolRuns, turns: turn + 1 };
    for (const call of answer.tool_calls) {
      toolRuns.push(call.name);
      messages.push(await lookup.invoke({ ...call, type: "tool_call" }));
    }
  }
  throw new Error(`no answer after 4 turns; tools run: ${toolRuns.join(", ")}`);
}

describe.each(WIRES)("LangChain JS, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  const chats: Array<{ chat: Chat; name: string; r: { ok: boolean; reason: string } }> = [
    { chat: "openai", name: "@langchain/openai ChatOpenAI", r: OPENAI },
    { chat: "anthropic", name: "@langchain/anthropic ChatAnthropic", r: ANTHROPIC },
  ];
  for (const c of chats) {
    it.runIf(c.r.ok)(named(`${c.name}: the tool-calling loop runs the tool and the answer quotes its result`, c.r), async () => {
      const task = toolTask();
      const before = g.records(g.key).length;
      const { answer, toolRuns, turns } = await agentLoop(g, g.key, c.chat, task.prompt, task.result);
      expect(toolRuns).toEqual(["lookup"]);
      expect(answer).toContain(task.expected);
      await g.events.until(() => g.records(g.key).length >= before + turns);
      expect(g.records(g.key).slice(before)).toHaveLength(turns);
    });

    it.runIf(c.r.ok)(named(`${c.name}: a 402 budget refusal at the second turn is thrown (not a hang)`, c.r), async () => {
      const task = toolTask();
      const tight = g.tightKeys[c.chat === "openai" ? 0 : 1]!;
      const failed = await agentLoop(g, tight, c.chat, task.prompt, task.result).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failed).toBeInstanceOf(Error);
      expect(String((failed as Error).message)).toMatch(/402|budget/);
      // The first request was admitted and recorded; the refusal came at the second.
      await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
      expect(g.records(tight)).toHaveLength(1);
    });
  }
});
