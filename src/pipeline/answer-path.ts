import type { ContentDelta, Delta } from "../core/delta.js";
import type { DeltaSink } from "../core/delta-sink.js";
import type { GatewayError } from "../core/errors.js";
import type { UsageMeter } from "../usage/usage-meter.js";
import type { StagePart, Stop } from "./stage.js";

/** What the answer path needs of its call: where deltas go, and how the call ends. */
export interface AnswerIo {
  readonly parts: readonly StagePart[];
  /** The stages' checks on each content delta, installed when the attempt committed. */
  readonly guards: ReadonlyArray<(delta: ContentDelta) => Stop | undefined>;
  readonly meter: UsageMeter;
  /** Taps, then the client's sink; false when the sink has no credit left. */
  readonly forward: (delta: Delta, more: boolean) => boolean;
  readonly ended: () => boolean;
  /** Ends the call (no failure: completed, or cut). */
  readonly end: (failure?: GatewayError) => void;
  /** Ends the call with what `error` means now (the abort's reason, when the call was aborted). */
  readonly fail: (error: unknown) => void;
  /** A stage stopped the answer: the call records why and stops its upstream. */
  readonly stopUpstream: (stop: Stop) => void;
  /** Asks the upstream for more, when the client's sink has credit. */
  readonly resume: () => void;
}

/** The committed attempt's content deltas on their way to the client, and whether they are waiting behind a stage's addition. */
export interface AnswerPath {
  readonly content: DeltaSink<ContentDelta>;
  /** True while deltas wait behind what a stage adds before `finish`: the feed must not resume the upstream meanwhile. */
  holding(): boolean;
}

/**
 * Between the attempt and the client: each content delta is checked by the
 * stages' guards (a Stop cuts the answer there), counted by the meter and
 * forwarded; at `finish`, what the stages add first (an estimated usage)
 * is awaited and sent before it, the deltas behind it held meanwhile.
 */
export function answerPath(io: AnswerIo): AnswerPath {
  let held: Array<{ readonly delta: ContentDelta; readonly more: boolean }> | undefined;
  let heldEnd: { readonly error?: GatewayError } | undefined;
  let cut = false;

  /** What the stages add before `finish`, when any has something to add (undefined: nothing to wait for). */
  const beforeFinish = (): Promise<Delta[]> | undefined => {
    let pending: Array<Promise<Delta | undefined>> | undefined;
    for (const part of io.parts) {
      const adding = part.beforeFinish?.();
      if (adding) (pending ??= []).push(adding);
    }
    return pending && Promise.all(pending).then((added) => added.filter((delta): delta is Delta => delta !== undefined));
  };

  /** The upstream stops now, what was delivered is counted, and the client gets the stop's finish. */
  const cutAnswer = (stop: Stop): false => {
    cut = true;
    held = [];
    io.stopUpstream(stop);
    void (beforeFinish() ?? Promise.resolve([])).then((added) => {
      if (io.ended()) return;
      for (const delta of added) io.forward(delta, true);
      io.forward({ type: "finish", reason: stop.finish }, false);
      io.end();
    }, io.fail);
    return false;
  };

  const content: DeltaSink<ContentDelta> = {
    push(delta, more) {
      if (io.ended()) return false;
      if (held) {
        if (!cut) held.push({ delta, more });
        return false;
      }
      for (const guard of io.guards) {
        const stop = guard(delta);
        if (stop) return cutAnswer(stop);
      }
      const adding = delta.type === "finish" ? beforeFinish() : undefined;
      if (!adding) {
        io.meter.observe(delta);
        return io.forward(delta, more);
      }
      held = [{ delta, more }];
      void adding.then((added) => {
        if (io.ended()) return;
        for (const extra of added) io.forward(extra, true);
        const queued = held!;
        held = undefined;
        for (const item of queued) {
          io.meter.observe(item.delta);
          io.forward(item.delta, item.more);
        }
        if (heldEnd) content.end(heldEnd.error);
        else io.resume();
      }, io.fail);
      return false;
    },
    end(error) {
      if (held) {
        heldEnd = error ? { error } : {};
        return;
      }
      if (error) io.fail(error);
      else io.end();
    },
  };
  return { content, holding: () => held !== undefined };
}
