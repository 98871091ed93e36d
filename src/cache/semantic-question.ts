import type { ChatRequest } from "../core/chat-request.js";

/**
 * What the semantic cache embeds and what it matches exactly. The question
 * is the last turn when it is the user's and holds only text; everything
 * else (system prompt, earlier turns, tools, parameters, response format)
 * is the context, which must be identical for a hit: a semantic hit must
 * never answer a question asked under another system prompt, tool set or
 * output schema. Undefined when the request has no such question (it ends
 * with a tool result, or its last turn carries an image).
 */
export function splitQuestion(request: ChatRequest): { readonly question: string; readonly context: ChatRequest } | undefined {
  const last = request.messages.at(-1);
  if (last?.role !== "user" || last.content.length === 0 || last.content.some((part) => part.type !== "text")) return undefined;
  const question = last.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  if (question.trim() === "") return undefined;
  return { question, context: { ...request, messages: [...request.messages.slice(0, -1), { ...last, content: [] }] } };
}
