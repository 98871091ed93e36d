import { EventEmitter } from "node:events";
import type { TenancyObserver } from "../../src/flow/observer.js";
import type { SettleResult } from "../../src/store/tenant-store.js";
import type { UsageRecord } from "../../src/usage/usage-record.js";

export interface TenancyEvents {
  readonly observer: TenancyObserver;
  /** Every usage event so far. */
  readonly usage: Array<{ record: UsageRecord; result: SettleResult | "flushed" }>;
  readonly fallbacks: { admit: number; settle: number };
  readonly states: Array<{ up: boolean; cause?: string }>;
  /** Resolves with the first usage event for `requestId` whose result passes `accept` (now or later). */
  recorded(requestId: string, accept?: (result: SettleResult | "flushed") => boolean, timeoutMs?: number): Promise<UsageRecord>;
  /** Resolves once `predicate` holds over the events (checked on every event). */
  until(predicate: () => boolean, timeoutMs?: number): Promise<void>;
}

/** The pipeline observer's tenancy hooks as events a test can wait on (never a sleep). */
export function tenancyEvents(): TenancyEvents {
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  const usage: TenancyEvents["usage"] = [];
  const fallbacks = { admit: 0, settle: 0 };
  const states: TenancyEvents["states"] = [];
  const until = (predicate: () => boolean, timeoutMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      if (predicate()) return resolve();
      const check = () => {
        if (!predicate()) return;
        clearTimeout(timer);
        changes.off("change", check);
        resolve();
      };
      const timer = setTimeout(() => {
        changes.off("change", check);
        reject(new Error(`condition not reached within ${timeoutMs} ms`));
      }, timeoutMs);
      changes.on("change", check);
    });
  return {
    observer: {
      usageRecorded(event) {
        usage.push(event);
        changes.emit("change");
      },
      storeFallback(event) {
        fallbacks[event.operation]++;
        changes.emit("change");
      },
      storeState(event) {
        states.push(event);
        changes.emit("change");
      },
    },
    usage,
    fallbacks,
    states,
    async recorded(requestId, accept = (r) => r === "stored" || r === "flushed", timeoutMs) {
      const find = () => usage.find((e) => e.record.requestId === requestId && accept(e.result));
      await until(() => find() !== undefined, timeoutMs);
      return find()!.record;
    },
    until,
  };
}
