import type { DeclaredTool, LoopRequest, Turn } from "./tool-loop.js";

/**
 * Each wire's request read as the tool loop's input (tool-loop.ts): the
 * declared tools with their schemas, and the conversation as user prompts,
 * assistant calls and tool results. One reader per wire, so the loop itself
 * never sees a wire's shapes.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
const schemaOf = (v: unknown): Record<string, unknown> | undefined => (isObject(v) ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Text parts joined: a content string, or the `text` of each text block/part. */
function joinedText(content: unknown): string {
  if (typeof content === "string") return content;
  return list(content)
    .filter((p): p is Json => isObject(p) && typeof p.text === "string" && (p.type === undefined || p.type === "text" || p.type === "input_text"))
    .map((p) => p.text as string)
    .join("\n");
}

function tool(name: unknown, schema: unknown, kind: DeclaredTool["kind"] = "function"): DeclaredTool[] {
  if (typeof name !== "string") return [];
  const parameters = schemaOf(schema);
  return [{ name, kind, ...(parameters ? { schema: parameters } : {}) }];
}

/** The tool choice where it limits the model, from each wire's words for "none" and for one named tool. */
function choiceOf(none: boolean, name: unknown): Pick<LoopRequest, "choice"> {
  return none ? { choice: "none" } : typeof name === "string" ? { choice: { name } } : {};
}

/** OpenAI Chat Completions: `tools[].function`, and messages with `tool_calls` and role `tool`. */
export function openAiLoopInput(body: { tools?: unknown; messages?: unknown; tool_choice?: unknown }): LoopRequest {
  const tools = list(body.tools).flatMap((t) => (isObject(t) && isObject(t.function) ? tool(t.function.name, t.function.parameters) : []));
  const turns = list(body.messages).flatMap((m): Turn[] => {
    if (!isObject(m)) return [];
    switch (m.role) {
      case "user":
        return [{ role: "user", text: joinedText(m.content) }];
      case "assistant":
        return [
          {
            role: "assistant",
            calls: list(m.tool_calls)
              .filter(isObject)
              .map((c) => ({ id: String(c.id), name: String(isObject(c.function) ? c.function.name : "") })),
          },
        ];
      case "tool":
        return [{ role: "tool", ...(typeof m.tool_call_id === "string" ? { callId: m.tool_call_id } : {}), output: joinedText(m.content) }];
      case "function":
        return [{ role: "tool", ...(typeof m.name === "string" ? { name: m.name } : {}), output: joinedText(m.content) }];
      default:
        return [];
    }
  });
  const choice = body.tool_choice;
  return { tools, turns, ...choiceOf(choice === "none", isObject(choice) && isObject(choice.function) ? choice.function.name : undefined) };
}

/** Anthropic Messages: client tools (`input_schema`), `tool_use` blocks, and user messages of `tool_result` blocks. */
export function anthropicLoopInput(body: { tools?: unknown; messages?: unknown; tool_choice?: unknown }): LoopRequest {
  // Server tools (web search, code execution) carry a versioned type; the loop calls only client tools.
  const tools = list(body.tools).flatMap((t) => (isObject(t) && (t.type === undefined || t.type === "custom") ? tool(t.name, t.input_schema) : []));
  const turns = list(body.messages).flatMap((m): Turn[] => {
    if (!isObject(m)) return [];
    const blocks = list(m.content).filter(isObject);
    if (m.role === "assistant") {
      return [{ role: "assistant", calls: blocks.filter((b) => b.type === "tool_use").map((b) => ({ id: String(b.id), name: String(b.name) })) }];
    }
    if (m.role !== "user") return [];
    const results = blocks.filter((b) => b.type === "tool_result");
    // A message of tool results is the results, whatever text rides along with them (agents add reminders).
    if (results.length === 0) return [{ role: "user", text: joinedText(m.content) }];
    return results.map((r) => ({ role: "tool", ...(typeof r.tool_use_id === "string" ? { callId: r.tool_use_id } : {}), output: joinedText(r.content) }));
  });
  const choice = isObject(body.tool_choice) ? body.tool_choice : {};
  return { tools, turns, ...choiceOf(choice.type === "none", choice.type === "tool" ? choice.name : undefined) };
}

/** A function response as text: its one string field verbatim, else its JSON. */
function responseText(response: unknown): string {
  if (!isObject(response)) return JSON.stringify(response ?? null);
  const values = Object.values(response);
  return values.length === 1 && typeof values[0] === "string" ? values[0] : JSON.stringify(response);
}

/** Gemini: `functionDeclarations`, model `functionCall` parts, and user `functionResponse` parts. */
export function geminiLoopInput(body: { tools?: unknown; contents?: unknown; toolConfig?: unknown }): LoopRequest {
  const tools = list(body.tools)
    .filter(isObject)
    .flatMap((t) => list(t.functionDeclarations).filter(isObject))
    .flatMap((f) => tool(f.name, f.parametersJsonSchema ?? f.parameters));
  const turns = list(body.contents).flatMap((c, i): Turn[] => {
    if (!isObject(c)) return [];
    const parts = list(c.parts).filter(isObject);
    if (c.role === "model") {
      const calls = parts.map((p) => p.functionCall).filter(isObject);
      return [{ role: "assistant", calls: calls.map((f, j) => ({ id: typeof f.id === "string" ? f.id : `gemini_${i}_${j}`, name: String(f.name) })) }];
    }
    const responses = parts.map((p) => p.functionResponse).filter(isObject);
    if (responses.length === 0) return [{ role: "user", text: joinedText(parts) }];
    return responses.map((r) => ({
      role: "tool",
      ...(typeof r.name === "string" ? { name: r.name } : {}),
      ...(typeof r.id === "string" ? { callId: r.id } : {}),
      output: responseText(r.response),
    }));
  });
  const config = isObject(body.toolConfig) && isObject(body.toolConfig.functionCallingConfig) ? body.toolConfig.functionCallingConfig : {};
  const allowed = list(config.allowedFunctionNames);
  return { tools, turns, ...choiceOf(config.mode === "NONE", config.mode === "ANY" && allowed.length === 1 ? allowed[0] : undefined) };
}

/** The request's output limit, when it sets a usable one. */
export function maxTokensOf(value: unknown): { maxTokens?: number } {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? { maxTokens: value } : {};
}

/**
 * OpenAI Responses: `function` and `custom` tools (namespace members flat as
 * `ns__member`, hosted tools left out: the provider runs those), and input
 * items: messages, `function_call` / `custom_tool_call` items (one assistant
 * turn per run of them) and their `_output` items.
 */
export function responsesLoopInput(body: { tools?: unknown; input?: unknown; tool_choice?: unknown }): LoopRequest {
  const declare = (t: unknown, namespace?: string): DeclaredTool[] => {
    if (!isObject(t) || typeof t.name !== "string") return [];
    const name = namespace === undefined ? t.name : `${namespace}__${t.name}`;
    if (t.type === "custom") return [{ name, kind: "custom" }];
    return t.type === "function" ? tool(name, t.parameters) : [];
  };
  const tools = list(body.tools).flatMap((t) => (isObject(t) && t.type === "namespace" && typeof t.name === "string" ? list(t.tools).flatMap((m) => declare(m, t.name as string)) : declare(t)));
  const turns: Turn[] = [];
  if (typeof body.input === "string") turns.push({ role: "user", text: body.input });
  for (const item of list(body.input).filter(isObject)) {
    if (item.type === "function_call" || item.type === "custom_tool_call") {
      const call = { id: String(item.call_id), name: typeof item.namespace === "string" ? `${item.namespace}__${String(item.name)}` : String(item.name) };
      const last = turns.at(-1);
      if (last?.role === "assistant") turns[turns.length - 1] = { role: "assistant", calls: [...last.calls, call] };
      else turns.push({ role: "assistant", calls: [call] });
    } else if (item.type === "function_call_output" || item.type === "custom_tool_call_output") {
      turns.push({ role: "tool", ...(typeof item.call_id === "string" ? { callId: item.call_id } : {}), output: joinedText(item.output) });
    } else if ((item.type === undefined || item.type === "message") && item.role === "user") {
      turns.push({ role: "user", text: joinedText(item.content) });
    } else if ((item.type === undefined || item.type === "message") && item.role === "assistant") {
      turns.push({ role: "assistant", calls: [] });
    }
  }
  const choice = body.tool_choice;
  return { tools, turns, ...choiceOf(choice === "none", isObject(choice) && (choice.type === "function" || choice.type === "custom") ? choice.name : undefined) };
}

/** Bedrock Converse: `toolConfig.tools[].toolSpec`, assistant `toolUse` blocks, and user turns of `toolResult` blocks. */
export function converseLoopInput(body: { toolConfig?: unknown; messages?: unknown }): LoopRequest {
  const config = isObject(body.toolConfig) ? body.toolConfig : {};
  const tools = list(config.tools).flatMap((t) => (isObject(t) && isObject(t.toolSpec) ? tool(t.toolSpec.name, isObject(t.toolSpec.inputSchema) ? t.toolSpec.inputSchema.json : undefined) : []));
  const turns = list(body.messages).flatMap((m): Turn[] => {
    if (!isObject(m)) return [];
    const blocks = list(m.content).filter(isObject);
    if (m.role === "assistant") {
      return [
        {
          role: "assistant",
          calls: blocks
            .map((b) => b.toolUse)
            .filter(isObject)
            .map((u) => ({ id: String(u.toolUseId), name: String(u.name) })),
        },
      ];
    }
    const results = blocks.map((b) => b.toolResult).filter(isObject);
    if (results.length === 0) return [{ role: "user", text: joinedText(blocks) }];
    return results.map((r) => ({ role: "tool", ...(typeof r.toolUseId === "string" ? { callId: r.toolUseId } : {}), output: joinedText(r.content) }));
  });
  const choice = isObject(config.toolChoice) && isObject(config.toolChoice.tool) ? config.toolChoice.tool.name : undefined;
  return { tools, turns, ...choiceOf(false, choice) };
}
