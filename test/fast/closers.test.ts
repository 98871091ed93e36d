import { afterEach, describe, expect, it, vi } from "vitest";
import { createClosers } from "../../src/core/closers.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("createClosers", () => {
  it("closes the last part started first", async () => {
    const closed: string[] = [];
    const closers = createClosers({ boundMs: 1_000, onError: () => undefined });
    for (const name of ["telemetry", "database", "server"]) closers.push(name, () => closed.push(name));
    await closers.close();
    expect(closed).toEqual(["server", "database", "telemetry"]);
  });

  it("reports a part that fails and still closes the rest", async () => {
    const closed: string[] = [];
    const errors: Array<[string, string]> = [];
    const closers = createClosers({ boundMs: 1_000, onError: (name, error) => errors.push([name, (error as Error).message]) });
    closers.push("database", () => closed.push("database"));
    closers.push("ledger", () => Promise.reject(new Error("connection reset")));
    closers.push("tenancy", () => {
      throw new Error("already closed");
    });
    await closers.close();
    expect(closed).toEqual(["database"]);
    expect(errors).toEqual([
      ["tenancy", "already closed"],
      ["ledger", "connection reset"],
    ]);
  });

  it("moves past a part that does not close within the bound", async () => {
    vi.useFakeTimers();
    const closed: string[] = [];
    const errors: string[] = [];
    const closers = createClosers({ boundMs: 5_000, onError: (name) => errors.push(name) });
    closers.push("database", () => closed.push("database"));
    closers.push("exporter", () => new Promise(() => undefined));
    const done = closers.close();
    await vi.advanceTimersByTimeAsync(5_000);
    await done;
    expect(errors).toEqual(["exporter"]);
    expect(closed).toEqual(["database"]);
  });

  it("runs each closer once however often it is asked to close", async () => {
    let count = 0;
    const closers = createClosers({ boundMs: 1_000, onError: () => undefined });
    closers.push("server", () => count++);
    await Promise.all([closers.close(), closers.close()]);
    await closers.close();
    expect(count).toBe(1);
  });
});
