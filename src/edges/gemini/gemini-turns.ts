import type { ChatMessage, ContentPart, ToolCall } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import type { ContentBody, PartBody } from "./gemini-schema.js";

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

/** A part with a signature that is not a thought's: the signature travels as a bare reasoning part after it (as the Gemini adapter reads it). */
function signed(out: ContentPart[], signature: string | undefined): void {
  if (signature !== undefined && signature !== "") out.push({ type: "reasoning", text: "", signature });
}

/** A turn's content parts (function calls and responses are the caller's to take apart), in order, named by their index in the turn. */
function contentParts(parts: readonly PartBody[], at: string): ContentPart[] {
  const out: ContentPart[] = [];
  parts.forEach((p, j) => {
    if (p.functionCall || p.functionResponse) return;
    const where = `${at}.parts[${j}]`;
    if (p.executableCode !== undefined || p.codeExecutionResult !== undefined) invalid(where, "code execution parts are not served by this gateway");
    if (p.thought === true) {
      // A stream's thought pieces and the signature after them are one block (Anthropic verifies text and signature together).
      const prev = out.at(-1);
      if (prev?.type === "reasoning" && prev.signature === undefined && prev.redactedData === undefined) {
        out[out.length - 1] = { type: "reasoning", text: prev.text + (p.text ?? ""), ...(p.thoughtSignature ? { signature: p.thoughtSignature } : {}) };
      } else if (p.text || p.thoughtSignature) out.push({ type: "reasoning", text: p.text ?? "", ...(p.thoughtSignature ? { signature: p.thoughtSignature } : {}) });
    } else if (p.text !== undefined) {
      // An empty text part carries only its signature (providers refuse empty text blocks).
      if (p.text !== "") out.push({ type: "text", text: p.text });
      signed(out, p.thoughtSignature);
    } else if (p.inlineData) {
      if (!p.inlineData.mimeType.startsWith("image/")) invalid(`${where}.inlineData.mimeType`, "only images are served by this gateway");
      out.push({ type: "image_url", url: `data:${p.inlineData.mimeType};base64,${p.inlineData.data}` });
    } else if (p.fileData) {
      if (p.fileData.mimeType !== undefined && !p.fileData.mimeType.startsWith("image/")) invalid(`${where}.fileData.mimeType`, "only images are served by this gateway");
      out.push({ type: "image_url", url: p.fileData.fileUri });
    } else if (p.thoughtSignature !== undefined) signed(out, p.thoughtSignature);
  });
  return out;
}

/** A tool result's text: the response object as JSON, or the bare error a failed call reported (Gemini's `error` key). */
function resultOf(response: Readonly<Record<string, unknown>> | undefined): { readonly text: string; readonly isError?: true } {
  const value = response ?? {};
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === "error") return { text: typeof value.error === "string" ? value.error : JSON.stringify(value.error), isError: true };
  return { text: JSON.stringify(value) };
}

/**
 * Gemini contents as canonical messages. A model turn's function calls
 * become tool calls (their id, or one made up per turn when the caller's
 * model gave none); a user turn's function responses become tool messages,
 * matched to a call by id, else by name in order, and placed before the
 * turn's other parts as every provider wants them.
 */
export function canonicalMessages(system: ContentBody | undefined, contents: readonly ContentBody[], dropped: string[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const systemText = (system?.parts ?? []).map((p) => p.text ?? "").join("");
  if (systemText !== "") messages.push({ role: "system", content: [{ type: "text", text: systemText }] });
  let open: ToolCall[] = [];
  contents.forEach((c, i) => {
    const at = `contents[${i}]`;
    const parts = c.parts ?? [];
    if (c.role === "model") {
      const content: ContentPart[] = [];
      const calls: ToolCall[] = [];
      parts.forEach((p, j) => {
        if (p.functionResponse) invalid(`${at}.parts[${j}].functionResponse`, "function responses belong in a user turn");
        const call = p.functionCall;
        if (call) calls.push({ id: call.id || `call_${i}_${j}`, name: call.name, arguments: JSON.stringify(call.args ?? {}), ...(p.thoughtSignature ? { signature: p.thoughtSignature } : {}) });
      });
      content.push(...contentParts(parts, at));
      open = [...calls];
      if (content.length > 0 || calls.length > 0) messages.push({ role: "assistant", content, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
      return;
    }
    if (c.role !== undefined && c.role !== "user" && c.role !== "function") invalid(`${at}.role`, "must be user or model");
    parts.forEach((p, j) => {
      if (p.functionCall) invalid(`${at}.parts[${j}].functionCall`, "function calls belong in a model turn");
      const r = p.functionResponse;
      if (!r) return;
      // Multimodal parts of a tool result have no place in the canonical tool message (text): left out and named.
      if (r.parts !== undefined && r.parts.length > 0 && !dropped.includes("functionResponse.parts")) dropped.push("functionResponse.parts");
      const at2 = `${at}.parts[${j}].functionResponse`;
      const index = r.id ? open.findIndex((call) => call.id === r.id) : open.findIndex((call) => call.name === r.name);
      if (index < 0) invalid(at2, "answers no function call of the model turn before it");
      const call = open.splice(index, 1)[0]!;
      const { text, isError } = resultOf(r.response);
      messages.push({ role: "tool", toolCallId: call.id, content: [{ type: "text", text }], ...(isError ? { isError } : {}) });
    });
    const content = contentParts(parts, at);
    if (content.length > 0) messages.push({ role: "user", content });
  });
  return messages;
}
