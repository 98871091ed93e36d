import { describe, expect, it } from "vitest";
import type { Delta } from "../../src/core/delta.js";
import { geminiRequestFrom } from "../../src/edges/gemini/from-gemini.js";
import { jsonSchemaFromOpenApi } from "../../src/edges/gemini/openapi-schema.js";
import { signatureForCaller, signaturesFor } from "../../src/edges/gemini/thought-signatures.js";
import { createGeminiEncoder, joinChunks } from "../../src/edges/gemini/to-gemini.js";

/** The Gemini edge's codec without sockets: request decoding, chunk encoding, signatures by wire. */

const LIMITS = { maxJsonDepth: 32 };
const user = (text: string) => ({ role: "user", parts: [{ text }] });

describe("from a generateContent body to the canonical request", () => {
  it("Gemini's schema dialect becomes JSON Schema (lower-case types, nullable as a null type, no propertyOrdering)", () => {
    expect(jsonSchemaFromOpenApi({ type: "OBJECT", propertyOrdering: ["a"], properties: { a: { type: "STRING", nullable: true }, b: { type: "ARRAY", items: { type: "INTEGER" } } }, required: ["a"] })).toEqual({
      type: "object",
      properties: { a: { type: ["string", "null"] }, b: { type: "array", items: { type: "integer" } } },
      required: ["a"],
    });
  });

  it("a function response without an id answers the model turn's call of that name; calls without ids get unique ones", () => {
    const { request } = geminiRequestFrom(
      {
        contents: [
          user("weather?"),
          { role: "model", parts: [{ functionCall: { name: "a", args: { x: 1 } } }, { functionCall: { name: "b", args: {} } }] },
          { role: "user", parts: [{ functionResponse: { name: "b", response: { ok: true } } }, { functionResponse: { name: "a", response: { error: "boom" } } }, { text: "go on" }] },
        ],
      },
      "sim",
      LIMITS,
    );
    const [, assistant, toolB, toolA, last] = request.messages;
    expect(assistant!.toolCalls!.map((c) => c.id)).toEqual(["call_1_0", "call_1_1"]);
    expect(toolB).toMatchObject({ role: "tool", toolCallId: "call_1_1", content: [{ type: "text", text: '{"ok":true}' }] });
    expect(toolA).toMatchObject({ role: "tool", toolCallId: "call_1_0", isError: true, content: [{ type: "text", text: "boom" }] });
    expect(last).toMatchObject({ role: "user", content: [{ type: "text", text: "go on" }] });
  });

  it("a function response that answers no call is refused by its place", () => {
    expect(() => geminiRequestFrom({ contents: [user("hi"), { role: "user", parts: [{ functionResponse: { name: "x", response: {} } }] }] }, "sim", LIMITS)).toThrow(/^contents\[1\]\.parts\[0\]\.functionResponse: answers no function call/);
  });

  it("streamed thought pieces and the signature after them are one reasoning block; a signature on text follows the text", () => {
    const { request } = geminiRequestFrom(
      {
        contents: [
          user("hi"),
          {
            role: "model",
            parts: [
              { text: "think ", thought: true },
              { text: "more", thought: true },
              { text: "", thought: true, thoughtSignature: "sig-1" },
              { text: "answer", thoughtSignature: "sig-2" },
            ],
          },
          user("again"),
        ],
      },
      "sim",
      LIMITS,
    );
    expect(request.messages[1]!.content).toEqual([
      { type: "reasoning", text: "think more", signature: "sig-1" },
      { type: "text", text: "answer" },
      { type: "reasoning", text: "", signature: "sig-2" },
    ]);
  });

  it("ANY with several allowed names offers only those and requires one; one name forces it", () => {
    const tools = [{ functionDeclarations: ["a", "b", "c"].map((name) => ({ name, parametersJsonSchema: { type: "object" } })) }];
    const several = geminiRequestFrom({ contents: [user("x")], tools, toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["a", "c"] } } }, "sim", LIMITS).request;
    expect(several.tools.map((t) => t.name)).toEqual(["a", "c"]);
    expect(several.toolChoice).toEqual({ type: "required" });
    const one = geminiRequestFrom({ contents: [user("x")], tools, toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["b"] } } }, "sim", LIMITS).request;
    expect(one.toolChoice).toEqual({ type: "function", name: "b" });
  });

  it("generationConfig: sampling, a JSON schema (either dialect) and thinking", () => {
    const { request, includeThoughts } = geminiRequestFrom(
      {
        contents: [user("x")],
        systemInstruction: { parts: [{ text: "be brief" }] },
        generationConfig: {
          temperature: 0.5,
          topP: 0.9,
          topK: 40,
          maxOutputTokens: 100,
          stopSequences: ["END"],
          responseMimeType: "application/json",
          responseSchema: { type: "OBJECT" },
          thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 },
        },
      },
      "sim",
      LIMITS,
    );
    expect(request.messages[0]).toEqual({ role: "system", content: [{ type: "text", text: "be brief" }] });
    expect(request.sampling).toEqual({ temperature: 0.5, topP: 0.9, topK: 40, maxTokens: 100, stop: ["END"] });
    expect(request.responseFormat).toEqual({ type: "json_schema", name: "response", schema: { type: "object" } });
    expect(request.reasoning).toEqual({ budgetTokens: 2048, includeReasoning: true });
    expect(includeThoughts).toBe(true);
    expect(geminiRequestFrom({ contents: [user("x")], generationConfig: { thinkingConfig: { thinkingLevel: "LOW" } } }, "sim", LIMITS).request.reasoning).toEqual({ effort: "low" });
    expect(geminiRequestFrom({ contents: [user("x")], generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }, "sim", LIMITS).request.reasoning).toEqual({ effort: "none" });
  });

  it("refuses by name what changes the answer, drops and names hints", () => {
    expect(() => geminiRequestFrom({ contents: [user("x")], generationConfig: { thinkingConfig: { thinkingBudget: 100, thinkingLevel: "HIGH" } } }, "sim", LIMITS)).toThrow(/^generationConfig\.thinkingConfig: /);
    expect(() => geminiRequestFrom({ contents: [user("x")], generationConfig: { responseMimeType: "text/x.enum" } }, "sim", LIMITS)).toThrow(/^generationConfig\.responseMimeType: /);
    expect(() => geminiRequestFrom({ contents: [{ role: "user", parts: [{ inlineData: { mimeType: "audio/wav", data: "AA==" } }] }] }, "sim", LIMITS)).toThrow(/^contents\[0\]\.parts\[0\]\.inlineData\.mimeType: /);
    const { dropped } = geminiRequestFrom({ contents: [user("x")], safetySettings: [], tools: [{ codeExecution: {} }], toolConfig: { retrievalConfig: {} } }, "sim", LIMITS);
    expect(dropped).toEqual(["safetySettings", "tools[0].codeExecution", "toolConfig.retrievalConfig"]);
  });

  it("an image as inline data is a data URL", () => {
    const { request } = geminiRequestFrom({ contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "iVBO" } }] }] }, "sim", LIMITS);
    expect(request.messages[0]!.content).toEqual([{ type: "image_url", url: "data:image/png;base64,iVBO" }]);
  });
});

describe("deltas as GenerateContentResponse chunks", () => {
  const run = (deltas: Delta[], options: { includeThoughts?: boolean; kind?: "openai" | "anthropic" | "gemini" } = {}) => {
    const encoder = createGeminiEncoder({ requestModel: "alias", includeThoughts: options.includeThoughts ?? true, servedKind: () => options.kind ?? "gemini" });
    return deltas.flatMap((d) => encoder.chunks(d));
  };
  const START: Delta = { type: "start", responseId: "resp_1", provider: "p", model: "m" };

  it("tool-call pieces are sent whole with the finish, parsed, with id and signature", () => {
    const chunks = run([
      START,
      { type: "text", text: "hi" },
      { type: "tool_call", index: 0, id: "c1", name: "f", arguments: '{"a"' },
      { type: "tool_call", index: 0, arguments: ":1}", signature: "s" },
      { type: "usage", inputTokens: 10, outputTokens: 7, cachedInputTokens: 4, reasoningTokens: 2 },
      { type: "finish", reason: "tool_calls" },
    ]);
    expect(chunks).toHaveLength(2);
    expect(chunks[1]).toEqual({
      candidates: [{ content: { role: "model", parts: [{ functionCall: { id: "c1", name: "f", args: { a: 1 } }, thoughtSignature: "s" }] }, index: 0, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 2, cachedContentTokenCount: 4, totalTokenCount: 17 },
      modelVersion: "alias",
      responseId: "resp_1",
    });
  });

  it("finish reasons in Gemini's words", () => {
    const reasonOf = (reason: "stop" | "length" | "content_filter" | "other") => run([START, { type: "finish", reason }])[0]!.candidates[0]!.finishReason;
    expect([reasonOf("stop"), reasonOf("length"), reasonOf("content_filter"), reasonOf("other")]).toEqual(["STOP", "MAX_TOKENS", "SAFETY", "OTHER"]);
  });

  it("thought text only when asked for; the signature always, marked by its wire when not Gemini's", () => {
    const deltas: Delta[] = [START, { type: "reasoning", text: "hmm" }, { type: "reasoning", text: "", signature: "sig" }, { type: "finish", reason: "stop" }];
    const hidden = run(deltas, { includeThoughts: false, kind: "anthropic" }).flatMap((c) => c.candidates[0]!.content.parts);
    expect(hidden).toEqual([{ text: "", thought: true, thoughtSignature: "sluice1:anthropic:sig" }]);
    const whole = joinChunks(run(deltas), "alias");
    expect(whole.candidates[0]!.content.parts).toEqual([{ text: "hmm", thought: true, thoughtSignature: "sig" }]);
    expect(whole.candidates[0]!.finishReason).toBe("STOP");
  });
});

describe("a bare signature after text", () => {
  it("goes out on an empty text part, as Gemini ends a stream, and comes back as that text's signature", () => {
    const encoder = createGeminiEncoder({ requestModel: "alias", includeThoughts: true, servedKind: () => "gemini" });
    const parts = (
      [
        { type: "text", text: "hello" },
        { type: "reasoning", text: "", signature: "text-sig" },
      ] as Delta[]
    )
      .flatMap((d) => encoder.chunks(d))
      .flatMap((c) => c.candidates[0]!.content.parts);
    expect(parts).toEqual([{ text: "hello" }, { text: "", thoughtSignature: "text-sig" }]);
    const { request } = geminiRequestFrom({ contents: [user("hi"), { role: "model", parts }, user("more")] }, "sim", LIMITS);
    expect(request.messages[1]!.content).toEqual([
      { type: "text", text: "hello" },
      { type: "reasoning", text: "", signature: "text-sig" },
    ]);
  });
});

describe("signatures go back only to the wire that issued them", () => {
  const request = {
    model: "m",
    tools: [],
    sampling: { stop: [] },
    metadata: { labels: {} },
    messages: [
      { role: "user" as const, content: [{ type: "text" as const, text: "x" }] },
      {
        role: "assistant" as const,
        content: [
          { type: "reasoning" as const, text: "t", signature: signatureForCaller("anth", "anthropic") },
          { type: "reasoning" as const, text: "", signature: "google" },
        ],
        toolCalls: [{ id: "c", name: "f", arguments: "{}", signature: "google" }],
      },
    ],
  };

  it("Anthropic's to an Anthropic target, unmarked; Google's left out", () => {
    const m = signaturesFor(request, "anthropic").messages[1]!;
    expect(m.content).toEqual([{ type: "reasoning", text: "t", signature: "anth" }]);
    expect(m.toolCalls).toEqual([{ id: "c", name: "f", arguments: "{}" }]);
  });

  it("Google's to a Gemini target; Anthropic's text kept unsigned", () => {
    const m = signaturesFor(request, "gemini").messages[1]!;
    expect(m.content).toEqual([
      { type: "reasoning", text: "t" },
      { type: "reasoning", text: "", signature: "google" },
    ]);
    expect(m.toolCalls![0]!.signature).toBe("google");
  });
});
