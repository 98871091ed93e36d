import { afterEach, describe, expect, it, vi } from "vitest";
import type { Delta } from "../../src/core/delta.js";
import { toGatewayError } from "../../src/core/errors.js";
import type { Numbered } from "../../src/resume/resumable-streams.js";
import { simulatedText } from "../../src/simulator/text.js";
import { useFakeClock } from "../helpers/fake-clock.js";
import { createInMemoryGateway, type InMemoryGateway } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/** Resumable streams over the in-process stream log, fed by the real pipeline, upstream in memory. */

let gw: InMemoryGateway | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await gw?.close();
  gw = undefined;
});

function open(): InMemoryGateway {
  gw = createInMemoryGateway({ models: { m: "sim-1?tokens=6" }, resume: { detachGraceMs: 1_000 } });
  return gw;
}

const textOf = (entries: readonly Numbered[]) => entries.map((n) => (n.delta.type === "text" ? n.delta.text : "")).join("");
const texts = (entries: readonly Numbered[]) => entries.filter((n) => n.delta.type === "text").length;
const idOf = (entries: readonly Numbered[]) => (entries[0]!.delta as Extract<Delta, { type: "start" }>).responseId;

/** Reads a resumable stream until `leave` says the client goes; then it goes (its signal aborts, it stops reading). */
async function readUntilLeaving(g: InMemoryGateway, text: string, leave: (received: readonly Numbered[]) => boolean): Promise<Numbered[]> {
  const client = new AbortController();
  const received: Numbered[] = [];
  for await (const entry of g.streamResumable("m", text, client.signal)) {
    received.push(entry);
    if (leave(received)) {
      client.abort();
      break;
    }
  }
  return received;
}

const resume = async (g: InMemoryGateway, id: string, onEntry?: (received: readonly Numbered[]) => void) => untilError((await g.resumable.resume(id, undefined, new AbortController().signal)).entries, toGatewayError, onEntry);

describe("resumable streams, replayed from the stream log", () => {
  it("a client that left gets every message again from sequence 0, then the live rest; the upstream outlived it", async () => {
    const g = open();
    const original = await readUntilLeaving(g, "#sim hold_at=3 tag=r", (received) => texts(received) === 2);
    const { received, error } = await resume(g, idOf(original), (replay) => {
      if (texts(replay) === 3) g.sim.records.release("r");
    });
    expect(error).toBeUndefined();
    expect(received.map((n) => n.sequence)).toEqual(received.map((_, i) => i));
    expect(received.slice(0, original.length)).toEqual(original);
    expect(textOf(received)).toBe(simulatedText(1, 6));
    expect(received.at(-1)?.delta.type).toBe("finish");
    expect(g.sim.records.all()[0]).toMatchObject({ tag: "r", outcome: "completed" });
  });

  it("a stream that failed ends its replay with the same error, after the same messages", async () => {
    const g = open();
    const client = new AbortController();
    const live = await untilError(g.streamResumable("m", "#sim fail=drop fail_at=2", client.signal), toGatewayError);
    expect(live.error?.code).toBe("upstream_unavailable");
    const replay = await resume(g, idOf(live.received));
    expect(replay.received).toEqual(live.received);
    expect(replay.error).toMatchObject({ code: live.error!.code, message: live.error!.message });
  });

  it("nobody resuming within detachGraceMs cancels the upstream, and a late reader learns why", async () => {
    const clock = useFakeClock();
    const g = open();
    const original = await readUntilLeaving(g, "#sim hold_at=2 tag=grace", (received) => texts(received) === 1);
    await g.sim.records.waitFor((r) => r.tag === "grace" && r.heldAt !== undefined, 30_000);
    await clock.advance(999);
    expect(g.sim.records.all()[0]?.endedAt).toBeUndefined();
    await clock.advance(1);
    const closed = await g.sim.records.waitFor((r) => r.tag === "grace" && r.endedAt !== undefined, 30_000);
    expect(closed).toMatchObject({ outcome: "client_closed", tokensWritten: 2 });
    const { received, error } = await resume(g, idOf(original));
    expect(textOf(received)).toBe(simulatedText(1, 2));
    expect(error).toMatchObject({ code: "canceled", message: "no client resumed the stream within its detach grace" });
  });

  it("CancelStream stops a detached stream's upstream at once", async () => {
    const g = open();
    const original = await readUntilLeaving(g, "#sim hold_at=2 tag=cancel", (received) => texts(received) === 1);
    await g.sim.records.waitFor((r) => r.tag === "cancel" && r.heldAt !== undefined, 30_000);
    await g.resumable.cancel(idOf(original), undefined);
    const closed = await g.sim.records.waitFor((r) => r.tag === "cancel" && r.endedAt !== undefined, 30_000);
    expect(closed.outcome).toBe("client_closed");
    const { error } = await resume(g, idOf(original));
    expect(error).toMatchObject({ code: "canceled", message: "the stream was cancelled by CancelStream" });
  });
});
