import type { ReasoningPart } from "./chat-request.js";
import type { ReasoningDelta } from "./delta.js";

/**
 * Rebuilds the reasoning blocks of an answer from its reasoning deltas, the
 * way a replay needs them: one part per signed block (text up to and
 * including the delta that carries the signature), one per redacted block,
 * and a signature that arrives alone (Gemini signs text parts) as a part of
 * its own. Non-reasoning content in between ends an unsigned block, so the
 * order of reasoning relative to text survives.
 */
export interface ReasoningCollector {
  add(delta: ReasoningDelta): void;
  /** Text or a tool call arrived: the open block, if any, is over. */
  interrupt(): void;
  parts(): ReasoningPart[];
}

export function createReasoningCollector(): ReasoningCollector {
  const parts: ReasoningPart[] = [];
  let open: { text: string } | undefined;

  const close = () => {
    if (open && open.text !== "") parts.push({ type: "reasoning", text: open.text });
    open = undefined;
  };

  return {
    add(delta) {
      if (delta.redactedData !== undefined) {
        close();
        parts.push({ type: "reasoning", text: "", redactedData: delta.redactedData });
        return;
      }
      if (delta.text !== "") {
        open ??= { text: "" };
        open.text += delta.text;
      }
      if (delta.signature !== undefined) {
        parts.push({ type: "reasoning", text: open?.text ?? "", signature: delta.signature });
        open = undefined;
      }
    },
    interrupt: close,
    parts() {
      close();
      return parts;
    },
  };
}

/** Whether any part carries something a provider verifies on replay. */
export function hasReplayState(parts: readonly ReasoningPart[], toolSignatures: number): boolean {
  return toolSignatures > 0 || parts.some((p) => p.signature !== undefined || p.redactedData !== undefined);
}
