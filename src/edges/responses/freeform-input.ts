/**
 * The text of a freeform (custom) tool call, read out of its canonical
 * arguments — `{"input": "…"}`, a function with one string parameter
 * (core/chat-request.ts FREEFORM_PARAMETERS) — while they stream, so a
 * Responses caller gets `response.custom_tool_call_input.delta` events as the
 * model writes instead of one event at the end. Arguments of another shape
 * (a model that wrote more keys, or keys first) are read whole at the end.
 */
export interface FreeformDecoder {
  /** The text this piece of JSON completes (may be empty). */
  push(json: string): string;
  /** The text still owed once the arguments are complete. */
  end(): string;
  /** All the text so far. */
  readonly input: string;
}

/** Every prefix of `{"input":"` with whitespace where JSON allows it: the arguments may still be the expected shape. */
const VIABLE = /^\s*(?:\{\s*(?:"(?:i(?:n(?:p(?:u(?:t(?:"\s*(?::\s*)?)?)?)?)?)?)?)?)?$/;
const OPENING = /^\s*\{\s*"input"\s*:\s*"/;
const ESCAPES: Readonly<Record<string, string>> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

export function createFreeformDecoder(): FreeformDecoder {
  let json = "";
  let state: "seek" | "string" | "closed" | "whole" = "seek";
  /** Where decoding of the string value stands in `json`. */
  let at = 0;
  let input = "";

  function decode(): string {
    let out = "";
    while (at < json.length) {
      const c = json[at]!;
      if (c === '"') {
        state = "closed";
        at++;
        break;
      }
      if (c !== "\\") {
        out += c;
        at++;
        continue;
      }
      const e = json[at + 1];
      if (e === undefined) break;
      if (e === "u") {
        const hex = json.slice(at + 2, at + 6);
        if (hex.length < 4) break;
        out += String.fromCharCode(Number.parseInt(hex, 16));
        at += 6;
        continue;
      }
      out += ESCAPES[e] ?? e;
      at += 2;
    }
    input += out;
    return out;
  }

  return {
    push(piece) {
      json += piece;
      if (state === "seek") {
        const open = OPENING.exec(json);
        if (open) {
          state = "string";
          at = open[0].length;
        } else if (!VIABLE.test(json)) state = "whole";
      }
      return state === "string" ? decode() : "";
    },
    end() {
      if (state === "string" || state === "closed") {
        // The opening matched, but a model may have added keys after it: the whole arguments decide.
        return "";
      }
      let whole = json;
      try {
        const parsed = JSON.parse(json) as unknown;
        const value = parsed !== null && typeof parsed === "object" ? (parsed as { input?: unknown }).input : undefined;
        if (typeof value === "string") whole = value;
      } catch {
        // Not JSON: the model wrote the text itself, which is what a freeform tool takes.
      }
      input += whole;
      return whole;
    },
    get input() {
      return input;
    },
  };
}
