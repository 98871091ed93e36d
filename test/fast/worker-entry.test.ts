import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { workerEntry } from "../../src/workers/worker-entry.js";

describe("workerEntry", () => {
  it("names the compiled sibling beside a built module", () => {
    const url = workerEntry("file:///srv/app/dist/src/db/pglite-database.js", "./pglite-worker.js");
    expect(fileURLToPath(url)).toBe("/srv/app/dist/src/db/pglite-worker.js");
  });

  it("names the compiled twin under dist/ when started from the TypeScript sources", () => {
    const url = workerEntry(new URL("../../src/workers/worker-entry.ts", import.meta.url).href, "./worker-entry.js");
    expect(fileURLToPath(url)).toMatch(/\/dist\/src\/workers\/worker-entry\.js$/);
  });

  it("says the build is missing rather than failing inside the worker", () => {
    expect(() => workerEntry("file:///nowhere/src/db/x.ts", "./y.js")).toThrow(/needs the build/);
  });
});
