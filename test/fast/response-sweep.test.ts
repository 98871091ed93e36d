import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { startResponseSweep } from "../../src/response-state/response-sweep.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A logger whose lines the test reads. */
function capturedLogger() {
  const out = new PassThrough();
  const lines: Array<Record<string, unknown>> = [];
  out.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { logger: createLogger("info", out), lines };
}

describe("the stored-response sweep", () => {
  it("sweeps every interval once the database is open, logs a failed sweep and goes on, and stops", async () => {
    vi.useFakeTimers();
    const { logger, lines } = capturedLogger();
    let open = false;
    let outcome: () => Promise<number> = async () => 3;
    const sweep = vi.fn(() => outcome());
    const stop = startResponseSweep({ store: { sweep }, intervalMs: 1_000, ready: () => open, logger });

    // Never opens the database for a sweep.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sweep).not.toHaveBeenCalled();

    open = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sweep).toHaveBeenCalledTimes(1);
    outcome = () => Promise.reject(new Error("connection refused"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sweep).toHaveBeenCalledTimes(2);
    outcome = async () => 0;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sweep).toHaveBeenCalledTimes(3);

    await stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sweep).toHaveBeenCalledTimes(3);
    await vi.waitFor(() => expect(lines.some((l) => l.event === "responses.sweep_failed")).toBe(true));
    expect(lines.find((l) => l.event === "responses.sweep_failed")).toMatchObject({ error: "connection refused" });
    expect(lines.find((l) => l.event === "responses.swept")).toMatchObject({ removed: 3 });
  });

  it("runs one sweep at a time, and its stop waits for the one in flight", async () => {
    vi.useFakeTimers();
    const { logger } = capturedLogger();
    let finish: (n: number) => void = () => undefined;
    const sweep = vi.fn(() => new Promise<number>((resolve) => (finish = resolve)));
    const stop = startResponseSweep({ store: { sweep }, intervalMs: 1_000, ready: () => true, logger });
    await vi.advanceTimersByTimeAsync(3_000);
    expect(sweep).toHaveBeenCalledTimes(1);
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish(0);
    await stopping;
    expect(stopped).toBe(true);
  });
});
