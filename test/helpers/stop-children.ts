import { afterAll } from "vitest";
import { stopChildren } from "./processes.js";

/**
 * A vitest setup file: after every test file, whatever child process it
 * started and did not stop (a replica started beside one that failed to
 * start, a gateway of a test that timed out) is stopped, and named.
 */
afterAll(async () => {
  const stopped = await stopChildren();
  if (stopped.length > 0) process.stderr.write(`stopped ${stopped.length} child process(es) the test file left running:\n  ${stopped.join("\n  ")}\n`);
}, 30_000);
