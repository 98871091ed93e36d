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

/** What keeping one opened part means for the opening: go on, stop quietly, or stop with the call's answer. */
const GO_ON = Symbol("go on");

function keep(open: OpenCall, part: StagePart | undefined): Answer | undefined | typeof GO_ON {
  if (!part) return GO_ON;
  if (open.outcome) {
    part.end?.(open.outcome);
    return undefined;
  }
  open.parts.push(part);
  return part.answer ?? GO_ON;
}

/**
 * Opens `stages` in table order for `call`; a stage that throws refuses
 * the call (the error goes to the caller), one that answers ends the
 * opening with its answer. Stops quietly when the call ended meanwhile (a
 * part that opened too late is ended at once). Synchronous until a stage
 * returns a promise: a call whose stages have nothing to wait for starts
 * its attempt in the same turn, without a promise per stage.
 */
export function openStages(stages: readonly Stage[], call: CallState, open: OpenCall, from = 0): Answer | undefined | Promise<Answer | undefined> {
  for (let i = from; i < stages.length; i++) {
    if (open.outcome) return undefined;
    const opening = stages[i]!.open(call);
    if (opening instanceof Promise) {
      return opening.then((part) => {
        const kept = keep(open, part);
        return kept === GO_ON ? openStages(stages, call, open, i + 1) : kept;
      });
    }
    const kept = keep(open, opening);
    if (kept !== GO_ON) return kept;
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
