import { nonce } from "./gateway.js";

/**
 * The task every SDK test gives: call the `lookup` tool (the simulator is
 * told to, by a `#sim` line), whose result carries a nonce; the answer
 * after the tool result quotes it. `expected` is what the answer must hold.
 */
export interface ToolTask {
  readonly prompt: string;
  /** The tool's result: what the client's tool function returns. */
  readonly result: string;
  readonly expected: string;
}

export function toolTask(extraDirectives: readonly string[] = []): ToolTask {
  const code = nonce("code");
  const expected = nonce("found");
  return {
    prompt: ["Look up the code and tell me what the lookup returned.", ...extraDirectives, `#sim call=lookup args=${JSON.stringify({ code })}`].join("\n"),
    result: `lookup of ${code}: ${expected}`,
    expected,
  };
}

export const LOOKUP_DESCRIPTION = "Looks up a code and returns what is filed under it.";
