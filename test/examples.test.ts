import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";

const run = promisify(execFile);
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ models: { demo: "sim-1?tokens=5&seed=2" } });
});
afterAll(() => h.close());

/** The README's examples, run exactly as it says (the suite has built dist/ first). */
describe("README examples run as written on this Node", () => {
  it("stream-chat prints the streamed text", async () => {
    const { stdout } = await run(process.execPath, ["dist/examples/stream-chat.js", h.url, "demo"]);
    expect(stdout).toBe(`${simulatedText(2, 5)}\n`);
  });

  it("structured-output prints an object that matches its schema", async () => {
    const { stdout } = await run(process.execPath, ["dist/examples/structured-output.js", h.url, "demo"]);
    const parsed = JSON.parse(stdout) as { city: unknown; days: unknown };
    expect(typeof parsed.city).toBe("string");
    expect(Number.isInteger(parsed.days)).toBe(true);
  });
});
