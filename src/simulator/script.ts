import type { Knobs } from "./knobs.js";
import type { CacheUsage } from "./prompt-cache.js";
import { simulatedTokens } from "./text.js";
import type { NextAction } from "./tool-loop.js";

/**
 * What the simulated model "says", independent of any provider's wire
 * format: each step is one token (one event, one delay). Wire encoders turn
 * the same script into OpenAI, Anthropic or Gemini events, which is what
 * makes cross-provider equivalence testable.
 */
export type ScriptStep =
  | { readonly type: "reasoning"; readonly text: string }
  | { readonly type: "text"; readonly text: string }
  /** `custom`: a freeform tool's call, whose `arguments` are its raw input rather than JSON. */
  | { readonly type: "tool_call"; readonly index: number; readonly id: string; readonly name: string; readonly arguments: string; readonly custom?: boolean }
  | { readonly type: "tool_args"; readonly index: number; readonly fragment: string };

export interface Script {
  readonly steps: readonly ScriptStep[];
  /** `length`: cut at the request's max_tokens, as providers stop. */
  readonly finishReason: "stop" | "tool_calls" | "length";
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
  /** How the input splits into cache reads, cache writes and the rest; only for requests that marked breakpoints. */
  readonly promptCache?: CacheUsage;
}

export { type SimulatedToolCall, simulatedToolCalls } from "./tool-loop.js";

function pad(text: string, chars: number): string {
  return chars > text.length ? text + "·".repeat(chars - text.length) : text;
}

/** The word's printable ASCII, cut or padded with dots to exactly `bytes` bytes. */
export function exactBytes(text: string, bytes: number): string {
  const ascii = text.replace(/[^\x20-\x7e]/g, "");
  return ascii.length >= bytes ? ascii.slice(0, bytes) : ascii + ".".repeat(bytes - ascii.length);
}

function shape(text: string, knobs: Knobs): string {
  return knobs.tokenBytes > 0 ? exactBytes(text, knobs.tokenBytes) : pad(text, knobs.tokenChars);
}

/** What one script says, beyond the knobs: the loop's next action, an answer to say instead of the seeded words, the request's limit. */
export interface ScriptInput {
  readonly inputTokens: number;
  /** The tool loop's decision (tool-loop.ts): calls, a quote of tool results, or a plain answer. */
  readonly action: NextAction;
  /** Text tokens to say instead of the seeded words (a JSON answer, an echo). */
  readonly answer?: readonly string[];
  /** A text every seeded tool call's arguments carry (the echo knob). */
  readonly note?: string;
  /** The request's max_tokens; unset: no limit. */
  readonly maxTokens?: number;
}

/** Splits a text into token-sized pieces (about four characters), as a model streams it. */
function pieces(text: string): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += 4) out.push(text.slice(at, at + 4));
  return out;
}

/**
 * Stops at `max` tokens as a provider does (finish `length`). A tool call
 * cut before its last fragment is left out whole, so what is sent always
 * parses; the count of tokens is what was kept.
 */
function cut(steps: readonly ScriptStep[], max: number): ScriptStep[] {
  const kept = steps.slice(0, max);
  const next = steps[max];
  if (next?.type !== "tool_args") return kept;
  return kept.filter((s) => !((s.type === "tool_call" || s.type === "tool_args") && s.index === next.index));
}

export function buildScript(knobs: Knobs, input: ScriptInput): Script {
  const { action, note } = input;
  const steps: ScriptStep[] = [];
  for (const text of simulatedTokens(knobs.seed + 7919, knobs.reasoning)) steps.push({ type: "reasoning", text });
  // A JSON answer (or an echo) is said even after tool results; otherwise the results are quoted.
  const words = input.answer ?? (action.kind === "quote" ? pieces(action.text) : simulatedTokens(knobs.seed, knobs.tokens));
  for (const text of words) steps.push({ type: "text", text: shape(text, knobs) });
  const made = action.kind === "calls" ? action.calls : [];
  const calls = note === undefined ? made : made.map((call) => (call.custom ? call : { ...call, arguments: JSON.stringify({ ...(JSON.parse(call.arguments) as object), note }) }));
  calls.forEach((call, index) => {
    // The call opens with a first fragment, the rest follow in pieces of 5
    // characters, so reassembly across fragments is always exercised.
    steps.push({ type: "tool_call", index, id: call.id, name: call.name, arguments: call.arguments.slice(0, 5), ...(call.custom ? { custom: true } : {}) });
    for (let at = 5; at < call.arguments.length; at += 5) {
      steps.push({ type: "tool_args", index, fragment: call.arguments.slice(at, at + 5) });
    }
  });
  const limited = !knobs.ignoreMaxTokens && input.maxTokens !== undefined && steps.length > input.maxTokens;
  const said = limited ? cut(steps, input.maxTokens!) : steps;
  return {
    steps: said,
    finishReason: limited ? "length" : said.some((s) => s.type === "tool_call") ? "tool_calls" : "stop",
    inputTokens: input.inputTokens,
    outputTokens: said.length,
    reasoningTokens: Math.min(knobs.reasoning, said.length),
  };
}
