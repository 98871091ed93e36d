import { GoogleGenAI } from "@google/genai";
import type { Answer } from "./answers.js";

/** The tool answers.ts offers on the other edges, as a Gemini function declaration. */
export const WEATHER_DECLARATION = {
  name: "get_weather",
  description: "Weather for a city",
  parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } },
};

/** The official SDK pointed at a gateway (httpOptions.baseUrl), as Gemini CLI points it with GOOGLE_GEMINI_BASE_URL. */
export function geminiClient(baseUrl: string, apiKey = "not-used"): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl } });
}

/**
 * Streams through the Gemini edge with @google/genai (thoughts asked for,
 * the weather tool declared); the answer as the gRPC edge's helpers shape
 * it. Gemini's usage counts candidates without thoughts; the Answer's
 * output (like the gRPC edge's) includes them.
 */
export async function answerViaGemini(baseUrl: string, model: string, prompt: string): Promise<Answer> {
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: "" };
  const stream = await geminiClient(baseUrl).models.generateContentStream({
    model,
    contents: prompt,
    config: { tools: [{ functionDeclarations: [WEATHER_DECLARATION] }], thinkingConfig: { includeThoughts: true } },
  });
  let finish = "";
  for await (const chunk of stream) {
    const candidate = chunk.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.functionCall) answer.toolCalls.push({ id: part.functionCall.id ?? "", name: part.functionCall.name ?? "", arguments: part.functionCall.args });
      else if (part.thought) answer.reasoning += part.text ?? "";
      else answer.text += part.text ?? "";
    }
    if (candidate?.finishReason) finish = candidate.finishReason;
    const u = chunk.usageMetadata;
    if (u) {
      const thoughts = u.thoughtsTokenCount ?? 0;
      answer.usage = { input: u.promptTokenCount ?? 0, output: (u.candidatesTokenCount ?? 0) + thoughts, cached: u.cachedContentTokenCount ?? 0, reasoning: thoughts };
    }
  }
  answer.finish = finish === "STOP" ? (answer.toolCalls.length > 0 ? "tool_calls" : "stop") : finish === "MAX_TOKENS" ? "length" : finish.toLowerCase();
  return answer;
}
