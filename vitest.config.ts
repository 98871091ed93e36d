import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two tiers. `fast`: test/fast/, in memory (the in-process simulator, fake
 * clocks; no socket, no process), for stage logic; `npm run test:fast`
 * runs it alone in seconds. `wire`: everything else, with real sockets,
 * clients and processes. `vitest run` runs both, each file once.
 */
export default defineConfig({
  test: {
    // Generous: a bound for a hung test, not a speed target. Tests and hooks start processes (gateways, Redis)
    // whose readiness waits are bounded at 90 s (test/helpers/processes.ts) and fail sooner, with the process's output.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Stops every child process a test file left running, however it ended.
    setupFiles: ["./test/helpers/stop-children.ts"],
    reporters: ["default", "./test/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        // Files share their worker's modules (not isolated): importing the gateway is most of this tier's time.
        // So a fast test builds its own gateway and puts real timers back in afterEach.
        test: { name: "fast", include: ["test/fast/**/*.test.ts"], isolate: false },
      },
      { extends: true, test: { name: "wire", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/fast/**"] } },
    ],
  },
});
