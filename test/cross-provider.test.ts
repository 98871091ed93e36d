import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Answer, answerViaFacade, answerViaGrpc } from "./helpers/answers.js";
import { type Harness, type ProviderKind, startHarness, WIRE_KINDS } from "./helpers/harness.js";

/** Scripts served in all three wire formats by the same simulator. */
const SCRIPTS: Array<[string, string]> = [
  ["text", "#sim tokens=12 seed=21"],
  ["thinking then text", "#sim reasoning=5 tokens=6 seed=22"],
  ["interleaved text and parallel tool calls", "#sim tokens=3 tools=3 seed=23"],
  ["tool call only", "#sim tokens=0 tools=1 seed=24"],
  ["random chunking with pings", "#sim tokens=9 seed=25 chunking=random ping_every=2"],
];

/** Anthropic reports no separate reasoning-token count; everything else must match exactly. */
function comparable(answer: Answer, kind: ProviderKind): Answer {
  return kind === "anthropic" || !answer.usage ? answer : { ...answer, usage: { ...answer.usage, reasoning: 0 } };
}

const harnesses = new Map<ProviderKind, Harness>();
beforeAll(async () => {
  for (const kind of WIRE_KINDS) harnesses.set(kind, await startHarness({ kind, models: { sim: "sim-1" } }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

describe("one delta vocabulary for three wire formats", () => {
  for (const [name, prompt] of SCRIPTS) {
    it(`${name}: identical at the gRPC edge and at the OpenAI edge, whichever provider format served it`, async () => {
      const answers: Array<[string, Answer]> = [];
      for (const kind of WIRE_KINDS) {
        const h = harnesses.get(kind)!;
        answers.push([`${kind} via gRPC`, comparable(await answerViaGrpc(h.url, "sim", prompt), kind)]);
        answers.push([`${kind} via facade`, comparable(await answerViaFacade(h.url, "sim", prompt), kind)]);
      }
      const [, reference] = answers[0]!;
      for (const [label, answer] of answers) expect(answer, label).toEqual(reference);
      expect(reference.usage?.output).toBeGreaterThan(0);
    });
  }

  it("reports reasoning tokens where the format carries them (OpenAI, Gemini)", async () => {
    for (const kind of ["openai", "gemini"] as const) {
      const answer = await answerViaGrpc(harnesses.get(kind)!.url, "sim", "#sim reasoning=5 tokens=2");
      expect(answer.usage?.reasoning, kind).toBe(5);
    }
  });

  it("compares real content", async () => {
    const answer = await answerViaGrpc(harnesses.get("gemini")!.url, "sim", "#sim tokens=12 seed=21");
    expect(answer.text).toBe(simulatedText(21, 12));
  });
});
