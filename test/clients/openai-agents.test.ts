import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, startClientGateway, WIRES } from "./helpers/gateway.js";
import { named, runnable } from "./helpers/tier.js";
import { LOOKUP_DESCRIPTION, toolTask } from "./helpers/tool-task.js";

/**
 * The OpenAI Agents SDK (@openai/agents) pointed at the gateway, on every
 * upstream wire: a triage agent hands off to a specialist whose function
 * tool returns a nonce; the run is streamed. Over its Responses model (the
 * default) and its Chat Completions model. It depends on openai 7, which
 * declares Node >= 22: on older Nodes it is not run, by name.
 */
const AGENTS = runnable(["@openai/agents", "openai", "zod"]);

async function runAgents(g: ClientGateway, key: string, useResponses: boolean, prompt: string, result: string) {
  const { Agent, OpenAIProvider, Runner, tool } = await import("@openai/agents");
  const { z } = await import("zod");
  const lookup = tool({ name: "lookup", description: LOOKUP_DESCRIPTION, parameters: z.object({ code: z.string() }), execute: () => Promise.resolve(result) });
  const specialist = new Agent({ name: "specialist", instructions: "You look codes up with the lookup tool.", tools: [lookup], model: "agent" });
  const triage = new Agent({ name: "triage", instructions: "Hand code lookups to the specialist.", handoffs: [specialist], model: "agent" });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ apiKey: key, baseURL: `${g.url}/v1`, useResponses }), tracingDisabled: true });
  const stream = await runner.run(triage, prompt, { stream: true, maxTurns: 6 });
  let streamed = "";
  for await (const text of stream.toTextStream()) streamed += text;
  await stream.completed;
  return { stream, streamed };
}

describe.each(WIRES)("OpenAI Agents SDK, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  for (const useResponses of [true, false]) {
    const api = useResponses ? "Responses" : "Chat Completions";
    it.runIf(AGENTS.ok)(named(`${api} model: a streamed run hands off, calls the function tool, and the final output quotes its result`, AGENTS), async () => {
      const task = toolTask([`#sim call=transfer_to_specialist args={}`]);
      const before = g.records(g.key).length;
      const { stream, streamed } = await runAgents(g, g.key, useResponses, task.prompt, task.result);
      expect(stream.error).toBeFalsy();
      expect(stream.lastAgent?.name).toBe("specialist");
      expect(String(stream.finalOutput)).toContain(task.expected);
      expect(streamed).toContain(task.expected);
      const items = stream.newItems.map((i) => i.type);
      expect(items).toEqual(expect.arrayContaining(["handoff_call_item", "handoff_output_item", "tool_call_item", "tool_call_output_item"]));
      // One model request per turn: hand off, call the tool, answer.
      await g.events.until(() => g.records(g.key).length >= before + 3);
      const records = g.records(g.key).slice(before);
      expect(records.length).toBeGreaterThanOrEqual(3);
      for (const r of records) expect(r).toMatchObject({ alias: "agent", outcome: "completed" });
    });
  }

  it.runIf(AGENTS.ok)(named("a 402 budget refusal mid-run is thrown from the streamed run (not a hang)", AGENTS), async () => {
    const task = toolTask([`#sim call=transfer_to_specialist args={}`]);
    const tight = g.tightKeys[0]!;
    const failed = await runAgents(g, tight, true, task.prompt, task.result).then(
      ({ stream }) => stream.error ?? new Error("the run ended without an error"),
      (e: unknown) => e,
    );
    expect(String((failed as Error).message)).toMatch(/402|budget/);
    // The first request was admitted and recorded; the refusal came at the second.
    await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
    expect(g.records(tight)).toHaveLength(1);
  });
});
