import type { Knobs } from "./knobs.js";
import type { CacheUsage } from "./prompt-cache.js";
import { createRandom } from "./random.js";
import { simulatedTokens } from "./text.js";

/**
 * What the simulated model "says", independent of any provider's wire
 * format: each step is one token (one event, one delay). Wire encoders turn
 * the same script into OpenAI, Anthropic or Gemini events, which is what
 * makes cross-provider equivalence testable.
 */
export type ScriptStep =
  | { readonly type: "reasoning"; readonly text: string }
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_call"; readonly index: number; readonly id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "tool_args"; readonly index: number; readonly fragment: string };

export interface Script {
  readonly steps: readonly ScriptStep[];
  readonly finishReason: "stop" | "tool_calls";
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
  /** How the input splits into cache reads, cache writes and the rest; only for requests that marked breakpoints. */
  readonly promptCache?: CacheUsage;
}

/** The complete tool calls a script makes, for assertions. */
export interface SimulatedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

const CITIES = ["Paris", "Lagos", "Osaka", "Lima", "Oslo", "Quito"];

/** Tool calls for a seed: deterministic names (from the request's tools) and JSON arguments. */
export function simulatedToolCalls(seed: number, count: number, toolNames: readonly string[]): SimulatedToolCall[] {
  const next = createRandom(seed ^ 0x5eed);
  const calls: SimulatedToolCall[] = [];
  for (let i = 0; i < count; i++) {
    const name = toolNames.length > 0 ? toolNames[i % toolNames.length]! : "get_weather";
    const args = { city: CITIES[Math.floor(next() * CITIES.length)]!, days: 1 + Math.floor(next() * 9) };
    calls.push({ id: `call_sim_${seed}_${i}`, name, arguments: JSON.stringify(args) });
  }
  return calls;
}

function pad(text: string, chars: number): string {
  return chars > text.length ? text + "·".repeat(chars - text.length) : text;
}

/** `answer`: the text tokens to say instead of the seeded words (a JSON answer, say); `note`: a text every tool call's arguments carry (the echo knob). */
export function buildScript(knobs: Knobs, toolNames: readonly string[], inputTokens: number, answer?: readonly string[], note?: string): Script {
  const steps: ScriptStep[] = [];
  for (const text of simulatedTokens(knobs.seed + 7919, knobs.reasoning)) steps.push({ type: "reasoning", text });
  for (const text of answer ?? simulatedTokens(knobs.seed, knobs.tokens)) steps.push({ type: "text", text: pad(text, knobs.tokenChars) });
  const seeded = simulatedToolCalls(knobs.seed, knobs.tools, toolNames);
  const calls = note === undefined ? seeded : seeded.map((call) => ({ ...call, arguments: JSON.stringify({ ...(JSON.parse(call.arguments) as object), note }) }));
  calls.forEach((call, index) => {
    // The call opens with a first fragment, the rest follow in pieces of 5
    // characters, so reassembly across fragments is always exercised.
    steps.push({ type: "tool_call", index, id: call.id, name: call.name, arguments: call.arguments.slice(0, 5) });
    for (let at = 5; at < call.arguments.length; at += 5) {
      steps.push({ type: "tool_args", index, fragment: call.arguments.slice(at, at + 5) });
    }
  });
  return {
    steps,
    finishReason: calls.length > 0 ? "tool_calls" : "stop",
    inputTokens,
    outputTokens: steps.length,
    reasoningTokens: knobs.reasoning,
  };
}
