import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/core/errors.js";
import { inputItemId, newResponseId } from "../../src/response-state/response-ids.js";
import type { ResponseStore, StoredResponse } from "../../src/response-state/stored-response.js";

/** One store under the contract, fresh for each test (empty, no quota). */
export interface StoreFixture {
  readonly store: ResponseStore;
  /** The quota every later put reads (0: none). */
  setQuota(bytes: number): void;
  /** Moves the store's time on by `ms`: its clock in memory, every row's expiry in the database (the test's own SQL). */
  elapse(ms: number): Promise<void>;
}

/** Long enough that no record expires by itself during a test on a loaded machine; short ones expire only by elapse(). */
export const SHORT_TTL_MS = 60_000;
export const LONG_TTL_MS = 86_400_000;
const PAST_SHORT_MS = 2 * SHORT_TTL_MS;

export const owner = (): string => randomBytes(6).toString("hex");

/** A response of `owner` whose input and output say `text`, continuing `previousId`. */
export function storedRecord(who: string, options: { readonly previousId?: string; readonly text?: string; readonly id?: string; readonly status?: StoredResponse["status"] } = {}): StoredResponse {
  const id = options.id ?? newResponseId();
  const hex = id.slice("resp_".length);
  const text = options.text ?? "hello";
  return {
    id,
    owner: who,
    ...(options.previousId === undefined ? {} : { previousId: options.previousId }),
    status: options.status ?? "completed",
    createdAt: 1_780_000_000,
    input: [{ id: inputItemId("msg", id, 0), type: "message", role: "user", content: [{ type: "input_text", text }] }],
    response: { id, object: "response", status: options.status ?? "completed", output: [{ id: `msg_${hex}_0`, type: "message", role: "assistant", content: [{ type: "output_text", text }] }] },
  };
}

/** Puts a chain of `length` responses of `who`, oldest first; returns them. */
export async function putChain(store: ResponseStore, who: string, length: number, ttlMs = LONG_TTL_MS): Promise<StoredResponse[]> {
  const out: StoredResponse[] = [];
  for (let i = 0; i < length; i++) {
    const r = storedRecord(who, { ...(i > 0 ? { previousId: out[i - 1]!.id } : {}), text: `turn ${i}` });
    await store.put(r, ttlMs);
    out.push(r);
  }
  return out;
}

const ids = (records: readonly StoredResponse[] | undefined) => records?.map((r) => r.id);

async function refusal(work: Promise<unknown>): Promise<GatewayError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

/**
 * The ResponseStore contract (src/response-state/stored-response.ts), run
 * against every store: in memory (test/fast) and in the database, embedded
 * and by URL (test/pg-response-store.test.ts).
 */
export function describeResponseStore(name: string, fixture: () => StoreFixture): void {
  describe(`${name}: the ResponseStore contract`, () => {
    it("keeps a record and gives it back to its owner, whole", async () => {
      const { store } = fixture();
      const r = storedRecord(owner(), { previousId: newResponseId() });
      await store.put(r, LONG_TTL_MS);
      expect(await store.get(r.id, r.owner)).toEqual(r);
      expect(await store.get(newResponseId(), r.owner)).toBeUndefined();
    });

    it("shows another owner nothing, through every method, and lets it change nothing", async () => {
      const { store } = fixture();
      const [a, b] = [owner(), owner()];
      const chain = await putChain(store, a, 2);
      const last = chain[1]!;
      expect(await store.get(last.id, b)).toBeUndefined();
      expect(await store.chain(last.id, b, 10)).toBeUndefined();
      expect(await store.item(last.input[0]!.id as string, b)).toBeUndefined();
      expect(await store.item((last.response.output as Array<{ id: string }>)[0]!.id, b)).toBeUndefined();
      expect(await store.delete(last.id, b)).toBe(false);
      expect(await store.purge(b)).toBe(0);
      expect(await store.summaries(b)).toEqual([]);
      // All still there for its owner.
      expect(ids(await store.chain(last.id, a, 10))).toEqual(ids(chain));
      // "" (authentication off) is an owner like any other.
      expect(await store.get(last.id, "")).toBeUndefined();
    });

    it("never lets a put replace another owner's record under the same id", async () => {
      const { store } = fixture();
      const [a, b] = [owner(), owner()];
      const mine = storedRecord(a, { text: "mine" });
      await store.put(mine, LONG_TTL_MS);
      const error = await refusal(store.put({ ...storedRecord(b, { id: mine.id, text: "theirs" }) }, LONG_TTL_MS));
      expect(error.code).toBe("internal");
      expect(await store.get(mine.id, a)).toEqual(mine);
      expect(await store.get(mine.id, b)).toBeUndefined();
    });

    it("walks a chain oldest first, from any of its links", async () => {
      const { store } = fixture();
      const who = owner();
      const chain = await putChain(store, who, 5);
      expect(ids(await store.chain(chain[4]!.id, who, 10))).toEqual(ids(chain));
      expect(ids(await store.chain(chain[2]!.id, who, 10))).toEqual(ids(chain.slice(0, 3)));
      expect(ids(await store.chain(chain[0]!.id, who, 1))).toEqual([chain[0]!.id]);
      expect((await store.chain(chain[4]!.id, who, 10))?.[3]).toEqual(chain[3]);
    });

    it("walks at most maxDepth records: a longer chain is undefined", async () => {
      const { store } = fixture();
      const who = owner();
      const chain = await putChain(store, who, 5);
      expect(ids(await store.chain(chain[4]!.id, who, 5))).toEqual(ids(chain));
      expect(await store.chain(chain[4]!.id, who, 4)).toBeUndefined();
      expect(await store.chain(chain[4]!.id, who, 1)).toBeUndefined();
    });

    it("answers undefined for a chain with a link missing: deleted, unknown, or another owner's", async () => {
      const { store } = fixture();
      const [a, b] = [owner(), owner()];
      const chain = await putChain(store, a, 3);
      expect(await store.delete(chain[1]!.id, a)).toBe(true);
      expect(await store.chain(chain[2]!.id, a, 10)).toBeUndefined();
      // The first link, never stored.
      const orphan = storedRecord(a, { previousId: newResponseId() });
      await store.put(orphan, LONG_TTL_MS);
      expect(await store.chain(orphan.id, a, 10)).toBeUndefined();
      // A link of another key's: b's record continuing a's is not a chain b may read.
      const theirs = storedRecord(b, { previousId: chain[0]!.id });
      await store.put(theirs, LONG_TTL_MS);
      expect(await store.chain(theirs.id, b, 10)).toBeUndefined();
      expect(await store.get(theirs.id, b)).toEqual(theirs);
    });

    it("finds an input or output item by its id, and nothing for an id it did not make", async () => {
      const { store } = fixture();
      const r = storedRecord(owner(), { text: "items" });
      await store.put(r, LONG_TTL_MS);
      const output = (r.response.output as Array<{ id: string }>)[0]!;
      expect(await store.item(r.input[0]!.id as string, r.owner)).toEqual(r.input[0]);
      expect(await store.item(output.id, r.owner)).toEqual(output);
      expect(await store.item(`${output.id}7`, r.owner)).toBeUndefined();
      expect(await store.item("msg_not_ours", r.owner)).toBeUndefined();
      expect(await store.item(`msg_${r.id.slice(5)}_c0`, r.owner)).toBeUndefined();
    });

    it("replaces a record put again under its id (and owner), counted once", async () => {
      const { store } = fixture();
      const who = owner();
      const first = storedRecord(who, { status: "in_progress" });
      await store.put(first, LONG_TTL_MS);
      const done = { ...first, status: "completed" as const };
      await store.put(done, LONG_TTL_MS);
      expect(await store.get(first.id, who)).toEqual(done);
      expect((await store.summaries(who)).map((s) => s.count)).toEqual([1]);
    });

    it("forgets a record past its ttl everywhere, and the sweep removes exactly those", async () => {
      const h = fixture();
      const { store } = h;
      const who = owner();
      const kept = await putChain(store, who, 2, LONG_TTL_MS);
      const short = storedRecord(who, { previousId: kept[1]!.id });
      await store.put(short, SHORT_TTL_MS);
      const tail = storedRecord(who, { previousId: short.id });
      await store.put(tail, LONG_TTL_MS);
      expect(ids(await store.chain(tail.id, who, 10))).toHaveLength(4);

      await h.elapse(PAST_SHORT_MS);
      expect(await store.get(short.id, who)).toBeUndefined();
      expect(await store.item(short.input[0]!.id as string, who)).toBeUndefined();
      expect(await store.chain(tail.id, who, 10)).toBeUndefined();
      expect(await store.delete(short.id, who)).toBe(false);
      expect((await store.summaries(who)).map((s) => s.count)).toEqual([3]);
      expect(await store.sweep()).toBe(1);
      expect(await store.sweep()).toBe(0);
      expect(ids(await store.chain(kept[1]!.id, who, 10))).toEqual(ids(kept));
    });

    it("refuses a put past the owner's quota, counting neither the replaced record nor expired ones nor other owners'", async () => {
      const h = fixture();
      const { store } = h;
      const [a, b] = [owner(), owner()];
      const first = storedRecord(a, { text: "same length" });
      await store.put(first, LONG_TTL_MS);
      const bytes = (await store.summaries(a))[0]?.bytes ?? 0;
      expect(bytes).toBeGreaterThan(0);
      h.setQuota(2 * bytes);
      const second = storedRecord(a, { text: "same length" });
      await store.put(second, LONG_TTL_MS);
      const third = storedRecord(a, { text: "same length" });
      const refused = await refusal(store.put(third, LONG_TTL_MS));
      expect(refused.code).toBe("failed_precondition");
      expect(refused.message).toContain("responses.maxStoredPerKey");
      expect(await store.get(third.id, a)).toBeUndefined();
      // Replacing a record it keeps is no more bytes; another owner has a quota of its own.
      await store.put({ ...first, status: "cancelled" }, LONG_TTL_MS);
      await store.put(storedRecord(b, { text: "same length" }), LONG_TTL_MS);
      // Deleted and expired bytes are free again.
      expect(await store.delete(second.id, a)).toBe(true);
      await store.put(third, SHORT_TTL_MS);
      await expect(store.put(storedRecord(a, { text: "same length" }), LONG_TTL_MS)).rejects.toBeInstanceOf(GatewayError);
      await h.elapse(PAST_SHORT_MS);
      await store.put(storedRecord(a, { text: "same length" }), LONG_TTL_MS);
      expect((await store.summaries(a)).map((s) => [s.count, s.bytes])).toEqual([[2, 2 * bytes]]);
    });

    it("purges one owner's records, and lists counts and bytes per owner", async () => {
      const { store } = fixture();
      const [a, b] = [owner(), owner()];
      await putChain(store, a, 3);
      const theirs = await putChain(store, b, 2);
      const all = await store.summaries();
      const byOwner = new Map(all.map((s) => [s.owner, s]));
      expect(byOwner.get(a)?.count).toBe(3);
      expect(byOwner.get(b)?.count).toBe(2);
      expect(byOwner.get(a)?.bytes).toBeGreaterThan(0);
      expect(await store.purge(a)).toBe(3);
      expect(await store.purge(a)).toBe(0);
      expect(await store.summaries(a)).toEqual([]);
      expect(ids(await store.chain(theirs[1]!.id, b, 10))).toEqual(ids(theirs));
    });
  });
}
