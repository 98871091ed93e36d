import { schemaInstance } from "./json-answer.js";
import { createRandom } from "./random.js";
import { simulatedTokens } from "./text.js";
import { parseToolDirectives, type ToolDirective } from "./tool-directives.js";

/**
 * What the simulated model does next in an agent's tool loop, apart from
 * any wire: each wire (Chat Completions, Messages, Gemini, and later
 * Responses) reads its request into declared tools and conversation turns,
 * and renders the action this module decides. Keeping the decision here is
 * what makes a tool loop behave the same on every upstream wire.
 */

/** A tool the request declares: a function with a JSON schema, or a freeform (custom) tool. */
export interface DeclaredTool {
  readonly name: string;
  readonly kind: "function" | "custom";
  /** The function's parameters (JSON Schema); absent for custom tools and for tools declared without one. */
  readonly schema?: Record<string, unknown>;
}

/** One turn of the conversation, as the loop needs it. */
export type Turn =
  | { readonly role: "user"; readonly text: string }
  | { readonly role: "assistant"; readonly calls: readonly { readonly id: string; readonly name: string }[] }
  | { readonly role: "tool"; readonly callId?: string; readonly name?: string; readonly output: string };

/** The wire-neutral view of a request the loop decides on. */
export interface LoopRequest {
  readonly tools: readonly DeclaredTool[];
  readonly turns: readonly Turn[];
  /** The request's tool choice where it limits the model: no calls at all, or only this tool. */
  readonly choice?: "none" | { readonly name: string };
}

/** One complete tool call the simulator makes. `arguments` is JSON for a function, the raw input for a custom tool. */
export interface SimulatedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
  readonly custom?: boolean;
}

export type NextAction =
  /** Say the seeded words (or whatever the knobs say), and call nothing. */
  | { readonly kind: "answer" }
  /** Answer after tool results: a text that quotes each result verbatim. */
  | { readonly kind: "quote"; readonly text: string }
  /** Call these tools (after the seeded words). */
  | { readonly kind: "calls"; readonly calls: readonly SimulatedToolCall[] };

const CITIES = ["Paris", "Lagos", "Osaka", "Lima", "Oslo", "Quito"];

/**
 * The id of call `index` in a response: seeded, and carrying the number of
 * assistant turns already in the conversation, so no id repeats across the
 * turns of one conversation (Anthropic refuses a conversation that does).
 */
export function toolCallId(seed: number, turn: number, index: number): string {
  return `call_sim_${seed}_${turn}_${index}`;
}

function firstStringProperty(schema: Record<string, unknown> | undefined): string | undefined {
  const properties = (schema?.properties ?? {}) as Record<string, { type?: unknown }>;
  return Object.keys(properties).find((key) => properties[key]?.type === "string");
}

/** Arguments valid for a tool's schema; a tool without declared properties gets the seeded weather arguments. */
function argumentsFor(tool: DeclaredTool | undefined, next: () => number, seed: number): string {
  const properties = tool?.schema?.properties;
  if (tool?.schema && properties !== null && typeof properties === "object" && Object.keys(properties).length > 0) {
    return JSON.stringify(schemaInstance(tool.schema, seed));
  }
  return JSON.stringify({ city: CITIES[Math.floor(next() * CITIES.length)]!, days: 1 + Math.floor(next() * 9) });
}

/**
 * Seeded calls when the knobs ask for `count` calls and no directive names
 * them: the declared tools in turn (`get_weather` when none are declared),
 * with arguments valid for each one's schema, or seeded words for a custom tool.
 */
export function simulatedToolCalls(seed: number, count: number, tools: readonly (DeclaredTool | string)[], turn = 0): SimulatedToolCall[] {
  const declared = tools.map((t): DeclaredTool => (typeof t === "string" ? { name: t, kind: "function" } : t));
  const next = createRandom(seed ^ 0x5eed);
  const calls: SimulatedToolCall[] = [];
  for (let i = 0; i < count; i++) {
    const tool = declared.length > 0 ? declared[i % declared.length]! : undefined;
    const id = toolCallId(seed, turn, i);
    if (tool?.kind === "custom")
      calls.push({
        id,
        name: tool.name,
        arguments: simulatedTokens(seed + i, 4)
          .join("")
          .trim(),
        custom: true,
      });
    else calls.push({ id, name: tool?.name ?? "get_weather", arguments: argumentsFor(tool, next, seed + i) });
  }
  return calls;
}

/** The call a directive asks for, resolved against the declared tools. */
function directedCall(d: ToolDirective, tools: readonly DeclaredTool[], id: string, seed: number): SimulatedToolCall {
  const named = d.call === undefined ? undefined : tools.find((t) => t.name === d.call);
  if (d.input !== undefined) {
    const tool = named ?? tools.find((t) => t.kind === "custom") ?? tools.find((t) => firstStringProperty(t.schema) !== undefined);
    const name = d.call ?? tool?.name;
    if (name === undefined) throw new Error("#sim input=…: the request declares no custom tool (nor a tool with a string parameter) to give it to");
    if (tool?.kind === "custom") return { id, name, arguments: d.input, custom: true };
    return { id, name, arguments: JSON.stringify({ [firstStringProperty(tool?.schema) ?? "input"]: d.input }) };
  }
  const name = d.call!;
  if (d.args !== undefined) return { id, name, arguments: d.args };
  return { id, name, arguments: argumentsFor(named ?? { name, kind: "function" }, createRandom(seed ^ 0x5eed), seed) };
}

/** What each result said, one line each (a result's own lines kept), named by the call it answers. */
function quoteResults(results: readonly Extract<Turn, { role: "tool" }>[], names: ReadonlyMap<string, string>): string {
  return results.map((r) => `${r.name ?? (r.callId === undefined ? undefined : names.get(r.callId)) ?? "tool"} returned: ${r.output}`).join("\n");
}

/**
 * The next action for a request: directives in the latest user prompt are
 * consumed one step per tool round that came back since it; with none left,
 * a conversation that ends in tool results gets an answer quoting them, and
 * a fresh prompt gets `count` seeded calls (the `tools` knob) or an answer.
 */
export function nextAction(request: LoopRequest, knobs: { readonly seed: number; readonly tools: number }): NextAction {
  const { turns, tools } = request;
  const promptAt = turns.findLastIndex((t) => t.role === "user");
  const prompt = promptAt >= 0 ? (turns[promptAt] as Extract<Turn, { role: "user" }>).text : "";
  const since = turns.slice(promptAt + 1);
  const rounds = since.filter((t) => t.role === "assistant" && t.calls.length > 0).length;
  const turn = turns.filter((t) => t.role === "assistant").length;
  const used = new Set(turns.flatMap((t) => (t.role === "assistant" ? t.calls.map((c) => c.id) : [])));
  const freshId = (index: number): string => {
    let id = toolCallId(knobs.seed, turn, index);
    for (let n = 1; used.has(id); n++) id = `${toolCallId(knobs.seed, turn, index)}_${n}`;
    return id;
  };

  // tool_choice none: a provider's model calls nothing, whatever the prompt says.
  const plan = request.choice === "none" ? [] : parseToolDirectives(prompt);
  if (rounds < plan.length) {
    return { kind: "calls", calls: plan[rounds]!.map((d, i) => directedCall(d, tools, freshId(i), knobs.seed + rounds * 31 + i)) };
  }
  if (turns.at(-1)?.role === "tool") {
    const names = new Map(since.flatMap((t) => (t.role === "assistant" ? t.calls.map((c): [string, string] => [c.id, c.name]) : [])));
    return {
      kind: "quote",
      text: quoteResults(
        since.filter((t): t is Extract<Turn, { role: "tool" }> => t.role === "tool"),
        names,
      ),
    };
  }
  if (knobs.tools > 0 && plan.length === 0 && request.choice !== "none") {
    const choice = request.choice;
    const offered = choice === undefined ? tools : tools.filter((t) => t.name === choice.name);
    return { kind: "calls", calls: simulatedToolCalls(knobs.seed, knobs.tools, offered, turn).map((c, i) => ({ ...c, id: freshId(i) })) };
  }
  return { kind: "answer" };
}
