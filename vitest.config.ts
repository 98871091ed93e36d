import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two tiers. `fast`: test/fast/, in memory (the in-process simulator, fake
 * clocks; no socket, no process), for stage logic; `npm run test:fast`
 * runs it alone in seconds. `wire`: everything else, with real sockets,
 * clients and processes. `vitest run` runs both, each file once.
 */
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
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
