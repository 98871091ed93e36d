import type { Delta } from "../core/delta.js";
import type { DeltaSink } from "../core/delta-sink.js";
import { createRestorer, type PiiVault } from "./pii-vault.js";

type Restorer = ReturnType<typeof createRestorer>;

/**
 * The caller's side of a redacted request: text, reasoning text and
 * tool-call arguments pass through restorers that put the values back,
 * one for the text and one per tool call (a placeholder split across
 * deltas is joined before it is replaced). What a restorer holds back (at
 * most the start of one placeholder) is sent before the next delta of
 * another kind and before the end, so nothing is lost.
 * Everything before this sink (the cache's capture, telemetry, usage
 * counting) sees only placeholders.
 */
export function restoringSink(sink: DeltaSink<Delta>, vault: PiiVault): DeltaSink<Delta> {
  let text: Restorer | undefined;
  let reasoning: Restorer | undefined;
  const tools = new Map<number, Restorer>();

  /**
   * Sends what the restorers hold, except the one `keep` (the stream goes on
   * with it) and, while tool calls stream, the other calls' (providers may
   * interleave parallel calls; each call's arguments are joined apart).
   */
  const release = (keep?: Restorer, keepTools = false): boolean => {
    let credit = true;
    if (text && text !== keep) {
      const rest = text.flush();
      if (rest !== "") credit = sink.push({ type: "text", text: rest }, true) && credit;
    }
    if (reasoning && reasoning !== keep) {
      const rest = reasoning.flush();
      if (rest !== "") credit = sink.push({ type: "reasoning", text: rest }, true) && credit;
    }
    if (keepTools) return credit;
    for (const [index, restorer] of tools) {
      if (restorer === keep) continue;
      const rest = restorer.flush();
      if (rest !== "") credit = sink.push({ type: "tool_call", index, arguments: rest }, true) && credit;
    }
    return credit;
  };

  return {
    push(delta, more) {
      switch (delta.type) {
        case "text": {
          text ??= createRestorer(vault);
          const credit = release(text);
          const out = text.push(delta.text);
          // An empty piece still goes out when nothing follows at once: a writer waiting for the end of a batch must hear it.
          return out === "" && more ? credit : sink.push(out === delta.text ? delta : { ...delta, text: out }, more) && credit;
        }
        case "reasoning": {
          if (delta.signature !== undefined || delta.redactedData !== undefined) break;
          reasoning ??= createRestorer(vault);
          const credit = release(reasoning);
          const out = reasoning.push(delta.text);
          return out === "" && more ? credit : sink.push(out === delta.text ? delta : { ...delta, text: out }, more) && credit;
        }
        case "tool_call": {
          let restorer = tools.get(delta.index);
          if (!restorer) tools.set(delta.index, (restorer = createRestorer(vault)));
          const credit = release(restorer, true);
          const out = restorer.push(delta.arguments);
          const opens = delta.id !== undefined || delta.name !== undefined || delta.signature !== undefined;
          return out === "" && more && !opens ? credit : sink.push(out === delta.arguments ? delta : { ...delta, arguments: out }, more) && credit;
        }
        default:
          break;
      }
      const credit = release();
      return sink.push(delta, more) && credit;
    },
    end(error) {
      if (!error) release();
      sink.end(error);
    },
  };
}
