import OpenAI from "openai";
import type { ResponseInputItem } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedToolCalls } from "../src/simulator/script.js";
import { simulatedText } from "../src/simulator/text.js";
import { rejection, responsesClient, WEATHER_TOOL } from "./helpers/answer-via-responses.js";
import { type Harness, PROVIDER_KINDS, type ProviderKind, startHarness } from "./helpers/harness.js";

/**
 * Multi-turn tool use over the stateless Responses edge: the client sends
 * each turn's output items back, and the simulator, which signs what it
 * issues and refuses altered or missing signatures as Anthropic and Gemini
 * do, checks that the reasoning items carried them intact.
 */
const harnesses = new Map<ProviderKind, Harness>();
beforeAll(async () => {
  for (const kind of PROVIDER_KINDS) harnesses.set(kind, await startHarness({ kind, models: { sim: "sim-1" } }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

/** The first turn calls two tools after signed thinking (and, from Anthropic, a redacted block); the knobs ride in `instructions`, which each turn sends anew. */
const FIRST_TURN = "#sim reasoning=4 tokens=2 tools=2 seed=31 redacted=1";
/** The second turn answers in text (quoting the tool results). */
const FINAL_TURN = "#sim reasoning=2 tokens=5 seed=32";
const LOOKUP = { ...WEATHER_TOOL, name: "lookup", description: "Look up" };

async function turn(client: OpenAI, instructions: string, input: ResponseInputItem[], stream: boolean): Promise<OpenAI.Responses.Response> {
  const params = { model: "sim", instructions, input, tools: [LOOKUP], reasoning: { effort: "high" as const }, include: ["reasoning.encrypted_content" as const] };
  return stream ? client.responses.stream(params).finalResponse() : client.responses.create(params);
}

/** The outputs a client's tool runner sends back, one per call. */
function outputsFor(response: OpenAI.Responses.Response): ResponseInputItem[] {
  return response.output.flatMap((item) => (item.type === "function_call" ? [{ type: "function_call_output" as const, call_id: item.call_id, output: '{"temp":21}' }] : []));
}

describe.each(PROVIDER_KINDS)("via %s: a function-calling loop over stateless /v1/responses", (kind) => {
  for (const stream of [true, false]) {
    it(`function_call items go back with function_call_output (and the reasoning items) and get the final answer (${stream ? "streaming" : "non-streaming"})`, async () => {
      const h = harnesses.get(kind)!;
      const client = responsesClient(h.url);
      const user: ResponseInputItem = { role: "user", content: "What is the weather in Paris and Oslo?" };
      const first = await turn(client, FIRST_TURN, [user], stream);
      const calls = first.output.filter((item) => item.type === "function_call");
      expect(calls.map(({ call_id, name, arguments: args }) => ({ id: call_id, name, arguments: args }))).toEqual(simulatedToolCalls(31, 2, [{ name: "lookup", kind: "function", schema: LOOKUP.parameters! }]));
      const sealed = first.output.filter((item) => item.type === "reasoning" && item.encrypted_content);
      // What each provider signs: Anthropic its thinking and redacted blocks, Gemini its calls; OpenAI-kind upstreams sign nothing.
      expect(sealed.length > 0).toBe(kind !== "openai");

      const history = [user, ...(first.output as ResponseInputItem[]), ...outputsFor(first)];
      const second = await turn(client, FINAL_TURN, history, stream);
      expect(second.status).toBe("completed");
      // After tool results the simulator answers by quoting them: the outputs the client sent came back through the gateway.
      expect(second.output_text).toBe('lookup returned: {"temp":21}\nlookup returned: {"temp":21}');
      expect(second.output.some((item) => item.type === "function_call")).toBe(false);
    });
  }
});

describe.each(["anthropic", "gemini"] as const)("via %s: reasoning items carry the signatures", (kind) => {
  it("they are what made the loop work: without the reasoning items, or with them altered, the provider refuses the turn", async () => {
    const h = harnesses.get(kind)!;
    const client = responsesClient(h.url);
    const user: ResponseInputItem = { role: "user", content: "What is the weather?" };
    const first = await turn(client, FIRST_TURN, [user], true);

    const stripped = first.output.filter((item) => item.type !== "reasoning") as ResponseInputItem[];
    const missing = await rejection(turn(client, FINAL_TURN, [user, ...stripped, ...outputsFor(first)], true));
    expect(missing).toBeInstanceOf(OpenAI.BadRequestError);
    expect((missing as Error).message).toMatch(kind === "anthropic" ? /Expected `thinking` or `redacted_thinking`/ : /missing a thought_signature/);

    // Anthropic signs the thinking text, Gemini the call's arguments: alter both, as a client that rebuilt the turn would.
    let firstCall = true;
    const altered = first.output.map((item): ResponseInputItem => {
      if (item.type === "reasoning" && item.summary.length > 0) return { ...item, summary: item.summary.map((s) => ({ ...s, text: `${s.text}!` })) };
      if (item.type === "function_call" && firstCall) {
        firstCall = false;
        return { ...item, arguments: '{"city":"Nowhere","days":1}' };
      }
      return item as ResponseInputItem;
    });
    const tampered = await rejection(turn(client, FINAL_TURN, [user, ...altered, ...outputsFor(first)], true));
    expect(tampered).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tampered as Error).message).toMatch(/Invalid .*signature/);
  });
});

describe("via gemini: a signature on answer text", () => {
  /** The model turn as the gateway replayed it to Gemini: each part's text, whether it is a thought, whether it is signed. */
  function replayedModelTurn(h: Harness, tag: string) {
    const body = h.sim.records.all().find((r) => r.tag === tag)!.body as { contents: Array<{ role: string; parts: Array<{ text?: string; thought?: boolean; thoughtSignature?: string }> }> };
    return body.contents.find((c) => c.role === "model")!.parts.map((p) => ({ text: p.text, thought: p.thought === true, signed: p.thoughtSignature !== undefined }));
  }

  for (const stream of [true, false]) {
    it(`travels in a reasoning item after the message and goes back onto the text it signs (${stream ? "streaming" : "non-streaming"})`, async () => {
      const h = harnesses.get("gemini")!;
      const client = responsesClient(h.url);
      const user: ResponseInputItem = { role: "user", content: "#sim reasoning=3 tokens=4 seed=33" };
      const params = { model: "sim", input: [user], reasoning: { effort: "high" as const } };
      const first = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
      // As Gemini sent it: thoughts, then the answer text, then the signature of that text.
      expect(first.output.map((item) => item.type)).toEqual(["reasoning", "message", "reasoning"]);
      const carrier = first.output[2] as OpenAI.Responses.ResponseReasoningItem;
      expect(carrier.summary).toEqual([]);
      expect(carrier.encrypted_content).toMatch(/^sluice\./);

      const tag = `text-signature-${stream}`;
      const next: ResponseInputItem = { role: "user", content: `and then?\n#sim tag=${tag}` };
      const again = await client.responses.create({ ...params, input: [user, ...(first.output as ResponseInputItem[]), next] });
      expect(again.status).toBe("completed");
      expect(replayedModelTurn(h, tag)).toEqual([
        { text: simulatedText(33 + 7919, 3), thought: true, signed: false },
        { text: simulatedText(33, 4), thought: false, signed: true },
      ]);

      const edited = first.output.map(
        (item): ResponseInputItem => (item.type === "message" ? { ...item, content: item.content.map((c) => (c.type === "output_text" ? { ...c, text: `${c.text} (edited)` } : c)) } : (item as ResponseInputItem)),
      );
      const refused = await rejection(client.responses.create({ ...params, input: [user, ...edited, next] }));
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as Error).message).toMatch(/Invalid thought signature/);
    });
  }
});
