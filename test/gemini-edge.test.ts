import { type Content, type GenerateContentResponse, GoogleGenAI, Type } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, PROVIDER_KINDS, startHarness } from "./helpers/harness.js";

/**
 * The Gemini edge through the official @google/genai SDK (httpOptions.baseUrl
 * at the gateway), on every upstream wire: whole and streamed answers,
 * a function call and its functionResponse sent back (the Gemini wire's
 * simulator refuses a replayed call without its thought signature),
 * countTokens, embeddings and the model list.
 */

const WEATHER = {
  name: "get_weather",
  description: "Weather for a city",
  parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } },
};

function client(url: string, apiKey = "not-used"): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } });
}

function textOf(response: GenerateContentResponse): string {
  return (response.candidates?.[0]?.content?.parts ?? [])
    .filter((p) => !p.thought && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
}

describe.each(PROVIDER_KINDS)("the Gemini edge, %s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { demo: "sim-1?tokens=12&seed=4", "demo-tools": "sim-1?tokens=4&tools=1&seed=6", "demo-think": "sim-1?tokens=5&reasoning=6&seed=8", "demo-embed": "sim-embed" } });
  });
  afterAll(() => h.close());

  it("generateContent: text, STOP, usage, the alias as modelVersion", async () => {
    const response = await client(h.url).models.generateContent({ model: "demo", contents: "Say hello", config: { systemInstruction: "Be brief" } });
    expect(textOf(response)).toBe(simulatedText(4, 12));
    expect(response.candidates?.[0]?.finishReason).toBe("STOP");
    expect(response.modelVersion).toBe("demo");
    expect(response.responseId).toBeTruthy();
    const usage = response.usageMetadata!;
    expect(usage.promptTokenCount).toBeGreaterThan(0);
    expect(usage.candidatesTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount! + (usage.thoughtsTokenCount ?? 0));
  });

  it("generateContentStream: the same text in chunks, the last with finishReason and usage", async () => {
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await client(h.url).models.generateContentStream({ model: "demo", contents: "Say hello" })) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map(textOf).join("")).toBe(simulatedText(4, 12));
    expect(chunks.at(-1)!.candidates?.[0]?.finishReason).toBe("STOP");
    expect(chunks.at(-1)!.usageMetadata?.totalTokenCount).toBeGreaterThan(0);
  });

  it("thoughts: shown with includeThoughts, left out without", async () => {
    const ai = client(h.url);
    const shown = await ai.models.generateContent({ model: "demo-think", contents: "Think", config: { thinkingConfig: { includeThoughts: true } } });
    const parts = shown.candidates?.[0]?.content?.parts ?? [];
    expect(
      parts
        .filter((p) => p.thought && p.text)
        .map((p) => p.text)
        .join(""),
    ).not.toBe("");
    expect(textOf(shown)).toBe(simulatedText(8, 5));
    // Anthropic reports thinking inside its output tokens, without a count of its own.
    if (kind !== "anthropic") expect(shown.usageMetadata?.thoughtsTokenCount).toBeGreaterThan(0);
    const hidden = await ai.models.generateContent({ model: "demo-think", contents: "Think" });
    expect((hidden.candidates?.[0]?.content?.parts ?? []).filter((p) => p.thought && p.text)).toEqual([]);
    expect(textOf(hidden)).toBe(simulatedText(8, 5));
  });

  it("a streamed function call, its functionResponse sent back, and the answer after it", async () => {
    const ai = client(h.url);
    const history: Content[] = [{ role: "user", parts: [{ text: "Weather in Paris?" }] }];
    const config = { tools: [{ functionDeclarations: [WEATHER] }], thinkingConfig: { includeThoughts: true } };
    const modelParts = [];
    let finish: string | undefined;
    for await (const chunk of await ai.models.generateContentStream({ model: "demo-tools", contents: history, config })) {
      modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    const calls = modelParts.filter((p) => p.functionCall);
    expect(calls).toHaveLength(1);
    const call = calls[0]!.functionCall!;
    expect(call.name).toBe("get_weather");
    expect(call.id).toBeTruthy();
    expect(typeof call.args).toBe("object");
    expect(finish).toBe("STOP");
    if (kind === "gemini") expect(calls[0]!.thoughtSignature).toBeTruthy();
    else expect(calls[0]!.thoughtSignature).toBeUndefined();
    history.push({ role: "model", parts: modelParts });
    history.push({ role: "user", parts: [{ functionResponse: { id: call.id!, name: call.name!, response: { temperature: "21C" } } }] });
    const next = await ai.models.generateContent({ model: "demo", contents: history, config });
    // The simulator quotes the result it was sent (src/simulator/README.md, "The tool loop"): the response reached the upstream.
    expect(textOf(next)).toMatch(/^get_weather returned: .*21C/);
  });

  it("a Gemini CLI turn (raw SSE): its sampling, thinking and tool declarations in both schema dialects, then the tool result", async () => {
    // What gemini-cli 0.61 sends for a model it does not know (its chat-base config), as captured in issue 44.
    const turn = (contents: unknown[]) =>
      fetch(`${h.url}/v1beta/models/demo-tools:streamGenerateContent?alt=sse`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": "gemini-cli-key" },
        body: JSON.stringify({
          contents,
          systemInstruction: { role: "user", parts: [{ text: "You are an interactive CLI agent." }] },
          tools: [
            {
              functionDeclarations: [
                { name: "run_shell_command", description: "Runs a shell command", parametersJsonSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
                { name: "read_file", description: "Reads a file", parameters: { type: "OBJECT", properties: { absolute_path: { type: "STRING" }, limit: { type: "NUMBER", nullable: true } }, required: ["absolute_path"] } },
              ],
            },
          ],
          generationConfig: { temperature: 1, topP: 0.95, topK: 64, thinkingConfig: { includeThoughts: true } },
        }),
      });
    const first = await turn([{ role: "user", parts: [{ text: "List the files" }] }]);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const dropped = first.headers.get("sluice-dropped-params")?.split(",") ?? [];
    // Chat Completions has no top-k: left out and named, not refused.
    if (kind === "openai") expect(dropped).toContain("generationConfig.topK");
    else expect(dropped).not.toContain("generationConfig.topK");
    const chunks = (await first.text())
      .split("\r\n\r\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => JSON.parse(e.slice(6)) as GenerateContentResponse);
    const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    const call = parts.find((p) => p.functionCall)?.functionCall;
    expect(call?.name).toMatch(/^(run_shell_command|read_file)$/);
    const second = await turn([
      { role: "user", parts: [{ text: "List the files" }] },
      { role: "model", parts },
      { role: "user", parts: [{ functionResponse: { id: call!.id, name: call!.name, response: { output: "a.txt b.txt" } } }] },
    ]);
    expect(second.status).toBe(200);
    expect(await second.text()).toContain('"finishReason":"STOP"');
  });

  it("a function response reporting a failure (Gemini's error key) reaches every wire", async () => {
    const ai = client(h.url);
    const config = { tools: [{ functionDeclarations: [WEATHER] }] };
    const contents: Content[] = [{ role: "user", parts: [{ text: "Weather in Lima?" }] }];
    const called = await ai.models.generateContent({ model: "demo-tools", contents, config });
    const parts = called.candidates![0]!.content!.parts!;
    const call = parts.find((p) => p.functionCall)!.functionCall!;
    contents.push({ role: "model", parts }, { role: "user", parts: [{ functionResponse: { id: call.id!, name: call.name!, response: { error: "params must have required property 'city'" } } }] });
    const next = await ai.models.generateContent({ model: "demo", contents, config });
    expect(textOf(next)).toMatch(/^get_weather returned: .*params must have required property 'city'/);
  });

  it("responseMimeType with a schema (either dialect): the answer is JSON of that shape", async () => {
    const ai = client(h.url);
    const jsonSchema = await ai.models.generateContent({
      model: "demo",
      contents: "A city",
      config: { responseMimeType: "application/json", responseJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
    });
    expect(typeof (JSON.parse(textOf(jsonSchema)) as { city: unknown }).city).toBe("string");
    const openApi = await ai.models.generateContent({
      model: "demo",
      contents: "A count",
      config: { responseMimeType: "application/json", responseSchema: { type: Type.OBJECT, properties: { count: { type: Type.INTEGER } }, required: ["count"] } },
    });
    expect(Number.isInteger((JSON.parse(textOf(openApi)) as { count: unknown }).count)).toBe(true);
  });

  it("countTokens counts the prompt", async () => {
    const counted = await client(h.url).models.countTokens({ model: "demo", contents: "How many tokens are in this sentence?" });
    expect(counted.totalTokens).toBeGreaterThan(5);
  });

  it("embedContent: one vector per content", async () => {
    const embedding = client(h.url).models.embedContent({ model: "demo-embed", contents: ["one", "two"] });
    if (kind === "anthropic") return expect(embedding).rejects.toThrow(/no embeddings API.*"status":"INVALID_ARGUMENT"/);
    const answer = await embedding;
    expect(answer.embeddings).toHaveLength(2);
    expect(answer.embeddings![0]!.values!.length).toBeGreaterThan(0);
  });

  it("embedContent, raw: one vector; taskType is a hint, dropped and named", async () => {
    const response = await fetch(`${h.url}/v1beta/models/demo-embed:embedContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": "k" },
      body: JSON.stringify({ model: "models/demo-embed", content: { parts: [{ text: "reset my password" }] }, taskType: "RETRIEVAL_QUERY", outputDimensionality: 16 }),
    });
    if (kind === "anthropic") return expect(response.status).toBe(400);
    expect(response.status).toBe(200);
    expect(response.headers.get("sluice-dropped-params")).toBe("taskType");
    expect(((await response.json()) as { embedding: { values: number[] } }).embedding.values).toHaveLength(16);
  });

  it("models.list and models.get name the aliases", async () => {
    const ai = client(h.url);
    const names: string[] = [];
    for await (const model of await ai.models.list()) names.push(model.name ?? "");
    expect(names).toEqual(expect.arrayContaining(["models/demo", "models/demo-tools"]));
    expect((await ai.models.get({ model: "demo" })).name).toBe("models/demo");
  });
});

/**
 * Thought signatures: each goes back to the caller, and from the caller
 * back upstream on the wire that issued it. The simulators refuse a
 * replayed thinking block or function call whose signature is wrong, so
 * a turn that passes proves the signature came through intact.
 */
describe.each(PROVIDER_KINDS)("thought signatures through the Gemini edge, %s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { think: "sim-1?tokens=3&reasoning=5&tools=1&seed=2", plain: "sim-1?tokens=4&seed=9" } });
  });
  afterAll(() => h.close());

  it("thinking and a function call, streamed, then the history with its signatures sent back", async () => {
    const ai = client(h.url);
    const history: Content[] = [{ role: "user", parts: [{ text: "Weather in Oslo?" }] }];
    const config = { tools: [{ functionDeclarations: [WEATHER] }], thinkingConfig: { includeThoughts: true } };
    const modelParts = [];
    for await (const chunk of await ai.models.generateContentStream({ model: "think", contents: history, config })) modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
    const signatures = modelParts.map((p) => p.thoughtSignature).filter((s): s is string => s !== undefined);
    if (kind === "openai") expect(signatures).toEqual([]);
    else expect(signatures.length).toBeGreaterThan(0);
    // A Gemini signature reaches the caller as Gemini issued it; another wire's is marked with its wire.
    if (kind === "anthropic") expect(signatures.every((s) => s.startsWith("sluice1:anthropic:"))).toBe(true);
    if (kind === "gemini") expect(signatures.some((s) => s.startsWith("sluice1:"))).toBe(false);
    const call = modelParts.find((p) => p.functionCall)!.functionCall!;
    history.push({ role: "model", parts: modelParts });
    history.push({ role: "user", parts: [{ functionResponse: { id: call.id!, name: call.name!, response: { output: "sunny" } } }] });
    const next = await ai.models.generateContent({ model: "plain", contents: history, config });
    expect(textOf(next)).toMatch(/^get_weather returned: .*sunny/);
  });

  it("a signature from another wire is not sent upstream (the simulators would refuse it)", async () => {
    const foreign = kind === "gemini" ? "sluice1:anthropic:not-gemini" : "google-issued-signature";
    const contents: Content[] = [
      { role: "user", parts: [{ text: "Weather in Rome?" }] },
      {
        role: "model",
        parts: [
          { text: "Let me check", thought: true, thoughtSignature: foreign },
          { functionCall: { id: "call-1", name: "get_weather", args: { city: "Rome" } }, thoughtSignature: foreign },
        ],
      },
      { role: "user", parts: [{ functionResponse: { id: "call-1", name: "get_weather", response: { output: "warm" } } }] },
    ];
    const answer = client(h.url).models.generateContent({ model: "plain", contents, config: { tools: [{ functionDeclarations: [WEATHER] }] } });
    // Gemini 3 refuses a replayed call without a signature; the simulator's Gemini wire does too: the foreign one is left out, not forged.
    if (kind === "gemini") return expect(answer).rejects.toThrow(/missing a thought_signature/);
    expect(textOf(await answer)).toMatch(/^get_weather returned: .*warm/);
  });
});
