import type { Answer, CallOutcome, CallState, Stage, StagePart } from "./stage.js";

/** One call's opened stages: their parts in table order, and the outcome once it ended. */
export interface OpenCall {
  readonly parts: StagePart[];
  /** Set by `endCall`: a part that opens later is ended at once with it. */
  outcome: CallOutcome | undefined;
}

export function openCall(): OpenCall {
  return { parts: [], outcome: undefined };
}

/**
 * Opens `stages` in table order for `call`; a stage that throws refuses
 * the call (the error goes to the caller), one that answers ends the
 * opening with its answer. Stops quietly when the call ended meanwhile (a
 * part that opened too late is ended at once).
 */
export async function openStages(stages: readonly Stage[], call: CallState, open: OpenCall): Promise<Answer | undefined> {
  for (const stage of stages) {
    if (open.outcome) return undefined;
    const opening = stage.open(call);
    const part = opening instanceof Promise ? await opening : opening;
    if (!part) continue;
    if (open.outcome) {
      part.end?.(open.outcome);
      return undefined;
    }
    open.parts.push(part);
    if (part.answer) return part.answer;
  }
  return undefined;
}

/** Ends every opened part once, in reverse table order; one part's failure does not keep the others from ending. */
export function endCall(open: OpenCall, outcome: CallOutcome, report: (error: unknown) => void): void {
  if (open.outcome) return;
  open.outcome = outcome;
  for (let i = open.parts.length - 1; i >= 0; i--) {
    try {
      open.parts[i]!.end?.(outcome);
    } catch (error) {
      report(error);
    }
  }
}
