import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderKind } from "../src/core/chat-request.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerViaFacade, answerViaGrpc } from "./helpers/answers.js";
import { answerViaMessages } from "./helpers/answer-via-messages.js";
import { answerViaResponsesStream, responsesClient } from "./helpers/answer-via-responses.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * One request, four edges, each through the client its callers use:
 * connect over HTTP/2 (gRPC), the openai SDK (Chat Completions and
 * Responses) and @anthropic-ai/sdk (Messages). For each provider wire the
 * gateway speaks upstream, the same simulator script must give the same
 * text, reasoning, tool calls, finish reason and usage on every edge.
 */

const SCRIPTS: Array<[string, string]> = [
  ["plain text", "#sim tokens=15 seed=3"],
  ["reasoning then text", "#sim reasoning=6 tokens=5 seed=8"],
  ["text then parallel tool calls", "#sim tokens=4 tools=3 seed=5"],
  ["tool calls only", "#sim tokens=0 tools=1 seed=6"],
  ["chunked at random byte offsets, CRLF", "#sim tokens=12 seed=9 chunking=random eol=crlf"],
  ["the whole answer in one upstream write (gRPC joins deltas)", "#sim reasoning=6 tokens=40 tools=2 seed=4 chunking=bulk"],
];

const KINDS: readonly ProviderKind[] = ["openai", "anthropic", "gemini"];

describe.each(KINDS)("the same request through every edge, %s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { sim: "sim-1" } });
  });
  afterAll(() => h.close());

  for (const [name, prompt] of SCRIPTS) {
    it(`${name}: same text, reasoning, tool calls, finish reason and usage`, async () => {
      const viaGrpc = await answerViaGrpc(h.url, "sim", prompt);
      expect(viaGrpc.usage).toBeDefined();
      expect(viaGrpc.finish).toMatch(/^(stop|tool_calls)$/);
      expect(await answerViaFacade(h.url, "sim", prompt), "Chat Completions").toEqual(viaGrpc);
      expect(await answerViaMessages(h.url, "sim", prompt, "stream"), "Anthropic Messages").toEqual(viaGrpc);
      expect(await answerViaResponsesStream(responsesClient(h.url), "sim", prompt), "OpenAI Responses").toEqual(viaGrpc);
    });
  }

  it("compares real content (not four empty answers)", async () => {
    const answer = await answerViaGrpc(h.url, "sim", "#sim tokens=15 seed=3");
    expect(answer.text).toBe(simulatedText(3, 15));
  });
});
