import { type ChatMessage, type ChatRequest, messageText, type ToolChoice } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { parseDataUrl, parseToolArguments } from "../tool-arguments.js";

const IMAGE_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };

function imageType(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  return (ext && IMAGE_TYPES[ext]) ?? "image/jpeg";
}

function parts(m: ChatMessage): Array<Record<string, unknown>> {
  return m.content.map((part) => {
    if (part.type === "text") return { text: part.text };
    const data = parseDataUrl(part.url);
    return data ? { inlineData: { mimeType: data.mediaType, data: data.data } } : { fileData: { mimeType: imageType(part.url), fileUri: part.url } };
  });
}

/** A tool result as Gemini wants it: an object. JSON object results pass as they are, anything else is wrapped. */
function functionResponse(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: wrap below
  }
  return { content: text };
}

function contents(messages: readonly ChatMessage[]): Array<Record<string, unknown>> {
  // Gemini names a function response by the function's name, not a call id:
  // recover the name from the assistant turn that made the call.
  const callNames = new Map<string, string>();
  const out: Array<Record<string, unknown>> = [];
  messages.forEach((m, i) => {
    if (m.role === "system") return;
    if (m.role === "tool") {
      const name = callNames.get(m.toolCallId ?? "");
      if (!name) {
        throw new GatewayError("invalid_request", `messages[${i}].tool_call_id: no earlier assistant tool call has this id`, {
          field: `messages[${i}].tool_call_id`,
        });
      }
      out.push({ role: "user", parts: [{ functionResponse: { name, response: functionResponse(messageText(m)) } }] });
      return;
    }
    const p = parts(m);
    (m.toolCalls ?? []).forEach((call, j) => {
      callNames.set(call.id, call.name);
      p.push({ functionCall: { name: call.name, args: parseToolArguments(call.arguments, `messages[${i}].tool_calls[${j}].arguments`) } });
    });
    out.push({ role: m.role === "assistant" ? "model" : "user", parts: p });
  });
  return out;
}

function toolConfig(choice: ToolChoice): Record<string, unknown> {
  switch (choice.type) {
    case "auto":
      return { functionCallingConfig: { mode: "AUTO" } };
    case "none":
      return { functionCallingConfig: { mode: "NONE" } };
    case "required":
      return { functionCallingConfig: { mode: "ANY" } };
    case "function":
      return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } };
  }
}

/** generateContent body: system instruction apart, function declarations, generation config. */
export function geminiRequestBody(request: ChatRequest): Record<string, unknown> {
  const s = request.sampling;
  const system = request.messages.filter((m) => m.role === "system").map(messageText).join("\n\n");
  const generationConfig = {
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { topP: s.topP }),
    ...(s.maxTokens === undefined ? {} : { maxOutputTokens: s.maxTokens }),
    ...(s.stop.length > 0 ? { stopSequences: s.stop } : {}),
    ...(s.seed === undefined ? {} : { seed: s.seed }),
  };
  return {
    contents: contents(request.messages),
    ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}),
    ...(request.tools.length > 0
      ? {
          tools: [
            {
              functionDeclarations: request.tools.map((t) => ({
                name: t.name,
                ...(t.description ? { description: t.description } : {}),
                parameters: t.parameters,
              })),
            },
          ],
        }
      : {}),
    ...(request.toolChoice ? { toolConfig: toolConfig(request.toolChoice) } : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {}),
  };
}

export function buildGeminiRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return {
    url: `${target.provider.baseUrl}/models/${encodeURIComponent(target.model)}:streamGenerateContent?alt=sse`,
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      ...(key ? { "x-goog-api-key": key.reveal() } : {}),
    },
    body: JSON.stringify(geminiRequestBody(request)),
  };
}
