import { beforeEach } from "vitest";
import { createMemoryResponseStore } from "../../src/response-state/memory-response-store.js";
import { describeResponseStore, type StoreFixture } from "../helpers/response-store-contract.js";

/** The in-memory store the fast tier gives the Responses edge: the same contract as the database's, on a clock the test moves. */
let current: StoreFixture;
beforeEach(() => {
  let now = 1_780_000_000_000;
  let quota = 0;
  current = {
    store: createMemoryResponseStore({ maxStoredBytes: () => quota, now: () => now }),
    setQuota: (bytes) => {
      quota = bytes;
    },
    elapse: async (ms) => {
      now += ms;
    },
  };
});

describeResponseStore("in memory", () => current);
