import { describe, expect, it } from "vitest";
import { parseKnobs } from "../../src/simulator/knobs.js";
import { buildScript } from "../../src/simulator/script.js";
import { parseToolDirectives } from "../../src/simulator/tool-directives.js";
import { type DeclaredTool, type NextAction, nextAction, type Turn } from "../../src/simulator/tool-loop.js";

/**
 * The simulator's tool loop, apart from any wire: `#sim call=` plans
 * consumed one step per round of tool results, an answer quoting the
 * results once the plan (or the knobs' one round) is done, ids that never
 * repeat in a conversation, arguments valid for the declared schema, and
 * max_tokens honoured.
 */

const BASH: DeclaredTool = {
  name: "Bash",
  kind: "function",
  schema: { type: "object", properties: { command: { type: "string" }, shell: { type: "string", enum: ["sh", "bash"] }, timeout: { type: "integer" } }, required: ["command"] },
};
const BOUNDED: DeclaredTool = {
  name: "Wait",
  kind: "function",
  schema: { type: "object", properties: { seconds: { type: "integer", minimum: 500, maximum: 600 }, ratio: { type: "number", exclusiveMaximum: 0.5, minimum: 0.25 } } },
};
const READ: DeclaredTool = { name: "Read", kind: "function", schema: { type: "object", properties: { file_path: { type: "string" } }, required: ["file_path"] } };
const PATCH: DeclaredTool = { name: "apply_patch", kind: "custom" };

describe("#sim tool directives", () => {
  it("reads steps from lines and `then`, parallel calls within a step, JSON args with spaces, quoted and bare input", () => {
    const prompt = ["Please do it.", '#sim call=Bash args={"command":"echo a b"} then call=Read args={"file_path":"/tmp/x y"}', "#sim call=A call=B", '#sim input="line 1\\nline 2" then call=P input=to the end of the line'].join("\n");
    expect(parseToolDirectives(prompt)).toEqual([
      [{ call: "Bash", args: '{"command":"echo a b"}' }],
      [{ call: "Read", args: '{"file_path":"/tmp/x y"}' }],
      [{ call: "A" }, { call: "B" }],
      [{ input: "line 1\nline 2" }],
      [{ call: "P", input: "to the end of the line" }],
    ]);
  });

  it("refuses arguments that are not a JSON object, and unknown words", () => {
    expect(() => parseToolDirectives("#sim call=Bash args={oops}")).toThrow(/not valid JSON/);
    expect(() => parseToolDirectives("#sim call=Bash args=[1]")).toThrow(/JSON object/);
    expect(() => parseToolDirectives("#sim call=Bash with=1")).toThrow(/unknown tool directive with=/);
  });

  it("are not knobs: a prompt may carry both kinds of line", () => {
    const knobs = parseKnobs("sim-1", ['#sim call=Bash args={"command":"x"}\n#sim tokens=3 ignore_max_tokens=1']);
    expect(knobs.tokens).toBe(3);
    expect(knobs.ignoreMaxTokens).toBe(true);
  });
});

const callsOf = (action: NextAction) => (action.kind === "calls" ? action.calls : []);

/** A conversation: the prompt, then for each round the calls made and one result for each. */
function conversation(prompt: string, rounds: Array<Array<{ id: string; name: string; output: string }>>): Turn[] {
  const turns: Turn[] = [{ role: "user", text: prompt }];
  for (const round of rounds) {
    turns.push({ role: "assistant", calls: round.map(({ id, name }) => ({ id, name })) });
    for (const r of round) turns.push({ role: "tool", callId: r.id, output: r.output });
  }
  return turns;
}

describe("the next action", () => {
  const prompt = '#sim call=Bash args={"command":"echo sluice-ok"} then call=Read args={"file_path":"/tmp/n.txt"}';

  it("follows the plan one step per round of results, then quotes every result verbatim", () => {
    const knobs = { seed: 1, tools: 0 };
    const first = nextAction({ tools: [BASH, READ], turns: conversation(prompt, []) }, knobs);
    expect(first).toMatchObject({ kind: "calls", calls: [{ name: "Bash", arguments: '{"command":"echo sluice-ok"}' }] });
    const id1 = callsOf(first)[0]!.id;
    const second = nextAction({ tools: [BASH, READ], turns: conversation(prompt, [[{ id: id1, name: "Bash", output: "sluice-ok\n" }]]) }, knobs);
    expect(second).toMatchObject({ kind: "calls", calls: [{ name: "Read", arguments: '{"file_path":"/tmp/n.txt"}' }] });
    const id2 = callsOf(second)[0]!.id;
    expect(id2).not.toBe(id1);
    const last = nextAction({ tools: [BASH, READ], turns: conversation(prompt, [[{ id: id1, name: "Bash", output: "sluice-ok\n" }], [{ id: id2, name: "Read", output: "1\tnonce-7" }]]) }, knobs);
    expect(last).toEqual({ kind: "quote", text: "Bash returned: sluice-ok\n\nRead returned: 1\tnonce-7" });
  });

  it("with the tools knob and no plan: one round of schema-valid calls, then the quote", () => {
    const action = nextAction({ tools: [BASH], turns: conversation("run something", []) }, { seed: 9, tools: 2 });
    expect(action.kind).toBe("calls");
    const calls = callsOf(action);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    for (const call of calls) {
      const args = JSON.parse(call.arguments) as { command: unknown; shell: unknown; timeout: unknown };
      expect(call.name).toBe("Bash");
      expect(typeof args.command).toBe("string");
      expect(["sh", "bash"]).toContain(args.shell);
      expect(Number.isInteger(args.timeout)).toBe(true);
    }
    const after = nextAction({ tools: [BASH], turns: conversation("run something", [calls.map((c) => ({ ...c, output: `out-${c.id}` }))]) }, { seed: 9, tools: 2 });
    expect(after.kind).toBe("quote");
    for (const c of calls) expect(after.kind === "quote" ? after.text : "").toContain(`out-${c.id}`);
  });

  it("keeps numbers inside their schema's bounds", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const [call] = callsOf(nextAction({ tools: [BOUNDED], turns: conversation("wait", []) }, { seed, tools: 1 }));
      const args = JSON.parse(call!.arguments) as { seconds: number; ratio: number };
      expect(args.seconds).toBeGreaterThanOrEqual(500);
      expect(args.seconds).toBeLessThanOrEqual(600);
      expect(args.ratio).toBeGreaterThanOrEqual(0.25);
      expect(args.ratio).toBeLessThan(0.5);
    }
  });

  it("never reuses an id the conversation holds, even a history it did not write", () => {
    const planned = `${prompt}\n#sim call=Bash`;
    const held = { id: "call_sim_1_1_0", name: "Bash", output: "x" };
    const action = nextAction({ tools: [BASH, READ], turns: conversation(planned, [[held]]) }, { seed: 1, tools: 0 });
    expect(callsOf(action)[0]!.id).not.toBe(held.id);
  });

  it("gives a custom tool its freeform input, and a function its first string parameter", () => {
    const custom = nextAction({ tools: [BASH, PATCH], turns: conversation("#sim input=*** Begin Patch", []) }, { seed: 1, tools: 0 });
    expect(custom).toMatchObject({ kind: "calls", calls: [{ name: "apply_patch", arguments: "*** Begin Patch", custom: true }] });
    const mapped = nextAction({ tools: [READ], turns: conversation("#sim call=Read input=/etc/hosts", []) }, { seed: 1, tools: 0 });
    expect(mapped).toMatchObject({ kind: "calls", calls: [{ name: "Read", arguments: '{"file_path":"/etc/hosts"}' }] });
  });

  it("keeps the request's tool choice: none calls nothing (plan or knob), a named tool is the one called", () => {
    const none = { tools: [BASH, READ], turns: conversation(prompt, []), choice: "none" as const };
    expect(nextAction(none, { seed: 1, tools: 2 })).toEqual({ kind: "answer" });
    const named = nextAction({ tools: [BASH, READ], turns: conversation("go", []), choice: { name: "Read" } }, { seed: 1, tools: 2 });
    expect(callsOf(named).map((c) => c.name)).toEqual(["Read", "Read"]);
  });

  it("answers a fresh prompt without calls when nothing asks for them", () => {
    expect(nextAction({ tools: [BASH], turns: conversation("hello", []) }, { seed: 1, tools: 0 })).toEqual({ kind: "answer" });
  });
});

describe("max_tokens", () => {
  const knobs = parseKnobs("sim-1?tokens=20", []);

  it("stops at the limit with finish length, leaving out a call it could not finish", () => {
    const plain = buildScript(knobs, { inputTokens: 1, action: { kind: "answer" }, maxTokens: 5 });
    expect(plain).toMatchObject({ finishReason: "length", outputTokens: 5 });
    const calls = { kind: "calls", calls: [{ id: "c1", name: "Bash", arguments: '{"command":"echo a long command"}' }] } as const;
    const cut = buildScript(knobs, { inputTokens: 1, action: calls, maxTokens: 22 });
    expect(cut.finishReason).toBe("length");
    expect(cut.steps.every((s) => s.type === "text")).toBe(true);
    expect(buildScript(knobs, { inputTokens: 1, action: calls, maxTokens: 100 }).finishReason).toBe("tool_calls");
  });

  it("is ignored with ignore_max_tokens=1", () => {
    const script = buildScript(parseKnobs("sim-1?tokens=20&ignore_max_tokens=1", []), { inputTokens: 1, action: { kind: "answer" }, maxTokens: 5 });
    expect(script).toMatchObject({ finishReason: "stop", outputTokens: 20 });
  });
});
