import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { endCall, openCall, openStages } from "../../../src/pipeline/open-stages.js";
import type { Answer, CallOutcome, Stage, StagePart } from "../../../src/pipeline/stage.js";
import { fakeCall } from "../helpers/fake-call.js";

const ANSWER: Answer = { start: { provider: "p", model: "m" }, deltas: [{ type: "finish", reason: "stop" }] };

/** A promise the test resolves when it chooses (Node 20 has no Promise.withResolvers). */
function gate(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Stages that log their opens and ends; each opens with what `parts` gives it (none: no part). */
function logged(names: readonly string[], parts: Partial<Record<string, (name: string) => StagePart | undefined | Promise<StagePart | undefined>>> = {}) {
  const log: string[] = [];
  const ending = (name: string): StagePart => ({ end: (outcome: CallOutcome) => void log.push(`end ${name}${outcome.failure ? ` ${outcome.failure.code}` : ""}`) });
  const stages: Stage[] = names.map((name) => ({
    name,
    open() {
      log.push(`open ${name}`);
      const make = parts[name];
      return make ? make(name) : ending(name);
    },
  }));
  return { stages, log, ending };
}

describe("openStages and endCall", () => {
  it("opens every stage once in table order, awaiting each, and keeps the parts in that order", async () => {
    const late = gate();
    const { stages, log, ending } = logged(["a", "b", "c", "d"], {
      b: async (name) => {
        await late.promise;
        return ending(name);
      },
      c: () => undefined,
    });
    const open = openCall();
    const opening = openStages(stages, fakeCall().call, open);
    expect(log).toEqual(["open a", "open b"]);
    late.resolve();
    expect(await opening).toBeUndefined();
    expect(log).toEqual(["open a", "open b", "open c", "open d"]);
    expect(open.parts).toHaveLength(3);
  });

  it("a stage's answer ends the opening: later stages never open, and the answering part is kept to be ended", async () => {
    const { stages, log, ending } = logged(["a", "cache", "record"], { cache: (name) => ({ ...ending(name), answer: ANSWER }) });
    const open = openCall();
    expect(await openStages(stages, fakeCall().call, open)).toBe(ANSWER);
    expect(log).toEqual(["open a", "open cache"]);
    endCall(open, {}, () => undefined);
    expect(log.slice(2)).toEqual(["end cache", "end a"]);
  });

  it("a stage that throws refuses the call; the parts opened before it are ended by the caller", async () => {
    const refusal = new GatewayError("rate_limited", "no");
    const { stages, log } = logged(["a", "b", "c"], {
      b: () => {
        throw refusal;
      },
    });
    const open = openCall();
    // Synchronous stages open synchronously: the refusal is thrown, not a rejected promise.
    expect(() => openStages(stages, fakeCall().call, open)).toThrow(refusal);
    expect(log).toEqual(["open a", "open b"]);
    endCall(open, { failure: refusal }, () => undefined);
    expect(log.slice(2)).toEqual(["end a rate_limited"]);
  });

  it("ends run in reverse table order, once, however often the call is ended", () => {
    const { ending, log } = logged([]);
    const open = openCall();
    open.parts.push(ending("a"), {}, ending("b"), ending("c"));
    const outcome: CallOutcome = { failure: new GatewayError("canceled", "gone") };
    endCall(open, outcome, () => undefined);
    endCall(open, {}, () => undefined);
    expect(log).toEqual(["end c canceled", "end b canceled", "end a canceled"]);
    expect(open.outcome).toBe(outcome);
  });

  it("a part that opens after the call ended is ended at once with its outcome, and no stage opens after it", async () => {
    const late = gate();
    const { stages, log, ending } = logged(["a", "slow", "c"], {
      slow: async (name) => {
        await late.promise;
        return ending(name);
      },
    });
    const open = openCall();
    const opening = openStages(stages, fakeCall().call, open);
    endCall(open, { failure: new GatewayError("shutting_down", "bye") }, () => undefined);
    late.resolve();
    expect(await opening).toBeUndefined();
    expect(log).toEqual(["open a", "open slow", "end a shutting_down", "end slow shutting_down"]);
    expect(open.parts).toHaveLength(1);
  });

  it("a stage that opens nothing while the call ends meanwhile stops the opening quietly", async () => {
    const late = gate();
    const { stages, log } = logged(["a", "slow", "c"], {
      slow: async () => {
        await late.promise;
        return undefined;
      },
    });
    const open = openCall();
    const opening = openStages(stages, fakeCall().call, open);
    endCall(open, {}, () => undefined);
    late.resolve();
    expect(await opening).toBeUndefined();
    expect(log).toEqual(["open a", "open slow", "end a"]);
  });

  it("one end that throws is reported and does not keep the others from ending", () => {
    const { ending, log } = logged([]);
    const broken = new Error("broken end");
    const reported: unknown[] = [];
    const open = openCall();
    open.parts.push(
      ending("a"),
      {
        end: () => {
          throw broken;
        },
      },
      ending("c"),
    );
    endCall(open, {}, (error) => reported.push(error));
    expect(log).toEqual(["end c", "end a"]);
    expect(reported).toEqual([broken]);
  });
});
