import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { answerViaFacade, answerViaGrpc } from "./helpers/answers.js";
import { type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1" } });
});
afterAll(() => h.close());

const SCRIPTS: Array<[string, string]> = [
  ["plain text", "#sim tokens=15 seed=3"],
  ["reasoning then text", "#sim reasoning=6 tokens=5 seed=8"],
  ["text then parallel tool calls", "#sim tokens=4 tools=3 seed=5"],
  ["tool calls only", "#sim tokens=0 tools=1 seed=6"],
  ["chunked at random byte offsets, CRLF", "#sim tokens=12 seed=9 chunking=random eol=crlf"],
  ["the whole answer in one upstream write (gRPC joins deltas)", "#sim reasoning=6 tokens=40 tools=2 seed=4 chunking=bulk"],
];

describe("the same request through gRPC and through the OpenAI facade", () => {
  for (const [name, prompt] of SCRIPTS) {
    it(`${name}: same text, reasoning, tool calls, finish reason and usage`, async () => {
      const viaGrpc = await answerViaGrpc(h.url, "sim", prompt);
      const viaFacade = await answerViaFacade(h.url, "sim", prompt);
      expect(viaFacade).toEqual(viaGrpc);
      expect(viaGrpc.usage).toBeDefined();
      expect(viaGrpc.finish).toMatch(/^(stop|tool_calls)$/);
    });
  }

  it("compares real content (not two empty answers)", async () => {
    const answer = await answerViaGrpc(h.url, "sim", "#sim tokens=15 seed=3");
    expect(answer.text).toBe(simulatedText(3, 15));
  });
});
